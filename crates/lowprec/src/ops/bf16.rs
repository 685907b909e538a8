//! bfloat16 Add, Subtract and Multiply under NearestTiesToEven on code slices, through
//! binary32 arithmetic in vector lanes.
//!
//! Every bfloat16 value is a binary32 value, so the operands widen exactly (`code << 16`).
//! The binary32 result `r = RN24(x ∘ y)` is then rounded to nearest even into bfloat16
//! (`(bits(r) + 0x7fff + bit16) >> 16`). Rounding twice is innocuous here: binary32 carries
//! `p = 24 ≥ 2q + 2 = 18` bits for bfloat16's `q = 8` (Figueroa, "When is double rounding
//! innocuous?", 1995), so `RN8(RN24(x ∘ y)) = RN8(x ∘ y)` for `+`, `−` and `×`, and both
//! formats share the exponent range, so subnormal results keep at least 16 extra bits too.
//!
//! The vector step only claims the common case, where the flags are simple: finite
//! operands and `2^−126 < |r| ≤ max_bf16` (or `r = ±0` for sums, which are then exact):
//! nothing overflows, underflows or saturates, and the result is inexact exactly when the
//! binary32 operation was (TwoSum's error term is nonzero; products of two 8-bit
//! significands are exact above `2^−126`) or the final rounding dropped bits. Every other
//! element (NaN, infinities, tiny or huge results) goes through the general exact path,
//! which gives its code and flags; the tests compare the two on every kind of operand.

use super::{eval, operand, Counts, Op, Projection, Rounding};
use crate::error::{Error, Result};
use crate::format::FloatFormat;
use rayon::prelude::*;

/// Elements per vector pass (the general path then visits the flagged ones).
const PASS: usize = 1 << 12;
/// Elements per parallel task.
const TASK: usize = 1 << 16;

/// Whether `op` from `fmts` into `out` under `prj` takes this path.
pub(crate) fn applies(op: Op, fmts: &[FloatFormat], out: &FloatFormat, prj: &Projection) -> bool {
    matches!(op, Op::Add | Op::Subtract | Op::Multiply)
        && prj.rounding == Rounding::NearestTiesToEven
        && *out == FloatFormat::BF16
        && fmts.iter().all(|f| *f == FloatFormat::BF16)
}

/// `out[i] = a[i] ∘ b[i]` for bfloat16 codes under NearestTiesToEven (any saturation mode:
/// the mode only matters on the general path), with the counts of [`super::apply`] — its
/// result exactly, faster.
///
/// ```
/// use lowprec::ops::{apply_bf16, Op, Projection};
/// let (a, b) = ([0x3f80u16, 0x4040], [0x3f80u16, 0x3b80]); // 1 + 1, 3 + 2^−8
/// let mut out = [0u16; 2];
/// let c = apply_bf16(Op::Add, &a, &b, &Projection::default(), &mut out).unwrap();
/// assert_eq!(out, [0x4000, 0x4040]); // 2, 3 (the 2^−8 is lost)
/// assert_eq!((c.total, c.inexact), (2, 1));
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] for another operation or rounding, or slices of different
/// lengths.
pub fn apply_bf16(
    op: Op,
    a: &[u16],
    b: &[u16],
    prj: &Projection,
    out: &mut [u16],
) -> Result<Counts> {
    let bf16 = FloatFormat::BF16;
    if !applies(op, &[bf16, bf16], &bf16, prj) {
        return Err(Error::InvalidArgument(format!(
            "apply_bf16 computes Add, Subtract and Multiply under NearestTiesToEven, not {op} under {}; use ops::apply",
            prj.rounding.name()
        )));
    }
    if a.len() != out.len() || b.len() != out.len() {
        return Err(Error::InvalidArgument(format!(
            "operands of {} and {} elements for a result of {}; give operands of the same shape",
            a.len(),
            b.len(),
            out.len()
        )));
    }
    let counts = out
        .par_chunks_mut(TASK)
        .zip(a.par_chunks(TASK).zip(b.par_chunks(TASK)))
        .map(|(o, (a, b))| task(op, a, b, prj, o))
        .reduce(Counts::default, Counts::merge);
    Ok(counts)
}

/// One parallel task: vector passes, then the general path on what they left.
fn task(op: Op, a: &[u16], b: &[u16], prj: &Projection, out: &mut [u16]) -> Counts {
    let bf16 = FloatFormat::BF16;
    let fmts = [bf16, bf16];
    let nan_code = bf16.nan_code(false);
    let mut c = Counts::default();
    for ((o, a), b) in out.chunks_mut(PASS).zip(a.chunks(PASS)).zip(b.chunks(PASS)) {
        let (inexact, general) = crate::simd::dispatch(Pass { op, a, b, out: o });
        c.total += o.len() as u64;
        c.inexact += inexact;
        if general == 0 {
            continue;
        }
        // the pass kept no per-element status (a store per element): find its general
        // elements again, in the few pieces that have one
        let general_at = (0..o.len()).filter(|&i| status(op, a[i], b[i]) == GENERAL);
        for i in general_at {
            let vals = [operand(&bf16, a[i] as u64), operand(&bf16, b[i] as u64)];
            let r = eval(op, &fmts, &vals, &bf16, prj, false, 0);
            // bfloat16 has a NaN: every outcome has a code
            let code = r.code.unwrap_or(0);
            o[i] = code as u16;
            // `add_flags` counts the element again: take the pass's count back
            c.total -= 1;
            c.add_flags(r.flags, Some(code) == nan_code);
        }
    }
    c
}

/// An element the vector step left to the general path.
const GENERAL: u8 = 2;

/// The vector pass over one piece: the codes of the common elements (the general path then
/// overwrites the others); the numbers of inexact common elements and of the others.
struct Pass<'a> {
    op: Op,
    a: &'a [u16],
    b: &'a [u16],
    out: &'a mut [u16],
}

impl crate::simd::Kernel for Pass<'_> {
    type Output = (u64, u64);
    #[inline(always)]
    fn run(self) -> (u64, u64) {
        match self.op {
            Op::Multiply => pass::<true, false>(self.a, self.b, self.out),
            Op::Subtract => pass::<false, true>(self.a, self.b, self.out),
            _ => pass::<false, false>(self.a, self.b, self.out),
        }
    }
}

#[inline(always)]
fn pass<const MUL: bool, const SUB: bool>(a: &[u16], b: &[u16], out: &mut [u16]) -> (u64, u64) {
    let (mut inexact, mut general) = (0u32, 0u32);
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        let (code, status) = step::<MUL, SUB>(a, b);
        *o = code;
        inexact += u32::from(status == 1);
        general += u32::from(status == GENERAL);
    }
    (u64::from(inexact), u64::from(general))
}

/// The status of one element under `op` (as [`step`] gives it).
fn status(op: Op, a: u16, b: u16) -> u8 {
    match op {
        Op::Multiply => step::<true, false>(a, b).1,
        Op::Subtract => step::<false, true>(a, b).1,
        _ => step::<false, false>(a, b).1,
    }
}

/// One element: `(code, 0 exact | 1 inexact | GENERAL)`.
#[inline(always)]
fn step<const MUL: bool, const SUB: bool>(a: u16, b: u16) -> (u16, u8) {
    let x = f32::from_bits(u32::from(a) << 16);
    let y = f32::from_bits((u32::from(b) << 16) ^ if SUB { 0x8000_0000 } else { 0 });
    let (r, exact32) = if MUL {
        (x * y, true)
    } else {
        // TwoSum: the error of the binary32 sum, zero exactly when the sum is exact
        let s = x + y;
        let yv = s - x;
        let xv = s - yv;
        (s, (x - xv) + (y - yv) == 0.0)
    };
    let rb = r.to_bits();
    let ab = rb & 0x7fff_ffff;
    // 2^−126 < |r| ≤ max bf16, or an exact zero sum of finite operands
    let common = (ab > 0x0080_0000 && ab <= 0x7f7f_0000) || (!MUL && ab == 0);
    let code = (rb.wrapping_add(0x7fff + ((rb >> 16) & 1)) >> 16) as u16;
    let inexact = !exact32 || rb & 0xffff != 0;
    let status = if common { u8::from(inexact) } else { GENERAL };
    (code, status)
}
