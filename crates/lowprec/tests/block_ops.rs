//! Block operations (`lowprec::ops::block`) against a plain reference: every value an exact
//! big integer over the common denominator `2^E`, the defined result rounded by searching the
//! result format's sorted values, the overflow rules written out. Nothing here calls the
//! library's exact arithmetic or projection.

use lowprec::accum::{AccumOptions, Method};
use lowprec::ops::block::{self, Block, BlockOp, Inputs, Kappa, KappaSpec, ScaleRule, ScaleTarget};
use lowprec::ops::{Projection, Random, Rounding, Saturation};
use lowprec::FloatFormat;
use num_bigint::BigInt;
use rayon::prelude::*;

/// Every value is an integer multiple of `2^−E`.
const E: i32 = 1400;

/// `v · 2^E` for a finite binary64 value.
fn fix(v: f64) -> BigInt {
    assert!(v.is_finite());
    let bits = v.to_bits();
    let field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if field == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, field - 1075)
    };
    let n = BigInt::from(m) << (e + E) as usize;
    if v < 0.0 {
        -n
    } else {
        n
    }
}

/// A product of `k` fixed values, back to the common denominator.
fn prod(xs: &[f64]) -> BigInt {
    let mut p = BigInt::from(1) << E as usize;
    for &x in xs {
        p = (p * fix(x)) >> E as usize;
    }
    p
}

/// The sorted finite values of a result format (one zero), with their codes.
struct Grid {
    fmt: FloatFormat,
    vals: Vec<(BigInt, u64)>,
    max: u64,
    p3109: bool,
}

fn grid(fmt: FloatFormat) -> Grid {
    let mut v: Vec<(f64, u64)> = (0..=fmt.max_code())
        .map(|c| (fmt.decode(c), c))
        .filter(|(x, _)| x.is_finite() && !(*x == 0.0 && x.is_sign_negative()))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let max = v.last().unwrap().1;
    // the next value above max at the top binade's spacing: the overflow sentinel
    let top = fmt.decode(max);
    let below = v[v.len() - 2].0;
    let s = top + (top - below);
    let mut vals: Vec<(BigInt, u64)> = vec![(fix(-s), u64::MAX)];
    vals.extend(v.iter().map(|(x, c)| (fix(*x), *c)));
    vals.push((fix(s), u64::MAX));
    Grid {
        fmt,
        vals,
        max,
        p3109: fmt.specials().is_p3109(),
    }
}

/// The reference projection of an exact value `r · 2^−E` (family rules: `p3109` for the
/// sign of zero, `down` for an exact zero).
fn round_ref(g: &Grid, r: &BigInt, prj: &Projection, p3109: bool, down: bool) -> Option<u64> {
    let f = &g.fmt;
    let zero = BigInt::from(0);
    let neg = *r < zero;
    let mag_parity = |c: u64| -> u64 {
        if c == u64::MAX {
            (f.max_mag() + 1) & 1
        } else {
            (c & !f.sign_mask()) & 1
        }
    };
    let overflow = |neg: bool| -> Option<u64> {
        let toward_zero = match prj.rounding {
            Rounding::TowardZero => true,
            Rounding::TowardNegative => !neg,
            Rounding::TowardPositive => neg,
            Rounding::ToOdd => !g.p3109,
            _ => false,
        };
        let max = if neg { g.max | f.sign_mask() } else { g.max };
        match prj.saturation {
            Saturation::Finite | Saturation::Propagate => Some(max),
            Saturation::None if toward_zero => Some(max),
            Saturation::None => f.inf_code(neg),
        }
    };
    let n = g.vals.len();
    if *r >= g.vals[n - 1].0 {
        return overflow(false);
    }
    if *r <= g.vals[0].0 {
        return overflow(true);
    }
    let i = g.vals.partition_point(|(v, _)| v <= r); // vals[i−1] ≤ r < vals[i]
    let (lo, hi) = (&g.vals[i - 1], &g.vals[i]);
    let pick = if lo.0 == *r {
        lo
    } else {
        let twice = r * 2;
        let mid = &lo.0 + &hi.0;
        let toward_zero = if neg { hi } else { lo };
        let away = if neg { lo } else { hi };
        match prj.rounding {
            Rounding::TowardPositive => hi,
            Rounding::TowardNegative => lo,
            Rounding::TowardZero => toward_zero,
            Rounding::ToOdd => {
                if mag_parity(lo.1) == 1 {
                    lo
                } else {
                    hi
                }
            }
            Rounding::NearestTiesToEven | Rounding::NearestTiesToAway => {
                if twice < mid {
                    lo
                } else if twice > mid {
                    hi
                } else if prj.rounding == Rounding::NearestTiesToAway {
                    away
                } else if mag_parity(lo.1) == 0 {
                    lo
                } else {
                    hi
                }
            }
            _ => unreachable!("deterministic roundings only"),
        }
    };
    if pick.1 == u64::MAX {
        return overflow(neg);
    }
    if f.decode(pick.1) == 0.0 {
        let negz = if *r == zero { down } else { neg };
        return Some(if negz && !p3109 && f.has_negative_zero() {
            f.sign_mask()
        } else {
            0
        });
    }
    Some(pick.1)
}

/// Reference value of a block operation over extended reals: `Err(true)` NaN, `Err(false)`
/// never; `Ok(Some(sign))` an infinity, `Ok(None)` with the finite sum.
enum RefVal {
    Nan,
    Inf(bool),
    Fin(BigInt),
}

/// Σ of products of factor lists (each list the factors of one term).
fn ref_sum(terms: &[Vec<f64>]) -> RefVal {
    let mut pinf = false;
    let mut ninf = false;
    let mut s = BigInt::from(0);
    for t in terms {
        if t.iter().any(|x| x.is_nan()) {
            return RefVal::Nan;
        }
        let inf = t.iter().any(|x| x.is_infinite());
        if inf {
            if t.contains(&0.0) {
                return RefVal::Nan;
            }
            let neg = t.iter().filter(|x| **x < 0.0).count() % 2 == 1;
            if neg {
                ninf = true
            } else {
                pinf = true
            }
        } else {
            s += prod(t);
        }
    }
    match (pinf, ninf) {
        (true, true) => RefVal::Nan,
        (true, false) => RefVal::Inf(false),
        (false, true) => RefVal::Inf(true),
        (false, false) => RefVal::Fin(s),
    }
}

fn ref_project(g: &Grid, v: RefVal, prj: &Projection, p3109: bool) -> Option<u64> {
    let down = !p3109 && prj.rounding == Rounding::TowardNegative;
    match v {
        RefVal::Nan => g.fmt.nan_code(false),
        RefVal::Inf(neg) => match prj.saturation {
            Saturation::Finite => Some(if neg {
                g.max | g.fmt.sign_mask()
            } else {
                g.max
            }),
            _ => g.fmt.inf_code(neg),
        },
        RefVal::Fin(r) => round_ref(g, &r, prj, p3109, down),
    }
}

fn projections() -> Vec<Projection> {
    let mut v = Vec::new();
    for r in Rounding::DETERMINISTIC {
        for s in [Saturation::Finite, Saturation::None] {
            v.push(Projection::new(r, s));
        }
    }
    v
}

fn rnd(seed: u64, i: u64) -> u64 {
    lowprec::round::random_bits(seed, i) as u64
}

#[test]
fn dot_and_reduce_of_one_element_on_every_pair_of_binary8p4se_codes() {
    let (f, s8, out) = (
        FloatFormat::BINARY8P4SE,
        FloatFormat::BINARY8P1UF,
        FloatFormat::BINARY8P3SE,
    );
    let g = grid(out);
    let checked: u64 = (0..256u64)
        .into_par_iter()
        .map(|a| {
            let mut n = 0;
            for b in 0..256u64 {
                // scales 2^−4 … 2^4, varying with the pair
                let sa = 124 + (a * 7 + b * 3) % 9;
                let sb = 124 + (a + 5 * b) % 9;
                let (xa, xb) = (s8.decode(sa), s8.decode(sb));
                let (va, vb) = (f.decode(a), f.decode(b));
                for prj in projections() {
                    let r = block::block_dot_product(
                        &Block::new(s8, sa, f, &[a]),
                        &Block::new(s8, sb, f, &[b]),
                        &out,
                        &prj,
                        0,
                    )
                    .unwrap();
                    let want = ref_project(&g, ref_sum(&[vec![xa, va, xb, vb]]), &prj, true);
                    assert_eq!(r.code, want, "{a:#x}·{b:#x} scales {sa} {sb} {prj:?}");
                    let r = block::block_reduce_add(&Block::new(s8, sa, f, &[a]), &out, &prj, 0)
                        .unwrap();
                    let want = ref_project(&g, ref_sum(&[vec![xa, va]]), &prj, true);
                    assert_eq!(r.code, want, "reduce {a:#x} scale {sa} {prj:?}");
                    n += 2;
                }
            }
            n
        })
        .sum();
    assert_eq!(checked, 65536 * 12 * 2);
}

#[test]
fn random_blocks_of_32_against_rationals() {
    let fp16 = grid(FloatFormat::FP16);
    let cases = [
        (FloatFormat::BINARY8P3SE, FloatFormat::BINARY8P1UF, 128u64),
        (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF, 128),
        (FloatFormat::FP8_E4M3, FloatFormat::E8M0, 127),
    ];
    let mut total = 0u64;
    for (ci, (f, sf, one)) in cases.into_iter().enumerate() {
        let p3109 = f.specials().is_p3109();
        let finite: Vec<u64> = (0..=f.max_code())
            .filter(|&c| f.decode(c).is_finite())
            .collect();
        let n: u64 = (0..400u64)
            .into_par_iter()
            .map(|t| {
                let seed = 1000 + ci as u64;
                let pick = |j: u64| finite[(rnd(seed, t * 100 + j) % finite.len() as u64) as usize];
                let a: Vec<u64> = (0..32).map(pick).collect();
                let b: Vec<u64> = (32..64).map(pick).collect();
                let sa = one - 12 + rnd(seed, t * 100 + 90) % 20;
                let sb = one - 12 + rnd(seed, t * 100 + 91) % 20;
                let (xa, xb) = (sf.decode(sa), sf.decode(sb));
                let dot_terms: Vec<Vec<f64>> = (0..32)
                    .map(|i| vec![xa, f.decode(a[i]), xb, f.decode(b[i])])
                    .collect();
                let red_terms: Vec<Vec<f64>> = (0..32).map(|i| vec![xa, f.decode(a[i])]).collect();
                let mut n = 0;
                for prj in projections() {
                    let r = block::block_dot_product(
                        &Block::new(sf, sa, f, &a),
                        &Block::new(sf, sb, f, &b),
                        &FloatFormat::FP16,
                        &prj,
                        0,
                    )
                    .unwrap();
                    let want = ref_project(&fp16, ref_sum(&dot_terms), &prj, p3109);
                    assert_eq!(r.code, want, "{f:?} {a:?}·{b:?} {sa} {sb} {prj:?}");
                    let r = block::block_reduce_add(
                        &Block::new(sf, sa, f, &a),
                        &FloatFormat::FP16,
                        &prj,
                        0,
                    )
                    .unwrap();
                    let want = ref_project(&fp16, ref_sum(&red_terms), &prj, p3109);
                    assert_eq!(r.code, want, "reduce {f:?} {a:?} {sa} {prj:?}");
                    n += 2;
                }
                n
            })
            .sum();
        total += n;
    }
    assert_eq!(total, 3 * 400 * 12 * 2);
}

#[test]
fn cancellation_to_zero_and_specials() {
    let (f, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
    let prj = Projection::default();
    // 1·1 + (−1)·1 = 0 exactly: P3109 zero, no −0
    let r = block::block_dot_product(
        &Block::new(s8, 128, f, &[0x40, 0xc0]),
        &Block::new(s8, 128, f, &[0x40, 0x40]),
        &FloatFormat::FP32,
        &Projection::new(Rounding::TowardNegative, Saturation::None),
        0,
    )
    .unwrap();
    assert_eq!(r.code, Some(0));
    // +Inf and −Inf terms: NaN; a NaN scale: NaN
    let r = block::block_reduce_add(
        &Block::new(s8, 128, f, &[0x7f, 0xff]),
        &FloatFormat::FP32,
        &prj,
        0,
    )
    .unwrap();
    assert!(f32::from_bits(r.code.unwrap() as u32).is_nan());
    let r = block::block_reduce_add(&Block::new(s8, 255, f, &[0x40]), &f, &prj, 0).unwrap();
    assert_eq!(r.code, Some(0x80));
    // bad input: an error, not a panic
    assert!(block::block_reduce_add(&Block::new(s8, 128, f, &[]), &f, &prj, 0).is_err());
    assert!(block::block_reduce_add(&Block::new(s8, 128, f, &[256]), &f, &prj, 0).is_err());
    assert!(block::block_dot_product(
        &Block::new(s8, 128, f, &[1, 2]),
        &Block::new(s8, 128, f, &[1]),
        &f,
        &prj,
        0
    )
    .is_err());
}

#[test]
fn convert_to_and_from_block_round_trip_through_the_draft_definitions() {
    let (f, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
    let prj = Projection::default();
    let rnd0 = Random::Seeded {
        seed: 0,
        index_offset: 0,
    };
    let x = [3.0, -0.3, 0.0, f64::INFINITY, f64::NAN, 1e-9];
    let (codes, counts) = block::convert_to_block(&x, 130, &s8, &f, &prj, rnd0).unwrap(); // s = 4
    let vals: Vec<f64> = codes.iter().map(|&c| f.decode(c)).collect();
    assert_eq!(vals[..3], [0.75, -0.078125, 0.0]);
    assert_eq!(vals[3], f64::INFINITY);
    assert!(vals[4].is_nan());
    assert_eq!(vals[5], 0.0);
    assert_eq!(counts.total, 6);
    let (back, _) = block::convert_from_block(
        &Block::new(s8, 130, f, &codes),
        &FloatFormat::FP64,
        &prj,
        rnd0,
    )
    .unwrap();
    assert_eq!(f64::from_bits(back[0]), 3.0);
    assert_eq!(f64::from_bits(back[1]), -0.3125);
    // scale 0: every non-NaN element 0; an infinite scale is not in Binary8p1uf, so use fp16
    let (codes, _) = block::convert_to_block(&[5.0, -2.0], 0, &s8, &f, &prj, rnd0).unwrap();
    assert_eq!(codes, [0, 0]);
    let (codes, _) = block::convert_to_block(
        &[5.0, -2.0, 0.0],
        0x7c00,
        &FloatFormat::FP16,
        &f,
        &prj,
        rnd0,
    )
    .unwrap();
    assert_eq!(
        codes.iter().map(|&c| f.decode(c)).collect::<Vec<_>>(),
        [1.0, -1.0, 0.0]
    );
}

/// Blocks of values for the scale tests: random magnitudes over a wide range, and adversarial
/// blocks (all zero, one huge among tiny, all equal, exact powers of two, at the format's max).
fn value_blocks(f: &FloatFormat) -> Vec<Vec<f64>> {
    let mut v = Vec::new();
    for t in 0..3000u64 {
        let k = 1 + (rnd(7, t * 64) % 32) as usize;
        let e_hi = (rnd(7, t * 64 + 1) % 60) as i32 - 30;
        let b: Vec<f64> = (0..k as u64)
            .map(|j| {
                let m = 1.0 + (rnd(7, t * 64 + 2 + j) % 1000) as f64 / 1000.0;
                let e = e_hi - (rnd(8, t * 64 + j) % 12) as i32;
                let s = if rnd(9, t * 64 + j).is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                };
                s * m * 2f64.powi(e)
            })
            .collect();
        v.push(b);
    }
    let mx = f.max_finite();
    v.push(vec![0.0; 8]);
    v.push(vec![1e30, 1e-30, -1e-30]);
    v.push(vec![0.75; 16]);
    v.push(vec![2.0, -4.0, 8.0]);
    v.push(vec![mx, -mx]);
    v.push(vec![mx * 1.5, 1.0]);
    v.push(vec![f64::INFINITY, 3.0, f64::NAN]);
    v.push(vec![1.0 + f64::EPSILON]);
    v
}

#[test]
fn max_abs_finite_scales_never_overflow_and_are_minimal() {
    let s8 = FloatFormat::BINARY8P1UF;
    let rnd0 = Random::Seeded {
        seed: 0,
        index_offset: 0,
    };
    let mut checked = 0;
    for f in [
        FloatFormat::BINARY8P3SE,
        FloatFormat::BINARY8P4SE,
        FloatFormat::FP8_E4M3,
        FloatFormat::BINARY4P2SF,
    ] {
        for target in [ScaleTarget::One, ScaleTarget::MaxFinite] {
            let rule = ScaleRule {
                target,
                ..ScaleRule::default()
            };
            let t = match target {
                ScaleTarget::One => fix(1.0),
                ScaleTarget::MaxFinite => fix(f.max_finite()),
            };
            for x in value_blocks(&f) {
                for prj in projections() {
                    let (s, codes, counts) =
                        block::convert_to_block_max_abs_finite(&x, &f, &s8, &rule, &prj, rnd0)
                            .unwrap();
                    let amax = x
                        .iter()
                        .filter(|v| v.is_finite())
                        .fold(0.0f64, |m, v| m.max(v.abs()));
                    let sv = s8.decode(s);
                    if amax == 0.0 {
                        assert_eq!(sv, 0.0);
                        continue;
                    }
                    // amax / s ≤ T, i.e. amax · 2^E ≤ T · s (exactly, in integers)
                    let prod_ts = (&t * fix(sv)) >> E as usize;
                    assert!(fix(amax) <= prod_ts, "{x:?} {target:?} s={sv}");
                    // minimal: the next smaller scale gives amax / s' > T
                    if s > 1 {
                        let prev = s8.decode(s - 1);
                        assert!(
                            fix(amax) > (&t * fix(prev)) >> E as usize,
                            "{x:?} {target:?}"
                        );
                    }
                    // no finite element overflows
                    assert_eq!(counts.overflow, 0, "{x:?} {target:?} {prj:?}");
                    for (v, c) in x.iter().zip(&codes) {
                        if v.is_finite() {
                            assert!(f.decode(*c).is_finite(), "{x:?} {target:?} {prj:?}");
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 4 * 2 * 3000 * 12);
}

fn spec(op: BlockOp, f: FloatFormat, k: usize, acc: AccumOptions, out: FloatFormat) -> KappaSpec {
    KappaSpec {
        op,
        format: f,
        scale_format: FloatFormat::BINARY8P1UF,
        scales: (128, 128),
        k,
        out,
        projection: Projection::default(),
        acc,
    }
}

#[test]
fn kappa_is_zero_for_an_exact_fp32_accumulator() {
    for method in [Method::Sequential, Method::Pairwise] {
        let acc = AccumOptions::new(FloatFormat::FP32).method(method);
        let s = spec(
            BlockOp::DotProduct,
            FloatFormat::BINARY4P2SF,
            2,
            acc,
            FloatFormat::FP32,
        );
        let r = block::kappa(&s, Inputs::Exhaustive).unwrap();
        // 15 non-NaN codes, 4 of them per input
        assert_eq!(
            (r.kappa, r.inputs, r.exhaustive),
            (Kappa::Steps(0), 15u64.pow(4), true)
        );
        assert_eq!(r.differ, 0);
        let s = spec(
            BlockOp::ReduceAdd,
            FloatFormat::BINARY4P2SF,
            4,
            acc,
            FloatFormat::BINARY4P2SF,
        );
        let r = block::kappa(&s, Inputs::Exhaustive).unwrap();
        assert_eq!((r.kappa, r.inputs), (Kappa::Steps(0), 15u64.pow(4)));
    }
}

/// Recompute a witness with the exact and the approximate operations.
fn recheck(s: &KappaSpec, w: &block::Witness) {
    let a = Block::new(s.scale_format, s.scales.0, s.format, &w.a);
    let (e, ap) = match s.op {
        BlockOp::DotProduct => {
            let b = Block::new(s.scale_format, s.scales.1, s.format, &w.b);
            (
                block::block_dot_product(&a, &b, &s.out, &s.projection, 0).unwrap(),
                block::block_dot_product_approx(&a, &b, &s.out, &s.projection, &s.acc, 0).unwrap(),
            )
        }
        BlockOp::ReduceAdd => (
            block::block_reduce_add(&a, &s.out, &s.projection, 0).unwrap(),
            block::block_reduce_add_approx(&a, &s.out, &s.projection, &s.acc, 0).unwrap(),
        ),
    };
    assert_eq!((e.code, ap.code), (w.exact, w.approx));
    // the distance by counting the finite values strictly between, plus one
    if let (Kappa::Steps(n), Some(ec), Some(ac)) = (w.kappa, e.code, ap.code) {
        let (ev, av) = (s.out.decode(ec), s.out.decode(ac));
        let (lo, hi) = if ev < av { (ev, av) } else { (av, ev) };
        let mut between: Vec<f64> = (0..=s.out.max_code())
            .map(|c| s.out.decode(c))
            .filter(|v| v.is_finite() && *v >= lo && *v < hi)
            .map(|v| if v == 0.0 { 0.0 } else { v })
            .collect();
        between.sort_by(f64::total_cmp);
        between.dedup();
        assert_eq!(between.len() as u64, n);
    }
}

#[test]
fn kappa_of_an_fp16_accumulator_is_at_least_one_with_a_witness() {
    // ReduceAdd of 3 Binary8p3se values into binary16, sampled and adversarial
    let acc = AccumOptions::new(FloatFormat::FP16);
    let mut s = spec(
        BlockOp::ReduceAdd,
        FloatFormat::BINARY8P3SE,
        3,
        acc,
        FloatFormat::FP16,
    );
    s.scales = (120, 120); // 2^−8: sums stay within binary16's range
    let r = block::kappa(
        &s,
        Inputs::Sampled {
            seed: 1,
            samples: 20_000,
        },
    )
    .unwrap();
    assert!(matches!(r.kappa, Kappa::Steps(n) if n >= 1), "{r:?}");
    recheck(&s, r.witness.as_ref().unwrap());
    // dot products of 16 Binary8p4se elements, fp16 sequential and pairwise, into Binary8p4se
    for method in [Method::Sequential, Method::Pairwise] {
        let acc = AccumOptions::new(FloatFormat::FP16).method(method);
        let mut s = spec(
            BlockOp::DotProduct,
            FloatFormat::BINARY8P4SE,
            16,
            acc,
            FloatFormat::BINARY8P4SE,
        );
        s.scales = (120, 120);
        let r = block::kappa(
            &s,
            Inputs::Sampled {
                seed: 2,
                samples: 20_000,
            },
        )
        .unwrap();
        assert!(
            matches!(r.kappa, Kappa::Steps(n) if n >= 1),
            "{method:?} {r:?}"
        );
        assert!(!r.exhaustive && r.inputs > 20_000);
        recheck(&s, r.witness.as_ref().unwrap());
    }
    // the scales varying too: the largest κ over the pairs, found at the pair whose own κ
    // it is, its witness recomputed at those scales; the counts summed
    let mut s = spec(
        BlockOp::ReduceAdd,
        FloatFormat::BINARY8P3SE,
        4,
        acc,
        FloatFormat::FP16,
    );
    let scales = [116u64, 120, 124];
    let sampled = Inputs::Sampled {
        seed: 3,
        samples: 5_000,
    };
    let (r, at) = block::kappa_over_scales(&s, &scales, sampled).unwrap();
    let each: Vec<_> = scales
        .iter()
        .map(|&c| {
            s.scales = (c, c);
            block::kappa(&s, sampled).unwrap()
        })
        .collect();
    assert_eq!(r.kappa, each.iter().map(|e| e.kappa).max().unwrap());
    assert_eq!(r.inputs, each.iter().map(|e| e.inputs).sum::<u64>());
    s.scales = at;
    assert_eq!(block::kappa(&s, sampled).unwrap().kappa, r.kappa);
    recheck(&s, r.witness.as_ref().unwrap());
    assert!(block::kappa_over_scales(&s, &[], sampled).is_err());
    // exhaustive over a 4-bit format with an fp16 accumulator and K = 4: exact, κ = 0
    let s = spec(
        BlockOp::ReduceAdd,
        FloatFormat::BINARY4P2SF,
        4,
        acc,
        FloatFormat::FP16,
    );
    let r = block::kappa(&s, Inputs::Exhaustive).unwrap();
    assert_eq!(r.kappa, Kappa::Steps(0));
    assert_eq!(r.inputs, 15u64.pow(4));
}

/// BlockReduceMultiply: the exact product of the decoded elements rounded once, against the
/// big-integer reference; blocks of two on every pair of Binary8p4se codes (into
/// Binary8p3se), and random blocks of up to 8 elements of three formats into FP16 and
/// Binary8p3se, under every deterministic projection; `0 · ∞` is NaN.
#[test]
fn reduce_multiply_against_big_integers() {
    let (f, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
    let b8 = grid(FloatFormat::BINARY8P3SE);
    let pairs: u64 = (0..256u64)
        .into_par_iter()
        .map(|a| {
            let mut n = 0;
            for b in 0..256u64 {
                let sc = 126 + (a * 3 + b) % 5; // scales 2^−2 … 2^2
                let x = s8.decode(sc);
                for prj in projections() {
                    let r = block::block_reduce_multiply(
                        &Block::new(s8, sc, f, &[a, b]),
                        &b8.fmt,
                        &prj,
                        0,
                    )
                    .unwrap();
                    let want = ref_project(
                        &b8,
                        ref_sum(&[vec![x, f.decode(a), x, f.decode(b)]]),
                        &prj,
                        true,
                    );
                    assert_eq!(r.code, want, "{a:#x}·{b:#x} scale {sc} {prj:?}");
                    n += 1;
                }
            }
            n
        })
        .sum();
    assert_eq!(pairs, 65536 * 12);
    let fp16 = grid(FloatFormat::FP16);
    let cases = [
        (FloatFormat::BINARY8P3SE, FloatFormat::BINARY8P1UF, 128u64),
        (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF, 128),
        (FloatFormat::FP8_E4M3, FloatFormat::E8M0, 127),
    ];
    for (ci, (f, sf, one)) in cases.into_iter().enumerate() {
        let p3109 = f.specials().is_p3109();
        for t in 0..300u64 {
            let seed = 77 + ci as u64;
            let k = 1 + (rnd(seed, t * 50) % 8) as usize;
            let codes: Vec<u64> = (0..k as u64)
                .map(|j| rnd(seed, t * 50 + 1 + j) % (f.max_code() + 1))
                .collect();
            let sc = one - 3 + rnd(seed, t * 50 + 40) % 6;
            let x = sf.decode(sc);
            let factors: Vec<f64> = codes.iter().flat_map(|&c| [x, f.decode(c)]).collect();
            for (out, g) in [(FloatFormat::FP16, &fp16), (b8.fmt, &b8)] {
                let p3 = p3109 || out.specials().is_p3109();
                for prj in projections() {
                    let r =
                        block::block_reduce_multiply(&Block::new(sf, sc, f, &codes), &out, &prj, 0)
                            .unwrap();
                    // an exact zero product in an IEEE-style format: the sign of the product
                    let zero = factors.contains(&0.0)
                        && !factors.iter().any(|v| v.is_nan() || v.is_infinite());
                    let neg = factors.iter().filter(|v| v.is_sign_negative()).count() % 2 == 1;
                    let want = if zero && !p3 {
                        Some(if neg { out.sign_mask() } else { 0 })
                    } else {
                        ref_project(g, ref_sum(std::slice::from_ref(&factors)), &prj, p3)
                    };
                    assert_eq!(r.code, want, "{f:?} {codes:?} scale {sc} → {out:?} {prj:?}");
                }
            }
        }
    }
    // 0 · ∞ is an invalid NaN; an empty block is refused
    let e5 = FloatFormat::FP8_E5M2;
    let r = block::block_reduce_multiply(
        &Block::new(FloatFormat::E8M0, 127, e5, &[0x7c, 0x00]),
        &FloatFormat::FP16,
        &Projection::default(),
        0,
    )
    .unwrap();
    assert!(FloatFormat::FP16.decode(r.code.unwrap()).is_nan());
    assert!(block::block_reduce_multiply(
        &Block::new(s8, 128, f, &[]),
        &f,
        &Projection::default(),
        0
    )
    .is_err());
}

/// Elementwise block operations (§5.4): `Project(ωOp(S·X…) / s_r)`. Add, Subtract and
/// Multiply on every pair of Binary8p4se codes (NaN and ±Inf included) with scales varying
/// by pair, and FMA on random triples, against the big-integer reference of the exact
/// result times `1/s_r`; every operation of the schema with unit scales equals the scalar
/// operation on every pair (or sampled triples) of codes; special and bad result scales.
#[test]
fn elementwise_block_operations() {
    use lowprec::ops::{self, Op};
    let (f, s8) = (FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P1UF);
    let out = grid(FloatFormat::BINARY8P3SE);
    let seeded = Random::Seeded {
        seed: 0,
        index_offset: 0,
    };
    let checked: u64 = (0..256u64)
        .into_par_iter()
        .map(|a| {
            let mut n = 0;
            for b in 0..256u64 {
                let (sa, sb, sr) = (
                    126 + (a + b) % 5,
                    126 + (a * 5 + b) % 5,
                    126 + (a + 3 * b) % 5,
                );
                let (xa, xb, t) = (s8.decode(sa), s8.decode(sb), 1.0 / s8.decode(sr));
                let (va, vb) = (f.decode(a), f.decode(b));
                for (op, terms) in [
                    (Op::Add, vec![vec![xa, va, t], vec![xb, vb, t]]),
                    (Op::Subtract, vec![vec![xa, va, t], vec![-1.0, xb, vb, t]]),
                    (Op::Multiply, vec![vec![xa, va, xb, vb, t]]),
                ] {
                    for prj in projections() {
                        let (ca, cb) = ([a], [b]);
                        let (r, _) = block::block_elementwise(
                            op,
                            &[Block::new(s8, sa, f, &ca), Block::new(s8, sb, f, &cb)],
                            (s8, sr),
                            &out.fmt,
                            &prj,
                            &seeded,
                        )
                        .unwrap();
                        let want = ref_project(&out, ref_sum(&terms), &prj, true);
                        assert_eq!(
                            Some(r[0]),
                            want,
                            "{op} {a:#x} {b:#x} scales {sa} {sb} {sr} {prj:?}"
                        );
                        n += 1;
                    }
                }
            }
            n
        })
        .sum();
    assert_eq!(checked, 65536 * 3 * 12);
    // FMA on random blocks of 16 against the reference
    for t in 0..200u64 {
        let pick = |j: u64| rnd(5, t * 64 + j) % 256;
        let (x, y, z): (Vec<u64>, Vec<u64>, Vec<u64>) = (
            (0..16).map(pick).collect(),
            (16..32).map(pick).collect(),
            (32..48).map(pick).collect(),
        );
        let (s1, s2, s3, sr) = (126 + t % 5, 126 + t % 3, 127 + t % 4, 125 + t % 7);
        let v = |c: u64| s8.decode(c);
        for prj in projections() {
            let (r, _) = block::block_elementwise(
                Op::Fma,
                &[
                    Block::new(s8, s1, f, &x),
                    Block::new(s8, s2, f, &y),
                    Block::new(s8, s3, f, &z),
                ],
                (s8, sr),
                &out.fmt,
                &prj,
                &seeded,
            )
            .unwrap();
            for i in 0..16 {
                let terms = [
                    vec![v(s1), f.decode(x[i]), v(s2), f.decode(y[i]), 1.0 / v(sr)],
                    vec![v(s3), f.decode(z[i]), 1.0 / v(sr)],
                ];
                let want = ref_project(&out, ref_sum(&terms), &prj, true);
                assert_eq!(Some(r[i]), want, "FMA {} {} {} {prj:?}", x[i], y[i], z[i]);
            }
        }
    }
    // unit scales: every operation of the schema is the scalar operation
    let one = 128u64; // Binary8p1uf 1
    let prj = Projection::new(Rounding::TowardZero, Saturation::Finite);
    for op in block::ELEMENTWISE {
        let tuples: Vec<Vec<u64>> = match op.arity() {
            1 => (0..256).map(|a| vec![a]).collect(),
            2 => (0..65536u64).map(|p| vec![p >> 8, p & 255]).collect(),
            _ => (0..20000u64)
                .map(|i| (0..3).map(|j| rnd(9, i * 3 + j) % 256).collect())
                .collect(),
        };
        let cols: Vec<Vec<u64>> = (0..op.arity())
            .map(|j| tuples.iter().map(|t| t[j]).collect())
            .collect();
        let blocks: Vec<Block> = cols.iter().map(|c| Block::new(s8, one, f, c)).collect();
        let (r, _) =
            block::block_elementwise(op, &blocks, (s8, one), &out.fmt, &prj, &seeded).unwrap();
        for (i, t) in tuples.iter().enumerate() {
            let operands: Vec<(FloatFormat, u64)> = t.iter().map(|&c| (f, c)).collect();
            let want = ops::apply_scalar(op, &operands, &out.fmt, &prj, 0).unwrap();
            assert_eq!(Some(r[i]), want.code, "{op} {t:?}");
        }
    }
    // a zero result scale gives zeros; a scale that is not a power of two is refused
    let (r, _) = block::block_elementwise(
        Op::Add,
        &[
            Block::new(s8, one, f, &[0x44, 0xc4]),
            Block::new(s8, one, f, &[0x40, 0x40]),
        ],
        (s8, 0),
        &out.fmt,
        &prj,
        &seeded,
    )
    .unwrap();
    assert_eq!(r, vec![0, 0]);
    let e = block::block_elementwise(
        Op::Add,
        &[
            Block::new(s8, one, f, &[0x44]),
            Block::new(s8, one, f, &[0x40]),
        ],
        (FloatFormat::FP8_E4M3, 0x44), // 3
        &out.fmt,
        &prj,
        &seeded,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("power of two"), "{e}");
    let e = block::block_elementwise(
        Op::CompareLess,
        &[
            Block::new(s8, one, f, &[0x44]),
            Block::new(s8, one, f, &[0x40]),
        ],
        (s8, one),
        &out.fmt,
        &prj,
        &seeded,
    );
    assert!(e.is_err());
}
