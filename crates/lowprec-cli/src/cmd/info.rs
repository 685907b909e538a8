//! `lowprec info FORMAT`: one format's properties and, for small formats, every code;
//! `lowprec info MODEL.gguf`: a GGUF file's metadata and tensors.

use crate::table::{num, Table};
use anyhow::Result;
use lowprec::FloatFormat;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec info`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec info fp8-e4m3
  lowprec info e3m4:ieee
  lowprec info model.gguf")]
pub struct Args {
    /// The format (a preset name or alias, or a custom e<E>m<M>... spec), or a `.gguf` file.
    pub format: Target,
    /// List every code even for formats wider than 8 bits (up to 16 bits).
    #[arg(long)]
    pub all: bool,
}

/// What `lowprec info` describes.
#[derive(Debug, Clone)]
pub enum Target {
    /// A number format.
    Format(FloatFormat),
    /// A GGUF file.
    Gguf(PathBuf),
}

impl std::str::FromStr for Target {
    type Err = lowprec::Error;
    fn from_str(s: &str) -> lowprec::Result<Target> {
        if s.to_ascii_lowercase().ends_with(".gguf") {
            Ok(Target::Gguf(PathBuf::from(s)))
        } else {
            Ok(Target::Format(s.parse()?))
        }
    }
}

/// `lowprec info MODEL.gguf`: version, key/values, then one row per tensor.
fn gguf_info(p: &std::path::Path) -> Result<ExitCode> {
    let f = lowprec::io::gguf::open(p)?;
    outln!(
        "{}: GGUF v{}, {} key/values, {} tensors, alignment {}",
        p.display(),
        f.version(),
        f.metadata().len(),
        f.tensors().len(),
        f.alignment()
    )?;
    for (k, v) in f.metadata() {
        outln!("  {k} = {v}")?;
    }
    let mut t = Table::new(&["tensor", "type", "shape", "bytes", "bits/el"]);
    let mut total = 0u64;
    for ti in f.tensors() {
        total += ti.size;
        t.row(vec![
            ti.name.clone(),
            ti.ggml_type.name().to_string(),
            ti.shape()
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            ti.size.to_string(),
            format!("{:.4}", ti.ggml_type.bits_per_element()),
        ]);
    }
    outln!()?;
    out!("{}", t.render())?;
    outln!("{} bytes of tensor data", total)?;
    Ok(ExitCode::SUCCESS)
}

/// Run `lowprec info`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let f = match &a.format {
        Target::Format(f) => *f,
        Target::Gguf(p) => return gguf_info(p),
    };
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
