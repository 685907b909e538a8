//! The OCP MX rules: a power-of-two scale `2^s` per block, stored as an E8M0 code `s + 127`
//! (MX v1.0 §6.3; the rules and their sources are in [`crate::block::mx`]).
//!
//! | rule | `s` |
//! |---|---|
//! | `floor` | `⌊log2 amax⌋ − emax_elem` |
//! | `ceil` | `⌈log2 amax⌉ − emax_elem` |
//! | `even` | `⌊log2 RNA_m(amax)⌋ − emax_elem` |
//! | `rceil` | `⌈log2(amax ⊗ (1 ⊘ max_elem))⌉` in binary32 |
//!
//! `s` is clamped to E8M0's `[−127, 127]`; an all-zero block has `s = −127`; a block holding
//! NaN or ±Inf gets the NaN code `0xFF` and NaN elements.

use super::{BlockScale, BlockStats, Scaling};
use crate::block::mx::{exponent_of, ScaleRule};
use crate::format::pow2;
use crate::scheme::axes::Element;

/// The block's E8M0 scale under `rule`.
pub(crate) fn block_scale(rule: ScaleRule, elem: &Element, st: &BlockStats) -> BlockScale {
    if !st.finite {
        return BlockScale::nan(0xff);
    }
    let (s, clamped) = exponent_of(st.amax, elem.emax(), elem.max(), elem.man_bits(), rule);
    BlockScale {
        code: (s + 127) as u8,
        value: pow2(s),
        d: pow2(s),
        zero: 0.0,
        y: Scaling::Mul64(pow2(-s)),
        clamped,
        alt: false,
    }
}
