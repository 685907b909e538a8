"""`lowprec quantize` against the seed `numfmt.py`: `quantize_int` (2, 3, 4 and 8 bits,
symmetric and asymmetric, per tensor, per channel and per group of 32, with and without a clip
ratio: values, scales and integer codes; values bit for bit except that a negative input
whose integer is 0 gives +0, where the seed gives -0), `tensor_scaled` (every seed format) and
`mx_quantize` (every OCP element type). Values agree bit for bit; MX scales agree except on
all-zero blocks, where the seed uses 2^-emax_elem and lowprec 2^-127 (E8M0 code 0, as OCP
implementations do), which is asserted the other way."""
import sys

import numpy as np
import pytest

from conftest import SHARED, quantize_array

sys.path.insert(0, str(SHARED / "seeds"))
import numfmt  # noqa: E402

NAMES = {"FP32": "fp32", "TF32": "tf32", "FP16": "fp16", "BF16": "bf16", "FP8-E4M3": "fp8-e4m3",
         "FP8-E5M2": "fp8-e5m2", "FP6-E3M2": "fp6-e3m2", "FP6-E2M3": "fp6-e2m3", "FP4-E2M1": "fp4-e2m1"}
MX_ELEMENTS = [numfmt.FP8_E4M3, numfmt.FP8_E5M2, numfmt.FP6_E3M2, numfmt.FP6_E2M3, numfmt.FP4_E2M1]


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def data(seed, shape=(16, 128)):
    """Normal(0, 1) with a few outliers, a skewed (all positive) row, a constant row and an
    all-zero row (the seed's range-0 convention: scale 1)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    out = rng.choice(flat.size, 12, replace=False)
    flat[out] *= rng.uniform(5, 20, out.size)
    x[3] = np.abs(x[3]) + 0.5
    x[5] = 0.75
    x[9] = 0.0
    return x


GRANULARITIES = {"tensor": ("", {}), "channel": (":channel", {}), "group": (":group=32", {"group": 32})}


@pytest.mark.parametrize("nbits", [2, 3, 4, 8])
@pytest.mark.parametrize("symmetric", [True, False], ids=["sym", "asym"])
@pytest.mark.parametrize("granularity", list(GRANULARITIES))
@pytest.mark.parametrize("clip", [None, 0.9], ids=["noclip", "clip0.9"])
def test_quantize_int_matches_the_seed(nbits, symmetric, granularity, clip):
    x = data(nbits * 100 + symmetric * 10 + len(granularity) + (clip is not None))
    suffix, kw = GRANULARITIES[granularity]
    scheme = f"int{nbits}" + ("" if symmetric else ":asym") + suffix + ("" if clip is None else f":clip={clip}")
    deq, q, scale, _zero = numfmt.quantize_int(x, bits=nbits, symmetric=symmetric,
                                               granularity=granularity, clip=clip, **kw)
    r = quantize_array(x, scheme, scales=True, codes=True)
    v, s, c = r["values"], r["scales"], r["codes"]
    assert v.dtype == np.float64 and v.shape == x.shape
    diff = bits(v) != bits(deq)
    if symmetric:
        # The one difference: a negative x whose q is 0. The seed computes
        # scale * (rint(x/scale) - 0) = scale * -0.0 = -0.0; lowprec gives +0.0, the value of the
        # code 0 (integers have no -0), so `dequantize` of the codes gives the same bits.
        assert np.all((v[diff] == 0) & ~np.signbit(v[diff]) & np.signbit(deq[diff]) & (x[diff] < 0) & (q[diff] == 0)), \
            f"{scheme}: values differ from the seed beyond the sign of zero"
        assert diff.any(), f"{scheme}: no negative value quantized to 0?"
    else:
        assert not diff.any(), f"{scheme}: {np.count_nonzero(diff)} values differ from the seed"
    assert not np.signbit(v[v == 0]).any(), f"{scheme}: -0 is not a value of any integer code"
    # the scales come in the block grid's shape (one per row for channels, rows × groups)
    grid = {"tensor": (1,), "channel": (x.shape[0], 1), "group": (x.shape[0], x.shape[1] // 32)}[granularity]
    assert s.dtype == np.float64 and s.shape == grid, (s.dtype, s.shape)
    assert np.array_equal(bits(s.reshape(-1)), bits(scale.reshape(-1))), f"{scheme}: scales differ from the seed"
    assert c.dtype == np.uint8 and c.shape == x.shape
    assert int(c.max()) < 2**nbits
    k = c.astype(np.int64)
    if symmetric:  # two's complement in nbits bits
        k = np.where(k >= 2 ** (nbits - 1), k - 2**nbits, k)
    assert np.array_equal(k, q), f"{scheme}: codes differ from the seed"
    # the codes were really exercised: the largest magnitude reaches the end of the range
    if symmetric:
        assert np.abs(k).max() == 2 ** (nbits - 1) - 1
    else:
        assert k.min() == 0 and k.max() == 2**nbits - 1


@pytest.mark.parametrize("f", numfmt.FORMATS, ids=[f.name for f in numfmt.FORMATS])
def test_tensor_scaled_matches_the_seed(f):
    x = data(hash(f.name) % 2**32)
    x[5] = -1e-30  # values far below the scaled grid: they flush to -0 / round to the subnormals
    seed = numfmt.tensor_scaled(x, f)
    ours = quantize_array(x, f"tensor:{NAMES[f.name]}", scales=True)
    v = ours["values"]
    assert v.dtype == np.float64 and v.shape == x.shape
    assert np.array_equal(bits(v), bits(seed)), \
        f"{f.name}: {np.count_nonzero(bits(v) != bits(seed))} values differ from the seed"
    assert np.array_equal(bits(ours["scales"]), bits([np.abs(x).max() / f.max_value]))


def test_tensor_scaled_of_zeros_is_the_input():
    x = np.array([[0.0, -0.0, 0.0, -0.0]])
    for f in (numfmt.FP8_E4M3, numfmt.FP4_E2M1):
        seed = numfmt.tensor_scaled(x, f)
        v = quantize_array(x, f"tensor:{NAMES[f.name]}")["values"]
        assert np.array_equal(bits(v), bits(seed)) and np.array_equal(bits(v), bits(x))


@pytest.mark.parametrize("elem", MX_ELEMENTS, ids=[f.name for f in MX_ELEMENTS])
def test_mx_quantize_matches_the_seed(elem):
    rng = np.random.default_rng(hash(elem.name) % 2**32)
    x = rng.standard_normal((10, 64))
    # rows at scales across E8M0's range, including below it (the scale clamps at -127)
    x *= np.exp2([-140, -126, -60, -8, 0, 3, 20, 100, 0, 0])[:, None]
    x[8, ::7] *= 50  # outliers: the other elements of their blocks flush
    x[9, 32:] = 0.0  # one all-zero block
    x[9, 40] = -0.0
    seed_v, seed_x = numfmt.mx_quantize(x.reshape(-1), elem)
    r = quantize_array(x, f"mx:{NAMES[elem.name]}", scales=True, codes=True)
    v, s = r["values"], r["scales"]
    assert v.dtype == np.float64 and v.shape == x.shape
    assert s.dtype == np.uint8 and s.shape == (10, 2)
    assert np.array_equal(bits(v), bits(seed_v.reshape(x.shape))), \
        f"{elem.name}: {np.count_nonzero(bits(v) != bits(seed_v.reshape(x.shape)))} values differ"
    ours_x = np.ldexp(1.0, s.reshape(-1).astype(np.int64) - 127)
    zero = np.abs(x).reshape(-1, 32).max(axis=1) == 0
    assert zero.tolist() == [False] * 19 + [True]
    assert np.array_equal(ours_x[~zero], seed_x[~zero]), f"{elem.name}: scales differ"
    # the documented difference: an all-zero block
    assert s.reshape(-1)[zero].tolist() == [0]  # 2^-127
    assert seed_x[zero].tolist() == [2.0 ** -elem.emax]
    # the clamp at 2^-127 happened (row 0 lies below E8M0's range)
    assert s[0].tolist() == [0, 0]
