//! Every code of every format of at most 16 bits: decode → encode round trips under every
//! mode and policy, values are monotonic in the code, and probes between neighbours round
//! as each mode's definition says (the value table itself is the oracle).

mod common;

use common::{all_formats, same};
use lowprec::{
    decode_vec, encode_vec, round_vec, FloatFormat, Overflow, RoundOptions, RoundingMode,
};

fn small() -> Vec<FloatFormat> {
    all_formats()
        .into_iter()
        .filter(|f| f.bits() <= 16)
        .collect()
}

#[test]
fn every_code_round_trips_under_every_mode_and_policy() {
    for f in small() {
        let codes: Vec<u64> = (0..=f.max_code()).collect();
        let vals: Vec<f64> = decode_vec(&f, &codes).unwrap();
        for mode in RoundingMode::ALL {
            for ov in [Overflow::Ieee, Overflow::Saturate] {
                let o = RoundOptions::new(mode).overflow(ov).seed(3);
                let finite: Vec<usize> = (0..codes.len())
                    .filter(|&i| {
                        vals[i].is_finite() || (ov == Overflow::Ieee && vals[i].is_infinite())
                    })
                    .collect();
                let xs: Vec<f64> = finite.iter().map(|&i| vals[i]).collect();
                let (back, st) = encode_vec::<f64, u64>(&f, &xs, &o).unwrap();
                let (again, _) = round_vec(&f, &xs, &o).unwrap();
                for (k, &i) in finite.iter().enumerate() {
                    assert_eq!(
                        back[k], codes[i],
                        "{f} {mode} {ov}: code {:#x} ({})",
                        codes[i], vals[i]
                    );
                    assert!(same(again[k], vals[i]), "{f} {mode}: value {}", vals[i]);
                }
                assert_eq!(st.inexact, 0, "{f} {mode} {ov}");
            }
        }
        // NaN codes decode to NaN, and a NaN encodes to the canonical NaN code.
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(v.is_nan(), f.is_nan_code(codes[i]), "{f} {:#x}", codes[i]);
        }
        if let Some(n) = f.nan_code(false) {
            assert_eq!(f.encode(f64::NAN, &RoundOptions::default()).unwrap(), n);
        }
    }
}

#[test]
fn values_are_strictly_monotonic_in_the_code() {
    for f in small() {
        let half = if f.is_signed() {
            f.sign_mask()
        } else {
            f.max_code() + 1
        };
        let mut prev = f64::NEG_INFINITY;
        for c in 0..half {
            let v = f.decode(c);
            if v.is_nan() {
                continue;
            }
            assert!(v > prev || (c == 0), "{f}: code {c:#x} = {v} after {prev}");
            prev = v;
            if f.is_signed() && !f.is_nan_code(c | f.sign_mask()) {
                let n = f.decode(c | f.sign_mask());
                assert!(
                    same(n, -v),
                    "{f}: code {:#x} = {n}, want {}",
                    c | f.sign_mask(),
                    -v
                );
            }
        }
        assert_eq!(
            prev,
            if f.has_inf() {
                f64::INFINITY
            } else {
                f.max_finite()
            },
            "{f}"
        );
    }
}

#[test]
fn probes_between_neighbours_round_by_definition() {
    for f in small() {
        // Sorted non-negative finite values with their codes.
        let half = if f.is_signed() {
            f.sign_mask()
        } else {
            f.max_code() + 1
        };
        let table: Vec<(f64, u64)> = (0..half)
            .map(|c| (f.decode(c), c))
            .filter(|(v, _)| v.is_finite())
            .collect();
        let mut xs = Vec::new();
        let mut want: Vec<[(f64, u64); 2]> = Vec::new(); // (lower, upper) for each probe
        let mut fracs = Vec::new();
        for w in table.windows(2) {
            let ((a, ca), (b, cb)) = (w[0], w[1]);
            for fr in [0.0, 0.3, 0.5, 0.6, 0.9] {
                let x = a + fr * (b - a);
                if x <= a && fr > 0.0 {
                    continue;
                }
                xs.push(x);
                want.push([(a, ca), (b, cb)]);
                fracs.push(fr);
            }
        }
        for mode in RoundingMode::ALL {
            if mode == RoundingMode::Stochastic {
                continue;
            }
            for sign in [1.0, -1.0] {
                if sign < 0.0 && !f.is_signed() {
                    continue;
                }
                let xin: Vec<f64> = xs.iter().map(|x| sign * x).collect();
                let o = RoundOptions::new(mode);
                let (got, _) = round_vec(&f, &xin, &o).unwrap();
                for i in 0..xs.len() {
                    let [(a, ca), (b, cb)] = want[i];
                    let fr = fracs[i];
                    let exact = fr == 0.0;
                    let mag = if exact {
                        a
                    } else {
                        match mode {
                            RoundingMode::NearestEven => {
                                // ties to the even significand; with m = 0 every significand
                                // is 1 (odd), so ties go to the larger power (E8M0)
                                let even_low = if f.man_bits() > 0 {
                                    ca % 2 == 0
                                } else {
                                    a == 0.0
                                };
                                if fr < 0.5 {
                                    a
                                } else if fr > 0.5 || !even_low {
                                    b
                                } else {
                                    a
                                }
                            }
                            RoundingMode::NearestAway => {
                                if fr < 0.5 {
                                    a
                                } else {
                                    b
                                }
                            }
                            RoundingMode::TowardZero => a,
                            RoundingMode::Up => {
                                if sign > 0.0 {
                                    b
                                } else {
                                    a
                                }
                            }
                            RoundingMode::Down => {
                                if sign > 0.0 {
                                    a
                                } else {
                                    b
                                }
                            }
                            RoundingMode::ToOdd => {
                                // odd significand: the odd code, except across a binade of a
                                // format without mantissa bits (m = 0: the lower one)
                                if f.man_bits() == 0 {
                                    if a == 0.0 {
                                        b
                                    } else {
                                        a
                                    }
                                } else if ca % 2 == 1 {
                                    a
                                } else {
                                    b
                                }
                            }
                            RoundingMode::Stochastic => unreachable!(),
                        }
                    };
                    let _ = cb;
                    let mut w = sign * mag;
                    if w == 0.0 && (!f.has_negative_zero()) {
                        w = 0.0;
                    }
                    if !f.has_zero() && mag == 0.0 {
                        continue;
                    }
                    assert!(
                        same(got[i], w),
                        "{f} {mode} x = {} ({fr} of [{a}, {b}]): got {}, want {w}",
                        xin[i],
                        got[i]
                    );
                }
            }
        }
    }
}
