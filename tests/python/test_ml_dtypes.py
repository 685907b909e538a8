"""Round to nearest even against ml_dtypes' `astype` (values and codes) on every format
both have, and numpy's own casts for fp16/fp32; ml_dtypes arrays as inputs."""
import numpy as np
import pytest

import lowprec

ml_dtypes = pytest.importorskip("ml_dtypes")

PAIRS = [("bf16", "bfloat16"), ("fp8-e4m3", "float8_e4m3fn"), ("fp8-e5m2", "float8_e5m2"),
         ("fp8-e4m3fnuz", "float8_e4m3fnuz"), ("fp8-e5m2fnuz", "float8_e5m2fnuz"),
         ("fp6-e3m2", "float6_e3m2fn"), ("fp6-e2m3", "float6_e2m3fn"),
         ("fp4-e2m1", "float4_e2m1fn")]


def sample(rng, fmt, n=200_000):
    info = lowprec.format_info(fmt)
    lo = np.log2(info["min_positive"]) - 2
    hi = np.log2(info["max_value"]) + (2 if info["has_nan"] else 0)
    x = np.exp2(rng.uniform(lo, hi, n)) * rng.choice([-1, 1], n)
    with np.errstate(over="ignore"):
        x = x.astype(np.float32)
    # exact values and ties: every code's value and midpoints
    v = np.asarray(lowprec.all_values(fmt)) if info["bits"] <= 16 else np.array([])
    v = np.sort(v[np.isfinite(v)])
    mids = (v[1:] + v[:-1]) / 2
    x = np.concatenate([x, v.astype(np.float32), mids.astype(np.float32), [0.0, -0.0]])
    if not info["has_nan"]:  # fp6/fp4: ml_dtypes has no saturating cast of its own
        x = np.clip(x, -info["max_value"], info["max_value"])
    return x.astype(np.float32)


@pytest.mark.parametrize("fmt,dt", PAIRS)
def test_rne_astype(fmt, dt):
    rng = np.random.default_rng(len(fmt) * 31 + len(dt))
    x = sample(rng, fmt)
    t = np.dtype(getattr(ml_dtypes, dt))
    with np.errstate(all="ignore"):
        ref = x.astype(t)
    want = ref.astype(np.float32)
    got = lowprec.round(x, fmt)
    assert got.dtype == np.float32
    ok = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), (fmt, x[~ok][:5], got[~ok][:5], want[~ok][:5])
    codes = lowprec.encode(x, fmt)
    ref_codes = ref.view(np.uint8)
    if t.itemsize == 2:
        ref_codes = ref.view(np.uint16)
    nan = np.isnan(want)
    assert np.array_equal(codes[~nan], ref_codes[~nan]), fmt
    # ml_dtypes arrays in: their values, exactly
    back = lowprec.round(ref[~nan], fmt)
    assert np.array_equal(back, want[~nan])


def test_numpy_casts():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(100_000) * np.exp2(rng.integers(-30, 20, 100_000))
    with np.errstate(over="ignore"):
        assert np.array_equal(lowprec.encode(x, "fp16"), x.astype(np.float16).view(np.uint16))
        assert np.array_equal(lowprec.encode(x, "fp32"), x.astype(np.float32).view(np.uint32))
