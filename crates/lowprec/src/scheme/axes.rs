//! The independent axes of a scheme: the element grid, the block shape, the scale rule, the
//! second level and the rotation. Each is a small `Copy` value; a [`super::Scheme`] is one
//! of each.

use crate::block::mx::ScaleRule;
use crate::error::{Error, Result};
use crate::quant::Clip;
use crate::FloatFormat;
use std::fmt;

/// What a scaled element is rounded into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Element {
    /// Any float format of the core (at most 8 bits for packed output; up to 16 bits the
    /// codes are kept; wider formats give values only).
    Float(FloatFormat),
    /// A `b`-bit integer grid.
    Int(IntGrid),
}

/// The range of an integer element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntRange {
    /// `±(2^(b−1) − 1)`: symmetric, the code `−2^(b−1)` unused (the seed's default).
    Restricted,
    /// `[−2^(b−1), 2^(b−1) − 1]`: the full two's complement range (torchao, MXINT8).
    Full,
    /// `[0, 2^b − 1]`: unsigned, used with a zero point (asymmetric quantization).
    Unsigned,
}

/// A `b`-bit integer element whose values are `k / 2^frac` (`frac` = 0 for plain integers,
/// 6 for MXINT8's `k/64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntGrid {
    /// Bits per code, 2 to 16.
    pub bits: u32,
    /// Which integers.
    pub range: IntRange,
    /// Fraction bits: the value of `k` is `k · 2^−frac`.
    pub frac: u32,
}

impl IntGrid {
    /// The least and greatest integer `k`.
    pub fn range(&self) -> (f64, f64) {
        let b = self.bits;
        match self.range {
            IntRange::Restricted => {
                let m = ((1i64 << (b - 1)) - 1) as f64;
                (-m, m)
            }
            IntRange::Full => (-((1i64 << (b - 1)) as f64), ((1i64 << (b - 1)) - 1) as f64),
            IntRange::Unsigned => (0.0, ((1i64 << b) - 1) as f64),
        }
    }

    /// The code of the integer `k`: two's complement for signed ranges, plain otherwise.
    pub fn code(&self, k: i64) -> u16 {
        (k as u64 & ((1u64 << self.bits) - 1)) as u16
    }

    /// The integer `k` of a code.
    pub fn integer(&self, code: u16) -> i64 {
        match self.range {
            IntRange::Unsigned => code as i64,
            IntRange::Restricted | IntRange::Full => {
                let s = 64 - self.bits;
                ((code as i64) << s) >> s
            }
        }
    }
}

impl Element {
    /// Bits per element code.
    pub fn bits(&self) -> u32 {
        match self {
            Element::Float(f) => f.bits(),
            Element::Int(g) => g.bits,
        }
    }

    /// The largest finite element value.
    pub fn max(&self) -> f64 {
        match self {
            Element::Float(f) => f.max_finite(),
            Element::Int(g) => g.range().1 * crate::format::pow2(-(g.frac as i32)),
        }
    }

    /// `⌊log2 max⌋`: the exponent of the largest power of two the element holds (the MX
    /// rules' `emax_elem`).
    pub fn emax(&self) -> i32 {
        match self {
            Element::Float(f) => f.emax(),
            Element::Int(_) => crate::block::floor_log2(self.max()),
        }
    }

    /// Mantissa bits below the leading one at the top of the range (the MX `even` rule's
    /// `m`): the format's `m`, or `b − 2` for an integer grid (MXINT8: 6).
    pub fn man_bits(&self) -> u32 {
        match self {
            Element::Float(f) => f.man_bits(),
            Element::Int(g) => g.bits - 2,
        }
    }

    /// The value of a code (NaN for NaN codes).
    pub fn decode(&self, code: u16) -> f64 {
        match self {
            Element::Float(f) => f.decode(code as u64),
            Element::Int(g) => g.integer(code) as f64 * crate::format::pow2(-(g.frac as i32)),
        }
    }

    /// Whether the codes are kept (at most 16 bits).
    pub fn has_codes(&self) -> bool {
        self.bits() <= 16
    }

    /// Whether this element can take a scale: signed with zero (or an integer grid).
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            Element::Float(f) if !f.is_signed() || !f.has_zero() => Err(Error::InvalidArgument(
                format!("{f} cannot be a scaled element: use a signed format with zero (fp8-e4m3, fp4-e2m1, …) or an integer"),
            )),
            Element::Float(f) if f.max_finite() == 0.0 || !f.max_finite().is_finite() => {
                Err(Error::InvalidArgument(format!("{f} has no finite value to scale to")))
            }
            Element::Int(g) if !(2..=16).contains(&g.bits) => Err(Error::InvalidArgument(
                format!("integer elements take 2 to 16 bits, not {}", g.bits),
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Float(x) => write!(f, "{x}"),
            Element::Int(g) => write!(f, "int{}", g.bits),
        }
    }
}

/// Which elements share a scale. Blocks run along the last axis; tiles cover the last two
/// axes of a tensor of any rank (a rank-1 tensor is one row); neither crosses a row or a
/// matrix of the leading axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Blocks {
    /// One scale for the whole tensor.
    Tensor,
    /// One scale per row (a weight matrix's output channel): every index of the leading axes.
    Channel,
    /// One scale per `g` consecutive elements along the last axis.
    Group(usize),
    /// One scale per `r × c` tile of the last two axes.
    Tile(usize, usize),
}

impl Blocks {
    /// The tile `(rows, cols)` this shape means for a tensor whose last axis is `cols`
    /// (`None`: the whole tensor).
    pub fn tile(&self, cols: usize) -> Option<(usize, usize)> {
        match *self {
            Blocks::Tensor => None,
            Blocks::Channel => Some((1, cols.max(1))),
            Blocks::Group(g) => Some((1, g)),
            Blocks::Tile(r, c) => Some((r, c)),
        }
    }
}

impl fmt::Display for Blocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocks::Tensor => f.write_str("tensor"),
            Blocks::Channel => f.write_str("channel"),
            Blocks::Group(g) => write!(f, "group={g}"),
            Blocks::Tile(r, c) => write!(f, "tile={r}x{c}"),
        }
    }
}

/// The arithmetic of a single-level amax scale (`d = amax / max_elem`, then `y = x / d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arith {
    /// binary64: `d = RN_sf(RN64(amax / max))`, `y = RN64(x / d)` (the seed's `tensor_scaled`).
    F64,
    /// binary32: `d = RN_sf(amax ⊘ max)`, `y = x ⊘ d` (DeepSeek-V3's `act_quant`, vLLM).
    F32,
}

/// How a block's scale is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// No scale: a plain rounding into the element (a cast).
    None,
    /// A power of two from the block's largest magnitude by an OCP MX rule (floor, ceil,
    /// even, rceil), stored as an E8M0 code.
    Pow2(ScaleRule),
    /// `d = amax / max_elem` rounded into the scale format (or, with `pow2`, rounded up to a
    /// power of two: the UE8M0 scales of the FP8 recipes); elements `x / d`.
    Amax {
        /// The arithmetic.
        arith: Arith,
        /// Round the scale up to a power of two.
        pow2: bool,
    },
    /// Affine integers: `d = c·amax / k_max` (symmetric) or `(hi − lo)/(2^b − 1)` with a zero
    /// point (asymmetric, an unsigned element), `c` the clip ratio (or the MSE-best one).
    Affine(Clip),
    /// The lowest-error candidate per block (4over6, IF4).
    Best(Best),
}

/// The candidates of [`Rule::Best`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Best {
    /// NVFP4 "4over6": each block scales its amax to 4 or to 6 and keeps the one with the
    /// smaller squared error; the tensor scale is computed with 256 in place of 448.
    FourOverSix,
    /// IF4: each block is FP4 (E2M1) or INT4 (`±7`), whichever has the smaller squared error;
    /// the choice is the scale code's sign bit.
    If4,
}

/// The arithmetic of a two-level scale (a per-tensor scale over the block scales, NVFP4):
/// the NVFP4 kernel's own convention type, one definition for both.
pub use crate::block::nvfp4::Convention;

/// The signs of a randomized Hadamard rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signs {
    /// All +1: the plain (Sylvester) Hadamard transform.
    Ones,
    /// TransformerEngine's fixed 16-entry vector `(1,1,1,−1,1,−1,−1,−1,−1,−1,−1,1,−1,1,−1,−1)`.
    Te,
    /// Random ±1 from a seed (the counter-based generator of the core).
    Seeded(u64),
}

/// A block Hadamard rotation before quantizing: each run of `size` elements along the last
/// axis becomes `y = x · diag(s) · H / √size` (`H` Sylvester's ±1 matrix), optionally
/// rounded to BF16 (TransformerEngine's RHT output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rotation {
    /// Block size, a power of two.
    pub size: usize,
    /// The sign vector.
    pub signs: Signs,
    /// Round the rotated values to BF16 (nearest even).
    pub bf16: bool,
}
