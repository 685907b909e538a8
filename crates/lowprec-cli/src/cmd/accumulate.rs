//! `lowprec accumulate`: how wrong is a sum accumulated in a low-precision format?

use super::{check_output, read_npy, samples, Dist, RoundArgs};
use crate::table::{num, Table};
use anyhow::{bail, Context, Result};
use lowprec::accum::{accumulate, error_bound, exact_sum, AccumOptions, Method};
use lowprec::io::npy::{self, Array, Data};
use lowprec::{FloatFormat, Status};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `lowprec accumulate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec accumulate --acc bf16 --n 300 --dist ones --rows 1
  lowprec accumulate --acc bf16 --rounding sr --seed 3 --n 4096 --rows 256
  lowprec accumulate --input x.npy -o sums.npy --acc bf16 --method kahan

Without --input the rows are generated (--rows × --n values of --dist) and the table compares
sequential, pairwise and Kahan summation, and sequential summation promoted into --outer every
--chunk terms (128 unless given), against the exact sums. With --input each row of a 1-D or 2-D
float32/float64 array is summed by --method (sequential unless given) with --chunk (none unless
given), and -o writes the row sums as float64.")]
pub struct Args {
    /// The accumulator format (any format name, e.g. bf16, fp16, fp8-e4m3, tf32, e5m10).
    #[arg(long, default_value = "bf16")]
    pub acc: FloatFormat,
    #[command(flatten)]
    pub round: RoundArgs,
    /// sequential, pairwise or kahan (default: all three in the table; sequential for --input).
    #[arg(long)]
    pub method: Option<Method>,
    /// Promote the partial sum into the --outer accumulator every N terms.
    #[arg(long)]
    pub chunk: Option<usize>,
    /// The promotion accumulator (rounded to nearest even).
    #[arg(long, default_value = "fp32")]
    pub outer: FloatFormat,
    /// Terms per row (generated data).
    #[arg(long, default_value_t = 4096)]
    pub n: usize,
    /// Distribution of the generated terms.
    #[arg(long, value_enum, default_value = "normal")]
    pub dist: Dist,
    /// Rows (generated data).
    #[arg(long, default_value_t = 64)]
    pub rows: usize,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 1)]
    pub data_seed: u64,
    /// A float32 or float64 .npy array, 1-D (one row) or 2-D (rows × terms), to sum by rows.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Write the row sums (float64, one per row) to this .npy file (needs --input).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print JSON records instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One line of the error table.
#[derive(Serialize, Debug, Clone)]
pub struct Line {
    /// Accumulator format.
    pub acc: String,
    /// Rounding mode.
    pub rounding: String,
    /// Method.
    pub method: String,
    /// Promotion every this many terms (0: none).
    pub chunk: usize,
    /// Promotion format.
    pub outer: String,
    /// Rows summed.
    pub rows: usize,
    /// Terms per row.
    pub n: usize,
    /// The first row's sum.
    pub sum0: f64,
    /// The first row's exact sum (rounded once to binary64).
    pub exact0: f64,
    /// Mean of |ŝ − s|/|s| over rows with s ≠ 0 and a finite ŝ (the error columns leave out
    /// the rows counted in `nonfinite_rows`).
    pub mean_rel_error: f64,
    /// Largest |ŝ − s|/|s|.
    pub max_rel_error: f64,
    /// Largest |ŝ − s| / Σ|x|: what the classical bound limits.
    pub max_normalized_error: f64,
    /// Largest |ŝ − s| in units in the last place of the accumulator at s.
    pub max_ulp_error: f64,
    /// The classical bound of the method (γ_n for sequential, …).
    pub bound: f64,
    /// Counts of the additions.
    pub inexact: u64,
    /// Additions that overflowed.
    pub overflow: u64,
    /// Inexact additions below the smallest normal.
    pub underflow: u64,
    /// Rows whose sum is NaN or infinite.
    pub nonfinite_rows: u64,
    /// Rounded additions per second (wall clock).
    pub adds_per_s: f64,
}

/// Sum `x` by rows with `opts` and compare with the exact sums.
pub fn line(x: &[f64], n: usize, opts: &AccumOptions) -> Result<(Line, Vec<f64>)> {
    let t0 = Instant::now();
    let (sums, st): (Vec<f64>, Status) = accumulate(x, n, opts)?;
    let secs = t0.elapsed().as_secs_f64();
    let rows = sums.len();
    let (mut sum_rel, mut cnt, mut max_rel, mut max_norm) = (0.0, 0u64, 0f64, 0f64);
    let mut exact0 = 0.0;
    let mut exact = Vec::with_capacity(rows);
    for (r, &s) in sums.iter().enumerate() {
        let row = &x[r * n..(r + 1) * n];
        let e = exact_sum(row);
        exact.push(e);
        if r == 0 {
            exact0 = e;
        }
        let abs: f64 = exact_sum(&row.iter().map(|v| v.abs()).collect::<Vec<_>>());
        let d = (s - e).abs();
        if !s.is_finite() {
            // counted in `nonfinite_rows`; the error columns describe the finite sums
            continue;
        }
        if e != 0.0 {
            let rel = d / e.abs();
            sum_rel += rel;
            cnt += 1;
            max_rel = max_rel.max(rel);
        }
        if abs > 0.0 {
            max_norm = max_norm.max(d / abs);
        }
    }
    let finite: Vec<(f64, f64)> = sums
        .iter()
        .zip(&exact)
        .filter(|(s, _)| s.is_finite())
        .map(|(s, e)| (*s, *e))
        .collect();
    let (fs, fe): (Vec<f64>, Vec<f64>) = finite.into_iter().unzip();
    if fs.is_empty() && rows > 0 {
        // no finite sum: no error to describe
        (max_rel, max_norm) = (f64::NAN, f64::NAN);
        cnt = 0;
        sum_rel = f64::NAN;
    }
    let l = Line {
        acc: opts.acc.name().into_owned(),
        rounding: opts.rounding.mode.short_name().into(),
        method: opts.method.name().into(),
        chunk: opts.chunk,
        outer: opts.outer.name().into_owned(),
        rows,
        n,
        sum0: sums.first().copied().unwrap_or(0.0),
        exact0,
        mean_rel_error: if cnt > 0 {
            sum_rel / cnt as f64
        } else if sum_rel.is_nan() {
            f64::NAN
        } else {
            0.0
        },
        max_rel_error: max_rel,
        max_normalized_error: max_norm,
        max_ulp_error: if fs.is_empty() && rows > 0 {
            f64::NAN
        } else {
            lowprec::metrics::max_ulp_error(&fs, &fe, &opts.acc)
        },
        bound: error_bound(opts, n as u64),
        inexact: st.inexact,
        overflow: st.overflow,
        underflow: st.underflow,
        nonfinite_rows: st.nan + st.infinite,
        adds_per_s: (rows * n) as f64 / secs.max(1e-9),
    };
    Ok((l, sums))
}

/// The table of some lines.
pub fn render(lines: &[Line]) -> String {
    let mut t = Table::new(&[
        "method",
        "promotion",
        "row 0 sum",
        "row 0 exact",
        "mean rel err",
        "max rel err",
        "max err/Σ|x|",
        "bound",
        "max ulp err",
        "inexact adds",
        "overflow",
        "non-finite rows",
    ]);
    let e = |v: f64| {
        if v == 0.0 || !v.is_finite() {
            format!("{v}")
        } else {
            format!("{v:.3e}")
        }
    };
    for l in lines {
        t.row(vec![
            l.method.clone(),
            if l.chunk > 0 {
                format!("{} every {}", l.outer, l.chunk)
            } else {
                "none".into()
            },
            num(l.sum0),
            num(l.exact0),
            e(l.mean_rel_error),
            e(l.max_rel_error),
            e(l.max_normalized_error),
            e(l.bound),
            format!("{:.1}", l.max_ulp_error),
            l.inexact.to_string(),
            l.overflow.to_string(),
            l.nonfinite_rows.to_string(),
        ]);
    }
    t.render()
}

/// Run `lowprec accumulate`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let (acc, outer, method) = (a.acc, a.outer, a.method);
    let rounding = a.round.options();
    let base = AccumOptions::new(acc).rounding(rounding).outer(outer);
    // Validate the formats up front, with the format named.
    lowprec::accum::Adder::new(&acc, &rounding).context("the accumulator (--acc)")?;
    lowprec::accum::Adder::new(&outer, &lowprec::RoundOptions::default())
        .context("the promotion accumulator (--outer)")?;

    let (x, n, what) = match &a.input {
        Some(path) => {
            if let Some(o) = &a.output {
                check_output(path, o)?;
            }
            let arr = read_npy(path)?;
            let x: Vec<f64> = match &arr.data {
                Data::F64(v) => v.clone(),
                Data::F32(v) => v.iter().map(|&f| f as f64).collect(),
                d => bail!(
                    "{}: accumulate sums float32 or float64 arrays, not {}",
                    path.display(),
                    d.dtype_name()
                ),
            };
            let n = match arr.shape.as_slice() {
                [n] => *n,
                [_, n] => *n,
                s => bail!(
                    "{}: accumulate sums the rows of a 1-D or 2-D array, not shape {s:?}; reshape it first",
                    path.display()
                ),
            };
            (x, n, format!("{}", path.display()))
        }
        None => {
            if a.output.is_some() {
                bail!("-o writes the row sums of --input; give --input X.npy");
            }
            if a.n == 0 || a.rows == 0 {
                bail!("--n and --rows must be at least 1");
            }
            // the samples, their exact sums and one working copy, binary64
            super::check_memory(
                &format!("--n {} × --rows {}", a.n, a.rows),
                a.n as u128 * a.rows as u128,
                24,
            )?;
            let x = samples(a.dist, a.rows * a.n, a.data_seed);
            let rows = if a.rows == 1 {
                "1 row".to_string()
            } else {
                format!("{} rows", a.rows)
            };
            (x, a.n, format!("{rows} × {} {} values", a.n, a.dist.name()))
        }
    };

    let mut lines = Vec::new();
    if a.input.is_some() {
        let o = base
            .method(method.unwrap_or_default())
            .chunk(a.chunk.unwrap_or(0));
        let (l, sums) = line(&x, n, &o)?;
        if let Some(out) = &a.output {
            npy::write(
                out,
                &Array {
                    shape: vec![sums.len()],
                    data: Data::F64(sums),
                },
            )
            .with_context(|| format!("writing {}", out.display()))?;
        }
        lines.push(l);
    } else {
        let methods = match method {
            Some(m) => vec![m],
            None => vec![Method::Sequential, Method::Pairwise, Method::Kahan],
        };
        for &m in &methods {
            lines.push(line(&x, n, &base.method(m).chunk(0))?.0);
        }
        let chunk = a.chunk.unwrap_or(if method.is_none() { 128 } else { 0 });
        if chunk > 0 {
            lines.push(line(&x, n, &base.method(methods[0]).chunk(chunk))?.0);
        }
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&lines)?)?;
    } else {
        outln!(
            "{what}, accumulated in {} ({}, {}); errors against the exact sums",
            acc,
            rounding.mode.short_name(),
            rounding.overflow.short_name()
        )?;
        out!("{}", render(&lines))?;
        if let Some(o) = &a.output {
            outln!("row sums (float64) written to {}", o.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
