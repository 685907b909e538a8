//! The slice API: round to values, encode to codes, decode codes; out of place, in place,
//! or into a new `Vec`. Work above [`PARALLEL_MIN`] elements is split into chunks on rayon's
//! pool; results are identical whatever the thread count (stochastic rounding included:
//! its random bits are keyed by element index).

use super::kernel::{f32_native, run, Plan};
use super::types::{Code, Float, Word};
use super::{Overflow, RoundOptions, RoundingMode, Status};
use crate::error::{Error, Result};
use crate::format::FloatFormat;
use crate::simd::cast16::{self, Dst, Half16};
use rayon::prelude::*;

/// Elements per work item.
const CHUNK: usize = 1 << 14;
/// Elements per stack block where binary32 inputs are widened, or data rounded in place.
const BLOCK: usize = 512;
/// Slices at least this long are processed in parallel.
pub const PARALLEL_MIN: usize = 1 << 17;

/// Bit-preserving conversion between float types of the same width, else through `f64`
/// (exact for every value the destination can hold).
#[inline(always)]
fn convert<I: Float, O: Float>(v: I) -> O {
    if I::MANT == O::MANT {
        O::from_bits(<O::Bits as Word>::from_u64(v.to_bits().to_u64()))
    } else {
        O::from_f64(v.to_f64())
    }
}

/// The kernel plan for input type `I`: native lanes; binary32 widened to binary64; or
/// binary64 narrowed to binary32 with round-to-odd first.
enum Route<I: Float> {
    Native(Box<Plan<I>>),
    Widen(Box<Plan<f64>>),
    Narrow(Box<Plan<f32>>),
}

/// Whether binary64 inputs may be narrowed to binary32 by round-to-odd before rounding into
/// `fmt` under `mode`: exact for every deterministic mode when binary32 carries two more
/// bits than the format everywhere in its range (`RN_p(RO_{p+2}(x)) = RN_p(x)`, and directed
/// and odd rounding need one), and the format's max plus one ulp is a binary32 number (so
/// that round-to-odd keeps every overflow an overflow).
fn narrow_ok(fmt: &FloatFormat, mode: RoundingMode, values: bool) -> bool {
    let m = fmt.man_bits() as i32;
    mode != RoundingMode::Stochastic
        && f32_native(fmt, values)
        && m <= 21
        && fmt.emin() - m >= -147
        && fmt.max_finite() + crate::format::pow2(fmt.emax() - m) <= f32::MAX as f64
}

impl<I: Float> Route<I> {
    fn new(fmt: &FloatFormat, opts: &RoundOptions, values: bool) -> Self {
        if I::MANT == 52 && narrow_ok(fmt, opts.mode, values) {
            Route::Narrow(Box::new(Plan::new(fmt, opts)))
        } else if I::MANT == 52 || f32_native(fmt, values) {
            Route::Native(Box::new(Plan::new(fmt, opts)))
        } else {
            Route::Widen(Box::new(Plan::new(fmt, opts)))
        }
    }
}

/// Binary64 to binary32 with round-to-odd: the truncation, with its last bit set when inexact.
struct NarrowOdd<'a, I> {
    src: &'a [I],
    dst: &'a mut [f32],
}

impl<I: Float> crate::simd::Kernel for NarrowOdd<'_, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (d, s) in self.dst.iter_mut().zip(self.src) {
            let x = s.to_f64();
            let t = x as f32; // nearest even; beyond binary32's max: ±Inf
            let back = t as f64;
            let away = back.abs() > x.abs(); // rounded away from zero: step back one ulp
            let inexact = back != x && !x.is_nan();
            let b = t.to_bits().wrapping_sub(away as u32) | inexact as u32;
            *d = f32::from_bits(b);
        }
    }
}

/// Call `f` on each piece of `(src, dst)` that does not cross a multiple of 2^32 in index.
#[inline(always)]
fn split32<S, D>(
    src: &[S],
    dst: &mut [D],
    index0: u64,
    f: &(impl Fn(&[S], &mut [D], u64) -> Status + Sync),
) -> Status {
    let room = (1u64 << 32) - (index0 & 0xffff_ffff);
    if (src.len() as u64) <= room {
        f(src, dst, index0)
    } else {
        let k = room as usize;
        let (s0, s1) = src.split_at(k);
        let (d0, d1) = dst.split_at_mut(k);
        f(s0, d0, index0) + f(s1, d1, index0 + room)
    }
}

/// Apply `f` to matching chunks of `src` and `dst`, in parallel for long slices.
fn for_chunks<S: Sync, D: Send>(
    src: &[S],
    dst: &mut [D],
    index0: u64,
    f: impl Fn(&[S], &mut [D], u64) -> Status + Sync,
) -> Status {
    let one = |(i, (s, d)): (usize, (&[S], &mut [D]))| {
        let at = index0.wrapping_add((i * CHUNK) as u64);
        split32(s, d, at, &f)
    };
    if src.len() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
        src.par_chunks(CHUNK)
            .zip(dst.par_chunks_mut(CHUNK))
            .enumerate()
            .map(one)
            .reduce(Status::default, |a, b| a + b)
    } else {
        src.chunks(CHUNK)
            .zip(dst.chunks_mut(CHUNK))
            .enumerate()
            .map(one)
            .fold(Status::default(), |a, b| a + b)
    }
}

/// `f` over `(src, dst)` through a stack block holding the input converted by `conv`
/// (binary32 widened to binary64, or binary64 narrowed to binary32 by round-to-odd).
#[inline(always)]
fn converted<I: Float, J: Float, D>(
    src: &[I],
    dst: &mut [D],
    index0: u64,
    conv: impl Fn(&[I], &mut [J]),
    f: impl Fn(&[J], &mut [D], u64) -> Status,
) -> Status {
    let mut tmp = [J::default(); BLOCK];
    let mut st = Status::default();
    for (k, (s, d)) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)).enumerate() {
        let t = &mut tmp[..s.len()];
        conv(s, t);
        st += f(t, d, index0 + (k * BLOCK) as u64);
    }
    st
}

#[inline(always)]
fn widened<I: Float, D>(
    src: &[I],
    dst: &mut [D],
    index0: u64,
    f: impl Fn(&[f64], &mut [D], u64) -> Status,
) -> Status {
    let widen = |s: &[I], t: &mut [f64]| t.iter_mut().zip(s).for_each(|(t, s)| *t = s.to_f64());
    converted(src, dst, index0, widen, f)
}

#[inline(always)]
fn narrowed<I: Float, D>(
    src: &[I],
    dst: &mut [D],
    index0: u64,
    f: impl Fn(&[f32], &mut [D], u64) -> Status,
) -> Status {
    let narrow = |s: &[I], t: &mut [f32]| crate::simd::dispatch(NarrowOdd { src: s, dst: t });
    converted(src, dst, index0, narrow, f)
}

/// The CPU's own conversion instruction, when it computes exactly this call: binary16 or
/// bfloat16, nearest even, IEEE overflow, and the instruction present (see
/// `simd/cast16.rs`). Returns the format and its NaN codes for a positive and a negative
/// sign.
fn hardware16(fmt: &FloatFormat, opts: &RoundOptions) -> Option<(Half16, [u16; 2])> {
    if opts.mode != RoundingMode::NearestEven || opts.overflow != Overflow::Ieee {
        return None;
    }
    let kind = if *fmt == FloatFormat::FP16 {
        Half16::Fp16
    } else if *fmt == FloatFormat::BF16 {
        Half16::Bf16
    } else {
        return None;
    };
    let nan = [fmt.nan_code(false)? as u16, fmt.nan_code(true)? as u16];
    cast16::available(kind).then_some((kind, nan))
}

impl From<cast16::Counts> for Status {
    fn from(c: cast16::Counts) -> Status {
        Status {
            inexact: c.inexact,
            overflow: c.overflow,
            underflow: c.underflow,
            flushed: c.flushed,
            nan: c.nan,
            infinite: c.infinite,
            ..Status::default()
        }
    }
}

/// [`hardware16`] over a whole slice, in parallel chunks like the generic kernel.
fn run_hardware16((kind, nan): (Half16, [u16; 2]), src: &[f32], dst: Dst<'_>) -> Status {
    // outputs larger than this go around the cache (non-temporal stores): they would not
    // stay in it, and an ordinary store first reads the line it writes
    const STREAM_MIN_BYTES: usize = 16 << 20;
    let bytes = match &dst {
        Dst::Codes(_) => 2,
        Dst::Values(_) => 4,
    };
    let stream = src.len() * bytes >= STREAM_MIN_BYTES;
    let run = |s: &[f32], d: Dst<'_>| {
        cast16::convert(kind, s, d, nan, stream).map_or_else(Status::default, Status::from)
    };
    match dst {
        Dst::Codes(d) => for_chunks(src, d, 0, |s, d, _| run(s, Dst::Codes(d))),
        Dst::Values(d) => for_chunks(src, d, 0, |s, d, _| run(s, Dst::Values(d))),
    }
}

/// Binary32 into byte codes by the AVX2 kernel [`cast8`](crate::simd::cast8) where the
/// plan allows it (round to nearest even into a format of the lean float-add kernel), in
/// parallel chunks like the generic kernel; a chunk holding an overflow, a NaN or ±Inf is
/// done again by the generic kernel. `None`: the generic route applies.
fn encode_bytes(
    fmt: &FloatFormat,
    opts: &RoundOptions,
    src: &[f32],
    dst: &mut [u8],
) -> Option<Status> {
    if !f32_native(fmt, false) || !crate::simd::cast8::available() {
        return None;
    }
    let p = Plan::<f32>::new(fmt, opts);
    let k = p.cast8(fmt)?;
    Some(for_chunks(
        src,
        dst,
        opts.index_offset,
        |s, d, at| match crate::simd::cast8::cast8(&k, s, d) {
            Some(c) if c.amax < k.over_min => Status {
                inexact: c.inexact,
                underflow: c.underflow,
                flushed: c.flushed,
                ..Status::default()
            },
            _ => run(&p, s, d, at, |c, _| c as u8),
        },
    ))
}

/// Binary32 into bfloat16 codes, round to nearest even, by the AVX2 kernel
/// [`cast16::bf16_codes_avx2`] (any overflow policy: a slice that overflows, or holds a
/// subnormal, a NaN or ±Inf, is rounded by the generic kernel), in parallel chunks like the
/// generic kernel. `None`: the generic route applies.
fn encode_bf16(
    fmt: &FloatFormat,
    opts: &RoundOptions,
    src: &[f32],
    dst: &mut [u16],
) -> Option<Status> {
    if *fmt != FloatFormat::BF16
        || opts.mode != RoundingMode::NearestEven
        || crate::simd::active() < crate::simd::Level::Avx2
    {
        return None;
    }
    let p = Plan::<f32>::new(fmt, opts);
    Some(for_chunks(
        src,
        dst,
        opts.index_offset,
        |s, d, at| match cast16::bf16_codes_avx2(s, d) {
            Some(c) => Status::from(c),
            None => run(&p, s, d, at, |c, _| c as u16),
        },
    ))
}

/// Binary32 into binary16 or bfloat16 codes by the first exact vector path this call and
/// this CPU allow: the CPU's own conversion instruction ([`hardware16`]), else, for
/// bfloat16, the AVX2 kernel ([`encode_bf16`]). `None`: the generic route applies.
fn encode_halves(
    fmt: &FloatFormat,
    opts: &RoundOptions,
    src: &[f32],
    dst: &mut [u16],
) -> Option<Status> {
    match hardware16(fmt, opts) {
        Some(hw) => Some(run_hardware16(hw, src, Dst::Codes(dst))),
        None => encode_bf16(fmt, opts, src, dst),
    }
}

fn check_len(input: usize, output: usize) -> Result<()> {
    if input == output {
        Ok(())
    } else {
        Err(Error::LengthMismatch { input, output })
    }
}

fn check_values<O: Float>(fmt: &FloatFormat) -> Result<()> {
    if O::MANT == 23 && !fmt.fits_f32() {
        return Err(Error::OutputTooNarrow {
            format: fmt.name().into_owned(),
            dtype: O::NAME,
        });
    }
    Ok(())
}

/// Round every element of `src` into `fmt` and write the values to `dst` (the same length).
///
/// Inputs and outputs may be `f32` or `f64` in any combination; every input is rounded once,
/// exactly. Returns what happened.
///
/// # Errors
///
/// [`Error::LengthMismatch`]; [`Error::OutputTooNarrow`] for an `f32` output and a format
/// whose values binary32 cannot hold (fp64, or a wide custom format).
///
/// ```
/// use lowprec::{round_into, FloatFormat, RoundOptions};
/// let x = [0.1f32, 1.0, 300.0, 1e-4, f32::NAN];
/// let mut y = [0f32; 5];
/// let st = round_into(&FloatFormat::FP8_E4M3, &x, &mut y, &RoundOptions::default()).unwrap();
/// assert_eq!(&y[..4], &[0.1015625, 1.0, 288.0, 0.0]);
/// assert!(y[4].is_nan());
/// assert_eq!((st.inexact, st.flushed, st.nan), (3, 1, 1));
/// ```
pub fn round_into<I: Float, O: Float>(
    fmt: &FloatFormat,
    src: &[I],
    dst: &mut [O],
    opts: &RoundOptions,
) -> Result<Status> {
    I::round_into(fmt, src, O::floats_mut(dst), opts)
}

/// [`round_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn round_into_generic<I: Float, O: Float>(
    fmt: &FloatFormat,
    src: &[I],
    dst: &mut [O],
    opts: &RoundOptions,
) -> Result<Status> {
    check_len(src.len(), dst.len())?;
    check_values::<O>(fmt)?;
    if let (Some(hw), Some(s), Some(d)) = (
        hardware16(fmt, opts),
        I::as_f32_slice(src),
        O::as_f32_slice_mut(dst),
    ) {
        return Ok(run_hardware16(hw, s, Dst::Values(d)));
    }
    Ok(match Route::<I>::new(fmt, opts, true) {
        Route::Native(p) => for_chunks(src, dst, opts.index_offset, |s, d, at| {
            run(&p, s, d, at, |_, v| convert::<I, O>(v))
        }),
        Route::Widen(p) => for_chunks(src, dst, opts.index_offset, |s, d, at| {
            widened(s, d, at, |s, d, at| {
                run(&p, s, d, at, |_, v| O::from_f64(v))
            })
        }),
        Route::Narrow(p) => for_chunks(src, dst, opts.index_offset, |s, d, at| {
            narrowed(s, d, at, |s, d, at| {
                run(&p, s, d, at, |_, v| convert::<f32, O>(v))
            })
        }),
    })
}

/// Round every element of `data` into `fmt`, in place.
///
/// # Errors
///
/// [`Error::OutputTooNarrow`] for `f32` data and a format binary32 cannot hold.
///
/// ```
/// use lowprec::{round_in_place, FloatFormat, RoundOptions, RoundingMode};
/// let mut x = vec![1.0f64 + 2f64.powi(-9), -3.3];
/// round_in_place(&FloatFormat::BF16, &mut x, &RoundOptions::new(RoundingMode::Up)).unwrap();
/// assert_eq!(x, [1.0078125, -3.296875]);
/// ```
pub fn round_in_place<I: Float>(
    fmt: &FloatFormat,
    data: &mut [I],
    opts: &RoundOptions,
) -> Result<Status> {
    I::round_in_place(fmt, data, opts)
}

/// [`round_in_place`] for the types it is called with (see `crate::mono`).
pub(crate) fn round_in_place_generic<I: Float>(
    fmt: &FloatFormat,
    data: &mut [I],
    opts: &RoundOptions,
) -> Result<Status> {
    check_values::<I>(fmt)?;
    let route = Route::<I>::new(fmt, opts, true);
    let f = |buf: &mut [I], at: u64| -> Status {
        let mut tmp = [I::default(); BLOCK];
        let mut st = Status::default();
        for (k, d) in buf.chunks_mut(BLOCK).enumerate() {
            let t = &mut tmp[..d.len()];
            t.copy_from_slice(d);
            let at = at + (k * BLOCK) as u64;
            st += match &route {
                Route::Native(p) => split32(t, d, at, &|s: &[I], d: &mut [I], at| {
                    run(p, s, d, at, |_, v| v)
                }),
                Route::Widen(p) => split32(t, d, at, &|s: &[I], d: &mut [I], at| {
                    widened(s, d, at, |s, d, at| run(p, s, d, at, |_, v| I::from_f64(v)))
                }),
                Route::Narrow(p) => split32(t, d, at, &|s: &[I], d: &mut [I], at| {
                    narrowed(s, d, at, |s, d, at| {
                        run(p, s, d, at, |_, v| convert::<f32, I>(v))
                    })
                }),
            };
        }
        st
    };
    let index0 = opts.index_offset;
    let one = |(i, d): (usize, &mut [I])| {
        let at = index0.wrapping_add((i * CHUNK) as u64);
        f(d, at)
    };
    Ok(
        if data.len() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
            data.par_chunks_mut(CHUNK)
                .enumerate()
                .map(one)
                .reduce(Status::default, |a, b| a + b)
        } else {
            data.chunks_mut(CHUNK)
                .enumerate()
                .map(one)
                .fold(Status::default(), |a, b| a + b)
        },
    )
}

/// Round `src` into `fmt` and return the values as a new `Vec` of the input's type.
///
/// # Errors
///
/// As [`round_into`].
pub fn round_vec<I: Float>(
    fmt: &FloatFormat,
    src: &[I],
    opts: &RoundOptions,
) -> Result<(Vec<I>, Status)> {
    let mut out = vec![I::default(); src.len()];
    let st = round_into(fmt, src, &mut out, opts)?;
    Ok((out, st))
}

/// Round every element of `src` into `fmt` and write its code to `dst` (right-aligned:
/// an fp4 code is a 4-bit number, a tf32 code a 19-bit one).
///
/// # Errors
///
/// [`Error::LengthMismatch`]; [`Error::CodeTypeTooNarrow`] when `C` has fewer bits than the
/// format; [`Error::NotEncodable`] when a NaN meets a format without NaN (FP6, FP4): remove
/// the NaNs, or round to values instead. `dst` is unspecified after an error.
///
/// ```
/// use lowprec::{encode_into, FloatFormat, RoundOptions};
/// let x = [1.0f32, -0.0, 7.0, 0.25];
/// let mut c = [0u8; 4];
/// encode_into(&FloatFormat::FP4_E2M1, &x, &mut c, &RoundOptions::default()).unwrap();
/// assert_eq!(c, [0x2, 0x8, 0x7, 0x0]); // 7 saturates to 6; 0.25 is the tie 0 | 0.5 → 0
/// ```
pub fn encode_into<I: Float, C: Code>(
    fmt: &FloatFormat,
    src: &[I],
    dst: &mut [C],
    opts: &RoundOptions,
) -> Result<Status> {
    I::encode_into(fmt, src, C::codes_mut(dst), opts)
}

/// [`encode_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn encode_into_generic<I: Float, C: Code>(
    fmt: &FloatFormat,
    src: &[I],
    dst: &mut [C],
    opts: &RoundOptions,
) -> Result<Status> {
    check_len(src.len(), dst.len())?;
    if C::BITS < fmt.bits() {
        return Err(Error::CodeTypeTooNarrow {
            format: fmt.name().into_owned(),
            bits: fmt.bits(),
            dtype: C::NAME,
        });
    }
    // the vector paths of binary32 into bytes and into 16-bit codes, where they apply (their
    // status goes through the NaN check below like the generic kernel's)
    let fast = match (I::as_f32_slice(src), C::as_u8s(dst)) {
        (Some(s), Some(d)) => encode_bytes(fmt, opts, s, d),
        _ => None,
    };
    let fast = fast.or_else(|| match (I::as_f32_slice(src), C::as_u16s(dst)) {
        (Some(s), Some(d)) => encode_halves(fmt, opts, s, d),
        _ => None,
    });
    let st = match fast {
        Some(st) => st,
        None => encode_generic(fmt, opts, src, dst),
    };
    if st.nan > 0 && !fmt.has_nan() {
        let first = src.iter().position(|v| v.to_f64().is_nan()).unwrap_or(0) as u64;
        return Err(Error::NotEncodable {
            format: fmt.name().into_owned(),
            count: st.nan,
            first,
            why: "it has no NaN code; remove the NaNs first, or round to values instead".into(),
        });
    }
    Ok(st)
}

/// The codes of [`encode_into`] by the generic kernel, on the route the format and the input
/// type take.
fn encode_generic<I: Float, C: Code>(
    fmt: &FloatFormat,
    opts: &RoundOptions,
    src: &[I],
    dst: &mut [C],
) -> Status {
    let code = |w: u64| C::from_u64(w);
    match Route::<I>::new(fmt, opts, false) {
        Route::Native(p) => for_chunks(src, dst, opts.index_offset, |s, d, at| {
            run(&p, s, d, at, |c, _| code(c.to_u64()))
        }),
        Route::Widen(p) => for_chunks(src, dst, opts.index_offset, |s, d, at| {
            widened(s, d, at, |s, d, at| run(&p, s, d, at, |c, _| code(c)))
        }),
        Route::Narrow(p) => for_chunks(src, dst, opts.index_offset, |s, d, at| {
            narrowed(s, d, at, |s, d, at| {
                run(&p, s, d, at, |c, _| code(u64::from(c)))
            })
        }),
    }
}

/// Round `src` into `fmt` and return the codes as a new `Vec`.
///
/// # Errors
///
/// As [`encode_into`].
pub fn encode_vec<I: Float, C: Code>(
    fmt: &FloatFormat,
    src: &[I],
    opts: &RoundOptions,
) -> Result<(Vec<C>, Status)> {
    let mut out = vec![C::default(); src.len()];
    let st = encode_into(fmt, src, &mut out, opts)?;
    Ok((out, st))
}

/// Decode codes of `fmt` into values (`f32` or `f64`). Formats of at most 16 bits decode
/// through a table of every code.
///
/// # Errors
///
/// [`Error::LengthMismatch`]; [`Error::OutputTooNarrow`] for an `f32` output and a format
/// binary32 cannot hold; [`Error::CodeOutOfRange`] for a code above the format's largest.
///
/// ```
/// use lowprec::{decode_into, FloatFormat};
/// let mut v = [0f32; 3];
/// decode_into(&FloatFormat::FP8_E5M2, &[0x3cu8, 0x7b, 0xfc], &mut v).unwrap();
/// assert_eq!(v, [1.0, 57344.0, f32::NEG_INFINITY]);
/// assert!(decode_into(&FloatFormat::FP4_E2M1, &[0x10u8], &mut v[..1]).is_err());
/// ```
pub fn decode_into<C: Code, O: Float>(fmt: &FloatFormat, codes: &[C], dst: &mut [O]) -> Result<()> {
    O::decode_into(fmt, C::codes(codes), dst)
}

/// [`decode_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn decode_into_generic<C: Code, O: Float>(
    fmt: &FloatFormat,
    codes: &[C],
    dst: &mut [O],
) -> Result<()> {
    check_len(codes.len(), dst.len())?;
    check_values::<O>(fmt)?;
    let max = fmt.max_code();
    if let Some(i) = codes.iter().position(|c| c.to_u64() > max) {
        return Err(Error::CodeOutOfRange {
            format: fmt.name().into_owned(),
            code: codes[i].to_u64(),
            bits: fmt.bits(),
            max,
        });
    }
    let val = |c: u64| O::from_f64(fmt.decode(c));
    if fmt.bits() <= 8 {
        let mut t = [O::default(); 256];
        t.iter_mut()
            .enumerate()
            .for_each(|(c, v)| *v = val(c as u64));
        for_chunks(codes, dst, 0, |s, d, _| {
            d.iter_mut()
                .zip(s)
                .for_each(|(d, c)| *d = t[c.to_u64() as u8 as usize]);
            Status::default()
        });
    } else if fmt.bits() <= 16 {
        let mut t = vec![O::default(); 1 << 16].into_boxed_slice();
        t.iter_mut()
            .enumerate()
            .for_each(|(c, v)| *v = val(c as u64));
        let t: &[O; 1 << 16] = (&*t).try_into().expect("table of 2^16 entries");
        for_chunks(codes, dst, 0, |s, d, _| {
            d.iter_mut()
                .zip(s)
                .for_each(|(d, c)| *d = t[c.to_u64() as u16 as usize]);
            Status::default()
        });
    } else {
        for_chunks(codes, dst, 0, |s, d, _| {
            d.iter_mut().zip(s).for_each(|(d, c)| *d = val(c.to_u64()));
            Status::default()
        });
    }
    Ok(())
}

/// Decode codes into a new `Vec` of values.
///
/// # Errors
///
/// As [`decode_into`].
pub fn decode_vec<C: Code, O: Float>(fmt: &FloatFormat, codes: &[C]) -> Result<Vec<O>> {
    let mut out = vec![O::default(); codes.len()];
    decode_into(fmt, codes, &mut out)?;
    Ok(out)
}

/// A format and rounding options prepared once for many short calls (block scaling rounds
/// thousands of small blocks): the same kernels as [`round_into`] and [`encode_into`], run
/// on the calling thread, without the per-call set-up.
///
/// ```
/// use lowprec::{FloatFormat, Overflow, RoundOptions, Rounder};
/// let r = Rounder::<f32>::new(&FloatFormat::FP4_E2M1, &RoundOptions::default().overflow(Overflow::Saturate));
/// let mut codes = [0u8; 3];
/// let st = r.encode(&[1.2, -7.0, 0.2], &mut codes, 0);
/// assert_eq!(codes, [0x2, 0xf, 0x0]);
/// assert_eq!((st.saturated, st.flushed), (1, 1));
/// ```
pub struct Rounder<I: Float> {
    codes: Route<I>,
    values: Option<Route<I>>,
}

impl<I: Float> Rounder<I> {
    /// Prepare `fmt` under `opts`.
    pub fn new(fmt: &FloatFormat, opts: &RoundOptions) -> Self {
        let values = (I::MANT == 52 || fmt.fits_f32()).then(|| Route::new(fmt, opts, true));
        Rounder {
            codes: Route::new(fmt, opts, false),
            values,
        }
    }

    /// Encode `src` into `dst` (same length; codes must fit `C`, NaNs into a format without
    /// NaN give code 0 and count in [`Status::nan`]); `index0` is the stochastic-rounding
    /// index of `src[0]`.
    pub fn encode<C: Code>(&self, src: &[I], dst: &mut [C], index0: u64) -> Status {
        let code = |w: u64| C::from_u64(w);
        match &self.codes {
            Route::Native(p) => split32(src, dst, index0, &|s: &[I], d: &mut [C], at| {
                run(p, s, d, at, |c, _| code(c.to_u64()))
            }),
            Route::Widen(p) => split32(src, dst, index0, &|s: &[I], d: &mut [C], at| {
                widened(s, d, at, |s, d, at| run(p, s, d, at, |c, _| code(c)))
            }),
            Route::Narrow(p) => split32(src, dst, index0, &|s: &[I], d: &mut [C], at| {
                narrowed(s, d, at, |s, d, at| {
                    run(p, s, d, at, |c, _| code(u64::from(c)))
                })
            }),
        }
    }

    /// Round `src` into `dst` as values of the input's type; `None` when the format's values
    /// do not fit that type (binary32 input, a format wider than binary32).
    pub fn round(&self, src: &[I], dst: &mut [I], index0: u64) -> Option<Status> {
        Some(match self.values.as_ref()? {
            Route::Native(p) => split32(src, dst, index0, &|s: &[I], d: &mut [I], at| {
                run(p, s, d, at, |_, v| v)
            }),
            Route::Widen(p) => split32(src, dst, index0, &|s: &[I], d: &mut [I], at| {
                widened(s, d, at, |s, d, at| run(p, s, d, at, |_, v| I::from_f64(v)))
            }),
            Route::Narrow(p) => split32(src, dst, index0, &|s: &[I], d: &mut [I], at| {
                narrowed(s, d, at, |s, d, at| {
                    run(p, s, d, at, |_, v| convert::<f32, I>(v))
                })
            }),
        })
    }
}
