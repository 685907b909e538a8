//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0), little-endian, C order.
//!
//! Read: float16, float32, float64, bfloat16, uint8, uint16, uint32, uint64 (and `|u1`).
//! Anything else (big-endian data, Fortran order, object arrays, structured dtypes) is refused
//! with an error that says what to do. Truncated or malformed files are refused, never read
//! partially.
//!
//! bfloat16: numpy has no bfloat16 of its own; `np.save` of an `ml_dtypes.bfloat16` array
//! writes the descr `'<V2'` (two raw bytes), so a `'<V2'` (or `'|V2'`) array is taken to be
//! bfloat16, read as raw bits ([`Data::BF16`]) and written back as `'<V2'`, which
//! `np.load(f).view(ml_dtypes.bfloat16)` restores. (ml_dtypes' 8-bit types are saved as `'<V1'`;
//! those are refused, with the advice to save their codes as uint8.)
//!
//! Why this parser and not a crate (`npyz`, `ndarray-npy`): the format is a short Python-dict
//! header and raw little-endian data, and what lowprec needs of it is the dtype policy above,
//! which neither crate has: `npyz` 0.9.1 (the latest) reads `'<V2'` only as opaque records,
//! has no bfloat16, and its errors say nothing of what to do (save contiguous, little-endian,
//! the uint8 codes of a float8 array); `ndarray-npy` reads into `ndarray` arrays, a
//! dependency lowprec does not otherwise have, with the same gaps. And `npyz`'s `.npz`
//! support is built on `zip` 0.6 (2022), while `.npz` archives here are read through the
//! maintained `zip` 9 ([`super::npz`]), each member parsed by this module.
//!
//! ```
//! use lowprec::io::npy::{self, Array, Data};
//! let a = Array { shape: vec![2, 2], data: Data::F32(vec![1.0, 2.0, 3.0, 4.0]) };
//! let bytes = npy::to_bytes(&a);
//! assert_eq!(npy::from_bytes(&bytes).unwrap(), a);
//! assert!(npy::from_bytes(&bytes[..bytes.len() - 1]).is_err()); // truncated
//! ```

use crate::error::{Error, Result};
use std::path::Path;

/// The elements of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// IEEE binary16, as raw bits.
    F16(Vec<u16>),
    /// bfloat16, as raw bits (the upper half of a binary32); descr `'<V2'`, as ml_dtypes
    /// saves it.
    BF16(Vec<u16>),
    /// binary32.
    F32(Vec<f32>),
    /// binary64.
    F64(Vec<f64>),
    /// uint8.
    U8(Vec<u8>),
    /// uint16.
    U16(Vec<u16>),
    /// uint32.
    U32(Vec<u32>),
    /// uint64.
    U64(Vec<u64>),
}

impl Data {
    /// The numpy `descr` string.
    pub fn descr(&self) -> &'static str {
        match self {
            Data::F16(_) => "<f2",
            Data::BF16(_) => "<V2",
            Data::F32(_) => "<f4",
            Data::F64(_) => "<f8",
            Data::U8(_) => "|u1",
            Data::U16(_) => "<u2",
            Data::U32(_) => "<u4",
            Data::U64(_) => "<u8",
        }
    }

    /// The numpy dtype name.
    pub fn dtype_name(&self) -> &'static str {
        match self {
            Data::F16(_) => "float16",
            Data::BF16(_) => "bfloat16",
            Data::F32(_) => "float32",
            Data::F64(_) => "float64",
            Data::U8(_) => "uint8",
            Data::U16(_) => "uint16",
            Data::U32(_) => "uint32",
            Data::U64(_) => "uint64",
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::F16(v) | Data::BF16(v) | Data::U16(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::U64(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn item_size(&self) -> usize {
        match self {
            Data::U8(_) => 1,
            Data::F16(_) | Data::BF16(_) | Data::U16(_) => 2,
            Data::F32(_) | Data::U32(_) => 4,
            Data::F64(_) | Data::U64(_) => 8,
        }
    }
}

/// An n-dimensional array: its shape and its elements in C order.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// The shape (empty for a 0-d array).
    pub shape: Vec<usize>,
    /// The elements.
    pub data: Data,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadFile(msg.into())
}

/// The value of `key` in the header dictionary, as raw text.
fn header_field<'a>(header: &'a str, key: &str) -> Result<&'a str> {
    let pat = format!("'{key}'");
    let at = header
        .find(&pat)
        .ok_or_else(|| bad(format!("malformed .npy header: no '{key}' entry")))?;
    if header[at + pat.len()..].contains(&pat) {
        return Err(bad(format!(
            "malformed .npy header: '{key}' appears twice; save the array again with numpy"
        )));
    }
    let rest = header[at + pat.len()..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| bad(format!("malformed .npy header near '{key}'")))?
        .trim_start();
    Ok(rest)
}

fn parse_header(header: &str) -> Result<(String, bool, Vec<usize>)> {
    let d = header_field(header, "descr")?;
    let q = d.chars().next().filter(|c| *c == '\'' || *c == '"');
    let descr = match q {
        Some(q) => {
            let end = d[1..]
                .find(q)
                .ok_or_else(|| bad("malformed .npy header: unterminated descr"))?;
            d[1..1 + end].to_string()
        }
        None => {
            return Err(bad(
                "unsupported .npy dtype: a structured dtype; save a plain numeric array",
            ))
        }
    };
    let f = header_field(header, "fortran_order")?;
    let fortran = if f.starts_with("True") {
        true
    } else if f.starts_with("False") {
        false
    } else {
        return Err(bad(
            "malformed .npy header: fortran_order is not True/False",
        ));
    };
    let s = header_field(header, "shape")?;
    let s = s
        .strip_prefix('(')
        .ok_or_else(|| bad("malformed .npy header: shape is not a tuple"))?;
    let end = s
        .find(')')
        .ok_or_else(|| bad("malformed .npy header: unterminated shape"))?;
    let mut shape = Vec::new();
    for part in s[..end].split(',') {
        let p = part.trim().trim_end_matches('L');
        if p.is_empty() {
            continue;
        }
        shape.push(
            p.parse::<usize>()
                .map_err(|_| bad(format!("malformed .npy header: bad dimension '{p}'")))?,
        );
    }
    Ok((descr, fortran, shape))
}

fn le_vec<T, const N: usize>(b: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    b.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunk of N bytes")))
        .collect()
}

/// What a `.npy` header says: the shape, the element type, and where the data lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The shape (empty for a 0-d array).
    pub shape: Vec<usize>,
    /// The numpy `descr` (`"<f4"`, `"<V2"`, …), one lowprec reads.
    pub descr: String,
    /// Where the data starts: the magic string, version, length and header come first.
    pub data_start: usize,
    /// The data's length in bytes: the element count times the element size.
    pub data_len: usize,
}

impl Header {
    /// The numpy dtype name (`"float32"`, `"bfloat16"` for `'<V2'`, …).
    pub fn dtype_name(&self) -> &'static str {
        match self.descr.as_str() {
            "<f2" => "float16",
            "<f4" => "float32",
            "<f8" => "float64",
            "<u2" => "uint16",
            "<u4" => "uint32",
            "<u8" => "uint64",
            "<V2" | "|V2" => "bfloat16",
            _ => "uint8",
        }
    }

    /// Whether the elements are floating-point numbers (float16/32/64, bfloat16).
    pub fn is_float(&self) -> bool {
        self.dtype_name().starts_with("float") || self.dtype_name() == "bfloat16"
    }

    /// The size of the whole file: the header, then the data.
    pub fn file_len(&self) -> u64 {
        (self.data_start + self.data_len) as u64
    }
}

/// The header of a `.npy` file from its first bytes (`bytes` may stop anywhere after the
/// header; the data is not looked at): what [`from_bytes`] checks before it reads the data.
///
/// # Errors
///
/// [`Error::BadFile`] for a bad magic string or version, a header beyond the end of `bytes`,
/// a malformed header, Fortran order or an unsupported dtype.
pub fn read_header(bytes: &[u8]) -> Result<Header> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (bad magic string)"));
    }
    let (hlen, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad("truncated .npy header"));
            }
            (
                u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize,
                12,
            )
        }
        v => return Err(bad(format!("unsupported .npy format version {v}"))),
    };
    let end = start
        .checked_add(hlen)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad("truncated .npy header"))?;
    let header = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| bad("malformed .npy header (not text)"))?;
    let (descr, fortran, shape) = parse_header(header)?;
    if fortran && shape.len() > 1 {
        return Err(bad(
            "Fortran-order .npy arrays are not supported; save np.ascontiguousarray(a) instead",
        ));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("malformed .npy header: shape too large"))?;
    let item = match descr.as_str() {
        "<f2" | "<f4" | "<f8" | "<u2" | "<u4" | "<u8" => descr[2..].parse::<usize>().unwrap_or(0),
        "|u1" | "<u1" | "u1" => 1,
        "<V2" | "|V2" => 2,
        d @ ("<V1" | "|V1") => {
            return Err(bad(format!(
                "unsupported .npy dtype '{d}' (an ml_dtypes 8-bit type such as float8 saves as raw bytes); save the codes instead: a.view(np.uint8)"
            )))
        }
        d if d.starts_with('>') => {
            return Err(bad(format!(
                "big-endian .npy data ({d}) is not supported; save a.astype(a.dtype.newbyteorder('<'))"
            )))
        }
        d => {
            return Err(bad(format!(
                "unsupported .npy dtype '{d}'; lowprec reads float16, float32, float64, bfloat16 ('<V2', as ml_dtypes saves it) and uint8/16/32/64"
            )))
        }
    };
    let data_len = count
        .checked_mul(item)
        .filter(|n| n.checked_add(end).is_some())
        .ok_or_else(|| bad("malformed .npy header: shape too large"))?;
    Ok(Header {
        shape,
        descr,
        data_start: end,
        data_len,
    })
}

/// Parse a `.npy` file's bytes.
///
/// # Errors
///
/// [`Error::BadFile`] for a bad magic string or version, a malformed header, Fortran order,
/// an unsupported dtype, or a data section whose size does not match the shape.
pub fn from_bytes(bytes: &[u8]) -> Result<Array> {
    let h = read_header(bytes)?;
    let body = &bytes[h.data_start..];
    if body.len() != h.data_len {
        return Err(bad(format!(
            "truncated or padded .npy data: the shape {:?} of '{}' needs {} bytes, the file has {}",
            h.shape,
            h.descr,
            h.data_len,
            body.len()
        )));
    }
    let data = match h.descr.as_str() {
        "<f2" => Data::F16(le_vec(body, u16::from_le_bytes)),
        "<f4" => Data::F32(le_vec(body, f32::from_le_bytes)),
        "<f8" => Data::F64(le_vec(body, f64::from_le_bytes)),
        "<u2" => Data::U16(le_vec(body, u16::from_le_bytes)),
        "<u4" => Data::U32(le_vec(body, u32::from_le_bytes)),
        "<u8" => Data::U64(le_vec(body, u64::from_le_bytes)),
        "<V2" | "|V2" => Data::BF16(le_vec(body, u16::from_le_bytes)),
        _ => Data::U8(body.to_vec()),
    };
    Ok(Array {
        shape: h.shape,
        data,
    })
}

/// Read a `.npy` file.
///
/// # Errors
///
/// [`Error::BadFile`] naming the path when it cannot be read, else as [`from_bytes`].
pub fn read(path: &Path) -> Result<Array> {
    super::check_source(path)?;
    let bytes =
        std::fs::read(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    from_bytes(&bytes).map_err(|e| match e {
        Error::BadFile(m) => bad(format!("{}: {m}", path.display())),
        e => e,
    })
}

/// The header (magic, version, length, dictionary padded to a multiple of 64 bytes).
fn header_bytes(a: &Array) -> Vec<u8> {
    let shape = match a.shape.len() {
        1 => format!("({},)", a.shape[0]),
        _ => format!(
            "({})",
            a.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        a.data.descr(),
        shape
    );
    let v1 = dict.len() + 11 < 65536;
    let pre = if v1 { 10 } else { 12 };
    while (pre + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = Vec::with_capacity(pre + dict.len());
    out.extend_from_slice(b"\x93NUMPY");
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out
}

fn write_data(w: &mut dyn std::io::Write, d: &Data) -> std::io::Result<()> {
    const N: usize = 1 << 14;
    let mut buf = Vec::with_capacity(N * 8);
    macro_rules! put {
        ($v:expr) => {
            for c in $v.chunks(N) {
                buf.clear();
                c.iter()
                    .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
                w.write_all(&buf)?;
            }
        };
    }
    match d {
        Data::F16(v) | Data::BF16(v) | Data::U16(v) => put!(v),
        Data::F32(v) => put!(v),
        Data::F64(v) => put!(v),
        Data::U8(v) => w.write_all(v)?,
        Data::U32(v) => put!(v),
        Data::U64(v) => put!(v),
    }
    Ok(())
}

/// The bytes of a `.npy` file holding `a`.
pub fn to_bytes(a: &Array) -> Vec<u8> {
    let mut out = header_bytes(a);
    out.reserve(a.data.len() * a.data.item_size());
    write_data(&mut out, &a.data).expect("writing to a Vec cannot fail");
    out
}

/// Write `a` to `path` atomically (see [`crate::io::write_atomic`]).
///
/// # Errors
///
/// [`Error::BadFile`] when the file cannot be written; `path` is then untouched.
pub fn write(path: &Path, a: &Array) -> Result<()> {
    stage(path, a)?.commit()
}

/// Write `a` into a temporary file for `path`, to be committed with the command's other
/// outputs ([`crate::io::stage`]).
///
/// # Errors
///
/// As [`write()`].
pub fn stage(path: &Path, a: &Array) -> Result<super::Staged> {
    let header = header_bytes(a);
    super::stage(path, |w| {
        w.write_all(&header)?;
        write_data(w, &a.data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_round_trips_every_type() {
        let shapes: [Vec<usize>; 3] = [vec![3], vec![1, 3], vec![3, 1, 1]];
        for shape in shapes {
            for data in [
                Data::F16(vec![1, 2, 3]),
                Data::BF16(vec![0x3f80, 0xff80, 0x7fc1]),
                Data::F32(vec![1.5, -2.0, f32::NAN]),
                Data::F64(vec![1e300, -0.0, 5e-324]),
                Data::U8(vec![0, 255, 7]),
                Data::U16(vec![0, 65535, 7]),
                Data::U32(vec![0, u32::MAX, 7]),
                Data::U64(vec![0, u64::MAX, 7]),
            ] {
                let a = Array {
                    shape: shape.clone(),
                    data,
                };
                let b = to_bytes(&a);
                let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
                assert_eq!((10 + hlen) % 64, 0);
                let back = from_bytes(&b).unwrap();
                assert_eq!(back.shape, a.shape);
                assert_eq!(format!("{:?}", back.data), format!("{:?}", a.data));
            }
        }
    }

    #[test]
    fn refuses_bad_files_with_a_reason() {
        let a = Array {
            shape: vec![2],
            data: Data::F32(vec![1.0, 2.0]),
        };
        let good = to_bytes(&a);
        let msg = |b: &[u8]| from_bytes(b).unwrap_err().to_string();
        assert!(msg(b"hello").contains("magic"));
        assert!(msg(&good[..good.len() - 2]).contains("needs 8 bytes"));
        let edit = |pairs: &[(&str, &str)]| {
            let mut b = good.clone();
            for (from, to) in pairs {
                let at = b
                    .windows(from.len())
                    .position(|w| w == from.as_bytes())
                    .expect("pattern in header");
                b.splice(at..at + from.len(), to.bytes());
            }
            b
        };
        let fortran = edit(&[("'shape': (2,)", "'shape': (1, 2)"), ("False", "True ")]);
        assert!(msg(&fortran).contains("Fortran"));
        assert!(msg(&edit(&[("<f4", ">f4")])).contains("big-endian"));
        assert!(msg(&edit(&[("<f4", "|O8")])).contains("unsupported"));
        let v1 = msg(&edit(&[("<f4", "<V1")]));
        assert!(v1.contains("'<V1'") && v1.contains("np.uint8"), "{v1}");
    }

    #[test]
    fn v2_reads_as_bfloat16_and_round_trips() {
        // The exact bytes of np.save(f, np.array([[1, -2.5], [inf, nan]],
        // dtype=ml_dtypes.bfloat16)) (numpy 2, ml_dtypes 0.5).
        let dict = "{'descr': '<V2', 'fortran_order': False, 'shape': (2, 2), }";
        let mut numpy = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        numpy.extend_from_slice(dict.as_bytes());
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        numpy.extend_from_slice(&[0x80, 0x3f, 0x20, 0xc0, 0x80, 0x7f, 0xc0, 0x7f]);
        let bits = vec![0x3f80u16, 0xc020, 0x7f80, 0x7fc0];
        let a = from_bytes(&numpy).unwrap();
        assert_eq!(a.shape, [2, 2]);
        assert_eq!(a.data, Data::BF16(bits.clone()));
        assert_eq!(a.data.dtype_name(), "bfloat16");
        assert_eq!(
            to_bytes(&a),
            numpy,
            "written back byte for byte as numpy writes it"
        );
        // np.load gives a plain void dtype, which saves as '|V2': also bfloat16.
        let mut void = numpy.clone();
        void[21] = b'|';
        assert_eq!(&void[20..24], b"'|V2");
        assert_eq!(from_bytes(&void).unwrap(), a);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bf16.npy");
        write(&path, &a).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), numpy);
        assert_eq!(read(&path).unwrap().data, Data::BF16(bits));
        let e = from_bytes(&numpy[..numpy.len() - 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'<V2' needs 8 bytes"), "{e}");
    }
}
