//! A checkpoint as people have it: one `.npy`, `.safetensors` or `.gguf` file, a `.npz`
//! archive (its members `NAME.npy` are its tensors `NAME`), or a sharded safetensors
//! checkpoint given by its folder or its `model.safetensors.index.json`.
//!
//! [`open`] validates everything it can without reading tensor data: every shard's header,
//! and for an index, that every shard it names exists, holds the tensors the index puts in
//! it, and holds no tensor the index does not list there. Tensors are listed in checkpoint
//! order (the shards in the order of their names, each in its own order) and read one at a
//! time ([`Checkpoint::load`]) from memory-mapped shards (a `.npz` member by member), so a
//! report over a checkpoint holds one tensor's values at a time, whatever the checkpoint's
//! size.
//!
//! ```no_run
//! let ck = lowprec::io::checkpoint::open(std::path::Path::new("model/"))?;
//! for t in ck.tensors() {
//!     if let Some(x) = ck.load(t)? {
//!         println!("{} {:?} {}", x.name, x.shape, x.values.len());
//!     }
//! }
//! # Ok::<(), lowprec::Error>(())
//! ```

use super::gguf::{self, Gguf};
use super::npy::{self, Data};
use super::npz::{self, Npz};
use super::safetensors::{self as st, SafeTensors};
use crate::error::{Error, Result};
use crate::report::{widen16, Tensor, Values};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The largest index file read (the index of a 1T-parameter model is a few MB).
pub const MAX_INDEX_BYTES: u64 = 256 << 20;

/// One file of a checkpoint.
enum Shard {
    SafeTensors(SafeTensors),
    Gguf(Gguf),
    Npy(npy::Array),
    Npz(Npz),
}

/// A tensor of a checkpoint, not yet read.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRef {
    /// The name (a `.npy` file's stem; a `.npz` member's name without `.npy`).
    pub name: String,
    /// The shape in C order.
    pub shape: Vec<usize>,
    /// The stored type (`F32`, `BF16`, `F8_E4M3`, `Q4_K`, `float32`, …).
    pub dtype: String,
    /// Bytes stored.
    pub bytes: u64,
    /// Whether [`Checkpoint::load`] gives values (a floating or dequantizable tensor).
    pub is_float: bool,
    shard: usize,
}

/// An opened checkpoint: its shards, its tensors in order, its metadata.
pub struct Checkpoint {
    shards: Vec<(PathBuf, Shard)>,
    tensors: Vec<TensorRef>,
    index: Option<PathBuf>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("shards", &self.shard_paths())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl Checkpoint {
    /// The tensors in checkpoint order.
    pub fn tensors(&self) -> &[TensorRef] {
        &self.tensors
    }

    /// The shard files in order (one for a single file).
    pub fn shard_paths(&self) -> Vec<&Path> {
        self.shards.iter().map(|(p, _)| p.as_path()).collect()
    }

    /// The shard a tensor is stored in.
    pub fn shard_of(&self, t: &TensorRef) -> &Path {
        &self.shards[t.shard].0
    }

    /// The index file, for a checkpoint opened through one.
    pub fn index(&self) -> Option<&Path> {
        self.index.as_deref()
    }

    /// Only the tensors whose names match one of `include` (all when it is empty) and none
    /// of `exclude` (glob patterns: `*` any run of characters, `?` one character).
    pub fn retain(&mut self, include: &[String], exclude: &[String]) {
        self.tensors.retain(|t| {
            (include.is_empty() || include.iter().any(|p| glob(p, &t.name)))
                && !exclude.iter().any(|p| glob(p, &t.name))
        });
    }

    /// A tensor's values (binary32 for 8- to 32-bit floats and GGUF types, binary64 for
    /// F64), or `None` for a tensor without float values (integers, bools).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a GGUF type without a dequantizer (never listed as
    /// float).
    pub fn load(&self, t: &TensorRef) -> Result<Option<Tensor>> {
        if !t.is_float {
            return Ok(None);
        }
        let path = &self.shards[t.shard].0;
        let values = match &self.shards[t.shard].1 {
            Shard::SafeTensors(f) => {
                let v = f.get(&t.name).expect("listed tensors are in their shard");
                let (a, b) = f.file_range(&t.name).expect("listed");
                let bytes = read_range(path, a, b)?;
                let v = st::TensorView { bytes: &bytes, ..v };
                if v.dtype == st::Dtype::F64 {
                    Values::F64(v.to_f64_vec()?)
                } else {
                    Values::F32(v.to_f32_vec()?)
                }
            }
            Shard::Gguf(f) => {
                let i = f.tensor(&t.name).expect("listed tensors are in their file");
                let a = f.data_start() + i.offset;
                let bytes = read_range(path, a, a + i.size)?;
                let mut out = vec![0f32; i.elements() as usize];
                crate::ggml::dequantize(i.ggml_type, &bytes, &mut out)?;
                Values::F32(out)
            }
            Shard::Npy(a) => match npy_values(&a.data) {
                Some(v) => v,
                None => return Ok(None),
            },
            Shard::Npz(f) => {
                let m = f
                    .members()
                    .iter()
                    .find(|m| m.name == t.name)
                    .expect("listed tensors are in their archive");
                match npy_values(&f.read(m)?.data) {
                    Some(v) => v,
                    None => return Ok(None),
                }
            }
        };
        Ok(Some(Tensor {
            name: t.name.clone(),
            shape: t.shape.clone(),
            values,
        }))
    }
}

/// The values of a floating array (float16 / bfloat16 widened to binary32), else `None`.
fn npy_values(d: &Data) -> Option<Values> {
    Some(match d {
        Data::F32(x) => Values::F32(x.clone()),
        Data::F64(x) => Values::F64(x.clone()),
        Data::F16(h) => Values::F32(widen16(h, false)),
        Data::BF16(h) => Values::F32(widen16(h, true)),
        _ => return None,
    })
}

/// The bytes `[a, b)` of a file by ordinary reads: the page cache keeps them, not this
/// process's resident memory (the shards stay mapped, for their validated headers, but their
/// data is never touched through the maps).
fn read_range(path: &Path, a: u64, b: u64) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let cannot = |e: std::io::Error| bad(format!("cannot read {}: {e}", path.display()));
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    f.seek(SeekFrom::Start(a)).map_err(cannot)?;
    let mut v = vec![0u8; (b - a) as usize];
    f.read_exact(&mut v).map_err(cannot)?;
    Ok(v)
}

/// Whether `name` matches the glob `pattern` (`*`: any run, `?`: one character).
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // iterative matching with one backtrack point for the last `*`
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadFile(msg.into())
}

fn ext(p: &Path) -> Option<&str> {
    p.extension().and_then(|e| e.to_str())
}

fn open_shard(p: &Path) -> Result<Shard> {
    match ext(p) {
        Some("safetensors") => Ok(Shard::SafeTensors(st::open(p)?)),
        Some("gguf") => Ok(Shard::Gguf(gguf::open(p)?)),
        Some("npy") => Ok(Shard::Npy(npy::read(p)?)),
        Some("npz") => Ok(Shard::Npz(npz::open(p)?)),
        _ => Err(bad(format!(
            "{}: not a .npy, .npz, .safetensors or .gguf file, a checkpoint folder or a .index.json",
            p.display()
        ))),
    }
}

fn refs_of(shard: &Shard, i: usize, path: &Path) -> Result<Vec<TensorRef>> {
    Ok(match shard {
        Shard::SafeTensors(f) => f
            .iter()
            .map(|t| TensorRef {
                name: t.name.to_string(),
                shape: t.shape.to_vec(),
                dtype: t.dtype.name().to_string(),
                bytes: t.bytes.len() as u64,
                is_float: t.is_float() && !t.is_empty(),
                shard: i,
            })
            .collect(),
        Shard::Gguf(f) => f
            .tensors()
            .iter()
            .map(|t| TensorRef {
                name: t.name.clone(),
                shape: t.shape(),
                dtype: t.ggml_type.name().to_string(),
                bytes: t.size,
                is_float: t.ggml_type.can_dequantize() && t.elements() > 0,
                shard: i,
            })
            .collect(),
        Shard::Npy(a) => {
            let float = matches!(
                a.data,
                Data::F32(_) | Data::F64(_) | Data::F16(_) | Data::BF16(_)
            );
            let size = match a.data {
                Data::U8(_) => 1,
                Data::F16(_) | Data::BF16(_) | Data::U16(_) => 2,
                Data::F32(_) | Data::U32(_) => 4,
                Data::F64(_) | Data::U64(_) => 8,
            };
            vec![TensorRef {
                name: path
                    .file_stem()
                    .map_or("array".into(), |s| s.to_string_lossy().into_owned()),
                shape: a.shape.clone(),
                dtype: a.data.dtype_name().to_string(),
                bytes: (a.data.len() * size) as u64,
                is_float: float && !a.data.is_empty(),
                shard: i,
            }]
        }
        Shard::Npz(f) => f
            .members()
            .iter()
            .map(|m| TensorRef {
                name: m.name.clone(),
                shape: m.header.shape.clone(),
                dtype: m.header.dtype_name().to_string(),
                bytes: m.header.data_len as u64,
                is_float: m.header.is_float() && m.header.data_len > 0,
                shard: i,
            })
            .collect(),
    })
}

/// Open a checkpoint: a `.npy`, `.npz`, `.safetensors` or `.gguf` file, a folder of `.safetensors`
/// shards (through its `model.safetensors.index.json` when it has one, else every
/// `.safetensors` file in it), or an index file.
///
/// # Errors
///
/// [`Error::BadFile`] naming the problem: an unreadable or invalid file or shard; an index
/// that is not JSON with a `weight_map` object of strings, or names a shard outside its
/// folder, a missing shard or a tensor missing from its shard; a shard holding a tensor the
/// index does not put there; a tensor name in two shards; a folder without shards.
pub fn open(path: &Path) -> Result<Checkpoint> {
    let meta =
        std::fs::metadata(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        let index = path.join("model.safetensors.index.json");
        if index.is_file() {
            return open_index(&index);
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| ext(p) == Some("safetensors") && p.is_file())
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(bad(format!(
                "{}: a folder with no .safetensors shards and no model.safetensors.index.json",
                path.display()
            )));
        }
        return from_shards(files, None);
    }
    if path.to_string_lossy().ends_with(".index.json") {
        return open_index(path);
    }
    from_shards(vec![path.to_path_buf()], None)
}

fn from_shards(files: Vec<PathBuf>, index: Option<PathBuf>) -> Result<Checkpoint> {
    let mut shards = Vec::with_capacity(files.len());
    let mut tensors = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, p) in files.into_iter().enumerate() {
        let s = open_shard(&p)?;
        for t in refs_of(&s, i, &p)? {
            if let Some(&j) = seen.get(&t.name) {
                let first = shards
                    .get(j)
                    .map_or(p.display().to_string(), |(q, _): &(PathBuf, Shard)| {
                        q.display().to_string()
                    });
                return Err(bad(format!(
                    "tensor {} is in two shards: {first} and {}",
                    t.name,
                    p.display()
                )));
            }
            seen.insert(t.name.clone(), i);
            tensors.push(t);
        }
        shards.push((p, s));
    }
    Ok(Checkpoint {
        shards,
        tensors,
        index,
    })
}

fn open_index(index: &Path) -> Result<Checkpoint> {
    let at = |m: String| bad(format!("{}: {m}", index.display()));
    super::check_source(index)?;
    let len = std::fs::metadata(index)
        .map_err(|e| at(format!("cannot read it: {e}")))?
        .len();
    if len > MAX_INDEX_BYTES {
        return Err(at(format!(
            "{len} bytes, more than an index can need ({MAX_INDEX_BYTES})"
        )));
    }
    let text = std::fs::read_to_string(index).map_err(|e| at(format!("cannot read it: {e}")))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| at(format!("not JSON: {e}")))?;
    let map = v
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| at("no \"weight_map\" object".into()))?;
    let dir = index.parent().unwrap_or(Path::new("."));
    let mut by_shard: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, file) in map {
        let file = file
            .as_str()
            .ok_or_else(|| at(format!("the shard of {name} is not a string")))?;
        let fp = Path::new(file);
        if fp.components().count() != 1 || fp.is_absolute() || file == ".." || file == "." {
            return Err(at(format!(
                "the shard {file:?} of {name} is not a file name in the index's folder"
            )));
        }
        by_shard
            .entry(file.to_string())
            .or_default()
            .push(name.clone());
    }
    let files: Vec<PathBuf> = by_shard.keys().map(|f| dir.join(f)).collect();
    for f in &files {
        if !f.is_file() {
            return Err(at(format!(
                "it names the shard {}, which does not exist",
                f.display()
            )));
        }
    }
    let ck = from_shards(files, Some(index.to_path_buf()))?;
    for ((file, names), (path, shard)) in by_shard.iter().zip(&ck.shards) {
        let Shard::SafeTensors(f) = shard else {
            return Err(at(format!("the shard {file} is not a .safetensors file")));
        };
        for n in names {
            if f.get(n).is_none() {
                return Err(at(format!(
                    "tensor {n} is not in its shard {}",
                    path.display()
                )));
            }
        }
        for n in f.names() {
            if map.get(n).and_then(|v| v.as_str()) != Some(file.as_str()) {
                return Err(at(format!(
                    "the shard {} holds tensor {n}, which the index does not put there",
                    path.display()
                )));
            }
        }
    }
    Ok(ck)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_shells_do() {
        assert!(glob("*.weight", "layer.0.attn.weight"));
        assert!(!glob("*.weight", "layer.0.attn.bias"));
        assert!(glob("layer.?.*", "layer.3.mlp"));
        assert!(!glob("layer.?.*", "layer.12.mlp"));
        assert!(glob("*attn*", "x.attn.y"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXbYbZc"));
        assert!(!glob("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn an_npz_is_a_checkpoint_of_its_members_and_quantizes_as_safetensors() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let w: Vec<f32> = (0..128).map(|i| (i as f32 - 64.0) / 32.0).collect();
        let b: Vec<u16> = (0..64).map(|i| 0x3f80 + i).collect();
        let arrays = [
            ("w", vec![2usize, 64], Data::F32(w.clone())),
            ("b", vec![2, 32], Data::BF16(b.clone())),
            ("ids", vec![3], Data::U64(vec![1, 2, 3])),
        ];
        let npz = dir.path().join("m.npz");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&npz).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (n, shape, data) in &arrays {
            z.start_file(format!("{n}.npy"), opts).unwrap();
            let a = npy::Array {
                shape: shape.clone(),
                data: data.clone(),
            };
            z.write_all(&npy::to_bytes(&a)).unwrap();
        }
        z.finish().unwrap();
        let ck = open(&npz).unwrap();
        let names: Vec<&str> = ck.tensors().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["w", "b", "ids"]);
        let t = &ck.tensors()[1];
        assert_eq!(
            (t.dtype.as_str(), t.bytes, t.is_float),
            ("bfloat16", 128, true)
        );
        assert!(!ck.tensors()[2].is_float);
        let Some(Tensor {
            values: Values::F32(v),
            ..
        }) = ck.load(&ck.tensors()[0]).unwrap()
        else {
            panic!("float32 values")
        };
        assert_eq!(v, w);
        assert!(ck.load(&ck.tensors()[2]).unwrap().is_none());

        // quantize: the same checkpoint as from a safetensors file of the same arrays
        let wb: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        let bb: Vec<u8> = b.iter().flat_map(|x| x.to_le_bytes()).collect();
        let ib: Vec<u8> = [1u64, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
        let stf = dir.path().join("m.safetensors");
        st::write(
            &stf,
            &[
                st::TensorOut::new("w", st::Dtype::F32, &[2, 64], &wb),
                st::TensorOut::new("b", st::Dtype::BF16, &[2, 32], &bb),
                st::TensorOut::new("ids", st::Dtype::U64, &[3], &ib),
            ],
            &BTreeMap::new(),
        )
        .unwrap();
        let s = crate::scheme::Scheme::parse("mxfp4").unwrap();
        let (qa, qb) = (
            dir.path().join("a.safetensors"),
            dir.path().join("b.safetensors"),
        );
        let (ra, ca) = super::super::quantized::quantize_file(&npz, &s, &qa).unwrap();
        let (rb, cb) = super::super::quantized::quantize_file(&stf, &s, &qb).unwrap();
        assert_eq!((ra, ca), (rb, cb));
        assert_eq!(std::fs::read(&qa).unwrap(), std::fs::read(&qb).unwrap());
    }
}
