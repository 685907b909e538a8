//! `lowprec block dot|reduce|convert|from|map|kappa`: the P3109 draft's block operations (§5) on
//! blocks given on the command line, exact and rounded once, and κ (§4.4) of an approximate
//! implementation with a low-precision accumulator.

use super::ProjectionArgs;
use anyhow::{bail, Context, Result};
use lowprec::accum::{AccumOptions, Method};
use lowprec::ops::block::{self, Block, BlockOp, Inputs, KappaSpec, ScaleRule, ScaleTarget};
use lowprec::ops::{flag, Op, Outcome, Projection, Random, Rounding, Saturation};
use lowprec::FloatFormat;
use std::process::ExitCode;

/// Arguments of `lowprec block`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec block dot 1,1.5,-1 1,1,0.5 --in binary8p4se --out fp32
  lowprec block map Add --a 1,1.5 --b 0.5,3 --scales 2,1 --result-scale 2
  lowprec block kappa dot --in binary4p2sf --k 2 --acc fp16 --out binary8p3se

A block is a scale (--scale-format, Binary8p1uf by default) and K elements; elements and
scales are given as values, which must be exactly representable in their formats.")]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

/// The block operations.
#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// BlockDotProduct: Σ (sa·a_i)(sb·b_i), exact, rounded once (or through an accumulator with --acc).
    Dot(DotArgs),
    /// BlockReduceAdd: Σ s·x_i, exact, rounded once (or through an accumulator with --acc);
    /// BlockReduceMultiply with --multiply: Π s·x_i, exact, rounded once.
    Reduce(ReduceArgs),
    /// ConvertToBlock (with --scale) or ConvertToBlockMaxAbsFinite (without): values into a block.
    Convert(ConvertArgs),
    /// ConvertFromBlock: s·x_i rounded once into a format.
    From(FromArgs),
    /// κ of BlockDotProduct or BlockReduceAdd summed in a low-precision accumulator.
    Kappa(KappaArgs),
    /// An elementwise block operation (§5.4: Add, Multiply, FMA, Maximum, Sqrt, …):
    /// ωOp(S₁·X₁ᵢ, …) exact, divided by the result scale, rounded once.
    Map(MapArgs),
}

/// Arguments of `lowprec block map`.
#[derive(clap::Args, Debug)]
pub struct MapArgs {
    /// The operation (P3109 name, e.g. Add, Multiply, FMA, MaximumNumber, Sqrt).
    #[arg(value_parser = super::op::parse_op)]
    pub op: Op,
    /// The first block's elements (values, comma-separated).
    #[arg(long, value_parser = parse_list, allow_hyphen_values = true)]
    pub a: List,
    /// The second block's elements (binary and ternary operations; as many as the first).
    #[arg(long, value_parser = parse_list, allow_hyphen_values = true)]
    pub b: Option<List>,
    /// The third block's elements (FMA, FAA, Clamp).
    #[arg(long, value_parser = parse_list, allow_hyphen_values = true)]
    pub c: Option<List>,
    /// The operand blocks' scales (values, comma-separated, one per block; default 1 each).
    #[arg(long, value_parser = parse_list, allow_hyphen_values = true)]
    pub scales: Option<List>,
    /// The result block's scale (a value: a power of two, or 0, ±Inf, NaN).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub result_scale: f64,
    /// The elements' format (every operand block's).
    #[arg(long = "in", default_value = "binary8p4se")]
    pub format: FloatFormat,
    /// The scales' format (the operands' and the result's).
    #[arg(long, default_value = "binary8p1uf")]
    pub scale_format: FloatFormat,
    /// The result elements' format.
    #[arg(long, default_value = "binary8p4se")]
    pub out: FloatFormat,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

/// A comma-separated list of numbers.
#[derive(Debug, Clone)]
pub struct List(pub Vec<f64>);

/// Parse a comma-separated list of numbers.
fn parse_list(s: &str) -> std::result::Result<List, String> {
    let v: std::result::Result<Vec<f64>, String> = s
        .split(',')
        .map(|t| {
            let t = t.trim();
            t.parse::<f64>().map_err(|_| {
                format!("`{t}` is not a number; give comma-separated values, e.g. 1,-0.5,2")
            })
        })
        .collect();
    v.map(List)
}

/// Options shared by the reductions.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// The elements' format.
    #[arg(long = "in", default_value = "binary8p4se")]
    pub format: FloatFormat,
    /// The scales' format.
    #[arg(long, default_value = "binary8p1uf")]
    pub scale_format: FloatFormat,
    /// The result format.
    #[arg(long, default_value = "fp32")]
    pub out: FloatFormat,
    /// Sum in this accumulator format (products exact) instead of exactly, then convert.
    #[arg(long)]
    pub acc: Option<FloatFormat>,
    /// The accumulator's method: sequential or pairwise.
    #[arg(long, default_value = "sequential")]
    pub method: Method,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

/// Arguments of `lowprec block dot`.
#[derive(clap::Args, Debug)]
pub struct DotArgs {
    /// The first block's elements (values, comma-separated).
    #[arg(value_parser = parse_list, allow_hyphen_values = true)]
    pub a: List,
    /// The second block's elements.
    #[arg(value_parser = parse_list, allow_hyphen_values = true)]
    pub b: List,
    /// The first block's scale (a value).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub sa: f64,
    /// The second block's scale.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub sb: f64,
    #[command(flatten)]
    pub common: Common,
}

/// Arguments of `lowprec block reduce`.
#[derive(clap::Args, Debug)]
pub struct ReduceArgs {
    /// The elements (values, comma-separated).
    #[arg(value_parser = parse_list, allow_hyphen_values = true)]
    pub x: List,
    /// The scale (a value).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub scale: f64,
    /// BlockReduceMultiply: the product of the elements instead of their sum.
    #[arg(long)]
    pub multiply: bool,
    #[command(flatten)]
    pub common: Common,
}

/// Arguments of `lowprec block convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The values (comma-separated binary64 values).
    #[arg(value_parser = parse_list, allow_hyphen_values = true)]
    pub x: List,
    /// The elements' format.
    #[arg(long, default_value = "binary8p4se")]
    pub to: FloatFormat,
    /// The scales' format.
    #[arg(long, default_value = "binary8p1uf")]
    pub scale_format: FloatFormat,
    /// The scale (a value of the scale format): ConvertToBlock. Without it the scale comes from
    /// the largest finite magnitude (ConvertToBlockMaxAbsFinite).
    #[arg(long, allow_hyphen_values = true)]
    pub scale: Option<f64>,
    /// What the largest finite magnitude maps to: one (the draft) or max-finite (the element
    /// format's largest finite value).
    #[arg(long, default_value = "one", value_parser = parse_target)]
    pub target: ScaleTarget,
    /// The scale's rounding (ρs).
    #[arg(long, default_value = "rup")]
    pub scale_rounding: Rounding,
    /// The scale's saturation.
    #[arg(long, default_value = "finite")]
    pub scale_sat: Saturation,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

fn parse_target(s: &str) -> std::result::Result<ScaleTarget, String> {
    ScaleTarget::parse(s).ok_or_else(|| format!("unknown target `{s}`; use one or max-finite"))
}

/// Arguments of `lowprec block from`.
#[derive(clap::Args, Debug)]
pub struct FromArgs {
    /// The elements (values, comma-separated).
    #[arg(value_parser = parse_list, allow_hyphen_values = true)]
    pub x: List,
    /// The scale (a value).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub scale: f64,
    /// The elements' format.
    #[arg(long = "in", default_value = "binary8p4se")]
    pub format: FloatFormat,
    /// The scales' format.
    #[arg(long, default_value = "binary8p1uf")]
    pub scale_format: FloatFormat,
    /// The result format.
    #[arg(long, default_value = "fp64")]
    pub out: FloatFormat,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

/// Which operation `kappa` measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum KappaOp {
    /// BlockDotProduct.
    Dot,
    /// BlockReduceAdd.
    Reduce,
}

/// Arguments of `lowprec block kappa`.
#[derive(clap::Args, Debug)]
pub struct KappaArgs {
    /// The operation.
    #[arg(value_enum)]
    pub op: KappaOp,
    /// The elements' format.
    #[arg(long = "in", default_value = "binary8p4se")]
    pub format: FloatFormat,
    /// The scales' format.
    #[arg(long, default_value = "binary8p1uf")]
    pub scale_format: FloatFormat,
    /// Both blocks' scale (a value).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Let the scales vary too: κ at every pair of these scale values (comma-separated; for
    /// reduce at each), the worst reported with the scales it was found at.
    #[arg(long, value_parser = parse_list, conflicts_with = "scale")]
    pub scales: Option<List>,
    /// Elements per block.
    #[arg(long, default_value_t = 2)]
    pub k: usize,
    /// The result format.
    #[arg(long, default_value = "fp32")]
    pub out: FloatFormat,
    /// The accumulator format of the approximate implementation.
    #[arg(long, default_value = "fp16")]
    pub acc: FloatFormat,
    /// The accumulator's method: sequential or pairwise.
    #[arg(long, default_value = "sequential")]
    pub method: Method,
    /// Random inputs (with the adversarial set) when the exhaustive set is larger than
    /// --max-exhaustive.
    #[arg(long, default_value_t = 100_000)]
    pub samples: u64,
    /// Measure every input when there are at most this many.
    #[arg(long, default_value_t = 1 << 24)]
    pub max_exhaustive: u64,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

/// The code of a value that must be exact in `f`.
fn code_of(f: &FloatFormat, v: f64, what: &str) -> Result<u64> {
    if v.is_nan() {
        return f
            .nan_code(false)
            .with_context(|| format!("{what}: NaN, and {} has no NaN", f.name()));
    }
    let c = f
        .encode(v, &lowprec::RoundOptions::default())
        .ok()
        .filter(|&c| f.decode(c) == v);
    c.with_context(|| {
        format!(
            "{what}: {v} is not exactly representable in {}; give a value of the format (`lowprec encode {} {v}` shows the nearest)",
            f.name(),
            f.name()
        )
    })
}

fn codes_of(f: &FloatFormat, xs: &[f64], what: &str) -> Result<Vec<u64>> {
    xs.iter()
        .enumerate()
        .map(|(i, &v)| code_of(f, v, &format!("{what} element {i}")))
        .collect()
}

fn what(flags: u8) -> String {
    let mut w = Vec::new();
    if flags & flag::INEXACT == 0 {
        w.push("exact");
    } else {
        w.push("inexact");
    }
    for (b, n) in [
        (flag::OVERFLOW, "overflow"),
        (flag::UNDERFLOW, "underflow"),
        (flag::SATURATED, "saturated"),
        (flag::INVALID, "invalid"),
    ] {
        if flags & b != 0 {
            w.push(n);
        }
    }
    w.join(", ")
}

fn show(out: &FloatFormat, o: &Outcome) -> String {
    match o.code {
        Some(c) => format!(
            "{} (code {c:#x}; {})",
            out.shortest_decimal(c),
            what(o.flags)
        ),
        None => format!("NaN, and {} has no NaN", out.name()),
    }
}

fn prj_name(p: &Projection) -> String {
    format!("{}, {}", p.rounding.name(), p.saturation.name())
}

fn accum(c: &Common) -> Option<AccumOptions> {
    c.acc.map(|a| AccumOptions::new(a).method(c.method))
}

/// Run `lowprec block`.
pub fn run(a: &Args) -> Result<ExitCode> {
    match &a.command {
        Sub::Dot(d) => {
            let c = &d.common;
            if d.a.0.len() != d.b.0.len() {
                bail!(
                    "blocks of {} and {} elements; a dot product takes blocks of the same size",
                    d.a.0.len(),
                    d.b.0.len()
                );
            }
            let ac = codes_of(&c.format, &d.a.0, "a")?;
            let bc = codes_of(&c.format, &d.b.0, "b")?;
            let sa = code_of(&c.scale_format, d.sa, "--sa")?;
            let sb = code_of(&c.scale_format, d.sb, "--sb")?;
            let (ba, bb) = (
                Block::new(c.scale_format, sa, c.format, &ac),
                Block::new(c.scale_format, sb, c.format, &bc),
            );
            let prj = c.projection.projection();
            let r = match accum(c) {
                None => block::block_dot_product(&ba, &bb, &c.out, &prj, 0)?,
                Some(acc) => block::block_dot_product_approx(&ba, &bb, &c.out, &prj, &acc, 0)?,
            };
            outln!(
                "BlockDotProduct of {} elements → {} ({}{}): {}",
                ac.len(),
                c.out.name(),
                prj_name(&prj),
                c.acc
                    .map(|f| format!("; {} accumulator, {}", f.name(), c.method))
                    .unwrap_or_default(),
                show(&c.out, &r)
            )?;
        }
        Sub::Reduce(d) => {
            let c = &d.common;
            let xc = codes_of(&c.format, &d.x.0, "x")?;
            let s = code_of(&c.scale_format, d.scale, "--scale")?;
            let b = Block::new(c.scale_format, s, c.format, &xc);
            let prj = c.projection.projection();
            let r = match (accum(c), d.multiply) {
                (None, false) => block::block_reduce_add(&b, &c.out, &prj, 0)?,
                (Some(acc), false) => block::block_reduce_add_approx(&b, &c.out, &prj, &acc, 0)?,
                (None, true) => block::block_reduce_multiply(&b, &c.out, &prj, 0)?,
                (Some(_), true) => bail!(
                    "--acc models a low-precision sum; BlockReduceMultiply is the exact product rounded once: drop --acc"
                ),
            };
            outln!(
                "{} of {} elements → {} ({}{}): {}",
                if d.multiply {
                    "BlockReduceMultiply"
                } else {
                    "BlockReduceAdd"
                },
                xc.len(),
                c.out.name(),
                prj_name(&prj),
                c.acc
                    .map(|f| format!("; {} accumulator, {}", f.name(), c.method))
                    .unwrap_or_default(),
                show(&c.out, &r)
            )?;
        }
        Sub::Convert(d) => {
            let prj = d.projection.projection();
            let random = Random::seeded(d.projection.seed);
            let (s, codes, counts) = match d.scale {
                Some(v) => {
                    let s = code_of(&d.scale_format, v, "--scale")?;
                    let (codes, counts) =
                        block::convert_to_block(&d.x.0, s, &d.scale_format, &d.to, &prj, random)?;
                    (s, codes, counts)
                }
                None => {
                    let rule = ScaleRule {
                        target: d.target,
                        projection: Projection::new(d.scale_rounding, d.scale_sat),
                    };
                    block::convert_to_block_max_abs_finite(
                        &d.x.0,
                        &d.to,
                        &d.scale_format,
                        &rule,
                        &prj,
                        random,
                    )?
                }
            };
            let vals: Vec<String> = codes.iter().map(|&c| d.to.shortest_decimal(c)).collect();
            let hex: Vec<String> = codes.iter().map(|c| format!("{c:#x}")).collect();
            outln!(
                "scale {} (code {s:#x}, {}){}",
                d.scale_format.decode(s),
                d.scale_format.name(),
                if d.scale.is_none() {
                    format!(", target {}, {}", d.target.name(), d.scale_rounding.name())
                } else {
                    String::new()
                }
            )?;
            outln!("elements ({}): {}", d.to.name(), vals.join(", "))?;
            outln!("codes: {}", hex.join(", "))?;
            outln!("{}", counts_line(&counts))?;
        }
        Sub::From(d) => {
            let xc = codes_of(&d.format, &d.x.0, "x")?;
            let s = code_of(&d.scale_format, d.scale, "--scale")?;
            let prj = d.projection.projection();
            let random = Random::seeded(d.projection.seed);
            let (codes, _) = block::convert_from_block(
                &Block::new(d.scale_format, s, d.format, &xc),
                &d.out,
                &prj,
                random,
            )?;
            let vals: Vec<String> = codes.iter().map(|&c| d.out.shortest_decimal(c)).collect();
            outln!("{}", vals.join(", "))?;
        }
        Sub::Map(d) => {
            let given: Vec<&List> = [Some(&d.a), d.b.as_ref(), d.c.as_ref()]
                .into_iter()
                .flatten()
                .collect();
            let n = given.len();
            if n != d.op.arity() {
                let need = match d.op.arity() {
                    1 => "--a",
                    2 => "--a and --b",
                    _ => "--a, --b and --c",
                };
                bail!(
                    "{} takes {} blocks and {n} were given; give {need}",
                    d.op.name(),
                    d.op.arity()
                );
            }
            let scales = match &d.scales {
                Some(l) if l.0.len() != n => bail!(
                    "--scales gives {} scales for {n} blocks; give one per block",
                    l.0.len()
                ),
                Some(l) => l.0.clone(),
                None => vec![1.0; n],
            };
            let codes: Vec<Vec<u64>> = (given.iter().enumerate())
                .map(|(j, l)| codes_of(&d.format, &l.0, &format!("block {}", j + 1)))
                .collect::<Result<_>>()?;
            let scodes: Vec<u64> = (scales.iter().enumerate())
                .map(|(j, &v)| code_of(&d.scale_format, v, &format!("scale {}", j + 1)))
                .collect::<Result<_>>()?;
            let sr = code_of(&d.scale_format, d.result_scale, "--result-scale")?;
            let blocks: Vec<Block> = (codes.iter().zip(&scodes))
                .map(|(c, &s)| Block::new(d.scale_format, s, d.format, c))
                .collect();
            let prj = d.projection.projection();
            let random = Random::seeded(d.projection.seed);
            let (r, counts) = block::block_elementwise(
                d.op,
                &blocks,
                (d.scale_format, sr),
                &d.out,
                &prj,
                &random,
            )?;
            // the values themselves (binary64 shows every value of a format of ≤ 53 bits)
            let vals: Vec<String> = r.iter().map(|&c| d.out.decode(c).to_string()).collect();
            let hex: Vec<String> = r.iter().map(|c| format!("{c:#x}")).collect();
            outln!(
                "Block{} of {n} block(s) of {} → {} (result scale {}; {}):",
                d.op.name(),
                codes[0].len(),
                d.out.name(),
                d.scale_format.shortest_decimal(sr),
                prj_name(&prj)
            )?;
            outln!("elements: {}", vals.join(", "))?;
            outln!("codes: {}", hex.join(", "))?;
            outln!("{}", counts_line(&counts))?;
        }
        Sub::Kappa(d) => {
            let s = code_of(&d.scale_format, d.scale, "--scale")?;
            let op = match d.op {
                KappaOp::Dot => BlockOp::DotProduct,
                KappaOp::Reduce => BlockOp::ReduceAdd,
            };
            let spec = KappaSpec {
                op,
                format: d.format,
                scale_format: d.scale_format,
                scales: (s, s),
                k: d.k,
                out: d.out,
                projection: d.projection.projection(),
                acc: AccumOptions::new(d.acc).method(d.method),
            };
            let n = block::exhaustive_count(&spec);
            let inputs = match n {
                Some(n) if n <= d.max_exhaustive.min(block::MAX_EXHAUSTIVE) => Inputs::Exhaustive,
                _ => Inputs::Sampled {
                    seed: d.projection.seed,
                    samples: d.samples,
                },
            };
            let (r, at) = match &d.scales {
                None => (block::kappa(&spec, inputs)?, None),
                Some(l) => {
                    let codes = codes_of(&d.scale_format, &l.0, "--scales")?;
                    let (r, at) = block::kappa_over_scales(&spec, &codes, inputs)?;
                    (r, Some(at))
                }
            };
            let scale_text = match (&d.scales, at) {
                (Some(l), Some((a, b))) => format!(
                    "scales {}; worst at {}, {}",
                    l.0.iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                    d.scale_format.decode(a),
                    d.scale_format.decode(b)
                ),
                _ => format!("scale {}", d.scale),
            };
            outln!(
                "{} of K = {} {} ({scale_text}), {} accumulator ({}), into {} ({}):",
                op.name(),
                d.k,
                d.format.name(),
                d.acc.name(),
                d.method,
                d.out.name(),
                prj_name(&spec.projection)
            )?;
            outln!(
                "kappa = {} over {} inputs ({}; {} with a finite defined result, {} differ)",
                r.kappa,
                r.inputs,
                if r.exhaustive {
                    "exhaustive".to_string()
                } else {
                    format!(
                        "{} random, seed {}, and adversarial",
                        d.samples, d.projection.seed
                    )
                },
                r.finite,
                r.differ
            )?;
            if let Some(w) = &r.witness {
                // the values themselves (not the shortest decimals that round to them: a
                // witness is read digit by digit) and their codes
                let v = |cs: &[u64]| -> String {
                    let vals: Vec<String> =
                        cs.iter().map(|&c| d.format.decode(c).to_string()).collect();
                    let codes: Vec<String> = cs.iter().map(|c| format!("{c:#x}")).collect();
                    format!("{} (codes {})", vals.join(","), codes.join(","))
                };
                let res = |c: Option<u64>| match c {
                    Some(c) => format!("{} (code {c:#x})", d.out.decode(c)),
                    None => "NaN".into(),
                };
                if w.b.is_empty() {
                    outln!("witness: x = {}", v(&w.a))?;
                } else {
                    outln!("witness: a = {}; b = {}", v(&w.a), v(&w.b))?;
                }
                outln!(
                    "  exact rounded once: {}; accumulated: {}",
                    res(w.exact),
                    res(w.approx)
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The status line under a block's codes: `inexact …, overflow …, saturated …, NaN …`.
fn counts_line(c: &lowprec::ops::Counts) -> String {
    format!(
        "inexact {}, overflow {}, saturated {}, NaN {}",
        c.inexact, c.overflow, c.saturated, c.nan
    )
}
