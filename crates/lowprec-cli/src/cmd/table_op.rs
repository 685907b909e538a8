//! `lowprec table OP --in F[,G] --out R`: the full table of an operation on an 8-bit (or
//! smaller) format, every pair of codes, as CSV, and as an SVG heat map with `--plot`.

use super::op::{operand_formats, parse_op, result_format};
use super::ProjectionArgs;
use anyhow::{bail, Result};
use lowprec::ops::{self, Kind, Op, Outcome};
use lowprec::FloatFormat;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `lowprec table`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec table add --in binary8p4se --out binary8p4se -o add.csv --plot add.svg
  lowprec table mul --in fp8-e4m3,fp8-e5m2 --out bf16 -r rtz | head
  lowprec table sqrt --in binary8p3se --out binary8p3se")]
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
    /// Also draw the table as an SVG heat map (rows: first operand's code, columns: second's).
    #[arg(long)]
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

/// A colour for a value: blue for negative, red for positive, by log2 magnitude; grey NaN.
fn colour(v: f64, lo: f64, hi: f64) -> String {
    if v.is_nan() {
        return "#999".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "#400" } else { "#004" }.into();
    }
    if v == 0.0 {
        return "#fff".into();
    }
    let t = ((v.abs().log2() - lo) / (hi - lo).max(1.0)).clamp(0.0, 1.0);
    let shade = (235.0 - 200.0 * t) as u8;
    if v > 0.0 {
        format!("#ff{shade:02x}{shade:02x}")
    } else {
        format!("#{shade:02x}{shade:02x}ff")
    }
}

fn svg(op: Op, fmts: &[FloatFormat], out: &FloatFormat, kind: Kind, table: &[Outcome]) -> String {
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
    for r in 0..rows {
        let mut c = 0;
        while c < cols {
            let col = colour(vals[r * cols + c], lo, hi);
            let mut run = 1;
            while c + run < cols && colour(vals[r * cols + c + run], lo, hi) == col {
                run += 1;
            }
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="{cell}" fill="{col}"/>"#,
                10 + c * cell,
                40 + r * cell,
                run * cell
            );
            c += run;
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Run `lowprec table`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let op = a.op;
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
    if let Some(p) = &a.plot {
        lowprec::io::check_target(p)?;
        let text = svg(op, &fmts, &out, op.kind(), &table);
        lowprec::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
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
