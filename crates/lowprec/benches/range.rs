//! Criterion benches of the range rules' reductions on 16M binary32 values (64 MiB):
//! `pairwise_sum`, `prefix_sum_into` (into a preallocated buffer) and `scaled_square_sum`,
//! on one thread and on all threads, beside the machine's own memory read rate measured in
//! the same run (a plain, unordered sum over the same slice: 16 independent lanes, which
//! the compiler vectorises, so it reads as fast as memory delivers). Throughput is in
//! bytes of input read, so each figure compares directly with the read rate.
//!
//! Two more probes give the floors of a scan that writes its output: one read + write pass
//! (a copy into the output buffer: no algorithm that writes 64 MiB of output runs faster)
//! and two such passes (the copy, then the output negated in place: the least an exact
//! Hillis–Steele scan of a slice larger than the caches does, one pass for the levels that
//! fit a tile and one for the strips of the rest, each output depending on a window of
//! every earlier value in an order of its own).
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use lowprec::range::{pairwise_sum, prefix_sum_into, scaled_square_sum};
use rayon::prelude::*;

/// The read-rate probe: an unordered sum in 16 lanes.
fn plain_sum(x: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `out = x`, in parallel pieces as the scan's passes run.
fn copy(x: &[f32], out: &mut [f32]) {
    out.par_chunks_mut(1 << 16)
        .zip(x.par_chunks(1 << 16))
        .for_each(|(o, i)| o.copy_from_slice(i));
}

/// `out = −out`, in place: one more read + write pass.
fn negate(out: &mut [f32]) {
    out.par_chunks_mut(1 << 16)
        .for_each(|o| o.iter_mut().for_each(|v| *v = -*v));
}

fn bench(c: &mut Criterion) {
    let n = 1 << 24;
    let mut s = 7u64;
    let x: Vec<f32> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1e3
        })
        .collect();
    let mut out = vec![0f32; n];
    let threads = rayon::current_num_threads();
    for (label, pool) in [("1 thread", 1), ("all threads", threads)] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(pool)
            .build()
            .unwrap();
        let mut g = c.benchmark_group(format!("range 16M f32, {label}"));
        g.throughput(Throughput::Bytes((n * 4) as u64));
        g.sample_size(10);
        g.bench_function("read rate (plain sum)", |b| {
            b.iter(|| pool.install(|| x.par_chunks(1 << 20).map(plain_sum).sum::<f32>()))
        });
        g.bench_function("floor: one read + write pass (copy)", |b| {
            b.iter(|| pool.install(|| copy(black_box(&x), &mut out)))
        });
        g.bench_function("floor: two read + write passes", |b| {
            b.iter(|| {
                pool.install(|| {
                    copy(black_box(&x), &mut out);
                    negate(&mut out);
                })
            })
        });
        g.bench_function("pairwise_sum", |b| {
            b.iter(|| pool.install(|| pairwise_sum(black_box(&x))))
        });
        g.bench_function("prefix_sum_into", |b| {
            b.iter(|| pool.install(|| prefix_sum_into(black_box(&x), &mut out).unwrap()))
        });
        g.bench_function("scaled_square_sum", |b| {
            b.iter(|| pool.install(|| scaled_square_sum(black_box(&x), None).unwrap()))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
