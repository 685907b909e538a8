"""Check `lowprec report MODEL --json` of all-MiniLM-L6-v2 (scripts/test): over the tensors of
at least two dimensions, the median SQNR of fp8-e4m3 lies in [29.5, 33.5] dB (E4M3 keeps 3
mantissa bits: about 31 dB on weights), int8 beats fp8-e4m3, which beats mxfp4, and nvfp4
beats mxfp4.

Usage: python check_minilm.py REPORT.json"""
import json
import math
import statistics
import sys

FP8_RANGE = (29.5, 33.5)


def medians(report):
    by = {}
    for t in report["tensors"]:
        if len(t["shape"]) < 2 or t.get("error"):
            continue
        # JSON has no infinity: an exact tensor's SQNR is written as null
        by.setdefault(t["scheme"], []).append(math.inf if t["sqnr_db"] is None else t["sqnr_db"])
    return {s: (statistics.median(v), len(v)) for s, v in by.items()}


def main(path):
    with open(path) as f:
        report = json.load(f)
    med = medians(report)
    print(f"median SQNR over {max((n for _, n in med.values()), default=0)} weight tensors (>= 2-D):")
    for s, (m, n) in med.items():
        print(f"  {s:16} {m:7.2f} dB  ({n} tensors)")
    need = ["fp8-e4m3", "int8", "mxfp4", "nvfp4"]
    missing = [s for s in need if s not in med]
    if missing:
        sys.exit(f"check_minilm: the report has no {', '.join(missing)} rows")
    m = {s: med[s][0] for s in need}
    if med["fp8-e4m3"][1] < 30:
        sys.exit(f"check_minilm: only {med['fp8-e4m3'][1]} tensors of >= 2 dimensions; is this MiniLM-L6?")
    failures = []
    lo, hi = FP8_RANGE
    if not lo <= m["fp8-e4m3"] <= hi:
        failures.append(f"median fp8-e4m3 SQNR {m['fp8-e4m3']:.2f} dB outside [{lo}, {hi}]")
    if not m["int8"] > m["fp8-e4m3"] > m["mxfp4"]:
        failures.append(f"expected int8 > fp8-e4m3 > mxfp4, got {m['int8']:.2f}, {m['fp8-e4m3']:.2f}, {m['mxfp4']:.2f} dB")
    if not m["nvfp4"] > m["mxfp4"]:
        failures.append(f"expected nvfp4 > mxfp4, got {m['nvfp4']:.2f}, {m['mxfp4']:.2f} dB")
    if failures:
        sys.exit("check_minilm: " + "; ".join(failures))
    print("check_minilm: ok")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
