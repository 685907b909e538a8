//! `lowprec report`: what each scheme does to each tensor — bits per element, relative error,
//! SQNR, max abs error, saturated and flushed shares — for `.npy` / `.safetensors` files or a
//! built-in set of tensors that look like LLM weights and activations.

use super::quantize::{is_safetensors, widen16, Values};
use super::read_npy;
use crate::table::Table;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lowprec::io::npy::Data;
use lowprec::io::safetensors as st;
use lowprec::metrics::ErrorStats;
use lowprec::scheme::Scheme;
use lowprec::Float;
use rayon::prelude::*;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The schemes of a report when none is given.
pub const DEFAULT_SCHEMES: [&str; 10] = [
    "fp16",
    "bf16",
    "fp8-e4m3",
    "fp8-e5m2",
    "mxfp8",
    "mxfp6",
    "mxfp4",
    "nvfp4",
    "int8",
    "int4:group=128",
];

/// Arguments of `lowprec report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `.npy` or `.safetensors` files (every floating tensor); none: the built-in tensors.
    pub files: Vec<PathBuf>,
    /// Schemes (repeatable; default: fp16, bf16, fp8-e4m3, fp8-e5m2, mxfp8, mxfp6, mxfp4,
    /// nvfp4, int8, int4:group=128). Block schemes zero-pad rows that the block size does
    /// not divide.
    #[arg(long = "scheme", short = 's')]
    pub schemes: Vec<String>,
    /// Print JSON (one record per tensor and scheme, plus the totals) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Only the per-scheme totals, not every tensor.
    #[arg(long)]
    pub summary: bool,
}

/// One tensor of the report.
pub struct Tensor {
    /// Name (file stem, or the name in the file).
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Values.
    pub values: Values,
}

/// One line of the report.
#[derive(Serialize, Clone)]
pub struct Row {
    tensor: String,
    shape: Vec<usize>,
    scheme: String,
    elements: u64,
    bits_per_element: f64,
    rel_error: f64,
    sqnr_db: f64,
    max_abs_error: f64,
    saturated_share: f64,
    flushed_share: f64,
    nan: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip)]
    stats: ErrorStats,
    #[serde(skip)]
    bits_total: f64,
    #[serde(skip)]
    saturated: u64,
    #[serde(skip)]
    flushed: u64,
}

/// The built-in tensors: deterministic stand-ins for LLM weights and activations.
pub fn builtin() -> Vec<Tensor> {
    let g = |n, seed| super::normal_samples(n, seed);
    let weight: Vec<f32> = g(1024 * 1024, 1).iter().map(|v| v * 0.02).collect();
    // heavy-tailed activations (normal / sqrt(chi2_4 / 4)) with four outlier channels
    let (z, c) = (g(512 * 1024, 2), g(512 * 1024 * 4, 3));
    let act: Vec<f32> = (0..512 * 1024)
        .map(|i| {
            let chi: f32 = c[4 * i..4 * i + 4].iter().map(|v| v * v).sum::<f32>() / 4.0;
            let v = z[i] / chi.max(1e-3).sqrt();
            if matches!(i % 1024, 7 | 300 | 511 | 900) {
                v * 40.0
            } else {
                v
            }
        })
        .collect();
    let near: Vec<f32> = g(256 * 1024, 4).iter().map(|v| 1.0 + v * 1e-4).collect();
    let tiny: Vec<f32> = g(256 * 1024, 5).iter().map(|v| v * 2e-6).collect();
    vec![
        Tensor {
            name: "gaussian_weight".into(),
            shape: vec![1024, 1024],
            values: Values::F32(weight),
        },
        Tensor {
            name: "heavy_tailed_activation".into(),
            shape: vec![512, 1024],
            values: Values::F32(act),
        },
        Tensor {
            name: "near_constant".into(),
            shape: vec![256, 1024],
            values: Values::F32(near),
        },
        Tensor {
            name: "subnormal_range".into(),
            shape: vec![256, 1024],
            values: Values::F32(tiny),
        },
    ]
}

fn load(files: &[PathBuf]) -> Result<Vec<Tensor>> {
    let mut out = Vec::new();
    for p in files {
        if is_safetensors(p) {
            let f = st::open(p)?;
            for t in f.iter() {
                if !t.is_float() || t.is_empty() {
                    continue;
                }
                let values = if t.dtype == st::Dtype::F64 {
                    Values::F64(t.to_f64_vec()?)
                } else {
                    Values::F32(t.to_f32_vec()?)
                };
                out.push(Tensor {
                    name: t.name.to_string(),
                    shape: t.shape.to_vec(),
                    values,
                });
            }
        } else {
            let a = read_npy(p)?;
            let name = p
                .file_stem()
                .map_or("array".into(), |s| s.to_string_lossy().into_owned());
            let values = match a.data {
                Data::F32(x) => Values::F32(x),
                Data::F64(x) => Values::F64(x),
                Data::F16(h) => Values::F32(widen16(&h, false)),
                Data::BF16(h) => Values::F32(widen16(&h, true)),
                d => bail!(
                    "{}: report takes floating arrays, not {}",
                    p.display(),
                    d.dtype_name()
                ),
            };
            out.push(Tensor {
                name,
                shape: a.shape,
                values,
            });
        }
    }
    if out.is_empty() {
        bail!("no floating tensors in {files:?}");
    }
    Ok(out)
}

/// Blocks pad partial rows in the report (every tensor gets a number).
fn padded(s: Scheme) -> Scheme {
    match s {
        Scheme::Mx(mut o) => {
            o.pad = true;
            Scheme::Mx(o)
        }
        Scheme::Nvfp4(mut o) => {
            o.pad = true;
            Scheme::Nvfp4(o)
        }
        s => s,
    }
}

fn one<I: Float>(t: &Tensor, x: &[I], scheme: &Scheme, label: &str) -> Row {
    let row_len = t.shape.last().copied().unwrap_or(1).max(1);
    let n = x.len() as u64;
    let mut row = Row {
        tensor: t.name.clone(),
        shape: t.shape.clone(),
        scheme: label.to_string(),
        elements: n,
        bits_per_element: scheme.bits_per_element(x.len(), row_len),
        rel_error: f64::NAN,
        sqnr_db: f64::NAN,
        max_abs_error: f64::NAN,
        saturated_share: 0.0,
        flushed_share: 0.0,
        nan: 0,
        error: None,
        stats: ErrorStats::default(),
        bits_total: 0.0,
        saturated: 0,
        flushed: 0,
    };
    row.bits_total = row.bits_per_element * n as f64;
    match scheme.apply(x, row_len) {
        Ok(q) => {
            let e = ErrorStats::of(&q.values, x);
            row.rel_error = e.rel_error();
            row.sqnr_db = e.sqnr_db();
            row.max_abs_error = e.max_abs;
            row.saturated = q.saturated;
            row.flushed = q.flushed;
            row.saturated_share = q.saturated as f64 / n.max(1) as f64;
            row.flushed_share = q.flushed as f64 / n.max(1) as f64;
            row.nan = q.nan;
            row.stats = e;
        }
        Err(e) => row.error = Some(e.to_string()),
    }
    row
}

fn fmt_pct(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{:.3}%", 100.0 * v)
    }
}

/// Run `lowprec report`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let names: Vec<String> = if a.schemes.is_empty() {
        DEFAULT_SCHEMES.iter().map(|s| s.to_string()).collect()
    } else {
        a.schemes.clone()
    };
    let schemes: Vec<(String, Scheme)> = names
        .iter()
        .map(|s| Ok((s.clone(), padded(Scheme::parse(s)?))))
        .collect::<Result<_>>()?;
    let t0 = Instant::now();
    let tensors = if a.files.is_empty() {
        builtin()
    } else {
        load(&a.files).context("reading the inputs")?
    };
    let jobs: Vec<(usize, usize)> = (0..tensors.len())
        .flat_map(|t| (0..schemes.len()).map(move |s| (t, s)))
        .collect();
    let bar = ProgressBar::with_draw_target(Some(jobs.len() as u64), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let shown = Mutex::new(false);
    let rows: Vec<Row> = jobs
        .par_iter()
        .map(|&(ti, si)| {
            let t = &tensors[ti];
            let (label, s) = &schemes[si];
            let r = match &t.values {
                Values::F32(x) => one(t, x, s, label),
                Values::F64(x) => one(t, x, s, label),
            };
            if t0.elapsed() > Duration::from_secs(1) {
                let mut on = shown.lock().unwrap_or_else(|p| p.into_inner());
                if !*on {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                    *on = true;
                }
            }
            bar.set_message(format!("{} {}", t.name, label));
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    // totals per scheme, over every tensor
    let totals: Vec<Row> = schemes
        .iter()
        .map(|(label, _)| {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| &r.scheme == label && r.error.is_none())
                .collect();
            let e = rs
                .iter()
                .fold(ErrorStats::default(), |a, r| a.merge(&r.stats));
            let n: u64 = rs.iter().map(|r| r.elements).sum();
            let sat: u64 = rs.iter().map(|r| r.saturated).sum();
            let fl: u64 = rs.iter().map(|r| r.flushed).sum();
            Row {
                tensor: "(all)".into(),
                shape: vec![],
                scheme: label.clone(),
                elements: n,
                bits_per_element: rs.iter().map(|r| r.bits_total).sum::<f64>() / n.max(1) as f64,
                rel_error: e.rel_error(),
                sqnr_db: e.sqnr_db(),
                max_abs_error: e.max_abs,
                saturated_share: sat as f64 / n.max(1) as f64,
                flushed_share: fl as f64 / n.max(1) as f64,
                nan: rs.iter().map(|r| r.nan).sum(),
                error: None,
                stats: e,
                bits_total: 0.0,
                saturated: sat,
                flushed: fl,
            }
        })
        .collect();
    if a.json {
        let v = serde_json::json!({"tensors": if a.summary { vec![] } else { rows.clone() }, "totals": totals});
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "tensor",
        "shape",
        "scheme",
        "bits/el",
        "rel err",
        "SQNR dB",
        "max abs err",
        "saturated",
        "flushed",
    ];
    let render = |rs: &[Row]| {
        let mut t = Table::new(&header);
        for r in rs {
            let shape = r
                .shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x");
            match &r.error {
                Some(e) => t.row(vec![
                    r.tensor.clone(),
                    shape,
                    r.scheme.clone(),
                    format!("{:.3}", r.bits_per_element),
                    format!("n/a: {e}"),
                ]),
                None => t.row(vec![
                    r.tensor.clone(),
                    shape,
                    r.scheme.clone(),
                    format!("{:.3}", r.bits_per_element),
                    format!("{:.3e}", r.rel_error),
                    format!("{:.2}", r.sqnr_db),
                    format!("{:.3e}", r.max_abs_error),
                    fmt_pct(r.saturated_share),
                    fmt_pct(r.flushed_share),
                ]),
            }
        }
        t.render()
    };
    if !a.summary {
        print!("{}", render(&rows));
        println!();
    }
    println!(
        "Totals over {} tensors ({} elements):",
        tensors.len(),
        totals.first().map_or(0, |r| r.elements)
    );
    print!("{}", render(&totals));
    Ok(ExitCode::SUCCESS)
}
