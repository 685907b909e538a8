"""`.npz` archives (numpy's np.savez, zip STORED, and np.savez_compressed, zip DEFLATE) through
`lowprec report` and `lowprec quantize`: float32, float16 and bfloat16 (ml_dtypes) members
report the same numbers as the same arrays as `.npy` files and as a safetensors file, and
quantize to the same checkpoint; truncated archives and archives holding a member that is not
a `.npy` array give one line and exit 2, leaving no output."""

import io
import json
import subprocess
import zipfile

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from conftest import lowprec_bin

SCHEMES = ("-s", "mxfp4", "-s", "fp8-e4m3", "-s", "int8", "-s", "gguf:Q8_0")


def run(*args, ok=True):
    r = subprocess.run([lowprec_bin(), *map(str, args)], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def refused(*args):
    """The run fails with exit 2 and one line on stderr; that line."""
    r = run(*args, ok=False)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "panicked" not in r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("npz")
    rng = np.random.default_rng(17)
    arrays = {
        "w": (rng.standard_normal((16, 64)) * 0.05).astype(np.float32),
        "h": rng.standard_normal((4, 64)).astype(np.float16),
        "b": (rng.standard_normal((8, 64)) * 0.02).astype(ml_dtypes.bfloat16),
        "bias": rng.standard_normal(64).astype(np.float32),
    }
    arrays["w"][3, 7] = 1.5
    np.savez(d / "stored.npz", **arrays)
    np.savez_compressed(d / "deflated.npz", **arrays)
    save_file(arrays, str(d / "model.safetensors"))
    (d / "npy").mkdir()
    for k, x in arrays.items():
        np.save(d / "npy" / f"{k}.npy", x)
    with zipfile.ZipFile(d / "deflated.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    with zipfile.ZipFile(d / "stored.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    return d, arrays


def report(*paths):
    return json.loads(run("report", *paths, "--json", *SCHEMES).stdout)


def key(row):
    return (row["tensor"], row["scheme"])


def test_report_equals_npy_and_safetensors(model):
    d, arrays = model
    stored, deflated = report(d / "stored.npz"), report(d / "deflated.npz")
    st = report(d / "model.safetensors")
    assert stored == deflated
    assert sorted(stored["tensors"], key=key) == sorted(st["tensors"], key=key)
    assert stored["totals"] == st["totals"]
    assert {r["tensor"] for r in stored["tensors"]} == set(arrays)
    # each member as its own .npy (named by the file stem, as the member by its name)
    for name in arrays:
        one = report(d / "npy" / f"{name}.npy")
        mine = [r for r in stored["tensors"] if r["tensor"] == name]
        assert sorted(one["tensors"], key=key) == sorted(mine, key=key), name


def test_report_against_a_reference(model):
    d, arrays = model
    r = json.loads(run("report", "--reference", d / "model.safetensors", d / "deflated.npz", "--json").stdout)
    assert {row["tensor"] for row in r["tensors"]} == set(arrays)
    assert all(row["max_abs_error"] == 0.0 for row in r["tensors"]), r["tensors"]


def test_quantize_writes_the_checkpoint_of_the_safetensors_file(model, tmp_path):
    d, arrays = model
    run("quantize", d / "model.safetensors", "-s", "mxfp4", "-o", tmp_path / "q_st.safetensors")
    for src in ("stored", "deflated"):
        out = tmp_path / f"q_{src}.safetensors"
        r = run("quantize", d / f"{src}.npz", "-s", "mxfp4", "-o", out)
        assert "3 tensors quantized" in r.stderr and "1 copied" in r.stderr, r.stderr
        a, b = load_file(str(out)), load_file(str(tmp_path / "q_st.safetensors"))
        assert sorted(a) == sorted(b)
        for k in a:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k].view(np.uint8), b[k].view(np.uint8)), k
        # dequantized: every tensor back in its dtype and shape
        back = tmp_path / f"back_{src}.safetensors"
        run("dequantize", out, "-o", back)
        t = load_file(str(back))
        for k, x in arrays.items():
            assert t[k].dtype == x.dtype and t[k].shape == x.shape, k
        assert np.array_equal(t["bias"], arrays["bias"])


def test_quantize_npz_needs_a_safetensors_output(model, tmp_path):
    d, _ = model
    line = refused("quantize", d / "stored.npz", "-s", "mxfp4", "-o", tmp_path / "x.npy")
    assert ".safetensors output" in line
    assert not (tmp_path / "x.npy").exists()
    line = refused("dequantize", d / "stored.npz", "-o", tmp_path / "y.safetensors")
    assert "quantize it first" in line


def test_bad_archives_are_one_line_and_exit_2(model, tmp_path):
    d, arrays = model
    good = (d / "deflated.npz").read_bytes()
    bad = tmp_path / "bad.npz"
    for cut in (0, 30, len(good) // 2, len(good) - 1):
        bad.write_bytes(good[:cut])
        line = refused("report", bad)
        assert "bad.npz" in line, line
        out = tmp_path / "q.safetensors"
        line = refused("quantize", bad, "-s", "mxfp4", "-o", out)
        assert "bad.npz" in line and not out.exists(), line
    # a member that is not an array
    with zipfile.ZipFile(bad, "w") as z:
        with z.open("w.npy", "w") as f:
            np.save(f, arrays["w"])
        z.writestr("README.txt", "not an array")
    line = refused("report", bad)
    assert "member 'README.txt'" in line and "not a .npy array" in line, line
    # a member whose .npy data is cut short (the archive itself intact)
    with zipfile.ZipFile(bad, "w", compression=zipfile.ZIP_DEFLATED) as z:
        buf = io.BytesIO()
        np.save(buf, arrays["w"])
        z.writestr("w.npy", buf.getvalue()[:-4])
    line = refused("report", bad)
    assert "member 'w.npy'" in line and "needs 4096 bytes" in line, line
    # an unsupported dtype in a member: the .npy message, with the member named
    with zipfile.ZipFile(bad, "w") as z:
        buf = io.BytesIO()
        np.save(buf, arrays["w"].astype(">f4"))
        z.writestr("w.npy", buf.getvalue())
    line = refused("report", bad)
    assert "member 'w.npy'" in line and "big-endian" in line, line
