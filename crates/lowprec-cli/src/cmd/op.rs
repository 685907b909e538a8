//! `lowprec op OP A.npy [B.npy [C.npy]] --in F[,F…] --out F -o OUT.npy`: an operation of the
//! P3109 draft (or IEEE 754) over arrays, each element rounded once.

use super::ProjectionArgs;
use anyhow::{bail, Context, Result};
use lowprec::io::npy::{self, Array, Data};
use lowprec::ops::{self, Kind, Op};
use lowprec::FloatFormat;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec op`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec op add a.npy b.npy --in binary8p4se --out binary8p3se -o sum.npy
  lowprec op fma a.npy b.npy c.npy --in binary8p4se,binary8p4se,fp32 --out fp32 -o r.npy -r rtz
  lowprec op sqrt codes.npy --in fp16 --out binary8p3se --sat finite -o r.npy --values

Operands are .npy arrays of the same shape: unsigned integers are codes of the operand's
format, floating-point arrays are values, which must be exactly representable in it.")]
pub struct Args {
    /// The operation (Add, Subtract, Multiply, Divide, FMA, FAA, Sqrt, Recip, RSqrt, Convert,
    /// Negate, Abs, Minimum…, CompareLess…, Is…, Class, NextGreaterThan…; short names add,
    /// sub, mul, div, fma, …).
    #[arg(value_parser = parse_op)]
    pub op: Op,
    /// The operand arrays (.npy), as many as the operation takes.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The operands' formats, comma-separated (one format for all operands, or one each).
    #[arg(long = "in", value_delimiter = ',', required = true)]
    pub formats: Vec<FloatFormat>,
    /// The result format (for the numeric operations).
    #[arg(long = "out")]
    pub out_format: Option<FloatFormat>,
    /// The output .npy: codes (uint8/16/32/64 by width; 0/1 for predicates, the class index
    /// for Class), or float64 values with --values.
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// Write values (float64) instead of codes.
    #[arg(long)]
    pub values: bool,
    #[command(flatten)]
    pub projection: ProjectionArgs,
}

/// Parse an operation name for clap.
pub fn parse_op(s: &str) -> std::result::Result<Op, String> {
    Op::parse(s).ok_or_else(|| {
        format!(
            "unknown operation `{s}`; write one of {} (or add, sub, mul, div, fma, neg, min, max, lt, le, eq, gt, ge, nextup, nextdown)",
            Op::names()
        )
    })
}

/// The codes of one operand array, checked against its format.
pub fn operand_codes(a: &Array, f: &FloatFormat, which: usize) -> Result<Vec<u64>> {
    let check_code = |c: u64, i: usize| -> Result<u64> {
        if c > f.max_code() {
            bail!(
                "operand {which} element {i}: code {c} is beyond {}'s {} bits; give codes below {}",
                f.name(),
                f.bits(),
                f.max_code() + 1
            );
        }
        Ok(c)
    };
    let exact = |v: f64, i: usize| -> Result<u64> {
        if v.is_nan() {
            return f.nan_code(false).with_context(|| {
                format!(
                    "operand {which} element {i}: NaN, and {} has no NaN",
                    f.name()
                )
            });
        }
        let c = f
            .encode(v, &lowprec::RoundOptions::default())
            .ok()
            .filter(|&c| {
                let d = f.decode(c);
                d == v
                    && (d != 0.0
                        || d.is_sign_negative() == v.is_sign_negative()
                        || !f.has_negative_zero())
            });
        c.with_context(|| {
            format!(
                "operand {which} element {i}: {v} is not exactly representable in {}; give its values or codes (`lowprec encode {} {v}` shows the nearest)",
                f.name(),
                f.name()
            )
        })
    };
    Ok(match &a.data {
        Data::U8(v) => v
            .iter()
            .enumerate()
            .map(|(i, &c)| check_code(c as u64, i))
            .collect::<Result<_>>()?,
        Data::U16(v) => v
            .iter()
            .enumerate()
            .map(|(i, &c)| check_code(c as u64, i))
            .collect::<Result<_>>()?,
        Data::U32(v) => v
            .iter()
            .enumerate()
            .map(|(i, &c)| check_code(c as u64, i))
            .collect::<Result<_>>()?,
        Data::U64(v) => v
            .iter()
            .enumerate()
            .map(|(i, &c)| check_code(c, i))
            .collect::<Result<_>>()?,
        Data::F64(v) => v
            .iter()
            .enumerate()
            .map(|(i, &x)| exact(x, i))
            .collect::<Result<_>>()?,
        Data::F32(v) => v
            .iter()
            .enumerate()
            .map(|(i, &x)| exact(x as f64, i))
            .collect::<Result<_>>()?,
        Data::F16(v) => v
            .iter()
            .enumerate()
            .map(|(i, &x)| exact(FloatFormat::FP16.decode(x as u64), i))
            .collect::<Result<_>>()?,
        Data::BF16(v) => v
            .iter()
            .enumerate()
            .map(|(i, &x)| exact(FloatFormat::BF16.decode(x as u64), i))
            .collect::<Result<_>>()?,
    })
}

/// The formats of `n` operands from the `--in` list.
pub fn operand_formats(op: Op, given: &[FloatFormat]) -> Result<Vec<FloatFormat>> {
    let n = op.arity();
    match given.len() {
        1 => Ok(vec![given[0]; n]),
        k if k == n => Ok(given.to_vec()),
        k => bail!(
            "{op} takes {n} operands and --in gives {k} formats; give one format for all or {n} comma-separated"
        ),
    }
}

/// The result format: `--out`, or for non-numeric operations the first operand's.
pub fn result_format(op: Op, out: Option<FloatFormat>, first: FloatFormat) -> Result<FloatFormat> {
    match (op.kind(), out) {
        (Kind::Numeric, Some(f)) => Ok(f),
        (Kind::Numeric, None) => bail!(
            "{op} needs a result format; add --out FORMAT (e.g. --out {})",
            first.name()
        ),
        (_, _) => Ok(first),
    }
}

/// Run `lowprec op`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let op = a.op;
    if a.inputs.len() != op.arity() {
        bail!(
            "{op} takes {} operand arrays, {} given",
            op.arity(),
            a.inputs.len()
        );
    }
    let fmts = operand_formats(op, &a.formats)?;
    let out = result_format(op, a.out_format, fmts[0])?;
    for input in &a.inputs {
        super::check_output(input, &a.output)?;
    }
    let arrays: Vec<Array> = a
        .inputs
        .iter()
        .map(|p| super::read_npy(p))
        .collect::<Result<_>>()?;
    for (i, arr) in arrays.iter().enumerate().skip(1) {
        if arr.shape != arrays[0].shape {
            bail!(
                "operand {} has shape {:?} and operand 1 {:?}; give arrays of the same shape",
                i + 1,
                arr.shape,
                arrays[0].shape
            );
        }
    }
    let codes: Vec<Vec<u64>> = arrays
        .iter()
        .zip(&fmts)
        .enumerate()
        .map(|(i, (arr, f))| operand_codes(arr, f, i + 1))
        .collect::<Result<_>>()?;
    let operands: Vec<(FloatFormat, &[u64])> = fmts
        .iter()
        .zip(&codes)
        .map(|(f, c)| (*f, c.as_slice()))
        .collect();
    let n = codes[0].len();
    let mut result = vec![0u64; n];
    let prj = a.projection.projection();
    let counts = ops::apply(
        op,
        &operands,
        &out,
        &prj,
        ops::Random::Seeded {
            seed: a.projection.seed,
            index_offset: 0,
        },
        &mut result,
    )?;
    let data = if a.values && matches!(op.kind(), Kind::Numeric | Kind::SameFormat) {
        Data::F64(result.iter().map(|&c| out.decode(c)).collect())
    } else if a.values {
        Data::F64(result.iter().map(|&c| c as f64).collect())
    } else {
        let bits = match op.kind() {
            Kind::Boolean | Kind::Class => 8,
            Kind::Numeric | Kind::SameFormat => out.bits(),
        };
        match bits {
            0..=8 => Data::U8(result.iter().map(|&c| c as u8).collect()),
            9..=16 => Data::U16(result.iter().map(|&c| c as u16).collect()),
            17..=32 => Data::U32(result.iter().map(|&c| c as u32).collect()),
            _ => Data::U64(result),
        }
    };
    npy::write(
        &a.output,
        &Array {
            shape: arrays[0].shape.clone(),
            data,
        },
    )?;
    outln!(
        "{op} → {} ({}, {}): {} elements, inexact {}, overflow {}, underflow {}, saturated {}, invalid {}, NaN {}; wrote {}",
        out.name(),
        prj.rounding.name(),
        prj.saturation,
        counts.total,
        counts.inexact,
        counts.overflow,
        counts.underflow,
        counts.saturated,
        counts.invalid,
        counts.nan,
        a.output.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
