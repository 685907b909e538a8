//! Exact results of the arithmetic operations, before their one rounding.
//!
//! Every operand is a binary64 value `s · 2^e` (`s < 2^53`), so sums, products, quotients
//! and roots are computed with integers only:
//!
//! * sums of up to three terms (Add, Subtract, FAA, and FMA's product plus addend) in a
//!   fixed-point accumulator spanning exactly the terms' bits (at most 4,300 bits for
//!   binary64 products), so no term is ever rounded;
//! * products as `u128`;
//! * quotients and square roots as integer quotients and integer roots of the operands'
//!   significands shifted left, at least [`KEEP`] bits, with the remainder kept as a sticky
//!   bit.
//!
//! The result is a [`Wide`]: `|v| = (sig + δ) · 2^exp` with `δ = 0` when `sticky` is false and
//! `0 < δ < 1` when it is true. A `Wide` with `sticky` set carries at least [`KEEP`]
//! significant bits, enough to round it once, exactly, to any precision up to 53 bits with
//! up to 32 random bits of stochastic rounding.

use std::cmp::Ordering;

/// Significant bits a sticky [`Wide`] carries at least.
pub const KEEP: u32 = 100;

/// An exact or sticky-truncated nonzero magnitude with its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide {
    /// Sign of the exact value.
    pub neg: bool,
    /// The integer significand (nonzero unless the exact value is 0).
    pub sig: u128,
    /// The exponent of `sig`'s last bit.
    pub exp: i32,
    /// Whether the exact value lies strictly between `sig · 2^exp` and `(sig + 1) · 2^exp`.
    pub sticky: bool,
}

impl Wide {
    /// The exact value `sig · 2^exp` with a sign.
    pub fn exact(neg: bool, sig: u128, exp: i32) -> Wide {
        Wide {
            neg,
            sig,
            exp,
            sticky: false,
        }
    }

    /// Whether the value is exactly zero.
    pub fn is_zero(&self) -> bool {
        self.sig == 0 && !self.sticky
    }

    /// `⌊log2 |v|⌋` (for a nonzero value).
    pub fn msb(&self) -> i32 {
        self.exp + 127 - self.sig.leading_zeros() as i32
    }

    /// The nearest binary64 value (for display; not used for rounding).
    pub fn to_f64(&self) -> f64 {
        let top = self.sig.checked_ilog2().map_or(0, |b| b as i32);
        let shift = (top - 60).max(0);
        let s = (self.sig >> shift) as f64;
        let v = s * crate::format::pow2(self.exp + shift);
        let v = if v == 0.0 && self.sig != 0 {
            // scaled in two steps for results near binary64's underflow
            s * crate::format::pow2((self.exp + shift) / 2)
                * crate::format::pow2(self.exp + shift - (self.exp + shift) / 2)
        } else {
            v
        };
        if self.neg {
            -v
        } else {
            v
        }
    }
}

/// The sign, integer significand and exponent of a finite nonzero binary64 value.
pub fn split(v: f64) -> (bool, u64, i32) {
    let bits = v.to_bits();
    let field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let neg = bits >> 63 != 0;
    if field == 0 {
        (neg, frac, -1074)
    } else {
        (neg, frac | (1u64 << 52), field - 1075)
    }
}

/// One term of an exact sum: sign, magnitude `sig · 2^exp`.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    /// Sign.
    pub neg: bool,
    /// Magnitude's integer significand.
    pub sig: u128,
    /// Exponent of its last bit.
    pub exp: i32,
}

const LIMBS: usize = 72;

/// The exact sum of `terms`, as a [`Wide`] (exponent and sign of a zero sum unspecified:
/// the caller decides the sign of zero).
pub fn sum(terms: &[Term]) -> Wide {
    let live = terms.iter().filter(|t| t.sig != 0);
    let Some(lo) = live.clone().map(|t| t.exp).min() else {
        return Wide::exact(false, 0, 0);
    };
    let mut pos = [0u64; LIMBS];
    let mut neg = [0u64; LIMBS];
    let mut top = 0usize;
    for t in live {
        let off = (t.exp - lo) as usize;
        let (limb, bit) = (off / 64, (off % 64) as u32);
        let acc = if t.neg { &mut neg } else { &mut pos };
        // sig << bit spans three limbs
        let lo_part = t.sig << bit;
        let hi_part = if bit == 0 {
            0
        } else {
            (t.sig >> (128 - bit)) as u64
        };
        let parts = [lo_part as u64, (lo_part >> 64) as u64, hi_part];
        let mut carry = 0u64;
        let mut i = limb;
        for p in parts {
            let (s1, c1) = acc[i].overflowing_add(p);
            let (s2, c2) = s1.overflowing_add(carry);
            acc[i] = s2;
            carry = (c1 | c2) as u64;
            i += 1;
        }
        while carry != 0 {
            let (s, c) = acc[i].overflowing_add(carry);
            acc[i] = s;
            carry = c as u64;
            i += 1;
        }
        top = top.max(i + 1);
    }
    let top = top.min(LIMBS);
    let cmp = (0..top)
        .rev()
        .map(|i| pos[i].cmp(&neg[i]))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal);
    let (big, small, negative) = match cmp {
        Ordering::Equal => return Wide::exact(false, 0, 0),
        Ordering::Greater => (&pos, &neg, false),
        Ordering::Less => (&neg, &pos, true),
    };
    let mut mag = [0u64; LIMBS];
    let mut borrow = 0u64;
    for i in 0..top {
        let (d1, b1) = big[i].overflowing_sub(small[i]);
        let (d2, b2) = d1.overflowing_sub(borrow);
        mag[i] = d2;
        borrow = (b1 | b2) as u64;
    }
    let hi = (0..top).rev().find(|&i| mag[i] != 0).unwrap_or(0);
    let msb = hi as u32 * 64 + 63 - mag[hi].leading_zeros(); // global bit index
    let bit = |i: u32| -> u64 { (mag[(i / 64) as usize] >> (i % 64)) & 1 };
    if msb < 127 {
        let sig = (mag[0] as u128) | ((mag[1] as u128) << 64);
        return Wide::exact(negative, sig, lo);
    }
    // keep bits [msb − 126, msb]
    let base = msb - 126;
    let mut sig = 0u128;
    for k in 0..127 {
        sig |= (bit(base + k) as u128) << k;
    }
    let (limb, off) = ((base / 64) as usize, base % 64);
    let sticky = mag[..limb].iter().any(|&x| x != 0) || (mag[limb] & ((1u64 << off) - 1)) != 0;
    Wide {
        neg: negative,
        sig,
        exp: lo + base as i32,
        sticky,
    }
}

/// `⌊2^k · n / d⌋` and whether the remainder is nonzero, for `n, d < 2^64`, `d > 0` and a
/// quotient below `2^128` (long division, 64 bits at a time).
fn div_shifted(n: u64, d: u64, k: u32) -> (u128, bool) {
    let d = d as u128;
    let mut q: u128 = n as u128 / d;
    let mut r: u128 = n as u128 % d;
    let mut left = k;
    while left > 0 {
        let s = left.min(64);
        let num = r << s;
        q = (q << s) | (num / d);
        r = num % d;
        left -= s;
    }
    (q, r != 0)
}

/// The exact quotient `|x| / |y|` of nonzero finite binary64 values, with at least
/// [`KEEP`] bits when inexact.
pub fn quotient(x: f64, y: f64) -> Wide {
    let (nx, sx, ex) = split(x);
    let (ny, sy, ey) = split(y);
    // normalise both significands to 53 bits
    let lx = sx.leading_zeros() - 11;
    let ly = sy.leading_zeros() - 11;
    let (sx, ex) = (sx << lx, ex - lx as i32);
    let (sy, ey) = (sy << ly, ey - ly as i32);
    let k = 110;
    let (q, sticky) = div_shifted(sx, sy, k);
    Wide {
        neg: nx != ny,
        sig: q,
        exp: ex - ey - k as i32,
        sticky,
    }
}

/// A 256-bit unsigned integer as (high, low) halves, for integer square roots.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct U256(u128, u128);

impl U256 {
    fn add(self, o: U256) -> U256 {
        let (lo, c) = self.1.overflowing_add(o.1);
        U256(self.0 + o.0 + c as u128, lo)
    }
    fn shl(self, s: u32) -> U256 {
        match s {
            0 => self,
            1..=127 => U256((self.0 << s) | (self.1 >> (128 - s)), self.1 << s),
            _ => U256(self.1 << (s - 128), 0),
        }
    }
}

/// The full product `a · b` of two 128-bit integers.
fn mul_wide(a: u128, b: u128) -> U256 {
    let (a1, a0) = (a >> 64, a & u128::from(u64::MAX));
    let (b1, b0) = (b >> 64, b & u128::from(u64::MAX));
    let (p1, p2) = (a0 * b1, a1 * b0);
    U256(a1 * b1, a0 * b0)
        .add(U256(p1 >> 64, p1 << 64))
        .add(U256(p2 >> 64, p2 << 64))
}

/// `y` moved to `⌊√r⌋` by unit steps, each justified by an exact square: down while
/// `y² > r`, up while `(y + 1)² ≤ r`. The estimates given to it are off by a few units at
/// most; its result is exact whatever they are.
fn settle(mut y: u128, r: U256) -> u128 {
    while mul_wide(y, y) > r {
        y -= 1;
    }
    while y < u128::MAX && mul_wide(y + 1, y + 1) <= r {
        y += 1;
    }
    y
}

/// `⌊√h⌋` of a 128-bit integer: a binary64 estimate (relative error about 2^−52), one
/// Newton step `(y + h / y) / 2` (error below a unit), then [`settle`].
fn isqrt_u128(h: u128) -> u128 {
    let y = (h as f64).sqrt() as u128;
    let y = if y == 0 { 0 } else { (y + h / y) / 2 };
    settle(y.min(u64::MAX as u128), U256(0, h))
}

/// `⌊√r⌋` and whether `r` is not a perfect square. With `r` scaled by `4^k` so that its high
/// half `h` is at least 2^126: `s₁ = ⌊√h⌋`, `ρ = h − s₁²`, and the low half's root digit
/// `q ≈ (ρ · 2^128 + l) / (2 · s₁ · 2^64)` (one division: the Karatsuba square root's step);
/// `⌊√(r · 4^k)⌋ = s₁ · 2^64 + q` up to a few units, which [`settle`] removes, and
/// `⌊√r⌋ = ⌊√(r · 4^k)⌋ >> k`.
fn isqrt(r: U256) -> (u128, bool) {
    let root = if r.0 == 0 {
        isqrt_u128(r.1)
    } else {
        let k = r.0.leading_zeros() / 2;
        let n = r.shl(2 * k);
        let s1 = isqrt_u128(n.0);
        let rho = n.0 - s1 * s1; // ≤ 2 s₁ < 2^65
                                 // (ρ · 2^63 + l / 2^65) / s₁ < 2^128: no overflow (ρ ≤ 2^65 − 2)
        let q = ((rho << 63) + (n.1 >> 65)) / s1;
        settle((s1 << 64).saturating_add(q), n) >> k
    };
    (root, mul_wide(root, root) != r)
}

/// `√(s · 2^e)` for `s < 2^64` (nonzero), with at least [`KEEP`] bits when inexact.
fn root(s: u128, e: i32) -> Wide {
    // s · 2^e = (s · 2^(2j + odd)) · 2^(e − 2j − odd): radicand of about 240 bits
    let b = 128 - s.leading_zeros() as i32;
    let mut sh = 240 - b;
    if (e - sh) % 2 != 0 {
        sh -= 1;
    }
    let r = U256(0, s).shl(sh as u32);
    let (q, sticky) = isqrt(r);
    Wide {
        neg: false,
        sig: q,
        exp: (e - sh) / 2,
        sticky,
    }
}

/// The exact square root of a positive finite binary64 value.
pub fn square_root(x: f64) -> Wide {
    let (_, s, e) = split(x);
    root(s as u128, e)
}

/// The exact `1/√x` of a positive finite binary64 value: `√(2^(2k) / s) · 2^(−k − e/2)`, from
/// the integer root of `⌊2^(2k) / s⌋` (`⌊√⌊t⌋⌋ = ⌊√t⌋`), exact only when both steps are.
pub fn reciprocal_root(x: f64) -> Wide {
    let (_, s, e) = split(x);
    let l = s.leading_zeros() - 11;
    let (s, e) = (s << l, e - l as i32); // 53-bit significand
                                         // t = 2^k / s with k making t about 2^200 (k − e even)
    let mut k: u32 = 262;
    if (k as i32 + e) % 2 != 0 {
        k += 1;
    }
    // 2^k / s = 2^(k−64)·2^64 / s: quotient of 2^64 by s shifted by k − 64
    let (q_hi, r1) = div_pow2(s, k);
    let (root_q, inexact_root) = isqrt(q_hi);
    Wide {
        neg: false,
        sig: root_q,
        exp: -((k as i32 + e) / 2),
        sticky: r1 || inexact_root,
    }
}

/// `⌊2^k / s⌋` as a [`U256`] (below 2^256) and whether the remainder is nonzero.
fn div_pow2(s: u64, k: u32) -> (U256, bool) {
    let d = s as u128;
    let mut q = U256(0, 0);
    let mut r: u128 = 1;
    let mut left = k;
    while left > 0 {
        let st = left.min(64);
        let num = r << st;
        q = q.shl(st).add(U256(0, num / d));
        r = num % d;
        left -= st;
    }
    (q, r != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cancel_exactly_across_the_whole_range() {
        let big = Term {
            neg: false,
            sig: 1,
            exp: 1000,
        };
        let tiny = Term {
            neg: false,
            sig: 3,
            exp: -1074,
        };
        let minus = Term {
            neg: true,
            sig: 1,
            exp: 1000,
        };
        let w = sum(&[big, tiny, minus]);
        assert_eq!((w.sig, w.exp, w.sticky, w.neg), (3, -1074, false, false));
        let w = sum(&[big, tiny]);
        assert!(w.sticky && w.msb() == 1000 && w.sig >> 126 == 1);
        let w = sum(&[minus, tiny]); // −2^1000 + tiny: just below 2^1000 in magnitude
        assert!(w.neg && w.sticky && w.msb() == 999);
    }

    #[test]
    fn quotients_and_roots_satisfy_their_definitions() {
        for (x, y) in [
            (1.0, 3.0),
            (2.0, 7.0),
            (1.5, 1.25),
            (1e-300, 3e300),
            (9.0, 3.0),
        ] {
            let q = quotient(x, y);
            // q·y ≤ x < (q+1)·y, checked in binary64 on the top bits
            let approx = q.to_f64();
            assert!((approx - x / y).abs() <= (x / y).abs() * 1e-15, "{x}/{y}");
        }
        assert!(quotient(1.0, 3.0).sticky && !quotient(9.0, 3.0).sticky);
        assert_eq!(quotient(9.0, 3.0).to_f64(), 3.0);
        let r = square_root(2.0);
        assert!(r.sticky);
        assert!((r.to_f64() - 2f64.sqrt()).abs() < 1e-15);
        let r = square_root(16.0);
        assert!(!r.sticky && r.to_f64() == 4.0);
        let r = reciprocal_root(4.0);
        assert!(!r.sticky && r.to_f64() == 0.5, "{r:?}");
        let r = reciprocal_root(2.0);
        assert!(r.sticky && (r.to_f64() - 0.5f64.sqrt()).abs() < 1e-15);
        assert!(r.sig.ilog2() >= KEEP);
    }

    /// What only the digit-by-digit root needs.
    impl U256 {
        fn sub(self, o: U256) -> U256 {
            let (lo, b) = self.1.overflowing_sub(o.1);
            U256(self.0 - o.0 - b as u128, lo)
        }
        fn shr(self, s: u32) -> U256 {
            match s {
                0 => self,
                1..=127 => U256(self.0 >> s, (self.1 >> s) | (self.0 << (128 - s))),
                _ => U256(0, self.0 >> (s - 128)),
            }
        }
        fn is_zero(self) -> bool {
            self.0 == 0 && self.1 == 0
        }
        fn bits(self) -> u32 {
            if self.0 != 0 {
                256 - self.0.leading_zeros()
            } else {
                128 - self.1.leading_zeros()
            }
        }
    }

    /// The digit-by-digit root, two bits per step: the reference for [`isqrt`].
    fn isqrt_digits(r: U256) -> (u128, bool) {
        let mut rem = r;
        let mut res = U256(0, 0);
        let mut bit = U256(0, 1).shl((r.bits().max(1) - 1) & !1);
        while !bit.is_zero() {
            let t = res.add(bit);
            if rem >= t {
                rem = rem.sub(t);
                res = res.shr(1).add(bit);
            } else {
                res = res.shr(1);
            }
            bit = bit.shr(2);
        }
        (res.1, !rem.is_zero())
    }

    #[test]
    fn integer_roots_equal_the_digit_by_digit_roots() {
        let mut z = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 31)
        };
        let mut cases = vec![
            U256(0, 0),
            U256(0, 1),
            U256(0, 2),
            U256(u128::MAX, u128::MAX),
        ];
        for _ in 0..20_000 {
            let w = |x: u64, y: u64| (u128::from(x) << 64) | u128::from(y);
            let r = U256(w(next(), next()), w(next(), next()));
            // every width from 1 to 256 bits
            let r = r.shr((next() % 256) as u32);
            cases.push(r);
            // perfect squares and their neighbours
            let y = w(next(), next()) >> (next() % 128);
            let sq = mul_wide(y, y);
            cases.push(sq);
            cases.push(sq.add(U256(0, 1)));
            if !sq.is_zero() {
                cases.push(sq.sub(U256(0, 1)));
            }
        }
        for r in cases {
            assert_eq!(isqrt(r), isqrt_digits(r), "{:#x} {:#x}", r.0, r.1);
        }
    }
}
