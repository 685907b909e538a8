//! Property tests of the reading class of issue 20: every truncation of a valid `.npy` and
//! `.safetensors` file gives exit code 2, one line, no output and the input unchanged; every
//! single-byte corruption of their headers gives either a complete, valid output (exit 0, the
//! header still describes a file that fits) or that same clean refusal, and never a panic, a
//! hang or another exit code.

mod common;

use common::run;
use lowprec::io::npy::Data;
use std::path::Path;
use std::process::Output;

/// What a run may do with a damaged input: succeed with an output that reads back, or fail
/// cleanly; in both cases the input is intact and no temporary file is left.
fn clean(o: &Output, input: &Path, content: &[u8], out: &Path, what: &str) -> bool {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(
        std::fs::read(input).unwrap(),
        content,
        "{what}: input changed"
    );
    let dir = out.parent().unwrap();
    let tmp: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{what}: temporary files left: {tmp:?}");
    match o.status.code() {
        Some(0) => {
            assert!(out.exists(), "{what}: success without output");
            true
        }
        Some(2) => {
            assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
            assert!(!out.exists(), "{what}: refused but left {}", out.display());
            false
        }
        c => panic!("{what}: exit {c:?}: {err}"),
    }
}

fn check_file(good: &[u8], header_len: usize, ext: &str, args: impl Fn(&str, &str) -> Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(format!("in.{ext}"));
    let out = dir.path().join(format!("out.{ext}"));
    let attempt = |content: &[u8], what: &str| -> bool {
        std::fs::write(&input, content).unwrap();
        let _ = std::fs::remove_file(&out);
        let a = args(input.to_str().unwrap(), out.to_str().unwrap());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let ok = clean(&run(&a), &input, content, &out, what);
        let _ = std::fs::remove_file(&out);
        ok
    };
    assert!(
        attempt(good, "the valid file"),
        "the valid {ext} file must be accepted"
    );
    for len in 0..good.len() {
        assert!(!attempt(
            &good[..len],
            &format!("{ext} truncated to {len} bytes")
        ));
    }
    let mut accepted = 0;
    for at in 0..header_len {
        for b in [0x00u8, 0xff, b'9', b'"', b' ', good[at] ^ 0x01] {
            if b == good[at] {
                continue;
            }
            let mut c = good.to_vec();
            c[at] = b;
            accepted += attempt(&c, &format!("{ext} byte {at} = {b:#04x}")) as usize;
        }
    }
    // some corruptions (a space for a space in the padding, a digit in a value) stay valid
    assert!(
        accepted < header_len * 6,
        "{ext}: no corruption was refused"
    );
}

#[test]
fn npy_truncations_and_header_corruptions_are_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.npy");
    common::write_npy(
        &p,
        vec![2, 3],
        Data::F32(vec![0.5, -1.0, 3.0, 448.0, 1e-3, -7.0]),
    );
    let good = std::fs::read(&p).unwrap();
    let header_len = good.len() - 6 * 4;
    check_file(&good, header_len, "npy", |i, o| {
        ["round", "fp8-e4m3", i, "-o", o].map(String::from).to_vec()
    });
}

#[test]
fn safetensors_truncations_and_header_corruptions_are_refused_cleanly() {
    use lowprec::io::safetensors::{to_bytes, Dtype, TensorOut};
    let w: Vec<u8> = [0.5f32, -1.0, 3.0, 448.0, 1e-3, -7.0, 2.0, 0.25]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let b: Vec<u8> = [1u16, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let (ws, bs) = ([2usize, 4], [2usize]);
    let t = [
        TensorOut::new("w", Dtype::F32, &ws, &w),
        TensorOut::new("n", Dtype::I16, &bs, &b),
    ];
    let good = to_bytes(&t, &Default::default()).unwrap();
    let header_len = 8 + u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    check_file(&good, header_len, "safetensors", |i, o| {
        ["quantize", i, "-s", "fp8:group=4", "-o", o]
            .map(String::from)
            .to_vec()
    });
}
