//! Criterion benches of low-precision accumulation and GEMM: sequential, Kahan and pairwise
//! sums of a 64 × 4096 block into BF16 (throughput in rounded additions), and a
//! 128 × 128 × 128 GEMM with FP8 inputs and a BF16 accumulator promoted every 128.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lowprec::accum::{accumulate_into, gemm, AccumOptions, GemmOptions, Method};
use lowprec::scheme::Scheme;
use lowprec::{FloatFormat, RoundOptions, RoundingMode};

fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let (rows, cols) = (64, 4096);
    let x = data(rows * cols, 7);
    let mut out = vec![0.0; rows];
    let mut g = c.benchmark_group("accumulate");
    g.throughput(Throughput::Elements((rows * cols) as u64));
    let bf16 = AccumOptions::new(FloatFormat::BF16);
    for (name, o) in [
        ("sequential-rne", bf16),
        (
            "sequential-rtz",
            bf16.rounding(RoundOptions::new(RoundingMode::TowardZero)),
        ),
        (
            "sequential-sr",
            bf16.rounding(RoundOptions::new(RoundingMode::Stochastic)),
        ),
        ("sequential-chunk128", bf16.chunk(128)),
        ("kahan", bf16.method(Method::Kahan)),
        ("pairwise", bf16.method(Method::Pairwise)),
    ] {
        g.bench_function(BenchmarkId::new("bf16", name), |b| {
            b.iter(|| accumulate_into(black_box(&x), cols, &mut out, &o).unwrap())
        });
    }
    g.finish();

    let n = 128;
    let (a, bm) = (data(n * n, 1), data(n * n, 2));
    let o = GemmOptions::new(FloatFormat::BF16)
        .input(Scheme::cast(FloatFormat::FP8_E4M3))
        .chunk(128);
    let mut g = c.benchmark_group("gemm");
    g.throughput(Throughput::Elements((n * n * n) as u64));
    g.sample_size(10);
    g.bench_function("fp8-bf16-chunk128-128^3", |b| {
        b.iter(|| gemm(black_box(&a), &bm, n, n, n, &o).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
