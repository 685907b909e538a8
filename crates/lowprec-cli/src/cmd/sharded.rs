//! `quantize` and `dequantize` over a sharded safetensors checkpoint: the library's
//! [`lowprec::io::sharded`], with a line per shard on stderr.

use anyhow::Result;
use lowprec::io::sharded::{self, ShardDone};
use lowprec::scheme::Scheme;
use std::path::Path;

pub use lowprec::io::sharded::is_sharded;

/// Quantize every shard with `scheme` into the folder `output`; returns (shards written,
/// shards kept from an earlier run).
pub fn quantize(input: &Path, scheme: &Scheme, output: &Path) -> Result<(usize, usize)> {
    Ok(sharded::quantize(input, scheme, output, |s, o, d| {
        if let ShardDone::Written(reports, copied) = d {
            errln!(
                "{} -> {}: {} tensors quantized, {copied} copied",
                s.display(),
                o.display(),
                reports.len()
            );
        }
    })?)
}

/// Dequantize every shard of a checkpoint written by [`quantize`] into the folder `output`.
pub fn dequantize(input: &Path, output: &Path) -> Result<usize> {
    Ok(sharded::dequantize(input, output)?)
}
