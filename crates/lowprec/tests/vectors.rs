//! Every row of `shared/vectors/rounding.csv` and `decode.csv`, through the scalar API, the
//! slice API (binary64 and, where the input is a binary32 value, binary32 inputs), and the
//! reference. The test reads the CSV files; nothing is copied into the code.

mod common;

use common::{csv, hex};
use lowprec::{
    decode_vec, encode_vec, reference, round_vec, FloatFormat, Overflow, RoundOptions, RoundingMode,
};
use std::collections::BTreeMap;

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

type Group = (String, String, String);

fn grouped() -> BTreeMap<Group, Vec<(f64, u64, u64)>> {
    let mut g: BTreeMap<Group, Vec<(f64, u64, u64)>> = BTreeMap::new();
    for r in csv(
        "rounding.csv",
        "format,rounding,overflow,input_bits,value_bits,code",
    ) {
        g.entry((r[0].clone(), r[1].clone(), r[2].clone()))
            .or_default()
            .push((f64::from_bits(hex(&r[3])), hex(&r[4]), hex(&r[5])));
    }
    g
}

#[test]
fn rounding_csv_every_row_every_path() {
    let groups = grouped();
    assert!(groups.len() == 142, "expected every format × mode × policy");
    let mut rows = 0usize;
    let mut failures = Vec::new();
    for ((f, mode, ovf), cases) in &groups {
        let fmt = FloatFormat::parse(f).unwrap();
        let opts = RoundOptions::new(RoundingMode::parse(mode).unwrap())
            .overflow(Overflow::parse(ovf).unwrap());
        let xs: Vec<f64> = cases.iter().map(|c| c.0).collect();
        let (vals, _) = round_vec(&fmt, &xs, &opts).unwrap();
        let (codes, _) = encode_vec::<f64, u64>(&fmt, &xs, &opts).unwrap();
        // binary32 inputs: the rows whose input is a binary32 value (NaN and Inf included).
        let f32_rows: Vec<usize> = (0..xs.len())
            .filter(|&i| xs[i].is_nan() || (xs[i] as f32) as f64 == xs[i])
            .collect();
        let xs32: Vec<f32> = f32_rows.iter().map(|&i| xs[i] as f32).collect();
        let (codes32, _) = encode_vec::<f32, u64>(&fmt, &xs32, &opts).unwrap();
        let vals32: Option<Vec<f32>> = fmt
            .fits_f32()
            .then(|| round_vec(&fmt, &xs32, &opts).unwrap().0);
        let mut at32 = 0;
        for (i, &(x, vb, code)) in cases.iter().enumerate() {
            rows += 1;
            let want = f64::from_bits(vb);
            let mut bad = |what: &str, got: String| {
                if failures.len() < 40 {
                    failures.push(format!(
                        "{f} {mode} {ovf} x={x:e} ({:#018x}): {what} got {got}, want value {want:e} code {code:#x}",
                        x.to_bits()
                    ));
                }
            };
            if !same(vals[i], want) {
                bad("slice value", format!("{:e}", vals[i]));
            }
            if codes[i] != code {
                bad("slice code", format!("{:#x}", codes[i]));
            }
            if !same(fmt.round(x, &opts), want) {
                bad("scalar value", format!("{:e}", fmt.round(x, &opts)));
            }
            if fmt.encode(x, &opts).ok() != Some(code) {
                bad("scalar code", format!("{:?}", fmt.encode(x, &opts)));
            }
            let r = reference::round(&fmt, x, &opts, 0);
            if !same(r.value, want) || r.code != Some(code) {
                bad("reference", format!("{:e} {:?}", r.value, r.code));
            }
            if f32_rows.get(at32) == Some(&i) {
                if codes32[at32] != code {
                    bad("f32 code", format!("{:#x}", codes32[at32]));
                }
                if let Some(v) = &vals32 {
                    if !same(v[at32] as f64, want) {
                        bad("f32 value", format!("{:e}", v[at32]));
                    }
                }
                at32 += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows checked; failures:\n{}",
        rows,
        failures.join("\n")
    );
    assert!(rows > 150_000, "only {rows} rows");
}

#[test]
fn decode_csv_every_row() {
    let mut by_fmt: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for r in csv("decode.csv", "format,code,value_bits") {
        by_fmt
            .entry(r[0].clone())
            .or_default()
            .push((hex(&r[1]), hex(&r[2])));
    }
    let mut rows = 0;
    for (f, cases) in &by_fmt {
        let fmt = FloatFormat::parse(f).unwrap();
        let codes: Vec<u64> = cases.iter().map(|c| c.0).collect();
        let vals: Vec<f64> = decode_vec(&fmt, &codes).unwrap();
        let vals32: Option<Vec<f32>> = fmt.fits_f32().then(|| decode_vec(&fmt, &codes).unwrap());
        for (i, &(code, vb)) in cases.iter().enumerate() {
            let want = f64::from_bits(vb);
            assert!(same(fmt.decode(code), want), "{f} {code:#x}");
            assert!(same(vals[i], want), "{f} {code:#x} slice");
            if let Some(v) = &vals32 {
                assert!(same(v[i] as f64, want), "{f} {code:#x} f32");
            }
            rows += 1;
        }
    }
    assert_eq!(rows, 136_714);
}
