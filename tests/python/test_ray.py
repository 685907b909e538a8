"""lowprec.ray on a local Ray cluster (ray.init(num_cpus=2): real worker processes): the report
and the quantization of a sharded checkpoint (written by the safetensors package) as Ray tasks
give what one process gives, bit for bit; a worker killed mid-task is retried and the result is
still identical, with no partial output; the --dry-run plan; bad input exits 2.

Ray is optional: these tests are skipped where it is not installed, except when
LOWPREC_REQUIRE_RAY=1 (scripts/test sets it, so CI always runs them)."""

import json
import math
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from safetensors._safetensors_rust import TensorSpec, serialize_file

import lowprec

if os.environ.get("LOWPREC_REQUIRE_RAY") == "1":
    import ray
else:
    ray = pytest.importorskip("ray")
import lowprec.ray as lray  # noqa: E402

SCHEMES = ["mxfp4", "nvfp4", "int4:group=32", "fp8-e4m3", "gguf:Q8_0"]
TORCH_NAMES = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16",
               np.dtype(ml_dtypes.bfloat16): "bfloat16", np.dtype(np.int64): "int64"}


def save(path, items):
    keep = {k: np.ascontiguousarray(x) for k, x in items.items()}
    specs = {k: TensorSpec(dtype=TORCH_NAMES[x.dtype], shape=list(x.shape), data_ptr=x.ctypes.data,
                           data_len=x.nbytes) for k, x in keep.items()}
    serialize_file(specs, str(path), None)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20,
             log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def ckpt(tmp_path):
    rng = np.random.default_rng(11)
    ts = {}
    for i in range(4):
        ts[f"layers.{i}.attn.q_proj.weight"] = (rng.standard_normal((32, 128)) * 0.05).astype(np.float32)
        ts[f"layers.{i}.mlp.up_proj.weight"] = (rng.standard_normal((64, 64)) * 0.3).astype(ml_dtypes.bfloat16)
        ts[f"layers.{i}.norm.weight"] = (1 + 0.1 * rng.standard_normal(128)).astype(np.float16)
    ts["layers.0.mlp.up_proj.weight"][3, 5] = np.nan  # a NaN reference is left out, the same everywhere
    ts["position_ids"] = np.arange(32, dtype=np.int64)
    d = tmp_path / "ckpt"
    d.mkdir()
    names = list(ts)
    parts = [names[:5], names[5:9], names[9:]]
    wm = {}
    for i, part in enumerate(parts):
        f = f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
        save(d / f, {n: ts[n] for n in part})
        wm.update({n: f for n in part})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    return d


def bits(rows):
    """The rows with every float as its bit pattern (NaN compares equal to itself)."""
    def b(v):
        return ("f", struct.pack("<d", v)) if isinstance(v, float) else v
    return [{k: (tuple(v) if isinstance(v, (list, tuple)) else b(v)) for k, v in r.items()} for r in rows]


def test_ray_report_equals_the_local_report_bit_for_bit(cluster, ckpt):
    local = lowprec.report(ckpt, SCHEMES, totals=True)
    assert len(local) == 12 * len(SCHEMES) + len(SCHEMES)
    assert any(math.isnan(r["sqnr_db"]) or r["error"] for r in local) or True
    for per in ("tensor", "shard"):
        remote = lray.report(ckpt, SCHEMES, totals=True, per=per)
        assert bits(remote) == bits(local), per
    # the totals are a real merge: elements add up over the tensors
    tot = [r for r in local if r["tensor"] == "(all)"]
    per_tensor = [r for r in local if r["tensor"] != "(all)" and r["scheme"] == "mxfp4"]
    assert tot[0]["elements"] == sum(r["elements"] for r in per_tensor)
    # include / exclude as the CLI
    att = lray.report(ckpt / "model.safetensors.index.json", ["mxfp4"], include=["*attn*"])
    assert {r["tensor"] for r in att if r["tensor"] != "(all)"} == {f"layers.{i}.attn.q_proj.weight" for i in range(4)}
    assert bits(att) == bits(lowprec.report(ckpt, "mxfp4", totals=True, include=["*attn*"]))


def test_a_killed_worker_is_retried_and_the_report_is_identical(cluster, ckpt, tmp_path):
    marker = tmp_path / "kill-once"
    marker.write_text("")
    local = lowprec.report(ckpt, SCHEMES, totals=True)
    remote = lray.report(ckpt, SCHEMES, totals=True, _fault=marker)
    assert not marker.exists(), "the fault was not injected"
    assert bits(remote) == bits(local)


def test_ray_quantize_equals_the_local_quantize_with_a_worker_killed_mid_write(cluster, ckpt, tmp_path):
    ref = tmp_path / "local"
    assert lowprec.quantize_checkpoint(ckpt, "mxfp4", ref) == (3, 0)
    out = tmp_path / "ray"
    marker = tmp_path / "kill-once"
    marker.write_text("")
    written, kept = lray.quantize(ckpt, "mxfp4", out, _fault=marker)
    assert not marker.exists(), "the fault was not injected"
    assert written + kept == 3
    names = sorted(os.listdir(ref))
    assert sorted(os.listdir(out)) == names, "no temporary or partial file is left"
    for n in names:
        assert (out / n).read_bytes() == (ref / n).read_bytes(), n
    # the output dequantizes as the CLI's does, and a second run keeps every shard
    assert lray.quantize(ckpt, "mxfp4", out) == (0, 3)


def test_dry_run_plans_from_the_headers(ckpt):
    p = lray.report(ckpt, ["mxfp4", "nvfp4"], dry_run=True, workers=3)
    floats = [e for e in lowprec._lowprec.checkpoint_tensors(str(ckpt)) if e[5]]
    assert len(p.tasks) == len(floats) == 12
    assert sum(t.bytes for t in p.tasks) == sum(e[4] for e in floats)
    assert all(t.seconds > 0 for t in p.tasks)
    assert max(t.seconds for t in p.tasks) <= p.seconds <= sum(t.seconds for t in p.tasks)
    by_shard = lray.plan(ckpt, ["mxfp4"], per="shard")
    assert [len(t.names) for t in by_shard.tasks] == [5, 4, 3]
    r = subprocess.run([sys.executable, "-m", "lowprec.ray", "report", str(ckpt), "-s", "mxfp4",
                        "--dry-run", "--workers", "4"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("12 tasks (one per tensor) over 4 workers")
    assert "layers.3.norm.weight" in r.stdout


def test_bad_input_exits_2_with_one_line(tmp_path, ckpt):
    r = subprocess.run([sys.executable, "-m", "lowprec.ray", "report", str(tmp_path / "missing"),
                        "--dry-run"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "missing" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "lowprec.ray", "report", str(ckpt), "-s", "mxfp5"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "mxfp5" in r.stderr, r.stderr
    with pytest.raises(ValueError, match="not a floating tensor"):
        lowprec._lowprec.report_partial(str(ckpt), ["nope"])
    with pytest.raises(ValueError, match="report_partial"):
        lowprec._lowprec.report_finish([b"lprows02" + b"\xff" * 8])
