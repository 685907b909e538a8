//! Scalar factors combined on the host (seed §4.3, rule 3): [`Coefficient`] and
//! [`combine`].
//!
//! A density, an amplitude, a prefactor's constant, powers of the state scale and the
//! buffers' block exponents are combined in binary64 into one coefficient per product,
//! kept as a mantissa in `[0.5, 1)` (or zero) and a separate integer exponent, so the
//! combination itself cannot leave binary64's range whatever the exponents: a density of
//! `2.5e25` times a kernel exponent of `-164` never forms `2.5e25 × 2^-164` on the way.
//!
//! ```
//! use lowprec::range::combine;
//!
//! let c = combine(&[2.5e25, 8.854e-12], -164)?;
//! assert!((c.value()? - 2.5e25 * 8.854e-12 * 2f64.powi(-164)).abs() < 1e-60);
//! assert!((0.5..1.0).contains(&c.mantissa()));
//! assert_eq!(c.binary32()?, (2.5e25 * 8.854e-12 * 2f64.powi(-164)) as f32); // 9.5e-36
//! let tiny = combine(&[1e-30, 1e-30], 0)?;
//! assert!(tiny.value()? > 0.0 && tiny.binary32().is_err()); // 1e-60 is below binary32
//! let big = combine(&[1e300, 1e300], -1000)?; // 1e600 × 2^-1000 ≈ 9.3e298
//! assert!((big.value()? / (1e300 * (1e300 * 2f64.powi(-1000))) - 1.0).abs() < 1e-15);
//! assert!(combine(&[1e300, 1e300], 0)?.value().is_err());
//! # Ok::<(), lowprec::range::RangeError>(())
//! ```

use super::element::Element;
use super::exponent::exponent_of;
use super::RangeError;

/// A scalar factor as a binary64 mantissa and a power of two: `mantissa × 2^exponent`.
///
/// The mantissa is `0` (then the exponent is `0` too) or of magnitude in `[0.5, 1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coefficient {
    mantissa: f64,
    exponent: i64,
}

/// `(m, p)` with `x = m × 2^p`, `|m| ∈ [0.5, 1)`, for finite non-zero `x` (C's `frexp`, from
/// the bits, exact for subnormals).
pub fn frexp(x: f64) -> (f64, i32) {
    match exponent_of(x) {
        None => (x, 0),
        Some(e) => (x.scale(-e - 1), e + 1),
    }
}

impl Coefficient {
    /// Zero.
    pub const ZERO: Coefficient = Coefficient {
        mantissa: 0.0,
        exponent: 0,
    };

    /// One, `0.5 × 2^1`.
    pub const ONE: Coefficient = Coefficient {
        mantissa: 0.5,
        exponent: 1,
    };

    /// The binary64 mantissa, `0` or of magnitude in `[0.5, 1)`.
    pub fn mantissa(self) -> f64 {
        self.mantissa
    }

    /// The power of two it multiplies.
    pub fn exponent(self) -> i64 {
        self.exponent
    }

    /// The coefficient as one binary64 number, `mantissa × 2^exponent` (rounded once into
    /// the subnormal range, `0` below it).
    ///
    /// # Errors
    /// [`RangeError::Binary64Overflow`] if it is beyond binary64's largest finite value.
    pub fn value(self) -> Result<f64, RangeError> {
        if self.mantissa == 0.0 {
            return Ok(0.0);
        }
        if self.exponent > 1024 {
            return Err(RangeError::Binary64Overflow {
                exponent: self.exponent,
            });
        }
        // Below -1100 the value is 0 (or -0) whatever the mantissa.
        let e = self.exponent.max(-1100) as i32;
        let v = self.mantissa.scale(e);
        if v.is_infinite() {
            return Err(RangeError::Binary64Overflow {
                exponent: self.exponent,
            });
        }
        Ok(v)
    }

    /// The coefficient rounded once to binary32.
    ///
    /// # Errors
    /// [`RangeError::Binary64Overflow`] as [`Coefficient::value`], and
    /// [`RangeError::Binary32Range`] if the result is not a finite normal binary32 number
    /// (or zero): it would overflow or lose its precision, so the pass that applies it has
    /// not kept its intermediates in range.
    pub fn binary32(self) -> Result<f32, RangeError> {
        let value = self.value()?;
        let narrowed = value as f32;
        if !narrowed.is_finite() || (value != 0.0 && narrowed.abs() < f32::MIN_POSITIVE) {
            return Err(RangeError::Binary32Range { value });
        }
        Ok(narrowed)
    }

    /// `(mantissa × other.mantissa, exponent + other.exponent)`, normalised: the product,
    /// still without forming an out-of-range value.
    pub fn times(self, other: Coefficient) -> Coefficient {
        normalise(
            self.mantissa * other.mantissa,
            self.exponent + other.exponent,
        )
    }
}

fn normalise(mantissa: f64, exponent: i64) -> Coefficient {
    if mantissa == 0.0 {
        return Coefficient::ZERO;
    }
    let (m, p) = frexp(mantissa);
    Coefficient {
        mantissa: m,
        exponent: exponent + i64::from(p),
    }
}

/// Combine finite binary64 factors and a power of two `2^exponent` (a buffer's block
/// exponent, a power of the state scale's exponent) in binary64.
///
/// Each factor is split into its mantissa and exponent first, so the running product of the
/// mantissas stays in `[0.25, 1)` before each renormalisation and the exponents add as
/// integers. One rounding per factor after the first, as the seed; a zero factor gives
/// [`Coefficient::ZERO`].
///
/// # Errors
/// [`RangeError::NotFinite`] if a factor is NaN or infinite.
pub fn combine(factors: &[f64], exponent: i32) -> Result<Coefficient, RangeError> {
    if let Some(i) = factors.iter().position(|f| !f.is_finite()) {
        return Err(RangeError::NotFinite {
            what: format!("factor {i} ({}) of the coefficient", factors[i]),
        });
    }
    let mut c = normalise(1.0, i64::from(exponent));
    for &factor in factors {
        let (m, p) = frexp(factor);
        c = normalise(c.mantissa * m, c.exponent + i64::from(p));
        if c.mantissa == 0.0 {
            return Ok(Coefficient::ZERO);
        }
    }
    Ok(c)
}
