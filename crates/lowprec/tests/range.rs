//! The range rules (`lowprec::range`): every example of the seed `solprop_precision`
//! module, the admission and its study guard, exact block exponents and narrowing,
//! coefficients without out-of-range intermediates, the pairwise / prefix / scaled-square
//! sums bit for bit against the seed's level-by-level algorithms and within their error
//! bounds, thread-count independence, and the soliton proof.

use lowprec::range::soliton::{self, Arithmetic, SolitonProblem};
use lowprec::range::*;
use proptest::prelude::*;

const U32: f64 = 1.0 / (1u64 << 24) as f64;

// ---------- reference algorithms: the seed's numpy code, line by line ----------

/// `pairwise_sum`: pad with zeros to a power of two, halve level by level.
fn ref_pairwise<T: Element>(x: &[T]) -> T {
    if x.is_empty() {
        return T::ZERO;
    }
    let mut level = x.to_vec();
    level.resize(x.len().next_power_of_two(), T::ZERO);
    while level.len() > 1 {
        level = level.chunks(2).map(|p| p[0] + p[1]).collect();
    }
    level[0]
}

/// `prefix_sum`: `scan[shift:] += scan[:-shift].copy()` for shift = 1, 2, 4, …
fn ref_prefix<T: Element>(x: &[T]) -> Vec<T> {
    let mut scan = x.to_vec();
    let mut shift = 1;
    while shift < x.len() {
        let old = scan.clone();
        for i in shift..x.len() {
            scan[i] = old[i] + old[i - shift];
        }
        shift *= 2;
    }
    scan
}

/// Σ x exactly enough: Neumaier's compensated sum in binary64 of binary32 terms (its error
/// is about 2^-106 Σ|x|, far below any binary32 bound).
fn exact_sum(x: &[f32]) -> f64 {
    let (mut s, mut c) = (0f64, 0f64);
    for &v in x {
        let v = v as f64;
        let t = s + v;
        c += if s.abs() >= v.abs() {
            (s - t) + v
        } else {
            (v - t) + s
        };
        s = t;
    }
    s + c
}

fn gamma(d: u32) -> f64 {
    let du = d as f64 * U32;
    du / (1.0 - du)
}

fn depth(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// Deterministic pseudo-random numbers (SplitMix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn signed(&mut self) -> f64 {
        2.0 * self.unit() - 1.0
    }
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.signed() as f32).collect()
    }
}

fn same_bits32(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

// ---------- seed examples ----------

#[test]
fn seed_precision_examples() {
    // precision_named("single") == Precision(state='single', source='single')
    let single: Precision = "single".parse().unwrap();
    assert_eq!(single.state(), PrecisionName::Single);
    assert_eq!(single.source(), PrecisionName::Single);
    // Precision().name, precision_named("single").single == ('double', True)
    assert_eq!(Precision::default().name().as_str(), "double");
    assert!(single.is_single());
    // precision_named("double").name == 'double'
    assert_eq!(
        "double".parse::<Precision>().unwrap().name(),
        PrecisionName::Double
    );
    assert_eq!(Precision::SINGLE.complex_type().name(), "complex64");
    assert_eq!(Precision::DOUBLE.complex_type().name(), "complex128");
    assert_eq!(Precision::DOUBLE.real_type().name(), "float64");
    assert_eq!(Precision::SINGLE.real_type().size(), 4);
}

#[test]
fn mixed_and_unknown_precision_refused_with_the_seed_message() {
    let e = Precision::new(PrecisionName::Double, PrecisionName::Single).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a mixed precision (a binary32 source beside a binary64 state, or the reverse) is not admitted; use precision='double' or 'single'"
    );
    assert!(Precision::new(PrecisionName::Single, PrecisionName::Double).is_err());
    let e = "half".parse::<Precision>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "precision must be 'double' or 'single', got \"half\""
    );
    // it converts into the crate's error with the same text
    let top: lowprec::Error = e.clone().into();
    assert_eq!(top.to_string(), e.to_string());
}

#[test]
fn seed_admission_example_and_refusals() {
    let seed = AdmissionPolicy::new(["numpy_ref", "mlx"]);
    // admit_precision(SINGLE, backend="numpy_ref", adams=False, rtol=1e-6, schedule=False)
    admit(
        &seed,
        &Request::new(Precision::SINGLE, "numpy_ref").rtol(1e-6),
    )
    .unwrap();
    let e = admit(&seed, &Request::new(Precision::SINGLE, "numba_cpu")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "engine \"numba_cpu\" computes in binary64 only and refuses precision='single'; the engines that admit it are numpy_ref, mlx; run on one of them or use precision='double'"
    );
    let e = admit(
        &AdmissionPolicy::new(Vec::<String>::new()),
        &Request::new(Precision::SINGLE, "x"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no engine admits it"), "{e}");
    // binary64 passes whatever it asks
    admit(
        &AdmissionPolicy::new(Vec::<String>::new()),
        &Request::new(Precision::DOUBLE, "x")
            .multistep(true)
            .rtol(1e-12),
    )
    .unwrap();
    let e = admit(
        &seed,
        &Request::new(Precision::SINGLE, "mlx").multistep(true),
    )
    .unwrap_err();
    assert_eq!(e, RangeError::MultistepRefused);
    assert!(e
        .to_string()
        .contains("use a single-step (Runge-Kutta) integrator"));
    admit(
        &seed.clone().admit_multistep(true),
        &Request::new(Precision::SINGLE, "mlx").multistep(true),
    )
    .unwrap();
    let e = admit(&seed, &Request::new(Precision::SINGLE, "mlx").rtol(1e-7)).unwrap_err();
    assert_eq!(
        e,
        RangeError::ToleranceBelowFloor {
            rtol: 1e-7,
            floor: SINGLE_RTOL_FLOOR
        }
    );
    assert!(e
        .to_string()
        .starts_with("rtol=1e-7 is below the single-precision floor 1e-6"));
    assert!(e
        .to_string()
        .ends_with("take rtol at least the floor, or precision='double'"));
    // a replayed schedule reads no tolerance; a NaN tolerance is refused by name
    admit(
        &seed,
        &Request::new(Precision::SINGLE, "mlx")
            .rtol(1e-9)
            .schedule(true),
    )
    .unwrap();
    let e = admit(
        &seed,
        &Request::new(Precision::SINGLE, "mlx").rtol(f64::NAN),
    )
    .unwrap_err();
    assert!(matches!(e, RangeError::InvalidTolerance(_)), "{e}");
    // the floor is the policy's
    admit(
        &seed.clone().rtol_floor(1e-9),
        &Request::new(Precision::SINGLE, "mlx").rtol(1e-8),
    )
    .unwrap();
    assert_eq!(SINGLE_RTOL_FLOOR, 1e-6);
}

#[test]
fn study_guard_is_scoped_nested_thread_local_and_panic_safe() {
    let policy = AdmissionPolicy::new(["mlx"]);
    let adams = Request::new(Precision::SINGLE, "mlx").multistep(true);
    assert!(!study_active());
    {
        let _a = study_admission();
        admit(&policy, &adams).unwrap();
        {
            let _b = study_admission();
            assert!(study_active());
        }
        assert!(
            study_active(),
            "an inner guard's drop must not end the outer study"
        );
        // another thread does not see this thread's study
        let other = std::thread::spawn(study_active).join().unwrap();
        assert!(!other);
    }
    assert!(!study_active());
    assert!(admit(&policy, &adams).is_err());
    let r = std::panic::catch_unwind(|| {
        let _g = study_admission();
        panic!("inside a study");
    });
    assert!(r.is_err());
    assert!(!study_active(), "a panic must restore the admission");
    assert!(admit(&policy, &adams).is_err());
}

#[test]
fn seed_range_examples() {
    let e: Vec<i32> = [1.0, 3.0, 0.25, 0.0]
        .iter()
        .map(|&x| block_exponent(&[x]).unwrap())
        .collect();
    assert_eq!(e, [0, 1, -2, 0]);
    let kernel = narrow(&[5.2e-50, 1.0e-50]).unwrap();
    assert_eq!(kernel.exponent(), -164);
    assert!(kernel.values().iter().all(|&v| v > 0.0));
    assert!((1.0..2.0).contains(&(kernel.values()[0] as f64)));
    let field = [Complex64::new(2.0, 0.0); 4];
    assert_eq!(launch_peak(&field, 4, GridKind::Envelope).unwrap(), 2.0);
    assert_eq!(state_scale(3.0e4).unwrap(), 16384.0);
    assert_eq!(state_scale(0.0).unwrap(), 1.0);
    let c = combine(&[2.5e25, 8.854e-12], -164).unwrap();
    assert!((c.value().unwrap() - 2.5e25 * 8.854e-12 * 2f64.powi(-164)).abs() < 1e-60);
    let x: Vec<f32> = (0..5).map(|i| i as f32).collect();
    assert_eq!(pairwise_sum(&x), 10.0);
    assert_eq!(prefix_sum(&x), [0.0, 1.0, 3.0, 6.0, 10.0]);
    let big = [3.0e30f32; 4];
    let total = scaled_square_sum(&big, None).unwrap();
    assert!((total / (4.0 * (3.0e30f32 as f64).powi(2)) - 1.0).abs() < 1e-6);
}

// ---------- block exponents and narrowing ----------

#[test]
fn block_exponent_reads_the_bits_exactly_even_for_subnormals() {
    for shift in 0..52 {
        let x = f64::from_bits(1u64 << shift); // 2^(shift - 1074)
        assert_eq!(block_exponent(&[x]).unwrap(), shift - 1074);
        let below = f64::from_bits((1u64 << (shift + 1)) - 1); // just below the next power
        assert_eq!(block_exponent(&[-below]).unwrap(), shift - 1074);
    }
    // one below a power of two, where a floating log2 rounds up
    let x = f64::from_bits(0x3fef_ffff_ffff_ffff);
    assert_eq!(block_exponent(&[x]).unwrap(), -1);
    assert_eq!(block_exponent(&[f64::MAX]).unwrap(), 1023);
    assert_eq!(block_exponent::<f32>(&[f32::from_bits(1)]).unwrap(), -149);
    assert_eq!(block_exponent::<f64>(&[]).unwrap(), 0);
    assert_eq!(block_exponent(&[0.0, -0.0]).unwrap(), 0);
    assert_eq!(block_exponent(&[Complex64::new(3.0, 4.0)]).unwrap(), 2); // |z| = 5
    for bad in [f64::NAN, f64::INFINITY, -f64::INFINITY] {
        let e = block_exponent(&[1.0, bad]).unwrap_err();
        assert!(matches!(e, RangeError::NotFinite { .. }), "{e}");
    }
    assert!(narrow(&[Complex64::new(1.0, f64::NAN)]).is_err());
}

proptest! {
    #[test]
    fn block_exponent_brings_the_largest_into_one_two(bits in prop::collection::vec(any::<u64>(), 1..20)) {
        let x: Vec<f64> = bits.iter().map(|&b| f64::from_bits(b)).filter(|v| v.is_finite()).collect();
        let largest = x.iter().fold(0f64, |m, v| m.max(v.abs()));
        prop_assume!(largest > 0.0);
        let e = block_exponent(&x).unwrap();
        // 2^-e × largest, exactly, via two factors
        let scaled = largest * 2f64.powi((-e).clamp(-1000, 1000)) * 2f64.powi(-e - (-e).clamp(-1000, 1000));
        prop_assert!((1.0..2.0).contains(&scaled), "{largest:e} {e}");
    }

    #[test]
    fn narrow_rounds_once_and_widens_exactly(
        mant in prop::collection::vec(-1.0f64..1.0, 1..40),
        e in -1070i32..1020,
    ) {
        let x: Vec<f64> = mant.iter().map(|m| m * 2f64.powi(e.clamp(-1000, 1000)) * 2f64.powi(e - e.clamp(-1000, 1000))).collect();
        prop_assume!(x.iter().any(|v| *v != 0.0));
        let n = narrow(&x).unwrap();
        let k = n.exponent();
        prop_assert_eq!(k, block_exponent(&x).unwrap());
        let big = n.values().iter().fold(0f32, |m, v| m.max(v.abs()));
        prop_assert!((1.0..2.0).contains(&big));
        let wide: Vec<f64> = n.widened();
        for ((&v, &w), &orig) in n.values().iter().zip(&wide).zip(&x) {
            // widened is exactly v × 2^k
            let back = w * 2f64.powi((-k).clamp(-1000, 1000)) * 2f64.powi(-k - (-k).clamp(-1000, 1000));
            prop_assert_eq!(back, v as f64);
            // rounded once: within half a binary32 ulp of the scaled original (or below
            // binary32's subnormals), relative to the block's largest
            let scaled = orig * 2f64.powi((-k).clamp(-1000, 1000)) * 2f64.powi(-k - (-k).clamp(-1000, 1000));
            prop_assert_eq!(v, scaled as f32);
        }
    }
}

#[test]
fn narrow_complex_and_widen() {
    let x = [Complex64::new(3e-45, -4e-45), Complex64::new(1e-50, 0.0)];
    let n = narrow(&x).unwrap();
    assert_eq!(n.exponent(), block_exponent(&x).unwrap());
    assert_eq!(n.len(), 2);
    let w: Vec<Complex64> = n.widened();
    for (a, b) in w.iter().zip(&x) {
        assert!(((a - b).norm() / 5e-45) < U32);
    }
    let empty = narrow::<f64>(&[]).unwrap();
    assert!(empty.is_empty() && empty.exponent() == 0);
}

#[test]
fn launch_peak_on_field_and_envelope_grids() {
    // envelope: ifft of a single tone at k = 1 has |a| = 1/n · 3 everywhere
    let mut spec = vec![Complex64::new(0.0, 0.0); 8];
    spec[1] = Complex64::new(3.0, 0.0);
    let p = launch_peak(&spec, 8, GridKind::Envelope).unwrap();
    assert!((p - 3.0 / 8.0).abs() < 1e-15);
    // field: irfft of a half spectrum with X[1] = 3: cos at n = 2·(5-1) = 8 points, peak 2·3/8
    let mut half = vec![Complex64::new(0.0, 0.0); 5];
    half[1] = Complex64::new(3.0, 0.0);
    let p = launch_peak(&half, 5, "field".parse().unwrap()).unwrap();
    assert!((p - 6.0 / 8.0).abs() < 1e-15, "{p}");
    // the imaginary part of the zero frequency is ignored, as numpy's irfft does
    half[0] = Complex64::new(0.0, 100.0);
    assert!((launch_peak(&half, 5, GridKind::Field).unwrap() - 0.75).abs() < 1e-15);
    // several columns: the largest over all
    let two = [
        vec![Complex64::new(1.0, 0.0); 4],
        vec![Complex64::new(8.0, 0.0); 4],
    ]
    .concat();
    assert_eq!(launch_peak(&two, 4, GridKind::Envelope).unwrap(), 8.0);
    assert_eq!(launch_peak(&[], 4, GridKind::Envelope).unwrap(), 0.0);
    assert!(launch_peak(&two, 3, GridKind::Envelope).is_err());
    assert!(launch_peak(&two[..1], 1, GridKind::Field).is_err());
    assert!("spectrum".parse::<GridKind>().is_err());
}

// ---------- coefficients ----------

#[test]
fn coefficients_never_form_an_out_of_range_intermediate() {
    let c = combine(&[1e300, 1e300, 1e-300, 1e-300], 0).unwrap();
    assert!((c.value().unwrap() - 1.0).abs() < 1e-14);
    let c = combine(&[2.5e25, 2.5e25, 2.5e25], -250).unwrap();
    let want = 2.5e25f64.powi(3) * 2f64.powi(-250);
    assert!((c.value().unwrap() / want - 1.0).abs() < 1e-15);
    assert!((0.5..1.0).contains(&c.mantissa().abs()));
    let c = combine(&[-3.0, 5e-324], 1100).unwrap(); // a subnormal factor, exactly
    assert_eq!(c.value().unwrap(), -3.0 * 2f64.powi(1100 - 1074));
    assert_eq!(
        combine(&[1.0, 0.0, 1e300], 5000).unwrap(),
        Coefficient::ZERO
    );
    assert_eq!(combine(&[], 3).unwrap().value().unwrap(), 8.0);
    assert_eq!(Coefficient::ONE.value().unwrap(), 1.0);
    assert_eq!(
        combine(&[3.0], 0)
            .unwrap()
            .times(combine(&[0.5], 2).unwrap())
            .value()
            .unwrap(),
        6.0
    );
    // value() overflows binary64; binary32() leaves binary32's normal range
    let e = combine(&[1e300, 1e300], 0).unwrap().value().unwrap_err();
    assert!(matches!(e, RangeError::Binary64Overflow { .. }), "{e}");
    assert!(e.to_string().contains("overflows binary64"));
    assert_eq!(combine(&[1.0], -5000).unwrap().value().unwrap(), 0.0);
    let e = combine(&[1e20, 1e20], 0).unwrap().binary32().unwrap_err();
    assert_eq!(e, RangeError::Binary32Range { value: 1e40 });
    assert!(e.to_string().contains("leaves binary32's normal range"));
    assert!(combine(&[1e-39], 0).unwrap().binary32().is_err()); // subnormal in binary32
    assert_eq!(
        combine(&[1e20, 1e-20], 0).unwrap().binary32().unwrap(),
        1.0000000000000001f64 as f32
    );
    assert!(combine(&[f64::INFINITY], 0).is_err());
    assert!(combine(&[f64::NAN], 0)
        .unwrap_err()
        .to_string()
        .contains("factor 0"));
}

proptest! {
    #[test]
    fn combine_is_the_product(ms in prop::collection::vec(0.5f64..1.0, 1..8), es in prop::collection::vec(-1000i32..1000, 8), extra in -2000i32..2000) {
        let f: Vec<f64> = ms.iter().zip(&es).map(|(m, &e)| m * 2f64.powi(e)).collect();
        let c = combine(&f, extra).unwrap();
        prop_assert!((0.5..1.0).contains(&c.mantissa()));
        let want_e: i64 = es[..ms.len()].iter().map(|&e| e as i64 + 1).sum::<i64>() + extra as i64;
        let want_m: f64 = ms.iter().map(|m| m / 2.0 * 2.0).product();
        // mantissa product in [2^-n, 1): compare log2 of the value
        let got = c.mantissa().log2() + c.exponent() as f64;
        let want = want_m.log2() + (want_e - ms.len() as i64) as f64;
        prop_assert!((got - want).abs() < 1e-12 * (1.0 + want.abs()), "{got} {want}");
    }
}

// ---------- sums: bit for bit against the seed's algorithms ----------

#[test]
fn sums_match_the_seed_level_by_level_algorithms_bit_for_bit() {
    let mut rng = Rng(11);
    for n in [
        0usize, 1, 2, 3, 5, 127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 4097, 16385, 70_000,
        300_001,
    ] {
        let x: Vec<f32> = (0..n)
            .map(|_| (rng.signed() * 2f64.powi((rng.next() % 40) as i32 - 20)) as f32)
            .collect();
        assert_eq!(
            pairwise_sum(&x).to_bits(),
            ref_pairwise(&x).to_bits(),
            "pairwise n={n}"
        );
        assert!(
            same_bits32(&prefix_sum(&x), &ref_prefix(&x)),
            "prefix n={n}"
        );
        let xd: Vec<f64> = x.iter().map(|&v| v as f64 * 1.1).collect();
        assert_eq!(pairwise_sum(&xd).to_bits(), ref_pairwise(&xd).to_bits());
        if n <= 70_000 {
            let z: Vec<Complex32> = x
                .chunks(2)
                .map(|p| Complex32::new(p[0], *p.last().unwrap()))
                .collect();
            assert_eq!(pairwise_sum(&z), ref_pairwise(&z));
            assert_eq!(prefix_sum(&z), ref_prefix(&z));
        }
    }
}

#[test]
fn signed_zeros_as_documented() {
    assert!(pairwise_sum(&[-0.0f32; 4]).is_sign_negative());
    assert!(pairwise_sum(&[-0.0f32; 3]).is_sign_positive());
    assert!(pairwise_sum::<f32>(&[]).is_sign_positive());
    assert!(pairwise_sum(&[-0.0f32]).is_sign_negative());
    let p = prefix_sum(&[-0.0f32, -0.0, 1.0]);
    assert!(p[0].is_sign_negative() && p[1].is_sign_negative() && p[2] == 1.0);
    assert!(same_bits32(
        &prefix_sum(&[-0.0f32; 5]),
        &ref_prefix(&[-0.0f32; 5])
    ));
}

#[test]
fn sums_along_any_axis() {
    let mut rng = Rng(5);
    let shape = [3usize, 7, 5];
    let x = rng.f32s(105);
    for axis in 0..3 {
        let s = pairwise_sum_axis(&x, &shape, axis).unwrap();
        let p = prefix_sum_axis(&x, &shape, axis).unwrap();
        let (outer, len, inner): (usize, usize, usize) = (
            shape[..axis].iter().product(),
            shape[axis],
            shape[axis + 1..].iter().product(),
        );
        assert_eq!(s.len(), outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                let line: Vec<f32> = (0..len).map(|k| x[(o * len + k) * inner + i]).collect();
                assert_eq!(s[o * inner + i].to_bits(), ref_pairwise(&line).to_bits());
                let r = ref_prefix(&line);
                for k in 0..len {
                    assert_eq!(p[(o * len + k) * inner + i].to_bits(), r[k].to_bits());
                }
            }
        }
    }
    assert!(pairwise_sum_axis(&x, &shape, 3).is_err());
    assert!(prefix_sum_axis(&x, &[3, 7, 4], 0).is_err());
    let mut out = vec![0f32; 4];
    assert!(prefix_sum_into(&x, &mut out).is_err());
    prefix_sum_into(&x[..4], &mut out).unwrap();
    assert!(same_bits32(&out, &ref_prefix(&x[..4])));
}

// ---------- error bounds (binary32 against an exact reference) ----------

/// Adversarial binary32 inputs: cancellation, tiny terms beside large ones, alternating
/// signs, one huge term, and geometric spreads.
fn adversarial(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let tiny_after_one: Vec<f32> = (0..n)
        .map(|i| if i == 0 { 1.0 } else { 2f32.powi(-24) })
        .collect();
    let alternating: Vec<f32> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                1.0 + (i as f32) * 1e-7
            } else {
                -1.0
            }
        })
        .collect();
    let spread: Vec<f32> = (0..n)
        .map(|_| (rng.signed() * 2f64.powi((rng.next() % 60) as i32 - 30)) as f32)
        .collect();
    let cancel: Vec<f32> = (0..n)
        .map(|i| {
            let v = (rng.unit() * 1e6) as f32;
            if i % 2 == 0 {
                v
            } else {
                -v * (1.0 + 1e-7)
            }
        })
        .collect();
    let thirds: Vec<f32> = (0..n).map(|_| 1.0f32 / 3.0).collect();
    let random = rng.f32s(n);
    vec![tiny_after_one, alternating, spread, cancel, thirds, random]
}

#[test]
fn pairwise_and_prefix_sums_are_within_gamma_depth() {
    for n in [2usize, 3, 100, 1000, 4097, 65_536, 100_003] {
        let d = depth(n);
        for (case, x) in adversarial(n, n as u64).into_iter().enumerate() {
            let abs: f64 = x.iter().map(|v| v.abs() as f64).sum();
            let err = (pairwise_sum(&x) as f64 - exact_sum(&x)).abs();
            assert!(
                err <= gamma(d) * abs,
                "pairwise n={n} case {case}: {err:e} > {:e}",
                gamma(d) * abs
            );
            let p = prefix_sum(&x);
            let (mut s, mut c, mut a) = (0f64, 0f64, 0f64);
            for (i, (&v, &got)) in x.iter().zip(&p).enumerate() {
                // Neumaier running sum: the exact prefix
                let w = v as f64;
                let t = s + w;
                c += if s.abs() >= w.abs() {
                    (s - t) + w
                } else {
                    (w - t) + s
                };
                s = t;
                a += w.abs();
                let bound = gamma(depth(i + 1)) * a;
                assert!(
                    (got as f64 - (s + c)).abs() <= bound,
                    "prefix n={n} case {case} i={i}"
                );
            }
        }
    }
    // where a sequential binary32 sum loses everything after the first term, the tree
    // keeps it: 1 + 65535 · 2^-24 ≈ 1.0039
    let x = &adversarial(65_536, 1)[0];
    let sequential = x.iter().fold(0f32, |s, v| s + v);
    assert_eq!(sequential, 1.0);
    assert!((pairwise_sum(x) as f64 - exact_sum(x)).abs() < 1e-6);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn bounds_hold_on_random_inputs(x in prop::collection::vec(-1.0e6f32..1.0e6, 1..3000)) {
        let abs: f64 = x.iter().map(|v| v.abs() as f64).sum();
        let err = (pairwise_sum(&x) as f64 - exact_sum(&x)).abs();
        prop_assert!(err <= gamma(depth(x.len())) * abs);
        let p = prefix_sum(&x);
        for i in (0..x.len()).step_by(37) {
            let pre = &x[..=i];
            let a: f64 = pre.iter().map(|v| v.abs() as f64).sum();
            prop_assert!((p[i] as f64 - exact_sum(pre)).abs() <= gamma(depth(i + 1)) * a);
        }
    }
}

// ---------- scaled square sums ----------

#[test]
fn scaled_square_sum_where_a_naive_sum_of_squares_fails() {
    for (v, naive_fails) in [
        (3.0e30f32, f32::is_infinite as fn(f32) -> bool),
        (1.0e-30, |s: f32| s == 0.0),
    ] {
        let x = vec![v; 1000];
        let naive: f32 = x.iter().map(|a| a * a).sum();
        assert!(
            naive_fails(naive),
            "the naive sum of squares should fail for {v:e}: {naive:e}"
        );
        let exact = 1000.0 * (v as f64) * (v as f64);
        let got = scaled_square_sum(&x, None).unwrap();
        assert!(
            (got / exact - 1.0).abs() <= gamma(depth(1000) + 1),
            "{got:e} vs {exact:e}"
        );
        // complex and weighted
        let z: Vec<Complex32> = x.iter().map(|&a| Complex32::new(a, -a)).collect();
        let w = vec![0.25f32; 1000];
        let got = scaled_square_sum(&z, Some(&w)).unwrap();
        assert!((got / (0.5 * exact) - 1.0).abs() <= gamma(depth(1000) + 3));
    }
    // binary64 values at both ends of binary64's range
    let big = [1e300f64, -1e300, 1e299];
    let got = scaled_square_sum(&big, None).unwrap();
    assert!(got.is_infinite()); // 2e600 is beyond binary64: the host result overflows honestly
    let small = [1e-300f64, 3e-310];
    let got = scaled_square_sum(&small, None).unwrap();
    assert!((got / (1e-600 + 9e-620) - 1.0).abs() < 1e-12 || got == 0.0);
    let mixed = [4e-20f64, 3e-20];
    assert!((scaled_square_sum(&mixed, None).unwrap() / 25e-40 - 1.0).abs() < 1e-15);
    assert!(scaled_square_sum(&[1.0f32, f32::NAN], None).is_err());
    assert!(scaled_square_sum(&[1.0f32], Some(&[1.0, 2.0])).is_err());
    assert_eq!(scaled_square_sum::<f32>(&[], None).unwrap(), 0.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn scaled_square_sum_is_within_the_bound_at_any_scale(m in prop::collection::vec(-1.0f32..1.0, 1..500), e in -140i32..120) {
        let s = 2f32.powi(e.clamp(-126, 127)) * 2f32.powi(e - e.clamp(-126, 127));
        let x: Vec<f32> = m.iter().map(|v| v * s).collect();
        let exact: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
        prop_assume!(exact > 0.0);
        let got = scaled_square_sum(&x, None).unwrap();
        // squares rounded once, summed by a tree of depth ⌈log2 n⌉ (all terms ≥ 0)
        prop_assert!((got / exact - 1.0).abs() <= gamma(depth(x.len()) + 1) + 1e-12, "{got:e} {exact:e}");
    }
}

// ---------- threads ----------

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let n = 3 * PARALLEL_THRESHOLD + 12_345;
    let x = Rng(99).f32s(n);
    let z: Vec<Complex32> = x.iter().map(|&v| Complex32::new(v, 0.5 * v)).collect();
    let w: Vec<f32> = x.iter().map(|v| v.abs()).collect();
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                (
                    pairwise_sum(&x).to_bits(),
                    prefix_sum(&x),
                    scaled_square_sum(&x, Some(&w)).unwrap().to_bits(),
                    scaled_square_sum(&z, None).unwrap().to_bits(),
                    pairwise_sum_axis(&x, &[n], 0).unwrap()[0].to_bits(),
                )
            })
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.0, two.0);
    assert!(same_bits32(&one.1, &two.1));
    assert_eq!(one.2, two.2);
    assert_eq!(one.3, two.3);
    assert_eq!(one.4, one.0);
    // and both are the seed's order
    assert_eq!(one.0, ref_pairwise(&x).to_bits());
    assert!(same_bits32(&one.1, &ref_prefix(&x)));
}

/// The scan's kernels (the AVX-512 ones for binary32, the portable ones compiled for each
/// level) and its two passes give the level-by-level bits at every instruction-set level
/// and thread count.
#[test]
fn prefix_scan_levels_and_threads_agree_with_the_level_by_level_scan() {
    use lowprec::simd::{self, Level};
    let levels: Vec<Level> = [Level::Portable, Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|&l| l <= simd::detected())
        .collect();
    let mut s = 7u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // signed values over 2^-20 … 2^20, so every level rounds
        let m = ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0;
        m * 2f64.powi((s % 41) as i32 - 20)
    };
    // 2.5M + 1 entries: 306 rows of the 8192-wide view, the last one partial, so the high
    // levels take all three views (row shifts 1 … 8, 16 … 128, 256 … 2048)
    let x: Vec<f32> = (0..2_500_001).map(|_| next() as f32).collect();
    let d: Vec<f64> = (0..600_001).map(|_| next()).collect();
    let z: Vec<Complex32> = (0..300_001)
        .map(|_| Complex32::new(next() as f32, next() as f32))
        .collect();
    let (rx, rd, rz) = (ref_prefix(&x), ref_prefix(&d), ref_prefix(&z));
    let bits64 = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let bitsz = |v: &[Complex32]| {
        bits64(
            &v.iter()
                .map(|c| c.re)
                .chain(v.iter().map(|c| c.im))
                .map(f64::from)
                .collect::<Vec<_>>(),
        )
    };
    for &level in &levels {
        for threads in [1, 2] {
            simd::set_max_level(level);
            let (px, pd, pz) = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| (prefix_sum(&x), prefix_sum(&d), prefix_sum(&z)));
            simd::set_max_level(Level::Avx512);
            assert!(
                same_bits32(&px, &rx),
                "binary32 at {level:?}, {threads} threads"
            );
            assert!(
                bits64(&pd) == bits64(&rd),
                "binary64 at {level:?}, {threads} threads"
            );
            assert!(
                bitsz(&pz) == bitsz(&rz),
                "complex at {level:?}, {threads} threads"
            );
        }
    }
}

// ---------- the soliton ----------

#[test]
fn soliton_binary32_tracks_binary64_in_any_units_and_naive_binary32_fails() {
    let p = SolitonProblem::default();
    let rows = soliton::study(&p, &[1e-20, 1.0, 1e20]).unwrap();
    assert_eq!(rows.len(), 9);
    let u_steps = U32 * p.steps as f64;
    for chunk in rows.chunks(3) {
        let (wide, single, naive) = (&chunk[0], &chunk[1], &chunk[2]);
        let amp = wide.amplitude;
        assert_eq!(
            (wide.arithmetic, single.arithmetic, naive.arithmetic),
            (
                Arithmetic::Binary64,
                Arithmetic::Binary32,
                Arithmetic::Naive32
            )
        );
        // the method's own discretisation error, measured separately
        let disc = wide.vs_exact;
        assert!(disc > 1e-5 && disc < 1e-2, "discretisation error {disc:e}");
        // binary32 by the rules: a small multiple of u·steps from binary64, well below the
        // discretisation error, and as close to the exact soliton as binary64 is
        assert!(
            single.vs_binary64 > 0.0 && single.vs_binary64 <= 8.0 * u_steps,
            "P={amp:e}: {:e}",
            single.vs_binary64
        );
        assert!(single.vs_binary64 < disc / 10.0, "P={amp:e}");
        assert!((single.vs_exact - disc).abs() <= single.vs_binary64 * 1.0001);
        assert!(
            single.energy_drift < 8.0 * u_steps,
            "energy drift {:e}",
            single.energy_drift
        );
        assert!(wide.energy_drift < 1e-12);
        // naive binary32 fails at the extreme units and is the rules' twin at P = 1
        if amp == 1.0 {
            assert!(naive.vs_binary64 <= 8.0 * u_steps);
        } else {
            assert!(
                naive.vs_binary64.is_nan() || naive.vs_binary64 >= 0.5,
                "naive binary32 at P={amp:e} should fail: {}",
                naive.vs_binary64
            );
        }
    }
    let k: Vec<Option<i32>> = rows
        .iter()
        .filter(|r| r.arithmetic == Arithmetic::Binary32)
        .map(|r| r.state_exponent)
        .collect();
    // the launch's peak on the grid is P·sech(0) = P: 1e-20 = 1.48 · 2^-67, 1e20 = 1.36 · 2^66;
    // at P = 1 the peak taken back from the spectrum is 1 − O(2^-53), in [2^-1, 1)
    assert_eq!(k, [Some(-67), Some(-1), Some(66)]);
}

#[test]
fn soliton_runs_agree_across_units_and_refuse_bad_problems() {
    // the binary32 run in units 1e-20 and 1e20 is the same computation as at 1, up to the
    // rounding of the launch and coefficients
    let base = SolitonProblem {
        steps: 40,
        ..SolitonProblem::default()
    };
    let at = |amp: f64| {
        soliton::run(
            &SolitonProblem {
                amplitude: amp,
                ..base
            },
            Arithmetic::Binary32,
        )
        .unwrap()
    };
    let one = at(1.0);
    for amp in [1e-20, 1e20, 1e-35, 1e35] {
        let r = at(amp);
        let scaled: Vec<Complex64> = r.field.iter().map(|z| z / amp).collect();
        assert!(soliton::distance(&scaled, &one.field) < 1e-5, "P={amp:e}");
    }
    assert!(soliton::run(&SolitonProblem { points: 1, ..base }, Arithmetic::Binary64).is_err());
    assert!(soliton::run(
        &SolitonProblem {
            amplitude: 0.0,
            ..base
        },
        Arithmetic::Binary64
    )
    .is_err());
    assert!(soliton::run(
        &SolitonProblem {
            amplitude: 1e-200,
            ..base
        },
        Arithmetic::Binary32
    )
    .is_err());
}

/// The one-read scaled square sum (leaf maxima and sums at a guessed exponent, redone where
/// the guess was short) gives the bits of the two-pass order: the block exponent first, then
/// the pairwise sum of the scaled squares, with magnitudes growing along the buffer so that
/// most leaves guess too low.
#[test]
fn scaled_square_sum_equals_the_two_pass_order() {
    let mut s = 41u64;
    let mut uniform = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    for n in [3usize, 2048, 2049, 70_001, (1 << 19) + 77] {
        let x: Vec<f32> = (0..n)
            .map(|i| (uniform() - 0.5) * 2f32.powf(i as f32 * 60.0 / n as f32 - 30.0))
            .collect();
        let e = block_exponent(&x).unwrap();
        let a = 2f32.powi(-e);
        let squares: Vec<f32> = x.iter().map(|&v| (v * a) * (v * a)).collect();
        let want = pairwise_sum(&squares) as f64 * 2f64.powi(2 * e);
        let got = scaled_square_sum(&x, None).unwrap();
        assert_eq!(got.to_bits(), want.to_bits(), "n = {n}");
        // a non-finite value anywhere, in a leaf of any guess, is refused
        for (at, bad) in [
            (n / 2, f32::INFINITY),
            (n - 1, f32::NAN),
            (0, -f32::INFINITY),
        ] {
            let mut y = x.clone();
            y[at] = bad;
            assert!(
                scaled_square_sum(&y, None).is_err(),
                "n = {n}, {bad} at {at}"
            );
        }
    }
}
