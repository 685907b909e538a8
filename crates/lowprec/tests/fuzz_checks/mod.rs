//! The properties the fuzz targets check (`fuzz/fuzz_targets/*.rs` include this file), also
//! run by `tests/fuzz_regressions.rs` on stable over the committed corpus seeds and every
//! input a campaign found (`fuzz/regressions/TARGET/`). Each function takes arbitrary bytes
//! and panics only when a property fails: a reader that accepts its input must give back
//! what it read when its output is read again, and a name that parses must print a canonical
//! name that parses back to the same value.

#![allow(dead_code)] // each fuzz target uses one of these

use lowprec::io::{gguf, npy, quantized, safetensors as st};
use lowprec::scheme::Scheme;
use lowprec::FloatFormat;
use std::collections::BTreeMap;

/// A target's property over one input.
pub type Check = fn(&[u8]);

/// The targets, by name (the corpus and regression folders use these names).
pub const TARGETS: [(&str, Check); 7] = [
    ("npy", npy_reader),
    ("safetensors", safetensors_reader),
    ("gguf", gguf_reader),
    ("quantized", quantized_reader),
    ("format_name", format_name),
    ("scheme_name", scheme_name),
    ("decimal", decimal),
];

/// A `.npy` file that reads writes back to bytes that read to the same array, and writing is
/// then a fixed point.
pub fn npy_reader(data: &[u8]) {
    if let Ok(a) = npy::from_bytes(data) {
        let bytes = npy::to_bytes(&a);
        let b = npy::from_bytes(&bytes).expect("a written .npy reads back");
        assert_eq!(a.shape, b.shape);
        assert_eq!(npy::to_bytes(&b), bytes, "writing is a fixed point");
    }
}

/// A safetensors file that reads: every float tensor converts, and the tensors and the
/// metadata written again read back the same.
pub fn safetensors_reader(data: &[u8]) {
    let Ok(f) = st::from_bytes(data.to_vec()) else {
        return;
    };
    for t in f.iter() {
        assert_eq!(t.bytes.len(), t.len() * t.dtype.size(), "{}: bytes", t.name);
        if t.is_float() {
            let v = t.to_f64_vec().expect("a float tensor converts");
            assert_eq!(v.len(), t.len());
        }
    }
    let outs: Vec<st::TensorOut> = f
        .iter()
        .map(|t| st::TensorOut::new(t.name, t.dtype, t.shape, t.bytes))
        .collect();
    let meta: BTreeMap<String, String> = f.metadata().clone();
    let bytes = st::to_bytes(&outs, &meta).expect("what was read can be written");
    let g = st::from_bytes(bytes).expect("a written file reads back");
    assert_eq!(g.names(), f.names());
    assert_eq!(g.metadata(), f.metadata());
    for (a, b) in f.iter().zip(g.iter()) {
        assert_eq!(
            (a.name, a.dtype, a.shape, a.bytes),
            (b.name, b.dtype, b.shape, b.bytes)
        );
    }
}

/// A GGUF file that reads: every tensor's bytes lie in the file, every dequantizable tensor
/// dequantizes to its element count, and writing what was read gives a file that reads
/// back to the same key/values, tensor infos (offsets aside) and bytes.
pub fn gguf_reader(data: &[u8]) {
    let Ok(f) = gguf::from_bytes(data.to_vec()) else {
        return;
    };
    for t in f.tensors() {
        assert_eq!(f.bytes(t).len() as u64, t.size, "{}: bytes", t.name);
        if t.ggml_type.can_dequantize() {
            let v = f.dequantize(t).expect("a validated tensor dequantizes");
            assert_eq!(v.len() as u64, t.elements());
        }
    }
    let shapes: Vec<Vec<usize>> = f.tensors().iter().map(|t| t.shape()).collect();
    let outs: Vec<gguf::TensorOut> = f
        .tensors()
        .iter()
        .zip(&shapes)
        .filter(|(t, _)| !t.dims.is_empty())
        .map(|(t, s)| {
            gguf::TensorOut::new(&t.name, s, t.ggml_type, f.bytes(t))
                .expect("a read tensor can be written")
        })
        .collect();
    let bytes = gguf::to_bytes(f.metadata(), &outs).expect("what was read can be written");
    let g = gguf::from_bytes(bytes).expect("a written file reads back");
    assert_eq!(g.metadata().len(), f.metadata().len());
    for ((ka, va), (kb, vb)) in f.metadata().iter().zip(g.metadata()) {
        assert_eq!(ka, kb);
        // (NaN floats compare by their bits)
        assert_eq!(format!("{va:?}"), format!("{vb:?}"));
    }
    let kept: Vec<_> = f.tensors().iter().filter(|t| !t.dims.is_empty()).collect();
    assert_eq!(kept.len(), g.tensors().len());
    for (a, b) in kept.iter().zip(g.tensors()) {
        assert_eq!(
            (&a.name, &a.dims, a.ggml_type),
            (&b.name, &b.dims, b.ggml_type)
        );
        assert_eq!(f.bytes(a), g.bytes(b));
    }
}

/// A safetensors file that reads as a quantized checkpoint dequantizes without error: every
/// field was validated by the reader.
pub fn quantized_reader(data: &[u8]) {
    let Ok(f) = st::from_bytes(data.to_vec()) else {
        return;
    };
    if let Ok((scheme, stored)) = quantized::read(&f) {
        for s in &stored {
            let mut v = vec![0f64; s.codes.len()];
            scheme
                .dequantize_into(&s.codes, &s.encoded, &s.shape, &mut v)
                .expect("a validated quantized tensor dequantizes");
        }
    }
}

/// A format name that parses prints a canonical name that parses back to the same format.
pub fn format_name(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(f) = FloatFormat::parse(s) {
        let name = f.to_string();
        let g = FloatFormat::parse(&name).unwrap_or_else(|e| panic!("{s:?} → {name:?}: {e}"));
        assert_eq!(f, g, "{s:?} → {name:?}");
    }
}

/// A scheme name that parses prints a canonical name that parses back to the same scheme.
pub fn scheme_name(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(q) = Scheme::parse(s) {
        let name = q.to_string();
        let r = Scheme::parse(&name).unwrap_or_else(|e| panic!("{s:?} → {name:?}: {e}"));
        assert_eq!(q, r, "{s:?} → {name:?}");
    }
}

/// An exact literal that Rust's own (correctly rounded) `f64` parser also reads gives the
/// same binary64, nearest even; every literal rounds into bfloat16 without panicking.
pub fn decimal(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if s.len() > 2000 {
        return;
    }
    if let Ok(x) = lowprec::exact::Exact::parse(s) {
        let v = x.to_f64();
        if let Ok(w) = s.trim().parse::<f64>() {
            assert!(
                v.to_bits() == w.to_bits() || (v.is_nan() && w.is_nan()),
                "{s:?}: {v:e} vs {w:e}"
            );
        }
        let _ = FloatFormat::BF16.round_exact(&x, &Default::default());
    }
}
