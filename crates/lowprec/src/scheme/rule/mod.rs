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
    /// The element step's branch-free rounding ([`crate::block::fused::Elem`]) for the
    /// signed formats of at most 8 bits with a significand bit that it takes (E4M3, E5M2,
    /// …): the table search's results without its unpredictable branches.
    fused: Option<crate::block::fused::Elem<f64>>,
}

impl ScaleRounder {
    /// Prepare `sf`.
    pub(crate) fn new(sf: &crate::FloatFormat) -> Self {
        let table = if sf.bits() <= 8 {
            (0..=sf.max_mag()).map(|c| sf.decode(c)).collect()
        } else {
            Vec::new()
        };
        let fused = if sf.bits() <= 8 && sf.man_bits() >= 1 {
            crate::block::fused::Elem::new(sf)
        } else {
            None
        };
        ScaleRounder {
            sf: *sf,
            max: sf.max_finite(),
            min_normal: sf.min_normal(),
            table,
            fused,
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
        if let Some(e) = &self.fused {
            let (c, r, _) = e.round(v);
            return (c, r);
        }
        self.round_table(v)
    }

    /// [`ScaleRounder::round`] by a search of the table of magnitudes (formats of at most 8
    /// bits).
    fn round_table(&self, v: f64) -> (u8, f64) {
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

#[cfg(test)]
mod tests {
    use super::ScaleRounder;
    use crate::{FloatFormat, Overflow, RoundOptions};

    /// Every scale format of at most 8 bits: the rounding (fast or by the table) equals the
    /// table search and the core's encoding (nearest even, saturating) on every magnitude,
    /// every midpoint, their binary64 neighbours, and beyond both ends of the range.
    #[test]
    fn scale_rounding_is_the_cores_on_every_midpoint() {
        let sat = RoundOptions::default().overflow(Overflow::Saturate);
        assert!(ScaleRounder::new(&FloatFormat::FP8_E4M3).fused.is_some());
        for name in [
            "e4m3",
            "ue4m3",
            "e5m2",
            "fp8-e4m3",
            "fp8-e5m2",
            "ue8m0",
            "e8m0",
            "e3m4",
            "e2m5",
            "fp6-e3m2",
            "fp6-e2m3",
            "fp4-e2m1",
            "e4m3:fnuz",
            "e5m2:fnuz",
            "e3m2",
            "e2m1",
        ] {
            let Ok(sf) = name.parse::<FloatFormat>() else {
                continue;
            };
            let sr = ScaleRounder::new(&sf);
            let t = sr.table.clone();
            let mut probes = vec![0.0, sr.max * 4.0, f64::MIN_POSITIVE, 1e-300];
            for w in t.windows(2) {
                let mid = (w[0] + w[1]) / 2.0;
                for v in [w[0], w[1], mid] {
                    probes.extend([v, v.next_up(), v.next_down().max(0.0)]);
                }
            }
            for v in probes {
                let got = sr.round(v);
                assert_eq!(got, sr.round_table(v), "{name}: {v:e}");
                if !sf.has_zero() {
                    continue; // (E8M0: the rules clamp below its smallest power)
                }
                let want = sf.encode(v, &sat).unwrap();
                assert_eq!(got.0 as u64, want, "{name}: {v:e}");
                assert_eq!(got.1, sf.decode(want), "{name}: {v:e}");
            }
        }
    }
}
