//! Files: `.npy` arrays and `.npz` archives of them, `.safetensors` models and GGUF files (llama.cpp), and writing any output atomically (a
//! temporary file in the same folder, renamed over the target only once complete, so no
//! partial output is ever left). Reading maps files into memory through `io::mmap`, the one
//! place outside `simd` where the library uses `unsafe`.

pub mod checkpoint;
pub mod gguf;
#[allow(unsafe_code)]
mod mmap;
pub mod npy;
pub mod npz;
pub mod quantized;
pub mod safetensors;
pub mod sharded;

use crate::error::{Error, Result};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The temporary files of outputs being written and not yet committed.
static UNCOMMITTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn uncommitted() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    UNCOMMITTED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Remove the temporary file of every output still being written (none is ever renamed
/// after this): what a Ctrl-C handler calls before the process exits, so that an interrupted
/// command leaves no partial file (the committed outputs stay).
pub fn remove_uncommitted() {
    for p in uncommitted().drain(..) {
        let _ = fs::remove_file(p);
    }
}

/// Write `path` through `fill`, atomically: the bytes go to a temporary file beside it,
/// which is renamed to `path` only after `fill` succeeded and the data is flushed. On any
/// error the temporary file is removed and `path` is untouched. ([`stage`] then
/// [`Staged::commit`].)
///
/// # Errors
///
/// [`Error::BadFile`] naming the path when it is not a place for a regular file (see
/// [`stage`]), the folder is not writable or `fill` fails.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    stage(path, fill)?.commit()
}

/// Check that `path` names a regular file (through symbolic links) before it is opened: a
/// FIFO would block the open until something writes to it, a device could be endless.
///
/// # Errors
///
/// [`Error::BadFile`] naming the path and what it is (or why it cannot be read).
pub fn check_source(path: &Path) -> Result<()> {
    let m = fs::metadata(path)
        .map_err(|e| Error::BadFile(format!("cannot read {}: {e}", path.display())))?;
    if m.is_file() {
        return Ok(());
    }
    let what = if m.is_dir() {
        "a directory"
    } else {
        "a device, FIFO or socket"
    };
    Err(Error::BadFile(format!(
        "cannot read {}: it is {what}, not a regular file; give a .npy, .npz or .safetensors file",
        path.display()
    )))
}

/// A complete output waiting in its temporary file for [`Staged::commit`]; dropped
/// uncommitted, the temporary file is removed and the target never changes. A command with
/// several outputs stages them all, then commits them all: a failure before the commits
/// leaves nothing.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    done: bool,
}

impl Staged {
    /// Rename the temporary file over the target.
    ///
    /// # Errors
    ///
    /// [`Error::BadFile`] when the rename fails (the temporary file is then removed).
    pub fn commit(mut self) -> Result<()> {
        let mut live = uncommitted();
        let r = fs::rename(&self.tmp, &self.path);
        self.done = r.is_ok();
        live.retain(|p| p != &self.tmp);
        drop(live);
        r.map_err(|e| Error::BadFile(format!("cannot write {}: {e}", self.path.display())))
    }

    /// The target.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.tmp);
            uncommitted().retain(|p| p != &self.tmp);
        }
    }
}

/// Check that `path` can take a regular file: absent, or an existing regular file. A
/// symbolic link (which a rename would replace), a device (as root, `-o /dev/null` would
/// become a file), a FIFO, a socket or a directory is refused.
///
/// # Errors
///
/// [`Error::BadFile`] naming the path and what it is.
pub fn check_target(path: &Path) -> Result<()> {
    let Ok(m) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let t = m.file_type();
    let what = if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        return Ok(());
    } else {
        "a device, FIFO or socket"
    };
    Err(Error::BadFile(format!(
        "the output {} is {what}, not a regular file; give the path of a regular file",
        path.display()
    )))
}

/// Refuse an output path that is the input (or the same file by another name), or that is
/// not a place for a regular file ([`check_target`]): inputs are never overwritten.
///
/// # Errors
///
/// [`Error::BadFile`] naming the output and what to do.
pub fn check_output(input: &Path, output: &Path) -> Result<()> {
    check_target(output)?;
    if same_file(input, output) {
        return Err(Error::BadFile(format!(
            "the output {} is the input file; write to another path (inputs are never overwritten)",
            output.display()
        )));
    }
    Ok(())
}

/// Whether two paths name one file (resolved through links and `..`; the files need not
/// exist, their folders must).
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((canonical(a), canonical(b)), (Some(a), Some(b)) if a == b)
}

/// `p` made absolute with its folder resolved (the file itself need not exist).
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?,
    };
    Some(parent.join(p.file_name()?))
}

/// Write `fill`'s bytes to a new temporary file beside `path` (a short name,
/// `.lowprec-PID-N.tmp`, created exclusively), flushed to disk, for [`Staged::commit`].
///
/// # Errors
///
/// [`Error::BadFile`] naming the path when it is not a place for a regular file
/// ([`check_target`]), the folder is not writable or `fill` fails; nothing is left behind.
pub fn stage(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<Staged> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    check_target(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if path.file_name().is_none() {
        return Err(Error::BadFile(format!(
            "{}: not a file path",
            path.display()
        )));
    }
    let tmp = dir.join(format!(
        ".lowprec-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut staged = Staged {
        tmp,
        path: path.to_path_buf(),
        done: false,
    };
    let result = (|| -> std::io::Result<()> {
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staged.tmp)?;
        uncommitted().push(staged.tmp.clone());
        let mut w = BufWriter::with_capacity(1 << 20, file);
        fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    })();
    if let Err(e) = result {
        // (an exclusive create that failed made no file: keep a stranger's)
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            staged.done = true;
        }
        return Err(Error::BadFile(format!(
            "cannot write {}: {e}",
            path.display()
        )));
    }
    Ok(staged)
}
