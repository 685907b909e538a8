"""lowprec.round_exact: number strings read exactly and rounded once, against an exact
oracle written here with Python's fractions (independent of the library)."""
from fractions import Fraction
import math
import random

import numpy as np
import lowprec


def round_exact_oracle(s: str, man_bits: int, emin: int) -> float:
    """Nearest-even rounding of the decimal `s` to a binary format with `man_bits` fraction
    bits and minimum exponent `emin`, unbounded above (the tests stay in range)."""
    x = Fraction(s)
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    q = Fraction(2) ** (e - man_bits)  # the quantum at a
    n = a / q
    lo = math.floor(n)
    r = n - lo
    up = r > Fraction(1, 2) or (r == Fraction(1, 2) and lo % 2 == 1)
    return sign * float((lo + up) * q)


def near_tie_strings(rng, man_bits, count):
    """Decimal strings at, just above and just below ties of the format, with more digits
    than binary64 holds."""
    out = []
    for _ in range(count):
        e = rng.randint(-20, 20)
        k = rng.randrange(1 << man_bits)
        tie = (Fraction((1 << man_bits) + k) + Fraction(1, 2)) * Fraction(2) ** (e - man_bits)
        # a terminating decimal: tie = m / 2^j = m·5^j / 10^j
        j = tie.denominator.bit_length() - 1
        digits = tie.numerator * 5**j
        d = f"{digits}e-{j}"
        out += [d, f"{digits}{'0' * 22}1e-{j + 23}", f"{digits - 1}{'9' * 23}e-{j + 23}"]
    return out


def test_near_ties_round_once_like_the_exact_oracle():
    rng = random.Random(7)
    for fmt, man, emin, top in [("bf16", 7, -126, 2**127), ("fp16", 10, -14, 65504),
                                ("fp8-e4m3", 3, -6, 448)]:
        # below the largest finite value: the oracle has no overflow
        lits = [s for s in near_tie_strings(rng, man, 300) if abs(Fraction(s)) < top]
        values, codes = lowprec.round_exact(lits, fmt)
        want = [round_exact_oracle(s, man, emin) for s in lits]
        assert values.tolist() == want, fmt
        np.testing.assert_array_equal(lowprec.decode(codes.astype(np.uint16), fmt), values)


def test_floats_are_their_exact_binary64_value():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 8, 2000)
    for mode in ("rne", "rtz", "rup", "rdn", "rna"):
        values, _ = lowprec.round_exact(list(x), "bf16", rounding=mode)
        np.testing.assert_array_equal(values, lowprec.round(x, "bf16", rounding=mode))


def test_the_double_rounding_example_and_refusals():
    assert lowprec.round_exact("1.00390625000000000001", "bf16")[0].tolist() == [1.0078125]
    assert float(lowprec.round(1.00390625000000000001, "bf16")) == 1.0
    try:
        lowprec.round_exact(["1.2.3"], "bf16")
    except ValueError as e:
        assert "is not a number" in str(e)
    else:
        raise AssertionError("1.2.3 was accepted")
