//! Criterion benches of the hot kernels: round (values) and encode (codes) of binary32 and
//! binary64 inputs to each headline format, rne and sr, at 1K and 16M elements into
//! preallocated buffers, and decode.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lowprec::{decode_into, encode_into, round_into, FloatFormat, RoundOptions, RoundingMode};

fn data(n: usize) -> Vec<f32> {
    let mut s = 1u64;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        })
        .collect()
}

const FORMATS: [FloatFormat; 5] = [
    FloatFormat::FP8_E4M3,
    FloatFormat::FP8_E5M2,
    FloatFormat::BF16,
    FloatFormat::FP16,
    FloatFormat::FP4_E2M1,
];

fn bench(c: &mut Criterion) {
    for n in [1 << 10, 1 << 24] {
        let x = data(n);
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let mut y = vec![0f32; n];
        let mut y64 = vec![0f64; n];
        let mut c8 = vec![0u8; n];
        let mut c16 = vec![0u16; n];
        for mode in [RoundingMode::NearestEven, RoundingMode::Stochastic] {
            let o = RoundOptions::new(mode);
            let mut g = c.benchmark_group(format!("round-{}-{n}", mode.short_name()));
            g.throughput(Throughput::Elements(n as u64));
            if n > 1 << 20 {
                g.sample_size(10);
            }
            for f in FORMATS {
                g.bench_function(BenchmarkId::new("f32-values", f.name()), |b| {
                    b.iter(|| round_into(&f, black_box(&x), &mut y, &o).unwrap())
                });
                g.bench_function(BenchmarkId::new("f32-codes", f.name()), |b| {
                    if f.bits() <= 8 {
                        b.iter(|| encode_into(&f, black_box(&x), &mut c8, &o).unwrap())
                    } else {
                        b.iter(|| encode_into(&f, black_box(&x), &mut c16, &o).unwrap())
                    }
                });
                g.bench_function(BenchmarkId::new("f64-values", f.name()), |b| {
                    b.iter(|| round_into(&f, black_box(&x64), &mut y64, &o).unwrap())
                });
            }
            g.finish();
        }
        let mut g = c.benchmark_group(format!("decode-{n}"));
        g.throughput(Throughput::Elements(n as u64));
        if n > 1 << 20 {
            g.sample_size(10);
        }
        encode_into(
            &FloatFormat::FP8_E4M3,
            &x,
            &mut c8,
            &RoundOptions::default(),
        )
        .unwrap();
        g.bench_function("fp8-e4m3-to-f32", |b| {
            b.iter(|| decode_into(&FloatFormat::FP8_E4M3, black_box(&c8), &mut y).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
