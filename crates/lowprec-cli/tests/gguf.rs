//! GGUF through the binary without Python: `quantize -s gguf:TYPE -o X.gguf`, `info`,
//! `dequantize` and `report` agree with the library's own quantizer and dequantizer, and bad
//! files or arguments give one line and exit 2 with no output file. (The parity with
//! llama.cpp's reference is tests/oracle/test_gguf_files.py and tests/python/test_ggml_*.)

mod common;

use common::{fails, ok, write_npy};
use lowprec::ggml::{self, GgmlType};
use lowprec::io::gguf;
use lowprec::io::npy::Data;
use lowprec::io::safetensors as st;

fn values(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 * 0.618).fract() - 0.5) * (1.0 + (i % 7) as f32))
        .collect()
}

#[test]
fn quantize_to_gguf_then_read_dequantize_and_report() {
    let d = tempfile::tempdir().unwrap();
    let x = values(8 * 256);
    let inp = d.path().join("w.npy");
    write_npy(&inp, vec![8, 256], Data::F32(x.clone()));
    for ty in [
        GgmlType::Q4_0,
        GgmlType::Q8_0,
        GgmlType::TQ2_0,
        GgmlType::MXFP4,
    ] {
        let out = d.path().join(format!("w.{}.gguf", ty.name()));
        let (i, o) = (inp.to_str().unwrap(), out.to_str().unwrap());
        let scheme = format!("gguf:{}", ty.name());
        ok(&[
            "quantize",
            i,
            "-s",
            &scheme,
            "-o",
            o,
            "--meta",
            "general.name=w",
            "--meta",
            "k:i32=-3",
        ]);
        // the file holds the library's bytes
        let f = gguf::open(&out).unwrap();
        assert_eq!(
            f.get("general.name"),
            Some(&gguf::MetaValue::Str("w".into()))
        );
        assert_eq!(f.get("k"), Some(&gguf::MetaValue::I32(-3)));
        let t = f.tensor("w").unwrap();
        assert_eq!((t.ggml_type, t.shape()), (ty, vec![8, 256]));
        let mut want = vec![0u8; t.size as usize];
        ggml::quantize(ty, &x, &mut want).unwrap();
        assert_eq!(f.bytes(t), &want[..]);
        // info names the type and shape
        let s = ok(&["info", o]);
        assert!(
            s.contains(&format!("w     {}", ty.name())) || s.contains(ty.name()),
            "{s}"
        );
        assert!(s.contains("8x256"), "{s}");
        // dequantize writes the library's values
        let back = d.path().join("back.safetensors");
        ok(&["dequantize", o, "-o", back.to_str().unwrap()]);
        let y = st::open(&back)
            .unwrap()
            .get("w")
            .unwrap()
            .to_f32_vec()
            .unwrap();
        let mut want = vec![0f32; x.len()];
        ggml::dequantize(ty, f.bytes(t), &mut want).unwrap();
        assert_eq!(y.len(), want.len());
        assert!(y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
        // the file against the input equals gguf:TYPE on the input
        let s = ok(&["report", "--reference", i, o, "-s", &scheme, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let rows = v["tensors"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["sqnr_db"], rows[1]["sqnr_db"], "{s}");
        assert_eq!(rows[0]["bits_per_element"], ty.bits_per_element());
    }
}

#[test]
fn bad_gguf_input_and_arguments_are_one_line_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let inp = d.path().join("w.npy");
    write_npy(&inp, vec![4, 64], Data::F32(values(256)));
    let i = inp.to_str().unwrap();
    let out = d.path().join("o.gguf");
    let o = out.to_str().unwrap();
    fails(
        &["quantize", i, "-s", "gguf:Q4_K", "-o", o],
        &[&out],
        "dequantize-only",
    );
    fails(
        &["quantize", i, "-s", "gguf:Q9", "-o", o],
        &[&out],
        "unknown ggml type",
    );
    fails(
        &["quantize", i, "-s", "mxfp4", "-o", o],
        &[&out],
        "a .gguf output takes a ggml type",
    );
    fails(
        &["quantize", i, "-s", "gguf:TQ1_0", "-o", o],
        &[&out],
        "whole TQ1_0 blocks",
    );
    let npy = d.path().join("o.npy");
    fails(
        &[
            "quantize",
            i,
            "-s",
            "gguf:Q8_0",
            "-o",
            npy.to_str().unwrap(),
        ],
        &[&npy],
        "give a .gguf output",
    );
    fails(
        &[
            "quantize",
            i,
            "-s",
            "gguf:Q8_0",
            "-o",
            o,
            "--meta",
            "x:u8=300",
        ],
        &[&out],
        "is not a u8",
    );
    // a file whose tensor data runs past its end
    ok(&["quantize", i, "-s", "gguf:Q8_0", "-o", o]);
    let bytes = std::fs::read(&out).unwrap();
    let cut = d.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() - 64]).unwrap();
    let back = d.path().join("back.safetensors");
    fails(
        &[
            "dequantize",
            cut.to_str().unwrap(),
            "-o",
            back.to_str().unwrap(),
        ],
        &[&back],
        "past the end",
    );
    fails(&["info", cut.to_str().unwrap()], &[], "past the end");
    fails(&["report", cut.to_str().unwrap()], &[], "past the end");
}
