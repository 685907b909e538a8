//! The quarter-binade index of binary32 magnitudes that NVFP4's and MXFP4's E2M1 lookup
//! steps share: `⌊bits(y) / 2^SHIFT⌋` names the quarter binade of `y`, every E2M1 midpoint
//! starts one, and a table indexed by it gives the code. The portable loops live in
//! `crate::block::lookup`, the AVX-512 and AVX2 kernels in [`super::e2m1`]; all read these
//! constants, which live here so that `simd` depends on nothing above it.

/// `⌊b / 2^SHIFT⌋` is the quarter binade of a binary32 with bits `b`.
pub(crate) const SHIFT: u32 = 21;
/// The clamp bounds of the quarter index: below 0.25 and at or above 8.
pub(crate) const IDX_LO: u32 = 499;
/// See `IDX_LO`.
pub(crate) const IDX_HI: u32 = 520;
/// Quarters from this one up saturate (`y ≥ 7`).
pub(crate) const IDX_SAT: u32 = 519;
/// Quarters below this one round to zero (`y < 0.25`).
pub(crate) const IDX_ZERO: u32 = 500;
/// Half the width, in units in the last place, of the window around a quarter start that
/// flags an element.
pub(crate) const TOL: u32 = 16;

/// What the E2M1 block step (`crate::block::lookup::e2m1_blocks`) counted over the blocks it did not flag, and how many it flagged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Elements that saturated.
    pub saturated: u64,
    /// Nonzero elements that became ±0.
    pub flushed: u64,
    /// Blocks flagged (their indices lead `flagged`).
    pub flagged: usize,
}
