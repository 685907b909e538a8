//! Per-tensor scaling into any format (the seed's `tensor_scaled`): one binary64 scale for
//! the whole tensor, chosen so that its largest magnitude lands on the format's largest
//! finite value.
//!
//! ```text
//! s   = amax / max_elem                    (binary64)
//! P_i = round_RNE_sat(x_i / s)             (x_i / s rounded to binary64 first)
//! out = P_i · s                            (rounded to binary64)
//! ```
//!
//! An all-zero tensor is returned unchanged (scale 1).

use super::BlockStatus;
use crate::error::{Error, Result};
use crate::round::{Code, Float, Overflow, RoundOptions, Rounder};
use crate::FloatFormat;
use rayon::prelude::*;

/// The result of [`tensor_scaled`].
#[derive(Debug, Clone, PartialEq)]
pub struct TensorScaled<O> {
    /// `P_i · s`, in the input's shape.
    pub values: Vec<O>,
    /// The codes of `P_i`.
    pub codes: Vec<u64>,
    /// The scale `s` (1 for an all-zero tensor).
    pub scale: f64,
    /// What happened (`saturated` counts `|x_i / s| > max`, possible only through rounding).
    pub status: BlockStatus,
}

/// Scale `x` by one factor into `fmt`, round to nearest even with saturation, scale back.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `x` holds NaN or Inf (the scale would be meaningless), or
/// when `fmt` has no finite value to scale to.
///
/// ```
/// use lowprec::block::tensor::tensor_scaled;
/// use lowprec::FloatFormat;
/// let t = tensor_scaled(&[0.5f64, -1.0, 0.1], &FloatFormat::FP8_E4M3).unwrap();
/// assert_eq!(t.scale, 1.0 / 448.0);
/// assert_eq!(t.values[1], -1.0);
/// ```
pub fn tensor_scaled<I: Float>(x: &[I], fmt: &FloatFormat) -> Result<TensorScaled<I>> {
    let mut values = vec![I::default(); x.len()];
    let mut codes = vec![0u64; x.len()];
    let (scale, status) = tensor_scaled_into(x, fmt, &mut values, &mut codes)?;
    Ok(TensorScaled {
        values,
        codes,
        scale,
        status,
    })
}

/// [`tensor_scaled`] into the caller's buffers: `values` (`P_i · s`) and `codes` (of `P_i`),
/// each either `x.len()` long or empty (not wanted). Returns the scale and the status.
///
/// # Errors
///
/// As [`tensor_scaled`], and [`Error::LengthMismatch`] for a buffer of another length.
pub fn tensor_scaled_into<I: Float, C: Code>(
    x: &[I],
    fmt: &FloatFormat,
    values: &mut [I],
    codes: &mut [C],
) -> Result<(f64, BlockStatus)> {
    for len in [values.len(), codes.len()] {
        if len != 0 && len != x.len() {
            return Err(Error::LengthMismatch {
                input: x.len(),
                output: len,
            });
        }
    }
    let amax = x
        .par_iter()
        .map(|v| v.to_f64().abs())
        .reduce(|| 0.0, |a, b| if b > a || b.is_nan() { b } else { a });
    if !amax.is_finite() {
        let i = x.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
        return Err(Error::InvalidArgument(format!(
            "per-tensor scaling needs finite inputs; index {i} is NaN or Inf"
        )));
    }
    let mut status = BlockStatus {
        elements: x.len() as u64,
        blocks: 1,
        ..BlockStatus::default()
    };
    if amax == 0.0 {
        // returned unchanged (scale 1): the codes of the zeros
        values.copy_from_slice(&x[..values.len()]);
        if !codes.is_empty() {
            let r = Rounder::<f64>::new(fmt, &RoundOptions::default());
            let xs: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
            r.encode(&xs, codes, 0);
        }
        return Ok((1.0, status));
    }
    let s = amax / fmt.max_finite();
    let r = Rounder::<f64>::new(fmt, &RoundOptions::default().overflow(Overflow::Saturate));
    const PIECE: usize = 4096;
    let (mut vi, mut ci) = (values.chunks_mut(PIECE), codes.chunks_mut(PIECE));
    let work: Vec<_> = x
        .chunks(PIECE)
        .map(|xc| (xc, vi.next(), ci.next()))
        .collect();
    let st = work
        .into_par_iter()
        .map(|(x, v, c)| {
            let mut y = [0f64; PIECE];
            let y = &mut y[..x.len()];
            y.iter_mut().zip(x).for_each(|(y, x)| *y = x.to_f64() / s);
            let st = match c {
                Some(c) => r.encode(y, c, 0),
                None => r.encode(y, &mut [0u64; PIECE][..x.len()], 0),
            };
            if let Some(v) = v {
                let mut q = [0f64; PIECE];
                r.round(y, &mut q[..x.len()], 0);
                v.iter_mut()
                    .zip(&q[..x.len()])
                    .for_each(|(v, q)| *v = I::from_f64(q * s));
            }
            BlockStatus {
                saturated: st.saturated,
                flushed: st.flushed,
                ..BlockStatus::default()
            }
        })
        .reduce(BlockStatus::default, |a, b| a + b);
    status.saturated = st.saturated;
    status.flushed = st.flushed;
    Ok((s, status))
}
