//! `lowprec gemm`: the error of a matrix product with low-precision inputs and accumulator.

use super::{samples, Dist, RoundArgs};
use crate::table::Table;
use anyhow::{bail, Result};
use lowprec::accum::dot::reference_product;
use lowprec::accum::{gemm, GemmOptions, Order};
use lowprec::metrics::rel_error;
use lowprec::scheme::Scheme;
use lowprec::FloatFormat;
use serde::Serialize;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `lowprec gemm`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec gemm --m 512 --n 512 --k 512 --input-format fp8-e4m3 --acc bf16 --chunk 128
  lowprec gemm --k 4096 --input-format mxfp8 --acc fp16 --order blocked:32
  lowprec gemm --input-format bf16 --acc bf16 --order pairwise --json

--input-format takes a format (the inputs are rounded to it, nearest even, saturating) or a
block scheme (mxfp4, mx:fp8-e5m2:block=32, nvfp4, int8:group=128, tensor:fp8-e4m3, …), whose
blocks run along k for both A and B. The table splits the error of C into the part the
rounded inputs cause and the part the accumulation adds.")]
pub struct Args {
    /// Rows of A and C.
    #[arg(long, default_value_t = 256)]
    pub m: usize,
    /// Columns of B and C.
    #[arg(long, default_value_t = 256)]
    pub n: usize,
    /// The reduction length (columns of A, rows of B).
    #[arg(long, default_value_t = 1024)]
    pub k: usize,
    /// Format or block scheme of the inputs (`none`: binary64 inputs as generated).
    #[arg(long, default_value = "fp8-e4m3")]
    pub input_format: InputFormat,
    /// Round each product to this format (nearest even) before adding; default exact.
    #[arg(long)]
    pub product: Option<FloatFormat>,
    /// The accumulator format.
    #[arg(long, default_value = "bf16")]
    pub acc: FloatFormat,
    #[command(flatten)]
    pub round: RoundArgs,
    /// Promote into --outer every N products (0: never).
    #[arg(long, default_value_t = 0)]
    pub chunk: usize,
    /// The promotion accumulator.
    #[arg(long, default_value = "fp32")]
    pub outer: FloatFormat,
    /// sequential, pairwise or blocked:G (fused groups of G products, tensor-core style).
    #[arg(long, default_value = "sequential")]
    pub order: Order,
    /// Distribution of the entries of A and B.
    #[arg(long, value_enum, default_value = "normal")]
    pub dist: Dist,
    /// Seed of the generated A and B.
    #[arg(long, default_value_t = 1)]
    pub data_seed: u64,
    /// Print a JSON record instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The GEMM error record.
#[derive(Serialize, Debug)]
pub struct Record {
    m: usize,
    n: usize,
    k: usize,
    input: String,
    product: String,
    acc: String,
    rounding: String,
    order: String,
    chunk: usize,
    outer: String,
    /// ‖C_X − C‖/‖C‖ (Frobenius): the rounded inputs' share.
    input_rel_error: f64,
    /// ‖Ĉ − C_X‖/‖C_X‖: the accumulation's share.
    accum_rel_error: f64,
    /// ‖Ĉ − C‖/‖C‖: both.
    total_rel_error: f64,
    /// Largest |ĉ − c|/|c| per output (against C_X).
    max_rel: f64,
    /// Mean of |ĉ − c|/|c| per output.
    mean_rel: f64,
    /// Largest |ĉ − c| / Σ|a||b|.
    max_normalized: f64,
    /// The classical bound of the order.
    bound: f64,
    inexact_adds: u64,
    overflow: u64,
    nonfinite_outputs: u64,
    inexact_products: u64,
    seconds: f64,
}

/// `--input-format`: `none` (binary64 inputs), a format (a plain cast), or a scheme; with
/// the text as given, for the record.
#[derive(Clone, Debug)]
pub struct InputFormat {
    text: String,
    scheme: Option<Scheme>,
}

impl std::str::FromStr for InputFormat {
    type Err = lowprec::Error;
    fn from_str(s: &str) -> lowprec::Result<InputFormat> {
        let scheme = if s.eq_ignore_ascii_case("none") {
            None
        } else if let Ok(f) = FloatFormat::parse(s) {
            Some(Scheme::cast(f))
        } else {
            Some(Scheme::parse(s)?)
        };
        Ok(InputFormat {
            text: s.to_string(),
            scheme,
        })
    }
}

/// Run `lowprec gemm`.
pub fn run(a: &Args) -> Result<ExitCode> {
    if a.m == 0 || a.n == 0 || a.k == 0 {
        bail!("--m, --n and --k must be at least 1");
    }
    // A, B and C in binary64, with a rounded and an exact copy of each
    let (m, n, k) = (a.m as u128, a.n as u128, a.k as u128);
    super::check_memory(
        &format!("--m {} --k {} --n {}", a.m, a.k, a.n),
        m * k + k * n + m * n,
        24,
    )?;
    if a.m.saturating_mul(a.n).saturating_mul(a.k) > 1 << 36 {
        bail!(
            "m·n·k = {} is beyond this simulator's 2^36; use smaller matrices",
            a.m as u128 * a.n as u128 * a.k as u128
        );
    }
    let mut o = GemmOptions::new(a.acc)
        .rounding(a.round.options())
        .order(a.order)
        .chunk(a.chunk);
    o.outer = a.outer;
    o.input = a.input_format.scheme;
    o.product = a.product;
    let x = samples(a.dist, a.m * a.k + a.k * a.n, a.data_seed);
    let (am, bm) = x.split_at(a.m * a.k);
    let t0 = Instant::now();
    let r = gemm(am, bm, a.m, a.n, a.k, &o)?;
    let secs = t0.elapsed().as_secs_f64();
    let (c_true, _, _) = reference_product(am, bm, a.m, a.n, a.k);
    let rec = Record {
        m: a.m,
        n: a.n,
        k: a.k,
        input: a.input_format.text.clone(),
        product: a.product.map_or("exact".into(), |p| p.name().into_owned()),
        acc: o.acc.name().into_owned(),
        rounding: o.rounding.mode.short_name().into(),
        order: o.order.to_string(),
        chunk: o.chunk,
        outer: o.outer.name().into_owned(),
        input_rel_error: rel_error(&r.exact, &c_true),
        accum_rel_error: rel_error(&r.c, &r.exact),
        total_rel_error: rel_error(&r.c, &c_true),
        max_rel: r.max_rel,
        mean_rel: r.mean_rel,
        max_normalized: r.max_normalized,
        bound: r.bound,
        inexact_adds: r.status.inexact,
        overflow: r.status.overflow,
        nonfinite_outputs: r.status.nan + r.status.infinite,
        inexact_products: r.inexact_products,
        seconds: secs,
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&rec)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let e = |v: f64| {
        if v == 0.0 || !v.is_finite() {
            format!("{v}")
        } else {
            format!("{v:.3e}")
        }
    };
    outln!(
        "C = A·B, {}×{} times {}×{} ({} entries), inputs {}, products {}, accumulator {} ({}), order {}, promotion {}",
        a.m,
        a.k,
        a.k,
        a.n,
        a.dist.name(),
        rec.input,
        rec.product,
        rec.acc,
        rec.rounding,
        rec.order,
        if o.chunk > 0 {
            format!("into {} every {}", rec.outer, o.chunk)
        } else {
            "none".into()
        }
    )?;
    let mut t = Table::new(&["error of C", "value"]);
    for (k, v) in [
        ("inputs rounded: ‖C_X − C‖/‖C‖", e(rec.input_rel_error)),
        ("accumulation: ‖Ĉ − C_X‖/‖C_X‖", e(rec.accum_rel_error)),
        ("total: ‖Ĉ − C‖/‖C‖", e(rec.total_rel_error)),
        ("max |ĉ − c|/|c| (vs C_X)", e(rec.max_rel)),
        ("mean |ĉ − c|/|c| (vs C_X)", e(rec.mean_rel)),
        ("max |ĉ − c|/Σ|a||b| (vs C_X)", e(rec.max_normalized)),
        ("classical bound of the order", e(rec.bound)),
        ("inexact additions", rec.inexact_adds.to_string()),
        ("overflowing additions", rec.overflow.to_string()),
        ("non-finite outputs", rec.nonfinite_outputs.to_string()),
        ("seconds (simulation + reference)", format!("{secs:.3}")),
    ] {
        t.row(vec![k.to_string(), v]);
    }
    out!("{}", t.render())?;
    Ok(ExitCode::SUCCESS)
}
