#!/usr/bin/env python3
"""Seed `numfmt.py` against lowprec's Python bindings, in one process, on the same 16M
float64 array (normal(0, 1)): G elements/s of each and the ratio. Best of REPEAT runs.

    .venv/bin/python scripts/bench_python.py [--n 16777216] [--repeat 3]
"""
import argparse
import os
import pathlib
import sys
import time

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
    cases = [
        ("FP8_E4M3.round(x)", x.size,
         lambda: numfmt.FP8_E4M3.round(x), lambda: lowprec.FP8_E4M3.round(x), 50),
        ("FP8_E4M3.encode(x)", x.size,
         lambda: numfmt.FP8_E4M3.encode(x), lambda: lowprec.FP8_E4M3.encode(x), 50),
        ("mx_quantize(x, FP4_E2M1)", x.size,
         lambda: numfmt.mx_quantize(x, numfmt.FP4_E2M1),
         lambda: lowprec.mx_quantize(x, lowprec.FP4_E2M1), 50),
        ("nvfp4_quantize(x)", x.size,
         lambda: numfmt.nvfp4_quantize(x), lambda: lowprec.nvfp4_quantize(x), 50),
        ('quantize_int(x, 8, "group", 128)', x.size,
         lambda: numfmt.quantize_int(x, 8, granularity="group", group=128),
         lambda: lowprec.quantize_int(x, 8, granularity="group", group=128), 50),
        ("accumulate(64x4096, BF16)", acc.size,
         lambda: numfmt.accumulate(acc_b, numfmt.BF16),
         lambda: lowprec.accumulate(acc_b, lowprec.BF16), 100),
    ]
    print(f"{args.n} float64 elements (accumulate: 64 x 4096), best of {args.repeat} "
          f"(seed: {args.seed_repeat}), {os.cpu_count()} CPUs")
    print(f"| call | seed G/s | lowprec G/s | ratio | target |")
    print("|---|---|---|---|---|")
    for name, n, seed_fn, ours_fn, target in cases:
        ours_fn()  # warm up (thread pool, page cache)
        ts = best(seed_fn, args.seed_repeat)
        to = best(ours_fn, args.repeat)
        r = ts / to
        print(f"| `{name}` | {n / ts / 1e9:.3f} | {n / to / 1e9:.2f} | {r:.0f}x | "
              f">= {target}x {'ok' if r >= target else 'MISSED'} |", flush=True)


if __name__ == "__main__":
    main()
