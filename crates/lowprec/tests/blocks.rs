//! Block scaling against the golden vectors: every row of `mx.csv` (OCP MX, six element
//! types) and `nvfp4.csv` (the seed's NVFP4), binary32 and binary64 inputs: values, element
//! codes and scale codes.

mod common;

use common::{csv, hex, same};
use lowprec::block::mx::{mx_dequantize_into, mx_quantize, MxElement, MxOptions};
use std::collections::BTreeMap;

#[test]
fn mx_csv_every_row() {
    let mut cases: BTreeMap<String, (String, Vec<Vec<String>>)> = BTreeMap::new();
    for r in csv(
        "mx.csv",
        "case_id,elem,index,input_bits,output_bits,scale_exponent,elem_code",
    ) {
        cases
            .entry(r[0].clone())
            .or_insert_with(|| (r[1].clone(), Vec::new()))
            .1
            .push(r);
    }
    let mut rows = 0;
    for (id, (elem, rs)) in &cases {
        let opts = MxOptions::new(MxElement::parse(elem).unwrap());
        let x64: Vec<f64> = rs.iter().map(|r| f64::from_bits(hex(&r[3]))).collect();
        let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        assert!(x32.iter().zip(&x64).all(|(a, b)| *a as f64 == *b));
        let q64 = mx_quantize(&x64, x64.len(), &opts).unwrap();
        let q32 = mx_quantize(&x32, x32.len(), &opts).unwrap();
        let scale: i32 = rs[0][5].parse().unwrap();
        assert_eq!(q64.scales, [(scale + 127) as u8], "{id}: scale");
        assert_eq!(q32.scales, q64.scales, "{id}: f32 scale");
        let mut back = vec![0f64; x64.len()];
        mx_dequantize_into(&q64.codes, &q64.scales, x64.len(), &opts, &mut back).unwrap();
        for (i, r) in rs.iter().enumerate() {
            let want = f64::from_bits(hex(&r[4]));
            let code = hex(&r[6]) as u8;
            assert!(
                same(q64.values[i], want),
                "{id}[{i}]: value {} want {want}",
                q64.values[i]
            );
            assert!(
                same(q32.values[i] as f64, want),
                "{id}[{i}]: f32 value {}",
                q32.values[i]
            );
            assert_eq!(q64.codes[i], code, "{id}[{i}]: code");
            assert_eq!(q32.codes[i], code, "{id}[{i}]: f32 code");
            assert!(same(back[i], want), "{id}[{i}]: dequantized");
            rows += 1;
        }
    }
    assert_eq!(rows, 4992);
}

#[test]
fn nvfp4_csv_every_row() {
    use lowprec::block::nvfp4::{nvfp4_dequantize_into, nvfp4_quantize, Nvfp4Options};
    let mut cases: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    for r in csv(
        "nvfp4.csv",
        "case_id,index,input_bits,output_bits,elem_code,block_scale_code,tensor_scale_bits",
    ) {
        cases.entry(r[0].clone()).or_default().push(r);
    }
    let opts = Nvfp4Options::default();
    let mut rows = 0;
    for (id, rs) in &cases {
        let x64: Vec<f64> = rs.iter().map(|r| f64::from_bits(hex(&r[2]))).collect();
        let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        let n = x64.len();
        let q64 = nvfp4_quantize(&x64, n, &opts).unwrap();
        let q32 = nvfp4_quantize(&x32, n, &opts).unwrap();
        let g = f64::from_bits(hex(&rs[0][6]));
        assert!(
            same(q64.tensor_scale as f64, g),
            "{id}: g {} want {g}",
            q64.tensor_scale
        );
        assert_eq!(q32.tensor_scale, q64.tensor_scale, "{id}: f32 g");
        let mut back = vec![0f64; n];
        nvfp4_dequantize_into(&q64.codes, &q64.scales, q64.tensor_scale, n, &mut back).unwrap();
        for (i, r) in rs.iter().enumerate() {
            let want = f64::from_bits(hex(&r[3]));
            assert!(
                same(q64.values[i], want),
                "{id}[{i}]: value {:e} want {want:e}",
                q64.values[i]
            );
            assert!(
                same(q32.values[i] as f64, (want as f32) as f64),
                "{id}[{i}]: f32 value"
            );
            assert!(same(back[i], want), "{id}[{i}]: dequantized {:e}", back[i]);
            assert_eq!(q64.codes[i] as u64, hex(&r[4]), "{id}[{i}]: elem code");
            assert_eq!(q32.codes[i], q64.codes[i], "{id}[{i}]: f32 elem code");
            assert_eq!(
                q64.scales[i / 16] as u64,
                hex(&r[5]),
                "{id}[{i}]: block scale code"
            );
            rows += 1;
        }
    }
    assert_eq!(rows, 1072);
}

/// Normal(0, 1)-ish data scaled per row over many binades, with ±0, NaN and ±Inf sprinkled
/// in (for MX), deterministic.
fn wide_data(n: usize, row: usize, specials: bool, seed: u64) -> Vec<f64> {
    let mut rng = common::Rng(seed);
    let mut next = move || rng.next_u64();
    (0..n)
        .map(|i| {
            let r = next();
            let u = ((r >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0;
            let scale = 2f64.powi(((i / row) % 60) as i32 - 30);
            match r % 97 {
                0 => -0.0,
                1 if specials => [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][(r % 3) as usize],
                2 => 0.0,
                _ => u * u * u * scale * 7.0,
            }
        })
        .collect()
}

/// The codes-only entry points give exactly the codes, scales and counts of the full
/// conversion: every MX element type, rules, padded and whole rows, both input types, and
/// both NVFP4 conventions.
#[test]
fn codes_only_equal_the_full_conversion() {
    use lowprec::block::mx::{mx_encode_into, mx_quantize_into, shared_exponent, ScaleRule};
    use lowprec::block::nvfp4::{nvfp4_encode_into, nvfp4_quantize_into, Convention, Nvfp4Options};
    // with NaN and ±Inf (their blocks take the general rules), and without (the one-pass
    // kernel of binary32 codes in blocks of 32 takes the whole of such rows)
    for (row, n, specials) in [
        (4096usize, 1 << 17, true),
        (96, 96 * 700, true),
        (100, 100 * 640, true),
        (4096, 1 << 17, false),
        (96, 96 * 700, false),
    ] {
        let x = wide_data(n, row, specials, row as u64);
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        for elem in [
            "fp8-e4m3", "fp8-e5m2", "fp6-e3m2", "fp6-e2m3", "fp4-e2m1", "int8", "e4m3fnuz",
        ] {
            for rule in [
                ScaleRule::Floor,
                ScaleRule::Ceil,
                ScaleRule::Even,
                ScaleRule::Rceil,
            ] {
                let mut o = MxOptions::new(MxElement::parse(elem).unwrap());
                o.scale = rule;
                o.pad = true;
                let nb = n / row * o.blocks_per_row(row);
                let (mut v, mut c1, mut s1) = (vec![0f32; n], vec![0u8; n], vec![0u8; nb]);
                let (mut c2, mut s2) = (vec![0u8; n], vec![0u8; nb]);
                let st1 = mx_quantize_into(&x32, row, &o, &mut v, &mut c1, &mut s1).unwrap();
                let st2 = mx_encode_into(&x32, row, &o, &mut c2, &mut s2).unwrap();
                assert_eq!(
                    (&c1, &s1, st1),
                    (&c2, &s2, st2),
                    "{elem} {rule:?} row {row}"
                );
                // each finite nonzero block's scale against the rule's binary64 definition
                let bpr = o.blocks_per_row(row);
                for (k, &code) in s2.iter().enumerate() {
                    let start = (k / bpr) * row + (k % bpr) * 32;
                    let end = (start + 32).min((k / bpr + 1) * row);
                    let amax = x32[start..end]
                        .iter()
                        .fold(0f64, |m, &v| m.max((v as f64).abs()));
                    if amax > 0.0 && amax.is_finite() && x32[start..end].iter().all(|v| !v.is_nan())
                    {
                        let (e, _) = shared_exponent(amax, &o.element, rule);
                        assert_eq!(code, (e + 127) as u8, "{elem} {rule:?} row {row} block {k}");
                    }
                }
                // blocks of 8, 16 and 64 (the byte kernel's other factor layouts)
                for block in [8, 16, 64] {
                    let mut o = o;
                    o.block = block;
                    let nb = n / row * o.blocks_per_row(row);
                    let (mut s1, mut s2) = (vec![0u8; nb], vec![0u8; nb]);
                    let st1 = mx_quantize_into(&x32, row, &o, &mut v, &mut c1, &mut s1).unwrap();
                    let st2 = mx_encode_into(&x32, row, &o, &mut c2, &mut s2).unwrap();
                    assert_eq!(
                        (&c1, &s1, st1),
                        (&c2, &s2, st2),
                        "{elem} {rule:?} row {row} block {block}"
                    );
                }
                let mut v64 = vec![0f64; n];
                let st1 = mx_quantize_into(&x, row, &o, &mut v64, &mut c1, &mut s1).unwrap();
                let st2 = mx_encode_into(&x, row, &o, &mut c2, &mut s2).unwrap();
                assert_eq!(
                    (&c1, &s1, st1),
                    (&c2, &s2, st2),
                    "{elem} {rule:?} row {row} f64"
                );
            }
        }
        let x = wide_data(n, row, false, row as u64 + 1);
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        for conv in [Convention::Seed, Convention::Torchao] {
            let o = Nvfp4Options {
                convention: conv,
                pad: true,
            };
            let nb = n / row * row.div_ceil(16);
            let (mut v, mut c1, mut s1) = (vec![0f32; n], vec![0u8; n], vec![0u8; nb]);
            let (mut c2, mut s2) = (vec![0u8; n], vec![0u8; nb]);
            let r1 = nvfp4_quantize_into(&x32, row, &o, &mut v, &mut c1, &mut s1).unwrap();
            let r2 = nvfp4_encode_into(&x32, row, &o, &mut c2, &mut s2).unwrap();
            assert_eq!((&c1, &s1, r1), (&c2, &s2, r2), "nvfp4 {conv:?} row {row}");
        }
    }
}
