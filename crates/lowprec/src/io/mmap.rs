//! Memory-mapped reading: the one place outside `crate::simd` with `unsafe`.
//!
//! Every reader of large files (`.safetensors` today) maps them through [`map_read_only`], so
//! the precondition below is stated, and audited, once.

use std::fs::File;

/// Map `file` into memory, read-only.
///
/// The caller promises what every memory-mapping reader must: the file is not modified or
/// truncated by anyone while the map lives (the public `open` functions state it as their
/// precondition).
pub(crate) fn map_read_only(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the map is read-only (`Mmap` maps with PROT_READ and hands out only `&[u8]`),
    // so nothing in this process can write through it or alias it mutably. What `Mmap::map`
    // cannot rule out is another writer changing or truncating the file while it is mapped,
    // which would change bytes behind a live `&[u8]` (or fault on access); that is the
    // documented precondition above, as for the reference `safetensors` loaders.
    unsafe { memmap2::Mmap::map(file) }
}
