//! Stochastic rounding: unbiased, reproducible, independent of threads, binary32 and
//! binary64 alike, and the hardware-style variant with few random bits.

use lowprec::{encode_vec, round_vec, FloatFormat, RoundOptions, RoundingMode};

fn sr(seed: u64) -> RoundOptions {
    RoundOptions::new(RoundingMode::Stochastic).seed(seed)
}

#[test]
fn the_mean_of_many_roundings_is_within_four_sigma_of_x() {
    let n = 1 << 20;
    for (f, x) in [
        (FloatFormat::FP8_E4M3, 2.3f64),
        (FloatFormat::FP8_E5M2, -0.0123),
        (FloatFormat::BF16, 1.0 + 1.0 / 3.0),
        (FloatFormat::FP16, 1e-6),     // subnormal range
        (FloatFormat::FP4_E2M1, 0.2),  // between 0 and 0.5
        (FloatFormat::FP8_E4M3, 3e-5), // far below the smallest subnormal
    ] {
        let xs = vec![x; n];
        let (y, _) = round_vec(&f, &xs, &sr(17)).unwrap();
        let lo = f.round(x, &RoundOptions::new(RoundingMode::Down));
        let hi = f.round(x, &RoundOptions::new(RoundingMode::Up));
        assert!(
            y.iter().all(|&v| v == lo || v == hi),
            "{f}: only the two neighbours"
        );
        let p = (x - lo) / (hi - lo);
        let mean = y.iter().sum::<f64>() / n as f64;
        let sigma = (hi - lo) * (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (mean - x).abs() <= 4.0 * sigma + 1e-300,
            "{f} x = {x}: mean {mean}, 4σ = {}",
            4.0 * sigma
        );
    }
}

#[test]
fn reproducible_and_seed_dependent() {
    let f = FloatFormat::FP8_E4M3;
    let x: Vec<f32> = (0..100_000).map(|i| (i as f32) * 1e-3).collect();
    let a = encode_vec::<f32, u8>(&f, &x, &sr(1)).unwrap().0;
    let b = encode_vec::<f32, u8>(&f, &x, &sr(1)).unwrap().0;
    let c = encode_vec::<f32, u8>(&f, &x, &sr(2)).unwrap().0;
    assert_eq!(a, b);
    assert!(a.iter().zip(&c).filter(|(p, q)| p != q).count() > 1000);
}

#[test]
fn one_and_two_threads_give_identical_bits() {
    let f = FloatFormat::BF16;
    let x: Vec<f32> = (0..1_000_000)
        .map(|i| ((i as f32) * 0.618).sin() * 100.0)
        .collect();
    let run = |t: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
            .install(|| encode_vec::<f32, u16>(&f, &x, &sr(9)).unwrap())
    };
    assert_eq!(run(1), run(2));
}

#[test]
fn binary32_and_binary64_inputs_round_alike() {
    let f = FloatFormat::FP8_E5M2;
    let x32: Vec<f32> = (0..200_000)
        .map(|i| ((i as f32) * 0.37).cos() * 1000.0)
        .collect();
    let x64: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
    let a = encode_vec::<f32, u8>(&f, &x32, &sr(4)).unwrap().0;
    let b = encode_vec::<f64, u8>(&f, &x64, &sr(4)).unwrap().0;
    assert_eq!(a, b);
}

#[test]
fn hardware_sr_with_r_bits_is_biased_toward_zero_by_at_most_the_truncation() {
    // With r random bits, P(up) = floor(frac · 2^r) / 2^r: x = 2.25 + 0.25·(1/3) in
    // fp8-e4m3 has frac = 1/3, so 4 bits give P(up) = 5/16.
    let f = FloatFormat::FP8_E4M3;
    let x = 2.25 + 0.25 / 3.0;
    let n = 1 << 20;
    let (y, _) = round_vec(&f, &vec![x; n], &sr(8).sr_bits(4)).unwrap();
    let up = y.iter().filter(|&&v| v == 2.5).count() as f64 / n as f64;
    let p = 5.0 / 16.0;
    let sigma = (p * (1.0 - p) / n as f64).sqrt();
    assert!((up - p).abs() < 4.0 * sigma, "P(up) = {up}, want {p}");
}
