//! Affine integers (the seed's `quantize_int`), binary64 in the seed's order:
//!
//! | range | scale `d` | zero |
//! |---|---|---|
//! | restricted `±(2^(b−1)−1)` | `c·amax / (2^(b−1)−1)` | 0 |
//! | full `[−2^(b−1), 2^(b−1)−1]` | `c·amax / ((2^b − 1)/2)` | 0 |
//! | unsigned `[0, 2^b − 1]` | `(hi' − lo')/(2^b − 1)`, `lo', hi'` = `mid + (lo − mid)·c`, `mid + (hi − mid)·c` | `clamp(rint(−lo'/d), 0, 2^b − 1)` |
//!
//! `c` is the clip ratio; a block whose range is 0 uses `d = 1`. Elements
//! `k = clamp(rint(RN64(x / d)) + zero)`, values `RN64(d · (k − zero))`. With `clip=mse` every
//! block tries `c = 1.00, 0.99, …, 0.50` and keeps the least squared error (the largest `c`
//! on ties).

use super::{BlockScale, BlockStats, Scaling};
use crate::quant::Clip;
use crate::scheme::axes::{IntGrid, IntRange};

/// The scale and zero of a block for the clip ratio `c`.
pub(crate) fn params(g: &IntGrid, amax: f64, lo: f64, hi: f64, c: f64) -> (f64, f64) {
    let (kmin, kmax) = g.range();
    match g.range {
        IntRange::Restricted | IntRange::Full => {
            let amax = amax * c;
            let den = match g.range {
                IntRange::Restricted => kmax,
                IntRange::Full | IntRange::Unsigned => (kmax - kmin) / 2.0,
            };
            (if amax > 0.0 { amax / den } else { 1.0 }, 0.0)
        }
        IntRange::Unsigned => {
            let mid = (lo + hi) / 2.0;
            let (lo, hi) = (mid + (lo - mid) * c, mid + (hi - mid) * c);
            let d = if hi > lo { (hi - lo) / kmax } else { 1.0 };
            (d, (-lo / d).round_ties_even().clamp(0.0, kmax))
        }
    }
}

/// The squared error of a block quantized with scale `d` and zero `z` (summed in order).
fn sse(g: &IntGrid, x: &[f64], d: f64, z: f64) -> f64 {
    let (kmin, kmax) = g.range();
    x.iter()
        .map(|&v| {
            let k = ((v / d).round_ties_even() + z).clamp(kmin, kmax);
            let e = d * (k - z) - v;
            e * e
        })
        .sum()
}

/// The block's scale under `clip`.
pub(crate) fn block_scale(g: &IntGrid, clip: Clip, st: &BlockStats) -> BlockScale {
    let (d, zero) = match clip {
        Clip::None => params(g, st.amax, st.lo, st.hi, 1.0),
        Clip::Ratio(c) => params(g, st.amax, st.lo, st.hi, c),
        Clip::Mse => {
            let mut best = (f64::INFINITY, params(g, st.amax, st.lo, st.hi, 1.0));
            for step in 0..=50 {
                let c = 1.0 - step as f64 / 100.0;
                let p = params(g, st.amax, st.lo, st.hi, c);
                let e = sse(g, st.data, p.0, p.1);
                if e < best.0 {
                    best = (e, p);
                }
            }
            best.1
        }
    };
    BlockScale {
        code: 0,
        value: d,
        d,
        zero,
        y: Scaling::Div64(d),
        clamped: false,
        alt: false,
    }
}
