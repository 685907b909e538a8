//! GGUF files (llama.cpp's model format, versions 2 and 3), read and written.
//!
//! Layout (little-endian): the magic `GGUF`, a `u32` version, `u64` tensor and key/value
//! counts; the key/values (a string key, a `u32` value type, the value: integers, floats,
//! bools, strings as a `u64` length and UTF-8 bytes, arrays as a `u32` element type, a `u64`
//! count and the elements); the tensor infos (name, `u32` dimension count, `u64` dimensions
//! innermost first, `u32` ggml type, `u64` offset into the data section); padding to the
//! alignment (`general.alignment`, default 32); the data section, each tensor at its offset.
//!
//! The reader checks every count, length and offset against the bytes that remain before it
//! allocates or reads anything, so a lying header gives an error naming the field, never a
//! huge allocation or a read past the end. Shapes are reported in C order (outermost first,
//! numpy's order): a GGUF tensor with dimensions `[4096, 11008]` is an `11008 × 4096` matrix
//! whose rows (along which the blocks run) have 4096 elements.
//!
//! ```
//! use lowprec::ggml::GgmlType;
//! use lowprec::io::gguf::{self, MetaValue, TensorOut};
//!
//! let x: Vec<f32> = (0..64).map(|i| i as f32 / 8.0).collect();
//! let mut q = vec![0u8; 2 * GgmlType::Q8_0.type_size()];
//! lowprec::ggml::quantize(GgmlType::Q8_0, &x, &mut q)?;
//! let meta = vec![("general.name".to_string(), MetaValue::Str("demo".into()))];
//! let bytes = gguf::to_bytes(&meta, &[TensorOut::new("w", &[2, 32], GgmlType::Q8_0, &q)?])?;
//! let f = gguf::from_bytes(bytes)?;
//! assert_eq!(f.tensors()[0].shape(), vec![2, 32]);
//! let y = f.dequantize(&f.tensors()[0])?;
//! assert!((y[63] - 63.0 / 8.0).abs() < 0.05);
//! # Ok::<(), lowprec::Error>(())
//! ```

use super::safetensors::Storage;
use crate::error::{Error, Result};
use crate::ggml::{self, GgmlType};
use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::Path;

/// The data alignment when the file does not set `general.alignment`.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The most dimensions a tensor may have (ggml's `GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// How deep arrays of arrays may nest.
const MAX_NESTING: u32 = 4;

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// `u8` (type 0).
    U8(u8),
    /// `i8` (type 1).
    I8(i8),
    /// `u16` (type 2).
    U16(u16),
    /// `i16` (type 3).
    I16(i16),
    /// `u32` (type 4).
    U32(u32),
    /// `i32` (type 5).
    I32(i32),
    /// `f32` (type 6).
    F32(f32),
    /// `bool` (type 7).
    Bool(bool),
    /// UTF-8 string (type 8).
    Str(String),
    /// An array (type 9) of elements of one type (the number of that type, and the values).
    Array(u32, Vec<MetaValue>),
    /// `u64` (type 10).
    U64(u64),
    /// `i64` (type 11).
    I64(i64),
    /// `f64` (type 12).
    F64(f64),
}

impl MetaValue {
    /// The value type's number in the file format.
    pub fn type_id(&self) -> u32 {
        match self {
            MetaValue::U8(_) => 0,
            MetaValue::I8(_) => 1,
            MetaValue::U16(_) => 2,
            MetaValue::I16(_) => 3,
            MetaValue::U32(_) => 4,
            MetaValue::I32(_) => 5,
            MetaValue::F32(_) => 6,
            MetaValue::Bool(_) => 7,
            MetaValue::Str(_) => 8,
            MetaValue::Array(..) => 9,
            MetaValue::U64(_) => 10,
            MetaValue::I64(_) => 11,
            MetaValue::F64(_) => 12,
        }
    }

    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v as u64),
            MetaValue::U16(v) => Some(v as u64),
            MetaValue::U32(v) => Some(v as u64),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            MetaValue::F32(_)
            | MetaValue::F64(_)
            | MetaValue::Bool(_)
            | MetaValue::Str(_)
            | MetaValue::Array(..) => None,
        }
    }
}

impl fmt::Display for MetaValue {
    /// Scalars as themselves, strings quoted, arrays as `[type × n]` with their first
    /// elements (long tokenizer vocabularies are not printed whole).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaValue::U8(v) => write!(f, "{v}"),
            MetaValue::I8(v) => write!(f, "{v}"),
            MetaValue::U16(v) => write!(f, "{v}"),
            MetaValue::I16(v) => write!(f, "{v}"),
            MetaValue::U32(v) => write!(f, "{v}"),
            MetaValue::I32(v) => write!(f, "{v}"),
            MetaValue::F32(v) => write!(f, "{v}"),
            MetaValue::Bool(v) => write!(f, "{v}"),
            MetaValue::Str(s) => write!(f, "{s:?}"),
            MetaValue::U64(v) => write!(f, "{v}"),
            MetaValue::I64(v) => write!(f, "{v}"),
            MetaValue::F64(v) => write!(f, "{v}"),
            MetaValue::Array(t, v) => {
                write!(f, "[{} × {}", value_type_name(*t), v.len())?;
                if !v.is_empty() {
                    let shown: Vec<String> = v.iter().take(4).map(|e| e.to_string()).collect();
                    write!(f, ": {}", shown.join(", "))?;
                    if v.len() > 4 {
                        write!(f, ", …")?;
                    }
                }
                write!(f, "]")
            }
        }
    }
}

/// The name of a value type number.
pub fn value_type_name(t: u32) -> &'static str {
    match t {
        0 => "u8",
        1 => "i8",
        2 => "u16",
        3 => "i16",
        4 => "u32",
        5 => "i32",
        6 => "f32",
        7 => "bool",
        8 => "string",
        9 => "array",
        10 => "u64",
        11 => "i64",
        12 => "f64",
        _ => "unknown",
    }
}

/// One tensor's entry in a GGUF file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// The name.
    pub name: String,
    /// The dimensions as stored: innermost (the row, along which blocks run) first.
    pub dims: Vec<u64>,
    /// The ggml type.
    pub ggml_type: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
    /// Bytes of data.
    pub size: u64,
}

impl TensorInfo {
    /// The shape in C order (outermost first), as numpy and safetensors write it.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    /// The number of elements.
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// A validated GGUF file: metadata, tensor infos, and the data (memory-mapped by [`open`]).
pub struct Gguf {
    storage: Storage,
    version: u32,
    metadata: Vec<(String, MetaValue)>,
    tensors: Vec<TensorInfo>,
    alignment: u64,
    data_start: u64,
}

impl fmt::Debug for Gguf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gguf")
            .field("version", &self.version)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors)
            .finish()
    }
}

impl Gguf {
    /// The format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The key/values in file order.
    pub fn metadata(&self) -> &[(String, MetaValue)] {
        &self.metadata
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensor infos in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The data alignment.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Offset of the data section in the file.
    pub fn data_start(&self) -> u64 {
        self.data_start
    }

    /// The stored bytes of a tensor (validated to lie inside the file when it was opened).
    pub fn bytes(&self, t: &TensorInfo) -> &[u8] {
        let at = (self.data_start + t.offset) as usize;
        &self.storage.bytes()[at..at + t.size as usize]
    }

    /// A tensor's values, dequantized to binary32 (in C order).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for types with no dequantizer (integers, Q8_1, Q8_K, Q1_0).
    pub fn dequantize(&self, t: &TensorInfo) -> Result<Vec<f32>> {
        let mut out = vec![0f32; t.elements() as usize];
        ggml::dequantize(t.ggml_type, self.bytes(t), &mut out).map_err(|e| match e {
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("tensor {}: {m}", t.name)),
            e => e,
        })?;
        Ok(out)
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadFile(msg.into())
}

/// A little-endian cursor that checks every read against the end.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.left() {
            return Err(bad(format!(
                "truncated: {what} needs {n} bytes at offset {}, but the file ends {} bytes later",
                self.at,
                self.left()
            )));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let n = self.u64(what)?;
        if n > self.left() as u64 {
            return Err(bad(format!(
                "{what}: a string of {n} bytes at offset {} runs past the end of the file ({} bytes left)",
                self.at - 8,
                self.left()
            )));
        }
        let s = self.take(n as usize, what)?;
        String::from_utf8(s.to_vec()).map_err(|_| bad(format!("{what}: not UTF-8")))
    }

    /// The smallest encoding of one value of type `t` (to bound array counts).
    fn min_size(t: u32) -> usize {
        match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            8 => 8,
            9 => 12,
            _ => 8,
        }
    }

    fn value(&mut self, t: u32, what: &str, depth: u32) -> Result<MetaValue> {
        Ok(match t {
            0 => MetaValue::U8(self.array::<1>(what)?[0]),
            1 => MetaValue::I8(self.array::<1>(what)?[0] as i8),
            2 => MetaValue::U16(u16::from_le_bytes(self.array(what)?)),
            3 => MetaValue::I16(i16::from_le_bytes(self.array(what)?)),
            4 => MetaValue::U32(self.u32(what)?),
            5 => MetaValue::I32(i32::from_le_bytes(self.array(what)?)),
            6 => MetaValue::F32(f32::from_le_bytes(self.array(what)?)),
            7 => match self.array::<1>(what)?[0] {
                0 => MetaValue::Bool(false),
                1 => MetaValue::Bool(true),
                b => {
                    return Err(bad(format!(
                        "{what}: a bool of value {b} (0 or 1 expected)"
                    )))
                }
            },
            8 => MetaValue::Str(self.string(what)?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(bad(format!(
                        "{what}: arrays nested more than {MAX_NESTING} deep"
                    )));
                }
                let et = self.u32(what)?;
                if et > 12 {
                    return Err(bad(format!("{what}: unknown array element type {et}")));
                }
                let n = self.u64(what)?;
                let fits = self.left() as u64 / Self::min_size(et) as u64;
                if n > fits {
                    return Err(bad(format!(
                        "{what}: an array of {n} {} elements cannot fit in the {} bytes left",
                        value_type_name(et),
                        self.left()
                    )));
                }
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(self.value(et, what, depth + 1)?);
                }
                MetaValue::Array(et, v)
            }
            10 => MetaValue::U64(self.u64(what)?),
            11 => MetaValue::I64(i64::from_le_bytes(self.array(what)?)),
            12 => MetaValue::F64(f64::from_le_bytes(self.array(what)?)),
            t => {
                return Err(bad(format!(
                    "{what}: unknown value type {t} (GGUF knows 0 to 12)"
                )))
            }
        })
    }
}

/// Open and validate a GGUF file, memory-mapping it read-only.
///
/// # Precondition
///
/// As for [`super::safetensors::open`]: the file must not change while the [`Gguf`] lives.
///
/// # Errors
///
/// [`Error::BadFile`] naming the path and the problem (see [`from_bytes`]).
pub fn open(path: &Path) -> Result<Gguf> {
    let cannot = |e: std::io::Error| bad(format!("cannot read {}: {e}", path.display()));
    super::check_source(path)?;
    let file = File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let with_path = |e: Error| match e {
        Error::BadFile(m) => bad(format!("{}: {m}", path.display())),
        e => e,
    };
    if len < 24 {
        return Err(with_path(bad(format!(
            "not a GGUF file: {len} bytes, fewer than its 24-byte header"
        ))));
    }
    let map = super::mmap::map_read_only(&file).map_err(cannot)?;
    parse(Storage::Mapped(map)).map_err(with_path)
}

/// Validate GGUF bytes held in memory.
///
/// # Errors
///
/// [`Error::BadFile`] naming the problem: not the GGUF magic; a version other than 2 or 3
/// (or a big-endian file); counts, string lengths or array lengths that cannot fit in the
/// bytes left; an unknown value type or tensor type (with its number); more than four
/// dimensions; a row length that is not a whole number of blocks; an alignment that is not
/// a power of two; a tensor offset that is not aligned or whose data runs past the end;
/// duplicate keys or tensor names.
pub fn from_bytes(bytes: Vec<u8>) -> Result<Gguf> {
    parse(Storage::Owned(bytes))
}

fn parse(storage: Storage) -> Result<Gguf> {
    let b = storage.bytes();
    let mut c = Cursor { b, at: 0 };
    let magic = c
        .array::<4>("the magic")
        .map_err(|_| bad("not a GGUF file: too short"))?;
    if &magic != b"GGUF" {
        return Err(bad(format!(
            "not a GGUF file: it starts with {magic:02x?}, not \"GGUF\""
        )));
    }
    let version = c.u32("the version")?;
    match version {
        2 | 3 => {}
        1 => return Err(bad("GGUF version 1 (32-bit counts) is not supported; convert the file with a current llama.cpp")),
        v if v.swap_bytes() <= 3 => {
            return Err(bad("a big-endian GGUF file; only little-endian files are supported"))
        }
        v => return Err(bad(format!("unknown GGUF version {v} (2 and 3 are supported)"))),
    }
    let n_tensors = c.u64("the tensor count")?;
    let n_kv = c.u64("the key/value count")?;
    // each key/value takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 4 + 8
    if n_kv > c.left() as u64 / 13 {
        return Err(bad(format!(
            "the header claims {n_kv} key/values, more than the {} bytes left can hold",
            c.left()
        )));
    }
    let mut metadata = Vec::with_capacity(n_kv as usize);
    let mut keys = HashSet::new();
    for i in 0..n_kv {
        let key = c.string(&format!("key {i}"))?;
        let t = c.u32(&format!("the type of {key}"))?;
        let v = c.value(t, &key, 0)?;
        if !keys.insert(key.clone()) {
            return Err(bad(format!("the key {key} appears twice")));
        }
        metadata.push((key, v));
    }
    if n_tensors > c.left() as u64 / 24 {
        return Err(bad(format!(
            "the header claims {n_tensors} tensors, more than the {} bytes left can hold",
            c.left()
        )));
    }
    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, MetaValue::U32(a))) if a.is_power_of_two() => *a as u64,
        Some((_, v)) => {
            return Err(bad(format!(
                "general.alignment is {v}; it must be a u32 power of two"
            )))
        }
    };
    let mut tensors = Vec::with_capacity(n_tensors as usize);
    let mut names = HashSet::new();
    for i in 0..n_tensors {
        let name = c.string(&format!("the name of tensor {i}"))?;
        let nd = c.u32(&format!("the dimension count of {name}"))?;
        if nd > MAX_DIMS {
            return Err(bad(format!(
                "tensor {name} has {nd} dimensions; ggml allows at most {MAX_DIMS}"
            )));
        }
        let mut dims = Vec::with_capacity(nd as usize);
        for _ in 0..nd {
            dims.push(c.u64(&format!("the dimensions of {name}"))?);
        }
        let id = c.u32(&format!("the type of {name}"))?;
        let ggml_type = GgmlType::from_id(id).map_err(|e| match e {
            Error::BadFile(m) => bad(format!("tensor {name}: {m}")),
            e => e,
        })?;
        let offset = c.u64(&format!("the offset of {name}"))?;
        let elements = dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad(format!("tensor {name}: the dimensions {dims:?} overflow")))?;
        let row = dims.first().copied().unwrap_or(1);
        if !row.is_multiple_of(ggml_type.block_size() as u64) {
            return Err(bad(format!(
                "tensor {name}: rows of {row} elements are not whole {} blocks of {}",
                ggml_type.name(),
                ggml_type.block_size()
            )));
        }
        let size = ggml_type
            .bytes_for(elements)
            .map_err(|e| bad(format!("tensor {name}: {e}")))?;
        if offset % alignment != 0 {
            return Err(bad(format!(
                "tensor {name}: offset {offset} is not a multiple of the alignment {alignment}"
            )));
        }
        if !names.insert(name.clone()) {
            return Err(bad(format!("the tensor name {name} appears twice")));
        }
        tensors.push(TensorInfo {
            name,
            dims,
            ggml_type,
            offset,
            size,
        });
    }
    let data_start = (c.at as u64).div_ceil(alignment) * alignment;
    let file_len = b.len() as u64;
    for t in &tensors {
        let end = data_start
            .checked_add(t.offset)
            .and_then(|v| v.checked_add(t.size));
        match end {
            Some(e) if e <= file_len => {}
            _ => {
                return Err(bad(format!(
                    "tensor {}: its {} bytes at data offset {} run past the end of the file ({file_len} bytes, data from {data_start})",
                    t.name, t.size, t.offset
                )))
            }
        }
    }
    Ok(Gguf {
        storage,
        version,
        metadata,
        tensors,
        alignment,
        data_start,
    })
}

/// A tensor to write: name, shape in C order, type and its stored bytes.
#[derive(Debug, Clone)]
pub struct TensorOut<'a> {
    name: &'a str,
    dims: Vec<u64>,
    ggml_type: GgmlType,
    bytes: &'a [u8],
}

impl<'a> TensorOut<'a> {
    /// A tensor of `shape` (C order, at most four axes) stored as `bytes` of `ggml_type`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the shape has more than four axes, its last axis is not
    /// a whole number of blocks, or the bytes are not the type's size for the shape.
    pub fn new(
        name: &'a str,
        shape: &[usize],
        ggml_type: GgmlType,
        bytes: &'a [u8],
    ) -> Result<Self> {
        if shape.len() > MAX_DIMS as usize {
            return Err(Error::InvalidArgument(format!(
                "tensor {name}: {} axes; GGUF allows at most {MAX_DIMS}",
                shape.len()
            )));
        }
        let dims: Vec<u64> = if shape.is_empty() {
            vec![1]
        } else {
            shape.iter().rev().map(|&d| d as u64).collect()
        };
        let n: u64 = dims.iter().product();
        if !dims[0].is_multiple_of(ggml_type.block_size() as u64) {
            return Err(Error::InvalidArgument(format!(
                "tensor {name}: rows of {} elements are not whole {} blocks of {}",
                dims[0],
                ggml_type.name(),
                ggml_type.block_size()
            )));
        }
        let want = ggml_type.bytes_for(n)?;
        if bytes.len() as u64 != want {
            return Err(Error::InvalidArgument(format!(
                "tensor {name}: {} bytes given, {want} expected for {n} elements of {}",
                bytes.len(),
                ggml_type.name()
            )));
        }
        Ok(TensorOut {
            name,
            dims,
            ggml_type,
            bytes,
        })
    }
}

fn put_string(w: &mut dyn Write, s: &str) -> std::io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

fn put_value(w: &mut dyn Write, v: &MetaValue) -> std::io::Result<()> {
    match v {
        MetaValue::U8(x) => w.write_all(&[*x]),
        MetaValue::I8(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::U16(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::I16(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::U32(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::I32(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::F32(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::Bool(x) => w.write_all(&[*x as u8]),
        MetaValue::Str(s) => put_string(w, s),
        MetaValue::Array(t, xs) => {
            w.write_all(&t.to_le_bytes())?;
            w.write_all(&(xs.len() as u64).to_le_bytes())?;
            for x in xs {
                put_value(w, x)?;
            }
            Ok(())
        }
        MetaValue::U64(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::I64(x) => w.write_all(&x.to_le_bytes()),
        MetaValue::F64(x) => w.write_all(&x.to_le_bytes()),
    }
}

/// Check what [`write`] would write: distinct keys and names, array elements of their
/// declared type, an alignment that is a `u32` power of two.
fn check_out(meta: &[(String, MetaValue)], tensors: &[TensorOut<'_>]) -> Result<u64> {
    let mut keys = HashSet::new();
    for (k, v) in meta {
        if !keys.insert(k.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "the key {k} is given twice"
            )));
        }
        if let MetaValue::Array(t, xs) = v {
            if xs.iter().any(|x| x.type_id() != *t) {
                return Err(Error::InvalidArgument(format!(
                    "{k}: an array of {} holds other types",
                    value_type_name(*t)
                )));
            }
        }
    }
    let mut names = HashSet::new();
    for t in tensors {
        if !names.insert(t.name) {
            return Err(Error::InvalidArgument(format!(
                "the tensor name {} is given twice",
                t.name
            )));
        }
    }
    match meta.iter().find(|(k, _)| k == "general.alignment") {
        None => Ok(DEFAULT_ALIGNMENT),
        Some((_, MetaValue::U32(a))) if a.is_power_of_two() => Ok(*a as u64),
        Some((_, v)) => Err(Error::InvalidArgument(format!(
            "general.alignment is {v}; it must be a u32 power of two"
        ))),
    }
}

/// Write a GGUF (version 3) file to `w`: the key/values in the order given, then the
/// tensors in the order given, each at an offset aligned to `general.alignment` (32 unless
/// the metadata sets it).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for duplicate keys or names, mistyped arrays or a bad
/// alignment; [`Error::BadFile`] when writing fails.
pub fn write_to(
    w: &mut dyn Write,
    meta: &[(String, MetaValue)],
    tensors: &[TensorOut<'_>],
) -> Result<()> {
    let align = check_out(meta, tensors)?;
    let io = |e: std::io::Error| bad(format!("cannot write the GGUF data: {e}"));
    let mut head: Vec<u8> = Vec::new();
    head.extend_from_slice(b"GGUF");
    head.extend_from_slice(&3u32.to_le_bytes());
    head.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    head.extend_from_slice(&(meta.len() as u64).to_le_bytes());
    for (k, v) in meta {
        put_string(&mut head, k).map_err(io)?;
        head.extend_from_slice(&v.type_id().to_le_bytes());
        put_value(&mut head, v).map_err(io)?;
    }
    let mut offset = 0u64;
    let mut offsets = Vec::with_capacity(tensors.len());
    for t in tensors {
        put_string(&mut head, t.name).map_err(io)?;
        head.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            head.extend_from_slice(&d.to_le_bytes());
        }
        head.extend_from_slice(&t.ggml_type.id().to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset = (offset + t.bytes.len() as u64).div_ceil(align) * align;
    }
    let pad = (head.len() as u64).div_ceil(align) * align - head.len() as u64;
    head.resize(head.len() + pad as usize, 0);
    w.write_all(&head).map_err(io)?;
    let mut at = 0u64;
    for (t, &o) in tensors.iter().zip(&offsets) {
        w.write_all(&vec![0u8; (o - at) as usize]).map_err(io)?;
        w.write_all(t.bytes).map_err(io)?;
        at = o + t.bytes.len() as u64;
    }
    let end = offset;
    w.write_all(&vec![0u8; (end - at) as usize]).map_err(io)?;
    Ok(())
}

/// [`write_to`] into a new buffer.
///
/// # Errors
///
/// As [`write_to`].
pub fn to_bytes(meta: &[(String, MetaValue)], tensors: &[TensorOut<'_>]) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    write_to(&mut v, meta, tensors)?;
    Ok(v)
}

/// [`write_to`] a file, atomically (a temporary file renamed over `path` once complete).
///
/// # Errors
///
/// As [`write_to`], and [`Error::BadFile`] naming the path when it cannot be written.
pub fn write(path: &Path, meta: &[(String, MetaValue)], tensors: &[TensorOut<'_>]) -> Result<()> {
    check_out(meta, tensors)?;
    super::write_atomic(path, |w| {
        write_to(w, meta, tensors).map_err(|e| std::io::Error::other(e.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let x: Vec<f32> = (0..96).map(|i| (i as f32 - 40.0) / 3.0).collect();
        let mut q = vec![0u8; 3 * 34];
        ggml::quantize(GgmlType::Q8_0, &x, &mut q).unwrap();
        let raw: Vec<u8> = x[..8].iter().flat_map(|v| v.to_le_bytes()).collect();
        let meta = vec![
            ("general.name".to_string(), MetaValue::Str("t".into())),
            (
                "a.list".to_string(),
                MetaValue::Array(4, vec![MetaValue::U32(1), MetaValue::U32(2)]),
            ),
        ];
        to_bytes(
            &meta,
            &[
                TensorOut::new("q", &[3, 32], GgmlType::Q8_0, &q).unwrap(),
                TensorOut::new("n", &[8], GgmlType::F32, &raw).unwrap(),
            ],
        )
        .unwrap()
    }

    #[test]
    fn written_files_read_back() {
        let f = from_bytes(sample()).unwrap();
        assert_eq!(f.version(), 3);
        assert_eq!(f.get("general.name"), Some(&MetaValue::Str("t".into())));
        assert_eq!(f.tensors()[0].dims, vec![32, 3]);
        assert_eq!(f.tensors()[1].offset % 32, 0);
        assert_eq!(f.dequantize(&f.tensors()[1]).unwrap()[0], -40.0 / 3.0);
        assert_eq!(f.data_start() % 32, 0);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = sample();
        for n in 0..b.len() - 1 {
            // the last tensor's padding may be cut without harm only past its data
            let r = from_bytes(b[..n].to_vec());
            let f = from_bytes(b.clone()).unwrap();
            let t = &f.tensors()[1];
            if n as u64 >= f.data_start() + t.offset + t.size {
                continue;
            }
            assert!(matches!(r, Err(Error::BadFile(_))), "{n}");
        }
    }

    #[test]
    fn lying_headers_are_refused_with_their_field() {
        let mut b = sample();
        b[16..24].copy_from_slice(&u64::MAX.to_le_bytes()); // key/value count
        let e = from_bytes(b).unwrap_err().to_string();
        assert!(e.contains("key/values"), "{e}");
        let mut b = sample();
        b[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(from_bytes(b)
            .unwrap_err()
            .to_string()
            .contains("big-endian"));
        // a string length past the end
        let mut b = sample();
        b[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let e = from_bytes(b).unwrap_err().to_string();
        assert!(e.contains("past the end"), "{e}");
    }
}
