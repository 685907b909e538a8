//! `.safetensors` files: read (memory-mapped or from a buffer) and write (atomically), through
//! the format's own crate, [`safetensors`] 0.8 (the implementation behind Hugging Face's Python
//! package), with our atomic writes and one-line errors on top.
//!
//! The format: an 8-byte little-endian header length `N`, then `N` bytes of UTF-8 JSON, then
//! the data section. The JSON object maps each tensor name to
//! `{"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}` (offsets into the data
//! section, `end` exclusive) and may hold a `"__metadata__"` object of string to string.
//!
//! What the crate does: it parses and validates the header
//! ([`safetensors::SafeTensors::read_metadata`], over the mapped file, which touches only the
//! header's pages): the header length against its 100 MB limit and the file's end, UTF-8,
//! the JSON and its entries, its dtype list, each tensor's byte size against its shape, and that
//! the tensors, in order of their offsets, tile the data section exactly (no gap, no overlap,
//! no trailing bytes). Writing builds the header through its [`Metadata`] (which validates
//! the layout again) and serializes the tensor entries.
//!
//! What we add on top:
//! - the dtypes lowprec reads ([`Dtype`]): the floats `F32`, `F16`, `BF16`, `F64`, `F8_E4M3`,
//!   `F8_E5M2`, `F8_E8M0`, and the integers and `BOOL` as raw little-endian bytes (read and
//!   copied through). The crate's other dtypes (`F4`, `F6_*`, `F8_*FNUZ`, `C64`) are refused,
//!   with the list of supported ones;
//! - duplicate keys, which the crate (as serde does) resolves silently to the last one, are
//!   refused;
//! - a refused file gets one line naming the problem (which tensor, which bytes) instead of
//!   the crate's short error: when the crate refuses, the header is examined again to say
//!   why ([`from_bytes`] lists the cases);
//! - writing goes through [`crate::io::write_atomic`] (a temporary file, renamed when complete;
//!   removed on error or Ctrl-C), streaming the tensors' bytes after the header, with the data
//!   laid out in the order given (the crate's own writers reorder the tensors by dtype and
//!   write through their own temporary file or a buffer of the whole file); and the
//!   `"__metadata__"` object is written with its keys sorted, since the crate keeps it in a
//!   `HashMap` whose order changes from run to run: equal arguments give equal files.
//!
//! Keys of an entry other than `dtype`, `shape` and `data_offsets` are ignored, as the crate
//! ignores them. The header is padded to a multiple of 8 bytes, so a reader that needs each
//! tensor naturally aligned in the map should be given the widest dtypes first.
//!
//! ```
//! use lowprec::io::safetensors::{self, Dtype, TensorOut};
//! use std::collections::BTreeMap;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("model.safetensors");
//! let w: Vec<u8> = [1.0f32, -2.0, 0.5, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let b: Vec<u8> = [0x3f80u16, 0xc000].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
//! safetensors::write(
//!     &path,
//!     &[
//!         TensorOut::new("w", Dtype::F32, &[2, 2], &w),
//!         TensorOut::new("b", Dtype::BF16, &[2], &b),
//!     ],
//!     &meta,
//! )?;
//!
//! let st = safetensors::open(&path)?;
//! assert_eq!(st.names(), ["w", "b"]);
//! assert_eq!(st.metadata()["format"], "pt");
//! let t = st.get("b").unwrap();
//! assert_eq!((t.dtype, t.shape, t.len()), (Dtype::BF16, &[2usize][..], 2));
//! assert_eq!(t.to_f32_vec()?, [1.0, -2.0]);
//! assert_eq!(st.get("w").unwrap().to_f64_vec()?, [1.0, -2.0, 0.5, 3.0]);
//! assert!(st.get("nope").is_none());
//! # Ok::<(), lowprec::Error>(())
//! ```

use crate::error::{Error, Result};
use safetensors::tensor::{Metadata, TensorInfo};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::path::Path;
use std::str::FromStr;

/// The largest header length accepted (and written), in bytes: 100 MB, the limit the
/// `safetensors` crate enforces. A larger length means a corrupt or foreign file.
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// The key of the optional string-to-string metadata object in the header.
pub const METADATA_KEY: &str = "__metadata__";

/// The element type of a tensor, as named in the header: the dtypes of the `safetensors`
/// crate that lowprec reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE binary32 (`"F32"`).
    F32,
    /// IEEE binary16 (`"F16"`).
    F16,
    /// bfloat16 (`"BF16"`): the upper half of a binary32.
    BF16,
    /// IEEE binary64 (`"F64"`).
    F64,
    /// unsigned 8-bit integer (`"U8"`).
    U8,
    /// signed 8-bit integer (`"I8"`), kept as raw bytes.
    I8,
    /// unsigned 16-bit integer (`"U16"`), kept as raw bytes.
    U16,
    /// signed 32-bit integer (`"I32"`), kept as raw bytes.
    I32,
    /// signed 64-bit integer (`"I64"`), kept as raw bytes.
    I64,
    /// unsigned 32-bit integer (`"U32"`), kept as raw bytes.
    U32,
    /// unsigned 64-bit integer (`"U64"`), kept as raw bytes.
    U64,
    /// signed 16-bit integer (`"I16"`), kept as raw bytes.
    I16,
    /// boolean, one byte each (`"BOOL"`; attention masks and the like), kept as raw bytes.
    Bool,
    /// OCP FP8 E4M3 (`"F8_E4M3"`: torch's `float8_e4m3fn`, no Inf, NaN at 0x7F/0xFF).
    F8E4M3,
    /// OCP FP8 E5M2 (`"F8_E5M2"`: IEEE-like, with Inf).
    F8E5M2,
    /// OCP E8M0 (`"F8_E8M0"`: powers of two 2^-127 … 2^127, NaN at 0xFF; MX scales).
    F8E8M0,
}

/// Each dtype, the crate's dtype and the header name, in the order of [`Dtype::ALL`].
const TABLE: [(Dtype, safetensors::Dtype, &str); 16] = {
    use safetensors::Dtype as S;
    [
        (Dtype::F32, S::F32, "F32"),
        (Dtype::F16, S::F16, "F16"),
        (Dtype::BF16, S::BF16, "BF16"),
        (Dtype::F64, S::F64, "F64"),
        (Dtype::F8E4M3, S::F8_E4M3, "F8_E4M3"),
        (Dtype::F8E5M2, S::F8_E5M2, "F8_E5M2"),
        (Dtype::F8E8M0, S::F8_E8M0, "F8_E8M0"),
        (Dtype::U8, S::U8, "U8"),
        (Dtype::I8, S::I8, "I8"),
        (Dtype::U16, S::U16, "U16"),
        (Dtype::I32, S::I32, "I32"),
        (Dtype::I64, S::I64, "I64"),
        (Dtype::U32, S::U32, "U32"),
        (Dtype::U64, S::U64, "U64"),
        (Dtype::I16, S::I16, "I16"),
        (Dtype::Bool, S::BOOL, "BOOL"),
    ]
};

impl Dtype {
    /// Every supported dtype, floats first.
    pub const ALL: [Dtype; 16] = {
        let mut all = [Dtype::F32; 16];
        let mut i = 0;
        while i < 16 {
            all[i] = TABLE[i].0;
            i += 1;
        }
        all
    };

    fn row(self) -> &'static (Dtype, safetensors::Dtype, &'static str) {
        TABLE
            .iter()
            .find(|r| r.0 == self)
            .expect("every dtype has a row")
    }

    /// The name used in the header (`"F32"`, `"BF16"`, …).
    pub fn name(self) -> &'static str {
        self.row().2
    }

    /// The `safetensors` crate's dtype.
    pub fn to_crate(self) -> safetensors::Dtype {
        self.row().1
    }

    /// The dtype of the `safetensors` crate's `d`, or `None` for one lowprec does not read
    /// (`F4`, `F6_E2M3`, `F6_E3M2`, `F8_E4M3FNUZ`, `F8_E5M2FNUZ`, `C64`).
    pub fn from_crate(d: safetensors::Dtype) -> Option<Dtype> {
        TABLE.iter().find(|r| r.1 == d).map(|r| r.0)
    }

    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        self.to_crate().bitsize() / 8
    }

    /// Whether the elements are floating-point numbers (`F32`, `F16`, `BF16`, `F64` and the
    /// 8-bit `F8_E4M3`, `F8_E5M2`, `F8_E8M0`).
    pub fn is_float(self) -> bool {
        self.fp8().is_some() || matches!(self, Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64)
    }

    /// The format of an 8-bit float dtype.
    pub fn fp8(self) -> Option<crate::FloatFormat> {
        match self {
            Dtype::F8E4M3 => Some(crate::FloatFormat::FP8_E4M3),
            Dtype::F8E5M2 => Some(crate::FloatFormat::FP8_E5M2),
            Dtype::F8E8M0 => Some(crate::FloatFormat::E8M0),
            _ => None,
        }
    }

    /// The supported names, comma separated, for error messages.
    fn known() -> String {
        Dtype::ALL.map(Dtype::name).join(", ")
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dtype {
    type Err = Error;

    /// Parse a header dtype name (exact, upper case, as the format spells it): a name of the
    /// crate's list that lowprec reads.
    fn from_str(s: &str) -> Result<Dtype> {
        let known = serde_json::from_value::<safetensors::Dtype>(Value::String(s.into())).ok();
        known.and_then(Dtype::from_crate).ok_or_else(|| {
            let what = if known.is_some() {
                format!("safetensors dtype '{s}' is not supported")
            } else {
                format!("unknown safetensors dtype '{s}'")
            };
            Error::InvalidArgument(format!(
                "{what}; supported: {} (convert the tensor to one of them)",
                Dtype::known()
            ))
        })
    }
}
/// One tensor of a [`SafeTensors`]: its name, dtype, shape, and its bytes in the file
/// (little-endian, C order), borrowed without copying.
#[derive(Clone, Copy, PartialEq)]
pub struct TensorView<'a> {
    /// The tensor's name.
    pub name: &'a str,
    /// The element type.
    pub dtype: Dtype,
    /// The shape (empty for a scalar).
    pub shape: &'a [usize],
    /// The raw little-endian bytes: `len() * dtype.size()` of them.
    pub bytes: &'a [u8],
}

impl fmt::Debug for TensorView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorView")
            .field("name", &self.name)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("bytes", &format_args!("[{} bytes]", self.bytes.len()))
            .finish()
    }
}

impl TensorView<'_> {
    /// The number of elements (the product of the shape; 1 for a scalar).
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    /// Whether the tensor has no elements (some dimension is 0).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Whether the elements are floating-point numbers (see [`Dtype::is_float`]).
    pub fn is_float(&self) -> bool {
        self.dtype.is_float()
    }

    /// The elements as `f32`, widened exactly from `F32`, `F16` or `BF16` (NaN payloads and
    /// signs kept, subnormals exact).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for any other dtype (`F64` does not fit: use
    /// [`to_f64_vec`](Self::to_f64_vec)).
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        Ok(match self.dtype {
            Dtype::F32 => le_map(self.bytes, f32::from_le_bytes),
            Dtype::F16 => le_map(self.bytes, |b| f16_to_f32(u16::from_le_bytes(b))),
            Dtype::BF16 => le_map(self.bytes, |b| bf16_to_f32(u16::from_le_bytes(b))),
            d if d.fp8().is_some() => fp8_values(self.bytes, d)?
                .into_iter()
                .map(|v| v as f32)
                .collect(),
            d => {
                return Err(Error::InvalidArgument(format!(
                    "tensor '{}' is {d}; to_f32_vec reads F32, F16, BF16 and the F8 types{}",
                    self.name,
                    if d == Dtype::F64 {
                        " (use to_f64_vec for F64)"
                    } else {
                        ""
                    }
                )))
            }
        })
    }

    /// The elements as `f64`, widened exactly from `F32`, `F16`, `BF16` or `F64` (NaN payloads
    /// and signs kept, subnormals exact).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an integer dtype.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        Ok(match self.dtype {
            Dtype::F64 => le_map(self.bytes, f64::from_le_bytes),
            Dtype::F32 => le_map(self.bytes, |b| f32_to_f64(f32::from_le_bytes(b))),
            Dtype::F16 => le_map(self.bytes, |b| {
                f32_to_f64(f16_to_f32(u16::from_le_bytes(b)))
            }),
            Dtype::BF16 => le_map(self.bytes, |b| {
                f32_to_f64(bf16_to_f32(u16::from_le_bytes(b)))
            }),
            d if d.fp8().is_some() => fp8_values(self.bytes, d)?,
            d => {
                return Err(Error::InvalidArgument(format!(
                    "tensor '{}' is {d}; to_f64_vec reads F32, F16, BF16 and F64",
                    self.name
                )))
            }
        })
    }
}

/// The values of 8-bit float codes (exact in binary32: every FP8 and E8M0 value is).
fn fp8_values(b: &[u8], d: Dtype) -> Result<Vec<f64>> {
    let f = d.fp8().expect("an 8-bit float dtype");
    crate::decode_vec::<u8, f64>(&f, b)
}

/// `f` applied to each `N`-byte little-endian chunk of `b`.
fn le_map<T, const N: usize>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    b.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunk of N bytes")))
        .collect()
}

/// IEEE binary16 bits to binary32, exactly (NaN payload shifted into place, so a quiet NaN
/// stays quiet and a signaling one signaling).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1f;
    let man = u32::from(h & 0x3ff);
    let bits = match exp {
        0x1f => sign | 0x7f80_0000 | (man << 13),
        0 if man == 0 => sign,
        0 => {
            // Subnormal: man · 2^-24. Shift the leading 1 up to bit 10 (the implicit bit) and
            // lower the exponent by as much; binary32 holds every such value as a normal.
            let shift = man.leading_zeros() - 21;
            sign | ((113 - shift) << 23) | ((man << shift) & 0x3ff) << 13
        }
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16 bits to binary32, exactly: they are its upper 16 bits.
fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// binary32 to binary64, exactly, NaN payloads included (an `as` cast may quiet a signaling
/// NaN; this keeps its bits).
fn f32_to_f64(x: f32) -> f64 {
    if x.is_nan() {
        let b = x.to_bits();
        let sign = u64::from(b >> 31) << 63;
        f64::from_bits(sign | 0x7ff0_0000_0000_0000 | u64::from(b & 0x7f_ffff) << 29)
    } else {
        f64::from(x)
    }
}

/// The bytes behind a [`SafeTensors`]: a read-only map of the file, or an owned buffer.
pub(super) enum Storage {
    /// A read-only map of the file.
    Mapped(memmap2::Mmap),
    /// Bytes in memory.
    Owned(Vec<u8>),
}

impl Storage {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// A validated tensor entry of the header.
struct Entry {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    begin: usize,
    end: usize,
}

/// A `.safetensors` file, validated: its tensors (borrowed from the file's bytes on
/// demand) and its metadata. Made by [`open`] or [`from_bytes`].
pub struct SafeTensors {
    storage: Storage,
    /// Offset of the data section in the storage.
    data_start: usize,
    /// In file order: by data offset (ties, which only empty tensors can have, by name).
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    metadata: BTreeMap<String, String>,
}

impl fmt::Debug for SafeTensors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafeTensors")
            .field("tensors", &self.iter().collect::<Vec<_>>())
            .field("metadata", &self.metadata)
            .finish()
    }
}

impl SafeTensors {
    /// The tensor names in file order (the order of their data offsets).
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The number of tensors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file holds no tensors.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tensor called `name`, or `None` if there is none.
    pub fn get(&self, name: &str) -> Option<TensorView<'_>> {
        self.index.get(name).map(|&i| self.view(&self.entries[i]))
    }

    /// Every tensor, in file order.
    pub fn iter(&self) -> impl Iterator<Item = TensorView<'_>> + '_ {
        self.entries.iter().map(|e| self.view(e))
    }

    /// The `"__metadata__"` strings (empty when the file has none).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// Where the tensor `name`'s bytes lie in the file: `[start, end)` from its first byte
    /// (for reading them with ordinary reads instead of through the map, which would count
    /// the pages in the process's resident memory for as long as the file stays mapped).
    pub fn file_range(&self, name: &str) -> Option<(u64, u64)> {
        self.index.get(name).map(|&i| {
            let e = &self.entries[i];
            (
                (self.data_start + e.begin) as u64,
                (self.data_start + e.end) as u64,
            )
        })
    }

    fn view<'a>(&'a self, e: &'a Entry) -> TensorView<'a> {
        let data = &self.storage.bytes()[self.data_start..];
        TensorView {
            name: &e.name,
            dtype: e.dtype,
            shape: &e.shape,
            bytes: &data[e.begin..e.end],
        }
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadFile(msg.into())
}

/// Prefix a [`Error::BadFile`] message with the path.
fn at_path(path: &Path) -> impl Fn(Error) -> Error + '_ {
    move |e| match e {
        Error::BadFile(m) => bad(format!("{}: {m}", path.display())),
        e => e,
    }
}

/// Open and validate a `.safetensors` file, memory-mapping it (read-only): the header is
/// validated through the map (touching only its pages); tensors are read from the page cache
/// when asked for, and never copied by [`SafeTensors::get`].
///
/// # Precondition
///
/// The file must not be modified or truncated (by this or any other process) while the
/// returned [`SafeTensors`] is alive: the tensors are views into the mapped file, so a change
/// would change data already validated and borrowed, and a truncation would fault on access.
/// Where that cannot be guaranteed, read the file into memory and use [`from_bytes`]:
/// `from_bytes(std::fs::read(path)?)`.
///
/// # Errors
///
/// [`Error::BadFile`] naming the path when it cannot be opened or mapped, and for every
/// problem [`from_bytes`] refuses.
pub fn open(path: &Path) -> Result<SafeTensors> {
    let cannot = |e: std::io::Error| bad(format!("cannot read {}: {e}", path.display()));
    super::check_source(path)?;
    let file = File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    if len < 8 {
        // (mmap refuses a zero-length map)
        return Err(at_path(path)(too_short(len)));
    }
    let map = super::mmap::map_read_only(&file).map_err(cannot)?;
    parse(Storage::Mapped(map)).map_err(at_path(path))
}

/// Validate the bytes of a `.safetensors` file held in memory (tests, small files, data that
/// did not come from a file).
///
/// # Errors
///
/// [`Error::BadFile`] naming the problem: fewer than 8 bytes; a header length beyond the
/// end or over [`MAX_HEADER_LEN`]; a header that is not UTF-8 JSON or not an object; a
/// duplicate key; an entry without a known dtype, a shape of non-negative integers, or two
/// ordered data offsets; a dtype lowprec does not read; a byte size that does not match the
/// shape; offsets beyond the data section; tensors that leave a gap in it or overlap; a
/// `"__metadata__"` that is not an object of strings.
pub fn from_bytes(bytes: Vec<u8>) -> Result<SafeTensors> {
    parse(Storage::Owned(bytes))
}

fn too_short(len: u64) -> Error {
    bad(format!(
        "not a .safetensors file: {len} bytes, fewer than the 8-byte header length"
    ))
}

fn parse(storage: Storage) -> Result<SafeTensors> {
    let bytes = storage.bytes();
    let (n, meta) =
        safetensors::SafeTensors::read_metadata(bytes).map_err(|e| explain(&e, bytes))?;
    let data_start = 8 + n;
    // the crate keeps the last of duplicate keys silently
    if let Some(dup) = std::str::from_utf8(&bytes[8..data_start])
        .ok()
        .and_then(duplicate_key)
    {
        return Err(bad(format!("malformed .safetensors header: {dup}")));
    }
    let mut entries = meta
        .tensors()
        .into_iter()
        .map(|(name, info)| entry(name, info).map_err(bad))
        .collect::<Result<Vec<_>>>()?;
    entries.sort_by(|a, b| (a.begin, a.end, &a.name).cmp(&(b.begin, b.end, &b.name)));
    let index = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), i))
        .collect();
    let metadata = meta.metadata().clone().unwrap_or_default();
    Ok(SafeTensors {
        storage,
        data_start,
        entries,
        index,
        metadata: metadata.into_iter().collect(),
    })
}

/// A tensor entry the crate parsed, with our dtype; its byte size checked against its shape
/// (the crate checked it when it accepted the file, not when [`explain`] asks).
fn entry(name: String, info: &TensorInfo) -> std::result::Result<Entry, String> {
    let err = |what: String| format!("tensor '{name}': {what}");
    let dtype = Dtype::from_crate(info.dtype).ok_or_else(|| {
        err(format!(
            "safetensors dtype '{}' is not supported; supported: {} (convert the tensor to one of them)",
            info.dtype,
            Dtype::known()
        ))
    })?;
    let (begin, end) = info.data_offsets;
    if begin > end {
        return Err(err(format!(
            "data_offsets [{begin}, {end}] begin after they end"
        )));
    }
    let shape = &info.shape;
    let need = shape
        .iter()
        .try_fold(dtype.size(), |a, &d| a.checked_mul(d))
        .ok_or_else(|| err(format!("shape {shape:?} is too large")))?;
    if need != end - begin {
        return Err(err(format!(
            "size mismatch: shape {shape:?} of {dtype} needs {need} bytes, data_offsets [{begin}, {end}] hold {}",
            end - begin
        )));
    }
    Ok(Entry {
        name,
        dtype,
        shape: info.shape.clone(),
        begin,
        end,
    })
}

/// Why the crate refused `bytes` (its error `e`), as one line: the header is examined again
/// to name the tensor and the bytes at fault; the crate's own words where nothing more is
/// found.
fn explain(e: &safetensors::SafeTensorError, bytes: &[u8]) -> Error {
    let Some(len8) = bytes.get(..8) else {
        return too_short(bytes.len() as u64);
    };
    let n = u64::from_le_bytes(len8.try_into().expect("8 bytes"));
    let rest = (bytes.len() - 8) as u64;
    if n > MAX_HEADER_LEN {
        return bad(format!(
            "not a .safetensors file: header length {n} is over the {MAX_HEADER_LEN}-byte limit"
        ));
    }
    if n > rest {
        return bad(format!(
            "truncated .safetensors file: header length {n} is beyond the end ({rest} bytes after the length)"
        ));
    }
    let header = &bytes[8..8 + n as usize];
    let text = match std::str::from_utf8(header) {
        Ok(t) => t,
        Err(u) => return bad(format!("malformed .safetensors header: not UTF-8 ({u})")),
    };
    let malformed = |m: String| bad(format!("malformed .safetensors header: {m}"));
    let map = match serde_json::from_str::<Value>(text) {
        Err(j) => return malformed(format!("not valid JSON ({j})")),
        Ok(Value::Object(map)) => map,
        Ok(_) => return malformed("not a JSON object of tensor names".into()),
    };
    if let Some(dup) = duplicate_key(text) {
        return malformed(dup);
    }
    match problem(&map, (rest - n) as usize) {
        Some(m) => bad(m),
        None => bad(format!("invalid .safetensors file: {e}")),
    }
}

/// The first problem of a header's entries and layout against a data section of `data_len`
/// bytes, as a message.
fn problem(map: &serde_json::Map<String, Value>, data_len: usize) -> Option<String> {
    let mut entries = Vec::with_capacity(map.len());
    for (name, v) in map {
        if name == METADATA_KEY {
            let kind = match v {
                Value::Object(m) => m
                    .iter()
                    .find(|(_, v)| !v.is_string())
                    .map(|(k, v)| format!("; '{k}' is {}", json_kind(v))),
                v => Some(format!(", not {}", json_kind(v))),
            };
            if let Some(k) = kind {
                return Some(format!(
                    "malformed .safetensors header: {METADATA_KEY} must be an object of strings{k}"
                ));
            }
            continue;
        }
        if let Some(Value::String(s)) = v.get("dtype") {
            if let Err(e) = s.parse::<Dtype>() {
                return Some(format!("tensor '{name}': {e}"));
            }
        }
        match serde_json::from_value::<TensorInfo>(v.clone()) {
            Ok(info) => match entry(name.clone(), &info) {
                Ok(e) => entries.push(e),
                Err(m) => return Some(m),
            },
            Err(j) => {
                return Some(format!(
                    "tensor '{name}': malformed entry ({j}); an entry is {{\"dtype\": NAME, \"shape\": [DIMS], \"data_offsets\": [BEGIN, END]}}"
                ))
            }
        }
    }
    if let Some(e) = entries.iter().find(|e| e.end > data_len) {
        return Some(format!(
            "tensor '{}': data_offsets [{}, {}] end beyond the data section ({data_len} bytes); the file is truncated or the header is wrong",
            e.name, e.begin, e.end
        ));
    }
    entries.sort_by(|a, b| (a.begin, a.end, &a.name).cmp(&(b.begin, b.end, &b.name)));
    let mut pos = 0usize;
    let mut last: Option<&Entry> = None;
    for e in &entries {
        if e.begin > pos {
            return Some(format!(
                "gap in the data section: bytes [{pos}, {}) belong to no tensor (before tensor '{}'); tensors must tile the data section",
                e.begin, e.name
            ));
        }
        if let Some(p) = last.filter(|_| e.begin < pos) {
            return Some(format!(
                "overlap in the data section: tensor '{}' [{}, {}] overlaps tensor '{}' [{}, {}]",
                e.name, e.begin, e.end, p.name, p.begin, p.end
            ));
        }
        pos = e.end;
        last = Some(e);
    }
    (pos < data_len).then(|| {
        format!(
            "gap in the data section: its last {} bytes [{pos}, {data_len}) belong to no tensor (trailing data)",
            data_len - pos
        )
    })
}

/// "a number", "an array", … for messages.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first key repeated within one JSON object of `json` (which must be valid JSON), as a
/// message, or `None`.
fn duplicate_key(json: &str) -> Option<String> {
    // One frame per open object or array: an object's keys so far and its own key in its
    // parent (the tensor name for an entry).
    struct Frame {
        keys: Option<HashSet<String>>,
        owner: Option<String>,
        last_key: Option<String>,
    }
    let b = json.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let token = json.get(i..=j)?;
                i = j + 1;
                let mut k = i;
                while k < b.len() && b[k].is_ascii_whitespace() {
                    k += 1;
                }
                if b.get(k) != Some(&b':') {
                    continue;
                }
                let key: String = serde_json::from_str(token).unwrap_or_else(|_| token.into());
                let depth = stack.len();
                let frame = stack.last_mut()?;
                let keys = frame.keys.as_mut()?;
                if !keys.insert(key.clone()) {
                    return Some(match (depth, &frame.owner) {
                        (1, _) => format!("duplicate key '{key}' (a tensor name must appear once)"),
                        (_, Some(o)) => format!("duplicate key '{key}' in the entry of '{o}'"),
                        (_, None) => format!("duplicate key '{key}'"),
                    });
                }
                frame.last_key = Some(key);
                continue;
            }
            open @ (b'{' | b'[') => {
                let owner = stack.last().and_then(|f| f.last_key.clone());
                stack.push(Frame {
                    keys: (open == b'{').then(HashSet::new),
                    owner,
                    last_key: None,
                });
            }
            b'}' | b']' => {
                stack.pop();
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A tensor to write: name, dtype, shape and raw little-endian bytes in C order, borrowed.
/// A [`TensorView`] converts into one, so tensors can be copied from one file to another.
#[derive(Clone, Copy, PartialEq)]
pub struct TensorOut<'a> {
    /// The tensor's name (any string but `"__metadata__"`).
    pub name: &'a str,
    /// The element type.
    pub dtype: Dtype,
    /// The shape (empty for a scalar).
    pub shape: &'a [usize],
    /// The raw little-endian bytes: the product of the shape times `dtype.size()` of them.
    pub bytes: &'a [u8],
}

impl<'a> TensorOut<'a> {
    /// A tensor to write (checked by [`write()`], not here).
    pub fn new(name: &'a str, dtype: Dtype, shape: &'a [usize], bytes: &'a [u8]) -> Self {
        TensorOut {
            name,
            dtype,
            shape,
            bytes,
        }
    }
}

impl fmt::Debug for TensorOut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorOut")
            .field("name", &self.name)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("bytes", &format_args!("[{} bytes]", self.bytes.len()))
            .finish()
    }
}

impl<'a> From<TensorView<'a>> for TensorOut<'a> {
    fn from(t: TensorView<'a>) -> Self {
        TensorOut::new(t.name, t.dtype, t.shape, t.bytes)
    }
}

/// The 8-byte length and the JSON header, padded with spaces to a multiple of 8 bytes (as
/// the crate pads it). The tensor entries are the crate's [`Metadata`], serialized (which
/// validates their layout), in the given order; the `"__metadata__"` object (when there is
/// any) comes first, its keys sorted. The data section follows in the same order.
fn header_bytes(tensors: &[TensorOut<'_>], metadata: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let invalid = |m: String| Error::InvalidArgument(format!("cannot write .safetensors: {m}"));
    let mut seen = HashSet::new();
    let mut infos = Vec::with_capacity(tensors.len());
    let mut offset = 0usize;
    for t in tensors {
        // (the crate's Metadata keeps the last of two equal names, and writes either)
        if t.name == METADATA_KEY {
            return Err(invalid(format!(
                "'{METADATA_KEY}' is reserved for the metadata; rename the tensor"
            )));
        }
        if !seen.insert(t.name) {
            return Err(invalid(format!(
                "tensor name '{}' appears twice; names must be unique",
                t.name
            )));
        }
        let need = t
            .shape
            .iter()
            .try_fold(t.dtype.size(), |a, &d| a.checked_mul(d));
        if need != Some(t.bytes.len()) {
            return Err(invalid(format!(
                "tensor '{}': shape {:?} of {} needs {} bytes, got {}",
                t.name,
                t.shape,
                t.dtype,
                need.map_or("too many".to_string(), |n| n.to_string()),
                t.bytes.len()
            )));
        }
        let end = offset + t.bytes.len();
        let info = TensorInfo {
            dtype: t.dtype.to_crate(),
            shape: t.shape.to_vec(),
            data_offsets: (offset, end),
        };
        infos.push((t.name.to_string(), info));
        offset = end;
    }
    let entries = Metadata::new(None, infos)
        .and_then(|m| Ok(serde_json::to_string(&m)?))
        .map_err(|e| invalid(e.to_string()))?;
    let mut json = if metadata.is_empty() {
        entries
    } else {
        let meta = serde_json::to_string(metadata).map_err(|e| invalid(e.to_string()))?;
        let rest = entries.strip_prefix('{').unwrap_or("}");
        let sep = if rest == "}" { "" } else { "," };
        format!("{{\"{METADATA_KEY}\":{meta}{sep}{rest}")
    };
    while json.len() % 8 != 0 {
        json.push(' ');
    }
    if json.len() as u64 > MAX_HEADER_LEN {
        return Err(invalid(format!(
            "the header would be {} bytes, over the {MAX_HEADER_LEN}-byte limit readers accept; write fewer tensors per file",
            json.len()
        )));
    }
    let mut out = Vec::with_capacity(8 + json.len());
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    Ok(out)
}

/// The bytes of a `.safetensors` file holding `tensors` (in that order) and `metadata` (see
/// [`write()`]).
///
/// # Errors
///
/// As [`write()`], for the arguments.
pub fn to_bytes(tensors: &[TensorOut<'_>], metadata: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let mut out = header_bytes(tensors, metadata)?;
    out.reserve(tensors.iter().map(|t| t.bytes.len()).sum());
    for t in tensors {
        out.extend_from_slice(t.bytes);
    }
    Ok(out)
}

/// Write `tensors` (data laid out in the given order) and `metadata` (omitted when empty) to
/// `path` atomically (see [`crate::io::write_atomic`]): every tensor is checked before
/// anything is written, and no partial file is ever left.
///
/// The header is compact JSON with keys in a fixed order (`"__metadata__"` first, its keys
/// sorted, then the tensors in the given order), padded with spaces to a multiple of 8 bytes
/// as the reference library writes it, so equal arguments give equal files.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when a tensor's byte length does not match its shape and dtype,
/// a name appears twice or is `"__metadata__"`, or the header would exceed
/// [`MAX_HEADER_LEN`]; nothing is written then. [`Error::BadFile`] when the file cannot be
/// written; `path` is then untouched.
pub fn write(
    path: &Path,
    tensors: &[TensorOut<'_>],
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    let header = header_bytes(tensors, metadata)?;
    super::write_atomic(path, |w| {
        w.write_all(&header)?;
        tensors.iter().try_for_each(|t| w.write_all(t.bytes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_meta() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// A file from a raw JSON header (padded) and a data section.
    fn raw(header: &str, data: &[u8]) -> Vec<u8> {
        let mut h = header.to_string();
        while !h.len().is_multiple_of(8) {
            h.push(' ');
        }
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn msg(bytes: Vec<u8>) -> String {
        match from_bytes(bytes) {
            Ok(st) => panic!("accepted: {st:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn assert_refused(bytes: Vec<u8>, needles: &[&str]) {
        let m = msg(bytes);
        for n in needles {
            assert!(m.contains(n), "message {m:?} lacks {n:?}");
        }
    }

    #[test]
    fn every_dtype_round_trips_through_bytes_and_a_file() {
        let shape = [2usize, 3];
        let data: Vec<Vec<u8>> = Dtype::ALL
            .iter()
            .enumerate()
            .map(|(k, d)| (0..6 * d.size()).map(|i| (i * 7 + k) as u8).collect())
            .collect();
        let names: Vec<String> = Dtype::ALL.iter().map(|d| format!("t_{d}")).collect();
        let mut tensors: Vec<TensorOut<'_>> = Dtype::ALL
            .iter()
            .zip(&names)
            .zip(&data)
            .map(|((&d, n), b)| TensorOut::new(n, d, &shape, b))
            .collect();
        let scalar = 7.5f64.to_le_bytes();
        let empty: [u8; 0] = [];
        tensors.push(TensorOut::new("scalar", Dtype::F64, &[], &scalar));
        tensors.push(TensorOut::new("empty", Dtype::F32, &[4, 0], &empty));
        let meta = BTreeMap::from([
            ("format".to_string(), "pt".to_string()),
            ("quote\"d\n".to_string(), "ünïcode".to_string()),
        ]);
        let bytes = to_bytes(&tensors, &meta).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0, "header padded to a multiple of 8");
        assert!(bytes[8..8 + n].starts_with(b"{\"__metadata__\":{\"format\":\"pt\""));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("all.safetensors");
        write(&path, &tensors, &meta).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "write == to_bytes");
        for st in [open(&path).unwrap(), from_bytes(bytes.clone()).unwrap()] {
            let want: Vec<&str> = tensors.iter().map(|t| t.name).collect();
            assert_eq!(st.names(), want);
            assert_eq!(st.len(), tensors.len());
            assert_eq!(st.metadata(), &meta);
            for t in &tensors {
                let v = st.get(t.name).unwrap();
                assert_eq!(TensorOut::from(v), *t);
                assert_eq!(v.is_float(), t.dtype.is_float());
            }
            assert_eq!(st.get("scalar").unwrap().len(), 1);
            assert!(st.get("empty").unwrap().is_empty());
            // Copy through: what we read writes back to the same bytes.
            let copy: Vec<TensorOut<'_>> = st.iter().map(TensorOut::from).collect();
            assert_eq!(to_bytes(&copy, st.metadata()).unwrap(), bytes);
        }
        assert_eq!(
            to_bytes(&[], &no_meta()).unwrap(),
            b"\x08\0\0\0\0\0\0\0{}      "
        );
        assert!(from_bytes(to_bytes(&[], &no_meta()).unwrap())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn dtype_names_parse_and_sizes() {
        for d in Dtype::ALL {
            assert_eq!(d.name().parse::<Dtype>().unwrap(), d);
            assert_eq!(d.to_string(), d.name());
        }
        assert_eq!(Dtype::BF16.size(), 2);
        assert_eq!(Dtype::I64.size(), 8);
        let e = "f32".parse::<Dtype>().unwrap_err().to_string();
        assert!(
            e.contains("unknown") && e.contains("'f32'") && e.contains("BF16"),
            "{e}"
        );
        let e = "C64".parse::<Dtype>().unwrap_err().to_string();
        assert!(e.contains("'C64' is not supported"), "{e}");
        // our names and sizes are the crate's
        for d in Dtype::ALL {
            assert_eq!(d.to_crate().to_string(), d.name());
            assert_eq!(d.to_crate().bitsize(), 8 * d.size());
            assert_eq!(Dtype::from_crate(d.to_crate()), Some(d));
        }
        assert_eq!(Dtype::from_crate(safetensors::Dtype::F4), None);
    }

    #[test]
    fn files_agree_with_the_crates_own_reader_and_writer() {
        let x: Vec<u8> = (0..24).collect();
        let y = [7u8; 6];
        let ours = to_bytes(
            &[
                TensorOut::new("x", Dtype::F32, &[2, 3], &x),
                TensorOut::new("y", Dtype::BF16, &[3], &y),
            ],
            &BTreeMap::from([("k".to_string(), "v".to_string())]),
        )
        .unwrap();
        let theirs = safetensors::SafeTensors::deserialize(&ours).unwrap();
        assert_eq!(theirs.tensor("x").unwrap().data(), &x[..]);
        assert_eq!(theirs.tensor("y").unwrap().shape(), [3]);
        // the crate's writer (which orders tensors by dtype, then name) reads back
        let (xv, yv) = (
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 3], &x).unwrap(),
            safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, vec![3], &y).unwrap(),
        );
        let bytes = safetensors::serialize([("y", yv), ("x", xv)], None).unwrap();
        let st = from_bytes(bytes).unwrap();
        assert_eq!(st.names(), ["x", "y"]);
        assert_eq!(st.get("x").unwrap().bytes, &x[..]);
        assert_eq!(st.get("y").unwrap().dtype, Dtype::BF16);
        // and the header we write is the crate's, byte for byte, without metadata
        let mut one =
            to_bytes(&[TensorOut::new("x", Dtype::F32, &[2, 3], &x)], &no_meta()).unwrap();
        let xv =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 3], &x).unwrap();
        assert_eq!(safetensors::serialize([("x", xv)], None).unwrap(), one);
        one.truncate(one.len() - 1);
        assert!(from_bytes(one).is_err());
    }

    #[test]
    fn f16_and_bf16_widen_exactly() {
        let f16_cases: [(u16, u32); 14] = [
            (0x3c00, 0x3f80_0000), // 1.0
            (0xbc00, 0xbf80_0000), // -1.0
            (0x0000, 0x0000_0000), // +0
            (0x8000, 0x8000_0000), // -0
            (0x3555, 0x3eaa_a000), // 0.333251953125
            (0x7bff, 0x477f_e000), // 65504, max
            (0x0400, 0x3880_0000), // 2^-14, min normal
            (0x0001, 0x3380_0000), // 2^-24, min subnormal
            (0x8001, 0xb380_0000), // -2^-24
            (0x0200, 0x3800_0000), // 2^-15
            (0x03ff, 0x387f_c000), // max subnormal 1023 * 2^-24
            (0x7c00, 0x7f80_0000), // +inf
            (0xfc00, 0xff80_0000), // -inf
            (0x7e00, 0x7fc0_0000), // quiet NaN
        ];
        for (h, f) in f16_cases {
            assert_eq!(f16_to_f32(h).to_bits(), f, "f16 {h:#06x}");
        }
        assert_eq!(
            f16_to_f32(0x7c01).to_bits(),
            0x7f80_2000,
            "signaling NaN payload kept"
        );
        assert_eq!(f16_to_f32(0xfe00).to_bits(), 0xffc0_0000, "negative NaN");
        // Every finite f16 agrees with arithmetic: sign * man * 2^(e - 25).
        for h in 0..=u16::MAX {
            let (e, m) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
            if e == 0x1f {
                continue;
            }
            let mag = if e == 0 {
                m * 2f64.powi(-24)
            } else {
                (m + 1024.0) * 2f64.powi(e - 25)
            };
            let want = if h & 0x8000 != 0 { -mag } else { mag };
            assert_eq!(f64::from(f16_to_f32(h)), want, "f16 {h:#06x}");
        }

        let bf16_cases: [(u16, u32); 8] = [
            (0x3f80, 0x3f80_0000), // 1.0
            (0xc000, 0xc000_0000), // -2.0
            (0x0001, 0x0001_0000), // min subnormal 2^-133
            (0x8000, 0x8000_0000), // -0
            (0x7f7f, 0x7f7f_0000), // max
            (0x7f80, 0x7f80_0000), // inf
            (0xff80, 0xff80_0000), // -inf
            (0x7fc1, 0x7fc1_0000), // NaN with payload
        ];
        for (h, f) in bf16_cases {
            assert_eq!(bf16_to_f32(h).to_bits(), f, "bf16 {h:#06x}");
        }
        assert_eq!(f64::from(bf16_to_f32(0x0001)), 2f64.powi(-133));

        assert_eq!(
            f32_to_f64(f32::from_bits(0x7f80_0001)).to_bits(),
            0x7ff0_0000_2000_0000
        );
        assert_eq!(
            f32_to_f64(f32::from_bits(0xffc0_0000)).to_bits(),
            0xfff8_0000_0000_0000
        );
        assert_eq!(f32_to_f64(-1.5), -1.5);
    }

    #[test]
    fn views_convert_floats_and_refuse_integers() {
        let f16: Vec<u8> = [0x3c00u16, 0x0001, 0xfc00]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bf16: Vec<u8> = [0x3f80u16, 0xc000]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let f32s: Vec<u8> = [1.5f32, -0.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let f64s: Vec<u8> = [1e300f64].iter().flat_map(|x| x.to_le_bytes()).collect();
        let i32s = [1u8, 0, 0, 0];
        let bytes = to_bytes(
            &[
                TensorOut::new("h", Dtype::F16, &[3], &f16),
                TensorOut::new("b", Dtype::BF16, &[2], &bf16),
                TensorOut::new("s", Dtype::F32, &[2], &f32s),
                TensorOut::new("d", Dtype::F64, &[1], &f64s),
                TensorOut::new("i", Dtype::I32, &[1], &i32s),
            ],
            &no_meta(),
        )
        .unwrap();
        let st = from_bytes(bytes).unwrap();
        let get = |n| st.get(n).unwrap();
        assert_eq!(
            get("h").to_f32_vec().unwrap(),
            [1.0, 2f32.powi(-24), f32::NEG_INFINITY]
        );
        assert_eq!(
            get("h").to_f64_vec().unwrap(),
            [1.0, 2f64.powi(-24), f64::NEG_INFINITY]
        );
        assert_eq!(get("b").to_f32_vec().unwrap(), [1.0, -2.0]);
        assert_eq!(get("b").to_f64_vec().unwrap(), [1.0, -2.0]);
        let s = get("s").to_f32_vec().unwrap();
        assert_eq!((s[0], s[1].to_bits()), (1.5, 0x8000_0000));
        assert_eq!(get("s").to_f64_vec().unwrap(), [1.5, -0.0]);
        assert_eq!(get("d").to_f64_vec().unwrap(), [1e300]);
        let e = get("d").to_f32_vec().unwrap_err().to_string();
        assert!(e.contains("'d' is F64") && e.contains("to_f64_vec"), "{e}");
        assert!(!get("i").is_float());
        let e = get("i").to_f64_vec().unwrap_err().to_string();
        assert!(e.contains("'i' is I32"), "{e}");
        assert!(get("i").to_f32_vec().is_err());
    }

    #[test]
    fn names_follow_data_offsets_not_json_order() {
        let st = from_bytes(raw(
            r#"{"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},
                "a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]},
                "e":{"dtype":"U8","shape":[0],"data_offsets":[3,3]}}"#,
            &[1, 2, 3],
        ))
        .unwrap();
        assert_eq!(st.names(), ["z", "a", "e"]);
        assert_eq!(st.get("a").unwrap().bytes, [2, 3]);
        assert!(st.metadata().is_empty());
    }

    #[test]
    fn refuses_short_files_and_bad_header_lengths() {
        assert_refused(vec![], &["0 bytes", "fewer than the 8-byte"]);
        assert_refused(vec![1, 0, 0], &["3 bytes", "fewer than the 8-byte"]);
        let mut b = raw(r#"{}"#, &[]);
        b[..8].copy_from_slice(&100u64.to_le_bytes());
        assert_refused(b, &["header length 100 is beyond the end", "8 bytes after"]);
        let mut b = raw(r#"{}"#, &[]);
        b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_refused(b, &["over the 100000000-byte limit"]);
        // Truncated: a good file missing its last byte.
        let x = [0u8; 4];
        let good = to_bytes(&[TensorOut::new("x", Dtype::F32, &[1], &x)], &no_meta()).unwrap();
        assert_refused(
            good[..good.len() - 1].to_vec(),
            &["'x'", "beyond the data section (3 bytes)"],
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("short.safetensors");
        std::fs::write(&p, [0u8; 5]).unwrap();
        let e = open(&p).unwrap_err().to_string();
        assert!(
            e.contains("short.safetensors") && e.contains("5 bytes"),
            "{e}"
        );
        std::fs::write(&p, []).unwrap();
        assert!(open(&p).unwrap_err().to_string().contains("0 bytes"));
        let e = open(&dir.path().join("missing")).unwrap_err().to_string();
        assert!(e.contains("cannot read") && e.contains("missing"), "{e}");
        assert!(open(dir.path())
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
        // Through the map: a good file missing its last byte.
        std::fs::write(&p, &good[..good.len() - 1]).unwrap();
        let e = open(&p).unwrap_err().to_string();
        assert!(e.contains("short.safetensors: tensor 'x'"), "{e}");
        assert!(e.contains("beyond the data section (3 bytes)"), "{e}");
    }

    #[test]
    fn refuses_malformed_json() {
        assert_refused(raw(r#"{"x": "#, &[]), &["not valid JSON"]);
        assert_refused(raw("[1, 2]", &[]), &["not a JSON object"]);
        let mut b = raw("{}", &[]);
        b[9] = 0xff;
        assert_refused(b, &["not UTF-8"]);
        assert_refused(raw(r#"{"x": 3}"#, &[]), &["tensor 'x'", "malformed entry"]);
        assert_refused(
            raw(r#"{"x": {"dtype": "F32", "shape": [1]}}"#, &[0; 4]),
            &["tensor 'x'", "missing field `data_offsets`", "an entry is"],
        );
    }

    #[test]
    fn refuses_duplicate_keys() {
        // serde_json alone would keep the second entry silently.
        let h = r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},
                    "x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#;
        assert!(
            serde_json::from_str::<Value>(h)
                .unwrap()
                .as_object()
                .unwrap()
                .len()
                == 1
        );
        assert_refused(raw(h, &[0, 0]), &["duplicate key 'x'", "tensor name"]);
        let h = r#"{"x":{"dtype":"U8","dtype":"F32","shape":[1],"data_offsets":[0,1]}}"#;
        assert_refused(raw(h, &[0]), &["duplicate key 'dtype'", "'x'"]);
        let h = r#"{"__metadata__":{"a":"1","\u0061":"2"}}"#;
        assert_refused(raw(h, &[]), &["duplicate key 'a'", "__metadata__"]);
        // Keys inside strings and values are not keys.
        let h = r#"{"__metadata__":{"a":"\"a\":","b":"{\"a\":1}"},
                    "a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
        assert_eq!(from_bytes(raw(h, &[9])).unwrap().metadata()["a"], "\"a\":");
    }

    #[test]
    fn refuses_unknown_dtypes_and_bad_shapes_and_offsets() {
        let one = |entry: &str, data: &[u8]| raw(&format!(r#"{{"t":{entry}}}"#), data);
        // F4 is in the crate's list, not in ours: refused whether the crate accepts the
        // layout (2 elements, one byte) or not (1 element, half a byte)
        for (shape, end) in [(2, 1), (1, 1)] {
            assert_refused(
                one(
                    &format!(r#"{{"dtype":"F4","shape":[{shape}],"data_offsets":[0,{end}]}}"#),
                    &[0],
                ),
                &[
                    "tensor 't'",
                    "dtype 'F4' is not supported",
                    "supported: F32, F16, BF16, F64, F8_E4M3, F8_E5M2, F8_E8M0, U8",
                ],
            );
        }
        assert_refused(
            one(r#"{"dtype":"F7","shape":[1],"data_offsets":[0,1]}"#, &[0]),
            &[
                "tensor 't'",
                "unknown safetensors dtype 'F7'",
                "supported: F32",
            ],
        );
        assert_refused(
            one(r#"{"dtype":7,"shape":[1],"data_offsets":[0,1]}"#, &[0]),
            &["tensor 't'", "invalid type: integer `7`"],
        );
        for shape in ["[-1]", "[1.5]", "\"2\"", "[[1]]", "null"] {
            assert_refused(
                one(
                    &format!(r#"{{"dtype":"U8","shape":{shape},"data_offsets":[0,1]}}"#),
                    &[0],
                ),
                &["tensor 't'", "malformed entry", "an entry is"],
            );
        }
        for off in ["[0]", "[0,1,2]", "[-1,1]", "[0,1.0]", "{}"] {
            assert_refused(
                one(
                    &format!(r#"{{"dtype":"U8","shape":[1],"data_offsets":{off}}}"#),
                    &[0],
                ),
                &["tensor 't'", "malformed entry", "an entry is"],
            );
        }
        assert_refused(
            one(
                r#"{"dtype":"U8","shape":[0],"data_offsets":[2,1]}"#,
                &[0, 0],
            ),
            &["data_offsets [2, 1] begin after they end"],
        );
        assert_refused(
            one(
                r#"{"dtype":"U8","shape":[99999999999,99999999999,99999999999],"data_offsets":[0,1]}"#,
                &[0],
            ),
            &["too large"],
        );
    }

    #[test]
    fn refuses_size_mismatch_and_offsets_beyond_data() {
        assert_refused(
            raw(
                r#"{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}"#,
                &[0; 12],
            ),
            &[
                "tensor 'w'",
                "size mismatch",
                "[2, 2] of F32 needs 16 bytes",
                "hold 12",
            ],
        );
        assert_refused(
            raw(
                r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                &[0; 6],
            ),
            &["tensor 'w'", "[0, 8] end beyond the data section (6 bytes)"],
        );
    }

    #[test]
    fn refuses_overlaps_and_gaps() {
        let two = |a: [usize; 2], b: [usize; 2], len: usize| {
            raw(
                &format!(
                    r#"{{"a":{{"dtype":"U8","shape":[{}],"data_offsets":[{},{}]}},
                        "b":{{"dtype":"U8","shape":[{}],"data_offsets":[{},{}]}}}}"#,
                    a[1] - a[0],
                    a[0],
                    a[1],
                    b[1] - b[0],
                    b[0],
                    b[1]
                ),
                &vec![0; len],
            )
        };
        assert!(from_bytes(two([0, 2], [2, 4], 4)).is_ok());
        assert_refused(
            two([0, 3], [2, 4], 4),
            &["overlap", "tensor 'b' [2, 4] overlaps tensor 'a' [0, 3]"],
        );
        assert_refused(
            two([0, 2], [0, 2], 2),
            &["overlap", "'a' [0, 2]", "'b' [0, 2]"],
        );
        assert_refused(
            two([0, 1], [2, 4], 4),
            &[
                "gap",
                "bytes [1, 2) belong to no tensor",
                "before tensor 'b'",
            ],
        );
        assert_refused(
            two([1, 2], [2, 4], 4),
            &["gap", "bytes [0, 1)", "before tensor 'a'"],
        );
        assert_refused(
            two([0, 2], [2, 4], 6),
            &["gap", "last 2 bytes [4, 6)", "trailing"],
        );
        assert_refused(raw("{}", &[1]), &["gap", "last 1 bytes [0, 1)"]);
    }

    #[test]
    fn refuses_bad_metadata() {
        assert_refused(
            raw(r#"{"__metadata__":[1]}"#, &[]),
            &["__metadata__ must be an object of strings, not an array"],
        );
        assert_refused(
            raw(r#"{"__metadata__":{"ok":"1","n":2}}"#, &[]),
            &["__metadata__ must be an object of strings; 'n' is a number"],
        );
        let st = from_bytes(raw(r#"{"__metadata__":{"k":"v"}}"#, &[])).unwrap();
        assert_eq!(st.metadata()["k"], "v");
        assert!(st.is_empty());
    }

    #[test]
    fn write_checks_everything_first_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.safetensors");
        let x = [0u8; 8];
        let err = |tensors: &[TensorOut<'_>]| {
            let e = write(&path, tensors, &no_meta()).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
            assert!(!path.exists());
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "no temporary left"
            );
            e.to_string()
        };
        let good = TensorOut::new("g", Dtype::U8, &[8], &x);
        let e = err(&[good, TensorOut::new("w", Dtype::F32, &[3], &x)]);
        assert!(
            e.contains("tensor 'w': shape [3] of F32 needs 12 bytes, got 8"),
            "{e}"
        );
        let e = err(&[TensorOut::new("w", Dtype::U8, &[usize::MAX, 2], &x)]);
        assert!(e.contains("needs too many bytes"), "{e}");
        let e = err(&[good, good]);
        assert!(e.contains("'g' appears twice"), "{e}");
        let e = err(&[TensorOut::new("__metadata__", Dtype::U8, &[8], &x)]);
        assert!(e.contains("reserved"), "{e}");
        let e = write(
            &dir.path().join("no/such/dir/x.safetensors"),
            &[good],
            &no_meta(),
        )
        .unwrap_err();
        assert!(matches!(e, Error::BadFile(_)), "{e:?}");
    }
}
