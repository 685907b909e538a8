//! `lowprec tour`: the format table, then what rounding does to a few numbers.

use anyhow::Result;
use lowprec::{encode_vec, FloatFormat, Overflow, RoundOptions, RoundingMode};
use std::process::ExitCode;

/// Run `lowprec tour`.
pub fn run() -> Result<ExitCode> {
    outln!("== Formats ==")?;
    out!("{}", super::formats::table().render())?;

    outln!("\n== 0.1 in each format (round to nearest even) ==")?;
    let rne = RoundOptions::default();
    for name in [
        "fp32", "bf16", "fp16", "fp8-e4m3", "fp8-e5m2", "fp6-e2m3", "fp4-e2m1",
    ] {
        let f = FloatFormat::parse(name)?;
        let v = f.round(0.1, &rne);
        let c = f.encode(0.1, &rne)?;
        outln!(
            "  {name:<9} {:<24} code {:<10} bits {:<34} rel. error {:.2e}",
            format!("{v}"),
            format!("{c:#0w$x}", w = 2 + (f.bits() as usize).div_ceil(4)),
            f.bits_str(c),
            ((v - 0.1) / 0.1f64).abs()
        )?;
    }

    outln!("\n== Every rounding mode, 2.3 into fp8-e4m3 (between 2.25 and 2.5) ==")?;
    let e4m3 = FloatFormat::FP8_E4M3;
    for m in RoundingMode::ALL {
        let o = RoundOptions::new(m).seed(1);
        outln!("  {:<4} {}", m.short_name(), e4m3.round(2.3, &o))?;
    }
    let n = 1 << 20;
    let x = vec![2.3f32; n];
    let sr = RoundOptions::new(RoundingMode::Stochastic).seed(42);
    let (codes, _) = encode_vec::<f32, u8>(&e4m3, &x, &sr)?;
    let up = codes
        .iter()
        .filter(|&&c| e4m3.decode(c as u64) == 2.5)
        .count();
    let mean = (up as f64 * 2.5 + (n - up) as f64 * 2.25) / n as f64;
    outln!(
        "  sr over {n} copies: mean {mean:.5} (exact 2.3; 20% round up, measured {:.3}%)",
        100.0 * up as f64 / n as f64
    )?;

    outln!("\n== Overflow: IEEE 754 §7.4 by direction, or saturate ==")?;
    for (name, x) in [("fp16", 70000.0), ("fp8-e4m3", 1000.0), ("fp8-e5m2", 1e6)] {
        let f = FloatFormat::parse(name)?;
        let r = |m, ov| f.round(x, &RoundOptions::new(m).overflow(ov));
        outln!(
            "  {x:>8} into {name:<9} rne/ovf {:<6} rtz/ovf {:<6} rne/sat {}",
            r(RoundingMode::NearestEven, Overflow::Ieee),
            r(RoundingMode::TowardZero, Overflow::Ieee),
            r(RoundingMode::NearestEven, Overflow::Saturate)
        )?;
    }
    outln!(
        "  (the seed numfmt.py gives Inf/NaN under rtz; IEEE 754 gives the largest finite number)"
    )?;

    outln!("\n== What happened: counts for 1M normal(0, 1) samples into fp8-e4m3 ==")?;
    let g: Vec<f32> = super::normal_samples(n, 7)
        .iter()
        .map(|v| v * 100.0)
        .collect();
    let (_, st) = encode_vec::<f32, u8>(
        &e4m3,
        &g,
        &RoundOptions::default().overflow(Overflow::Saturate),
    )?;
    outln!(
        "  scaled by 100, saturating: {}",
        super::status_line(&st, n)
    )?;
    outln!("\nNext: lowprec info fp8-e4m3 | lowprec encode bf16 3.14159 | lowprec round FORMAT in.npy -o out.npy")?;
    Ok(ExitCode::SUCCESS)
}
