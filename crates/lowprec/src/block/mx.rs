//! OCP Microscaling (MX v1.0 §6.3): blocks of `k` elements (32 by default) sharing one E8M0
//! power-of-two scale.
//!
//! For a block `V` with `amax = max |V_i|`:
//!
//! ```text
//! s   = shared exponent (the rule below), clamped to E8M0's [−127, 127]
//! X   = 2^s                       scale code = s + 127 (E8M0)
//! P_i = round_RNE(V_i / X)        into the element type, saturating at ±max_elem
//! out = P_i · X                   (exact)
//! ```
//!
//! | rule | `s` | origin |
//! |---|---|---|
//! | `floor` (default) | `⌊log2 amax⌋ − emax_elem` | OCP MX v1.0 §6.3; torchao `FLOOR` |
//! | `ceil` | `⌈log2 amax⌉ − emax_elem` | torchao `CEIL` |
//! | `even` | `⌊log2 RNA_m(amax)⌋ − emax_elem`: amax rounded half-up to the element's `m` mantissa bits first, so a block whose maximum would round up to the next power of two gets the larger scale | torchao `EVEN` |
//! | `rceil` | `⌈log2 (amax ⊗ (1 ⊘ max_elem))⌉` in binary32 (`⊗`, `⊘` rounded to binary32), the E8M0 round-up of the descale, so no element saturates | NVIDIA cuBLAS / `cvt.rp.ue8m0x2.f32`; torchao `RCEIL` |
//!
//! `⌊log2⌋` is read from the exponent bits ([`crate::block::floor_log2`]), never from a
//! floating-point `log2` (which rounds up just below a power of two). An all-zero block has
//! `s = −127` (code 0) under every rule. A block holding a NaN or ±Inf gets the NaN scale
//! `0xFF` and NaN elements, and is counted in [`BlockStatus::nan_blocks`].
//!
//! `emax_elem`: fp8-e4m3 8, fp8-e5m2 15, fp6-e3m2 4, fp6-e2m3 2, fp4-e2m1 2, int8 0.
//! MXINT8 (§5.3.4) elements are two's complement `k/64`, `k ∈ [−128, 127]`:
//! `P = clamp(RNE(64·V/X), −128, 127)/64`; its code is `k` as a byte and −0 gives +0.

use super::fused::{self, Elem};
use super::{floor_log2, is_pow2, rows_of, BlockStatus};
use crate::error::{Error, Result};
use crate::format::pow2;
use crate::round::types::Word;
use crate::round::{Float, Overflow, RoundOptions, Rounder};
use crate::FloatFormat;
use std::fmt;

/// The element type of an MX block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MxElement {
    /// A float format (OCP defines fp8-e4m3, fp8-e5m2, fp6-e3m2, fp6-e2m3, fp4-e2m1; any
    /// signed format of at most 8 bits with zero works).
    Float(FloatFormat),
    /// MXINT8: two's complement `k/64`.
    Int8,
}

impl MxElement {
    /// Parse `int8` / `mxint8` or a float format name of at most 8 bits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for formats wider than 8 bits, unsigned or without zero.
    pub fn parse(s: &str) -> Result<Self> {
        let k = s.trim().to_ascii_lowercase();
        if k == "int8" || k == "mxint8" {
            return Ok(MxElement::Int8);
        }
        let f = FloatFormat::parse(s)?;
        if f.bits() > 8 || !f.is_signed() || !f.has_zero() {
            return Err(Error::InvalidArgument(format!(
                "{f} cannot be an MX element type: use a signed format of at most 8 bits \
                 (fp8-e4m3, fp8-e5m2, fp6-e3m2, fp6-e2m3, fp4-e2m1) or int8"
            )));
        }
        Ok(MxElement::Float(f))
    }

    /// The exponent of the largest power of two the element type holds.
    pub fn emax(&self) -> i32 {
        match self {
            MxElement::Float(f) => f.emax(),
            MxElement::Int8 => 0,
        }
    }

    /// The largest finite element value.
    pub fn max(&self) -> f64 {
        match self {
            MxElement::Float(f) => f.max_finite(),
            MxElement::Int8 => 127.0 / 64.0,
        }
    }

    /// Mantissa bits (6 for MXINT8, whose values are 1.xxxxxx · 2^0 at most).
    pub fn man_bits(&self) -> u32 {
        match self {
            MxElement::Float(f) => f.man_bits(),
            MxElement::Int8 => 6,
        }
    }

    /// Bits per element code.
    pub fn bits(&self) -> u32 {
        match self {
            MxElement::Float(f) => f.bits(),
            MxElement::Int8 => 8,
        }
    }

    /// The value of an element code.
    pub fn decode(&self, code: u8) -> f64 {
        match self {
            MxElement::Float(f) => f.decode(code as u64),
            MxElement::Int8 => (code as i8) as f64 / 64.0,
        }
    }
}

impl fmt::Display for MxElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MxElement::Float(x) => write!(f, "{x}"),
            MxElement::Int8 => f.write_str("int8"),
        }
    }
}

/// How the shared exponent is chosen (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ScaleRule {
    /// `⌊log2 amax⌋ − emax_elem` (OCP).
    #[default]
    Floor,
    /// `⌈log2 amax⌉ − emax_elem`.
    Ceil,
    /// `⌊log2 RNA_m(amax)⌋ − emax_elem`.
    Even,
    /// `⌈log2(amax / max_elem)⌉` in binary32 (NVIDIA).
    Rceil,
}

impl ScaleRule {
    /// Parse `floor`, `ceil`, `even` or `rceil`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the accepted rules.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "floor" => Ok(ScaleRule::Floor),
            "ceil" => Ok(ScaleRule::Ceil),
            "even" => Ok(ScaleRule::Even),
            "rceil" => Ok(ScaleRule::Rceil),
            _ => Err(Error::InvalidArgument(format!(
                "unknown scale rule `{s}`; use floor (OCP), ceil, even or rceil (NVIDIA)"
            ))),
        }
    }

    /// The rule's name.
    pub fn name(self) -> &'static str {
        match self {
            ScaleRule::Floor => "floor",
            ScaleRule::Ceil => "ceil",
            ScaleRule::Even => "even",
            ScaleRule::Rceil => "rceil",
        }
    }
}

/// Every choice of an MX conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MxOptions {
    /// The element type.
    pub element: MxElement,
    /// Elements per block (32 in the OCP spec).
    pub block: usize,
    /// The shared-exponent rule.
    pub scale: ScaleRule,
    /// When the last axis is not a multiple of `block`: `false` refuses, `true` treats the
    /// last block of each row as zero-padded (its missing elements do not change its
    /// maximum; nothing is written for them).
    pub pad: bool,
}

impl MxOptions {
    /// Blocks of 32, the `floor` rule, no padding.
    pub fn new(element: MxElement) -> Self {
        MxOptions {
            element,
            block: 32,
            scale: ScaleRule::Floor,
            pad: false,
        }
    }

    /// Scales per row of `row_len` elements.
    pub fn blocks_per_row(&self, row_len: usize) -> usize {
        row_len.div_ceil(self.block.max(1))
    }

    fn check(&self, len: usize, row_len: usize) -> Result<usize> {
        if self.block == 0 {
            return Err(Error::InvalidArgument(
                "the block size must be at least 1".into(),
            ));
        }
        let rows = rows_of(len, row_len)?;
        if !row_len.is_multiple_of(self.block) && !self.pad {
            return Err(Error::InvalidArgument(format!(
                "the last axis ({row_len}) is not a multiple of the block size {}; \
                 choose a block size that divides it, or ask for zero padding (:pad)",
                self.block
            )));
        }
        Ok(rows)
    }
}

/// The shared exponent of a block with maximum magnitude `amax` (finite, ≥ 0), clamped to
/// [−127, 127], and whether it was clamped.
///
/// ```
/// use lowprec::block::mx::{shared_exponent, MxElement, ScaleRule};
/// let fp4 = MxElement::parse("fp4-e2m1").unwrap();
/// assert_eq!(shared_exponent(6.0, &fp4, ScaleRule::Floor), (0, false));   // 2^2 / 2^2
/// assert_eq!(shared_exponent(7.9, &fp4, ScaleRule::Floor), (0, false));   // 7.9 saturates to 6
/// assert_eq!(shared_exponent(7.9, &fp4, ScaleRule::Rceil), (1, false));   // 7.9/2 = 3.95 fits
/// assert_eq!(shared_exponent(0.0, &fp4, ScaleRule::Ceil), (-127, false));
/// ```
pub fn shared_exponent(amax: f64, elem: &MxElement, rule: ScaleRule) -> (i32, bool) {
    exponent_of(amax, elem.emax(), elem.max(), elem.man_bits(), rule)
}

/// [`shared_exponent`] for any element grid, given its `emax`, its largest value and its
/// mantissa bits (the scheme module's elements use it too).
pub(crate) fn exponent_of(
    amax: f64,
    emax: i32,
    max: f64,
    man_bits: u32,
    rule: ScaleRule,
) -> (i32, bool) {
    if amax == 0.0 {
        return (-127, false);
    }
    let s = match rule {
        ScaleRule::Floor => floor_log2(amax) - emax,
        ScaleRule::Ceil => floor_log2(amax) + (!is_pow2(amax)) as i32 - emax,
        ScaleRule::Even => {
            // round half up to m mantissa bits: carries when the significand is at least
            // 2 − 2^−(m+1)
            let e = floor_log2(amax);
            let sig = amax * pow2(-e);
            let m = man_bits as i32;
            e + (sig >= 2.0 - pow2(-(m + 1))) as i32 - emax
        }
        ScaleRule::Rceil => {
            let d = (amax as f32) * (1.0f32 / max as f32);
            if !d.is_finite() {
                return (127, true);
            }
            let b = d.to_bits();
            let field = (b >> 23) as i32;
            let man = b & 0x7f_ffff;
            let up = if field == 0 {
                man > 0x40_0000
            } else {
                man != 0
            };
            field + up as i32 - 127
        }
    };
    (s.clamp(-127, 127), !(-127..=127).contains(&s))
}

/// The MX conversion of `x` (`row_len` = the last axis): element values into `values`, element
/// codes into `codes` (right-aligned, one byte each; MXINT8: `k` as a byte), and E8M0 scale
/// codes into `scales` (`rows × blocks_per_row`).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the lengths do not fit `row_len`, the block size does not
/// divide the last axis (without `pad`), or an output has the wrong length.
///
/// ```
/// use lowprec::block::mx::{mx_quantize_into, MxElement, MxOptions};
/// let x: Vec<f32> = (0..32).map(|i| i as f32 * 0.25 - 3.0).collect();
/// let opts = MxOptions::new(MxElement::parse("fp4-e2m1").unwrap());
/// let (mut v, mut c, mut s) = (vec![0f32; 32], vec![0u8; 32], vec![0u8; 1]);
/// let st = mx_quantize_into(&x, 32, &opts, &mut v, &mut c, &mut s).unwrap();
/// assert_eq!(s[0], 127 + 2 - 2); // amax 4.75: 2^2 / 2^emax(2) = 2^0
/// assert_eq!((v[0], v[31]), (-3.0, 4.0)); // 4.75 rounds to 4
/// assert_eq!(st.blocks, 1);
/// ```
pub fn mx_quantize_into<I: Float, O: Float>(
    x: &[I],
    row_len: usize,
    opts: &MxOptions,
    values: &mut [O],
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<BlockStatus> {
    I::mx_quantize_into(x, row_len, opts, O::floats_mut(values), codes, scales)
}

/// [`mx_quantize_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn mx_quantize_into_generic<I: Float, O: Float>(
    x: &[I],
    row_len: usize,
    opts: &MxOptions,
    values: &mut [O],
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<BlockStatus> {
    let rows = opts.check(x.len(), row_len)?;
    let nb = opts.blocks_per_row(row_len);
    if values.len() != x.len() || codes.len() != x.len() || scales.len() != rows * nb {
        return Err(Error::InvalidArgument(format!(
            "MX outputs: values and codes need {} elements, scales {} (got {}, {}, {})",
            x.len(),
            rows * nb,
            values.len(),
            codes.len(),
            scales.len()
        )));
    }
    let ctx = Ctx::<I>::new(opts);
    let st = super::convert(&ctx, x, row_len, opts.block, CHUNK, values, codes, scales);
    Ok(st)
}

/// The MX codes of `x` without the values: element codes into `codes` and E8M0 scale codes
/// into `scales`, exactly those of [`mx_quantize_into`] (the quantization proper, as a
/// hardware or torchao's `to_mx` produces it; a third less memory traffic).
///
/// # Errors
///
/// As [`mx_quantize_into`].
///
/// ```
/// use lowprec::block::mx::{mx_encode_into, MxElement, MxOptions};
/// let x: Vec<f32> = (0..32).map(|i| i as f32 * 0.25 - 3.0).collect();
/// let opts = MxOptions::new(MxElement::parse("fp4-e2m1").unwrap());
/// let (mut c, mut s) = (vec![0u8; 32], vec![0u8; 1]);
/// mx_encode_into(&x, 32, &opts, &mut c, &mut s).unwrap();
/// assert_eq!((c[0], c[31], s[0]), (0b1101, 0b0110, 127)); // −3, 4 (4.75 rounds to 4), 2^0
/// ```
pub fn mx_encode_into<I: Float>(
    x: &[I],
    row_len: usize,
    opts: &MxOptions,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<BlockStatus> {
    I::mx_encode_into(x, row_len, opts, codes, scales)
}

/// [`mx_encode_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn mx_encode_into_generic<I: Float>(
    x: &[I],
    row_len: usize,
    opts: &MxOptions,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<BlockStatus> {
    let rows = opts.check(x.len(), row_len)?;
    let nb = opts.blocks_per_row(row_len);
    if codes.len() != x.len() || scales.len() != rows * nb {
        return Err(Error::InvalidArgument(format!(
            "MX codes: codes need {} elements, scales {} (got {}, {})",
            x.len(),
            rows * nb,
            codes.len(),
            scales.len()
        )));
    }
    let ctx = Ctx::<I>::new(opts);
    let none: &mut [I] = &mut [];
    Ok(super::convert(
        &ctx, x, row_len, opts.block, CHUNK, none, codes, scales,
    ))
}

/// Elements per work item.
const CHUNK: usize = 4096;

/// The scale rules of [`Ctx::scales_fast`].
const FLOOR: u8 = 0;
const CEIL: u8 = 1;
const EVEN: u8 = 2;

/// The shared exponent field of a block whose largest magnitude has the bits `bits` (a
/// binary float with `mant` fraction bits, exponent field `f = bits >> mant`), by the rule
/// [`FLOOR`] (`f`), [`CEIL`] (`f + (fraction ≠ 0)`) or [`EVEN`] (`(bits + half) >> mant`,
/// `half = 2^(mant − m − 1)` for an element of `m` fraction bits: the maximum rounded to the
/// element's precision). The one definition of these three rules: the scalar scale passes
/// and the AVX2 one-pass kernel ([`crate::simd::cast8::mx8`]) call it (with `rule` a
/// constant there, so that it folds).
#[inline(always)]
pub(crate) fn rule_field(rule: u8, bits: u64, mant: u32, half: u64) -> i64 {
    let field = (bits >> mant) as i64;
    match rule {
        FLOOR => field,
        CEIL => field + ((bits & ((1u64 << mant) - 1)) != 0) as i64,
        _ => ((bits + half) >> mant) as i64,
    }
}

impl<I: Float, O: Float> super::RowKernel<I, O> for Ctx<I> {
    #[inline(always)]
    fn rows(
        &self,
        _at: usize,
        x: &[I],
        seg: usize,
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        if v.is_empty() && !x.is_empty() {
            if seg == self.opts.block {
                match &self.fused {
                    Some(e) => return self.rows_fused(e, x, v, c, s),
                    None if self.rounder.is_none() => {
                        return self.rows_fused(&fused::Int8, x, v, c, s)
                    }
                    None => {}
                }
            }
            // codes only on a general path: values into a scratch buffer
            let mut scratch = vec![O::default(); x.len()];
            return self.rows_any(x, seg, &mut scratch, c, s);
        }
        self.rows_any(x, seg, v, c, s)
    }
}

impl<I: Float> Ctx<I> {
    /// The best path for whole blocks, else the general one.
    #[inline(always)]
    fn rows_any<O: Float>(
        &self,
        x: &[I],
        seg: usize,
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        if seg == self.opts.block {
            match (&self.fused, &self.rounder) {
                (Some(e), _) => return self.rows_fused(e, x, v, c, s),
                (None, Some(_)) => return self.rows_exact(x, v, c, s),
                (None, None) => return self.rows_fused(&fused::Int8, x, v, c, s),
            }
        }
        {
            self.rows_general(x, seg, v, c, s)
        }
    }
}

/// The per-call constants of an MX conversion.
struct Ctx<I: Float> {
    opts: MxOptions,
    rounder: Option<Rounder<I>>,
    /// The one-pass element step, where it applies ([`super::fused`]).
    fused: Option<Elem<I>>,
    /// FP4 E2M1 elements: the quarter table of [`super::lookup::e2m1_exact_blocks`].
    e2m1: Option<[u32; 32]>,
    /// The constants of the AVX2 byte kernel ([`crate::simd::cast8::blocks8`]) for binary32
    /// codes, where it applies.
    cast8: Option<crate::simd::cast8::Cast8>,
    nan_code: u8,
    mag_mask: u8,
}

impl<I: Float> Ctx<I> {
    fn new(opts: &MxOptions) -> Self {
        let sat = RoundOptions::default().overflow(Overflow::Saturate);
        let (rounder, nan_code) = match opts.element {
            MxElement::Float(f) => (
                Some(Rounder::new(&f, &sat)),
                f.nan_code(false).unwrap_or(0) as u8,
            ),
            MxElement::Int8 => (None, 0),
        };
        let mag_mask = match opts.element {
            MxElement::Float(f) => f.max_code() as u8 & !(f.sign_mask() as u8),
            MxElement::Int8 => 0xff,
        };
        let fused = match opts.element {
            MxElement::Float(f) => Elem::new(&f),
            MxElement::Int8 => None,
        };
        let e2m1 = (opts.element == MxElement::Float(crate::FloatFormat::FP4_E2M1))
            .then(super::lookup::lut_exact);
        // the byte kernel for binary32 codes: the fused step's formats, when the rounding
        // kernel's plan takes it (it gives the same codes and counts)
        let cast8 = match (opts.element, &fused) {
            (MxElement::Float(f), Some(_)) if crate::round::kernel::f32_native(&f, false) => {
                crate::round::kernel::Plan::<f32>::new(&f, &sat).cast8(&f)
            }
            _ => None,
        };
        Ctx {
            opts: *opts,
            rounder,
            fused,
            e2m1,
            cast8,
            nan_code,
            mag_mask,
        }
    }

    /// The scale rule as the one-pass byte kernel takes it ([`crate::simd::cast8::mx8`]):
    /// floor, ceil and even (rceil has no integer form there).
    fn mx_rule(&self) -> Option<crate::simd::cast8::MxRule> {
        let rule = match self.opts.scale {
            ScaleRule::Floor => 0,
            ScaleRule::Ceil => 1,
            ScaleRule::Even => 2,
            ScaleRule::Rceil => return None,
        };
        let m = self.opts.element.man_bits();
        Some(crate::simd::cast8::MxRule {
            rule,
            half: 1u32 << (23 - m - 1),
            off: 127 + self.opts.element.emax(),
        })
    }

    /// The shared exponent of a block whose largest magnitude has the (finite) bits
    /// `amax_bits`: integer operations on the exponent field for the floor, ceil and even
    /// rules (identical to [`shared_exponent`], which the rceil rule uses).
    #[inline(always)]
    fn exponent_of_bits(&self, amax_bits: I::Bits) -> (i32, bool) {
        let m = I::MANT;
        let bits = amax_bits.to_u64();
        let field = (bits >> m) as i32;
        let half = 1u64 << (m - self.opts.element.man_bits() - 1);
        let e = match self.opts.scale {
            ScaleRule::Floor => rule_field(FLOOR, bits, m, half) as i32,
            ScaleRule::Ceil => rule_field(CEIL, bits, m, half) as i32,
            ScaleRule::Even => rule_field(EVEN, bits, m, half) as i32,
            ScaleRule::Rceil => {
                return shared_exponent(
                    I::from_bits(amax_bits).to_f64(),
                    &self.opts.element,
                    self.opts.scale,
                )
            }
        };
        if field == 0 {
            // zero or subnormal (rare): the general rule
            return shared_exponent(
                I::from_bits(amax_bits).to_f64(),
                &self.opts.element,
                self.opts.scale,
            );
        }
        let s = e - I::BIAS as i32 - self.opts.element.emax();
        (s.clamp(-127, 127), !(-127..=127).contains(&s))
    }

    /// Whole blocks, a float element type with a fused step: every block's maximum and
    /// exponent first, then one vector pass of scale, round, code and value over the item
    /// ([`fused::blocks`]); NaN blocks are rewritten afterwards.
    #[inline(always)]
    fn rows_fused<O: Float, E: fused::Step<I>>(
        &self,
        el: &E,
        x: &[I],
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        let b = self.opts.block;
        let nb = x.len() / b;
        let mut st = BlockStatus {
            elements: x.len() as u64,
            blocks: nb as u64,
            ..BlockStatus::default()
        };
        if let (true, 32, Some(k), Some(x32), Some(rule)) = (
            v.is_empty(),
            b,
            &self.cast8,
            I::as_f32_slice(x),
            self.mx_rule(),
        ) {
            // binary32 codes alone in blocks of 32: one pass (redone below if a block needs
            // the general rules)
            if let Some((sat, fl)) = crate::simd::cast8::mx8(k, rule, x32, c, s) {
                (st.saturated, st.flushed) = (sat, fl);
                return st;
            }
        }
        let inf_bits = <I::Bits as Word>::from_u64(((2 * I::BIAS as u64) + 1) << I::MANT);
        // per-block factors: on the stack for blocks of 16 or more (no large memset per item)
        const STACK: usize = CHUNK / fused::LANES;
        let zero = <I::Bits as Word>::ZERO;
        let (mut inv_s, mut up_s, mut bm_s) =
            ([I::default(); STACK], [O::default(); STACK], [zero; STACK]);
        let (mut inv_h, mut up_h, mut bm_h) = (Vec::new(), Vec::new(), Vec::new());
        let inv = super::scratch(&mut inv_s, &mut inv_h, nb, I::default());
        let up = super::scratch(&mut up_s, &mut up_h, nb, O::default());
        let bm = super::scratch(&mut bm_s, &mut bm_h, nb, zero);
        fused::block_maxima(x, b, bm);
        let fast = match self.opts.scale {
            ScaleRule::Floor => self.scales_fast::<O, FLOOR>(bm, s, inv, up),
            ScaleRule::Ceil => self.scales_fast::<O, CEIL>(bm, s, inv, up),
            ScaleRule::Even => self.scales_fast::<O, EVEN>(bm, s, inv, up),
            ScaleRule::Rceil => false,
        };
        for (k, &amax_bits) in bm.iter().enumerate().filter(|_| !fast) {
            if amax_bits >= inf_bits {
                s[k] = 0xff;
                st.nan_blocks += 1;
                (inv[k], up[k]) = (I::default(), O::default());
                continue;
            }
            let (e, clamped) = self.exponent_of_bits(amax_bits);
            st.scale_clamped += clamped as u64;
            s[k] = (e + 127) as u8;
            (inv[k], up[k]) = (pow2_as::<I>(-e), pow2_as::<O>(e));
        }
        (st.saturated, st.flushed) = self.pass(el, x, inv, up, v, c);
        if st.nan_blocks > 0 {
            for k in (0..nb).filter(|&k| s[k] == 0xff) {
                let r = k * b..(k + 1) * b;
                // take back what the pass counted for this block, then write NaNs
                let vk = super::values_in(v, r.clone());
                let (sat, fl) = self.pass(
                    el,
                    &x[r.clone()],
                    &inv[k..k + 1],
                    &up[k..k + 1],
                    vk,
                    &mut c[r.clone()],
                );
                st.saturated -= sat;
                st.flushed -= fl;
                if !v.is_empty() {
                    v[r.clone()]
                        .iter_mut()
                        .for_each(|v| *v = O::from_f64(f64::NAN));
                }
                c[r].iter_mut().for_each(|c| *c = self.nan_code);
            }
        }
        st
    }

    /// The element pass over whole blocks with factors `inv` and `up` ([`fused::blocks`]),
    /// or, for binary32 codes alone, the AVX2 byte kernel
    /// ([`crate::simd::cast8::blocks8`]), or, for binary32 FP4 E2M1 in blocks of a multiple
    /// of 16, the quarter table ([`super::lookup::e2m1_exact_blocks`]): the same codes,
    /// values and counts.
    #[inline(always)]
    fn pass<O: Float, E: fused::Step<I>>(
        &self,
        el: &E,
        x: &[I],
        inv: &[I],
        up: &[O],
        v: &mut [O],
        c: &mut [u8],
    ) -> (u64, u64) {
        let b = self.opts.block;
        if let (true, Some(k), Some(x32), Some(inv32)) = (
            v.is_empty(),
            &self.cast8,
            I::as_f32_slice(x),
            I::as_f32_slice(inv),
        ) {
            if let Some(counts) = crate::simd::cast8::blocks8(k, x32, b, inv32, c) {
                return counts;
            }
        }
        if let (Some(lut), true, Some(x32), Some(inv32)) = (
            &self.e2m1,
            b.is_multiple_of(16),
            I::as_f32_slice(x),
            I::as_f32_slice(inv),
        ) {
            if v.is_empty() {
                return super::lookup::e2m1_exact_blocks(lut, x32, b, inv32, &[], c, &mut []);
            }
            if let (Some(up32), Some(v32)) = (O::as_f32_slice(up), O::as_f32_slice_mut(v)) {
                return super::lookup::e2m1_exact_blocks(lut, x32, b, inv32, up32, c, v32);
            }
        }
        fused::blocks::<I, I, O, O, _, false>(el, x, b, inv, up, v, c)
    }

    /// Every block's scale code `s` and factors `inv = 2^−e`, `up = 2^e` from its maximum's
    /// bits under the floor, ceil or even rule ([`Ctx::exponent_of_bits`]), in one loop of
    /// integer operations that the compiler vectorises. `false` when some block needs the
    /// per-block rules (a zero, subnormal or non-finite maximum, a clamped exponent, or a
    /// factor outside the normal range of its type): the outputs are then to be redone.
    #[inline(always)]
    fn scales_fast<O: Float, const RULE: u8>(
        &self,
        bm: &[I::Bits],
        s: &mut [u8],
        inv: &mut [I],
        up: &mut [O],
    ) -> bool {
        let mant = I::MANT;
        let half = 1u64 << (mant - self.opts.element.man_bits() - 1);
        let off = I::BIAS as i64 + self.opts.element.emax() as i64;
        let (top_i, top_o) = (2 * I::BIAS as i64, 2 * O::BIAS as i64);
        let mut ok = true;
        for (((&b, sk), ik), uk) in bm.iter().zip(s.iter_mut()).zip(inv.iter_mut()).zip(up) {
            let bits = b.to_u64();
            let field = (bits >> mant) as i64;
            let e = rule_field(RULE, bits, mant, half);
            let sc = e - off;
            // the exponent fields of 2^−sc in I and 2^sc in O
            let (fi, fo) = (I::BIAS as i64 - sc, O::BIAS as i64 + sc);
            ok &= (1..=top_i).contains(&field)
                && (-127..=127).contains(&sc)
                && (1..=top_i).contains(&fi)
                && (1..=top_o).contains(&fo);
            *sk = (sc + 127) as u8;
            *ik = I::from_bits(<I::Bits as Word>::from_u64((fi as u64 & 0x7ff) << mant));
            *uk = O::from_bits(<O::Bits as Word>::from_u64((fo as u64 & 0x7ff) << O::MANT));
        }
        ok
    }

    /// Whole blocks only, float elements: the common case, without per-block slicing.
    #[inline(always)]
    fn rows_exact<O: Float>(
        &self,
        x: &[I],
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        let b = self.opts.block;
        let n = x.len();
        let nb = n / b;
        let mut st = BlockStatus {
            elements: n as u64,
            blocks: nb as u64,
            ..BlockStatus::default()
        };
        let mut stack = [I::default(); 2 * CHUNK];
        let mut heap = Vec::new();
        let buf: &mut [I] = if n <= CHUNK {
            &mut stack[..2 * n]
        } else {
            heap.resize(2 * n, I::default());
            &mut heap
        };
        let (scaled, rv) = buf.split_at_mut(n);
        let mut xs = [O::default(); CHUNK];
        let mut xs_heap = Vec::new();
        let xs: &mut [O] = if nb <= CHUNK {
            &mut xs[..nb]
        } else {
            xs_heap.resize(nb, O::default());
            &mut xs_heap
        };
        let inf_bits = <I::Bits as Word>::from_u64(((2 * I::BIAS as u64) + 1) << I::MANT);
        // 1. scales and scaled elements
        for (k, (xb, yb)) in x
            .chunks_exact(b)
            .zip(scaled.chunks_exact_mut(b))
            .enumerate()
        {
            let amax_bits = super::max_abs_bits(xb);
            if amax_bits < inf_bits {
                let (e, clamped) = self.exponent_of_bits(amax_bits);
                st.scale_clamped += clamped as u64;
                s[k] = (e + 127) as u8;
                xs[k] = pow2_as::<O>(e);
                let inv = pow2_as::<I>(-e);
                yb.iter_mut().zip(xb).for_each(|(y, &v)| *y = v.mul(inv));
            } else {
                s[k] = 0xff;
                xs[k] = O::from_f64(f64::NAN);
                yb.iter_mut().for_each(|y| *y = I::default());
                st.nan_blocks += 1;
            }
        }
        // 2. codes and rounded scaled values
        let r = self.rounder.as_ref().expect("float element");
        st.saturated = r.encode(scaled, c, 0).saturated;
        r.round(scaled, rv, 0)
            .expect("MX element values fit the input type");
        // 3. values (NaN blocks: NaN · anything)
        for ((vb, rb), &f) in v.chunks_exact_mut(b).zip(rv.chunks_exact(b)).zip(xs.iter()) {
            vb.iter_mut()
                .zip(rb)
                .for_each(|(v, &q)| *v = O::from_f64(q.to_f64()).mul(f));
        }
        // 4. flushed; NaN blocks' codes
        st.flushed = x
            .iter()
            .zip(c.iter())
            .filter(|(x, &c)| c & self.mag_mask == 0 && x.to_f64() != 0.0)
            .count() as u64;
        if st.nan_blocks > 0 {
            for (k, cb) in c.chunks_exact_mut(b).enumerate() {
                if s[k] == 0xff {
                    // their elements were counted as flushed above
                    st.flushed -= x[k * b..(k + 1) * b]
                        .iter()
                        .filter(|x| x.to_f64() != 0.0)
                        .count() as u64;
                    cb.iter_mut().for_each(|c| *c = self.nan_code);
                }
            }
        }
        st
    }

    /// Convert whole rows of `seg` elements (blocks along each row, the last one partial):
    /// all block scales first, then one rounding call for every element of the work item,
    /// then the values.
    #[inline(always)]
    fn rows_general<O: Float>(
        &self,
        x: &[I],
        seg: usize,
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus {
        let b = self.opts.block;
        let n = x.len();
        let mut st = BlockStatus {
            elements: n as u64,
            ..BlockStatus::default()
        };
        let mut stack = [I::default(); CHUNK];
        let mut heap = Vec::new();
        let scaled: &mut [I] = if n <= CHUNK {
            &mut stack[..n]
        } else {
            heap.resize(n, I::default());
            &mut heap
        };
        // 1. block scales; scaled elements (float element types)
        let mut k = 0;
        for (r, row) in x.chunks(seg).enumerate() {
            for (j, blk) in row.chunks(b).enumerate() {
                let i0 = r * seg + j * b;
                let amax_bits = super::max_abs_bits(blk);
                let amax = I::from_bits(amax_bits).to_f64();
                let out = &mut scaled[i0..i0 + blk.len()];
                if !amax.is_finite() {
                    s[k] = 0xff;
                    st.nan_blocks += 1;
                    out.iter_mut().for_each(|y| *y = I::default());
                } else {
                    let (e, clamped) = shared_exponent(amax, &self.opts.element, self.opts.scale);
                    st.scale_clamped += clamped as u64;
                    s[k] = (e + 127) as u8;
                    if self.rounder.is_some() {
                        let inv = I::from_f64(pow2(-e));
                        out.iter_mut().zip(blk).for_each(|(y, &v)| *y = v.mul(inv));
                    }
                }
                k += 1;
            }
        }
        st.blocks = k as u64;
        // 2. element codes and values (a float element's rounded value, times the scale)
        match &self.rounder {
            Some(r) => {
                let mut rv_stack = [I::default(); CHUNK];
                let mut rv_heap = Vec::new();
                let rv: &mut [I] = if n <= CHUNK {
                    &mut rv_stack[..n]
                } else {
                    rv_heap.resize(n, I::default());
                    &mut rv_heap
                };
                st.saturated = r.encode(scaled, c, 0).saturated;
                r.round(scaled, rv, 0)
                    .expect("MX element values fit the input type");
                let mut k = 0;
                for (r, row) in x.chunks(seg).enumerate() {
                    for (j, blk) in row.chunks(b).enumerate() {
                        let i0 = r * seg + j * b;
                        let m = blk.len();
                        if s[k] != 0xff {
                            let xs = O::from_f64(pow2(s[k] as i32 - 127));
                            v[i0..i0 + m]
                                .iter_mut()
                                .zip(&rv[i0..i0 + m])
                                .for_each(|(v, &q)| *v = O::from_f64(q.to_f64()).mul(xs));
                        }
                        k += 1;
                    }
                }
            }
            None => {
                let mut k = 0;
                for (r, row) in x.chunks(seg).enumerate() {
                    for (j, blk) in row.chunks(b).enumerate() {
                        let i0 = r * seg + j * b;
                        if s[k] == 0xff {
                            // a NaN block: its elements are written in step 3
                            k += 1;
                            continue;
                        }
                        let e = s[k] as i32 - 127;
                        let (up, down) = (pow2(6 - e), O::from_f64(pow2(e - 6)));
                        for ((cc, vv), &xi) in c[i0..i0 + blk.len()]
                            .iter_mut()
                            .zip(v[i0..i0 + blk.len()].iter_mut())
                            .zip(blk)
                        {
                            let q = (xi.to_f64() * up).round_ties_even();
                            let kq = q.clamp(-128.0, 127.0);
                            st.saturated += (kq != q) as u64;
                            *cc = kq as i8 as u8;
                            *vv = O::from_f64(kq + 0.0).mul(down); // −0 gives +0
                        }
                        k += 1;
                    }
                }
            }
        }
        // 3. flushed elements; NaN blocks
        let mut k = 0;
        for (r, row) in x.chunks(seg).enumerate() {
            for (j, blk) in row.chunks(b).enumerate() {
                let i0 = r * seg + j * b;
                let (vb, cb) = (&mut v[i0..i0 + blk.len()], &mut c[i0..i0 + blk.len()]);
                if s[k] == 0xff {
                    vb.iter_mut().for_each(|v| *v = O::from_f64(f64::NAN));
                    cb.iter_mut().for_each(|c| *c = self.nan_code);
                } else {
                    st.flushed += blk
                        .iter()
                        .zip(cb.iter())
                        .filter(|(x, &c)| c & self.mag_mask == 0 && x.to_f64() != 0.0)
                        .count() as u64;
                }
                k += 1;
            }
        }
        st
    }
}

/// `2^e` as a value of `F`, exact for `e` in [−127, 127] (subnormal for binary32 at −127).
#[inline(always)]
fn pow2_as<F: Float>(e: i32) -> F {
    let f = e + F::BIAS as i32;
    if f >= 1 {
        F::from_bits(<F::Bits as Word>::from_u64((f as u64) << F::MANT))
    } else {
        F::from_f64(pow2(e))
    }
}

/// The result of [`mx_quantize`].
#[derive(Debug, Clone, PartialEq)]
pub struct MxQuantized<O> {
    /// Element values times their block's scale, in the input's shape.
    pub values: Vec<O>,
    /// Element codes (one byte each, right-aligned), in the input's shape.
    pub codes: Vec<u8>,
    /// E8M0 scale codes, `rows × blocks_per_row`.
    pub scales: Vec<u8>,
    /// What happened.
    pub status: BlockStatus,
}

/// [`mx_quantize_into`] into new vectors.
///
/// # Errors
///
/// As [`mx_quantize_into`].
pub fn mx_quantize<I: Float>(x: &[I], row_len: usize, opts: &MxOptions) -> Result<MxQuantized<I>> {
    let rows = opts.check(x.len(), row_len)?;
    let mut q = MxQuantized {
        values: vec![I::default(); x.len()],
        codes: vec![0; x.len()],
        scales: vec![0; rows * opts.blocks_per_row(row_len)],
        status: BlockStatus::default(),
    };
    q.status = mx_quantize_into(x, row_len, opts, &mut q.values, &mut q.codes, &mut q.scales)?;
    Ok(q)
}

/// Values from element codes and E8M0 scale codes: `decode(code) · 2^(scale − 127)`, NaN in
/// blocks whose scale is `0xFF`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for inconsistent lengths.
pub fn mx_dequantize_into<O: Float>(
    codes: &[u8],
    scales: &[u8],
    row_len: usize,
    opts: &MxOptions,
    out: &mut [O],
) -> Result<()> {
    let rows = opts.check(codes.len(), row_len)?;
    let nb = opts.blocks_per_row(row_len);
    if scales.len() != rows * nb || out.len() != codes.len() {
        return Err(Error::InvalidArgument(format!(
            "MX dequantize: {} codes need {} scales and {} outputs (got {}, {})",
            codes.len(),
            rows * nb,
            codes.len(),
            scales.len(),
            out.len()
        )));
    }
    let table: Vec<f64> = (0..=255u8).map(|c| opts.element.decode(c)).collect();
    for (r, (crow, orow)) in codes
        .chunks(row_len)
        .zip(out.chunks_mut(row_len))
        .enumerate()
    {
        for (j, (cb, ob)) in crow
            .chunks(opts.block)
            .zip(orow.chunks_mut(opts.block))
            .enumerate()
        {
            let s = scales[r * nb + j];
            let x = if s == 0xff {
                f64::NAN
            } else {
                pow2(s as i32 - 127)
            };
            ob.iter_mut()
                .zip(cb)
                .for_each(|(o, &c)| *o = O::from_f64(table[c as usize] * x));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic test data: blocks of very different magnitudes, exact ties of the
    /// element grid, subnormal binary32 blocks, all-zero blocks, ±0, NaN and ±Inf blocks.
    fn data(n: usize, b: usize, seed: u64) -> Vec<f64> {
        let mut next = super::super::test_bits(seed);
        let mut x = Vec::with_capacity(n);
        for blk in 0..n / b {
            let kind = next() % 10;
            let e = (next() % 300) as i32 - 150;
            for _ in 0..b {
                let r = next();
                let u = (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                let v = match kind {
                    0 => 0.0,
                    1 => ((r % 64) as f64 - 32.0) * 0.125 * pow2(e.clamp(-20, 20)), // grid ties
                    2 => u * 1e-39,                                                 // subnormal f32
                    3 if r.is_multiple_of(7) => -0.0,
                    _ => u * pow2(e) * if r.is_multiple_of(5) { 1e-3 } else { 1.0 },
                };
                x.push(v);
            }
            if blk % 17 == 3 {
                let at = blk * b + (next() as usize % b);
                x[at] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][blk % 3];
            }
        }
        x
    }

    fn same<I: Float>(opts: &MxOptions, x: &[I]) {
        let b = opts.block;
        let ctx = Ctx::<I>::new(opts);
        let n = x.len();
        let (mut v1, mut c1, mut s1) = (vec![I::default(); n], vec![0u8; n], vec![0u8; n / b]);
        let (mut v2, mut c2, mut s2) = (vec![I::default(); n], vec![0u8; n], vec![0u8; n / b]);
        let st1 = match (&ctx.fused, &ctx.rounder) {
            (Some(e), _) => ctx.rows_fused(e, x, &mut v1, &mut c1, &mut s1),
            (None, Some(_)) => ctx.rows_exact(x, &mut v1, &mut c1, &mut s1),
            (None, None) => ctx.rows_fused(&fused::Int8, x, &mut v1, &mut c1, &mut s1),
        };
        // the general path, rows of 4 blocks
        let st2 = ctx.rows_general(x, 4 * b, &mut v2, &mut c2, &mut s2);
        let what = format!("{} block {b} {:?} {}", opts.element, opts.scale, I::NAME);
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
    }

    /// The one-pass paths (fused float elements, MXINT8, and the two-pass kernel path)
    /// equal the general path bit for bit: every element type, rule, and block sizes
    /// with and without a partial vector step.
    #[test]
    fn whole_block_paths_equal_the_general_path() {
        let elems = [
            "fp8-e4m3", "fp8-e5m2", "fp6-e3m2", "fp6-e2m3", "fp4-e2m1", "int8", "e4m3fnuz",
        ];
        for (i, name) in elems.iter().enumerate() {
            for rule in [
                ScaleRule::Floor,
                ScaleRule::Ceil,
                ScaleRule::Even,
                ScaleRule::Rceil,
            ] {
                for b in [32usize, 16, 8, 24, 48] {
                    let mut opts = MxOptions::new(MxElement::parse(name).unwrap());
                    opts.scale = rule;
                    opts.block = b;
                    let x = data(b * 64 * 4, b, (i * 131 + b) as u64);
                    same::<f64>(&opts, &x);
                    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                    same::<f32>(&opts, &x32);
                    // items of four blocks: most hold no rare block, so their scales take
                    // the vectorised rules
                    let fast =
                        x32.chunks(4 * b)
                            .filter(|piece| {
                                same::<f32>(&opts, piece);
                                let ctx = Ctx::<f32>::new(&opts);
                                let mut bm = [0u32; 4];
                                fused::block_maxima(piece, b, &mut bm);
                                let (mut s, mut inv, mut up) = ([0u8; 4], [0f32; 4], [0f32; 4]);
                                match rule {
                                    ScaleRule::Floor => ctx
                                        .scales_fast::<f32, FLOOR>(&bm, &mut s, &mut inv, &mut up),
                                    ScaleRule::Ceil => {
                                        ctx.scales_fast::<f32, CEIL>(&bm, &mut s, &mut inv, &mut up)
                                    }
                                    ScaleRule::Even => {
                                        ctx.scales_fast::<f32, EVEN>(&bm, &mut s, &mut inv, &mut up)
                                    }
                                    ScaleRule::Rceil => false,
                                }
                            })
                            .count();
                    assert!(
                        fast > 0 || rule == ScaleRule::Rceil,
                        "{fast} fast items, {name} {rule:?} {b}"
                    );
                }
            }
        }
    }
}
