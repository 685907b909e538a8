//! `lowprec quantize`: a `.npy` array, or every weight of a `.safetensors` file or a `.npz`
//! archive, through a scheme; dequantized values, codes, scales and packed bytes out.

use super::{check_output, check_outputs, read_npy};
use anyhow::{bail, Context, Result};
use lowprec::io::npy::{self, Array, Data};
use lowprec::report::Method;
use lowprec::scheme::{Scales, Scheme};
use lowprec::stats::ErrorStats;
use lowprec::{FloatFormat, RoundOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `lowprec quantize`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec quantize weights.npy -s mxfp4 -o deq.npy --scales scales.npy --packed packed.npy
  lowprec quantize model.safetensors -s nvfp4 -o model.nvfp4.safetensors
  lowprec quantize model.safetensors -s gguf:Q8_0 -o model.q8_0.gguf --meta general.name=minilm")]
pub struct Args {
    /// Input: a `.npy` array (float16/bfloat16/float32/float64, blocks along the last axis),
    /// a `.safetensors` file or a `.npz` archive (`np.savez` / `np.savez_compressed`: every
    /// floating tensor of at least 2 dimensions, into a quantized `.safetensors`), a sharded
    /// checkpoint (a folder or its `.index.json`: the output is a folder of shards of the same
    /// names and their index; an interrupted run resumes), or a `.gguf` file (with gguf:TYPE).
    pub input: PathBuf,
    /// The scheme: mx:ELEM[:block=N][:scale=floor|ceil|even|rceil][:pad], mxfp8, mxfp6,
    /// mxfp4, mxint8, nvfp4[:convention=seed|torchao], tensor:FORMAT, cast:FORMAT, FORMAT,
    /// intB[:asym|:full][:channel|:group=G][:clip=R|:clip=mse]; or gguf:TYPE (Q4_0, Q4_1,
    /// Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4, BF16, F16, F32) with a `.gguf` output.
    #[arg(long, short = 's')]
    pub scheme: Method,
    /// Output: dequantized values in the input's dtype (`.npy`), or the quantized model
    /// (`.safetensors`: packed codes and scales, see docs/schemes.md).
    #[arg(short, long)]
    pub output: PathBuf,
    /// `.npy` input: write the scales (uint8 E8M0/E4M3 codes per block for MX/NVFP4, shape =
    /// input shape with the last axis divided by the block size; float64 for tensor and
    /// integer scales).
    #[arg(long)]
    pub scales: Option<PathBuf>,
    /// `.npy` input: write the element codes unpacked (uint8, or uint16 above 8 bits), same
    /// shape as the input.
    #[arg(long)]
    pub codes: Option<PathBuf>,
    /// `.npy` input: write the codes packed row by row (docs/schemes.md layouts) as a uint8 `.npy`
    /// (shape: input shape with the last axis replaced by the packed row length), or raw
    /// bytes for any other extension.
    #[arg(long)]
    pub packed: Option<PathBuf>,
    /// `.gguf` output: a key/value to set (repeatable): KEY=VALUE (a string) or
    /// KEY:TYPE=VALUE (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str).
    #[arg(long = "meta", value_parser = super::gguf::parse_meta)]
    pub meta: Vec<(String, lowprec::io::gguf::MetaValue)>,
}

/// float16 / bfloat16 bits to binary64, exactly.
fn widen16_f64(bits: &[u16], bf16: bool) -> Vec<f64> {
    lowprec::report::widen16(bits, bf16)
        .iter()
        .map(|&v| v as f64)
        .collect()
}

/// Values in a 16-bit dtype (RNE, one rounding), as bits.
fn narrow16(v: &[f64], fmt: &FloatFormat) -> Result<Vec<u16>> {
    Ok(lowprec::encode_vec(fmt, v, &RoundOptions::default())?.0)
}

/// One line of the error of a scheme without counts (ggml types).
pub fn summary_line(scheme: &str, bits_per_element: f64, e: &ErrorStats) -> String {
    format!(
        "{scheme}: {bits_per_element:.3} bits/element, SQNR {:.2} dB, rel. error {:.3e}, max abs error {:.3e}",
        e.sqnr_db(),
        e.rel_error(),
        e.max_abs()
    )
}

/// One line of what happened.
pub fn summary(
    scheme: &Scheme,
    bits_per_element: f64,
    e: &ErrorStats,
    c: &lowprec::scheme::Counts,
    tensor_scale: Option<f32>,
) -> String {
    format!(
        "{scheme}: {bits_per_element:.3} bits/element, SQNR {:.2} dB, rel. error {:.3e}, max abs error {:.3e}, saturated {}, flushed {}, NaN {}{}",
        e.sqnr_db(),
        e.rel_error(),
        e.max_abs(),
        c.saturated,
        c.flushed,
        c.nan,
        tensor_scale.map_or(String::new(), |g| format!(", tensor scale {g:e}"))
    )
}

/// Packed rows (2/4/6/8-bit codes) or little-endian 16-bit codes, with the packed row length
/// ([`lowprec::scheme::pack_rows`]).
pub fn packed_rows(codes: &[u16], bits: u32, row_len: usize) -> Result<(Vec<u8>, usize)> {
    Ok(lowprec::scheme::pack_rows(codes, bits, row_len)?)
}

fn run_npy(a: &Args, scheme: &Scheme) -> Result<()> {
    let arr = read_npy(&a.input)?;
    let row_len = arr.shape.last().copied().unwrap_or(1).max(1);
    if arr.data.is_empty() {
        bail!("{}: the array is empty", a.input.display());
    }
    macro_rules! go {
        ($x:expr, $wrap:expr) => {{
            let x = $x;
            let q = scheme
                .apply(&x, &arr.shape)
                .with_context(|| format!("quantizing {}", a.input.display()))?;
            let e = ErrorStats::of(&q.values, &x);
            let line = format!(
                "{}: {}",
                a.input.display(),
                summary(
                    scheme,
                    scheme.bits_per_element(&arr.shape),
                    &e,
                    &q.counts,
                    q.encoded.tensor_scale
                )
            );
            let data = $wrap(&q.values)?;
            (q.codes, q.code_bits, q.encoded, data, line)
        }};
    }
    let (codes, bits, enc, data, line) = match &arr.data {
        Data::F32(x) => go!(x.clone(), |v: &Vec<f32>| -> Result<Data> {
            Ok(Data::F32(v.clone()))
        }),
        Data::F64(x) => go!(x.clone(), |v: &Vec<f64>| -> Result<Data> {
            Ok(Data::F64(v.clone()))
        }),
        // 16-bit inputs are computed in binary64 so their output is rounded once
        Data::F16(h) => go!(widen16_f64(h, false), |v: &Vec<f64>| -> Result<Data> {
            Ok(Data::F16(narrow16(v, &FloatFormat::FP16)?))
        }),
        Data::BF16(h) => go!(widen16_f64(h, true), |v: &Vec<f64>| -> Result<Data> {
            Ok(Data::BF16(narrow16(v, &FloatFormat::BF16)?))
        }),
        d => bail!(
            "{}: quantize takes float16/bfloat16/float32/float64 arrays, not {}",
            a.input.display(),
            d.dtype_name()
        ),
    };
    // every output is produced before any is written
    let mut outs: Vec<(PathBuf, Array)> = vec![(
        a.output.clone(),
        Array {
            shape: arr.shape.clone(),
            data,
        },
    )];
    if let Some(p) = &a.scales {
        let data = match &enc.scales {
            Scales::Codes(c) => Data::U8(c.clone()),
            Scales::Values(v) => Data::F64(v.clone()),
            Scales::None => bail!("the scheme {scheme} has no scales (it is a plain cast)"),
        };
        outs.push((
            p.clone(),
            Array {
                shape: enc.scale_shape.clone(),
                data,
            },
        ));
    }
    if let Some(p) = &a.codes {
        if codes.is_empty() {
            bail!("{scheme} codes are wider than 16 bits; --codes is not available");
        }
        let data = if bits <= 8 {
            Data::U8(codes.iter().map(|&c| c as u8).collect())
        } else {
            Data::U16(codes.clone())
        };
        outs.push((
            p.clone(),
            Array {
                shape: arr.shape.clone(),
                data,
            },
        ));
    }
    let mut raw: Option<(PathBuf, Vec<u8>)> = None;
    if let Some(p) = &a.packed {
        let (bytes, per) = packed_rows(&codes, bits, row_len)?;
        if p.extension().and_then(|e| e.to_str()) == Some("npy") {
            let mut shape = arr.shape.clone();
            match shape.last_mut() {
                Some(l) => *l = per,
                None => shape.push(per),
            }
            outs.push((
                p.clone(),
                Array {
                    shape,
                    data: Data::U8(bytes),
                },
            ));
        } else {
            raw = Some((p.clone(), bytes));
        }
    }
    let mut paths: Vec<&Path> = outs.iter().map(|(p, _)| p.as_path()).collect();
    if let Some((p, _)) = &raw {
        paths.push(p);
    }
    check_outputs(&a.input, &paths)?;
    // every output complete in its temporary file before any is renamed: all or nothing
    let mut staged = Vec::new();
    for (p, arr) in &outs {
        staged.push(npy::stage(p, arr)?);
    }
    if let Some((p, bytes)) = raw {
        staged.push(lowprec::io::stage(&p, |w| w.write_all(&bytes))?);
    }
    for s in staged {
        s.commit()?;
    }
    errln!("{line}");
    Ok(())
}

fn run_safetensors(a: &Args, scheme: &Scheme) -> Result<()> {
    let (reports, copied) = lowprec::io::quantized::quantize_file(&a.input, scheme, &a.output)?;
    for r in &reports {
        errln!(
            "{}: {}",
            r.name,
            summary(
                scheme,
                r.bits_per_element,
                &r.stats,
                &r.counts,
                r.tensor_scale
            )
        );
    }
    errln!(
        "{} -> {}: {} tensors quantized with {scheme}, {copied} copied",
        a.input.display(),
        a.output.display(),
        reports.len()
    );
    Ok(())
}

/// Whether a path names a `.safetensors` file.
pub fn is_safetensors(p: &Path) -> bool {
    p.extension().and_then(|e| e.to_str()) == Some("safetensors")
}

/// Whether a path names a `.npz` archive.
pub fn is_npz(p: &Path) -> bool {
    p.extension().and_then(|e| e.to_str()) == Some("npz")
}

/// Run `lowprec quantize`.
pub fn run(a: &Args) -> Result<ExitCode> {
    if !super::sharded::is_sharded(&a.input) {
        check_output(&a.input, &a.output)?;
    }
    let is_gguf = a.output.extension().and_then(|e| e.to_str()) == Some("gguf");
    let scheme = match (a.scheme, is_gguf) {
        (Method::Ggml(t), true) => {
            if a.scales.is_some() || a.codes.is_some() || a.packed.is_some() {
                bail!("--scales, --codes and --packed are for .npy outputs; a .gguf output holds the blocks");
            }
            super::gguf::quantize_to_gguf(&a.input, t, &a.output, &a.meta)?;
            return Ok(ExitCode::SUCCESS);
        }
        (Method::Ggml(t), false) => bail!(
            "gguf:{t} writes GGUF: give a .gguf output (-o MODEL.gguf)"
        ),
        (Method::Scheme(_), true) => bail!(
            "a .gguf output takes a ggml type: -s gguf:Q8_0 (or Q4_0, Q4_1, Q5_0, Q5_1, TQ1_0, TQ2_0, MXFP4, BF16, F16)"
        ),
        (Method::Scheme(s), false) => s,
    };
    if !a.meta.is_empty() {
        bail!("--meta sets GGUF key/values; it needs a .gguf output");
    }
    if super::sharded::is_sharded(&a.input) {
        if a.scales.is_some() || a.codes.is_some() || a.packed.is_some() {
            bail!(
                "--scales, --codes and --packed are for .npy inputs; the output shards hold them"
            );
        }
        let (written, kept) = super::sharded::quantize(&a.input, &scheme, &a.output)?;
        errln!(
            "{} -> {}: {written} shards quantized with {scheme}{}, index written",
            a.input.display(),
            a.output.display(),
            if kept > 0 {
                format!(", {kept} kept from an earlier run")
            } else {
                String::new()
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    if is_safetensors(&a.input) || is_npz(&a.input) {
        if a.scales.is_some() || a.codes.is_some() || a.packed.is_some() {
            bail!("--scales, --codes and --packed are for .npy inputs; a .safetensors output holds them");
        }
        if !is_safetensors(&a.output) {
            bail!(
                "a .{} input needs a .safetensors output (-o OUT.safetensors): the quantized checkpoint",
                if is_npz(&a.input) { "npz" } else { "safetensors" }
            );
        }
        run_safetensors(a, &scheme)?;
    } else {
        run_npy(a, &scheme)?;
    }
    Ok(ExitCode::SUCCESS)
}
