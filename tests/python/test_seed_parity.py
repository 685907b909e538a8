"""lowprec's seed API against the seed `numfmt.py` on random arrays, function by function,
bit for bit where the seed is right (the seed-wrong points are masked out and checked the
other way in test_selftest.py)."""
import numpy as np
import pytest

import lowprec

MODES = ["nearest_even", "toward_zero", "nearest_away"]


def inputs(rng, f, n=20_000):
    lo = int(np.log2(f.min_subnormal)) - 3
    hi = min(int(np.log2(f.max_value)) + 3, 1000)
    e = rng.uniform(lo, hi, n)
    x = rng.uniform(1, 2, n) * np.exp2(np.floor(e)) * rng.choice([-1, 1], n)
    # ties of the format (few-bit significands) and their neighbours
    t = (rng.integers(0, 2**(f.man_bits + 2), n) / 2**(f.man_bits + 1) + 1) * np.exp2(
        rng.integers(lo, hi, n))
    t = np.nextafter(t, t * rng.choice([0, 2, 1], n))
    return np.concatenate([x, t, [0.0, -0.0, np.inf, -np.inf, np.nan, f.max_value]])


def _seed_wrong(f, x, mode, saturate):
    """Inputs at the documented seed-wrong points."""
    a = np.abs(x)
    bad = np.zeros(x.shape, bool)
    if mode == "toward_zero" and not saturate:
        bad |= np.isfinite(a) & (a > f.max_value)
    if mode == "nearest_away":
        bad |= a < f.min_subnormal / 2
    return bad


def same(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))


@pytest.mark.parametrize("name", [f.name for f in lowprec.FORMATS])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("saturate", [None, True])
def test_round_encode_decode(numfmt, name, mode, saturate):
    f, s = lowprec.BY_NAME[name], numfmt.BY_NAME[name]
    rng = np.random.default_rng(abs(hash((name, mode, saturate))) % 2**32)
    x = inputs(rng, f).reshape(-1, 2)  # any shape
    ok = ~_seed_wrong(f, x, mode, saturate)
    with np.errstate(all="ignore"):
        sv = s.round(x, rounding=mode, saturate=saturate)
    lv = f.round(x, rounding=mode, saturate=saturate)
    assert lv.dtype == np.float64 and lv.shape == x.shape
    assert np.all(same(lv, sv)[ok])
    xe = x[~np.isnan(x)] if f.special == "none" else x
    oke = ~_seed_wrong(f, xe, mode, saturate)
    with np.errstate(all="ignore"):
        sc = s.encode(xe, rounding=mode, saturate=saturate)
    lc = f.encode(xe, rounding=mode, saturate=saturate)
    assert lc.dtype == np.int64
    nan = np.isnan(s.decode(sc))
    assert np.all((lc == sc)[oke & ~nan])
    assert np.all(np.isnan(f.decode(lc))[nan & oke])
    codes = np.arange(min(1 << f.bits, 1 << 16))
    assert np.all(same(f.decode(codes), s.decode(codes)))


def test_scalars_and_properties(numfmt):
    for f in lowprec.FORMATS:
        s = numfmt.BY_NAME[f.name]
        for p in ("bits", "emax", "emin", "max_value", "min_normal", "min_subnormal", "eps"):
            assert getattr(f, p) == getattr(s, p), (f.name, p)
        assert f.fields(0x5a) == s.fields(0x5a)
        if f.bits <= 16:
            assert np.all(same(f.all_values(), s.all_values()))
        assert np.isscalar(f.round(1.3)) and f.round(1.3) == s.round(1.3)
        assert f.describe().startswith(f.name)
    assert lowprec.FloatFormat("X", 4, 3, 7, "fn") == lowprec.FloatFormat("X", 4, 3, 7, "fn")


def test_stochastic_is_unbiased_and_seeded():
    x = np.full(200_000, 1.0 + 2**-5)
    a = lowprec.FP8_E4M3.round(x, rounding="stochastic", rng=np.random.default_rng(3))
    assert set(np.unique(a)) == {1.0, 1.125}
    assert abs(a.mean() - x[0]) < 1e-3
    b = lowprec.round(x, "fp8-e4m3", "sr", seed=5)
    assert np.array_equal(b, lowprec.round(x, "fp8-e4m3", "stochastic", seed=5))


def test_integers(numfmt):
    for bits in (2, 4, 8, 16, 32):
        assert lowprec.int_range(bits) == numfmt.int_range(bits)
        assert lowprec.int_range(bits, signed=False) == numfmt.int_range(bits, signed=False)
        lo, hi = numfmt.int_range(bits)
        for v in (lo, -1, 0, 1, hi):
            c = lowprec.twos_complement_encode(v, bits)
            assert c == numfmt.twos_complement_encode(v, bits)
            assert lowprec.twos_complement_decode(c, bits) == v
    assert lowprec.bits_str(0x3f80, 16, (1, 8, 7)) == numfmt.bits_str(0x3f80, 16, (1, 8, 7))
    assert lowprec.bits_str(-1, 8) == numfmt.bits_str(-1, 8)
    v = np.random.default_rng(0).integers(-1000, 1000, (10, 7))
    assert np.array_equal(lowprec.wrap_int(v, 8), numfmt.wrap_int(v, 8))
    assert np.array_equal(lowprec.saturate_int(v, 8), numfmt.saturate_int(v, 8))
    assert lowprec.wrap_int(128, 8) == -128 and lowprec.saturate_int(128, 8) == 127


@pytest.mark.parametrize("name", ["FP8-E4M3", "FP8-E5M2", "FP6-E3M2", "FP6-E2M3", "FP4-E2M1"])
def test_mx(numfmt, name):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(32 * 200) * np.repeat(np.exp2(rng.integers(-20, 20, 200)), 32)
    x[:32] = 0.0  # an all-zero block: the scale differs (seed-wrong point 3)
    v, X = lowprec.mx_quantize(x, lowprec.BY_NAME[name])
    sv, sX = numfmt.mx_quantize(x, numfmt.BY_NAME[name])
    assert np.all(same(v, sv)) and X.dtype == np.float64
    assert np.array_equal(X[1:], sX[1:]) and X[0] == 2.0**-127


def test_nvfp4_and_tensor(numfmt):
    rng = np.random.default_rng(8)
    x = rng.standard_normal(16 * 300) * np.repeat(np.exp2(rng.integers(-12, 12, 300)), 16)
    x[16:32] = 0
    v, sb, g = lowprec.nvfp4_quantize(x)
    sv, ssb, sg = numfmt.nvfp4_quantize(x)
    assert np.all(same(v, sv)) and np.array_equal(sb, ssb) and g == sg and isinstance(g, float)
    z = lowprec.nvfp4_quantize(np.zeros(32))
    assert np.all(z[0] == 0) and np.all(z[1] == 0) and z[2] == 0.0
    for f in lowprec.FORMATS:
        assert np.all(same(lowprec.tensor_scaled(x, f), numfmt.tensor_scaled(x, numfmt.BY_NAME[f.name])))


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("gran", ["tensor", "channel", "group"])
@pytest.mark.parametrize("clip", [None, 0.9])
def test_quantize_int(numfmt, bits, symmetric, gran, clip):
    rng = np.random.default_rng(bits * 7 + symmetric)
    x = rng.standard_normal((16, 256)) + (0 if symmetric else 1.5)
    kw = dict(bits=bits, symmetric=symmetric, granularity=gran, clip=clip,
              group=64 if gran == "group" else None)
    d, q, s, z = lowprec.quantize_int(x, **kw)
    sd, sq, ss, sz = numfmt.quantize_int(x, **kw)
    assert q.dtype == np.int64 and np.array_equal(q, sq)
    assert np.array_equal(s, ss) and np.array_equal(z, sz) and s.shape == ss.shape
    assert np.array_equal(d, sd)  # == treats the seed's −0 (point 4) as 0


@pytest.mark.parametrize("acc", ["FP16", "BF16", "FP8-E4M3", "FP8-E5M2", None])
@pytest.mark.parametrize("method,chunk", [("sequential", None), ("pairwise", None),
                                          ("kahan", None), ("sequential", 64)])
def test_accumulate(numfmt, acc, method, chunk):
    rng = np.random.default_rng(11)
    v = rng.standard_normal((32, 301))
    fa = None if acc is None else lowprec.BY_NAME[acc]
    sa = None if acc is None else numfmt.BY_NAME[acc]
    if sa is not None:
        v = sa.round(v)  # terms representable in the accumulator, as the seed advises
    ours = lowprec.accumulate(v, fa, method=method, chunk=chunk)
    seed = numfmt.accumulate(v, sa, method=method, chunk=chunk)
    assert ours.dtype == np.float64 and ours.shape == (32,)
    assert np.all(same(ours, seed))


def test_softmax_variance_metrics(numfmt):
    rng = np.random.default_rng(12)
    x = rng.standard_normal(1000) * 3
    for fn in ("softmax_naive", "softmax_safe"):
        a, b = getattr(lowprec, fn)(x), getattr(numfmt, fn)(x)
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=0)
    m, d = lowprec.online_softmax_stats(x)
    sm, sd = numfmt.online_softmax_stats(x)
    assert m == sm and abs(d / sd - 1) < 1e-5 and isinstance(d, np.float32)
    mm = lowprec.merge_softmax_stats(lowprec.online_softmax_stats(x[:400]),
                                     lowprec.online_softmax_stats(x[400:]))
    assert mm[0] == m and abs(mm[1] / d - 1) < 1e-5
    y = rng.standard_normal(5000) + 10
    for fn in ("variance_one_pass", "variance_two_pass", "variance_welford"):
        a, b = getattr(lowprec, fn)(y), getattr(numfmt, fn)(y)
        assert isinstance(a, np.float32)
        assert abs(a - b) <= 0.05 * abs(b) + 1e-3, fn  # summation orders differ
    assert abs(lowprec.variance_two_pass(y, np.float64) - y.var()) < 1e-12
    a = x + rng.standard_normal(x.size) * 1e-3
    assert lowprec.rel_error(a, x) == pytest.approx(numfmt.rel_error(a, x), rel=1e-12)
    assert lowprec.sqnr_db(a, x) == pytest.approx(numfmt.sqnr_db(a, x), rel=1e-12)
    assert lowprec.sqnr_db(x, x) == np.inf
