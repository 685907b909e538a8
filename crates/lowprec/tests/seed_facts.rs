//! The seed `numfmt.py`'s self-test facts about formats, as Rust tests, and agreement with
//! independent implementations of binary16/bfloat16 conversion (the `half` crate, hardware
//! `f64 → f32` casts, and the classic bfloat16 bit trick).

mod common;

use common::{inputs_f32, Rng};
use lowprec::{encode_vec, round_vec, FloatFormat, RoundOptions};

#[test]
fn spec_table_numbers() {
    let max = [
        ("fp32", 3.4028234663852886e38),
        ("fp16", 65504.0),
        ("bf16", 3.3895313892515355e38),
        ("fp8-e4m3", 448.0),
        ("fp8-e5m2", 57344.0),
        ("fp6-e3m2", 28.0),
        ("fp6-e2m3", 7.5),
        ("fp4-e2m1", 6.0),
        ("fp8-e4m3fnuz", 240.0),
        ("fp8-e5m2fnuz", 57344.0),
        ("e8m0", 2f64.powi(127)),
        ("ue4m3", 448.0),
        ("tf32", 3.4011621342146535e38),
    ];
    for (name, m) in max {
        assert_eq!(FloatFormat::parse(name).unwrap().max_finite(), m, "{name}");
    }
    assert_eq!(FloatFormat::FP8_E4M3.min_subnormal(), Some(2f64.powi(-9)));
    assert_eq!(FloatFormat::FP8_E5M2.min_subnormal(), Some(2f64.powi(-16)));
    assert_eq!(FloatFormat::FP4_E2M1.min_subnormal(), Some(0.5));
    assert_eq!(FloatFormat::FP6_E3M2.min_subnormal(), Some(0.0625));
    assert_eq!(FloatFormat::FP6_E2M3.min_subnormal(), Some(0.125));
    assert_eq!(FloatFormat::E8M0.min_subnormal(), None);
    let mut v: Vec<f64> = FloatFormat::FP4_E2M1
        .all_values()
        .unwrap()
        .iter()
        .map(|v| v.abs())
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    assert_eq!(v, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    assert_eq!(FloatFormat::FP16.epsilon(), 2f64.powi(-10));
    assert_eq!(FloatFormat::BF16.unit_roundoff(), 2f64.powi(-8));
    assert_eq!(
        (FloatFormat::FP8_E4M3.emin(), FloatFormat::FP8_E4M3.emax()),
        (-6, 8)
    );
}

#[test]
fn names_and_aliases_parse_to_the_presets() {
    for p in lowprec::format::PRESETS {
        assert_eq!(FloatFormat::parse(p.name).unwrap(), p.format);
        assert_eq!(
            FloatFormat::parse(&p.name.to_uppercase()).unwrap(),
            p.format
        );
        assert_eq!(
            FloatFormat::parse(&p.format.spec()).unwrap(),
            p.format,
            "{}",
            p.format.spec()
        );
        for a in p.aliases {
            assert_eq!(FloatFormat::parse(a).unwrap(), p.format, "{a}");
        }
    }
    for (a, b) in [
        ("float8_e4m3fn", "fp8-e4m3"),
        ("bfloat16", "bf16"),
        ("float4_e2m1fn", "fp4-e2m1"),
        ("float8_e5m2fnuz", "fp8-e5m2fnuz"),
        ("float8_e8m0fnu", "e8m0"),
        ("FP8_E4M3", "fp8-e4m3"),
    ] {
        assert_eq!(
            FloatFormat::parse(a).unwrap(),
            FloatFormat::parse(b).unwrap(),
            "{a}"
        );
    }
    let e = FloatFormat::parse("fp7").unwrap_err().to_string();
    assert!(e.contains("fp8-e4m3") && e.contains("e4m3b7:fn"), "{e}");
    assert!(FloatFormat::parse("e4m3:ieee").unwrap() != FloatFormat::FP8_E4M3);
    assert!(FloatFormat::parse("e0m3").is_err());
    assert!(FloatFormat::parse("e4m60").is_err());
}

#[test]
fn fp16_and_bf16_agree_with_the_half_crate() {
    let f16 = FloatFormat::FP16;
    let bf16 = FloatFormat::BF16;
    let mut x = inputs_f32(&f16, 1 << 20, 1);
    x.extend(inputs_f32(&bf16, 1 << 20, 2));
    let mut r = Rng(3);
    x.extend((0..1 << 20).map(|_| f32::from_bits(r.next_u64() as u32)));
    let o = RoundOptions::default();
    let (c16, _) = encode_vec::<f32, u16>(&f16, &x, &o).unwrap();
    let (cb, _) = encode_vec::<f32, u16>(&bf16, &x, &o).unwrap();
    for (i, &v) in x.iter().enumerate() {
        let h = half::f16::from_f32(v);
        let b = half::bf16::from_f32(v);
        if v.is_nan() {
            assert!(f16.is_nan_code(c16[i] as u64) && h.is_nan());
            assert!(bf16.is_nan_code(cb[i] as u64) && b.is_nan());
        } else {
            assert_eq!(c16[i], h.to_bits(), "fp16 of {v:e}");
            assert_eq!(cb[i], b.to_bits(), "bf16 of {v:e}");
        }
    }
}

#[test]
fn fp32_agrees_with_the_hardware_cast() {
    let f = FloatFormat::FP32;
    let mut x = common::inputs_f64(&f, 1 << 20, 5);
    let mut r = Rng(6);
    x.extend((0..50_000).map(|_| r.unit() * 2f64.powi(r.below(260) as i32 - 140)));
    let (c, _) = encode_vec::<f64, u32>(&f, &x, &RoundOptions::default()).unwrap();
    for (i, &v) in x.iter().enumerate() {
        let h = v as f32;
        if v.is_nan() {
            assert!(f.is_nan_code(c[i] as u64));
        } else {
            assert_eq!(c[i], h.to_bits(), "fp32 of {v:e}");
        }
    }
}

#[test]
fn bf16_agrees_with_the_add_0x7fff_bit_trick() {
    let mut r = Rng(8);
    let x: Vec<f32> = (0..200_000)
        .map(|_| {
            let u = r.unit() as f32 * 2.0 - 1.0;
            u * 1000.0
        })
        .collect();
    let (y, _) = round_vec(&FloatFormat::BF16, &x, &RoundOptions::default()).unwrap();
    for (i, &v) in x.iter().enumerate() {
        let u = v.to_bits() as u64;
        let t = (((u + 0x7fff + ((u >> 16) & 1)) >> 16) << 16) as u32;
        assert_eq!(y[i].to_bits(), t, "{v}");
    }
}

#[test]
fn fp8_e4m3_examples_from_the_ocp_spec() {
    let f = FloatFormat::FP8_E4M3;
    let o = RoundOptions::default();
    assert_eq!(f.encode(448.0, &o).unwrap(), 0x7e);
    assert_eq!(f.round(464.0, &o), 448.0); // the tie goes to the even 448
    assert!(f.round(464.0001, &o).is_nan());
    let rna = RoundOptions::new(lowprec::RoundingMode::NearestAway);
    assert!(f.round(464.0, &rna).is_nan());
    assert_eq!(f.decode(0x01), 2f64.powi(-9));
    assert_eq!(f.decode(0x08), 2f64.powi(-6));
}
