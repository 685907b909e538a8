//! `lowprec calc`, `op` and `table` through the binary: results against the exact reference
//! (`lowprec::ops::reference`), and bad input (one line, exit 2, no output file).

mod common;

use common::{fails, ok, write_npy as write};
use lowprec::io::npy::{self, Data};
use lowprec::ops::{reference, Op, Projection, Rounding, Saturation};
use lowprec::FloatFormat;

#[test]
fn calc_rounds_each_step_once_and_shows_it() {
    let s = ok(&[
        "calc",
        "fma(binary8p4se:1.5, binary8p4se:0.3, fp16:2.1) -> binary8p3se",
    ]);
    let last = s.lines().last().unwrap();
    // 1.5 × 0.3125 + 2.099609375 = 2.568359375, nearest in binary8p3se is 2.5 (code 0x45)
    assert!(
        last.starts_with("FMA(") && last.contains("2.568359375") && last.contains("0x45"),
        "{s}"
    );
    // the literal above the bf16 tie rounds up (read exactly, not through binary64)
    let s = ok(&["calc", "bf16:1.00390625000000000001"]);
    assert!(s.contains("1.0078125") && s.contains("0x3f81"), "{s}");
    // the draft: x/0 is NaN in P3109, IEEE gives −Inf for 1/−0
    assert!(ok(&["calc", "div(binary8p3se:1, binary8p3se:0)"]).contains("0x80"));
    assert!(ok(&["calc", "div(fp16:1, fp16:-0) -> fp16"]).contains("0xfc00"));
    // directed rounding and saturation reach the result
    let s = ok(&["calc", "add(bf16:1, bf16:0.00390625) -> bf16", "-r", "rup"]);
    assert!(s.lines().last().unwrap().contains("0x3f81"), "{s}");
    let s = ok(&[
        "calc",
        "mul(binary8p3se:40000, binary8p3se:2)",
        "--sat",
        "finite",
    ]);
    assert!(s.lines().last().unwrap().contains("saturated"), "{s}");
    let j: serde_json::Value =
        serde_json::from_str(&ok(&["calc", "sqrt(fp32:2) -> fp16", "--json"])).unwrap();
    assert_eq!(j[1]["code"], 0x3da8);
}

#[test]
fn op_over_arrays_matches_the_exact_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        dir.path().join("a.npy"),
        dir.path().join("b.npy"),
        dir.path().join("r.npy"),
    );
    let n = 4096;
    let ca: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
    let cb: Vec<u8> = (0..n).map(|i| (i / 16 + i * 13) as u8).collect();
    write(&a, vec![64, 64], Data::U8(ca.clone()));
    write(&b, vec![64, 64], Data::U8(cb.clone()));
    let (fa, fb) = (FloatFormat::BINARY8P4SE, FloatFormat::FP8_E4M3);
    for (op, name, out_f, r, sat) in [
        (Op::Add, "add", FloatFormat::BINARY8P3SE, "rne", "none"),
        (Op::Multiply, "mul", FloatFormat::BF16, "rtz", "finite"),
        (
            Op::Divide,
            "div",
            FloatFormat::BINARY8P4SE,
            "rto",
            "propagate",
        ),
        (Op::Subtract, "sub", FloatFormat::FP16, "rdn", "none"),
    ] {
        ok(&[
            "op",
            name,
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--in",
            "binary8p4se,fp8-e4m3",
            "--out",
            &out_f.name(),
            "-o",
            out.to_str().unwrap(),
            "-r",
            r,
            "--sat",
            sat,
        ]);
        let got = npy::read(&out).unwrap();
        assert_eq!(got.shape, vec![64, 64]);
        let codes: Vec<u64> = match got.data {
            Data::U8(v) => v.into_iter().map(u64::from).collect(),
            Data::U16(v) => v.into_iter().map(u64::from).collect(),
            d => panic!("{name}: codes dtype {}", d.dtype_name()),
        };
        let p = Projection {
            rounding: Rounding::parse(r).unwrap(),
            saturation: Saturation::parse(sat).unwrap(),
            ..Default::default()
        };
        for i in 0..n {
            let want = reference::arithmetic(
                op,
                &[(fa, fa.decode(ca[i] as u64)), (fb, fb.decode(cb[i] as u64))],
                &out_f,
                &p,
            )
            .unwrap()
            .unwrap();
            assert_eq!(codes[i], want, "{name} element {i}");
        }
    }
    // exact float values are accepted and give the same codes
    let vals: Vec<f32> = ca
        .iter()
        .map(|&c| fa.decode(c as u64) as f32)
        .filter(|v| !v.is_nan())
        .collect();
    let va = dir.path().join("va.npy");
    write(&va, vec![vals.len()], Data::F32(vals.clone()));
    ok(&[
        "op",
        "neg",
        va.to_str().unwrap(),
        "--in",
        "binary8p4se",
        "--out",
        "binary8p4se",
        "-o",
        out.to_str().unwrap(),
        "--values",
    ]);
    let Data::F64(neg) = npy::read(&out).unwrap().data else {
        panic!("float64 values")
    };
    for (x, y) in vals.iter().zip(&neg) {
        assert_eq!(-(*x as f64) + 0.0, *y + 0.0, "Negate({x})");
    }
}

#[test]
fn table_lists_every_pair() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let svg = dir.path().join("t.svg");
    ok(&[
        "table",
        "mul",
        "--in",
        "fp8-e5m2,binary8p3se",
        "--out",
        "fp8-e4m3",
        "-r",
        "rna",
        "-o",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 65537);
    let p = Projection::new(Rounding::NearestTiesToAway, Saturation::None);
    let (f1, f2, fo) = (
        FloatFormat::FP8_E5M2,
        FloatFormat::BINARY8P3SE,
        FloatFormat::FP8_E4M3,
    );
    for (idx, row) in rows[1..].iter().enumerate().step_by(97) {
        let c: Vec<&str> = row.split(',').collect();
        let (a, b) = ((idx >> 8) as u64, (idx & 255) as u64);
        assert_eq!(c[0], format!("{a:#x}"));
        assert_eq!(c[1], format!("{b:#x}"));
        let want = reference::arithmetic(
            Op::Multiply,
            &[(f1, f1.decode(a)), (f2, f2.decode(b))],
            &fo,
            &p,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c[4], format!("{want:#x}"), "{row}");
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn table_plot_is_svg_or_png_by_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    // `lowprec table add` on fp4-e2m1 into the CSV `out`, drawn into `plot`
    let args = |out: &std::path::Path, plot: &std::path::Path| {
        let a = [
            "table",
            "add",
            "--in",
            "fp4-e2m1",
            "--out",
            "fp4-e2m1",
            "-o",
            out.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ];
        a.map(String::from)
    };
    let csv = dir.path().join("t.csv");
    // any case of .png; fp4-e2m1: 16 × 16 cells of 48 × 48 pixels, a legend strip below
    let png = dir.path().join("t.PNG");
    fn refs(a: &[String]) -> Vec<&str> {
        a.iter().map(String::as_str).collect()
    }
    let s = ok(&refs(&args(&csv, &png)));
    assert!(s.contains("t.PNG"), "{s}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(bytes[..8], *b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[12..16], b"IHDR");
    let side = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(side(16), 768);
    assert!(side(20) > 768);
    assert_eq!(bytes[24..29], [8, 2, 0, 0, 0]);
    assert!(bytes.ends_with(b"IEND\xaeB`\x82"));
    // any other extension (or none): one line naming it, exit 2, neither file written
    let (out, bad) = (dir.path().join("u.csv"), dir.path().join("u.jpg"));
    fails(
        &refs(&args(&out, &bad)),
        &[&out, &bad],
        "cannot draw a `.jpg` file; give a path ending in .svg or .png",
    );
    let none = dir.path().join("u");
    fails(
        &refs(&args(&out, &none)),
        &[&out, &none],
        "no extension; give a path ending in .svg or .png",
    );
}

#[test]
fn bad_arithmetic_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.npy"),
        dir.path().join("b.npy"),
        dir.path().join("c.npy"),
    );
    write(&a, vec![3], Data::F32(vec![1.0, 0.5, 2.0]));
    write(&b, vec![2], Data::F32(vec![1.0, 0.5]));
    write(&c, vec![3], Data::F32(vec![0.3, 1.0, 0.0]));
    let out = dir.path().join("out.npy");
    let (sa, sb, sc, so) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        c.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let o = [out.as_path()];
    fails(
        &[
            "op",
            "frobnicate",
            sa,
            sa,
            "--in",
            "fp16",
            "--out",
            "fp16",
            "-o",
            so,
        ],
        &o,
        "unknown operation `frobnicate`",
    );
    fails(
        &[
            "op", "add", sa, sb, "--in", "fp16", "--out", "fp16", "-o", so,
        ],
        &o,
        "give arrays of the same shape",
    );
    fails(
        &[
            "op",
            "add",
            sa,
            sc,
            "--in",
            "binary8p4se",
            "--out",
            "fp16",
            "-o",
            so,
        ],
        &o,
        "0.30000001192092896 is not exactly representable in binary8p4se",
    );
    fails(
        &[
            "op", "add", sa, sa, "--in", "fp7", "--out", "fp16", "-o", so,
        ],
        &o,
        "unknown format `fp7`",
    );
    fails(
        &["op", "add", sa, "--in", "fp16", "--out", "fp16", "-o", so],
        &o,
        "Add takes 2 operand arrays, 1 given",
    );
    fails(
        &["op", "add", sa, sa, "--in", "fp16", "-o", so],
        &o,
        "Add needs a result format",
    );
    fails(
        &[
            "op",
            "add",
            sa,
            sa,
            "--in",
            "fp16,fp16,fp16",
            "--out",
            "fp16",
            "-o",
            so,
        ],
        &o,
        "give one format for all or 2 comma-separated",
    );
    fails(
        &[
            "op", "div", sc, sc, "--in", "fp32", "--out", "fp4-e2m1", "-o", so,
        ],
        &o,
        "has no NaN",
    );
    fails(
        &[
            "op", "add", sa, sa, "--in", "fp16", "--out", "fp16", "-o", sa, "-r", "rne",
        ],
        &[],
        "is the input file",
    );
    fails(
        &[
            "op", "add", sa, sa, "--in", "fp16", "--out", "fp16", "-o", so, "-r", "sra40",
        ],
        &o,
        "unknown rounding `sra40`",
    );
    fails(
        &[
            "op", "add", sa, sa, "--in", "fp16", "--out", "fp16", "-o", so, "--sat", "maybe",
        ],
        &o,
        "unknown saturation `maybe`",
    );
    fails(&["calc", "add(fp16:1"], &[], "malformed expression");
    fails(
        &["calc", "add(1, fp16:2)"],
        &[],
        "needs a format: write FORMAT:NUMBER",
    );
    fails(
        &["calc", "add(fp16:1)"],
        &[],
        "Add takes 2 operands, 1 given",
    );
    fails(&["calc", "fp16:1.2.3"], &[], "1.2.3");
    fails(&["calc", "div(fp4:0, fp4:0) -> fp4"], &[], "has no NaN");
    fails(
        &["calc", "add(fp16:1, fp16:2) junk"],
        &[],
        "unexpected `junk`",
    );
    fails(
        &["table", "add", "--in", "fp16", "--out", "fp16"],
        &[],
        "at most 8 bits",
    );
    fails(
        &[
            "table", "add", "--in", "fp8-e4m3", "--out", "fp16", "-r", "sra8",
        ],
        &[],
        "deterministic rounding",
    );
    fails(&["calc", "binary16p2se:1"], &[], "K − P ≤ 10");
}
