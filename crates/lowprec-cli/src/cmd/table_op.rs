//! `lowprec table OP --in F[,G] --out R`: the full table of an operation on an 8-bit (or
//! smaller) format, every pair of codes, as CSV, and as an SVG or PNG heat map with `--plot`
//! (one colour rule for both, [`colour`]).

use super::op::{operand_formats, parse_op, result_format};
use super::ProjectionArgs;
use crate::png::Image;
use anyhow::{bail, Result};
use lowprec::ops::{self, Kind, Op, Outcome};
use lowprec::FloatFormat;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `lowprec table`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec table add --in binary8p4se --out binary8p4se -o add.csv --plot add.svg
  lowprec table mul --in fp8-e4m3 --out fp8-e4m3 -o mul.csv --plot mul.png
  lowprec table mul --in fp8-e4m3,fp8-e5m2 --out bf16 -r rtz | head")]
pub struct Args {
    /// The operation (one or two operands).
    #[arg(value_parser = parse_op)]
    pub op: Op,
    /// The operand formats (at most 8 bits each), comma-separated or one for both.
    #[arg(long = "in", value_delimiter = ',', required = true)]
    pub formats: Vec<FloatFormat>,
    /// The result format (numeric operations).
    #[arg(long = "out")]
    pub out_format: Option<FloatFormat>,
    /// Write the CSV here instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Also draw the table as a heat map, SVG or PNG by the extension (.svg, .png).
    ///
    /// Rows: first operand's code, columns: second's; red +, blue −, darker larger |value|,
    /// grey NaN, white 0, dark red/blue ±∞. A PNG has no text: each cell is a square of
    /// pixels (768 / the larger side's number of codes, at least 2), and below the grid a
    /// legend strip: NaN, −∞, negative values (largest |value| first), 0, positive values
    /// (smallest first), +∞.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

/// The result's value as CSV text.
fn result_text(kind: Kind, out: &FloatFormat, o: &Outcome) -> (String, String) {
    match (o.code, kind) {
        (None, _) => ("none".into(), "nan".into()),
        (Some(c), Kind::Numeric | Kind::SameFormat) => {
            (format!("{c:#x}"), format!("{}", out.decode(c)))
        }
        (Some(c), Kind::Boolean) => (c.to_string(), (c == 1).to_string()),
        (Some(c), Kind::Class) => (c.to_string(), ops::CLASS_NAMES[c as usize].to_string()),
    }
}

/// An 8-bit RGB colour.
type Rgb = [u8; 3];

/// The colour of a value, the one rule of both the SVG and the PNG heat map: grey
/// (0x99, 0x99, 0x99) for NaN, dark red (0x44, 0, 0) for +∞, dark blue (0, 0, 0x44) for −∞,
/// white for ±0; else, with `t = clamp((log2|v| − lo) / max(hi − lo, 1), 0, 1)` and
/// `s = ⌊235 − 200·t⌋`, (255, s, s) for positive and (s, s, 255) for negative values:
/// the larger |v|, the darker. `lo`, `hi` are the least and greatest `log2|v|` of the
/// finite non-zero values of the table.
fn colour(v: f64, lo: f64, hi: f64) -> Rgb {
    if v.is_nan() {
        return [0x99; 3];
    }
    if v.is_infinite() {
        return if v > 0.0 { [0x44, 0, 0] } else { [0, 0, 0x44] };
    }
    if v == 0.0 {
        return [0xff; 3];
    }
    let t = ((v.abs().log2() - lo) / (hi - lo).max(1.0)).clamp(0.0, 1.0);
    let shade = (235.0 - 200.0 * t) as u8;
    if v > 0.0 {
        [0xff, shade, shade]
    } else {
        [shade, shade, 0xff]
    }
}

/// `#rrggbb`.
fn hex([r, g, b]: Rgb) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The picture both heat maps draw: a grid of `rows × cols` cells (rows: the first
/// operand's code, columns: the second's; one row for a one-operand operation), each a
/// square of `cell` pixels coloured by [`colour`].
struct Heat {
    /// Rows of cells: the first operand's codes (1 for a one-operand operation).
    rows: usize,
    /// Columns of cells: the (second) operand's codes.
    cols: usize,
    /// The side of a cell in pixels: `max(⌊768 / max(rows, cols)⌋, 2)`.
    cell: usize,
    /// `log2|v|` of the smallest finite non-zero value (+∞ when there is none).
    lo: f64,
    /// `log2|v|` of the largest finite non-zero value (−∞ when there is none).
    hi: f64,
    /// The colour of each cell, row by row.
    colours: Vec<Rgb>,
}

impl Heat {
    /// The cells of `table` (results in `out`, or booleans and classes as their codes;
    /// no result is NaN).
    fn new(fmts: &[FloatFormat], out: &FloatFormat, kind: Kind, table: &[Outcome]) -> Self {
        let (rows, cols) = if fmts.len() == 2 {
            (1usize << fmts[0].bits(), 1usize << fmts[1].bits())
        } else {
            (1, 1usize << fmts[0].bits())
        };
        let cell = (768 / cols.max(rows)).max(2);
        let vals: Vec<f64> = table
            .iter()
            .map(|o| match (o.code, kind) {
                (None, _) => f64::NAN,
                (Some(c), Kind::Numeric | Kind::SameFormat) => out.decode(c),
                (Some(c), _) => c as f64,
            })
            .collect();
        let mags: Vec<f64> = vals
            .iter()
            .filter(|v| v.is_finite() && **v != 0.0)
            .map(|v| v.abs().log2())
            .collect();
        let lo = mags.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = mags.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let colours = vals.iter().map(|&v| colour(v, lo, hi)).collect();
        Heat {
            rows,
            cols,
            cell,
            lo,
            hi,
            colours,
        }
    }

    /// The colour of pixel column `x` of the PNG's legend strip, `width` pixels wide, left
    /// to right in sixteenths: NaN (1), −∞ (1), negative values from the largest |v| to the
    /// smallest (5), 0 (2), positive values from the smallest to the largest (5), +∞ (2).
    fn legend(&self, x: usize, width: usize) -> Rgb {
        let (lo, hi) = if self.lo.is_finite() {
            (self.lo, self.hi)
        } else {
            (0.0, 1.0)
        };
        let f = 16.0 * (x as f64 + 0.5) / width as f64;
        let mag = |t: f64| (lo + t.clamp(0.0, 1.0) * (hi - lo)).exp2();
        let v = match f {
            f if f < 1.0 => f64::NAN,
            f if f < 2.0 => f64::NEG_INFINITY,
            f if f < 7.0 => -mag((7.0 - f) / 5.0),
            f if f < 9.0 => 0.0,
            f if f < 14.0 => mag((f - 9.0) / 5.0),
            _ => f64::INFINITY,
        };
        colour(v, lo, hi)
    }
}

/// The SVG heat map: a title line, then the grid of [`Heat`] with each run of equal
/// colours in a row as one rectangle.
fn svg(op: Op, fmts: &[FloatFormat], out: &FloatFormat, heat: &Heat) -> String {
    let Heat {
        rows, cols, cell, ..
    } = *heat;
    let (w, h) = (cols * cell + 20, rows * cell + 60);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="10" y="18">{} of {} → {}: rows first operand's code, columns second's; red +, blue −, darker larger |value|, grey NaN, white 0</text>"#,
        op.name(),
        fmts.iter()
            .map(|f| f.name().to_string())
            .collect::<Vec<_>>()
            .join(" × "),
        out.name()
    );
    for (r, line) in heat.colours.chunks_exact(cols).enumerate() {
        let mut c = 0;
        while c < cols {
            let col = line[c];
            let run = line[c..].iter().take_while(|&&x| x == col).count();
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="{cell}" fill="{}"/>"#,
                10 + c * cell,
                40 + r * cell,
                run * cell,
                hex(col)
            );
            c += run;
        }
    }
    s.push_str("</svg>\n");
    s
}

/// The white gap between the grid and the legend strip of the PNG (pixels).
const LEGEND_GAP: usize = 4;
/// The height of the PNG's legend strip (pixels).
const LEGEND_HEIGHT: usize = 10;

/// The PNG heat map: the grid of [`Heat`] from the top-left pixel, each cell a
/// `cell × cell` square, then a white gap of [`LEGEND_GAP`] rows and the legend strip
/// ([`Heat::legend`]) of [`LEGEND_HEIGHT`] rows, as wide as the grid.
fn png(heat: &Heat) -> Vec<u8> {
    let (w, gh) = (heat.cols * heat.cell, heat.rows * heat.cell);
    let mut img = Image::new(w, gh + LEGEND_GAP + LEGEND_HEIGHT, [0xff; 3]);
    for (i, &c) in heat.colours.iter().enumerate() {
        let (r, col) = (i / heat.cols, i % heat.cols);
        img.fill(col * heat.cell, r * heat.cell, heat.cell, heat.cell, c);
    }
    for x in 0..w {
        img.fill(x, gh + LEGEND_GAP, 1, LEGEND_HEIGHT, heat.legend(x, w));
    }
    img.encode()
}

/// What `--plot` writes, by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlotKind {
    /// `.svg`: [`svg`].
    Svg,
    /// `.png`: [`png()`].
    Png,
}

/// The kind of heat map a `--plot` path asks for: `.svg` or `.png`, in any case.
fn plot_kind(p: &Path) -> Result<PlotKind> {
    let ext = p.extension().map(|e| e.to_string_lossy());
    match ext.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("svg") => Ok(PlotKind::Svg),
        Some("png") => Ok(PlotKind::Png),
        Some(_) => bail!(
            "--plot {}: cannot draw a `.{}` file; give a path ending in .svg or .png",
            p.display(),
            ext.unwrap_or_default()
        ),
        None => bail!(
            "--plot {}: the path has no extension; give a path ending in .svg or .png",
            p.display()
        ),
    }
}

/// Run `lowprec table`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let op = a.op;
    let plot = a.plot.as_deref().map(plot_kind).transpose()?;
    if op.arity() > 2 {
        bail!(
            "{op} takes {} operands; a table is for one- and two-operand operations",
            op.arity()
        );
    }
    let fmts = operand_formats(op, &a.formats)?;
    if let Some(f) = fmts.iter().find(|f| f.bits() > 8) {
        bail!(
            "{} has {} bits; a table is for formats of at most 8 bits (65,536 pairs)",
            f.name(),
            f.bits()
        );
    }
    let out = result_format(op, a.out_format, fmts[0])?;
    let prj = a.projection.projection();
    if prj.rounding.random_bits() != 0 {
        bail!(
            "a table needs a deterministic rounding (rne, rna, rup, rdn, rtz, rto), not {}",
            prj.rounding.name()
        );
    }
    let started = Instant::now();
    let table = ops::full_table(op, &fmts, &out, &prj)?;
    let took = started.elapsed();
    let mut csv = String::with_capacity(table.len() * 40);
    let two = fmts.len() == 2;
    csv.push_str(if two {
        "a,b,a_value,b_value,code,value\n"
    } else {
        "a,a_value,code,value\n"
    });
    let nb = if two { fmts[1].bits() } else { 0 };
    for (idx, o) in table.iter().enumerate() {
        let (code, value) = result_text(op.kind(), &out, o);
        let a_code = (idx >> nb) as u64;
        if two {
            let b_code = (idx & ((1 << nb) - 1)) as u64;
            let _ = writeln!(
                csv,
                "{a_code:#x},{b_code:#x},{},{},{code},{value}",
                fmts[0].decode(a_code),
                fmts[1].decode(b_code)
            );
        } else {
            let _ = writeln!(csv, "{a_code:#x},{},{code},{value}", fmts[0].decode(a_code));
        }
    }
    if let (Some(p), Some(kind)) = (&a.plot, plot) {
        lowprec::io::check_target(p)?;
        let heat = Heat::new(&fmts, &out, op.kind(), &table);
        let bytes = match kind {
            PlotKind::Svg => svg(op, &fmts, &out, &heat).into_bytes(),
            PlotKind::Png => png(&heat),
        };
        lowprec::io::write_atomic(p, |w| w.write_all(&bytes))?;
    }
    match &a.output {
        Some(p) => {
            lowprec::io::check_target(p)?;
            lowprec::io::write_atomic(p, |w| w.write_all(csv.as_bytes()))?;
            outln!(
                "{op}: {} results in {:.2} ms; wrote {}{}",
                table.len(),
                took.as_secs_f64() * 1e3,
                p.display(),
                a.plot
                    .as_ref()
                    .map_or(String::new(), |q| format!(" and {}", q.display()))
            )?;
        }
        None => out!("{csv}")?,
    }
    Ok(ExitCode::SUCCESS)
}
