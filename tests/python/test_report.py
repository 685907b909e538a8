"""`lowprec.report` / `report_frame`: the numbers of `lowprec report --json` (built-in
tensors, .npy and .safetensors files, arrays in memory), one row checked against numpy, and
the errors."""
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import lowprec

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEYS = ["tensor", "shape", "scheme", "elements", "bits_per_element", "rel_error", "sqnr_db",
        "max_abs_error", "cosine", "rmse", "nmse", "p50_abs_error", "p99_abs_error",
        "p999_abs_error", "saturated_share", "flushed_share", "nan"]
# The error statistics are sums over parallel chunks whose combining order rayon may change
# from run to run: they agree to the last few bits, not always to the bit.
STATS = {"rel_error", "sqnr_db", "cosine", "rmse", "nmse"}


def cli_json(*args):
    exe = os.environ.get("LOWPREC_BIN", str(ROOT / "target" / "release" / "lowprec"))
    if not os.path.exists(exe):
        pytest.skip(f"the lowprec CLI is not built at {exe} (cargo build --release)")
    out = subprocess.run([exe, "report", "--json", *args], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def assert_rows_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        for k in KEYS:
            x, y = a[k], b[k]
            if k == "shape":
                assert list(x) == y
            elif y is None:  # JSON null: NaN (a row the scheme could not quantize) or ±Inf
                assert not math.isfinite(x), (a, k)
            elif k in STATS and isinstance(y, float) and math.isfinite(y):
                assert math.isclose(x, y, rel_tol=1e-12), (a["tensor"], a["scheme"], k, x, y)
            else:
                assert x == y, (a["tensor"], a["scheme"], k, x, y)
        assert a["error"] == b.get("error"), (a, b)


def test_builtin_report_is_the_cli_report():
    want = cli_json()
    got = lowprec.report(totals=True)
    n = len(want["tensors"])
    assert n == 4 * 10
    assert_rows_equal(got[:n], want["tensors"])
    assert_rows_equal(got[n:], want["totals"])
    assert [r["tensor"] for r in got[:10]] == ["gaussian_weight"] * 10
    fp16 = lowprec.report(schemes="fp16")  # one scheme: the fp16 rows of the full report
    assert_rows_equal(fp16, [r for r in want["tensors"] if r["scheme"] == "fp16"])


def test_file_reports_are_the_cli_reports(tmp_path):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((8, 64)) * 0.1).astype(np.float32)
    x[3, 5] = 40.0  # an outlier: saturation and flushing in the small formats
    p = tmp_path / "small.npy"
    np.save(p, x)
    h = tmp_path / "half.npy"
    np.save(h, (rng.standard_normal((4, 32)) * 2).astype(np.float16))
    schemes = ["fp8-e4m3", "mxfp4", "nvfp4", "int4:group=16", "int4:group=128", "bf16"]
    want = cli_json(str(p), str(h), *sum((["-s", s] for s in schemes), []))
    got = lowprec.report([p, str(h)], schemes=schemes, totals=True)
    n = len(want["tensors"])
    assert_rows_equal(got[:n], want["tensors"])
    assert_rows_equal(got[n:], want["totals"])
    # group=128 does not divide 64: the report pads every scheme (one partial group per row,
    # its binary64 scale charged 32 bits: 4 + 8 · 32 / 512), as the CLI does
    pad = [r for r in got if r["scheme"] == "int4:group=128" and r["tensor"] == "small"][0]
    assert pad["error"] is None and pad["bits_per_element"] == 4.5
    assert 0 < pad["rel_error"] < 0.5
    # the same arrays in memory give the same rows (float16 widened as the CLI does)
    mem = lowprec.report({"small": x, "half": np.load(h)}, schemes=schemes)
    assert_rows_equal(mem, want["tensors"])
    one = lowprec.report(p)  # one path, default schemes
    assert_rows_equal(one, cli_json(str(p))["tensors"])


def test_safetensors_report_is_the_cli_report(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(8)
    f = tmp_path / "m.safetensors"
    st.save_file({"w": rng.standard_normal((16, 64)).astype(np.float32),
                  "b": rng.standard_normal(32),  # float64 stays float64
                  "ids": np.arange(4, dtype=np.int32)}, str(f))
    got = lowprec.report(f, schemes="mxfp8")
    assert {r["tensor"] for r in got} == {"w", "b"}
    assert_rows_equal(got, cli_json(str(f), "-s", "mxfp8")["tensors"])


def test_a_row_against_numpy():
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((16, 128)) * 0.02).astype(np.float32)
    x[0, 0] = 1e-12  # flushed by int8
    for scheme in ("fp8-e4m3", "int8", "int4:group=32"):
        [r] = lowprec.report({"w": x}, schemes=[scheme])
        q = lowprec.quantize(x, scheme)
        d = q["values"].astype(np.float64) - x.astype(np.float64)
        sse, energy = np.sum(d * d), np.sum(x.astype(np.float64) ** 2)
        assert (r["tensor"], r["shape"], r["elements"]) == ("w", (16, 128), x.size)
        assert math.isclose(r["rel_error"], math.sqrt(sse / energy), rel_tol=1e-10)
        assert math.isclose(r["sqnr_db"], 10 * math.log10(energy / sse), rel_tol=1e-10)
        assert r["max_abs_error"] == np.max(np.abs(d))
        assert r["saturated_share"] == q["saturated"] / x.size
        assert r["flushed_share"] == q["flushed"] / x.size
        assert r["nan"] == 0 and r["error"] is None
    bits = {s: lowprec.report({"w": x}, schemes=s)[0]["bits_per_element"]
            for s in ("fp8-e4m3", "int4:group=32", "mxfp4", "nvfp4")}
    # elements + scale overhead: one fp32 scale per tensor / per group of 32, E8M0 per 32,
    # E4M3 per 16 (+ one fp32 tensor scale)
    assert bits["fp8-e4m3"] == 8 + 32 / x.size
    assert bits["int4:group=32"] == 4 + 32 / 32
    assert bits["mxfp4"] == 4 + 8 / 32
    assert math.isclose(bits["nvfp4"], 4 + 8 / 16 + 32 / x.size)


def test_report_frame():
    pd = pytest.importorskip("pandas")
    x = np.random.default_rng(1).standard_normal((4, 64))
    df = lowprec.report_frame({"a": x, "b": x[:2]}, schemes=["mxfp4", "int8"], totals=True)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns[:len(KEYS)]) == KEYS
    assert list(df["tensor"]) == ["a", "a", "b", "b", "(all)", "(all)"]
    rows = lowprec.report({"a": x, "b": x[:2]}, schemes=["mxfp4", "int8"], totals=True)
    assert list(df["sqnr_db"]) == [r["sqnr_db"] for r in rows]


def test_report_frame_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ValueError, match="pip install pandas"):
        lowprec.report_frame({"a": np.ones(4)})


def test_bad_report_arguments(tmp_path):
    with pytest.raises(ValueError, match="bad scheme"):
        lowprec.report({"a": np.ones(4)}, schemes=["nope"])
    with pytest.raises(TypeError, match="floating"):
        lowprec.report({"a": np.arange(4)})
    with pytest.raises(ValueError, match="cannot read"):
        lowprec.report(tmp_path / "missing.npy")
    with pytest.raises(ValueError, match="no tensors"):
        lowprec.report({})
    with pytest.raises(TypeError, match="tensors must be"):
        lowprec.report(42)
    np.save(tmp_path / "ints.npy", np.arange(4, dtype=np.uint8))
    with pytest.raises(ValueError, match="floating"):
        lowprec.report(tmp_path / "ints.npy")
