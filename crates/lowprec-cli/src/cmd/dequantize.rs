//! `lowprec dequantize`: a `.safetensors` file written by `lowprec quantize` back to floats.

use super::check_output;
use super::quantize::{META_SCHEME, META_TENSOR};
use anyhow::{anyhow, bail, Context, Result};
use lowprec::block::pack::unpack;
use lowprec::io::safetensors::{self as st, Dtype, TensorOut};
use lowprec::scheme::{Scales, Scheme};
use lowprec::{FloatFormat, RoundOptions};
use std::collections::BTreeMap;
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

fn f64s(t: &st::TensorView) -> Result<Vec<f64>> {
    Ok(t.to_f64_vec()?)
}

/// Run `lowprec dequantize`.
pub fn run(a: &Args) -> Result<ExitCode> {
    check_output(&a.input, &a.output)?;
    let file = st::open(&a.input)?;
    let meta = file.metadata();
    let scheme: Scheme = meta
        .get(META_SCHEME)
        .ok_or_else(|| {
            anyhow!(
                "{}: not written by `lowprec quantize` (no {META_SCHEME} metadata)",
                a.input.display()
            )
        })?
        .parse()
        .context("the file's scheme")?;
    let mut records = BTreeMap::new();
    for (k, v) in meta {
        if let Some(name) = k.strip_prefix(META_TENSOR) {
            let r: serde_json::Value =
                serde_json::from_str(v).with_context(|| format!("metadata of {name}"))?;
            records.insert(name.to_string(), r);
        }
    }
    let companion = |n: &str| {
        [".scales", ".zeros", ".tensor_scale"]
            .iter()
            .any(|s| n.strip_suffix(s).is_some_and(|b| records.contains_key(b)))
    };
    let mut owned: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for t in file.iter() {
        if companion(t.name) {
            continue;
        }
        let Some(r) = records.get(t.name) else {
            owned.push((
                t.name.to_string(),
                t.dtype,
                t.shape.to_vec(),
                t.bytes.to_vec(),
            ));
            continue;
        };
        let bad = |what: &str| anyhow!("{}: tensor {}: {what}", a.input.display(), t.name);
        let shape: Vec<usize> =
            serde_json::from_value(r["shape"].clone()).map_err(|_| bad("bad shape record"))?;
        let dtype: Dtype = r["dtype"]
            .as_str()
            .ok_or_else(|| bad("bad dtype record"))?
            .parse()?;
        let bits = r["code_bits"]
            .as_u64()
            .ok_or_else(|| bad("bad code_bits record"))? as u32;
        let n: usize = shape.iter().product();
        let row_len = *shape.last().ok_or_else(|| bad("empty shape"))?;
        let codes: Vec<u16> = match bits {
            1..=8 => {
                let per = lowprec::block::pack::packed_len(row_len, bits);
                if t.bytes.len() != per * (n / row_len.max(1)) {
                    return Err(bad("packed size does not match the shape"));
                }
                let mut c = Vec::with_capacity(n);
                for row in t.bytes.chunks(per.max(1)) {
                    c.extend(unpack(row, bits, row_len)?.into_iter().map(u16::from));
                }
                c
            }
            9..=16 => t
                .bytes
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect(),
            _ => return Err(bad("unsupported code width")),
        };
        if codes.len() != n {
            return Err(bad("code count does not match the shape"));
        }
        let scales = match file.get(&format!("{}.scales", t.name)) {
            None => Scales::None,
            Some(s) if s.dtype == Dtype::U8 => Scales::Codes(s.bytes.to_vec()),
            Some(s) => Scales::Values(f64s(&s)?),
        };
        let zeros = file
            .get(&format!("{}.zeros", t.name))
            .map(|z| f64s(&z))
            .transpose()?;
        let g = file
            .get(&format!("{}.tensor_scale", t.name))
            .map(|g| g.to_f32_vec().map(|v| v[0]))
            .transpose()?;
        let mut v = vec![0f64; n];
        scheme
            .dequantize_into(&codes, &scales, zeros.as_deref(), g, row_len, &mut v)
            .with_context(|| format!("dequantizing {}", t.name))?;
        let bytes: Vec<u8> = match dtype {
            Dtype::F64 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Dtype::F32 => v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect(),
            Dtype::F16 | Dtype::BF16 => {
                let f = if dtype == Dtype::F16 {
                    FloatFormat::FP16
                } else {
                    FloatFormat::BF16
                };
                let (c, _) = lowprec::encode_vec::<f64, u16>(&f, &v, &RoundOptions::default())?;
                c.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
            d => bail!("tensor {}: original dtype {d} is not a float type", t.name),
        };
        owned.push((t.name.to_string(), dtype, shape, bytes));
    }
    let mut meta_out: BTreeMap<String, String> = meta
        .iter()
        .filter(|(k, _)| !k.starts_with("lowprec."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    meta_out.insert("lowprec.dequantized_from".into(), scheme.to_string());
    let outs: Vec<TensorOut> = owned
        .iter()
        .map(|(n, d, s, b)| TensorOut::new(n, *d, s, b))
        .collect();
    st::write(&a.output, &outs, &meta_out)?;
    eprintln!(
        "{} -> {}: {} tensors dequantized ({scheme})",
        a.input.display(),
        a.output.display(),
        records.len()
    );
    Ok(ExitCode::SUCCESS)
}
