//! Block exponents and narrowing (seed §4.3, rules 1 and 2): [`block_exponent`],
//! [`narrow`] into an immutable [`Narrowed`] buffer, and the state's exact power-of-two
//! scale, [`state_scale`].
//!
//! A binary64 buffer narrowed to binary32 is stored as `values × 2^-e`, with `e` chosen so
//! that its largest magnitude lands in `[1, 2)`: the narrowed values are the buffer rounded
//! once, with no range lost for entries within `2^-126` of the largest, whatever the
//! buffer's units. The exponent stays a host integer and is folded into the binary64
//! coefficient the buffer is multiplied by ([`combine`](super::combine)), never applied to
//! the binary32 values.
//!
//! ```
//! use lowprec::range::{block_exponent, narrow, state_scale};
//!
//! let e: Vec<i32> = [1.0, 3.0, 0.25, 0.0].iter().map(|&x| block_exponent(&[x]).unwrap()).collect();
//! assert_eq!(e, [0, 1, -2, 0]);
//!
//! let kernel = narrow(&[5.2e-50, 1.0e-50])?;
//! assert_eq!(kernel.exponent(), -164);
//! assert!(kernel.values().iter().all(|&v| v > 0.0));
//! assert_eq!(kernel.values(), [(5.2e-50 * 2f64.powi(164)) as f32, (1.0e-50 * 2f64.powi(164)) as f32]);
//!
//! assert_eq!((state_scale(3.0e4)?, state_scale(0.0)?), (16384.0, 1.0));
//! # Ok::<(), lowprec::range::RangeError>(())
//! ```

use super::element::{pow2_pair, Element, Real, Wide};
use super::RangeError;
use crate::simd::{dispatch, Kernel};
use rayon::prelude::*;

/// The largest magnitude of a slice, compiled for the widest vector unit.
struct Largest<'a, T>(&'a [T]);

impl<T: Element> Kernel for Largest<'_, T> {
    type Output = f64;
    #[inline(always)]
    fn run(self) -> f64 {
        T::max_magnitude(self.0)
    }
}

/// `⌊log2 |x|⌋` of a finite, non-zero binary64 value, read from its exponent bits (exact for
/// subnormals, where a floating `log2` can be one binade off); `None` for zero or a value
/// that is not finite.
///
/// ```
/// use lowprec::range::exponent_of;
/// assert_eq!(exponent_of(3.0), Some(1));
/// assert_eq!(exponent_of(-0.75), Some(-1));
/// assert_eq!(exponent_of(f64::from_bits(1)), Some(-1074));
/// assert_eq!(exponent_of(f64::from_bits(0x000f_ffff_ffff_ffff)), Some(-1023));
/// assert_eq!(exponent_of(f64::from_bits(0x3fef_ffff_ffff_ffff)), Some(-1)); // 1 − 2^-53
/// assert_eq!((exponent_of(0.0), exponent_of(f64::NAN)), (None, None));
/// ```
pub fn exponent_of(x: f64) -> Option<i32> {
    let bits = x.to_bits() & !(1u64 << 63);
    let biased = (bits >> 52) as i32;
    if bits == 0 || biased == 0x7ff {
        return None;
    }
    if biased == 0 {
        // subnormal: m × 2^-1074 with 1 ≤ m < 2^52
        return Some(63 - bits.leading_zeros() as i32 - 1074);
    }
    Some(biased - 1023)
}

/// The power of two `e` that brings a buffer's largest magnitude into `[1, 2)`, that is
/// `max |values| × 2^-e ∈ [1, 2)`; `0` for an empty or all-zero buffer.
///
/// Real values are compared by their bits (exact); a complex value's magnitude is
/// `hypot(re, im)` in binary64, as numpy's `abs` (rounded once: a magnitude within half an
/// ulp below a power of two counts as that power, and the scaled largest magnitude is then
/// `1 − 2^-53` rather than `1`, which is still in range).
///
/// # Errors
/// [`RangeError::NotFinite`] if the buffer holds a NaN or an infinity.
pub fn block_exponent<T: Element>(values: &[T]) -> Result<i32, RangeError> {
    // The maximum is exact and order-free, so splitting it across threads changes nothing.
    let largest = if values.len() >= super::PARALLEL_THRESHOLD {
        values
            .par_chunks(1 << 16)
            .map(|c| dispatch(Largest(c)))
            .reduce(|| 0.0, |a, b| if a > b || a.is_nan() { a } else { b })
    } else {
        dispatch(Largest(values))
    };
    if !largest.is_finite() {
        return Err(RangeError::NotFinite {
            what: "the buffer".into(),
        });
    }
    Ok(exponent_of(largest).unwrap_or(0))
}

/// A binary64 buffer narrowed to binary32 with its own power-of-two exponent: it stands for
/// `values × 2^exponent`.
///
/// Immutable: the values are read through [`Narrowed::values`] only, so they stay the
/// rounded image of the buffer the exponent was chosen for.
#[derive(Debug, Clone, PartialEq)]
pub struct Narrowed<N> {
    values: Box<[N]>,
    exponent: i32,
}

impl<N: Element> Narrowed<N> {
    /// The scaled binary32 values, largest magnitude in `[1, 2)` (or all zero).
    pub fn values(&self) -> &[N] {
        &self.values
    }

    /// The block exponent: [`block_exponent`] of the binary64 buffer.
    pub fn exponent(&self) -> i32 {
        self.exponent
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The buffer this one stands for, in binary64: `values × 2^exponent`, exactly (every
    /// narrowed value times `2^exponent` is a binary64 number).
    pub fn widened<W: Wide<Narrow = N>>(&self) -> Vec<W> {
        let e = self.exponent;
        match pow2_pair::<f64>(e) {
            Some((a, b)) => self
                .values
                .iter()
                .map(|&v| W::widen(v).mul_real(a).mul_real(b))
                .collect(),
            None => self.values.iter().map(|&v| W::widen(v).scale(e)).collect(),
        }
    }
}

/// Narrow a binary64 buffer (`f64` or `Complex64`) to binary32 with its block exponent.
///
/// Multiplying by `2^-e` is exact in binary64 for every entry that stays above binary64's
/// normal range (and one that does not is far below binary32's smallest subnormal), so the
/// narrowed values are the buffer rounded once.
///
/// # Errors
/// [`RangeError::NotFinite`] if the buffer holds a NaN or an infinity.
pub fn narrow<W: Wide>(values: &[W]) -> Result<Narrowed<W::Narrow>, RangeError> {
    let exponent = block_exponent(values)?;
    let values = match pow2_pair::<f64>(-exponent) {
        Some((a, b)) => values
            .iter()
            .map(|&v| v.mul_real(a).mul_real(b).narrow())
            .collect(),
        None => values
            .iter()
            .map(|&v| v.scale(-exponent).narrow())
            .collect(),
    };
    Ok(Narrowed { values, exponent })
}

/// The exponent `k` of a single-precision run's state scale `s = 2^k`: the launch's peak
/// temporal amplitude over `s` lies in `[1, 2)`; `0` for an identically zero launch.
///
/// # Errors
/// [`RangeError::NotFinite`] if `peak` is NaN or infinite.
pub fn state_exponent(peak: f64) -> Result<i32, RangeError> {
    block_exponent(&[peak])
}

/// The exact power-of-two scale `s = 2^k` of a single-precision run's state (seed §4.3,
/// rule 2): the state is held as `a / s`, with `k` from [`state_exponent`].
///
/// Being a function of the problem (the launch, [`launch_peak`](super::launch_peak)), not
/// of the state at any later time, it is the same for a run, its restarts and its resumes.
/// The sign of `peak` is ignored.
///
/// # Errors
/// [`RangeError::NotFinite`] if `peak` is NaN or infinite.
pub fn state_scale(peak: f64) -> Result<f64, RangeError> {
    Ok(f64::ONE.scale(state_exponent(peak)?))
}
