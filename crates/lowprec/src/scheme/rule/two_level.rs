//! Two-level scales (NVFP4): a per-tensor scale `g` over per-block scales `s_b` in a small
//! float format (E4M3), an element's value being `q · s_b · g`. `max_e` is the element's
//! largest value (6 for E2M1) and `max_g` the block scale the tensor's amax maps to (448,
//! E4M3's largest; 256 for 4over6), `2688 = 6 · 448`.
//!
//! | step | `seed` (nvfp4.csv) | `torchao` | `te` (TransformerEngine) |
//! |---|---|---|---|
//! | arithmetic | binary64 | binary32 | binary32 |
//! | tensor scale | `g = RN32(amax / (max_e · max_g))` | `g = amax ⊘ (max_e · max_g)` | `S = (max_e · max_g) ⊘ amax`, at most `FLT_MAX`, 1 when amax is 0 or `S` underflows; `g = 1 ⊘ S` |
//! | block scale | `s_b = RN_sat(RN64(RN64(bmax / max_e) / g))` | `s_b = RN(clamp((bmax ⊘ max_e) ⊘ g, min_normal, max))` | `s_b = RN(min(bmax ⊗ (S ⊗ RN32(1/max_e)), max))`, one rounding, no lower clamp |
//! | elements | `y = RN64(x / (s_b · g))`; `s_b · g = 0` gives `+0` | `y = x ⊗ RN32(RN32(1 ⊘ g) ⊘ s_b)` | `y = x ⊗ min(1 ⊘ (s_b ⊗ (1 ⊘ S)), FLT_MAX)` |
//! | value | `q · s_b · g` | `q · s_b · g` | `q · s_b · g` |
//!
//! `RN` rounds to nearest even into the block-scale format; the element step rounds `y` to
//! nearest even with saturation. In the seed and torchao conventions an all-zero tensor
//! gives zero codes, zero scales and `g = 0`. The products `q · s_b · g` are exact in
//! binary64. `g` is what the checkpoint stores as the tensor scale (for `te`, `1 ⊘ S`).

use super::{BlockScale, ScaleRounder, Scaling};
use crate::scheme::axes::Convention;

/// The tensor-level scale of a two-level scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Global {
    /// The convention.
    pub conv: Convention,
    /// The decode tensor scale `g` (a binary32 value).
    pub g: f32,
    /// TransformerEngine's encode scale `S`.
    pub s_enc: f32,
    /// An all-zero tensor (seed and torchao: everything zero).
    pub zero: bool,
}

/// The tensor scale from the tensor's amax.
pub(crate) fn global(conv: Convention, amax: f64, max_e: f64, max_g: f64) -> Global {
    let k = max_e * max_g;
    match conv {
        Convention::Seed => Global {
            conv,
            g: (amax / k) as f32,
            s_enc: 0.0,
            zero: amax == 0.0,
        },
        Convention::Torchao => Global {
            conv,
            g: (amax as f32) / (k as f32),
            s_enc: 0.0,
            zero: amax == 0.0,
        },
        Convention::Te => {
            let a = amax as f32;
            let s = ((k as f32) / a).min(f32::MAX);
            let s = if a == 0.0 || s == 0.0 { 1.0 } else { s };
            Global {
                conv,
                g: 1.0 / s,
                s_enc: s,
                zero: false,
            }
        }
    }
}

fn zero_block() -> BlockScale {
    BlockScale {
        code: 0,
        value: 0.0,
        d: 0.0,
        zero: 0.0,
        y: Scaling::Zero,
        clamped: false,
        alt: false,
    }
}

/// The block scale for a block whose amax is `bmax`, the element's largest value `max_e`,
/// in the block-scale format of `sr` (which rounds into it).
pub(crate) fn block_scale(gl: &Global, max_e: f64, sr: &ScaleRounder, bmax: f64) -> BlockScale {
    if gl.zero {
        let mut z = zero_block();
        if gl.conv == Convention::Torchao {
            z.y = Scaling::Mul32(0.0); // torchao keeps the sign of a zero element
        }
        return z;
    }
    let g = gl.g as f64;
    let (code, s, y) = match gl.conv {
        Convention::Seed => {
            let (code, s) = sr.round((bmax / max_e) / g);
            let d = s * g;
            (
                code,
                s,
                if d == 0.0 {
                    Scaling::Zero
                } else {
                    Scaling::Div64(d)
                },
            )
        }
        Convention::Torchao => {
            let t = ((bmax as f32) / (max_e as f32)) / gl.g;
            let t = t.clamp(sr.min_normal as f32, sr.max as f32);
            let (code, s) = sr.round(t as f64);
            let r = (1.0f32 / gl.g) / (s as f32);
            (code, s, Scaling::Mul32(r))
        }
        Convention::Te => {
            let t = (bmax as f32) * (gl.s_enc * (1.0f32 / max_e as f32));
            let t = t.min(sr.max as f32);
            let (code, s) = sr.round(t as f64);
            let enc = (1.0f32 / ((s as f32) * (1.0f32 / gl.s_enc))).min(f32::MAX);
            (code, s, Scaling::Mul32(enc))
        }
    };
    BlockScale {
        code,
        value: s,
        d: s * g,
        zero: 0.0,
        y,
        clamped: false,
        alt: false,
    }
}
