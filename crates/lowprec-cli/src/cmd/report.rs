//! `lowprec report`: what each scheme does to each tensor — bits per element, relative error,
//! SQNR, max abs error, saturated and flushed shares — for `.npy` / `.safetensors` / `.gguf`
//! files or a built-in set of tensors that look like LLM weights and activations; with
//! `--reference`, the error of whole files (a GGUF's Q4_K_M tensors) against a reference.

use super::quantize::is_safetensors;
use crate::table::Table;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lowprec::report::{self, Method, Row, Tensor, Values};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use lowprec::report::DEFAULT_SCHEMES;

/// Arguments of `lowprec report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec report model.safetensors -s mxfp4 -s nvfp4 -s int4:group=128
  lowprec report model.gguf -s gguf:Q4_0 -s mxfp4 -s nvfp4:convention=te
  lowprec report --reference model-f16.gguf model-q4_0.gguf -s gguf:Q8_0")]
pub struct Args {
    /// `.npy`, `.safetensors` or `.gguf` files (every floating tensor; GGUF tensors
    /// dequantized); none: the built-in tensors. With --reference: the files compared.
    pub files: Vec<PathBuf>,
    /// Schemes (repeatable; default: fp16, bf16, fp8-e4m3, fp8-e5m2, mxfp8, mxfp6, mxfp4,
    /// nvfp4, int8, int4:group=128), or `gguf:TYPE` for a ggml type through llama.cpp's
    /// reference quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4, BF16, F16).
    /// Block schemes zero-pad rows that the block size does not divide.
    #[arg(long = "scheme", short = 's')]
    pub schemes: Vec<super::NamedMethod>,
    /// A reference file (`.safetensors`, `.gguf`, `.npy`): each of the FILES is reported
    /// against it tensor by tensor (same names), as one row labelled by the file name, beside
    /// the schemes given with -s applied to the reference (none by default).
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Print JSON (one record per tensor and scheme, plus the totals) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Only the per-scheme totals, not every tensor.
    #[arg(long)]
    pub summary: bool,
    /// Also the cosine similarity, RMSE, NMSE and the p50 / p99 / p99.9 of the absolute
    /// error (always in --json).
    #[arg(long)]
    pub wide: bool,
    /// Where rotated schemes (`rht16+…`) measure their errors: `model` (after rotating back:
    /// the error the model sees) or `rotated` (the quantized rotated values against the
    /// rotated input, in binary64).
    #[arg(long, value_enum, default_value_t = BasisArg::Model)]
    pub basis: BasisArg,
}

/// The values of `--basis`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BasisArg {
    /// After rotating back.
    Model,
    /// In the rotated basis.
    Rotated,
}

impl From<BasisArg> for report::Basis {
    fn from(b: BasisArg) -> Self {
        match b {
            BasisArg::Model => report::Basis::Model,
            BasisArg::Rotated => report::Basis::Rotated,
        }
    }
}

/// One line of the report as `--json` writes it (the core's [`report::Row`] without its
/// merge bookkeeping; `error` only where there is one).
#[derive(Serialize)]
struct JsonRow<'a> {
    tensor: &'a str,
    shape: &'a [usize],
    scheme: &'a str,
    elements: u64,
    bits_per_element: f64,
    rel_error: f64,
    sqnr_db: f64,
    cosine: f64,
    rmse: f64,
    nmse: f64,
    max_abs_error: f64,
    p50_abs_error: f64,
    p99_abs_error: f64,
    p999_abs_error: f64,
    saturated_share: f64,
    flushed_share: f64,
    nan: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

impl<'a> From<&'a Row> for JsonRow<'a> {
    fn from(r: &'a Row) -> Self {
        JsonRow {
            tensor: &r.tensor,
            shape: &r.shape,
            scheme: &r.scheme,
            elements: r.elements,
            bits_per_element: r.bits_per_element,
            rel_error: r.rel_error,
            sqnr_db: r.sqnr_db,
            cosine: r.cosine,
            rmse: r.rmse,
            nmse: r.nmse,
            max_abs_error: r.max_abs_error,
            p50_abs_error: r.p50,
            p99_abs_error: r.p99,
            p999_abs_error: r.p999,
            saturated_share: r.saturated_share,
            flushed_share: r.flushed_share,
            nan: r.nan,
            error: r.error.as_deref(),
        }
    }
}

fn json(rs: &[Row]) -> Vec<JsonRow<'_>> {
    rs.iter().map(JsonRow::from).collect()
}

/// Each file's tensors against the reference's, one row per reference tensor (an error row
/// where the file lacks the tensor or its shape differs), labelled by the file name.
fn compare(reference: &[Tensor], files: &[PathBuf]) -> Result<Vec<(String, Vec<Row>)>> {
    let mut out = Vec::new();
    for p in files {
        let label = p.file_name().map_or_else(
            || p.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        let bits = stored_bits(p)?;
        let ts = load(std::slice::from_ref(p))?;
        let rows = reference
            .iter()
            .map(|r| {
                let b = bits(&r.name);
                match ts.iter().find(|t| t.name == r.name) {
                    None => Ok(error_row(r, &label, b, "not in this file".into())),
                    Some(t) if t.shape != r.shape => Ok(error_row(
                        r,
                        &label,
                        b,
                        format!("shape {:?} here, {:?} in the reference", t.shape, r.shape),
                    )),
                    Some(t) => {
                        let y: Vec<f32> = match &t.values {
                            Values::F32(v) => v.clone(),
                            Values::F64(v) => v.iter().map(|&x| x as f32).collect(),
                        };
                        Ok(report::compare_row(r, &y, &label, b)?)
                    }
                }
            })
            .collect::<Result<Vec<Row>>>()?;
        out.push((label, rows));
    }
    Ok(out)
}

/// A row that says why a tensor has no figures.
fn error_row(r: &Tensor, label: &str, bits: f64, why: String) -> Row {
    let mut row =
        report::compare_row(r, &vec![0.0; r.values.len()], label, bits).expect("the same length");
    row.error = Some(why);
    row
}

/// A tensor name's bits per element.
type BitsOf = Box<dyn Fn(&str) -> f64>;

/// Bits per element of each tensor as a file stores it: the ggml type's for GGUF, the
/// dtype's for safetensors and `.npy`.
fn stored_bits(p: &std::path::Path) -> Result<BitsOf> {
    match p.extension().and_then(|e| e.to_str()) {
        Some("gguf") => {
            let f = lowprec::io::gguf::open(p)?;
            let m: std::collections::HashMap<String, f64> = f
                .tensors()
                .iter()
                .map(|t| (t.name.clone(), t.ggml_type.bits_per_element()))
                .collect();
            Ok(Box::new(move |n| m.get(n).copied().unwrap_or(f64::NAN)))
        }
        Some("safetensors") => {
            let f = lowprec::io::safetensors::open(p)?;
            let m: std::collections::HashMap<String, f64> = f
                .iter()
                .map(|t| (t.name.to_string(), 8.0 * t.dtype.size() as f64))
                .collect();
            Ok(Box::new(move |n| m.get(n).copied().unwrap_or(f64::NAN)))
        }
        _ => {
            use lowprec::io::npy::Data;
            let a = lowprec::io::npy::read(p)?;
            let b = match a.data {
                Data::F16(_) | Data::BF16(_) | Data::U16(_) => 16.0,
                Data::F32(_) | Data::U32(_) => 32.0,
                Data::F64(_) | Data::U64(_) => 64.0,
                Data::U8(_) => 8.0,
            };
            Ok(Box::new(move |_| b))
        }
    }
}

fn load(files: &[PathBuf]) -> Result<Vec<Tensor>> {
    let mut out = Vec::new();
    for p in files {
        let ts = if is_safetensors(p) {
            report::load(p)?
        } else {
            report::load(p).with_context(|| format!("reading {}", p.display()))?
        };
        out.extend(ts);
    }
    if out.is_empty() {
        bail!("no floating tensors in {files:?}");
    }
    Ok(out)
}

fn fmt_pct(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{:.3}%", 100.0 * v)
    }
}

/// A figure as printed: `n/a` where it is NaN (nothing was compared: every reference NaN
/// or ±Inf), else `text`.
fn na(text: String, v: f64) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else {
        text
    }
}

/// Run `lowprec report`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let schemes: Vec<(String, Method)> = if a.schemes.is_empty() && a.reference.is_none() {
        report::schemes(&DEFAULT_SCHEMES)?
            .into_iter()
            .map(|(l, s)| (l, Method::Scheme(s)))
            .collect()
    } else {
        a.schemes
            .iter()
            .map(|s| (s.name.clone(), s.method))
            .collect()
    };
    let t0 = Instant::now();
    let (tensors, compared) = match &a.reference {
        Some(r) => {
            if a.files.is_empty() {
                bail!("--reference needs the files to compare with it (lowprec report --reference REF FILE…)");
            }
            let tensors = load(std::slice::from_ref(r)).context("reading the reference")?;
            let compared = compare(&tensors, &a.files)?;
            (tensors, compared)
        }
        None if a.files.is_empty() => (report::builtin(), vec![]),
        None => (load(&a.files).context("reading the inputs")?, vec![]),
    };
    let jobs = tensors.len() * schemes.len();
    let bar = ProgressBar::with_draw_target(Some(jobs as u64), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let shown = Mutex::new(false);
    let scheme_rows: Vec<Row> =
        report::method_rows(&tensors, &schemes, a.basis.into(), |t, label| {
            if t0.elapsed() > Duration::from_secs(1) {
                let mut on = shown.lock().unwrap_or_else(|p| p.into_inner());
                if !*on {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                    *on = true;
                }
            }
            bar.set_message(format!("{} {}", t.name, label));
            bar.inc(1);
        });
    bar.finish_and_clear();
    // tensor-major: each tensor's file comparisons, then its schemes
    let labels: Vec<(String, ())> = compared
        .iter()
        .map(|(l, _)| (l.clone(), ()))
        .chain(schemes.iter().map(|(l, _)| (l.clone(), ())))
        .collect();
    let mut rows = Vec::with_capacity(scheme_rows.len() + compared.len() * tensors.len());
    let mut it = scheme_rows.into_iter();
    for ti in 0..tensors.len() {
        for (_, rs) in &compared {
            rows.push(rs[ti].clone());
        }
        rows.extend(it.by_ref().take(schemes.len()));
    }
    // totals per scheme, over every tensor
    let totals = report::totals(&rows, &labels);
    if a.json {
        let v = serde_json::json!({"tensors": if a.summary { vec![] } else { json(&rows) }, "totals": json(&totals)});
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut header = vec![
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
    if a.wide {
        header.extend(["cosine", "RMSE", "NMSE", "p50 abs", "p99 abs", "p99.9 abs"]);
    }
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
                None => {
                    let mut cells = vec![
                        r.tensor.clone(),
                        shape,
                        r.scheme.clone(),
                        format!("{:.3}", r.bits_per_element),
                        na(format!("{:.3e}", r.rel_error), r.rel_error),
                        na(format!("{:.2}", r.sqnr_db), r.sqnr_db),
                        na(format!("{:.3e}", r.max_abs_error), r.max_abs_error),
                        fmt_pct(r.saturated_share),
                        fmt_pct(r.flushed_share),
                    ];
                    if a.wide {
                        cells.push(na(format!("{:.6}", r.cosine), r.cosine));
                        cells.extend(
                            [r.rmse, r.nmse, r.p50, r.p99, r.p999]
                                .map(|v| na(format!("{v:.3e}"), v)),
                        );
                    }
                    t.row(cells)
                }
            }
        }
        t.render()
    };
    if !a.summary {
        out!("{}", render(&rows))?;
        outln!()?;
    }
    outln!(
        "Totals over {} tensors ({} elements):",
        tensors.len(),
        totals.first().map_or(0, |r| r.elements)
    )?;
    out!("{}", render(&totals))?;
    Ok(ExitCode::SUCCESS)
}
