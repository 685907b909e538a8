"""The native API (lowprec's own terms) and bad arguments: ValueError with a clear message
for bad values, TypeError for wrong types, never a crash."""
import numpy as np
import pytest

import lowprec


def test_native_round_encode_decode():
    x = np.array([0.1, 1.0, 300.0, 1e-4, 1000.0], np.float32)
    assert lowprec.encode(x, "float8_e4m3fn", overflow="sat").tolist() == [0x1d, 0x38, 0x79, 0, 0x7e]
    assert lowprec.encode(x, "e4m3b7:fn").dtype == np.uint8
    assert lowprec.encode(x, "bf16").dtype == np.uint16
    assert lowprec.encode(x, "tf32").dtype == np.uint32
    assert lowprec.round(1.01, "fp8-e4m3", "rup") == 1.125
    assert lowprec.round(1.01, "fp8-e4m3", "rdn") == 1.0
    assert lowprec.round(1.01, "fp8-e4m3", "rto") == 1.125  # 1.125 has the odd code
    assert np.isnan(lowprec.round(1000.0, "fp8-e4m3"))
    assert lowprec.round(1000.0, "fp8-e4m3", overflow="sat") == 448.0
    assert lowprec.round(np.float64(3.0), "e8m0") == 4.0
    y = lowprec.round(np.arange(12.0).reshape(3, 4), "fp4-e2m1")
    assert y.shape == (3, 4) and y.dtype == np.float64
    assert lowprec.decode(np.array([0x3c, 0x7b, 0xfc], np.uint8), "fp8-e5m2").tolist() == [1.0, 57344.0, -np.inf]
    assert lowprec.decode([0x7e], lowprec.FP8_E4M3).tolist() == [448.0]


def test_native_quantize_accumulate_gemm():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64))
    q = lowprec.quantize(x, "mxfp4")
    assert q["values"].shape == x.shape and q["scale_codes"].shape == (8, 2)
    assert q["codes"].max() < 16 and q["code_bits"] == 4
    n = lowprec.quantize(x, "nvfp4")
    assert n["scale_codes"].shape == (8, 4) and n["tensor_scale"] > 0
    i = lowprec.quantize(x, "int4:group=32")
    assert i["scales"].shape == (8, 2)  # the block grid: 8 rows × 2 groups of 32
    assert lowprec.rel_error(i["values"], x) < 0.2
    s = lowprec.accumulate_native(np.ones((2, 300)), "bf16")
    assert s.tolist() == [256.0, 256.0]
    assert lowprec.accumulate_native(np.ones(300), "bf16", chunk=128).tolist() == 300.0
    r = lowprec.gemm(rng.standard_normal((16, 32)), rng.standard_normal((32, 8)), acc="bf16",
                     input="fp8-e4m3")
    assert r["c"].shape == (16, 8) and 0 < r["mean_rel"] < 0.1


@pytest.mark.parametrize("call,msg", [
    (lambda: lowprec.round([1.0], "fp7"), "unknown format"),
    (lambda: lowprec.round([1.0], "fp8-e4m3", "nearest"), "unknown rounding mode"),
    (lambda: lowprec.round([1.0], "fp8-e4m3", overflow="wrap"), "unknown overflow policy"),
    (lambda: lowprec.FP8_E4M3.round([1.0], rounding="up-ish"), "unknown rounding mode"),
    (lambda: lowprec.FP4_E2M1.encode([1.0, np.nan]), "no NaN code"),
    (lambda: lowprec.decode(np.array([0x10], np.uint8), "fp4-e2m1"), "does not fit"),
    (lambda: lowprec.decode(np.array([-1]), "fp8-e4m3"), "negative"),
    (lambda: lowprec.FloatFormat("bad", 0, 3, 7), "invalid format"),
    (lambda: lowprec.FloatFormat("bad", 4, 3, 7, "weird"), "special must be"),
    (lambda: lowprec.mx_quantize(np.ones(33), lowprec.FP4_E2M1), "multiple of the block"),
    (lambda: lowprec.mx_quantize(np.ones(32), "fp16"), "8 bits"),
    (lambda: lowprec.nvfp4_quantize(np.ones(20)), "multiple of NVFP4"),
    (lambda: lowprec.quantize_int(np.ones(10), 8, granularity="channel"), "2-D"),
    (lambda: lowprec.quantize_int(np.ones((2, 10)), 8, granularity="group", group=3), "does not divide"),
    (lambda: lowprec.quantize_int(np.ones(8), 1), "2 to 16 bits"),
    (lambda: lowprec.quantize_int(np.ones(8), 8, granularity="row"), "granularity must be"),
    (lambda: lowprec.quantize_int(np.ones(8), 8, clip=1.5), "clip ratio"),
    (lambda: lowprec.quantize_int(np.array([1.0, np.nan]), 8), "NaN"),
    (lambda: lowprec.accumulate(np.ones((2, 4)), lowprec.BF16, method="magic"), "unknown accumulation method"),
    (lambda: lowprec.accumulate(np.ones((2, 2, 2)), lowprec.BF16), "1-D or 2-D"),
    (lambda: lowprec.quantize(np.ones(8), "mxfp5"), "scheme"),
    (lambda: lowprec.twos_complement_encode(128, 8), "outside the 8-bit"),
    (lambda: lowprec.bits_str(5, 8, (4, 3)), "groups"),
    (lambda: lowprec.FP32.all_values(), "at most 16 bits"),
    (lambda: lowprec.tensor_scaled(np.array([1.0, np.inf]), lowprec.FP8_E4M3), "finite"),
    (lambda: lowprec.gemm(np.ones((2, 3)), np.ones((4, 2))), "inner dimensions"),
    (lambda: lowprec.softmax_safe([1.0], dtype=np.int8), "dtype must be"),
    (lambda: lowprec.rel_error(np.ones(3), np.ones(4)), "shape"),
    (lambda: lowprec.block_exponent([1.0, np.inf]), "finite"),
    (lambda: lowprec.Precision("single", "double"), "mixed"),
    (lambda: lowprec.precision_named("half"), "precision must be"),
])
def test_value_errors(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


@pytest.mark.parametrize("call", [
    lambda: lowprec.round(["a", "b"], "fp8"),
    lambda: lowprec.round([1.0], 8),
    lambda: lowprec.decode([1.5], "fp8"),
    lambda: lowprec.FP8_E4M3.round([1.0], rounding=3),
    lambda: lowprec._lowprec.round([1.0], "fp8"),  # the native layer wants an ndarray
])
def test_type_errors(call):
    with pytest.raises(TypeError):
        call()


def test_noncontiguous_and_ml_dtypes_inputs():
    x = np.arange(64.0).reshape(8, 8)[:, ::2]
    assert np.array_equal(lowprec.round(x, "bf16"), x)
    ml = pytest.importorskip("ml_dtypes")
    e = np.array([1.0, 2.5, 448.0], dtype=ml.float8_e4m3fn)
    assert lowprec.encode(e, "fp8-e4m3").tolist() == e.view(np.uint8).tolist()
