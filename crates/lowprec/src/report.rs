//! The quantization report: what each scheme does to each tensor — bits per element (scale
//! overhead included), relative error, SQNR, max abs error, the shares of elements saturated
//! and flushed to zero — one [`Row`] per tensor and scheme, and the [`totals`] per scheme.
//!
//! Tensors come from `.npy` / `.npz` / `.safetensors` files ([`load`]), from memory ([`Tensor::new`]),
//! or from the built-in set ([`builtin`]: deterministic stand-ins for LLM weights and
//! activations). The `lowprec report` command and the Python `lowprec.report` both print or
//! return exactly these rows.
//!
//! ```
//! use lowprec::report::{self, Tensor, Values};
//!
//! let x: Vec<f32> = (0..256).map(|i| ((i as f32) * 0.37).sin()).collect();
//! let t = Tensor::new("sine", vec![4, 64], Values::F32(x))?;
//! let schemes = report::schemes(&["fp8-e4m3", "mxfp4"])?;
//! let rows = report::rows(&[t], &schemes, |_, _| {});
//! assert_eq!(rows.len(), 2);
//! // 8-bit elements + one binary32 scale for the tensor
//! assert_eq!((rows[0].scheme.as_str(), rows[0].bits_per_element), ("fp8-e4m3", 8.0 + 32.0 / 256.0));
//! assert_eq!(rows[1].bits_per_element, 4.25); // 4-bit elements + one 8-bit scale per 32
//! assert!(rows[0].sqnr_db > rows[1].sqnr_db);  // FP8 keeps more than MXFP4
//! let all = report::totals(&rows, &schemes);
//! assert_eq!((all[1].tensor.as_str(), all[1].elements), ("(all)", 256));
//! # Ok::<(), lowprec::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::ggml::{self, GgmlType};
use crate::io::checkpoint::{Checkpoint, TensorRef};
use crate::io::npy::{self, Data};
use crate::scheme::{Rotation, Scheme};
use crate::stats::{ErrorStats, Wire};
use crate::{Float, FloatFormat};
use rayon::prelude::*;
use std::path::Path;

/// The schemes of a report when none is given.
pub const DEFAULT_SCHEMES: [&str; 10] = [
    "fp16",
    "bf16",
    "fp8-e4m3",
    "fp8-e5m2",
    "mxfp8",
    "mxfp6",
    "mxfp4",
    "nvfp4",
    "int8",
    "int4:group=128",
];

/// The values of a tensor: binary32 (float16 and bfloat16 widen into it exactly) or
/// binary64.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// float16, bfloat16 and float32 values.
    F32(Vec<f32>),
    /// float64 values.
    F64(Vec<f64>),
}

impl Values {
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One tensor of a report: a name, a shape (blocks and groups run along its last axis) and
/// its values in C order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Name (the file stem of a `.npy` file, the name in a `.safetensors` file).
    pub name: String,
    /// Shape (empty for a 0-d array).
    pub shape: Vec<usize>,
    /// Values.
    pub values: Values,
}

impl Tensor {
    /// A tensor whose shape holds exactly its values.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the product of `shape` is not the number of values.
    pub fn new(name: impl Into<String>, shape: Vec<usize>, values: Values) -> Result<Tensor> {
        let name = name.into();
        let n: usize = shape.iter().product();
        if n != values.len() {
            return Err(Error::InvalidArgument(format!(
                "tensor {name}: the shape {shape:?} holds {n} elements, but there are {}",
                values.len()
            )));
        }
        Ok(Tensor {
            name,
            shape,
            values,
        })
    }

    /// The length of the last axis (1 for a 0-d tensor, at least 1): the rows that blocks
    /// and groups run along.
    pub fn row_len(&self) -> usize {
        self.shape.last().copied().unwrap_or(1).max(1)
    }
}

/// One line of the report: a tensor through a scheme (or, from [`totals`], every tensor
/// through it, with `tensor` `"(all)"` and an empty shape). The figures are those of
/// [`ErrorStats`] (formulas and the treatment of NaN, overflow and all-zero data there).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The tensor's name.
    pub tensor: String,
    /// The tensor's shape.
    pub shape: Vec<usize>,
    /// The scheme as given (its label in the report).
    pub scheme: String,
    /// Elements.
    pub elements: u64,
    /// Bits per element, scales and zero points included.
    pub bits_per_element: f64,
    /// `‖q − x‖ / ‖x‖` (NaN when nothing could be compared or the scheme failed).
    pub rel_error: f64,
    /// `10 · log10(‖x‖² / ‖q − x‖²)` dB.
    pub sqnr_db: f64,
    /// `Σ q·x / (‖q‖ ‖x‖)`.
    pub cosine: f64,
    /// `sqrt(Σ (q − x)² / n)`.
    pub rmse: f64,
    /// `Σ (q − x)² / Σ x²`.
    pub nmse: f64,
    /// `max |q − x|`.
    pub max_abs_error: f64,
    /// Percentiles of `|q − x|` (the upper edges of their histogram bins).
    pub p50: f64,
    /// See [`Row::p50`].
    pub p99: f64,
    /// See [`Row::p50`].
    pub p999: f64,
    /// The share of elements saturated or clipped to the largest magnitude.
    pub saturated_share: f64,
    /// The share of nonzero elements flushed to zero.
    pub flushed_share: f64,
    /// NaN outputs.
    pub nan: u64,
    /// Why the scheme could not quantize the tensor (the numbers are then NaN or zero).
    pub error: Option<String>,
    /// The error statistics behind the figures (mergeable).
    pub stats: ErrorStats,
    /// `bits_per_element · elements`.
    pub bits_total: f64,
    /// Elements saturated or clipped.
    pub saturated: u64,
    /// Elements flushed to zero.
    pub flushed: u64,
}

impl Row {
    /// The row's binary64 figures in the order of `lowprec report --csv` / `--json`: bits per
    /// element, relative error, SQNR dB, cosine, RMSE, NMSE, max abs error, p50 / p99 /
    /// p99.9 abs error, saturated share, flushed share.
    pub fn figures(&self) -> [f64; 12] {
        [
            self.bits_per_element,
            self.rel_error,
            self.sqnr_db,
            self.cosine,
            self.rmse,
            self.nmse,
            self.max_abs_error,
            self.p50,
            self.p99,
            self.p999,
            self.saturated_share,
            self.flushed_share,
        ]
    }

    /// A row of the figures of `stats`.
    fn fill(&mut self, stats: ErrorStats) {
        self.rel_error = stats.rel_error();
        self.sqnr_db = stats.sqnr_db();
        self.cosine = stats.cosine();
        self.rmse = stats.rmse();
        self.nmse = stats.nmse();
        self.max_abs_error = stats.max_abs();
        self.p50 = stats.quantile(0.5);
        self.p99 = stats.quantile(0.99);
        self.p999 = stats.quantile(0.999);
        self.stats = stats;
    }

    fn empty(tensor: &str, shape: Vec<usize>, scheme: &str, elements: u64) -> Row {
        Row {
            tensor: tensor.into(),
            shape,
            scheme: scheme.into(),
            elements,
            bits_per_element: f64::NAN,
            rel_error: f64::NAN,
            sqnr_db: f64::NAN,
            cosine: f64::NAN,
            rmse: f64::NAN,
            nmse: f64::NAN,
            max_abs_error: f64::NAN,
            p50: f64::NAN,
            p99: f64::NAN,
            p999: f64::NAN,
            saturated_share: 0.0,
            flushed_share: 0.0,
            nan: 0,
            error: None,
            stats: ErrorStats::default(),
            bits_total: 0.0,
            saturated: 0,
            flushed: 0,
        }
    }
}

/// `n` deterministic normal(0, 1) samples (SplitMix64 and Box–Muller), the same on every
/// machine.
pub fn normal_samples(n: usize, seed: u64) -> Vec<f64> {
    let mut u = uniform_stream(seed);
    (0..n)
        .map(|_| (-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos())
        .collect()
}

/// `n` deterministic uniform samples in (0, 1) (SplitMix64, 53 bits).
pub fn uniform_samples(n: usize, seed: u64) -> Vec<f64> {
    let mut u = uniform_stream(seed);
    (0..n).map(|_| u()).collect()
}

fn uniform_stream(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (((z ^ (z >> 31)) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// The built-in tensors, deterministic stand-ins for LLM weights and activations (float32):
/// `gaussian_weight` (1024×1024, normal × 0.02), `heavy_tailed_activation` (512×1024,
/// Student-t with 4 degrees of freedom and four outlier channels × 40), `near_constant`
/// (256×1024, 1 + normal × 1e-4) and `subnormal_range` (256×1024, normal × 2e-6).
pub fn builtin() -> Vec<Tensor> {
    let g = |n, seed| -> Vec<f32> {
        normal_samples(n, seed)
            .into_iter()
            .map(|v| v as f32)
            .collect()
    };
    let weight: Vec<f32> = g(1024 * 1024, 1).iter().map(|v| v * 0.02).collect();
    // heavy-tailed activations (normal / sqrt(chi2_4 / 4)) with four outlier channels
    let (z, c) = (g(512 * 1024, 2), g(512 * 1024 * 4, 3));
    let act: Vec<f32> = (0..512 * 1024)
        .map(|i| {
            let chi: f32 = c[4 * i..4 * i + 4].iter().map(|v| v * v).sum::<f32>() / 4.0;
            let v = z[i] / chi.max(1e-3).sqrt();
            if matches!(i % 1024, 7 | 300 | 511 | 900) {
                v * 40.0
            } else {
                v
            }
        })
        .collect();
    let near: Vec<f32> = g(256 * 1024, 4).iter().map(|v| 1.0 + v * 1e-4).collect();
    let tiny: Vec<f32> = g(256 * 1024, 5).iter().map(|v| v * 2e-6).collect();
    let t = |name: &str, shape: Vec<usize>, v: Vec<f32>| Tensor {
        name: name.into(),
        shape,
        values: Values::F32(v),
    };
    vec![
        t("gaussian_weight", vec![1024, 1024], weight),
        t("heavy_tailed_activation", vec![512, 1024], act),
        t("near_constant", vec![256, 1024], near),
        t("subnormal_range", vec![256, 1024], tiny),
    ]
}

/// float16 / bfloat16 bits to binary32, exactly.
///
/// ```
/// assert_eq!(lowprec::report::widen16(&[0x3c00, 0xc000], false), [1.0, -2.0]);
/// assert_eq!(lowprec::report::widen16(&[0x3f80], true), [1.0]);
/// ```
pub fn widen16(bits: &[u16], bf16: bool) -> Vec<f32> {
    if bf16 {
        bits.iter()
            .map(|&b| f32::from_bits((b as u32) << 16))
            .collect()
    } else {
        crate::decode_vec(&FloatFormat::FP16, bits).expect("fp16 codes fit")
    }
}

/// The tensors of one checkpoint ([`crate::io::checkpoint::open`]): every non-empty
/// floating tensor of a `.safetensors` file or of a sharded checkpoint (its folder or its
/// `.index.json`; float64 stays float64, the rest, FP8 included, widen to float32), every
/// tensor of a `.gguf` file that ggml can dequantize (its dequantized binary32 values;
/// integer tensors are left out), every floating array of a `.npz` archive (named as its
/// members, without `.npy`), or the array of a `.npy` file, named by the file stem
/// (float16 / bfloat16 widen to float32).
///
/// # Errors
///
/// [`Error::BadFile`] for a file that cannot be read or parsed; [`Error::InvalidArgument`]
/// for a `.npy` file of integers.
pub fn load(path: &Path) -> Result<Vec<Tensor>> {
    let mut out = Vec::new();
    if path.extension().and_then(|e| e.to_str()) != Some("npy") {
        let ck = crate::io::checkpoint::open(path)?;
        for t in ck.tensors() {
            if let Some(x) = ck.load(t)? {
                out.push(x);
            }
        }
    } else {
        let a = npy::read(path)?;
        let name = path
            .file_stem()
            .map_or("array".into(), |s| s.to_string_lossy().into_owned());
        let values = match a.data {
            Data::F32(x) => Values::F32(x),
            Data::F64(x) => Values::F64(x),
            Data::F16(h) => Values::F32(widen16(&h, false)),
            Data::BF16(h) => Values::F32(widen16(&h, true)),
            d => {
                return Err(Error::InvalidArgument(format!(
                    "{}: report takes floating arrays, not {}",
                    path.display(),
                    d.dtype_name()
                )))
            }
        };
        out.push(Tensor {
            name,
            shape: a.shape,
            values,
        });
    }
    Ok(out)
}

/// A scheme as the report runs it: partial edge blocks allowed, so that every tensor gets
/// a number ([`Scheme::padded`]).
pub fn padded(s: Scheme) -> Scheme {
    s.padded()
}

/// Parse scheme names into `(label, scheme)` pairs for [`rows`] ([`padded`]); no names:
/// [`DEFAULT_SCHEMES`].
///
/// # Errors
///
/// The parse error of the first name that is not a scheme.
pub fn schemes<S: AsRef<str>>(names: &[S]) -> Result<Vec<(String, Scheme)>> {
    if names.is_empty() {
        return schemes(&DEFAULT_SCHEMES);
    }
    names
        .iter()
        .map(|s| Ok((s.as_ref().to_string(), padded(Scheme::parse(s.as_ref())?))))
        .collect()
}

/// Parse names into `(label, method)` pairs for [`method_rows`]: schemes and `gguf:TYPE`;
/// no names: [`DEFAULT_SCHEMES`].
///
/// # Errors
///
/// The parse error of the first name that is neither.
pub fn methods<S: AsRef<str>>(names: &[S]) -> Result<Vec<(String, Method)>> {
    if names.is_empty() {
        return methods(&DEFAULT_SCHEMES);
    }
    names
        .iter()
        .map(|s| Ok((s.as_ref().to_string(), Method::parse(s.as_ref())?)))
        .collect()
}

/// Where the errors of a rotated scheme (`rht16+…`) are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Basis {
    /// After rotating back: `q` against the input `x` (the error the model sees).
    #[default]
    Model,
    /// In the rotated basis: the quantized rotated values against the rotated input
    /// `x · diag(s) · H_b / √b` computed in binary64 (for `:bf16` rotations the BF16
    /// rounding of the rotation counts as error). The rotation is orthogonal, so the sums
    /// of squares agree with the model basis up to rounding; the largest error and the
    /// percentiles are those of the quantizer's own domain. Schemes without a rotation are
    /// the same in both.
    Rotated,
}

/// One tensor through one scheme, labelled `label`: a scheme that cannot quantize it gives
/// a row with [`Row::error`] set.
pub fn row(t: &Tensor, scheme: &Scheme, label: &str) -> Row {
    row_in(t, scheme, label, Basis::Model)
}

/// [`row`] with the errors measured in `basis`.
pub fn row_in(t: &Tensor, scheme: &Scheme, label: &str, basis: Basis) -> Row {
    match &t.values {
        Values::F32(x) => row_of(t, x, scheme, label, basis),
        Values::F64(x) => row_of(t, x, scheme, label, basis),
    }
}

fn row_of<I: Scratch>(t: &Tensor, x: &[I], scheme: &Scheme, label: &str, basis: Basis) -> Row {
    let n = x.len() as u64;
    let mut row = Row::empty(&t.name, t.shape.clone(), label, n);
    row.bits_per_element = scheme.bits_per_element(&t.shape);
    row.bits_total = row.bits_per_element * n as f64;
    let rotated = match (basis, scheme.rotation) {
        (Basis::Rotated, Some(r)) => Some(r),
        (Basis::Rotated | Basis::Model, _) => None,
    };
    if let Some(r) = rotated {
        // the inner scheme on the rotated input, against the exact rotation
        let cols = t.row_len();
        let inner = Scheme {
            rotation: None,
            ..*scheme
        };
        let res = scheme.grid(&t.shape).and_then(|_| {
            let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
            let exact = crate::scheme::rotate::forward(&Rotation { bf16: false, ..r }, &xf, cols);
            let xr: Vec<f64> = if r.bf16 {
                crate::scheme::rotate::forward_bf16(&r, x)
                    .into_iter()
                    .map(f64::from)
                    .collect()
            } else {
                exact.clone()
            };
            Ok((inner.apply(&xr, &t.shape)?, exact))
        });
        match res {
            Ok((q, exact)) => record(&mut row, &q, &exact),
            Err(e) => row.error = Some(e.to_string()),
        }
        return row;
    }
    let res = scheme.encoded(&t.shape).and_then(|mut enc| {
        I::with_scratch(x.len(), |values| {
            let counts = if !scheme.element.has_codes() {
                scheme.quantize_into(x, &t.shape, values, &mut [] as &mut [u16], &mut enc)?
            } else if scheme.code_bits() <= 8 {
                with_scratch(&CODES_U8, x.len(), |c| {
                    scheme.quantize_into(x, &t.shape, values, c, &mut enc)
                })?
            } else {
                with_scratch(&CODES_U16, x.len(), |c| {
                    scheme.quantize_into(x, &t.shape, values, c, &mut enc)
                })?
            };
            Ok((ErrorStats::of(values, x), counts))
        })
    });
    match res {
        Ok((stats, counts)) => record_counts(&mut row, stats, &counts),
        Err(e) => row.error = Some(e.to_string()),
    }
    row
}

/// Fill `row` with the statistics of `q` against `reference` and its counts.
fn record<I: Float>(row: &mut Row, q: &crate::scheme::Quantized<I>, reference: &[I]) {
    record_counts(row, ErrorStats::of(&q.values, reference), &q.counts);
}

/// Fill `row` with `stats` and the scheme's `counts`.
fn record_counts(row: &mut Row, stats: ErrorStats, counts: &crate::scheme::Counts) {
    let n = row.elements.max(1) as f64;
    row.fill(stats);
    row.saturated = counts.saturated;
    row.flushed = counts.flushed;
    row.saturated_share = counts.saturated as f64 / n;
    row.flushed_share = counts.flushed as f64 / n;
    row.nan = counts.nan;
}

// Scratch buffers of the report, one set per thread, kept from row to row: a row's
// dequantized values and codes are written into memory already mapped. (Fresh buffers the
// size of a large tensor cost a page fault per 4 KiB, which measured more than the
// quantization itself: 35–40 % of a report's time was the kernel's.) A buffer is taken out
// of its cell while in use, so a nested call on the same thread (rayon runs other jobs
// while one waits) finds an empty one and allocates its own: never a double borrow.
thread_local! {
    static VALUES_F32: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
    static VALUES_F64: std::cell::Cell<Vec<f64>> = const { std::cell::Cell::new(Vec::new()) };
    static CODES_U8: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    static CODES_U16: std::cell::Cell<Vec<u16>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `f` on `n` elements of this thread's scratch buffer `cell` (contents unspecified).
fn with_scratch<T: Copy + Default + 'static, R>(
    cell: &'static std::thread::LocalKey<std::cell::Cell<Vec<T>>>,
    n: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    let mut buf = cell.with(|c| c.take());
    if buf.len() < n {
        buf.resize(n, T::default());
    }
    let r = f(&mut buf[..n]);
    // keep the larger of this buffer and one a nested call may have left
    cell.with(|c| {
        let other = c.take();
        c.set(if other.len() > buf.len() { other } else { buf });
    });
    r
}

/// The element types of report tensors, each with its thread's scratch values.
trait Scratch: Float {
    /// `f` on `n` scratch values of this type.
    fn with_scratch<R>(n: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;
}

impl Scratch for f32 {
    fn with_scratch<R>(n: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
        with_scratch(&VALUES_F32, n, f)
    }
}

impl Scratch for f64 {
    fn with_scratch<R>(n: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
        with_scratch(&VALUES_F64, n, f)
    }
}

/// What a report row applies to a tensor: a scheme of [`crate::scheme`], or a ggml type
/// quantized and dequantized bit for bit as llama.cpp's reference (`gguf:Q4_0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// A quantization scheme.
    Scheme(Scheme),
    /// A ggml type with a reference quantizer ([`GgmlType::can_quantize`]).
    Ggml(GgmlType),
}

impl Method {
    /// `gguf:TYPE` (any case) for a ggml type, anything else as a scheme name.
    ///
    /// # Errors
    ///
    /// An unknown ggml type or a type without a quantizer; the scheme parser's error.
    pub fn parse(s: &str) -> Result<Method> {
        match s.get(..5) {
            Some(p) if p.eq_ignore_ascii_case("gguf:") => {
                let t: GgmlType = s[5..].parse()?;
                if !t.can_quantize() {
                    // the error names the types that can
                    ggml::quantize(t, &[], &mut [])?;
                }
                Ok(Method::Ggml(t))
            }
            _ => Ok(Method::Scheme(Scheme::parse(s)?)),
        }
    }
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method> {
        Method::parse(s)
    }
}

/// One tensor through a ggml type: quantized as the reference does, dequantized, compared
/// with the tensor. The last axis must be a whole number of the type's blocks (llama.cpp
/// refuses other rows too); binary64 tensors are rounded to binary32 first (the reference
/// quantizes binary32) and compared in binary64.
pub fn ggml_row(t: &Tensor, ty: GgmlType, label: &str) -> Row {
    let n = t.values.len();
    let mut row = Row::empty(&t.name, t.shape.clone(), label, n as u64);
    row.bits_per_element = ty.bits_per_element();
    row.bits_total = row.bits_per_element * n as f64;
    if !t.row_len().is_multiple_of(ty.block_size()) {
        row.error = Some(format!(
            "rows of {} elements are not whole {} blocks of {}",
            t.row_len(),
            ty.name(),
            ty.block_size()
        ));
        return row;
    }
    let x32: Vec<f32> = match &t.values {
        Values::F32(x) => x.clone(),
        Values::F64(x) => x.iter().map(|&v| v as f32).collect(),
    };
    let mut bytes = vec![0u8; n / ty.block_size() * ty.type_size()];
    let mut y = vec![0f32; n];
    let r = ggml::quantize(ty, &x32, &mut bytes).and_then(|_| ggml::dequantize(ty, &bytes, &mut y));
    if let Err(e) = r {
        row.error = Some(e.to_string());
        return row;
    }
    match &t.values {
        Values::F32(x) => record_values(&mut row, &y, x),
        Values::F64(x) => {
            let y64: Vec<f64> = y.iter().map(|&v| v as f64).collect();
            record_values(&mut row, &y64, x)
        }
    }
    row
}

/// One tensor against other values of it (another file's dequantized tensor), labelled
/// `label`, with `bits_per_element` as that file stores it.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the element counts differ.
pub fn compare_row(t: &Tensor, approx: &[f32], label: &str, bits_per_element: f64) -> Result<Row> {
    let n = t.values.len();
    if approx.len() != n {
        return Err(Error::InvalidArgument(format!(
            "tensor {}: {} elements in the reference, {} in {label}",
            t.name,
            n,
            approx.len()
        )));
    }
    let mut row = Row::empty(&t.name, t.shape.clone(), label, n as u64);
    row.bits_per_element = bits_per_element;
    row.bits_total = bits_per_element * n as f64;
    match &t.values {
        Values::F32(x) => record_values(&mut row, approx, x),
        Values::F64(x) => {
            let y64: Vec<f64> = approx.iter().map(|&v| v as f64).collect();
            record_values(&mut row, &y64, x)
        }
    }
    Ok(row)
}

/// Fill `row` with the statistics of `y` against `x`; flushed: nonzero inputs that became 0.
fn record_values<I: Float>(row: &mut Row, y: &[I], x: &[I]) {
    let n = x.len().max(1) as f64;
    row.fill(ErrorStats::of(y, x));
    row.flushed = x
        .iter()
        .zip(y)
        .filter(|(a, b)| a.to_f64() != 0.0 && b.to_f64() == 0.0)
        .count() as u64;
    row.flushed_share = row.flushed as f64 / n;
    row.nan = y.iter().filter(|v| v.to_f64().is_nan()).count() as u64;
}

/// [`rows_in`] over methods: schemes (run [`padded`]) and ggml types.
pub fn method_rows(
    tensors: &[Tensor],
    methods: &[(String, Method)],
    basis: Basis,
    done: impl Fn(&Tensor, &str) + Sync,
) -> Vec<Row> {
    let jobs: Vec<(usize, usize)> = (0..tensors.len())
        .flat_map(|t| (0..methods.len()).map(move |s| (t, s)))
        .collect();
    jobs.par_iter()
        .map(|&(ti, si)| {
            let t = &tensors[ti];
            let (label, m) = &methods[si];
            let r = match m {
                Method::Scheme(s) => row_in(t, &s.padded(), label, basis),
                Method::Ggml(ty) => ggml_row(t, *ty, label),
            };
            done(t, label);
            r
        })
        .collect()
}

/// Every tensor through every scheme, in parallel, tensor-major (the rows of tensor 0
/// first, in the order of `schemes`); `done(tensor, label)` is called as each row is
/// finished (from worker threads, in any order: a progress bar).
pub fn rows(
    tensors: &[Tensor],
    schemes: &[(String, Scheme)],
    done: impl Fn(&Tensor, &str) + Sync,
) -> Vec<Row> {
    rows_in(tensors, schemes, Basis::Model, done)
}

/// [`rows`] with the errors measured in `basis`.
pub fn rows_in(
    tensors: &[Tensor],
    schemes: &[(String, Scheme)],
    basis: Basis,
    done: impl Fn(&Tensor, &str) + Sync,
) -> Vec<Row> {
    let jobs: Vec<(usize, usize)> = (0..tensors.len())
        .flat_map(|t| (0..schemes.len()).map(move |s| (t, s)))
        .collect();
    jobs.par_iter()
        .map(|&(ti, si)| {
            let t = &tensors[ti];
            let (label, s) = &schemes[si];
            let r = row_in(t, s, label, basis);
            done(t, label);
            r
        })
        .collect()
}

/// One row per scheme over every tensor (`tensor` `"(all)"`, empty shape): the error
/// statistics merged, bits per element weighted by elements; rows with an error are left
/// out. (Only the labels of `schemes` are used: any list of labelled methods will do.)
pub fn totals<S>(rows: &[Row], schemes: &[(String, S)]) -> Vec<Row> {
    schemes
        .iter()
        .map(|(label, _)| {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| &r.scheme == label && r.error.is_none())
                .collect();
            let n: u64 = rs.iter().map(|r| r.elements).sum();
            let mut t = Row::empty("(all)", vec![], label, n);
            t.fill(
                rs.iter()
                    .fold(ErrorStats::default(), |a, r| a.merge(&r.stats)),
            );
            // (a fold from +0: an empty sum of f64 is −0, which would print as "-0.000")
            t.bits_per_element = rs.iter().fold(0.0, |a, r| a + r.bits_total) / n.max(1) as f64;
            t.saturated = rs.iter().map(|r| r.saturated).sum();
            t.flushed = rs.iter().map(|r| r.flushed).sum();
            t.saturated_share = t.saturated as f64 / n.max(1) as f64;
            t.flushed_share = t.flushed as f64 / n.max(1) as f64;
            t.nan = rs.iter().map(|r| r.nan).sum();
            t
        })
        .collect()
}

/// Every floating tensor of `ck`, in checkpoint order, read one at a time and handed to
/// `f` with its entry (then dropped): the streaming loop of the report, whose peak memory is
/// one tensor and what `f` makes of it. Returns the number of tensors handed over.
///
/// # Errors
///
/// A tensor that cannot be read ([`Error::BadFile`], naming its shard), or `f`'s error.
pub fn each_tensor<E: From<Error>>(
    ck: &Checkpoint,
    mut f: impl FnMut(&TensorRef, Tensor) -> std::result::Result<(), E>,
) -> std::result::Result<usize, E> {
    let mut n = 0;
    for r in ck.tensors() {
        let loaded = ck
            .load(r)
            .map_err(|e| Error::BadFile(format!("reading {}: {e}", ck.shard_of(r).display())))?;
        if let Some(t) = loaded {
            f(r, t)?;
            n += 1;
        }
    }
    Ok(n)
}

/// The rows of the floating tensors of `ck` (those named in `names`, or all), tensor-major
/// in checkpoint order, each tensor read, reported through every method and dropped before
/// the next ([`each_tensor`], [`method_rows`]). A tensor's rows are the same whichever
/// process computes them, so rows computed tensor by tensor elsewhere (Ray tasks) and put
/// back in checkpoint order give bit-identical [`totals`].
///
/// # Errors
///
/// A name in `names` that is not a floating tensor of `ck` ([`Error::InvalidArgument`]), or
/// a tensor that cannot be read.
pub fn checkpoint_rows(
    ck: &Checkpoint,
    names: Option<&[String]>,
    methods: &[(String, Method)],
    basis: Basis,
) -> Result<Vec<Row>> {
    if let Some(names) = names {
        if let Some(n) = names
            .iter()
            .find(|n| !ck.tensors().iter().any(|t| t.is_float && &&t.name == n))
        {
            return Err(Error::InvalidArgument(format!(
                "`{n}` is not a floating tensor of this checkpoint; plan the tasks from its \
                 tensor list"
            )));
        }
    }
    let mut rows = Vec::new();
    each_tensor(ck, |r, t| {
        if names.is_none_or(|ns| ns.contains(&r.name)) {
            rows.extend(method_rows(
                std::slice::from_ref(&t),
                methods,
                basis,
                |_, _| {},
            ));
        }
        Ok::<(), Error>(())
    })?;
    Ok(rows)
}

/// A tag that starts the bytes of [`rows_to_bytes`] (format version 2).
const ROWS_MAGIC: &[u8; 8] = b"lprows02";

/// Rows as bytes, every field and the unrounded statistics included, so that rows computed
/// in other processes ([`checkpoint_rows`] in a Ray task) come back equal
/// ([`rows_from_bytes`]) and merge into bit-identical [`totals`].
pub fn rows_to_bytes(rows: &[Row]) -> Vec<u8> {
    let mut out = ROWS_MAGIC.to_vec();
    let put_u64 = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
    let put_str = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    put_u64(&mut out, rows.len() as u64);
    for r in rows {
        put_str(&mut out, &r.tensor);
        put_u64(&mut out, r.shape.len() as u64);
        for &d in &r.shape {
            put_u64(&mut out, d as u64);
        }
        put_str(&mut out, &r.scheme);
        for v in [r.elements, r.nan, r.saturated, r.flushed] {
            put_u64(&mut out, v);
        }
        for v in [
            r.bits_per_element,
            r.saturated_share,
            r.flushed_share,
            r.bits_total,
        ] {
            put_u64(&mut out, v.to_bits());
        }
        match &r.error {
            None => out.push(0),
            Some(e) => {
                out.push(1);
                put_str(&mut out, e);
            }
        }
        r.stats.write_to(&mut out);
    }
    out
}

/// The rows of [`rows_to_bytes`].
///
/// # Errors
///
/// [`Error::BadFile`] for bytes that are not exactly what [`rows_to_bytes`] wrote.
pub fn rows_from_bytes(b: &[u8]) -> Result<Vec<Row>> {
    let mut w = Wire::new(b);
    if w.take(8).ok() != Some(&ROWS_MAGIC[..]) {
        return Err(Error::BadFile(
            "not serialized report rows (they start with `lprows02`); pass the bytes that \
             report_partial / rows_to_bytes returned, unchanged"
                .into(),
        ));
    }
    let text = |w: &mut Wire<'_>| -> Result<String> {
        let n = w.len(1)?;
        String::from_utf8(w.take(n)?.to_vec()).map_err(|_| {
            Error::BadFile("serialized report rows hold a name that is not UTF-8".into())
        })
    };
    let n = w.len(8)?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let tensor = text(&mut w)?;
        let dims = w.len(8)?;
        let shape = (0..dims)
            .map(|_| w.u64().map(|d| d as usize))
            .collect::<Result<Vec<usize>>>()?;
        let scheme = text(&mut w)?;
        let mut r = Row::empty(&tensor, shape, &scheme, w.u64()?);
        (r.nan, r.saturated, r.flushed) = (w.u64()?, w.u64()?, w.u64()?);
        (
            r.bits_per_element,
            r.saturated_share,
            r.flushed_share,
            r.bits_total,
        ) = (
            f64::from_bits(w.u64()?),
            f64::from_bits(w.u64()?),
            f64::from_bits(w.u64()?),
            f64::from_bits(w.u64()?),
        );
        r.error = match w.take(1)?[0] {
            0 => None,
            _ => Some(text(&mut w)?),
        };
        let stats = ErrorStats::read_from(&mut w)?;
        // every other figure is a function of the statistics (an error row has none)
        match r.error {
            None => r.fill(stats),
            Some(_) => r.stats = stats,
        }
        rows.push(r);
    }
    if !w.is_empty() {
        return Err(Error::BadFile(
            "serialized report rows are followed by extra bytes; pass them unchanged".into(),
        ));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tensors_have_their_shapes() {
        for t in builtin() {
            assert_eq!(
                t.shape.iter().product::<usize>(),
                t.values.len(),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn samples_are_deterministic_and_normal() {
        let a = normal_samples(100_000, 9);
        assert_eq!(a, normal_samples(100_000, 9));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / a.len() as f64;
        assert!(
            mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
            "{mean} {var}"
        );
        assert!(uniform_samples(1000, 3).iter().all(|&u| u > 0.0 && u < 1.0));
    }

    #[test]
    fn a_shape_that_does_not_hold_the_values_is_refused() {
        assert!(Tensor::new("t", vec![2, 3], Values::F32(vec![0.0; 5])).is_err());
    }

    #[test]
    fn rows_match_the_scheme_and_totals_merge_them() {
        let x: Vec<f64> = normal_samples(4 * 96, 1);
        let a = Tensor::new("a", vec![4, 96], Values::F64(x.clone())).unwrap();
        let b = Tensor::new("b", vec![96 * 4], Values::F64(x)).unwrap();
        let s = schemes(&["fp8-e4m3", "int4:group=32", "nvfp4"]).unwrap();
        let r = rows(&[a.clone(), b], &s, |_, _| {});
        assert_eq!(r.len(), 6);
        assert_eq!(
            (r[1].tensor.as_str(), r[1].scheme.as_str()),
            ("a", "int4:group=32")
        );
        // the row is the scheme's own error
        let Values::F64(x) = &a.values else {
            unreachable!()
        };
        let q = s[0].1.apply(x, &[4, 96]).unwrap();
        let (sse, energy) = q.values.iter().zip(x).fold((0.0, 0.0), |(s, e), (q, x)| {
            (s + (q - x) * (q - x), e + x * x)
        });
        assert!((r[0].rel_error - (sse / energy).sqrt()).abs() < 1e-12);
        assert!((r[0].sqnr_db - 10.0 * (energy / sse).log10()).abs() < 1e-9);
        // one tensor, the same values in another shape: same fp8 error, totals merge both
        assert_eq!(r[0].stats, r[3].stats);
        let t = totals(&r, &s);
        assert_eq!(t[0].elements, 2 * 4 * 96);
        assert_eq!(t[0].rel_error, r[0].rel_error);
        // 4-bit elements, an E4M3 scale per 16 (24 blocks a tensor), an fp32 tensor scale each
        assert_eq!(t[2].bits_per_element, 4.0 + (8.0 * 24.0 + 32.0) / 384.0);
    }

    #[test]
    fn rows_survive_their_bytes_and_give_the_same_totals() {
        let x: Vec<f64> = normal_samples(3 * 64, 4);
        let a = Tensor::new("a.weight", vec![3, 64], Values::F64(x.clone())).unwrap();
        let mut y = x.clone();
        y[5] = f64::NAN;
        // rows of 48: not whole Q8_0 blocks (an error row)
        let b = Tensor::new("b", vec![4, 48], Values::F64(y)).unwrap();
        let s = methods(&["fp8-e4m3", "int4:group=128", "gguf:Q8_0"]).unwrap();
        let r = method_rows(&[a, b], &s, Basis::Model, |_, _| {});
        assert!(
            r.iter().any(|r| r.error.is_some()),
            "an error row is carried too"
        );
        let back = rows_from_bytes(&rows_to_bytes(&r)).unwrap();
        // (rows with NaN figures are not `==` themselves: compare the fields bit for bit)
        assert_eq!(back.len(), r.len());
        for (x, y) in back.iter().zip(&r) {
            assert_eq!(
                (&x.tensor, &x.shape, &x.scheme, &x.error),
                (&y.tensor, &y.shape, &y.scheme, &y.error)
            );
            assert_eq!(
                (x.elements, x.nan, x.saturated, x.flushed),
                (y.elements, y.nan, y.saturated, y.flushed)
            );
            assert_eq!(x.figures().map(f64::to_bits), y.figures().map(f64::to_bits));
            assert_eq!(x.bits_total.to_bits(), y.bits_total.to_bits());
            assert_eq!(x.stats, y.stats);
        }
        assert_eq!(rows_to_bytes(&back), rows_to_bytes(&r));
        // split in two "tasks", merged in order: the same totals, bit for bit
        let (p, q) = r.split_at(3);
        let mut joined = rows_from_bytes(&rows_to_bytes(p)).unwrap();
        joined.extend(rows_from_bytes(&rows_to_bytes(q)).unwrap());
        let (t1, t2) = (totals(&r, &s), totals(&joined, &s));
        assert_eq!(rows_to_bytes(&t1), rows_to_bytes(&t2));
        assert_eq!(t1[0].sqnr_db.to_bits(), t2[0].sqnr_db.to_bits());
        let bytes = rows_to_bytes(&r);
        for cut in [0, 8, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(rows_from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(rows_from_bytes(b"not rows").is_err());
    }

    #[test]
    fn unknown_schemes_are_refused_and_none_means_the_defaults() {
        assert!(schemes(&["nope"]).is_err());
        let d = schemes::<&str>(&[]).unwrap();
        assert_eq!(d.len(), DEFAULT_SCHEMES.len());
        assert!(d[4].1.pad);
    }
}
