//! Files: `.npy` arrays and `.safetensors` models, and writing any output atomically (a
//! temporary file in the same folder, renamed over the target only once complete, so no
//! partial output is ever left). Reading maps files into memory through `io::mmap`, the one
//! place outside `simd` where the library uses `unsafe`.

#[allow(unsafe_code)]
mod mmap;
pub mod npy;
pub mod quantized;
pub mod safetensors;

use crate::error::{Error, Result};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Write `path` through `fill`, atomically: the bytes go to a temporary file beside it,
/// which is renamed to `path` only after `fill` succeeded and the data is flushed. On any
/// error the temporary file is removed and `path` is untouched.
///
/// # Errors
///
/// [`Error::BadFile`] naming the path when the folder is not writable or `fill` fails.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::BadFile(format!("{}: not a file path", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let file = fs::File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Error::BadFile(format!(
            "cannot write {}: {e}",
            path.display()
        )));
    }
    Ok(())
}
