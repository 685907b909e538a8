//! The fast kernels against the slow exact reference on random inputs: ≥ 10^7 binary32 and
//! ≥ 10^7 binary64 inputs per preset and rounding mode (10^6 for the custom formats), codes,
//! values and the counts of what happened, both overflow policies; plus proptest over
//! arbitrary formats and inputs.

mod common;

use common::{all_formats, inputs_f32, inputs_f64, same};
use lowprec::{
    encode_into, reference, round_into, Float, FloatFormat, Overflow, RoundOptions, RoundingMode,
    Status,
};
use proptest::prelude::*;
use rayon::prelude::*;

const BLOCK: usize = 1 << 16;

/// Compare one block; returns the number of mismatches and the first description.
fn check<I: Float>(f: &FloatFormat, o: &RoundOptions, x: &[I], at: u64) -> (u64, Option<String>) {
    let o = o.index_offset(at);
    let mut codes = vec![0u64; x.len()];
    let enc = encode_into(f, x, &mut codes, &o);
    let mut vals = vec![0f64; x.len()];
    let st = round_into(f, x, &mut vals, &o).unwrap();
    let mut want = Status::default();
    let mut bad = 0;
    let mut first = None;
    for (i, xi) in x.iter().enumerate() {
        let r = reference::round(f, xi.to_f64(), &o, i as u64);
        want += r.status;
        let code_ok = match (&enc, r.code) {
            (Ok(_), Some(c)) => codes[i] == c,
            (Err(_), None) => true,
            (Ok(_), None) => false,
            (Err(_), Some(_)) => true, // another element made the call fail: checked below
        };
        if !(same(vals[i], r.value) && code_ok) {
            bad += 1;
            first.get_or_insert_with(|| {
                format!(
                    "{f} {} {}: x = {:e} ({:#x}): kernel {:e} / {:#x}, reference {:e} / {:?}",
                    o.mode,
                    o.overflow,
                    xi.to_f64(),
                    xi.to_f64().to_bits(),
                    vals[i],
                    codes[i],
                    r.value,
                    r.code
                )
            });
        }
    }
    let any_nan_uncodable = x.iter().any(|v| v.to_f64().is_nan()) && !f.has_nan();
    if enc.is_err() != any_nan_uncodable {
        bad += 1;
        first.get_or_insert_with(|| {
            format!(
                "{f}: encode error {:?} but uncodable NaN {any_nan_uncodable}",
                enc.err()
            )
        });
    }
    if st != want {
        bad += 1;
        first.get_or_insert_with(|| {
            format!(
                "{f} {} {}: status {st:?}, reference {want:?}",
                o.mode, o.overflow
            )
        });
    }
    (bad, first)
}

fn run_format(f: &FloatFormat, n: usize) {
    for mode in RoundingMode::ALL {
        for ov in [Overflow::Ieee, Overflow::Saturate] {
            // the second policy on a tenth of the inputs (they only differ beyond max)
            let n = if ov == Overflow::Ieee { n } else { n / 10 };
            let o = RoundOptions::new(mode).overflow(ov).seed(0xabc);
            let seed = (mode as u64) << 8 | ov as u64;
            let blocks = n.div_ceil(BLOCK);
            let (bad, first) = (0..blocks)
                .into_par_iter()
                .map(|b| {
                    let s = seed * 1_000_003 + b as u64;
                    let x64 = inputs_f64(f, BLOCK, s);
                    let x32 = inputs_f32(f, BLOCK, s);
                    let (b1, f1) = check(f, &o, &x64, (b * BLOCK) as u64);
                    let (b2, f2) = check(f, &o, &x32, (b * BLOCK) as u64);
                    (b1 + b2, f1.or(f2))
                })
                .reduce(|| (0, None), |a, b| (a.0 + b.0, a.1.or(b.1)));
            assert_eq!(
                bad,
                0,
                "{} mismatches; first: {}",
                bad,
                first.unwrap_or_default()
            );
        }
    }
}

#[test]
fn presets_ten_million_inputs_per_mode_and_type() {
    for p in lowprec::format::PRESETS {
        run_format(&p.format, 10_000_000);
    }
}

#[test]
fn custom_formats_a_million_inputs_per_mode_and_type() {
    for f in all_formats().iter().skip(lowprec::format::PRESETS.len()) {
        run_format(f, 1_000_000);
    }
}

fn any_format() -> impl Strategy<Value = FloatFormat> {
    (
        1u32..=11,
        0u32..=52,
        -40i32..=1100,
        0u8..4,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_filter_map("valid format", |(e, m, bias, sp, signed, zero)| {
            let specials = [
                lowprec::Specials::Ieee,
                lowprec::Specials::Fn,
                lowprec::Specials::Fnuz,
                lowprec::Specials::None,
            ][sp as usize];
            let bias = bias.min((1 << e) + 2).max(-(1 << e));
            FloatFormat::new(e, m, bias, specials, signed, zero).ok()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { max_local_rejects: 1_000_000, ..ProptestConfig::with_cases(30_000) })]
    #[test]
    fn any_format_any_input_matches_the_reference(
        f in any_format(),
        bits in any::<u64>(),
        scale in -1100i32..1100,
        mode in 0usize..7,
        sat in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let o = RoundOptions::new(RoundingMode::ALL[mode])
            .overflow(if sat { Overflow::Saturate } else { Overflow::Ieee })
            .seed(seed);
        // a random significand at a random scale, and the raw bit pattern
        let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
        let x = m * lowprec::format::pow2(scale.clamp(-1074, 1023)) * if bits >> 63 == 1 { -1.0 } else { 1.0 };
        for x in [x, f64::from_bits(bits), x as f32 as f64] {
            let (bad, first) = check(&f, &o, &[x, x as f32 as f64], 7);
            prop_assert_eq!(bad, 0, "{}", first.unwrap_or_default());
            if f.man_bits() <= 23 {
                let (bad, first) = check(&f, &o, &[x as f32], 7);
                prop_assert_eq!(bad, 0, "{}", first.unwrap_or_default());
            }
        }
    }
}
