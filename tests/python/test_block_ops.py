"""lowprec.ops block operations (IEEE P3109 §5) against a plain reference in Python's
Fractions: BlockDotProduct and BlockReduceAdd are the exact sum rounded once (BlockReduceMultiply
the exact product) (nearest even by
search over the output format's values, SatFinite), ConvertToBlock / ConvertFromBlock
round-trip, the max-abs-finite scale never overflows an element and is the smallest that
does not, and an FP32 accumulator over two 4-bit products is exact."""

import functools
from fractions import Fraction

import numpy as np
import pytest

import lowprec
from lowprec import ops


@functools.lru_cache(maxsize=None)
def finite_values(fmt, bits):
    codes, v = values(fmt, bits)
    return [(Fraction(float(val)), int(c)) for c, val in zip(codes, v) if np.isfinite(val)]


def values(fmt, bits):
    codes = np.arange(1 << bits, dtype=np.uint64)
    return codes, lowprec.decode(codes, fmt)


def nearest_even(x, fmt, bits):
    """The code of the finite value of `fmt` nearest to the Fraction `x` (ties to the even
    code), saturating to the largest finite magnitude."""
    finite = finite_values(fmt, bits)
    lo = min(f for f, _ in finite)
    hi = max(f for f, _ in finite)
    x = min(max(x, lo), hi)
    best = min(abs(f - x) for f, _ in finite)
    cands = sorted({c for f, c in finite if abs(f - x) == best})
    if len(cands) > 1:
        cands = [c for c in cands if c % 2 == 0] or cands
    return cands[0]


def dec(fmt, code):
    return Fraction(float(lowprec.decode(np.array([code], np.uint64), fmt)[0]))


@pytest.mark.parametrize("elem", ["binary8p3se", "binary8p4se"])
def test_block_dot_product_and_reduce_add_are_the_exact_sum_rounded_once(elem):
    rng = np.random.default_rng(7)
    codes, v = values(elem, 8)
    ok = codes[np.isfinite(v)]
    for _ in range(60):
        k = int(rng.integers(1, 33))
        a = rng.choice(ok, k)
        b = rng.choice(ok, k)
        sa, sb = (int(s) for s in rng.integers(118, 136, 2))
        A = ("binary8p1uf", sa, elem, a)
        B = ("binary8p1uf", sb, elem, b)
        exact = sum(dec("binary8p1uf", sa) * dec(elem, x) * dec("binary8p1uf", sb) * dec(elem, y)
                    for x, y in zip(a, b))
        got = ops.block_dot_product(A, B, "binary8p3se", saturation="finite", codes_out=True)
        assert got == nearest_even(exact, "binary8p3se", 8), (a, b, sa, sb)
        total = sum(dec("binary8p1uf", sa) * dec(elem, x) for x in a)
        got = ops.block_reduce_add(A, "binary8p3se", saturation="finite", codes_out=True)
        assert got == nearest_even(total, "binary8p3se", 8)


def test_block_reduce_multiply_is_the_exact_product_rounded_once():
    rng = np.random.default_rng(11)
    codes, v = values("binary8p4se", 8)
    ok = codes[np.isfinite(v) & (np.abs(v) > 0.1) & (np.abs(v) < 10)]
    for _ in range(100):
        k = int(rng.integers(1, 9))
        x = rng.choice(ok, k)
        s = int(rng.integers(126, 130))
        exact = Fraction(1)
        for c in x:
            exact *= dec("binary8p1uf", s) * dec("binary8p4se", c)
        got = ops.block_reduce_multiply(("binary8p1uf", s, "binary8p4se", x), "binary8p3se",
                                        saturation="finite", codes_out=True)
        assert got == nearest_even(exact, "binary8p3se", 8), (x, s)


def test_block_map_is_the_exact_operation_over_the_result_scale():
    rng = np.random.default_rng(5)
    codes, v = values("binary8p4se", 8)
    ok = codes[np.isfinite(v)]
    for _ in range(40):
        a, b, c = rng.choice(ok, 16), rng.choice(ok, 16), rng.choice(ok, 16)
        sa, sb, sc, sr = (int(s) for s in rng.integers(125, 131, 4))
        blocks = [("binary8p1uf", sa, "binary8p4se", a), ("binary8p1uf", sb, "binary8p4se", b),
                  ("binary8p1uf", sc, "binary8p4se", c)]
        S = [dec("binary8p1uf", s) for s in (sa, sb, sc, sr)]
        got = ops.block_map("FMA", blocks, ("binary8p1uf", sr), "binary8p3se",
                            saturation="finite", codes_out=True)
        for i in range(16):
            exact = (S[0] * dec("binary8p4se", a[i]) * S[1] * dec("binary8p4se", b[i])
                     + S[2] * dec("binary8p4se", c[i])) / S[3]
            assert got[i] == nearest_even(exact, "binary8p3se", 8)
    with pytest.raises(ValueError, match="power of two"):
        ops.block_map("Add", blocks[:2], ("fp8-e4m3", 0x44), "fp32")


def test_convert_to_and_from_block_and_the_max_abs_finite_scale():
    rng = np.random.default_rng(3)
    _, v = values("binary8p4se", 8)
    top = float(np.nanmax(v[np.isfinite(v)]))
    for _ in range(200):
        x = rng.standard_normal(32) * 10.0 ** rng.integers(-3, 4)
        s, c = ops.convert_to_block(x, "binary8p4se", target="max-finite")
        q = lowprec.decode(c, "binary8p4se")
        assert np.isfinite(q).all()
        scale = float(lowprec.decode(np.array([s], np.uint64), "binary8p1uf")[0])
        assert np.abs(x).max() / scale <= top
        smaller = float(lowprec.decode(np.array([s - 1], np.uint64), "binary8p1uf")[0])
        assert np.abs(x).max() / smaller > top, "the scale is the smallest that fits"
        back = ops.convert_from_block(("binary8p1uf", s, "binary8p4se", c))
        assert np.array_equal(back, q * scale)
        # each element is x_i / s rounded once to nearest
        for xi, ci in zip(x, c):
            assert int(ci) == nearest_even(Fraction(float(xi)) / Fraction(scale), "binary8p4se", 8)


def test_an_fp32_accumulator_over_two_small_products_is_exact():
    codes, v = values("binary4p2sf", 4)
    ok = [int(c) for c, x in zip(codes, v) if np.isfinite(x)]
    for a0 in ok:
        for b0 in ok:
            A = ("binary8p1uf", 127, "binary4p2sf", [a0, b0])
            B = ("binary8p1uf", 127, "binary4p2sf", [b0, a0])
            exact = ops.block_dot_product(A, B, "fp32", codes_out=True)
            assert ops.block_dot_product(A, B, "fp32", acc="fp32", codes_out=True) == exact


def test_bad_blocks_raise_one_clear_error():
    with pytest.raises(ValueError, match="same size"):
        ops.block_dot_product(("binary8p1uf", 127, "binary8p3se", [1, 2]),
                              ("binary8p1uf", 127, "binary8p3se", [1]), "fp32")
    with pytest.raises(TypeError, match="scale_format"):
        ops.block_reduce_add([1, 2, 3], "fp32")
