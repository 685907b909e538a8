#!/usr/bin/env python3
"""Seed `numfmt.py` against lowprec's Python bindings, in one process, on the same 16M
float64 array (normal(0, 1)): G elements/s of each and the ratio. Best of REPEAT runs.

Beside each call, its memory floor in the same run: numpy moving the bytes the call must
move at least (reading `x`, writing fresh arrays as large as its outputs, on every CPU;
`nvfp4_quantize` reads `x` twice, since every element needs the tensor scale, a maximum
over all of `x`).
An implementation returning those outputs would have to write fresh memory faster than
numpy copies, so `seed / floor` is, within what a faster copy could gain, the largest
ratio any implementation could show in that run (`ceiling`).

    .venv/bin/python scripts/bench_python.py [--n 16777216] [--repeat 3]
"""
import argparse
import os
import pathlib
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("LOWPREC_SHARED", ROOT.parent / "shared"))
sys.path.insert(0, str(SHARED / "seeds"))
import numfmt  # noqa: E402

import lowprec  # noqa: E402


def best(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed-repeat", type=int, default=1)
    args = ap.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n)
    acc = x[:64 * 4096].reshape(64, 4096)
    acc_b = lowprec.BF16.round(acc)
    # the memory floors: read x, write fresh outputs of the calls' sizes, on every CPU as
    # lowprec does (numpy releases the GIL while it copies; first-touch page faults and
    # writes then run in parallel too)
    cpus = os.cpu_count() or 1
    pool = ThreadPoolExecutor(cpus)
    parts = [slice(x.size * k // cpus, x.size * (k + 1) // cpus) for k in range(cpus)]

    def par(fn):
        return list(pool.map(fn, parts))

    def fresh(dtype):
        out = np.empty(x.size, dtype)
        par(lambda s: np.copyto(out[s], x[s], casting="unsafe"))
        return out

    def f64_out():
        return fresh(np.float64)

    def u8_out():
        return fresh(np.uint8)

    def two_reads():
        return max(par(lambda s: x[s].max())), fresh(np.float64)

    def f64_and_i64_out():
        return fresh(np.float64), fresh(np.int64)

    cases = [
        ("FP8_E4M3.round(x)", x.size,
         lambda: numfmt.FP8_E4M3.round(x), lambda: lowprec.FP8_E4M3.round(x), f64_out, 50),
        ("FP8_E4M3.encode(x)", x.size,
         lambda: numfmt.FP8_E4M3.encode(x), lambda: lowprec.FP8_E4M3.encode(x), u8_out, 50),
        ("mx_quantize(x, FP4_E2M1)", x.size,
         lambda: numfmt.mx_quantize(x, numfmt.FP4_E2M1),
         lambda: lowprec.mx_quantize(x, lowprec.FP4_E2M1), f64_out, 50),
        ("nvfp4_quantize(x)", x.size,
         lambda: numfmt.nvfp4_quantize(x), lambda: lowprec.nvfp4_quantize(x), two_reads, 50),
        ('quantize_int(x, 8, "group", 128)', x.size,
         lambda: numfmt.quantize_int(x, 8, granularity="group", group=128),
         lambda: lowprec.quantize_int(x, 8, granularity="group", group=128),
         f64_and_i64_out, 50),
        ("accumulate(64x4096, BF16)", acc.size,
         lambda: numfmt.accumulate(acc_b, numfmt.BF16),
         lambda: lowprec.accumulate(acc_b, lowprec.BF16), lambda: acc_b.max(axis=1), 100),
    ]
    print(f"{args.n} float64 elements (accumulate: 64 x 4096), best of {args.repeat} "
          f"(seed: {args.seed_repeat}), {os.cpu_count()} CPUs")
    print("| call | seed G/s | lowprec G/s | floor G/s | ratio | ceiling | target |")
    print("|---|---|---|---|---|---|---|")
    for name, n, seed_fn, ours_fn, floor_fn, target in cases:
        ours_fn()  # warm up (thread pool, page cache)
        ts = best(seed_fn, args.seed_repeat)
        to = best(ours_fn, args.repeat)
        tf = best(floor_fn, args.repeat)
        r = ts / to
        verdict = "ok" if r >= target else "MISSED"
        if ts / tf < target:
            verdict += " (above the ceiling)"
        print(f"| `{name}` | {n / ts / 1e9:.3f} | {n / to / 1e9:.2f} | {n / tf / 1e9:.2f} | "
              f"{r:.0f}x | {ts / tf:.0f}x | >= {target}x {verdict} |", flush=True)


if __name__ == "__main__":
    main()
