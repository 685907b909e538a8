//! `lowprec report`: what each scheme does to each tensor — bits per element, relative error,
//! SQNR, max abs error, saturated and flushed shares — for `.npy` / `.npz` / `.safetensors` / `.gguf`
//! files or a built-in set of tensors that look like LLM weights and activations; with
//! `--reference`, the error of whole files (a GGUF's Q4_K_M tensors) against a reference.

use super::{report_groups, report_plot};
use crate::table::Table;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lowprec::io::checkpoint::{self, Checkpoint};
use lowprec::layer_group::{self, GroupTotal, LayerGroups};
use lowprec::report::{self, Method, Row, Tensor, Values};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub use lowprec::report::DEFAULT_SCHEMES;

/// Arguments of `lowprec report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec report model.safetensors -s mxfp4 -s nvfp4 -s int4:group=128 --plot report.svg
  lowprec report model.gguf -s gguf:Q4_0 -s nvfp4 --summary --group 'first=blk.0.*'
  lowprec report --reference model-f16.gguf model-q4_0.gguf -s gguf:Q8_0")]
pub struct Args {
    /// `.npy`, `.npz`, `.safetensors` or `.gguf` files, or sharded safetensors checkpoints (a folder,
    /// or its `model.safetensors.index.json`): every floating tensor (FP8 and GGUF types
    /// decoded), read one at a time; none: the built-in tensors. With --reference: the files
    /// compared.
    pub files: Vec<PathBuf>,
    /// Schemes (repeatable; default: fp16, bf16, fp8-e4m3, fp8-e5m2, mxfp8, mxfp6, mxfp4,
    /// nvfp4, int8, int4:group=128), or `gguf:TYPE` for a ggml type through llama.cpp's
    /// reference quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4, BF16, F16).
    /// Block schemes zero-pad rows that the block size does not divide.
    #[arg(long = "scheme", short = 's')]
    pub schemes: Vec<super::NamedMethod>,
    /// A reference file (`.safetensors`, `.gguf`, `.npy`, `.npz`): each of the FILES is reported
    /// against it tensor by tensor (same names), as one row labelled by the file name, beside
    /// the schemes given with -s applied to the reference (none by default).
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Only the tensors whose names match one of these glob patterns (repeatable; `*` any
    /// run of characters, `?` one), e.g. `--include '*.weight'`.
    #[arg(long)]
    pub include: Vec<String>,
    /// Leave out the tensors whose names match one of these glob patterns (repeatable).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Print CSV (the --json fields, one line per tensor and scheme, then the totals; with
    /// --summary the totals, then one line per layer group and scheme whose `tensor` is
    /// `(group:NAME)`) instead of tables.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Print JSON (one record per tensor and scheme, plus the totals; with --summary no
    /// tensor records, and `groups`: the totals per layer group and scheme, with `group` and
    /// `tensors` fields) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Only the totals, not every tensor: per scheme, then per layer group and scheme (the
    /// groups of --group, then embeddings, attention, mlp, norms and other, from the
    /// tensors' names; groups without a tensor left out; when every tensor is in one group,
    /// a line says which).
    #[arg(long)]
    pub summary: bool,
    /// A layer group of your own for --summary: `NAME=GLOB[,GLOB…]` (repeatable; globs on
    /// tensor names as --include, case-sensitive), tried in order before the default groups
    /// (`lowprec::layer_group::DEFAULT_GROUPS`: case-insensitive name patterns), e.g.
    /// `--group 'first=*.layers.0.*'`.
    #[arg(long = "group", value_name = "NAME=GLOB[,GLOB…]")]
    pub groups: Vec<String>,
    /// Also write an SVG chart: (a) the SQNR of every tensor in checkpoint order, one line
    /// per scheme (a row with an error or an infinite SQNR leaves a gap); (b) over all
    /// tensors, the cumulative share of elements whose |q − x| is at most x (log axis, from
    /// the totals' histograms, 8 bins per binade; exact elements included), one line per
    /// scheme. Written atomically, beside the tables, --json or --csv.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
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

/// The reference tensor `t` against the tensor of the same name in `ck` (one row labelled
/// `label`; an error row when `ck` lacks it, has no values for it or another shape), with
/// the bits per element that file stores it in.
fn compare_one(t: &Tensor, label: &str, ck: &Checkpoint) -> Result<Row> {
    let Some(r) = ck.tensors().iter().find(|r| r.name == t.name) else {
        return Ok(error_row(t, label, f64::NAN, "not in this file".into()));
    };
    let bits = 8.0 * r.bytes as f64 / r.shape.iter().product::<usize>().max(1) as f64;
    if r.shape != t.shape {
        return Ok(error_row(
            t,
            label,
            bits,
            format!("shape {:?} here, {:?} in the reference", r.shape, t.shape),
        ));
    }
    let Some(o) = ck
        .load(r)
        .with_context(|| format!("reading {}", ck.shard_of(r).display()))?
    else {
        return Ok(error_row(
            t,
            label,
            bits,
            format!("{} holds no float values", r.dtype),
        ));
    };
    let y: Vec<f32> = match o.values {
        Values::F32(v) => v,
        Values::F64(v) => v.iter().map(|&x| x as f32).collect(),
    };
    Ok(report::compare_row(t, &y, label, bits)?)
}

/// A row that says why a tensor has no figures.
fn error_row(r: &Tensor, label: &str, bits: f64, why: String) -> Row {
    let mut row =
        report::compare_row(r, &vec![0.0; r.values.len()], label, bits).expect("the same length");
    row.error = Some(why);
    row
}

/// A shape as printed: `8x64` (empty for a scalar or the totals).
fn shape_text(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// The rows as CSV (RFC 4180 quoting): the `--json` fields, tensors then totals.
fn csv(rows: &[Row], totals: &[Row]) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from(
        "tensor,shape,scheme,elements,bits_per_element,rel_error,sqnr_db,cosine,rmse,nmse,max_abs_error,p50_abs_error,p99_abs_error,p999_abs_error,saturated_share,flushed_share,nan,error\n",
    );
    for r in rows.iter().chain(totals) {
        let shape = shape_text(&r.shape);
        let nums = r.figures().map(|v| format!("{v:?}"));
        out.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            quote(&r.tensor),
            shape,
            quote(&r.scheme),
            r.elements,
            nums.join(","),
            r.nan,
            quote(r.error.as_deref().unwrap_or(""))
        ));
    }
    out
}

pub(super) fn fmt_pct(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{:.3}%", 100.0 * v)
    }
}

/// A figure as printed: `n/a` where it is NaN (nothing was compared: every reference NaN
/// or ±Inf), else `text`.
pub(super) fn na(text: String, v: f64) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else {
        text
    }
}

/// Run `lowprec report`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let (groups, plot) = outputs_checked(a)?;
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
    // the inputs, opened (headers validated, nothing read yet): the checkpoints reported,
    // and with --reference the files compared with it
    let open = |p: &PathBuf| -> Result<Checkpoint> {
        let mut ck = checkpoint::open(p).with_context(|| format!("reading {}", p.display()))?;
        ck.retain(&a.include, &a.exclude);
        Ok(ck)
    };
    let (sources, compared): (Vec<Checkpoint>, Vec<(String, Checkpoint)>) = match &a.reference {
        Some(r) => {
            if a.files.is_empty() {
                bail!("--reference needs the files to compare with it (lowprec report --reference REF FILE…)");
            }
            let others = a
                .files
                .iter()
                .map(|p| {
                    let label = p.file_name().map_or_else(
                        || p.display().to_string(),
                        |s| s.to_string_lossy().into_owned(),
                    );
                    Ok((label, open(p)?))
                })
                .collect::<Result<Vec<_>>>()?;
            (vec![open(r)?], others)
        }
        None => (
            a.files.iter().map(open).collect::<Result<Vec<_>>>()?,
            vec![],
        ),
    };
    // progress in stored bytes (rate and ETA from them), shown on a terminal after a second
    let (n_tensors, n_bytes) = if a.files.is_empty() {
        (report::builtin().len(), 0)
    } else {
        sources
            .iter()
            .flat_map(|c| c.tensors().iter().filter(|t| t.is_float))
            .fold((0, 0u64), |(n, b), t| (n + 1, b + t.bytes))
    };
    let bar = ProgressBar::with_draw_target(Some(n_bytes), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows: Vec<Row> = Vec::new();
    let mut seen = 0usize;
    // one tensor at a time: its comparisons, then its schemes (in parallel); then dropped
    let mut process = |t: Tensor, stored: u64| -> Result<()> {
        if t0.elapsed() > Duration::from_secs(1) && bar.is_hidden() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_message(format!("tensor {}/{n_tensors} {}", seen + 1, t.name));
        for (label, ck) in &compared {
            rows.push(compare_one(&t, label, ck)?);
        }
        rows.extend(report::method_rows(
            std::slice::from_ref(&t),
            &schemes,
            a.basis.into(),
            |_, _| {},
        ));
        seen += 1;
        bar.inc(stored);
        Ok(())
    };
    if a.files.is_empty() {
        for t in report::builtin() {
            process(t, 0)?;
        }
    } else {
        for ck in &sources {
            report::each_tensor(ck, |r, t| process(t, r.bytes))?;
        }
    }
    bar.finish_and_clear();
    if seen == 0 {
        bail!(
            "no floating tensors in {:?}{}",
            a.reference.iter().chain(&a.files).collect::<Vec<_>>(),
            if a.include.is_empty() && a.exclude.is_empty() {
                ""
            } else {
                " that --include / --exclude keep"
            }
        );
    }
    let labels: Vec<(String, ())> = compared
        .iter()
        .map(|(l, _)| (l.clone(), ()))
        .chain(schemes.iter().map(|(l, _)| (l.clone(), ())))
        .collect();
    let tensors_len = seen;
    let totals = report::totals(&rows, &labels);
    let group_totals = if a.summary {
        layer_group::group_totals(&rows, &labels, &groups)
    } else {
        vec![]
    };
    if let Some(p) = plot {
        let names: Vec<String> = labels.iter().map(|(l, _)| l.clone()).collect();
        report_plot::write(p, &rows, &names, &totals)?;
    }
    print_outputs(a, &rows, &totals, &group_totals, tensors_len)?;
    if let Some(p) = plot {
        super::flush_stdout()?;
        errln!("plot written to {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Check the options of the outputs before any tensor is read: `--group`'s specs and
/// `--plot`'s path.
fn outputs_checked(a: &Args) -> Result<(LayerGroups, Option<&PathBuf>)> {
    let groups = report_groups::parse(&a.groups)?;
    if let Some(p) = &a.plot {
        let inputs: Vec<&std::path::Path> = a
            .reference
            .iter()
            .chain(&a.files)
            .map(PathBuf::as_path)
            .collect();
        report_plot::check_target(p, &inputs)?;
    }
    Ok((groups, a.plot.as_ref()))
}

/// Print the report: tables, `--json` or `--csv` (with `--summary` the totals and the
/// layer groups only).
fn print_outputs(
    a: &Args,
    rows: &[Row],
    totals: &[Row],
    group_totals: &[GroupTotal],
    tensors_len: usize,
) -> Result<()> {
    if a.json {
        let mut v = serde_json::json!({"tensors": if a.summary { vec![] } else { json(rows) }, "totals": json(totals)});
        if a.summary {
            v["groups"] = serde_json::to_value(report_groups::json(group_totals, JsonRow::from))?;
        }
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if a.csv {
        let tail: Vec<Row> = totals
            .iter()
            .chain(report_groups::rows(group_totals))
            .cloned()
            .collect();
        out!("{}", csv(if a.summary { &[] } else { rows }, &tail))?;
        return Ok(());
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
            let shape = shape_text(&r.shape);
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
        out!("{}", render(rows))?;
        outln!()?;
    }
    outln!(
        "Totals over {} tensors ({} elements):",
        tensors_len,
        totals.first().map_or(0, |r| r.elements)
    )?;
    out!("{}", render(totals))?;
    if a.summary {
        outln!()?;
        out!("{}", report_groups::text(group_totals, a.wide))?;
    }
    Ok(())
}
