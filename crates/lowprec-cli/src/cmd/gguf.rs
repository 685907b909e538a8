//! GGUF output of `lowprec quantize` (`-s gguf:TYPE -o MODEL.gguf`) and GGUF input of
//! `lowprec dequantize` (`MODEL.gguf -o MODEL.safetensors`).

use super::quantize::summary_line;
use anyhow::{bail, Context, Result};
use lowprec::ggml::{self, GgmlType};
use lowprec::io::gguf::{self, MetaValue};
use lowprec::io::safetensors::{self as st, Dtype};
use lowprec::stats::ErrorStats;
use std::collections::BTreeMap;
use std::path::Path;

/// A tensor of the input: values to quantize, or stored bytes to copy.
struct Source {
    name: String,
    shape: Vec<usize>,
    what: Payload,
}

enum Payload {
    Values(Vec<f32>),
    Raw(GgmlType, Vec<u8>),
}

/// The ggml type that stores a safetensors dtype as it is.
fn ggml_of(d: Dtype) -> Option<GgmlType> {
    Some(match d {
        Dtype::F32 => GgmlType::F32,
        Dtype::F16 => GgmlType::F16,
        Dtype::BF16 => GgmlType::BF16,
        Dtype::F64 => GgmlType::F64,
        Dtype::I8 => GgmlType::I8,
        Dtype::I16 => GgmlType::I16,
        Dtype::I32 => GgmlType::I32,
        Dtype::I64 => GgmlType::I64,
        _ => return None,
    })
}

/// Whether a tensor of `shape` is quantized into `ty` (at least two axes, rows of whole
/// blocks; llama.cpp keeps 1-D tensors such as norms in their own type too).
fn quantizable(shape: &[usize], ty: GgmlType) -> bool {
    shape.len() >= 2
        && shape.iter().product::<usize>() > 0
        && shape[shape.len() - 1].is_multiple_of(ty.block_size())
}

/// The tensors of an input, its key/values, and what was skipped (with why).
type Inputs = (Vec<Source>, Vec<(String, MetaValue)>, Vec<String>);

fn sources(input: &Path, ty: GgmlType) -> Result<Inputs> {
    let mut out = Vec::new();
    let mut meta = Vec::new();
    let mut skipped = Vec::new();
    match input.extension().and_then(|e| e.to_str()) {
        Some("gguf") => {
            let f = gguf::open(input)?;
            meta = f
                .metadata()
                .iter()
                .filter(|(k, _)| k != "general.alignment")
                .cloned()
                .collect();
            for t in f.tensors() {
                let shape = t.shape();
                let what = if t.ggml_type.can_dequantize() && quantizable(&shape, ty) {
                    Payload::Values(f.dequantize(t)?)
                } else {
                    Payload::Raw(t.ggml_type, f.bytes(t).to_vec())
                };
                out.push(Source {
                    name: t.name.clone(),
                    shape,
                    what,
                });
            }
        }
        Some("safetensors") => {
            let f = st::open(input)?;
            for (k, v) in f.metadata() {
                meta.push((format!("safetensors.{k}"), MetaValue::Str(v.clone())));
            }
            for t in f.iter() {
                let shape = t.shape.to_vec();
                let float = t.dtype.is_float();
                let values = || -> lowprec::Result<Vec<f32>> {
                    Ok(match t.dtype {
                        Dtype::F64 => t.to_f64_vec()?.iter().map(|&v| v as f32).collect(),
                        _ => t.to_f32_vec()?,
                    })
                };
                let what = if float && quantizable(&shape, ty) {
                    Payload::Values(values()?)
                } else if let Some(g) = ggml_of(t.dtype) {
                    Payload::Raw(g, t.bytes.to_vec())
                } else if float {
                    // FP8 tensors GGUF has no type for: their values (exact) as F32
                    let v = values()?;
                    Payload::Raw(
                        GgmlType::F32,
                        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    )
                } else {
                    skipped.push(format!("{} ({} has no GGUF type)", t.name, t.dtype));
                    continue;
                };
                out.push(Source {
                    name: t.name.to_string(),
                    shape,
                    what,
                });
            }
        }
        _ => {
            let ts = lowprec::report::load(input)?;
            for t in ts {
                let what = Payload::Values(match t.values {
                    lowprec::report::Values::F32(v) => v,
                    lowprec::report::Values::F64(v) => v.iter().map(|&x| x as f32).collect(),
                });
                if !quantizable(&t.shape, ty) {
                    bail!(
                        "{}: the shape {:?} is not at least 2-D with rows of whole {} blocks of {}",
                        input.display(),
                        t.shape,
                        ty,
                        ty.block_size()
                    );
                }
                out.push(Source {
                    name: t.name,
                    shape: t.shape,
                    what,
                });
            }
        }
    }
    Ok((out, meta, skipped))
}

/// Parse `--meta KEY=VALUE` (a string) or `KEY:TYPE=VALUE` (TYPE one of u8 i8 u16 i16 u32
/// i32 u64 i64 f32 f64 bool str).
pub fn parse_meta(s: &str) -> Result<(String, MetaValue)> {
    let (k, v) = s
        .split_once('=')
        .with_context(|| format!("--meta {s}: write KEY=VALUE or KEY:TYPE=VALUE"))?;
    let (key, ty) = k.split_once(':').unwrap_or((k, "str"));
    let bad = || format!("--meta {s}: {v:?} is not a {ty}");
    let val = match ty {
        "str" => MetaValue::Str(v.to_string()),
        "u8" => MetaValue::U8(v.parse().with_context(bad)?),
        "i8" => MetaValue::I8(v.parse().with_context(bad)?),
        "u16" => MetaValue::U16(v.parse().with_context(bad)?),
        "i16" => MetaValue::I16(v.parse().with_context(bad)?),
        "u32" => MetaValue::U32(v.parse().with_context(bad)?),
        "i32" => MetaValue::I32(v.parse().with_context(bad)?),
        "u64" => MetaValue::U64(v.parse().with_context(bad)?),
        "i64" => MetaValue::I64(v.parse().with_context(bad)?),
        "f32" => MetaValue::F32(v.parse().with_context(bad)?),
        "f64" => MetaValue::F64(v.parse().with_context(bad)?),
        "bool" => MetaValue::Bool(v.parse().with_context(bad)?),
        t => bail!(
            "--meta {s}: unknown type {t}; use u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str"
        ),
    };
    if key.is_empty() {
        bail!("--meta {s}: the key is empty");
    }
    Ok((key.to_string(), val))
}

/// Quantize every tensor of `input` of at least two axes (rows of whole blocks) into `ty`
/// and write a GGUF; other tensors are stored in their own type (1-D norms and biases stay
/// F32/F16/BF16, integers are copied). Metadata: a GGUF input's key/values, a safetensors
/// input's `__metadata__` as `safetensors.KEY` strings, then `meta` (which replaces keys of
/// the same name).
pub fn quantize_to_gguf(
    input: &Path,
    ty: GgmlType,
    output: &Path,
    meta: &[(String, MetaValue)],
) -> Result<()> {
    let (srcs, mut kv, skipped) =
        sources(input, ty).with_context(|| format!("reading {}", input.display()))?;
    for (k, v) in meta {
        kv.retain(|(a, _)| a != k);
        kv.push((k.clone(), v.clone()));
    }
    let mut stored: Vec<(GgmlType, Vec<u8>)> = Vec::with_capacity(srcs.len());
    let mut lines = Vec::new();
    let (mut quantized, mut copied) = (0, 0);
    for s in &srcs {
        match &s.what {
            Payload::Values(x) => {
                let mut b = vec![0u8; x.len() / ty.block_size() * ty.type_size()];
                ggml::quantize(ty, x, &mut b)?;
                let mut y = vec![0f32; x.len()];
                ggml::dequantize(ty, &b, &mut y)?;
                let e = ErrorStats::of(&y, x);
                lines.push(format!(
                    "{}: {}",
                    s.name,
                    summary_line(&format!("gguf:{ty}"), ty.bits_per_element(), &e)
                ));
                stored.push((ty, b));
                quantized += 1;
            }
            Payload::Raw(g, b) => {
                stored.push((*g, b.clone()));
                copied += 1;
            }
        }
    }
    let outs = srcs
        .iter()
        .zip(&stored)
        .map(|(s, (g, b))| gguf::TensorOut::new(&s.name, &s.shape, *g, b))
        .collect::<lowprec::Result<Vec<_>>>()?;
    gguf::write(output, &kv, &outs)?;
    for l in lines {
        errln!("{l}");
    }
    for s in &skipped {
        errln!("skipped {s}");
    }
    errln!(
        "{} -> {}: {quantized} tensors quantized to {ty}, {copied} stored as they were",
        input.display(),
        output.display()
    );
    Ok(())
}

/// Every tensor of a GGUF file dequantized to F32 (integer tensors copied) into a
/// `.safetensors` file; the string key/values go to its `__metadata__` (others as text).
pub fn dequantize_gguf(input: &Path, output: &Path) -> Result<usize> {
    let f = gguf::open(input)?;
    let mut data: Vec<(String, Vec<usize>, Dtype, Vec<u8>)> = Vec::new();
    for t in f.tensors() {
        let (dtype, bytes) = match t.ggml_type {
            GgmlType::I8 => (Dtype::I8, f.bytes(t).to_vec()),
            GgmlType::I16 => (Dtype::I16, f.bytes(t).to_vec()),
            GgmlType::I32 => (Dtype::I32, f.bytes(t).to_vec()),
            GgmlType::I64 => (Dtype::I64, f.bytes(t).to_vec()),
            _ => (
                Dtype::F32,
                f.dequantize(t)?
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
        };
        data.push((t.name.clone(), t.shape(), dtype, bytes));
    }
    let meta: BTreeMap<String, String> = f
        .metadata()
        .iter()
        .filter(|(_, v)| !matches!(v, MetaValue::Array(..)))
        .map(|(k, v)| {
            (
                k.clone(),
                match v {
                    MetaValue::Str(s) => s.clone(),
                    v => v.to_string(),
                },
            )
        })
        .collect();
    let outs: Vec<st::TensorOut<'_>> = data
        .iter()
        .map(|(n, s, d, b)| st::TensorOut::new(n, *d, s, b))
        .collect();
    st::write(output, &outs, &meta)?;
    Ok(outs.len())
}
