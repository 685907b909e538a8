"""Every console example of the documentation is a test.

A fenced block tagged ``console`` in ``README.md``, ``ARCHITECTURE.md`` or ``docs/*.md`` holds
lines ``$ COMMAND`` each followed by the exact output it must print (stdout and stderr merged,
as ``2>&1`` would). Two wildcards, as in snapbox/trycmd:

* ``[..]`` matches any text within one line;
* a line that is only ``...`` matches any number of lines (none included).

A command that must fail ends its expected output with a line ``[exit N]``; every other
command must exit 0. The blocks of one page run in order, in one fresh scratch directory (so a
later block sees the files an earlier one wrote), by ``bash`` with ``lowprec`` (``$LOWPREC_BIN``)
and the test venv's ``python3`` first on ``PATH``, ``$LOWPREC_ROOT`` the repository. ``model.safetensors`` in the scratch
directory is all-MiniLM-L6-v2 when ``scripts/test`` has downloaded it (``target/minilm``).

``DOCS_BLESS=1`` rewrites the expected output of every command that does not match with what
it printed (wildcards are lost on those commands only: put them back by hand).

The help texts are tested here too: every example line under ``Examples:`` in ``lowprec
--help`` and in each subcommand's ``--help`` runs, as written, in a scratch directory holding
the files the examples name, and must exit 0.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
EXIT = re.compile(r"^\[exit (\d+)\]$")
TIMEOUT = 300


def lowprec_bin() -> pathlib.Path:
    env = os.environ.get("LOWPREC_BIN")
    if env:
        return pathlib.Path(env)
    for profile in ("ci", "release", "debug"):
        p = ROOT / "target" / profile / "lowprec"
        if p.exists():
            return p
    pytest.skip("no lowprec binary: set LOWPREC_BIN or build it")


def console_blocks(text: str):
    """``[(line_number, [(command, [expected lines], line_number)])]`` of every console block."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        if lines[i].strip() == "```console":
            start, i, cmds = i + 1, i + 1, []
            while i < len(lines) and lines[i].strip() != "```":
                line = lines[i]
                if line.startswith("$ "):
                    cmds.append((line[2:], [], i + 1))
                elif cmds:
                    cmds[-1][1].append(line)
                elif line.strip():
                    raise ValueError(f"line {i + 1}: console block output before any `$ ` command")
                i += 1
            out.append((start, cmds))
        i += 1
    return out


def line_matches(pattern: str, line: str) -> bool:
    if "[..]" not in pattern:
        return pattern.rstrip() == line.rstrip()
    rx = ".*?".join(re.escape(p) for p in pattern.rstrip().split("[..]"))
    return re.fullmatch(rx, line.rstrip()) is not None


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` fits ``expected`` with its ``[..]`` and ``...`` wildcards."""

    def go(e: int, a: int) -> bool:
        if e == len(expected):
            return a == len(actual)
        if expected[e].strip() == "...":
            return any(go(e + 1, k) for k in range(a, len(actual) + 1))
        return a < len(actual) and line_matches(expected[e], actual[a]) and go(e + 1, a + 1)

    return go(0, 0)


def scratch_env(tmp: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ)
    bindir = tmp / ".bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "lowprec"
    if not link.exists():
        link.symlink_to(lowprec_bin())
    py = pathlib.Path(sys.executable).parent
    env["PATH"] = f"{bindir}{os.pathsep}{py}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "100"
    env["LOWPREC_ROOT"] = str(ROOT)
    env.pop("LOWPREC_THREADS", None)
    minilm = ROOT / "target" / "minilm" / "model.safetensors"
    if minilm.exists() and not (tmp / "model.safetensors").exists():
        (tmp / "model.safetensors").symlink_to(minilm)
    return env


def run(cmd: str, cwd: pathlib.Path, env: dict[str, str]) -> tuple[int, list[str]]:
    p = subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        text=True,
    )
    lines = p.stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return p.returncode, lines


def pages_with_examples():
    return [p for p in PAGES if p.exists() and "```console" in p.read_text()]


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_console_examples(page: pathlib.Path, tmp_path: pathlib.Path):
    text = page.read_text()
    env = scratch_env(tmp_path)
    failures, replace = [], {}
    for _, cmds in console_blocks(text):
        for cmd, expected, lineno in cmds:
            want_code = 0
            body = list(expected)
            while body and not body[-1].strip():
                body.pop()
            if body and EXIT.match(body[-1].strip()):
                want_code = int(EXIT.match(body[-1].strip()).group(1))
                body.pop()
            code, actual = run(cmd, tmp_path, env)
            if code != want_code or not matches(body, actual):
                failures.append(
                    f"{page.name}:{lineno}: $ {cmd}\n  exit {code} (want {want_code})\n"
                    + "  --- expected\n"
                    + "\n".join("  " + l for l in body)
                    + "\n  --- actual\n"
                    + "\n".join("  " + l for l in actual)
                )
                replace[lineno] = actual + ([f"[exit {code}]"] if code else [])
    if failures and os.environ.get("DOCS_BLESS"):
        bless(page, replace)
    assert not failures, "\n\n".join(failures)


def bless(page: pathlib.Path, replace: dict[int, list[str]]) -> None:
    """Rewrite the expected output of the commands at the given 1-based line numbers."""
    lines = page.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        lineno, i = i + 1, i + 1
        if lineno in replace:
            while i < len(lines) and not lines[i].startswith("$ ") and lines[i].strip() != "```":
                i += 1
            out.extend(replace[lineno])
    page.write_text("\n".join(out))


# --- the help texts' examples -------------------------------------------------------------

# Examples that scripts/test already runs as written (a full pass over 2^32 bit patterns takes
# minutes): checked to be there instead of being run twice.
RUN_ELSEWHERE = {
    "lowprec verify --format fp8-e4m3 --format fp16 --format bf16 --rounding rne",
    "lowprec p3109 conformance --draft v4.0 --json",
}


def help_text(args: list[str]) -> str:
    return subprocess.run(
        [str(lowprec_bin()), *args, "--help"], capture_output=True, text=True, check=True
    ).stdout


def subcommands() -> list[str]:
    text = help_text([])
    body = text.split("Commands:", 1)[1].split("Options:", 1)[0]
    names = [l.split()[0] for l in body.splitlines() if l.startswith("  ") and l.split()]
    return [n for n in names if n != "help"]


def help_examples(text: str) -> list[str]:
    if "Examples:" not in text:
        return []
    out = []
    for line in text.split("Examples:", 1)[1].splitlines()[1:]:
        if not line.startswith("  lowprec"):
            break
        out.append(line.strip())
    return out


def make_fixtures(tmp: pathlib.Path, env: dict[str, str]) -> None:
    """The files the help examples name."""
    import numpy as np

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((256, 256)) * 0.02).astype(np.float32)
    np.save(tmp / "weights.npy", w)
    np.save(tmp / "x.npy", rng.standard_normal((8, 1000)))
    np.save(tmp / "codes.npy", np.arange(16, dtype=np.uint8).reshape(4, 4))
    # operands of `lowprec op`: codes of 8-bit formats, binary32 values
    np.save(tmp / "a.npy", rng.integers(0, 256, 64, dtype=np.uint8))
    np.save(tmp / "b.npy", rng.integers(0, 256, 64, dtype=np.uint8))
    np.save(tmp / "c.npy", rng.standard_normal(64).astype(np.float32))
    from safetensors.numpy import save_file

    if (tmp / "model.safetensors").exists():
        (tmp / "model.safetensors").unlink()
    save_file({"w": w, "b": np.zeros(256, np.float32)}, str(tmp / "model.safetensors"))
    code, out = run("lowprec quantize model.safetensors -s nvfp4 -o model.nvfp4.safetensors", tmp, env)
    assert code == 0, out
    # GGUF files written by lowprec's own writer (tests/oracle checks them against gguf's reader)
    for scheme, name in [("Q8_0", "model.gguf"), ("F16", "model-f16.gguf"), ("Q4_0", "model-q4_0.gguf"),
                         ("Q8_0", "model.q8_0.gguf")]:
        code, out = run(f"lowprec quantize model.safetensors -s gguf:{scheme} -o {name}", tmp, env)
        assert code == 0, out


def test_help_texts_show_one_to_three_examples():
    pages = [[]] + [[c] for c in subcommands()]
    for args in pages:
        n = len(help_examples(help_text(args)))
        assert 1 <= n <= 3, f"`lowprec {' '.join(args)} --help` shows {n} examples"


def test_help_examples_run_as_written(tmp_path: pathlib.Path):
    env = scratch_env(tmp_path)
    make_fixtures(tmp_path, env)
    script = (ROOT / "scripts" / "test").read_text()
    examples = []
    for args in [[]] + [[c] for c in subcommands()]:
        examples += help_examples(help_text(args))
    failures = []
    for ex in dict.fromkeys(examples):
        if ex in RUN_ELSEWHERE:
            assert ex.replace("lowprec ", '"$LOWPREC_BIN" ', 1) in script, ex
            continue
        code, out = run(ex + " > /dev/null", tmp_path, env)
        if code != 0:
            failures.append(f"$ {ex}\n  exit {code}\n" + "\n".join("  " + l for l in out[-5:]))
    assert not failures, "\n\n".join(failures)


def test_readme_lists_every_preset_with_its_source():
    """The README's table of named schemes holds exactly the presets ``lowprec schemes``
    prints, in the same order, each with a formula and the preset's own source."""
    out = subprocess.run([str(lowprec_bin()), "schemes"], capture_output=True, text=True, check=True).stdout
    rows = [l for l in out.splitlines()[1:] if l and not l.startswith("bits/el")]
    names = [l.split()[0] for l in rows]
    text = (ROOT / "README.md").read_text()
    table = re.findall(r"^\| `([^`]+)` \| (.+?) \| (.+?) \|$", text, re.M)
    assert [t[0] for t in table] == names
    for (name, formula, source), line in zip(table, rows):
        assert formula.strip(), name
        # the source printed by `lowprec schemes` (its last column) names the same document
        printed = line.rstrip()
        first_word = re.sub(r"[`]", "", source).split(";")[0].split()[0]
        assert first_word in printed or source.startswith("as above"), (name, source)
