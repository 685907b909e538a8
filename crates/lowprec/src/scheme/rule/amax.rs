//! One scale per block from its largest magnitude: the block's amax lands on the element's
//! largest value.
//!
//! | arithmetic | scale `d` | elements |
//! |---|---|---|
//! | `F64` (the seed's `tensor_scaled`) | `RN_sf(RN64(amax / max_elem))` | `y = RN64(x / d)` |
//! | `F32` (DeepSeek-V3 `act_quant`, vLLM per-token / per-channel FP8) | `RN_sf(RN32(amax ⊘ max_elem))` | `y = RN32(x ⊘ d)` |
//!
//! `RN_sf` rounds to nearest even into the scale format, saturating (FP32, BF16, FP16, E4M3,
//! binary64: exact). With `pow2` the quotient is rounded up to a power of two instead (the
//! UE8M0 scales of DeepSeek-V3.1 / DeepGEMM), `2^⌈log2 q⌉` from the exponent bits. An
//! all-zero block has `d = 1`; a scale that rounds to 0 gives zero elements.

use super::{BlockScale, BlockStats, ScaleRounder, Scaling};
use crate::block::{floor_log2, is_pow2};
use crate::format::pow2 as p2;
use crate::round::{Overflow, RoundOptions};
use crate::scheme::axes::{Arith, Element};
use crate::FloatFormat;

/// `v` rounded to nearest even into the scale format `sf`, saturating: `(code, value)`.
pub(crate) fn round_scale(sf: &FloatFormat, v: f64) -> (u8, f64) {
    if *sf == FloatFormat::FP64 {
        return (0, v);
    }
    let o = RoundOptions::default().overflow(Overflow::Saturate);
    let code = sf.encode(v, &o).unwrap_or(0);
    let value = sf.decode(code);
    (if sf.bits() <= 8 { code as u8 } else { 0 }, value)
}

/// The block's scale.
pub(crate) fn block_scale(
    arith: Arith,
    pow2: bool,
    elem: &Element,
    sf: &ScaleRounder,
    st: &BlockStats,
) -> BlockScale {
    let q = match arith {
        Arith::F64 => st.amax / elem.max(),
        Arith::F32 => ((st.amax as f32) / (elem.max() as f32)) as f64,
    };
    let (code, d) = if st.amax == 0.0 {
        sf.round(1.0)
    } else if pow2 {
        let e = floor_log2(q) + (!is_pow2(q)) as i32;
        sf.round(p2(e))
    } else {
        sf.round(q)
    };
    let y = if d == 0.0 || !d.is_finite() {
        Scaling::Zero
    } else {
        match arith {
            Arith::F64 => Scaling::Div64(d),
            Arith::F32 => Scaling::Div32(d as f32),
        }
    };
    BlockScale {
        code,
        value: d,
        d,
        zero: 0.0,
        y,
        clamped: false,
        alt: false,
    }
}
