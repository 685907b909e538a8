"""Sharded safetensors checkpoints (written by the `safetensors` package, F32 / BF16 / F16 /
FP8 dtypes) through `lowprec report`: the same rows as the unsharded file, by folder or by
index; --include / --exclude; --csv; and bad checkpoints give one line and exit 2."""

import csv
import io
import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from safetensors._safetensors_rust import TensorSpec, serialize_file

from conftest import lowprec_bin

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
          "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2}


def run(*args, ok=True):
    r = subprocess.run([lowprec_bin(), *map(str, args)], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def tensors():
    rng = np.random.default_rng(4)
    out = {}
    for i, (dt, np_dt) in enumerate(DTYPES.items()):
        x = (rng.standard_normal((8, 64)) * 0.5).astype(np_dt)
        out[f"layer.{i}.weight"] = (dt, x)
        out[f"layer.{i}.bias"] = (dt, (rng.standard_normal(64) * 0.1).astype(np_dt))
    out["position_ids"] = ("I64", np.arange(16, dtype=np.int64))
    return out


TORCH_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
               "F8_E5M2": "float8_e5m2", "I64": "int64"}


def save(path, items, metadata=None):
    """The safetensors package's own writer (its raw TensorSpec API takes every dtype)."""
    keep = {k: np.ascontiguousarray(x) for k, (_, x) in items.items()}
    specs = {k: TensorSpec(dtype=TORCH_NAMES[dt], shape=list(keep[k].shape), data_ptr=keep[k].ctypes.data,
                           data_len=keep[k].nbytes) for k, (dt, _) in items.items()}
    serialize_file(specs, str(path), metadata)


@pytest.fixture
def ckpt(tmp_path):
    ts = tensors()
    save(tmp_path / "model.safetensors", ts, {"format": "pt"})
    shard_dir = tmp_path / "sharded"
    shard_dir.mkdir()
    names = list(ts)
    parts = [names[:4], names[4:8], names[8:]]
    weight_map = {}
    for i, part in enumerate(parts):
        f = f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
        save(shard_dir / f, {n: ts[n] for n in part})
        weight_map.update({n: f for n in part})
    (shard_dir / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return tmp_path, ts


def rows(*args):
    return json.loads(run("report", *args, "--json", "-s", "mxfp4", "-s", "fp8-e4m3", "-s", "gguf:Q8_0").stdout)


def test_sharded_reports_equal_the_single_file(ckpt):
    d, ts = ckpt
    one = rows(d / "model.safetensors")
    by_folder = rows(d / "sharded")
    by_index = rows(d / "sharded" / "model.safetensors.index.json")
    key = lambda r: (r["tensor"], r["scheme"])  # noqa: E731
    assert sorted(one["tensors"], key=key) == sorted(by_folder["tensors"], key=key)
    assert by_folder == by_index
    assert one["totals"] == by_folder["totals"]
    # every float tensor, FP8 ones decoded exactly: the fp8-e4m3 cast of an F8_E4M3 tensor
    # (per-tensor scaled) is close, and the F8 tensors are reported at all
    names = {r["tensor"] for r in one["tensors"]}
    assert names == {n for n, (dt, _) in ts.items() if dt != "I64"}


def test_fp8_values_are_decoded_exactly(ckpt, tmp_path):
    d, ts = ckpt
    # a file against itself holds no error; against its F32 widening neither
    ref = {n: ("F32", x.astype(np.float32)) for n, (dt, x) in ts.items() if dt != "I64"}
    save(tmp_path / "ref.safetensors", ref)
    r = json.loads(run("report", "--reference", tmp_path / "ref.safetensors", d / "sharded", "--json").stdout)
    for row in r["tensors"]:
        assert "error" not in row, row
        assert row["max_abs_error"] == 0.0, row


def test_include_exclude_and_csv(ckpt):
    d, ts = ckpt
    r = run("report", d / "sharded", "--include", "*.weight", "--exclude", "layer.3.*", "-s", "int8", "--csv")
    got = list(csv.DictReader(io.StringIO(r.stdout)))
    tensors_ = [g["tensor"] for g in got if g["tensor"] != "(all)"]
    assert tensors_ == [f"layer.{i}.weight" for i in (0, 1, 2, 4)]
    assert got[-1]["tensor"] == "(all)" and int(got[-1]["elements"]) == 4 * 8 * 64
    assert float(got[0]["sqnr_db"]) > 30


def test_bad_checkpoints_are_one_line_and_exit_2(ckpt):
    d, ts = ckpt
    s = d / "sharded"
    index = s / "model.safetensors.index.json"
    good = json.loads(index.read_text())

    def expect(needle, target=s):
        r = run("report", target, ok=False)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], r.stderr

    bad = dict(good, weight_map=dict(good["weight_map"], **{"ghost.weight": "model-00009-of-00009.safetensors"}))
    index.write_text(json.dumps(bad))
    expect("does not exist")
    bad = dict(good, weight_map=dict(good["weight_map"], **{"ghost.weight": "model-00001-of-00003.safetensors"}))
    index.write_text(json.dumps(bad))
    expect("tensor ghost.weight is not in its shard")
    wm = dict(good["weight_map"])
    moved = next(iter(wm))
    wm[moved] = "model-00002-of-00003.safetensors"
    index.write_text(json.dumps(dict(good, weight_map=wm)))
    expect("does not put there")
    wm = dict(good["weight_map"])
    wm[moved] = "../model.safetensors"
    index.write_text(json.dumps(dict(good, weight_map=wm)))
    expect("not a file name in the index's folder")
    index.write_text("{not json")
    expect("not JSON")
    index.write_text(json.dumps(good))
    shard = s / "model-00002-of-00003.safetensors"
    b = shard.read_bytes()
    shard.write_bytes(b[: len(b) - 7])
    expect("model-00002-of-00003.safetensors")


def peak_rss_kib(args):
    """Run the CLI in a fresh Python process (whose only child it is) and return its peak
    resident memory in KiB."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
            "assert r.returncode == 0, r.stderr; print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code, lowprec_bin(), *map(str, args)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


def test_memory_is_bounded_by_the_largest_tensor_not_the_checkpoint(tmp_path):
    # 48 tensors of 16 MiB (768 MiB) in 8 shards; the report must stay far below that
    rng = np.random.default_rng(9)
    d = tmp_path / "big"
    d.mkdir()
    weight_map = {}
    for s in range(8):
        f = f"model-{s + 1:05d}-of-00008.safetensors"
        items = {f"t{s}.{i}": ("F32", rng.standard_normal((1024, 4096), dtype=np.float32)) for i in range(6)}
        save(d / f, items)
        weight_map.update({k: f for k in items})
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    total = 48 * 16 * 1024
    peak = peak_rss_kib(["report", d, "-s", "fp8-e4m3", "-s", "int8", "--summary"])
    tensor = 16 * 1024
    # the documented bound (docs/files.md): 64 MiB + 12 x the largest tensor's binary32 bytes
    assert peak < 64 * 1024 + 12 * tensor, f"peak {peak} KiB"
    assert peak < total / 3, f"peak {peak} KiB of a {total} KiB checkpoint"


def test_quantize_a_sharded_checkpoint_shard_by_shard_and_resume(ckpt, tmp_path):
    d, ts = ckpt
    q1, qs = tmp_path / "q1.safetensors", tmp_path / "qs"
    run("quantize", d / "model.safetensors", "-s", "mxfp4", "-o", q1)
    r = run("quantize", d / "sharded", "-s", "mxfp4", "-o", qs)
    assert "3 shards quantized" in r.stderr
    names = sorted(p.name for p in qs.iterdir())
    assert names == sorted(p.name for p in (d / "sharded").iterdir())
    index = json.loads((qs / "model.safetensors.index.json").read_text())
    assert index["metadata"]["lowprec.scheme"] == "mx:fp4-e2m1"
    # dequantized shard by shard = the single file dequantized, tensor for tensor
    b1, bs = tmp_path / "b1.safetensors", tmp_path / "bs"
    run("dequantize", q1, "-o", b1)
    run("dequantize", qs, "-o", bs)
    one = json.loads(run("report", "--reference", b1, bs, "--json").stdout)
    assert one["tensors"] and all(row["max_abs_error"] == 0.0 for row in one["tensors"])
    # an interrupted run: one shard and the index missing; the rerun writes only that shard
    (qs / "model-00002-of-00003.safetensors").unlink()
    (qs / "model.safetensors.index.json").unlink()
    r = run("quantize", d / "sharded" / "model.safetensors.index.json", "-s", "mxfp4", "-o", qs)
    assert "1 shards quantized" in r.stderr and "2 kept from an earlier run" in r.stderr
    assert json.loads((qs / "model.safetensors.index.json").read_text()) == index
    # a different scheme rewrites every shard
    r = run("quantize", d / "sharded", "-s", "nvfp4", "-o", qs)
    assert "3 shards quantized" in r.stderr
    assert not list(qs.glob("*.tmp")) and not list(qs.glob(".lowprec-*"))


def test_ctrl_c_leaves_no_partial_output(tmp_path):
    import signal
    import time
    x = np.random.default_rng(1).standard_normal((8192, 8192), dtype=np.float32)  # 256 MiB
    np.save(tmp_path / "x.npy", x)
    del x
    out = tmp_path / "out"
    out.mkdir()
    p = subprocess.Popen([lowprec_bin(), "round", "bf16", tmp_path / "x.npy", "-o", out / "y.npy"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None and not list(out.glob(".lowprec-*.tmp")):
        time.sleep(0.002)
    assert p.poll() is None, "finished before its output was being written: make the input larger"
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    assert p.returncode == 130, p.stderr.read()
    assert list(out.iterdir()) == [], list(out.iterdir())
