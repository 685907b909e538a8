"""Schemes as data from Python: the presets, the quantized checkpoint layout written and read
back (bit for bit the values `quantize` gives, checked with the `safetensors` package), and
the TransformerEngine NVFP4 recipe's tensor scale."""
import numpy as np
import pytest

import lowprec


def test_every_preset_is_listed_and_parses():
    rows = lowprec.schemes()
    names = [r[0] for r in rows]
    assert {"mxfp8:scale=rceil", "nvfp4:convention=te", "nvfp4:4over6", "if4",
            "fp8:tile=128x128", "rht16:bf16+nvfp4:convention=te"} <= set(names)
    x = np.random.default_rng(2).standard_normal((128, 128)).astype(np.float32)
    for name, canonical, meaning, source in rows:
        q = lowprec.quantize(x, canonical)
        assert q["values"].shape == x.shape and meaning
        # the canonical name quantizes as the preset's name does
        assert np.array_equal(q["values"], lowprec.quantize(x, name)["values"], equal_nan=True)


@pytest.mark.parametrize("scheme", ["mxfp4", "nvfp4:convention=te:tile=16x16", "if4",
                                    "fp8:group=128", "int4:asym:group=64",
                                    "rht16:bf16+nvfp4:convention=te"])
def test_quantized_checkpoint_round_trip(tmp_path, scheme):
    st = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((64, 128)) * 0.05).astype(np.float32)
    src, q, back = tmp_path / "w.safetensors", tmp_path / "q.safetensors", tmp_path / "b.safetensors"
    st.save_file({"w": w, "bias": np.ones(3, np.float32)}, str(src))
    rows, copied = lowprec.quantize_file(src, scheme, q)
    assert copied == 1 and [r["tensor"] for r in rows] == ["w"]
    stored = st.load_file(str(q))
    assert stored["w"].dtype == np.uint8 and "w.scales" in stored
    name, n = lowprec.dequantize_file(q, back)
    assert n == 1 and lowprec.quantize(w, name)["values"].shape == w.shape
    got = st.load_file(str(back))
    assert np.array_equal(got["w"], lowprec.quantize(w, scheme)["values"])
    assert np.array_equal(got["bias"], np.ones(3, np.float32))
    # the reported SQNR is the SQNR of what comes back
    e = got["w"].astype(np.float64) - w
    sqnr = 10 * np.log10(np.sum(w.astype(np.float64) ** 2) / np.sum(e ** 2))
    assert abs(rows[0]["sqnr_db"] - sqnr) < 1e-9


def test_te_nvfp4_tensor_scale_is_one_over_s_enc():
    x = np.random.default_rng(3).standard_normal((16, 64)).astype(np.float32)
    q = lowprec.quantize(x, "nvfp4:convention=te")
    s_enc = min(np.float32(2688.0) / np.abs(x).max(), np.finfo(np.float32).max)
    assert q["tensor_scale"] == float(np.float32(1.0) / np.float32(s_enc))
    with pytest.raises(ValueError, match="sign bit"):
        lowprec.quantize(x, "if4:scale=ue4m3")
