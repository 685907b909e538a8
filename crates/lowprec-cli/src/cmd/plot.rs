//! `lowprec plot`: the relative error of a sum as the number of terms grows, one curve per
//! accumulator and method, as an SVG chart.

use super::{samples, Dist};
use anyhow::{anyhow, bail, Context, Result};
use lowprec::accum::{accumulate, exact_sum, AccumOptions, Method};
use lowprec::FloatFormat;
use plotters::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec plot`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec plot -o accumulation.svg
  lowprec plot -o fp8.svg --acc fp8-e4m3,fp8-e5m2,bf16 --max-n 4096 --dist normal
  lowprec plot -o seq.svg --method sequential --rounding rtz

Each curve is the mean, over --rows rows, of |ŝ − s|/|s| for the first n terms of each row,
n = 4, 8, …, --max-n; sequential curves are solid, pairwise dashed, Kahan dotted. An exact sum
(error 0) has no point on the logarithmic axis.")]
pub struct Args {
    /// The SVG file to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Accumulator formats, comma separated.
    #[arg(long, default_value = "bf16,fp16,tf32,fp32", value_delimiter = ',')]
    pub acc: Vec<FloatFormat>,
    /// Methods, comma separated (sequential, pairwise, kahan).
    #[arg(long, default_value = "sequential,pairwise", value_delimiter = ',')]
    pub method: Vec<Method>,
    /// Rounding mode of the accumulators.
    #[arg(long, short = 'r', default_value = "rne")]
    pub rounding: lowprec::RoundingMode,
    /// The largest number of terms (a power of two is best).
    #[arg(long, default_value_t = 65536)]
    pub max_n: usize,
    /// Rows averaged per point.
    #[arg(long, default_value_t = 16)]
    pub rows: usize,
    /// Distribution of the terms.
    #[arg(long, value_enum, default_value = "uniform")]
    pub dist: Dist,
    /// Seed of the data.
    #[arg(long, default_value_t = 1)]
    pub data_seed: u64,
}

/// One curve: its label and its (n, mean relative error) points.
pub struct Curve {
    /// `bf16 sequential`, …
    pub label: String,
    /// The accumulator.
    pub acc: FloatFormat,
    /// The method.
    pub method: Method,
    /// Points with a nonzero error.
    pub points: Vec<(f64, f64)>,
}

/// The curves of `lowprec plot`.
pub fn curves(a: &Args) -> Result<Vec<Curve>> {
    let (accs, methods, mode) = (&a.acc, &a.method, a.rounding);
    if a.max_n < 4 || a.rows == 0 {
        bail!("--max-n must be at least 4 and --rows at least 1");
    }
    super::check_memory(
        &format!("--max-n {} × --rows {}", a.max_n, a.rows),
        a.max_n as u128 * a.rows as u128,
        24,
    )?;
    if a.max_n > 1 << 24 {
        bail!(
            "--max-n {} is more than 2^24 terms; give a smaller one",
            a.max_n
        );
    }
    let x = samples(a.dist, a.rows * a.max_n, a.data_seed);
    let mut ns = vec![];
    let mut n = 4;
    while n <= a.max_n {
        ns.push(n);
        n *= 2;
    }
    if ns.last() != Some(&a.max_n) {
        ns.push(a.max_n);
    }
    let mut out = vec![];
    for &acc in accs {
        for &m in methods {
            let opts = AccumOptions::new(acc)
                .method(m)
                .rounding(lowprec::RoundOptions::new(mode));
            let mut points = vec![];
            for &n in &ns {
                let sub: Vec<f64> = x
                    .chunks(a.max_n)
                    .flat_map(|r| r[..n].iter().copied())
                    .collect();
                let (sums, _) = accumulate(&sub, n, &opts)?;
                let mut tot = 0.0;
                for (r, s) in sums.iter().enumerate() {
                    let e = exact_sum(&sub[r * n..(r + 1) * n]);
                    tot += if e == 0.0 { 0.0 } else { ((s - e) / e).abs() };
                }
                let err = tot / sums.len() as f64;
                if err > 0.0 && err.is_finite() {
                    points.push((n as f64, err));
                }
            }
            out.push(Curve {
                label: format!("{acc} {m}"),
                acc,
                method: m,
                points,
            });
        }
    }
    Ok(out)
}

/// Draw the curves as an SVG document.
pub fn svg(a: &Args, curves: &[Curve]) -> Result<String> {
    let mut doc = String::new();
    {
        let root = SVGBackend::with_string(&mut doc, (900, 560)).into_drawing_area();
        let e = |err: DrawingAreaErrorKind<_>| anyhow!("drawing the chart: {err}");
        root.fill(&WHITE).map_err(e)?;
        let (lo, hi) = curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.1))
            .fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = if lo.is_finite() {
            (lo / 2.0, hi * 2.0)
        } else {
            (1e-8, 1.0)
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Relative error of a sum of n {} terms ({} rounding, mean of {} rows)",
                    a.dist.name(),
                    a.rounding,
                    a.rows
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (2f64..(a.max_n as f64 * 1.5)).log_scale(),
                (lo..hi).log_scale(),
            )
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("n (terms)")
            .y_desc("mean |ŝ − s| / |s|")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(e)?;
        let palette = [
            RGBColor(0x1f, 0x77, 0xb4),
            RGBColor(0xd6, 0x27, 0x28),
            RGBColor(0x2c, 0xa0, 0x2c),
            RGBColor(0x94, 0x67, 0xbd),
            RGBColor(0xff, 0x7f, 0x0e),
            RGBColor(0x8c, 0x56, 0x4b),
        ];
        let accs: Vec<FloatFormat> = {
            let mut v: Vec<FloatFormat> = vec![];
            for c in curves {
                if !v.contains(&c.acc) {
                    v.push(c.acc);
                }
            }
            v
        };
        for c in curves {
            let i = accs.iter().position(|f| *f == c.acc).unwrap_or(0);
            let color = palette[i % palette.len()];
            let style = color.stroke_width(2);
            match c.method {
                Method::Sequential => {
                    chart
                        .draw_series(LineSeries::new(c.points.iter().copied(), style))
                        .map_err(e)?
                        .label(c.label.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
                }
                Method::Pairwise | Method::Kahan => {
                    let (dash, gap) = if c.method == Method::Pairwise {
                        (8, 5)
                    } else {
                        (2, 4)
                    };
                    chart
                        .draw_series(DashedLineSeries::new(
                            c.points.iter().copied(),
                            dash,
                            gap,
                            style,
                        ))
                        .map_err(e)?
                        .label(c.label.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(1))
                        });
                }
            }
            chart
                .draw_series(c.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(e)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(doc)
}

/// Run `lowprec plot`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let cs = curves(a)?;
    let doc = svg(a, &cs)?;
    lowprec::io::write_atomic(&a.output, |w| w.write_all(doc.as_bytes()))
        .with_context(|| format!("writing {}", a.output.display()))?;
    for c in &cs {
        let last = c
            .points
            .last()
            .map_or("exact".into(), |p| format!("{:.3e} at n = {}", p.1, p.0));
        outln!("{:<24} {}", c.label, last)?;
    }
    outln!("chart written to {}", a.output.display())?;
    Ok(ExitCode::SUCCESS)
}
