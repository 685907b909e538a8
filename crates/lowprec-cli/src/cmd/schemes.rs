//! `lowprec schemes`: the table of named schemes (presets), each with its canonical name, its
//! axes, its storage and its source.

use crate::table::Table;
use anyhow::Result;
use lowprec::scheme::{Scheme, PRESETS};
use std::process::ExitCode;

/// Arguments of `lowprec schemes`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec schemes
  lowprec schemes --json")]
pub struct Args {
    /// Print JSON (one object per preset, with every axis) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The shape the bits per element are quoted for: a 4096 × 4096 weight.
const SHAPE: [usize; 2] = [4096, 4096];

/// Run `lowprec schemes`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let parsed: Vec<(&lowprec::scheme::Preset, Scheme)> = PRESETS
        .iter()
        .map(|p| Ok((p, p.name.parse::<Scheme>()?)))
        .collect::<Result<_>>()?;
    if a.json {
        let v: Vec<serde_json::Value> = parsed
            .iter()
            .map(|(p, s)| {
                serde_json::json!({
                    "name": p.name, "canonical": s.to_string(), "meaning": p.meaning,
                    "source": p.source, "element": s.element.to_string(),
                    "blocks": s.blocks.to_string(), "scale_format": s.scale.name(),
                    "bits_per_element_4096x4096": s.bits_per_element(&SHAPE),
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(&["scheme", "bits/el", "what", "source"]);
    for (p, s) in &parsed {
        t.row(vec![
            p.name.to_string(),
            format!("{:.3}", s.bits_per_element(&SHAPE)),
            p.meaning.to_string(),
            p.source.to_string(),
        ]);
    }
    out!("{}", t.render())?;
    outln!(
        "bits/el for a 4096 x 4096 tensor, scales included; grammar and formulas: docs/schemes.md"
    )?;
    Ok(ExitCode::SUCCESS)
}
