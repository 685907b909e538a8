//! Accumulation, GEMM and the stable reductions against exact references: an integer
//! (i128) model of exact-then-round addition, a scalar re-implementation of every documented
//! recurrence, the seed's facts, the textbook error bounds, thread and SIMD independence.

mod common;

use common::Rng;
use lowprec::accum::{
    accumulate, error_bound, exact_sum, gamma, gemm, AccumOptions, Adder, GemmOptions, Method,
    Order,
};
use lowprec::reduce::{self, Arith, Moments};
use lowprec::{FloatFormat, Overflow, RoundOptions, RoundingMode, Specials};

const MODES: [RoundingMode; 6] = [
    RoundingMode::NearestEven,
    RoundingMode::NearestAway,
    RoundingMode::TowardZero,
    RoundingMode::Up,
    RoundingMode::Down,
    RoundingMode::ToOdd,
];

/// `x = M · 2^E` exactly (zero as `(0, i32::MAX)`: no constraint on the exponent).
fn split(x: f64) -> (i128, i32) {
    if x == 0.0 {
        return (0, i32::MAX);
    }
    let b = x.to_bits();
    let e = ((b >> 52) & 0x7ff) as i32;
    let m = b & ((1u64 << 52) - 1);
    let (m, e) = if e == 0 {
        (m, -1074)
    } else {
        (m | (1u64 << 52), e - 1075)
    };
    let tz = m.trailing_zeros();
    let (m, e) = (m >> tz, e + tz as i32);
    (if x < 0.0 { -(m as i128) } else { m as i128 }, e)
}

/// The exact `a + b` as `M · 2^E` (exponent gap at most 70).
fn exact_add(a: f64, b: f64) -> (i128, i32) {
    let ((ma, ea), (mb, eb)) = (split(a), split(b));
    let e = ea.min(eb);
    if e == i32::MAX {
        return (0, 0);
    }
    let sh = |m: i128, x: i32| if m == 0 { 0 } else { m << (x - e) };
    let fits = |m: i128, x: i32| {
        m == 0 || (128 - m.unsigned_abs().leading_zeros()) as i32 + (x - e) <= 125
    };
    assert!(
        fits(ma, ea) && fits(mb, eb),
        "exponent gap too wide for i128: {a:e} + {b:e}"
    );
    (sh(ma, ea) + sh(mb, eb), e)
}

/// Round `M · 2^E` into `fmt` under `o`, from the definitions (IEEE 754 §4.3, §7.4).
fn round_exact(fmt: &FloatFormat, o: &RoundOptions, m: i128, e: i32, zero_neg: bool) -> f64 {
    let fnuz = fmt.specials() == Specials::Fnuz;
    let signed_zero = |neg: bool| if neg && !fnuz { -0.0 } else { 0.0 };
    if m == 0 {
        return signed_zero(zero_neg);
    }
    let neg = m < 0;
    let mag = m.unsigned_abs();
    let top = e + 127 - mag.leading_zeros() as i32;
    let q = top.max(fmt.emin()) - fmt.man_bits() as i32;
    let r: u128 = if q <= e {
        mag << (e - q)
    } else {
        let sh = (q - e) as u32;
        let (r, rem) = if sh >= 128 {
            (0, mag)
        } else {
            (mag >> sh, mag & ((1u128 << sh) - 1))
        };
        let half = if sh >= 129 {
            u128::MAX
        } else {
            1u128 << (sh - 1)
        };
        let up = match o.mode {
            RoundingMode::NearestEven => rem > half || (rem == half && r & 1 == 1),
            RoundingMode::NearestAway => rem >= half,
            RoundingMode::TowardZero => false,
            RoundingMode::Up => rem > 0 && !neg,
            RoundingMode::Down => rem > 0 && neg,
            RoundingMode::ToOdd => rem > 0 && r & 1 == 0,
            RoundingMode::Stochastic => unreachable!(),
        };
        r + up as u128
    };
    let v = r as f64 * 2f64.powi(q);
    let max = fmt.max_finite();
    let v = if v > max {
        let to_max = o.overflow == Overflow::Saturate
            || fmt.specials() == Specials::None
            || match o.mode {
                RoundingMode::TowardZero | RoundingMode::ToOdd => true,
                RoundingMode::Up => neg,
                RoundingMode::Down => !neg,
                _ => false,
            };
        if to_max {
            max
        } else if fmt.specials() == Specials::Ieee {
            f64::INFINITY
        } else {
            f64::NAN
        }
    } else {
        v
    };
    if v == 0.0 {
        signed_zero(neg)
    } else if neg {
        -v
    } else {
        v
    }
}

fn accumulators() -> Vec<FloatFormat> {
    let mut v = vec![
        FloatFormat::BF16,
        FloatFormat::FP16,
        FloatFormat::FP32,
        FloatFormat::TF32,
        FloatFormat::FP8_E4M3,
        FloatFormat::FP8_E5M2,
        FloatFormat::FP6_E2M3,
        FloatFormat::FP4_E2M1,
    ];
    for s in ["e4m3:fnuz", "e5m10b20", "e10m40"] {
        v.push(s.parse().unwrap());
    }
    v
}

/// A random finite value of `fmt` (from a random code).
fn value_of(fmt: &FloatFormat, rng: &mut Rng) -> f64 {
    loop {
        let v = fmt.decode(rng.below(1 << fmt.bits().min(40)));
        if v.is_finite() {
            return v;
        }
    }
}

#[test]
fn every_addition_is_the_exact_sum_rounded_once() {
    let mut rng = Rng(11);
    for fmt in accumulators() {
        for &mode in &MODES {
            for overflow in [Overflow::Ieee, Overflow::Saturate] {
                let o = RoundOptions::new(mode).overflow(overflow);
                let adder = Adder::new(&fmt, &o).unwrap();
                for i in 0..20_000 {
                    let a = value_of(&fmt, &mut rng);
                    // b: a random binary64 within 60 binades of a (or of 1), sometimes −a.
                    let b = match i % 10 {
                        0 => -a,
                        1 => loop {
                            // another value of the format, within 50 binades
                            let v = value_of(&fmt, &mut rng);
                            let gap = (v.abs().log2() - a.abs().log2()).abs();
                            if v == 0.0 || a == 0.0 || gap < 50.0 {
                                break v;
                            }
                        },
                        _ => {
                            let base = if a == 0.0 { 1.0 } else { a.abs() };
                            let k = rng.below(80) as i32 - 40;
                            let s = if rng.below(2) == 0 { 1.0 } else { -1.0 };
                            // 30 random significand bits keep the exact sum within i128
                            let frac = rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
                            s * base * (1.0 + frac) * 2f64.powi(k)
                        }
                    };
                    let (m, e) = exact_add(a, b);
                    let zero_neg = if m == 0 {
                        (mode == RoundingMode::Down && (a.to_bits() | b.to_bits()) != 0)
                            || (a.is_sign_negative() && b.is_sign_negative())
                    } else {
                        false
                    };
                    let want = round_exact(&fmt, &o, m, e, zero_neg);
                    let got = adder.add(a, b, i);
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{fmt} {mode:?} {overflow:?}: {a:e} + {b:e} = {got:e}, want {want:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn binary64_accumulator_rounds_the_exact_sum_in_every_mode() {
    // Sums of binary64 values whose exact result needs more than 53 bits.
    let mut rng = Rng(5);
    let mut worst_case_seen = 0;
    for &mode in &MODES {
        let o = RoundOptions::new(mode);
        let adder = Adder::new(&FloatFormat::FP64, &o).unwrap();
        for i in 0..50_000 {
            let sign = |r: &mut Rng| if r.below(2) == 0 { 1.0 } else { -1.0 };
            let a = sign(&mut rng) * (1.0 + rng.unit()) * 2f64.powi(rng.below(30) as i32 - 15);
            let b = sign(&mut rng) * (1.0 + rng.unit()) * 2f64.powi(rng.below(30) as i32 - 45);
            let (m, e) = exact_add(a, b);
            let zero_neg = m == 0 && mode == RoundingMode::Down;
            let want = round_exact(&FloatFormat::FP64, &o, m, e, zero_neg);
            let got = adder.add(a, b, i);
            assert_eq!(got.to_bits(), want.to_bits(), "{mode:?}: {a:e} + {b:e}");
            worst_case_seen += (got != a + b) as u32;
        }
    }
    assert!(
        worst_case_seen > 1000,
        "directed modes must differ from binary64's nearest sum"
    );
}

#[test]
fn exact_sum_is_correctly_rounded() {
    let mut rng = Rng(3);
    for t in 0..2000 {
        let n = 1 + rng.below(40) as usize;
        let x: Vec<f64> = (0..n)
            .map(|_| (rng.unit() - 0.5) * 2f64.powi(rng.below(60) as i32 - 30))
            .collect();
        let e0 = x.iter().map(|v| split(*v).1).min().unwrap();
        if e0 == i32::MAX {
            assert_eq!(exact_sum(&x), 0.0);
            continue;
        }
        let m: i128 = x
            .iter()
            .map(|v| {
                let (m, e) = split(*v);
                if m == 0 {
                    0
                } else {
                    m << (e - e0)
                }
            })
            .sum();
        let want = m as f64 * 2f64.powi(e0); // i128 → f64 rounds to nearest even
        assert_eq!(exact_sum(&x), want, "case {t}: {x:?}");
    }
}

/// The documented recurrences, one rounding at a time through [`Adder::add`] with the
/// documented stochastic-rounding indices.
fn scalar_rows(x: &[f64], n: usize, o: &AccumOptions) -> Vec<f64> {
    let adder = Adder::new(&o.acc, &o.rounding).unwrap();
    let outer = Adder::new(&o.outer, &o.outer_rounding).unwrap();
    x.chunks(n)
        .enumerate()
        .map(|(r, row)| {
            let idx = |k: u64| ((r as u64) << 32) | k;
            let mut k = 0u64;
            let mut total = 0.0;
            let piece = if o.chunk > 0 { o.chunk } else { n };
            let mut last = 0.0;
            for part in row.chunks(piece) {
                let partial = match o.method {
                    Method::Sequential => part.iter().fold(0.0, |s, &v| {
                        k += 1;
                        adder.add(s, v, idx(k - 1))
                    }),
                    Method::Kahan => {
                        let (mut s, mut c) = (0.0, 0.0);
                        for &v in part {
                            let y = adder.add(v, -c, idx(k));
                            let t = adder.add(s, y, idx(k + 1));
                            let z = adder.add(t, -s, idx(k + 2));
                            c = adder.add(z, -y, idx(k + 3));
                            s = t;
                            k += 4;
                        }
                        s
                    }
                    Method::Pairwise => {
                        let mut cur = part.to_vec();
                        if cur.len() == 1 {
                            cur.push(0.0);
                        }
                        while cur.len() > 1 {
                            if cur.len() % 2 == 1 {
                                cur.push(0.0);
                            }
                            cur = cur
                                .chunks(2)
                                .enumerate()
                                .map(|(i, p)| adder.add(p[0], p[1], idx(k + i as u64)))
                                .collect();
                            k += cur.len() as u64;
                        }
                        cur[0]
                    }
                };
                if o.chunk > 0 {
                    total = outer.add(total, partial, idx(k));
                    k += 1;
                }
                last = partial;
            }
            if o.chunk > 0 {
                total
            } else {
                last
            }
        })
        .collect()
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

#[test]
fn fast_kernels_equal_the_scalar_recurrences() {
    let mut rng = Rng(21);
    let all_modes = [
        RoundingMode::NearestEven,
        RoundingMode::NearestAway,
        RoundingMode::TowardZero,
        RoundingMode::Up,
        RoundingMode::Down,
        RoundingMode::ToOdd,
        RoundingMode::Stochastic,
    ];
    for (rows, n) in [(37, 150), (3, 1), (1, 700), (70, 64)] {
        let x: Vec<f64> = (0..rows * n)
            .map(|_| (rng.unit() - 0.3) * 2f64.powi(rng.below(12) as i32 - 4))
            .collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let x32w: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
        for acc in [
            FloatFormat::BF16,
            FloatFormat::FP8_E4M3,
            FloatFormat::FP16,
            FloatFormat::FP64,
        ] {
            for mode in all_modes {
                for method in [Method::Sequential, Method::Pairwise, Method::Kahan] {
                    for chunk in [0, 1, 16, 33] {
                        let o = AccumOptions::new(acc)
                            .method(method)
                            .chunk(chunk)
                            .rounding(RoundOptions::new(mode).seed(9));
                        let want = scalar_rows(&x, n, &o);
                        let (got, _) = accumulate(&x, n, &o).unwrap();
                        assert!(
                            same_bits(&got, &want),
                            "{acc} {mode:?} {method} chunk {chunk} rows {rows} n {n}"
                        );
                        let (got32, _) = accumulate(&x32, n, &o).unwrap();
                        assert!(
                            same_bits(&got32, &scalar_rows(&x32w, n, &o)),
                            "f32 input: {acc} {mode:?} {method}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_threads_or_instruction_set() {
    let mut rng = Rng(8);
    let (rows, n) = (100, 5000);
    let x: Vec<f64> = (0..rows * n).map(|_| rng.unit() - 0.5).collect();
    for method in [Method::Sequential, Method::Pairwise, Method::Kahan] {
        for mode in [
            RoundingMode::NearestEven,
            RoundingMode::Stochastic,
            RoundingMode::TowardZero,
        ] {
            let o = AccumOptions::new(FloatFormat::BF16)
                .method(method)
                .rounding(RoundOptions::new(mode).seed(4));
            let run = |threads: usize| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| accumulate(&x, n, &o).unwrap())
            };
            let (one, st1) = run(1);
            let (two, st2) = run(2);
            assert!(same_bits(&one, &two), "{method} {mode:?}");
            assert_eq!(st1, st2);
        }
    }
    // Every instruction-set level (set_max_level is process-wide; results are the same by design).
    let o =
        AccumOptions::new(FloatFormat::FP16).rounding(RoundOptions::new(RoundingMode::Stochastic));
    let (best, _) = accumulate(&x, n, &o).unwrap();
    for level in [lowprec::simd::Level::Portable, lowprec::simd::Level::Avx2] {
        lowprec::simd::set_max_level(level);
        let (v, _) = accumulate(&x, n, &o).unwrap();
        lowprec::simd::set_max_level(lowprec::simd::Level::Avx512);
        assert!(same_bits(&v, &best), "{level:?}");
    }
}

#[test]
fn seed_facts_300_ones_in_bf16() {
    let ones = vec![1.0f64; 300];
    let o = AccumOptions::new(FloatFormat::BF16);
    let sum = |o: &AccumOptions| accumulate(&ones, 300, o).unwrap().0[0];
    assert_eq!(sum(&o), 256.0);
    assert_eq!(sum(&o.method(Method::Pairwise)), 300.0);
    assert_eq!(sum(&o.chunk(128)), 300.0);
    assert_eq!(sum(&o.method(Method::Kahan)), 300.0);
    // Toward zero stops at 256 too; up reaches 300 only if the steps round up: 258 is not a
    // bf16 number, so rounding up from 256 + 1 gives 258 and the sum overshoots.
    assert_eq!(
        sum(&o.rounding(RoundOptions::new(RoundingMode::TowardZero))),
        256.0
    );
    assert!(sum(&o.rounding(RoundOptions::new(RoundingMode::Up))) > 300.0);
}

#[test]
fn stochastic_rounding_is_unbiased_and_reproducible() {
    let rows = 4000;
    let ones = vec![1.0f64; rows * 300];
    let o = AccumOptions::new(FloatFormat::BF16)
        .rounding(RoundOptions::new(RoundingMode::Stochastic).seed(17));
    let (s, _) = accumulate(&ones, 300, &o).unwrap();
    let mean = s.iter().sum::<f64>() / rows as f64;
    let sd = (s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (rows - 1) as f64).sqrt();
    assert!(sd > 0.0);
    assert!(
        (mean - 300.0).abs() < 4.0 * sd / (rows as f64).sqrt(),
        "mean {mean}, sd {sd}"
    );
    let (again, _) = accumulate(&ones, 300, &o).unwrap();
    assert!(same_bits(&s, &again));
    let (other, _) = accumulate(
        &ones,
        300,
        &o.rounding(RoundOptions::new(RoundingMode::Stochastic).seed(18)),
    )
    .unwrap();
    assert!(!same_bits(&s, &other));
}

#[test]
fn overflow_follows_the_policy_and_is_counted() {
    let x = [30000.0f64, 30000.0, 30000.0];
    let fp16 = AccumOptions::new(FloatFormat::FP16);
    let (s, st) = accumulate(&x, 3, &fp16).unwrap();
    assert_eq!(s[0], f64::INFINITY);
    assert_eq!((st.overflow, st.infinite), (1, 1));
    let sat = fp16.rounding(RoundOptions::default().overflow(Overflow::Saturate));
    assert_eq!(accumulate(&x, 3, &sat).unwrap().0[0], 65504.0);
    let rtz = fp16.rounding(RoundOptions::new(RoundingMode::TowardZero));
    assert_eq!(accumulate(&x, 3, &rtz).unwrap().0[0], 65504.0);
    // e4m3 has no infinity: NaN, and NaN stays NaN.
    let e4 = AccumOptions::new(FloatFormat::FP8_E4M3);
    let (s, st) = accumulate(&[400.0f64, 100.0, -100.0], 3, &e4).unwrap();
    assert!(s[0].is_nan());
    assert_eq!(st.nan, 1);
}

#[test]
fn bad_accumulators_and_shapes_are_refused() {
    assert!(Adder::new(&FloatFormat::E8M0, &RoundOptions::default()).is_err());
    assert!(Adder::new(&"e11m51".parse().unwrap(), &RoundOptions::default()).is_err());
    let o = AccumOptions::new(FloatFormat::BF16);
    assert!(accumulate(&[1.0f64; 10], 3, &o).is_err());
    assert!(accumulate(&[1.0f64; 10], 0, &o).is_err());
    assert_eq!(accumulate(&[0f64; 0], 0, &o).unwrap().0.len(), 0);
}

/// Inputs that make errors pile up: positive values near 1 (every addition rounds the same
/// way), and values spanning many binades in increasing order.
fn adversarial(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = Rng(seed);
    vec![
        (0..n).map(|_| 1.0 + rng.unit() * 0.01).collect(),
        (0..n)
            .map(|i| (1.0 + rng.unit()) * 2f64.powi((i % 16) as i32 - 12))
            .collect(),
        (0..n).map(|_| rng.unit()).collect(),
        (0..n)
            .map(|i| if i % 2 == 0 { 1.0 } else { 1.0 / 3.0 })
            .collect(),
    ]
}

#[test]
fn pairwise_and_kahan_stay_within_their_textbook_bounds() {
    for fmt in [FloatFormat::BF16, FloatFormat::FP16, FloatFormat::TF32] {
        let u = fmt.unit_roundoff();
        for n in [100usize, 1000, 4096] {
            for (t, x) in adversarial(n, n as u64).into_iter().enumerate() {
                // Representable inputs: the bounds speak of the additions alone.
                let x: Vec<f64> = x
                    .iter()
                    .map(|&v| fmt.round(v, &RoundOptions::default()))
                    .collect();
                let exact = exact_sum(&x);
                let abs: f64 = x.iter().map(|v| v.abs()).sum();
                let err = |m: Method| {
                    let o = AccumOptions::new(fmt).method(m);
                    (accumulate(&x, n, &o).unwrap().0[0] - exact).abs() / abs
                };
                let (seq, pw, kh) = (
                    err(Method::Sequential),
                    err(Method::Pairwise),
                    err(Method::Kahan),
                );
                let depth = (n as f64).log2().ceil() as u64;
                assert!(
                    pw <= gamma(depth, u),
                    "{fmt} n {n} case {t}: pairwise {pw:e}"
                );
                // Kahan: |E| ≤ (2u + O(n u²)) Σ|x| (Higham, Accuracy and Stability, §4.3).
                let kb = 2.0 * u + 4.0 * n as f64 * u * u;
                assert!(kh <= kb, "{fmt} n {n} case {t}: kahan {kh:e} > {kb:e}");
                if gamma(n as u64, u).is_finite() {
                    assert!(
                        seq <= gamma(n as u64, u),
                        "{fmt} n {n} case {t}: sequential {seq:e}"
                    );
                }
                assert!(
                    error_bound(&AccumOptions::new(fmt).method(Method::Pairwise), n as u64)
                        == gamma(depth, u)
                );
            }
        }
    }
}

#[test]
fn gemm_equals_the_accumulation_of_its_products() {
    let mut rng = Rng(30);
    let (m, n, k) = (5, 7, 200);
    let fp8 = FloatFormat::FP8_E4M3;
    let r0 = RoundOptions::default().overflow(Overflow::Saturate);
    let a: Vec<f64> = (0..m * k)
        .map(|_| fp8.round(rng.unit() * 4.0 - 2.0, &r0))
        .collect();
    let b: Vec<f64> = (0..k * n)
        .map(|_| fp8.round(rng.unit() * 4.0 - 2.0, &r0))
        .collect();
    // Products laid out one row per output (i·n + j): the same SR indices as the GEMM.
    let mut prods = vec![0.0; m * n * k];
    for i in 0..m {
        for j in 0..n {
            for l in 0..k {
                prods[(i * n + j) * k + l] = a[i * k + l] * b[l * n + j];
            }
        }
    }
    for mode in [
        RoundingMode::NearestEven,
        RoundingMode::TowardZero,
        RoundingMode::Stochastic,
    ] {
        for chunk in [0, 32, 64] {
            let ro = RoundOptions::new(mode).seed(2);
            let g = GemmOptions::new(FloatFormat::BF16)
                .rounding(ro)
                .chunk(chunk);
            let acc = AccumOptions::new(FloatFormat::BF16)
                .rounding(ro)
                .chunk(chunk);
            let seq = gemm(&a, &b, m, n, k, &g).unwrap();
            assert!(
                same_bits(&seq.c, &accumulate(&prods, k, &acc).unwrap().0),
                "{mode:?} {chunk}"
            );
            let pw = gemm(&a, &b, m, n, k, &g.order(Order::Pairwise)).unwrap();
            assert!(same_bits(
                &pw.c,
                &accumulate(&prods, k, &acc.method(Method::Pairwise))
                    .unwrap()
                    .0
            ));
            let b1 = gemm(&a, &b, m, n, k, &g.order(Order::Blocked(1))).unwrap();
            assert!(same_bits(&b1.c, &seq.c), "blocked:1 = sequential");
            // The reference is the exact dot product (FP8 products are exact in binary64).
            for (ij, e) in seq.exact.iter().enumerate() {
                assert_eq!(*e, exact_sum(&prods[ij * k..(ij + 1) * k]));
            }
            if chunk == 0 && mode != RoundingMode::Stochastic {
                assert!(seq.max_normalized <= seq.bound || seq.bound.is_infinite());
            }
        }
    }
    // Fused groups: each group of 8 is summed exactly, then added with one rounding.
    let o = GemmOptions::new(FloatFormat::BF16).order(Order::Blocked(8));
    let r = gemm(&a, &b, m, n, k, &o).unwrap();
    let adder = Adder::new(&FloatFormat::BF16, &RoundOptions::default()).unwrap();
    for ij in 0..m * n {
        let mut s = 0.0;
        for g in prods[ij * k..(ij + 1) * k].chunks(8) {
            let group = exact_sum(g);
            // the group sum of FP8 products is exact in binary64 here
            assert_eq!(exact_sum(&[group, -g.iter().sum::<f64>()]), 0.0);
            s = adder.add(s, group, 0);
        }
        assert_eq!(r.c[ij], s);
    }
    // Products rounded to a format before accumulation.
    let o = GemmOptions::new(FloatFormat::FP16).product(FloatFormat::BF16);
    let r = gemm(&a, &b, m, n, k, &o).unwrap();
    let rp: Vec<f64> = prods
        .iter()
        .map(|&p| FloatFormat::BF16.round(p, &RoundOptions::default()))
        .collect();
    assert!(same_bits(
        &r.c,
        &accumulate(&rp, k, &AccumOptions::new(FloatFormat::FP16))
            .unwrap()
            .0
    ));
}

#[test]
fn gemm_with_block_scaled_inputs_and_bad_shapes() {
    let mut rng = Rng(31);
    let (m, n, k) = (4, 3, 64);
    let a: Vec<f64> = (0..m * k).map(|_| rng.unit() - 0.5).collect();
    let b: Vec<f64> = (0..k * n).map(|_| rng.unit() - 0.5).collect();
    let mx: lowprec::scheme::Scheme = "mxfp8".parse().unwrap();
    let r = gemm(
        &a,
        &b,
        m,
        n,
        k,
        &GemmOptions::new(FloatFormat::FP32).input(mx),
    )
    .unwrap();
    // A's rows are quantized along k as blocks of 32: the reference uses exactly those values.
    let ax = mx.apply(&a, &[m, k]).unwrap().values;
    let mut bt = vec![0.0; k * n];
    for l in 0..k {
        for j in 0..n {
            bt[j * k + l] = b[l * n + j];
        }
    }
    let btx = mx.apply(&bt, &[n, k]).unwrap().values;
    for i in 0..m {
        for j in 0..n {
            let p: Vec<f64> = (0..k).map(|l| ax[i * k + l] * btx[j * k + l]).collect();
            assert_eq!(r.exact[i * n + j], exact_sum(&p));
        }
    }
    assert!(gemm(&a, &b, m, n, k + 1, &GemmOptions::new(FloatFormat::FP32)).is_err());
    assert!("blocked:0".parse::<Order>().is_err());
    let o = GemmOptions::new(FloatFormat::BF16)
        .order(Order::Blocked(16))
        .chunk(24);
    assert!(gemm(&a, &b, m, n, k, &o).is_err());
}

#[test]
fn online_softmax_equals_two_pass_and_merges_associatively() {
    let mut rng = Rng(40);
    for ar in [Arith::F32, Arith::F64, Arith::format(FloatFormat::BF16)] {
        let u = match ar {
            Arith::F32 => 2f64.powi(-24),
            Arith::F64 => 2f64.powi(-53),
            Arith::Format(f, _) => f.unit_roundoff(),
        };
        for n in [1usize, 3, 100, 1000] {
            let x: Vec<f64> = (0..n).map(|_| (rng.unit() - 0.5) * 40.0).collect();
            let safe = reduce::softmax_safe(&x, &ar);
            let online = reduce::softmax_online(&x, &ar);
            // Both are within a few rounding errors per term of the exact softmax.
            let tol = gamma(3 * n as u64 + 8, u).min(1.0) * 2.0;
            for (s, o) in safe.iter().zip(&online) {
                assert!(
                    (s - o).abs() <= tol * s.abs() + 1e-300,
                    "{ar:?} n {n}: {s} vs {o}"
                );
            }
            let one = reduce::online_softmax_stats(&x, &ar);
            for chunk in [1usize, 7, 64] {
                let par = reduce::online_softmax_parallel(&x, chunk, &ar).unwrap();
                assert_eq!(par.m, one.m);
                assert!(
                    (par.d - one.d).abs() <= tol * one.d,
                    "{ar:?} n {n} chunk {chunk}"
                );
            }
            // (a ⊕ b) ⊕ c = a ⊕ (b ⊕ c) up to rounding; the empty state is the identity.
            if n >= 3 {
                let (p, q) = (n / 3, 2 * n / 3);
                let s = |r: &[f64]| reduce::online_softmax_stats(r, &ar);
                let (a, b, c) = (s(&x[..p]), s(&x[p..q]), s(&x[q..]));
                let l =
                    reduce::merge_softmax_stats(&reduce::merge_softmax_stats(&a, &b, &ar), &c, &ar);
                let r =
                    reduce::merge_softmax_stats(&a, &reduce::merge_softmax_stats(&b, &c, &ar), &ar);
                assert_eq!(l.m, r.m);
                assert!((l.d - r.d).abs() <= 8.0 * u * l.d);
                assert_eq!(
                    reduce::merge_softmax_stats(&a, &reduce::SoftmaxStats::EMPTY, &ar),
                    a
                );
            }
        }
    }
    // The seed's check: online softmax of [1, 3, 2] matches the two-pass value.
    let s = reduce::online_softmax_stats(&[1.0, 3.0, 2.0], &Arith::F32);
    let p = reduce::softmax_safe(&[1.0, 3.0, 2.0], &Arith::F32);
    assert!(((3.0 - s.m).exp() / s.d - p[1]).abs() < 1e-6);
    // Naive softmax overflows in binary32 where the safe one does not.
    let big = [100.0, 101.0, 102.0];
    assert!(reduce::softmax_naive(&big, &Arith::F32)
        .iter()
        .any(|v| v.is_nan()));
    assert!(reduce::softmax_safe(&big, &Arith::F32)
        .iter()
        .all(|v| v.is_finite()));
}

#[test]
fn welford_is_stable_where_one_pass_fails() {
    // Large mean, small spread: Var(1e4 + {4, 7, 13, 16}) = 22.5 (the textbook example).
    for (shift, ar) in [(1e4, Arith::F32), (1e9, Arith::F64)] {
        let x: Vec<f64> = [4.0, 7.0, 13.0, 16.0].iter().map(|v| v + shift).collect();
        let one = reduce::variance_one_pass(&x, &ar);
        let two = reduce::variance_two_pass(&x, &ar);
        let wel = reduce::variance_welford(&x, &ar);
        assert!(
            (one - 22.5).abs() > 1.0,
            "{ar:?}: one-pass {one} should fail"
        );
        assert!((two - 22.5).abs() < 1e-4, "{ar:?}: two-pass {two}");
        assert!((wel - 22.5).abs() < 1e-4, "{ar:?}: Welford {wel}");
    }
    // Chan's merge of chunks = Welford over the whole, for any chunking, any thread count.
    let mut rng = Rng(41);
    let x: Vec<f64> = (0..10_000).map(|_| 1e3 + rng.unit()).collect();
    let whole = reduce::variance_welford(&x, &Arith::F64);
    for chunk in [1usize, 10, 333, 10_000] {
        let m: Moments = reduce::moments_parallel(&x, chunk, &Arith::F64).unwrap();
        assert_eq!(m.n, 10_000);
        assert!(
            (m.variance(&Arith::F64) - whole).abs() <= 1e-9 * whole,
            "chunk {chunk}"
        );
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let m1 = one.install(|| reduce::moments_parallel(&x, chunk, &Arith::F64).unwrap());
        assert_eq!(m1, m);
    }
    assert!(reduce::moments_parallel(&x, 0, &Arith::F64).is_err());
}
