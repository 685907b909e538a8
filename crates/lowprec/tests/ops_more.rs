//! The non-arithmetic operations of `lowprec::ops` (comparisons, TotalOrder, the predicates
//! and Class, the ten Minimum/Maximum variants, Clamp, CopySign, NextGreaterThan and
//! NextLessThan) on every code, pair or triple of codes of small formats, and the three
//! stochastic roundings of the P3109 draft with the random word `R` given explicitly (every
//! `R` for N ≤ 8 bits, the extremes and a fixed sample for N = 32), on exact and inexact
//! (sticky) results, plus the unbiasedness of the seeded generator.
//!
//! Every expected result comes from definitions written plainly here: a decoder of its own
//! (field layout, bias and special codes of each format, checked once against
//! `FloatFormat::decode`), `f64` comparisons, walks over sorted value lists, and the draft's
//! rounding formulas evaluated with big integers. Nothing calls the library's helpers to
//! compute what it should return.

use lowprec::ops::{self, Op, Projection, Random, Rounding, Saturation, CLASS_NAMES};
use lowprec::FloatFormat;
use num_bigint::BigInt;
use std::cmp::Ordering;
use std::collections::HashMap;

// ---------------------------------------------------------------------------------------
// Formats, described independently of the library
// ---------------------------------------------------------------------------------------

/// How a format spends its special codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// P3109 extended: NaN at `2^(K−1)` (signed) or `2^K − 1` (unsigned), ±Inf at the top.
    P3109Ext,
    /// P3109 finite: the same NaN, no infinities.
    P3109Fin,
    /// IEEE 754: exponent field all ones is ±Inf (mantissa 0) or NaN.
    Ieee,
    /// OCP "fn" (fp8-e4m3): only `S.1111.111` is NaN, no infinities.
    Fn,
    /// No specials at all (fp4-e2m1).
    Plain,
}

#[derive(Clone, Copy, Debug)]
struct Spec {
    fmt: FloatFormat,
    name: &'static str,
    /// Bit width.
    k: u32,
    /// Trailing significand bits.
    m: u32,
    bias: i32,
    signed: bool,
    kind: Kind,
}

impl Spec {
    fn new(name: &'static str, k: u32, m: u32, bias: i32, signed: bool, kind: Kind) -> Spec {
        let s = Spec {
            fmt: FloatFormat::parse(name).unwrap(),
            name,
            k,
            m,
            bias,
            signed,
            kind,
        };
        // the description must be the format the library means by that name
        assert_eq!(s.fmt.bits(), k, "{name}");
        for c in s.codes() {
            let (mine, lib) = (s.value(c), s.fmt.decode(c));
            assert!(
                mine.to_bits() == lib.to_bits() || (mine.is_nan() && lib.is_nan()),
                "{name} code {c:#x}: this test's decoder gives {mine}, the library {lib}"
            );
        }
        s
    }

    fn codes(&self) -> std::ops::Range<u64> {
        0..1u64 << self.k
    }

    fn p3109(&self) -> bool {
        matches!(self.kind, Kind::P3109Ext | Kind::P3109Fin)
    }

    fn sign_bit(&self, c: u64) -> bool {
        self.signed && (c >> (self.k - 1)) & 1 == 1
    }

    /// The value of a code, from the field layout.
    fn value(&self, c: u64) -> f64 {
        let mag_bits = if self.signed { self.k - 1 } else { self.k };
        let all = (1u64 << mag_bits) - 1;
        let mag = c & all;
        let neg = self.sign_bit(c);
        let sgn = |v: f64| if neg { -v } else { v };
        match self.kind {
            Kind::P3109Ext | Kind::P3109Fin => {
                let nan = if self.signed {
                    1u64 << (self.k - 1)
                } else {
                    (1u64 << self.k) - 1
                };
                if c == nan {
                    return f64::NAN;
                }
                let inf = if self.signed { all } else { all - 1 };
                if self.kind == Kind::P3109Ext && mag == inf {
                    return sgn(f64::INFINITY);
                }
            }
            Kind::Ieee => {
                if mag >> self.m == all >> self.m {
                    return if mag & ((1 << self.m) - 1) == 0 {
                        sgn(f64::INFINITY)
                    } else {
                        f64::NAN
                    };
                }
            }
            Kind::Fn => {
                if mag == all {
                    return f64::NAN;
                }
            }
            Kind::Plain => {}
        }
        let e = (mag >> self.m) as i32;
        let t = mag & ((1u64 << self.m) - 1);
        let m = self.m as i32;
        let v = if e == 0 {
            t as f64 * 2f64.powi(1 - self.bias - m)
        } else {
            ((1u64 << m) + t) as f64 * 2f64.powi(e - self.bias - m)
        };
        sgn(v)
    }

    fn min_normal(&self) -> f64 {
        2f64.powi(1 - self.bias)
    }

    fn max_finite(&self) -> f64 {
        self.codes()
            .map(|c| self.value(c))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    }

    /// Code of every non-NaN value (keyed by the `f64`'s bits, so −0 and +0 differ).
    fn code_map(&self) -> HashMap<u64, u64> {
        self.codes()
            .filter(|&c| !self.value(c).is_nan())
            .map(|c| (self.value(c).to_bits(), c))
            .collect()
    }
}

fn p3se() -> Spec {
    Spec::new("binary8p3se", 8, 2, 16, true, Kind::P3109Ext)
}
fn p4se() -> Spec {
    Spec::new("binary8p4se", 8, 3, 8, true, Kind::P3109Ext)
}
fn p2sf4() -> Spec {
    Spec::new("binary4p2sf", 4, 1, 2, true, Kind::P3109Fin)
}
fn e4m3() -> Spec {
    Spec::new("fp8-e4m3", 8, 3, 7, true, Kind::Fn)
}
fn e5m2() -> Spec {
    Spec::new("fp8-e5m2", 8, 2, 15, true, Kind::Ieee)
}
fn fp16() -> Spec {
    Spec::new("fp16", 16, 10, 15, true, Kind::Ieee)
}
fn e2m1() -> Spec {
    Spec::new("fp4-e2m1", 4, 1, 1, true, Kind::Plain)
}
/// More P3109 formats for the predicates and NextGreaterThan/NextLessThan: precision 1,
/// finite, unsigned extended and unsigned finite.
fn more_p3109() -> Vec<Spec> {
    vec![
        Spec::new("binary8p1se", 8, 0, 64, true, Kind::P3109Ext),
        Spec::new("binary8p5sf", 8, 4, 4, true, Kind::P3109Fin),
        Spec::new("binary8p3ue", 8, 2, 32, false, Kind::P3109Ext),
        Spec::new("binary8p1uf", 8, 0, 128, false, Kind::P3109Fin),
    ]
}

/// The five formats every pair of which is checked.
fn five() -> Vec<Spec> {
    vec![p3se(), p4se(), p2sf4(), e4m3(), e5m2()]
}

/// Same-format pairs of the five, and mixed pairs.
fn pairs() -> Vec<(Spec, Spec)> {
    let mut v: Vec<(Spec, Spec)> = five().into_iter().map(|s| (s, s)).collect();
    v.push((p4se(), p3se()));
    v.push((p3se(), p4se()));
    v.push((e4m3(), e5m2()));
    v
}

// ---------------------------------------------------------------------------------------
// Running operations
// ---------------------------------------------------------------------------------------

/// Every result of a one- or two-operand operation, indexed `(a << bits_y) | b`; `None`
/// where the result is NaN in a format without NaN.
fn results(op: Op, ins: &[Spec], out: &Spec) -> Vec<Option<u64>> {
    let fmts: Vec<FloatFormat> = ins.iter().map(|s| s.fmt).collect();
    let prj = Projection::default();
    if ins.iter().all(|s| s.k <= 8) {
        return ops::full_table(op, &fmts, &out.fmt, &prj)
            .unwrap()
            .into_iter()
            .map(|o| o.code)
            .collect();
    }
    // wider: an array over every code (one operand)
    assert_eq!(ins.len(), 1);
    let codes: Vec<u64> = ins[0].codes().collect();
    let mut got = vec![0u64; codes.len()];
    match ops::apply(
        op,
        &[(fmts[0], &codes)],
        &out.fmt,
        &prj,
        Random::Given(&vec![0; codes.len()]),
        &mut got,
    ) {
        Ok(_) => got.into_iter().map(Some).collect(),
        Err(_) => codes
            .iter()
            .map(|&c| {
                ops::apply_scalar(op, &[(fmts[0], c)], &out.fmt, &prj, 0)
                    .unwrap()
                    .code
            })
            .collect(),
    }
}

fn bool_code(b: bool) -> Option<u64> {
    Some(b as u64)
}

/// What a selection returns: an operand, or NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    X,
    Y,
    NaN,
}

/// Check a numeric result against a pick: the chosen operand's own code, or any NaN code.
fn check_pick(out: &Spec, have: Option<u64>, want: Pick, a: u64, b: u64, what: &str) {
    match want {
        Pick::X => assert_eq!(have, Some(a), "{what}: expected x"),
        Pick::Y => assert_eq!(have, Some(b), "{what}: expected y"),
        Pick::NaN => assert!(
            have.is_some_and(|c| out.value(c).is_nan()),
            "{what}: expected NaN, got {have:?}"
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Comparisons and TotalOrder
// ---------------------------------------------------------------------------------------

#[test]
fn comparisons_of_every_pair_follow_the_real_order_and_are_false_with_nan() {
    let mut n = 0u64;
    for (x, y) in pairs() {
        for op in [
            Op::CompareLess,
            Op::CompareLessEqual,
            Op::CompareEqual,
            Op::CompareGreater,
            Op::CompareGreaterEqual,
        ] {
            let t = results(op, &[x, y], &x);
            for a in x.codes() {
                for b in y.codes() {
                    let (u, v) = (x.value(a), y.value(b));
                    // f64's comparisons: false with a NaN, −0 = +0, ±Inf ordered
                    let want = match op {
                        Op::CompareLess => u < v,
                        Op::CompareLessEqual => u <= v,
                        Op::CompareEqual => u == v,
                        Op::CompareGreater => u > v,
                        _ => u >= v,
                    };
                    if u.is_nan() || v.is_nan() {
                        assert!(!want);
                    }
                    let idx = ((a << y.k) | b) as usize;
                    assert_eq!(
                        t[idx],
                        bool_code(want),
                        "{op}({u}, {v}) in {}×{} (codes {a:#x}, {b:#x})",
                        x.name,
                        y.name
                    );
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 5 * (5 * 65536 - 65536 + 256 + 3 * 65536));
}

/// IEEE 754 totalOrder on (value, sign bit of the code): −NaN < −Inf < … < −0 < +0 < … <
/// +Inf < +NaN; NaNs of one sign are not told apart.
fn ieee_total_order(u: f64, su: bool, v: f64, sv: bool) -> bool {
    let rank = |x: f64, s: bool| -> i32 {
        match (x.is_nan(), s) {
            (true, true) => 0,
            (false, _) => 1,
            (true, false) => 2,
        }
    };
    let (ru, rv) = (rank(u, su), rank(v, sv));
    if ru != rv {
        return ru < rv;
    }
    if ru != 1 {
        return true;
    }
    if u == 0.0 && v == 0.0 {
        // −0 ≤ everything zero; +0 ≤ only +0
        return su || !sv;
    }
    u <= v
}

#[test]
fn total_order_puts_p3109_nan_first_and_orders_ieee_codes_by_sign_bit() {
    let mut n = 0u64;
    for (x, y) in pairs() {
        let p3109 = x.p3109() || y.p3109();
        let t = results(Op::TotalOrder, &[x, y], &x);
        for a in x.codes() {
            for b in y.codes() {
                let (u, v) = (x.value(a), y.value(b));
                let want = if p3109 {
                    if u.is_nan() {
                        true
                    } else if v.is_nan() {
                        false
                    } else {
                        u <= v
                    }
                } else {
                    ieee_total_order(u, x.sign_bit(a), v, y.sign_bit(b))
                };
                let idx = ((a << y.k) | b) as usize;
                assert_eq!(
                    t[idx],
                    bool_code(want),
                    "TotalOrder({u}, {v}) in {}×{} (codes {a:#x}, {b:#x})",
                    x.name,
                    y.name
                );
                n += 1;
            }
        }
    }
    assert_eq!(n, 5 * 65536 - 65536 + 256 + 3 * 65536);
    // a few fixed points of the orders, spelled out
    let (p3, e5) = (p3se(), e5m2());
    let to =
        |s: &Spec, a: u64, b: u64| results(Op::TotalOrder, &[*s, *s], s)[((a << 8) | b) as usize];
    assert_eq!(to(&p3, 0x80, 0xff), Some(1), "P3109: NaN before −Inf");
    assert_eq!(to(&p3, 0xff, 0x80), Some(0));
    assert_eq!(to(&p3, 0x80, 0x80), Some(1));
    assert_eq!(to(&e5, 0xfe, 0xfc), Some(1), "IEEE: −NaN before −Inf");
    assert_eq!(to(&e5, 0x7c, 0x7e), Some(1), "IEEE: +Inf before +NaN");
    assert_eq!(to(&e5, 0x7e, 0x7c), Some(0));
    assert_eq!(to(&e5, 0x80, 0x00), Some(1), "IEEE: −0 before +0");
    assert_eq!(to(&e5, 0x00, 0x80), Some(0));
}

// ---------------------------------------------------------------------------------------
// Predicates and Class
// ---------------------------------------------------------------------------------------

#[test]
fn predicates_and_class_of_every_code() {
    let mut specs = five();
    specs.push(fp16());
    specs.push(e2m1());
    specs.extend(more_p3109());
    let mut n = 0u64;
    for s in &specs {
        let ops_list = [
            Op::IsZero,
            Op::IsOne,
            Op::IsNaN,
            Op::IsInfinite,
            Op::IsFinite,
            Op::IsSignMinus,
            Op::IsNormal,
            Op::IsSubnormal,
            Op::Class,
        ];
        let tables: Vec<Vec<Option<u64>>> =
            ops_list.iter().map(|&op| results(op, &[*s], s)).collect();
        for c in s.codes() {
            let v = s.value(c);
            let finite_nonzero = v.is_finite() && v != 0.0;
            let normal = finite_nonzero && v.abs() >= s.min_normal();
            let subnormal = finite_nonzero && v.abs() < s.min_normal();
            let sign_minus = if s.p3109() { v < 0.0 } else { s.sign_bit(c) };
            let class = if v.is_nan() {
                "ClsNaN"
            } else if v == f64::NEG_INFINITY {
                "ClsNegativeInfinity"
            } else if v == f64::INFINITY {
                "ClsPositiveInfinity"
            } else if v == 0.0 {
                if !s.p3109() && s.sign_bit(c) {
                    "ClsNegativeZero"
                } else {
                    "ClsZero"
                }
            } else if v < 0.0 {
                if normal {
                    "ClsNegativeNormal"
                } else {
                    "ClsNegativeSubnormal"
                }
            } else if normal {
                "ClsPositiveNormal"
            } else {
                "ClsPositiveSubnormal"
            };
            let wants = [
                v == 0.0,
                v == 1.0,
                v.is_nan(),
                v.is_infinite(),
                v.is_finite(),
                sign_minus,
                normal,
                subnormal,
            ];
            for (k, want) in wants.iter().enumerate() {
                assert_eq!(
                    tables[k][c as usize],
                    bool_code(*want),
                    "{}({v}) in {} (code {c:#x})",
                    ops_list[k],
                    s.name
                );
                n += 1;
            }
            let got = tables[8][c as usize].expect("a class index");
            assert_eq!(
                CLASS_NAMES.get(got as usize).copied(),
                Some(class),
                "Class({v}) in {} (code {c:#x})",
                s.name
            );
            n += 1;
        }
    }
    assert_eq!(n, 9 * (4 * 256 + 16 + 65536 + 16 + 4 * 256));
}

// ---------------------------------------------------------------------------------------
// Minimum / Maximum and their variants
// ---------------------------------------------------------------------------------------

/// `a < b` for non-NaN values, with −0 below +0.
fn lt(a: f64, b: f64) -> bool {
    a < b || (a == 0.0 && b == 0.0 && a.is_sign_negative() && b.is_sign_positive())
}

fn minimum(x: f64, y: f64) -> Pick {
    if x.is_nan() || y.is_nan() {
        Pick::NaN
    } else if lt(y, x) {
        Pick::Y
    } else {
        Pick::X
    }
}

fn maximum(x: f64, y: f64) -> Pick {
    if x.is_nan() || y.is_nan() {
        Pick::NaN
    } else if lt(x, y) {
        Pick::Y
    } else {
        Pick::X
    }
}

fn min_mag(x: f64, y: f64) -> Pick {
    if x.is_nan() || y.is_nan() {
        Pick::NaN
    } else if x.abs() < y.abs() {
        Pick::X
    } else if y.abs() < x.abs() {
        Pick::Y
    } else {
        minimum(x, y)
    }
}

fn max_mag(x: f64, y: f64) -> Pick {
    if x.is_nan() || y.is_nan() {
        Pick::NaN
    } else if x.abs() > y.abs() {
        Pick::X
    } else if y.abs() > x.abs() {
        Pick::Y
    } else {
        maximum(x, y)
    }
}

/// The Number variant of a selection: a single NaN is ignored.
fn number(x: f64, y: f64, f: fn(f64, f64) -> Pick) -> Pick {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Pick::NaN,
        (true, false) => Pick::Y,
        (false, true) => Pick::X,
        (false, false) => f(x, y),
    }
}

/// MinimumFinite/MaximumFinite: a NaN is ignored, an infinity is ignored when the other
/// operand is finite, two infinities are ordered as usual.
fn finite_variant(x: f64, y: f64, f: fn(f64, f64) -> Pick) -> Pick {
    if x.is_nan() && y.is_nan() {
        return Pick::NaN;
    }
    if x.is_nan() {
        return Pick::Y;
    }
    if y.is_nan() {
        return Pick::X;
    }
    match (x.is_finite(), y.is_finite()) {
        (true, false) => Pick::X,
        (false, true) => Pick::Y,
        _ => f(x, y),
    }
}

#[test]
fn minimum_and_maximum_variants_on_every_pair() {
    type Rule = fn(f64, f64) -> Pick;
    let rules: [(Op, Rule); 10] = [
        (Op::Minimum, minimum),
        (Op::Maximum, maximum),
        (Op::MinimumNumber, |x, y| number(x, y, minimum)),
        (Op::MaximumNumber, |x, y| number(x, y, maximum)),
        (Op::MinimumMagnitude, min_mag),
        (Op::MaximumMagnitude, max_mag),
        (Op::MinimumMagnitudeNumber, |x, y| number(x, y, min_mag)),
        (Op::MaximumMagnitudeNumber, |x, y| number(x, y, max_mag)),
        (Op::MinimumFinite, |x, y| finite_variant(x, y, minimum)),
        (Op::MaximumFinite, |x, y| finite_variant(x, y, maximum)),
    ];
    let mut specs = five();
    specs.push(e2m1());
    let mut n = 0u64;
    for s in &specs {
        for (op, rule) in rules {
            let t = results(op, &[*s, *s], s);
            for a in s.codes() {
                for b in s.codes() {
                    let (x, y) = (s.value(a), s.value(b));
                    let idx = ((a << s.k) | b) as usize;
                    let what = format!("{op}({x}, {y}) in {} (codes {a:#x}, {b:#x})", s.name);
                    check_pick(s, t[idx], rule(x, y), a, b, &what);
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 10 * (4 * 65536 + 256 + 256));
    // the draft's spelled-out cases in binary8p3se (+Inf 0x7f, −Inf 0xff, NaN 0x80, 1 0x40)
    let p3 = p3se();
    let at = |op: Op, a: u64, b: u64| results(op, &[p3, p3], &p3)[((a << 8) | b) as usize];
    assert_eq!(
        at(Op::MinimumMagnitude, 0x7f, 0xff),
        Some(0xff),
        "MinMag(+Inf, −Inf) = −Inf"
    );
    assert_eq!(
        at(Op::MaximumMagnitude, 0xff, 0x7f),
        Some(0x7f),
        "MaxMag(−Inf, +Inf) = +Inf"
    );
    assert_eq!(at(Op::MinimumFinite, 0x7f, 0x40), Some(0x40));
    assert_eq!(at(Op::MaximumFinite, 0xff, 0x80), Some(0xff), "NaN ignored");
    assert_eq!(
        at(Op::MaximumFinite, 0xff, 0x7f),
        Some(0x7f),
        "two infinities"
    );
    assert_eq!(at(Op::MinimumNumber, 0x80, 0x80), Some(0x80));
    assert_eq!(
        at(Op::MinimumMagnitude, 0x40, 0xc0),
        Some(0xc0),
        "ties: the smaller"
    );
    assert_eq!(
        at(Op::MaximumMagnitude, 0xc0, 0x40),
        Some(0x40),
        "ties: the larger"
    );
    let e5 = e5m2();
    let at5 = |op: Op, a: u64, b: u64| results(op, &[e5, e5], &e5)[((a << 8) | b) as usize];
    assert_eq!(at5(Op::Minimum, 0x00, 0x80), Some(0x80), "min(+0, −0) = −0");
    assert_eq!(at5(Op::Maximum, 0x80, 0x00), Some(0x00), "max(−0, +0) = +0");
}

// ---------------------------------------------------------------------------------------
// Clamp
// ---------------------------------------------------------------------------------------

#[test]
fn clamp_on_every_triple_of_4_and_6_bit_codes() {
    let mut n = 0u64;
    // and a 6-bit extended format, for the infinite bounds
    let p6 = Spec::new("binary6p3se", 6, 2, 4, true, Kind::P3109Ext);
    for s in [p2sf4(), e2m1(), p6] {
        let codes: Vec<u64> = s.codes().collect();
        let mut xs = vec![];
        let mut los = vec![];
        let mut his = vec![];
        for &x in &codes {
            for &lo in &codes {
                for &hi in &codes {
                    xs.push(x);
                    los.push(lo);
                    his.push(hi);
                }
            }
        }
        let prj = Projection::default();
        // the array form where it can give every result (a format with NaN)
        let mut arr = vec![0u64; xs.len()];
        let array = ops::apply(
            Op::Clamp,
            &[(s.fmt, &xs), (s.fmt, &los), (s.fmt, &his)],
            &s.fmt,
            &prj,
            Random::Given(&vec![0; xs.len()]),
            &mut arr,
        )
        .is_ok();
        assert_eq!(array, s.kind != Kind::Plain);
        for i in 0..xs.len() {
            let (a, l, h) = (xs[i], los[i], his[i]);
            let (x, lo, hi) = (s.value(a), s.value(l), s.value(h));
            let have = ops::apply_scalar(
                Op::Clamp,
                &[(s.fmt, a), (s.fmt, l), (s.fmt, h)],
                &s.fmt,
                &prj,
                0,
            )
            .unwrap()
            .code;
            if array {
                assert_eq!(Some(arr[i]), have, "array and scalar forms agree");
            }
            let what = format!("Clamp({x}, {lo}, {hi}) in {}", s.name);
            // Clamp = Maximum(lo, Minimum(x, hi)) once neither NaN nor lo > hi
            if x.is_nan() || lo.is_nan() || hi.is_nan() || lt(hi, lo) {
                if s.kind == Kind::Plain {
                    assert_eq!(have, None, "{what}: NaN, which the format lacks");
                } else {
                    check_pick(&s, have, Pick::NaN, 0, 0, &what);
                }
            } else {
                let inner = if lt(hi, x) { (hi, h) } else { (x, a) };
                let want = if lt(inner.0, lo) { l } else { inner.1 };
                assert_eq!(have, Some(want), "{what} (codes {a:#x}, {l:#x}, {h:#x})");
            }
            n += 1;
        }
    }
    assert_eq!(n, 2 * 4096 + 64 * 64 * 64);
    // the draft's rows with infinite bounds (binary6p3se: +Inf 0x1f, −Inf 0x3f, NaN 0x20,
    // 1 = 0x10, 2 = 0x14)
    let clamp = |x: u64, lo: u64, hi: u64| {
        ops::apply_scalar(
            Op::Clamp,
            &[(p6.fmt, x), (p6.fmt, lo), (p6.fmt, hi)],
            &p6.fmt,
            &Projection::default(),
            0,
        )
        .unwrap()
        .code
    };
    assert_eq!(
        clamp(0x10, 0x1f, 0x1f),
        Some(0x1f),
        "(x, +Inf, +Inf) → +Inf"
    );
    assert_eq!(
        clamp(0x10, 0x3f, 0x3f),
        Some(0x3f),
        "(x, −Inf, −Inf) → −Inf"
    );
    assert_eq!(clamp(0x10, 0x1f, 0x14), Some(0x20), "lo = +Inf > hi → NaN");
    assert_eq!(clamp(0x10, 0x10, 0x3f), Some(0x20), "hi = −Inf < lo → NaN");
    assert_eq!(clamp(0x1f, 0x3f, 0x14), Some(0x14), "+Inf clamped to hi");
    assert_eq!(clamp(0x10, 0x14, 0x14), Some(0x14));
}

// ---------------------------------------------------------------------------------------
// CopySign
// ---------------------------------------------------------------------------------------

#[test]
fn copysign_on_every_pair() {
    let mut cases: Vec<(Spec, Spec, Spec)> = five().into_iter().map(|s| (s, s, s)).collect();
    cases.push((e2m1(), e2m1(), e2m1()));
    cases.push((p4se(), p3se(), p4se()));
    cases.push((e4m3(), e5m2(), e4m3()));
    cases.push((p3se(), e5m2(), p3se()));
    let mut n = 0u64;
    for (x, y, out) in cases {
        let p3109 = x.p3109() || y.p3109() || out.p3109();
        let map = out.code_map();
        let t = results(Op::CopySign, &[x, y], &out);
        for a in x.codes() {
            for b in y.codes() {
                let (u, v) = (x.value(a), y.value(b));
                let idx = ((a << y.k) | b) as usize;
                let what = format!("CopySign({u}, {v}) {}×{}→{}", x.name, y.name, out.name);
                let have = t[idx];
                let nan = if p3109 {
                    u.is_nan() || v.is_nan()
                } else {
                    u.is_nan()
                };
                if nan {
                    check_pick(&out, have, Pick::NaN, 0, 0, &what);
                } else {
                    let negative = if p3109 { v < 0.0 } else { y.sign_bit(b) };
                    let mut r = if negative { -u.abs() } else { u.abs() };
                    if p3109 && r == 0.0 {
                        r = 0.0; // no −0
                    }
                    assert_eq!(have, map.get(&r.to_bits()).copied(), "{what}");
                    if !p3109 && x.name == y.name && x.name == out.name {
                        // the bit form: x's magnitude bits, y's sign bit
                        let sign = 1u64 << (x.k - 1);
                        assert_eq!(have, Some((a & !sign) | (b & sign)), "{what}");
                    }
                }
                n += 1;
            }
        }
    }
    assert_eq!(n, 5 * 65536 - 65536 + 256 + 256 + 3 * 65536);
}

// ---------------------------------------------------------------------------------------
// NextGreaterThan / NextLessThan
// ---------------------------------------------------------------------------------------

#[test]
fn next_greater_and_next_less_walk_the_sorted_p3109_values() {
    let mut specs = vec![p3se(), p4se(), p2sf4()];
    specs.extend(more_p3109());
    let mut n = 0u64;
    for s in &specs {
        // every value but NaN, ascending (P3109: one code per value)
        let mut sorted: Vec<(f64, u64)> = s
            .codes()
            .map(|c| (s.value(c), c))
            .filter(|(v, _)| !v.is_nan())
            .collect();
        sorted.sort_by(|p, q| p.0.partial_cmp(&q.0).unwrap());
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        let up = results(Op::NextGreaterThan, &[*s], s);
        let down = results(Op::NextLessThan, &[*s], s);
        for c in s.codes() {
            let v = s.value(c);
            let (want_up, want_down) = match sorted.iter().position(|p| p.1 == c) {
                None => (None, None), // NaN → NaN
                Some(i) => (
                    sorted.get(i + 1).map(|p| p.1),
                    i.checked_sub(1).map(|j| sorted[j].1),
                ),
            };
            for (have, want, name) in [
                (up[c as usize], want_up, "NextGreaterThan"),
                (down[c as usize], want_down, "NextLessThan"),
            ] {
                match want {
                    Some(w) => assert_eq!(have, Some(w), "{name}({v}) in {}", s.name),
                    None => assert!(
                        have.is_some_and(|h| s.value(h).is_nan()),
                        "{name}({v}) in {}: NaN expected, got {have:?}",
                        s.name
                    ),
                }
                n += 1;
            }
        }
    }
    assert_eq!(n, 2 * (2 * 256 + 16 + 4 * 256));
    // the draft's table, spot checks in binary8p3se and binary4p2sf
    let p3 = p3se();
    let ngt = results(Op::NextGreaterThan, &[p3], &p3);
    let nlt = results(Op::NextLessThan, &[p3], &p3);
    assert_eq!(ngt[0x7e], Some(0x7f), "NGT(MaxFinite) = +Inf (extended)");
    assert_eq!(ngt[0x7f], Some(0x80), "NGT(+Inf) = NaN");
    assert_eq!(ngt[0xff], Some(0xfe), "NGT(−Inf) = MinFinite");
    assert_eq!(ngt[0x81], Some(0x00), "NGT(SmallestNegative) = 0");
    assert_eq!(nlt[0x00], Some(0x81), "NLT(0) = SmallestNegative");
    assert_eq!(nlt[0xff], Some(0x80), "NLT(−Inf) = NaN");
    assert_eq!(nlt[0xfe], Some(0xff), "NLT(MinFinite) = −Inf");
    let f4 = p2sf4();
    assert_eq!(results(Op::NextGreaterThan, &[f4], &f4)[0x7], Some(0x8));
    assert_eq!(results(Op::NextLessThan, &[f4], &f4)[0xf], Some(0x8));
}

/// IEEE 754 nextUp on a value list: the least value comparing greater (`−0` after the
/// negative value of least magnitude); `+Inf` stays; past the largest finite value of a
/// format without Inf: NaN if it has one, else the value itself (the module's table).
fn next_up_ref(s: &Spec, map: &HashMap<u64, u64>, sorted: &[f64], c: u64) -> Option<u64> {
    let x = s.value(c);
    if x.is_nan() {
        return None;
    }
    if x == f64::INFINITY {
        return Some(c);
    }
    let i = sorted.partition_point(|&v| v <= x);
    match sorted.get(i) {
        Some(&y) => {
            let y = if y == 0.0 { -0.0 } else { y }; // only reached from below zero
            Some(map[&y.to_bits()])
        }
        None => {
            if s.kind == Kind::Plain {
                Some(c)
            } else {
                None
            }
        }
    }
}

fn next_down_ref(s: &Spec, map: &HashMap<u64, u64>, sorted: &[f64], c: u64) -> Option<u64> {
    let x = s.value(c);
    if x.is_nan() {
        return None;
    }
    if x == f64::NEG_INFINITY {
        return Some(c);
    }
    let i = sorted.partition_point(|&v| v < x);
    match i.checked_sub(1).map(|j| sorted[j]) {
        Some(y) => {
            let y = if y == 0.0 { 0.0 } else { y }; // only reached from above zero
            Some(map[&y.to_bits()])
        }
        None => {
            if s.kind == Kind::Plain {
                Some(c)
            } else {
                None
            }
        }
    }
}

#[test]
fn ieee_next_up_and_next_down_on_every_code() {
    let mut n = 0u64;
    for s in [e5m2(), fp16(), e4m3(), e2m1()] {
        let map = s.code_map();
        // distinct non-NaN values, ascending (−0 and +0 as one 0)
        let mut sorted: Vec<f64> = s
            .codes()
            .map(|c| s.value(c))
            .filter(|v| !v.is_nan())
            .map(|v| if v == 0.0 { 0.0 } else { v })
            .collect();
        sorted.sort_by(|p, q| p.partial_cmp(q).unwrap());
        sorted.dedup();
        let up = results(Op::NextGreaterThan, &[s], &s);
        let down = results(Op::NextLessThan, &[s], &s);
        for c in s.codes() {
            let v = s.value(c);
            for (have, want, name) in [
                (up[c as usize], next_up_ref(&s, &map, &sorted, c), "nextUp"),
                (
                    down[c as usize],
                    next_down_ref(&s, &map, &sorted, c),
                    "nextDown",
                ),
            ] {
                match want {
                    Some(w) => assert_eq!(
                        have,
                        Some(w),
                        "{name}({v}) in {} (code {c:#x}): want {}",
                        s.name,
                        s.value(w)
                    ),
                    None => assert!(
                        have.is_some_and(|h| s.value(h).is_nan()),
                        "{name}({v}) in {}: NaN expected, got {have:?}",
                        s.name
                    ),
                }
                n += 1;
            }
        }
    }
    assert_eq!(n, 2 * (256 + 65536 + 256 + 16));
    // IEEE 754's spelled-out cases in fp16
    let h = fp16();
    let up = results(Op::NextGreaterThan, &[h], &h);
    let down = results(Op::NextLessThan, &[h], &h);
    assert_eq!(up[0x7c00], Some(0x7c00), "nextUp(+Inf) = +Inf");
    assert_eq!(up[0xfc00], Some(0xfbff), "nextUp(−Inf) = −max");
    assert_eq!(up[0x8000], Some(0x0001), "nextUp(−0) = min subnormal");
    assert_eq!(up[0x0000], Some(0x0001), "nextUp(+0) = min subnormal");
    assert_eq!(up[0x8001], Some(0x8000), "nextUp(−min subnormal) = −0");
    assert_eq!(down[0x0001], Some(0x0000), "nextDown(+min subnormal) = +0");
    assert_eq!(down[0x0000], Some(0x8001), "nextDown(+0) = −min subnormal");
    assert_eq!(down[0xfc00], Some(0xfc00), "nextDown(−Inf) = −Inf");
    assert_eq!(up[0x7bff], Some(0x7c00), "nextUp(max) = +Inf");
    // fp8-e4m3 (no Inf, has NaN): past ±448 is NaN; fp4-e2m1 (neither): ±6 stays
    let e4 = e4m3();
    let up4 = results(Op::NextGreaterThan, &[e4], &e4);
    assert!(e4.value(up4[0x7e].unwrap()).is_nan());
    let f4 = e2m1();
    assert_eq!(results(Op::NextGreaterThan, &[f4], &f4)[0x7], Some(0x7));
    assert_eq!(results(Op::NextLessThan, &[f4], &f4)[0xf], Some(0xf));
}

// ---------------------------------------------------------------------------------------
// Stochastic roundings (the draft's §4.7.4 formulas) with every R
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Rat {
    n: BigInt, // > 0
    d: BigInt, // > 0
}

impl Rat {
    /// `|v|` for a finite nonzero `f64`, from its fields.
    fn abs_of(v: f64) -> Rat {
        let bits = v.to_bits();
        let field = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1u64 << 52) - 1);
        let (m, e) = if field == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), field - 1075)
        };
        assert!(m != 0);
        let one = BigInt::from(1);
        if e >= 0 {
            Rat {
                n: BigInt::from(m) << e as usize,
                d: one,
            }
        } else {
            Rat {
                n: BigInt::from(m),
                d: one << (-e) as usize,
            }
        }
    }

    /// `⌊log2 (n/d)⌋`.
    fn floor_log2(&self) -> i64 {
        let mut lg = self.n.bits() as i64 - self.d.bits() as i64;
        // n/d ≥ 2^lg ?
        let below = if lg >= 0 {
            self.n < (&self.d << lg as usize)
        } else {
            (&self.n << (-lg) as usize) < self.d
        };
        if below {
            lg -= 1;
        }
        lg
    }

    /// `n·2^s` and `d` as two integers with the same ratio.
    fn scaled(&self, s: i64) -> (BigInt, BigInt) {
        if s >= 0 {
            (&self.n << s as usize, self.d.clone())
        } else {
            (self.n.clone(), &self.d << (-s) as usize)
        }
    }
}

/// An exact operation result before rounding.
#[derive(Clone, Debug)]
enum Exact {
    Nan,
    Inf(bool),
    Zero,
    /// `±q`.
    Num(bool, Rat),
    /// `+√q`.
    Sqrt(Rat),
}

impl Exact {
    fn of(v: f64) -> Exact {
        if v.is_nan() {
            Exact::Nan
        } else if v.is_infinite() {
            Exact::Inf(v < 0.0)
        } else if v == 0.0 {
            Exact::Zero
        } else {
            Exact::Num(v < 0.0, Rat::abs_of(v))
        }
    }

    /// `⌊log2 |X|⌋` of a nonzero finite value.
    fn floor_log2(&self) -> i64 {
        match self {
            Exact::Num(_, q) => q.floor_log2(),
            // ⌊(log2 q)/2⌋ = ⌊⌊log2 q⌋/2⌋
            Exact::Sqrt(q) => q.floor_log2().div_euclid(2),
            _ => unreachable!(),
        }
    }

    /// `⌊|X|·2^s⌋` and whether `|X|·2^s` is an integer.
    fn floor_scaled(&self, s: i64) -> (BigInt, bool) {
        match self {
            Exact::Num(_, q) => {
                let (n, d) = q.scaled(s);
                let f = &n / &d;
                let exact = &f * &d == n;
                (f, exact)
            }
            Exact::Sqrt(q) => {
                // ⌊√y⌋ = ⌊√⌊y⌋⌋ for y = q·2^(2s)
                let (n, d) = q.scaled(2 * s);
                let f = (&n / &d).sqrt();
                let exact = &f * &f * &d == n;
                (f, exact)
            }
            _ => unreachable!(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    A,
    B,
    C,
}

/// One inexact or exact nonzero value rounded to precision `p` with bias `b`:
/// `Q = max(⌊log2 |X|⌋, 1 − B) − P + 1`, `S̃ = |X|·2^−Q`, `ν = S̃ − ⌊S̃⌋`.
struct Split {
    x: Exact,
    q: i64,
    floor: BigInt,
    exact: bool,
}

impl Split {
    fn new(x: &Exact, p: i64, b: i64) -> Split {
        let q = x.floor_log2().max(1 - b) - p + 1;
        let (floor, exact) = x.floor_scaled(-q);
        Split {
            x: x.clone(),
            q,
            floor,
            exact,
        }
    }

    /// `⌊ν·2^j⌋` and whether `ν·2^j` is an integer.
    fn nu_bits(&self, j: u32) -> (u64, bool) {
        let (f, exact) = self.x.floor_scaled(j as i64 - self.q);
        let t = f - (&self.floor << j as usize);
        (u64::try_from(t).unwrap(), exact)
    }

    /// What the draft compares with `2^N` (A, C) or `2^(N+1)` (B) before adding the random
    /// part: A `⌊ν·2^N⌋`, B `⌊ν·2^(N+1)⌋`, C `RNITE(ν·2^N)` (nearest integer, ties to even).
    fn t(&self, v: Variant, n: u32) -> u64 {
        match v {
            Variant::A => self.nu_bits(n).0,
            Variant::B => self.nu_bits(n + 1).0,
            Variant::C => {
                // ν·2^N = fl + frac; ⌊ν·2^(N+1)⌋ = 2·fl + (frac ≥ ½)
                let (u, exact) = self.nu_bits(n + 1);
                let fl = u >> 1;
                if u % 2 == 0 {
                    fl // frac < ½
                } else if exact {
                    fl + fl % 2 // frac = ½: the even one
                } else {
                    fl + 1
                }
            }
        }
    }
}

fn rounds_away(v: Variant, n: u32, t: u64, r: u64) -> bool {
    match v {
        Variant::A => t + r >= 1 << n,
        Variant::B => t + 2 * r + 1 >= 1 << (n + 1),
        Variant::C => t + r >= 1 << n,
    }
}

/// The code of `(−1)^neg · S · 2^Q` in an extended signed P3109 format under SatNone:
/// 0 for S = 0 (no −0), ±Inf beyond the largest finite value.
fn code_of_sq(out: &Spec, map: &HashMap<u64, u64>, max: f64, neg: bool, s: &BigInt, q: i64) -> u64 {
    if *s == BigInt::from(0) {
        return 0;
    }
    let s = u64::try_from(s).unwrap();
    assert!(s <= 1 << (out.m + 1), "S is at most 2^P");
    let v = s as f64 * 2f64.powi(q as i32);
    let v = if v > max { f64::INFINITY } else { v };
    let v = if neg { -v } else { v };
    *map.get(&v.to_bits())
        .unwrap_or_else(|| panic!("{v} is not a value of {}", out.name))
}

/// For each case: a fixed code (NaN, Inf, 0) or the split and the codes of `⌊S̃⌋` and
/// `⌊S̃⌋ + 1`.
enum Prep {
    Fixed(u64),
    Round(Split, u64, u64),
}

fn prepare(out: &Spec, map: &HashMap<u64, u64>, max: f64, e: &Exact) -> Prep {
    assert!(out.kind == Kind::P3109Ext && out.signed);
    let p = out.m as i64 + 1;
    let inf = |neg: bool| map[&(if neg { -f64::INFINITY } else { f64::INFINITY }).to_bits()];
    match e {
        Exact::Nan => Prep::Fixed(1 << (out.k - 1)),
        Exact::Inf(neg) => Prep::Fixed(inf(*neg)),
        Exact::Zero => Prep::Fixed(0),
        Exact::Num(..) | Exact::Sqrt(_) => {
            let neg = matches!(e, Exact::Num(true, _));
            let s = Split::new(e, p, out.bias as i64);
            let lo = code_of_sq(out, map, max, neg, &s.floor, s.q);
            let hi = code_of_sq(out, map, max, neg, &(&s.floor + 1), s.q);
            Prep::Round(s, lo, hi)
        }
    }
}

/// Random words for `N` bits: every one below `2^N` up to 8 bits, else the extremes and a
/// fixed sample.
fn words(n: u32) -> Vec<u32> {
    if n <= 8 {
        return (0..1u32 << n).collect();
    }
    let top = ((1u64 << n) - 1) as u32;
    let mut v = vec![0, 1, top / 2, top / 2 + 1, top - 1, top];
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..26 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v.push((s & top as u64) as u32);
    }
    v
}

/// Run `op` on the operand arrays into `out` under every stochastic variant with each `N`
/// in `ns` and the random words of [`words`], checking each element against the draft's
/// formula. Returns the number of results checked.
fn check_stochastic(
    op: Op,
    operands: &[(FloatFormat, &[u64])],
    exact: &[Exact],
    out: &Spec,
    ns: &[u32],
) -> u64 {
    let map = out.code_map();
    let max = out.max_finite();
    let preps: Vec<Prep> = exact.iter().map(|e| prepare(out, &map, max, e)).collect();
    let len = exact.len();
    let mut got = vec![0u64; len];
    let mut checked = 0u64;
    let (mut exact_cases, mut inexact_cases) = (0u64, 0u64);
    for v in [Variant::A, Variant::B, Variant::C] {
        for &n in ns {
            let rounding = match v {
                Variant::A => Rounding::StochasticA(n as u8),
                Variant::B => Rounding::StochasticB(n as u8),
                Variant::C => Rounding::StochasticC(n as u8),
            };
            let prj = Projection::new(rounding, Saturation::None);
            let ts: Vec<u64> = preps
                .iter()
                .map(|p| match p {
                    Prep::Fixed(_) => 0,
                    Prep::Round(s, _, _) => s.t(v, n),
                })
                .collect();
            for r in words(n) {
                ops::apply(
                    op,
                    operands,
                    &out.fmt,
                    &prj,
                    Random::Given(&vec![r; len]),
                    &mut got,
                )
                .unwrap();
                for i in 0..len {
                    let want = match &preps[i] {
                        Prep::Fixed(c) => *c,
                        Prep::Round(s, lo, hi) => {
                            let away = rounds_away(v, n, ts[i], r as u64);
                            if s.exact {
                                // an exact value is never changed
                                assert!(!away && ts[i] == 0);
                                exact_cases += 1;
                            } else {
                                inexact_cases += 1;
                            }
                            if away {
                                *hi
                            } else {
                                *lo
                            }
                        }
                    };
                    if got[i] != want {
                        let ins: Vec<f64> = operands.iter().map(|(f, c)| f.decode(c[i])).collect();
                        panic!(
                            "{op}{ins:?} → {} under {} with R = {r}: got {:#x} ({}), want {want:#x} ({})",
                            out.name,
                            rounding.name(),
                            got[i],
                            out.value(got[i]),
                            out.value(want)
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(inexact_cases > 0);
    if op != Op::Divide && op != Op::Sqrt {
        assert!(exact_cases > 0);
    }
    checked
}

#[test]
fn stochastic_conversions_of_every_fp16_code_into_binary8p3se_for_every_r() {
    let h = fp16();
    let out = p3se();
    let codes: Vec<u64> = h.codes().collect();
    let exact: Vec<Exact> = codes.iter().map(|&c| Exact::of(h.value(c))).collect();
    let n = check_stochastic(
        Op::Convert,
        &[(h.fmt, &codes)],
        &exact,
        &out,
        &[1, 4, 8, 32],
    );
    assert_eq!(n, 3 * 65536 * (2 + 16 + 256 + 32));
}

#[test]
fn stochastic_square_roots_of_every_fp16_code_into_binary8p3se() {
    let h = fp16();
    let out = p3se();
    let codes: Vec<u64> = h.codes().collect();
    let exact: Vec<Exact> = codes
        .iter()
        .map(|&c| {
            let v = h.value(c);
            if v.is_nan() || v < 0.0 {
                Exact::Nan
            } else if v == 0.0 {
                Exact::Zero
            } else if v.is_infinite() {
                Exact::Inf(false)
            } else {
                Exact::Sqrt(Rat::abs_of(v))
            }
        })
        .collect();
    // (the library's square root is slow: N = 8 is left out here)
    let n = check_stochastic(Op::Sqrt, &[(h.fmt, &codes)], &exact, &out, &[1, 4, 32]);
    assert_eq!(n, 3 * 65536 * (2 + 16 + 32));
}

#[test]
fn stochastic_sums_products_and_quotients_of_every_binary8p4se_pair_for_every_r() {
    let x = p4se();
    let out = p3se();
    let mut a = vec![];
    let mut b = vec![];
    for i in x.codes() {
        for j in x.codes() {
            a.push(i);
            b.push(j);
        }
    }
    let zero = BigInt::from(0);
    // exact results, P3109: no −0, x/0 is NaN
    let sum = |u: f64, v: f64| -> Exact {
        if u.is_nan() || v.is_nan() || (u.is_infinite() && v.is_infinite() && u != v) {
            return Exact::Nan;
        }
        if u.is_infinite() {
            return Exact::Inf(u < 0.0);
        }
        if v.is_infinite() {
            return Exact::Inf(v < 0.0);
        }
        let part = |w: f64| {
            if w == 0.0 {
                (BigInt::from(0), BigInt::from(1))
            } else {
                let q = Rat::abs_of(w);
                (if w < 0.0 { -q.n } else { q.n }, q.d)
            }
        };
        let ((nu, du), (nv, dv)) = (part(u), part(v));
        let n = nu * &dv + nv * &du;
        let d = du * dv;
        match n.cmp(&zero) {
            Ordering::Equal => Exact::Zero,
            Ordering::Less => Exact::Num(true, Rat { n: -n, d }),
            Ordering::Greater => Exact::Num(false, Rat { n, d }),
        }
    };
    let product = |u: f64, v: f64| -> Exact {
        if u.is_nan() || v.is_nan() {
            return Exact::Nan;
        }
        let neg = (u < 0.0) != (v < 0.0);
        if u.is_infinite() || v.is_infinite() {
            return if u == 0.0 || v == 0.0 {
                Exact::Nan
            } else {
                Exact::Inf(neg)
            };
        }
        if u == 0.0 || v == 0.0 {
            return Exact::Zero;
        }
        let (p, q) = (Rat::abs_of(u), Rat::abs_of(v));
        Exact::Num(
            neg,
            Rat {
                n: p.n * q.n,
                d: p.d * q.d,
            },
        )
    };
    let quotient = |u: f64, v: f64| -> Exact {
        if u.is_nan() || v.is_nan() || v == 0.0 || (u.is_infinite() && v.is_infinite()) {
            return Exact::Nan;
        }
        let neg = (u < 0.0) != (v < 0.0);
        if u.is_infinite() {
            return Exact::Inf(neg);
        }
        if v.is_infinite() || u == 0.0 {
            return Exact::Zero;
        }
        let (p, q) = (Rat::abs_of(u), Rat::abs_of(v));
        Exact::Num(
            neg,
            Rat {
                n: p.n * q.d,
                d: p.d * q.n,
            },
        )
    };
    type Reference<'a> = &'a dyn Fn(f64, f64) -> Exact;
    let mut n = 0;
    for (op, f) in [
        (Op::Add, &sum as Reference),
        (Op::Multiply, &product),
        (Op::Divide, &quotient),
    ] {
        let exact: Vec<Exact> = a
            .iter()
            .zip(&b)
            .map(|(&i, &j)| f(x.value(i), x.value(j)))
            .collect();
        n += check_stochastic(op, &[(x.fmt, &a), (x.fmt, &b)], &exact, &out, &[4, 32]);
    }
    assert_eq!(n, 3 * 3 * 65536 * (16 + 32));
}

/// The mean value of the codes.
fn mean_of(codes: &[u64], out: &Spec) -> f64 {
    codes.iter().map(|&c| out.value(c)).sum::<f64>() / codes.len() as f64
}

#[test]
fn stochastic_roundings_with_32_seeded_bits_are_unbiased() {
    let out = p3se();
    let n = 1_000_000usize;
    // a binary32 operand between two binary8p3se neighbours (1.1 between 1 and 1.25), one
    // below the smallest subnormal (2^−17), one negative
    for (x, lo, hi) in [
        (1.1f32, 1.0f64, 1.25f64),
        (3.0e-6, 0.0, 2f64.powi(-17)),
        (-300.7, -256.0, -320.0),
    ] {
        let xv = x as f64;
        assert!(lo < xv && xv < hi || hi < xv && xv < lo);
        let codes = vec![x.to_bits() as u64; n];
        for rounding in [
            Rounding::StochasticA(32),
            Rounding::StochasticB(32),
            Rounding::StochasticC(32),
        ] {
            let mut got = vec![0u64; n];
            ops::apply(
                Op::Convert,
                &[(FloatFormat::FP32, &codes)],
                &out.fmt,
                &Projection::new(rounding, Saturation::None),
                Random::Seeded {
                    seed: 0x5eed_1234,
                    index_offset: 7,
                },
                &mut got,
            )
            .unwrap();
            assert!(
                got.iter()
                    .all(|&c| out.value(c) == lo || out.value(c) == hi),
                "{x} under {}: only the two neighbours",
                rounding.name()
            );
            let p = (xv - lo) / (hi - lo);
            let sigma = (hi - lo).abs() * (p * (1.0 - p) / n as f64).sqrt();
            let mean = mean_of(&got, &out);
            assert!(
                (mean - xv).abs() <= 4.0 * sigma,
                "{x} under {}: mean {mean}, |mean − x| = {:e} > 4σ = {:e}",
                rounding.name(),
                (mean - xv).abs(),
                4.0 * sigma
            );
        }
    }
    // with 4 bits StochasticA goes away with probability ⌊ν·16⌋/16 = 6/16 for 1.1 (ν ≈ 0.4):
    // the seeded R must be the top 4 bits, uniform
    let x = 1.1f32;
    let codes = vec![x.to_bits() as u64; n];
    let mut got = vec![0u64; n];
    ops::apply(
        Op::Convert,
        &[(FloatFormat::FP32, &codes)],
        &out.fmt,
        &Projection::new(Rounding::StochasticA(4), Saturation::None),
        Random::Seeded {
            seed: 99,
            index_offset: 0,
        },
        &mut got,
    )
    .unwrap();
    let mean = mean_of(&got, &out);
    let p = 6.0 / 16.0;
    let want = 1.0 + 0.25 * p;
    let sigma = 0.25 * (p * (1.0f64 - p) / n as f64).sqrt();
    assert!(
        (mean - want).abs() <= 4.0 * sigma,
        "StochasticA4: mean {mean}, want {want} ± {}",
        4.0 * sigma
    );
    assert!(
        (mean - x as f64).abs() > 20.0 * sigma,
        "A4 is biased toward zero"
    );
}
