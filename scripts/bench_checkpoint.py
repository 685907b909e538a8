#!/usr/bin/env python3
"""The cost of `lowprec report` on a big checkpoint, beside the least it could cost.

Writes (once) a synthetic float32 checkpoint of --gib GiB in shards (normal weights, tensors of
4096 x 4096 by default), then for 1 and 2 threads (RAYON_NUM_THREADS):
  * `lowprec report DIR --json` with the default schemes: wall time and peak resident memory
    (the child's ru_maxrss);
  * the same minute's `lowprec bench` encode rate of each scheme (16M float32, the same
    thread count), and one read of the checkpoint's bytes (cat to /dev/null: page cache);
  * the bound the issue sets: 1.4 x (sum over schemes of elements / encode rate + read time).
Prints a Markdown table (the README's figures) and writes the records as JSON (--out).

    python3 scripts/bench_checkpoint.py --gib 8            # the README's figures
    python3 scripts/bench_checkpoint.py --gib 0.25 --threads 1   # a quick look
"""

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT = ["fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "mxfp8", "mxfp6", "mxfp4", "nvfp4", "int8",
           "int4:group=128"]


def write_checkpoint(d, gib, side):
    """A sharded float32 checkpoint of about `gib` GiB (tensors side x side, 8 per shard),
    written with the safetensors layout by hand (8-byte header length, JSON header, data)."""
    per_tensor = side * side * 4
    n = max(1, int(gib * 2**30) // per_tensor)
    marker = d / ".complete"
    if marker.exists() and marker.read_text() == f"{n} {side}":
        return n
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        f.unlink()
    rng = np.random.default_rng(2026)
    shards = [list(range(i, min(i + 8, n))) for i in range(0, n, 8)]
    wm = {}
    for si, ids in enumerate(shards):
        name = f"model-{si + 1:05d}-of-{len(shards):05d}.safetensors"
        header, off = {}, 0
        for t in ids:
            header[f"layers.{t}.weight"] = {"dtype": "F32", "shape": [side, side],
                                            "data_offsets": [off, off + per_tensor]}
            off += per_tensor
            wm[f"layers.{t}.weight"] = name
        h = json.dumps(header).encode()
        h += b" " * (-len(h) % 8)
        with open(d / name, "wb") as f:
            f.write(len(h).to_bytes(8, "little"))
            f.write(h)
            for t in ids:
                x = rng.standard_normal((side, side), dtype=np.float32) * np.float32(0.02)
                f.write(x.tobytes())
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    marker.write_text(f"{n} {side}")
    return n


def timed(cmd, env):
    """(wall seconds, peak RSS in MiB, stdout) of a child process."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE); "
            "w = time.perf_counter() - t; sys.stderr.write(f'{w} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n'); "
            "sys.stdout.buffer.write(r.stdout); sys.exit(r.returncode)")
    r = subprocess.run([sys.executable, "-c", code, *cmd], env=env, capture_output=True)
    if r.returncode:
        sys.exit(f"{cmd[:3]} failed: {r.stderr.decode()[-2000:]}")
    wall, rss = r.stderr.decode().strip().splitlines()[-1].split()
    return float(wall), int(rss) / 1024, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=8.0)
    ap.add_argument("--side", type=int, default=4096)
    ap.add_argument("--dir", type=pathlib.Path, default=ROOT / "target" / "bench-checkpoint")
    ap.add_argument("--bin", default=os.environ.get("LOWPREC_BIN", str(ROOT / "target" / "release" / "lowprec")))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "target" / "bench-checkpoint.json")
    a = ap.parse_args()
    n = write_checkpoint(a.dir, a.gib, a.side)
    elements = n * a.side * a.side
    size = sum(f.stat().st_size for f in a.dir.glob("*.safetensors"))
    print(f"checkpoint: {a.dir}, {n} tensors, {elements} elements, {size / 2**30:.2f} GiB", file=sys.stderr)
    records = []
    for th in a.threads:
        env = dict(os.environ, RAYON_NUM_THREADS=str(th))
        t = time.perf_counter()
        subprocess.run(f"cat {a.dir}/*.safetensors > /dev/null", shell=True, check=True)
        read_s = time.perf_counter() - t
        wall, rss, out = timed([a.bin, "report", str(a.dir), "--json"], env)
        rows = json.loads(out)["totals"]
        bench_cmd = [a.bin, "bench", "--json", "--no-accum", "--ggml", "none", "-f", "fp16",
                     "--reps", "3"]
        for s in DEFAULT:
            bench_cmd += ["-s", s]
        recs = json.loads(subprocess.run(bench_cmd, env=env, capture_output=True, check=True).stdout)
        rate, prev = {}, None
        for r in recs:
            # a scheme's encode record follows its quantize record (format casts have none)
            if (r["op"] == "encode" and r["threads"] == th and prev is not None
                    and prev["op"] == "quantize" and prev["format"] == r["format"]):
                rate[r["format"]] = r["elements_per_s"]
            prev = r
        missing = [s for s in DEFAULT if s not in rate]
        if missing:
            sys.exit(f"no bench encode record for {missing}")
        encode_s = {s: elements / rate[s] for s in DEFAULT}
        bound = 1.4 * (sum(encode_s.values()) + read_s)
        rec = {"threads": th, "gib": size / 2**30, "elements": elements, "wall_s": wall,
               "peak_rss_mib": rss, "read_s": read_s, "encode_s": encode_s,
               "encode_rate": rate, "bound_s": bound, "ratio_to_bound": wall / bound,
               "sqnr_db": {r["scheme"]: r["sqnr_db"] for r in rows}}
        records.append(rec)
        print(f"threads {th}: wall {wall:.1f} s, peak RSS {rss:.0f} MiB, read {read_s:.1f} s, "
              f"sum of encodes {sum(encode_s.values()):.1f} s, bound {bound:.1f} s "
              f"-> {wall / bound:.2f} x the bound", file=sys.stderr)
    a.out.write_text(json.dumps(records, indent=1))
    print(f"| threads | GiB | wall s | peak RSS MiB | read s | Σ encode s | 1.4×(Σ+read) s | wall / bound |")
    print("|---|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['threads']} | {r['gib']:.2f} | {r['wall_s']:.1f} | {r['peak_rss_mib']:.0f} | "
              f"{r['read_s']:.1f} | {sum(r['encode_s'].values()):.1f} | {r['bound_s']:.1f} | "
              f"{r['ratio_to_bound']:.2f} |")
    print()
    print("| scheme | " + " | ".join(f"encode s ({r['threads']} thr)" for r in records) + " |")
    print("|---|" + "---|" * len(records))
    for s in DEFAULT:
        print(f"| {s} | " + " | ".join(f"{r['encode_s'][s]:.2f}" for r in records) + " |")


if __name__ == "__main__":
    main()
