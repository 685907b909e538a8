//! `lowprec soliton`: the end-to-end proof of the range-safe binary32 rules — the NLS
//! fundamental soliton in binary64, in binary32 by the rules, and in naive binary32.

use crate::table::{num, Table};
use anyhow::{bail, Context, Result};
use lowprec::range::soliton::{study, SolitonProblem};
use std::process::ExitCode;

/// Arguments of `lowprec soliton`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec soliton
  lowprec soliton --amplitude 1e-30 --amplitude 1e30 --steps 400
  lowprec soliton --json

Each amplitude P is a launch P·sech(T) with γ = 1/P² (the same physics in other units).
`vs binary64` is the rounding error, `vs exact` adds the method's own discretisation
error (the binary64 row alone), `/(u·steps)` divides the rounding error by the binary32
unit roundoff u = 2^-24 times the steps. A naive binary32 run overflows or underflows
at extreme amplitudes (NaN).")]
pub struct Args {
    /// Launch amplitude P (field units); repeat for several.
    #[arg(long, short = 'a', value_name = "P", default_values_t = [1e-20, 1.0, 1e20])]
    pub amplitude: Vec<f64>,
    /// Split steps over the distance.
    #[arg(long, default_value_t = SolitonProblem::default().steps)]
    pub steps: usize,
    /// Grid points in time.
    #[arg(long, default_value_t = SolitonProblem::default().points)]
    pub points: usize,
    /// Propagation distance, in dispersion lengths.
    #[arg(long, default_value_t = SolitonProblem::default().distance)]
    pub distance: f64,
    /// Time window, in soliton widths.
    #[arg(long, default_value_t = SolitonProblem::default().window)]
    pub window: f64,
    /// Print JSON (one object per run) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Run `lowprec soliton`.
pub fn run(a: &Args) -> Result<ExitCode> {
    if a.steps == 0 || a.points < 2 {
        bail!("--steps must be at least 1 and --points at least 2");
    }
    // the grids of the three runs: a few complex arrays of --points each
    super::check_memory(&format!("--points {}", a.points), a.points as u128, 256)?;
    if let Some(p) = a.amplitude.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
        bail!("--amplitude {p} is not a positive finite number; give e.g. 1e-20 or 1e20");
    }
    let p = SolitonProblem {
        amplitude: 1.0,
        points: a.points,
        window: a.window,
        distance: a.distance,
        steps: a.steps,
    };
    let rows = study(&p, &a.amplitude).context("running the soliton study")?;
    let u = 2f64.powi(-24);
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "amplitude": r.amplitude,
                    "run": r.arithmetic.name(),
                    "state_exponent": r.state_exponent,
                    "vs_binary64": finite(r.vs_binary64),
                    "vs_exact": finite(r.vs_exact),
                    "per_u_step": finite(r.per_u_step),
                    "energy_drift": finite(r.energy_drift),
                    "steps": a.steps,
                    "points": a.points,
                    "distance": a.distance,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "NLS fundamental soliton: {} points over {} widths, z = {} in {} steps; u·steps = {:.3e}",
        a.points,
        a.window,
        a.distance,
        a.steps,
        u * a.steps as f64
    )?;
    let mut t = Table::new(&[
        "amplitude",
        "run",
        "state scale",
        "vs binary64",
        "vs exact",
        "/(u·steps)",
        "energy drift",
    ]);
    let e3 = |v: f64| {
        if v.is_finite() {
            format!("{v:.3e}")
        } else {
            format!("{v}")
        }
    };
    for r in &rows {
        t.row(vec![
            num(r.amplitude),
            r.arithmetic.name().to_string(),
            r.state_exponent.map_or("-".into(), |k| format!("2^{k}")),
            e3(r.vs_binary64),
            e3(r.vs_exact),
            if r.per_u_step.is_finite() {
                format!("{:.2}", r.per_u_step)
            } else {
                format!("{}", r.per_u_step)
            },
            e3(r.energy_drift),
        ]);
    }
    out!("{}", t.render())?;
    Ok(ExitCode::SUCCESS)
}

/// A number for JSON: `null` where it is not finite (JSON has no NaN).
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}
