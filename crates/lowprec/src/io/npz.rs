//! NumPy `.npz` archives: `np.savez` (a zip archive of `.npy` members, STORED) and
//! `np.savez_compressed` (the same, DEFLATE), read through the `zip` crate (zip-rs/zip2,
//! the maintained one); each member `NAME.npy` is the array `NAME`, parsed by [`super::npy`]
//! (its dtypes: float16/32/64, bfloat16 as ml_dtypes saves it, uint8 to uint64).
//!
//! [`open`] validates the archive and every member before any array is read: its central
//! directory, each member's name (`NAME.npy`), compression (STORED or DEFLATE, not
//! encrypted), its size against the archive (a STORED member stores its size; a DEFLATE one
//! cannot expand beyond 1032 times its compressed bytes; both lie inside the file), and its
//! `.npy` header, decompressed alone, against the member's size. [`Npz::read`] then reads one
//! member at a time, so a checkpoint saved as `.npz` is held one array at a time; a member
//! whose data then fails its CRC or ends early is refused, never read partially.
//!
//! ```
//! use lowprec::io::{npy, npz};
//! use std::io::Write;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("w.npz");
//! let a = npy::Array { shape: vec![2], data: npy::Data::F32(vec![1.0, -2.0]) };
//! // what np.savez(path, w=a) writes
//! let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
//! let stored = zip::write::SimpleFileOptions::default()
//!     .compression_method(zip::CompressionMethod::Stored);
//! z.start_file("w.npy", stored).unwrap();
//! z.write_all(&npy::to_bytes(&a)).unwrap();
//! z.finish().unwrap();
//!
//! let f = npz::open(&path)?;
//! assert_eq!(f.members()[0].name, "w");
//! assert_eq!(f.members()[0].header.shape, [2]);
//! assert_eq!(f.read(&f.members()[0])?, a);
//! # Ok::<(), lowprec::Error>(())
//! ```

use super::npy::{self, Array, Header};
use crate::error::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use zip::{CompressionMethod, ZipArchive};

/// DEFLATE's largest expansion: a compressed byte gives at most 1032 bytes (258 per 2 bits,
/// rounded up). A member claiming more is corrupt, and its size is not believed.
pub const MAX_DEFLATE_RATIO: u64 = 1032;

/// The largest `.npy` header read from a member (numpy's own headers are under 64 KiB).
const MAX_NPY_HEADER: u64 = 1 << 20;

/// One array of an archive, validated, not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The array's name: the member's name without `.npy` (the keyword given to
    /// `np.savez`, or `arr_0`, `arr_1`, … for positional arrays).
    pub name: String,
    /// Its `.npy` header: shape, dtype, data size.
    pub header: Header,
    index: usize,
}

/// A `.npz` archive, opened and validated ([`open`]).
#[derive(Debug)]
pub struct Npz {
    path: PathBuf,
    archive: Mutex<ZipArchive<File>>,
    members: Vec<Member>,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadFile(msg.into())
}

/// Open a `.npz` archive and validate every member's name, compression, size and `.npy`
/// header (see the module documentation); no array is read.
///
/// # Precondition
///
/// The file must not change while the [`Npz`] lives (members are read from it later).
///
/// # Errors
///
/// [`Error::BadFile`] naming the path (and the member) when the file cannot be read, is not
/// a zip archive (a truncated one loses its central directory), holds a member that is not
/// `NAME.npy` (a folder, another file), an encrypted member, a compression other than
/// STORED or DEFLATE, a size the archive cannot hold, a `.npy` header that is malformed, of
/// a dtype lowprec does not read, or that does not match the member's size; or holds two
/// members of one name.
pub fn open(path: &Path) -> Result<Npz> {
    let at = |m: String| bad(format!("{}: {m}", path.display()));
    super::check_source(path)?;
    let file = File::open(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    let file_len = file
        .metadata()
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?
        .len();
    let mut archive = ZipArchive::new(file).map_err(|e| {
        at(format!(
            "not a valid .npz (zip) archive: {e}; the file is truncated or not written by np.savez / np.savez_compressed"
        ))
    })?;
    let mut members = Vec::with_capacity(archive.len());
    let mut seen = std::collections::HashSet::new();
    for index in 0..archive.len() {
        let mut f = archive
            .by_index(index)
            .map_err(|e| at(format!("member {index}: {e}")))?;
        let raw = f
            .name()
            .map(|n| n.into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(f.name_raw()).into_owned());
        let m = |what: String| at(format!("member '{raw}': {what}"));
        let name = match raw.strip_suffix(".npy") {
            Some(n) if !f.is_dir() && !n.is_empty() => n.to_string(),
            _ => {
                return Err(m(
                    "not a .npy array; a .npz holds NAME.npy members only (np.savez / np.savez_compressed)".into(),
                ))
            }
        };
        if f.encrypted() {
            return Err(m("encrypted; save it again with np.savez".into()));
        }
        let (size, packed) = (f.size(), f.compressed_size());
        let fits = match f.compression() {
            CompressionMethod::Stored => size == packed,
            CompressionMethod::Deflated => size <= packed.saturating_mul(MAX_DEFLATE_RATIO) + 64,
            c => {
                return Err(m(format!(
                    "compressed with {c}; lowprec reads STORED (np.savez) and DEFLATE (np.savez_compressed) members"
                )))
            }
        };
        let start = f.data_start().unwrap_or(0);
        if !fits || start.saturating_add(packed) > file_len {
            return Err(m(format!(
                "claims {size} bytes from {packed} stored bytes at offset {start}, which the {file_len}-byte archive cannot hold; the file is truncated or corrupt"
            )));
        }
        // the .npy header alone: the magic string and lengths, then the dictionary
        let mut head = Vec::new();
        let cap = size.min(MAX_NPY_HEADER);
        (&mut f)
            .take(12.min(cap))
            .read_to_end(&mut head)
            .map_err(|e| m(format!("cannot read it: {e}")))?;
        let hlen = match head.get(6) {
            Some(1) if head.len() >= 10 => 10 + u64::from(u16::from_le_bytes([head[8], head[9]])),
            Some(2 | 3) if head.len() >= 12 => {
                12 + u64::from(u32::from_le_bytes([head[8], head[9], head[10], head[11]]))
            }
            _ => head.len() as u64,
        };
        if hlen > cap {
            return Err(m(format!(
                "its .npy header of {hlen} bytes is longer than the member ({size} bytes) or 1 MiB"
            )));
        }
        (&mut f)
            .take(hlen.saturating_sub(head.len() as u64))
            .read_to_end(&mut head)
            .map_err(|e| m(format!("cannot read it: {e}")))?;
        let header = npy::read_header(&head).map_err(|e| m(e.to_string()))?;
        if header.file_len() != size {
            return Err(m(format!(
                "the shape {:?} of '{}' needs {} bytes of data, the member holds {}; the archive is corrupt",
                header.shape,
                header.descr,
                header.data_len,
                size.saturating_sub(header.data_start as u64)
            )));
        }
        if !seen.insert(name.clone()) {
            return Err(m("appears twice; each array name must appear once".into()));
        }
        members.push(Member {
            name,
            header,
            index,
        });
    }
    Ok(Npz {
        path: path.to_path_buf(),
        archive: Mutex::new(archive),
        members,
    })
}

impl Npz {
    /// The arrays, in the archive's order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The path the archive was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole `.npy` file of `m` (its header, then its data, little-endian, C order), read
    /// and decompressed, its CRC checked.
    ///
    /// # Errors
    ///
    /// [`Error::BadFile`] naming the path and the member when it cannot be read, its data
    /// ends early or fails its CRC.
    pub fn read_bytes(&self, m: &Member) -> Result<Vec<u8>> {
        let at = |what: String| {
            bad(format!(
                "{}: member '{}.npy': {what}",
                self.path.display(),
                m.name
            ))
        };
        let mut archive = self.archive.lock().unwrap_or_else(|p| p.into_inner());
        let f = archive
            .by_index(m.index)
            .map_err(|e| at(format!("cannot read it: {e}")))?;
        let size = m.header.file_len();
        // the size was checked against the archive by open
        let mut bytes = Vec::with_capacity(size as usize);
        f.take(size + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| at(format!("cannot read it: {e}; the archive is corrupt")))?;
        if bytes.len() as u64 != size {
            return Err(at(format!(
                "{} bytes of data where its header promises {size}; the archive is corrupt",
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    /// The array of `m`.
    ///
    /// # Errors
    ///
    /// As [`read_bytes`](Self::read_bytes), and the errors of [`npy::from_bytes`].
    pub fn read(&self, m: &Member) -> Result<Array> {
        npy::from_bytes(&self.read_bytes(m)?).map_err(|e| match e {
            Error::BadFile(s) => bad(format!(
                "{}: member '{}.npy': {s}",
                self.path.display(),
                m.name
            )),
            e => e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::npy::Data;
    use std::io::Write;

    fn archive(members: &[(&str, Vec<u8>)], deflate: bool) -> Vec<u8> {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(if deflate {
            CompressionMethod::Deflated
        } else {
            CompressionMethod::Stored
        });
        for (name, bytes) in members {
            z.start_file(*name, opts).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap().into_inner()
    }

    fn arrays() -> Vec<(&'static str, Array)> {
        vec![
            (
                "w",
                Array {
                    shape: vec![2, 3],
                    data: Data::F32(vec![1.0, -2.0, 0.5, 3.0, 1e-3, -0.0]),
                },
            ),
            (
                "b",
                Array {
                    shape: vec![4],
                    data: Data::BF16(vec![0x3f80, 0xc000, 0x7f80, 0x7fc1]),
                },
            ),
            (
                "layers/0.h",
                Array {
                    shape: vec![],
                    data: Data::F16(vec![0x3c00]),
                },
            ),
            (
                "ids",
                Array {
                    shape: vec![3],
                    data: Data::U64(vec![1, 2, u64::MAX]),
                },
            ),
        ]
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn refused(path: &Path) -> String {
        match open(path) {
            Ok(f) => panic!("accepted: {f:?}"),
            Err(e) => {
                assert!(matches!(e, Error::BadFile(_)), "{e:?}");
                let m = e.to_string();
                assert_eq!(m.lines().count(), 1, "{m}");
                assert!(m.contains(&path.display().to_string()), "{m}");
                m
            }
        }
    }

    #[test]
    fn stored_and_deflated_archives_read_member_by_member() {
        let dir = tempfile::tempdir().unwrap();
        let members: Vec<(String, Vec<u8>)> = arrays()
            .iter()
            .map(|(n, a)| (format!("{n}.npy"), npy::to_bytes(a)))
            .collect();
        let members: Vec<(&str, Vec<u8>)> = members
            .iter()
            .map(|(n, b)| (n.as_str(), b.clone()))
            .collect();
        for deflate in [false, true] {
            let p = write(dir.path(), "a.npz", &archive(&members, deflate));
            let f = open(&p).unwrap();
            let names: Vec<&str> = f.members().iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["w", "b", "layers/0.h", "ids"]);
            for ((_, a), m) in arrays().iter().zip(f.members()) {
                assert_eq!(m.header.shape, a.shape);
                assert_eq!(m.header.dtype_name(), a.data.dtype_name());
                assert_eq!(&f.read(m).unwrap(), a);
            }
            assert!(f.members()[1].header.is_float() && !f.members()[3].header.is_float());
        }
        // an empty archive (np.savez with no arrays) holds no member
        let p = write(dir.path(), "e.npz", &archive(&[], false));
        assert!(open(&p).unwrap().members().is_empty());
    }

    #[test]
    fn refuses_bad_archives_with_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let w = npy::to_bytes(&arrays()[0].1);
        let good = archive(&[("w.npy", w.clone())], false);
        // every truncation loses the central directory or a member's bytes
        for len in [0, 10, good.len() / 2, good.len() - 1] {
            let p = write(dir.path(), "t.npz", &good[..len]);
            let m = refused(&p);
            assert!(m.contains("not a valid .npz (zip) archive"), "{m}");
        }
        let p = write(
            dir.path(),
            "x.npz",
            &archive(&[("w.npy", w.clone()), ("notes.txt", b"hi".to_vec())], true),
        );
        let m = refused(&p);
        assert!(
            m.contains("member 'notes.txt'") && m.contains("not a .npy array"),
            "{m}"
        );
        let p = write(
            dir.path(),
            "h.npz",
            &archive(&[("w.npy", b"hello".to_vec())], false),
        );
        assert!(refused(&p).contains("member 'w.npy'"));
        let mut short = w.clone();
        short.truncate(w.len() - 4);
        let p = write(dir.path(), "s.npz", &archive(&[("w.npy", short)], true));
        let m = refused(&p);
        assert!(
            m.contains("needs 24 bytes of data, the member holds 20"),
            "{m}"
        );
        let mut v1 = w.clone();
        let at = v1.windows(3).position(|s| s == b"<f4").unwrap();
        v1[at..at + 3].copy_from_slice(b"<V1");
        let p = write(dir.path(), "v.npz", &archive(&[("w.npy", v1)], false));
        assert!(refused(&p).contains("np.uint8"));
    }

    #[test]
    fn a_member_that_lies_about_its_size_is_refused_before_allocating() {
        let dir = tempfile::tempdir().unwrap();
        let w = npy::to_bytes(&arrays()[0].1);
        let good = archive(&[("w.npy", w.clone())], false);
        // the uncompressed size in the central directory (offset 24 of its header) and the
        // local header (offset 22) claim 1 TB
        let mut lie = good.clone();
        let cd = lie.windows(4).rposition(|s| s == b"PK\x01\x02").unwrap();
        lie[cd + 24..cd + 28].copy_from_slice(&u32::MAX.to_le_bytes());
        lie[22..26].copy_from_slice(&u32::MAX.to_le_bytes());
        let p = write(dir.path(), "l.npz", &lie);
        let m = refused(&p);
        assert!(
            m.contains("cannot hold") || m.contains("not a valid"),
            "{m}"
        );
        // a flipped data byte fails the CRC when the member is read
        let mut flip = good.clone();
        let at = flip.len() - 100;
        flip[at] ^= 0x40;
        let p = write(dir.path(), "c.npz", &flip);
        if let Ok(f) = open(&p) {
            let e = f.read(&f.members()[0]).unwrap_err().to_string();
            assert!(e.contains("member 'w.npy'") && e.contains("corrupt"), "{e}");
        }
    }
}
