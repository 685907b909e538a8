//! The built `lowprec` binary: every golden vector through `round` and `decode`, the
//! informational commands, and bad input (one clear line on stderr, exit code 2, no output
//! file left behind, the input untouched).

mod common;

use common::{fails as fails_all, hex, run, same, vectors, write_npy as write};
use lowprec::io::npy::{self, Data};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn rounding_csv_through_the_cli() {
    let text = std::fs::read_to_string(vectors().join("rounding.csv")).expect("vectors");
    type Rows = Vec<(f64, u64, u64)>;
    let mut groups: BTreeMap<(String, String, String), Rows> = BTreeMap::new();
    for l in text.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        groups
            .entry((c[0].into(), c[1].into(), c[2].into()))
            .or_default()
            .push((f64::from_bits(hex(c[3])), hex(c[4]), hex(c[5])));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.npy");
    let (vals, codes) = (dir.path().join("v.npy"), dir.path().join("c.npy"));
    let mut rows = 0;
    for ((f, r, o), cases) in &groups {
        let x: Vec<f64> = cases.iter().map(|c| c.0).collect();
        write(&input, vec![x.len()], Data::F64(x));
        let common = ["--rounding", r, "--overflow", o];
        let out = run(&[
            &[
                "round",
                f,
                input.to_str().unwrap(),
                "-o",
                vals.to_str().unwrap(),
            ][..],
            &common,
        ]
        .concat());
        assert!(
            out.status.success(),
            "{f} {r} {o}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = run(&[
            &[
                "round",
                f,
                input.to_str().unwrap(),
                "-o",
                codes.to_str().unwrap(),
                "--codes",
            ][..],
            &common,
        ]
        .concat());
        assert!(
            out.status.success(),
            "{f} {r} {o}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let Data::F64(v) = npy::read(&vals).unwrap().data else {
            panic!("float64 values")
        };
        let c: Vec<u64> = match npy::read(&codes).unwrap().data {
            Data::U8(c) => c.into_iter().map(u64::from).collect(),
            Data::U16(c) => c.into_iter().map(u64::from).collect(),
            Data::U32(c) => c.into_iter().map(u64::from).collect(),
            Data::U64(c) => c,
            d => panic!("codes dtype {}", d.dtype_name()),
        };
        for (i, &(x, vb, code)) in cases.iter().enumerate() {
            assert!(
                same(v[i], f64::from_bits(vb)),
                "{f} {r} {o} x={x:e}: value {:e}",
                v[i]
            );
            assert_eq!(c[i], code, "{f} {r} {o} x={x:e}: code");
            rows += 1;
        }
    }
    assert!(rows > 150_000);
}

#[test]
fn decode_csv_through_the_cli() {
    let text = std::fs::read_to_string(vectors().join("decode.csv")).expect("vectors");
    let mut by: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for l in text.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        by.entry(c[0].into())
            .or_default()
            .push((hex(c[1]), hex(c[2])));
    }
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("c.npy"), dir.path().join("v.npy"));
    for (f, cases) in &by {
        write(
            &input,
            vec![cases.len()],
            Data::U64(cases.iter().map(|c| c.0).collect()),
        );
        let o = run(&[
            "decode",
            f,
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let Data::F64(v) = npy::read(&out).unwrap().data else {
            panic!()
        };
        for (i, &(c, vb)) in cases.iter().enumerate() {
            assert!(same(v[i], f64::from_bits(vb)), "{f} {c:#x}");
        }
    }
}

#[test]
fn round_keeps_shape_and_dtype_and_picks_the_code_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.npy");
    let x: Vec<f32> = (0..24).map(|i| i as f32 * 0.7 - 8.0).collect();
    write(&input, vec![2, 3, 4], Data::F32(x.clone()));
    let out = dir.path().join("y.npy");
    let o = run(&[
        "round",
        "fp4-e2m1",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let a = npy::read(&out).unwrap();
    assert_eq!(a.shape, [2, 3, 4]);
    let Data::F32(y) = a.data else {
        panic!("float32 out")
    };
    assert_eq!(y[0], -6.0); // -8 saturates
    assert_eq!(y[12], 0.5); // 0.4 → 0.5
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("overflow 4") && stderr.contains("saturated 4"),
        "{stderr}"
    ); // -8, -7.3, 7.4, 8.1
    for (fmt, dtype) in [
        ("fp4-e2m1", "uint8"),
        ("bf16", "uint16"),
        ("tf32", "uint32"),
        ("fp64", "uint64"),
    ] {
        let o = run(&[
            "round",
            fmt,
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--codes",
        ]);
        assert!(o.status.success());
        assert_eq!(npy::read(&out).unwrap().data.dtype_name(), dtype, "{fmt}");
    }
    // float32 cannot hold fp64 values: float64 output
    let o = run(&[
        "round",
        "fp64",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert_eq!(npy::read(&out).unwrap().data.dtype_name(), "float64");
}

#[test]
fn informational_commands_print_the_facts() {
    let o = run(&["formats"]);
    let s = String::from_utf8(o.stdout).unwrap();
    for name in [
        "fp8-e4m3",
        "fp8-e5m2fnuz",
        "fp6-e2m3",
        "e8m0",
        "ue4m3",
        "tf32",
    ] {
        assert!(
            s.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{s}"
        );
    }
    let line = s.lines().find(|l| l.starts_with("fp8-e4m3 ")).unwrap();
    assert!(line.contains(" 448 ") && line.contains("2^-9"), "{line}");
    let o = run(&["info", "float8_e4m3fn"]);
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("0x7e") && s.contains("0 1111 110") && s.lines().count() > 256);
    let o = run(&[
        "encode",
        "fp8-e4m3",
        "0.3",
        "-500",
        "--rounding",
        "rtz",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["rounded"], 0.28125);
    assert_eq!(v[0]["code"], 0x29);
    assert_eq!(v[0]["lower"], 0.28125);
    assert_eq!(v[0]["upper"], 0.3125);
    assert_eq!(v[1]["rounded"], -448.0); // IEEE 754 §7.4: rtz never overflows
    let o = run(&["decode", "bf16", "0x3f80", "0xc000", "0b0111111110000000"]);
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(
        s.contains(" 1\n") && s.contains(" -2\n") && s.contains(" inf\n"),
        "{s}"
    );
    let o = run(&[
        "verify",
        "-f",
        "fp8-e4m3",
        "-r",
        "rne",
        "-r",
        "sr",
        "--count",
        "2000000",
        "--start",
        "1060000000",
    ]);
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(
        o.status.success() && s.matches(", 0 mismatches").count() == 2,
        "{s}"
    );
}

/// Run a command that must fail, with one output path.
fn fails(args: &[&str], out: &Path, needle: &str) {
    fails_all(args, &[out], needle);
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    write(&good, vec![3], Data::F32(vec![1.0, 2.0, 3.0]));
    let g = good.to_str().unwrap();
    let out = dir.path().join("out.npy");
    let o = out.to_str().unwrap();
    fails(
        &["round", "fp7", g, "-o", o],
        &out,
        "known formats: fp64, fp32",
    );
    fails(
        &["round", "fp8-e4m3", g, "-o", o, "--rounding", "nearest"],
        &out,
        "unknown rounding mode",
    );
    fails(
        &["round", "fp8-e4m3", g, "-o", o, "--overflow", "clip"],
        &out,
        "unknown overflow",
    );
    fails(&["encode", "e4m3", "abc"], &out, "not a number");
    fails(&["decode", "fp4-e2m1", "0x10"], &out, "does not fit");
    let bytes = std::fs::read(&good).unwrap();
    let edit = |pairs: &[(&str, &str)]| {
        let mut b = bytes.clone();
        for (from, to) in pairs {
            let at = b
                .windows(from.len())
                .position(|w| w == from.as_bytes())
                .unwrap();
            b.splice(at..at + from.len(), to.bytes());
        }
        b
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated.npy",
            bytes[..bytes.len() - 3].to_vec(),
            "needs 12 bytes",
        ),
        (
            "garbage.npy",
            b"not an npy file at all".to_vec(),
            "bad magic",
        ),
        (
            "fortran.npy",
            edit(&[("'shape': (3,)", "'shape': (1, 3)"), ("False", "True ")]),
            "Fortran",
        ),
        ("int.npy", edit(&[("<f4", "<i4")]), "unsupported .npy dtype"),
        ("empty.npy", vec![], "bad magic"),
    ];
    for (name, content, needle) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        fails(
            &["round", "fp8-e4m3", p.to_str().unwrap(), "-o", o],
            &out,
            needle,
        );
    }
    fails(
        &[
            "round",
            "fp8-e4m3",
            dir.path().join("missing.npy").to_str().unwrap(),
            "-o",
            o,
        ],
        &out,
        "cannot read",
    );
    fails(
        &[
            "round",
            "fp8-e4m3",
            g,
            "-o",
            dir.path().join("no/such/dir/y.npy").to_str().unwrap(),
        ],
        &dir.path().join("no/such/dir/y.npy"),
        "cannot write",
    );
    // NaN into a format without NaN, as codes
    let nan = dir.path().join("nan.npy");
    write(&nan, vec![2], Data::F32(vec![1.0, f32::NAN]));
    fails(
        &[
            "round",
            "fp4-e2m1",
            nan.to_str().unwrap(),
            "-o",
            o,
            "--codes",
        ],
        &out,
        "no NaN code",
    );
    // the output is the input: refused, input untouched
    let before = std::fs::read(&good).unwrap();
    let r = run(&["round", "fp8-e4m3", g, "-o", g]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("is the input"));
    assert_eq!(std::fs::read(&good).unwrap(), before);
    let alias = dir.path().join(".").join("good.npy");
    let r = run(&["round", "fp8-e4m3", g, "-o", alias.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(std::fs::read(&good).unwrap(), before);
    // decode of a float array as codes
    fails(
        &["decode", "fp8-e4m3", g, "-o", o],
        &out,
        "unsigned integer",
    );
    // a usage error from clap also exits 2
    let r = run(&["round"]);
    assert_eq!(r.status.code(), Some(2));
}

/// Standard output that goes away: a reader that closes the pipe after one line gets that
/// line and `lowprec` exits 0 quietly (as `head` expects); a full disk gives one line on
/// stderr and exit 2; never a panic.
#[test]
fn closed_pipes_and_full_disks_are_not_panics() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let bin = env!("CARGO_BIN_EXE_lowprec");
    for args in [
        &["tour"][..],
        &["formats"],
        &["info", "fp8-e4m3"],
        &["report"],
    ] {
        let mut child = Command::new(bin)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        // (the reading end is dropped here: the pipe is closed)
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!first.is_empty(), "{args:?}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let out = Command::new(bin)
            .args(["formats"])
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(
            err.trim(),
            "lowprec: error: writing to standard output: No space left on device (os error 28)"
        );
        // standard error full or closed: the status line is lost, not a panic; the exit code
        // still tells (0 for a success, 2 for a refusal)
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("x.npy");
        common::write_npy(
            &input,
            vec![3],
            lowprec::io::npy::Data::F32(vec![0.1, 2.0, 500.0]),
        );
        let o = dir.path().join("y.npy");
        let (i, o) = (input.to_str().unwrap(), o.to_str().unwrap());
        for (args, code) in [
            (&["round", "fp8-e4m3", i, "-o", o][..], 0),
            (&["round", "fp8-e4m3", "missing.npy", "-o", o], 2),
        ] {
            for stderr in [
                Stdio::from(std::fs::File::create("/dev/full").unwrap()),
                Stdio::null(),
            ] {
                let out = Command::new(bin)
                    .args(args)
                    .stderr(stderr)
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(code), "{args:?}");
            }
        }
        assert!(Path::new(o).exists());
    }
}

/// Sizes from the command line are checked before anything is allocated: above the memory
/// budget (`--max-memory`, default half of the machine's memory) or beyond 64 bits, zero
/// where zero means nothing, and ranges that would wrap: one line naming the option, exit 2.
#[test]
fn sizes_from_the_command_line_are_checked_first() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "accumulate",
                "--n",
                "100000",
                "--rows",
                "64",
                "--max-memory",
                "1M",
            ],
            "--n 100000 × --rows 64 needs 146.5 MiB of memory, above the budget of 1.0 MiB",
        ),
        (
            &[
                "accumulate",
                "--n",
                "18446744073709551615",
                "--rows",
                "18446744073709551615",
            ],
            "--n 18446744073709551615 × --rows 18446744073709551615 needs",
        ),
        (
            &["gemm", "--m", "100000", "--n", "100000", "--k", "8"],
            "--m 100000 --k 8 --n 100000 needs",
        ),
        (
            &[
                "plot", "--max-n", "16777216", "--rows", "1000000", "-o", "x.svg",
            ],
            "--max-n 16777216 × --rows 1000000 needs",
        ),
        (
            &["bench", "--n", "1099511627776"],
            "--n 1099511627776 needs",
        ),
        (
            &["soliton", "--points", "100000000000000"],
            "--points 100000000000000 needs",
        ),
        (&["bench", "--n", "0"], "--n and --reps must be at least 1"),
        (
            &["bench", "--reps", "0"],
            "--n and --reps must be at least 1",
        ),
        (&["verify", "--count", "0"], "--count must be at least 1"),
        (
            &["verify", "--start", "18446744073709551615", "--count", "5"],
            "--start 18446744073709551615 + --count 5 exceeds the 2^32 binary32 bit patterns",
        ),
        (
            &["formats", "--max-memory", "4X"],
            "use bytes or a K, M, G or T suffix",
        ),
    ];
    for (args, needle) in cases {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && out.stdout.is_empty(),
            "{args:?}: {err}"
        );
        assert!(!Path::new("x.svg").exists());
    }
    // within the budget the same command runs
    let ok = run(&[
        "accumulate",
        "--n",
        "1000",
        "--rows",
        "2",
        "--max-memory",
        "1M",
    ]);
    assert_eq!(ok.status.code(), Some(0));
}

/// Hostile inputs: a FIFO is refused before it is opened (no hang), a `.npy` header with a
/// key twice is refused, a format bias near `i32::MIN` is refused without wrapping; a BOOL
/// tensor in a safetensors file is carried along (the report skips it, quantize copies it).
#[test]
fn hostile_inputs_are_refused_and_odd_dtypes_carried() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let fifo = d.join("f.npy");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|st| st.success())
    {
        fails_all(&["report", &s(&fifo)], &[], "not a regular file");
    }
    let hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'shape': (4,), }";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!("{hdr:<117}\n");
    bytes.extend((padded.len() as u16).to_le_bytes());
    bytes.extend(padded.as_bytes());
    bytes.extend([0u8; 16]);
    let dup = d.join("dup.npy");
    std::fs::write(&dup, &bytes).unwrap();
    fails_all(&["report", &s(&dup)], &[], "'shape' appears twice");
    fails_all(
        &["info", "e4m3b-2147483648"],
        &[],
        "bias -2147483648 puts the exponents outside",
    );
    fails_all(
        &["encode", "e4m3b2147483647", "1"],
        &[],
        "bias 2147483647 puts the exponents outside",
    );
    // a float tensor and a BOOL mask
    let header = r#"{"w":{"dtype":"F32","shape":[2,32],"data_offsets":[0,256]},"mask":{"dtype":"BOOL","shape":[2,2],"data_offsets":[256,260]}}"#;
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend(header.as_bytes());
    for i in 0..64 {
        st.extend((i as f32 * 0.1 - 3.0).to_le_bytes());
    }
    st.extend([1u8, 0, 0, 1]);
    let model = d.join("m.safetensors");
    std::fs::write(&model, &st).unwrap();
    let out = run(&["report", &s(&model), "-s", "mxfp4", "--summary"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("(64 elements)"));
    let q = d.join("q.safetensors");
    let out = run(&["quantize", &s(&model), "-s", "mxfp4", "-o", &s(&q)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("1 tensors quantized with mx:fp4-e2m1, 1 copied"));
}

/// Honest statistics on degenerate data: an all-NaN tensor prints `n/a`, never an exact 0;
/// values near the top of binary64 and values every scheme flushes give finite figures
/// (relative error 1 when everything is lost), not NaN and not 0.
#[test]
fn degenerate_tensors_get_honest_figures() {
    let dir = tempfile::tempdir().unwrap();
    let figures = |name: &str, v: f64| -> Vec<String> {
        let p = dir.path().join(format!("{name}.npy"));
        write(&p, vec![4, 64], Data::F64(vec![v; 256]));
        let out = run(&["report", p.to_str().unwrap(), "-s", "mxfp4", "--summary"]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        // the totals' row (after it, `--summary` says which layer groups there are)
        let line = text
            .lines()
            .find(|l| l.starts_with("(all)"))
            .unwrap()
            .to_string();
        line.split_whitespace().map(String::from).collect()
    };
    // (all) mxfp4 bits rel SQNR max saturated flushed
    let nan = figures("nan", f64::NAN);
    assert_eq!(&nan[3..6], ["n/a", "n/a", "n/a"], "{nan:?}");
    let big = figures("big", 1e200);
    assert_eq!(
        (big[3].as_str(), big[6].as_str()),
        ("1.000e0", "100.000%"),
        "{big:?}"
    );
    let tiny = figures("tiny", 1e-170);
    assert_eq!(
        (tiny[3].as_str(), tiny[7].as_str()),
        ("1.000e0", "100.000%"),
        "{tiny:?}"
    );
}
