//! `quantize` and `dequantize` over a sharded safetensors checkpoint (a folder or its
//! `model.safetensors.index.json`): each shard becomes a shard of the same name in the output
//! folder, written atomically one by one, then the output's own index. A shard whose output
//! already holds the same scheme is kept, so an interrupted run resumes where it stopped.

use anyhow::{bail, Context, Result};
use lowprec::io::checkpoint;
use lowprec::io::quantized::{self, META_SCHEME};
use lowprec::io::safetensors as st;
use lowprec::scheme::Scheme;
use std::path::{Path, PathBuf};

/// Whether `p` names a sharded checkpoint (a folder or an index file).
pub fn is_sharded(p: &Path) -> bool {
    p.is_dir() || p.to_string_lossy().ends_with(".index.json")
}

/// The output folder: created if absent; a file there is refused.
fn out_dir(output: &Path) -> Result<()> {
    if output.exists() && !output.is_dir() {
        bail!(
            "{}: a sharded checkpoint's output is a folder (-o OUT_DIR), and this is a file",
            output.display()
        );
    }
    std::fs::create_dir_all(output)
        .with_context(|| format!("creating the output folder {}", output.display()))
}

/// The index of the shards written in `dir`: every tensor of every shard, the metadata's
/// total size of the data, written atomically last.
fn write_index(dir: &Path, shards: &[PathBuf], extra: &[(&str, String)]) -> Result<()> {
    let mut map = serde_json::Map::new();
    let mut total = 0u64;
    for s in shards {
        let f = st::open(s)?;
        let name = s
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for t in f.iter() {
            total += t.bytes.len() as u64;
            map.insert(t.name.to_string(), serde_json::Value::String(name.clone()));
        }
    }
    let mut meta = serde_json::Map::new();
    meta.insert("total_size".into(), total.into());
    for (k, v) in extra {
        meta.insert((*k).into(), v.clone().into());
    }
    let v = serde_json::json!({"metadata": meta, "weight_map": map});
    let text = serde_json::to_string_pretty(&v)?;
    lowprec::io::write_atomic(&dir.join("model.safetensors.index.json"), |w| {
        w.write_all(text.as_bytes())
    })?;
    Ok(())
}

/// The output of shard `s` in `dir`.
fn out_of(dir: &Path, s: &Path) -> PathBuf {
    dir.join(s.file_name().unwrap_or_default())
}

/// Quantize every shard with `scheme` into the folder `output`; returns (shards written,
/// shards kept from an earlier run).
pub fn quantize(input: &Path, scheme: &Scheme, output: &Path) -> Result<(usize, usize)> {
    let ck = checkpoint::open(input)?;
    out_dir(output)?;
    let shards: Vec<PathBuf> = ck.shard_paths().iter().map(|p| p.to_path_buf()).collect();
    let (mut written, mut kept) = (0, 0);
    let mut outs = Vec::new();
    for s in &shards {
        let o = out_of(output, s);
        super::check_output(s, &o)?;
        let done = st::open(&o)
            .ok()
            .and_then(|f| f.metadata().get(META_SCHEME).cloned())
            .is_some_and(|m| m == scheme.to_string());
        if done {
            kept += 1;
        } else {
            let (reports, copied) = quantized::quantize_file(s, scheme, &o)
                .with_context(|| format!("quantizing {}", s.display()))?;
            errln!(
                "{} -> {}: {} tensors quantized, {copied} copied",
                s.display(),
                o.display(),
                reports.len()
            );
            written += 1;
        }
        outs.push(o);
    }
    write_index(output, &outs, &[(META_SCHEME, scheme.to_string())])?;
    Ok((written, kept))
}

/// Dequantize every shard of a checkpoint written by [`quantize`] into the folder `output`.
pub fn dequantize(input: &Path, output: &Path) -> Result<usize> {
    let ck = checkpoint::open(input)?;
    out_dir(output)?;
    let mut outs = Vec::new();
    for s in ck.shard_paths() {
        let o = out_of(output, s);
        super::check_output(s, &o)?;
        quantized::dequantize_file(s, &o)
            .with_context(|| format!("dequantizing {}", s.display()))?;
        outs.push(o);
    }
    write_index(output, &outs, &[])?;
    Ok(outs.len())
}
