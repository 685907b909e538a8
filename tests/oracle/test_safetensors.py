"""The reference `safetensors` package reads what lowprec writes: a model saved with
`safetensors.numpy.save_file` (F32, F16, BF16 and an F32 bias), `lowprec quantize --scheme
mxfp4` (packed uint8 codes and uint8 E8M0 scales per quantized tensor, the bias copied, the
scheme in the metadata) and `lowprec dequantize` (every tensor back in its dtype and shape,
values within MXFP4's error of the originals and equal to `lowprec quantize` of the same array
as .npy). The packed layout is checked independently with ml_dtypes' float4_e2m1fn and
float8_e8m0fnu."""
import os

import ml_dtypes
import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from conftest import quantize_array, run_lowprec


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("st")
    rng = np.random.default_rng(2024)
    model = {
        "w": (rng.standard_normal((16, 64)) * 0.05).astype(np.float32),
        "h": rng.standard_normal((2, 4, 64)).astype(np.float16),
        "b": (rng.standard_normal((8, 64)) * 0.02).astype(ml_dtypes.bfloat16),
        "bias": rng.standard_normal(64).astype(np.float32),
    }
    model["w"][3, 7] = 1.5  # an outlier: the rest of its block flushes
    paths = {k: os.path.join(d, f"{k}.safetensors") for k in ("m", "q", "d")}
    save_file(model, paths["m"], metadata={"format": "np"})
    run_lowprec("quantize", paths["m"], "--scheme", "mxfp4", "-o", paths["q"])
    run_lowprec("dequantize", paths["q"], "-o", paths["d"])
    return model, paths


QUANTIZED = ("w", "h", "b")


def test_quantized_file(files):
    model, paths = files
    q = load_file(paths["q"])
    with safe_open(paths["q"], framework="numpy") as f:
        meta = f.metadata()
        assert sorted(f.keys()) == sorted(q)
    assert meta["lowprec.scheme"] == "mx:fp4-e2m1"
    assert meta["format"] == "np"
    assert sorted(q) == sorted(["bias", *QUANTIZED, *(f"{n}.scales" for n in QUANTIZED)])
    for n in QUANTIZED:
        shape = model[n].shape
        assert q[n].dtype == np.uint8 and q[n].shape == shape[:-1] + (shape[-1] // 2,), n
        assert q[f"{n}.scales"].dtype == np.uint8 and q[f"{n}.scales"].shape == shape[:-1] + (shape[-1] // 32,), n
    assert q["bias"].dtype == np.float32 and np.array_equal(q["bias"].view(np.uint32), model["bias"].view(np.uint32))


def unpack4(p):
    """Two codes a byte, element 2i in the low nibble."""
    return np.stack([p & 0xF, p >> 4], axis=-1).reshape(p.shape[:-1] + (2 * p.shape[-1],))


def test_packed_codes_decode_with_ml_dtypes(files):
    model, paths = files
    q, d = load_file(paths["q"]), load_file(paths["d"])
    for n in QUANTIZED:
        codes = unpack4(q[n])
        elems = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
        scales = q[f"{n}.scales"].view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
        values = elems * np.repeat(scales, 32, axis=-1)
        assert np.array_equal(values.astype(model[n].dtype).astype(np.float64), d[n].astype(np.float64)), n
        # and those are the codes of `quantize --codes`
        r = quantize_array(model[n], "mxfp4", scales=True, codes=True, packed=True)
        assert np.array_equal(r["codes"], codes), n
        assert np.array_equal(r["scales"], q[f"{n}.scales"]), n
        assert np.array_equal(r["packed"], q[n]), n


def test_dequantized_file(files):
    model, paths = files
    d = load_file(paths["d"])
    with safe_open(paths["d"], framework="numpy") as f:
        assert f.metadata().get("format") == "np"
        assert "lowprec.scheme" not in f.metadata()
    assert sorted(d) == sorted(model)
    for n, x in model.items():
        assert d[n].dtype == x.dtype and d[n].shape == x.shape, n
    assert np.array_equal(d["bias"].view(np.uint32), model["bias"].view(np.uint32))
    for n in QUANTIZED:
        x, y = model[n].astype(np.float64), d[n].astype(np.float64)
        rel = np.linalg.norm(y - x) / np.linalg.norm(x)
        assert 0 < rel < 0.2, (n, rel)
        # exactly what `lowprec quantize` gives for the same array as .npy
        v = quantize_array(model[n], "mxfp4")["values"]
        if model[n].dtype == ml_dtypes.bfloat16:
            v = v.view(ml_dtypes.bfloat16)
        assert v.dtype == model[n].dtype and v.shape == model[n].shape, n
        u = np.uint16 if model[n].itemsize == 2 else np.uint32
        assert np.array_equal(v.view(u), d[n].view(u)), n
    # the outlier's block: everything else in it flushed to zero
    assert d["w"][3, 7] == 1.5 and np.count_nonzero(d["w"][3, :32]) < 8
