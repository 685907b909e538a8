//! Block operations of the P3109 draft (§5): a block is a scale `s` in a scale format and `K`
//! elements `x_i` in an element format, standing for the values `s·x_i`.
//!
//! Every operation here is computed **exactly** and projected **once**, as the draft defines
//! it with its internal functions on extended reals:
//!
//! | operation | definition |
//! |---|---|
//! | [`convert_to_block`] (ConvertToBlock, §5.2.2) | `r_i = Project(X_i / S)`; `S` NaN → NaN, `S = 0` → 0, `S = ±∞` → `sgn(X_i)·sgn(S)` |
//! | [`convert_to_block_max_abs_finite`] (§5.2.3) | `s = Project_ρs(max_finite |X_i| / T)`, then ConvertToBlock with `s` ([`ScaleRule`]; `T = 1` is the draft) |
//! | [`convert_from_block`] (§5.2.1) | `r_i = Project(S·X_i)` |
//! | [`block_reduce_add`] (§5.3.1) | `r = Project(Σ S·X_i)` |
//! | [`block_dot_product`] (§5.3.2) | `r = Project(Σ (S_a·A_i)(S_b·B_i))` |
//!
//! The sums are exact: every term is a product of up to four binary64 values, kept as a big
//! integer with its exponent, and the terms are added in a fixed-point big integer spanning all
//! their bits, then rounded once (every rounding and saturation mode of [`Projection`]).
//!
//! The **approximate** versions ([`block_dot_product_approx`], [`block_reduce_add_approx`])
//! are what hardware computes: each product exact, the products summed by
//! [`crate::accum::accumulate`] in an accumulator format (FP16, FP32, …, sequential or
//! pairwise), and the accumulator's value converted into the result format. [`kappa`]
//! measures how far they are from the exact operation in the draft's §4.4 sense: the largest
//! number of result-format values between the defined result and the approximate one.
//!
//! ```
//! use lowprec::ops::block::{block_dot_product, Block};
//! use lowprec::ops::Projection;
//! use lowprec::FloatFormat;
//! let (p8, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
//! let one = 128; // Binary8p1uf code of 1.0
//! let a = [0x40, 0x44, 0xc0]; // 1, 1.5, -1
//! let b = [0x40, 0x40, 0x38]; // 1, 1, 0.5
//! let r = block_dot_product(&Block::new(s8, one, p8, &a), &Block::new(s8, one, p8, &b),
//!                           &FloatFormat::FP32, &Projection::default(), 0)?;
//! assert_eq!(f32::from_bits(r.code.unwrap() as u32), 2.0); // 1 + 1.5 - 0.5
//! # Ok::<(), lowprec::Error>(())
//! ```

use super::{
    check_random, exact_of, family_p3109, project, wide, Counts, Exact, Op, Outcome, Projection,
};
use super::{Random, Rounding, Saturation, INVALID, NAN};
use crate::accum::{accumulate, AccumOptions};
use crate::error::{Error, Result};
use crate::format::{pow2, FloatFormat};
use rayon::prelude::*;
use std::cmp::Ordering;
use std::fmt;

/// A block: a scale code in its format and element codes in theirs.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// The scale's format (Binary8p1uf, E8M0, …).
    pub scale_format: FloatFormat,
    /// The scale's code.
    pub scale: u64,
    /// The elements' format.
    pub format: FloatFormat,
    /// The elements' codes.
    pub codes: &'a [u64],
}

impl<'a> Block<'a> {
    /// A block of `codes` in `format` with scale code `scale` in `scale_format`.
    pub fn new(
        scale_format: FloatFormat,
        scale: u64,
        format: FloatFormat,
        codes: &'a [u64],
    ) -> Block<'a> {
        Block {
            scale_format,
            scale,
            format,
            codes,
        }
    }

    fn check(&self, which: &str) -> Result<()> {
        if self.codes.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{which} block is empty; a block holds one or more elements"
            )));
        }
        check_code(&self.scale_format, self.scale, &format!("{which} scale"))?;
        for (i, &c) in self.codes.iter().enumerate() {
            check_code(&self.format, c, &format!("{which} element {i}"))?;
        }
        Ok(())
    }

    fn scale_value(&self) -> f64 {
        self.scale_format.decode(self.scale)
    }
}

fn check_code(f: &FloatFormat, c: u64, what: &str) -> Result<()> {
    if c > f.max_code() {
        return Err(Error::InvalidArgument(format!(
            "{what}: code {c} is beyond {}'s {} bits; give codes below {}",
            f.name(),
            f.bits(),
            f.max_code() + 1
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Exact values of products and their exact sum
// ---------------------------------------------------------------------------------------

/// An extended real: the product of some binary64 factors, or a special value.
#[derive(Debug, Clone)]
enum Ext {
    /// NaN; `invalid` when no operand was NaN (0 × ∞, ∞ − ∞).
    Nan(bool),
    Inf(bool),
    Zero(bool),
    /// A nonzero finite product: sign and the finite nonzero factors.
    Fin(bool, Vec<f64>),
}

fn ext(v: f64) -> Ext {
    if v.is_nan() {
        Ext::Nan(false)
    } else if v.is_infinite() {
        Ext::Inf(v < 0.0)
    } else if v == 0.0 {
        Ext::Zero(v.is_sign_negative())
    } else {
        Ext::Fin(v < 0.0, vec![v.abs()])
    }
}

/// ωMultiply on extended reals.
fn mul(x: Ext, y: Ext) -> Ext {
    match (x, y) {
        (Ext::Nan(i), Ext::Nan(j)) => Ext::Nan(i && j),
        (Ext::Nan(i), _) | (_, Ext::Nan(i)) => Ext::Nan(i),
        (Ext::Inf(_), Ext::Zero(_)) | (Ext::Zero(_), Ext::Inf(_)) => Ext::Nan(true),
        (Ext::Inf(a), Ext::Inf(b))
        | (Ext::Inf(a), Ext::Fin(b, _))
        | (Ext::Fin(a, _), Ext::Inf(b)) => Ext::Inf(a != b),
        (Ext::Zero(a), Ext::Zero(b))
        | (Ext::Zero(a), Ext::Fin(b, _))
        | (Ext::Fin(a, _), Ext::Zero(b)) => Ext::Zero(a != b),
        (Ext::Fin(a, mut f), Ext::Fin(b, g)) => {
            f.extend(g);
            Ext::Fin(a != b, f)
        }
    }
}

/// A finite nonzero term: sign, magnitude (little-endian 64-bit limbs), exponent of its last bit.
struct BigTerm {
    neg: bool,
    mag: Vec<u64>,
    exp: i32,
}

fn big_term(neg: bool, factors: &[f64]) -> BigTerm {
    let mut mag = vec![1u64];
    let mut exp = 0i32;
    for &f in factors {
        let (_, s, e) = wide::split(f);
        exp += e;
        let mut carry = 0u128;
        for limb in mag.iter_mut() {
            let p = *limb as u128 * s as u128 + carry;
            *limb = p as u64;
            carry = p >> 64;
        }
        if carry != 0 {
            mag.push(carry as u64);
        }
    }
    while mag.len() > 1 && mag[0] == 0 {
        mag.remove(0);
        exp += 64;
    }
    BigTerm { neg, mag, exp }
}

/// The value of a finite product if binary64 holds it exactly.
fn exact_f64(neg: bool, factors: &[f64]) -> Option<f64> {
    let t = big_term(neg, factors);
    let mut mag = t.mag;
    let mut exp = t.exp;
    while mag.len() > 1 && *mag.last()? == 0 {
        mag.pop();
    }
    if mag.len() > 1 {
        return None;
    }
    let mut s = mag[0];
    let tz = s.trailing_zeros();
    s >>= tz;
    exp += tz as i32;
    let bits = 64 - s.leading_zeros() as i32;
    if bits > 53 || exp < -1074 || exp + bits > 1024 {
        return None;
    }
    let v = s as f64 * pow2(exp);
    Some(if neg { -v } else { v })
}

fn add_at(acc: &mut [u64], mut i: usize, v: u64) {
    let mut carry = v;
    while carry != 0 && i < acc.len() {
        let (s, c) = acc[i].overflowing_add(carry);
        acc[i] = s;
        carry = c as u64;
        i += 1;
    }
}

/// The exact sum of finite nonzero terms as a [`wide::Wide`] (127 bits and a sticky bit), or
/// `None` when it is exactly zero.
fn big_sum(terms: &[BigTerm]) -> Option<wide::Wide> {
    let lo = terms.iter().map(|t| t.exp).min()?;
    let hi = terms
        .iter()
        .map(|t| t.exp + 64 * t.mag.len() as i32)
        .max()?;
    let extra = (usize::BITS - terms.len().leading_zeros()) as usize / 64 + 1;
    let n = (hi - lo) as usize / 64 + 2 + extra;
    let mut pos = vec![0u64; n];
    let mut neg = vec![0u64; n];
    for t in terms {
        let off = (t.exp - lo) as usize;
        let (limb, bit) = (off / 64, (off % 64) as u32);
        let acc = if t.neg { &mut neg } else { &mut pos };
        for (j, &w) in t.mag.iter().enumerate() {
            add_at(acc, limb + j, w << bit);
            if bit != 0 {
                add_at(acc, limb + j + 1, w >> (64 - bit));
            }
        }
    }
    let cmp = pos.iter().rev().cmp(neg.iter().rev());
    let (big, small, negative) = match cmp {
        Ordering::Equal => return None,
        Ordering::Greater => (&pos, &neg, false),
        Ordering::Less => (&neg, &pos, true),
    };
    let mut mag = vec![0u64; n];
    let mut borrow = false;
    for i in 0..n {
        let (d1, b1) = big[i].overflowing_sub(small[i]);
        let (d2, b2) = d1.overflowing_sub(borrow as u64);
        mag[i] = d2;
        borrow = b1 | b2;
    }
    let top = (0..n).rev().find(|&i| mag[i] != 0)?;
    let msb = top as u64 * 64 + 63 - mag[top].leading_zeros() as u64;
    let limb = |i: usize| mag.get(i).copied().unwrap_or(0) as u128;
    if msb < 127 {
        return Some(wide::Wide::exact(negative, limb(0) | (limb(1) << 64), lo));
    }
    let base = msb - 126;
    let (b, off) = ((base / 64) as usize, (base % 64) as u32);
    let mut sig = (limb(b) >> off) | (limb(b + 1) << (64 - off));
    if off != 0 {
        sig |= limb(b + 2) << (128 - off);
    }
    sig &= (1u128 << 127) - 1;
    let sticky = mag[..b].iter().any(|&x| x != 0) || (off != 0 && mag[b] << (64 - off) != 0);
    Some(wide::Wide {
        neg: negative,
        sig,
        exp: lo + base as i32,
        sticky,
    })
}

/// The exact sum of extended reals (ωAdd reduced from 0); `down` gives −0 to zero sums
/// (IEEE formats under TowardNegative).
fn ext_sum(xs: Vec<Ext>, down: bool) -> Exact {
    let mut nan: Option<bool> = None;
    let (mut pinf, mut ninf) = (false, false);
    let mut terms = Vec::with_capacity(xs.len());
    for x in xs {
        match x {
            Ext::Nan(i) => nan = Some(nan.unwrap_or(true) && i),
            Ext::Inf(n) => {
                if n {
                    ninf = true
                } else {
                    pinf = true
                }
            }
            Ext::Zero(_) => {}
            Ext::Fin(n, f) => terms.push(big_term(n, &f)),
        }
    }
    if let Some(invalid) = nan {
        return Exact::Nan { invalid };
    }
    match (pinf, ninf) {
        (true, true) => return INVALID,
        (true, false) => return Exact::Inf(false),
        (false, true) => return Exact::Inf(true),
        (false, false) => {}
    }
    match big_sum(&terms) {
        Some(w) => Exact::Val(w),
        None => Exact::Zero(down),
    }
}

fn ext_exact(x: Ext) -> Exact {
    match x {
        Ext::Nan(invalid) => Exact::Nan { invalid },
        Ext::Inf(n) => Exact::Inf(n),
        Ext::Zero(n) => Exact::Zero(n),
        Ext::Fin(n, f) => ext_sum(vec![Ext::Fin(n, f)], false),
    }
}

/// Whether the block operation follows the P3109 draft's zero and NaN rules (any format of
/// the operation a P3109 format), and whether a zero sum is −0.
fn family(fmts: &[FloatFormat], out: &FloatFormat, prj: &Projection) -> (bool, bool) {
    let p3109 = family_p3109(fmts, out, Op::Add);
    (p3109, !p3109 && prj.rounding == Rounding::TowardNegative)
}

fn decoded(b: &Block<'_>) -> Vec<Ext> {
    let s = b.scale_value();
    b.codes
        .iter()
        .map(|&c| mul(ext(s), ext(b.format.decode(c))))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The exact block operations
// ---------------------------------------------------------------------------------------

/// The exact result of BlockDotProduct, before its projection.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for blocks of different lengths, an empty block or a code
/// beyond its format.
pub fn block_dot_product_exact(
    a: &Block<'_>,
    b: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
) -> Result<Exact> {
    a.check("the first")?;
    b.check("the second")?;
    if a.codes.len() != b.codes.len() {
        return Err(Error::InvalidArgument(format!(
            "blocks of {} and {} elements; a dot product takes blocks of the same size",
            a.codes.len(),
            b.codes.len()
        )));
    }
    let (_, down) = family(
        &[a.scale_format, a.format, b.scale_format, b.format],
        out,
        prj,
    );
    let p: Vec<Ext> = decoded(a)
        .into_iter()
        .zip(decoded(b))
        .map(|(x, y)| mul(x, y))
        .collect();
    Ok(ext_sum(p, down))
}

/// BlockDotProduct (§5.3.2): `Σ (s_a·a_i)(s_b·b_i)` computed exactly and projected once into
/// `out`. `random` is the stochastic rounding's `R` (below `2^N`; ignored otherwise).
///
/// # Errors
///
/// As [`block_dot_product_exact`].
pub fn block_dot_product(
    a: &Block<'_>,
    b: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
    random: u32,
) -> Result<Outcome> {
    let e = block_dot_product_exact(a, b, out, prj)?;
    let (p3109, _) = family(
        &[a.scale_format, a.format, b.scale_format, b.format],
        out,
        prj,
    );
    Ok(project(out, e, prj, p3109, random))
}

/// The exact result of BlockReduceAdd, before its projection.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an empty block or a code beyond its format.
pub fn block_reduce_add_exact(
    block: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
) -> Result<Exact> {
    block.check("the")?;
    let (_, down) = family(&[block.scale_format, block.format], out, prj);
    Ok(ext_sum(decoded(block), down))
}

/// BlockReduceAdd (§5.3.1): `Σ s·x_i` computed exactly and projected once into `out`.
///
/// # Errors
///
/// As [`block_reduce_add_exact`].
pub fn block_reduce_add(
    block: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
    random: u32,
) -> Result<Outcome> {
    let e = block_reduce_add_exact(block, out, prj)?;
    let (p3109, _) = family(&[block.scale_format, block.format], out, prj);
    Ok(project(out, e, prj, p3109, random))
}

/// The exact result of BlockReduceMultiply, before its projection: the product of the
/// decoded elements `s·x_i` (ωMultiply reduced from 1), kept whole (every factor's bits).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an empty block or a code beyond its format.
pub fn block_reduce_multiply_exact(block: &Block<'_>) -> Result<Exact> {
    block.check("the")?;
    let one = Ext::Fin(false, Vec::new());
    Ok(ext_exact(decoded(block).into_iter().fold(one, mul)))
}

/// BlockReduceMultiply (§5.3.1): `Π s·x_i` computed exactly and projected once into `out`
/// (`0 · ∞` is an invalid NaN; a zero product takes the sign of the product in IEEE-style
/// formats).
///
/// ```
/// use lowprec::ops::block::{block_reduce_multiply, Block};
/// use lowprec::ops::Projection;
/// use lowprec::FloatFormat;
/// let (f, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
/// // scale 1 (code 128), elements 1.5, 1.5, 1.5: 3.375 exactly, 3.5 in Binary8p3se
/// let r = block_reduce_multiply(&Block::new(s8, 128, f, &[0x44, 0x44, 0x44]),
///     &FloatFormat::BINARY8P3SE, &Projection::default(), 0).unwrap();
/// assert_eq!(FloatFormat::BINARY8P3SE.decode(r.code.unwrap()), 3.5);
/// ```
///
/// # Errors
///
/// As [`block_reduce_multiply_exact`].
pub fn block_reduce_multiply(
    block: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
    random: u32,
) -> Result<Outcome> {
    let e = block_reduce_multiply_exact(block)?;
    let (p3109, _) = family(&[block.scale_format, block.format], out, prj);
    Ok(project(out, e, prj, p3109, random))
}

/// The operations of the draft's §5.4 schema that lowprec computes exactly (the
/// transcendental ones are not among its operations).
pub const ELEMENTWISE: [Op; 24] = [
    Op::Convert,
    Op::Abs,
    Op::Negate,
    Op::Sqrt,
    Op::RSqrt,
    Op::Recip,
    Op::CopySign,
    Op::Add,
    Op::Subtract,
    Op::Multiply,
    Op::Divide,
    Op::Maximum,
    Op::Minimum,
    Op::MaximumNumber,
    Op::MinimumNumber,
    Op::MaximumMagnitude,
    Op::MinimumMagnitude,
    Op::MaximumMagnitudeNumber,
    Op::MinimumMagnitudeNumber,
    Op::MinimumFinite,
    Op::MaximumFinite,
    Op::Fma,
    Op::Faa,
    Op::Clamp,
];

/// The factor of each operand of `op` that moves the result scale `s_r = 2^k` inside it:
/// `ωOp(X…) / s_r = ωOp(X₁·f₁, …)` (`t = 1/s_r`): `t` on every operand of the operations
/// of degree one (Convert, Abs, Negate, Add, Subtract, FAA, the Minimum/Maximum family,
/// Clamp), `t` on the first operand of CopySign (the second gives only its sign) and of
/// Divide, on the second of Multiply, on the last two of FMA (`X₁·(X₂t) + X₃t`); `t²` for
/// Sqrt, `s_r²` for RSqrt, `s_r` for Recip.
fn folded_factors(op: Op, sr: f64) -> Vec<f64> {
    let t = 1.0 / sr;
    match op {
        Op::Sqrt => vec![t * t],
        Op::RSqrt => vec![sr * sr],
        Op::Recip => vec![sr],
        Op::Multiply => vec![1.0, t],
        Op::Divide | Op::CopySign => vec![t, 1.0],
        Op::Fma => vec![1.0, t, t],
        _ => vec![t; op.arity()],
    }
}

/// A decoded block element times `factor`, as binary64 (exactly), or `None` when binary64
/// cannot hold it.
fn element_value(x: Ext, factor: f64) -> Option<f64> {
    match mul(x, ext(factor)) {
        Ext::Nan(_) => Some(f64::NAN),
        Ext::Inf(n) => Some(if n { f64::NEG_INFINITY } else { f64::INFINITY }),
        Ext::Zero(n) => Some(if n { -0.0 } else { 0.0 }),
        Ext::Fin(n, f) => exact_f64(n, &f),
    }
}

/// An elementwise block operation (§5.4): `Z_i = ωOp(S₁·X₁ᵢ, …, Sₙ·Xₙᵢ)` computed exactly,
/// then ωBlockProject into the result block `(s_r, [r_i])`: `r_i = Project(Z_i / s_r)` once
/// (`s_r` NaN → NaN, `s_r = 0` → 0, `s_r = ±∞` → `sgn(Z_i)·sgn(s_r)`). `op` is one of
/// [`ELEMENTWISE`]; the blocks have the same number of elements; the result scale is given
/// (`(format, code)`) and, when finite and nonzero, is a positive power of two (a P = 1
/// scale format such as Binary8p1uf or E8M0), so that `Z_i / s_r` is the operation on
/// exactly rescaled operands (`t = 1/s_r` on the operands of degree one; `X₁·(X₂t)` for
/// Multiply, `√(X·t²)` for Sqrt, …). With `B = 1` this is the draft's §5.5 scaled
/// operation `ScaledOp`.
///
/// ```
/// use lowprec::ops::block::{block_elementwise, Block};
/// use lowprec::ops::{Op, Projection, Random};
/// use lowprec::FloatFormat;
/// let (f, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
/// // (2·[1, 1.5]) + (1·[0.5, 3]) = [2.5, 6], into a block of scale 2: [1.25, 3]
/// let (a, b) = (Block::new(s8, 129, f, &[0x40, 0x44]), Block::new(s8, 128, f, &[0x38, 0x4c]));
/// let (codes, _) = block_elementwise(Op::Add, &[a, b], (s8, 129), &f,
///     &Projection::default(), &Random::Seeded { seed: 0, index_offset: 0 }).unwrap();
/// assert_eq!((f.decode(codes[0]), f.decode(codes[1])), (1.25, 3.0));
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an operation outside the schema, the wrong number of
/// blocks, blocks of different sizes, a code beyond its format, a finite result scale that
/// is not a positive power of two, a decoded element binary64 cannot hold, or a NaN result
/// in a format without NaN.
pub fn block_elementwise(
    op: Op,
    blocks: &[Block<'_>],
    result_scale: (FloatFormat, u64),
    out: &FloatFormat,
    prj: &Projection,
    random: &Random<'_>,
) -> Result<(Vec<u64>, Counts)> {
    if !ELEMENTWISE.contains(&op) {
        return Err(Error::InvalidArgument(format!(
            "{op} is not an elementwise block operation lowprec computes; use one of {}",
            ELEMENTWISE.map(|o| o.name()).join(", ")
        )));
    }
    if blocks.len() != op.arity() {
        return Err(Error::InvalidArgument(format!(
            "{op} takes {} blocks, not {}",
            op.arity(),
            blocks.len()
        )));
    }
    const WHICH: [&str; 3] = ["the first", "the second", "the third"];
    for (b, w) in blocks.iter().zip(WHICH) {
        b.check(w)?;
    }
    let n = blocks[0].codes.len();
    if let Some(b) = blocks.iter().find(|b| b.codes.len() != n) {
        return Err(Error::InvalidArgument(format!(
            "blocks of {n} and {} elements; an elementwise block operation takes blocks of the same size",
            b.codes.len()
        )));
    }
    let (sf, sc) = result_scale;
    check_code(&sf, sc, "the result scale")?;
    let sr = sf.decode(sc);
    let finite_scale = sr.is_finite() && sr != 0.0;
    if finite_scale && !(sr > 0.0 && sr.is_normal() && sr.to_bits() & ((1 << 52) - 1) == 0) {
        return Err(Error::InvalidArgument(format!(
            "the result scale {sr} is not a positive power of two; give a scale of a P = 1 format (binary8p1uf, e8m0) or a power of two"
        )));
    }
    check_random(random, n, prj)?;
    let mut fmts: Vec<FloatFormat> = blocks
        .iter()
        .flat_map(|b| [b.scale_format, b.format])
        .collect();
    fmts.push(sf);
    let p3109 = family_p3109(&fmts, out, op);
    let down = !p3109 && prj.rounding == Rounding::TowardNegative;
    let factors = if finite_scale {
        folded_factors(op, sr)
    } else {
        vec![1.0; op.arity()]
    };
    let decoded: Vec<Vec<Ext>> = blocks.iter().map(decoded).collect();
    let nbits = prj.rounding.random_bits();
    let mut outcomes = Vec::with_capacity(n);
    for i in 0..n {
        let mut vals = Vec::with_capacity(blocks.len());
        for (j, d) in decoded.iter().enumerate() {
            let v = element_value(d[i].clone(), factors[j]).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{} block's element {i}, scaled, is beyond binary64; use narrower scales",
                    WHICH[j]
                ))
            })?;
            vals.push(v);
        }
        let z = super::numeric_of_values(op, &vals, p3109, down);
        let r = random_of(random, nbits, i);
        outcomes.push(if finite_scale {
            project(out, z, prj, p3109, r)
        } else {
            // s_r NaN, 0 or ±∞: only Z_i's sign and NaN-ness count (ωBlockProject)
            let zi = match z {
                Exact::Nan { .. } => f64::NAN,
                Exact::Inf(neg) => {
                    if neg {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                }
                Exact::Zero(neg) => {
                    if neg {
                        -0.0
                    } else {
                        0.0
                    }
                }
                Exact::Val(w) => {
                    if w.neg {
                        -1.0
                    } else {
                        1.0
                    }
                }
            };
            block_project(&[zi], sr, out, prj, p3109, &Random::Given(&[r]))[0]
        });
    }
    collect(outcomes, out)
}

/// The random `R` of element `i`.
fn random_of(random: &Random<'_>, nbits: u32, i: usize) -> u32 {
    if nbits == 0 {
        return 0;
    }
    match random {
        Random::Given(r) => r.get(i).copied().unwrap_or(0),
        Random::Seeded { seed, index_offset } => {
            crate::round::random_bits(*seed, index_offset + i as u64) >> (32 - nbits)
        }
    }
}

/// Codes and counts of projected elements; an error names the first NaN result in a format
/// without NaN.
fn collect(outcomes: Vec<Outcome>, out: &FloatFormat) -> Result<(Vec<u64>, Counts)> {
    let nan_code = out.nan_code(false);
    let mut counts = Counts::default();
    let mut codes = Vec::with_capacity(outcomes.len());
    for (i, o) in outcomes.into_iter().enumerate() {
        let Some(c) = o.code else {
            return Err(Error::InvalidArgument(format!(
                "element {i}: the result is NaN and {} has no NaN; choose a result format with a NaN",
                out.name()
            )));
        };
        counts.add_flags(o.flags, nan_code == Some(c));
        codes.push(c);
    }
    Ok((codes, counts))
}

/// ωBlockProject (§5.1.2): `Z_i = X_i / S` with the draft's special cases (`S` NaN → NaN,
/// `S = 0` → 0, `S = ±∞` → `sgn(X_i)·sgn(S)`), each projected into `elem`.
fn block_project(
    x: &[f64],
    s: f64,
    elem: &FloatFormat,
    prj: &Projection,
    p3109: bool,
    random: &Random<'_>,
) -> Vec<Outcome> {
    let nbits = prj.rounding.random_bits();
    x.iter()
        .enumerate()
        .map(|(i, &xi)| {
            let z = if s.is_nan() || xi.is_nan() {
                NAN
            } else if s == 0.0 {
                Exact::Zero(false)
            } else if s.is_infinite() {
                if xi == 0.0 {
                    Exact::Zero(xi.is_sign_negative() != (s < 0.0))
                } else {
                    exact_of(if (xi < 0.0) != (s < 0.0) { -1.0 } else { 1.0 })
                }
            } else if xi.is_infinite() {
                Exact::Inf((xi < 0.0) != (s < 0.0))
            } else if xi == 0.0 {
                Exact::Zero(xi.is_sign_negative() != (s < 0.0))
            } else {
                Exact::Val(wide::quotient(xi, s))
            };
            project(elem, z, prj, p3109, random_of(random, nbits, i))
        })
        .collect()
}

/// ConvertToBlock (§5.2.2): each value `x_i` (any binary64 value) divided by the caller's
/// scale `s` (a code of `scale_format`) and projected once into `elem`. Returns the element
/// codes and the counts of what happened.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a scale code beyond its format, given random words of the
/// wrong length, or a NaN result in an element format without NaN.
pub fn convert_to_block(
    x: &[f64],
    scale: u64,
    scale_format: &FloatFormat,
    elem: &FloatFormat,
    prj: &Projection,
    random: Random<'_>,
) -> Result<(Vec<u64>, Counts)> {
    check_code(scale_format, scale, "the scale")?;
    check_random(&random, x.len(), prj)?;
    let p3109 = family_p3109(&[*scale_format], elem, Op::Convert);
    let s = scale_format.decode(scale);
    collect(block_project(x, s, elem, prj, p3109, &random), elem)
}

/// What the largest finite magnitude of a block maps to in ConvertToBlockMaxAbsFinite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ScaleTarget {
    /// `s = Project_ρs(max |x_i|)`: the draft's rule (§5.2.3); the largest element becomes
    /// about 1.
    #[default]
    One,
    /// `s = Project_ρs(max |x_i| / MaxFinite(elem))`: the largest element maps to the element
    /// format's largest finite value (with `ρs` TowardPositive, `s` is the smallest scale
    /// with `max |x_i| / s ≤ MaxFinite`, so no element overflows).
    MaxFinite,
}

impl ScaleTarget {
    /// The name used by the CLI and Python.
    pub const fn name(self) -> &'static str {
        match self {
            ScaleTarget::One => "one",
            ScaleTarget::MaxFinite => "max-finite",
        }
    }

    /// Parse `one` (`draft`) or `max-finite` (`maxfinite`, `max`).
    pub fn parse(s: &str) -> Option<ScaleTarget> {
        let k: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        match k.as_str() {
            "one" | "1" | "draft" => Some(ScaleTarget::One),
            "maxfinite" | "max" => Some(ScaleTarget::MaxFinite),
            _ => None,
        }
    }
}

/// How ConvertToBlockMaxAbsFinite chooses its scale: `s = Project_{fs,ρs}(S / T)` with
/// `S = max |x_i|` over the finite `x_i` (∞ when all non-NaN values are infinite, NaN when all
/// are NaN) and `T` the [`ScaleTarget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScaleRule {
    /// What the largest magnitude maps to.
    pub target: ScaleTarget,
    /// `ρs`, the scale's projection (deterministic roundings only).
    pub projection: Projection,
}

impl Default for ScaleRule {
    /// The draft's rule with `ρs` = (TowardPositive, SatFinite), the strategy of the draft's
    /// NOTE 5: the scale is at least the largest magnitude.
    fn default() -> ScaleRule {
        ScaleRule {
            target: ScaleTarget::One,
            projection: Projection::new(Rounding::TowardPositive, Saturation::Finite),
        }
    }
}

/// The maximum over finite magnitudes (`reduce(ωMaximumFinite, [NaN, |X_1|, …])`).
pub fn max_abs_finite(x: &[f64]) -> f64 {
    let mut m = f64::NAN;
    for &v in x {
        let a = v.abs();
        if v.is_nan() {
            continue;
        }
        let replace = m.is_nan() || (a.is_finite() && (m.is_infinite() || a > m));
        if replace {
            m = a;
        }
    }
    m
}

/// The scale code ConvertToBlockMaxAbsFinite chooses for `x` (see [`ScaleRule`]).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a stochastic `ρs`, or a NaN scale in a scale format without
/// NaN.
pub fn max_abs_finite_scale(
    x: &[f64],
    elem: &FloatFormat,
    scale_format: &FloatFormat,
    rule: &ScaleRule,
) -> Result<u64> {
    if rule.projection.rounding.random_bits() != 0 {
        return Err(Error::InvalidArgument(
            "the scale's projection takes a deterministic rounding".into(),
        ));
    }
    let m = max_abs_finite(x);
    let target = match rule.target {
        ScaleTarget::One => 1.0,
        ScaleTarget::MaxFinite => elem.max_finite(),
    };
    let e = if m.is_finite() && m != 0.0 && target != 1.0 {
        Exact::Val(wide::quotient(m, target))
    } else {
        exact_of(m)
    };
    let p3109 = family_p3109(&[*elem], scale_format, Op::Convert);
    project(scale_format, e, &rule.projection, p3109, 0)
        .code
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the scale is NaN and {} has no NaN; choose a scale format with a NaN",
                scale_format.name()
            ))
        })
}

/// ConvertToBlockMaxAbsFinite (§5.2.3): the scale from the largest finite magnitude
/// ([`max_abs_finite_scale`]), then [`convert_to_block`] with it. Returns the scale code, the
/// element codes and the counts.
///
/// ```
/// use lowprec::ops::block::{convert_to_block_max_abs_finite, ScaleRule, ScaleTarget};
/// use lowprec::ops::{Projection, Random};
/// use lowprec::FloatFormat;
/// let (p8, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
/// let x = [3.0, -100.0, 0.5];
/// let rule = ScaleRule { target: ScaleTarget::MaxFinite, ..ScaleRule::default() };
/// let rnd = Random::Seeded { seed: 0, index_offset: 0 };
/// let (s, codes, _) = convert_to_block_max_abs_finite(&x, &p8, &s8, &rule, &Projection::default(), rnd)?;
/// assert_eq!(s8.decode(s), 0.5); // 100 / 224 ≤ 0.5: the smallest power of two at least 100/224
/// // -200 is a tie between 192 and 208 in Binary8p4se: to even
/// assert_eq!(codes.iter().map(|&c| p8.decode(c)).collect::<Vec<_>>(), [6.0, -192.0, 1.0]);
/// # Ok::<(), lowprec::Error>(())
/// ```
///
/// # Errors
///
/// As [`max_abs_finite_scale`] and [`convert_to_block`].
pub fn convert_to_block_max_abs_finite(
    x: &[f64],
    elem: &FloatFormat,
    scale_format: &FloatFormat,
    rule: &ScaleRule,
    prj: &Projection,
    random: Random<'_>,
) -> Result<(u64, Vec<u64>, Counts)> {
    let s = max_abs_finite_scale(x, elem, scale_format, rule)?;
    let (codes, counts) = convert_to_block(x, s, scale_format, elem, prj, random)?;
    Ok((s, codes, counts))
}

/// ConvertFromBlock (§5.2.1): `s·x_i`, exact, projected once into `out` (binary64 holds every
/// product of two values of at most 26 bits of precision whose exponents stay in its range;
/// give `FloatFormat::FP64` for the values themselves).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a code beyond its format, given random words of the wrong
/// length, or a NaN result in a format without NaN.
pub fn convert_from_block(
    block: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
    random: Random<'_>,
) -> Result<(Vec<u64>, Counts)> {
    check_code(&block.scale_format, block.scale, "the scale")?;
    for (i, &c) in block.codes.iter().enumerate() {
        check_code(&block.format, c, &format!("element {i}"))?;
    }
    check_random(&random, block.codes.len(), prj)?;
    let p3109 = family_p3109(&[block.scale_format, block.format], out, Op::Multiply);
    let nbits = prj.rounding.random_bits();
    let outcomes = decoded(block)
        .into_iter()
        .enumerate()
        .map(|(i, z)| project(out, ext_exact(z), prj, p3109, random_of(&random, nbits, i)))
        .collect();
    collect(outcomes, out)
}

// ---------------------------------------------------------------------------------------
// Approximate versions: exact products, a low-precision accumulator
// ---------------------------------------------------------------------------------------

fn ext_f64(x: &Ext) -> Result<f64> {
    Ok(match x {
        Ext::Nan(_) => f64::NAN,
        Ext::Inf(n) => {
            if *n {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Ext::Zero(n) => {
            if *n {
                -0.0
            } else {
                0.0
            }
        }
        Ext::Fin(n, f) => exact_f64(*n, f).ok_or_else(|| {
            Error::InvalidArgument(
                "a product is not exactly representable in binary64; the approximate block operations take formats whose products binary64 holds".into(),
            )
        })?,
    })
}

fn approx_outcome(
    terms: &[f64],
    fmts: &[FloatFormat],
    out: &FloatFormat,
    prj: &Projection,
    acc: &AccumOptions,
    random: u32,
) -> Result<Outcome> {
    let (sum, _) = accumulate(terms, terms.len(), acc)?;
    let (p3109, _) = family(fmts, out, prj);
    Ok(project(out, exact_of(sum[0]), prj, p3109, random))
}

/// BlockDotProduct as hardware computes it: each product `(s_a·a_i)(s_b·b_i)` exact (it must
/// be a binary64 value), the products summed by [`accumulate`] under `acc` (an FP16 or FP32
/// accumulator, sequential or pairwise, …), the accumulator's value projected into `out`.
///
/// # Errors
///
/// As [`block_dot_product_exact`], a product binary64 does not hold, or an accumulator
/// [`accumulate`] refuses.
pub fn block_dot_product_approx(
    a: &Block<'_>,
    b: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
    acc: &AccumOptions,
    random: u32,
) -> Result<Outcome> {
    block_dot_product_exact(a, b, out, prj)?; // the checks
    let terms = decoded(a)
        .into_iter()
        .zip(decoded(b))
        .map(|(x, y)| ext_f64(&mul(x, y)))
        .collect::<Result<Vec<f64>>>()?;
    let fmts = [a.scale_format, a.format, b.scale_format, b.format];
    approx_outcome(&terms, &fmts, out, prj, acc, random)
}

/// BlockReduceAdd as hardware computes it: the terms `s·x_i` summed by [`accumulate`] under
/// `acc`, the accumulator's value projected into `out`.
///
/// # Errors
///
/// As [`block_dot_product_approx`].
pub fn block_reduce_add_approx(
    block: &Block<'_>,
    out: &FloatFormat,
    prj: &Projection,
    acc: &AccumOptions,
    random: u32,
) -> Result<Outcome> {
    block.check("the")?;
    let terms = decoded(block)
        .iter()
        .map(ext_f64)
        .collect::<Result<Vec<f64>>>()?;
    approx_outcome(
        &terms,
        &[block.scale_format, block.format],
        out,
        prj,
        acc,
        random,
    )
}

// ---------------------------------------------------------------------------------------
// κ (§4.4)
// ---------------------------------------------------------------------------------------

/// A block operation whose κ is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockOp {
    /// BlockDotProduct of two blocks of the same formats and scales.
    DotProduct,
    /// BlockReduceAdd.
    ReduceAdd,
}

impl BlockOp {
    /// The draft's name.
    pub const fn name(self) -> &'static str {
        match self {
            BlockOp::DotProduct => "BlockDotProduct",
            BlockOp::ReduceAdd => "BlockReduceAdd",
        }
    }

    const fn operands(self) -> usize {
        match self {
            BlockOp::DotProduct => 2,
            BlockOp::ReduceAdd => 1,
        }
    }
}

/// κ of an approximate implementation (§4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kappa {
    /// Both results finite for every input whose defined result is finite: the largest number
    /// of result-format values between them.
    Steps(u64),
    /// Some input's results do not match on infinities (one finite, one infinite, or
    /// infinities of different signs).
    Infinite,
    /// Some input's results do not match on NaN.
    Nan,
}

impl fmt::Display for Kappa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kappa::Steps(n) => write!(f, "{n}"),
            Kappa::Infinite => f.write_str("inf"),
            Kappa::Nan => f.write_str("NaN"),
        }
    }
}

/// What κ is measured for.
#[derive(Debug, Clone, Copy)]
pub struct KappaSpec {
    /// The operation.
    pub op: BlockOp,
    /// The elements' format (both blocks of a dot product).
    pub format: FloatFormat,
    /// The scales' format.
    pub scale_format: FloatFormat,
    /// The scale codes (the second is the second block's; unused by ReduceAdd).
    pub scales: (u64, u64),
    /// Elements per block.
    pub k: usize,
    /// The result format.
    pub out: FloatFormat,
    /// The projection of the defined result and of the accumulator's value into `out`
    /// (deterministic).
    pub projection: Projection,
    /// The approximate implementation's accumulation.
    pub acc: AccumOptions,
}

/// Which inputs κ is measured over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inputs {
    /// Every combination of the element format's codes other than NaN.
    Exhaustive,
    /// `samples` blocks of codes drawn uniformly from the non-NaN codes by the counter-based
    /// generator (code `j` of sample `i`: `random_bits(seed, i·D + j)`, `D` the codes per
    /// input, mapped by multiply-shift), and the adversarial set ([`adversarial_inputs`]).
    Sampled {
        /// Seed.
        seed: u64,
        /// Random inputs.
        samples: u64,
    },
}

/// An input and its two results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    /// The first block's element codes.
    pub a: Vec<u64>,
    /// The second block's (empty for ReduceAdd).
    pub b: Vec<u64>,
    /// The defined result's code (`None`: NaN in a format without NaN).
    pub exact: Option<u64>,
    /// The approximate result's code.
    pub approx: Option<u64>,
    /// Their distance.
    pub kappa: Kappa,
}

/// A κ measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KappaReport {
    /// The largest distance.
    pub kappa: Kappa,
    /// An input attaining it (the first found, in input order); `None` when no input was
    /// measured.
    pub witness: Option<Witness>,
    /// Inputs measured.
    pub inputs: u64,
    /// Inputs whose defined result is finite.
    pub finite: u64,
    /// Inputs whose approximate result differs from the defined one.
    pub differ: u64,
    /// Whether every input was measured.
    pub exhaustive: bool,
}

/// The position of a finite code in the order of the format's finite values (one position for
/// ±0).
pub fn ordinal(f: &FloatFormat, code: u64) -> i64 {
    let s = f.sign_mask();
    let mag = (code & !s & f.max_code()) as i64;
    if s != 0 && code & s != 0 {
        -mag
    } else {
        mag
    }
}

/// The §4.4 distance between a defined result and an approximate one, both codes of `out`
/// (`None` for a NaN in a format without NaN).
pub fn distance(out: &FloatFormat, exact: Option<u64>, approx: Option<u64>) -> Kappa {
    let class = |c: Option<u64>| -> (bool, Option<bool>) {
        match c {
            None => (true, None),
            Some(c) => {
                let v = out.decode(c);
                (v.is_nan(), v.is_infinite().then_some(v < 0.0))
            }
        }
    };
    let (en, ei) = class(exact);
    let (an, ai) = class(approx);
    if en != an {
        return Kappa::Nan;
    }
    if en {
        return Kappa::Steps(0);
    }
    if ei != ai {
        return Kappa::Infinite;
    }
    match (ei, exact, approx) {
        (None, Some(e), Some(a)) => Kappa::Steps(ordinal(out, e).abs_diff(ordinal(out, a))),
        _ => Kappa::Steps(0),
    }
}

/// The adversarial inputs of [`Inputs::Sampled`], as codes (`a` then `b` for a dot product):
/// with `P` the positive finite codes, `one` the code of 1 (else the largest finite) and `m`
/// the largest finite code, for every `c, d ∈ P` the blocks `[c, d, …, d]`, `[d, …, d, c]`
/// and, in signed formats, `[c, d, …, d, −c]` (cancellation) and `[c, −d, d, −d, …]`
/// (alternating signs), each against `b = [one, …]` and against itself (squares); and
/// `[m, …, m]`, `[m, −m, m, …]` against `[m, …, m]`.
pub fn adversarial_inputs(format: &FloatFormat, k: usize, op: BlockOp) -> Vec<Vec<u64>> {
    let pos: Vec<u64> = (0..=format.max_code())
        .filter(|&c| {
            let v = format.decode(c);
            v.is_finite() && v > 0.0
        })
        .collect();
    let Some(&m) = pos
        .iter()
        .max_by(|x, y| format.decode(**x).total_cmp(&format.decode(**y)))
    else {
        return Vec::new();
    };
    let one = pos
        .iter()
        .copied()
        .find(|&c| format.decode(c) == 1.0)
        .unwrap_or(m);
    let signed = format.sign_mask() != 0;
    let neg = |c: u64| c | format.sign_mask();
    let mut blocks: Vec<Vec<u64>> = Vec::new();
    for &c in &pos {
        for &d in &pos {
            let mut first = vec![d; k];
            first[0] = c;
            let mut last = vec![d; k];
            last[k - 1] = c;
            blocks.push(first);
            blocks.push(last);
            if signed && k >= 2 {
                let mut cancel = vec![d; k];
                cancel[0] = c;
                cancel[k - 1] = neg(c);
                blocks.push(cancel);
                let alt: Vec<u64> = (0..k)
                    .map(|i| match i {
                        0 => c,
                        i if i % 2 == 1 => neg(d),
                        _ => d,
                    })
                    .collect();
                blocks.push(alt);
            }
        }
    }
    let mut out = Vec::new();
    let ones = vec![one; k];
    let maxes = vec![m; k];
    let alt_max: Vec<u64> = (0..k)
        .map(|i| if signed && i % 2 == 1 { neg(m) } else { m })
        .collect();
    match op {
        BlockOp::ReduceAdd => {
            out.extend(blocks);
            out.push(maxes);
            out.push(alt_max);
        }
        BlockOp::DotProduct => {
            for a in blocks {
                let mut x = a.clone();
                x.extend_from_slice(&ones);
                out.push(x);
                let mut y = a.clone();
                y.extend_from_slice(&a);
                out.push(y);
            }
            let mut x = maxes.clone();
            x.extend_from_slice(&maxes);
            out.push(x);
            let mut y = alt_max;
            y.extend_from_slice(&maxes);
            out.push(y);
        }
    }
    out
}

/// Inputs per batch of κ measurement.
const BATCH: u64 = 1 << 14;

/// The most inputs [`Inputs::Exhaustive`] takes.
pub const MAX_EXHAUSTIVE: u64 = 1 << 26;

/// The number of inputs of an exhaustive κ measurement (`None` beyond `u64`).
pub fn exhaustive_count(spec: &KappaSpec) -> Option<u64> {
    let n = (0..=spec.format.max_code())
        .filter(|&c| !spec.format.is_nan_code(c))
        .count() as u64;
    let d = (spec.k * spec.op.operands()) as u32;
    n.checked_pow(d)
}

/// κ of the approximate `spec.op` (products exact, summed in `spec.acc`, converted into
/// `spec.out`) against the exact operation projected once, over `inputs`: the largest number
/// of `spec.out` values between the two results (§4.4), and an input attaining it.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for `k = 0`, a stochastic projection, scale codes beyond their
/// format, an exhaustive set of more than [`MAX_EXHAUSTIVE`] inputs, products binary64 does
/// not hold, or an accumulator [`accumulate`] refuses.
pub fn kappa(spec: &KappaSpec, inputs: Inputs) -> Result<KappaReport> {
    if spec.k == 0 {
        return Err(Error::InvalidArgument(
            "blocks of 0 elements; give k ≥ 1".into(),
        ));
    }
    if spec.projection.rounding.random_bits() != 0 {
        return Err(Error::InvalidArgument(
            "κ is measured under a deterministic rounding".into(),
        ));
    }
    check_code(&spec.scale_format, spec.scales.0, "the first scale")?;
    check_code(&spec.scale_format, spec.scales.1, "the second scale")?;
    let codes: Vec<u64> = (0..=spec.format.max_code())
        .filter(|&c| !spec.format.is_nan_code(c))
        .collect();
    let d = spec.k * spec.op.operands();
    let nc = codes.len() as u64;
    let mut report = KappaReport {
        kappa: Kappa::Steps(0),
        witness: None,
        inputs: 0,
        finite: 0,
        differ: 0,
        exhaustive: inputs == Inputs::Exhaustive,
    };
    match inputs {
        Inputs::Exhaustive => {
            let total = exhaustive_count(spec).filter(|&t| t <= MAX_EXHAUSTIVE);
            let Some(total) = total else {
                return Err(Error::InvalidArgument(format!(
                    "{} codes to the power {d} is more than {MAX_EXHAUSTIVE} inputs; measure over sampled inputs",
                    nc
                )));
            };
            let mut start = 0;
            while start < total {
                let end = (start + BATCH).min(total);
                let batch: Vec<Vec<u64>> = (start..end)
                    .map(|mut idx| {
                        (0..d)
                            .map(|_| {
                                let c = codes[(idx % nc) as usize];
                                idx /= nc;
                                c
                            })
                            .collect()
                    })
                    .collect();
                measure(spec, &batch, &mut report)?;
                start = end;
            }
        }
        Inputs::Sampled { seed, samples } => {
            let mut start = 0;
            while start < samples {
                let end = (start + BATCH).min(samples);
                let batch: Vec<Vec<u64>> = (start..end)
                    .map(|i| {
                        (0..d as u64)
                            .map(|j| {
                                let r = crate::round::random_bits(seed, i * d as u64 + j);
                                codes[((r as u64 * nc) >> 32) as usize]
                            })
                            .collect()
                    })
                    .collect();
                measure(spec, &batch, &mut report)?;
                start = end;
            }
            let adv = adversarial_inputs(&spec.format, spec.k, spec.op);
            for chunk in adv.chunks(BATCH as usize) {
                measure(spec, chunk, &mut report)?;
            }
        }
    }
    Ok(report)
}

/// κ with the scales varying too: [`kappa`] at every pair `(s_a, s_b)` of the scale codes
/// `scales` (BlockReduceAdd: at every code), the largest κ of them with its witness and the
/// scales it was found at; `inputs`, `finite` and `differ` are summed over the pairs.
///
/// # Errors
///
/// As [`kappa`], and for an empty `scales`.
pub fn kappa_over_scales(
    spec: &KappaSpec,
    scales: &[u64],
    inputs: Inputs,
) -> Result<(KappaReport, (u64, u64))> {
    let pairs: Vec<(u64, u64)> = match spec.op {
        BlockOp::ReduceAdd => scales.iter().map(|&s| (s, s)).collect(),
        BlockOp::DotProduct => scales
            .iter()
            .flat_map(|&a| scales.iter().map(move |&b| (a, b)))
            .collect(),
    };
    let mut best: Option<(KappaReport, (u64, u64))> = None;
    for p in pairs {
        let r = kappa(&KappaSpec { scales: p, ..*spec }, inputs)?;
        match &mut best {
            None => best = Some((r, p)),
            Some((b, at)) => {
                b.inputs += r.inputs;
                b.finite += r.finite;
                b.differ += r.differ;
                if r.kappa > b.kappa {
                    (b.kappa, b.witness, *at) = (r.kappa, r.witness, p);
                }
            }
        }
    }
    best.ok_or_else(|| {
        Error::InvalidArgument("no scales given; give one or more scale codes".into())
    })
}

/// Measure a batch of inputs (each `a` then `b` codes) into `report`.
fn measure(spec: &KappaSpec, batch: &[Vec<u64>], report: &mut KappaReport) -> Result<()> {
    let k = spec.k;
    let fmts = [
        spec.scale_format,
        spec.format,
        spec.scale_format,
        spec.format,
    ];
    let fmts = &fmts[..2 * spec.op.operands()];
    let (p3109, down) = family(fmts, &spec.out, &spec.projection);
    let sa = ext(spec.scale_format.decode(spec.scales.0));
    let sb = ext(spec.scale_format.decode(spec.scales.1));
    let terms_of = |input: &[u64]| -> Vec<Ext> {
        let x = |c: u64, s: &Ext| mul(s.clone(), ext(spec.format.decode(c)));
        match spec.op {
            BlockOp::ReduceAdd => input.iter().map(|&c| x(c, &sa)).collect(),
            BlockOp::DotProduct => (0..k)
                .map(|i| mul(x(input[i], &sa), x(input[k + i], &sb)))
                .collect(),
        }
    };
    // the products, row by row, for the accumulator
    let rows: Vec<Result<Vec<f64>>> = batch
        .par_iter()
        .map(|input| terms_of(input).iter().map(ext_f64).collect())
        .collect();
    let mut values = Vec::with_capacity(batch.len() * k);
    for r in rows {
        values.extend(r?);
    }
    let (sums, _) = accumulate(&values, k, &spec.acc)?;
    let results: Vec<(Option<u64>, Option<u64>, Kappa)> = batch
        .par_iter()
        .zip(sums.par_iter())
        .map(|(input, &s)| {
            let e = project(
                &spec.out,
                ext_sum(terms_of(input), down),
                &spec.projection,
                p3109,
                0,
            )
            .code;
            let a = project(&spec.out, exact_of(s), &spec.projection, p3109, 0).code;
            (e, a, distance(&spec.out, e, a))
        })
        .collect();
    for (input, (e, a, kp)) in batch.iter().zip(results) {
        report.inputs += 1;
        let finite = e.is_some_and(|c| spec.out.decode(c).is_finite());
        report.finite += finite as u64;
        report.differ += (kp != Kappa::Steps(0)) as u64;
        if kp > report.kappa || report.witness.is_none() {
            report.kappa = report.kappa.max(kp);
            let (a_codes, b_codes) = input.split_at(k);
            report.witness = Some(Witness {
                a: a_codes.to_vec(),
                b: b_codes.to_vec(),
                exact: e,
                approx: a,
                kappa: kp,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_sums_are_exact_across_the_range() {
        let t = |neg, f: &[f64]| big_term(neg, f);
        // 2^1000 · 2^1000 · 3 − 2^2000 · 3 + tiny: only the tiny term survives
        let big = pow2(1000);
        let w = big_sum(&[
            t(false, &[big, big, 3.0]),
            t(true, &[big, big, 3.0]),
            t(false, &[pow2(-1074), pow2(-1074), 5.0]),
        ])
        .unwrap();
        let tz = w.sig.trailing_zeros();
        assert_eq!((w.sig >> tz, w.exp + tz as i32), (5, -2148));
        assert!(!w.sticky && !w.neg);
        let w = big_sum(&[t(false, &[big, big]), t(true, &[pow2(-1074)])]).unwrap();
        assert!(w.sticky && !w.neg && w.msb() == 1999);
        assert!(big_sum(&[t(false, &[1.5]), t(true, &[0.75, 2.0])]).is_none());
        assert_eq!(exact_f64(true, &[1.5, 0.25]), Some(-0.375));
        assert_eq!(exact_f64(false, &[pow2(600), pow2(600)]), None);
        assert_eq!(exact_f64(false, &[1.0 + pow2(-52), 1.0 + pow2(-52)]), None);
    }

    #[test]
    fn distances_follow_the_draft() {
        let f = FloatFormat::BINARY8P3SE;
        assert_eq!(distance(&f, Some(0x01), Some(0x81)), Kappa::Steps(2));
        assert_eq!(distance(&f, Some(0x7e), Some(0x7f)), Kappa::Infinite);
        assert_eq!(distance(&f, Some(0x80), Some(0x00)), Kappa::Nan);
        assert_eq!(distance(&f, Some(0x80), Some(0x80)), Kappa::Steps(0));
        let h = FloatFormat::FP16;
        assert_eq!(distance(&h, Some(0x8000), Some(0x0001)), Kappa::Steps(1));
    }
}
