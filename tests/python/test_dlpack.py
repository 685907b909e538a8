"""Arrays through the DLPack protocol: any object with ``__dlpack__`` (torch CPU tensors,
JAX, …) goes in without a copy, through ``np.from_dlpack``; ``as_torch=True`` gives torch
tensors out. Checked with numpy's own DLPack export always (an object that is nothing but
the protocol) and with torch when it is installed."""

import importlib.util

import numpy as np
import pytest

import lowprec


class OnlyDLPack:
    """An array that speaks DLPack and nothing else (no __array__, no buffer)."""

    def __init__(self, a, device=(1, 0)):
        self._a, self._device = a, device

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._device


def x():
    return (np.random.default_rng(3).standard_normal((4, 64)) * 3).astype(np.float32)


def test_dlpack_inputs_give_the_numpy_results():
    a = x()
    d = OnlyDLPack(a)
    np.testing.assert_array_equal(lowprec.round(d, "fp8-e4m3"), lowprec.round(a, "fp8-e4m3"))
    np.testing.assert_array_equal(lowprec.encode(d, "bf16", rounding="rtz"), lowprec.encode(a, "bf16", rounding="rtz"))
    codes = lowprec.encode(a, "fp8-e5m2")
    np.testing.assert_array_equal(lowprec.decode(OnlyDLPack(codes), "fp8-e5m2"), lowprec.decode(codes, "fp8-e5m2"))
    q = lowprec.ggml_quantize(d, "Q4_0")
    np.testing.assert_array_equal(q, lowprec.ggml_quantize(a, "Q4_0"))
    np.testing.assert_array_equal(lowprec.ggml_dequantize(OnlyDLPack(q), "Q4_0"), lowprec.ggml_dequantize(q, "Q4_0"))
    assert lowprec.report({"w": d}, schemes="mxfp4") == lowprec.report({"w": a}, schemes="mxfp4")


class OnDevice(OnlyDLPack):
    """An accelerator's array: its exporter refuses a host copy, as CUDA tensors do."""

    def __dlpack__(self, **kw):
        raise BufferError("the array is on device cuda:0")


def test_a_device_array_is_refused_with_what_to_do():
    with pytest.raises(TypeError, match="move it to the CPU"):
        lowprec.round(OnDevice(x(), device=(2, 0)), "fp8-e4m3")


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_as_torch_without_torch_says_how_to_get_it():
    with pytest.raises(ImportError, match="pip install torch"):
        lowprec.round(x(), "bf16", as_torch=True)


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    a = x()
    t = torch.from_numpy(a)
    r = lowprec.round(t, "fp8-e4m3", as_torch=True)
    assert isinstance(r, torch.Tensor)
    np.testing.assert_array_equal(r.numpy(), lowprec.round(a, "fp8-e4m3"))
    # bfloat16 tensors (numpy has no bfloat16): read through their bits, exactly
    b = t.to(torch.bfloat16)
    want = lowprec.round(b.float().numpy(), "fp8-e4m3")
    np.testing.assert_array_equal(lowprec.round(b, "fp8-e4m3"), want)
    c = lowprec.encode(t, "fp8-e4m3", as_torch=True)
    assert c.dtype == torch.uint8 and tuple(c.shape) == tuple(a.shape)


def test_torch_conversions_agree_with_lowprec():
    """torch's own casts as one more oracle where it is installed: bf16 and fp16 (RNE) on
    every value, float8_e4m3fn / float8_e5m2 (RNE) within range."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    a = np.concatenate([rng.standard_normal(1 << 16) * s for s in (1e-6, 1e-3, 1, 100)]).astype(np.float32)
    t = torch.from_numpy(a)
    for fmt, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        want = t.to(dt).view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(lowprec.encode(a, fmt), want, err_msg=fmt)
    for fmt, dt, top in (("fp8-e4m3", torch.float8_e4m3fn, 448.0), ("fp8-e5m2", torch.float8_e5m2, 57344.0)):
        inside = np.clip(a, -top, top)
        want = torch.from_numpy(inside).to(dt).view(torch.uint8).numpy()
        np.testing.assert_array_equal(lowprec.encode(inside, fmt), want, err_msg=fmt)
