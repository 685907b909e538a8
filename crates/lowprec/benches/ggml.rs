//! Criterion benches of ggml's types: dequantizing Q4_0, Q4_K and IQ4_XS and quantizing Q8_0
//! and Q4_0, on 1M binary32 values in rows of 4096, beside a copy of the same output bytes.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lowprec::ggml::{self, GgmlType};

fn bench(c: &mut Criterion) {
    let n = 1 << 20;
    let mut s = 7u64;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s
    };
    let x: Vec<f32> = (0..n)
        .map(|_| ((next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1)
        .collect();
    let mut y = vec![0f32; n];
    let mut g = c.benchmark_group("ggml");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("copy f32", |b| b.iter(|| y.copy_from_slice(black_box(&x))));
    for t in [GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::IQ4_XS] {
        let mut q = vec![0u8; n / t.block_size() * t.type_size()];
        if t.can_quantize() {
            ggml::quantize(t, &x, &mut q).unwrap();
        } else {
            // random blocks with small f16 words where the scales are
            q.iter_mut().for_each(|v| *v = (next() >> 56) as u8);
            q.chunks_exact_mut(t.type_size())
                .for_each(|b| b[..4].copy_from_slice(&[0, 0x20, 0, 0x20]));
        }
        g.bench_function(BenchmarkId::new("dequantize", t.name()), |b| {
            b.iter(|| ggml::dequantize(t, black_box(&q), &mut y).unwrap())
        });
    }
    for t in [GgmlType::Q8_0, GgmlType::Q4_0] {
        let mut q = vec![0u8; n / t.block_size() * t.type_size()];
        g.bench_function(BenchmarkId::new("quantize", t.name()), |b| {
            b.iter(|| ggml::quantize(t, black_box(&x), &mut q).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
