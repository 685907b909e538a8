//! FMA (`x·y + z` rounded once) of two 8-bit operands and a binary32 addend under
//! NearestTiesToEven on code slices, through binary64 arithmetic in vector lanes.
//!
//! The operands decode through 256-entry binary64 tables. The product of two significands of
//! at most 8 bits is exact in binary64 (exponents of 8-bit formats stay far inside its
//! range), so `s = RN53(x·y + z)` is one hardware add, and TwoSum gives its error exactly.
//! Where the error is nonzero and `s` has an even last bit, `s` steps one ulp toward the
//! error: that is `x·y + z` rounded **to odd** at 53 bits. Rounding to odd at `p + 2` or more
//! bits and then to nearest into `p` bits gives the exact value rounded once (Boldo and
//! Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
//! to odd", IEEE Transactions on Computers 57(4), 2008), so every result format of precision
//! `p ≤ 51` takes one integer rounding of the binary64 bits (`(bits + half − 1 + lsb) >>
//! (52 − m)`, the exponent carrying into the code's exponent field). For a binary32 result the
//! hardware's binary64 → binary32 conversion (to nearest even) is that rounding.
//!
//! The vector step only claims the common case, where the flags are simple: finite operands,
//! a nonzero result with `min_normal ≤ |r|` before rounding and at most the largest finite
//! value after it (and nonnegative for an unsigned result format). Nothing then overflows,
//! underflows or saturates, and the result is inexact exactly when the rounded-to-odd value
//! has nonzero bits below the result's last place. Every other element (NaN and infinite
//! operands, zero, tiny and huge results, negative results into unsigned formats) goes
//! through the general exact path, which gives its code and flags; the tests compare the
//! two on every pair of 8-bit codes with special and random addends.

use super::{eval, family_p3109, operand, Counts, Op, Projection, Rounding};
use crate::error::{Error, Result};
use crate::format::FloatFormat;
use rayon::prelude::*;

/// Elements per vector pass (the general path then visits the flagged ones).
const PASS: usize = 1 << 12;
/// Elements per parallel task.
const TASK: usize = 1 << 16;

/// Whether a result format takes the vector path: at most 32 bits, `1 ≤ m ≤ 50` (so
/// `p + 2 ≤ 53`; with `m = 0` P3109's ties go by code parity, left to the general path) and
/// a zero (exponent field 0 holds the subnormals, so the codes are `exponent + bias, m`).
fn out_ok(out: &FloatFormat) -> bool {
    out.bits() <= 32 && (1..=50).contains(&out.man_bits()) && out.has_zero()
}

/// Whether FMA on `fmts` into `out` under `prj` takes this path.
pub(crate) fn applies(fmts: &[FloatFormat], out: &FloatFormat, prj: &Projection) -> bool {
    fmts.len() == 3
        && fmts[0].bits() <= 8
        && fmts[1].bits() <= 8
        && fmts[2] == FloatFormat::FP32
        && out_ok(out)
        && prj.rounding == Rounding::NearestTiesToEven
}

/// `out_codes[i] = FMA(a[i], b[i], c[i])`, `a[i] · b[i] + c[i]` rounded once into `out`
/// under NearestTiesToEven (any saturation mode and draft: they only matter on the general
/// path), with the counts of [`super::apply`] — its result exactly, faster.
///
/// `a` and `b` hold codes of formats of at most 8 bits (each code masked to its format's
/// width, as [`super::apply`] does), `c` binary32 values; `out` is any format of at most 32
/// bits with `1 ≤ m ≤ 50` mantissa bits and a zero.
///
/// ```
/// use lowprec::ops::{apply_fma_f32, Projection};
/// use lowprec::FloatFormat;
/// let (e4m3, fp32) = (FloatFormat::FP8_E4M3, FloatFormat::FP32);
/// let (a, b) = ([0x3cu8, 0x3c], [0x40u8, 0x40]); // 1.5 × 2, twice
/// let c = [0.25f32, 1e-9];
/// let mut out = [0u32; 2];
/// let n = apply_fma_f32(e4m3, &a, e4m3, &b, &c, fp32, &Projection::default(), &mut out).unwrap();
/// assert_eq!(out.map(f32::from_bits), [3.25, 3.0]); // 3 + 10^−9 rounds to 3
/// assert_eq!((n.total, n.inexact), (2, 1));
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] for operand formats wider than 8 bits, a result format or
/// rounding this path does not take (use [`super::apply`]), slices of different lengths, or
/// a NaN result in a format without NaN (as [`super::apply`]).
#[allow(clippy::too_many_arguments)]
pub fn apply_fma_f32(
    fa: FloatFormat,
    a: &[u8],
    fb: FloatFormat,
    b: &[u8],
    c: &[f32],
    out: FloatFormat,
    prj: &Projection,
    out_codes: &mut [u32],
) -> Result<Counts> {
    let fmts = [fa, fb, FloatFormat::FP32];
    if !applies(&fmts, &out, prj) {
        return Err(Error::InvalidArgument(format!(
            "apply_fma_f32 computes FMA of two formats of at most 8 bits ({}, {}) and a binary32 addend into a format of at most 32 bits with 1 to 50 mantissa bits and a zero ({}) under NearestTiesToEven ({}); use ops::apply",
            fa.name(),
            fb.name(),
            out.name(),
            prj.rounding.name()
        )));
    }
    let n = out_codes.len();
    if a.len() != n || b.len() != n || c.len() != n {
        return Err(Error::InvalidArgument(format!(
            "operands of {}, {} and {} elements for a result of {n}; give operands of the same shape",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    let job = Job::new(fa, fb, out, prj);
    let counts = out_codes
        .par_chunks_mut(TASK)
        .zip(a.par_chunks(TASK))
        .zip(b.par_chunks(TASK).zip(c.par_chunks(TASK)))
        .enumerate()
        .map(|(t, ((o, a), (b, c)))| job.task(a, b, c, o).map_err(|i| t * TASK + i))
        .try_reduce(Counts::default, |x, y| Ok(x.merge(y)));
    counts.map_err(|i| {
        Error::InvalidArgument(format!(
            "element {i}: the result is NaN and {} has no NaN; choose a result format with a NaN",
            out.name()
        ))
    })
}

/// What one call needs: the operand tables, the result format's constants and the general
/// path's arguments.
struct Job<'a> {
    fmts: [FloatFormat; 3],
    out: FloatFormat,
    prj: &'a Projection,
    p3109: bool,
    ta: [f64; 256],
    tb: [f64; 256],
    k: Consts,
}

/// The result format's constants of the integer rounding.
#[derive(Clone, Copy)]
struct Consts {
    /// `52 − m`: the binary64 bits below the result's last place.
    shift: u32,
    /// `2^(shift − 1) − 1`.
    half_m1: u64,
    /// `2^shift − 1`.
    low: u64,
    /// `(1023 − bias) << m`: binary64's exponent offset over the result's, in code units.
    off: u64,
    /// The binary64 bits of the result's smallest normal value.
    min_normal: u64,
    /// The largest finite magnitude code.
    max_mag: u64,
    /// The sign bit of a result code (0 for unsigned formats).
    sign: u64,
    /// 1 for a signed result format (negative results are common), 0 otherwise.
    signed: u64,
    /// The result format is binary32: the hardware's binary64 → binary32 conversion
    /// (to nearest even) takes the place of the integer rounding ([`step_f32`]).
    f32_out: bool,
}

impl<'a> Job<'a> {
    fn new(fa: FloatFormat, fb: FloatFormat, out: FloatFormat, prj: &'a Projection) -> Self {
        let fmts = [fa, fb, FloatFormat::FP32];
        let table = |f: &FloatFormat| {
            let mut t = [0f64; 256];
            for (i, v) in t.iter_mut().enumerate() {
                *v = f.decode(i as u64);
            }
            t
        };
        let m = out.man_bits();
        let shift = 52 - m;
        let k = Consts {
            shift,
            half_m1: (1u64 << (shift - 1)) - 1,
            low: (1u64 << shift) - 1,
            off: ((1023 - i64::from(out.bias())) as u64) << m,
            min_normal: out.min_normal().to_bits(),
            max_mag: out.max_mag(),
            sign: out.sign_mask(),
            signed: u64::from(out.is_signed()),
            f32_out: out == FloatFormat::FP32,
        };
        Job {
            fmts,
            out,
            prj,
            p3109: family_p3109(&fmts, &out, Op::Fma),
            ta: table(&fa),
            tb: table(&fb),
            k,
        }
    }

    /// One parallel task: vector passes, then the general path on what they left; `Err(i)`
    /// for a NaN result at element `i` in a format without NaN.
    fn task(
        &self,
        a: &[u8],
        b: &[u8],
        c: &[f32],
        out: &mut [u32],
    ) -> std::result::Result<Counts, usize> {
        let nan_code = self.out.nan_code(false);
        let mut n = Counts::default();
        let mut prod = vec![0f64; PASS];
        let pieces = out
            .chunks_mut(PASS)
            .zip(a.chunks(PASS))
            .zip(b.chunks(PASS).zip(c.chunks(PASS)));
        for (p, ((o, a), (b, c))) in pieces.enumerate() {
            let (inexact, general) = crate::simd::dispatch(Pass {
                ta: &self.ta,
                tb: &self.tb,
                k: self.k,
                a,
                b,
                c,
                out: o,
                prod: &mut prod,
            });
            n.total += o.len() as u64;
            n.inexact += inexact;
            if general == 0 {
                continue;
            }
            // the pass kept no per-element status (a store per element): find its general
            // elements again, in the few pieces that have one
            let k = &self.k;
            let status = |i: usize| match k.f32_out {
                true => step_f32(prod[i], c[i], k).1,
                false => step(prod[i], c[i], k).1,
            };
            for i in (0..o.len()).filter(|&i| status(i) == GENERAL) {
                let vals = [
                    operand(&self.fmts[0], u64::from(a[i])),
                    operand(&self.fmts[1], u64::from(b[i])),
                    operand(&self.fmts[2], u64::from(c[i].to_bits())),
                ];
                let r = eval(
                    Op::Fma,
                    &self.fmts,
                    &vals,
                    &self.out,
                    self.prj,
                    self.p3109,
                    0,
                );
                let code = r.code.ok_or(p * PASS + i)?;
                o[i] = code as u32;
                // `add_flags` counts the element again: take the pass's count back
                n.total -= 1;
                n.add_flags(r.flags, nan_code.is_some() && Some(code) == nan_code);
            }
        }
        Ok(n)
    }
}

/// An element the vector step left to the general path.
const GENERAL: u8 = 2;

/// The vector pass over one piece: the codes of the common elements (the general path then
/// overwrites the others); the numbers of inexact common elements and of the others.
struct Pass<'a> {
    ta: &'a [f64; 256],
    tb: &'a [f64; 256],
    k: Consts,
    a: &'a [u8],
    b: &'a [u8],
    c: &'a [f32],
    out: &'a mut [u32],
    /// Room for the piece's products.
    prod: &'a mut [f64],
}

impl crate::simd::Kernel for Pass<'_> {
    type Output = (u64, u64);
    #[inline(always)]
    fn run(self) -> (u64, u64) {
        let (ta, tb, k) = (self.ta, self.tb, &self.k);
        // the products first (table lookups), so that the arithmetic below runs in lanes
        let prod = &mut self.prod[..self.out.len()];
        for (p, (&a, &b)) in prod.iter_mut().zip(self.a.iter().zip(self.b)) {
            *p = ta[usize::from(a)] * tb[usize::from(b)];
        }
        let (mut inexact, mut general) = (0u32, 0u32);
        if k.f32_out {
            for (o, (&p, &c)) in self.out.iter_mut().zip(prod.iter().zip(self.c)) {
                let (code, status) = step_f32(p, c, k);
                *o = code;
                inexact += u32::from(status == 1);
                general += u32::from(status == GENERAL);
            }
        } else {
            for (o, (&p, &c)) in self.out.iter_mut().zip(prod.iter().zip(self.c)) {
                let (code, status) = step(p, c, k);
                *o = code;
                inexact += u32::from(status == 1);
                general += u32::from(status == GENERAL);
            }
        }
        (u64::from(inexact), u64::from(general))
    }
}

/// binary64's sign bit.
const SIGN: u64 = 1 << 63;
/// binary64's +Inf bits (the smallest magnitude that is not finite).
const INF: u64 = 0x7ff0_0000_0000_0000;

/// `p + z` rounded to odd at 53 bits, as binary64 bits: the hardware sum, and where TwoSum's
/// exact error is nonzero and the sum's last bit even, one ulp toward the error.
#[inline(always)]
fn sum_to_odd(p: f64, z: f32) -> u64 {
    let z = f64::from(z);
    let s = p + z;
    // TwoSum: the error of the binary64 sum, exactly (zero when the sum is exact)
    let zv = s - p;
    let pv = s - zv;
    let err = (p - pv) + (z - zv);
    // round to odd: an inexact sum with an even last bit steps one ulp toward the error
    let sb = s.to_bits();
    let toward = if (err < 0.0) == (s < 0.0) {
        1
    } else {
        u64::MAX
    };
    sb.wrapping_add(if err != 0.0 && sb & 1 == 0 { toward } else { 0 })
}

/// One element from its product `p` (exact: two significands of at most 8 bits, exponents
/// far inside binary64's range) and addend: `(code, 0 exact | 1 inexact | GENERAL)`.
#[inline(always)]
fn step(p: f64, z: f32, k: &Consts) -> (u32, u8) {
    let ro = sum_to_odd(p, z);
    let mag = ro & !SIGN;
    let neg = ro >> 63;
    // round to nearest even into `m` bits; the exponent carries into the code's field
    let rounded = (mag + k.half_m1 + ((mag >> k.shift) & 1)) >> k.shift;
    let code_mag = rounded.wrapping_sub(k.off);
    let common =
        mag >= k.min_normal && mag < INF && code_mag <= k.max_mag && (neg & !k.signed) == 0;
    let code = (code_mag | (neg * k.sign)) as u32;
    let inexact = mag & k.low != 0;
    let status = if common { u8::from(inexact) } else { GENERAL };
    (code, status)
}

/// [`step`] for a binary32 result: the hardware converts the rounded-to-odd sum to binary32
/// to nearest even (53 ≥ 24 + 2 bits: one rounding of the exact value, as the integer
/// rounding gives), and the result is inexact exactly when converting it back differs. The
/// common case is the same: `min_normal ≤ |r|` before rounding and a finite result.
#[inline(always)]
fn step_f32(p: f64, z: f32, k: &Consts) -> (u32, u8) {
    let ro = sum_to_odd(p, z);
    let mag = ro & !SIGN;
    let r = f64::from_bits(ro) as f32;
    let code = r.to_bits();
    let common = mag >= k.min_normal && code & 0x7f80_0000 != 0x7f80_0000;
    let inexact = f64::from(r).to_bits() != ro;
    let status = if common { u8::from(inexact) } else { GENERAL };
    (code, status)
}
