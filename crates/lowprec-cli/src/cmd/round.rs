//! `lowprec round FORMAT IN.npy -o OUT.npy`: round an array; write values or codes.

use super::{check_output, read_npy, status_line, RoundArgs};
use anyhow::{bail, Result};
use lowprec::io::npy::{self, Array, Data};
use lowprec::{encode_vec, round_vec, Code, Float, FloatFormat, RoundOptions, Status};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec round`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec round fp8-e5m2 weights.npy -o rounded.npy --rounding sr --seed 7
  lowprec round fp4-e2m1 weights.npy -o codes.npy --codes")]
pub struct Args {
    /// The format.
    pub format: FloatFormat,
    /// Input `.npy`: float32, float64 (or float16), any shape, C order.
    pub input: PathBuf,
    /// Output `.npy`: values in the input's dtype (float64 where float32 cannot hold the
    /// format), or with --codes the codes in the smallest unsigned dtype that holds them.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub round: RoundArgs,
    /// Write codes instead of values.
    #[arg(long)]
    pub codes: bool,
}

fn codes_of<I: Float>(f: &FloatFormat, x: &[I], o: &RoundOptions) -> Result<(Data, Status)> {
    fn go<I: Float, C: Code>(
        f: &FloatFormat,
        x: &[I],
        o: &RoundOptions,
    ) -> Result<(Vec<C>, Status)> {
        Ok(encode_vec::<I, C>(f, x, o)?)
    }
    Ok(match f.bits() {
        0..=8 => go::<I, u8>(f, x, o).map(|(c, s)| (Data::U8(c), s))?,
        9..=16 => go::<I, u16>(f, x, o).map(|(c, s)| (Data::U16(c), s))?,
        17..=32 => go::<I, u32>(f, x, o).map(|(c, s)| (Data::U32(c), s))?,
        _ => go::<I, u64>(f, x, o).map(|(c, s)| (Data::U64(c), s))?,
    })
}

fn values_of_f32(f: &FloatFormat, x: &[f32], o: &RoundOptions) -> Result<(Data, Status)> {
    if f.fits_f32() {
        let (v, s) = round_vec(f, x, o)?;
        Ok((Data::F32(v), s))
    } else {
        let mut v = vec![0f64; x.len()];
        let s = lowprec::round_into(f, x, &mut v, o)?;
        Ok((Data::F64(v), s))
    }
}

/// Run `lowprec round`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let f = a.format;
    let opts = a.round.options();
    check_output(&a.input, &a.output)?;
    let arr = read_npy(&a.input)?;
    let (data, st) = match &arr.data {
        Data::F32(x) if a.codes => codes_of(&f, x, &opts)?,
        Data::F64(x) if a.codes => codes_of(&f, x, &opts)?,
        Data::F32(x) => values_of_f32(&f, x, &opts)?,
        Data::F64(x) => {
            let (v, s) = round_vec(&f, x, &opts)?;
            (Data::F64(v), s)
        }
        Data::F16(h) => {
            let x: Vec<f32> = lowprec::decode_vec(&FloatFormat::FP16, h)?;
            if a.codes {
                codes_of(&f, &x, &opts)?
            } else {
                values_of_f32(&f, &x, &opts)?
            }
        }
        d => bail!(
            "{}: lowprec rounds float16/float32/float64 arrays, not {}",
            a.input.display(),
            d.dtype_name()
        ),
    };
    let what = if a.codes { "codes" } else { "values" };
    npy::write(
        &a.output,
        &Array {
            shape: arr.shape.clone(),
            data,
        },
    )?;
    errln!(
        "{} -> {} {} of {} ({}, {}): {}",
        a.input.display(),
        a.output.display(),
        what,
        f,
        opts.mode.short_name(),
        opts.overflow.short_name(),
        status_line(&st, arr.data.len())
    );
    Ok(ExitCode::SUCCESS)
}
