//! `lowprec decode FORMAT CODE...` or `lowprec decode FORMAT CODES.npy -o OUT.npy`.

use super::{check_output, read_npy};
use crate::table::{num, Table};
use anyhow::{bail, Context, Result};
use lowprec::io::npy::{self, Array, Data};
use lowprec::{decode_vec, FloatFormat};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec decode`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec decode bf16 0x3f80 0xc000
  lowprec decode fp8-e4m3 0x7e 0x7f 0x80
  lowprec decode fp4-e2m1 codes.npy -o values.npy")]
pub struct Args {
    /// The format.
    pub format: FloatFormat,
    /// Codes (`0x…`, `0b…` or decimal), or one `.npy` file of unsigned integer codes.
    #[arg(required = true)]
    pub codes: Vec<String>,
    /// Output `.npy` (with a `.npy` input).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Output dtype.
    #[arg(long, value_enum, default_value = "f64")]
    pub dtype: OutDtype,
}

/// The dtype of decoded values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutDtype {
    /// binary32.
    #[value(alias = "float32")]
    F32,
    /// binary64.
    #[value(alias = "float64")]
    F64,
}

fn parse_code(s: &str) -> Result<u64> {
    let t = s.trim();
    let r = if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else if let Some(b) = t.strip_prefix("0b") {
        u64::from_str_radix(&b.replace(['_', ' '], ""), 2)
    } else {
        t.parse::<u64>()
    };
    r.with_context(|| format!("`{s}` is not a code (write 0x7e, 0b01111110 or 126)"))
}

/// Run `lowprec decode`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let f = a.format;
    if a.codes.len() == 1 && a.codes[0].ends_with(".npy") {
        let input = PathBuf::from(&a.codes[0]);
        let Some(out) = &a.output else {
            bail!("decoding a .npy file needs an output: add -o OUT.npy");
        };
        check_output(&input, out)?;
        let arr = read_npy(&input)?;
        let f32_out = a.dtype == OutDtype::F32;
        macro_rules! dec {
            ($codes:expr) => {
                if f32_out {
                    Data::F32(decode_vec(&f, $codes)?)
                } else {
                    Data::F64(decode_vec(&f, $codes)?)
                }
            };
        }
        let data = match &arr.data {
            Data::U8(c) => dec!(c),
            Data::U16(c) => dec!(c),
            Data::U32(c) => dec!(c),
            Data::U64(c) => dec!(c),
            d => bail!(
                "{}: codes must be an unsigned integer array (uint8/16/32/64), not {}",
                input.display(),
                d.dtype_name()
            ),
        };
        npy::write(
            out,
            &Array {
                shape: arr.shape.clone(),
                data,
            },
        )?;
        errln!(
            "decoded {} {} codes from {} into {}",
            arr.data.len(),
            f,
            input.display(),
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if a.output.is_some() {
        bail!("-o is for decoding a .npy file; give one CODES.npy argument");
    }
    let mut t = Table::new(&["code", "bits", "value"]);
    for s in &a.codes {
        let c = parse_code(s)?;
        if c > f.max_code() {
            bail!(
                "code {c:#x} does not fit in {}'s {} bits (largest code {:#x})",
                f,
                f.bits(),
                f.max_code()
            );
        }
        t.row(vec![
            format!("{c:#0w$x}", w = 2 + (f.bits() as usize).div_ceil(4)),
            f.bits_str(c),
            num(f.decode(c)),
        ]);
    }
    outln!("{}:", f.describe())?;
    out!("{}", t.render())?;
    Ok(ExitCode::SUCCESS)
}
