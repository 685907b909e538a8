//! one kernel
use lowprec::*;
fn main() {
    let n = 1 << 24;
    let mut s = 1u64;
    let x: Vec<f32> = (0..n).map(|_| { s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((s >> 40) as f32 / (1u64<<24) as f32 - 0.5) * 8.0 }).collect();
    let mut c = vec![1u8; n];
    let o = RoundOptions::default();
    if std::env::var("AVX2").is_ok() { lowprec::simd::set_max_level(lowprec::simd::Level::Avx2); }
    if std::env::var("PORT").is_ok() { lowprec::simd::set_max_level(lowprec::simd::Level::Portable); }
    let pool1 = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let fmt = FloatFormat::parse(&std::env::var("FMT").unwrap_or("fp8-e4m3".into())).unwrap();
    let mut best = f64::MAX;
    pool1.install(|| for _ in 0..60 { let t0 = std::time::Instant::now(); encode_into(&fmt, &x, &mut c, &o).unwrap(); best = best.min(t0.elapsed().as_secs_f64()); });
    let mut y = vec![1f32; n];
    let mut bestv = f64::MAX;
    pool1.install(|| for _ in 0..60 { let t0 = std::time::Instant::now(); round_into(&fmt, &x, &mut y, &o).unwrap(); bestv = bestv.min(t0.elapsed().as_secs_f64()); });
    let mut bestc = f64::MAX;
    for _ in 0..60 { let t0 = std::time::Instant::now(); y.copy_from_slice(&x); bestc = bestc.min(t0.elapsed().as_secs_f64()); }
    println!("encode {:.2} G/s  round {:.2} G/s  copy {:.2} G/s", n as f64 / best / 1e9, n as f64 / bestv / 1e9, n as f64 / bestc / 1e9);
}
