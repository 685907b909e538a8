use lowprec::*;
use std::time::Instant;
fn main() {
    let n = 1 << 24;
    let mut s = 1u64;
    let x: Vec<f32> = (0..n).map(|_| { s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((s >> 40) as f32 / (1u64<<24) as f32 - 0.5) * 8.0 }).collect();
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut y = vec![0f32; n]; let mut c = vec![0u8; n]; let mut c16 = vec![0u16; n]; let mut y64 = vec![0f64; n];
    y.fill(1.0); c.fill(1); c16.fill(1); y64.fill(1.0);
    let pool1 = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for th in [1, 2] {
    for (name, f) in [("fp8-e4m3", FloatFormat::FP8_E4M3), ("fp8-e5m2", FloatFormat::FP8_E5M2), ("bf16", FloatFormat::BF16), ("fp16", FloatFormat::FP16), ("fp4-e2m1", FloatFormat::FP4_E2M1)] {
        for mode in [RoundingMode::NearestEven, RoundingMode::Stochastic, RoundingMode::TowardZero] {
            let o = RoundOptions::new(mode);
            let t = |g: &mut (dyn FnMut() + Send)| { let mut best = f64::MAX; for _ in 0..5 { let t0 = Instant::now(); if th == 1 { pool1.install(|| g()) } else { g() }; best = best.min(t0.elapsed().as_secs_f64()); } n as f64 / best / 1e9 };
            let r = t(&mut || { round_into(&f, &x, &mut y, &o).unwrap(); });
            let e = if f.bits() <= 8 { t(&mut || { encode_into(&f, &x, &mut c, &o).unwrap(); }) } else { t(&mut || { encode_into(&f, &x, &mut c16, &o).unwrap(); }) };
            let r64 = t(&mut || { round_into(&f, &x64, &mut y64, &o).unwrap(); });
            let e64 = t(&mut || { encode_into(&f, &x64, &mut c16, &o).unwrap(); });
            println!("th={th} {name:10} {mode:4} round {r:.2} encode {e:.2}  f64: round {r64:.2} encode {e64:.2} G/s");
        }
    }
    }
}
