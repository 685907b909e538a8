"""ggml quantizers against the `gguf` package (llama.cpp's numpy reference), bit for bit.

Every type that `gguf.quants.quantize` accepts (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0,
MXFP4, BF16, F16, F32) on random tensors of several scales and on adversarial blocks: all
zero, one nonzero element, exact ties of the code grid, both signs of the largest magnitude,
huge values (up to binary32's max, where `max - min` overflows), tiny values (f16-subnormal
scales, binary32-subnormal inputs whose reciprocal scale overflows), and ±Inf / NaN.
"""

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as T  # noqa: E402

from lowprec import _lowprec  # noqa: E402

QUANTIZABLE = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4", "BF16", "F16", "F32"]


def block_size(name):
    return gguf.GGML_QUANT_SIZES[T[name]][0]


def reference(x, name):
    return np.asarray(gguf.quants.quantize(x, T[name])).view(np.uint8).reshape(x.shape[0], -1)


def ours(x, name):
    return _lowprec.ggml_quantize(np.ascontiguousarray(x, dtype=np.float32), name)


def adversarial(bs, rng):
    with np.errstate(all="ignore"):
        return _adversarial(bs, rng)


def _adversarial(bs, rng):
    """Rows of one block each."""
    rows = []
    z = np.zeros(bs, np.float32)
    rows.append(z)
    rows.append(-z)
    one = z.copy()
    one[bs // 3] = 1.0
    rows.append(one)
    rows.append(-one)
    # ties of the code grid: integers and half-integers of a power-of-two step
    for step in (1.0, 0.5, 0.25, 2.0 ** -10):
        r = (np.arange(bs) % 33 - 16).astype(np.float32) * np.float32(step) / 2
        rows.append(r)
        rows.append(-r)
        rows.append(r + np.float32(step) / 4)
    # the largest magnitude negative / positive, equal magnitudes of both signs
    r = rng.standard_normal(bs).astype(np.float32)
    r[5] = -10
    rows.append(r.copy())
    r[7] = 10
    rows.append(r.copy())
    # huge and tiny
    for scale in (3.0e38, 1.0e38, 6.0e4, 7.0e4, 1e-5, 6e-8, 1e-30, 1e-39, 1e-44):
        rows.append((rng.standard_normal(bs) * scale).astype(np.float32))
        r = np.full(bs, scale, np.float32)
        r[::2] = -scale
        rows.append(r)
    big = np.full(bs, 3.4e38, np.float32)
    big[1::2] = -3.4e38
    rows.append(big)
    # every E2M1 magnitude (MXFP4) and the midpoints between them at one scale
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)
    mids = (grid[1:] + grid[:-1]) / 2
    vals = np.concatenate([grid, mids, -grid, -mids])
    rows.append(np.resize(vals, bs).astype(np.float32))
    rows.append(np.resize(vals * 3, bs).astype(np.float32))
    # powers of two just below and at a binade (MXFP4's floor(log2 amax))
    for k in (-20, -1, 0, 3, 12, 100):
        a = np.float32(2.0 ** k)
        r = rng.uniform(-1, 1, bs).astype(np.float32) * a
        r[0] = np.nextafter(a, np.float32(0))
        rows.append(r)
        r = r.copy()
        r[0] = a
        rows.append(r)
    return np.stack(rows).astype(np.float32)


@pytest.mark.parametrize("name", QUANTIZABLE)
def test_random_tensors(name):
    rng = np.random.default_rng(hash(name) % 2**32)
    bs = block_size(name)
    for scale in (1.0, 1e-3, 1e3, 1e-6):
        x = (rng.standard_normal((37, 4 * max(bs, 32))) * scale).astype(np.float32)
        x[3] += 0.5  # an offset row (Q4_1 / Q5_1 minima)
        np.testing.assert_array_equal(ours(x, name), reference(x, name))


@pytest.mark.parametrize("name", QUANTIZABLE)
def test_adversarial_blocks(name):
    rng = np.random.default_rng(7)
    x = adversarial(max(block_size(name), 1) * (1 if block_size(name) > 1 else 64), rng)
    with np.errstate(all="ignore"):
        want = reference(x, name)
    np.testing.assert_array_equal(ours(x, name), want)


@pytest.mark.parametrize("name", QUANTIZABLE)
def test_inf_and_nan(name):
    bs = max(block_size(name), 32)
    rng = np.random.default_rng(3)
    rows = []
    for v in (np.inf, -np.inf, np.nan):
        for at in (0, bs // 2, bs - 1):
            r = rng.standard_normal(bs).astype(np.float32)
            r[at] = v
            rows.append(r)
    x = np.stack(rows)
    with np.errstate(all="ignore"):
        want = reference(x, name)
    got = ours(x, name)
    if name in ("F16", "F32", "BF16"):
        # NaN payloads may differ between conversions; compare NaN-ness there
        w16 = want.view(np.uint16 if name != "F32" else np.uint32)
        g16 = got.view(w16.dtype)
        np.testing.assert_array_equal(g16, w16)
    else:
        np.testing.assert_array_equal(got, want)


def test_large_input_is_the_same_in_parallel():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((300, 4096)).astype(np.float32)
    for name in ("Q4_0", "Q8_0", "MXFP4"):
        np.testing.assert_array_equal(ours(x, name), reference(x, name))


def test_quantize_then_dequantize_matches_the_reference_round_trip():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 512)).astype(np.float32)
    for name in QUANTIZABLE:
        q = ours(x, name)
        want = gguf.quants.dequantize(reference(x, name), T[name]).reshape(x.shape)
        got = _lowprec.ggml_dequantize(q, name)
        np.testing.assert_array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32))


def test_types_without_a_quantizer_are_refused_by_name():
    with pytest.raises(ValueError, match="dequantize-only"):
        _lowprec.ggml_quantize(np.zeros((1, 256), np.float32), "Q4_K")
    with pytest.raises(ValueError, match="unknown ggml type"):
        _lowprec.ggml_quantize(np.zeros((1, 32), np.float32), "Q9_9")
    with pytest.raises(ValueError, match="whole number of blocks"):
        _lowprec.ggml_quantize(np.zeros((1, 31), np.float32), "Q8_0")
