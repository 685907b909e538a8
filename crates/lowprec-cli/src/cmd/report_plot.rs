//! `lowprec report --plot FILE.svg`: the report as a chart of two panels, (a) the SQNR of
//! every tensor in checkpoint order, one line per scheme, and (b) the distribution of
//! `|q − x|` over all tensors per scheme (from the totals' merged histograms), as the
//! cumulative share of elements.

use anyhow::{anyhow, bail, Context, Result};
use lowprec::report::Row;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Colours of the schemes, in order (then again).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// The chart's size in pixels: two panels one above the other, each a plot and, on its
/// right, the legend.
const SIZE: (u32, u32) = (1100, 980);

/// The width of the legends.
const LEGEND_WIDTH: u32 = 250;

/// Tensors up to which the x axis of panel (a) names them (else their index).
const NAMED_TENSORS: usize = 8;

/// Check `--plot`'s path before any tensor is read: a place for a regular file, in a
/// folder that exists, and none of the inputs.
pub fn check_target(plot: &Path, inputs: &[&Path]) -> Result<()> {
    for i in inputs {
        super::check_output(i, plot).with_context(|| format!("--plot {}", plot.display()))?;
    }
    lowprec::io::check_target(plot).with_context(|| format!("--plot {}", plot.display()))?;
    if let Some(dir) = plot.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            bail!(
                "--plot {}: the folder {} does not exist (create it first)",
                plot.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// One line of panel (a): the SQNR of the `k`-th row of `label` at `x = k`, in runs of
/// finite values (a row with an error, or a NaN or infinite SQNR, ends a run: a gap).
fn sqnr_runs(rows: &[Row], label: &str) -> Vec<Vec<(f64, f64)>> {
    let mut runs = vec![vec![]];
    for (k, r) in rows.iter().filter(|r| r.scheme == label).enumerate() {
        if r.error.is_none() && r.sqnr_db.is_finite() {
            runs.last_mut()
                .expect("one run")
                .push((k as f64, r.sqnr_db));
        } else if !runs.last().expect("one run").is_empty() {
            runs.push(vec![]);
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// One line of panel (b): the share of elements whose `|q − x|` is at most `x`, at the
/// edges of the histogram's bins (the exact elements counted from the first edge on).
fn error_cdf(total: &Row) -> Vec<(f64, f64)> {
    let h = &total.stats.hist;
    let n = h.count();
    if n == 0 {
        return vec![];
    }
    let mut seen = h.zeros;
    let mut out = vec![];
    for (lo, hi, c) in h.bins() {
        if out.is_empty() {
            out.push((lo, seen as f64 / n as f64));
        }
        seen += c;
        out.push((hi, seen as f64 / n as f64));
    }
    out
}

/// The chart as an SVG document: `rows` (tensor-major, one per tensor and label),
/// `labels` (the schemes and compared files, in order) and `totals` (one per label).
pub fn svg(rows: &[Row], labels: &[String], totals: &[Row]) -> Result<String> {
    let mut doc = String::new();
    {
        let root = SVGBackend::with_string(&mut doc, SIZE).into_drawing_area();
        let e = |err: DrawingAreaErrorKind<_>| anyhow!("drawing the chart: {err}");
        root.fill(&WHITE).map_err(e)?;
        let (top, bottom) = root.split_vertically(SIZE.1 / 2);
        let (top, top_legend) = top.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        let (bottom, bottom_legend) = bottom.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        sqnr_panel(&top, rows, labels).map_err(e)?;
        legend(&top_legend, labels, true).map_err(e)?;
        error_panel(&bottom, labels, totals).map_err(e)?;
        legend(&bottom_legend, &exact_marked(labels, totals), false).map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(doc)
}

/// `lo..hi` widened by a tenth on each side (a unit around a single value); `empty` when
/// there is no value.
fn padded(values: impl Iterator<Item = f64>, empty: (f64, f64)) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        empty
    } else if hi - lo < 1e-9 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo - (hi - lo) / 10.0, hi + (hi - lo) / 10.0)
    }
}

type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// A legend beside a panel: each label's colour (with the markers of panel (a) where
/// `markers`) and the label, in order, cut to fit.
fn legend(area: &DrawingArea<SVGBackend, Shift>, labels: &[String], markers: bool) -> DrawResult {
    let font = ("sans-serif", 13).into_font();
    let left = TextStyle::from(font.clone()).pos(Pos::new(HPos::Left, VPos::Center));
    let h = area.dim_in_pixel().1 as i32;
    let step = ((h - 90) / labels.len().max(1) as i32).clamp(6, 20);
    area.draw(&Text::new("scheme", (12, 48), left.clone()))?;
    for (i, label) in labels.iter().enumerate() {
        let y = 72 + step * i as i32;
        let color = PALETTE[i % PALETTE.len()];
        area.draw(&PathElement::new(
            vec![(12, y), (40, y)],
            color.stroke_width(2),
        ))?;
        if markers {
            area.draw(&Circle::new((26, y), 3, color.filled()))?;
        }
        let text = match label.char_indices().nth(30) {
            Some((k, _)) => format!("{}…", &label[..k]),
            None => label.clone(),
        };
        area.draw(&Text::new(text, (48, y), left.clone()))?;
    }
    Ok(())
}

/// The labels, those whose every element is exact marked `(all exact)` (panel (b) has no
/// line for them: a log axis has no 0).
fn exact_marked(labels: &[String], totals: &[Row]) -> Vec<String> {
    labels
        .iter()
        .map(|l| {
            let t = totals.iter().find(|t| &t.scheme == l);
            match t {
                Some(t) if t.stats.hist.count() > 0 && t.stats.hist.bins().next().is_none() => {
                    format!("{l} (all exact)")
                }
                _ => l.clone(),
            }
        })
        .collect()
}

/// Panel (a): SQNR per tensor.
fn sqnr_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    rows: &[Row],
    labels: &[String],
) -> DrawResult {
    let first = labels.first().map_or("", String::as_str);
    let names: Vec<&str> = rows
        .iter()
        .filter(|r| r.scheme == first)
        .map(|r| r.tensor.as_str())
        .collect();
    let n = names.len().max(1);
    let runs: Vec<Vec<Vec<(f64, f64)>>> = labels.iter().map(|l| sqnr_runs(rows, l)).collect();
    let (lo, hi) = padded(runs.iter().flatten().flatten().map(|p| p.1), (0.0, 100.0));
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "(a) SQNR per tensor ({} tensors, higher is better)",
                names.len()
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), lo..hi)?;
    let tick = |v: &f64| -> String {
        let k = v.round();
        if (v - k).abs() > 1e-6 || k < 0.0 || k as usize >= names.len() {
            return String::new();
        }
        if names.len() <= NAMED_TENSORS {
            let name = names[k as usize];
            match name.char_indices().nth(24) {
                Some((i, _)) => format!("{}…", &name[..i]),
                None => name.to_string(),
            }
        } else {
            format!("{k:.0}")
        }
    };
    chart
        .configure_mesh()
        .x_desc(if names.len() <= NAMED_TENSORS {
            "tensor"
        } else {
            "tensor (index in checkpoint order, as in the table)"
        })
        .y_desc("SQNR (dB)")
        .x_labels(n.min(12) + 1)
        .x_label_formatter(&tick)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (i, runs) in runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let style = color.stroke_width(2);
        for run in runs {
            chart.draw_series(LineSeries::new(run.iter().copied(), style))?;
            chart.draw_series(run.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
    }
    Ok(())
}

/// Panel (b): the cumulative distribution of `|q − x|` per scheme.
fn error_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    labels: &[String],
    totals: &[Row],
) -> DrawResult {
    let cdfs: Vec<Vec<(f64, f64)>> = labels
        .iter()
        .map(|l| {
            totals
                .iter()
                .find(|t| &t.scheme == l)
                .map_or(vec![], error_cdf)
        })
        .collect();
    // from where the first line passes a share of TAIL above its start (a few stray tiny
    // errors would stretch the axis over empty decades) to the largest error
    const TAIL: f64 = 1e-3;
    let lo = cdfs
        .iter()
        .filter_map(|c| {
            let start = c.first()?.1;
            let k = c.iter().position(|p| p.1 > start + TAIL)?;
            Some(c[k.saturating_sub(1)].0)
        })
        .fold(f64::INFINITY, f64::min);
    let hi = cdfs
        .iter()
        .filter_map(|c| c.last())
        .map(|p| p.0)
        .fold(0f64, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        (lo / 1.5, hi * 1.5)
    } else if lo.is_finite() {
        (lo / 4.0, lo * 4.0)
    } else {
        (1e-8, 1.0)
    };
    // each line from the axis' left end: the points left of it dropped, its share there kept
    let cdfs: Vec<Vec<(f64, f64)>> = cdfs
        .into_iter()
        .map(|c| match c.iter().position(|p| p.0 >= lo) {
            Some(0) | None => c.into_iter().filter(|p| p.0 >= lo).collect(),
            Some(k) => std::iter::once((lo, c[k - 1].1))
                .chain(c[k..].iter().copied())
                .collect(),
        })
        .collect();
    let mut chart = ChartBuilder::on(area)
        .caption(
            "(b) |q − x| over all tensors: share of elements with an error ≤ x (exact ones included)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.02)?;
    chart
        .configure_mesh()
        .x_desc("|q − x| (8 bins per binade)")
        .y_desc("cumulative share of elements")
        .x_label_formatter(&|v| format!("{v:.0e}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .draw()?;
    for (i, cdf) in cdfs.iter().enumerate() {
        let style = PALETTE[i % PALETTE.len()].stroke_width(2);
        chart.draw_series(LineSeries::new(cdf.iter().copied(), style))?;
    }
    Ok(())
}

/// Write the chart to `path` atomically ([`lowprec::io::write_atomic`]).
pub fn write(path: &Path, rows: &[Row], labels: &[String], totals: &[Row]) -> Result<()> {
    let doc = svg(rows, labels, totals)?;
    lowprec::io::write_atomic(path, |w| w.write_all(doc.as_bytes()))
        .with_context(|| format!("writing {}", path.display()))
}
