"""lowprec.ops: operations rounded once, against an exact oracle written here.

The oracle: every value of the result format from ``lowprec.decode`` of every code (the
positive finite codes are ordinal, so a code's magnitude is its index), the exact result of
the operation in Python's ``fractions.Fraction``, and a plain rounding to the neighbours
found by bisection (nearest-even, nearest-away, the directed modes, stochastic A), with the
overflow and signed-zero rules of IEEE 754 and of P3109 written out below. ml_dtypes is a
second oracle for conversions into bfloat16, where its arithmetic is a single rounding.
"""
from bisect import bisect_right
from fractions import Fraction
import math
import random
import re
import zlib

import numpy as np
import pytest

import lowprec
from lowprec import ops

MODES = ["rne", "rna", "rtz", "rup", "rdn"]


# ---------------------------------------------------------------------------------------
# the oracle
# ---------------------------------------------------------------------------------------
class Fmt:
    """A format's values as the oracle sees them."""

    def __init__(self, name):
        self.name = name
        info = lowprec.format_info(name)
        self.info = info
        self.bits = info["bits"]
        self.p3109 = info["special"].startswith("p3109")
        self.sign = 1 << (self.bits - 1)
        self.vals = lowprec.decode(np.arange(1 << self.bits, dtype=np.uint64), name)
        mags, c = [], 0
        while c < self.sign and np.isfinite(self.vals[c]):
            mags.append(Fraction(float(self.vals[c])))
            c += 1
        assert all(a < b for a, b in zip(mags, mags[1:])), "positive codes are not ordinal"
        self.max_mag = c - 1
        # the place of the code above max (Inf in these formats) one quantum above max
        self.mags = mags + [2 * mags[-1] - mags[-2]]
        self.has_inf = bool(np.isinf(self.vals[c])) if c < self.sign else False
        neg0 = self.vals[self.sign]
        self.neg_zero = bool(neg0 == 0 and np.signbit(neg0))
        self.max = float(mags[-1])
        self.finite_codes = [c for c in range(1 << self.bits) if np.isfinite(self.vals[c])]
        self.nan_code = next(c for c in range(1 << self.bits) if np.isnan(self.vals[c]))

    def frac(self, code):
        return Fraction(float(self.vals[code]))

    def is_neg(self, code):
        return bool(np.signbit(self.vals[code]))

    def inf_code(self, neg):
        return (self.max_mag + 1) | (self.sign if neg else 0)

    def round(self, q, mode, zero_neg=False, ieee=True, saturation="none", r=None):
        """The code of the exact `q` (a Fraction) rounded once: `zero_neg` is the sign of an
        exact zero result, `ieee` whether the IEEE 754 zero rules apply (False: P3109, no
        -0), `r` = (R, N) for stochastic A. None where the oracle makes no claim."""
        neg = q < 0
        m = -q if neg else q
        toward = {"rtz": "zero", "rup": "zero" if neg else "away",
                  "rdn": "away" if neg else "zero"}.get(mode, mode)
        top = self.max_mag + 1
        if m >= self.mags[top]:
            o = top + 1  # beyond: overflows whatever the mode
        else:
            i = bisect_right(self.mags, m) - 1
            lo, hi = i, i + 1
            if self.mags[lo] == m:
                o = lo
            elif toward == "zero":
                o = lo
            elif toward == "away":
                o = hi
            elif toward == "rto":
                o = lo if lo % 2 else hi
            elif toward == "sra":
                R, N = r
                nu = (m - self.mags[lo]) / (self.mags[hi] - self.mags[lo])
                o = hi if math.floor(nu * 2**N) + R >= 2**N else lo
            else:
                d = (m - self.mags[lo]) - (self.mags[hi] - m)
                if d < 0:
                    o = lo
                elif d > 0:
                    o = hi
                elif toward == "rna":
                    o = hi
                else:
                    o = lo if lo % 2 == 0 else hi
        if o > self.max_mag:
            if toward == "rto":
                return None  # to-odd overflow: a rule choice, not tested here
            if saturation == "finite" or toward == "zero":
                o = self.max_mag  # SatFinite, or the directed mode toward zero (IEEE 7.4)
            else:
                assert self.has_inf
                o = self.max_mag + 1  # Inf
        if o == 0:
            s = (neg if q != 0 else zero_neg) and ieee and self.neg_zero
            return self.sign if s else 0
        return o | (self.sign if neg else 0)


FORMATS = {}


def fmt(name):
    if name not in FORMATS:
        FORMATS[name] = Fmt(name)
    return FORMATS[name]


def exact(op, f_in, codes, mode):
    """(exact Fraction, sign of an exact zero under IEEE 754) of an operation on finite
    operand codes of `f_in` (a list of Fmt, one per operand)."""
    x = [f.frac(c) for f, c in zip(f_in, codes)]
    s = [f.is_neg(c) for f, c in zip(f_in, codes)]
    down = mode == "rdn"

    def sum_sign(signs, terms_zero):
        if terms_zero and all(signs):
            return True
        if terms_zero and not any(signs):
            return False
        return down

    if op == "Add":
        q = x[0] + x[1]
        return q, sum_sign(s, x[0] == 0 and x[1] == 0)
    if op == "Subtract":
        q = x[0] - x[1]
        return q, sum_sign([s[0], not s[1]], x[0] == 0 and x[1] == 0)
    if op == "Multiply":
        return x[0] * x[1], s[0] != s[1]
    if op == "Divide":
        return x[0] / x[1], s[0] != s[1]
    if op == "FMA":
        p = x[0] * x[1]
        return p + x[2], sum_sign([s[0] != s[1], s[2]], p == 0 and x[2] == 0)
    raise AssertionError(op)


def random_operands(f, rng, count, arity, nonzero_last=False):
    """Codes of finite values: uniform over the codes, or close to each other (cancellation,
    ties)."""
    out = []
    codes = f.finite_codes
    for _ in range(count):
        if rng.random() < 0.5:
            t = [rng.choice(codes) for _ in range(arity)]
        else:
            a = rng.choice(codes)
            t = [a]
            for _ in range(arity - 1):
                mag = (a & ~f.sign) + rng.randint(-3, 3)
                mag = min(max(mag, 0), f.max_mag)
                neg = rng.random() < 0.5 and (mag != 0 or f.neg_zero)  # P3109: 0x80 is NaN
                t.append(mag | (f.sign if neg else 0))
        if nonzero_last and f.vals[t[-1]] == 0:
            t[-1] = f.max_mag  # the largest finite value
        out.append(t)
    return out


def run(op, operand_fmt, out_fmt, tuples, mode, saturation="none"):
    """lowprec.ops.apply on the code tuples: the result codes."""
    cols = [np.array([t[k] for t in tuples], dtype=np.uint64) for k in range(len(tuples[0]))]
    return ops.apply(op, *cols, formats=operand_fmt, out=out_fmt, rounding=mode,
                     saturation=saturation, codes_out=True)


# ---------------------------------------------------------------------------------------
# arithmetic against the oracle
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES + ["rto"])
@pytest.mark.parametrize("op", ["Add", "Subtract", "Multiply", "Divide", "FMA"])
@pytest.mark.parametrize("name", ["bf16", "binary8p4se"])
def test_arithmetic_against_fractions(name, op, mode):
    f = fmt(name)
    rng = random.Random(zlib.crc32(f"{name} {op} {mode}".encode()))
    arity = 3 if op == "FMA" else 2
    tuples = random_operands(f, rng, 2000, arity, nonzero_last=(op == "Divide"))
    got = run(op, name, name, tuples, mode)
    assert got.dtype == (np.uint16 if f.bits == 16 else np.uint8)
    checked = 0
    for t, g in zip(tuples, got.tolist()):
        q, zneg = exact(op, [f] * arity, t, mode)
        want = f.round(q, mode, zero_neg=zneg, ieee=not f.p3109)
        if want is None:
            continue
        checked += 1
        assert g == want, (op, name, mode, [f.vals[c] for c in t], q, g, want)
    assert checked > 1500


@pytest.mark.parametrize("mode", ["rne", "rtz", "rup"])
@pytest.mark.parametrize("saturation", ["none", "finite"])
def test_mixed_formats_follow_p3109_and_saturate(mode, saturation):
    """bf16 operands into binary8p4se (a P3109 result: no -0, overflow to Inf or, with
    SatFinite, to max), and binary8p4se operands into bf16 (P3109 rules in an IEEE format:
    a zero result has no sign)."""
    rng = random.Random(5)
    bf, p8 = fmt("bf16"), fmt("binary8p4se")
    # bf16 operands around binary8p4se's range
    small = [c for c in bf.finite_codes if bf.vals[c] == 0 or 2.0**-12 <= abs(bf.vals[c]) <= 2.0**9]
    tuples = [[rng.choice(small), rng.choice(small)] for _ in range(3000)]
    for op in ["Add", "Multiply"]:
        got = run(op, "bf16", "binary8p4se", tuples, mode, saturation)
        for t, g in zip(tuples, got.tolist()):
            q, _ = exact(op, [bf, bf], t, mode)
            assert g == p8.round(q, mode, ieee=False, saturation=saturation), (op, t)
    tuples = random_operands(p8, rng, 3000, 2)
    for op in ["Subtract", "Multiply"]:
        got = run(op, "binary8p4se", "bf16", tuples, mode, saturation)
        for t, g in zip(tuples, got.tolist()):
            q, _ = exact(op, [p8, p8], t, mode)
            assert g == bf.round(q, mode, ieee=False, saturation=saturation), (op, t)


def p3109_specials(op, a, b, f):
    """The result code of Add or Multiply in a P3109 format when an operand is NaN or Inf."""
    x, y = float(f.vals[a]), float(f.vals[b])
    if math.isnan(x) or math.isnan(y):
        return f.nan_code
    r = x + y if op == "Add" else x * y
    if math.isnan(r):  # Inf - Inf, 0 * Inf
        return f.nan_code
    return f.inf_code(r < 0)


@pytest.mark.parametrize("mode", ["rne", "rdn"])
@pytest.mark.parametrize("op", ["Add", "Multiply"])
def test_full_table_of_binary8p4se_is_the_oracle(op, mode):
    """Every pair of codes, NaN and the infinities included (table), and apply agrees."""
    f = fmt("binary8p4se")
    t = ops.table(op, "binary8p4se", "binary8p4se", rounding=mode)
    assert t.shape == (256, 256) and t.dtype == np.uint64
    finite = set(f.finite_codes)
    tl = t.tolist()
    for a in range(256):
        for b in range(256):
            if a in finite and b in finite:
                q, _ = exact(op, [f, f], [a, b], mode)
                want = f.round(q, mode, ieee=False)
            else:
                want = p3109_specials(op, a, b, f)
            assert tl[a][b] == want, (a, b, f.vals[a], f.vals[b])
    a, b = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8),
                       indexing="ij")
    got = ops.apply(op, a, b, formats="binary8p4se", out="binary8p4se", rounding=mode,
                    codes_out=True)
    np.testing.assert_array_equal(got, t)


@pytest.mark.parametrize("name", ["bf16", "binary8p4se"])
@pytest.mark.parametrize("mode", ["rne", "rna", "rtz", "rup"])
def test_sqrt_against_squares(name, mode):
    f = fmt(name)
    rng = random.Random(11)
    pos = [c for c in f.finite_codes if f.vals[c] > 0]
    codes = pos if len(pos) < 3000 else rng.sample(pos, 3000)
    got = ops.sqrt(np.array(codes, dtype=np.uint64), formats=name, out=name, rounding=mode,
                   codes_out=True)
    sq = [m * m for m in f.mags]
    for c, g in zip(codes, got.tolist()):
        q = f.frac(c)
        i = bisect_right(sq, q) - 1  # mags[i]**2 <= q < mags[i+1]**2
        if sq[i] == q or mode in ("rtz", "rdn"):
            want = i
        elif mode == "rup":
            want = i + 1
        else:
            mid = (f.mags[i] + f.mags[i + 1]) / 2
            want = i if q < mid * mid else i + 1  # never a tie: mid² ≠ q for dyadic q here
            assert q != mid * mid
        assert g == want, (f.vals[c], g, want)


def test_stochastic_rounding_with_given_random_words():
    """StochasticA with 8 bits: away from zero iff floor(ν·2^8) + R ≥ 2^8."""
    f = fmt("binary8p4se")
    rng = random.Random(3)
    inrange = [c for c in f.finite_codes if abs(f.vals[c]) <= 16]
    tuples = [[rng.choice(inrange), rng.choice(inrange)] for _ in range(3000)]
    words = np.array([rng.randrange(256) for _ in tuples], dtype=np.uint32)
    a = np.array([t[0] for t in tuples], dtype=np.uint8)
    b = np.array([t[1] for t in tuples], dtype=np.uint8)
    for op in ["Add", "Multiply"]:
        got = ops.apply(op, a, b, formats="binary8p4se", out="binary8p4se", rounding="sra8",
                        random=words, codes_out=True)
        for t, r, g in zip(tuples, words.tolist(), got.tolist()):
            q, _ = exact(op, [f, f], t, "rne")
            assert g == f.round(q, "sra", ieee=False, r=(r, 8)), (op, t, r)
    with pytest.raises(ValueError, match="not below 2\\^8"):
        ops.add(a, b, formats="binary8p4se", out="binary8p4se", rounding="sra8",
                random=words + 256)


def test_stochastic_rounding_with_a_seed():
    x = np.full(4000, 1.0)
    lit = "0.00390625"  # 2^-8: 1 + 2^-8 is half-way between two bf16 values
    r1 = ops.add(x, lit, formats="fp32", out="bf16", rounding="sr", seed=1)
    r2 = ops.add(x, lit, formats="fp32", out="bf16", rounding="sr", seed=1)
    r3 = ops.add(x, lit, formats="fp32", out="bf16", rounding="sr", seed=2)
    np.testing.assert_array_equal(r1, r2)
    assert set(np.unique(r1)) == {1.0, 1.0078125}
    assert (r1 != r3).any()
    # half a quantum above 1: about half of them round up
    assert 0.4 < np.mean(r1 == 1.0078125) < 0.6


# ---------------------------------------------------------------------------------------
# operands: strings, values, codes
# ---------------------------------------------------------------------------------------
def test_strings_are_read_exactly_and_rounded_once():
    bf = fmt("bf16")
    # the double-rounding example: above the tie 1 + 2^-8, so up
    assert ops.convert("1.00390625000000000001", formats="bf16", out="bf16") == 1.0078125
    # the same number as a Python float is the tie itself and rounds to even
    assert ops.convert(1.00390625, formats="fp64", out="bf16") == 1.0
    tenth = ops.convert("0.1", formats="bf16", out="fp64")
    assert tenth == 0.10009765625 == float(bf.frac(bf.round(Fraction("0.1"), "rne")))
    # a string is rounded with the call's projection
    assert ops.convert("0.1", formats="bf16", out="fp64", rounding="rdn") == 0.099609375
    # rounded into the operand format, then the operation rounded once into out
    s = ops.add("0.1", "0.2", formats="bf16", out="fp32")
    assert s == np.float32(0.10009765625 + 0.2001953125)
    arr = np.array(["0.1", "-3", "0x1.8p-3", "1e-50", "inf"])
    got = ops.convert(arr, formats="bf16", out="fp64")
    want = [float(bf.frac(bf.round(Fraction(x), "rne"))) for x in ["0.1", "-3", "0.1875",
                                                                    "1e-50"]] + [math.inf]
    assert got.tolist() == want
    # long decimals, random, against the oracle
    rng = random.Random(9)
    lits = [f"{rng.choice('-+')}{rng.randrange(10**30)}e-{rng.randrange(20, 60)}"
            for _ in range(500)]
    for mode in MODES:
        got = ops.convert(np.array(lits), formats="bf16", out="bf16", rounding=mode,
                          codes_out=True)
        want = [bf.round(Fraction(x), mode) for x in lits]
        assert got.tolist() == want, mode


def test_values_must_be_values_of_the_format():
    x = np.array([1.0, 0.1, 2.0])
    with pytest.raises(ValueError, match=r"operand 2 element 1, 0\.1, is not a value of bf16"):
        ops.add(np.ones(3), x, formats="bf16", out="bf16")
    with pytest.raises(ValueError, match=r"between 0\.099609375 and 0\.10009765625"):
        ops.add(np.ones(3), x, formats="bf16", out="bf16")
    with pytest.raises(ValueError, match=r"element \(1, 0\), 0\.1"):
        ops.negate(np.array([[1.0], [0.1]]), formats="bf16", out="bf16")
    with pytest.raises(ValueError, match="inf, is not a value of fp8-e4m3"):
        ops.negate(np.array([np.inf]), formats="fp8-e4m3", out="fp32")
    with pytest.raises(ValueError, match="element 1, nan, is not a value of fp4-e2m1;"):
        ops.negate(np.array([1.0, np.nan]), formats="fp4-e2m1", out="fp4-e2m1")
    with pytest.raises(ValueError, match="operand 1, 0.0, is not a value of e8m0"):
        ops.convert(0.0, formats="e8m0", out="fp32")
    # float16, float32, float64 and Python scalars of the format are accepted
    for dt in (np.float16, np.float32, np.float64):
        np.testing.assert_array_equal(
            ops.add(np.array([1.5, -2.0], dt), 0.25, formats="bf16", out="fp32"), [1.75, -1.75])
    assert ops.multiply(3, 0.5, formats="bf16", out="bf16") == 1.5
    # codes: unsigned arrays and numpy unsigned scalars
    assert ops.add(np.uint16(0x3F80), np.uint16(0x3F80), formats="bf16", out="bf16") == 2.0
    with pytest.raises(ValueError, match="code 256, beyond fp8-e4m3's codes"):
        ops.negate(np.array([256], np.uint16), formats="fp8-e4m3", out="fp8-e4m3")


def test_signed_integers_and_bools_are_refused():
    with pytest.raises(TypeError, match="unsigned"):
        ops.negate(np.array([1, 2]), formats="bf16", out="bf16")
    with pytest.raises(TypeError, match="bool"):
        ops.negate(True, formats="bf16", out="bf16")


def test_broadcasting_shapes_and_scalars():
    a = np.arange(3, dtype=np.float64).reshape(3, 1)
    b = np.arange(4, dtype=np.float64).reshape(1, 4)
    r = ops.add(a, b, formats="fp32", out="fp32")
    assert r.shape == (3, 4)
    np.testing.assert_array_equal(r, a + b)
    r = ops.fma(a, 2.0, "1", formats=("fp32", "bf16", "bf16"), out="fp32")
    np.testing.assert_array_equal(r, 2 * a + 1)
    s = ops.add(1.0, 2.0, formats="fp32", out="fp32")
    assert isinstance(s, np.float64) and s == 3.0


def test_ml_dtypes_bfloat16_conversion():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(4)
    bits = rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32)
    bits[:8] = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0x7F7F8000, 0x00000001,
                0x3F808000]
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    got = ops.convert(bits, formats="fp32", out="bf16", codes_out=True)
    assert got.dtype == np.uint16
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(lowprec.decode(got[nan], "bf16")).all()
    # bfloat16 arrays are values of bf16
    y = x[~nan][:1000].astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(ops.convert(y, formats="bf16", out="fp32"),
                                  y.astype(np.float64))


# ---------------------------------------------------------------------------------------
# compares, predicates, class, next
# ---------------------------------------------------------------------------------------
def test_compares_and_predicates_against_numpy():
    rng = np.random.default_rng(6)
    a = rng.integers(0, 2**16, 20000, dtype=np.uint64).astype(np.uint16)
    b = rng.integers(0, 2**16, 20000, dtype=np.uint64).astype(np.uint16)
    b[:5000] = a[:5000] ^ rng.integers(0, 2, 5000).astype(np.uint16)  # equal or ±1 code
    va, vb = lowprec.decode(a, "bf16"), lowprec.decode(b, "bf16")
    for f, want in [(ops.compare_less, va < vb), (ops.compare_less_equal, va <= vb),
                    (ops.compare_equal, va == vb), (ops.compare_greater, va > vb),
                    (ops.compare_greater_equal, va >= vb)]:
        got = f(a, b, formats="bf16")
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, want, err_msg=f.__name__)
    for f, want in [(ops.is_nan, np.isnan(va)), (ops.is_infinite, np.isinf(va)),
                    (ops.is_finite, np.isfinite(va)), (ops.is_zero, va == 0),
                    (ops.is_one, va == 1), (ops.is_sign_minus, (a & 0x8000) != 0)]:
        np.testing.assert_array_equal(f(a, formats="bf16"), want, err_msg=f.__name__)
    assert ops.compare_equal(np.uint16(0x8000), np.uint16(0), formats="bf16")  # -0 == +0


@pytest.mark.parametrize("name", ["bf16", "binary8p4se", "fp8-e4m3"])
def test_class_against_the_values(name):
    f = fmt(name)
    codes = np.arange(1 << f.bits, dtype=np.uint64)
    got = ops.class_of(codes, formats=name)
    assert got.dtype == np.uint8
    mn = f.info["min_normal"]
    for c, g in zip(codes.tolist(), got.tolist()):
        v = f.vals[c]
        if math.isnan(v):
            want = "ClsNaN"
        elif math.isinf(v):
            want = "ClsNegativeInfinity" if v < 0 else "ClsPositiveInfinity"
        elif v == 0:
            want = "ClsNegativeZero" if np.signbit(v) else "ClsZero"
        else:
            kind = "Normal" if abs(v) >= mn else "Subnormal"
            want = ("ClsNegative" if v < 0 else "ClsPositive") + kind
        assert ops.CLASS_NAMES[g] == want, (c, v)


@pytest.mark.parametrize("name", ["bf16", "binary8p4se"])
def test_next_greater_and_less_than_are_the_neighbours(name):
    f = fmt(name)
    ordered = sorted({float(v) for v in f.vals if np.isfinite(v)})
    codes = np.array(f.finite_codes, dtype=np.uint64)
    up = ops.next_greater_than(codes, formats=name)
    down = ops.next_less_than(codes, formats=name, out=name)
    for c, u, d in zip(codes.tolist(), up.tolist(), down.tolist()):
        i = ordered.index(float(f.vals[c]))  # ±0 are one value
        assert u == (ordered[i + 1] if i + 1 < len(ordered) else math.inf), f.vals[c]
        assert d == (ordered[i - 1] if i > 0 else -math.inf), f.vals[c]
    assert ops.next_greater_than(np.uint16(0x3F80), formats="bf16", codes_out=True) == 0x3F81
    with pytest.raises(ValueError, match="leave out=None"):
        ops.next_greater_than(codes, formats=name, out="fp32")


# ---------------------------------------------------------------------------------------
# queries, names, the module, errors
# ---------------------------------------------------------------------------------------
def test_queries_of_binary8p4se():
    q = ops.queries("binary8p4se")
    info = lowprec.format_info("binary8p4se")
    assert q["BitwidthOf"] == 8 and q["PrecisionOf"] == 4 and q["SignednessOf"] == 1
    assert q["DomainOf"] == 1 and q["ExponentBitwidthOf"] == 4
    assert q["TrailingSignificandBitwidthOf"] == 3 and q["ExponentBiasOf"] == info["bias"]
    assert q["MaxFiniteOf"] == info["max_value"] == fmt("binary8p4se").max
    assert q["MinFiniteOf"] == -info["max_value"]
    assert q["MinPositiveOf"] == info["min_positive"] and q["MinNormalOf"] == info["min_normal"]
    assert q["MaxSubnormalOf"] == info["min_normal"] - info["min_subnormal"]
    assert math.isnan(ops.queries("e8m0")["MaxSubnormalOf"])


def snake(name):
    return {"FMA": "fma", "FAA": "faa", "RSqrt": "rsqrt", "Class": "class_of",
            "IsNaN": "is_nan"}.get(name) or re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def test_every_operation_has_a_function_and_the_module_is_reachable():
    import lowprec.ops as direct
    assert lowprec.ops is ops is direct
    n = ops.names()
    assert len(n) == 44 and n[0] == "Convert" and "NextLessThan" in n
    for name in n:
        f = getattr(ops, snake(name))
        assert f.__doc__ and name in f.__doc__, name
        assert snake(name) in ops.__all__
    assert ops.CLASS_NAMES[0] == "ClsNaN" and len(ops.CLASS_NAMES) == 9
    # aliases and any case
    one = np.uint16(0x3F80)
    for alias in ["add", "Add", "ADD"]:
        assert ops.apply(alias, one, one, formats="bf16", out="bf16") == 2.0
    assert ops.apply("lt", one, np.uint16(0x4000), formats="bf16")
    # a FloatFormat as the format
    assert ops.add(1.0, 1.0, formats=lowprec.BF16, out=lowprec.FP32) == 2.0


def test_result_dtypes_and_counts():
    x = np.array([1.0, 3.0, 448.0])
    assert ops.multiply(x, x, formats="fp8-e4m3", out="fp8-e4m3", codes_out=True,
                        saturation="finite").dtype == np.uint8
    assert ops.multiply(x, x, formats="fp8-e4m3", out="fp32", codes_out=True).dtype == np.uint32
    assert ops.multiply(x, x, formats="fp8-e4m3", out="fp64", codes_out=True).dtype == np.uint64
    r, c = ops.multiply(x, x, formats="fp8-e4m3", out="fp8-e4m3", saturation="finite",
                        counts=True)
    assert r.tolist() == [1.0, 9.0, 448.0]
    assert c["total"] == 3 and c["inexact"] == 1 and c["overflow"] == 1 and c["saturated"] == 1
    r, c = ops.multiply(x, x, formats="fp8-e4m3", out="fp8-e4m3", counts=True)
    assert math.isnan(r[2]) and c["nan"] == 1  # SatNone into an fn format: NaN


def test_table_refusals_and_shapes():
    assert ops.table("sqrt", "fp8-e4m3", "fp8-e4m3").shape == (256,)
    assert ops.table("lt", ["fp4-e2m1", "fp8-e4m3"]).shape == (16, 256)
    with pytest.raises(ValueError, match="at most 8 bits"):
        ops.table("add", "bf16", "bf16")
    with pytest.raises(ValueError, match="deterministic"):
        ops.table("add", "fp8-e4m3", "fp8-e4m3", rounding="sra8")
    with pytest.raises(ValueError, match=r"codes \(0, 0\) is NaN and fp4-e2m1 has no NaN"):
        ops.table("div", "fp4-e2m1", "fp4-e2m1")


def test_errors_are_value_errors_with_a_clear_message():
    one = np.ones(3)
    with pytest.raises(ValueError, match="unknown operation \"frobnicate\"; the operations are "
                                         "Convert, Negate, Abs, Add"):
        ops.apply("frobnicate", one, formats="bf16", out="bf16")
    with pytest.raises(ValueError, match=r"shapes \(3,\), \(4,\) differ and do not broadcast"):
        ops.add(one, np.ones(4), formats="bf16", out="bf16")
    with pytest.raises(ValueError, match="Add takes 2 operand"):
        ops.apply("add", one, formats="bf16", out="bf16")
    with pytest.raises(ValueError, match="3 formats were given"):
        ops.add(one, one, formats=["bf16", "bf16", "bf16"], out="bf16")
    with pytest.raises(ValueError, match="name its result format"):
        ops.add(one, one, formats="bf16")
    with pytest.raises(ValueError, match="unknown rounding"):
        ops.add(one, one, formats="bf16", out="bf16", rounding="nearest-ish")
    with pytest.raises(ValueError, match="unknown saturation"):
        ops.add(one, one, formats="bf16", out="bf16", saturation="clip")
    with pytest.raises(ValueError):
        ops.add(one, one, formats="bf17", out="bf16")
    with pytest.raises(ValueError, match="is not a number"):
        ops.add(one, "1.2.3", formats="bf16", out="bf16")
    with pytest.raises(ValueError, match="element 1: the result is NaN and fp4-e2m1 has no NaN"):
        ops.sqrt(np.array([1.0, -1.0]), formats="fp32", out="fp4-e2m1")
    with pytest.raises(ValueError, match="random has the shape"):
        ops.add(one, one, formats="bf16", out="bf16", rounding="sra8",
                random=np.zeros(4, np.uint32))
