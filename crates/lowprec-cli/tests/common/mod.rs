//! Helpers shared by the CLI tests: running the built binary, the golden vectors, and the
//! bad-input contract (exit code 2, one line, no output, no temporary file).
#![allow(dead_code)]

use lowprec::io::npy::{self, Array, Data};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the built `lowprec` with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lowprec"))
        .args(args)
        .output()
        .expect("run lowprec")
}

/// Run a command that must succeed; its standard output.
pub fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8 output")
}

/// The golden-vector folder: `$LOWPREC_VECTORS`, else `../shared/vectors` beside the repo.
pub fn vectors() -> PathBuf {
    std::env::var("LOWPREC_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors")
        })
}

/// `0x…` as u64.
pub fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// The same bits, or both NaN.
pub fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Write a `.npy` file.
pub fn write_npy(path: &Path, shape: Vec<usize>, data: Data) {
    npy::write(path, &Array { shape, data }).unwrap();
}

/// Run a command that must fail: exit code 2, one line on stderr holding `needle`, none of
/// `outs` written, no temporary file left in their folders.
pub fn fails(args: &[&str], outs: &[&Path], needle: &str) {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{err}");
    for out in outs {
        assert!(!out.exists(), "{args:?} left {}", out.display());
        let Ok(dir) = std::fs::read_dir(out.parent().unwrap()) else {
            continue;
        };
        let leftovers: Vec<_> = dir
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }
}
