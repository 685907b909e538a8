//! `lowprec._lowprec`: the native half of the Python package `lowprec`.
//!
//! Thin wrappers over the `lowprec` crate: arguments in (numpy arrays, names), one call into
//! the core with the GIL released for the work on arrays, results out as numpy arrays. No
//! numerical logic lives here. Every `lowprec::Error` becomes a `ValueError` in [`err`];
//! wrong argument types are `TypeError`s raised by PyO3's extraction.
//!
//! The seed-compatible API (`FloatFormat`, `mx_quantize`, …) and the argument plumbing
//! (scalars and lists to contiguous arrays, result tuples) are in `python/lowprec/`.

#![forbid(unsafe_code)]

use lowprec::accum::{self, AccumOptions, GemmOptions, Method, Order};
use lowprec::block::{mx, nvfp4, tensor};
use lowprec::ggml;
use lowprec::ops::{self, Draft, Kind, Op, Projection, Random, Rounding, Saturation};
use lowprec::quant::{self, Clip, Granularity, IntOptions, Mapping};
use lowprec::range::{self, Complex32, Complex64};
use lowprec::reduce::{self, Arith, SoftmaxStats};
use lowprec::report as core_report;
use lowprec::scheme::{Scales, Scheme};
use lowprec::{
    decode_into, encode_into, round_into, Code, Float, FloatFormat, Overflow, RoundOptions,
    RoundingMode, Specials,
};
use numpy::ndarray::IxDyn;
use numpy::{
    Element, PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;

/// The one place where core errors become Python exceptions: every `lowprec::Error` (bad
/// values, names or shapes) is a `ValueError` carrying the core's message.
fn err(e: lowprec::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn rerr(e: range::RangeError) -> PyErr {
    err(e.into())
}

fn format_of(spec: &str) -> PyResult<FloatFormat> {
    FloatFormat::parse(spec).map_err(err)
}

fn round_options(rounding: &str, overflow: &str, seed: u64) -> PyResult<RoundOptions> {
    let mode = RoundingMode::parse(rounding).map_err(err)?;
    let overflow = Overflow::parse(overflow).map_err(err)?;
    Ok(RoundOptions::new(mode).overflow(overflow).seed(seed))
}

fn slice<'a, T: Element>(a: &'a PyReadonlyArrayDyn<'_, T>) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err("the array must be C-contiguous"))
}

/// A new array of `shape` holding `v` (no copy: numpy takes the vector's buffer).
fn shaped<'py, T: Element>(
    py: Python<'py>,
    v: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    PyArray1::from_vec(py, v).reshape(shape)
}

fn any<'py, T: Element>(
    py: Python<'py>,
    v: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    Ok(shaped(py, v, shape)?.into_any())
}

/// A new numpy array of `shape` (numpy's allocator: large arrays get huge pages, so the
/// first touch costs far less than a fresh `Vec`'s) and `f` run on its buffer with the GIL
/// released.
fn fill<'py, T: Element + Send, R: Send>(
    py: Python<'py>,
    shape: &[usize],
    f: impl FnOnce(&mut [T]) -> lowprec::Result<R> + Send,
) -> PyResult<(Bound<'py, PyArrayDyn<T>>, R)> {
    let out = PyArrayDyn::<T>::zeros(py, IxDyn(shape), false);
    let r = {
        let mut w = out.readwrite();
        let d = w.as_slice_mut().expect("a new array is contiguous");
        py.allow_threads(|| f(d)).map_err(err)?
    };
    Ok((out, r))
}

/// The last axis (1 for a 0-d array): blocks, groups and rows run along it.
fn row_len(shape: &[usize]) -> usize {
    shape.last().copied().unwrap_or(1)
}

/// Binary32 or binary64 input.
#[derive(FromPyObject)]
enum Floats<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
}

/// Code input of any unsigned (or non-negative signed) integer type.
#[derive(FromPyObject)]
enum Codes<'py> {
    U8(PyReadonlyArrayDyn<'py, u8>),
    U16(PyReadonlyArrayDyn<'py, u16>),
    U32(PyReadonlyArrayDyn<'py, u32>),
    U64(PyReadonlyArrayDyn<'py, u64>),
    I64(PyReadonlyArrayDyn<'py, i64>),
    I32(PyReadonlyArrayDyn<'py, i32>),
}

/// Real or complex, binary32 or binary64 (the range rules).
#[derive(FromPyObject)]
enum Elems<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
    C128(PyReadonlyArrayDyn<'py, Complex64>),
    C64(PyReadonlyArrayDyn<'py, Complex32>),
}

// ---------------------------------------------------------------------------------------
// formats
// ---------------------------------------------------------------------------------------

/// Every derived quantity of a format, as a dict.
#[pyfunction]
fn format_info<'py>(py: Python<'py>, spec: &str) -> PyResult<Bound<'py, PyDict>> {
    let f = format_of(spec)?;
    let d = PyDict::new(py);
    d.set_item("name", f.name().as_ref())?;
    d.set_item("spec", f.spec())?;
    d.set_item("exp_bits", f.exp_bits())?;
    d.set_item("man_bits", f.man_bits())?;
    d.set_item("bias", f.bias())?;
    d.set_item("special", f.specials().name())?;
    d.set_item("signed", f.is_signed())?;
    d.set_item("zero", f.has_zero())?;
    d.set_item("bits", f.bits())?;
    d.set_item("emax", f.emax())?;
    d.set_item("emin", f.emin())?;
    d.set_item("max_value", f.max_finite())?;
    d.set_item("min_normal", f.min_normal())?;
    d.set_item("min_subnormal", f.min_subnormal())?;
    d.set_item("min_positive", f.min_positive())?;
    d.set_item("eps", f.epsilon())?;
    d.set_item("unit_roundoff", f.unit_roundoff())?;
    d.set_item("has_inf", f.has_inf())?;
    d.set_item("has_nan", f.has_nan())?;
    d.set_item("max_code", f.max_code())?;
    d.set_item("describe", f.describe())?;
    Ok(d)
}

/// The custom-format spec of a signed format with zero (`e4m3b7:fn`), validated.
#[pyfunction]
fn make_format(exp_bits: u32, man_bits: u32, bias: i32, special: &str) -> PyResult<String> {
    let sp = match special {
        "ieee" => Specials::Ieee,
        "fn" => Specials::Fn,
        "fnuz" => Specials::Fnuz,
        "none" => Specials::None,
        "p3109e" => Specials::P3109Extended,
        "p3109f" => Specials::P3109Finite,
        _ => {
            return Err(PyValueError::new_err(format!(
                "special must be one of 'ieee', 'fn', 'fnuz', 'none', 'p3109e', 'p3109f', not {special:?}"
            )))
        }
    };
    Ok(FloatFormat::new(exp_bits, man_bits, bias, sp, true, true)
        .map_err(err)?
        .spec())
}

/// The preset names.
#[pyfunction]
fn preset_names() -> Vec<&'static str> {
    lowprec::format::PRESETS.iter().map(|p| p.name).collect()
}

/// Round `x` into `format`; values in the input's dtype (binary64 when binary32 cannot hold
/// the format's values).
#[pyfunction]
#[pyo3(signature = (x, format, rounding="rne", overflow="ovf", seed=0, index_offset=0))]
fn round<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    format: &str,
    rounding: &str,
    overflow: &str,
    seed: u64,
    index_offset: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let f = format_of(format)?;
    let o = round_options(rounding, overflow, seed)?.index_offset(index_offset);
    fn go<'py, I: Float + Element, O: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        f: &FloatFormat,
        o: &RoundOptions,
    ) -> PyResult<Bound<'py, PyAny>> {
        let x = slice(a)?;
        let (out, _) = fill::<O, _>(py, a.shape(), |d| round_into(f, x, d, o))?;
        Ok(out.into_any())
    }
    match x {
        Floats::F64(a) => go::<f64, f64>(py, &a, &f, &o),
        Floats::F32(a) if f.fits_f32() => go::<f32, f32>(py, &a, &f, &o),
        Floats::F32(a) => go::<f32, f64>(py, &a, &f, &o),
    }
}

fn encode_as<'py, I: Float + Element, C: Code + Element>(
    py: Python<'py>,
    a: &PyReadonlyArrayDyn<'py, I>,
    f: &FloatFormat,
    o: &RoundOptions,
) -> PyResult<Bound<'py, PyAny>> {
    let x = slice(a)?;
    let (out, _) = fill::<C, _>(py, a.shape(), |d| encode_into(f, x, d, o))?;
    Ok(out.into_any())
}

fn encode_floats<'py, I: Float + Element>(
    py: Python<'py>,
    a: &PyReadonlyArrayDyn<'py, I>,
    f: &FloatFormat,
    o: &RoundOptions,
    wide: bool,
) -> PyResult<Bound<'py, PyAny>> {
    match f.bits() {
        _ if wide => encode_as::<I, u64>(py, a, f, o),
        0..=8 => encode_as::<I, u8>(py, a, f, o),
        9..=16 => encode_as::<I, u16>(py, a, f, o),
        17..=32 => encode_as::<I, u32>(py, a, f, o),
        _ => encode_as::<I, u64>(py, a, f, o),
    }
}

/// Round `x` into `format` and return the codes (right-aligned, the narrowest unsigned
/// dtype that holds them, or uint64 with `wide`).
#[pyfunction]
#[pyo3(signature = (x, format, rounding="rne", overflow="ovf", seed=0, index_offset=0, wide=false))]
#[allow(clippy::too_many_arguments)]
fn encode<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    format: &str,
    rounding: &str,
    overflow: &str,
    seed: u64,
    index_offset: u64,
    wide: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let f = format_of(format)?;
    let o = round_options(rounding, overflow, seed)?.index_offset(index_offset);
    match x {
        Floats::F64(a) => encode_floats(py, &a, &f, &o, wide),
        Floats::F32(a) => encode_floats(py, &a, &f, &o, wide),
    }
}

/// Number literals (decimal strings of any length, hexadecimal floats, inf, nan) read
/// exactly and rounded once into `format`: the values (float64) and the codes (uint64).
/// Values (float64) and codes (uint64) of one call.
type ValuesAndCodes<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<u64>>);

#[pyfunction]
#[pyo3(signature = (literals, format, rounding="rne", overflow="ovf", seed=0))]
fn round_exact<'py>(
    py: Python<'py>,
    literals: Vec<String>,
    format: &str,
    rounding: &str,
    overflow: &str,
    seed: u64,
) -> PyResult<ValuesAndCodes<'py>> {
    let f = format_of(format)?;
    let o = round_options(rounding, overflow, seed)?;
    let mut values = Vec::with_capacity(literals.len());
    let mut codes = Vec::with_capacity(literals.len());
    for (i, s) in literals.iter().enumerate() {
        let x = lowprec::exact::Exact::parse(s).map_err(err)?;
        let oi = o.index_offset(i as u64);
        values.push(f.round_exact(&x, &oi));
        codes.push(f.encode_exact(&x, &oi).map_err(err)?);
    }
    Ok((
        PyArray1::from_vec(py, values),
        PyArray1::from_vec(py, codes),
    ))
}

/// The values of `codes` in `format` as float64.
#[pyfunction]
fn decode<'py>(py: Python<'py>, codes: Codes<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
    let f = format_of(format)?;
    fn go<C: Code + Element>(
        py: Python<'_>,
        a: &PyReadonlyArrayDyn<'_, C>,
        f: &FloatFormat,
    ) -> PyResult<Vec<f64>> {
        let c = slice(a)?;
        py.allow_threads(|| {
            let mut out = vec![0.0; c.len()];
            decode_into(f, c, &mut out).map(|_| out)
        })
        .map_err(err)
    }
    fn go_np<'py, C: Code + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, C>,
        f: &FloatFormat,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = slice(a)?;
        let (out, _) = fill::<f64, _>(py, a.shape(), |d| decode_into(f, c, d))?;
        Ok(out.into_any())
    }
    match &codes {
        Codes::U8(a) => return go_np(py, a, &f),
        Codes::U16(a) => return go_np(py, a, &f),
        Codes::U32(a) => return go_np(py, a, &f),
        Codes::U64(a) => return go_np(py, a, &f),
        _ => {}
    }
    fn signed<T: Element + Copy + Into<i64>>(a: &PyReadonlyArrayDyn<'_, T>) -> PyResult<Vec<u64>> {
        slice(a)?
            .iter()
            .map(|&c| {
                let c: i64 = c.into();
                u64::try_from(c).map_err(|_| PyValueError::new_err(format!("code {c} is negative")))
            })
            .collect()
    }
    let (v, shape) = match &codes {
        Codes::U8(a) => (go(py, a, &f)?, a.shape().to_vec()),
        Codes::U16(a) => (go(py, a, &f)?, a.shape().to_vec()),
        Codes::U32(a) => (go(py, a, &f)?, a.shape().to_vec()),
        Codes::U64(a) => (go(py, a, &f)?, a.shape().to_vec()),
        Codes::I64(a) => {
            let c = signed(a)?;
            let v = py.allow_threads(|| {
                let mut out = vec![0.0; c.len()];
                decode_into(&f, &c, &mut out).map(|_| out)
            });
            (v.map_err(err)?, a.shape().to_vec())
        }
        Codes::I32(a) => {
            let c = signed(a)?;
            let v = py.allow_threads(|| {
                let mut out = vec![0.0; c.len()];
                decode_into(&f, &c, &mut out).map(|_| out)
            });
            (v.map_err(err)?, a.shape().to_vec())
        }
    };
    any(py, v, &shape)
}

/// `(sign, exponent, mantissa)` fields of one code.
#[pyfunction]
fn fields(code: u64, format: &str) -> PyResult<(u64, u64, u64)> {
    Ok(format_of(format)?.fields(code))
}

/// The value of every code (formats of at most 16 bits).
#[pyfunction]
fn all_values<'py>(py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyArray1<f64>>> {
    Ok(PyArray1::from_vec(
        py,
        format_of(format)?.all_values().map_err(err)?,
    ))
}

/// A code in binary with the fields of `format` apart.
#[pyfunction]
fn format_bits_str(code: u64, format: &str) -> PyResult<String> {
    Ok(format_of(format)?.bits_str(code))
}

// ---------------------------------------------------------------------------------------
// integers
// ---------------------------------------------------------------------------------------

#[pyfunction]
#[pyo3(signature = (bits, signed=true))]
fn int_range(bits: u32, signed: bool) -> PyResult<(i64, i64)> {
    lowprec::int::int_range(bits, signed).map_err(err)
}

#[pyfunction]
fn twos_complement_encode(v: i64, bits: u32) -> PyResult<u64> {
    lowprec::int::twos_complement_encode(v, bits).map_err(err)
}

#[pyfunction]
fn twos_complement_decode(code: u64, bits: u32) -> PyResult<i64> {
    lowprec::int::twos_complement_decode(code, bits).map_err(err)
}

#[pyfunction]
#[pyo3(signature = (code, bits, groups=None))]
fn bits_str(code: u64, bits: u32, groups: Option<Vec<u32>>) -> PyResult<String> {
    lowprec::int::bits_str(code, bits, groups.as_deref()).map_err(err)
}

#[pyfunction]
fn wrap_int<'py>(
    py: Python<'py>,
    v: PyReadonlyArrayDyn<'py, i64>,
    bits: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let mut out = slice(&v)?.to_vec();
    lowprec::int::wrap_int_in_place(&mut out, bits).map_err(err)?;
    any(py, out, v.shape())
}

#[pyfunction]
fn saturate_int<'py>(
    py: Python<'py>,
    v: PyReadonlyArrayDyn<'py, i64>,
    bits: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let mut out = slice(&v)?.to_vec();
    lowprec::int::saturate_int_in_place(&mut out, bits).map_err(err)?;
    any(py, out, v.shape())
}

// ---------------------------------------------------------------------------------------
// block scaling, integer quantization, schemes
// ---------------------------------------------------------------------------------------

fn block_shape(shape: &[usize], per_row: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    match s.last_mut() {
        Some(l) => *l = per_row,
        None => s.push(per_row),
    }
    s
}

fn block_status<'py>(
    py: Python<'py>,
    st: &lowprec::block::BlockStatus,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("elements", st.elements)?;
    d.set_item("blocks", st.blocks)?;
    d.set_item("saturated", st.saturated)?;
    d.set_item("flushed", st.flushed)?;
    d.set_item("nan_blocks", st.nan_blocks)?;
    d.set_item("scale_clamped", st.scale_clamped)?;
    Ok(d)
}

/// OCP MX along the last axis: `{values, codes, scales (E8M0 codes), status}`.
#[pyfunction]
#[pyo3(signature = (x, element, block=32, scale="floor", pad=false))]
fn mx_quantize<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    element: &str,
    block: usize,
    scale: &str,
    pad: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut o = mx::MxOptions::new(mx::MxElement::parse(element).map_err(err)?);
    o.block = block;
    o.scale = mx::ScaleRule::parse(scale).map_err(err)?;
    o.pad = pad;
    fn go<'py, I: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        o: &mx::MxOptions,
    ) -> PyResult<Bound<'py, PyDict>> {
        let x = slice(a)?;
        let shape = a.shape();
        let bs = block_shape(shape, o.blocks_per_row(row_len(shape)));
        let codes = PyArrayDyn::<u8>::zeros(py, IxDyn(shape), false);
        let scales = PyArrayDyn::<u8>::zeros(py, IxDyn(&bs), false);
        let (values, st) = {
            let (mut cw, mut sw) = (codes.readwrite(), scales.readwrite());
            let c = cw.as_slice_mut().expect("a new array is contiguous");
            let s = sw.as_slice_mut().expect("a new array is contiguous");
            fill::<I, _>(py, shape, |v| {
                mx::mx_quantize_into(x, row_len(shape), o, v, c, s)
            })?
        };
        let d = PyDict::new(py);
        d.set_item("values", values)?;
        d.set_item("codes", codes)?;
        d.set_item("scales", scales)?;
        d.set_item("status", block_status(py, &st)?)?;
        Ok(d)
    }
    match x {
        Floats::F64(a) => go(py, &a, &o),
        Floats::F32(a) => go(py, &a, &o),
    }
}

/// NVFP4 along the last axis: `{values, codes, scales (E4M3 codes), tensor_scale, status}`.
#[pyfunction]
#[pyo3(signature = (x, convention="seed", pad=false))]
fn nvfp4_quantize<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    convention: &str,
    pad: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let o = nvfp4::Nvfp4Options {
        convention: nvfp4::Convention::parse(convention).map_err(err)?,
        pad,
    };
    fn go<'py, I: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        o: &nvfp4::Nvfp4Options,
    ) -> PyResult<Bound<'py, PyDict>> {
        let x = slice(a)?;
        let shape = a.shape();
        let bs = block_shape(shape, nvfp4::blocks_per_row(row_len(shape)));
        let codes = PyArrayDyn::<u8>::zeros(py, IxDyn(shape), false);
        let scales = PyArrayDyn::<u8>::zeros(py, IxDyn(&bs), false);
        let (values, (g, st)) = {
            let (mut cw, mut sw) = (codes.readwrite(), scales.readwrite());
            let c = cw.as_slice_mut().expect("a new array is contiguous");
            let s = sw.as_slice_mut().expect("a new array is contiguous");
            fill::<I, _>(py, shape, |v| {
                nvfp4::nvfp4_quantize_into(x, row_len(shape), o, v, c, s)
            })?
        };
        let d = PyDict::new(py);
        d.set_item("values", values)?;
        d.set_item("codes", codes)?;
        d.set_item("scales", scales)?;
        d.set_item("tensor_scale", g)?;
        d.set_item("status", block_status(py, &st)?)?;
        Ok(d)
    }
    match x {
        Floats::F64(a) => go(py, &a, &o),
        Floats::F32(a) => go(py, &a, &o),
    }
}

/// One scale for the tensor: `{values, codes, scale, status}`.
#[pyfunction]
fn tensor_scaled<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    format: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let f = format_of(format)?;
    fn go<'py, I: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        f: &FloatFormat,
    ) -> PyResult<Bound<'py, PyDict>> {
        let x = slice(a)?;
        let q = py
            .allow_threads(|| tensor::tensor_scaled(x, f))
            .map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("values", shaped(py, q.values, a.shape())?)?;
        d.set_item("codes", shaped(py, q.codes, a.shape())?)?;
        d.set_item("scale", q.scale)?;
        d.set_item("status", block_status(py, &q.status)?)?;
        Ok(d)
    }
    match x {
        Floats::F64(a) => go(py, &a, &f),
        Floats::F32(a) => go(py, &a, &f),
    }
}

/// Affine integers: `{values, q (int64), scales, zeros, clips, clipped, flushed}`; granularity
/// `tensor`, `channel` (rows along the last axis) or `group` (of `group` elements).
#[pyfunction]
#[pyo3(signature = (x, bits=8, mapping="symmetric", granularity="tensor", group=0, clip=None))]
fn quantize_int<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    bits: u32,
    mapping: &str,
    granularity: &str,
    group: usize,
    clip: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mapping = match mapping {
        "symmetric" | "sym" => Mapping::Symmetric,
        "full" | "symmetric_full" => Mapping::SymmetricFull,
        "asymmetric" | "asym" => Mapping::Asymmetric,
        _ => {
            return Err(PyValueError::new_err(format!(
                "mapping must be 'symmetric', 'full' or 'asymmetric', not {mapping:?}"
            )))
        }
    };
    let granularity = match granularity {
        "tensor" => Granularity::Tensor,
        "channel" => Granularity::Channel,
        "group" => Granularity::Group(group),
        _ => {
            return Err(PyValueError::new_err(format!(
                "granularity must be 'tensor', 'channel' or 'group', not {granularity:?}"
            )))
        }
    };
    let clip = match clip {
        None => Clip::None,
        Some(c) => match c.extract::<String>() {
            Ok(s) if s == "mse" => Clip::Mse,
            Ok(s) => {
                return Err(PyValueError::new_err(format!(
                    "clip must be None, a ratio in (0, 1] or 'mse', not {s:?}"
                )))
            }
            Err(_) => Clip::Ratio(c.extract::<f64>()?),
        },
    };
    let o = IntOptions {
        bits,
        mapping,
        granularity,
        clip,
    };
    fn go<'py, I: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        o: &IntOptions,
    ) -> PyResult<Bound<'py, PyDict>> {
        let x = slice(a)?;
        let shape = a.shape();
        let groups = o.groups(x.len(), row_len(shape)).map_err(err)?;
        let q = PyArrayDyn::<i64>::zeros(py, IxDyn(shape), false);
        let (mut sc, mut ze, mut cl) = (vec![1.0; groups], vec![0.0; groups], vec![1.0; groups]);
        let (values, (clipped, flushed)) = {
            let mut qw = q.readwrite();
            let qs = qw.as_slice_mut().expect("a new array is contiguous");
            let (s, z, c) = (&mut sc, &mut ze, &mut cl);
            fill::<I, _>(py, shape, |v| {
                quant::quantize_int_into(x, row_len(shape), o, v, qs, s, z, c)
            })?
        };
        let d = PyDict::new(py);
        d.set_item("values", values)?;
        d.set_item("q", q)?;
        d.set_item("scales", PyArray1::from_vec(py, sc))?;
        d.set_item("zeros", PyArray1::from_vec(py, ze))?;
        d.set_item("clips", PyArray1::from_vec(py, cl))?;
        d.set_item("clipped", clipped)?;
        d.set_item("flushed", flushed)?;
        Ok(d)
    }
    match x {
        Floats::F64(a) => go(py, &a, &o),
        Floats::F32(a) => go(py, &a, &o),
    }
}

/// The element and scale formats of a scheme's codes (spec strings; `None` for integer
/// elements and for schemes without scale codes).
fn code_formats(s: &Scheme) -> (Option<String>, Option<String>) {
    let element = match s.element {
        lowprec::scheme::Element::Float(f) => Some(f.spec()),
        lowprec::scheme::Element::Int(_) => None,
    };
    let scale =
        (s.rule != lowprec::scheme::Rule::None && s.scale.bits() <= 8).then(|| s.scale.spec());
    (element, scale)
}

/// A named scheme (`mxfp4`, `nvfp4`, `int4:group=128`, `fp8-e4m3`, …) along the last axis:
/// `{values, codes, code_bits, element_format, scales, scale_codes, scale_format, zeros,
/// tensor_scale, saturated, flushed, nan}`; with `packed`, also `packed` (the codes packed
/// row by row as `lowprec quantize --packed` writes them, uint8, 1-D) and `packed_row_bytes`.
#[pyfunction]
#[pyo3(signature = (x, scheme, packed=false))]
fn quantize<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    scheme: &str,
    packed: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let s = Scheme::parse(scheme).map_err(err)?;
    fn go<'py, I: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        s: &Scheme,
        packed: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let x = slice(a)?;
        let shape = a.shape();
        let (q, bytes) = py
            .allow_threads(|| {
                let q = s.apply(x, shape)?;
                let bytes = if packed {
                    Some(q.packed(row_len(shape))?)
                } else {
                    None
                };
                Ok((q, bytes))
            })
            .map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("values", shaped(py, q.values, shape)?)?;
        if q.codes.len() == x.len() {
            d.set_item("codes", shaped(py, q.codes, shape)?)?;
        } else {
            d.set_item("codes", py.None())?;
        }
        d.set_item("code_bits", q.code_bits)?;
        let (element, scale) = code_formats(s);
        d.set_item("element_format", element)?;
        d.set_item("scale_format", scale)?;
        if let Some((b, per)) = bytes {
            d.set_item("packed", PyArray1::from_vec(py, b))?;
            d.set_item("packed_row_bytes", per)?;
        }
        let enc = q.encoded;
        match enc.scales {
            Scales::None => {
                d.set_item("scales", py.None())?;
                d.set_item("scale_codes", py.None())?;
            }
            Scales::Codes(c) => {
                d.set_item("scales", py.None())?;
                d.set_item("scale_codes", shaped(py, c, &enc.scale_shape)?)?;
            }
            Scales::Values(v) => {
                d.set_item("scales", shaped(py, v, &enc.scale_shape)?)?;
                d.set_item("scale_codes", py.None())?;
            }
        }
        match enc.zeros {
            Some(z) => d.set_item("zeros", shaped(py, z, &enc.scale_shape)?)?,
            None => d.set_item("zeros", py.None())?,
        }
        d.set_item("scale_shape", PyTuple::new(py, &enc.scale_shape)?)?;
        d.set_item("tensor_scale", enc.tensor_scale)?;
        d.set_item("saturated", q.counts.saturated)?;
        d.set_item("flushed", q.counts.flushed)?;
        d.set_item("nan", q.counts.nan)?;
        d.set_item("blocks", q.counts.blocks)?;
        d.set_item("scale_clamped", q.counts.scale_clamped)?;
        Ok(d)
    }
    match x {
        Floats::F64(a) => go(py, &a, &s, packed),
        Floats::F32(a) => go(py, &a, &s, packed),
    }
}

/// [`lowprec::io::quantized::quantize_file`]: quantize every floating tensor of at least two
/// dimensions of a `.safetensors` file (or a `.npz` archive) into the quantized checkpoint
/// layout (atomically);
/// one dict per quantized tensor (`tensor`, `bits_per_element`, `sqnr_db`, `rel_error`,
/// `cosine`, `max_abs_error`, `saturated`, `flushed`, `nan`, `tensor_scale`) and the number of
/// tensors copied.
#[pyfunction]
fn quantize_file<'py>(
    py: Python<'py>,
    input: std::path::PathBuf,
    scheme: &str,
    output: std::path::PathBuf,
) -> PyResult<(Vec<Bound<'py, PyDict>>, usize)> {
    let s = Scheme::parse(scheme).map_err(err)?;
    let (reports, copied) = py
        .allow_threads(|| lowprec::io::quantized::quantize_file(&input, &s, &output))
        .map_err(err)?;
    let rows = reports
        .iter()
        .map(|r| {
            let d = PyDict::new(py);
            d.set_item("tensor", &r.name)?;
            d.set_item("bits_per_element", r.bits_per_element)?;
            d.set_item("sqnr_db", r.stats.sqnr_db())?;
            d.set_item("rel_error", r.stats.rel_error())?;
            d.set_item("cosine", r.stats.cosine())?;
            d.set_item("max_abs_error", r.stats.max_abs())?;
            d.set_item("saturated", r.counts.saturated)?;
            d.set_item("flushed", r.counts.flushed)?;
            d.set_item("nan", r.counts.nan)?;
            d.set_item("tensor_scale", r.tensor_scale)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok((rows, copied))
}

/// [`lowprec::io::quantized::dequantize_file`]: a checkpoint written by `quantize_file` (or
/// `lowprec quantize`) back to floats in the original dtypes and shapes (atomically); the
/// canonical scheme name and the number of tensors dequantized.
#[pyfunction]
fn dequantize_file(
    py: Python<'_>,
    input: std::path::PathBuf,
    output: std::path::PathBuf,
) -> PyResult<(String, usize)> {
    let (s, n) = py
        .allow_threads(|| lowprec::io::quantized::dequantize_file(&input, &output))
        .map_err(err)?;
    Ok((s.to_string(), n))
}

/// The named schemes: `(name, canonical name, meaning, source)` per preset.
#[pyfunction]
fn scheme_presets() -> PyResult<Vec<(String, String, String, String)>> {
    lowprec::scheme::PRESETS
        .iter()
        .map(|p| {
            let s = Scheme::parse(p.name).map_err(err)?;
            Ok((
                p.name.to_string(),
                s.to_string(),
                p.meaning.to_string(),
                p.source.to_string(),
            ))
        })
        .collect()
}

/// Pack codes (each below `2**bits`, `bits` 1..=8) into bytes: the layouts of
/// `lowprec::block::pack` (4-bit: two per byte, element 2i low; 6-bit: four per three bytes;
/// 2-bit: four per byte), the last byte or group zero-padded.
#[pyfunction]
fn pack<'py>(
    py: Python<'py>,
    codes: PyReadonlyArrayDyn<'py, u8>,
    bits: u32,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let c = slice(&codes)?;
    let out = py
        .allow_threads(|| lowprec::block::pack::pack(c, bits))
        .map_err(err)?;
    Ok(PyArray1::from_vec(py, out))
}

/// Unpack `n` codes of `bits` bits (uint8).
#[pyfunction]
fn unpack<'py>(
    py: Python<'py>,
    packed: PyReadonlyArrayDyn<'py, u8>,
    bits: u32,
    n: usize,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let b = slice(&packed)?;
    let out = py
        .allow_threads(|| lowprec::block::pack::unpack(b, bits, n))
        .map_err(err)?;
    Ok(PyArray1::from_vec(py, out))
}

// ---------------------------------------------------------------------------------------
// the report
// ---------------------------------------------------------------------------------------

fn report_dict<'py>(py: Python<'py>, r: &core_report::Row) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("tensor", &r.tensor)?;
    d.set_item("shape", PyTuple::new(py, &r.shape)?)?;
    d.set_item("scheme", &r.scheme)?;
    d.set_item("elements", r.elements)?;
    d.set_item("bits_per_element", r.bits_per_element)?;
    d.set_item("rel_error", r.rel_error)?;
    d.set_item("sqnr_db", r.sqnr_db)?;
    d.set_item("max_abs_error", r.max_abs_error)?;
    d.set_item("cosine", r.cosine)?;
    d.set_item("rmse", r.rmse)?;
    d.set_item("nmse", r.nmse)?;
    d.set_item("p50_abs_error", r.p50)?;
    d.set_item("p99_abs_error", r.p99)?;
    d.set_item("p999_abs_error", r.p999)?;
    d.set_item("saturated_share", r.saturated_share)?;
    d.set_item("flushed_share", r.flushed_share)?;
    d.set_item("nan", r.nan)?;
    d.set_item("error", r.error.as_deref())?;
    Ok(d)
}

/// An opened checkpoint with `include` / `exclude` applied.
fn open_checkpoint(
    path: &std::path::Path,
    include: &[String],
    exclude: &[String],
) -> lowprec::Result<lowprec::io::checkpoint::Checkpoint> {
    let mut ck = lowprec::io::checkpoint::open(path)?;
    ck.retain(include, exclude);
    Ok(ck)
}

/// The rows of the checkpoints in `paths` (the floating tensors named in `names`, or all),
/// one tensor at a time ([`core_report::checkpoint_rows`]).
fn path_rows(
    paths: &[PathBuf],
    names: Option<&[String]>,
    methods: &[(String, core_report::Method)],
    include: &[String],
    exclude: &[String],
    basis: core_report::Basis,
) -> lowprec::Result<Vec<core_report::Row>> {
    let mut rows = Vec::new();
    for p in paths {
        let ck = open_checkpoint(p, include, exclude)?;
        rows.extend(core_report::checkpoint_rows(&ck, names, methods, basis)?);
    }
    if rows.is_empty() {
        return Err(lowprec::Error::InvalidArgument(format!(
            "no floating tensors in {paths:?}{}",
            if include.is_empty() && exclude.is_empty() {
                ""
            } else {
                " that include / exclude keep"
            }
        )));
    }
    Ok(rows)
}

fn basis_of(rotated: bool) -> core_report::Basis {
    if rotated {
        core_report::Basis::Rotated
    } else {
        core_report::Basis::Model
    }
}

/// The rows as dicts, then with `totals` one `"(all)"` row per method.
fn rows_out<'py>(
    py: Python<'py>,
    rows: &[core_report::Row],
    methods: &[(String, core_report::Method)],
    totals: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let all = if totals {
        py.allow_threads(|| core_report::totals(rows, methods))
    } else {
        Vec::new()
    };
    rows.iter()
        .chain(&all)
        .map(|r| report_dict(py, r))
        .collect()
}

/// [`lowprec::report`]: one dict per tensor × scheme (tensor-major), then with `totals` one
/// `"(all)"` row per scheme. The tensors are `arrays` (name, float32/float64 array; blocks
/// run along the last axis), else every floating tensor of the checkpoints in `paths` (read
/// one tensor at a time, `include` / `exclude` globs applied), else the built-in set;
/// `schemes` `None` or empty: the default ten.
#[pyfunction]
#[pyo3(signature = (arrays=None, paths=None, schemes=None, totals=false, include=vec![], exclude=vec![], rotated=false))]
#[allow(clippy::too_many_arguments)]
fn report<'py>(
    py: Python<'py>,
    arrays: Option<Vec<(String, Floats<'py>)>>,
    paths: Option<Vec<PathBuf>>,
    schemes: Option<Vec<String>>,
    totals: bool,
    include: Vec<String>,
    exclude: Vec<String>,
    rotated: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let methods = core_report::methods(&schemes.unwrap_or_default()).map_err(err)?;
    let basis = basis_of(rotated);
    if let (None, Some(paths)) = (&arrays, &paths) {
        let rows = py
            .allow_threads(|| path_rows(paths, None, &methods, &include, &exclude, basis))
            .map_err(err)?;
        return rows_out(py, &rows, &methods, totals);
    }
    let tensors = match arrays {
        Some(arrays) => arrays
            .iter()
            .map(|(name, a)| {
                let (shape, values) = match a {
                    Floats::F64(a) => (a.shape(), core_report::Values::F64(slice(a)?.to_vec())),
                    Floats::F32(a) => (a.shape(), core_report::Values::F32(slice(a)?.to_vec())),
                };
                core_report::Tensor::new(name.clone(), shape.to_vec(), values).map_err(err)
            })
            .collect::<PyResult<Vec<_>>>()?,
        None => py.allow_threads(core_report::builtin),
    };
    if tensors.is_empty() {
        return Err(PyValueError::new_err(
            "no tensors to report on: give a dict of name → array, a file, or None for the built-in set",
        ));
    }
    let rows = py.allow_threads(|| core_report::method_rows(&tensors, &methods, basis, |_, _| {}));
    rows_out(py, &rows, &methods, totals)
}

/// The tensors of a checkpoint as planned work, read from its headers only: `(name, shard
/// path, dtype, shape, bytes stored, floating?)` per tensor in checkpoint order, after
/// `include` / `exclude`.
#[pyfunction]
#[pyo3(signature = (path, include=vec![], exclude=vec![]))]
#[allow(clippy::type_complexity)]
fn checkpoint_tensors(
    py: Python<'_>,
    path: PathBuf,
    include: Vec<String>,
    exclude: Vec<String>,
) -> PyResult<Vec<(String, PathBuf, String, Vec<usize>, u64, bool)>> {
    let ck = py
        .allow_threads(|| open_checkpoint(&path, &include, &exclude))
        .map_err(err)?;
    Ok(ck
        .tensors()
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                ck.shard_of(t).to_path_buf(),
                t.dtype.clone(),
                t.shape.clone(),
                t.bytes,
                t.is_float,
            )
        })
        .collect())
}

/// The report rows of the floating tensors named in `names` (all when `None`) of the
/// checkpoint `path`, as bytes ([`core_report::rows_to_bytes`]): a Ray task's result, put
/// together by [`report_finish`] bit-identically to one process's report.
#[pyfunction]
#[pyo3(signature = (path, names=None, schemes=None, include=vec![], exclude=vec![], rotated=false))]
fn report_partial<'py>(
    py: Python<'py>,
    path: PathBuf,
    names: Option<Vec<String>>,
    schemes: Option<Vec<String>>,
    include: Vec<String>,
    exclude: Vec<String>,
    rotated: bool,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let methods = core_report::methods(&schemes.unwrap_or_default()).map_err(err)?;
    let bytes = py
        .allow_threads(|| {
            path_rows(
                std::slice::from_ref(&path),
                names.as_deref(),
                &methods,
                &include,
                &exclude,
                basis_of(rotated),
            )
            .map(|rows| core_report::rows_to_bytes(&rows))
        })
        .map_err(err)?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

/// The report of the rows in `parts` (the bytes of [`report_partial`], in checkpoint order):
/// one dict per row, then with `totals` one `"(all)"` row per scheme (the statistics merged
/// exactly, so the figures equal one process's report bit for bit).
#[pyfunction]
#[pyo3(signature = (parts, schemes=None, totals=false))]
fn report_finish<'py>(
    py: Python<'py>,
    parts: Vec<Vec<u8>>,
    schemes: Option<Vec<String>>,
    totals: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let methods = core_report::methods(&schemes.unwrap_or_default()).map_err(err)?;
    let mut rows = Vec::new();
    for p in &parts {
        rows.extend(core_report::rows_from_bytes(p).map_err(err)?);
    }
    rows_out(py, &rows, &methods, totals)
}

/// Quantize one shard into the folder `out_dir` ([`lowprec::io::sharded::quantize_shard`]):
/// `True` when written, `False` when its output already held `scheme` (kept).
#[pyfunction]
fn quantize_shard(
    py: Python<'_>,
    shard: PathBuf,
    scheme: &str,
    out_dir: PathBuf,
) -> PyResult<bool> {
    let s = Scheme::parse(scheme).map_err(err)?;
    let d = py
        .allow_threads(|| {
            lowprec::io::sharded::prepare_output(&out_dir)?;
            lowprec::io::sharded::quantize_shard(&shard, &s, &out_dir)
        })
        .map_err(err)?;
    Ok(matches!(d, lowprec::io::sharded::ShardDone::Written(..)))
}

/// Write the index of the quantized shards in `out_dir` (their file names), with the
/// scheme in its metadata ([`lowprec::io::sharded::write_index`]); then remove the
/// temporary files that killed writers left there.
#[pyfunction]
fn write_shard_index(
    py: Python<'_>,
    out_dir: PathBuf,
    shards: Vec<String>,
    scheme: &str,
) -> PyResult<usize> {
    let s = Scheme::parse(scheme).map_err(err)?;
    py.allow_threads(|| {
        let outs: Vec<PathBuf> = shards.iter().map(|n| out_dir.join(n)).collect();
        lowprec::io::sharded::write_index(
            &out_dir,
            &outs,
            &[(lowprec::io::quantized::META_SCHEME, s.to_string())],
        )?;
        Ok(lowprec::io::sharded::remove_stale_temporaries(&out_dir))
    })
    .map_err(err)
}

/// Quantize a checkpoint (a file, or a sharded folder / index into the folder `output`,
/// resuming an interrupted run): `(shards written, shards kept)`.
#[pyfunction]
fn quantize_checkpoint(
    py: Python<'_>,
    path: PathBuf,
    scheme: &str,
    output: PathBuf,
) -> PyResult<(usize, usize)> {
    let s = Scheme::parse(scheme).map_err(err)?;
    py.allow_threads(|| lowprec::io::sharded::quantize(&path, &s, &output, |_, _, _| {}))
        .map_err(err)
}

// ---------------------------------------------------------------------------------------
// accumulation
// ---------------------------------------------------------------------------------------

/// Sum each row (the last axis) with every addition rounded into `acc`; float64 sums of
/// shape `x.shape[:-1]`.
#[pyfunction]
#[pyo3(signature = (x, acc="fp32", method="sequential", chunk=0, rounding="rne", overflow="ovf", seed=0, outer="fp32"))]
#[allow(clippy::too_many_arguments)]
fn accumulate<'py>(
    py: Python<'py>,
    x: Floats<'py>,
    acc: &str,
    method: &str,
    chunk: usize,
    rounding: &str,
    overflow: &str,
    seed: u64,
    outer: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let o = AccumOptions::new(format_of(acc)?)
        .method(method.parse::<Method>().map_err(err)?)
        .chunk(chunk)
        .rounding(round_options(rounding, overflow, seed)?)
        .outer(format_of(outer)?);
    fn go<'py, I: Float + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, I>,
        o: &AccumOptions,
    ) -> PyResult<Bound<'py, PyAny>> {
        let x = slice(a)?;
        let shape = a.shape();
        let cols = row_len(shape);
        let (v, _) = py
            .allow_threads(|| accum::accumulate(x, cols, o))
            .map_err(err)?;
        let out_shape = &shape[..shape.len().saturating_sub(1)];
        any(py, v, out_shape)
    }
    match x {
        Floats::F64(a) => go(py, &a, &o),
        Floats::F32(a) => go(py, &a, &o),
    }
}

/// `C = A·B` simulated: inputs through `input` (a scheme, optional), products rounded into
/// `product` (optional), sums into `acc` in `order`, promoted every `chunk` terms.
/// `{c, exact, max_rel, mean_rel, max_normalized, bound, inexact_products}`.
#[pyfunction]
#[pyo3(signature = (a, b, acc="fp32", input=None, product=None, order="sequential", chunk=0, rounding="rne", overflow="ovf", seed=0))]
#[allow(clippy::too_many_arguments)]
fn gemm<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray2<'py, f64>,
    acc: &str,
    input: Option<&str>,
    product: Option<&str>,
    order: &str,
    chunk: usize,
    rounding: &str,
    overflow: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let (m, k) = (a.shape()[0], a.shape()[1]);
    let (k2, n) = (b.shape()[0], b.shape()[1]);
    if k != k2 {
        return Err(PyValueError::new_err(format!(
            "gemm: A is {m}×{k} and B is {k2}×{n}; the inner dimensions must agree"
        )));
    }
    let mut o = GemmOptions::new(format_of(acc)?)
        .order(order.parse::<Order>().map_err(err)?)
        .chunk(chunk)
        .rounding(round_options(rounding, overflow, seed)?);
    if let Some(s) = input {
        o = o.input(Scheme::parse(s).map_err(err)?);
    }
    if let Some(p) = product {
        o = o.product(format_of(p)?);
    }
    let contiguous = |_| PyValueError::new_err("the matrices must be C-contiguous");
    let (av, bv) = (
        a.as_slice().map_err(contiguous)?,
        b.as_slice().map_err(contiguous)?,
    );
    let r = py
        .allow_threads(|| accum::gemm(av, bv, m, n, k, &o))
        .map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("c", shaped(py, r.c, &[m, n])?)?;
    d.set_item("exact", shaped(py, r.exact, &[m, n])?)?;
    d.set_item("max_rel", r.max_rel)?;
    d.set_item("mean_rel", r.mean_rel)?;
    d.set_item("max_normalized", r.max_normalized)?;
    d.set_item("bound", r.bound)?;
    d.set_item("inexact_products", r.inexact_products)?;
    Ok(d)
}

// ---------------------------------------------------------------------------------------
// reductions and metrics
// ---------------------------------------------------------------------------------------

fn arith(name: &str) -> PyResult<Arith> {
    let a = Arith::parse(name).map_err(err)?;
    a.check().map_err(err)?;
    Ok(a)
}

fn f64s<'a>(a: &'a PyReadonlyArrayDyn<'_, f64>) -> PyResult<&'a [f64]> {
    slice(a)
}

#[pyfunction]
#[pyo3(signature = (x, arith="f32"))]
fn softmax_naive<'py>(
    py: Python<'py>,
    x: PyReadonlyArrayDyn<'py, f64>,
    arith: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let ar = self::arith(arith)?;
    let v = f64s(&x)?;
    let out = py.allow_threads(|| reduce::softmax_naive(v, &ar));
    any(py, out, x.shape())
}

#[pyfunction]
#[pyo3(signature = (x, arith="f32"))]
fn softmax_safe<'py>(
    py: Python<'py>,
    x: PyReadonlyArrayDyn<'py, f64>,
    arith: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let ar = self::arith(arith)?;
    let v = f64s(&x)?;
    let out = py.allow_threads(|| reduce::softmax_safe(v, &ar));
    any(py, out, x.shape())
}

#[pyfunction]
#[pyo3(signature = (x, arith="f32"))]
fn online_softmax_stats(
    py: Python<'_>,
    x: PyReadonlyArrayDyn<'_, f64>,
    arith: &str,
) -> PyResult<(f64, f64)> {
    let ar = self::arith(arith)?;
    let v = f64s(&x)?;
    let s = py.allow_threads(|| reduce::online_softmax_stats(v, &ar));
    Ok((s.m, s.d))
}

#[pyfunction]
#[pyo3(signature = (a, b, arith="f32"))]
fn merge_softmax_stats(a: (f64, f64), b: (f64, f64), arith: &str) -> PyResult<(f64, f64)> {
    let ar = self::arith(arith)?;
    let s = reduce::merge_softmax_stats(
        &SoftmaxStats { m: a.0, d: a.1 },
        &SoftmaxStats { m: b.0, d: b.1 },
        &ar,
    );
    Ok((s.m, s.d))
}

#[pyfunction]
#[pyo3(signature = (x, arith="f32"))]
fn variance_one_pass(py: Python<'_>, x: PyReadonlyArrayDyn<'_, f64>, arith: &str) -> PyResult<f64> {
    let ar = self::arith(arith)?;
    let v = f64s(&x)?;
    Ok(py.allow_threads(|| reduce::variance_one_pass(v, &ar)))
}

#[pyfunction]
#[pyo3(signature = (x, arith="f32"))]
fn variance_two_pass(py: Python<'_>, x: PyReadonlyArrayDyn<'_, f64>, arith: &str) -> PyResult<f64> {
    let ar = self::arith(arith)?;
    let v = f64s(&x)?;
    Ok(py.allow_threads(|| reduce::variance_two_pass(v, &ar)))
}

#[pyfunction]
#[pyo3(signature = (x, arith="f32"))]
fn variance_welford(py: Python<'_>, x: PyReadonlyArrayDyn<'_, f64>, arith: &str) -> PyResult<f64> {
    let ar = self::arith(arith)?;
    let v = f64s(&x)?;
    Ok(py.allow_threads(|| reduce::variance_welford(v, &ar)))
}

fn pair<'a>(
    a: &'a PyReadonlyArrayDyn<'_, f64>,
    e: &'a PyReadonlyArrayDyn<'_, f64>,
) -> PyResult<(&'a [f64], &'a [f64])> {
    let (a, e) = (f64s(a)?, f64s(e)?);
    if a.len() != e.len() {
        return Err(PyValueError::new_err(format!(
            "approx has {} elements and exact {}; give arrays of one shape",
            a.len(),
            e.len()
        )));
    }
    Ok((a, e))
}

#[pyfunction]
fn rel_error(
    py: Python<'_>,
    approx: PyReadonlyArrayDyn<'_, f64>,
    exact: PyReadonlyArrayDyn<'_, f64>,
) -> PyResult<f64> {
    let (a, e) = pair(&approx, &exact)?;
    Ok(py.allow_threads(|| lowprec::metrics::rel_error(a, e)))
}

#[pyfunction]
fn sqnr_db(
    py: Python<'_>,
    approx: PyReadonlyArrayDyn<'_, f64>,
    exact: PyReadonlyArrayDyn<'_, f64>,
) -> PyResult<f64> {
    let (a, e) = pair(&approx, &exact)?;
    Ok(py.allow_threads(|| lowprec::metrics::sqnr_db(a, e)))
}

#[pyfunction]
fn max_abs_error(
    py: Python<'_>,
    approx: PyReadonlyArrayDyn<'_, f64>,
    exact: PyReadonlyArrayDyn<'_, f64>,
) -> PyResult<f64> {
    let (a, e) = pair(&approx, &exact)?;
    Ok(py.allow_threads(|| lowprec::metrics::max_abs_error(a, e)))
}

// ---------------------------------------------------------------------------------------
// range-safe binary32
// ---------------------------------------------------------------------------------------

#[pyfunction]
fn block_exponent(py: Python<'_>, values: Elems<'_>) -> PyResult<i32> {
    fn go<T: range::Element + Element>(
        py: Python<'_>,
        a: &PyReadonlyArrayDyn<'_, T>,
    ) -> PyResult<i32> {
        let v = slice(a)?;
        py.allow_threads(|| range::block_exponent(v)).map_err(rerr)
    }
    match &values {
        Elems::F64(a) => go(py, a),
        Elems::F32(a) => go(py, a),
        Elems::C128(a) => go(py, a),
        Elems::C64(a) => go(py, a),
    }
}

/// `(values narrowed to float32/complex64, exponent)`.
#[pyfunction]
fn narrow<'py>(py: Python<'py>, values: Elems<'py>) -> PyResult<(Bound<'py, PyAny>, i32)> {
    match &values {
        Elems::F64(a) => {
            let v = slice(a)?;
            let n = py.allow_threads(|| range::narrow(v)).map_err(rerr)?;
            Ok((any(py, n.values().to_vec(), a.shape())?, n.exponent()))
        }
        Elems::C128(a) => {
            let v = slice(a)?;
            let n = py.allow_threads(|| range::narrow(v)).map_err(rerr)?;
            Ok((any(py, n.values().to_vec(), a.shape())?, n.exponent()))
        }
        _ => Err(PyValueError::new_err(
            "narrow takes a binary64 buffer (float64 or complex128)",
        )),
    }
}

#[pyfunction]
fn state_scale(peak: f64) -> PyResult<f64> {
    range::state_scale(peak).map_err(rerr)
}

/// `(mantissa, exponent)` of the product of `factors` and `2**exponent`.
#[pyfunction]
#[pyo3(signature = (factors, exponent=0))]
fn combine(factors: Vec<f64>, exponent: i32) -> PyResult<(f64, i64)> {
    let c = range::combine(&factors, exponent).map_err(rerr)?;
    Ok((c.mantissa(), c.exponent()))
}

fn coefficient(mantissa: f64, exponent: i64) -> PyResult<range::Coefficient> {
    let e = i32::try_from(exponent)
        .map_err(|_| PyValueError::new_err(format!("exponent {exponent} is out of range")))?;
    range::combine(&[mantissa], e).map_err(rerr)
}

#[pyfunction]
fn coefficient_value(mantissa: f64, exponent: i64) -> PyResult<f64> {
    coefficient(mantissa, exponent)?.value().map_err(rerr)
}

#[pyfunction]
fn coefficient_binary32(mantissa: f64, exponent: i64) -> PyResult<f32> {
    coefficient(mantissa, exponent)?.binary32().map_err(rerr)
}

/// The tree sum along `axis` (the array's own dtype).
#[pyfunction]
fn pairwise_sum<'py>(
    py: Python<'py>,
    values: Elems<'py>,
    axis: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fn go<'py, T: range::Element + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, T>,
        axis: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = slice(a)?;
        let shape = a.shape();
        let out = py
            .allow_threads(|| range::pairwise_sum_axis(v, shape, axis))
            .map_err(rerr)?;
        let mut s = shape.to_vec();
        s.remove(axis.min(s.len().saturating_sub(1)));
        any(py, out, &s)
    }
    match &values {
        Elems::F64(a) => go(py, a, axis),
        Elems::F32(a) => go(py, a, axis),
        Elems::C128(a) => go(py, a, axis),
        Elems::C64(a) => go(py, a, axis),
    }
}

/// The Hillis–Steele scan along `axis` (the array's own dtype and shape).
#[pyfunction]
fn prefix_sum<'py>(
    py: Python<'py>,
    values: Elems<'py>,
    axis: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fn go<'py, T: range::Element + Element>(
        py: Python<'py>,
        a: &PyReadonlyArrayDyn<'py, T>,
        axis: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = slice(a)?;
        let shape = a.shape();
        let out = py
            .allow_threads(|| range::prefix_sum_axis(v, shape, axis))
            .map_err(rerr)?;
        any(py, out, shape)
    }
    match &values {
        Elems::F64(a) => go(py, a, axis),
        Elems::F32(a) => go(py, a, axis),
        Elems::C128(a) => go(py, a, axis),
        Elems::C64(a) => go(py, a, axis),
    }
}

/// Real weights of the values' precision.
#[derive(FromPyObject)]
enum Weights<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
}

#[pyfunction]
#[pyo3(signature = (values, weights=None))]
fn scaled_square_sum(
    py: Python<'_>,
    values: Elems<'_>,
    weights: Option<Weights<'_>>,
) -> PyResult<f64> {
    let mismatch = || PyValueError::new_err("the weights must have the values' real dtype");
    match (&values, &weights) {
        (Elems::F64(a), None) => {
            let v = slice(a)?;
            py.allow_threads(|| range::scaled_square_sum(v, None))
        }
        (Elems::C128(a), None) => {
            let v = slice(a)?;
            py.allow_threads(|| range::scaled_square_sum(v, None))
        }
        (Elems::F32(a), None) => {
            let v = slice(a)?;
            py.allow_threads(|| range::scaled_square_sum(v, None))
        }
        (Elems::C64(a), None) => {
            let v = slice(a)?;
            py.allow_threads(|| range::scaled_square_sum(v, None))
        }
        (Elems::F64(a), Some(Weights::F64(w))) => {
            let (v, w) = (slice(a)?, slice(w)?);
            py.allow_threads(|| range::scaled_square_sum(v, Some(w)))
        }
        (Elems::C128(a), Some(Weights::F64(w))) => {
            let (v, w) = (slice(a)?, slice(w)?);
            py.allow_threads(|| range::scaled_square_sum(v, Some(w)))
        }
        (Elems::F32(a), Some(Weights::F32(w))) => {
            let (v, w) = (slice(a)?, slice(w)?);
            py.allow_threads(|| range::scaled_square_sum(v, Some(w)))
        }
        (Elems::C64(a), Some(Weights::F32(w))) => {
            let (v, w) = (slice(a)?, slice(w)?);
            py.allow_threads(|| range::scaled_square_sum(v, Some(w)))
        }
        _ => return Err(mismatch()),
    }
    .map_err(rerr)
}

#[pyfunction]
fn launch_peak(
    py: Python<'_>,
    field: PyReadonlyArrayDyn<'_, Complex64>,
    kind: &str,
) -> PyResult<f64> {
    let kind: range::GridKind = kind.parse().map_err(rerr)?;
    let v = slice(&field)?;
    let n = row_len(field.shape());
    py.allow_threads(|| range::launch_peak(v, n, kind))
        .map_err(rerr)
}

/// The shared single-precision refusals (`ValueError` naming the refusal).
#[pyfunction]
#[pyo3(signature = (precision, engine, engines, multistep, rtol, schedule, study=false))]
#[allow(clippy::too_many_arguments)]
fn admit(
    precision: &str,
    engine: &str,
    engines: Vec<String>,
    multistep: bool,
    rtol: Option<f64>,
    schedule: bool,
    study: bool,
) -> PyResult<()> {
    let p: range::Precision = precision.parse().map_err(rerr)?;
    let policy = range::AdmissionPolicy::new(engines);
    let mut r = range::Request::new(p, engine)
        .multistep(multistep)
        .schedule(schedule);
    if let Some(t) = rtol {
        r = r.rtol(t);
    }
    let _guard = study.then(range::study_admission);
    range::admit(&policy, &r).map_err(rerr)
}

/// Check a precision pair (`ValueError` for an unknown name or a mixed pair).
#[pyfunction]
fn check_precision(state: &str, source: &str) -> PyResult<String> {
    let p = range::Precision::new(state.parse().map_err(rerr)?, source.parse().map_err(rerr)?)
        .map_err(rerr)?;
    Ok(p.name().as_str().to_string())
}

// ---------------------------------------------------------------------------------------
// operations rounded once (`lowprec::ops`; the Python API is `python/lowprec/ops.py`)
// ---------------------------------------------------------------------------------------

fn op_of(name: &str) -> PyResult<Op> {
    Op::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown operation {name:?}; the operations are {} (any case, `_`/`-` ignored; aliases sub, mul, div, neg, min, max, lt, le, eq, gt, ge, nextup, nextdown)",
            Op::names()
        ))
    })
}

fn projection(rounding: &str, saturation: &str, draft: &str) -> PyResult<Projection> {
    Ok(Projection {
        rounding: rounding.parse::<Rounding>().map_err(err)?,
        saturation: saturation.parse::<Saturation>().map_err(err)?,
        draft: draft.parse::<Draft>().map_err(err)?,
    })
}

/// `(name, arity, kind)` of an operation; `kind` is `numeric`, `same_format`, `boolean` or
/// `class`.
#[pyfunction]
fn ops_info(op: &str) -> PyResult<(&'static str, usize, &'static str)> {
    let o = op_of(op)?;
    let kind = match o.kind() {
        Kind::Numeric => "numeric",
        Kind::SameFormat => "same_format",
        Kind::Boolean => "boolean",
        Kind::Class => "class",
    };
    Ok((o.name(), o.arity(), kind))
}

/// `(draft name, random bits)` of a rounding (`rne`, `sra8`, `StochasticC:12`, …; 0 bits
/// for the deterministic roundings).
#[pyfunction]
fn ops_rounding(rounding: &str) -> PyResult<(String, u32)> {
    let r = rounding.parse::<Rounding>().map_err(err)?;
    Ok((r.name(), r.random_bits()))
}

/// The draft's names of every operation.
#[pyfunction]
fn ops_names() -> Vec<&'static str> {
    Op::ALL.iter().map(|o| o.name()).collect()
}

/// The format queries of the draft (§4.14) as a dict, in the draft's order.
#[pyfunction]
fn ops_queries<'py>(py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyDict>> {
    let f = format_of(format)?;
    let d = PyDict::new(py);
    for (k, v) in ops::queries(&f) {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// The `R` of element `i` (0 for the deterministic roundings): the given words or the
/// counter-based generator's.
fn random_of(prj: &Projection, random: Random<'_>, i: usize) -> u32 {
    let nbits = prj.rounding.random_bits();
    if nbits == 0 {
        return 0;
    }
    match random {
        Random::Given(r) => r[i],
        Random::Seeded { seed, index_offset } => {
            lowprec::round::random_bits(seed, index_offset + i as u64) >> (32 - nbits)
        }
    }
}

fn random_source<'a>(
    seed: u64,
    random: Option<&'a [u32]>,
    n: usize,
    prj: &Projection,
) -> PyResult<Random<'a>> {
    let Some(r) = random else {
        return Ok(Random::seeded(seed));
    };
    if r.len() != n {
        return Err(PyValueError::new_err(format!(
            "{} random words for {n} elements; give one per element",
            r.len()
        )));
    }
    let nbits = prj.rounding.random_bits();
    if nbits > 0 && nbits < 32 {
        if let Some((i, bad)) = r.iter().enumerate().find(|(_, &x)| x >> nbits != 0) {
            return Err(PyValueError::new_err(format!(
                "random word {bad} (element {i}) is not below 2^{nbits}; give {nbits}-bit values for {}",
                prj.rounding.name()
            )));
        }
    }
    Ok(Random::Given(r))
}

/// Number literals (decimals of any length, hexadecimal floats, inf, nan) read exactly and
/// projected once into `format` (`lowprec::ops::project_literal`): the codes (uint64). With
/// `which`, element `i` is `literals[which[i]]` (each literal parsed once). Under a
/// stochastic rounding element `i` takes `random[i]`, or the generator's word `i` of `seed`.
#[pyfunction]
#[pyo3(signature = (literals, format, rounding="rne", saturation="none", draft="d1", seed=0, random=None, which=None))]
#[allow(clippy::too_many_arguments)]
fn ops_literals<'py>(
    py: Python<'py>,
    literals: Vec<String>,
    format: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
    seed: u64,
    random: Option<PyReadonlyArrayDyn<'py, u32>>,
    which: Option<PyReadonlyArrayDyn<'py, u64>>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let f = format_of(format)?;
    let prj = projection(rounding, saturation, draft)?;
    // each literal's exact value as the projection sees it (it does not depend on `R`)
    let parsed = literals
        .iter()
        .map(|s| {
            let x = lowprec::exact::Exact::parse(s).map_err(err)?;
            Ok(ops::project_literal(&x, &f, &prj, 0).0)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let p3109 = f.specials().is_p3109();
    let which = which.as_ref().map(slice).transpose()?;
    if let Some(&bad) = which.and_then(|w| w.iter().find(|&&k| k as usize >= parsed.len())) {
        return Err(PyValueError::new_err(format!(
            "literal index {bad} for {} literals",
            parsed.len()
        )));
    }
    let n = which.map_or(parsed.len(), <[u64]>::len);
    let r = random.as_ref().map(slice).transpose()?;
    let src = random_source(seed, r, n, &prj)?;
    let codes = py.allow_threads(|| -> Result<Vec<u64>, String> {
        (0..n)
            .map(|i| {
                let k = which.map_or(i, |w| w[i] as usize);
                let o = ops::project(&f, parsed[k], &prj, p3109, random_of(&prj, src, i));
                o.code.ok_or_else(|| {
                    format!(
                        "the literal {:?} is NaN and {} has no NaN",
                        literals[k],
                        f.name()
                    )
                })
            })
            .collect()
    });
    Ok(PyArray1::from_vec(
        py,
        codes.map_err(PyValueError::new_err)?,
    ))
}

/// One operation over equally long arrays of codes (`[(format, uint64 codes), ...]`), the
/// result projected once into `out` (`lowprec::ops::apply`, the GIL released): the result
/// codes (uint64; 0/1 for boolean operations, class indices for Class) and the counts.
#[pyfunction]
#[pyo3(signature = (op, operands, out, rounding="rne", saturation="none", draft="d1", seed=0, random=None))]
#[allow(clippy::too_many_arguments)]
fn ops_apply<'py>(
    py: Python<'py>,
    op: &str,
    operands: Vec<(String, PyReadonlyArrayDyn<'py, u64>)>,
    out: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
    seed: u64,
    random: Option<PyReadonlyArrayDyn<'py, u32>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let o = op_of(op)?;
    let out_f = format_of(out)?;
    let prj = projection(rounding, saturation, draft)?;
    let mut args: Vec<(FloatFormat, &[u64])> = Vec::with_capacity(operands.len());
    for (spec, codes) in &operands {
        args.push((format_of(spec)?, slice(codes)?));
    }
    let shape: Vec<usize> = operands
        .first()
        .map_or_else(|| vec![0], |(_, a)| a.shape().to_vec());
    let n: usize = shape.iter().product();
    let r = random.as_ref().map(slice).transpose()?;
    let src = random_source(seed, r, n, &prj)?;
    let (codes, c) = fill::<u64, _>(py, &shape, |d| ops::apply(o, &args, &out_f, &prj, src, d))?;
    let d = PyDict::new(py);
    d.set_item("total", c.total)?;
    d.set_item("inexact", c.inexact)?;
    d.set_item("overflow", c.overflow)?;
    d.set_item("underflow", c.underflow)?;
    d.set_item("invalid", c.invalid)?;
    d.set_item("saturated", c.saturated)?;
    d.set_item("nan", c.nan)?;
    Ok((codes.into_any(), d))
}

/// A block of the Python API: `(scale format, scale code, element format, codes)`.
type PyBlock<'py> = (String, u64, String, PyReadonlyArray1<'py, u64>);

/// The formats and codes of a [`PyBlock`].
fn block_parts<'a>(b: &'a PyBlock<'_>) -> PyResult<(FloatFormat, u64, FloatFormat, &'a [u64])> {
    let codes = b
        .3
        .as_slice()
        .map_err(|_| PyValueError::new_err("block codes must be a contiguous 1-D uint64 array"))?;
    Ok((format_of(&b.0)?, b.1, format_of(&b.2)?, codes))
}

/// The accumulator of an approximate block operation (`acc` a format name, `method`
/// sequential / pairwise / kahan), or `None` for the exact operation.
fn block_acc(acc: Option<&str>, method: &str) -> PyResult<Option<AccumOptions>> {
    acc.map(|a| Ok(AccumOptions::new(format_of(a)?).method(method.parse::<Method>().map_err(err)?)))
        .transpose()
}

/// BlockDotProduct, BlockReduceAdd and BlockReduceMultiply (`lowprec::ops::block`): `b`
/// `None` reduces `a` (`multiply`: the product); `acc` `None` computes the exact result
/// rounded once, else the accumulator's value (an `acc` accumulator, `method` order)
/// projected into `out`. The result code (`None` for a NaN in a format without one) and the
/// flags.
#[pyfunction]
#[pyo3(signature = (a, b, out, rounding="rne", saturation="none", draft="d1", acc=None, method="sequential", random=0, multiply=false))]
#[allow(clippy::too_many_arguments)]
fn ops_block<'py>(
    py: Python<'py>,
    a: PyBlock<'py>,
    b: Option<PyBlock<'py>>,
    out: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
    acc: Option<&str>,
    method: &str,
    random: u32,
    multiply: bool,
) -> PyResult<(Option<u64>, u8)> {
    use lowprec::ops::block::{self as blk, Block};
    if multiply && (b.is_some() || acc.is_some()) {
        return Err(PyValueError::new_err(
            "BlockReduceMultiply takes one block and no accumulator: drop b and acc",
        ));
    }
    let out_f = format_of(out)?;
    let prj = projection(rounding, saturation, draft)?;
    let acc = block_acc(acc, method)?;
    let (sf, sc, ef, codes) = block_parts(&a)?;
    let a = Block::new(sf, sc, ef, codes);
    let b = b.as_ref().map(block_parts).transpose()?;
    let r = py.allow_threads(|| match (b, acc) {
        (Some((sf, sc, ef, codes)), None) => {
            blk::block_dot_product(&a, &Block::new(sf, sc, ef, codes), &out_f, &prj, random)
        }
        (Some((sf, sc, ef, codes)), Some(o)) => blk::block_dot_product_approx(
            &a,
            &Block::new(sf, sc, ef, codes),
            &out_f,
            &prj,
            &o,
            random,
        ),
        (None, None) if multiply => blk::block_reduce_multiply(&a, &out_f, &prj, random),
        (None, None) => blk::block_reduce_add(&a, &out_f, &prj, random),
        (None, Some(o)) => blk::block_reduce_add_approx(&a, &out_f, &prj, &o, random),
    });
    let o = r.map_err(err)?;
    Ok((o.code, o.flags))
}

/// ConvertToBlock with the caller's scale (`scale` a code of `scale_format`), or with
/// `scale` `None` ConvertToBlockMaxAbsFinite (`target` `one` as the draft or `max-finite`,
/// the scale rounded toward +∞ with SatFinite): `(scale code, uint64 element codes)`.
#[pyfunction]
#[pyo3(signature = (x, format, scale_format, scale=None, target="one", rounding="rne", saturation="none", draft="d1", seed=0))]
#[allow(clippy::too_many_arguments)]
fn ops_to_block<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    format: &str,
    scale_format: &str,
    scale: Option<u64>,
    target: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
    seed: u64,
) -> PyResult<(u64, Bound<'py, PyArray1<u64>>)> {
    use lowprec::ops::block::{self as blk, ScaleRule, ScaleTarget};
    let (ef, sf) = (format_of(format)?, format_of(scale_format)?);
    let prj = projection(rounding, saturation, draft)?;
    let x = x
        .as_slice()
        .map_err(|_| PyValueError::new_err("x must be a contiguous 1-D float64 array"))?;
    let rnd = Random::seeded(seed);
    let r = match scale {
        Some(s) => py
            .allow_threads(|| blk::convert_to_block(x, s, &sf, &ef, &prj, rnd))
            .map(|(c, _)| (s, c)),
        None => {
            let target = ScaleTarget::parse(target).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown scale target `{target}`; use one (the draft) or max-finite"
                ))
            })?;
            let rule = ScaleRule {
                target,
                ..ScaleRule::default()
            };
            py.allow_threads(|| blk::convert_to_block_max_abs_finite(x, &ef, &sf, &rule, &prj, rnd))
                .map(|(s, c, _)| (s, c))
        }
    };
    let (s, codes) = r.map_err(err)?;
    Ok((s, PyArray1::from_vec(py, codes)))
}

/// ConvertFromBlock: each `scale · x_i` exact, projected once into `out` (uint64 codes).
#[pyfunction]
#[pyo3(signature = (block, out, rounding="rne", saturation="none", draft="d1", seed=0))]
fn ops_from_block<'py>(
    py: Python<'py>,
    block: PyBlock<'py>,
    out: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    use lowprec::ops::block::{self as blk, Block};
    let out_f = format_of(out)?;
    let prj = projection(rounding, saturation, draft)?;
    let (sf, sc, ef, codes) = block_parts(&block)?;
    let b = Block::new(sf, sc, ef, codes);
    let rnd = Random::seeded(seed);
    let (c, _) = py
        .allow_threads(|| blk::convert_from_block(&b, &out_f, &prj, rnd))
        .map_err(err)?;
    Ok(PyArray1::from_vec(py, c))
}

/// An elementwise block operation (§5.4, `lowprec::ops::block::block_elementwise`): `op` on
/// the blocks (one per operand), into the result block of scale `result_scale`
/// (`(scale_format, code)`): the uint64 element codes.
#[pyfunction]
#[pyo3(signature = (op, blocks, result_scale, out, rounding="rne", saturation="none", draft="d1", seed=0))]
#[allow(clippy::too_many_arguments)]
fn ops_block_map<'py>(
    py: Python<'py>,
    op: &str,
    blocks: Vec<PyBlock<'py>>,
    result_scale: (String, u64),
    out: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    use lowprec::ops::block::{self as blk, Block};
    let o = op_of(op)?;
    let out_f = format_of(out)?;
    let prj = projection(rounding, saturation, draft)?;
    let parts = blocks
        .iter()
        .map(block_parts)
        .collect::<PyResult<Vec<_>>>()?;
    let bs: Vec<Block> = parts
        .iter()
        .map(|&(sf, sc, ef, codes)| Block::new(sf, sc, ef, codes))
        .collect();
    let sr = (format_of(&result_scale.0)?, result_scale.1);
    let rnd = Random::seeded(seed);
    let (c, _) = py
        .allow_threads(|| blk::block_elementwise(o, &bs, sr, &out_f, &prj, &rnd))
        .map_err(err)?;
    Ok(PyArray1::from_vec(py, c))
}

/// Every result of a one- or two-operand operation on formats of at most 8 bits
/// (`lowprec::ops::full_table`): uint64 codes at `(a << bits_b) | b`. A NaN result in a
/// format without NaN is a `ValueError` naming the operands' codes.
#[pyfunction]
#[pyo3(signature = (op, formats, out, rounding="rne", saturation="none", draft="d1"))]
fn ops_table<'py>(
    py: Python<'py>,
    op: &str,
    formats: Vec<String>,
    out: &str,
    rounding: &str,
    saturation: &str,
    draft: &str,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let o = op_of(op)?;
    let fmts = formats
        .iter()
        .map(|s| format_of(s))
        .collect::<PyResult<Vec<_>>>()?;
    let out_f = format_of(out)?;
    let prj = projection(rounding, saturation, draft)?;
    let t = py
        .allow_threads(|| ops::full_table(o, &fmts, &out_f, &prj))
        .map_err(err)?;
    let codes = t
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.code.ok_or_else(|| {
                let which = match fmts.as_slice() {
                    [_, b] => format!("({}, {})", i >> b.bits(), i as u64 & b.max_code()),
                    _ => format!("{i}"),
                };
                PyValueError::new_err(format!(
                    "{o} of the codes {which} is NaN and {} has no NaN; choose a result format with a NaN",
                    out_f.name()
                ))
            })
        })
        .collect::<PyResult<Vec<u64>>>()?;
    Ok(PyArray1::from_vec(py, codes))
}

/// ggml's tensor types: `(name, number, block size, bytes per block, dequantize?, quantize?)`.
#[pyfunction]
fn ggml_types() -> Vec<(&'static str, u32, usize, usize, bool, bool)> {
    ggml::GgmlType::ALL
        .iter()
        .map(|t| {
            (
                t.name(),
                t.id(),
                t.block_size(),
                t.type_size(),
                t.can_dequantize(),
                t.can_quantize(),
            )
        })
        .collect()
}

/// Dequantize the raw bytes of a ggml tensor (uint8, last axis a whole number of blocks) to
/// float32, `block_size` values per `type_size` bytes along the last axis.
#[pyfunction]
fn ggml_dequantize<'py>(
    py: Python<'py>,
    data: PyReadonlyArrayDyn<'py, u8>,
    qtype: &str,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let t: ggml::GgmlType = qtype.parse().map_err(err)?;
    let mut shape = data.shape().to_vec();
    let last = row_len(&shape);
    if last % t.type_size() != 0 {
        return Err(PyValueError::new_err(format!(
            "{t}: the last axis ({last} bytes) is not a whole number of {}-byte blocks",
            t.type_size()
        )));
    }
    if let Some(l) = shape.last_mut() {
        *l = last / t.type_size() * t.block_size();
    } else {
        shape.push(t.block_size());
    }
    let src = slice(&data)?;
    Ok(fill(py, &shape, |out: &mut [f32]| ggml::dequantize(t, src, out))?.0)
}

/// Quantize float32 values (last axis a whole number of blocks) to the raw bytes of a ggml
/// type, bit for bit as the `gguf` package's `quants.quantize`.
#[pyfunction]
fn ggml_quantize<'py>(
    py: Python<'py>,
    data: PyReadonlyArrayDyn<'py, f32>,
    qtype: &str,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let t: ggml::GgmlType = qtype.parse().map_err(err)?;
    let mut shape = data.shape().to_vec();
    let last = row_len(&shape);
    if last % t.block_size() != 0 {
        return Err(PyValueError::new_err(format!(
            "{t}: the last axis ({last} values) is not a whole number of blocks of {}",
            t.block_size()
        )));
    }
    if let Some(l) = shape.last_mut() {
        *l = last / t.block_size() * t.type_size();
    } else {
        shape.push(t.type_size());
    }
    let src = slice(&data)?;
    Ok(fill(py, &shape, |out: &mut [u8]| ggml::quantize(t, src, out))?.0)
}

#[pymodule]
fn _lowprec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SINGLE_RTOL_FLOOR", range::SINGLE_RTOL_FLOOR)?;
    m.add("OPS_CLASS_NAMES", ops::CLASS_NAMES.to_vec())?;
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        format_info,
        make_format,
        preset_names,
        round,
        encode,
        round_exact,
        decode,
        fields,
        all_values,
        format_bits_str,
        int_range,
        twos_complement_encode,
        twos_complement_decode,
        bits_str,
        wrap_int,
        saturate_int,
        mx_quantize,
        nvfp4_quantize,
        tensor_scaled,
        quantize_int,
        quantize,
        quantize_file,
        dequantize_file,
        scheme_presets,
        pack,
        unpack,
        report,
        checkpoint_tensors,
        report_partial,
        report_finish,
        quantize_shard,
        write_shard_index,
        quantize_checkpoint,
        accumulate,
        gemm,
        softmax_naive,
        softmax_safe,
        online_softmax_stats,
        merge_softmax_stats,
        variance_one_pass,
        variance_two_pass,
        variance_welford,
        rel_error,
        sqnr_db,
        max_abs_error,
        block_exponent,
        narrow,
        state_scale,
        combine,
        coefficient_value,
        coefficient_binary32,
        pairwise_sum,
        prefix_sum,
        scaled_square_sum,
        launch_peak,
        admit,
        check_precision,
        ops_info,
        ops_rounding,
        ops_names,
        ops_queries,
        ops_literals,
        ops_apply,
        ops_block,
        ops_to_block,
        ops_from_block,
        ops_block_map,
        ops_table,
        ggml_types,
        ggml_dequantize,
        ggml_quantize,
    );
    Ok(())
}
