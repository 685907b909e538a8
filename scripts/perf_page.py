#!/usr/bin/env python3
"""Write docs/performance.md from `lowprec bench --json`: one table for this machine class.

    python3 scripts/perf_page.py BENCH.json --command "lowprec bench ..." [--out docs/performance.md]

The table gives every record's rate (elements per second, the best of the repetitions, and the
median) and its ratios to the copy rate, to the streaming probe of the same bytes and to the
`half` crate, all of the same run and thread count, since this kind of shared machine moves by
±30 % from minute to minute: the ratios are what compare across runs.
Older figures live in the git history of the page, not on it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def vector_isa() -> str:
    """The widest x86 vector extension the kernels dispatch to here (the figures differ a lot)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    if "avx512f" in flags:
                        return "AVX-512"
                    return "AVX2" if "avx2" in flags else "no AVX2"
    except OSError:
        pass
    return "unknown vector extensions"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_json", help="the output of `lowprec bench --json`")
    ap.add_argument("--command", required=True, help="the command that made it")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "performance.md"))
    a = ap.parse_args()
    recs = json.load(open(a.bench_json))
    copy = {r["threads"]: r["elements_per_s"] for r in recs
            if r["op"] == "copy" and r["input"] == "f32"}
    lines = [
        "# Performance",
        "",
        "Elements per second of lowprec's kernels on one machine class, made by",
        "`scripts/perf_page.py` from `lowprec bench --json` (older figures: this page's git",
        "history). A rate is the best of the repetitions (the median beside it). The ratios compare",
        "with what was measured in the same run with the same threads, which is what compares",
        "across runs on a shared machine whose absolute rates move by ±30 %: `/ copy` to the",
        "binary32 copy; `/ probe` and `/ nt` to the streaming probe of the same bytes (`r4w1`: read",
        "4 B and write 1 B per element; ordinary and non-temporal stores), the memory limit of that",
        "traffic; `/ half` to the `half` crate's slice conversion (binary16 and bfloat16 encodes).",
        "The probe `r4` only reads (the largest magnitude of the input), and `r4+r4w1` runs it",
        "before `r4w1`: the memory limit of an encode whose scale depends on the whole tensor",
        "(NVFP4's tensor scale), its `/ probe` the ceiling of such an encode's ratio to `r4w1`.",
        "",
        f"* machine: {cpu_model()}, {os.cpu_count()} cores, {vector_isa()}",
        f"* date: {datetime.date.today().isoformat()}",
        f"* command: `{a.command}`",
        "",
        "| op | format or scheme | rounding | input | buffer | kernel | threads | G/s (best) "
        "| G/s (median) | / copy | probe | / probe | / nt | / half |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def ratio(v) -> str:
        return "-" if v is None else f"{v:.2f}"

    for r in recs:
        c = copy.get(r["threads"])
        to_copy = r["elements_per_s"] / c if c and r["input"] == "f32" else None
        lines.append(
            f"| {r['op']} | `{r['format']}` | {r['rounding']} | {r['input']} | {r['buffer']} "
            f"| {r.get('kernel', 'lowprec')} | {r['threads']} "
            f"| {r['elements_per_s'] / 1e9:.2f} | {r['median_elements_per_s'] / 1e9:.2f} "
            f"| {ratio(to_copy)} | {r.get('probe') or '-'} | {ratio(r.get('ratio_to_probe'))} "
            f"| {ratio(r.get('ratio_to_probe_nt'))} | {ratio(r.get('ratio_to_half'))} |"
        )
    lines += [
        "",
        "`encode` records write codes (and scales) only, `quantize` records values too; `round`",
        "records write values. Schemes run on rows of 4096. Regenerate with the command above",
        "(`cargo run --release -- bench ... --json > bench.json`), then",
        "`python3 scripts/perf_page.py bench.json --command \"...\"`.",
        "",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
