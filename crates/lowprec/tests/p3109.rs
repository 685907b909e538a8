//! The IEEE P3109 formats against the working group's own value tables (K = 8, every
//! precision, signed and unsigned, extended and finite: `shared/vectors/p3109/`), and the
//! cast kernels' encoding of every value back to its code.

mod common;

use lowprec::exact::Exact;
use lowprec::{FloatFormat, Overflow, RoundOptions, RoundingMode};

fn tables() -> Vec<(String, Vec<Vec<String>>)> {
    let dir = common::vectors_dir().join("p3109");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("p3109 vectors")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".csv"))
        .collect();
    names.sort();
    assert_eq!(
        names.len(),
        30,
        "30 K = 8 tables expected in {}",
        dir.display()
    );
    names
        .into_iter()
        .map(|n| {
            let rows = common::csv(&format!("p3109/{n}"), "codepoint,value,subnormal");
            (n.trim_end_matches(".csv").to_string(), rows)
        })
        .collect()
}

#[test]
fn every_row_of_every_k8_table_decodes_to_the_working_groups_value() {
    for (name, rows) in tables() {
        let f = FloatFormat::parse(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(f.bits(), 8, "{name}");
        assert_eq!(f.name(), name.to_lowercase(), "{name} prints its own name");
        assert_eq!(rows.len(), 256, "{name}");
        for row in rows {
            let code = common::hex(&row[0]);
            let got = f.decode(code);
            match row[1].as_str() {
                "NaN" => assert!(got.is_nan(), "{name} {code:#x}: {got}"),
                "Inf" => assert_eq!(got, f64::INFINITY, "{name} {code:#x}"),
                "-Inf" => assert_eq!(got, f64::NEG_INFINITY, "{name} {code:#x}"),
                lit => {
                    let want = Exact::parse(lit).expect("hex float").to_f64();
                    assert_eq!(got.to_bits(), want.to_bits(), "{name} {code:#x}: {lit}");
                }
            }
            let (_, field, _) = f.fields(code);
            let sub = got.is_finite() && got != 0.0 && field == 0;
            assert_eq!(
                sub,
                row[2].trim() == "*",
                "{name} {code:#x}: subnormal column"
            );
        }
    }
}

#[test]
fn every_value_encodes_back_to_its_code_in_every_deterministic_mode() {
    for (name, rows) in tables() {
        let f = FloatFormat::parse(&name).unwrap();
        for mode in RoundingMode::ALL
            .into_iter()
            .filter(|m| *m != RoundingMode::Stochastic)
        {
            for overflow in [Overflow::Ieee, Overflow::Saturate] {
                let opts = RoundOptions {
                    mode,
                    overflow,
                    ..Default::default()
                };
                for row in &rows {
                    let code = common::hex(&row[0]);
                    let v = f.decode(code);
                    if v.is_infinite() && overflow == Overflow::Saturate {
                        continue;
                    }
                    let got = f.encode(v, &opts).unwrap();
                    assert_eq!(got, code, "{name} {mode} {overflow}: {v}");
                    // binary32 inputs take the f32 lanes where the values fit
                    if f.fits_f32() {
                        let got32 = lowprec::encode_vec::<f32, u8>(&f, &[v as f32], &opts)
                            .unwrap()
                            .0[0];
                        assert_eq!(got32 as u64, code, "{name} {mode} {overflow}: f32 {v}");
                    }
                }
            }
        }
    }
}

#[test]
fn p3109_names_cover_every_k_and_p_whose_range_binary64_holds() {
    for k in 3..=16u32 {
        for p in 1..=k {
            for signed in [true, false] {
                for ext in [true, false] {
                    let name = format!(
                        "binary{k}p{p}{}{}",
                        if signed { 's' } else { 'u' },
                        if ext { 'e' } else { 'f' }
                    );
                    let exp_bits = k - p + u32::from(!signed);
                    let r = FloatFormat::parse(&name);
                    if (signed && p == k) || exp_bits > 10 {
                        assert!(r.is_err(), "{name} should be refused");
                        continue;
                    }
                    let f = r.unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(f.bits(), k, "{name}");
                    assert_eq!(f.name(), name, "{name}");
                    assert!(!f.has_negative_zero(), "{name}");
                    let nan = if signed {
                        1u64 << (k - 1)
                    } else {
                        (1u64 << k) - 1
                    };
                    assert_eq!(f.nan_code(false), Some(nan), "{name}");
                    assert_eq!(f.nan_code(true), Some(nan), "{name}");
                    let bias = if signed {
                        1 << (k - p - 1)
                    } else {
                        1 << (k - p)
                    };
                    assert_eq!(f.bias(), bias, "{name}");
                    if ext {
                        let pinf = nan - 1; // 2^(K−1) − 1 signed, 2^K − 2 unsigned
                        assert_eq!(f.decode(pinf), f64::INFINITY, "{name}");
                        if signed {
                            assert_eq!(f.decode((1 << k) - 1), f64::NEG_INFINITY, "{name}");
                        }
                    } else {
                        assert!(!f.has_inf(), "{name}");
                    }
                    // case and separators do not matter
                    assert_eq!(
                        FloatFormat::parse(&name.to_uppercase().replace("P", "_p")).unwrap(),
                        f
                    );
                }
            }
        }
    }
}

#[test]
fn casts_into_p3109_formats_have_one_zero_and_overflow_per_the_table() {
    let f = FloatFormat::BINARY8P3SE;
    let ovf = RoundOptions::default();
    let sat = RoundOptions {
        overflow: Overflow::Saturate,
        ..Default::default()
    };
    assert_eq!(f.encode(-0.0, &ovf).unwrap(), 0);
    assert_eq!(
        f.encode(-1e-30, &ovf).unwrap(),
        0,
        "−tiny rounds to the one zero"
    );
    assert_eq!(f.encode(1e9, &ovf).unwrap(), 0x7f, "+Inf");
    assert_eq!(f.encode(-1e9, &ovf).unwrap(), 0xff, "−Inf");
    assert_eq!(f.encode(1e9, &sat).unwrap(), 0x7e);
    assert_eq!(f.encode(f64::NAN, &ovf).unwrap(), 0x80);
    let fin = FloatFormat::BINARY4P2SF;
    assert_eq!(
        fin.encode(100.0, &ovf).unwrap(),
        0x8,
        "SatNone on a finite format: NaN (D1)"
    );
    assert_eq!(fin.encode(-100.0, &sat).unwrap(), 0xf, "−max");
}
