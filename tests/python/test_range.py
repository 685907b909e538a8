"""The range rules of shared/seeds/solprop_precision.txt through lowprec: the seed's doctest
examples, and parity with the seed's definitions on random data."""
import math

import numpy as np
import pytest

import lowprec as L


def test_doctest_examples():
    assert repr(L.precision_named("single")) == "Precision(state='single', source='single')"
    assert (L.Precision().name, L.precision_named("single").single) == ("double", True)
    assert L.precision_named("double").name == "double"
    assert L.admit_precision(L.SINGLE, backend="numpy_ref", adams=False, rtol=1e-6,
                             schedule=False) is None
    assert [L.block_exponent(x) for x in (1.0, 3.0, 0.25, 0.0)] == [0, 1, -2, 0]
    kernel = L.narrow(np.array([5.2e-50, 1.0e-50]))
    assert (kernel.values.dtype, kernel.exponent, bool(np.all(kernel.values > 0))) == (
        np.dtype("float32"), -164, True)
    assert L.launch_peak(np.full((1, 1, 1, 4), 2.0 + 0.0j), "envelope") == 2.0
    assert (L.state_scale(3.0e4), L.state_scale(0.0)) == (16384.0, 1.0)
    c = L.combine(2.5e25, 8.854e-12, exponent=-164)
    assert abs(c.value - 2.5e25 * 8.854e-12 * 2.0**-164) < 1e-60
    assert L.pairwise_sum(np.arange(5, dtype=np.float32)).item() == 10.0
    assert L.prefix_sum(np.arange(5, dtype=np.float32)).tolist() == [0.0, 1.0, 3.0, 6.0, 10.0]
    big = np.full(4, 3.0e30, dtype=np.float32)
    total = L.scaled_square_sum(big)
    assert abs(total / (4 * float(np.float32(3.0e30)) ** 2) - 1.0) < 1e-6


def test_admission_refusals():
    L.admit_precision(L.DOUBLE, backend="numba_cpu", adams=True, rtol=1e-12, schedule=False)
    with pytest.raises(ValueError, match="numba_cpu"):
        L.admit_precision(L.SINGLE, backend="numba_cpu", adams=False, rtol=1e-6, schedule=False)
    with pytest.raises(ValueError):
        L.admit_precision(L.SINGLE, backend="mlx", adams=True, rtol=1e-6, schedule=False)
    with L.study_admission():
        L.admit_precision(L.SINGLE, backend="mlx", adams=True, rtol=1e-6, schedule=False)
    with pytest.raises(ValueError, match="floor"):
        L.admit_precision(L.SINGLE, backend="mlx", adams=False, rtol=1e-8, schedule=False)
    L.admit_precision(L.SINGLE, backend="mlx", adams=False, rtol=1e-8, schedule=True)
    assert L.SINGLE.real_dtype == np.float32 and L.DOUBLE.complex_dtype == np.complex128


def _seed_pairwise(values, axis=-1):
    moved = np.moveaxis(np.asarray(values), axis, -1)
    n = moved.shape[-1]
    width = 1 << (n - 1).bit_length()
    level = np.zeros((*moved.shape[:-1], width), dtype=moved.dtype)
    level[..., :n] = moved
    while level.shape[-1] > 1:
        level = level[..., 0::2] + level[..., 1::2]
    return level[..., 0]


def _seed_prefix(values, axis=-1):
    scan = np.array(np.moveaxis(np.asarray(values), axis, -1), copy=True)
    n, shift = scan.shape[-1], 1
    while shift < n:
        scan[..., shift:] += scan[..., :-shift].copy()
        shift *= 2
    return np.moveaxis(scan, -1, axis)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sums_match_the_seed_order(dtype, axis):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 37, 5)) * np.exp2(rng.integers(-10, 10, (7, 37, 5)))
    if dtype == np.complex64:
        x = x + 1j * rng.standard_normal(x.shape)
    x = x.astype(dtype)
    p = L.pairwise_sum(x, axis)
    assert p.dtype == dtype and np.array_equal(p, _seed_pairwise(x, axis))
    s = L.prefix_sum(x, axis)
    assert s.dtype == dtype and np.array_equal(s, _seed_prefix(x, axis))


def test_exponents_and_coefficients():
    rng = np.random.default_rng(2)
    for _ in range(200):
        v = rng.standard_normal(9) * 10.0 ** rng.integers(-300, 300)
        big = float(np.max(np.abs(v)))
        assert L.block_exponent(v) == math.frexp(big)[1] - 1
        f = rng.standard_normal(3) * 10.0 ** rng.integers(-100, 100, 3)
        c = L.combine(*f, exponent=int(rng.integers(-50, 50)))
        assert 0.5 <= abs(c.mantissa) < 1
    n = L.narrow(np.array([3.0e-300, -1.0e-301]))
    assert n.values.dtype == np.float32 and not n.values.flags.writeable
    assert np.allclose(n.widened(), [3.0e-300, -1.0e-301], rtol=1e-7, atol=0)
    with pytest.raises(ValueError, match="overflows"):
        _ = L.combine(1e300, 1e300).value
    with pytest.raises(ValueError):
        L.combine(1e-30, 1e-30).binary32()
    assert L.combine(0.0, 5.0).value == 0.0
    w = np.full(4, 2.0, np.float32)
    tiny = np.full(4, 1e-30, np.float32)
    assert abs(L.scaled_square_sum(tiny, w) / (8 * float(np.float32(1e-30)) ** 2) - 1) < 1e-6
