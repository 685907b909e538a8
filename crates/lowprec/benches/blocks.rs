//! Criterion benches of block scaling and integer quantization: MX (fp8, fp6, fp4, int8),
//! NVFP4 and integer groups of 128, on 1M binary32 values in rows of 4096, into
//! preallocated buffers.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lowprec::block::mx::{mx_quantize_into, MxElement, MxOptions};
use lowprec::block::nvfp4::{nvfp4_quantize_into, Nvfp4Options};
use lowprec::quant::{quantize_int_codes_into, quantize_int_into, Granularity, IntOptions};

fn bench(c: &mut Criterion) {
    let n = 1 << 20;
    let row = 4096;
    let mut s = 7u64;
    let x: Vec<f32> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
        })
        .collect();
    let (mut v, mut codes, mut scales) = (vec![0f32; n], vec![0u8; n], vec![0u8; n / 16]);
    let mut g = c.benchmark_group("block");
    g.throughput(Throughput::Elements(n as u64));
    for e in ["fp8-e4m3", "fp6-e2m3", "fp4-e2m1", "int8"] {
        let o = MxOptions::new(MxElement::parse(e).unwrap());
        g.bench_function(BenchmarkId::new("mx", e), |b| {
            b.iter(|| {
                mx_quantize_into(
                    black_box(&x),
                    row,
                    &o,
                    &mut v,
                    &mut codes,
                    &mut scales[..n / 32],
                )
                .unwrap()
            })
        });
    }
    g.bench_function("nvfp4", |b| {
        b.iter(|| {
            nvfp4_quantize_into(
                black_box(&x),
                row,
                &Nvfp4Options::default(),
                &mut v,
                &mut codes,
                &mut scales,
            )
            .unwrap()
        })
    });
    for bits in [8, 4] {
        let o = IntOptions {
            granularity: Granularity::Group(128),
            ..IntOptions::new(bits)
        };
        let (mut q, mut sc, mut z, mut cl) = (
            vec![0i32; n],
            vec![0f64; n / 128],
            vec![0f64; n / 128],
            vec![0f64; n / 128],
        );
        g.bench_function(BenchmarkId::new("int-group128", bits), |b| {
            b.iter(|| {
                quantize_int_into(
                    black_box(&x),
                    row,
                    &o,
                    &mut v,
                    &mut q,
                    &mut sc,
                    &mut z,
                    &mut cl,
                )
                .unwrap()
            })
        });
        // byte codes and scales only
        g.bench_function(BenchmarkId::new("int-group128-codes", bits), |b| {
            b.iter(|| {
                quantize_int_codes_into(
                    black_box(&x),
                    row,
                    &o,
                    None,
                    &mut codes,
                    &mut sc,
                    &mut z,
                    &mut cl,
                )
                .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
