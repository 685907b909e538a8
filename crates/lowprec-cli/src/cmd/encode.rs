//! `lowprec encode FORMAT VALUE...`: what rounding does to each number.

use super::RoundArgs;
use crate::table::{num, Table};
use anyhow::{Context, Result};
use lowprec::exact::Exact;
use lowprec::{FloatFormat, RoundOptions, RoundingMode};
use std::process::ExitCode;

/// Arguments of `lowprec encode`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec encode fp8-e4m3 0.3 448 500 --rounding rtz
  lowprec encode bf16 3.14159 2.71828 --rounding sr --seed 1
  lowprec encode fp6-e2m3 10 --json")]
pub struct Args {
    /// The format.
    pub format: FloatFormat,
    /// The numbers (decimal, `inf`, `nan`, or `0x…` binary64 bits).
    #[arg(required = true, allow_negative_numbers = true)]
    pub values: Vec<String>,
    #[command(flatten)]
    pub round: RoundArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Parse a number exactly: a decimal of any length, a hexadecimal float (`0x1.8p-3`),
/// inf/nan, or `0x` + hexadecimal digits alone: binary64 bits.
pub fn parse_value(s: &str) -> Result<Exact> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()) {
            let bits = u64::from_str_radix(h, 16)
                .with_context(|| format!("`{s}` is not 0x + 16 hex digits of binary64 bits"))?;
            // the bits' exact value
            return Ok(Exact::from_f64(f64::from_bits(bits)));
        }
    }
    Ok(Exact::parse(t)?)
}

/// Run `lowprec encode`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let f = a.format;
    let opts = a.round.options();
    let down = RoundOptions::new(RoundingMode::Down);
    let up = RoundOptions::new(RoundingMode::Up);
    let mut t = Table::new(&["input", "rounded", "code", "bits", "between", "rel. error"]);
    let mut json = Vec::new();
    for (i, s) in a.values.iter().enumerate() {
        let exact = parse_value(s)?;
        let x = exact.to_f64();
        let o = opts.index_offset(i as u64);
        let v = f.round_exact(&exact, &o);
        let code = f.encode_exact(&exact, &o);
        let (lo, hi) = (f.round_exact(&exact, &down), f.round_exact(&exact, &up));
        let rel = if x != 0.0 && x.is_finite() && v.is_finite() {
            ((v - x) / x).abs()
        } else {
            0.0
        };
        let between = if x.is_nan() {
            "-".to_string()
        } else if lo == hi || (lo.to_bits() == hi.to_bits()) {
            "exact".to_string()
        } else {
            let show = |v: f64| {
                if v.is_finite() {
                    num(v)
                } else {
                    "overflow".to_string()
                }
            };
            format!("[{}, {}]", show(lo), show(hi))
        };
        let (code_s, bits_s) = match &code {
            Ok(c) => (
                format!("{c:#0w$x}", w = 2 + (f.bits() as usize).div_ceil(4)),
                f.bits_str(*c),
            ),
            Err(_) => ("none".into(), "(no NaN code)".into()),
        };
        json.push(serde_json::json!({
            "input": x, "rounded": v, "code": code.as_ref().ok(), "bits": bits_s,
            "lower": lo, "upper": hi, "rel_error": rel,
        }));
        let rel_s = if v.is_finite() && x.is_finite() {
            format!("{rel:.3e}")
        } else {
            "-".to_string()
        };
        t.row(vec![s.clone(), num(v), code_s, bits_s, between, rel_s]);
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        outln!(
            "{} ({}, {}):",
            f.describe(),
            opts.mode.short_name(),
            opts.overflow.short_name()
        )?;
        out!("{}", t.render())?;
    }
    Ok(ExitCode::SUCCESS)
}
