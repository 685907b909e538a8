"""Every row of shared/vectors/*.csv through the Python API (native functions, vectorised
per group of rows): rounding (values and codes), decoding, OCP MX blocks, NVFP4 tensors."""
import csv
from collections import defaultdict

import numpy as np
import pytest

import lowprec
from conftest import VECTORS


def rows(name):
    p = VECTORS / name
    if not p.exists():
        pytest.fail(f"{p} not found (set LOWPREC_SHARED or LOWPREC_VECTORS)")
    with open(p, newline="") as fh:
        return list(csv.DictReader(fh))


def bits(col):
    return np.array([int(v, 16) for v in col], dtype=np.uint64).view(np.float64)


def ints(col):
    return np.array([int(v, 16) for v in col], dtype=np.uint64)


def same(a, b):
    return (a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))


def test_rounding_csv_every_row():
    groups = defaultdict(list)
    all_rows = rows("rounding.csv")
    for r in all_rows:
        groups[(r["format"], r["rounding"], r["overflow"])].append(r)
    n = 0
    for (fmt, mode, ovf), rs in groups.items():
        x = bits([r["input_bits"] for r in rs])
        want = bits([r["value_bits"] for r in rs])
        code = ints([r["code"] for r in rs])
        got = lowprec.round(x, fmt, mode, ovf)
        bad = np.flatnonzero(~same(got, want))
        assert bad.size == 0, (fmt, mode, ovf, x[bad[:5]], got[bad[:5]], want[bad[:5]])
        c = lowprec.encode(x, fmt, mode, ovf).astype(np.uint64)
        dec = lowprec.decode(c, fmt)
        ok = (c == code) | (np.isnan(want) & np.isnan(dec))
        assert ok.all(), (fmt, mode, ovf, x[~ok][:5], c[~ok][:5], code[~ok][:5])
        # binary32 inputs through the float32 path (rows whose input binary32 holds)
        with np.errstate(all="ignore"):
            x32 = x.astype(np.float32)
        k = (x32.astype(np.float64).view(np.uint64) == x.view(np.uint64)) & ~np.isnan(x)
        if k.any():
            g32 = np.asarray(lowprec.round(x32[k], fmt, mode, ovf), np.float64)
            assert same(g32, want[k]).all(), (fmt, mode, ovf)
        n += len(rs)
    assert n == len(all_rows) > 150_000


def test_decode_csv_every_row():
    groups = defaultdict(list)
    all_rows = rows("decode.csv")
    for r in all_rows:
        groups[r["format"]].append(r)
    for fmt, rs in groups.items():
        got = lowprec.decode(ints([r["code"] for r in rs]), fmt)
        assert same(got, bits([r["value_bits"] for r in rs])).all(), fmt
    assert sum(map(len, groups.values())) == len(all_rows) > 130_000


def test_mx_csv_every_row():
    cases = defaultdict(list)
    all_rows = rows("mx.csv")
    for r in all_rows:
        cases[(r["elem"], r["case_id"])].append(r)
    by_elem = defaultdict(list)
    for (elem, _), rs in cases.items():
        assert [int(r["index"]) for r in rs] == list(range(32))
        by_elem[elem].append(rs)
    for elem, blocks in by_elem.items():
        flat = [r for b in blocks for r in b]
        x = bits([r["input_bits"] for r in flat]).reshape(-1, 32)
        q = lowprec._lowprec.mx_quantize(x, elem)
        assert same(q["values"].reshape(-1), bits([r["output_bits"] for r in flat])).all(), elem
        assert np.array_equal(q["codes"].reshape(-1), ints([r["elem_code"] for r in flat])), elem
        want_s = np.array([int(b[0]["scale_exponent"]) + 127 for b in blocks])
        assert np.array_equal(q["scales"].reshape(-1), want_s), elem
        # the native scheme API gives the same (the float32 path too)
        qs = lowprec.quantize(x.astype(np.float32), f"mx:{elem}")
        assert same(qs["values"].astype(np.float64).reshape(-1),
                    bits([r["output_bits"] for r in flat])).all(), elem
    assert sum(len(b) * 32 for b in by_elem.values()) == len(all_rows)


def test_nvfp4_csv_every_row():
    cases = defaultdict(list)
    all_rows = rows("nvfp4.csv")
    for r in all_rows:
        cases[r["case_id"]].append(r)
    for cid, rs in cases.items():
        x = bits([r["input_bits"] for r in rs])
        q = lowprec._lowprec.nvfp4_quantize(x)
        assert same(q["values"], bits([r["output_bits"] for r in rs])).all(), cid
        assert np.array_equal(q["codes"], ints([r["elem_code"] for r in rs])), cid
        sc = ints([r["block_scale_code"] for r in rs])[::16]
        assert np.array_equal(q["scales"], sc), cid
        g = bits([rs[0]["tensor_scale_bits"]])[0]
        assert float(q["tensor_scale"]) == g, cid
        # the seed API: block scales as values, g as a float
        v, sb, gg = lowprec.nvfp4_quantize(x)
        assert same(v, q["values"]).all() and gg == g
        assert np.array_equal(sb, lowprec.decode(sc, "fp8-e4m3"))
    assert sum(map(len, cases.values())) == len(all_rows)
