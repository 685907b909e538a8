"""Shared fixtures of the Python oracle tests: the lowprec binary, and running it on arrays."""
import os
import pathlib
import subprocess
import tempfile

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("LOWPREC_SHARED", ROOT.parent / "shared"))


def lowprec_bin():
    b = os.environ.get("LOWPREC_BIN", str(ROOT / "target" / "release" / "lowprec"))
    if not os.path.exists(b):
        pytest.fail(f"{b} not found: run `cargo build --release` first (or set LOWPREC_BIN)")
    return b


def round_array(fmt, x, rounding="rne", overflow="ovf", codes=False, seed=0):
    """Round `x` with `lowprec round` and return the output array."""
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
        np.save(inp, x)
        cmd = [lowprec_bin(), "round", fmt, inp, "-o", out, "--rounding", rounding,
               "--overflow", overflow, "--seed", str(seed)]
        if codes:
            cmd.append("--codes")
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return np.load(out)


def inputs(rng, n, lo_exp, hi_exp, dtype):
    """Random bit patterns, log-uniform values across [2^lo_exp, 2^hi_exp], and values next
    to binary fractions with few bits (ties of small formats), both signs."""
    with np.errstate(all="ignore"):
        return _inputs(rng, n, lo_exp, hi_exp, dtype)


def _inputs(rng, n, lo_exp, hi_exp, dtype):
    k = n // 3
    if dtype == np.float32:
        bits = rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        bits = rng.integers(0, 2**63, k, dtype=np.uint64).view(np.float64)
    e = rng.uniform(lo_exp, hi_exp, k)
    logu = (rng.uniform(1, 2, k) * np.exp2(np.floor(e))).astype(dtype)
    m = rng.integers(0, 2**6, k) / 2**5 + 1  # 6-bit significands: ties of <= 5-bit formats
    ties = (m * np.exp2(rng.integers(lo_exp, hi_exp, k))).astype(dtype)
    nudge = rng.integers(-2, 3, k).astype(np.int64)
    ties = (ties.view(np.uint32 if dtype == np.float32 else np.uint64).astype(np.int64) + nudge)
    ties = ties.astype(np.uint32 if dtype == np.float32 else np.uint64).view(dtype)
    x = np.concatenate([bits, logu, ties]).astype(dtype)
    sign = rng.integers(0, 2, x.size) * 2 - 1
    return (x * sign.astype(dtype)).astype(dtype)


def run_lowprec(*args):
    """Run `lowprec ARGS...`, which must succeed; its stderr."""
    r = subprocess.run([lowprec_bin(), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, f"lowprec {' '.join(map(str, args))}: {r.stderr}"
    return r.stderr


def quantize_array(x, scheme, scales=False, codes=False, packed=False):
    """`lowprec quantize` of `x` (saved as .npy): a dict of the output arrays, `values` and,
    when asked for, `scales`, `codes` and `packed`."""
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "x.npy")
        np.save(inp, x)
        paths = {"values": os.path.join(d, "v.npy")}
        cmd = ["quantize", inp, "--scheme", scheme, "-o", paths["values"]]
        for k, want in (("scales", scales), ("codes", codes), ("packed", packed)):
            if want:
                paths[k] = os.path.join(d, f"{k}.npy")
                cmd += [f"--{k}", paths[k]]
        run_lowprec(*cmd)
        return {k: np.load(p) for k, p in paths.items()}
