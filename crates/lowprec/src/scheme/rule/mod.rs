//! Scale rules: from a block's statistics (and, for two-level schemes, the tensor's scale) to
//! the block's scale, its stored form, and how its elements are scaled. One file per rule:
//!
//! | rule | file | scale `d` (value = element · `d`) |
//! |---|---|---|
//! | MX (`floor`, `ceil`, `even`, `rceil`) | [`pow2`] | `2^s`, `s` from the exponent of the block's amax |
//! | amax to the element's max | [`amax`] | `RN_sf(amax / max_elem)` (or its power-of-two ceiling) |
//! | two-level (NVFP4) | [`two_level`] | `s_b · g`: a block scale over a tensor scale, in the convention's arithmetic |
//! | affine integers | [`affine`] | `c·amax / k_max`, or `(hi − lo)/(2^b − 1)` with a zero point |
//! | lowest-error candidate | [`best`] | the candidate (target or element) with the least squared error |

pub mod affine;
pub mod amax;
pub mod best;
pub mod pow2;
pub mod two_level;

/// How a block's elements are scaled before the element step: `y = f(x)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scaling {
    /// `y = x · m` with `m` a power of two: exact in binary64.
    Mul64(f64),
    /// `y = RN64(x / d)`.
    Div64(f64),
    /// `y = RN32(RN32(x) / d)`.
    Div32(f32),
    /// `y = RN32(RN32(x) · r)`.
    Mul32(f32),
    /// `y = +0` (a block whose scale is zero in the seed's convention).
    Zero,
    /// The block holds NaN or ±Inf: every element NaN.
    Nan,
}

impl Scaling {
    /// Whether `y` is a binary32 operation on `RN32(x)` ([`Scaling::Mul32`],
    /// [`Scaling::Div32`]): for binary32 inputs it is computed in binary32 exactly as
    /// [`Scaling::apply`] computes it (the binary32 lane).
    #[inline(always)]
    pub(crate) fn is_f32(&self) -> bool {
        matches!(self, Scaling::Mul32(_) | Scaling::Div32(_))
    }

    /// `y` for one input element.
    #[inline(always)]
    pub(crate) fn apply(&self, x: f64) -> f64 {
        match *self {
            Scaling::Mul64(m) => x * m,
            Scaling::Div64(d) => x / d,
            Scaling::Div32(d) => ((x as f32) / d) as f64,
            Scaling::Mul32(r) => ((x as f32) * r) as f64,
            Scaling::Zero => 0.0,
            Scaling::Nan => 0.0,
        }
    }
}

/// What a scale rule decides for one block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockScale {
    /// The stored scale: its code in a scale format of at most 8 bits (E8M0, E4M3, …)…
    pub code: u8,
    /// …or its value (wider scale formats: FP32, BF16, binary64).
    pub value: f64,
    /// The decode factor: an element's value is `decode(code) · d` (`d · (k − zero)` for
    /// integers).
    pub d: f64,
    /// The zero point (asymmetric integers), in integer units.
    pub zero: f64,
    /// How the inputs are scaled.
    pub y: Scaling,
    /// The scale was clamped to its format's range.
    pub clamped: bool,
    /// Use the scheme's alternative element (IF4's INT4 blocks).
    pub alt: bool,
}

impl BlockScale {
    /// A block of NaN: the scale `nan_code`, NaN elements.
    pub(crate) fn nan(nan_code: u8) -> Self {
        BlockScale {
            code: nan_code,
            value: f64::NAN,
            d: f64::NAN,
            zero: 0.0,
            y: Scaling::Nan,
            clamped: false,
            alt: false,
        }
    }
}

/// What the rules read of a block: its largest magnitude, its least and greatest values,
/// whether every element is finite, and (for the rules that try candidates) the elements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockStats<'a> {
    /// `max |x|` (a NaN or ∞ when the block holds one).
    pub amax: f64,
    /// `min x`.
    pub lo: f64,
    /// `max x`.
    pub hi: f64,
    /// Every element is finite.
    pub finite: bool,
    /// The elements, in binary64 (only for the rules that need them).
    pub data: &'a [f64],
}

/// Rounding into a scale format, to nearest even with saturation, fast enough to run once per
/// block: a binary search over the magnitudes of a format of at most 8 bits, a conversion
/// for binary32, the exact value for binary64, and the general kernel otherwise. (Tested
/// against [`crate::FloatFormat::encode`] on every midpoint and its neighbours.)
#[derive(Debug, Clone)]
pub(crate) struct ScaleRounder {
    sf: crate::FloatFormat,
    /// The format's largest finite value and smallest normal (asked once per block).
    pub max: f64,
    pub min_normal: f64,
    /// Magnitudes of the codes `0 ..= max_mag`, ascending (formats of at most 8 bits).
    table: Vec<f64>,
}

impl ScaleRounder {
    /// Prepare `sf`.
    pub(crate) fn new(sf: &crate::FloatFormat) -> Self {
        let table = if sf.bits() <= 8 {
            (0..=sf.max_mag()).map(|c| sf.decode(c)).collect()
        } else {
            Vec::new()
        };
        ScaleRounder {
            sf: *sf,
            max: sf.max_finite(),
            min_normal: sf.min_normal(),
            table,
        }
    }

    /// `v ≥ 0` (finite) rounded: `(code, value)`; the code is 0 for formats wider than 8 bits.
    pub(crate) fn round(&self, v: f64) -> (u8, f64) {
        use crate::FloatFormat;
        if self.sf == FloatFormat::FP64 {
            return (0, v);
        }
        if self.sf == FloatFormat::FP32 {
            let r = (v as f32).min(f32::MAX);
            return (0, r as f64);
        }
        if self.table.is_empty() {
            return amax::round_scale(&self.sf, v);
        }
        let t = &self.table;
        // the first magnitude ≥ v
        let i = t.partition_point(|&m| m < v);
        let c = if i == 0 {
            0
        } else if i == t.len() {
            t.len() - 1
        } else {
            let (lo, hi) = (t[i - 1], t[i]);
            let (a, b) = (v - lo, hi - v);
            if a < b {
                i - 1
            } else if b < a {
                i
            } else if self.sf.man_bits() != 0 && (i - 1) % 2 == 0 {
                i - 1
            } else {
                // the even code above, or for one-digit significands the larger power (as
                // the kernel)
                i
            }
        };
        (c as u8, t[c])
    }
}
