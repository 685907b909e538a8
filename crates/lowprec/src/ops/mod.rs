//! Operations rounded once: every arithmetic operation of the IEEE P3109 draft (and of IEEE
//! 754 for its formats) on operands in any formats, its exact real result projected **once**
//! into any result format ([`mod@project`]).
//!
//! The exact results come from [`wide`]: sums in an accumulator spanning every bit of the
//! terms, products, quotients and roots as integers with a sticky bit. Nothing goes through
//! a binary64 rounding.
//!
//! # Semantics by format
//!
//! An operation follows the P3109 draft when any operand or the result is a P3109 format,
//! and IEEE 754-2019 otherwise:
//!
//! | case | P3109 | IEEE 754 (fp16, bf16, fp32, … and fn/fnuz/none formats) |
//! |---|---|---|
//! | zero results | always 0 (no −0) | signed: `x − x` is +0 (−0 under `rdn`), products and quotients take the sign rule, results rounded to zero keep the sign of the exact value |
//! | `x / 0`, `Recip(0)` | NaN | ±Inf (0/0 NaN) |
//! | `RSqrt(0)` | NaN | ±Inf |
//! | `∞ − ∞`, `0 × ∞`, `√x` for `x < 0` | NaN | NaN |
//! | `CopySign` with a NaN | NaN | the sign bit of the code |
//! | `NextGreaterThan(max)` | +Inf, or NaN in a finite format | +Inf, or NaN without Inf (±max without NaN) |
//! | `NextGreaterThan(+Inf)` | NaN | +Inf |
//! | `TotalOrder` | NaN first | `−NaN < −Inf < … < −0 < +0 < … < +Inf < +NaN` |
//!
//! A fn, fnuz or none format takes the IEEE 754 exact result and then its own conversion
//! rules ([`mod@project`]'s table): an infinite result is NaN in fn/fnuz formats under
//! `SatNone`, ±max in formats without NaN.
//!
//! ```
//! use lowprec::ops::{self, Op, Projection};
//! use lowprec::FloatFormat;
//! let p8 = FloatFormat::BINARY8P4SE;
//! let one_and_half = p8.encode_exact(&"1.5".parse().unwrap(), &Default::default()).unwrap();
//! let tenth = p8.encode_exact(&"0.1".parse().unwrap(), &Default::default()).unwrap();
//! let r = ops::apply_scalar(Op::Multiply, &[(p8, one_and_half), (p8, tenth)], &FloatFormat::FP32,
//!                           &Projection::default(), 0).unwrap();
//! // 1.5 × 0.1015625 (0.1 in Binary8p4se), exact in binary32
//! assert_eq!(f32::from_bits(r.code.unwrap() as u32), 0.15234375);
//! ```

mod bf16;
pub mod block;
mod fma;
pub mod project;
pub mod reference;
mod table;
pub mod wide;

pub use bf16::apply_bf16;
pub use fma::apply_fma_f32;
pub use project::{flag, project, Draft, Exact, Outcome, Projection, Rounding, Saturation};
pub use table::PairTable;

use crate::error::{Error, Result};
use crate::format::FloatFormat;
use rayon::prelude::*;
use std::fmt;
use wide::{Term, Wide};

/// The kind of result an [`Op`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A number projected into the result format.
    Numeric,
    /// A code of the first operand's format (NextGreaterThan, NextLessThan).
    SameFormat,
    /// 0 or 1.
    Boolean,
    /// An index into [`CLASS_NAMES`].
    Class,
}

macro_rules! ops {
    ($( $v:ident = $name:literal, $arity:literal, $kind:ident; )*) => {
        /// An operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Op {
            $(
                #[doc = concat!("`", $name, "`")]
                $v,
            )*
        }

        impl Op {
            /// Every operation.
            pub const ALL: &'static [Op] = &[$(Op::$v),*];

            /// The draft's name.
            pub const fn name(self) -> &'static str {
                match self { $(Op::$v => $name),* }
            }

            /// The number of operands (the Scaled operations count scale and element
            /// separately: `(s1, x1, s2, x2)`).
            pub const fn arity(self) -> usize {
                match self { $(Op::$v => $arity),* }
            }

            /// What the result is.
            pub const fn kind(self) -> Kind {
                match self { $(Op::$v => Kind::$kind),* }
            }
        }
    };
}

ops! {
    Convert = "Convert", 1, Numeric;
    Negate = "Negate", 1, Numeric;
    Abs = "Abs", 1, Numeric;
    Add = "Add", 2, Numeric;
    Subtract = "Subtract", 2, Numeric;
    Multiply = "Multiply", 2, Numeric;
    Divide = "Divide", 2, Numeric;
    Fma = "FMA", 3, Numeric;
    Faa = "FAA", 3, Numeric;
    Sqrt = "Sqrt", 1, Numeric;
    Recip = "Recip", 1, Numeric;
    RSqrt = "RSqrt", 1, Numeric;
    Minimum = "Minimum", 2, Numeric;
    Maximum = "Maximum", 2, Numeric;
    MinimumNumber = "MinimumNumber", 2, Numeric;
    MaximumNumber = "MaximumNumber", 2, Numeric;
    MinimumMagnitude = "MinimumMagnitude", 2, Numeric;
    MaximumMagnitude = "MaximumMagnitude", 2, Numeric;
    MinimumMagnitudeNumber = "MinimumMagnitudeNumber", 2, Numeric;
    MaximumMagnitudeNumber = "MaximumMagnitudeNumber", 2, Numeric;
    MinimumFinite = "MinimumFinite", 2, Numeric;
    MaximumFinite = "MaximumFinite", 2, Numeric;
    Clamp = "Clamp", 3, Numeric;
    CopySign = "CopySign", 2, Numeric;
    ScaledAdd = "ScaledAdd", 4, Numeric;
    ScaledSubtract = "ScaledSubtract", 4, Numeric;
    ScaledMultiply = "ScaledMultiply", 4, Numeric;
    CompareLess = "CompareLess", 2, Boolean;
    CompareLessEqual = "CompareLessEqual", 2, Boolean;
    CompareEqual = "CompareEqual", 2, Boolean;
    CompareGreater = "CompareGreater", 2, Boolean;
    CompareGreaterEqual = "CompareGreaterEqual", 2, Boolean;
    TotalOrder = "TotalOrder", 2, Boolean;
    IsZero = "IsZero", 1, Boolean;
    IsOne = "IsOne", 1, Boolean;
    IsNaN = "IsNaN", 1, Boolean;
    IsInfinite = "IsInfinite", 1, Boolean;
    IsFinite = "IsFinite", 1, Boolean;
    IsSignMinus = "IsSignMinus", 1, Boolean;
    IsNormal = "IsNormal", 1, Boolean;
    IsSubnormal = "IsSubnormal", 1, Boolean;
    Class = "Class", 1, Class;
    NextGreaterThan = "NextGreaterThan", 1, SameFormat;
    NextLessThan = "NextLessThan", 1, SameFormat;
}

/// The class names of [`Op::Class`], by result index (`ClsNegativeZero` only in IEEE formats).
pub const CLASS_NAMES: [&str; 9] = [
    "ClsNaN",
    "ClsNegativeInfinity",
    "ClsNegativeNormal",
    "ClsNegativeSubnormal",
    "ClsNegativeZero",
    "ClsZero",
    "ClsPositiveSubnormal",
    "ClsPositiveNormal",
    "ClsPositiveInfinity",
];

impl Op {
    /// Parse a name, any case, `-`/`_` ignored; short aliases `add`, `sub`, `mul`, `div`,
    /// `fma`, `faa`, `sqrt`, `recip`, `rsqrt`, `neg`, `abs`, `min`, `max`, `lt`, `le`, `eq`,
    /// `gt`, `ge`, `nextup`, `nextdown`, `copysign`, `convert`.
    ///
    /// ```
    /// use lowprec::ops::Op;
    /// assert_eq!(Op::parse("fma"), Some(Op::Fma));
    /// assert_eq!(Op::parse("MinimumMagnitudeNumber"), Some(Op::MinimumMagnitudeNumber));
    /// assert_eq!(Op::parse("frobnicate"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Op> {
        let k: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        let alias = match k.as_str() {
            "sub" => Some(Op::Subtract),
            "mul" => Some(Op::Multiply),
            "div" => Some(Op::Divide),
            "neg" => Some(Op::Negate),
            "min" => Some(Op::Minimum),
            "max" => Some(Op::Maximum),
            "lt" => Some(Op::CompareLess),
            "le" => Some(Op::CompareLessEqual),
            "eq" => Some(Op::CompareEqual),
            "gt" => Some(Op::CompareGreater),
            "ge" => Some(Op::CompareGreaterEqual),
            "nextup" => Some(Op::NextGreaterThan),
            "nextdown" => Some(Op::NextLessThan),
            _ => None,
        };
        alias.or_else(|| {
            Op::ALL
                .iter()
                .copied()
                .find(|o| o.name().to_lowercase() == k)
        })
    }

    /// Every name, for error messages.
    pub fn names() -> String {
        Op::ALL
            .iter()
            .map(|o| o.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An operand: its format's flags and its value (binary64 holds every value exactly; the sign
/// of a NaN code is kept for IEEE's CopySign and TotalOrder).
#[derive(Debug, Clone, Copy)]
struct Val {
    v: f64,
    sign_bit: bool,
    code: u64,
}

fn operand(fmt: &FloatFormat, code: u64) -> Val {
    let v = fmt.decode(code);
    Val {
        v,
        sign_bit: fmt.fields(code).0 == 1,
        code: code & fmt.max_code(),
    }
}

fn exact_of(v: f64) -> Exact {
    if v.is_nan() {
        Exact::Nan { invalid: false }
    } else if v.is_infinite() {
        Exact::Inf(v < 0.0)
    } else if v == 0.0 {
        Exact::Zero(v.is_sign_negative())
    } else {
        let (neg, s, e) = wide::split(v);
        Exact::Val(Wide::exact(neg, s as u128, e))
    }
}

fn term(v: f64) -> Term {
    let (neg, s, e) = wide::split(v);
    Term {
        neg,
        sig: s as u128,
        exp: e,
    }
}

const INVALID: Exact = Exact::Nan { invalid: true };
const NAN: Exact = Exact::Nan { invalid: false };

/// The sign of an exact zero sum of `zeros` (all operands zero) or of cancelling terms.
fn zero_sum_sign(zeros: &[f64], down: bool) -> bool {
    if !zeros.is_empty() && zeros.iter().all(|z| *z == 0.0 && z.is_sign_negative()) {
        return true;
    }
    down
}

/// The exact sum of finite values and infinities.
fn exact_sum(xs: &[f64], down: bool) -> Exact {
    if xs.iter().any(|x| x.is_nan()) {
        return NAN;
    }
    let pinf = xs.contains(&f64::INFINITY);
    let ninf = xs.contains(&f64::NEG_INFINITY);
    match (pinf, ninf) {
        (true, true) => return INVALID,
        (true, false) => return Exact::Inf(false),
        (false, true) => return Exact::Inf(true),
        (false, false) => {}
    }
    let terms: Vec<Term> = xs.iter().filter(|x| **x != 0.0).map(|&x| term(x)).collect();
    let w = wide::sum(&terms);
    if w.is_zero() {
        let all_zero = terms.is_empty();
        Exact::Zero(if all_zero {
            zero_sum_sign(xs, down)
        } else {
            down
        })
    } else {
        Exact::Val(w)
    }
}

fn exact_product(x: f64, y: f64) -> Exact {
    if x.is_nan() || y.is_nan() {
        return NAN;
    }
    let neg = x.is_sign_negative() != y.is_sign_negative();
    if x.is_infinite() || y.is_infinite() {
        if x == 0.0 || y == 0.0 {
            return INVALID;
        }
        return Exact::Inf(neg);
    }
    if x == 0.0 || y == 0.0 {
        return Exact::Zero(neg);
    }
    let (tx, ty) = (term(x), term(y));
    Exact::Val(Wide::exact(neg, tx.sig * ty.sig, tx.exp + ty.exp))
}

fn exact_fma(x: f64, y: f64, z: f64, down: bool) -> Exact {
    let p = exact_product(x, y);
    match p {
        Exact::Nan { invalid } => Exact::Nan {
            invalid: invalid && !z.is_nan(),
        },
        _ if z.is_nan() => NAN,
        Exact::Inf(neg) => {
            if z.is_infinite() && (z < 0.0) != neg {
                INVALID
            } else {
                Exact::Inf(neg)
            }
        }
        _ if z.is_infinite() => Exact::Inf(z < 0.0),
        Exact::Zero(neg) => {
            if z == 0.0 {
                Exact::Zero(if neg == z.is_sign_negative() {
                    neg
                } else {
                    down
                })
            } else {
                exact_of(z)
            }
        }
        Exact::Val(w) => {
            let mut terms = vec![Term {
                neg: w.neg,
                sig: w.sig,
                exp: w.exp,
            }];
            if z != 0.0 {
                terms.push(term(z));
            }
            let s = wide::sum(&terms);
            if s.is_zero() {
                Exact::Zero(down)
            } else {
                Exact::Val(s)
            }
        }
    }
}

fn exact_quotient(x: f64, y: f64, p3109: bool) -> Exact {
    if x.is_nan() || y.is_nan() {
        return NAN;
    }
    let neg = x.is_sign_negative() != y.is_sign_negative();
    if y == 0.0 {
        if p3109 || x == 0.0 {
            return INVALID;
        }
        return Exact::Inf(neg);
    }
    if x.is_infinite() {
        return if y.is_infinite() {
            INVALID
        } else {
            Exact::Inf(neg)
        };
    }
    if y.is_infinite() || x == 0.0 {
        return Exact::Zero(neg);
    }
    Exact::Val(wide::quotient(x, y))
}

fn exact_sqrt(x: f64) -> Exact {
    if x.is_nan() {
        NAN
    } else if x == 0.0 {
        Exact::Zero(x.is_sign_negative())
    } else if x < 0.0 {
        INVALID
    } else if x.is_infinite() {
        Exact::Inf(false)
    } else {
        Exact::Val(wide::square_root(x))
    }
}

fn exact_rsqrt(x: f64, p3109: bool) -> Exact {
    if x.is_nan() {
        NAN
    } else if x == 0.0 {
        if p3109 {
            INVALID
        } else {
            Exact::Inf(x.is_sign_negative())
        }
    } else if x < 0.0 {
        INVALID
    } else if x.is_infinite() {
        Exact::Zero(false)
    } else {
        Exact::Val(wide::reciprocal_root(x))
    }
}

/// `a < b` in the order with −0 below +0 (neither NaN).
fn less(a: f64, b: f64) -> bool {
    a < b || (a == 0.0 && b == 0.0 && a.is_sign_negative() && !b.is_sign_negative())
}

fn pick_min(a: f64, b: f64) -> f64 {
    if less(b, a) {
        b
    } else {
        a
    }
}

fn pick_max(a: f64, b: f64) -> f64 {
    if less(a, b) {
        b
    } else {
        a
    }
}

fn min_mag(a: f64, b: f64) -> f64 {
    if a.abs() < b.abs() {
        a
    } else if b.abs() < a.abs() {
        b
    } else {
        pick_min(a, b)
    }
}

fn max_mag(a: f64, b: f64) -> f64 {
    if a.abs() > b.abs() {
        a
    } else if b.abs() > a.abs() {
        b
    } else {
        pick_max(a, b)
    }
}

/// Apply a two-operand selection with NaN propagating (`number = false`) or ignored.
fn select(a: f64, b: f64, number: bool, f: fn(f64, f64) -> f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => f(a, b),
        (true, true) => f64::NAN,
        (true, false) => {
            if number {
                b
            } else {
                f64::NAN
            }
        }
        (false, true) => {
            if number {
                a
            } else {
                f64::NAN
            }
        }
    }
}

fn finite_select(a: f64, b: f64, f: fn(f64, f64) -> f64) -> f64 {
    let ok = |x: f64| x.is_finite();
    match (ok(a), ok(b)) {
        (true, true) => f(a, b),
        (true, false) => a,
        (false, true) => b,
        // two non-finite: NaN ignored, two infinities ordinary
        (false, false) => select(a, b, true, f),
    }
}

fn clamp(x: f64, lo: f64, hi: f64) -> Exact {
    if x.is_nan() || lo.is_nan() || hi.is_nan() || less(hi, lo) {
        return INVALID;
    }
    let v = if x <= lo && !less(lo, x) {
        lo
    } else if x >= hi && !less(x, hi) {
        hi
    } else {
        x
    };
    exact_of(v)
}

/// The exact result of a numeric operation.
fn numeric(op: Op, a: &[Val], p3109: bool, down: bool) -> Exact {
    let x = |i: usize| a[i].v;
    match op {
        Op::Convert => exact_of(x(0)),
        Op::Negate => exact_of(-x(0)),
        Op::Abs => exact_of(x(0).abs()),
        Op::Add => exact_sum(&[x(0), x(1)], down),
        Op::Subtract => exact_sum(&[x(0), -x(1)], down),
        Op::Multiply => exact_product(x(0), x(1)),
        Op::Divide => exact_quotient(x(0), x(1), p3109),
        Op::Recip => exact_quotient(1.0, x(0), p3109),
        Op::Fma => exact_fma(x(0), x(1), x(2), down),
        Op::Faa => exact_sum(&[x(0), x(1), x(2)], down),
        Op::Sqrt => exact_sqrt(x(0)),
        Op::RSqrt => exact_rsqrt(x(0), p3109),
        Op::Minimum => exact_of(select(x(0), x(1), false, pick_min)),
        Op::Maximum => exact_of(select(x(0), x(1), false, pick_max)),
        Op::MinimumNumber => exact_of(select(x(0), x(1), true, pick_min)),
        Op::MaximumNumber => exact_of(select(x(0), x(1), true, pick_max)),
        Op::MinimumMagnitude => exact_of(select(x(0), x(1), false, min_mag)),
        Op::MaximumMagnitude => exact_of(select(x(0), x(1), false, max_mag)),
        Op::MinimumMagnitudeNumber => exact_of(select(x(0), x(1), true, min_mag)),
        Op::MaximumMagnitudeNumber => exact_of(select(x(0), x(1), true, max_mag)),
        Op::MinimumFinite => exact_of(finite_select(x(0), x(1), pick_min)),
        Op::MaximumFinite => exact_of(finite_select(x(0), x(1), pick_max)),
        Op::Clamp => clamp(x(0), x(1), x(2)),
        Op::CopySign => {
            if p3109 && (x(0).is_nan() || x(1).is_nan()) {
                NAN
            } else {
                let neg = if p3109 { x(1) < 0.0 } else { a[1].sign_bit };
                exact_of(if neg { -x(0).abs() } else { x(0).abs() })
            }
        }
        Op::ScaledAdd | Op::ScaledSubtract | Op::ScaledMultiply => {
            let (u, v) = (x(0) * x(1), x(2) * x(3));
            let u = if x(0).is_infinite() || x(1).is_infinite() {
                exact_product(x(0), x(1))
            } else {
                exact_of(u)
            };
            let v = if x(2).is_infinite() || x(3).is_infinite() {
                exact_product(x(2), x(3))
            } else {
                exact_of(v)
            };
            let val = |e: Exact| match e {
                Exact::Nan { .. } => f64::NAN,
                Exact::Inf(n) => {
                    if n {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                }
                Exact::Zero(n) => {
                    if n {
                        -0.0
                    } else {
                        0.0
                    }
                }
                Exact::Val(w) => w.to_f64(),
            };
            if let (Exact::Nan { invalid: true }, _) | (_, Exact::Nan { invalid: true }) = (u, v) {
                return INVALID;
            }
            let (u, v) = (val(u), val(v));
            match op {
                Op::ScaledAdd => exact_sum(&[u, v], down),
                Op::ScaledSubtract => exact_sum(&[u, -v], down),
                _ => exact_product(u, v),
            }
        }
        _ => unreachable!("not a numeric operation"),
    }
}

fn boolean(op: Op, a: &[Val], p3109: bool, fmts: &[FloatFormat]) -> bool {
    let x = a[0].v;
    let y = a.get(1).map_or(0.0, |v| v.v);
    let normal = |v: f64, f: &FloatFormat| v.is_finite() && v != 0.0 && v.abs() >= f.min_normal();
    match op {
        Op::CompareLess => x < y,
        Op::CompareLessEqual => x <= y,
        Op::CompareEqual => x == y,
        Op::CompareGreater => x > y,
        Op::CompareGreaterEqual => x >= y,
        Op::TotalOrder => {
            if p3109 {
                if x.is_nan() {
                    true
                } else if y.is_nan() {
                    false
                } else {
                    x <= y
                }
            } else {
                let key = |v: &Val| -> (i8, f64) {
                    if v.v.is_nan() {
                        (if v.sign_bit { -1 } else { 1 }, 0.0)
                    } else {
                        (0, v.v)
                    }
                };
                let (kx, ky) = (key(&a[0]), key(&a[1]));
                kx.0 < ky.0 || (kx.0 == ky.0 && kx.1.total_cmp(&ky.1).is_le())
            }
        }
        Op::IsZero => x == 0.0,
        Op::IsOne => x == 1.0,
        Op::IsNaN => x.is_nan(),
        Op::IsInfinite => x.is_infinite(),
        Op::IsFinite => x.is_finite(),
        Op::IsSignMinus => {
            if p3109 {
                x < 0.0
            } else {
                a[0].sign_bit
            }
        }
        Op::IsNormal => normal(x, &fmts[0]),
        Op::IsSubnormal => x.is_finite() && x != 0.0 && !normal(x, &fmts[0]),
        _ => unreachable!("not a boolean operation"),
    }
}

fn class(a: &Val, fmt: &FloatFormat) -> u64 {
    let x = a.v;
    let normal = x.abs() >= fmt.min_normal();
    if x.is_nan() {
        0
    } else if x == f64::NEG_INFINITY {
        1
    } else if x == f64::INFINITY {
        8
    } else if x == 0.0 {
        if x.is_sign_negative() {
            4
        } else {
            5
        }
    } else if x < 0.0 {
        if normal {
            2
        } else {
            3
        }
    } else if normal {
        7
    } else {
        6
    }
}

/// NextGreaterThan (`up`) or NextLessThan of a code, in its own format; `None` is NaN.
fn next(fmt: &FloatFormat, code: u64, up: bool) -> Option<u64> {
    let pf = fmt.specials().is_p3109();
    let code = code & fmt.max_code();
    if fmt.is_nan_code(code) {
        return None;
    }
    let v = fmt.decode(code);
    let sign = fmt.sign_mask();
    let mag = code & !sign;
    let max = fmt.max_mag();
    let nan_or = |c: u64| if fmt.has_nan() { None } else { Some(c) };
    // move away from zero on the side of `neg`, or toward it
    let step_out = |neg: bool, mag: u64| -> Option<u64> {
        let s = if neg { sign } else { 0 };
        if mag == max {
            match fmt.inf_code(neg) {
                Some(c) => Some(c),
                None => nan_or(s | max),
            }
        } else {
            Some(s | (mag + 1))
        }
    };
    let zero_code = |neg: bool| {
        if neg && fmt.has_negative_zero() {
            sign
        } else {
            0
        }
    };
    if v.is_infinite() {
        let neg = v < 0.0;
        return if neg != up {
            if pf {
                None
            } else {
                Some(code)
            }
        } else {
            Some(if neg { sign } else { 0 } | max)
        };
    }
    if v == 0.0 {
        return if up {
            Some(1)
        } else if fmt.is_signed() {
            Some(sign | 1)
        } else {
            None
        };
    }
    if !fmt.has_zero() && mag == 0 && !up {
        return None; // below E8M0's smallest value
    }
    let neg = v < 0.0;
    if neg != up {
        step_out(neg, mag)
    } else if mag == 1 && fmt.has_zero() {
        Some(zero_code(neg))
    } else {
        Some(if neg { sign } else { 0 } | (mag - 1))
    }
}

/// One operation on one set of operand codes: the result code (for boolean and class
/// operations 0/1 and the class index) and what happened.
///
/// `random` is the stochastic rounding's `R` (below `2^N`; ignored otherwise).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the number of operands is not the operation's arity.
pub fn apply_scalar(
    op: Op,
    operands: &[(FloatFormat, u64)],
    out: &FloatFormat,
    prj: &Projection,
    random: u32,
) -> Result<Outcome> {
    if operands.len() != op.arity() {
        return Err(Error::InvalidArgument(format!(
            "{op} takes {} operands, not {}",
            op.arity(),
            operands.len()
        )));
    }
    let fmts: Vec<FloatFormat> = operands.iter().map(|o| o.0).collect();
    let vals: Vec<Val> = operands.iter().map(|(f, c)| operand(f, *c)).collect();
    let p3109 = family_p3109(&fmts, out, op);
    Ok(eval(op, &fmts, &vals, out, prj, p3109, random))
}

/// One operation on one set of operand codes, with its exact result before projection (for
/// showing each step, as `lowprec calc` does).
///
/// # Errors
///
/// As [`apply_scalar`].
pub fn evaluate(
    op: Op,
    operands: &[(FloatFormat, u64)],
    out: &FloatFormat,
    prj: &Projection,
    random: u32,
) -> Result<(Option<Exact>, Outcome)> {
    let o = apply_scalar(op, operands, out, prj, random)?;
    if op.kind() != Kind::Numeric {
        return Ok((None, o));
    }
    let fmts: Vec<FloatFormat> = operands.iter().map(|o| o.0).collect();
    let vals: Vec<Val> = operands.iter().map(|(f, c)| operand(f, *c)).collect();
    let p3109 = family_p3109(&fmts, out, op);
    let down = !p3109 && prj.rounding == Rounding::TowardNegative;
    Ok((Some(numeric(op, &vals, p3109, down)), o))
}

/// The exact result of converting a number (an [`crate::exact::Exact`] literal) into `out`
/// under a projection: a literal rounded once.
pub fn project_literal(
    x: &crate::exact::Exact,
    out: &FloatFormat,
    prj: &Projection,
    random: u32,
) -> (Exact, Outcome) {
    let e = literal_exact(x, out, prj);
    (e, project(out, e, prj, out.specials().is_p3109(), random))
}

/// A literal as an exact result: its binary64 truncation with a sticky bit, which rounds
/// exactly into every format of at most 52 bits of precision (for binary64 itself the
/// literal is rounded by [`crate::exact::Exact::to_f64_mode`]; stochastic roundings see the
/// literal's first 53 bits).
fn literal_exact(x: &crate::exact::Exact, out: &FloatFormat, prj: &Projection) -> Exact {
    if x.is_nan() {
        return NAN;
    }
    let (t, sticky) = x.to_f64_sticky();
    if !sticky {
        return exact_of(t);
    }
    if out.man_bits() >= 52 {
        let mode = match prj.rounding {
            Rounding::NearestTiesToAway => crate::RoundingMode::NearestAway,
            Rounding::TowardPositive => crate::RoundingMode::Up,
            Rounding::TowardNegative => crate::RoundingMode::Down,
            Rounding::TowardZero => crate::RoundingMode::TowardZero,
            Rounding::ToOdd => crate::RoundingMode::ToOdd,
            Rounding::NearestTiesToEven
            | Rounding::StochasticA(_)
            | Rounding::StochasticB(_)
            | Rounding::StochasticC(_) => crate::RoundingMode::NearestEven,
        };
        return exact_of(x.to_f64_mode(mode));
    }
    let neg = t.is_sign_negative();
    if t == 0.0 {
        // below half of binary64's smallest subnormal
        return Exact::Val(Wide {
            neg,
            sig: 0,
            exp: -1075,
            sticky: true,
        });
    }
    let (_, s, e) = wide::split(t);
    Exact::Val(Wide {
        neg,
        sig: s as u128,
        exp: e,
        sticky: true,
    })
}

/// The exact result of a numeric operation on plain binary64 operand values (each value's
/// own sign bit; no codes), before its projection.
pub(crate) fn numeric_of_values(op: Op, values: &[f64], p3109: bool, down: bool) -> Exact {
    let vals: Vec<Val> = values
        .iter()
        .map(|&v| Val {
            v,
            sign_bit: v.is_sign_negative(),
            code: 0,
        })
        .collect();
    numeric(op, &vals, p3109, down)
}

/// Whether an operation on these formats follows the P3109 draft.
pub fn family_p3109(fmts: &[FloatFormat], out: &FloatFormat, op: Op) -> bool {
    fmts.iter().any(|f| f.specials().is_p3109())
        || (op.kind() == Kind::Numeric && out.specials().is_p3109())
}

fn eval(
    op: Op,
    fmts: &[FloatFormat],
    vals: &[Val],
    out: &FloatFormat,
    prj: &Projection,
    p3109: bool,
    random: u32,
) -> Outcome {
    match op.kind() {
        Kind::Numeric => {
            let down = !p3109 && prj.rounding == Rounding::TowardNegative;
            let e = numeric(op, vals, p3109, down);
            project(out, e, prj, p3109, random)
        }
        Kind::Boolean => Outcome {
            code: Some(boolean(op, vals, p3109, fmts) as u64),
            flags: 0,
        },
        Kind::Class => Outcome {
            code: Some(class(&vals[0], &fmts[0])),
            flags: 0,
        },
        Kind::SameFormat => {
            let r = next(&fmts[0], vals[0].code, op == Op::NextGreaterThan);
            Outcome {
                code: r.or(fmts[0].nan_code(false)),
                flags: 0,
            }
        }
    }
}

/// Counts of what happened over an array operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Elements.
    pub total: u64,
    /// Inexact results.
    pub inexact: u64,
    /// Results beyond the range before saturation.
    pub overflow: u64,
    /// Tiny inexact results.
    pub underflow: u64,
    /// NaN from non-NaN operands.
    pub invalid: u64,
    /// Saturated results.
    pub saturated: u64,
    /// NaN results.
    pub nan: u64,
}

impl Counts {
    fn add_flags(&mut self, f: u8, nan: bool) {
        self.total += 1;
        self.inexact += (f & flag::INEXACT != 0) as u64;
        self.overflow += (f & flag::OVERFLOW != 0) as u64;
        self.underflow += (f & flag::UNDERFLOW != 0) as u64;
        self.invalid += (f & flag::INVALID != 0) as u64;
        self.saturated += (f & flag::SATURATED != 0) as u64;
        self.nan += nan as u64;
    }

    /// The counts of two pieces together (every field added): pieces of an array give the
    /// array's counts whatever the partition.
    ///
    /// ```
    /// use lowprec::ops::Counts;
    /// let a = Counts { total: 3, inexact: 1, ..Counts::default() };
    /// let b = Counts { total: 2, inexact: 2, nan: 1, ..Counts::default() };
    /// assert_eq!(a.merge(b), Counts { total: 5, inexact: 3, nan: 1, ..Counts::default() });
    /// ```
    #[must_use]
    pub fn merge(mut self, o: Counts) -> Counts {
        self.total += o.total;
        self.inexact += o.inexact;
        self.overflow += o.overflow;
        self.underflow += o.underflow;
        self.invalid += o.invalid;
        self.saturated += o.saturated;
        self.nan += o.nan;
        self
    }
}

/// Where the stochastic roundings take their random bits.
#[derive(Debug, Clone, Copy)]
pub enum Random<'a> {
    /// `R = random_bits(seed, index_offset + i) >> (32 − N)`: the counter-based generator.
    Seeded {
        /// Seed.
        seed: u64,
        /// Index of element 0.
        index_offset: u64,
    },
    /// The caller's `R` per element (each below `2^N`).
    Given(&'a [u32]),
}

impl Random<'static> {
    /// The counter-based generator from element 0: `Random::Seeded { seed, index_offset: 0 }`.
    ///
    /// ```
    /// use lowprec::ops::Random;
    /// assert!(matches!(Random::seeded(7), Random::Seeded { seed: 7, index_offset: 0 }));
    /// ```
    pub const fn seeded(seed: u64) -> Random<'static> {
        Random::Seeded {
            seed,
            index_offset: 0,
        }
    }
}

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;

/// Caller-given random words: one per element, each below `2^N` for the stochastic
/// rounding's `N` (the check of every elementwise and block operation).
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the count or the first word out of range.
pub(crate) fn check_random(random: &Random<'_>, n: usize, prj: &Projection) -> Result<()> {
    let Random::Given(r) = random else {
        return Ok(());
    };
    if r.len() != n {
        return Err(Error::InvalidArgument(format!(
            "{} random words for {n} elements; give one per element",
            r.len()
        )));
    }
    let nbits = prj.rounding.random_bits();
    if nbits > 0 && nbits < 32 {
        if let Some(bad) = r.iter().find(|&&x| x >> nbits != 0) {
            return Err(Error::InvalidArgument(format!(
                "random word {bad} is not below 2^{nbits}; give N-bit values for {}",
                prj.rounding.name()
            )));
        }
    }
    Ok(())
}

/// An operation over arrays of codes (every operand the same length as `out_codes`).
///
/// Deterministic roundings of operations whose operands are all at most 8 bits wide (up to
/// 16 bits in all) go through a table of every operand combination, computed once per call
/// when the arrays are longer than the table; the result is the same (two operands into a
/// format of at most 8 bits: a [`PairTable`], which computes Add, Subtract, Multiply and
/// Divide in binary32 lanes where that gives every entry). bfloat16 Add,
/// Subtract and Multiply ([`apply_bf16`]) and FMA of two 8-bit operands and a binary32
/// addend ([`apply_fma_f32`]) under NearestTiesToEven take vector paths, with the same
/// results and counts.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a wrong operand count, operand arrays of different lengths,
/// given random bits of the wrong length or not below `2^N`, or a NaN result in a format
/// without NaN.
pub fn apply(
    op: Op,
    operands: &[(FloatFormat, &[u64])],
    out: &FloatFormat,
    prj: &Projection,
    random: Random<'_>,
    out_codes: &mut [u64],
) -> Result<Counts> {
    let n = out_codes.len();
    if operands.len() != op.arity() {
        return Err(Error::InvalidArgument(format!(
            "{op} takes {} operands, not {}",
            op.arity(),
            operands.len()
        )));
    }
    if let Some((i, o)) = operands.iter().enumerate().find(|(_, o)| o.1.len() != n) {
        return Err(Error::InvalidArgument(format!(
            "operand {} has {} elements and the result {n}; give operands of the same shape",
            i + 1,
            o.1.len()
        )));
    }
    check_random(&random, n, prj)?;
    let nbits = prj.rounding.random_bits();
    let fmts: Vec<FloatFormat> = operands.iter().map(|o| o.0).collect();
    let p3109 = family_p3109(&fmts, out, op);
    let rnd = |i: usize| -> u32 {
        if nbits == 0 {
            return 0;
        }
        match random {
            Random::Given(r) => r[i],
            Random::Seeded { seed, index_offset } => {
                crate::round::random_bits(seed, index_offset + i as u64) >> (32 - nbits)
            }
        }
    };
    if bf16::applies(op, &fmts, out, prj)
        && operands.iter().all(|o| o.1.iter().all(|&c| c <= 0xffff))
    {
        // bfloat16 Add/Subtract/Multiply under NearestTiesToEven: binary32 lanes
        let (a, b): (Vec<u16>, Vec<u16>) = (operands[0].1.iter())
            .zip(operands[1].1)
            .map(|(&a, &b)| (a as u16, b as u16))
            .unzip();
        let mut o = vec![0u16; n];
        let c = apply_bf16(op, &a, &b, prj, &mut o)?;
        out_codes
            .iter_mut()
            .zip(&o)
            .for_each(|(d, &s)| *d = s as u64);
        return Ok(c);
    }
    if op == Op::Fma && fma::applies(&fmts, out, prj) {
        // two 8-bit operands and a binary32 addend under NearestTiesToEven: binary64 lanes
        let mask = |k: usize| fmts[k].max_code();
        let a: Vec<u8> = operands[0].1.iter().map(|&c| (c & mask(0)) as u8).collect();
        let b: Vec<u8> = operands[1].1.iter().map(|&c| (c & mask(1)) as u8).collect();
        let z: Vec<f32> = (operands[2].1.iter())
            .map(|&c| f32::from_bits(c as u32))
            .collect();
        let mut o = vec![0u32; n];
        let c = apply_fma_f32(fmts[0], &a, fmts[1], &b, &z, *out, prj, &mut o)?;
        out_codes
            .iter_mut()
            .zip(&o)
            .for_each(|(d, &s)| *d = u64::from(s));
        return Ok(c);
    }
    let width: u32 = fmts.iter().map(|f| f.bits()).sum();
    if op.arity() == 2
        && nbits == 0
        && fmts.iter().all(|f| f.bits() <= 8)
        && n > (1usize << width)
        && (out.bits() <= 8 || matches!(op.kind(), Kind::Boolean | Kind::Class))
    {
        // two operands of at most 8 bits into a byte: the pair table (binary32 lanes where
        // they give every entry); a NaN without a code takes the loop below, which names
        // the element
        let bytes = |k: usize| -> Vec<u8> {
            let m = fmts[k].max_code();
            operands[k].1.iter().map(|&c| (c & m) as u8).collect()
        };
        let t = PairTable::new(op, fmts[0], fmts[1], *out, prj)?;
        let mut o = vec![0u8; n];
        if let Ok(c) = t.apply_u8(&bytes(0), &bytes(1), &mut o) {
            out_codes
                .iter_mut()
                .zip(&o)
                .for_each(|(d, &s)| *d = u64::from(s));
            return Ok(c);
        }
    }
    let table = (nbits == 0 && width <= 16 && n > (1usize << width))
        .then(|| table(op, &fmts, out, prj, p3109));
    let nan_code = out.nan_code(false);
    let counts = out_codes
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(ci, chunk)| {
            let mut c = Counts::default();
            let mut vals = [Val {
                v: 0.0,
                sign_bit: false,
                code: 0,
            }; 4];
            for (j, slot) in chunk.iter_mut().enumerate() {
                let i = ci * CHUNK + j;
                let r = match &table {
                    Some(t) => {
                        let mut idx = 0usize;
                        for (f, codes) in operands {
                            idx = (idx << f.bits()) | (codes[i] & f.max_code()) as usize;
                        }
                        t[idx]
                    }
                    None => {
                        for (k, (f, codes)) in operands.iter().enumerate() {
                            vals[k] = operand(f, codes[i]);
                        }
                        eval(op, &fmts, &vals[..fmts.len()], out, prj, p3109, rnd(i))
                    }
                };
                let code = match r.code {
                    Some(code) => code,
                    None => return Err(i),
                };
                *slot = code;
                c.add_flags(
                    r.flags,
                    op.kind() != Kind::Boolean
                        && op.kind() != Kind::Class
                        && Some(code) == nan_code
                        && nan_code.is_some(),
                );
            }
            Ok(c)
        })
        .try_reduce(Counts::default, |a, b| Ok(a.merge(b)));
    counts.map_err(|i| {
        Error::InvalidArgument(format!(
            "element {i}: the result is NaN and {} has no NaN; choose a result format with a NaN",
            out.name()
        ))
    })
}

/// Every result of `op` over every combination of operand codes (first operand in the high
/// bits of the index).
fn table(
    op: Op,
    fmts: &[FloatFormat],
    out: &FloatFormat,
    prj: &Projection,
    p3109: bool,
) -> Vec<Outcome> {
    let width: u32 = fmts.iter().map(|f| f.bits()).sum();
    (0..1usize << width)
        .into_par_iter()
        .with_min_len(1024)
        .map(|idx| {
            let mut vals = [Val {
                v: 0.0,
                sign_bit: false,
                code: 0,
            }; 4];
            let mut rest = width;
            for (k, f) in fmts.iter().enumerate() {
                rest -= f.bits();
                let code = (idx >> rest) as u64 & f.max_code();
                vals[k] = operand(f, code);
            }
            eval(op, fmts, &vals[..fmts.len()], out, prj, p3109, 0)
        })
        .collect()
}

/// The full table of an operation over every pair (or single) of codes of ≤ 8-bit formats:
/// `result[(a << bits_b) | b]`, `None` where the result is NaN and the format has none.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for operations of three or more operands, operands wider than 8
/// bits, or a stochastic rounding.
pub fn full_table(
    op: Op,
    fmts: &[FloatFormat],
    out: &FloatFormat,
    prj: &Projection,
) -> Result<Vec<Outcome>> {
    if op.arity() != fmts.len() || fmts.len() > 2 || fmts.iter().any(|f| f.bits() > 8) {
        return Err(Error::InvalidArgument(format!(
            "a full table is for one- and two-operand operations on formats of at most 8 bits; {op} with {} operand format(s)",
            fmts.len()
        )));
    }
    if prj.rounding.random_bits() != 0 {
        return Err(Error::InvalidArgument(
            "a full table needs a deterministic rounding".into(),
        ));
    }
    let p3109 = family_p3109(fmts, out, op);
    Ok(table(op, fmts, out, prj, p3109))
}

/// A format query of the draft (§4.14) by name: `BitwidthOf`, `PrecisionOf`, `SignednessOf`
/// (1 signed), `DomainOf` (1 extended), `ExponentBitwidthOf`, `TrailingSignificandBitwidthOf`,
/// `ExponentBiasOf`, `MaxFiniteOf`, `MinFiniteOf`, `MinPositiveOf`, `MaxSubnormalOf` (NaN
/// without subnormals), `MinNormalOf`.
pub fn queries(fmt: &FloatFormat) -> Vec<(&'static str, f64)> {
    let m = fmt.man_bits() as i32;
    let max_sub = if fmt.min_subnormal().is_some() {
        fmt.min_normal() - fmt.min_subnormal().unwrap_or(0.0)
    } else {
        f64::NAN
    };
    vec![
        ("BitwidthOf", fmt.bits() as f64),
        ("PrecisionOf", (m + 1) as f64),
        ("SignednessOf", fmt.is_signed() as u8 as f64),
        ("DomainOf", fmt.has_inf() as u8 as f64),
        ("ExponentBitwidthOf", fmt.exp_bits() as f64),
        ("TrailingSignificandBitwidthOf", m as f64),
        ("ExponentBiasOf", fmt.bias() as f64),
        ("MaxFiniteOf", fmt.max_finite()),
        (
            "MinFiniteOf",
            if fmt.is_signed() {
                -fmt.max_finite()
            } else if fmt.has_zero() {
                0.0
            } else {
                fmt.min_normal()
            },
        ),
        ("MinPositiveOf", fmt.min_positive()),
        ("MaxSubnormalOf", max_sub),
        ("MinNormalOf", fmt.min_normal()),
    ]
}
