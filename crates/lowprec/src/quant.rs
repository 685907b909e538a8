//! Affine integer quantization (the seed's `quantize_int`): `x ≈ scale · (q − zero)` with
//! `b`-bit integers `q`, per tensor, per channel (row) or per group of `g` along the last
//! axis, symmetric or asymmetric, with an optional clip ratio or a search for the clip ratio
//! with the least squared error.
//!
//! All arithmetic is binary64, in the seed's order, so results match it bit for bit:
//!
//! | | symmetric (`restricted`, default) | symmetric `full` (torchao) | asymmetric |
//! |---|---|---|---|
//! | range | `q ∈ [−(2^(b−1)−1), 2^(b−1)−1]` | `q ∈ [−2^(b−1), 2^(b−1)−1]` | `q ∈ [0, 2^b − 1]` |
//! | scale | `c·amax / (2^(b−1)−1)` | `c·amax / ((2^b − 1)/2)` | `(hi − lo)/(2^b − 1)` with `lo, hi = mid + (min − mid)·c, mid + (max − mid)·c`, `mid = (min + max)/2` |
//! | zero | 0 | 0 | `clamp(rint(−lo/scale), 0, 2^b − 1)` |
//! | `q` | `clamp(rint(x/scale), …)` | `clamp(rint(x/scale), …)` | `clamp(rint(x/scale) + zero, …)` |
//!
//! `rint` rounds half to even; a group whose range is 0 uses scale 1. Values are
//! `scale · (q − zero)` with the integer `q`: a negative input whose `q` is 0 gives +0 (the
//! value of code 0, which is what dequantizing the codes gives), where the seed keeps −0
//! from `rint`; every other value agrees with the seed bit for bit.
//!
//! **Clip search** (`clip = mse`): each group tries the ratios `c = 1.00, 0.99, …, 0.50` (51
//! candidates) and keeps the one with the smallest sum of squared errors (the largest `c` on
//! ties).

use crate::error::{Error, Result};
use crate::round::Float;
use rayon::prelude::*;

/// Which elements share a scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// One scale for the whole tensor.
    Tensor,
    /// One scale per row (output channel of a weight matrix): every index of the leading
    /// axes, i.e. per `row_len` elements.
    Channel,
    /// One scale per group of `g` consecutive elements along the last axis.
    Group(usize),
}

/// The mapping from reals to integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mapping {
    /// Symmetric, `q ∈ ±(2^(b−1) − 1)` (the seed; keeps the code `−2^(b−1)` unused).
    #[default]
    Symmetric,
    /// Symmetric over the full two's complement range, scale `amax / ((2^b − 1)/2)` (torchao).
    SymmetricFull,
    /// Asymmetric with a zero point, `q ∈ [0, 2^b − 1]`.
    Asymmetric,
}

/// The clip ratio.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Clip {
    /// No clipping (ratio 1).
    #[default]
    None,
    /// A fixed ratio in (0, 1].
    Ratio(f64),
    /// Per group, the ratio among 1.00, 0.99, …, 0.50 with the least squared error.
    Mse,
}

/// Every choice of an integer quantization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntOptions {
    /// Bits, 2 to 16.
    pub bits: u32,
    /// Symmetric or asymmetric.
    pub mapping: Mapping,
    /// Tensor, channel or group.
    pub granularity: Granularity,
    /// Clip ratio.
    pub clip: Clip,
}

impl IntOptions {
    /// Symmetric, per tensor, no clipping.
    pub fn new(bits: u32) -> Self {
        IntOptions {
            bits,
            mapping: Mapping::Symmetric,
            granularity: Granularity::Tensor,
            clip: Clip::None,
        }
    }

    /// Elements per scale for `len` elements whose last axis is `row_len`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for bad widths, clip ratios or group sizes.
    pub fn group_len(&self, len: usize, row_len: usize) -> Result<usize> {
        if !(2..=16).contains(&self.bits) {
            return Err(Error::InvalidArgument(format!(
                "integer quantization takes 2 to 16 bits, not {}",
                self.bits
            )));
        }
        if let Clip::Ratio(c) = self.clip {
            if !(c > 0.0 && c <= 1.0) {
                return Err(Error::InvalidArgument(format!(
                    "the clip ratio {c} is outside (0, 1]"
                )));
            }
        }
        crate::block::rows_of(len, row_len)?;
        Ok(match self.granularity {
            Granularity::Tensor => len.max(1),
            Granularity::Channel => row_len,
            Granularity::Group(g) => {
                if g == 0 || !row_len.is_multiple_of(g) {
                    return Err(Error::InvalidArgument(format!(
                        "the group size {g} does not divide the last axis ({row_len}); choose a divisor"
                    )));
                }
                g
            }
        })
    }

    fn range(&self) -> (f64, f64) {
        let b = self.bits;
        match self.mapping {
            Mapping::Symmetric => {
                let m = ((1i64 << (b - 1)) - 1) as f64;
                (-m, m)
            }
            Mapping::SymmetricFull => (-((1i64 << (b - 1)) as f64), ((1i64 << (b - 1)) - 1) as f64),
            Mapping::Asymmetric => (0.0, ((1i64 << b) - 1) as f64),
        }
    }
}

/// The result of [`quantize_int`].
#[derive(Debug, Clone, PartialEq)]
pub struct IntQuantized<O> {
    /// `scale · (q − zero)`, in the input's shape.
    pub values: Vec<O>,
    /// The integers `q`, in the input's shape.
    pub q: Vec<i32>,
    /// One scale per group.
    pub scales: Vec<f64>,
    /// One zero point per group (0 for symmetric mappings).
    pub zeros: Vec<f64>,
    /// The clip ratio used per group.
    pub clips: Vec<f64>,
    /// Elements whose `q` was clamped to the range (clipped).
    pub clipped: u64,
    /// Nonzero elements that became 0.
    pub flushed: u64,
}

struct Group {
    scale: f64,
    zero: f64,
}

#[inline(always)]
fn params(x: &[f64], o: &IntOptions, c: f64) -> Group {
    let (qmin, qmax) = o.range();
    match o.mapping {
        Mapping::Symmetric | Mapping::SymmetricFull => {
            // (inputs are finite: a compare-select that vectorises)
            let amax = x
                .iter()
                .fold(0f64, |m, v| if v.abs() > m { v.abs() } else { m })
                * c;
            let den = match o.mapping {
                Mapping::Symmetric => qmax,
                _ => (qmax - qmin) / 2.0,
            };
            Group {
                scale: if amax > 0.0 { amax / den } else { 1.0 },
                zero: 0.0,
            }
        }
        Mapping::Asymmetric => {
            let lo = x
                .iter()
                .fold(f64::INFINITY, |m, &v| if v < m { v } else { m });
            let hi = x
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| if v > m { v } else { m });
            let mid = (lo + hi) / 2.0;
            let (lo, hi) = (mid + (lo - mid) * c, mid + (hi - mid) * c);
            let scale = if hi > lo { (hi - lo) / qmax } else { 1.0 };
            Group {
                scale,
                zero: (-lo / scale).round_ties_even().clamp(0.0, qmax),
            }
        }
    }
}

#[inline(always)]
fn q_of(x: f64, g: &Group, o: &IntOptions) -> (f64, bool) {
    let (qmin, qmax) = o.range();
    let r = (x / g.scale).round_ties_even() + g.zero;
    let q = r.clamp(qmin, qmax);
    (q, q != r)
}

#[inline(always)]
fn sse(x: &[f64], g: &Group, o: &IntOptions) -> f64 {
    x.iter()
        .map(|&v| {
            let (q, _) = q_of(v, g, o);
            let d = g.scale * (q - g.zero) - v;
            d * d
        })
        .sum()
}

/// Quantize `x` (`row_len` = the last axis) to `b`-bit integers and back.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for bad options, a group size that does not divide the last
/// axis, or NaN/Inf inputs (integer grids have no NaN).
///
/// ```
/// use lowprec::quant::{quantize_int, IntOptions, Granularity};
/// let x = [0.0f32, 0.5, -1.0, 0.25];
/// let q = quantize_int(&x, 4, &IntOptions::new(8)).unwrap();
/// assert_eq!(q.q, [0, 64, -127, 32]);
/// assert_eq!(q.scales, [1.0 / 127.0]);
/// let g = IntOptions { granularity: Granularity::Group(2), ..IntOptions::new(4) };
/// assert_eq!(quantize_int(&x, 4, &g).unwrap().scales.len(), 2);
/// ```
pub fn quantize_int<I: Float>(x: &[I], row_len: usize, o: &IntOptions) -> Result<IntQuantized<I>> {
    let glen = o.group_len(x.len(), row_len)?;
    let groups = x.len().div_ceil(glen).max(usize::from(x.is_empty()));
    let mut out = IntQuantized {
        values: vec![I::default(); x.len()],
        q: vec![0; x.len()],
        scales: vec![1.0; groups],
        zeros: vec![0.0; groups],
        clips: vec![1.0; groups],
        clipped: 0,
        flushed: 0,
    };
    let (clipped, flushed) = quantize_int_into(
        x,
        row_len,
        o,
        &mut out.values,
        &mut out.q,
        &mut out.scales,
        &mut out.zeros,
        &mut out.clips,
    )?;
    out.clipped = clipped;
    out.flushed = flushed;
    Ok(out)
}

/// [`quantize_int`] into the caller's buffers (`values` and `q` as long as `x`; `scales`,
/// `zeros` and `clips` one per group); returns (clipped, flushed).
///
/// # Errors
///
/// As [`quantize_int`], and [`Error::InvalidArgument`] for buffers of the wrong length.
#[allow(clippy::too_many_arguments)]
pub fn quantize_int_into<I: Float>(
    x: &[I],
    row_len: usize,
    o: &IntOptions,
    values: &mut [I],
    q: &mut [i32],
    scales: &mut [f64],
    zeros: &mut [f64],
    clips: &mut [f64],
) -> Result<(u64, u64)> {
    let glen = o.group_len(x.len(), row_len)?;
    let groups = x.len().div_ceil(glen).max(usize::from(x.is_empty()));
    if values.len() != x.len()
        || q.len() != x.len()
        || scales.len() != groups
        || zeros.len() != groups
        || clips.len() != groups
    {
        return Err(Error::InvalidArgument(format!(
            "integer quantization of {} elements in groups of {glen} needs {} values and codes and {groups} scales, zeros and clips",
            x.len(),
            x.len()
        )));
    }
    if x.is_empty() {
        return Ok((0, 0));
    }
    let per = (1 << 14) / glen + 1; // groups per work item
                                    // (the kernel counts NaN/Inf inputs as it goes; the error names the first one)
    let (clipped, flushed, bad) = x
        .par_chunks(glen * per)
        .zip(values.par_chunks_mut(glen * per))
        .zip(q.par_chunks_mut(glen * per))
        .zip(
            scales
                .par_chunks_mut(per)
                .zip(zeros.par_chunks_mut(per))
                .zip(clips.par_chunks_mut(per)),
        )
        .map(|(((x, v), q), ((s, z), cl))| {
            crate::simd::dispatch(Groups {
                o,
                glen,
                x,
                v,
                q,
                s,
                z,
                cl,
            })
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    if bad > 0 {
        let i = x.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
        return Err(Error::InvalidArgument(format!(
            "integer quantization needs finite inputs; index {i} is {:?}: remove NaN/Inf first",
            x[i].to_f64()
        )));
    }
    Ok((clipped, flushed))
}

/// One work item of integer quantization, compiled for the best instruction set.
struct Groups<'a, I: Float> {
    o: &'a IntOptions,
    glen: usize,
    x: &'a [I],
    v: &'a mut [I],
    q: &'a mut [i32],
    s: &'a mut [f64],
    z: &'a mut [f64],
    cl: &'a mut [f64],
}

impl<I: Float> crate::simd::Kernel for Groups<'_, I> {
    /// `(clipped, flushed, non-finite inputs)`.
    type Output = (u64, u64, u64);
    #[inline(always)]
    fn run(self) -> (u64, u64, u64) {
        let Groups {
            o,
            glen,
            x,
            v,
            q,
            s,
            z,
            cl,
        } = self;
        let (qmin, qmax) = o.range();
        let mut buf = vec![0f64; glen];
        let (mut clipped, mut flushed, mut bad) = (0u64, 0u64, 0u64);
        for (k, ((xg, vg), qg)) in x
            .chunks(glen)
            .zip(v.chunks_mut(glen))
            .zip(q.chunks_mut(glen))
            .enumerate()
        {
            let xs = &mut buf[..xg.len()];
            xs.iter_mut().zip(xg).for_each(|(a, b)| *a = b.to_f64());
            let finite = xs.iter().fold(0u32, |n, v| n + v.is_finite() as u32);
            if finite as usize != xs.len() {
                bad += (xs.len() - finite as usize) as u64;
                continue;
            }
            let c = match o.clip {
                Clip::None => 1.0,
                Clip::Ratio(c) => c,
                Clip::Mse => {
                    let mut best = (f64::INFINITY, 1.0);
                    for step in 0..=50 {
                        let c = 1.0 - step as f64 / 100.0;
                        let e = sse(xs, &params(xs, o, c), o);
                        if e < best.0 {
                            best = (e, c);
                        }
                    }
                    best.1
                }
            };
            let g = params(xs, o, c);
            let (scale, zero) = (g.scale, g.zero);
            for ((vv, qq), &xv) in vg.iter_mut().zip(qg.iter_mut()).zip(xs.iter()) {
                let r = (xv / scale).round_ties_even() + zero;
                let qc = r.clamp(qmin, qmax);
                clipped += (qc != r) as u64;
                let val = scale * (qc - zero);
                flushed += (val == 0.0 && xv != 0.0) as u64;
                *qq = qc as i32;
                *vv = I::from_f64(val);
            }
            s[k] = scale;
            z[k] = zero;
            cl[k] = c;
        }
        (clipped, flushed, bad)
    }
}

/// The `bits`-bit code of an integer `q` (two's complement for symmetric mappings, plain
/// for asymmetric ones), for packing.
pub fn int_code(q: i32, bits: u32) -> u16 {
    (q as u32 & ((1u32 << bits) - 1)) as u16
}
