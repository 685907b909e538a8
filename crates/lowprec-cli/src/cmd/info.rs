//! `lowprec info FORMAT`: one format's properties and, for small formats, every code.

use crate::table::{num, Table};
use anyhow::Result;
use lowprec::FloatFormat;
use std::process::ExitCode;

/// Arguments of `lowprec info`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec info fp8-e4m3
  lowprec info e3m4:ieee
  lowprec info e8m0")]
pub struct Args {
    /// The format (a preset name or alias, or a custom e<E>m<M>... spec).
    pub format: FloatFormat,
    /// List every code even for formats wider than 8 bits (up to 16 bits).
    #[arg(long)]
    pub all: bool,
}

/// Run `lowprec info`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let f = a.format;
    outln!("{}", f.describe())?;
    let code = |c: Option<u64>| c.map_or("-".to_string(), |c| format!("{c:#x}"));
    let rows = [
        ("spec", f.spec()),
        ("bits", f.bits().to_string()),
        (
            "sign / exponent / mantissa bits",
            super::formats::layout(&f),
        ),
        ("bias", f.bias().to_string()),
        ("emin, emax", format!("{}, {}", f.emin(), f.emax())),
        (
            "max finite",
            format!("{} (code {:#x})", num(f.max_finite()), f.max_mag()),
        ),
        ("min normal", num(f.min_normal())),
        ("min subnormal", f.min_subnormal().map_or("-".into(), num)),
        ("epsilon (2^-m)", num(f.epsilon())),
        ("unit roundoff (2^-(m+1))", num(f.unit_roundoff())),
        ("specials", super::formats::specials(&f)),
        ("+Inf code", code(f.inf_code(false))),
        ("NaN code", code(f.nan_code(false))),
        (
            "-0",
            if f.has_negative_zero() {
                "yes".into()
            } else {
                "no".into()
            },
        ),
    ];
    for (k, v) in rows {
        outln!("  {k:<32} {v}")?;
    }
    if f.bits() <= 8 || (a.all && f.bits() <= 16) {
        let mut t = Table::new(&["code", "bits", "value"]);
        let vals = f.all_values()?;
        for (c, v) in vals.iter().enumerate() {
            t.row(vec![
                format!("{c:#0w$x}", w = 2 + (f.bits() as usize).div_ceil(4)),
                f.bits_str(c as u64),
                num(*v),
            ]);
        }
        outln!()?;
        out!("{}", t.render())?;
    }
    Ok(ExitCode::SUCCESS)
}
