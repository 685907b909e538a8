"""The native API with ml_dtypes: `as_ml_dtypes=True` results against ml_dtypes' own casts and
views, ml_dtypes / float16 / bfloat16 arrays as inputs, and the errors where there is no
dtype."""
import sys

import numpy as np
import pytest

import lowprec

ml_dtypes = pytest.importorskip("ml_dtypes")

# lowprec format -> ml_dtypes (or numpy) dtype name of the same bit layout
PAIRS = [
    ("bf16", "bfloat16"), ("fp8-e4m3", "float8_e4m3fn"), ("fp8-e5m2", "float8_e5m2"),
    ("fp8-e4m3fnuz", "float8_e4m3fnuz"), ("fp8-e5m2fnuz", "float8_e5m2fnuz"),
    ("fp6-e3m2", "float6_e3m2fn"), ("fp6-e2m3", "float6_e2m3fn"),
    ("fp4-e2m1", "float4_e2m1fn"), ("e4m3b11:fnuz", "float8_e4m3b11fnuz"),
    ("e4m3b7:ieee", "float8_e4m3"), ("e3m4b3:ieee", "float8_e3m4"),
    ("e8m0", "float8_e8m0fnu"), ("fp16", "float16"),
]
# formats with values both sides round the same way (rne) from binary32
ROUNDED = [p for p in PAIRS if p[0] != "e8m0"]


def dtype_of(name):
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def uint(itemsize):
    return {1: np.uint8, 2: np.uint16}[itemsize]


def same(a, b):
    """Equal values, NaN equal to NaN, -0 apart from +0."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))))


@pytest.mark.parametrize("fmt,name", PAIRS)
def test_every_code_views_as_the_dtype(fmt, name):
    if not hasattr(ml_dtypes, name) and name != "float16":
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {name}")
    dt = dtype_of(name)
    assert lowprec.ml_dtype(fmt) == dt
    info = lowprec.format_info(fmt)
    codes = np.arange(info["max_code"] + 1).astype(uint(dt.itemsize))
    with np.errstate(invalid="ignore"):
        theirs = codes.view(dt).astype(np.float64)  # ml_dtypes' values of the bits
    ours = lowprec.decode(codes, fmt)
    assert same(ours, theirs), fmt
    # codes -> dtype -> codes, and an array of the dtype decodes as its bits
    viewed = lowprec.decode(codes, fmt, as_ml_dtypes=True)
    assert viewed.dtype == dt
    assert np.array_equal(viewed.view(codes.dtype), codes)
    assert same(lowprec.decode(viewed, fmt), ours)
    assert lowprec.decode(codes[5], fmt, as_ml_dtypes=True).dtype == dt  # a scalar


def sample(rng, fmt, n=50_000):
    info = lowprec.format_info(fmt)
    lo, hi = np.log2(info["min_positive"]) - 2, np.log2(info["max_value"])
    x = np.exp2(rng.uniform(lo, hi, n)) * rng.choice([-1, 1], n)
    v = np.asarray(lowprec.all_values(fmt))
    v = np.sort(v[np.isfinite(v)])
    mids = (v[1:] + v[:-1]) / 2  # ties, both ways
    x = np.concatenate([x, v, mids, [0.0, -0.0, info["max_value"]]])
    return x.astype(np.float32)


@pytest.mark.parametrize("fmt,name", ROUNDED)
def test_round_as_ml_dtypes_is_their_astype(fmt, name):
    if not hasattr(ml_dtypes, name) and name != "float16":
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {name}")
    dt = dtype_of(name)
    x = sample(np.random.default_rng(len(fmt) * 7 + len(name)), fmt)
    with np.errstate(all="ignore"):
        want = x.astype(dt)
    got = lowprec.round(x, fmt, as_ml_dtypes=True)
    assert got.dtype == dt and got.shape == x.shape
    u = uint(dt.itemsize)
    assert np.array_equal(got.view(u), want.view(u)), fmt
    enc = lowprec.encode(x, fmt, as_ml_dtypes=True)
    assert enc.dtype == dt and np.array_equal(enc.view(u), lowprec.encode(x, fmt))
    # the same values as the plain float result
    assert same(got.astype(np.float64), lowprec.round(x, fmt))
    # float64 input and a 2-D shape
    x2 = x[:1000].astype(np.float64).reshape(10, 100)
    with np.errstate(all="ignore"):
        want2 = x2.astype(dt)
    got2 = lowprec.round(x2, fmt, as_ml_dtypes=True)
    assert got2.shape == (10, 100) and np.array_equal(got2.view(u), want2.view(u))


def test_other_modes_give_the_dtype_too():
    x = np.array([0.3, -0.3, 1e-3, 500.0])
    up = lowprec.round(x, "fp8-e4m3", rounding="rup", overflow="sat", as_ml_dtypes=True)
    assert up.dtype == ml_dtypes.float8_e4m3fn
    assert list(up.astype(np.float64)) == [0.3125, -0.28125, 0.001953125, 448.0]


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float6_e2m3fn",
                                  "float4_e2m1fn", "float16"])
def test_ml_dtypes_arrays_are_inputs(name):
    dt = dtype_of(name)
    rng = np.random.default_rng(11)
    with np.errstate(all="ignore"):
        a = (rng.standard_normal((4, 64)) * 3).astype(dt)
    wide = a.astype(np.float32)  # exact
    for fmt in ("fp8-e5m2", "fp4-e2m1", "bf16"):
        assert np.array_equal(lowprec.round(a, fmt), lowprec.round(wide, fmt))
        assert np.array_equal(lowprec.encode(a, fmt), lowprec.encode(wide, fmt))
    q, qw = lowprec.quantize(a, "mxfp4"), lowprec.quantize(wide, "mxfp4")
    assert np.array_equal(q["codes"], qw["codes"])
    assert np.array_equal(q["scale_codes"], qw["scale_codes"])


def test_quantize_codes_and_scales_as_ml_dtypes():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((8, 64)) * 0.05).astype(np.float32)
    q = lowprec.quantize(x, "mxfp4", as_ml_dtypes=True)
    assert q["codes"].dtype == ml_dtypes.float4_e2m1fn
    assert q["element_format"] == lowprec.format_info("fp4-e2m1")["spec"]
    plain = lowprec.quantize(x, "mxfp4")
    assert np.array_equal(q["codes"].view(np.uint8), plain["codes"].astype(np.uint8))
    # the dequantized values are element × block scale, decoded by ml_dtypes alone
    elem = q["codes"].astype(np.float64).reshape(8, 2, 32)
    if hasattr(ml_dtypes, "float8_e8m0fnu"):
        assert q["scale_codes"].dtype == ml_dtypes.float8_e8m0fnu
        scale = q["scale_codes"].astype(np.float64)
    else:
        scale = np.exp2(plain["scale_codes"].astype(np.float64) - 127)
    assert np.array_equal((elem * scale[..., None]).reshape(8, 64), q["values"])
    n = lowprec.quantize(x, "nvfp4", as_ml_dtypes=True)
    assert n["codes"].dtype == ml_dtypes.float4_e2m1fn
    assert n["scale_codes"].dtype == ml_dtypes.float8_e4m3fn
    deq = (n["codes"].astype(np.float64).reshape(8, 4, 16)
           * n["scale_codes"].astype(np.float64)[..., None]).reshape(8, 64) * n["tensor_scale"]
    np.testing.assert_allclose(n["values"], deq, rtol=1e-6, atol=0)
    c = lowprec.quantize(x, "bf16", as_ml_dtypes=True)
    assert c["codes"].dtype == ml_dtypes.bfloat16
    assert np.array_equal(c["codes"].view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_no_dtype_is_a_clear_value_error():
    with pytest.raises(ValueError, match="ml_dtypes has no dtype"):
        lowprec.ml_dtype("tf32")
    with pytest.raises(ValueError, match="ml_dtypes has no dtype"):
        lowprec.round([1.0], "ue4m3", as_ml_dtypes=True)
    with pytest.raises(ValueError, match="integers"):
        lowprec.quantize(np.ones((2, 32)), "int4", as_ml_dtypes=True)
    with pytest.raises(ValueError, match="no code"):  # fp4 has no NaN
        lowprec.round([np.nan], "fp4-e2m1", as_ml_dtypes=True)
    with pytest.raises(ValueError, match="does not fit"):
        lowprec.decode([0x40], "fp6-e2m3", as_ml_dtypes=True)
    with pytest.raises(TypeError, match="float8_e4m3fn"):  # another format's dtype
        lowprec.decode(np.zeros(3, ml_dtypes.float8_e5m2), "fp8-e4m3")


def test_missing_ml_dtypes_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now fails
    with pytest.raises(ValueError, match="pip install ml-dtypes"):
        lowprec.round([1.0], "fp8-e4m3", as_ml_dtypes=True)
    # numpy's own dtypes need no ml_dtypes
    assert lowprec.round([1.0], "fp16", as_ml_dtypes=True).dtype == np.float16
