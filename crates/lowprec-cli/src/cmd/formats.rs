//! `lowprec formats`: the table of presets.

use crate::table::{num, pow_or_num, Table};
use anyhow::Result;
use lowprec::format::PRESETS;
use lowprec::{FloatFormat, Specials};
use std::process::ExitCode;

/// Arguments of `lowprec formats`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec formats
  lowprec formats --json")]
pub struct Args {
    /// Print JSON (one object per format) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The specials column: policy, plus `unsigned` / `no zero`.
pub fn specials(f: &FloatFormat) -> String {
    let mut s = match f.specials() {
        Specials::Ieee => "Inf, NaN".to_string(),
        Specials::Fn => "NaN only".to_string(),
        Specials::Fnuz => "NaN=0x80, no -0".to_string(),
        Specials::None => "none".to_string(),
        Specials::P3109Extended if f.is_signed() => format!(
            "Inf=0x{:x}, NaN=0x{:x}, no -0",
            f.inf_code(false).unwrap_or(0),
            f.sign_mask()
        ),
        Specials::P3109Extended => {
            format!("Inf=0x{:x}, NaN=0x{:x}", f.max_code() - 1, f.max_code())
        }
        Specials::P3109Finite => format!(
            "NaN=0x{:x}{}",
            f.nan_code(false).unwrap_or(0),
            if f.is_signed() { ", no -0" } else { "" }
        ),
    };
    if !f.is_signed() {
        s.push_str(", unsigned");
    }
    if !f.has_zero() {
        s.push_str(", no zero");
    }
    s
}

/// The layout `S.E.M` in bits.
pub fn layout(f: &FloatFormat) -> String {
    format!("{}.{}.{}", f.is_signed() as u32, f.exp_bits(), f.man_bits())
}

/// The table of every preset.
pub fn table() -> Table {
    let mut t = Table::new(&[
        "format",
        "bits",
        "s.e.m",
        "bias",
        "max",
        "min normal",
        "min subnormal",
        "epsilon",
        "specials",
        "used for",
    ]);
    for p in PRESETS {
        let f = p.format;
        t.row(vec![
            p.name.to_string(),
            f.bits().to_string(),
            layout(&f),
            f.bias().to_string(),
            num(f.max_finite()),
            pow_or_num(f.min_normal()),
            f.min_subnormal().map_or("-".into(), pow_or_num),
            pow_or_num(f.epsilon()),
            specials(&f),
            p.note.to_string(),
        ]);
    }
    t
}

/// Run `lowprec formats`.
pub fn run(a: &Args) -> Result<ExitCode> {
    if a.json {
        let v: Vec<serde_json::Value> = PRESETS
            .iter()
            .map(|p| {
                let f = p.format;
                serde_json::json!({
                    "name": p.name, "spec": f.spec(), "bits": f.bits(),
                    "exp_bits": f.exp_bits(), "man_bits": f.man_bits(), "bias": f.bias(),
                    "signed": f.is_signed(), "zero": f.has_zero(), "specials": f.specials().name(),
                    "emin": f.emin(), "emax": f.emax(), "max": f.max_finite(),
                    "min_normal": f.min_normal(), "min_subnormal": f.min_subnormal(),
                    "epsilon": f.epsilon(), "unit_roundoff": f.unit_roundoff(),
                    "aliases": p.aliases,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        out!("{}", table().render())?;
    }
    Ok(ExitCode::SUCCESS)
}
