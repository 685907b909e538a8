//! A slow, plainly written exact reference for [`crate::ops`], independent of its fast path:
//! exact results as dyadic big integers (`n · 2^e`), quotients and roots kept implicit and
//! compared through their definitions (`x/y ≤ c ⇔ x ≤ c·y` for `y > 0`, `√x ≤ c ⇔ x ≤ c²`),
//! the neighbours of a result found by binary search over the result format's codes (whose
//! values grow with the code), the rounding chosen by its definition, and the saturation
//! tables transcribed from the draft. `lowprec p3109 conformance` holds the fast operations
//! to it.

use super::{Draft, Op, Projection, Rounding, Saturation};
use crate::format::{FloatFormat, Specials};
use std::cmp::Ordering;

/// A signed big integer (sign and little-endian 32-bit limbs, no leading zero limbs).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Int {
    neg: bool,
    mag: Vec<u32>,
}

impl Int {
    fn from_u64(neg: bool, v: u64) -> Int {
        Int {
            neg,
            mag: vec![v as u32, (v >> 32) as u32],
        }
        .trim()
    }
    fn trim(mut self) -> Int {
        while self.mag.last() == Some(&0) {
            self.mag.pop();
        }
        if self.mag.is_empty() {
            self.neg = false;
        }
        self
    }
    fn is_zero(&self) -> bool {
        self.mag.is_empty()
    }
    fn shl(&self, s: u32) -> Int {
        let (limbs, bits) = ((s / 32) as usize, s % 32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.mag {
            out.push((l << bits) | carry);
            carry = if bits == 0 { 0 } else { l >> (32 - bits) };
        }
        out.push(carry);
        Int {
            neg: self.neg,
            mag: out,
        }
        .trim()
    }
    fn cmp_mag(a: &[u32], b: &[u32]) -> Ordering {
        a.len()
            .cmp(&b.len())
            .then_with(|| a.iter().rev().cmp(b.iter().rev()))
    }
    fn add_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
        let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
        let mut carry = 0u64;
        for i in 0..a.len().max(b.len()) {
            let s = *a.get(i).unwrap_or(&0) as u64 + *b.get(i).unwrap_or(&0) as u64 + carry;
            out.push(s as u32);
            carry = s >> 32;
        }
        out.push(carry as u32);
        out
    }
    /// `a − b` for `|a| ≥ |b|`.
    fn sub_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
        let mut out = Vec::with_capacity(a.len());
        let mut borrow = 0i64;
        for (i, &x) in a.iter().enumerate() {
            let mut d = x as i64 - *b.get(i).unwrap_or(&0) as i64 - borrow;
            borrow = (d < 0) as i64;
            if d < 0 {
                d += 1 << 32;
            }
            out.push(d as u32);
        }
        out
    }
    fn add(&self, o: &Int) -> Int {
        if self.neg == o.neg {
            return Int {
                neg: self.neg,
                mag: Int::add_mag(&self.mag, &o.mag),
            }
            .trim();
        }
        match Int::cmp_mag(&self.mag, &o.mag) {
            Ordering::Equal => Int::from_u64(false, 0),
            Ordering::Greater => Int {
                neg: self.neg,
                mag: Int::sub_mag(&self.mag, &o.mag),
            }
            .trim(),
            Ordering::Less => Int {
                neg: o.neg,
                mag: Int::sub_mag(&o.mag, &self.mag),
            }
            .trim(),
        }
    }
    fn mul(&self, o: &Int) -> Int {
        let mut out = vec![0u32; self.mag.len() + o.mag.len() + 1];
        for (i, &a) in self.mag.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &b) in o.mag.iter().enumerate() {
                let t = out[i + j] as u64 + a as u64 * b as u64 + carry;
                out[i + j] = t as u32;
                carry = t >> 32;
            }
            let mut k = i + o.mag.len();
            while carry != 0 {
                let t = out[k] as u64 + carry;
                out[k] = t as u32;
                carry = t >> 32;
                k += 1;
            }
        }
        Int {
            neg: self.neg != o.neg,
            mag: out,
        }
        .trim()
    }
    fn cmp(&self, o: &Int) -> Ordering {
        match (self.neg, o.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => Int::cmp_mag(&self.mag, &o.mag),
            (true, true) => Int::cmp_mag(&o.mag, &self.mag),
        }
    }
}

/// A dyadic rational `n · 2^e`.
#[derive(Debug, Clone)]
struct Dy {
    n: Int,
    e: i32,
}

impl Dy {
    fn of(v: f64) -> Dy {
        if v == 0.0 {
            return Dy {
                n: Int::from_u64(false, 0),
                e: 0,
            };
        }
        let bits = v.to_bits();
        let field = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        let (m, e) = if field == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), field - 1075)
        };
        Dy {
            n: Int::from_u64(v < 0.0, m),
            e,
        }
    }
    fn aligned(&self, o: &Dy) -> (Int, Int, i32) {
        let e = self.e.min(o.e);
        (
            self.n.shl((self.e - e) as u32),
            o.n.shl((o.e - e) as u32),
            e,
        )
    }
    fn add(&self, o: &Dy) -> Dy {
        let (a, b, e) = self.aligned(o);
        Dy { n: a.add(&b), e }
    }
    fn mul(&self, o: &Dy) -> Dy {
        Dy {
            n: self.n.mul(&o.n),
            e: self.e + o.e,
        }
    }
    fn cmp(&self, o: &Dy) -> Ordering {
        let (a, b, _) = self.aligned(o);
        a.cmp(&b)
    }
    fn sign(&self) -> Ordering {
        self.n.cmp(&Int::from_u64(false, 0))
    }
    /// An approximation (only a search hint: every answer is checked exactly).
    fn approx(&self) -> f64 {
        let k = self.n.mag.len();
        let top = |i: usize| *self.n.mag.get(i).unwrap_or(&0) as f64;
        let (hi, lo) = if k >= 2 {
            (top(k - 1), top(k - 2))
        } else {
            (top(0), 0.0)
        };
        let shift = 32 * (k.max(2) as i32 - 2) + self.e;
        let m = hi * 4294967296.0 + lo;
        let v = m
            * 2f64.powi(shift.clamp(-1074, 1023))
            * 2f64.powi((shift - shift.clamp(-1074, 1023)).clamp(-1074, 1023));
        if self.n.neg {
            -v
        } else {
            v
        }
    }
    fn is_zero(&self) -> bool {
        self.n.is_zero()
    }
}

/// An exact result.
#[derive(Debug, Clone)]
enum R {
    Nan,
    Inf(bool),
    /// Zero: its sign normally and under TowardNegative.
    Zero(bool, bool),
    Num(Dy),
    /// `x / y`, `y ≠ 0`.
    Quot(Dy, Dy),
    /// `√x`, `x > 0`.
    Root(Dy),
    /// `1/√x`, `x > 0`.
    InvRoot(Dy),
}

impl R {
    fn approx(&self) -> f64 {
        match self {
            R::Num(d) => d.approx(),
            R::Quot(x, y) => x.approx() / y.approx(),
            R::Root(x) => x.approx().sqrt(),
            R::InvRoot(x) => 1.0 / x.approx().sqrt(),
            R::Nan | R::Inf(_) | R::Zero(..) => f64::NAN,
        }
    }
    fn negative(&self) -> bool {
        match self {
            R::Num(d) => d.sign() == Ordering::Less,
            R::Quot(x, y) => (x.sign() == Ordering::Less) != (y.sign() == Ordering::Less),
            _ => false,
        }
    }
    /// The exact value compared with `c`.
    fn cmp(&self, c: &Dy) -> Ordering {
        match self {
            R::Num(d) => d.cmp(c),
            R::Quot(x, y) => {
                let o = x.cmp(&c.mul(y));
                if y.sign() == Ordering::Less {
                    o.reverse()
                } else {
                    o
                }
            }
            R::Root(x) if c.sign() != Ordering::Greater => Ordering::Greater,
            R::Root(x) => x.cmp(&c.mul(c)),
            R::InvRoot(_) if c.sign() != Ordering::Greater => Ordering::Greater,
            R::InvRoot(x) => Dy::of(1.0).cmp(&c.mul(c).mul(x)),
            R::Nan | R::Inf(_) | R::Zero(..) => {
                unreachable!("compared only finite nonzero results")
            }
        }
    }
}

fn value(v: f64) -> R {
    if v.is_nan() {
        R::Nan
    } else if v.is_infinite() {
        R::Inf(v < 0.0)
    } else if v == 0.0 {
        R::Zero(v.is_sign_negative(), v.is_sign_negative())
    } else {
        R::Num(Dy::of(v))
    }
}

fn sum(t: &[f64]) -> R {
    if t.iter().any(|v| v.is_nan()) {
        return R::Nan;
    }
    let (p, n) = (t.contains(&f64::INFINITY), t.contains(&f64::NEG_INFINITY));
    if p && n {
        return R::Nan;
    }
    if p || n {
        return R::Inf(n);
    }
    let s = t.iter().fold(Dy::of(0.0), |a, v| a.add(&Dy::of(*v)));
    if s.is_zero() {
        let all_neg = t.iter().all(|v| *v == 0.0 && v.is_sign_negative());
        return R::Zero(all_neg, true);
    }
    R::Num(s)
}

/// The exact result of an arithmetic operation (IEEE 754 or, with `p3109`, the draft).
fn exact(op: Op, x: &[f64], p3109: bool) -> Option<R> {
    let nan = x.iter().any(|v| v.is_nan());
    Some(match op {
        Op::Convert => value(x[0]),
        Op::Negate => value(-x[0]),
        Op::Abs => value(x[0].abs()),
        Op::Add => sum(&[x[0], x[1]]),
        Op::Subtract => sum(&[x[0], -x[1]]),
        Op::Faa => sum(x),
        Op::Multiply | Op::Fma => {
            if nan {
                return Some(R::Nan);
            }
            let neg = x[0].is_sign_negative() != x[1].is_sign_negative();
            let inf = x[0].is_infinite() || x[1].is_infinite();
            let zero = x[0] == 0.0 || x[1] == 0.0;
            if inf && zero {
                return Some(R::Nan);
            }
            if op == Op::Multiply {
                if inf {
                    return Some(R::Inf(neg));
                }
                if zero {
                    return Some(R::Zero(neg, neg));
                }
                return Some(R::Num(Dy::of(x[0]).mul(&Dy::of(x[1]))));
            }
            let z = x[2];
            if inf {
                if z.is_infinite() && (z < 0.0) != neg {
                    return Some(R::Nan);
                }
                return Some(R::Inf(neg));
            }
            if z.is_infinite() {
                return Some(R::Inf(z < 0.0));
            }
            let s = Dy::of(x[0]).mul(&Dy::of(x[1])).add(&Dy::of(z));
            if s.is_zero() {
                if zero && z == 0.0 && neg == z.is_sign_negative() {
                    return Some(R::Zero(neg, neg));
                }
                return Some(R::Zero(false, true));
            }
            R::Num(s)
        }
        Op::Divide | Op::Recip => {
            let (a, b) = if op == Op::Recip {
                (1.0, x[0])
            } else {
                (x[0], x[1])
            };
            if a.is_nan() || b.is_nan() {
                return Some(R::Nan);
            }
            let neg = a.is_sign_negative() != b.is_sign_negative();
            if b == 0.0 {
                return Some(if p3109 || a == 0.0 {
                    R::Nan
                } else {
                    R::Inf(neg)
                });
            }
            if a.is_infinite() {
                return Some(if b.is_infinite() { R::Nan } else { R::Inf(neg) });
            }
            if b.is_infinite() || a == 0.0 {
                return Some(R::Zero(neg, neg));
            }
            R::Quot(Dy::of(a), Dy::of(b))
        }
        Op::Sqrt => match x[0] {
            v if v.is_nan() => R::Nan,
            v if v == 0.0 => R::Zero(v.is_sign_negative(), v.is_sign_negative()),
            v if v < 0.0 => R::Nan,
            v if v.is_infinite() => R::Inf(false),
            v => R::Root(Dy::of(v)),
        },
        Op::RSqrt => match x[0] {
            v if v.is_nan() => R::Nan,
            v if v == 0.0 && p3109 => R::Nan,
            v if v == 0.0 => R::Inf(v.is_sign_negative()),
            v if v < 0.0 => R::Nan,
            v if v.is_infinite() => R::Zero(false, false),
            v => R::InvRoot(Dy::of(v)),
        },
        _ => return None,
    })
}

fn is_p3109(f: &FloatFormat) -> bool {
    matches!(
        f.specials(),
        Specials::P3109Extended | Specials::P3109Finite
    )
}

fn max_code(f: &FloatFormat, neg: bool) -> Option<u64> {
    Some(f.max_mag() | if neg { f.sign_mask() } else { 0 })
}

fn nan_or_max(f: &FloatFormat, neg: bool) -> Option<u64> {
    if f.has_nan() {
        f.nan_code(false)
    } else {
        max_code(f, neg)
    }
}

fn zero_code(f: &FloatFormat, neg: bool, family: bool) -> Option<u64> {
    if !f.has_zero() {
        return f.nan_code(false);
    }
    Some(if neg && !family && f.has_negative_zero() {
        f.sign_mask()
    } else {
        0
    })
}

/// An infinite exact result (draft §4.7.5 and lowprec's conversion rules).
fn infinite(f: &FloatFormat, neg: bool, p: &Projection) -> Option<u64> {
    let pf = is_p3109(f);
    if neg && !f.is_signed() {
        return if pf && p.saturation != Saturation::None {
            Some(0)
        } else {
            f.nan_code(false)
        };
    }
    match p.saturation {
        Saturation::Finite => max_code(f, neg),
        Saturation::Propagate | Saturation::None if f.has_inf() => f.inf_code(neg),
        Saturation::Propagate => max_code(f, neg),
        Saturation::None if pf && p.draft == Draft::V4 => max_code(f, neg),
        Saturation::None => nan_or_max(f, neg),
    }
}

/// A finite value rounded beyond ±max.
fn beyond(f: &FloatFormat, neg: bool, p: &Projection) -> Option<u64> {
    let pf = is_p3109(f);
    if p.saturation != Saturation::None {
        return max_code(f, neg);
    }
    let toward_zero = p.rounding == Rounding::TowardZero
        || (p.rounding == Rounding::TowardNegative && !neg)
        || (p.rounding == Rounding::TowardPositive && neg);
    if toward_zero {
        return max_code(f, neg);
    }
    if pf {
        if p.rounding == Rounding::ToOdd && p.draft == Draft::V4 && !f.is_signed() && f.has_inf() {
            return max_code(f, neg);
        }
        if f.has_inf() {
            return f.inf_code(neg);
        }
        return if p.draft == Draft::V4 {
            max_code(f, neg)
        } else {
            f.nan_code(false)
        };
    }
    if p.rounding == Rounding::ToOdd {
        return max_code(f, neg);
    }
    match f.specials() {
        Specials::Ieee => f.inf_code(neg),
        _ => nan_or_max(f, neg),
    }
}

fn unsigned_negative(f: &FloatFormat, p: &Projection) -> Option<u64> {
    if !is_p3109(f) {
        return f.nan_code(false);
    }
    match (p.saturation, p.rounding) {
        (Saturation::Finite | Saturation::Propagate, _) => Some(0),
        (Saturation::None, Rounding::TowardZero | Rounding::TowardPositive) => Some(0),
        _ => f.nan_code(false),
    }
}

/// The value of magnitude code `c`, with the virtual step beyond max at `max_mag + 1`.
fn mag_value(f: &FloatFormat, c: u64) -> Dy {
    if c <= f.max_mag() {
        Dy::of(f.decode(c))
    } else {
        let step = crate::format::pow2(f.emax() - f.man_bits() as i32);
        Dy::of(f.max_finite()).add(&Dy::of(step))
    }
}

/// The result of a deterministic projection of `r` into `f`, or `None` when a NaN result
/// has no code (formats without NaN), following the definitions directly. Formats without
/// zero (E8M0) are not covered.
fn round(f: &FloatFormat, r: &R, p: &Projection, family: bool) -> Option<u64> {
    let down = p.rounding == Rounding::TowardNegative;
    match r {
        R::Nan => return f.nan_code(false),
        R::Inf(neg) => return infinite(f, *neg, p),
        R::Zero(a, d) => return zero_code(f, if down { *d } else { *a }, family),
        _ => {}
    }
    let neg = r.negative();
    if neg && !f.is_signed() && !is_p3109(f) {
        return f.nan_code(false); // E8M0, UE4M3: negative values are NaN, as in casts
    }
    let mag_cmp = |c: u64| -> Ordering {
        let v = mag_value(f, c);
        let v = if neg {
            Dy {
                n: Int {
                    neg: !v.n.is_zero(),
                    mag: v.n.mag,
                },
                e: v.e,
            }
        } else {
            v
        };
        let o = r.cmp(&v);
        if neg {
            o.reverse()
        } else {
            o
        }
    };
    let top = f.max_mag() + 1;
    if mag_cmp(top) == Ordering::Greater {
        return if neg && !f.is_signed() {
            unsigned_negative(f, p)
        } else {
            beyond(f, neg, p)
        };
    }
    // largest magnitude code with value ≤ |r|: a hint from binary64 (the cast of the
    // approximate value toward zero), checked exactly, else a binary search
    let (mut lo, mut hi) = (0u64, top);
    let a = r.approx().abs();
    if a.is_finite() {
        let rtz = crate::RoundOptions::new(crate::RoundingMode::TowardZero)
            .overflow(crate::Overflow::Saturate);
        if let Ok(c) = f.encode(a, &rtz) {
            let c = c & !f.sign_mask();
            let c0 = c.saturating_sub(2);
            let c1 = (c + 2).min(top);
            if mag_cmp(c0) != Ordering::Less && (c1 == top || mag_cmp(c1) == Ordering::Less) {
                lo = c0;
                hi = c1;
            }
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if mag_cmp(mid) == Ordering::Less {
            hi = mid - 1;
        } else {
            lo = mid;
        }
    }
    let pick = if mag_cmp(lo) == Ordering::Equal {
        lo
    } else {
        let (small, large) = (lo, lo + 1);
        let mid = mag_value(f, small).add(&mag_value(f, large));
        let mid = Dy {
            n: mid.n,
            e: mid.e - 1,
        };
        let mid = if neg {
            Dy {
                n: Int {
                    neg: true,
                    mag: mid.n.mag,
                },
                e: mid.e,
            }
        } else {
            mid
        };
        let m = r.cmp(&mid);
        let m = if neg { m.reverse() } else { m }; // |r| against the midpoint
        let odd = |c: u64| c % 2 == 1;
        let up_toward_pos = !neg;
        match p.rounding {
            Rounding::NearestTiesToEven => match m {
                Ordering::Less => small,
                Ordering::Greater => large,
                Ordering::Equal if odd(small) => large,
                Ordering::Equal => small,
            },
            Rounding::NearestTiesToAway => {
                if m == Ordering::Less {
                    small
                } else {
                    large
                }
            }
            Rounding::TowardPositive => {
                if up_toward_pos {
                    large
                } else {
                    small
                }
            }
            Rounding::TowardNegative => {
                if up_toward_pos {
                    small
                } else {
                    large
                }
            }
            Rounding::TowardZero => small,
            Rounding::ToOdd => {
                if odd(small) {
                    small
                } else {
                    large
                }
            }
            Rounding::StochasticA(_) | Rounding::StochasticB(_) | Rounding::StochasticC(_) => {
                unreachable!("the reference takes deterministic roundings")
            }
        }
    };
    if pick > f.max_mag() {
        return if neg && !f.is_signed() {
            unsigned_negative(f, p)
        } else {
            beyond(f, neg, p)
        };
    }
    if pick == 0 {
        return zero_code(f, neg, family);
    }
    if neg && !f.is_signed() {
        return unsigned_negative(f, p);
    }
    Some(pick | if neg { f.sign_mask() } else { 0 })
}

/// The reference result code of an arithmetic operation (Convert, Negate, Abs, Add, Subtract,
/// Multiply, Divide, FMA, FAA, Sqrt, Recip, RSqrt) on operand values, for a deterministic
/// rounding into a format with zero. `Some(None)` is a NaN result without a code; `None`
/// an operation or projection the reference does not cover.
pub fn arithmetic(
    op: Op,
    operands: &[(FloatFormat, f64)],
    out: &FloatFormat,
    p: &Projection,
) -> Option<Option<u64>> {
    if p.rounding.random_bits() != 0 || !out.has_zero() {
        return None;
    }
    let fmts: Vec<FloatFormat> = operands.iter().map(|o| o.0).collect();
    let family = super::family_p3109(&fmts, out, op);
    let xs: Vec<f64> = operands.iter().map(|o| o.1).collect();
    let r = exact(op, &xs, family)?;
    Some(round(out, &r, p, family))
}

/// As [`arithmetic`] on plain values with the semantics family given (`p3109`).
pub fn arithmetic_in_family(
    op: Op,
    values: &[f64],
    out: &FloatFormat,
    p: &Projection,
    p3109: bool,
) -> Option<Option<u64>> {
    if p.rounding.random_bits() != 0 || !out.has_zero() {
        return None;
    }
    let r = exact(op, values, p3109)?;
    Some(round(out, &r, p, p3109))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_integers_add_multiply_and_compare() {
        let a = Int::from_u64(false, u64::MAX);
        let b = a.mul(&a).add(&Int::from_u64(true, 1));
        // (2^64 − 1)² − 1 = 2^128 − 2^65
        let want = Int::from_u64(false, 1)
            .shl(128)
            .add(&Int::from_u64(true, 1).shl(65));
        assert_eq!(b.cmp(&want), Ordering::Equal);
        assert_eq!(
            Int::from_u64(true, 3).cmp(&Int::from_u64(false, 2)),
            Ordering::Less
        );
    }

    #[test]
    fn the_reference_rounds_a_few_known_cases() {
        let p = Projection::default();
        let f = FloatFormat::BF16;
        let r = arithmetic(Op::Add, &[(f, 1.0), (f, 0.00390625)], &f, &p);
        assert_eq!(r, Some(Some(0x3f80)), "tie to even");
        let up = Projection::new(Rounding::TowardPositive, Saturation::None);
        assert_eq!(
            arithmetic(Op::Add, &[(f, 1.0), (f, 0.00390625)], &f, &up),
            Some(Some(0x3f81))
        );
        let s = arithmetic(
            Op::Sqrt,
            &[(FloatFormat::FP32, 2.0)],
            &FloatFormat::FP32,
            &p,
        );
        assert_eq!(s, Some(Some(2f32.sqrt().to_bits() as u64)));
        let q = arithmetic(
            Op::Divide,
            &[(FloatFormat::FP32, 1.0), (FloatFormat::FP32, 3.0)],
            &FloatFormat::FP32,
            &p,
        );
        assert_eq!(q, Some(Some((1f32 / 3.0).to_bits() as u64)));
    }
}
