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
//! At most 8 bits (without the clip search), each group runs in the input's own lanes
//! (`W` = 23 or 52 stored bits) by a multiplication: `y = x ⊗ RN(1/scale)` is within
//! `2^−(W−1)` (relative) of `x / scale`, so `rint(y)` is the seed's `rint(RN64(x / scale))`
//! for every `y` farther than `|y| · 2^−(W−2)` from a half-integer; a piece of 256 elements
//! with one that close is done again by division. The results are the same bits (a unit test
//! compares the two paths on ties and their neighbours).
//!
//! **Clip search** (`clip = mse`): each group tries the ratios `c = 1.00, 0.99, …, 0.50` (51
//! candidates) and keeps the one with the smallest sum of squared errors (the largest `c` on
//! ties).

use crate::error::{Error, Result};
use crate::round::{Code, Float};
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

    /// The number of scales (groups) for `len` elements whose last axis is `row_len`: one
    /// per [`group_len`](Self::group_len) elements, and one for an empty tensor.
    ///
    /// # Errors
    ///
    /// As [`group_len`](Self::group_len).
    pub fn groups(&self, len: usize, row_len: usize) -> Result<usize> {
        Ok(group_count(len, self.group_len(len, row_len)?))
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

/// Groups of `glen` elements in `len` (one for an empty tensor).
fn group_count(len: usize, glen: usize) -> usize {
    len.div_ceil(glen).max(usize::from(len == 0))
}

struct Group {
    scale: f64,
    zero: f64,
}

#[inline(always)]
fn params(x: &[f64], o: &IntOptions, c: f64) -> Group {
    // (inputs are finite: compare-selects that vectorise)
    let amax = x
        .iter()
        .fold(0f64, |m, v| if v.abs() > m { v.abs() } else { m });
    let lo = x
        .iter()
        .fold(f64::INFINITY, |m, &v| if v < m { v } else { m });
    let hi = x
        .iter()
        .fold(f64::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    params_of(amax, lo, hi, o, c)
}

/// A group's scale and zero from its largest magnitude `amax`, its least and greatest
/// values `lo`, `hi`, and the clip ratio `c`.
#[inline(always)]
fn params_of(amax: f64, lo: f64, hi: f64, o: &IntOptions, c: f64) -> Group {
    let (qmin, qmax) = o.range();
    match o.mapping {
        Mapping::Symmetric | Mapping::SymmetricFull => {
            let amax = amax * c;
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

/// `(amax, lo, hi, finite)` of a group in its own lanes: the largest magnitude (from the
/// bits), the least and greatest values (when `both`; else 0), and whether every element
/// is finite.
#[inline(always)]
fn stats<I: Float>(x: &[I], both: bool) -> (f64, f64, f64, bool) {
    use crate::round::types::Word;
    let m = crate::block::max_abs_bits(x);
    let inf = <I::Bits as Word>::from_u64(((2 * I::BIAS as u64) + 1) << I::MANT);
    let (mut lo, mut hi) = (0.0, 0.0);
    if both && m < inf {
        // (finite: the plain minimum and maximum)
        // (sixteen lanes, so that the folds vectorise)
        let (mut l, mut h) = ([x[0]; 16], [x[0]; 16]);
        let chunks = x.chunks_exact(16);
        for &v in chunks.remainder() {
            (l[0], h[0]) = (
                if v < l[0] { v } else { l[0] },
                if v > h[0] { v } else { h[0] },
            );
        }
        for c in chunks {
            for i in 0..16 {
                l[i] = if c[i] < l[i] { c[i] } else { l[i] };
                h[i] = if c[i] > h[i] { c[i] } else { h[i] };
            }
        }
        lo = l
            .iter()
            .fold(x[0], |m, &v| if v < m { v } else { m })
            .to_f64();
        hi = h
            .iter()
            .fold(x[0], |m, &v| if v > m { v } else { m })
            .to_f64();
    }
    (I::from_bits(m).to_f64(), lo, hi, m < inf)
}

/// One group in the lanes of `I` (`W` stored bits): `y = x ⊗ RN(1/scale)` carries a
/// relative error below `2^−(W−1)`, so `rint(y)` is the seed's `rint(RN64(x / scale))`
/// unless `y` lies within `|y| · 2^−(W−2)` of a half-integer; a piece of 256 elements with
/// one that close is done again by division. Values `scale · (q − zero)` are formed in
/// binary64 as the seed does, then rounded to `I`, and stored only when `V` (a zero value
/// then means `q = zero`). Returns `(clipped, flushed)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn group_lanes<I: Float, Q: QOut, const V: bool>(
    x: &[I],
    v: &mut [I],
    q: &mut [Q],
    mask: u32,
    scale: f64,
    zero: f64,
    qmin: f64,
    qmax: f64,
    r: I,
) -> (u64, u64) {
    use crate::round::types::Word;
    const L: usize = 16;
    let magic = I::from_f64(1.5 * crate::format::pow2(I::MANT as i32));
    let magic_bits = magic.to_bits().to_u64() as i32;
    let sign = <I::Bits as Word>::ONE.shl(<I::Bits as Word>::from_u64(
        <I::Bits as Word>::BITS as u64 - 1,
    ));
    let abs = |a: I| I::from_bits(a.to_bits() & !sign);
    let (z, lo, hi) = (I::from_f64(zero), I::from_f64(qmin), I::from_f64(qmax));
    let tol = I::from_f64(crate::format::pow2(2 - I::MANT as i32));
    let half = I::from_f64(0.5);
    let one = |xi: I| {
        let y = xi.mul(r);
        let t = y.add(magic).sub(magic);
        let near = abs(abs(y.sub(t)).sub(half)) <= abs(y).mul(tol);
        let rr = t.add(z);
        let qc = if rr < lo {
            lo
        } else if rr > hi {
            hi
        } else {
            rr
        };
        let code = (qc.add(magic).to_bits().to_u64() as i32).wrapping_sub(magic_bits);
        let (val, flushed) = if V {
            let val = I::from_f64(qc.sub(z).to_f64() * scale);
            (val, val.to_f64() == 0.0 && xi.to_f64() != 0.0)
        } else {
            // (scale above the least subnormal of I: only q = zero gives 0)
            (I::default(), qc == z && xi != I::default())
        };
        (code, val, (qc != rr) as u32, flushed as u32, near)
    };
    // the seed's formula, by division, for the vectors with an element near a half-integer
    let exact = |xi: I| {
        let xv = xi.to_f64();
        let rr = (xv / scale).round_ties_even() + zero;
        let qc = rr.clamp(qmin, qmax);
        let val = scale * (qc - zero);
        let flushed = val == 0.0 && xv != 0.0;
        (
            qc as i32,
            I::from_f64(val),
            (qc != rr) as u32,
            flushed as u32,
        )
    };
    let (mut clipped, mut flushed) = ([0u32; L], [0u32; L]);
    let mut tail = (0u32, 0u32);
    let (xs, xr) = x.split_at(x.len() / L * L);
    // pieces of 16 vectors: one test of the near flags per piece
    const PIECE: usize = 16 * L;
    // binary32 into byte codes without values: the AVX2 kernel of the same step
    let lane = crate::simd::IntLane {
        r: r.to_f64() as f32,
        zero: z.to_f64() as f32,
        lo: lo.to_f64() as f32,
        hi: hi.to_f64() as f32,
        mask,
    };
    let bytes = match (V, mask <= 0xff, I::as_f32_slice(xs)) {
        (false, true, Some(x32)) => Q::as_bytes(&mut q[..xs.len()]).map(|q8| (x32, q8)),
        _ => None,
    };
    let mut done = false;
    if let Some((x32, q8)) = bytes {
        done = true;
        for (xp, qp) in x32.chunks(PIECE).zip(q8.chunks_mut(PIECE)) {
            match crate::simd::int_codes(xp, qp, &lane) {
                Some(p) if !p.near => {
                    clipped[0] += p.clipped;
                    flushed[0] += p.flushed;
                }
                Some(_) => {
                    for (&xi, qi) in xp.iter().zip(qp.iter_mut()) {
                        let (code, _, cl, fl) = exact(I::from_f64(f64::from(xi)));
                        *qi = code as u8 & mask as u8;
                        tail = (tail.0 + cl, tail.1 + fl);
                    }
                }
                // (no AVX2: known at the first piece, before anything is written)
                None => {
                    done = false;
                    break;
                }
            }
        }
    }
    // (the portable step: without AVX2, with values, or into wider codes)
    if !done {
        // (without values, a piece's values go to this scratch, which stays in L1)
        let mut scratch = [I::default(); PIECE];
        for (p, (xp, qp)) in xs.chunks(PIECE).zip(q.chunks_mut(PIECE)).enumerate() {
            let vp = if V {
                &mut v[p * PIECE..p * PIECE + xp.len()]
            } else {
                &mut scratch[..xp.len()]
            };
            let (mut cls, mut fls, mut near) = ([0u32; L], [0u32; L], [false; L]);
            for ((xa, va), qa) in xp
                .chunks_exact(L)
                .zip(vp.chunks_exact_mut(L))
                .zip(qp.chunks_exact_mut(L))
            {
                for i in 0..L {
                    let (code, val, cl, fl, nr) = one(xa[i]);
                    qa[i] = Q::put(code, mask);
                    if V {
                        va[i] = val;
                    }
                    cls[i] += cl;
                    fls[i] += fl;
                    near[i] |= nr;
                }
            }
            if near.iter().any(|&n| n) {
                for ((&xi, vi), qi) in xp.iter().zip(vp.iter_mut()).zip(qp.iter_mut()) {
                    let (code, val, cl, fl) = exact(xi);
                    (*qi, *vi) = (Q::put(code, mask), val);
                    tail = (tail.0 + cl, tail.1 + fl);
                }
                continue;
            }
            for i in 0..L {
                clipped[i] += cls[i];
                flushed[i] += fls[i];
            }
        }
    }
    let at = xs.len();
    for (i, &xi) in xr.iter().enumerate() {
        let (mut code, mut val, mut cl, mut fl, nr) = one(xi);
        if nr {
            (code, val, cl, fl) = exact(xi);
        }
        q[at + i] = Q::put(code, mask);
        if V {
            v[at + i] = val;
        }
        tail = (tail.0 + cl, tail.1 + fl);
    }
    let sum = |a: [u32; L]| a.iter().map(|&v| v as u64).sum::<u64>();
    (sum(clipped) + tail.0 as u64, sum(flushed) + tail.1 as u64)
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
    let groups = o.groups(x.len(), row_len)?;
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

/// [`quantize_int`] into the caller's buffers (`values` and `q` as long as `x`, `q` in
/// `i32` or `i64`; `scales`, `zeros` and `clips` one per group); returns (clipped, flushed).
///
/// # Errors
///
/// As [`quantize_int`], and [`Error::InvalidArgument`] for buffers of the wrong length.
#[allow(clippy::too_many_arguments)]
pub fn quantize_int_into<I: Float, Q: IntValue>(
    x: &[I],
    row_len: usize,
    o: &IntOptions,
    values: &mut [I],
    q: &mut [Q],
    scales: &mut [f64],
    zeros: &mut [f64],
    clips: &mut [f64],
) -> Result<(u64, u64)> {
    quantize_groups::<I, Q, true>(x, row_len, o, values, q, scales, zeros, clips, true)
}

/// A signed integer type that holds each `q` of [`quantize_int_into`] itself: `i32`, or
/// `i64` for callers (numpy's default integer) that would otherwise widen a copy. Sealed.
pub trait IntValue: store::QOut {}

impl IntValue for i32 {}
impl IntValue for i64 {}

/// [`quantize_int_into`] writing each `q` as its `bits`-bit code in `C` ([`int_code`]: two's
/// complement for the symmetric mappings, plain for the asymmetric one; `u8` holds up to 8
/// bits, `u16` up to 16), and the values only when `values` is given. This is the form that
/// packing and storage want: one or two bytes per element instead of four (plus the values'),
/// which is most of the time on a memory-bound machine.
///
/// # Errors
///
/// As [`quantize_int_into`], and [`Error::InvalidArgument`] when `C` is narrower than the
/// quantization's bits.
///
/// ```
/// use lowprec::quant::{quantize_int_codes_into, IntOptions, Mapping};
/// let x = [0.0f32, 0.5, -1.0, 0.25];
/// let (mut codes, mut s, mut z, mut c) = ([0u8; 4], [0.0; 1], [0.0; 1], [0.0; 1]);
/// quantize_int_codes_into(&x, 4, &IntOptions::new(8), None, &mut codes, &mut s, &mut z, &mut c)
///     .unwrap();
/// assert_eq!(codes, [0, 64, 0x81, 32]); // −127 in two's complement
/// let o = IntOptions { mapping: Mapping::Asymmetric, ..IntOptions::new(4) };
/// let mut v = [0f32; 4];
/// quantize_int_codes_into(&x, 4, &o, Some(&mut v), &mut codes, &mut s, &mut z, &mut c).unwrap();
/// assert_eq!((codes, z[0]), ([10, 15, 0, 12], 10.0));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn quantize_int_codes_into<I: Float, C: Code>(
    x: &[I],
    row_len: usize,
    o: &IntOptions,
    values: Option<&mut [I]>,
    codes: &mut [C],
    scales: &mut [f64],
    zeros: &mut [f64],
    clips: &mut [f64],
) -> Result<(u64, u64)> {
    I::quantize_int_codes_into(
        x,
        row_len,
        o,
        values,
        C::codes_mut(codes),
        scales,
        zeros,
        clips,
    )
}

/// [`quantize_int_codes_into`] for the types it is called with (see `crate::mono`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn quantize_int_codes_into_generic<I: Float, C: Code>(
    x: &[I],
    row_len: usize,
    o: &IntOptions,
    values: Option<&mut [I]>,
    codes: &mut [C],
    scales: &mut [f64],
    zeros: &mut [f64],
    clips: &mut [f64],
) -> Result<(u64, u64)> {
    if o.bits > C::BITS {
        return Err(Error::InvalidArgument(format!(
            "{}-bit integer codes do not fit {}; take a code type of at least {} bits",
            o.bits,
            C::NAME,
            o.bits
        )));
    }
    match values {
        Some(v) => {
            quantize_groups::<I, C, true>(x, row_len, o, v, codes, scales, zeros, clips, true)
        }
        None => quantize_groups::<I, C, false>(
            x,
            row_len,
            o,
            &mut [],
            codes,
            scales,
            zeros,
            clips,
            true,
        ),
    }
}

/// The private trait that seals [`IntValue`] (a `pub` trait in a private module).
mod store {
    use crate::round::Code;

    /// How a quantization stores each integer `q`: itself (`i32`, `i64`) or its `bits`-bit code
    /// (a [`Code`], `mask = 2^bits − 1`).
    pub trait QOut: Copy + Default + Send + Sync + 'static {
        /// `q` as stored (`mask = 2^bits − 1` for a code).
        fn put(q: i32, mask: u32) -> Self;
        /// The slice as bytes when the stored type is `u8` (for the byte kernel).
        fn as_bytes(q: &mut [Self]) -> Option<&mut [u8]> {
            let _ = q;
            None
        }
    }

    impl QOut for i32 {
        #[inline(always)]
        fn put(q: i32, _: u32) -> i32 {
            q
        }
    }

    impl QOut for i64 {
        #[inline(always)]
        fn put(q: i32, _: u32) -> i64 {
            i64::from(q)
        }
    }

    impl<C: Code> QOut for C {
        #[inline(always)]
        fn put(q: i32, mask: u32) -> C {
            C::from_u64(u64::from(q as u32 & mask))
        }
        fn as_bytes(q: &mut [C]) -> Option<&mut [u8]> {
            C::as_u8s(q)
        }
    }
}

use store::QOut;

/// [`quantize_int_into`], with the lane path (`lanes`) or binary64 division throughout
/// (the tests' reference); `values` is ignored (and may be empty) unless `V`.
#[allow(clippy::too_many_arguments)]
fn quantize_groups<I: Float, Q: QOut, const V: bool>(
    x: &[I],
    row_len: usize,
    o: &IntOptions,
    values: &mut [I],
    q: &mut [Q],
    scales: &mut [f64],
    zeros: &mut [f64],
    clips: &mut [f64],
    lanes: bool,
) -> Result<(u64, u64)> {
    let glen = o.group_len(x.len(), row_len)?;
    let groups = group_count(x.len(), glen);
    if (V && values.len() != x.len())
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
    let step = glen * per;
    let values: Vec<&mut [I]> = if V {
        values.chunks_mut(step).collect()
    } else {
        (0..x.len().div_ceil(step))
            .map(|_| Default::default())
            .collect()
    };
    // (the kernel counts NaN/Inf inputs as it goes; the error names the first one)
    let (clipped, flushed, bad) = x
        .par_chunks(step)
        .zip(values.into_par_iter())
        .zip(q.par_chunks_mut(step))
        .zip(
            scales
                .par_chunks_mut(per)
                .zip(zeros.par_chunks_mut(per))
                .zip(clips.par_chunks_mut(per)),
        )
        .map(|(((x, v), q), ((s, z), cl))| {
            crate::simd::dispatch(Groups::<I, Q, V> {
                o,
                lanes,
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

/// One work item of integer quantization, compiled for the best instruction set; values
/// written only when `V` (else `v` is empty).
struct Groups<'a, I: Float, Q: QOut, const V: bool> {
    o: &'a IntOptions,
    /// Whether groups may take [`group_lanes`].
    lanes: bool,
    glen: usize,
    x: &'a [I],
    v: &'a mut [I],
    q: &'a mut [Q],
    s: &'a mut [f64],
    z: &'a mut [f64],
    cl: &'a mut [f64],
}

impl<I: Float, Q: QOut, const V: bool> crate::simd::Kernel for Groups<'_, I, Q, V> {
    /// `(clipped, flushed, non-finite inputs)`.
    type Output = (u64, u64, u64);
    #[inline(always)]
    fn run(self) -> (u64, u64, u64) {
        let Groups {
            o,
            lanes,
            glen,
            x,
            v,
            q,
            s,
            z,
            cl,
        } = self;
        let (qmin, qmax) = o.range();
        let mask = (1u32 << o.bits) - 1;
        // (the binary64 copy of a group, allocated only when a group takes the division path:
        // a per-tensor group is the whole tensor)
        let mut buf = Vec::new();
        let (mut clipped, mut flushed, mut bad) = (0u64, 0u64, 0u64);
        // at most 8 bits without the clip search: the input's lanes, each group while it is
        // in cache (a first pass for every scale of the item is slower)
        let lanes = lanes && o.bits <= 8 && !matches!(o.clip, Clip::Mse);
        let c_lanes = match o.clip {
            Clip::Ratio(c) => c,
            _ => 1.0,
        };
        for (k, (xg, qg)) in x.chunks(glen).zip(q.chunks_mut(glen)).enumerate() {
            let vg: &mut [I] = if V {
                &mut v[k * glen..k * glen + xg.len()]
            } else {
                &mut []
            };
            if lanes {
                let (amax, lo, hi, finite) = stats(xg, o.mapping == Mapping::Asymmetric);
                let g = params_of(amax, lo, hi, o, c_lanes);
                let r = I::from_f64(1.0 / g.scale);
                // |y| stays far below 2^22, where the rounding constant works
                let fits = r.to_f64().is_normal() && amax * r.to_f64() < 1048576.0;
                if finite && fits {
                    // without values, the values are not formed: `1/scale` is a normal
                    // number of I here, so scale exceeds I's least subnormal, and only
                    // `q = zero` gives a zero value
                    debug_assert!(
                        V || g.scale > crate::format::pow2(1 - I::BIAS as i32 - I::MANT as i32)
                    );
                    let (n_clip, n_flush) =
                        group_lanes::<I, Q, V>(xg, vg, qg, mask, g.scale, g.zero, qmin, qmax, r);
                    clipped += n_clip;
                    flushed += n_flush;
                    (s[k], z[k], cl[k]) = (g.scale, g.zero, c_lanes);
                    continue;
                }
            }
            if buf.len() < xg.len() {
                buf.resize(xg.len(), 0f64);
            }
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
            for (j, (qq, &xv)) in qg.iter_mut().zip(xs.iter()).enumerate() {
                let r = (xv / scale).round_ties_even() + zero;
                let qc = r.clamp(qmin, qmax);
                clipped += (qc != r) as u64;
                let val = scale * (qc - zero);
                flushed += (val == 0.0 && xv != 0.0) as u64;
                *qq = Q::put(qc as i32, mask);
                if V {
                    vg[j] = I::from_f64(val);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups of every kind: Gaussian-like values, exact half-integer multiples of the group
    /// scale (ties of `rint`), their binary32 neighbours, a constant group, ±0, outliers.
    fn data(n: usize, glen: usize, seed: u64) -> Vec<f32> {
        let mut next = crate::block::test_bits(seed);
        let mut x = Vec::with_capacity(n);
        while x.len() < n {
            let kind = next() % 6;
            for j in 0..glen {
                let r = next();
                let u = (r >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                x.push(match kind {
                    // max 127 · 2^−3: the scale is 2^−3 exactly, every (k + ½)/8 a tie
                    0 if j == 0 => 127.0 / 8.0,
                    0 => ((r % 255) as f32 - 127.0 + 0.5) / 8.0,
                    1 if j == 0 => 127.0 / 8.0,
                    1 => {
                        let t = ((r % 255) as f32 - 127.0 + 0.5) / 8.0;
                        f32::from_bits(t.to_bits().wrapping_add_signed((r >> 20) as i32 % 3 - 1))
                    }
                    2 => 0.75,
                    3 if r.is_multiple_of(4) => -0.0,
                    4 if j == 1 => u * 1e6,
                    _ => u * 3.0,
                });
            }
        }
        x.truncate(n);
        x
    }

    /// The lane path equals division (binary32 and binary64 inputs), and binary32 inputs
    /// equal binary64 inputs of the same values (the seed's arithmetic), bit for bit: codes,
    /// scales, zero points, counts, and values (rounded once to binary32).
    #[test]
    fn lanes_equal_division_and_binary32_equals_binary64() {
        fn run<I: Float>(x: &[I], row: usize, o: &IntOptions, lanes: bool) -> IntQuantized<I> {
            let groups = x.len() / o.group_len(x.len(), row).unwrap();
            let mut out = IntQuantized {
                values: vec![I::default(); x.len()],
                q: vec![0; x.len()],
                scales: vec![0.0; groups],
                zeros: vec![0.0; groups],
                clips: vec![0.0; groups],
                clipped: 0,
                flushed: 0,
            };
            (out.clipped, out.flushed) = quantize_groups::<I, i32, true>(
                x,
                row,
                o,
                &mut out.values,
                &mut out.q,
                &mut out.scales,
                &mut out.zeros,
                &mut out.clips,
                lanes,
            )
            .unwrap();
            out
        }
        fn same<I: Float, J: Float>(a: &IntQuantized<I>, b: &IntQuantized<J>, what: &str) {
            let first = a.q.iter().zip(&b.q).position(|(p, q)| p != q);
            assert_eq!(first, None, "first differing code, {what}");
            assert_eq!(a.scales, b.scales, "scales, {what}");
            assert_eq!(a.zeros, b.zeros, "zeros, {what}");
            assert_eq!((a.clipped, a.flushed), (b.clipped, b.flushed), "{what}");
            let first = a
                .values
                .iter()
                .zip(&b.values)
                .position(|(p, q)| p.to_bits() != I::from_f64(q.to_f64()).to_bits());
            assert_eq!(first, None, "first differing value, {what}");
        }
        let maps = [
            Mapping::Symmetric,
            Mapping::SymmetricFull,
            Mapping::Asymmetric,
        ];
        for (seed, glen) in [(1u64, 128usize), (2, 16), (3, 33), (4, 256)] {
            let row = glen * 4;
            let x = data(row * 24, glen, seed);
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            // binary64 neighbours of the binary32 ties: up to two ulps above
            let y64: Vec<f64> = x64
                .iter()
                .enumerate()
                .map(|(i, &v)| f64::from_bits(v.to_bits().wrapping_add((i % 3) as u64)))
                .collect();
            for bits in [2, 4, 8] {
                // (rows and the whole tensor span several pieces of 256 of the lane path)
                let grans = [
                    Granularity::Group(glen),
                    Granularity::Channel,
                    Granularity::Tensor,
                ];
                for (mapping, granularity) in maps.into_iter().flat_map(|m| grans.map(|g| (m, g))) {
                    for clip in [Clip::None, Clip::Ratio(0.9)] {
                        let o = IntOptions {
                            mapping,
                            clip,
                            granularity,
                            ..IntOptions::new(bits)
                        };
                        let what =
                            format!("{bits} bits {mapping:?} {clip:?} {granularity:?} {glen}");
                        let a = run(&x, row, &o, true);
                        same(&a, &run(&x, row, &o, false), &format!("f32 lanes, {what}"));
                        let b = run(&x64, row, &o, true);
                        same(
                            &b,
                            &run(&x64, row, &o, false),
                            &format!("f64 lanes, {what}"),
                        );
                        same(&a, &b, &format!("f32 against f64, {what}"));
                        let c = run(&y64, row, &o, true);
                        same(&c, &run(&y64, row, &o, false), &format!("f64 ulps, {what}"));
                    }
                }
            }
        }
    }

    /// The code forms ([`quantize_int_codes_into`], with and without values, `u8` and `u16`)
    /// equal [`int_code`] of `q` from [`quantize_int`], with the same values, scales, zero
    /// points and counts, on the lane path (≤ 8 bits) and the division path (12 bits, clip
    /// search); a code type narrower than the bits is refused.
    #[test]
    fn codes_are_int_code_of_q() {
        fn check<C: Code>(x: &[f32], row: usize, o: &IntOptions, with_values: bool) {
            let want = quantize_int(x, row, o).unwrap();
            let g = want.scales.len();
            let mut codes = vec![C::default(); x.len()];
            let mut v = vec![f32::NAN; x.len()];
            let (mut s, mut z, mut c) = (vec![0.0; g], vec![0.0; g], vec![0.0; g]);
            let counts = quantize_int_codes_into(
                x,
                row,
                o,
                with_values.then_some(&mut v[..]),
                &mut codes,
                &mut s,
                &mut z,
                &mut c,
            )
            .unwrap();
            let what = format!("{o:?} {} values {with_values}", C::NAME);
            let bad = codes
                .iter()
                .zip(&want.q)
                .position(|(&c, &q)| c.to_u64() != u64::from(int_code(q, o.bits)));
            assert_eq!(bad, None, "first differing code, {what}");
            assert_eq!(counts, (want.clipped, want.flushed), "{what}");
            assert_eq!(
                (&s, &z, &c),
                (&want.scales, &want.zeros, &want.clips),
                "{what}"
            );
            if with_values {
                let bad = v
                    .iter()
                    .zip(&want.values)
                    .position(|(a, b)| a.to_bits() != b.to_bits());
                assert_eq!(bad, None, "first differing value, {what}");
            } else {
                assert!(v.iter().all(|v| v.is_nan()), "values written, {what}");
            }
        }
        let (glen, row) = (128, 512);
        let mut x = data(row * 40, glen, 9);
        // groups of subnormals (the division path, values flushed to zero in binary32)
        let mut next = crate::block::test_bits(10);
        for k in 0..glen * 8 {
            let r = next();
            let m = (r % (1 + (k / glen) as u64 * 40)) as u32;
            x.push(f32::from_bits(m | ((r >> 40) as u32 & 1) << 31));
        }
        for mapping in [
            Mapping::Symmetric,
            Mapping::SymmetricFull,
            Mapping::Asymmetric,
        ] {
            for granularity in [Granularity::Group(glen), Granularity::Tensor] {
                for (bits, clip) in [(4, Clip::None), (8, Clip::Ratio(0.9)), (12, Clip::Mse)] {
                    let o = IntOptions {
                        mapping,
                        granularity,
                        clip,
                        ..IntOptions::new(bits)
                    };
                    if bits <= 8 {
                        check::<u8>(&x, row, &o, false);
                        check::<u8>(&x, row, &o, true);
                    }
                    check::<u16>(&x, row, &o, false);
                    check::<u16>(&x, row, &o, true);
                }
            }
        }
        // groups that end in a part of 32 (the byte kernel's eight-element steps)
        for (glen, row) in [(40, 480), (24, 480)] {
            for bits in [4, 8] {
                let o = IntOptions {
                    granularity: Granularity::Group(glen),
                    ..IntOptions::new(bits)
                };
                check::<u8>(&x[..row * 40], row, &o, false);
            }
        }
        let o = IntOptions::new(12);
        let (mut codes, mut s) = (vec![0u8; 4], [0.0; 1]);
        let e = quantize_int_codes_into(
            &x[..4],
            4,
            &o,
            None,
            &mut codes,
            &mut s,
            &mut [0.0],
            &mut [0.0],
        );
        assert!(matches!(e, Err(Error::InvalidArgument(m)) if m.contains("uint8")));
    }

    /// `q` in `i64` is `q` in `i32` widened, with the same values, scales, zero points and
    /// counts, for each mapping on the lane path (8 bits) and the division path (16 bits).
    #[test]
    fn i64_q_is_the_i32_q_widened() {
        let (glen, row) = (64, 256);
        let x = data(row * 30, glen, 12);
        for mapping in [
            Mapping::Symmetric,
            Mapping::SymmetricFull,
            Mapping::Asymmetric,
        ] {
            for bits in [8, 16] {
                let o = IntOptions {
                    mapping,
                    granularity: Granularity::Group(glen),
                    ..IntOptions::new(bits)
                };
                let want = quantize_int(&x, row, &o).unwrap();
                let g = want.scales.len();
                let (mut v, mut q) = (vec![0f32; x.len()], vec![i64::MIN; x.len()]);
                let (mut s, mut z, mut c) = (vec![0.0; g], vec![0.0; g], vec![0.0; g]);
                let counts =
                    quantize_int_into(&x, row, &o, &mut v, &mut q, &mut s, &mut z, &mut c).unwrap();
                let wide: Vec<i64> = want.q.iter().map(|&q| i64::from(q)).collect();
                assert!(q == wide, "{o:?}");
                assert!(v
                    .iter()
                    .zip(&want.values)
                    .all(|(a, b)| a.to_bits() == b.to_bits()));
                assert_eq!(counts, (want.clipped, want.flushed));
                assert_eq!((s, z, c), (want.scales, want.zeros, want.clips));
            }
        }
    }
}
