//! NVFP4: blocks of 16 FP4 E2M1 elements, each block with an FP8 E4M3 scale, and one FP32
//! scale for the tensor. Two conventions, side by side:
//!
//! | step | `seed` (default; `shared/seeds/numfmt.py`, nvfp4.csv) | `torchao` (`nvfp4_quantize` with a per-tensor scale) |
//! |---|---|---|
//! | arithmetic | binary64, in the order below | binary32 |
//! | tensor scale | `g = RN32(amax / 2688)`, `2688 = 6 · 448` | `g = amax ⊘ 2688` |
//! | block scale | `s_b = E4M3_sat(RN64(RN64(bmax / 6) / g))`; may be subnormal or 0 | `s_b = E4M3(clamp(RN32(RN32(bmax / 6) / g), 2^−6, 448))` |
//! | element | `q = E2M1_sat(RN64(x / (s_b · g)))`; a block with `s_b · g = 0` gives +0 | `q = E2M1(clamp(x ⊗ RN32(RN32(1 / g) / s_b), ±6))`; −0 stays −0 |
//! | value | `q · s_b · g` (exact) | `q · s_b · g` (exact) |
//!
//! `amax = 0` gives all-zero outputs, codes 0, `g = 0`. `g` is the *decode* scale (NVIDIA's
//! documents often store its reciprocal `2688 / amax`). In the torchao convention exact E2M1
//! ties may fall on either side, because the reciprocal is rounded.

use super::{rows_of, BlockStatus};
use crate::error::{Error, Result};
use crate::round::{Float, Overflow, RoundOptions, Rounder};
use crate::FloatFormat;

/// Elements per NVFP4 block.
pub const BLOCK: usize = 16;

/// Which definition of NVFP4 to follow (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Convention {
    /// The seed's binary64 definition (nvfp4.csv).
    #[default]
    Seed,
    /// torchao's binary32 arithmetic with clamped block scales and a reciprocal.
    Torchao,
}

impl Convention {
    /// Parse `seed` or `torchao`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the two conventions.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "seed" => Ok(Convention::Seed),
            "torchao" => Ok(Convention::Torchao),
            _ => Err(Error::InvalidArgument(format!(
                "unknown NVFP4 convention `{s}`; use seed or torchao"
            ))),
        }
    }

    /// `seed` or `torchao`.
    pub fn name(self) -> &'static str {
        match self {
            Convention::Seed => "seed",
            Convention::Torchao => "torchao",
        }
    }
}

/// Every choice of an NVFP4 conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Nvfp4Options {
    /// The convention.
    pub convention: Convention,
    /// Zero-pad the last block of rows whose length is not a multiple of 16 (else refuse).
    pub pad: bool,
}

/// The result of [`nvfp4_quantize`].
#[derive(Debug, Clone, PartialEq)]
pub struct Nvfp4Quantized<O> {
    /// Values `q · s_b · g`, in the input's shape.
    pub values: Vec<O>,
    /// E2M1 codes, one byte each, in the input's shape.
    pub codes: Vec<u8>,
    /// E4M3 block-scale codes, `rows × blocks_per_row`.
    pub scales: Vec<u8>,
    /// The tensor scale `g` (a binary32 value).
    pub tensor_scale: f32,
    /// What happened.
    pub status: BlockStatus,
}

/// Scales per row of `row_len` elements.
pub fn blocks_per_row(row_len: usize) -> usize {
    row_len.div_ceil(BLOCK)
}

fn check(len: usize, row_len: usize, opts: &Nvfp4Options) -> Result<usize> {
    let rows = rows_of(len, row_len)?;
    if !row_len.is_multiple_of(BLOCK) && !opts.pad {
        return Err(Error::InvalidArgument(format!(
            "the last axis ({row_len}) is not a multiple of NVFP4's block of 16; \
             ask for zero padding (:pad) or reshape"
        )));
    }
    Ok(rows)
}

/// The NVFP4 conversion of `x` (`row_len` = the last axis) into `values`, E2M1 `codes` and
/// E4M3 block `scales`; returns the tensor scale `g` and what happened.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for lengths that do not fit `row_len`, a last axis that is
/// not a multiple of 16 (without `pad`), or NaN/Inf inputs (NVFP4 has no NaN scale: remove
/// them first).
///
/// ```
/// use lowprec::block::nvfp4::{nvfp4_quantize, Nvfp4Options};
/// let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
/// let q = nvfp4_quantize(&x, 16, &Nvfp4Options::default()).unwrap();
/// assert_eq!(q.tensor_scale, 15.0 / 2688.0);
/// assert_eq!(q.values[15], 15.0); // the block maximum lands on 6 · s_b · g
/// ```
pub fn nvfp4_quantize_into<I: Float, O: Float>(
    x: &[I],
    row_len: usize,
    opts: &Nvfp4Options,
    values: &mut [O],
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<(f32, BlockStatus)> {
    let rows = check(x.len(), row_len, opts)?;
    let nb = blocks_per_row(row_len);
    if values.len() != x.len() || codes.len() != x.len() || scales.len() != rows * nb {
        return Err(Error::InvalidArgument(format!(
            "NVFP4 outputs: values and codes need {} elements, scales {} (got {}, {}, {})",
            x.len(),
            rows * nb,
            values.len(),
            codes.len(),
            scales.len()
        )));
    }
    let amax = super::max_abs(x);
    if !amax.is_finite() {
        let i = x.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
        return Err(Error::InvalidArgument(format!(
            "NVFP4 input has NaN or Inf (first at index {i}); NVFP4 has no NaN scale: remove or replace them first"
        )));
    }
    let mut st = BlockStatus {
        elements: x.len() as u64,
        blocks: (rows * nb) as u64,
        ..BlockStatus::default()
    };
    if amax == 0.0 {
        values.iter_mut().zip(x).for_each(|(v, x)| {
            *v = match opts.convention {
                Convention::Seed => O::from_f64(0.0),
                Convention::Torchao => O::from_f64(x.to_f64()), // keeps −0
            }
        });
        codes.iter_mut().zip(x).for_each(|(c, x)| {
            *c = match opts.convention {
                Convention::Seed => 0,
                Convention::Torchao => (x.to_f64().is_sign_negative() as u8) << 3,
            }
        });
        scales.iter_mut().for_each(|s| *s = 0);
        return Ok((0.0, st));
    }
    let g: f32 = match opts.convention {
        Convention::Seed => (amax / 2688.0) as f32,
        Convention::Torchao => (amax as f32) / 2688.0f32,
    };
    let ctx = Ctx::new(opts.convention, g as f64);
    let inner = super::convert(&ctx, x, row_len, BLOCK, CHUNK, values, codes, scales);
    st.saturated = inner.saturated;
    st.flushed = inner.flushed;
    Ok((g, st))
}

const CHUNK: usize = 4096;

struct Ctx {
    conv: Convention,
    g: f64,
    e4m3: Rounder<f64>,
    e2m1: Rounder<f64>,
    e2m1_32: Rounder<f32>,
    e4m3_vals: [f64; 256],
    e2m1_vals: [f64; 16],
}

impl Ctx {
    fn new(conv: Convention, g: f64) -> Self {
        let sat = RoundOptions::default().overflow(Overflow::Saturate);
        let mut e4m3_vals = [0.0; 256];
        e4m3_vals
            .iter_mut()
            .enumerate()
            .for_each(|(c, v)| *v = FloatFormat::FP8_E4M3.decode(c as u64));
        let mut e2m1_vals = [0.0; 16];
        e2m1_vals
            .iter_mut()
            .enumerate()
            .for_each(|(c, v)| *v = FloatFormat::FP4_E2M1.decode(c as u64));
        Ctx {
            conv,
            g,
            e4m3: Rounder::new(&FloatFormat::FP8_E4M3, &sat),
            e2m1: Rounder::new(&FloatFormat::FP4_E2M1, &sat),
            e2m1_32: Rounder::new(&FloatFormat::FP4_E2M1, &sat),
            e4m3_vals,
            e2m1_vals,
        }
    }

    /// Whole rows of `seg` elements; blocks of 16 along each row, the last one partial. Every
    /// step runs over the whole work item: block maxima, one E4M3 rounding of every block
    /// scale, every element divided by its block's scale, one E2M1 rounding, the values.
    #[inline(always)]
    fn rows_of<I: Float, O: Float>(
        &self,
        x: &[I],
        seg: usize,
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        let n = x.len();
        let nblk = s.len();
        let mut st = BlockStatus::default();
        // 1. block maxima → block-scale arguments → E4M3 codes → block scales
        let mut arg = vec![0f64; nblk];
        let mut scale = vec![0f64; nblk];
        let mut k = 0;
        for row in x.chunks(seg) {
            for blk in row.chunks(BLOCK) {
                let bmax = super::max_abs_serial(blk);
                arg[k] = match self.conv {
                    Convention::Seed => (bmax / 6.0) / self.g,
                    Convention::Torchao => (((bmax as f32) / 6.0f32) / self.g as f32)
                        .clamp(2f32.powi(-6), 448.0)
                        as f64,
                };
                k += 1;
            }
        }
        self.e4m3.encode(&arg, s, 0);
        scale
            .iter_mut()
            .zip(s.iter())
            .for_each(|(sc, &code)| *sc = self.e4m3_vals[code as usize] * self.g);
        // 2. elements over their block's scale, then E2M1 for all of them at once
        let mut k = 0;
        let mut at = 0;
        match self.conv {
            Convention::Seed => {
                let mut y = vec![0f64; n];
                for row in x.chunks(seg) {
                    for blk in row.chunks(BLOCK) {
                        let div = if scale[k] > 0.0 { scale[k] } else { 1.0 };
                        y[at..at + blk.len()]
                            .iter_mut()
                            .zip(blk)
                            .for_each(|(y, e)| *y = e.to_f64() / div);
                        at += blk.len();
                        k += 1;
                    }
                }
                st.saturated = self.e2m1.encode(&y, c, 0).saturated;
            }
            Convention::Torchao => {
                let mut y = vec![0f32; n];
                for row in x.chunks(seg) {
                    for blk in row.chunks(BLOCK) {
                        let rcp = (1.0f32 / self.g as f32) / self.e4m3_vals[s[k] as usize] as f32;
                        y[at..at + blk.len()]
                            .iter_mut()
                            .zip(blk)
                            .for_each(|(y, e)| *y = (e.to_f64() as f32) * rcp);
                        at += blk.len();
                        k += 1;
                    }
                }
                st.saturated = self.e2m1_32.encode(&y, c, 0).saturated;
            }
        }
        // 3. values (a block whose scale is not positive gives +0 under the seed's rule)
        let mut k = 0;
        let mut at = 0;
        for row in x.chunks(seg) {
            for blk in row.chunks(BLOCK) {
                let sc = scale[k];
                let (cb, vb) = (&mut c[at..at + blk.len()], &mut v[at..at + blk.len()]);
                if self.conv == Convention::Seed && (sc <= 0.0 || sc.is_nan()) {
                    cb.iter_mut().for_each(|c| *c = 0);
                }
                // ±0 · sc keeps the sign of zero; a non-positive (or NaN) scale has codes 0
                let sc = if sc > 0.0 { sc } else { 0.0 };
                vb.iter_mut()
                    .zip(cb.iter())
                    .for_each(|(v, &c)| *v = O::from_f64(self.e2m1_vals[(c & 15) as usize] * sc));
                st.flushed += cb
                    .iter()
                    .zip(blk)
                    .filter(|(&c, e)| c & 7 == 0 && e.to_f64() != 0.0)
                    .count() as u64;
                at += blk.len();
                k += 1;
            }
        }
        st
    }
}

impl<I: Float, O: Float> super::RowKernel<I, O> for Ctx {
    #[inline(always)]
    fn rows(&self, x: &[I], seg: usize, v: &mut [O], c: &mut [u8], s: &mut [u8]) -> BlockStatus {
        self.rows_of(x, seg, v, c, s)
    }
}

/// [`nvfp4_quantize_into`] into new vectors (values in the input's type, rounded to nearest
/// when binary32 cannot hold the exact `q · s_b · g`).
///
/// # Errors
///
/// As [`nvfp4_quantize_into`].
pub fn nvfp4_quantize<I: Float>(
    x: &[I],
    row_len: usize,
    opts: &Nvfp4Options,
) -> Result<Nvfp4Quantized<I>> {
    let rows = check(x.len(), row_len, opts)?;
    let mut values = vec![I::default(); x.len()];
    let mut codes = vec![0u8; x.len()];
    let mut scales = vec![0u8; rows * blocks_per_row(row_len)];
    let (g, status) = nvfp4_quantize_into(x, row_len, opts, &mut values, &mut codes, &mut scales)?;
    Ok(Nvfp4Quantized {
        values,
        codes,
        scales,
        tensor_scale: g,
        status,
    })
}

/// Values from E2M1 codes, E4M3 block-scale codes and the tensor scale: `q · s_b · g`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for inconsistent lengths.
pub fn nvfp4_dequantize_into<O: Float>(
    codes: &[u8],
    scales: &[u8],
    tensor_scale: f32,
    row_len: usize,
    out: &mut [O],
) -> Result<()> {
    let rows = rows_of(codes.len(), row_len)?;
    let nb = blocks_per_row(row_len);
    if scales.len() != rows * nb || out.len() != codes.len() {
        return Err(Error::InvalidArgument(format!(
            "NVFP4 dequantize: {} codes need {} scales and {} outputs (got {}, {})",
            codes.len(),
            rows * nb,
            codes.len(),
            scales.len(),
            out.len()
        )));
    }
    for (r, (crow, orow)) in codes
        .chunks(row_len)
        .zip(out.chunks_mut(row_len))
        .enumerate()
    {
        for (j, (cb, ob)) in crow.chunks(BLOCK).zip(orow.chunks_mut(BLOCK)).enumerate() {
            let scale =
                FloatFormat::FP8_E4M3.decode(scales[r * nb + j] as u64) * tensor_scale as f64;
            ob.iter_mut().zip(cb).for_each(|(o, &c)| {
                let q = FloatFormat::FP4_E2M1.decode(c as u64 & 0xf);
                *o = O::from_f64(if q == 0.0 { q } else { q * scale });
            });
        }
    }
    Ok(())
}
