//! `lowprec p3109 conformance`: the P3109 draft's §4.5 minimum set of operation
//! specializations (ρ = NearestTiesToEven, SatNone) on Binary8p4se, Binary8p3se,
//! Binary4p2sf and binary32/binary16/bfloat16, checked at run time against the exact
//! reference ([`lowprec::ops::reference`]) and the draft's definitions written out here.

use crate::table::Table;
use anyhow::Result;
use lowprec::ops::{self, reference, Draft, Op, Projection, Rounding, Saturation};
use lowprec::FloatFormat;
use rayon::prelude::*;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `lowprec p3109`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec p3109 conformance --draft v4.0 --json")]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

/// What `lowprec p3109` does.
#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Check the §4.5 minimum set against the exact reference; exit 0 only with no mismatch.
    #[command(after_help = "Examples:
  lowprec p3109 conformance --draft v4.0 --json")]
    Conformance(ConformanceArgs),
}

/// Arguments of `lowprec p3109 conformance`.
#[derive(clap::Args, Debug)]
pub struct ConformanceArgs {
    /// The draft text for SatNone on finite formats: d1 (NaN) or v4.0 (max finite).
    #[arg(long, default_value = "d1")]
    pub draft: Draft,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

struct Check {
    op: String,
    formats: String,
    coverage: &'static str,
    cases: u64,
    mismatches: u64,
    first: Option<String>,
}

fn f8() -> Vec<FloatFormat> {
    vec![FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P3SE]
}
fn f4() -> Vec<FloatFormat> {
    vec![FloatFormat::BINARY4P2SF]
}
fn fx() -> Vec<FloatFormat> {
    vec![FloatFormat::FP32, FloatFormat::FP16, FloatFormat::BF16]
}

/// Every code of a format, or (binary32) 2^18 spread patterns plus the specials.
fn codes(f: &FloatFormat) -> (Vec<u64>, &'static str) {
    if f.bits() <= 16 {
        return ((0..=f.max_code()).collect(), "exhaustive");
    }
    let mut v: Vec<u64> = (0..1u64 << 18)
        .map(|i| lowprec::round::random_bits(0x3109, i) as u64 & f.max_code())
        .collect();
    for x in [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        3.0,
        0.1,
    ] {
        v.push(x.to_bits() as u64);
    }
    (v, "2^18 random + specials")
}

/// Check an arithmetic operation over the product of operand code lists.
fn arith(
    op: Op,
    ins: &[(FloatFormat, Vec<u64>)],
    out: &FloatFormat,
    p: &Projection,
    coverage: &'static str,
) -> Check {
    let sizes: Vec<usize> = ins.iter().map(|i| i.1.len()).collect();
    let total: usize = sizes.iter().product();
    let results: Vec<(u64, Option<String>)> = (0..total)
        .into_par_iter()
        .with_min_len(256)
        .fold(
            || (0u64, None),
            |(mut bad, mut first), mut idx| {
                let mut operands = Vec::with_capacity(ins.len());
                for (f, list) in ins.iter().rev() {
                    operands.push((*f, list[idx % list.len()]));
                    idx /= list.len();
                }
                operands.reverse();
                let fast = ops::apply_scalar(op, &operands, out, p, 0)
                    .map(|o| o.code)
                    .ok();
                let vals: Vec<(FloatFormat, f64)> =
                    operands.iter().map(|(f, c)| (*f, f.decode(*c))).collect();
                let want = reference::arithmetic(op, &vals, out, p);
                if want.is_some() && fast != want {
                    bad += 1;
                    first.get_or_insert_with(|| {
                        format!(
                            "{op}{:?} → {}: got {fast:?}, reference {want:?}",
                            vals.iter().map(|v| v.1).collect::<Vec<_>>(),
                            out.name()
                        )
                    });
                }
                (bad, first)
            },
        )
        .collect();
    let mismatches = results.iter().map(|r| r.0).sum();
    Check {
        op: op.name().into(),
        formats: format!(
            "{} → {}",
            ins.iter()
                .map(|i| i.0.name().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            out.name()
        ),
        coverage,
        cases: total as u64,
        mismatches,
        first: results.into_iter().find_map(|r| r.1),
    }
}

/// The draft's definitions of the non-arithmetic operations on P3109 formats (§4.11–4.16),
/// written out independently of the library.
fn other(op: Op, f: &FloatFormat, a: u64, b: u64) -> u64 {
    let (x, y) = (f.decode(a), f.decode(b));
    let nan = f.nan_code(false).unwrap_or(0);
    let code_of = |v: f64| {
        if v.is_nan() {
            nan
        } else if v == x {
            a
        } else {
            b
        }
    };
    let minmax = |min: bool, number: bool, mag: bool, finite: bool| -> u64 {
        // Number and Finite variants ignore one NaN; Finite ones also an infinity beside a
        // finite operand
        if number || finite {
            if x.is_nan() && !y.is_nan() {
                return b;
            }
            if y.is_nan() && !x.is_nan() {
                return a;
            }
        }
        if finite && x.is_infinite() && y.is_finite() {
            return b;
        }
        if finite && y.is_infinite() && x.is_finite() {
            return a;
        }
        if x.is_nan() || y.is_nan() {
            return nan;
        }
        let (kx, ky) = if mag { (x.abs(), y.abs()) } else { (x, y) };
        let pick_x = if kx == ky {
            if min {
                x <= y
            } else {
                x >= y
            }
        } else if min {
            kx < ky
        } else {
            kx > ky
        };
        code_of(if pick_x { x } else { y })
    };
    match op {
        Op::Minimum => minmax(true, false, false, false),
        Op::Maximum => minmax(false, false, false, false),
        Op::MinimumNumber => minmax(true, true, false, false),
        Op::MaximumNumber => minmax(false, true, false, false),
        Op::MinimumMagnitude => minmax(true, false, true, false),
        Op::MaximumMagnitude => minmax(false, false, true, false),
        Op::MinimumMagnitudeNumber => minmax(true, true, true, false),
        Op::MaximumMagnitudeNumber => minmax(false, true, true, false),
        Op::MinimumFinite => minmax(true, false, false, true),
        Op::MaximumFinite => minmax(false, false, false, true),
        Op::CompareLess => (x < y) as u64,
        Op::CompareLessEqual => (x <= y) as u64,
        Op::CompareEqual => (x == y) as u64,
        Op::CompareGreater => (x > y) as u64,
        Op::CompareGreaterEqual => (x >= y) as u64,
        Op::IsZero => (x == 0.0) as u64,
        Op::IsOne => (x == 1.0) as u64,
        Op::IsNaN => x.is_nan() as u64,
        Op::IsInfinite => x.is_infinite() as u64,
        Op::IsFinite => x.is_finite() as u64,
        Op::IsSignMinus => (x < 0.0) as u64,
        Op::IsNormal => (x.is_finite() && x.abs() >= f.min_normal()) as u64,
        Op::IsSubnormal => (x.is_finite() && x != 0.0 && x.abs() < f.min_normal()) as u64,
        Op::NextGreaterThan | Op::NextLessThan => {
            // walk the codes in value order
            let up = op == Op::NextGreaterThan;
            if x.is_nan() || (up && x == f64::INFINITY) || (!up && x == f64::NEG_INFINITY) {
                return nan;
            }
            let mut best: Option<(f64, u64)> = None;
            for c in 0..=f.max_code() {
                let v = f.decode(c);
                if v.is_nan() || (up && v <= x) || (!up && v >= x) {
                    continue;
                }
                if best.is_none_or(|(bv, _)| if up { v < bv } else { v > bv }) {
                    best = Some((v, c));
                }
            }
            best.map_or(nan, |b| b.1)
        }
        _ => unreachable!(),
    }
}

fn others(op: Op, f: &FloatFormat) -> Check {
    let n = f.max_code() + 1;
    let two = op.arity() == 2;
    let total = if two { n * n } else { n };
    let p = Projection::default();
    let mut bad = 0;
    let mut first = None;
    for idx in 0..total {
        let (a, b) = if two { (idx / n, idx % n) } else { (idx, 0) };
        let operands: Vec<(FloatFormat, u64)> = if two {
            vec![(*f, a), (*f, b)]
        } else {
            vec![(*f, a)]
        };
        let got = ops::apply_scalar(op, &operands, f, &p, 0)
            .ok()
            .and_then(|o| o.code);
        let want = other(op, f, a, b);
        if got != Some(want) {
            bad += 1;
            first.get_or_insert_with(|| {
                format!(
                    "{op}({a:#x}, {b:#x}) in {}: got {got:?}, definition {want:#x}",
                    f.name()
                )
            });
        }
    }
    Check {
        op: op.name().into(),
        formats: f.name().to_string(),
        coverage: "exhaustive",
        cases: total,
        mismatches: bad,
        first,
    }
}

/// The format queries against the draft's formulas from K and P.
fn queries(f: &FloatFormat) -> Check {
    let (k, p, signed, ext) = f.p3109_params().map_or(
        (f.bits(), f.man_bits() + 1, f.is_signed(), f.has_inf()),
        |t| t,
    );
    let bias = if !f.specials().is_p3109() {
        f.bias()
    } else if signed {
        1i32 << (k - p - 1)
    } else {
        1 << (k - p)
    };
    let m = p as i32 - 1;
    let emax_field = if f.specials().is_p3109() {
        // the largest finite code's exponent field, from the codes of the draft's Table 3
        let max = if signed {
            (1u64 << (k - 1)) - 1 - ext as u64
        } else {
            (1u64 << k) - 2 - ext as u64
        };
        (max >> m) as i32
    } else {
        ((f.max_mag()) >> m) as i32
    };
    let max_code = if f.specials().is_p3109() {
        if signed {
            (1u64 << (k - 1)) - 1 - ext as u64
        } else {
            (1u64 << k) - 2 - ext as u64
        }
    } else {
        f.max_mag()
    };
    let max_finite =
        (1.0 + (max_code & ((1 << m) - 1)) as f64 / 2f64.powi(m)) * 2f64.powi(emax_field - bias);
    let min_normal = 2f64.powi(1 - bias);
    let want: Vec<(&str, f64)> = vec![
        ("BitwidthOf", k as f64),
        ("PrecisionOf", p as f64),
        ("SignednessOf", signed as u8 as f64),
        ("DomainOf", ext as u8 as f64),
        ("ExponentBitwidthOf", (k - p + !signed as u32) as f64),
        ("TrailingSignificandBitwidthOf", m as f64),
        ("ExponentBiasOf", bias as f64),
        ("MaxFiniteOf", max_finite),
        ("MinFiniteOf", if signed { -max_finite } else { 0.0 }),
        (
            "MinPositiveOf",
            if m > 0 {
                min_normal * 2f64.powi(-m)
            } else {
                min_normal
            },
        ),
        (
            "MaxSubnormalOf",
            if m > 0 {
                min_normal - min_normal * 2f64.powi(-m)
            } else {
                f64::NAN
            },
        ),
        ("MinNormalOf", min_normal),
    ];
    let got = ops::queries(f);
    let mut bad = 0;
    let mut first = None;
    for ((name, g), (wname, w)) in got.iter().zip(&want) {
        let same = name == wname && (g == w || (g.is_nan() && w.is_nan()));
        if !same {
            bad += 1;
            first.get_or_insert_with(|| format!("{name} of {}: {g}, draft {w}", f.name()));
        }
    }
    Check {
        op: "format queries (12)".into(),
        formats: f.name().to_string(),
        coverage: "exhaustive",
        cases: want.len() as u64,
        mismatches: bad,
        first,
    }
}

/// Run `lowprec p3109`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let Sub::Conformance(c) = &a.command;
    let started = Instant::now();
    let p = Projection {
        rounding: Rounding::NearestTiesToEven,
        saturation: Saturation::None,
        draft: c.draft,
    };
    let small: Vec<FloatFormat> = f4().into_iter().chain(f8()).collect();
    let all: Vec<FloatFormat> = small.iter().copied().chain(fx()).collect();
    let mut checks = vec![];
    for f in &all {
        let (list, cov) = codes(f);
        for g in &all {
            checks.push(arith(Op::Convert, &[(*f, list.clone())], g, &p, cov));
            checks.push(arith(Op::Recip, &[(*f, list.clone())], g, &p, cov));
        }
    }
    for f in &small {
        let list: Vec<u64> = (0..=f.max_code()).collect();
        checks.push(arith(
            Op::Negate,
            &[(*f, list.clone())],
            f,
            &p,
            "exhaustive",
        ));
        checks.push(arith(Op::Abs, &[(*f, list)], f, &p, "exhaustive"));
    }
    let outs: Vec<FloatFormat> = f8().into_iter().chain(fx()).collect();
    for f1 in &small {
        for f2 in &small {
            let l1: Vec<u64> = (0..=f1.max_code()).collect();
            let l2: Vec<u64> = (0..=f2.max_code()).collect();
            for fr in &outs {
                for op in [Op::Add, Op::Subtract, Op::Multiply] {
                    checks.push(arith(
                        op,
                        &[(*f1, l1.clone()), (*f2, l2.clone())],
                        fr,
                        &p,
                        "exhaustive",
                    ));
                }
            }
            for fr in fx() {
                // addends: zeros, ones, halves, the extremes, infinities, NaN and a few others
                let adds: Vec<u64> = [0.0f64, -1.0, 0.5, -0.75, 1e-3, f64::INFINITY]
                    .iter()
                    .map(|&v| fr.encode(v, &lowprec::RoundOptions::default()).unwrap_or(0))
                    .chain([1, fr.max_mag() | fr.sign_mask()])
                    .collect();
                for op in [Op::Fma, Op::Faa] {
                    checks.push(arith(
                        op,
                        &[(*f1, l1.clone()), (*f2, l2.clone()), (fr, adds.clone())],
                        &fr,
                        &p,
                        "all pairs × 8 addends",
                    ));
                }
            }
        }
    }
    for f in &small {
        for op in [
            Op::Minimum,
            Op::Maximum,
            Op::MinimumNumber,
            Op::MaximumNumber,
            Op::MinimumMagnitude,
            Op::MaximumMagnitude,
            Op::MinimumMagnitudeNumber,
            Op::MaximumMagnitudeNumber,
            Op::MinimumFinite,
            Op::MaximumFinite,
            Op::CompareLess,
            Op::CompareLessEqual,
            Op::CompareEqual,
            Op::CompareGreater,
            Op::CompareGreaterEqual,
            Op::IsZero,
            Op::IsOne,
            Op::IsNaN,
            Op::IsInfinite,
            Op::IsFinite,
            Op::IsSignMinus,
            Op::IsNormal,
            Op::IsSubnormal,
            Op::NextGreaterThan,
            Op::NextLessThan,
        ] {
            checks.push(others(op, f));
        }
    }
    for f in &all {
        checks.push(queries(f));
    }
    // Scaled operations with the scale format Binary8p1uf: every element pair, 9 scale pairs
    let fs = FloatFormat::BINARY8P1UF;
    let scales: Vec<(u64, u64)> = vec![(128, 128), (127, 129), (0, 128), (255, 128), (1, 254)];
    for f1 in &small {
        for fr in &outs {
            let l: Vec<u64> = (0..=f1.max_code()).collect();
            for op in [Op::ScaledAdd, Op::ScaledSubtract, Op::ScaledMultiply] {
                checks.push(scaled(op, fs, *f1, &l, &scales, fr, &p));
            }
        }
    }
    let bad: u64 = checks.iter().map(|c| c.mismatches).sum();
    let cases: u64 = checks.iter().map(|c| c.cases).sum();
    if c.json {
        let v: Vec<serde_json::Value> = checks
            .iter()
            .map(|c| serde_json::json!({"operation": c.op, "formats": c.formats, "coverage": c.coverage, "cases": c.cases, "mismatches": c.mismatches, "first": c.first}))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        let mut t = Table::new(&["operation", "formats", "coverage", "cases", "mismatches"]);
        for c in &checks {
            t.row(vec![
                c.op.clone(),
                c.formats.clone(),
                c.coverage.into(),
                c.cases.to_string(),
                c.mismatches.to_string(),
            ]);
        }
        out!("{}", t.render())?;
        for c in checks.iter().filter(|c| c.mismatches > 0) {
            outln!("first mismatch: {}", c.first.as_deref().unwrap_or("-"))?;
        }
        outln!(
            "P3109 §4.5 minimum set (NearestTiesToEven, SatNone, draft {:?}): {} specializations, {cases} cases, {bad} mismatches, {:.1} s",
            c.draft,
            checks.len(),
            started.elapsed().as_secs_f64()
        )?;
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A Scaled operation: the reference is the arithmetic operation on the exact products
/// `s·x` (exact in binary64 for a power-of-two scale), with the draft's semantics.
fn scaled(
    op: Op,
    fs: FloatFormat,
    fx: FloatFormat,
    elems: &[u64],
    scales: &[(u64, u64)],
    out: &FloatFormat,
    p: &Projection,
) -> Check {
    let base = match op {
        Op::ScaledAdd => Op::Add,
        Op::ScaledSubtract => Op::Subtract,
        _ => Op::Multiply,
    };
    let n = elems.len();
    let total = scales.len() * n * n;
    let prod = |s: u64, x: u64| {
        let (sv, xv) = (fs.decode(s), fx.decode(x));
        if (sv == 0.0 && xv.is_infinite()) || sv.is_nan() || xv.is_nan() {
            f64::NAN
        } else {
            sv * xv
        }
    };
    let results: Vec<(u64, Option<String>)> = (0..total)
        .into_par_iter()
        .with_min_len(256)
        .fold(
            || (0u64, None),
            |(mut bad, mut first), idx| {
                let (s1, s2) = scales[idx / (n * n)];
                let (x1, x2) = (elems[idx / n % n], elems[idx % n]);
                let operands = [(fs, s1), (fx, x1), (fs, s2), (fx, x2)];
                let got = ops::apply_scalar(op, &operands, out, p, 0).ok().map(|o| o.code);
                let want = reference::arithmetic_in_family(base, &[prod(s1, x1), prod(s2, x2)], out, p, true);
                if want.is_some() && got != want {
                    bad += 1;
                    first.get_or_insert_with(|| {
                        format!("{op}({s1:#x}, {x1:#x}, {s2:#x}, {x2:#x}) → {}: got {got:?}, reference {want:?}", out.name())
                    });
                }
                (bad, first)
            },
        )
        .collect();
    Check {
        op: op.name().into(),
        formats: format!("({}, {}) → {}", fs.name(), fx.name(), out.name()),
        coverage: "all element pairs × 5 scale pairs",
        cases: total as u64,
        mismatches: results.iter().map(|r| r.0).sum(),
        first: results.into_iter().find_map(|r| r.1),
    }
}
