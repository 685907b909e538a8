//! The element types the range rules work on: binary32 and binary64, real and complex.
//!
//! [`Real`] is `f32` or `f64`; [`Element`] adds [`Complex32`] and [`Complex64`] (the
//! `num-complex` types that `rustfft` uses, re-exported by [`crate::range`]). [`Wide`]
//! pairs each binary64 type with its binary32 counterpart for [`narrow`](super::narrow).

use rustfft::num_complex::{Complex32, Complex64};
use std::fmt::Debug;
use std::ops::{Add, Mul};

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for super::Complex32 {}
    impl Sealed for super::Complex64 {}
}

/// A value the sums and exponents work on: `f32`, `f64`, [`Complex32`] or [`Complex64`].
///
/// Sealed: the range rules are stated for IEEE binary32 and binary64 only.
pub trait Element:
    Copy + Send + Sync + Debug + PartialEq + Add<Output = Self> + 'static + private::Sealed
{
    /// The real type of the same precision (`f32` for `Complex32`).
    type Real: Real;
    /// `+0` (both parts `+0` for a complex value).
    const ZERO: Self;
    /// The numpy name of the type: `float32`, `float64`, `complex64`, `complex128`.
    const NAME: &'static str;
    /// `re² + im²` (`x²` for a real value), in the value's own precision.
    fn norm_sqr(self) -> Self::Real;
    /// Each part multiplied by the real `f` (one IEEE product per part).
    fn mul_real(self, f: Self::Real) -> Self;
    /// `self × 2^e`, rounded once (exact unless the result leaves the range).
    fn scale(self, e: i32) -> Self;
    /// The largest magnitude in `values` as binary64 (`|z|` is `hypot(re, im)`), `0` for an
    /// empty slice, and not finite if any value is not finite.
    fn max_magnitude(values: &[Self]) -> f64;
}

/// A real element, `f32` or `f64`.
pub trait Real: Element<Real = Self> + PartialOrd + Mul<Output = Self> {
    /// The largest power of two the type holds, `2^MAX_EXP`.
    const MAX_EXP: i32;
    /// The smallest power of two the type holds (its smallest subnormal), `2^MIN_SUB_EXP`.
    const MIN_SUB_EXP: i32;
    /// The unit roundoff `2^-p` (`2^-24` for binary32).
    const UNIT_ROUNDOFF: f64;
    /// `1`.
    const ONE: Self;
    /// The value as binary64 (exact).
    fn to_f64(self) -> f64;
    /// A binary64 value rounded once to this type (nearest, ties to even).
    fn from_f64(x: f64) -> Self;
    /// `2^e` exactly, for `MIN_SUB_EXP ≤ e ≤ MAX_EXP`.
    fn pow2(e: i32) -> Self;
}

/// Two factors `(a, b)` with `x * a * b` equal to `x × 2^e` rounded once for every finite
/// `x` (the first product is exact whenever the result is in range), or `None` where `e`
/// needs [`Element::scale`] element by element.
pub(crate) fn pow2_pair<R: Real>(e: i32) -> Option<(R, R)> {
    if (R::MIN_SUB_EXP..=R::MAX_EXP).contains(&e) {
        Some((R::pow2(e), R::ONE))
    } else if e > R::MAX_EXP && e - R::MAX_EXP <= R::MAX_EXP {
        Some((R::pow2(R::MAX_EXP), R::pow2(e - R::MAX_EXP)))
    } else {
        None
    }
}

/// A binary64 type with a binary32 counterpart: `f64` → `f32`, `Complex64` → `Complex32`.
pub trait Wide: Element<Real = f64> {
    /// The binary32 type.
    type Narrow: Element<Real = f32>;
    /// Rounded once to binary32 (each part).
    fn narrow(self) -> Self::Narrow;
    /// Widened exactly to binary64.
    fn widen(n: Self::Narrow) -> Self;
}

macro_rules! real {
    ($t:ty, $bits:ty, $name:literal, $max:expr, $minsub:expr, $p:expr, $ebits:expr) => {
        impl Element for $t {
            type Real = $t;
            const ZERO: Self = 0.0;
            const NAME: &'static str = $name;
            #[inline(always)]
            fn norm_sqr(self) -> Self {
                self * self
            }
            #[inline(always)]
            fn mul_real(self, f: Self) -> Self {
                self * f
            }
            fn scale(self, e: i32) -> Self {
                // musl's scalbn: at most three products, the last the only inexact one,
                // and no double rounding in the subnormal range.
                let mut y = self;
                let mut n = e;
                if n > $max {
                    y *= Self::pow2($max);
                    n -= $max;
                    if n > $max {
                        y *= Self::pow2($max);
                        n = (n - $max).min($max);
                    }
                } else if n < 1 - $max {
                    let step = -($max - 1) + $p;
                    y *= Self::pow2(step);
                    n -= step;
                    if n < 1 - $max {
                        y *= Self::pow2(step);
                        n = (n - step).max(1 - $max);
                    }
                }
                y * Self::pow2(n)
            }
            #[inline(always)]
            fn max_magnitude(values: &[Self]) -> f64 {
                Self::from_bits(crate::block::max_abs_bits(values)) as f64
            }
        }

        impl Real for $t {
            const MAX_EXP: i32 = $max;
            const MIN_SUB_EXP: i32 = $minsub;
            const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << $p) as f64;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as Self
            }
            fn pow2(e: i32) -> Self {
                debug_assert!(($minsub..=$max).contains(&e), "2^{e} is not a {}", $name);
                let bias = $max;
                if e >= 1 - bias {
                    Self::from_bits(((e + bias) as $bits) << ($ebits))
                } else {
                    Self::from_bits((1 as $bits) << (e - $minsub))
                }
            }
        }
    };
}

real!(f32, u32, "float32", 127, -149, 24, 23);
real!(f64, u64, "float64", 1023, -1074, 53, 52);

macro_rules! complex {
    ($t:ty, $r:ty, $name:literal) => {
        impl Element for $t {
            type Real = $r;
            const ZERO: Self = <$t>::new(0.0, 0.0);
            const NAME: &'static str = $name;
            #[inline(always)]
            fn norm_sqr(self) -> $r {
                self.re * self.re + self.im * self.im
            }
            #[inline(always)]
            fn mul_real(self, f: $r) -> Self {
                <$t>::new(self.re * f, self.im * f)
            }
            fn scale(self, e: i32) -> Self {
                <$t>::new(self.re.scale(e), self.im.scale(e))
            }
            #[inline(always)]
            fn max_magnitude(values: &[Self]) -> f64 {
                values.iter().fold(0.0, |m: f64, z| {
                    let mut a = (z.re as f64).hypot(z.im as f64);
                    if a.is_infinite() && z.re.is_finite() && z.im.is_finite() {
                        a = f64::MAX; // |z| just above binary64's largest: counted as it
                    }
                    if a > m || a.is_nan() {
                        a
                    } else {
                        m
                    }
                })
            }
        }
    };
}

complex!(Complex32, f32, "complex64");
complex!(Complex64, f64, "complex128");

impl Wide for f64 {
    type Narrow = f32;
    #[inline(always)]
    fn narrow(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn widen(n: f32) -> f64 {
        n as f64
    }
}

impl Wide for Complex64 {
    type Narrow = Complex32;
    #[inline(always)]
    fn narrow(self) -> Complex32 {
        Complex32::new(self.re as f32, self.im as f32)
    }
    #[inline(always)]
    fn widen(n: Complex32) -> Complex64 {
        Complex64::new(n.re as f64, n.im as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_is_ldexp() {
        for &(x, e) in &[
            (1.5f64, -1074),
            (3.0, -1075),
            (1.0, 1023),
            (0.75, 1024),
            (5e-324, 1074),
        ] {
            let want = x * 2f64.powi(e.clamp(-1022, 1023)) * 2f64.powi(e - e.clamp(-1022, 1023));
            assert_eq!(x.scale(e), want, "{x} {e}");
        }
        assert_eq!(1.0f32.scale(-149), f32::from_bits(1));
        assert_eq!(f32::from_bits(1).scale(149), 1.0);
        assert_eq!(f32::pow2(-127), f32::from_bits(1 << 22));
        assert_eq!(f64::pow2(-1074), f64::from_bits(1));
        let (a, b) = pow2_pair::<f32>(149).unwrap();
        assert_eq!(f32::from_bits(1) * a * b, 1.0);
        assert!(pow2_pair::<f32>(-150).is_none());
    }
}
