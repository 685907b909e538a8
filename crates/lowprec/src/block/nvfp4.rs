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

use super::fused::{self, Elem, Split};
use super::lookup;
use super::{rows_of, BlockStatus};
use crate::error::{Error, Result};
use crate::round::types::Word;
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
    /// NVIDIA TransformerEngine's recipe: an encode scale `S = 2688 ⊘ amax`, block scales
    /// rounded once with no lower clamp, the multiplier `min(1 ⊘ (s_b ⊗ (1 ⊘ S)), FLT_MAX)`.
    Te,
}

impl Convention {
    /// Parse `seed`, `torchao` or `te`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the two conventions.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "seed" => Ok(Convention::Seed),
            "torchao" => Ok(Convention::Torchao),
            "te" | "transformerengine" => Ok(Convention::Te),
            _ => Err(Error::InvalidArgument(format!(
                "unknown NVFP4 convention `{s}`; use seed (binary64), torchao (binary32) or te (TransformerEngine)"
            ))),
        }
    }

    /// `seed`, `torchao` or `te`.
    pub fn name(self) -> &'static str {
        match self {
            Convention::Seed => "seed",
            Convention::Torchao => "torchao",
            Convention::Te => "te",
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
    I::nvfp4_quantize_into(x, row_len, opts, O::floats_mut(values), codes, scales)
}

/// [`nvfp4_quantize_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn nvfp4_quantize_into_generic<I: Float, O: Float>(
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
    convert_into(x, row_len, rows * nb, opts, values, codes, scales, None)
}

/// The NVFP4 codes of `x` without the values: E2M1 `codes`, E4M3 block `scales` and the
/// tensor scale, exactly those of [`nvfp4_quantize_into`] (the quantization proper; a third
/// less memory traffic).
///
/// # Errors
///
/// As [`nvfp4_quantize_into`].
///
/// ```
/// use lowprec::block::nvfp4::{nvfp4_encode_into, Nvfp4Options};
/// let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
/// let (mut c, mut s) = (vec![0u8; 16], vec![0u8; 1]);
/// let (g, _) = nvfp4_encode_into(&x, 16, &Nvfp4Options::default(), &mut c, &mut s).unwrap();
/// assert_eq!((g, c[15], s[0]), (15.0 / 2688.0, 0b0111, 0x7e)); // 6 · 448 · g = 15
/// ```
pub fn nvfp4_encode_into<I: Float>(
    x: &[I],
    row_len: usize,
    opts: &Nvfp4Options,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<(f32, BlockStatus)> {
    I::nvfp4_encode_into(x, row_len, opts, codes, scales)
}

/// [`nvfp4_encode_into`] of a piece of whole rows of a tensor whose largest magnitude is
/// `tensor_amax` (the tensor scale's source; `None`: the piece is the tensor).
pub(crate) fn encode_piece_into<I: Float>(
    x: &[I],
    row_len: usize,
    opts: &Nvfp4Options,
    tensor_amax: Option<f64>,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<(f32, BlockStatus)> {
    let rows = check(x.len(), row_len, opts)?;
    let nb = blocks_per_row(row_len);
    if codes.len() != x.len() || scales.len() != rows * nb {
        return Err(Error::InvalidArgument(format!(
            "NVFP4 codes: codes need {} elements, scales {} (got {}, {})",
            x.len(),
            rows * nb,
            codes.len(),
            scales.len()
        )));
    }
    let none: &mut [I] = &mut [];
    convert_into(
        x,
        row_len,
        rows * nb,
        opts,
        none,
        codes,
        scales,
        tensor_amax,
    )
}

/// The conversion behind both entry points (`values` empty: codes only); `tensor_amax`: `x`
/// is a piece of a tensor of that largest magnitude.
#[allow(clippy::too_many_arguments)]
fn convert_into<I: Float, O: Float>(
    x: &[I],
    row_len: usize,
    blocks: usize,
    opts: &Nvfp4Options,
    values: &mut [O],
    codes: &mut [u8],
    scales: &mut [u8],
    tensor_amax: Option<f64>,
) -> Result<(f32, BlockStatus)> {
    // binary32 rows of whole blocks: the first pass keeps every block maximum, which the
    // element pass then reads (all but TE's codes on AVX-512, whose kernel finds its own)
    let lookup = opts.convention == Convention::Seed
        && row_len.is_multiple_of(BLOCK)
        && (values.is_empty() || O::MANT == f32::MANT);
    let te_own = opts.convention == Convention::Te
        && values.is_empty()
        && crate::simd::active() == crate::simd::Level::Avx512;
    let first = row_len.is_multiple_of(BLOCK) && !te_own;
    let (amax, bm) = match I::as_f32_slice(x) {
        Some(x32) if first => {
            let (bm, m) = super::block_maxima_and_max(x32, BLOCK);
            (f32::from_bits(m) as f64, bm)
        }
        _ => (super::max_abs(x), vec![]),
    };
    if !amax.is_finite() {
        let i = x.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
        return Err(Error::InvalidArgument(format!(
            "NVFP4 input has NaN or Inf (first at index {i}); NVFP4 has no NaN scale: remove or replace them first"
        )));
    }
    let amax = tensor_amax.unwrap_or(amax);
    let mut st = BlockStatus {
        elements: x.len() as u64,
        blocks: blocks as u64,
        ..BlockStatus::default()
    };
    // an all-zero tensor: zero codes, scales and tensor scale (TE: S = 1, every block scale
    // 0, below)
    if amax == 0.0 && opts.convention != Convention::Te {
        let torchao = opts.convention == Convention::Torchao;
        values.iter_mut().zip(x).for_each(|(v, x)| {
            // torchao keeps −0
            *v = O::from_f64(if torchao { x.to_f64() } else { 0.0 })
        });
        codes.iter_mut().zip(x).for_each(|(c, x)| {
            *c = ((torchao && x.to_f64().is_sign_negative()) as u8) << 3;
        });
        scales.iter_mut().for_each(|s| *s = 0);
        return Ok((0.0, st));
    }
    let (g, s_enc): (f32, f32) = match opts.convention {
        Convention::Seed => ((amax / 2688.0) as f32, 0.0),
        Convention::Torchao => ((amax as f32) / 2688.0f32, 0.0),
        Convention::Te => te_scale(amax),
    };
    if opts.convention == Convention::Te && values.is_empty() && row_len.is_multiple_of(BLOCK) {
        if let Some((saturated, flushed)) =
            I::as_f32_slice(x).and_then(|x32| te_codes(x32, None, s_enc, codes, scales))
        {
            st.saturated = saturated;
            st.flushed = flushed;
            return Ok((g, st));
        }
    }
    let mut ctx = Ctx::new(opts.convention, g as f64);
    ctx.s_enc = s_enc;
    if lookup && !bm.is_empty() {
        ctx.lookup = Lookup::new(g as f64, &ctx.e4m3_vals);
    }
    ctx.bm = bm;
    if values.is_empty() && I::as_f32_slice(x).is_some() {
        ctx.mul32 = ctx.multipliers();
    }
    let inner = super::convert(&ctx, x, row_len, BLOCK, CHUNK, values, codes, scales);
    st.saturated = inner.saturated;
    st.flushed = inner.flushed;
    Ok((g, st))
}

const CHUNK: usize = 4096;

/// TransformerEngine's tensor scales of a tensor of largest magnitude `amax`: the decode
/// scale `g = 1 ⊘ S` and the encode scale `S = min(2688 ⊘ amax, FLT_MAX)` (1 when `amax`
/// is 0 or `S` underflows to 0).
fn te_scale(amax: f64) -> (f32, f32) {
    let a = amax as f32;
    let s = (2688.0f32 / a).min(f32::MAX);
    let s = if a == 0.0 || s == 0.0 { 1.0 } else { s };
    (1.0 / s, s)
}

/// TE's codes and block scales of whole blocks of binary32 (after the rotation `rht`, when
/// given) by the AVX-512 kernel, in parallel pieces for long inputs: `(saturated,
/// flushed)`, or `None` (nothing written) without AVX-512.
fn te_codes(
    x: &[f32],
    rht: Option<(&[f32; 16], f32)>,
    s_enc: f32,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Option<(u64, u64)> {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 14;
    let lut = lookup::lut_exact();
    if x.len() < super::PARALLEL_MIN {
        return crate::simd::te_codes(x, rht, s_enc, &lut, codes, scales);
    }
    x.par_chunks(PIECE)
        .zip(codes.par_chunks_mut(PIECE))
        .zip(scales.par_chunks_mut(PIECE / BLOCK))
        .map(|((x, c), s)| crate::simd::te_codes(x, rht, s_enc, &lut, c, s))
        .try_reduce(|| (0, 0), |a, b| Some((a.0 + b.0, a.1 + b.1)))
}

/// TE's NVFP4 codes of binary32 `x` (rows of `row_len`, a multiple of 16) after TE's
/// 16-point Hadamard transform with signs `signs`, factor `k` and BF16 output
/// (`rht16:bf16+nvfp4:convention=te`), without holding the rotated tensor: one pass rotates
/// and keeps the largest magnitude (the tensor scale's source), the second rotates each
/// group of blocks in registers and encodes it. `(g, status)` as [`nvfp4_encode_into`] of
/// the rotated tensor gives them, or `None`, with nothing written, when there is no
/// AVX-512 kernel, the rows do not hold whole blocks, or a rotated value is NaN or infinite
/// (the general path then says which).
pub(crate) fn rht16_te_codes(
    x: &[f32],
    row_len: usize,
    signs: &[f32; 16],
    k: f32,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Option<(f32, BlockStatus)> {
    use rayon::prelude::*;
    let blocks = x.len() / BLOCK;
    if x.is_empty()
        || !row_len.is_multiple_of(BLOCK)
        || !x.len().is_multiple_of(row_len.max(1))
        || codes.len() != x.len()
        || scales.len() != blocks
    {
        return None;
    }
    let piece_max = |p: &[f32]| crate::simd::rht16_bf16_max(p, signs, k);
    let m = if x.len() >= super::PARALLEL_MIN {
        x.par_chunks(1 << 14)
            .map(piece_max)
            .try_reduce(|| 0, |a, b| Some(a.max(b)))?
    } else {
        piece_max(x)?
    };
    let amax = f32::from_bits(m);
    if !amax.is_finite() {
        return None;
    }
    let (g, s_enc) = te_scale(amax as f64);
    let (saturated, flushed) = te_codes(x, Some((signs, k)), s_enc, codes, scales)?;
    let st = BlockStatus {
        elements: x.len() as u64,
        blocks: blocks as u64,
        saturated,
        flushed,
        ..BlockStatus::default()
    };
    Some((g, st))
}

/// The per-block factors of a work item: the seed's divisor `s_b · g` (1 for a zero
/// scale), its binary32 reciprocal (torchao: `RN32(RN32(1/g) / s_b)`), and the value scale.
struct Factors<'a> {
    fac: &'a [f64],
    fac32: &'a [f32],
    sc: &'a [f64],
    /// `sc` split for values in binary32 lanes ([`fused::Split`]), when every block's is
    /// exact and the values are binary32.
    split: Option<&'a [Split]>,
}

/// The per-call state of the seed's binary32 path ([`Ctx::seed_lookup`]).
struct Lookup {
    /// `RN64(1 / (6g))` (`6g` is exact): the block-scale arguments by one product.
    inv6g: f64,
    /// Per E4M3 code `c` of value `e`: `RN32(RN64(1 / (e · g)))`, 0 for `e = 0`.
    recip: [f32; 256],
    /// Per E4M3 code: `RN32(q · e · g)` for the eight E2M1 magnitudes `q` (exact products).
    vtab: Vec<[f32; 8]>,
    /// The E2M1 quarter table ([`lookup::lut`]).
    lut: [u32; 32],
}

impl Lookup {
    /// The state for tensor scale `g` (the block maxima are [`Ctx::bm`]), or `None` when a
    /// positive E4M3 scale would give a reciprocal that is not a normal binary32 (tensors
    /// with `amax` below about `4·10^−33`: they divide).
    fn new(g: f64, e4m3_vals: &[f64; 256]) -> Option<Lookup> {
        const E2M1: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        if g <= 0.0 {
            return None;
        }
        let mut recip = [0f32; 256];
        let mut vtab = vec![[0f32; 8]; 256];
        for c in 1..=0x7e {
            let sc = e4m3_vals[c] * g;
            recip[c] = (1.0 / sc) as f32;
            if !recip[c].is_normal() {
                return None;
            }
            vtab[c] = E2M1.map(|q| (q * sc) as f32);
        }
        Some(Lookup {
            inv6g: 1.0 / (6.0 * g),
            recip,
            vtab,
            lut: lookup::lut(),
        })
    }
}

struct Ctx {
    conv: Convention,
    g: f64,
    /// TransformerEngine's encode scale `S` (`te` only).
    s_enc: f32,
    /// E2M1's one-pass element step in binary64 (seed) and binary32 (torchao).
    fused64: Elem<f64>,
    fused32: Elem<f32>,
    /// E4M3's one-pass step in binary64, for the block scales of the lookup path.
    e4m3_64: Elem<f64>,
    /// The seed's binary32 lookup path, when it applies.
    lookup: Option<Lookup>,
    /// torchao's and TE's multipliers per scale code ([`Ctx::multipliers`]), for their
    /// codes of binary32 inputs.
    mul32: Option<[f32; 128]>,
    /// Every block's largest magnitude bits from the first pass (sixteen per entry), for
    /// binary32 rows of whole blocks; empty otherwise (the element pass finds them).
    bm: Vec<[u32; 16]>,
    /// The exact E2M1 quarter table ([`lookup::lut_exact`]): torchao's and TE's codes of
    /// binary32 inputs, `y = |x| ⊗ m_k` rounded by table.
    lut_exact: [u32; 32],
    e4m3: Rounder<f64>,
    e4m3_32: Rounder<f32>,
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
            s_enc: 0.0,
            fused64: Elem::new(&FloatFormat::FP4_E2M1).expect("E2M1 has a fused step"),
            fused32: Elem::new(&FloatFormat::FP4_E2M1).expect("E2M1 has a fused step"),
            e4m3_64: Elem::new(&FloatFormat::FP8_E4M3).expect("E4M3 has a fused step"),
            lookup: None,
            mul32: None,
            bm: vec![],
            lut_exact: lookup::lut_exact(),
            e4m3: Rounder::new(&FloatFormat::FP8_E4M3, &sat),
            e4m3_32: Rounder::new(&FloatFormat::FP8_E4M3, &sat),
            e2m1: Rounder::new(&FloatFormat::FP4_E2M1, &sat),
            e2m1_32: Rounder::new(&FloatFormat::FP4_E2M1, &sat),
            e4m3_vals,
            e2m1_vals,
        }
    }

    /// TransformerEngine's block-scale argument `min(bmax ⊗ (S ⊗ RN32(1/6)), 448)` (rounded
    /// once into E4M3 after).
    #[inline(always)]
    fn te_arg(&self, bmax: f32) -> f32 {
        (bmax * (self.s_enc * (1.0f32 / 6.0f32))).min(448.0)
    }

    /// torchao's block-scale argument `clamp((bmax ⊘ 6) ⊘ g, 2^−6, 448)` in binary32.
    #[inline(always)]
    fn torchao_arg(&self, bmax: f32) -> f32 {
        ((bmax / 6.0f32) / self.g as f32).clamp(2f32.powi(-6), 448.0)
    }

    /// torchao's and TE's element multiplier of every non-negative E4M3 scale code (the
    /// binary32 `m_k` of the element pass: `RN32(1/g) ⊘ e` and [`Ctx::te_mul`]); `None`
    /// for the seed, which divides in binary64.
    fn multipliers(&self) -> Option<[f32; 128]> {
        let inv_g32 = 1.0f32 / self.g as f32;
        let e = |c: usize| self.e4m3_vals[c] as f32;
        match self.conv {
            Convention::Seed => None,
            Convention::Torchao => Some(std::array::from_fn(|c| inv_g32 / e(c))),
            Convention::Te => Some(std::array::from_fn(|c| self.te_mul(e(c)))),
        }
    }

    /// torchao's and TE's codes and block scales of binary32 `x` (whole blocks of 16;
    /// block `at` of the call first) with the multipliers `mul` of [`Ctx::multipliers`]:
    /// every block-scale argument in binary32, their E4M3 codes by one rounding call, then
    /// the product `|x| ⊗ m_k` and its E2M1 code by the exact quarter table (the element
    /// pass's binary32 operations; `lookup`'s tests compare the table with the fused
    /// step, `tests/schemes.rs` this route with the general engine). `None` for the seed.
    #[inline(always)]
    fn codes32(
        &self,
        mul: &[f32; 128],
        at: usize,
        x: &[f32],
        c: &mut [u8],
        s: &mut [u8],
    ) -> Option<BlockStatus> {
        const STACK: usize = CHUNK / BLOCK;
        let nblk = s.len();
        let (mut arg_s, mut fac_s, mut bm_s) = ([0f32; STACK], [0f32; STACK], [0u32; STACK]);
        let (mut arg_h, mut fac_h, mut bm_h) = (vec![], vec![], vec![]);
        let arg = super::scratch(&mut arg_s, &mut arg_h, nblk, 0.0);
        let fac = super::scratch(&mut fac_s, &mut fac_h, nblk, 0.0);
        let bm: &[u32] = if self.bm.is_empty() {
            let bm = super::scratch(&mut bm_s, &mut bm_h, nblk, 0);
            fused::block_maxima(x, BLOCK, bm);
            bm
        } else {
            &self.bm.as_flattened()[at..at + nblk]
        };
        let arg_of = |m: &u32| f32::from_bits(*m);
        match self.conv {
            // (the seed's arguments are binary64: it has no multipliers)
            Convention::Seed => return None,
            Convention::Torchao => {
                (arg.iter_mut().zip(bm)).for_each(|(a, m)| *a = self.torchao_arg(arg_of(m)))
            }
            Convention::Te => {
                (arg.iter_mut().zip(bm)).for_each(|(a, m)| *a = self.te_arg(arg_of(m)))
            }
        }
        // arguments in [0, 448]: codes 0..=0x7e
        self.e4m3_32.encode(arg, s, 0);
        fac.iter_mut()
            .zip(s.iter())
            .for_each(|(f, &k)| *f = mul[k as usize & 0x7f]);
        let (saturated, flushed) =
            lookup::e2m1_exact_blocks(&self.lut_exact, x, BLOCK, fac, &[], c, &mut []);
        // a zero scale (code 0; torchao's arguments are at least 2^−6) flushes its block
        let zero = (0..nblk).filter(|&k| s[k] == 0);
        Some(BlockStatus {
            saturated,
            flushed: flushed + Self::zero_scale_flushed(zero, c, x),
            ..BlockStatus::default()
        })
    }

    /// TransformerEngine's element multiplier for a block scale of value `e`:
    /// `min(1 ⊘ (e ⊗ (1 ⊘ S)), FLT_MAX)` (`FLT_MAX` for a zero scale).
    #[inline(always)]
    fn te_mul(&self, e: f32) -> f32 {
        (1.0f32 / (e * (1.0f32 / self.s_enc))).min(f32::MAX)
    }

    /// Whole blocks of 16: every block scale first (one E4M3 rounding call for the item),
    /// then one vector pass of scale, round, code and value ([`fused::blocks`]); blocks whose
    /// scale is zero (seed) are rewritten afterwards.
    ///
    /// The seed's element is `E2M1(RN64(x / s))` with `s = s_b · g` exact in binary64 (at most
    /// 28 significant bits). For binary32 `x` that equals `E2M1(x / s)` of the exact quotient:
    /// a midpoint `μ` of E2M1 (at most 3 bits) has `μ · s` exact, so `x ≠ μ · s` puts `x / s`
    /// at least `2^−31 · μ` from `μ`, far beyond the `2^−53` that `RN64` moves it. Binary32
    /// inputs therefore take [`Ctx::seed_lookup`] (a product with `RN32(1/s)` and a table,
    /// blocks near a midpoint redone by division); binary64 inputs divide.
    #[inline(always)]
    fn rows_fused<I: Float, O: Float>(
        &self,
        at: usize,
        x: &[I],
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        const STACK: usize = CHUNK / BLOCK;
        let nblk = s.len();
        // torchao's and TE's codes of binary32 inputs
        if let (Some(mul), true, Some(x32)) = (&self.mul32, v.is_empty(), I::as_f32_slice(x)) {
            if let Some(st) = self.codes32(mul, at, x32, c, s) {
                return st;
            }
        }
        if let (Some(lk), Some(x32)) = (&self.lookup, I::as_f32_slice(x)) {
            let bm = &self.bm.as_flattened()[at..at + nblk];
            return match O::as_f32_slice_mut(v) {
                Some(v32) => self.seed_lookup(lk, bm, x32, v32, c, s),
                None => self.seed_lookup(lk, bm, x32, &mut [], c, s),
            };
        }
        let (mut arg_s, mut fac_s, mut sc_s) = ([0f64; STACK], [0f64; STACK], [0f64; STACK]);
        let (mut fac32_s, mut bm_s) = ([0f32; STACK], [<I::Bits as Word>::ZERO; STACK]);
        let (mut arg_h, mut fac_h, mut sc_h, mut fac32_h) = (vec![], vec![], vec![], vec![]);
        let mut bm_h = vec![];
        let arg = super::scratch(&mut arg_s, &mut arg_h, nblk, 0.0);
        let fac = super::scratch(&mut fac_s, &mut fac_h, nblk, 0.0);
        let sc = super::scratch(&mut sc_s, &mut sc_h, nblk, 0.0);
        let fac32 = super::scratch(&mut fac32_s, &mut fac32_h, nblk, 0.0);
        let bm = super::scratch(&mut bm_s, &mut bm_h, nblk, <I::Bits as Word>::ZERO);
        // the first pass's maxima where it kept them (binary32: the same bits)
        let first = (!self.bm.is_empty()).then(|| &self.bm.as_flattened()[at..at + nblk]);
        if first.is_none() {
            fused::block_maxima(x, BLOCK, bm);
        }
        let (g, g32) = (self.g, self.g as f32);
        let bmax = (0..nblk).map(|k| match first {
            Some(m) => f64::from(f32::from_bits(m[k])),
            None => I::from_bits(bm[k]).to_f64(),
        });
        match self.conv {
            Convention::Seed => arg
                .iter_mut()
                .zip(bmax)
                .for_each(|(a, m)| *a = (m / 6.0) / g),
            Convention::Torchao => arg
                .iter_mut()
                .zip(bmax)
                .for_each(|(a, m)| *a = self.torchao_arg(m as f32) as f64),
            Convention::Te => arg
                .iter_mut()
                .zip(bmax)
                .for_each(|(a, m)| *a = self.te_arg(m as f32) as f64),
        }
        self.e4m3.encode(arg, s, 0);
        let inv_g32 = 1.0f32 / g32;
        for k in 0..nblk {
            let e = self.e4m3_vals[s[k] as usize];
            let scale = e * g;
            // ±0 · sc keeps the sign of zero; a non-positive scale is rewritten below
            sc[k] = if scale > 0.0 { scale } else { 0.0 };
            fac[k] = if scale > 0.0 { scale } else { 1.0 };
            fac32[k] = match self.conv {
                Convention::Seed => (1.0 / fac[k]) as f32,
                Convention::Torchao => inv_g32 / e as f32,
                Convention::Te => self.te_mul(e as f32),
            };
        }
        // values in binary32 lanes by a split scale where that is exact
        let (mut sp_s, mut sp_h) = ([Split::default(); STACK], vec![]);
        let sp = super::scratch(&mut sp_s, &mut sp_h, nblk, Split::default());
        let split_ok = O::MANT == f32::MANT
            && !v.is_empty()
            && sp
                .iter_mut()
                .zip(sc.iter())
                .all(|(p, &s)| match Split::new(s, 2) {
                    Some(q) => {
                        *p = q;
                        true
                    }
                    None => false,
                });
        let f = Factors {
            fac,
            fac32,
            sc,
            split: split_ok.then_some(&sp[..]),
        };
        let mut st = BlockStatus::default();
        match self.conv {
            Convention::Seed => {
                (st.saturated, st.flushed) = self.seed_divide(&f, x, 0..x.len(), v, c);
                for k in (0..nblk).filter(|&k| f.sc[k] == 0.0) {
                    let r = k * BLOCK..(k + 1) * BLOCK;
                    // take back what the pass counted, then codes 0 and +0 values
                    let vk = super::values_in(v, r.clone());
                    let (sat, fl) = self.seed_divide(&f, x, r.clone(), vk, &mut c[r.clone()]);
                    st.saturated -= sat;
                    st.flushed -= fl;
                    st.flushed += x[r.clone()].iter().filter(|e| e.to_f64() != 0.0).count() as u64;
                    c[r.clone()].iter_mut().for_each(|c| *c = 0);
                    if !v.is_empty() {
                        v[r].iter_mut().for_each(|v| *v = O::from_f64(0.0));
                    }
                }
            }
            Convention::Torchao | Convention::Te => {
                let (sat, fl) = match f.split {
                    Some(sp) => fused::blocks::<f32, I, Split, O, _, false>(
                        &self.fused32,
                        x,
                        BLOCK,
                        f.fac32,
                        sp,
                        v,
                        c,
                    ),
                    None => fused::blocks::<f32, I, f64, O, _, false>(
                        &self.fused32,
                        x,
                        BLOCK,
                        f.fac32,
                        f.sc,
                        v,
                        c,
                    ),
                };
                st.saturated = sat;
                let zero = (0..nblk).filter(|&k| f.sc[k] == 0.0);
                st.flushed = fl + Self::zero_scale_flushed(zero, c, x);
            }
        }
        st
    }

    /// TE's zero-scale blocks: every nonzero element has value 0 (flushed); the element
    /// pass counted only those whose code is 0, this counts the others.
    fn zero_scale_flushed<I: Float>(zero: impl Iterator<Item = usize>, c: &[u8], x: &[I]) -> u64 {
        let mut fl = 0;
        for k in zero {
            let r = k * BLOCK..(k + 1) * BLOCK;
            fl += (c[r.clone()].iter().zip(&x[r]))
                .filter(|(&c, e)| c & 7 != 0 && e.to_f64() != 0.0)
                .count() as u64;
        }
        fl
    }

    /// The seed's pass over the elements `r` of `x` (whole blocks) by binary64 division.
    #[inline(always)]
    fn seed_divide<I: Float, O: Float>(
        &self,
        f: &Factors,
        x: &[I],
        r: std::ops::Range<usize>,
        v: &mut [O],
        c: &mut [u8],
    ) -> (u64, u64) {
        let (blks, xs) = (r.start / BLOCK..r.end / BLOCK, &x[r]);
        fused::blocks::<f64, I, f64, O, _, true>(
            &self.fused64,
            xs,
            BLOCK,
            &f.fac[blks.clone()],
            &f.sc[blks],
            v,
            c,
        )
    }

    /// The seed's convention on a work item of whole binary32 blocks whose maxima `bm` the
    /// first pass found:
    ///
    /// 1. every block scale from `arg' = m ⊗ RN64(1/(6g))`, within `2^−51` (relative) of the
    ///    seed's `RN64(RN64(m/6)/g)`, rounded to E4M3 by [`fused::Elem`] in one vectorised
    ///    loop; a block whose `arg'` lies within `2^−40` half quanta of an E4M3 midpoint takes
    ///    the seed's two divisions instead;
    /// 2. E2M1 by table lookup on `|x| ⊗ RN32(1/(e·g))` ([`lookup`]), both tables per scale
    ///    code;
    /// 3. blocks flagged there are redone by binary64 division; blocks whose scale is zero
    ///    become codes 0 and +0 (their elements were counted as flushed already).
    #[inline(always)]
    fn seed_lookup(
        &self,
        lk: &Lookup,
        bm: &[u32],
        x: &[f32],
        v: &mut [f32],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        const STACK: usize = CHUNK / BLOCK;
        const TOL: u32 = 40;
        let nblk = s.len();
        let e4m3 = self.e4m3_64;
        let mut near = false;
        for (&m, code) in bm.iter().zip(s.iter_mut()) {
            let arg = f32::from_bits(m) as f64 * lk.inv6g;
            *code = e4m3.round(arg).0;
            near |= e4m3.near_midpoint(arg, TOL);
        }
        if near {
            for (&m, code) in bm.iter().zip(s.iter_mut()) {
                let m = f32::from_bits(m) as f64;
                if e4m3.near_midpoint(m * lk.inv6g, TOL) {
                    *code = e4m3.round((m / 6.0) / self.g).0;
                }
            }
        }
        let (mut fl_s, mut fl_h) = ([0u16; STACK], vec![]);
        let flagged = super::scratch(&mut fl_s, &mut fl_h, nblk, 0);
        let tally = lookup::e2m1_blocks(&lk.lut, x, s, &lk.recip, &lk.vtab, c, v, flagged);
        let mut st = BlockStatus {
            saturated: tally.saturated,
            flushed: tally.flushed,
            ..BlockStatus::default()
        };
        for &k in &flagged[..tally.flagged] {
            let r = k as usize * BLOCK..(k as usize + 1) * BLOCK;
            let vk = super::values_in(v, r.clone());
            // (a flagged block has a positive scale: a zero one makes every `y` zero)
            let one = [self.e4m3_vals[s[k as usize] as usize] * self.g];
            let (sat, fl) = fused::blocks::<f64, f32, f64, f32, _, true>(
                &self.fused64,
                &x[r.clone()],
                BLOCK,
                &one,
                &one,
                vk,
                &mut c[r],
            );
            st.saturated += sat;
            st.flushed += fl;
        }
        if s.contains(&0) {
            for k in (0..nblk).filter(|&k| s[k] == 0) {
                c[k * BLOCK..(k + 1) * BLOCK].fill(0);
                if !v.is_empty() {
                    v[k * BLOCK..(k + 1) * BLOCK].fill(0.0);
                }
            }
        }
        st
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
                    Convention::Torchao => self.torchao_arg(bmax as f32) as f64,
                    Convention::Te => self.te_arg(bmax as f32) as f64,
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
                        // a block whose scale is zero is all zeros (codes 0, +0 values)
                        let (div, keep) = if scale[k] > 0.0 {
                            (scale[k], 1.0)
                        } else {
                            (1.0, 0.0)
                        };
                        y[at..at + blk.len()]
                            .iter_mut()
                            .zip(blk)
                            .for_each(|(y, e)| *y = e.to_f64() / div * keep);
                        at += blk.len();
                        k += 1;
                    }
                }
                st.saturated = self.e2m1.encode(&y, c, 0).saturated;
            }
            Convention::Torchao | Convention::Te => {
                let mut y = vec![0f32; n];
                for row in x.chunks(seg) {
                    for blk in row.chunks(BLOCK) {
                        let e = self.e4m3_vals[s[k] as usize] as f32;
                        let rcp = match self.conv {
                            Convention::Te => self.te_mul(e),
                            _ => (1.0f32 / self.g as f32) / e,
                        };
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
                // a zero scale (TE) makes every value 0, whatever the code
                st.flushed += cb
                    .iter()
                    .zip(blk)
                    .filter(|(&c, e)| (c & 7 == 0 || sc == 0.0) && e.to_f64() != 0.0)
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
    fn rows(
        &self,
        at: usize,
        x: &[I],
        seg: usize,
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        if v.is_empty() && !x.is_empty() && !seg.is_multiple_of(BLOCK) {
            // codes only on the general path: values into a scratch buffer
            let mut scratch = vec![O::default(); x.len()];
            return self.rows_of(x, seg, &mut scratch, c, s);
        }
        if seg.is_multiple_of(BLOCK) {
            self.rows_fused(at, x, v, c, s)
        } else {
            self.rows_of(x, seg, v, c, s)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows with blocks of every size class: a huge outlier block, blocks whose E4M3 scale
    /// rounds to zero (with elements above 6 in magnitude), ±0, exact E2M1 ties.
    fn data(n: usize, seed: u64) -> Vec<f64> {
        let mut next = super::super::test_bits(seed);
        let mut x = Vec::with_capacity(n);
        for blk in 0..n / BLOCK {
            let kind = next() % 8;
            for _ in 0..BLOCK {
                let r = next();
                let u = (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                x.push(match kind {
                    0 => u * 10.0,                              // scale rounds to 0
                    1 if blk % 5 == 0 => u * 3.0e7,             // the outlier blocks
                    2 => ((r % 32) as f64 - 16.0) * 0.25 * 1e3, // ties
                    3 if r.is_multiple_of(3) => -0.0,
                    _ => u * 10f64.powi((r % 9) as i32 - 2),
                });
            }
        }
        x[7] = 3.0e7;
        x
    }

    /// The fused paths (with the first pass's block maxima, binary32 only: the seed's
    /// lookup, torchao's and TE's codes by multiplier table; and division) against the
    /// general path, whole and block by block.
    fn same<I: Float>(conv: Convention, x: &[I], first: bool) {
        let amax = super::super::max_abs(x);
        let s_enc = 2688.0f32 / amax as f32;
        let g: f32 = match conv {
            Convention::Seed => (amax / 2688.0) as f32,
            Convention::Torchao => (amax as f32) / 2688.0f32,
            Convention::Te => 1.0 / s_enc,
        };
        let mut ctx = Ctx::new(conv, g as f64);
        ctx.s_enc = s_enc;
        if first {
            let x32 = I::as_f32_slice(x).unwrap();
            ctx.bm = super::super::block_maxima_and_max(x32, BLOCK).0;
            if conv == Convention::Seed {
                ctx.lookup = Lookup::new(g as f64, &ctx.e4m3_vals);
                assert!(ctx.lookup.is_some());
            }
        }
        // codes only of binary32 (below): torchao's and TE's multiplier tables
        if I::as_f32_slice(x).is_some() {
            ctx.mul32 = ctx.multipliers();
            assert_eq!(ctx.mul32.is_some(), conv != Convention::Seed);
        }
        let n = x.len();
        let (mut v1, mut c1, mut s1) = (vec![I::default(); n], vec![0u8; n], vec![0u8; n / 16]);
        let (mut v2, mut c2, mut s2) = (vec![I::default(); n], vec![0u8; n], vec![0u8; n / 16]);
        let st1 = ctx.rows_fused(0, x, &mut v1, &mut c1, &mut s1);
        let st2 = ctx.rows_of(x, n, &mut v2, &mut c2, &mut s2);
        let what = format!("{conv:?} {} first pass {first}", I::NAME);
        assert_eq!(s1, s2, "scales, {what}");
        assert_eq!(c1, c2, "codes, {what}");
        for i in 0..n {
            assert_eq!(
                v1[i].to_f64().to_bits(),
                v2[i].to_f64().to_bits(),
                "value {i} ({:e}), {what}",
                x[i].to_f64()
            );
        }
        assert_eq!(st1, st2, "status, {what}");
        // codes only
        let (mut c4, mut s4) = (vec![0u8; n], vec![0u8; n / 16]);
        let st4 = ctx.rows_fused::<I, I>(0, x, &mut [], &mut c4, &mut s4);
        assert_eq!((&s4, &c4, st4), (&s2, &c2, st2), "codes only, {what}");
        // block by block (scale `k` is the item's first)
        let (mut v3, mut c3, mut s3) = (vec![I::default(); n], vec![0u8; n], vec![0u8; n / 16]);
        let mut st3 = BlockStatus::default();
        for k in 0..n / BLOCK {
            let r = k * BLOCK..(k + 1) * BLOCK;
            st3 += ctx.rows_fused(
                k,
                &x[r.clone()],
                &mut v3[r.clone()],
                &mut c3[r],
                &mut s3[k..k + 1],
            );
        }
        assert_eq!((&s3, &c3), (&s2, &c2), "block by block, {what}");
        assert!(v3
            .iter()
            .zip(&v2)
            .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits()));
        assert_eq!(st3, st2, "block by block status, {what}");
        assert!(
            s1.contains(&0) || conv == Convention::Torchao,
            "a zero scale, {what}"
        );
    }

    /// The one-pass paths equal the general path bit for bit (values, codes, scales and
    /// counts), every convention, binary32 and binary64 inputs, with and without the first
    /// pass's block maxima (binary32).
    #[test]
    fn fused_path_equals_the_general_path() {
        for seed in 1..4 {
            let x = data(4096, seed);
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            for conv in [Convention::Seed, Convention::Torchao, Convention::Te] {
                same::<f64>(conv, &x, false);
                same::<f32>(conv, &x32, false);
                same::<f32>(conv, &x32, true);
            }
        }
    }

    /// Block maxima whose seed argument `m / 6 / g` is exactly an E4M3 midpoint (tensor
    /// scales `g = 1 + k/128`, so that `6 · g · μ` is a binary32), and their binary32
    /// neighbours: the lookup path gives the general path's scale codes, so the ties take
    /// the seed's divisions.
    #[test]
    fn block_scales_at_e4m3_midpoints_round_as_the_seed() {
        let e4m3 = |c: u64| FloatFormat::FP8_E4M3.decode(c);
        let mut bits = super::super::test_bits(5);
        for k in (0..128).step_by(9) {
            let g = 1.0 + k as f64 / 128.0;
            let mut x = vec![0f32; 16];
            x[3] = (2688.0 * g) as f32;
            assert_eq!(x[3] as f64, 2688.0 * g);
            for c in 0..0x7d_u64 {
                // the midpoint between codes c and c + 1
                let mu = (e4m3(c) + e4m3(c + 1)) / 2.0;
                let m = (6.0 * g * mu) as f32;
                assert_eq!(m as f64, 6.0 * g * mu);
                for d in [-1i32, 0, 1] {
                    let m = f32::from_bits(m.to_bits().wrapping_add_signed(d));
                    let mut blk: Vec<f32> = (0..16)
                        .map(|_| m * ((bits() >> 40) as f32 / (1u64 << 24) as f32))
                        .collect();
                    blk[(bits() % 16) as usize] = if bits().is_multiple_of(2) { m } else { -m };
                    x.extend(blk);
                }
            }
            same::<f32>(Convention::Seed, &x, true);
        }
    }
}
