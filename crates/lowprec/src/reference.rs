//! A slow, obviously-correct reference rounding, written independently of the kernels.
//!
//! It follows the definition step by step with exact integers: write `|x| = M · 2^E`
//! (`M` the binary64 integer significand), find the quantum `2^qe` of the target's grid at
//! `|x|` (`qe = max(⌊log2 |x|⌋, emin) − m`), split `|x| / 2^qe` into an integer `N` and a
//! remainder compared exactly with half a quantum, choose `N` or `N + 1` by the mode, and only
//! then look at overflow. The tests and `lowprec verify` hold every fast path to it, bit for
//! bit; it is not meant to be fast.
//!
//! ```
//! use lowprec::{reference, FloatFormat, RoundOptions};
//! let r = reference::round(&FloatFormat::FP8_E4M3, 0.3, &RoundOptions::default(), 0);
//! assert_eq!((r.code, r.value), (Some(0x2a), 0.3125));
//! ```

use crate::format::{pow2, FloatFormat, Specials};
use crate::round::{random_bits, Overflow, RoundOptions, RoundingMode, Status};
use std::cmp::Ordering;

/// The reference result for one input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefResult {
    /// The code, or `None` for a NaN input into a format without NaN.
    pub code: Option<u64>,
    /// The value (NaN for NaN results).
    pub value: f64,
    /// The counts of this one element (each 0 or 1).
    pub status: Status,
}

/// How a result beyond max finite is resolved.
enum Beyond {
    Max,
    Away,
}

fn beyond(mode: RoundingMode, overflow: Overflow, negative: bool, fmt: &FloatFormat) -> Beyond {
    if overflow == Overflow::Saturate || fmt.specials() == Specials::None {
        return Beyond::Max;
    }
    match (mode, negative) {
        (RoundingMode::TowardZero | RoundingMode::ToOdd, _) => Beyond::Max,
        (RoundingMode::Up, true) | (RoundingMode::Down, false) => Beyond::Max,
        _ => Beyond::Away,
    }
}

/// Round `x` into `fmt` under `opts`; `index` is the element's position (stochastic
/// rounding draws [`random_bits`]`(opts.seed, opts.index_offset + index)`).
pub fn round(fmt: &FloatFormat, x: f64, opts: &RoundOptions, index: u64) -> RefResult {
    let negative = x.is_sign_negative();
    let sign = if negative { fmt.sign_mask() } else { 0 };
    let mut st = Status::default();
    let nan_result = |st: Status| RefResult {
        code: fmt.nan_code(negative && fmt.specials() != Specials::Fnuz),
        value: if negative { -f64::NAN } else { f64::NAN },
        status: st,
    };
    let max_result = |st: Status| RefResult {
        code: Some(fmt.max_mag() | sign),
        value: if negative {
            -fmt.max_finite()
        } else {
            fmt.max_finite()
        },
        status: st,
    };
    let away_result = |st: Status| {
        if fmt.has_inf() {
            RefResult {
                code: fmt.inf_code(negative),
                value: if negative {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                },
                status: st,
            }
        } else {
            nan_result(st)
        }
    };

    if x.is_nan() {
        st.nan = 1;
        let mut r = nan_result(st);
        if !fmt.has_nan() {
            r.code = None;
        }
        return r;
    }
    if (!fmt.is_signed() && negative && x != 0.0) || (!fmt.has_zero() && x == 0.0) {
        st.invalid = 1;
        st.inexact = x.is_finite() as u64;
        if x.is_infinite() {
            st.infinite = 1;
        }
        return RefResult {
            code: fmt.nan_code(false),
            value: if negative { -f64::NAN } else { f64::NAN },
            status: st,
        };
    }
    if x.is_infinite() {
        st.infinite = 1;
        let sat = opts.overflow == Overflow::Saturate || fmt.specials() == Specials::None;
        if sat {
            st.saturated = 1;
            return max_result(st);
        }
        return away_result(st);
    }
    if x == 0.0 {
        let keep_sign = fmt.has_negative_zero() && negative;
        return RefResult {
            code: Some(if keep_sign { sign } else { 0 }),
            value: if keep_sign { -0.0 } else { 0.0 },
            status: st,
        };
    }

    // |x| = big_m · 2^big_e exactly.
    let bits = x.to_bits();
    let field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (big_m, big_e) = if field == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), field - 1075)
    };
    let bitlen = 64 - big_m.leading_zeros() as i32;
    let e = big_e + bitlen - 1; // ⌊log2 |x|⌋
    let m = fmt.man_bits() as i32;
    let emin = fmt.emin();
    let qe = e.max(emin) - m;

    // |x| / 2^qe = n + rem / 2^k, 0 ≤ rem < 2^k.
    let (n, rem, k): (u128, u128, i32) = if big_e >= qe {
        ((big_m as u128) << (big_e - qe), 0, 0)
    } else {
        let k = qe - big_e;
        if k >= 120 {
            (0, big_m as u128, k)
        } else {
            (
                (big_m as u128) >> k,
                (big_m as u128) & ((1u128 << k) - 1),
                k,
            )
        }
    };
    // rem < 2^53 < 2^(k−1) when k > 64
    let vs_half = if rem == 0 || k > 64 {
        Ordering::Less
    } else {
        rem.cmp(&(1u128 << (k - 1)))
    };
    let inexact = rem != 0;
    let up = match opts.mode {
        RoundingMode::NearestEven => {
            vs_half == Ordering::Greater || (vs_half == Ordering::Equal && n % 2 == 1)
        }
        RoundingMode::NearestAway => vs_half != Ordering::Less,
        RoundingMode::TowardZero => false,
        RoundingMode::Up => inexact && !negative,
        RoundingMode::Down => inexact && negative,
        RoundingMode::ToOdd => inexact && n % 2 == 0,
        RoundingMode::Stochastic => {
            let r = match opts.sr_bits {
                0 => 32,
                r => r.min(32) as i32,
            };
            // floor(frac · 2^r) with frac = rem / 2^k.
            let f = if k <= r {
                rem << (r - k)
            } else if k - r >= 120 {
                0
            } else {
                rem >> (k - r)
            };
            let rnd =
                (random_bits(opts.seed, opts.index_offset.wrapping_add(index)) >> (32 - r)) as u128;
            f + rnd >= (1u128 << r)
        }
    };
    let n = n + up as u128;
    st.inexact = inexact as u64;
    st.underflow = (inexact && x.abs() < fmt.min_normal()) as u64;

    // The code magnitude with unbounded exponent: the field of the quantum's binade with n
    // on top (subnormals sit in field 0 with n < 2^m; an n that carried to 2^(m+1) moves
    // into the next field by the addition). qe ≥ emin − m, so the field is not negative.
    // Formats without zero number their fields from 2^emin, one lower, and round anything
    // below it up to it (code 0).
    let unbounded = (((qe + m - emin) as u128) << m) + n;
    let mag = if fmt.has_zero() {
        unbounded
    } else {
        unbounded.saturating_sub(1 << m)
    };
    if mag > u128::from(fmt.max_mag()) {
        st.inexact = 1;
        st.overflow = 1;
        return match beyond(opts.mode, opts.overflow, negative, fmt) {
            Beyond::Max => {
                st.saturated = 1;
                max_result(st)
            }
            Beyond::Away => away_result(st),
        };
    }
    // The value n · 2^qe (n ≤ 2^(m+1) ≤ 2^53: exact as u64 and as f64).
    let v = if !fmt.has_zero() && mag == 0 {
        fmt.min_normal() // no zero, no subnormals: the smallest value
    } else {
        n as u64 as f64 * pow2(-m) * pow2(qe + m)
    };
    if v == 0.0 {
        st.flushed = 1;
        let keep_sign = fmt.has_negative_zero() && negative;
        return RefResult {
            code: Some(if keep_sign { sign } else { 0 }),
            value: if keep_sign { -0.0 } else { 0.0 },
            status: st,
        };
    }
    let mag = mag as u64;
    RefResult {
        code: Some(mag | sign),
        value: if negative { -v } else { v },
        status: st,
    }
}
