//! Exact numeric input: decimal strings of any length (`1.00390625000000000001`,
//! `6.02214076e23`), hexadecimal floats (`0x1.8p-3`), `inf` and `nan`, kept as the exact
//! rational they denote and rounded **once** into a format.
//!
//! Parsing a decimal through binary64 first rounds twice: `1.00390625000000000001` is above
//! the bfloat16 tie `1 + 2^-8`, but binary64 rounds it onto the tie, and bfloat16's
//! nearest-even then gives 1 instead of 1.0078125. Here the number is reduced exactly, with
//! big integers, to its binary64 truncation `t`, the position of the remainder against half
//! an ulp, and whether the remainder is zero. From those:
//!
//! * binary64 itself is rounded in any deterministic mode exactly;
//! * any narrower format `F` (precision `p ≤ 51`, quantum at least `2^-1072`: every preset
//!   and custom format except binary64) is rounded from the round-to-odd value
//!   `RO_53(x)` = `t` with its last bit set when the remainder is not zero, which is exact
//!   for every deterministic mode since `RN_p(RO_q(x)) = RN_p(x)` for `q ≥ p + 2` (and
//!   directed and odd rounding need `q ≥ p + 1`); stochastic rounding sees the same bits as
//!   for a binary64 input.
//!
//! Values beyond binary64's range are carried as `±max` with the remainder "above half": they
//! overflow in every format as the exact value would; values below half of binary64's
//! smallest subnormal as `0` with a nonzero remainder below half.

use crate::error::{Error, Result};
use crate::format::FloatFormat;
use crate::round::{RoundOptions, RoundingMode};
use std::cmp::Ordering;

/// A number as written: the exact value of a decimal or hexadecimal literal, or ±Inf, NaN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exact {
    neg: bool,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Nan,
    Inf,
    /// `digits × radix^exp`, `radix` 10 for decimals, 2 for hexadecimal floats.
    Finite {
        digits: Big,
        exp: i64,
        radix: u32,
    },
}

/// Binary64 rounding data of an exact value: its truncation toward zero (a magnitude),
/// how the remainder compares with half an ulp, and whether it is zero.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Parts {
    trunc: f64,
    half: Ordering,
    sticky: bool,
}

/// Decimal exponents beyond which every value overflows or underflows binary64 (with the
/// digit count added), so that no power of ten larger than this is ever built.
const DEC_LIMIT: i64 = 400;

/// Significant digits kept of a literal (the rest only says whether it is zero).
const MAX_DIGITS: usize = 800;

impl Exact {
    /// Parse a literal: an optional sign, then decimal digits with an optional point and
    /// `e`/`E` exponent, or `0x` hexadecimal digits with an optional point and a `p`
    /// (binary) exponent, or `inf`/`infinity`/`nan` (any case). `_` may separate digits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the literal and the accepted forms.
    ///
    /// ```
    /// use lowprec::{exact::Exact, FloatFormat, RoundOptions};
    /// let x = Exact::parse("1.00390625000000000001").unwrap();
    /// // above the bfloat16 tie 1 + 2^-8: nearest is the upper neighbour
    /// assert_eq!(FloatFormat::BF16.round_exact(&x, &RoundOptions::default()), 1.0078125);
    /// // through binary64 it would be 1 (a double rounding)
    /// assert_eq!(FloatFormat::BF16.round(1.00390625000000000001, &RoundOptions::default()), 1.0);
    /// assert_eq!(Exact::parse("0x1.8p-3").unwrap().to_f64(), 0.1875);
    /// ```
    pub fn parse(s: &str) -> Result<Exact> {
        let bad = || {
            Error::InvalidArgument(format!(
                "`{s}` is not a number: write a decimal (0.1, -3e5, 1.00390625000000000001), a \
                 hexadecimal float (0x1.8p-3), inf or nan"
            ))
        };
        let t = s.trim();
        let (neg, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let lower = body.to_ascii_lowercase();
        match lower.as_str() {
            "inf" | "infinity" => {
                return Ok(Exact {
                    neg,
                    kind: Kind::Inf,
                })
            }
            "nan" => {
                return Ok(Exact {
                    neg,
                    kind: Kind::Nan,
                })
            }
            _ => {}
        }
        let (radix, digits_part, exp_part) = if let Some(h) = lower.strip_prefix("0x") {
            match h.split_once('p') {
                Some((m, e)) => (16u32, m, Some(e)),
                None => (16, h, None),
            }
        } else {
            match lower.split_once('e') {
                Some((m, e)) => (10, m, Some(e)),
                None => (10, lower.as_str(), None),
            }
        };
        let (int, frac) = digits_part.split_once('.').unwrap_or((digits_part, ""));
        let clean = |p: &str| -> Result<Vec<u32>> {
            p.chars()
                .filter(|&c| c != '_')
                .map(|c| c.to_digit(radix).ok_or_else(bad))
                .collect()
        };
        let (int, frac) = (clean(int)?, clean(frac)?);
        if int.is_empty() && frac.is_empty() {
            return Err(bad());
        }
        let e: i64 = match exp_part {
            None => 0,
            Some(e) => {
                let (sign, mag) = match e.as_bytes().first() {
                    Some(b'+') => (1, &e[1..]),
                    Some(b'-') => (-1, &e[1..]),
                    _ => (1, e),
                };
                if mag.is_empty() || !mag.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                // beyond ±2^50 every value is 0 or overflows: saturate instead of failing
                sign * mag.parse::<i64>().unwrap_or(1 << 50).min(1 << 50)
            }
        };
        if radix == 16 && exp_part.is_none() {
            // `0x…` without a `p` exponent is not a float (the CLI reads it as bits)
            return Err(bad());
        }
        // every digit, and the exponent of the last one's place in `radix` units
        let mut all: Vec<u32> = int;
        let frac_len = frac.len() as i64;
        all.extend(frac);
        // leading zeros change nothing; beyond MAX_DIGITS significant digits only whether the
        // rest is zero matters (binary64's longest exact midpoint has 767 significant decimal
        // digits), so the rest becomes one nonzero digit one place further
        let first = all.iter().position(|&d| d != 0).unwrap_or(all.len());
        let sig = &all[first..];
        let keep = sig.len().min(MAX_DIGITS);
        let mut digits = Big::zero();
        for &d in &sig[..keep] {
            digits.mul_add_small(radix, d);
        }
        let mut dropped = (sig.len() - keep) as i64;
        if sig[keep..].iter().any(|&d| d != 0) {
            digits.mul_add_small(radix, 1);
            dropped -= 1;
        }
        let unit = if radix == 16 { 4 } else { 1 }; // a hex digit is 2^4
        let exp = e.saturating_add(unit * (dropped - frac_len));
        let kind = Kind::Finite {
            digits,
            exp,
            radix: if radix == 16 { 2 } else { 10 },
        };
        Ok(Exact { neg, kind })
    }

    /// The exact value of a binary64 number (its sign included; any NaN is NaN).
    ///
    /// ```
    /// use lowprec::exact::Exact;
    /// assert_eq!(Exact::from_f64(0.1).to_f64(), 0.1);
    /// assert_eq!(Exact::from_f64(-0.0).to_f64().to_bits(), (-0.0f64).to_bits());
    /// ```
    pub fn from_f64(v: f64) -> Exact {
        let neg = v.is_sign_negative();
        let bits = v.to_bits();
        let (e, f) = ((bits >> 52) & 0x7ff, bits & ((1 << 52) - 1));
        let kind = match e {
            0x7ff if f != 0 => Kind::Nan,
            0x7ff => Kind::Inf,
            _ => {
                // subnormals: f · 2^-1074; normals: (2^52 + f) · 2^(e − 1075)
                let (m, exp) = if e == 0 {
                    (f, -1074)
                } else {
                    (f | 1 << 52, e as i64 - 1075)
                };
                Kind::Finite {
                    digits: Big(vec![m as u32, (m >> 32) as u32]).trim(),
                    exp,
                    radix: 2,
                }
            }
        };
        Exact { neg, kind }
    }

    /// Whether the literal is a NaN.
    pub fn is_nan(&self) -> bool {
        self.kind == Kind::Nan
    }

    /// The value rounded to binary64, nearest even (as Rust's own parsing gives it).
    pub fn to_f64(&self) -> f64 {
        self.to_f64_mode(RoundingMode::NearestEven)
    }

    /// The value truncated toward zero to binary64 (with its sign) and whether the
    /// truncation was inexact; `(±Inf, false)` for infinities and `(NaN, false)` for NaN.
    /// Values beyond binary64's range give `(±MAX, true)`, values below its smallest
    /// subnormal `(±0, true)`.
    ///
    /// ```
    /// let x = lowprec::exact::Exact::parse("0.1").unwrap();
    /// let (t, sticky) = x.to_f64_sticky();
    /// assert!(sticky && t < 0.1 && f64::from_bits(t.to_bits() + 1) == 0.1);
    /// ```
    pub fn to_f64_sticky(&self) -> (f64, bool) {
        let sign = if self.neg { -1.0 } else { 1.0 };
        match self.parts() {
            None if self.is_nan() => (f64::NAN, false),
            None => (sign * f64::INFINITY, false),
            Some(p) => (sign * p.trunc, p.sticky),
        }
    }

    /// The value rounded to binary64 in a deterministic `mode` (stochastic rounding gives the
    /// round-to-odd value, which [`FloatFormat::round_exact`] rounds on).
    pub fn to_f64_mode(&self, mode: RoundingMode) -> f64 {
        let sign = if self.neg { -1.0 } else { 1.0 };
        let p = match self.parts() {
            None => {
                return if self.is_nan() {
                    f64::NAN
                } else {
                    sign * f64::INFINITY
                }
            }
            Some(p) => p,
        };
        let away = || f64::from_bits(p.trunc.to_bits() + 1); // MAX + 1 ulp is Inf
        let odd = p.trunc.to_bits() & 1 == 1;
        let up = match mode {
            RoundingMode::NearestEven => {
                p.half == Ordering::Greater || (p.half == Ordering::Equal && odd)
            }
            RoundingMode::NearestAway => p.half != Ordering::Less,
            RoundingMode::TowardZero => false,
            RoundingMode::Up => p.sticky && !self.neg,
            RoundingMode::Down => p.sticky && self.neg,
            RoundingMode::ToOdd | RoundingMode::Stochastic => p.sticky && !odd,
        };
        sign * if up { away() } else { p.trunc }
    }

    /// The round-to-odd binary64 value: the truncation with its last bit set when inexact.
    fn to_f64_odd(&self) -> f64 {
        self.to_f64_mode(RoundingMode::ToOdd)
    }

    /// Binary64 rounding data of a finite value (`None` for NaN and Inf).
    fn parts(&self) -> Option<Parts> {
        let Kind::Finite { digits, exp, radix } = &self.kind else {
            return None;
        };
        if digits.is_zero() {
            return Some(Parts {
                trunc: 0.0,
                half: Ordering::Less,
                sticky: false,
            });
        }
        let beyond = Parts {
            trunc: f64::MAX,
            half: Ordering::Greater,
            sticky: true,
        };
        let below = Parts {
            trunc: 0.0,
            half: Ordering::Less,
            sticky: true,
        };
        // x = num / den exactly, both big integers
        let (num, den) = if *radix == 10 {
            let nd = digits.bits() as i64; // digits < 2^nd < 10^nd
            let top = exp + (nd as f64 * std::f64::consts::LOG10_2).ceil() as i64 + 1;
            if top < -(DEC_LIMIT - 70) {
                return Some(below); // x < 10^-330 < 2^-1075
            }
            if exp - 1 > DEC_LIMIT - 90 {
                return Some(beyond); // x ≥ 10^309 > 2^1024
            }
            if *exp >= 0 {
                (digits.mul_pow10(*exp as u32), Big::one())
            } else {
                (digits.clone(), Big::one().mul_pow10((-exp) as u32))
            }
        } else {
            let nb = digits.bits() as i64;
            if exp + nb < -1080 {
                return Some(below);
            }
            if exp + nb > 1030 {
                return Some(beyond);
            }
            if *exp >= 0 {
                (digits.shl(*exp as u32), Big::one())
            } else {
                (digits.clone(), Big::one().shl((-exp) as u32))
            }
        };
        // e = floor(log2 x): 2^e ≤ num/den < 2^(e+1)
        let mut e = num.bits() as i64 - den.bits() as i64;
        if num.cmp_shifted(&den, e) == Ordering::Less {
            e -= 1;
        }
        if e > 1023 {
            return Some(beyond);
        }
        // quantum 2^qe: 53 bits in the normal range, the subnormal quantum below it
        let qe = e.max(-1022) - 52;
        // q = floor(x / 2^qe), r = x − q·2^qe, as num·2^-qe = q·den + r
        let (scaled_num, scaled_den) = if qe <= 0 {
            (num.shl((-qe) as u32), den)
        } else {
            (num, den.shl(qe as u32))
        };
        let (q, r) = scaled_num.div_small_quotient(&scaled_den, 55);
        let half = r.shl(1).cmp(&scaled_den);
        let trunc = q as f64 * crate::format::pow2(qe as i32);
        Some(Parts {
            trunc,
            half,
            sticky: !r.is_zero(),
        })
    }
}

impl FloatFormat {
    /// Whether round-to-odd binary64 carries enough bits to round an exact value into this
    /// format once: precision `≤ 51` and a quantum of at least `2^-1072` everywhere.
    fn odd_binary64_suffices(&self) -> bool {
        self.man_bits() <= 50 && self.emin() - self.man_bits() as i32 >= -1072
    }

    /// Round an exact literal into this format once (see the [`crate::exact`] module).
    ///
    /// ```
    /// use lowprec::{exact::Exact, FloatFormat, RoundOptions, RoundingMode};
    /// // the decimal 0.1 lies between two binary64 numbers; 0.1f64 is the one above it
    /// let x = Exact::parse("0.1").unwrap();
    /// let (up, down) = (RoundOptions::new(RoundingMode::Up), RoundOptions::new(RoundingMode::Down));
    /// assert_eq!(FloatFormat::FP64.round_exact(&x, &up), 0.1f64);
    /// assert_eq!(FloatFormat::FP64.round_exact(&x, &down), 0.1f64.next_down());
    /// ```
    pub fn round_exact(&self, x: &Exact, opts: &RoundOptions) -> f64 {
        self.round(self.binary64_for(x, opts), opts)
    }

    /// Encode an exact literal into this format once.
    ///
    /// # Errors
    ///
    /// As [`FloatFormat::encode`] (a NaN into a format without NaN).
    pub fn encode_exact(&self, x: &Exact, opts: &RoundOptions) -> Result<u64> {
        self.encode(self.binary64_for(x, opts), opts)
    }

    /// The binary64 value that this format's rounding of `x` may start from: round-to-odd
    /// where that suffices, else `x` rounded to binary64 in the same mode (binary64 itself).
    fn binary64_for(&self, x: &Exact, opts: &RoundOptions) -> f64 {
        if self.odd_binary64_suffices() || opts.mode == RoundingMode::Stochastic {
            x.to_f64_odd()
        } else {
            x.to_f64_mode(opts.mode)
        }
    }
}

impl FloatFormat {
    /// The shortest decimal string that reads back (nearest even, [`Exact::parse`]) to the
    /// value of `code` in this format: `0.1` for binary8p4se's 0.1015625, since every number
    /// nearer to it than to its neighbours names it. `inf`, `-inf`, `nan` for the specials.
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// let f = FloatFormat::BINARY8P4SE;
    /// let c = f.encode(0.1, &Default::default()).unwrap();
    /// assert_eq!(f.decode(c), 0.1015625);
    /// assert_eq!(f.shortest_decimal(c), "0.1");
    /// assert_eq!(FloatFormat::BF16.shortest_decimal(0x4049), "3.14");
    /// ```
    pub fn shortest_decimal(&self, code: u64) -> String {
        let v = self.decode(code);
        if v.is_nan() {
            return "nan".into();
        }
        if v.is_infinite() {
            return if v < 0.0 { "-inf" } else { "inf" }.into();
        }
        if v == 0.0 {
            return if v.is_sign_negative() { "-0" } else { "0" }.into();
        }
        let opts = RoundOptions::default();
        for digits in 1..=17usize {
            let sci = format!("{:.*e}", digits - 1, v);
            let Ok(x) = Exact::parse(&sci) else { continue };
            if self.round_exact(&x, &opts).to_bits() == v.to_bits() {
                return plain_decimal(&sci);
            }
        }
        format!("{v:e}")
    }
}

/// `d.ddde±X` written without the exponent when `−5 ≤ X < 17`.
fn plain_decimal(sci: &str) -> String {
    let Some((mant, exp)) = sci.split_once('e') else {
        return sci.to_string();
    };
    let Ok(e) = exp.parse::<i32>() else {
        return sci.to_string();
    };
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    if !(-5..17).contains(&e) {
        return sci.to_string();
    }
    let body = if e < 0 {
        format!("0.{}{}", "0".repeat((-e - 1) as usize), digits)
    } else {
        let point = (e + 1) as usize;
        if digits.len() <= point {
            format!("{}{}", digits, "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// A little-endian big unsigned integer of 32-bit limbs, with the few operations exact
/// parsing needs. Plain and slow (quadratic); the numbers are literals.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn zero() -> Big {
        Big(vec![])
    }

    fn one() -> Big {
        Big(vec![1])
    }

    fn trim(mut self) -> Big {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        self
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&l| l == 0)
    }

    /// Significant bits (0 for zero).
    fn bits(&self) -> u64 {
        match self.0.iter().rposition(|&l| l != 0) {
            None => 0,
            Some(i) => i as u64 * 32 + (32 - self.0[i].leading_zeros()) as u64,
        }
    }

    /// `self · m + a`.
    fn mul_add_small(&mut self, m: u32, a: u32) {
        let mut carry = a as u64;
        for l in &mut self.0 {
            let v = *l as u64 * m as u64 + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    /// `self · 10^n`.
    fn mul_pow10(&self, n: u32) -> Big {
        let mut r = self.clone();
        let mut left = n;
        while left > 0 {
            let k = left.min(9);
            r.mul_add_small(10u32.pow(k), 0);
            left -= k;
        }
        r
    }

    /// `self · 2^n`.
    fn shl(&self, n: u32) -> Big {
        let (words, bits) = ((n / 32) as usize, n % 32);
        let mut r = vec![0u32; words];
        let mut carry = 0u32;
        for &l in &self.0 {
            if bits == 0 {
                r.push(l);
            } else {
                r.push((l << bits) | carry);
                carry = l >> (32 - bits);
            }
        }
        if carry != 0 {
            r.push(carry);
        }
        Big(r).trim()
    }

    /// `self − o` for `o ≤ self`.
    fn sub(&self, o: &Big) -> Big {
        let mut r = self.0.clone();
        let mut borrow = 0i64;
        for (i, l) in r.iter_mut().enumerate() {
            let v = *l as i64 - o.0.get(i).copied().unwrap_or(0) as i64 - borrow;
            borrow = (v < 0) as i64;
            *l = v.rem_euclid(1 << 32) as u32;
        }
        debug_assert_eq!(borrow, 0, "Big::sub underflow");
        Big(r).trim()
    }

    /// Compare `self` with `o · 2^s` (`s` may be negative: then `self · 2^-s` with `o`).
    fn cmp_shifted(&self, o: &Big, s: i64) -> Ordering {
        if s >= 0 {
            self.cmp(&o.shl(s as u32))
        } else {
            self.shl((-s) as u32).cmp(o)
        }
    }

    /// `(floor(self / d), self mod d)` for a quotient below `2^bits` (`bits ≤ 63`).
    fn div_small_quotient(&self, d: &Big, bits: u32) -> (u64, Big) {
        let mut r = self.clone().trim();
        let mut q = 0u64;
        for i in (0..bits).rev() {
            let t = d.shl(i);
            if r >= t {
                r = r.sub(&t);
                q |= 1 << i;
            }
        }
        debug_assert!(r < *d, "quotient wider than {bits} bits");
        (q, r)
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, o: &Big) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Big {
    fn cmp(&self, o: &Big) -> Ordering {
        let (a, b) = (self.clone().trim(), o.clone().trim());
        a.0.len()
            .cmp(&b.0.len())
            .then_with(|| a.0.iter().rev().cmp(b.0.iter().rev()))
    }
}

impl std::str::FromStr for Exact {
    type Err = Error;
    /// As [`Exact::parse`].
    fn from_str(s: &str) -> Result<Exact> {
        Exact::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::Exact;
    use crate::round::{RoundOptions, RoundingMode};
    use crate::FloatFormat;

    /// Rust's own parsing is correctly rounded to binary64 (nearest even): every decimal
    /// string of a sample, including near-halfway ones, agrees.
    #[test]
    fn nearest_binary64_agrees_with_rust_parsing() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut cases: Vec<String> = vec![
            "0".into(),
            "-0".into(),
            "1".into(),
            "0.1".into(),
            "1e308".into(),
            "1.7976931348623157e308".into(),
            "1.7976931348623158e308".into(),
            "1.797693134862315807e308".into(),
            "2e308".into(),
            "4.9406564584124654e-324".into(),
            "2.4703282292062327e-324".into(),
            "2.4703282292062328e-324".into(),
            "2.2250738585072011e-308".into(),
            "1e-400".into(),
            "9007199254740993".into(),
            "9007199254740993.0000000000000000001".into(),
            "123456789012345678901234567890e-20".into(),
            "0.30000000000000000555111512312578270211815834045410156250".into(),
        ];
        for _ in 0..20000 {
            let bits = next();
            let v = f64::from_bits(bits & 0x7fff_ffff_ffff_ffff);
            if !v.is_finite() {
                continue;
            }
            // the exact midpoint to the next binary64, written in full, and digits around it
            let mid = format!("{:e}", v);
            cases.push(mid);
            cases.push(format!("{:.25e}", v));
            cases.push(format!("{:.3e}", v));
        }
        for c in &cases {
            let want: f64 = c.parse().unwrap();
            let got = Exact::parse(c).unwrap().to_f64();
            assert_eq!(got.to_bits(), want.to_bits(), "{c}");
        }
    }

    /// The exact midpoint between two binary64 neighbours, as a decimal: nearest-even goes
    /// to the even one, a digit more goes up, one less goes down (every mode checked).
    #[test]
    fn binary64_midpoints_in_every_mode() {
        for v in [
            1.0f64,
            0.1,
            3.0e-320,
            1.0e300,
            f64::MAX / 2.0,
            2.0f64.powi(-1022),
        ] {
            let up = v.next_up();
            // v + ulp/2 exactly: both are multiples of 2^-1075, so the decimal is finite
            let mid = exact_decimal_midpoint(v, up);
            let x = Exact::parse(&mid).unwrap();
            let even = if v.to_bits() & 1 == 0 { v } else { up };
            assert_eq!(x.to_f64(), even, "{mid}");
            assert_eq!(x.to_f64_mode(RoundingMode::NearestAway), up);
            assert_eq!(x.to_f64_mode(RoundingMode::TowardZero), v);
            assert_eq!(x.to_f64_mode(RoundingMode::Up), up);
            assert_eq!(x.to_f64_mode(RoundingMode::Down), v);
            let odd = if v.to_bits() & 1 == 1 { v } else { up };
            assert_eq!(x.to_f64_mode(RoundingMode::ToOdd), odd);
            let above = Exact::parse(&above_decimal(&mid)).unwrap();
            assert_eq!(above.to_f64(), up);
            let neg = Exact::parse(&format!("-{mid}")).unwrap();
            assert_eq!(neg.to_f64_mode(RoundingMode::Up), -v);
            assert_eq!(neg.to_f64_mode(RoundingMode::Down), -up);
        }
    }

    /// `a + (b − a)/2` written exactly in decimal (both binary64, so the digits end).
    fn exact_decimal_midpoint(a: f64, b: f64) -> String {
        // the midpoint is m · 2^k with integers; write m · 5^-k · 10^k
        let (ma, ea) = decompose(a);
        let (mb, eb) = decompose(b);
        let e = ea.min(eb) - 1;
        let m = ((ma as u128) << (ea - e)) + ((mb as u128) << (eb - e));
        // m · 2^e = a + b, so the midpoint is m · 2^(e − 1) = m · 5^(1−e) · 10^(e−1)
        let (mut digits, k) = (
            super::Big(vec![
                m as u32,
                (m >> 32) as u32,
                (m >> 64) as u32,
                (m >> 96) as u32,
            ])
            .trim(),
            e - 1,
        );
        if k >= 0 {
            return format!("{}e0", to_decimal(&digits.shl(k as u32)));
        }
        for _ in 0..(-k) {
            digits.mul_add_small(5, 0);
        }
        format!("{}e{}", to_decimal(&digits), k)
    }

    fn decompose(v: f64) -> (u64, i64) {
        let b = v.to_bits();
        let exp = ((b >> 52) & 0x7ff) as i64;
        let frac = b & ((1 << 52) - 1);
        if exp == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, exp - 1075)
        }
    }

    fn to_decimal(x: &super::Big) -> String {
        let mut limbs = x.0.clone();
        let mut out = vec![];
        while limbs.iter().any(|&l| l != 0) {
            let mut rem = 0u64;
            for l in limbs.iter_mut().rev() {
                let v = (rem << 32) | *l as u64;
                *l = (v / 10) as u32;
                rem = v % 10;
            }
            out.push(b'0' + rem as u8);
        }
        if out.is_empty() {
            out.push(b'0');
        }
        out.reverse();
        String::from_utf8(out).unwrap()
    }

    /// Every bfloat16 and binary16 tie between 1 and 2, with digits above and below it that
    /// binary64 cannot hold: rounded once, as the exact value says.
    #[test]
    fn ties_of_narrow_formats_round_once() {
        for (f, m) in [
            (FloatFormat::BF16, 7),
            (FloatFormat::FP16, 10),
            (FloatFormat::FP8_E4M3, 3),
        ] {
            let ulp = 2f64.powi(-m);
            for k in 0..(1 << m) {
                let lo = 1.0 + k as f64 * ulp;
                let tie = lo + ulp / 2.0; // exact in binary64
                let d = exact_decimal_midpoint(lo, lo + ulp);
                assert_eq!(Exact::parse(&d).unwrap().to_f64(), tie);
                let o = RoundOptions::default();
                let even = if k % 2 == 0 { lo } else { lo + ulp };
                let x = Exact::parse(&d).unwrap();
                assert_eq!(f.round_exact(&x, &o), even, "{f} tie {d}");
                let above = Exact::parse(&above_decimal(&d)).unwrap();
                assert_eq!(f.round_exact(&above, &o), lo + ulp, "{f} above {d}");
                let below = Exact::parse(&below_decimal(&d)).unwrap();
                assert_eq!(f.round_exact(&below, &o), lo, "{f} below {d}");
                for (mode, want_above, want_below) in [
                    (RoundingMode::TowardZero, lo, lo),
                    (RoundingMode::Up, lo + ulp, lo + ulp),
                    (RoundingMode::Down, lo, lo),
                    (RoundingMode::NearestAway, lo + ulp, lo),
                ] {
                    let o = RoundOptions::new(mode);
                    assert_eq!(
                        f.round_exact(&above, &o),
                        want_above,
                        "{f} {mode:?} above {d}"
                    );
                    assert_eq!(
                        f.round_exact(&below, &o),
                        want_below,
                        "{f} {mode:?} below {d}"
                    );
                }
            }
        }
    }

    /// The decimal just above `d` (`MANTISSAeEXP`): twenty more digits, the last a 1.
    fn above_decimal(d: &str) -> String {
        let (m, e) = d.split_once('e').unwrap();
        let e: i64 = e.parse().unwrap();
        format!("{m}00000000000000000001e{}", e - 20)
    }

    /// The decimal just below `d` (an exact tie written in full): the last digit lowered,
    /// followed by nines, so the value is below the tie by far less than binary64 can see.
    fn below_decimal(d: &str) -> String {
        let (m, e) = d.split_once('e').unwrap();
        let mut digits: Vec<u8> = m.bytes().collect();
        let mut i = digits.len() - 1;
        loop {
            if digits[i] > b'0' {
                digits[i] -= 1;
                break;
            }
            digits[i] = b'9';
            i -= 1;
        }
        let e: i64 = e.parse().unwrap();
        format!(
            "{}99999999999999999999e{}",
            String::from_utf8(digits).unwrap(),
            e - 20
        )
    }

    /// A literal that is exactly a binary64 value rounds as the reference rounds that value:
    /// every preset, every deterministic mode, both overflow policies, random and special
    /// binary64 values written as hexadecimal floats.
    #[test]
    fn binary64_literals_round_as_the_reference() {
        use crate::format::PRESETS;
        use crate::round::Overflow;
        let mut s = 0x0ddb_1a5e_5bad_5eedu64;
        let mut vals: Vec<f64> = vec![0.0, -0.0, 1.0, -448.0, 465.0, 1e-40, 65520.0, f64::MAX];
        for _ in 0..3000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // exponents spread over the formats' ranges
            let e = ((s >> 20) % 300) as i32 - 150;
            let m = 1.0 + (s >> 12) as f64 / (1u64 << 52) as f64;
            vals.push(if s & 1 == 1 { -m } else { m } * 2f64.powi(e));
        }
        for &v in &vals {
            let x = Exact::from_f64(v);
            assert_eq!(x.to_f64().to_bits(), v.to_bits(), "{v:e}");
            let lit = format!("{v:e}");
            for p in PRESETS.iter() {
                for &mode in &RoundingMode::ALL[..6] {
                    for ovf in [Overflow::Ieee, Overflow::Saturate] {
                        let o = RoundOptions::new(mode).overflow(ovf);
                        let want = crate::reference::round(&p.format, v, &o, 0).value;
                        let got = p.format.round_exact(&x, &o);
                        assert!(
                            want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                            "{} {mode:?} {ovf:?} {lit}: {got:e} vs {want:e}",
                            p.format
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn literals_and_refusals() {
        let v = |s: &str| Exact::parse(s).unwrap().to_f64();
        assert_eq!(v("0x1.8p-3"), 0.1875);
        assert_eq!(v("-0x10p0"), -16.0);
        assert_eq!(v("1_000.5"), 1000.5);
        assert_eq!(v("+.5"), 0.5);
        assert_eq!(v("5."), 5.0);
        assert_eq!(v("1e99999999999999999999"), f64::INFINITY);
        assert_eq!(v("-1e-99999999999999999999").to_bits(), (-0.0f64).to_bits());
        assert_eq!(v("INF"), f64::INFINITY);
        assert_eq!(v("-infinity"), f64::NEG_INFINITY);
        assert!(v("nan").is_nan());
        for bad in [
            "", "-", "1e", "e5", "1.2.3", "0x", "0x1.8", "abc", "1e+-3", "0x1g",
        ] {
            let e = Exact::parse(bad).unwrap_err().to_string();
            assert!(e.contains("is not a number"), "{bad}: {e}");
        }
        // the issue's example
        let x = Exact::parse("1.00390625000000000001").unwrap();
        assert_eq!(
            FloatFormat::BF16.round_exact(&x, &RoundOptions::default()),
            1.0078125
        );
        // beyond binary64's range: overflow as the exact value would
        let big = Exact::parse("1e400").unwrap();
        let rtz = RoundOptions::new(RoundingMode::TowardZero);
        assert_eq!(FloatFormat::FP64.round_exact(&big, &rtz), f64::MAX);
        assert_eq!(FloatFormat::FP8_E4M3.round_exact(&big, &rtz), 448.0);
        assert_eq!(
            FloatFormat::FP64.round_exact(&big, &RoundOptions::default()),
            f64::INFINITY
        );
        let tiny = Exact::parse("1e-400").unwrap();
        let up = RoundOptions::new(RoundingMode::Up);
        assert_eq!(FloatFormat::FP64.round_exact(&tiny, &up), f64::from_bits(1));
        assert_eq!(FloatFormat::BF16.round_exact(&tiny, &up), 2f64.powi(-133));
    }
}
