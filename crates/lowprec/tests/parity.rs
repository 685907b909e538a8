//! Every path gives the same bits: scalar and slice, out of place and in place, binary32
//! and binary64 inputs, 1 and 2 threads, and every instruction-set level (portable, AVX2,
//! AVX-512) that this CPU has.

mod common;

use common::{all_formats, inputs_f32, same};
use lowprec::simd::{self, Level};
use lowprec::{encode_vec, round_in_place, round_vec, RoundOptions, RoundingMode, Status};

fn pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
}

#[test]
fn levels_threads_and_in_place_agree() {
    let n = 300_000; // above the parallel threshold
    let levels: Vec<Level> = [Level::Portable, Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|&l| l <= simd::detected())
        .collect();
    for f in all_formats() {
        let x = inputs_f32(&f, n, 11);
        for mode in RoundingMode::ALL {
            let o = RoundOptions::new(mode).seed(5);
            let mut base: Option<(Vec<u64>, Vec<u64>, Status)> = None;
            for &level in &levels {
                for threads in [1, 2] {
                    simd::set_max_level(level);
                    let (codes, vals, st) = pool(threads).install(|| {
                        let (c, st) = encode_vec::<f32, u64>(&f, &x, &o).unwrap_or_default();
                        let mut v = vec![0f64; x.len()];
                        lowprec::round_into(&f, &x, &mut v, &o).unwrap();
                        (c, v.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), st)
                    });
                    simd::set_max_level(Level::Avx512);
                    match &base {
                        None => base = Some((codes, vals, st)),
                        Some((c0, v0, s0)) => {
                            assert!(
                                c0 == &codes,
                                "{f} {mode}: codes differ at {level:?}, {threads} threads"
                            );
                            assert!(
                                v0 == &vals,
                                "{f} {mode}: values differ at {level:?}, {threads} threads"
                            );
                            assert_eq!(s0, &st, "{f} {mode}: status differs at {level:?}");
                        }
                    }
                }
            }
            let (_, vals, _) = base.unwrap();
            // in place (binary64 data) equals out of place
            let mut y: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            round_in_place(&f, &mut y, &o).unwrap();
            assert!(
                y.iter()
                    .zip(&vals)
                    .all(|(a, &b)| same(*a, f64::from_bits(b))),
                "{f} {mode}: in place"
            );
            // binary32 in place, where the format fits binary32
            if f.fits_f32() {
                let mut y32 = x.clone();
                round_in_place(&f, &mut y32, &o).unwrap();
                let (v32, _) = round_vec(&f, &x, &o).unwrap();
                assert!(
                    y32.iter()
                        .zip(&v32)
                        .all(|(a, b)| same(*a as f64, *b as f64)),
                    "{f} {mode}: f32 in place"
                );
                assert!(
                    v32.iter()
                        .zip(&vals)
                        .all(|(a, &b)| same(*a as f64, f64::from_bits(b))),
                    "{f} {mode}: f32 out"
                );
            }
            // the scalar API on a sample (index 0: stochastic rounding differs by index)
            if mode != RoundingMode::Stochastic {
                for i in (0..n).step_by(997) {
                    assert!(
                        same(f.round(x[i] as f64, &o), f64::from_bits(vals[i])),
                        "{f} {mode}: scalar"
                    );
                }
            }
        }
    }
}

#[test]
fn pieces_with_index_offsets_equal_one_call() {
    let f = lowprec::FloatFormat::FP8_E4M3;
    let x = inputs_f32(&f, 100_000, 3);
    let o = RoundOptions::new(RoundingMode::Stochastic).seed(99);
    let (whole, _) = encode_vec::<f32, u8>(&f, &x, &o).unwrap();
    let mut parts = Vec::new();
    for (k, piece) in x.chunks(7_777).enumerate() {
        let (c, _) = encode_vec::<f32, u8>(&f, piece, &o.index_offset((k * 7_777) as u64)).unwrap();
        parts.extend(c);
    }
    assert_eq!(whole, parts);
}

#[test]
fn index_offsets_across_a_multiple_of_2_pow_32() {
    let f = lowprec::FloatFormat::BF16;
    let x = inputs_f32(&f, 5_000, 4);
    let start = (1u64 << 32) - 2_000;
    let o = RoundOptions::new(RoundingMode::Stochastic)
        .seed(1)
        .index_offset(start);
    let (codes, _) = encode_vec::<f32, u16>(&f, &x, &o).unwrap();
    for (i, &xi) in x.iter().enumerate() {
        let r = lowprec::reference::round(&f, xi as f64, &o, i as u64);
        assert_eq!(r.code.map(|c| c as u16), Some(codes[i]), "element {i}");
    }
}
