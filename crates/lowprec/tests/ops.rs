//! Every arithmetic operation of `lowprec::ops` against an exact reference written plainly
//! here with big-integer rationals: every pair of codes of every 8-bit P3109 format and of
//! fp8-e4m3, fp8-e5m2, fp6, fp4, under every deterministic rounding and every saturation
//! mode; FMA and FAA on every triple of 4- and 6-bit formats.
//!
//! The reference brackets the exact result between two neighbours of the format's value list
//! (extended by one step beyond ±max), picks one by the rounding's definition, and applies
//! the saturation table transcribed from the draft (P3109 formats) or lowprec's conversion
//! rules (the others). It shares no code with the library's projection.

mod common;

use common::rat::Rat;
use lowprec::ops::{self, Draft, Op, Projection, Rounding, Saturation};
use lowprec::{FloatFormat, Specials};
use std::cmp::Ordering;

/// An exact result: NaN (invalid?), ±Inf, zero (sign normally, sign under rdn), a rational,
/// or the square root / reciprocal square root of a positive rational.
#[derive(Clone, Debug)]
#[allow(dead_code)] // Nan's flag: shown in failure messages
enum R {
    Nan(bool),
    Inf(bool),
    Zero(bool, bool),
    Num(Rat),
    Sqrt(Rat),
    InvSqrt(Rat),
}

impl R {
    fn negative(&self) -> bool {
        match self {
            R::Num(q) => q.sign() == Ordering::Less,
            _ => false,
        }
    }
    /// The exact value compared with `c`.
    fn cmp(&self, c: &Rat) -> Ordering {
        match self {
            R::Num(q) => q.cmp(c),
            R::Sqrt(q) => {
                if c.sign() != Ordering::Greater {
                    Ordering::Greater
                } else {
                    q.cmp(&c.mul(c))
                }
            }
            R::InvSqrt(q) => {
                if c.sign() != Ordering::Greater {
                    Ordering::Greater
                } else {
                    // 1/√q vs c  ⇔  1 vs c²·q
                    Rat::of(1.0).cmp(&c.mul(c).mul(q))
                }
            }
            _ => unreachable!(),
        }
    }
}

fn from_f64(v: f64) -> R {
    if v.is_nan() {
        R::Nan(false)
    } else if v.is_infinite() {
        R::Inf(v < 0.0)
    } else if v == 0.0 {
        R::Zero(v.is_sign_negative(), v.is_sign_negative())
    } else {
        R::Num(Rat::of(v))
    }
}

/// IEEE 754 / P3109 exact results, written from the standards' tables.
fn reference(op: Op, x: &[f64], p3109: bool) -> R {
    let nan = x.iter().any(|v| v.is_nan());
    match op {
        Op::Convert => from_f64(x[0]),
        Op::Negate => from_f64(-x[0]),
        Op::Abs => from_f64(x[0].abs()),
        Op::Add | Op::Subtract | Op::Faa => {
            let mut t: Vec<f64> = x.to_vec();
            if op == Op::Subtract {
                t[1] = -t[1];
            }
            if nan {
                return R::Nan(false);
            }
            let pinf = t.contains(&f64::INFINITY);
            let ninf = t.contains(&f64::NEG_INFINITY);
            if pinf && ninf {
                return R::Nan(true);
            }
            if pinf || ninf {
                return R::Inf(ninf);
            }
            let s = t.iter().fold(Rat::of(0.0), |a, v| a.add(&Rat::of(*v)));
            if s.sign() == Ordering::Equal {
                let all_neg_zero = t.iter().all(|v| *v == 0.0 && v.is_sign_negative());
                return R::Zero(all_neg_zero, true);
            }
            R::Num(s)
        }
        Op::Multiply => {
            if nan {
                return R::Nan(false);
            }
            let neg = x[0].is_sign_negative() != x[1].is_sign_negative();
            if x[0].is_infinite() || x[1].is_infinite() {
                return if x[0] == 0.0 || x[1] == 0.0 {
                    R::Nan(true)
                } else {
                    R::Inf(neg)
                };
            }
            if x[0] == 0.0 || x[1] == 0.0 {
                return R::Zero(neg, neg);
            }
            R::Num(Rat::of(x[0]).mul(&Rat::of(x[1])))
        }
        Op::Fma => {
            if nan {
                return R::Nan(false);
            }
            let neg = x[0].is_sign_negative() != x[1].is_sign_negative();
            let prod_inf = x[0].is_infinite() || x[1].is_infinite();
            if prod_inf && (x[0] == 0.0 || x[1] == 0.0) {
                return R::Nan(true);
            }
            if prod_inf {
                if x[2].is_infinite() && (x[2] < 0.0) != neg {
                    return R::Nan(true);
                }
                return R::Inf(neg);
            }
            if x[2].is_infinite() {
                return R::Inf(x[2] < 0.0);
            }
            let p = Rat::of(x[0]).mul(&Rat::of(x[1]));
            let s = p.add(&Rat::of(x[2]));
            if s.sign() == Ordering::Equal {
                let prod_zero = p.sign() == Ordering::Equal;
                if prod_zero && x[2] == 0.0 && neg == x[2].is_sign_negative() {
                    return R::Zero(neg, neg);
                }
                return R::Zero(false, true);
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
                return R::Nan(false);
            }
            let neg = a.is_sign_negative() != b.is_sign_negative();
            if b == 0.0 {
                return if p3109 || a == 0.0 {
                    R::Nan(true)
                } else {
                    R::Inf(neg)
                };
            }
            if a.is_infinite() && b.is_infinite() {
                return R::Nan(true);
            }
            if a.is_infinite() {
                return R::Inf(neg);
            }
            if b.is_infinite() || a == 0.0 {
                return R::Zero(neg, neg);
            }
            R::Num(Rat::of(a).div(&Rat::of(b)))
        }
        Op::Sqrt => {
            let v = x[0];
            if v.is_nan() {
                R::Nan(false)
            } else if v == 0.0 {
                R::Zero(v.is_sign_negative(), v.is_sign_negative())
            } else if v < 0.0 {
                R::Nan(true)
            } else if v.is_infinite() {
                R::Inf(false)
            } else {
                R::Sqrt(Rat::of(v))
            }
        }
        Op::RSqrt => {
            let v = x[0];
            if v.is_nan() {
                R::Nan(false)
            } else if v == 0.0 {
                if p3109 {
                    R::Nan(true)
                } else {
                    R::Inf(v.is_sign_negative())
                }
            } else if v < 0.0 {
                R::Nan(true)
            } else if v.is_infinite() {
                R::Zero(false, false)
            } else {
                R::InvSqrt(Rat::of(v))
            }
        }
        _ => unreachable!(),
    }
}

/// A point of the value list: the value, its magnitude code, its sign, whether it is the
/// virtual step beyond max.
struct Point {
    v: Rat,
    mag: u64,
    neg: bool,
    beyond: bool,
}

/// Every finite value of `f` (both signs, also for unsigned formats), with one virtual step
/// beyond ±max, ascending.
fn grid(f: &FloatFormat) -> Vec<Point> {
    let mut pos: Vec<(f64, u64)> = (0..=f.max_mag())
        .map(|c| (f.decode(c), c))
        .filter(|(v, _)| v.is_finite())
        .collect();
    pos.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    let (max, max_mag) = *pos.last().unwrap();
    let step = lowprec::format::pow2(f.emax() - f.man_bits() as i32);
    let mut pts = vec![];
    pts.push(Point {
        v: Rat::of(-max).add(&Rat::of(-step)),
        mag: max_mag + 1,
        neg: true,
        beyond: true,
    });
    for &(v, c) in pos.iter().rev() {
        if v != 0.0 {
            pts.push(Point {
                v: Rat::of(-v),
                mag: c,
                neg: true,
                beyond: false,
            });
        }
    }
    for &(v, c) in &pos {
        pts.push(Point {
            v: Rat::of(v),
            mag: c,
            neg: false,
            beyond: false,
        });
    }
    pts.push(Point {
        v: Rat::of(max).add(&Rat::of(step)),
        mag: max_mag + 1,
        neg: false,
        beyond: true,
    });
    pts
}

/// The piece of binary32's value list (as [`grid`] would build it) from one value below an
/// exact nonzero result to two above, and where the result falls in it; `guess` is near the
/// result (a binary64 approximation) and only shortens the search.
fn f32_window(r: &R, guess: f64) -> (Vec<Point>, Bracket) {
    // codes as signed keys in value order (±0 both 0); ±TOP is ±2^128, the virtual step
    // beyond ±max
    const TOP: i64 = 0x7f80_0000;
    let value = |k: i64| {
        let mag = k.unsigned_abs();
        let (field, man) = ((mag >> 23) as i32, mag & 0x7f_ffff);
        if field == 0 {
            Rat::dyadic(k < 0, man, -149)
        } else {
            Rat::dyadic(k < 0, man | 1 << 23, field - 150)
        }
    };
    let g = guess as f32;
    let mag = if g.is_nan() {
        0
    } else {
        i64::from(g.to_bits() & 0x7fff_ffff).min(TOP)
    };
    let mut k = if g.is_sign_negative() { -mag } else { mag };
    while k > -TOP && r.cmp(&value(k)) == Ordering::Less {
        k -= 1;
    }
    while k < TOP && r.cmp(&value(k + 1)) != Ordering::Less {
        k += 1;
    }
    let w: Vec<Point> = ((k - 1).max(-TOP)..=(k + 2).min(TOP))
        .map(|k| Point {
            v: value(k),
            mag: k.unsigned_abs(),
            neg: k < 0,
            beyond: k.abs() == TOP,
        })
        .collect();
    let b = bracket(&w, r);
    (w, b)
}

/// Where an exact nonzero value falls.
#[derive(Clone, Copy, Debug)]
enum Bracket {
    On(usize),
    Between(usize, usize, Ordering),
    Below,
    Above,
}

fn bracket(g: &[Point], r: &R) -> Bracket {
    if r.cmp(&g[0].v) == Ordering::Less {
        return Bracket::Below;
    }
    if r.cmp(&g[g.len() - 1].v) == Ordering::Greater {
        return Bracket::Above;
    }
    // largest i with g[i] ≤ r
    let (mut lo, mut hi) = (0usize, g.len() - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if r.cmp(&g[mid].v) == Ordering::Less {
            hi = mid - 1;
        } else {
            lo = mid;
        }
    }
    if r.cmp(&g[lo].v) == Ordering::Equal {
        return Bracket::On(lo);
    }
    let two = Rat::of(2.0);
    let mid = g[lo].v.add(&g[lo + 1].v).div(&two);
    Bracket::Between(lo, lo + 1, r.cmp(&mid))
}

fn zero_code(f: &FloatFormat, neg: bool, fam: bool) -> u64 {
    if neg && !fam && f.has_negative_zero() {
        f.sign_mask()
    } else {
        0
    }
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

/// An infinite exact result.
fn infinite(f: &FloatFormat, neg: bool, p: &Projection) -> Option<u64> {
    let pf = matches!(
        f.specials(),
        Specials::P3109Extended | Specials::P3109Finite
    );
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
    let pf = matches!(
        f.specials(),
        Specials::P3109Extended | Specials::P3109Finite
    );
    if p.saturation != Saturation::None {
        return max_code(f, neg);
    }
    let to_zero = p.rounding == Rounding::TowardZero
        || (p.rounding == Rounding::TowardNegative && !neg)
        || (p.rounding == Rounding::TowardPositive && neg);
    if to_zero {
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

fn round_ref(
    f: &FloatFormat,
    g: &[Point],
    r: &R,
    b: Option<Bracket>,
    p: &Projection,
    fam: bool,
) -> Option<u64> {
    let down = p.rounding == Rounding::TowardNegative;
    let pf = matches!(
        f.specials(),
        Specials::P3109Extended | Specials::P3109Finite
    );
    match r {
        R::Nan(_) => return f.nan_code(false),
        R::Inf(neg) => return infinite(f, *neg, p),
        R::Zero(a, d) => return Some(zero_code(f, if down { *d } else { *a }, fam)),
        _ => {}
    }
    let neg = r.negative();
    let pick = match b.unwrap() {
        Bracket::Below => {
            return beyond(f, true, p)
                .filter(|_| f.is_signed())
                .or_else(|| unsigned_negative(f, p, pf))
        }
        Bracket::Above => return beyond(f, false, p),
        Bracket::On(i) => i,
        Bracket::Between(lo, hi, mid) => {
            let (small, large) = if neg { (hi, lo) } else { (lo, hi) };
            let even = |i: usize| g[i].mag.is_multiple_of(2);
            match p.rounding {
                Rounding::NearestTiesToEven => match mid {
                    Ordering::Less => lo,
                    Ordering::Greater => hi,
                    Ordering::Equal => {
                        if even(lo) {
                            lo
                        } else {
                            hi
                        }
                    }
                },
                Rounding::NearestTiesToAway => match mid {
                    Ordering::Less => lo,
                    Ordering::Greater => hi,
                    Ordering::Equal => large,
                },
                Rounding::TowardPositive => hi,
                Rounding::TowardNegative => lo,
                Rounding::TowardZero => small,
                Rounding::ToOdd => {
                    if even(lo) {
                        hi
                    } else {
                        lo
                    }
                }
                _ => unreachable!(),
            }
        }
    };
    let pt = &g[pick];
    if pt.beyond {
        if pt.neg && !f.is_signed() {
            return unsigned_negative(f, p, pf);
        }
        return beyond(f, pt.neg, p);
    }
    if pt.mag == 0 {
        return Some(zero_code(f, neg, fam));
    }
    if pt.neg && !f.is_signed() {
        return unsigned_negative(f, p, pf);
    }
    Some(pt.mag | if pt.neg { f.sign_mask() } else { 0 })
}

fn unsigned_negative(f: &FloatFormat, p: &Projection, pf: bool) -> Option<u64> {
    if !pf {
        return f.nan_code(false);
    }
    match (p.saturation, p.rounding) {
        (Saturation::Finite | Saturation::Propagate, _) => Some(0),
        (Saturation::None, Rounding::TowardZero | Rounding::TowardPositive) => Some(0),
        _ => f.nan_code(false),
    }
}

fn projections() -> Vec<Projection> {
    let mut v = vec![];
    for r in Rounding::DETERMINISTIC {
        for s in Saturation::ALL {
            for d in [Draft::D1, Draft::V4] {
                v.push(Projection {
                    rounding: r,
                    saturation: s,
                    draft: d,
                });
            }
        }
    }
    v
}

/// Check `op` over every combination of codes of `ins` into `out` under every projection.
fn check(op: Op, ins: &[FloatFormat], out: &FloatFormat) -> u64 {
    check_under(op, ins, out, &projections())
}

/// [`check`] under the given projections.
fn check_under(op: Op, ins: &[FloatFormat], out: &FloatFormat, prjs: &[Projection]) -> u64 {
    let width: u32 = ins.iter().map(|f| f.bits()).sum();
    let n = 1usize << width;
    let mut codes: Vec<Vec<u64>> = vec![vec![0; n]; ins.len()];
    #[allow(clippy::needless_range_loop)]
    for idx in 0..n {
        let mut rest = width;
        for (k, f) in ins.iter().enumerate() {
            rest -= f.bits();
            codes[k][idx] = (idx >> rest) as u64 & f.max_code();
        }
    }
    check_codes(op, ins, out, &codes, prjs)
}

/// Check `op` on the operand codes `codes[k][i]` (operand `k` of case `i`) into `out` under
/// the projections `prjs`; the number of cases checked.
fn check_codes(
    op: Op,
    ins: &[FloatFormat],
    out: &FloatFormat,
    codes: &[Vec<u64>],
    prjs: &[Projection],
) -> u64 {
    // binary32's value list is too long to build: FMA into it takes a piece around each
    // result instead
    let fp32 = *out == FloatFormat::FP32;
    assert!(
        !fp32 || op == Op::Fma,
        "binary32 results are checked for FMA only"
    );
    let g = if fp32 { vec![] } else { grid(out) };
    let fam = ops::family_p3109(ins, out, op);
    let n = codes[0].len();
    let mut refs = Vec::with_capacity(n);
    for idx in 0..n {
        let xs: Vec<f64> = ins
            .iter()
            .zip(codes)
            .map(|(f, c)| f.decode(c[idx]))
            .collect();
        let r = reference(op, &xs, fam);
        let (b, w) = match r {
            R::Num(_) if fp32 => {
                let (w, b) = f32_window(&r, xs[0] * xs[1] + xs[2]);
                (Some(b), Some(w))
            }
            R::Num(_) | R::Sqrt(_) | R::InvSqrt(_) => (Some(bracket(&g, &r)), None),
            _ => (None, None),
        };
        refs.push((xs, r, b, w));
    }
    let operands: Vec<(FloatFormat, &[u64])> = ins
        .iter()
        .zip(codes)
        .map(|(f, c)| (*f, c.as_slice()))
        .collect();
    let mut checked = 0;
    for &p in prjs {
        if p.draft == Draft::V4 && !out.specials().is_p3109() {
            continue;
        }
        let mut got = vec![0u64; n];
        let r = ops::apply(
            op,
            &operands,
            out,
            &p,
            ops::Random::Seeded {
                seed: 0,
                index_offset: 0,
            },
            &mut got,
        );
        for (idx, (xs, r_exact, b, w)) in refs.iter().enumerate() {
            let want = round_ref(out, w.as_deref().unwrap_or(&g), r_exact, *b, &p, fam);
            let have = match &r {
                Ok(_) => Some(got[idx]),
                Err(_) => {
                    ops::apply_scalar(
                        op,
                        &ins.iter()
                            .zip(codes)
                            .map(|(f, c)| (*f, c[idx]))
                            .collect::<Vec<_>>(),
                        out,
                        &p,
                        0,
                    )
                    .unwrap()
                    .code
                }
            };
            assert_eq!(
                have,
                want,
                "{op} {xs:?} ({}) → {} under {} {} {:?}: exact {r_exact:?}",
                ins.iter()
                    .map(|f| f.name().to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                out.name(),
                p.rounding.name(),
                p.saturation,
                p.draft
            );
            checked += 1;
        }
    }
    checked
}

fn eight_bit() -> Vec<FloatFormat> {
    let mut v: Vec<FloatFormat> = [
        "binary8p1se",
        "binary8p2sf",
        "binary8p3se",
        "binary8p4se",
        "binary8p5sf",
        "binary8p6se",
        "binary8p7sf",
        "binary8p3ue",
        "binary8p1uf",
        "binary8p8ue",
    ]
    .iter()
    .map(|n| FloatFormat::parse(n).unwrap())
    .collect();
    v.extend([
        FloatFormat::FP8_E4M3,
        FloatFormat::FP8_E5M2,
        FloatFormat::FP8_E4M3_FNUZ,
    ]);
    v
}

fn small() -> Vec<FloatFormat> {
    vec![
        FloatFormat::FP6_E3M2,
        FloatFormat::FP6_E2M3,
        FloatFormat::FP4_E2M1,
        FloatFormat::BINARY4P2SF,
        FloatFormat::parse("binary6p3se").unwrap(),
    ]
}

/// Count one element's outcome (its flags, and whether its code is the result format's NaN)
/// into `c`, as the library's counts do.
fn count_outcome(c: &mut ops::Counts, flags: u8, nan: bool) {
    let f = |bit: u8| u64::from(flags & bit != 0);
    c.total += 1;
    c.inexact += f(ops::flag::INEXACT);
    c.overflow += f(ops::flag::OVERFLOW);
    c.underflow += f(ops::flag::UNDERFLOW);
    c.invalid += f(ops::flag::INVALID);
    c.saturated += f(ops::flag::SATURATED);
    c.nan += u64::from(nan);
}

#[test]
fn binary_operations_on_every_pair_of_8_bit_codes() {
    for f in eight_bit().iter().chain(small().iter()) {
        for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Divide] {
            let n = check(op, &[*f, *f], f);
            assert!(n >= 65536 * 18 || f.bits() < 8);
        }
    }
}

#[test]
fn every_8_bit_p3109_format_on_every_pair() {
    // the twenty K = 8 formats not in `eight_bit()`, under every deterministic rounding with
    // SatNone and nearest-even with the other saturations and the v4.0 draft
    let mut prjs: Vec<Projection> = Rounding::DETERMINISTIC
        .iter()
        .map(|&r| Projection::new(r, Saturation::None))
        .collect();
    prjs.push(Projection::new(
        Rounding::NearestTiesToEven,
        Saturation::Finite,
    ));
    prjs.push(Projection::new(
        Rounding::NearestTiesToEven,
        Saturation::Propagate,
    ));
    prjs.push(Projection {
        draft: Draft::V4,
        ..Projection::new(Rounding::TowardPositive, Saturation::None)
    });
    let tested: Vec<String> = eight_bit().iter().map(|f| f.name().to_string()).collect();
    let mut n = 0;
    for p in 1..=8 {
        for (s, e) in [("s", "e"), ("s", "f"), ("u", "e"), ("u", "f")] {
            if p == 8 && s == "s" {
                continue;
            }
            let name = format!("binary8p{p}{s}{e}");
            if tested.contains(&name) {
                continue;
            }
            let f = FloatFormat::parse(&name).unwrap();
            for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Divide] {
                check_under(op, &[f, f], &f, &prjs);
            }
            n += 1;
        }
    }
    assert_eq!(
        n + tested.iter().filter(|t| t.starts_with("binary8")).count(),
        30
    );
}

#[test]
fn unary_operations_on_every_code_into_every_format() {
    let all: Vec<FloatFormat> = eight_bit().into_iter().chain(small()).collect();
    for f in &all {
        for op in [Op::Sqrt, Op::RSqrt, Op::Recip, Op::Negate, Op::Abs] {
            check(op, &[*f], f);
        }
        for g in &all {
            check(Op::Convert, &[*f], g);
        }
        check(Op::Convert, &[*f], &FloatFormat::FP16);
        check(Op::Convert, &[FloatFormat::FP16], f);
        check(Op::Sqrt, &[FloatFormat::FP16], f);
    }
}

#[test]
fn mixed_formats_round_once() {
    let p4 = FloatFormat::BINARY8P4SE;
    let p3 = FloatFormat::BINARY8P3SE;
    for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Divide] {
        check(op, &[p4, p3], &p3);
        check(op, &[p3, p4], &FloatFormat::BINARY4P2SF);
        check(
            op,
            &[FloatFormat::FP8_E4M3, FloatFormat::FP8_E5M2],
            &FloatFormat::FP6_E2M3,
        );
        check(op, &[p4, FloatFormat::FP8_E4M3], &FloatFormat::BF16);
    }
}

#[test]
fn fma_and_faa_on_every_triple_of_small_formats() {
    for f in small() {
        for op in [Op::Fma, Op::Faa] {
            check(op, &[f, f, f], &f);
        }
    }
    let f4 = FloatFormat::BINARY4P2SF;
    check(
        Op::Fma,
        &[f4, f4, FloatFormat::FP8_E4M3],
        &FloatFormat::BINARY8P3SE,
    );
    check(
        Op::Faa,
        &[f4, FloatFormat::FP4_E2M1, f4],
        &FloatFormat::FP6_E3M2,
    );
}

/// FMA and FAA on 10^7 random triples of 8-bit codes in all: four operand and result
/// format combinations (one format throughout, and mixed P3109 / OCP formats into a third)
/// per operation, 1.25 million triples each, every deterministic rounding under one of
/// SatFinite, SatPropagate and SatNone (D1) in turn, pieces of 2^16 triples in two threads.
#[test]
fn fma_and_faa_on_ten_million_random_8_bit_triples() {
    const TRIPLES: usize = 1_250_000;
    const PIECE: usize = 1 << 16;
    let e4m3 = FloatFormat::FP8_E4M3;
    let e5m2 = FloatFormat::FP8_E5M2;
    let p3 = FloatFormat::BINARY8P3SE;
    let p4 = FloatFormat::BINARY8P4SE;
    let p5f = FloatFormat::parse("binary8p5sf").unwrap();
    let cases: Vec<(Op, [FloatFormat; 3], FloatFormat)> = vec![
        (Op::Fma, [e4m3; 3], e4m3),
        (Op::Fma, [p4; 3], p3),
        (Op::Fma, [p3, e5m2, p4], p5f),
        (Op::Fma, [e5m2, p5f, e4m3], e5m2),
        (Op::Faa, [e5m2; 3], e5m2),
        (Op::Faa, [p3; 3], p4),
        (Op::Faa, [e4m3, p4, p3], e4m3),
        (Op::Faa, [p5f, e4m3, e5m2], p3),
    ];
    let prjs: Vec<Vec<Projection>> = Saturation::ALL
        .into_iter()
        .map(|s| {
            Rounding::DETERMINISTIC
                .map(|r| Projection::new(r, s))
                .to_vec()
        })
        .collect();
    let checked = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|sc| {
        for half in 0..2u64 {
            let (cases, prjs, checked) = (&cases, &prjs, &checked);
            sc.spawn(move || {
                for (k, (op, ins, out)) in cases.iter().enumerate() {
                    let mut rng = common::Rng(0x5eed_0000 + 2 * k as u64 + half);
                    let mut left = TRIPLES / 2;
                    for piece in 0.. {
                        if left == 0 {
                            break;
                        }
                        let n = left.min(PIECE);
                        let codes: Vec<Vec<u64>> = ins
                            .iter()
                            .map(|f| (0..n).map(|_| rng.below(f.max_code() + 1)).collect())
                            .collect();
                        let c = check_codes(*op, ins, out, &codes, &prjs[piece % 3]);
                        checked.fetch_add(c, std::sync::atomic::Ordering::Relaxed);
                        left -= n;
                    }
                }
            });
        }
    });
    let want = (cases.len() * TRIPLES * Rounding::DETERMINISTIC.len()) as u64;
    assert_eq!(checked.into_inner(), want);
}

/// bfloat16 Add, Subtract and Multiply under NearestTiesToEven run in binary32 lanes
/// (`ops::apply_bf16`, which `ops::apply` takes for bf16 operands): the codes against the
/// exact reference, the counts against the scalar path's flags summed, on random codes and
/// on operands built for the edges (specials, tiny and huge exponents, cancellation, sums
/// and products at the overflow threshold and around 2^−126).
#[test]
fn bf16_arithmetic_in_binary32_lanes() {
    let bf = FloatFormat::BF16;
    let mut rng = common::Rng(0xbf16);
    let n = 120_000;
    let mut a = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n);
    let specials = [
        0x0000u64, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x0001, 0x807f,
    ];
    for _ in 0..n {
        let x = rng.below(0x10000);
        let sign = rng.below(2) << 15;
        let (x, y) = match rng.below(9) {
            0 => (specials[rng.below(9) as usize], rng.below(0x10000)),
            8 => (
                specials[rng.below(9) as usize],
                specials[rng.below(9) as usize],
            ),
            // tiny: exponent fields 0–3, products and sums near 2^−126
            1 => (rng.below(0x200) | sign, (rng.below(0x200) + 0x3f00) ^ sign),
            2 => (rng.below(0x200) | sign, rng.below(0x200)),
            // huge: near the overflow threshold
            3 => (0x7f00 + rng.below(0x80), (0x7f00 + rng.below(0x80)) | sign),
            4 => (0x7f00 + rng.below(0x80), 0x3f80 + rng.below(0x80)),
            // cancellation: a and ±(a + a few ulps)
            5 => (x, (x ^ 0x8000).wrapping_add(rng.below(5)) & 0xffff),
            _ => (x, rng.below(0x10000)),
        };
        a.push(x);
        b.push(y);
    }
    let prjs: Vec<Projection> = Saturation::ALL
        .map(|s| Projection::new(Rounding::NearestTiesToEven, s))
        .to_vec();
    let (a16, b16): (Vec<u16>, Vec<u16>) = (a.iter().map(|&v| v as u16))
        .zip(b.iter().map(|&v| v as u16))
        .unzip();
    for op in [Op::Add, Op::Subtract, Op::Multiply] {
        assert_eq!(
            check_codes(op, &[bf, bf], &bf, &[a.clone(), b.clone()], &prjs),
            (n * prjs.len()) as u64
        );
        for prj in &prjs {
            let mut out = vec![0u16; n];
            let got = ops::apply_bf16(op, &a16, &b16, prj, &mut out).unwrap();
            let mut want = ops::Counts::default();
            for i in 0..n {
                let r = ops::apply_scalar(op, &[(bf, a[i]), (bf, b[i])], &bf, prj, 0).unwrap();
                assert_eq!(
                    Some(out[i] as u64),
                    r.code,
                    "{op} {:#06x} {:#06x}",
                    a[i],
                    b[i]
                );
                count_outcome(&mut want, r.flags, r.code == bf.nan_code(false));
            }
            assert_eq!(got, want, "{op} under {:?}", prj.saturation);
            // (sums that underflow are exact: no underflow flag)
            assert!(
                want.overflow > 100
                    && (want.underflow > 100 || op != Op::Multiply)
                    && want.invalid > 10
                    && want.nan > 1000,
                "{op}: {want:?}"
            );
        }
    }
}

/// binary32 addends for FMA of `x · y` into `out`: specials, cancellation of the product
/// (exactly and within a few ulps), ties of `out`, midpoints of `out` far above the product,
/// values near its smallest normal and its largest finite value, tiny values, and random bit
/// patterns.
fn fma_addend(rng: &mut common::Rng, x: f64, y: f64, out: &FloatFormat) -> f32 {
    const SPECIALS: [u32; 14] = [
        0x0000_0000, // ±0
        0x8000_0000,
        0x7f80_0000, // ±Inf
        0xff80_0000,
        0x7fc0_0000, // NaN (quiet, negative, signalling)
        0xffc0_0001,
        0x7f80_0001,
        0x0000_0001, // subnormals
        0x8000_0003,
        0x807f_ffff,
        0x7f7f_ffff, // ±max
        0xff7f_ffff,
        0x3f80_0000, // ±1
        0xbf80_0000,
    ];
    let p = x * y; // exact
    let bits = rng.next_u64() as u32;
    let sign = if rng.below(2) == 1 { -1.0 } else { 1.0 };
    let step = |v: f32, k: u64| f32::from_bits(v.to_bits().wrapping_add(k as u32));
    let finite = p.is_finite();
    match rng.below(13) {
        0 => f32::from_bits(SPECIALS[rng.below(SPECIALS.len() as u64) as usize]),
        // cancellation: exactly, and within a few ulps of the addend
        1 if finite => -p as f32,
        2 if finite => step(-p as f32, rng.below(7)),
        3 if finite && p != 0.0 => {
            // a tie of `out`: the product's lowest bit is half an ulp of `out` at the
            // addend's magnitude, whose bits above are random
            let b = p.to_bits();
            let e = ((b >> 52) & 0x7ff) as i32 - 1075 + (b | 1 << 52).trailing_zeros() as i32;
            let m = out.man_bits() as i32;
            let q = lowprec::format::pow2(e + 1);
            (sign * q * ((1u64 << m) + rng.below(1 << m)) as f64) as f32
        }
        4 => (sign * out.min_normal()) as f32 * (1.0 + rng.below(9) as f32 / 4.0),
        5 if finite => (sign * out.max_finite()) as f32 - p as f32,
        // up to two ulps of `out` beyond its largest value
        6 => step(
            (sign * out.max_finite()) as f32,
            rng.below(1 << (24 - out.man_bits().min(23))),
        ),
        // tiny: exponent fields 0–3
        7 => f32::from_bits((bits & 0x807f_ffff) | (rng.below(4) as u32) << 23),
        // near the product's magnitude, random
        8 if finite => (p * (rng.unit() * 4.0 - 2.0)) as f32,
        // a product's worth of cancellation leaving a few low bits
        9 if finite => step(-p as f32, rng.below(1000)),
        // a midpoint of `out` 2^30 to 2^70 above the product: the sum rounded to nearest in
        // binary64 would lie on the midpoint (the double rounding that round to odd avoids)
        10 if finite && p != 0.0 => {
            let m = out.man_bits().min(21) as i32;
            let e = ((p.abs().to_bits() >> 52) as i32 - 1023) + 30 + rng.below(41) as i32;
            let mid = (1u64 << (m + 1)) + 2 * rng.below(1 << m) + 1;
            (sign * mid as f64 * lowprec::format::pow2(e - m - 1)) as f32
        }
        _ => f32::from_bits(bits),
    }
}

/// FMA of two 8-bit operands and a binary32 addend under NearestTiesToEven runs in binary64
/// lanes (`ops::apply_fma_f32`, which `ops::apply` takes): on every pair of codes with eight
/// addends each (`fma_addend`), the codes and counts equal the general exact path's
/// (`ops::apply_scalar`, flags summed) under every saturation mode, and a quarter of the
/// cases go through `ops::apply` against the exact reference (`reference`, rounded by
/// `round_ref`), for fp8-e4m3 × fp8-e4m3 + binary32 into binary32, bfloat16 and fp8-e4m3,
/// and Binary8p3se × Binary8p4se + binary32 into Binary8p3se.
#[test]
fn fma_with_a_binary32_addend_in_binary64_lanes() {
    const ADDENDS: usize = 8;
    let (e4m3, fp32) = (FloatFormat::FP8_E4M3, FloatFormat::FP32);
    let (p3, p4) = (FloatFormat::BINARY8P3SE, FloatFormat::BINARY8P4SE);
    let cases = [
        (e4m3, e4m3, fp32),
        (e4m3, e4m3, FloatFormat::BF16),
        (e4m3, e4m3, e4m3),
        (p3, p4, p3),
    ];
    for (k, (fa, fb, out)) in cases.into_iter().enumerate() {
        let mut rng = common::Rng(0xf3a_0000 + k as u64);
        let n = 65536 * ADDENDS;
        let (mut a, mut b, mut c) = (vec![0u8; n], vec![0u8; n], vec![0f32; n]);
        for i in 0..n {
            let pair = i / ADDENDS;
            (a[i], b[i]) = ((pair >> 8) as u8, pair as u8);
            let (x, y) = (fa.decode(a[i] as u64), fb.decode(b[i] as u64));
            c[i] = fma_addend(&mut rng, x, y, &out);
        }
        let ins = [fa, fb, fp32];
        let fam = ops::family_p3109(&ins, &out, Op::Fma);
        let mut prjs: Vec<Projection> = Saturation::ALL
            .map(|s| Projection::new(Rounding::NearestTiesToEven, s))
            .to_vec();
        if fam {
            prjs.extend(Saturation::ALL.map(|s| Projection {
                draft: Draft::V4,
                ..Projection::new(Rounding::NearestTiesToEven, s)
            }));
        }
        for prj in &prjs {
            let mut got = vec![0u32; n];
            let counts = ops::apply_fma_f32(fa, &a, fb, &b, &c, out, prj, &mut got).unwrap();
            let mut want = ops::Counts::default();
            for i in 0..n {
                let ops = [
                    (fa, a[i] as u64),
                    (fb, b[i] as u64),
                    (fp32, c[i].to_bits() as u64),
                ];
                let r = ops::apply_scalar(Op::Fma, &ops, &out, prj, 0).unwrap();
                assert_eq!(
                    Some(got[i] as u64),
                    r.code,
                    "{} × {} + {:e} ({:#x}) into {} under {prj:?}",
                    fa.decode(a[i] as u64),
                    fb.decode(b[i] as u64),
                    c[i],
                    c[i].to_bits(),
                    out.name()
                );
                count_outcome(&mut want, r.flags, r.code == out.nan_code(false));
            }
            assert_eq!(counts, want, "{} under {prj:?}", out.name());
            // the cases reach every outcome
            assert!(
                want.inexact > n as u64 / 4
                    && want.total - want.inexact > n as u64 / 20
                    && want.nan > 10000
                    // (binary32 results of 8-bit products neither overflow nor underflow)
                    && (out == fp32 || (want.overflow > 1000 && want.underflow > 1000)),
                "{}: {want:?}",
                out.name()
            );
        }
        // a quarter against the exact reference, through ops::apply
        let pick = |v: &[u64]| v.iter().step_by(4).copied().collect::<Vec<u64>>();
        let codes = [
            pick(&a.iter().map(|&v| v as u64).collect::<Vec<_>>()),
            pick(&b.iter().map(|&v| v as u64).collect::<Vec<_>>()),
            pick(&c.iter().map(|v| v.to_bits() as u64).collect::<Vec<_>>()),
        ];
        assert_eq!(
            check_codes(Op::Fma, &ins, &out, &codes, &prjs),
            (codes[0].len() * prjs.len()) as u64
        );
    }
}

/// `ops::apply_fma_f32` against the general exact path on random codes and addends for
/// operand and result formats of every kind it takes (signed and unsigned, IEEE, fn, fnuz,
/// P3109 finite and extended, 2 to 23 mantissa bits), under every saturation mode and draft:
/// the same codes, counts and errors (NaN into formats without NaN).
#[test]
fn fma_f32_lanes_equal_the_general_path_for_every_result_format() {
    let outs: Vec<FloatFormat> = [
        "fp32",
        "tf32",
        "fp16",
        "bf16",
        "fp8-e5m2",
        "fp8-e4m3",
        "fp8-e4m3fnuz",
        "ue4m3",
        "fp6-e3m2",
        "fp6-e2m3",
        "fp4-e2m1",
        "binary8p3se",
        "binary8p5sf",
        "binary8p3ue",
        "binary8p8ue",
        "binary4p2sf",
        "binary16p11se",
    ]
    .iter()
    .map(|n| FloatFormat::parse(n).unwrap())
    .collect();
    let ins: Vec<FloatFormat> = [
        "fp8-e5m2",
        "binary8p1se",
        "binary8p8ue",
        "fp4-e2m1",
        "fp8-e4m3fnuz",
    ]
    .iter()
    .map(|n| FloatFormat::parse(n).unwrap())
    .collect();
    let fp32 = FloatFormat::FP32;
    let mut rng = common::Rng(0xf3a_1000);
    let n = 6000;
    let mut errors = 0;
    for out in &outs {
        for (fa, fb) in ins.iter().zip(ins.iter().cycle().skip(1)) {
            let (mut a, mut b, mut c) = (vec![0u8; n], vec![0u8; n], vec![0f32; n]);
            for i in 0..n {
                (a[i], b[i]) = (rng.below(256) as u8, rng.below(256) as u8);
                let (x, y) = (fa.decode(a[i] as u64), fb.decode(b[i] as u64));
                c[i] = fma_addend(&mut rng, x, y, out);
            }
            for s in Saturation::ALL {
                for draft in [Draft::D1, Draft::V4] {
                    let prj = Projection {
                        draft,
                        ..Projection::new(Rounding::NearestTiesToEven, s)
                    };
                    let mut got = vec![0u32; n];
                    let counts = ops::apply_fma_f32(*fa, &a, *fb, &b, &c, *out, &prj, &mut got);
                    let mut want = ops::Counts::default();
                    let mut nan_without_nan = false;
                    for i in 0..n {
                        let ops = [
                            (*fa, a[i] as u64),
                            (*fb, b[i] as u64),
                            (fp32, c[i].to_bits() as u64),
                        ];
                        let r = ops::apply_scalar(Op::Fma, &ops, out, &prj, 0).unwrap();
                        let Some(code) = r.code else {
                            nan_without_nan = true;
                            continue;
                        };
                        if counts.is_ok() {
                            assert_eq!(
                                got[i] as u64,
                                code,
                                "{ops:?} into {} under {prj:?}",
                                out.name()
                            );
                        }
                        count_outcome(&mut want, r.flags, Some(code) == out.nan_code(false));
                    }
                    if nan_without_nan {
                        assert!(counts.is_err(), "{} has no NaN", out.name());
                        errors += 1;
                    } else {
                        assert_eq!(
                            counts.unwrap(),
                            want,
                            "{} {} into {} under {prj:?}",
                            fa.name(),
                            fb.name(),
                            out.name()
                        );
                    }
                }
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn pair_tables_give_what_apply_gives_with_the_same_counts() {
    let mut seed = 0x1234_5678_u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u8
    };
    let n = 200_000; // above the parallel threshold
    let a: Vec<u8> = (0..n).map(|_| next()).collect();
    let b: Vec<u8> = (0..n).map(|_| next()).collect();
    let (a64, b64): (Vec<u64>, Vec<u64>) = (
        a.iter().map(|&x| x as u64).collect(),
        b.iter().map(|&x| x as u64).collect(),
    );
    for (op, fa, fb, out) in [
        (
            Op::Add,
            FloatFormat::FP8_E4M3,
            FloatFormat::FP8_E4M3,
            FloatFormat::FP8_E4M3,
        ),
        (
            Op::Divide,
            FloatFormat::BINARY8P4SE,
            FloatFormat::BINARY8P3SE,
            FloatFormat::BINARY8P3SE,
        ),
        (
            Op::Multiply,
            FloatFormat::FP8_E5M2,
            FloatFormat::FP8_E4M3,
            FloatFormat::BF16,
        ),
        (
            Op::CompareLess,
            FloatFormat::FP8_E5M2,
            FloatFormat::FP8_E5M2,
            FloatFormat::FP8_E5M2,
        ),
    ] {
        let p = Projection::new(Rounding::TowardZero, Saturation::Finite);
        let t = ops::PairTable::new(op, fa, fb, out, &p).unwrap();
        // apply's element path: pieces no longer than the table of every pair (a longer
        // array would take the pair table itself)
        let mut want = vec![0u64; n];
        let piece = 1usize << (fa.bits() + fb.bits());
        let mut wc = ops::Counts::default();
        for (k, w) in want.chunks_mut(piece).enumerate() {
            let r = k * piece..(k * piece + w.len());
            let c = ops::apply(
                op,
                &[(fa, &a64[r.clone()]), (fb, &b64[r])],
                &out,
                &p,
                ops::Random::Seeded {
                    seed: 0,
                    index_offset: 0,
                },
                w,
            )
            .unwrap();
            wc = wc.merge(c);
        }
        let gc = if out.bits() <= 8 || op.kind() == ops::Kind::Boolean {
            let mut got = vec![0u8; n];
            let c = t.apply_u8(&a, &b, &mut got).unwrap();
            assert!(got.iter().zip(&want).all(|(g, w)| *g as u64 == *w), "{op}");
            c
        } else {
            let mut got = vec![0u16; n];
            let c = t.apply_u16(&a, &b, &mut got).unwrap();
            assert!(got.iter().zip(&want).all(|(g, w)| *g as u64 == *w), "{op}");
            c
        };
        assert_eq!(gc, wc, "{op}: counts");
        // (e5m2 × e4m3 is exact in bf16: 3 + 4 significand bits)
        assert!(
            op.kind() == ops::Kind::Boolean || out.bits() > 8 || wc.inexact > 0,
            "{op}: some rounding happened"
        );
    }
}

/// The pair table's vector kernels (8-bit results, sixteen or eight gathered entries per
/// step, a scalar tail) against its portable loop: codes and counts, narrow formats (6 and 4 bits)
/// and lengths that leave a tail, on every instruction level.
#[test]
fn pair_table_kernels_equal_the_portable_loop() {
    use lowprec::simd::{set_max_level, Level};
    let mut seed = 0x9e37_79b9_u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u8
    };
    let n = 70_001; // above the parallel threshold, with a tail
    let (a, b): (Vec<u8>, Vec<u8>) = (0..n).map(|_| (next(), next())).unzip();
    let p = Projection::new(Rounding::NearestTiesToEven, Saturation::None);
    for (op, fa, fb, out) in [
        (
            Op::Multiply,
            FloatFormat::FP6_E3M2,
            FloatFormat::FP4_E2M1,
            FloatFormat::FP6_E2M3,
        ),
        (
            Op::Add,
            FloatFormat::FP8_E5M2,
            FloatFormat::FP8_E5M2,
            FloatFormat::FP8_E4M3,
        ),
        (
            Op::Subtract,
            FloatFormat::BINARY8P3SE,
            FloatFormat::BINARY8P4SE,
            FloatFormat::BINARY8P3SE,
        ),
    ] {
        let (a, b): (Vec<u8>, Vec<u8>) = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| (x & (fa.max_code() as u8), y & (fb.max_code() as u8)))
            .unzip();
        let t = ops::PairTable::new(op, fa, fb, out, &p).unwrap();
        let run = |level, len: usize| {
            set_max_level(level);
            let mut got = vec![0u8; len];
            let c = t.apply_u8(&a[..len], &b[..len], &mut got).unwrap();
            set_max_level(Level::Avx512);
            (got, c)
        };
        for len in [n, 1000 + 7, 15] {
            let (slow, sc) = run(Level::Portable, len);
            for level in [Level::Avx512, Level::Avx2] {
                let (fast, fc) = run(level, len);
                assert_eq!(fast, slow, "{op} {len} {level:?}: codes");
                assert_eq!(fc, sc, "{op} {len} {level:?}: counts");
            }
            assert!(len < 1000 || sc.inexact > 0, "{op}: some rounding happened");
        }
    }
}

/// Add, Subtract, Multiply and Divide through a pair table's binary32 lanes (taken where they
/// give every entry) against the library's exact element path (itself checked against the
/// rational reference above): every pair of codes in a shuffled order, repeated past the
/// parallel work item with a tail, the codes and the counts; and each pair alone (the
/// kernel's padded tail), its counts against that pair's outcome. The formats the lanes must
/// take are named, so that this tests the route and not only its fallback.
#[test]
fn pair_tables_in_binary32_lanes_equal_the_exact_element_path() {
    let e4m3 = FloatFormat::FP8_E4M3;
    let mut combos: Vec<(Op, FloatFormat, FloatFormat, FloatFormat)> = vec![];
    for f in eight_bit().iter().chain(small().iter()) {
        for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Divide] {
            combos.push((op, *f, *f, *f));
        }
    }
    combos.extend([
        (
            Op::Add,
            FloatFormat::BINARY8P4SE,
            FloatFormat::BINARY8P4SE,
            FloatFormat::BINARY8P3SE,
        ),
        (Op::Multiply, FloatFormat::FP8_E5M2, e4m3, e4m3),
        (Op::Add, e4m3, FloatFormat::FP4_E2M1, FloatFormat::FP6_E2M3),
        (
            Op::Subtract,
            FloatFormat::FP6_E3M2,
            e4m3,
            FloatFormat::FP8_E5M2,
        ),
        // unsigned results: a negative one sends its work item back to the table
        (Op::Multiply, e4m3, e4m3, FloatFormat::UE4M3),
        (
            Op::Add,
            e4m3,
            e4m3,
            FloatFormat::parse("binary8p4ue").unwrap(),
        ),
    ]);
    // sums of these are exact in binary32 (their codes span at most 24 bits); products of
    // every 8-bit format are
    let sums = [
        "fp8-e4m3",
        "fp8-e4m3fnuz",
        "binary8p4se",
        "fp6-e3m2",
        "fp4-e2m1",
    ];
    let products = [&sums[..], &["fp8-e5m2", "binary8p3se"]].concat();
    let mut lanes = 0;
    for (op, fa, fb, out) in combos {
        for sat in [Saturation::None, Saturation::Finite] {
            let p = Projection::new(Rounding::NearestTiesToEven, sat);
            let t = ops::PairTable::new(op, fa, fb, out, &p).unwrap();
            let name = format!(
                "{op} {} × {} → {} {sat:?}",
                fa.name(),
                fb.name(),
                out.name()
            );
            let must = match op {
                Op::Add | Op::Subtract => &sums[..],
                _ => &products[..],
            };
            if (fa == fb && fb == out && must.contains(&fa.name().as_ref()))
                || (fa == e4m3 && !out.is_signed())
            {
                assert!(t.uses_lanes(), "{name}: the lanes route");
            }
            if !t.uses_lanes() {
                continue;
            }
            lanes += 1;
            let (wa, wb) = (fa.bits(), fb.bits());
            let pairs = 1usize << (wa + wb);
            // every pair once (index i · 40503 mod 2^w is a permutation), the exact path's
            // results
            let perm = |i: usize| (i * 40503) & (pairs - 1);
            let a: Vec<u64> = (0..pairs).map(|i| (perm(i) >> wb) as u64).collect();
            let b: Vec<u64> = (0..pairs)
                .map(|i| (perm(i) & ((1 << wb) - 1)) as u64)
                .collect();
            let mut want = vec![0u64; pairs];
            let random = ops::Random::Seeded {
                seed: 0,
                index_offset: 0,
            };
            let Ok(wc) = ops::apply(op, &[(fa, &a), (fb, &b)], &out, &p, random, &mut want) else {
                continue; // a NaN without a code (FP6/FP4 0/0): both paths refuse
            };
            let reps = (3 * 65536 / pairs).max(1) + 1;
            let len = reps * pairs + 17;
            let a8: Vec<u8> = (0..len).map(|i| a[i % pairs] as u8).collect();
            let b8: Vec<u8> = (0..len).map(|i| b[i % pairs] as u8).collect();
            let mut got = vec![0u8; len];
            let gc = t.apply_u8(&a8, &b8, &mut got).unwrap();
            for (i, g) in got.iter().enumerate() {
                assert_eq!(u64::from(*g), want[i % pairs], "{name}: element {i}");
            }
            let mut all = (0..reps).fold(ops::Counts::default(), |s, _| s.merge(wc));
            for i in 0..17 {
                let o = ops::apply_scalar(op, &[(fa, a[i]), (fb, b[i])], &out, &p, 0).unwrap();
                count_outcome(&mut all, o.flags, o.code == out.nan_code(false));
            }
            assert_eq!(gc, all, "{name}: counts");
            // apply on arrays longer than the table takes the same route
            let (l64a, l64b): (Vec<u64>, Vec<u64>) = (
                a8.iter().map(|&x| x.into()).collect(),
                b8.iter().map(|&x| x.into()).collect(),
            );
            let mut via = vec![0u64; len];
            let vc = ops::apply(op, &[(fa, &l64a), (fb, &l64b)], &out, &p, random, &mut via);
            assert_eq!(vc.unwrap(), gc, "{name}: apply's counts");
            assert!(
                via.iter().zip(&got).all(|(v, g)| *v == u64::from(*g)),
                "{name}: apply"
            );
            // one pair at a time: each element's own counts
            for i in (0..pairs).step_by(7) {
                let mut one = [0u8];
                let c = t.apply_u8(&[a[i] as u8], &[b[i] as u8], &mut one).unwrap();
                let o = ops::apply_scalar(op, &[(fa, a[i]), (fb, b[i])], &out, &p, 0).unwrap();
                let mut w = ops::Counts::default();
                count_outcome(&mut w, o.flags, o.code == out.nan_code(false));
                assert_eq!((u64::from(one[0]), c), (want[i], w), "{name}: pair {i}");
            }
        }
    }
    assert!(lanes >= 40, "{lanes} tables took the lanes");
}
