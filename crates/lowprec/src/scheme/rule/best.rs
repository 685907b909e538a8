//! The lowest-error candidate per block ("4over6", IF4): each block is quantized by every
//! candidate, and the one with the smallest sum of squared errors (summed in order, binary64)
//! is kept; ties keep the first candidate.

use super::BlockScale;

/// The index of the candidate with the smallest error (the first on ties); `errors` is
/// never empty.
pub(crate) fn choose(errors: &[f64]) -> usize {
    let mut best = 0;
    for (i, &e) in errors.iter().enumerate().skip(1) {
        if e < errors[best] {
            best = i;
        }
    }
    best
}

/// Mark a candidate as the scheme's alternative element.
pub(crate) fn alternative(mut b: BlockScale) -> BlockScale {
    b.alt = true;
    b
}

use super::two_level;
use super::BlockStats;
use crate::scheme::axes::Best;
use crate::scheme::generic::Ctx;

/// E2M1 with nearest even and saturation, of a scaled element (the candidates' error).
fn e2m1(y: f64) -> f64 {
    const M: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let a = y.abs();
    let i = M.partition_point(|&m| m < a);
    let q = if i == 0 {
        0.0
    } else if i == M.len() {
        6.0
    } else {
        let (lo, hi) = (M[i - 1], M[i]);
        if a - lo < hi - a || (a - lo == hi - a && (i - 1) % 2 == 0) {
            lo
        } else {
            hi
        }
    };
    q.copysign(y)
}

/// The squared error of a block under a candidate scale, with E2M1 or `±7` integer elements.
fn sse(data: &[f64], s: &BlockScale, int4: bool) -> f64 {
    data.iter()
        .map(|&x| {
            let y = s.y.apply(x);
            let q = if int4 {
                y.round_ties_even().clamp(-7.0, 7.0)
            } else {
                e2m1(y)
            };
            let e = q * s.d - x;
            e * e
        })
        .sum()
}

/// The lowest-error candidate's block scale.
pub(crate) fn block_scale(ctx: &Ctx, b: Best, st: &BlockStats) -> BlockScale {
    let g = ctx.global().expect("validated: a tensor scale");
    let (sf, sr) = (&ctx.s.scale, ctx.scale_rounder());
    match b {
        Best::FourOverSix => {
            let c = [
                two_level::block_scale(g, 6.0, sr, st.amax),
                two_level::block_scale(g, 4.0, sr, st.amax),
            ];
            let e = [sse(st.data, &c[0], false), sse(st.data, &c[1], false)];
            c[choose(&e)]
        }
        Best::If4 => {
            let fp = two_level::block_scale(g, 6.0, sr, st.amax);
            let mut int = two_level::block_scale(g, 7.0, sr, st.amax);
            let e = [sse(st.data, &fp, false), sse(st.data, &int, true)];
            if choose(&e) == 1 {
                int.code |= sf.sign_mask() as u8;
                alternative(int)
            } else {
                fp
            }
        }
    }
}
