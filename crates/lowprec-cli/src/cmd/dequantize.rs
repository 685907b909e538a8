//! `lowprec dequantize`: a `.safetensors` file written by `lowprec quantize`, or a GGUF
//! file, back to floats.

use super::check_output;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `lowprec dequantize`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec dequantize model.nvfp4.safetensors -o model.back.safetensors
  lowprec dequantize model.q8_0.gguf -o model.f32.safetensors")]
pub struct Args {
    /// A `.safetensors` file written by `lowprec quantize` (or a folder of such shards, the
    /// output then a folder), or a `.gguf` file (every tensor dequantized to F32 as
    /// llama.cpp's reference does; integer tensors copied).
    pub input: PathBuf,
    /// The output `.safetensors`: every quantized tensor back in its original dtype and
    /// shape, the others copied.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Run `lowprec dequantize`.
pub fn run(a: &Args) -> Result<ExitCode> {
    if super::sharded::is_sharded(&a.input) {
        let n = super::sharded::dequantize(&a.input, &a.output)?;
        errln!(
            "{} -> {}: {n} shards dequantized, index written",
            a.input.display(),
            a.output.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    check_output(&a.input, &a.output)?;
    if matches!(
        a.input.extension().and_then(|e| e.to_str()),
        Some("npz" | "npy")
    ) {
        anyhow::bail!(
            "{}: a NumPy file holds no quantized tensors; quantize it first (lowprec quantize {} -s SCHEME -o Q.safetensors) and dequantize that",
            a.input.display(),
            a.input.display()
        );
    }
    if a.input.extension().and_then(|e| e.to_str()) == Some("gguf") {
        let n = super::gguf::dequantize_gguf(&a.input, &a.output)?;
        errln!(
            "{} -> {}: {n} tensors dequantized",
            a.input.display(),
            a.output.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let (scheme, n) = lowprec::io::quantized::dequantize_file(&a.input, &a.output)?;
    errln!(
        "{} -> {}: {n} tensors dequantized ({scheme})",
        a.input.display(),
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
