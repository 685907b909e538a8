//! `lowprec accumulate`, `gemm` and `plot` end to end: the seed's facts in the table and the
//! JSON, row sums written as float64 and equal to the library's, the GEMM record, the SVG, and
//! the bad-input contract.

mod common;

use common::{fails, run, write_npy};
use lowprec::accum::{accumulate, AccumOptions, Method};
use lowprec::io::npy::{self, Data};
use lowprec::{FloatFormat, RoundOptions, RoundingMode};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON")
}

#[test]
fn three_hundred_ones_in_bf16() {
    let v = json(&[
        "accumulate",
        "--acc",
        "bf16",
        "--n",
        "300",
        "--dist",
        "ones",
        "--rows",
        "1",
        "--json",
    ]);
    let lines = v.as_array().unwrap();
    let by = |method: &str, chunk: u64| {
        lines
            .iter()
            .find(|l| l["method"] == method && l["chunk"] == chunk)
            .unwrap_or_else(|| panic!("{method} {chunk} missing"))
    };
    assert_eq!(by("sequential", 0)["sum0"], 256.0);
    assert_eq!(by("sequential", 0)["exact0"], 300.0);
    assert_eq!(by("pairwise", 0)["sum0"], 300.0);
    assert_eq!(by("kahan", 0)["sum0"], 300.0);
    assert_eq!(by("sequential", 128)["sum0"], 300.0);
    assert!((by("sequential", 0)["max_rel_error"].as_f64().unwrap() - 44.0 / 300.0).abs() < 1e-12);
    // the table shows the same numbers
    let o = run(&[
        "accumulate",
        "--acc",
        "bf16",
        "--n",
        "300",
        "--dist",
        "ones",
        "--rows",
        "1",
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    let seq = text
        .lines()
        .find(|l| l.starts_with("sequential  none"))
        .unwrap();
    assert!(seq.split_whitespace().nth(2) == Some("256"), "{seq}");
}

#[test]
fn row_sums_are_written_as_float64_and_match_the_library() {
    let d = tempfile::tempdir().unwrap();
    let (inp, out) = (d.path().join("x.npy"), d.path().join("s.npy"));
    let mut s = 3u64;
    let x: Vec<f32> = (0..7 * 300)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.4
        })
        .collect();
    write_npy(&inp, vec![7, 300], Data::F32(x.clone()));
    let o = run(&[
        "accumulate",
        "--input",
        inp.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--acc",
        "fp16",
        "--rounding",
        "sr",
        "--seed",
        "5",
        "--method",
        "kahan",
        "--chunk",
        "64",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a = npy::read(&out).unwrap();
    assert_eq!(a.shape, vec![7]);
    let Data::F64(got) = a.data else {
        panic!("float64 expected")
    };
    let opts = AccumOptions::new(FloatFormat::FP16)
        .rounding(RoundOptions::new(RoundingMode::Stochastic).seed(5))
        .method(Method::Kahan)
        .chunk(64);
    let (want, _) = accumulate(&x, 300, &opts).unwrap();
    assert_eq!(got, want);
}

#[test]
fn gemm_reports_the_split_of_the_error() {
    let v = json(&[
        "gemm",
        "--m",
        "16",
        "--n",
        "8",
        "--k",
        "256",
        "--input-format",
        "fp8-e4m3",
        "--acc",
        "bf16",
        "--chunk",
        "128",
        "--json",
    ]);
    let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
    assert!(
        f("input_rel_error") > 0.01 && f("input_rel_error") < 0.1,
        "{v}"
    );
    assert!(f("accum_rel_error") > 0.0);
    assert!(f("max_normalized") <= f("bound"));
    assert_eq!(v["inexact_products"], 0);
    // an FP32 accumulator of FP8 products of k = 256 is exact: only the input error remains
    let w = json(&[
        "gemm",
        "--m",
        "16",
        "--n",
        "8",
        "--k",
        "256",
        "--input-format",
        "fp8-e4m3",
        "--acc",
        "fp32",
        "--json",
    ]);
    assert_eq!(w["accum_rel_error"], 0.0);
    assert_eq!(w["input_rel_error"], v["input_rel_error"]);
    // block-scaled inputs and fused groups
    let m = json(&[
        "gemm",
        "--m",
        "8",
        "--n",
        "8",
        "--k",
        "64",
        "--input-format",
        "mxfp4",
        "--order",
        "blocked:16",
        "--json",
    ]);
    assert_eq!(m["order"], "blocked:16");
    assert!(m["input_rel_error"].as_f64().unwrap() > f("input_rel_error"));
}

#[test]
fn plot_writes_an_svg_with_one_curve_per_accumulator_and_method() {
    let d = tempfile::tempdir().unwrap();
    let svg = d.path().join("acc.svg");
    let o = run(&[
        "plot",
        "-o",
        svg.to_str().unwrap(),
        "--acc",
        "bf16,fp16",
        "--method",
        "sequential,pairwise",
        "--max-n",
        "1024",
        "--rows",
        "4",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    for label in [
        "bf16 sequential",
        "bf16 pairwise",
        "fp16 sequential",
        "fp16 pairwise",
    ] {
        assert!(text.contains(label), "{label} missing from the legend");
    }
    // the printed last points: bf16's sequential error exceeds its pairwise error
    let out = String::from_utf8(o.stdout).unwrap();
    let last = |label: &str| -> f64 {
        let l = out.lines().find(|l| l.starts_with(label)).unwrap();
        l.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    assert!(last("bf16 sequential") > last("bf16 pairwise"));
}

#[test]
fn bad_arguments_fail_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("s.npy");
    let inp = d.path().join("x.npy");
    write_npy(&inp, vec![2, 2, 2], Data::F64(vec![1.0; 8]));
    let o = out.to_str().unwrap();
    let i = inp.to_str().unwrap();
    fails(
        &["accumulate", "--acc", "e8m0"],
        &[],
        "cannot hold a running sum",
    );
    fails(
        &["accumulate", "--acc", "bf16", "--method", "zigzag"],
        &[],
        "unknown accumulation method",
    );
    fails(
        &["accumulate", "--input", i, "-o", o],
        &[&out],
        "1-D or 2-D",
    );
    fails(&["accumulate", "-o", o], &[&out], "give --input");
    fails(
        &["accumulate", "--input", i, "-o", i],
        &[],
        "is the input file",
    );
    fails(&["gemm", "--order", "blocked:0"], &[], "unknown GEMM order");
    fails(&["gemm", "--input-format", "mx:fp3"], &[], "--input-format");
    fails(&["gemm", "--k", "0"], &[], "at least 1");
    let svg = d.path().join("p.svg");
    fails(
        &["plot", "-o", svg.to_str().unwrap(), "--acc", "nosuch"],
        &[&svg],
        "unknown format",
    );
}
