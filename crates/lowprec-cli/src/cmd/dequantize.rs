//! `lowprec dequantize`: a `.safetensors` file written by `lowprec quantize` back to floats.

use super::check_output;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec dequantize`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec dequantize model.nvfp4.safetensors -o model.back.safetensors")]
pub struct Args {
    /// A `.safetensors` file written by `lowprec quantize`.
    pub input: PathBuf,
    /// The output `.safetensors`: every quantized tensor back in its original dtype and
    /// shape, the others copied.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Run `lowprec dequantize`.
pub fn run(a: &Args) -> Result<ExitCode> {
    check_output(&a.input, &a.output)?;
    let (scheme, n) = lowprec::io::quantized::dequantize_file(&a.input, &a.output)?;
    errln!(
        "{} -> {}: {n} tensors dequantized ({scheme})",
        a.input.display(),
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
