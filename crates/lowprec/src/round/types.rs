//! The element types of the slice API: input/output floats ([`Float`]: `f32`, `f64`) and
//! code integers ([`Code`]: `u8`, `u16`, `u32`, `u64`), and the lane word of the kernels.

use std::fmt::Debug;
use std::ops::{Add, BitAnd, BitOr, BitXor, Not, Sub};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The unsigned word a kernel computes in: `u32` for binary32 inputs, `u64` for binary64.
pub trait Word:
    sealed::Sealed
    + Copy
    + Ord
    + Eq
    + Debug
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Not<Output = Self>
    + 'static
{
    /// Width in bits.
    const BITS: u32;
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Truncating conversion.
    fn from_u64(v: u64) -> Self;
    /// Widening conversion.
    fn to_u64(self) -> u64;
    /// 0 or 1.
    fn from_bool(b: bool) -> Self;
    /// Shift left by an amount `< BITS`.
    fn shl(self, n: Self) -> Self;
    /// Shift right by an amount `< BITS`.
    fn shr(self, n: Self) -> Self;
    /// Wrapping addition (for lanes whose result is discarded).
    fn wadd(self, o: Self) -> Self;
    /// Wrapping subtraction (for lanes whose result is discarded).
    fn wsub(self, o: Self) -> Self;
    /// The larger of two words below `2^(BITS−1)` (magnitude bits, exponent fields),
    /// compared as signed integers: AVX2 compares 64-bit lanes only as signed.
    fn max_low(self, o: Self) -> Self;
    /// The smaller of two words below `2^(BITS−1)`, as [`Word::max_low`].
    fn min_low(self, o: Self) -> Self;
    /// `if c { a } else { b }`, written as a select.
    #[inline(always)]
    fn sel(c: bool, a: Self, b: Self) -> Self {
        if c {
            a
        } else {
            b
        }
    }
}

macro_rules! word {
    ($t:ty, $s:ty) => {
        impl Word for $t {
            const BITS: u32 = <$t>::BITS;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                b as $t
            }
            #[inline(always)]
            fn shl(self, n: Self) -> Self {
                self << (n & (<$t>::BITS as $t - 1))
            }
            #[inline(always)]
            fn shr(self, n: Self) -> Self {
                self >> (n & (<$t>::BITS as $t - 1))
            }
            #[inline(always)]
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn wsub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn max_low(self, o: Self) -> Self {
                (self as $s).max(o as $s) as $t
            }
            #[inline(always)]
            fn min_low(self, o: Self) -> Self {
                (self as $s).min(o as $s) as $t
            }
        }
    };
}
word!(u32, i32);
word!(u64, i64);

/// A binary float the slice API reads and writes: `f32` or `f64`.
pub trait Float:
    sealed::Sealed
    + crate::mono::Instances
    + Copy
    + Default
    + PartialEq
    + PartialOrd
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The bits, as the kernels' lane word.
    type Bits: Word;
    /// Stored mantissa width (23, 52).
    const MANT: u32;
    /// Exponent bias (127, 1023).
    const BIAS: u32;
    /// The numpy name (`float32`, `float64`).
    const NAME: &'static str;
    /// The lowprec format of this type.
    const FORMAT: crate::FloatFormat;
    /// The bits.
    fn to_bits(self) -> Self::Bits;
    /// From bits.
    fn from_bits(b: Self::Bits) -> Self;
    /// An integer below `2^53` (`2^24` for `f32`), exactly.
    fn from_count(w: Self::Bits) -> Self;
    /// Widen to `f64` (exact).
    fn to_f64(self) -> f64;
    /// From `f64`, rounding to nearest (exact when representable).
    fn from_f64(v: f64) -> Self;
    /// From `f32` (exact for both types).
    fn from_f32(v: f32) -> Self;
    /// IEEE addition (round to nearest even).
    fn add(self, o: Self) -> Self;
    /// IEEE subtraction (round to nearest even).
    fn sub(self, o: Self) -> Self;
    /// IEEE multiplication (round to nearest even).
    fn mul(self, o: Self) -> Self;
    /// The slice as binary64 values when `Self` is `f64` (no copy), else `None`.
    fn as_f64_slice(s: &[Self]) -> Option<&[f64]>;
    /// The slice as binary32 values when `Self` is `f32` (no copy), else `None`.
    fn as_f32_slice(s: &[Self]) -> Option<&[f32]>;
    /// The mutable slice as binary32 values when `Self` is `f32`, else `None`.
    fn as_f32_slice_mut(s: &mut [Self]) -> Option<&mut [f32]>;
}

impl Float for f32 {
    type Bits = u32;
    const MANT: u32 = 23;
    const BIAS: u32 = 127;
    const NAME: &'static str = "float32";
    const FORMAT: crate::FloatFormat = crate::FloatFormat::FP32;
    fn as_f64_slice(_: &[f32]) -> Option<&[f64]> {
        None
    }
    fn as_f32_slice(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
    fn as_f32_slice_mut(s: &mut [f32]) -> Option<&mut [f32]> {
        Some(s)
    }
    #[inline(always)]
    fn to_bits(self) -> u32 {
        f32::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(b: u32) -> Self {
        f32::from_bits(b)
    }
    #[inline(always)]
    fn from_count(w: u32) -> Self {
        w as i32 as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
}

impl Float for f64 {
    type Bits = u64;
    const MANT: u32 = 52;
    const BIAS: u32 = 1023;
    const NAME: &'static str = "float64";
    const FORMAT: crate::FloatFormat = crate::FloatFormat::FP64;
    fn as_f64_slice(s: &[f64]) -> Option<&[f64]> {
        Some(s)
    }
    fn as_f32_slice(_: &[f64]) -> Option<&[f32]> {
        None
    }
    fn as_f32_slice_mut(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
    #[inline(always)]
    fn from_count(w: u64) -> Self {
        w as i64 as f64
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
}

/// An unsigned integer holding codes: `u8`, `u16`, `u32` or `u64`.
pub trait Code:
    sealed::Sealed + crate::mono::CodeSlices + Copy + Default + Eq + Ord + Debug + Send + Sync + 'static
{
    /// Width in bits.
    const BITS: u32;
    /// The numpy name (`uint8` …).
    const NAME: &'static str;
    /// Truncating conversion.
    fn from_u64(v: u64) -> Self;
    /// Widening conversion.
    fn to_u64(self) -> u64;
    /// The slice as bytes when the code type is `u8` (so byte kernels can write into it).
    fn as_u8s(s: &mut [Self]) -> Option<&mut [u8]> {
        let _ = s;
        None
    }
    /// The slice as 16-bit words when the code type is `u16` (for the hardware casts).
    fn as_u16s(s: &mut [Self]) -> Option<&mut [u16]> {
        let _ = s;
        None
    }
}

impl Code for u8 {
    const BITS: u32 = 8;
    const NAME: &'static str = "uint8";
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u8
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn as_u8s(s: &mut [Self]) -> Option<&mut [u8]> {
        Some(s)
    }
}

macro_rules! code {
    ($t:ty, $n:expr) => {
        impl Code for $t {
            const BITS: u32 = <$t>::BITS;
            const NAME: &'static str = $n;
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as u64
            }
        }
    };
}
impl Code for u16 {
    const BITS: u32 = 16;
    const NAME: &'static str = "uint16";
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u16
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn as_u16s(s: &mut [Self]) -> Option<&mut [u16]> {
        Some(s)
    }
}

code!(u32, "uint32");
code!(u64, "uint64");

#[cfg(test)]
mod tests {
    use super::Word;

    /// Below the sign bit, the signed maximum and minimum are the unsigned ones: every pair
    /// of magnitude bit patterns (zeros, subnormals, the largest finite, infinity, NaNs and
    /// the top of the range) for both lane words.
    #[test]
    fn low_max_and_min_are_the_unsigned_ones() {
        fn check<W: Word>(words: &[u64]) {
            for &a in words {
                for &b in words {
                    let (x, y) = (W::from_u64(a), W::from_u64(b));
                    assert_eq!(x.max_low(y), x.max(y), "max of {a:#x}, {b:#x}");
                    assert_eq!(x.min_low(y), x.min(y), "min of {a:#x}, {b:#x}");
                }
            }
        }
        let f64_bits = [
            0,
            1,
            0x000f_ffff_ffff_ffff,
            0x0010_0000_0000_0000,
            1.0f64.to_bits(),
        ];
        let f64_top = [
            f64::MAX.to_bits(),
            f64::INFINITY.to_bits(),
            f64::NAN.to_bits(),
        ];
        let mut w64: Vec<u64> = f64_bits.iter().chain(&f64_top).copied().collect();
        w64.push(u64::MAX >> 1);
        check::<u64>(&w64);
        let w32: Vec<u64> = [0.0f32, 1e-45, 1.0, f32::MAX, f32::INFINITY, f32::NAN]
            .iter()
            .map(|v| v.to_bits() as u64)
            .chain([u64::from(u32::MAX >> 1)])
            .collect();
        check::<u32>(&w32);
    }
}
