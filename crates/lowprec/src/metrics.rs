//! Error metrics between an approximation and the exact values (seed §7), in binary64.
//!
//! ```
//! use lowprec::metrics::{rel_error, sqnr_db};
//! let exact = [3.0, 4.0];
//! assert_eq!(rel_error(&[3.0, 4.0], &exact), 0.0);
//! assert!((rel_error(&[3.0, 3.5], &exact) - 0.1).abs() < 1e-15);
//! assert!((sqnr_db(&[3.0, 3.5], &exact) - 20.0).abs() < 1e-12);
//! ```

/// `‖approx − exact‖₂ / ‖exact‖₂`; `inf` when `exact` is all zero (and `approx` is not), 0
/// when both are.
pub fn rel_error(approx: &[f64], exact: &[f64]) -> f64 {
    let (num, den) = sums(approx, exact);
    if den == 0.0 {
        if num == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (num / den).sqrt()
    }
}

/// Signal-to-quantization-noise ratio `20 · log10(‖exact‖ / ‖approx − exact‖)` in dB;
/// `inf` for an exact approximation. About 6 dB per bit.
pub fn sqnr_db(approx: &[f64], exact: &[f64]) -> f64 {
    let r = rel_error(approx, exact);
    if r == 0.0 {
        f64::INFINITY
    } else {
        -20.0 * r.log10()
    }
}

/// `max |approx − exact|` (NaN if any difference is NaN).
pub fn max_abs_error(approx: &[f64], exact: &[f64]) -> f64 {
    approx
        .iter()
        .zip(exact)
        .map(|(a, e)| (a - e).abs())
        .fold(0.0, |m, d| if d > m || d.is_nan() { d } else { m })
}

/// The spacing of `fmt` at `x`: `2^(max(⌊log2 |x|⌋, emin) − m)` (the ulp of the binade that
/// holds `|x|`, the subnormal spacing below the normal range); `NaN` for a non-finite `x`.
///
/// ```
/// use lowprec::{metrics::ulp, FloatFormat};
/// assert_eq!(ulp(&FloatFormat::BF16, 300.0), 2.0);
/// assert_eq!(ulp(&FloatFormat::FP8_E4M3, 0.0), 2f64.powi(-9));
/// ```
pub fn ulp(fmt: &crate::FloatFormat, x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let e = crate::range::exponent_of(x).map_or(fmt.emin(), |e| e.max(fmt.emin()));
    crate::format::pow2(e - fmt.man_bits() as i32)
}

/// `max |approx − exact| / ulp(exact)` in `fmt`'s units in the last place: 0.5 for a correctly
/// rounded result at worst; NaN if any difference or exact value is not finite.
///
/// ```
/// use lowprec::{metrics::max_ulp_error, FloatFormat};
/// assert_eq!(max_ulp_error(&[256.0], &[300.0], &FloatFormat::BF16), 22.0);
/// ```
pub fn max_ulp_error(approx: &[f64], exact: &[f64], fmt: &crate::FloatFormat) -> f64 {
    approx
        .iter()
        .zip(exact)
        .map(|(a, e)| (a - e).abs() / ulp(fmt, *e))
        .fold(0.0, |m, d| if d > m || d.is_nan() { d } else { m })
}

/// `(Σ (a − e)², Σ e²)`, scaled so that neither overflows nor underflows for any finite
/// input (both sums are taken relative to the largest `|e|` and `|a − e|`).
fn sums(approx: &[f64], exact: &[f64]) -> (f64, f64) {
    let de = exact.iter().fold(0f64, |m, e| m.max(e.abs()));
    let dd = approx
        .iter()
        .zip(exact)
        .fold(0f64, |m, (a, e)| m.max((a - e).abs()));
    if dd.is_nan() || de.is_nan() {
        return (f64::NAN, 1.0);
    }
    let s = de.max(dd);
    if s == 0.0 || s.is_infinite() {
        return (
            if dd == 0.0 { 0.0 } else { f64::INFINITY },
            if de == 0.0 { 0.0 } else { 1.0 },
        );
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (a, e) in approx.iter().zip(exact) {
        let d = (a - e) / s;
        let f = e / s;
        num += d * d;
        den += f * f;
    }
    (num, den)
}
