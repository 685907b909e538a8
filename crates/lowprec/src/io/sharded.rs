//! `quantize` and `dequantize` over a sharded safetensors checkpoint (a folder or its
//! `model.safetensors.index.json`): each shard becomes a shard of the same name in the output
//! folder, written atomically one by one, then the output's own index. A shard whose output
//! already holds the same scheme is kept, so an interrupted run resumes where it stopped.
//!
//! The steps are public one by one ([`prepare_output`], [`quantize_shard`],
//! [`write_index`]) so that shards can be quantized in other processes (the Python
//! `lowprec.ray` runs one task per shard) and the index written once at the end.

use crate::error::{Error, Result};
use crate::io::checkpoint;
use crate::io::quantized::{self, TensorReport, META_SCHEME};
use crate::io::safetensors as st;
use crate::scheme::Scheme;
use std::path::{Path, PathBuf};

/// Whether `p` names a sharded checkpoint (a folder or an index file).
pub fn is_sharded(p: &Path) -> bool {
    p.is_dir() || p.to_string_lossy().ends_with(".index.json")
}

/// The output folder: created if absent; a file there is refused.
///
/// # Errors
///
/// [`Error::BadFile`] when `output` is a file or the folder cannot be created.
pub fn prepare_output(output: &Path) -> Result<()> {
    if output.exists() && !output.is_dir() {
        return Err(Error::BadFile(format!(
            "{}: a sharded checkpoint's output is a folder (-o OUT_DIR), and this is a file",
            output.display()
        )));
    }
    std::fs::create_dir_all(output).map_err(|e| {
        Error::BadFile(format!(
            "cannot create the output folder {}: {e}",
            output.display()
        ))
    })
}

/// The index of the shards written in `dir`: every tensor of every shard, the metadata's
/// total size of the data and the `extra` metadata, written atomically (last, once every
/// shard is in place).
///
/// # Errors
///
/// A shard that cannot be read, or the index that cannot be written.
pub fn write_index(dir: &Path, shards: &[PathBuf], extra: &[(&str, String)]) -> Result<()> {
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
    let text = serde_json::to_string_pretty(&v)
        .map_err(|e| Error::BadFile(format!("cannot write the index: {e}")))?;
    super::write_atomic(&dir.join("model.safetensors.index.json"), |w| {
        w.write_all(text.as_bytes())
    })
}

/// The output of shard `s` in `dir` (the same file name).
pub fn shard_output(dir: &Path, s: &Path) -> PathBuf {
    dir.join(s.file_name().unwrap_or_default())
}

/// What [`quantize_shard`] did.
#[derive(Debug, Clone)]
pub enum ShardDone {
    /// The output already held this scheme (an earlier, interrupted run wrote it): kept.
    Kept,
    /// Written: one report per quantized tensor, and the number of tensors copied.
    Written(Vec<TensorReport>, usize),
}

/// Quantize one shard with `scheme` into `dir` (the same file name, atomically), unless its
/// output there already holds `scheme`.
///
/// # Errors
///
/// An output that is the input or not a place for a regular file ([`super::check_output`]),
/// and the errors of [`quantized::quantize_file`].
pub fn quantize_shard(shard: &Path, scheme: &Scheme, dir: &Path) -> Result<ShardDone> {
    let o = shard_output(dir, shard);
    super::check_output(shard, &o)?;
    let done = st::open(&o)
        .ok()
        .and_then(|f| f.metadata().get(META_SCHEME).cloned())
        .is_some_and(|m| m == scheme.to_string());
    if done {
        return Ok(ShardDone::Kept);
    }
    let (reports, copied) = quantized::quantize_file(shard, scheme, &o)
        .map_err(|e| Error::BadFile(format!("quantizing {}: {e}", shard.display())))?;
    Ok(ShardDone::Written(reports, copied))
}

/// Quantize every shard of the checkpoint `input` with `scheme` into the folder `output`,
/// one by one, then its index; `each(shard, output, done)` is told of every shard. Returns
/// (shards written, shards kept from an earlier run).
///
/// # Errors
///
/// As [`checkpoint::open`], [`prepare_output`], [`quantize_shard`] and [`write_index`].
pub fn quantize(
    input: &Path,
    scheme: &Scheme,
    output: &Path,
    mut each: impl FnMut(&Path, &Path, &ShardDone),
) -> Result<(usize, usize)> {
    let ck = checkpoint::open(input)?;
    prepare_output(output)?;
    let (mut written, mut kept) = (0, 0);
    let mut outs = Vec::new();
    for s in ck.shard_paths() {
        let d = quantize_shard(s, scheme, output)?;
        match d {
            ShardDone::Kept => kept += 1,
            ShardDone::Written(..) => written += 1,
        }
        let o = shard_output(output, s);
        each(s, &o, &d);
        outs.push(o);
    }
    write_index(output, &outs, &[(META_SCHEME, scheme.to_string())])?;
    Ok((written, kept))
}

/// Dequantize one shard written by [`quantize_shard`] into `dir` (the same file name).
///
/// # Errors
///
/// As [`quantize_shard`], with [`quantized::dequantize_file`]'s errors.
pub fn dequantize_shard(shard: &Path, dir: &Path) -> Result<PathBuf> {
    let o = shard_output(dir, shard);
    super::check_output(shard, &o)?;
    quantized::dequantize_file(shard, &o)
        .map_err(|e| Error::BadFile(format!("dequantizing {}: {e}", shard.display())))?;
    Ok(o)
}

/// Dequantize every shard of a checkpoint written by [`quantize`] into the folder
/// `output`, then its index; returns the number of shards.
///
/// # Errors
///
/// As [`quantize`].
pub fn dequantize(input: &Path, output: &Path) -> Result<usize> {
    let ck = checkpoint::open(input)?;
    prepare_output(output)?;
    let outs = ck
        .shard_paths()
        .into_iter()
        .map(|s| dequantize_shard(s, output))
        .collect::<Result<Vec<_>>>()?;
    write_index(output, &outs, &[])?;
    Ok(outs.len())
}

/// Remove the temporary files (`.lowprec-PID-N.tmp`) that writers killed before they
/// committed left in `dir` (a process killed by a signal that no handler sees, as a Ray
/// worker is): call it only once every writer into `dir` has finished. Returns how many.
pub fn remove_stale_temporaries(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with(".lowprec-") && n.ends_with(".tmp")
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temporaries_are_removed_and_nothing_else() {
        let d = std::env::temp_dir().join(format!("lowprec-sharded-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for n in [
            ".lowprec-1-0.tmp",
            ".lowprec-77-3.tmp",
            "a.safetensors",
            "x.tmp",
        ] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
        assert_eq!(remove_stale_temporaries(&d), 2);
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["a.safetensors", "x.tmp"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_output_file_in_place_of_the_folder_is_refused() {
        let f = std::env::temp_dir().join(format!("lowprec-sharded-f-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let e = prepare_output(&f).unwrap_err().to_string();
        assert!(e.contains("is a folder"), "{e}");
        std::fs::remove_file(&f).unwrap();
    }
}
