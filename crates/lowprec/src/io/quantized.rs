//! The quantized checkpoint layout: a `.safetensors` file that keeps every tensor name, with
//! each quantized tensor `W` stored as
//!
//! | entry | dtype | shape | what |
//! |---|---|---|---|
//! | `W` | U8 | `W`'s shape, last axis = packed row length | element codes packed row by row ([`crate::scheme::pack_rows`]: 4-bit two per byte low nibble first, 6-bit four per three bytes, 9 to 16 bits little-endian words) |
//! | `W.scales` | U8 for scale formats of at most 8 bits (E8M0, E4M3 codes), else F32 / F16 / BF16 / F64 as the scale format | the block grid ([`crate::scheme::Grid::scale_shape`]) | one scale per block |
//! | `W.zeros` | F64 | the block grid | asymmetric integers' zero points |
//! | `W.tensor_scale` | F32 | `[1]` | two-level schemes' tensor scale `g` |
//!
//! The metadata holds `lowprec.scheme` (the canonical scheme string, which names every axis,
//! the rotation and its seed included), `lowprec.version`, and per quantized tensor
//! `lowprec.tensor.W` = `{"dtype", "shape", "code_bits", "scale_format", "scale_shape"}`.
//! Floating tensors of at least two dimensions are quantized; the rest are copied. Reading
//! checks every field against the scheme and the shape before use; [`dequantize_file`]
//! gives back, bit for bit, the values [`quantize_file`] reported.

use super::safetensors::{self as st, Dtype, SafeTensors, TensorOut};
use crate::error::{Error, Result};
use crate::round::Float;
use crate::scheme::{Counts, Encoded, Scales, Scheme};
use crate::stats::ErrorStats;
use crate::FloatFormat;
use std::collections::BTreeMap;
use std::path::Path;

/// The metadata key naming the scheme.
pub const META_SCHEME: &str = "lowprec.scheme";
/// The metadata key prefix of each quantized tensor's record.
pub const META_TENSOR: &str = "lowprec.tensor.";
/// The metadata key of the writer's version.
pub const META_VERSION: &str = "lowprec.version";

/// What quantizing one tensor did.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorReport {
    /// The tensor's name.
    pub name: String,
    /// Bits per element, scales included.
    pub bits_per_element: f64,
    /// The error of the dequantized values against the input.
    pub stats: ErrorStats,
    /// What happened.
    pub counts: Counts,
    /// The tensor scale of a two-level scheme.
    pub tensor_scale: Option<f32>,
}

/// One quantized tensor as stored: its original dtype and shape, the codes (unpacked) and
/// the scales.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The tensor's name.
    pub name: String,
    /// The original dtype.
    pub dtype: Dtype,
    /// The original shape.
    pub shape: Vec<usize>,
    /// Element codes, unpacked, in the tensor's shape.
    pub codes: Vec<u16>,
    /// Scales, zero points, tensor scale.
    pub encoded: Encoded,
}

/// The safetensors dtype holding values of a wide scale format.
fn scale_dtype(f: &FloatFormat) -> Dtype {
    match *f {
        FloatFormat::FP32 => Dtype::F32,
        FloatFormat::FP16 => Dtype::F16,
        FloatFormat::BF16 => Dtype::BF16,
        _ => Dtype::F64,
    }
}

fn f64_bytes(v: &[f64], d: Dtype) -> Result<Vec<u8>> {
    Ok(match d {
        Dtype::F64 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Dtype::F32 => v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect(),
        Dtype::F16 | Dtype::BF16 => {
            let f = if d == Dtype::F16 {
                FloatFormat::FP16
            } else {
                FloatFormat::BF16
            };
            let (c, _) = crate::encode_vec::<f64, u16>(&f, v, &crate::RoundOptions::default())?;
            c.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        d if d.fp8().is_some() => {
            // back into the tensor's own 8-bit format, nearest even, saturating (FP8
            // checkpoints hold finite values)
            let f = d.fp8().expect("an 8-bit float dtype");
            let o = crate::RoundOptions::default().overflow(crate::Overflow::Saturate);
            crate::encode_vec::<f64, u8>(&f, v, &o)?.0
        }
        d => {
            return Err(Error::InvalidArgument(format!(
                "{d} is not a floating dtype for values"
            )))
        }
    })
}

/// One tensor to write: name, dtype, shape, bytes.
type Entry = (String, Dtype, Vec<usize>, Vec<u8>);

/// The entries and the metadata record of one quantized tensor.
fn entries(
    scheme: &Scheme,
    name: &str,
    dtype: Dtype,
    shape: &[usize],
    codes: &[u16],
    enc: &Encoded,
) -> Result<(Vec<Entry>, String)> {
    let row_len = shape.last().copied().unwrap_or(1).max(1);
    let bits = scheme.code_bits();
    let (bytes, per) = crate::scheme::pack_rows(codes, bits, row_len)?;
    let mut pshape = shape.to_vec();
    match pshape.last_mut() {
        Some(l) => *l = per,
        None => pshape.push(per),
    }
    let mut out = vec![(name.to_string(), Dtype::U8, pshape, bytes)];
    match &enc.scales {
        Scales::Codes(c) => out.push((
            format!("{name}.scales"),
            Dtype::U8,
            enc.scale_shape.clone(),
            c.clone(),
        )),
        Scales::Values(v) => {
            let d = scale_dtype(&scheme.scale);
            out.push((
                format!("{name}.scales"),
                d,
                enc.scale_shape.clone(),
                f64_bytes(v, d)?,
            ));
        }
        Scales::None => {}
    }
    if let Some(z) = &enc.zeros {
        out.push((
            format!("{name}.zeros"),
            Dtype::F64,
            enc.scale_shape.clone(),
            f64_bytes(z, Dtype::F64)?,
        ));
    }
    if let Some(g) = enc.tensor_scale {
        out.push((
            format!("{name}.tensor_scale"),
            Dtype::F32,
            vec![1],
            g.to_le_bytes().to_vec(),
        ));
    }
    let record = serde_json::json!({
        "dtype": dtype.name(),
        "shape": shape,
        "code_bits": bits,
        "scale_format": scheme.scale.name(),
        "scale_shape": enc.scale_shape,
    })
    .to_string();
    Ok((out, record))
}

/// Whether [`quantize_file`] quantizes a tensor of this dtype and shape.
pub fn is_quantized(dtype: Dtype, shape: &[usize]) -> bool {
    dtype.is_float() && shape.len() >= 2 && shape.iter().product::<usize>() > 0
}

/// The safetensors dtype of a `.npy` array's data (its bytes are the same: little-endian,
/// C order; bfloat16 `'<V2'` is `BF16`).
fn npy_dtype(h: &super::npy::Header) -> Dtype {
    match h.dtype_name() {
        "float16" => Dtype::F16,
        "bfloat16" => Dtype::BF16,
        "float32" => Dtype::F32,
        "float64" => Dtype::F64,
        "uint16" => Dtype::U16,
        "uint32" => Dtype::U32,
        "uint64" => Dtype::U64,
        _ => Dtype::U8,
    }
}

/// Quantize every floating tensor of at least two dimensions of `input` (a `.safetensors`
/// file, or a `.npz` archive whose members are its tensors, read one at a time) with
/// `scheme` and write the quantized checkpoint to `output` (atomically); the others are
/// copied. Returns one report per quantized tensor and the number copied.
///
/// # Errors
///
/// The reading and writing errors of [`crate::io::safetensors`] (and of
/// [`crate::io::npz`] for a `.npz`), a scheme that cannot quantize a tensor (named), a
/// scheme wider than 16 bits, or no tensor to quantize.
pub fn quantize_file(
    input: &Path,
    scheme: &Scheme,
    output: &Path,
) -> Result<(Vec<TensorReport>, usize)> {
    if scheme.code_bits() > 16 {
        return Err(Error::InvalidArgument(format!(
            "{scheme}: codes wider than 16 bits cannot be stored; use a scheme of at most 16 bits"
        )));
    }
    let mut q = Quantizer {
        scheme,
        meta: BTreeMap::new(),
        owned: Vec::new(),
        reports: Vec::new(),
        copied: 0,
    };
    if input.extension().and_then(|e| e.to_str()) == Some("npz") {
        let f = super::npz::open(input)?;
        for m in f.members() {
            let bytes = f.read_bytes(m)?;
            q.add(st::TensorView {
                name: &m.name,
                dtype: npy_dtype(&m.header),
                shape: &m.header.shape,
                bytes: &bytes[m.header.data_start..],
            })?;
        }
    } else {
        let file = st::open(input)?;
        q.meta = file.metadata().clone();
        for t in file.iter() {
            q.add(t)?;
        }
    }
    let Quantizer {
        mut meta,
        owned,
        reports,
        copied,
        ..
    } = q;
    meta.insert(META_SCHEME.into(), scheme.to_string());
    meta.insert(META_VERSION.into(), env!("CARGO_PKG_VERSION").into());
    if reports.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{}: no floating tensor of at least 2 dimensions to quantize",
            input.display()
        )));
    }
    let outs: Vec<TensorOut> = owned
        .iter()
        .map(|(n, d, s, b)| TensorOut::new(n, *d, s, b))
        .collect();
    st::write(output, &outs, &meta)?;
    Ok((reports, copied))
}

/// The tensors of a quantized checkpoint as they are made, one input tensor at a time.
struct Quantizer<'a> {
    scheme: &'a Scheme,
    meta: BTreeMap<String, String>,
    owned: Vec<Entry>,
    reports: Vec<TensorReport>,
    copied: usize,
}

impl Quantizer<'_> {
    /// Quantize `t` (or copy it, when [`is_quantized`] says no).
    fn add(&mut self, t: st::TensorView<'_>) -> Result<()> {
        if !is_quantized(t.dtype, t.shape) {
            self.owned.push((
                t.name.to_string(),
                t.dtype,
                t.shape.to_vec(),
                t.bytes.to_vec(),
            ));
            self.copied += 1;
            return Ok(());
        }
        fn go<I: Float>(
            s: &Scheme,
            name: &str,
            x: &[I],
            shape: &[usize],
        ) -> Result<(Vec<u16>, Encoded, TensorReport)> {
            let q = s.apply(x, shape).map_err(|e| match e {
                Error::InvalidArgument(m) => {
                    Error::InvalidArgument(format!("quantizing {name}: {m}"))
                }
                e => e,
            })?;
            let rep = TensorReport {
                name: name.to_string(),
                bits_per_element: s.bits_per_element(shape),
                stats: ErrorStats::of(&q.values, x),
                counts: q.counts,
                tensor_scale: q.encoded.tensor_scale,
            };
            Ok((q.codes, q.encoded, rep))
        }
        let (codes, enc, rep) = if t.dtype == Dtype::F64 {
            go(self.scheme, t.name, &t.to_f64_vec()?, t.shape)?
        } else {
            go(self.scheme, t.name, &t.to_f32_vec()?, t.shape)?
        };
        let (e, record) = entries(self.scheme, t.name, t.dtype, t.shape, &codes, &enc)?;
        self.owned.extend(e);
        self.meta.insert(format!("{META_TENSOR}{}", t.name), record);
        self.reports.push(rep);
        Ok(())
    }
}

/// The scheme and the quantized tensors of a checkpoint written by [`quantize_file`],
/// every field checked against the scheme and the recorded shape.
///
/// # Errors
///
/// [`Error::BadFile`] naming the tensor and the field that is missing or does not fit.
pub fn read(file: &SafeTensors) -> Result<(Scheme, Vec<Stored>)> {
    let meta = file.metadata();
    let bad = |m: String| Error::BadFile(m);
    let scheme: Scheme = meta
        .get(META_SCHEME)
        .ok_or_else(|| {
            bad(format!(
                "not written by `lowprec quantize` (no {META_SCHEME} metadata)"
            ))
        })?
        .parse()
        .map_err(|e| bad(format!("the file's scheme: {e}")))?;
    let mut out = Vec::new();
    for (k, v) in meta {
        let Some(name) = k.strip_prefix(META_TENSOR) else {
            continue;
        };
        let at = |m: &str| bad(format!("tensor {name}: {m}"));
        let r: serde_json::Value =
            serde_json::from_str(v).map_err(|_| at("its metadata record is not JSON"))?;
        let shape: Vec<usize> =
            serde_json::from_value(r["shape"].clone()).map_err(|_| at("bad shape record"))?;
        let dtype: Dtype = r["dtype"]
            .as_str()
            .ok_or_else(|| at("bad dtype record"))?
            .parse()?;
        if !dtype.is_float() {
            return Err(at("its original dtype is not a float type"));
        }
        let bits = r["code_bits"]
            .as_u64()
            .ok_or_else(|| at("bad code_bits record"))?;
        if bits != scheme.code_bits() as u64 {
            return Err(at(&format!(
                "{bits}-bit codes, but {scheme} has {}-bit codes",
                scheme.code_bits()
            )));
        }
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| at("the shape overflows"))?;
        let t = file
            .get(name)
            .ok_or_else(|| at("the packed codes are missing"))?;
        let row_len = shape.last().copied().unwrap_or(1).max(1);
        let bits = bits as u32;
        // every code takes at least one bit of the stored bytes: this bounds every size
        // below (and the scales' allocation) by the file's own size
        if bits > 16 || n / 8 > t.bytes.len() {
            return Err(at("the packed size does not match the shape"));
        }
        let codes: Vec<u16> = match bits {
            1..=8 => {
                let per = crate::block::pack::packed_len(row_len, bits);
                if t.dtype != Dtype::U8 || t.bytes.len() != per * (n / row_len) {
                    return Err(at("the packed size does not match the shape"));
                }
                let mut c = Vec::with_capacity(n);
                for row in t.bytes.chunks(per.max(1)) {
                    c.extend(
                        crate::block::pack::unpack(row, bits, row_len)?
                            .into_iter()
                            .map(u16::from),
                    );
                }
                c
            }
            _ => {
                if t.dtype != Dtype::U8 || t.bytes.len() != 2 * n {
                    return Err(at("the packed size does not match the shape"));
                }
                t.bytes
                    .chunks_exact(2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect()
            }
        };
        let mut enc = scheme.encoded(&shape).map_err(|e| at(&e.to_string()))?;
        let want = enc.scales.len();
        let get_f64 = |suffix: &str| -> Result<Option<Vec<f64>>> {
            file.get(&format!("{name}{suffix}"))
                .map(|s| s.to_f64_vec())
                .transpose()
        };
        match &mut enc.scales {
            Scales::None => {}
            Scales::Codes(c) => {
                let s = file
                    .get(&format!("{name}.scales"))
                    .ok_or_else(|| at("the scales are missing"))?;
                if s.dtype != Dtype::U8 || s.bytes.len() != want {
                    return Err(at(&format!("{want} scale codes expected")));
                }
                c.copy_from_slice(s.bytes);
            }
            Scales::Values(v) => {
                let s = get_f64(".scales")?.ok_or_else(|| at("the scales are missing"))?;
                if s.len() != want {
                    return Err(at(&format!("{want} scales expected, {} found", s.len())));
                }
                v.copy_from_slice(&s);
            }
        }
        if let Some(z) = &mut enc.zeros {
            let s = get_f64(".zeros")?.ok_or_else(|| at("the zero points are missing"))?;
            if s.len() != z.len() {
                return Err(at(&format!(
                    "{} zero points expected, {} found",
                    z.len(),
                    s.len()
                )));
            }
            z.copy_from_slice(&s);
        }
        if enc.tensor_scale.is_some() {
            let g = file
                .get(&format!("{name}.tensor_scale"))
                .ok_or_else(|| at("the tensor scale is missing"))?
                .to_f32_vec()?;
            if g.len() != 1 {
                return Err(at("the tensor scale must be one value"));
            }
            enc.tensor_scale = Some(g[0]);
        }
        out.push(Stored {
            name: name.to_string(),
            dtype,
            shape,
            codes,
            encoded: enc,
        });
    }
    Ok((scheme, out))
}

/// Read a checkpoint written by [`quantize_file`] and write every quantized tensor back in
/// its original dtype and shape (atomically), the others copied. Returns the scheme and the
/// number of tensors dequantized.
///
/// # Errors
///
/// As [`read`], and the writing errors.
pub fn dequantize_file(input: &Path, output: &Path) -> Result<(Scheme, usize)> {
    let file = st::open(input)?;
    let (scheme, stored) = read(&file).map_err(|e| match e {
        Error::BadFile(m) => Error::BadFile(format!("{}: {m}", input.display())),
        e => e,
    })?;
    let names: std::collections::HashSet<&str> = stored.iter().map(|s| s.name.as_str()).collect();
    let companion = |n: &str| {
        [".scales", ".zeros", ".tensor_scale"]
            .iter()
            .any(|s| n.strip_suffix(s).is_some_and(|b| names.contains(b)))
    };
    let mut values: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    for s in &stored {
        let n = s.codes.len();
        let mut v = vec![0f64; n];
        scheme.dequantize_into(&s.codes, &s.encoded, &s.shape, &mut v)?;
        values.insert(&s.name, f64_bytes(&v, s.dtype)?);
    }
    let by_name: BTreeMap<&str, &Stored> = stored.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut owned: Vec<Entry> = Vec::new();
    for t in file.iter() {
        if companion(t.name) {
            continue;
        }
        match by_name.get(t.name) {
            Some(s) => owned.push((
                s.name.clone(),
                s.dtype,
                s.shape.clone(),
                values.remove(t.name).unwrap_or_default(),
            )),
            None => owned.push((
                t.name.to_string(),
                t.dtype,
                t.shape.to_vec(),
                t.bytes.to_vec(),
            )),
        }
    }
    let mut meta: BTreeMap<String, String> = file
        .metadata()
        .iter()
        .filter(|(k, _)| !k.starts_with("lowprec."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    meta.insert("lowprec.dequantized_from".into(), scheme.to_string());
    let outs: Vec<TensorOut> = owned
        .iter()
        .map(|(n, d, s, b)| TensorOut::new(n, *d, s, b))
        .collect();
    st::write(output, &outs, &meta)?;
    Ok((scheme, stored.len()))
}
