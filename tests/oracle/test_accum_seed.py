"""`lowprec accumulate` against the seed's `numfmt.accumulate`, bit for bit, on random rows for
FP16, BF16 and FP8 accumulators under nearest-even, toward-zero and nearest-away rounding, with
sequential, pairwise and Kahan summation and chunked promotion into FP32.

Where they must differ the test says so: the seed adds in binary64 and rounds the binary64 sum
(double rounding), lowprec rounds the exact sum once; under a directed mode the two differ when
the binary64 sum itself was rounded (asserted below on a constructed row)."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from conftest import SHARED, lowprec_bin

sys.path.insert(0, str(SHARED / "seeds"))
import numfmt  # noqa: E402

ACCS = {"FP16": "fp16", "BF16": "bf16", "FP8-E4M3": "fp8-e4m3", "FP8-E5M2": "fp8-e5m2"}
MODES = {"nearest_even": "rne", "toward_zero": "rtz", "nearest_away": "rna"}


def lowprec_sums(x, acc, rounding, method, chunk=None):
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "x.npy"), os.path.join(d, "s.npy")
        np.save(inp, x)
        cmd = [lowprec_bin(), "accumulate", "--input", inp, "-o", out, "--acc", acc,
               "--rounding", rounding, "--method", method, "--json"]
        if chunk:
            cmd += ["--chunk", str(chunk)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return np.load(out)


def rows(kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "positive":
        return rng.uniform(0.05, 1.0, (40, 257))
    # signed values: every mode but nearest-away (whose tiny partial sums would meet the seed's
    # known error below half the smallest subnormal)
    return rng.standard_normal((40, 257))


@pytest.mark.parametrize("acc", list(ACCS))
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("method,chunk", [("sequential", None), ("pairwise", None), ("kahan", None), ("sequential", 32)])
@pytest.mark.parametrize("kind", ["positive", "normal"])
def test_accumulate_matches_seed(acc, mode, method, chunk, kind):
    if kind == "normal" and mode == "nearest_away":
        pytest.skip("signed rows reach the seed's nearest-away error below min_subnormal/2")
    x = rows(kind, abs(hash((acc, mode, method, chunk, kind))) % 2**32)
    f = numfmt.BY_NAME[acc]
    with np.errstate(all="ignore"):
        want = numfmt.accumulate(x, f, method=method, chunk=chunk, rounding=mode)
    got = lowprec_sums(x, ACCS[acc], MODES[mode], method, chunk)
    assert got.dtype == np.float64 and got.shape == (x.shape[0],)
    same = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"rows {bad[:5]}: lowprec {got[bad[:5]]} seed {want[bad[:5]]}"


def test_seed_double_rounds_where_lowprec_is_exact():
    # 1 − 2^−60 is 1.0 in binary64; toward zero, the exact sum truncates to bf16's 1 − 2^−8.
    x = np.array([[1.0, -(2.0 ** -60)]])
    seed = numfmt.accumulate(x, numfmt.BF16, rounding="toward_zero")
    ours = lowprec_sums(x, "bf16", "rtz", "sequential")
    assert seed[0] == 1.0
    assert ours[0] == 1.0 - 2.0 ** -8
    # nearest even agrees (double rounding through 53 bits is innocuous for bf16 here)
    assert lowprec_sums(x, "bf16", "rne", "sequential")[0] == numfmt.accumulate(x, numfmt.BF16)[0] == 1.0


def test_seed_facts_through_the_cli():
    ones = np.ones((1, 300))
    assert lowprec_sums(ones, "bf16", "rne", "sequential")[0] == 256.0
    assert lowprec_sums(ones, "bf16", "rne", "pairwise")[0] == 300.0
    assert lowprec_sums(ones, "bf16", "rne", "sequential", chunk=128)[0] == 300.0
