"""lowprec: bit-exact low-precision number formats for numpy.

Two APIs over one Rust core (``lowprec._lowprec``):

* **the seed's** (``numfmt.py``), same names and signatures, so that ``import lowprec as
  numfmt`` runs code written for the seed: :class:`FloatFormat` and the presets ``FP32`` …
  ``FP4_E2M1``, ``FORMATS``, ``BY_NAME``; the integer helpers; ``mx_quantize``,
  ``nvfp4_quantize``, ``tensor_scaled``, ``quantize_int``; ``accumulate``; softmax and
  variance; ``rel_error``, ``sqnr_db``; and the range rules of ``solprop_precision``
  (``Precision`` … ``scaled_square_sum``);
* **lowprec's own**: :func:`round`, :func:`encode`, :func:`decode`, :func:`quantize`,
  :func:`pack` / :func:`unpack`, :func:`report` / :func:`report_frame`,
  :func:`accumulate_native` / :func:`gemm`, every format by name (``"fp8-e4m3"``,
  ``"e4m3b7:fn"``, …), every mode (``rne rna rtz rup rdn rto sr``), ``ovf``/``sat``;
  ``as_ml_dtypes=True`` returns arrays of ml_dtypes' dtypes (``float8_e4m3fn`` …, see
  :func:`ml_dtype`), and ml_dtypes arrays are accepted as inputs.

Where lowprec differs from the seed on purpose (IEEE 754 / OCP are right and the seed is
not), lowprec keeps its answer:

1. round-toward-zero overflow gives ±max (IEEE 754 §7.4), the seed Inf/NaN;
2. round-half-away just below half the smallest subnormal gives ±0, the seed ±min_subnormal;
3. an all-zero MX block has the scale 2^-127 (E8M0 code 0), the seed 2^-emax;
4. symmetric integer quantization of a small negative input gives +0 (the value of code 0),
   the seed -0;
5. accumulation rounds the exact sum once (the seed rounds a binary64 sum, a double rounding
   under directed modes), and a pairwise sum of one term is rounded;
6. ``rel_error(0, 0)`` is 0 (the seed: inf).

All the work on arrays runs in Rust with the GIL released; this file only moves arguments.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
import os

import numpy as np

from . import _lowprec
from ._lowprec import (  # noqa: F401  (re-exported native API)
    admit,
    all_values,
    block_exponent as _block_exponent,
    format_info,
    gemm as _gemm,
    preset_names,
)

__all__ = [
    # seed API
    "FloatFormat", "ROUNDING_MODES", "FP32", "TF32", "FP16", "BF16", "FP8_E4M3", "FP8_E5M2",
    "FP6_E3M2", "FP6_E2M3", "FP4_E2M1", "FORMATS", "BY_NAME", "int_range",
    "twos_complement_encode", "twos_complement_decode", "bits_str", "wrap_int", "saturate_int",
    "bf16_bit_trick", "mx_quantize", "nvfp4_quantize", "tensor_scaled", "quantize_int",
    "accumulate", "softmax_naive", "softmax_safe", "online_softmax_stats",
    "merge_softmax_stats", "variance_one_pass", "variance_two_pass", "variance_welford",
    "rel_error", "sqnr_db",
    # range rules
    "Precision", "PrecisionName", "DOUBLE", "SINGLE", "SINGLE_PRECISION_BACKENDS",
    "SINGLE_RTOL_FLOOR", "precision_named", "admit_precision", "study_admission",
    "block_exponent", "Narrowed", "narrow", "state_scale", "launch_peak", "Coefficient",
    "combine", "pairwise_sum", "prefix_sum", "scaled_square_sum",
    # native API
    "round", "encode", "round_exact", "decode", "quantize", "quantize_file", "dequantize_file", "schemes",
    "pack", "unpack", "report", "report_frame", "quantize_checkpoint", "ggml_types", "ggml_quantize", "ggml_dequantize",
    "ml_dtype", "accumulate_native", "gemm", "format_info", "preset_names", "max_abs_error",
]

ROUNDING_MODES = ("nearest_even", "toward_zero", "nearest_away", "stochastic")


# ---------------------------------------------------------------------------------------
# argument plumbing
# ---------------------------------------------------------------------------------------
def _np(x):
    """An array as numpy sees it: numpy arrays as they are; anything speaking the DLPack
    protocol (torch CPU tensors, JAX and other array libraries) through ``np.from_dlpack``,
    without a copy; anything else through ``np.asarray``."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError, ValueError) as e:
            if "bfloat16" in str(getattr(x, "dtype", "")) and hasattr(x, "view"):
                # numpy has no bfloat16: its bits, viewed as ml_dtypes' bfloat16
                import ml_dtypes  # noqa: PLC0415
                return np.from_dlpack(x.view(_int16_of(x))).view(ml_dtypes.bfloat16)
            raise TypeError(f"cannot read this {type(x).__name__} through DLPack ({e}); "
                            "move it to the CPU (x.cpu()) or pass a numpy array") from None
    return np.asarray(x)


def _int16_of(x):
    """The 16-bit integer dtype of the array library of `x` (torch.int16 for torch)."""
    mod = type(x).__module__.split(".")[0]
    return getattr(__import__(mod), "int16")


def _torch(a, as_torch):
    """`a`, or with ``as_torch`` the same memory as a torch tensor (``torch.from_dlpack``)."""
    if not as_torch:
        return a
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise ImportError("as_torch=True needs torch: pip install torch") from None
    return torch.from_dlpack(np.ascontiguousarray(a))


def _floats(x, f64=False):
    """A C-contiguous float32 or float64 array (float64 for anything else, or with f64)."""
    a = _np(x)
    if a.dtype == np.float64 or (a.dtype == np.float32 and not f64):
        return _c(a)
    if True:
        if a.dtype.kind in "biuf" or a.dtype == object or f64:
            a = a.astype(np.float64)
        elif a.dtype.kind == "V" or a.dtype.itemsize <= 2:  # ml_dtypes (bfloat16, float8_*)
            a = a.astype(np.float32)
        else:
            raise TypeError(f"expected real numbers, got an array of {a.dtype}")
    return _c(a)


def _c(a):
    """C-contiguous (np.ascontiguousarray would make a 0-d array 1-d)."""
    return a if a.flags.c_contiguous else np.copy(a, order="C")


def _out(a, x):
    """A 0-d result as a numpy scalar, as numpy's own operations return it."""
    return a[()] if np.ndim(x) == 0 else a


def _spec(fmt):
    """A format argument as the name the core parses: a FloatFormat or a string."""
    if isinstance(fmt, FloatFormat):
        return fmt._spec
    if isinstance(fmt, str):
        return fmt
    raise TypeError(f"expected a FloatFormat or a format name, got {type(fmt).__name__}")


def _seed_of(rng, seed):
    """The counter-based generator's key: an int rng is the seed, a numpy Generator gives one."""
    if rng is None:
        return seed
    if isinstance(rng, (int, np.integer)):
        return int(rng)
    return int(rng.integers(0, 2**63))


# ---------------------------------------------------------------------------------------
# the native API
# ---------------------------------------------------------------------------------------
# (signed, exp_bits, man_bits, bias, special, zero) -> the numpy / ml_dtypes dtype of that
# bit layout (codes right-aligned in one or two bytes, as ml_dtypes stores them)
_NUMPY_DTYPES = {
    (True, 5, 10, 15, "ieee", True): "float16",
    (True, 8, 23, 127, "ieee", True): "float32",
    (True, 11, 52, 1023, "ieee", True): "float64",
}
_ML_DTYPES = {
    (True, 8, 7, 127, "ieee", True): "bfloat16",
    (True, 4, 3, 7, "fn", True): "float8_e4m3fn",
    (True, 5, 2, 15, "ieee", True): "float8_e5m2",
    (True, 4, 3, 8, "fnuz", True): "float8_e4m3fnuz",
    (True, 5, 2, 16, "fnuz", True): "float8_e5m2fnuz",
    (True, 4, 3, 11, "fnuz", True): "float8_e4m3b11fnuz",
    (True, 4, 3, 7, "ieee", True): "float8_e4m3",
    (True, 3, 4, 3, "ieee", True): "float8_e3m4",
    (True, 3, 2, 3, "none", True): "float6_e3m2fn",
    (True, 2, 3, 1, "none", True): "float6_e2m3fn",
    (True, 2, 1, 1, "none", True): "float4_e2m1fn",
    (False, 8, 0, 127, "fn", False): "float8_e8m0fnu",
}


def _layout(fmt):
    i = format_info(_spec(fmt))
    return (i["signed"], i["exp_bits"], i["man_bits"], i["bias"], i["special"], i["zero"]), i


def ml_dtype(format):
    """The numpy dtype whose bit layout is `format`'s: ml_dtypes' (``fp8-e4m3`` →
    ``float8_e4m3fn``, ``fp8-e5m2`` → ``float8_e5m2``, the fnuz types, ``fp6-e3m2`` →
    ``float6_e3m2fn``, ``fp6-e2m3`` → ``float6_e2m3fn``, ``fp4-e2m1`` → ``float4_e2m1fn``,
    ``e8m0`` → ``float8_e8m0fnu``, ``bf16`` → ``bfloat16``, custom ``e4m3b11:fnuz``,
    ``e4m3:ieee``, ``e3m4:ieee``) or numpy's own (``fp16``, ``fp32``, ``fp64``). A
    ValueError when there is none or ml_dtypes is not installed."""
    key, info = _layout(format)
    if key in _NUMPY_DTYPES:
        return np.dtype(_NUMPY_DTYPES[key])
    name = _ML_DTYPES.get(key)
    if name is None:
        raise ValueError(f"ml_dtypes has no dtype with the bit layout of {info['name']} "
                         f"({info['spec']}); use the codes (uint) or the float values instead")
    try:
        import ml_dtypes
    except ImportError:
        raise ValueError(f"{info['name']} as a numpy dtype needs ml_dtypes ({name}): "
                         "pip install ml-dtypes") from None
    if not hasattr(ml_dtypes, name):
        raise ValueError(f"ml_dtypes {getattr(ml_dtypes, '__version__', '?')} has no {name} "
                         f"(the dtype of {info['name']}): pip install -U ml-dtypes")
    return np.dtype(getattr(ml_dtypes, name))


def _uint(itemsize):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize]


def _view(codes, fmt):
    """Codes (right-aligned unsigned ints) viewed as the dtype of `fmt`: the same bits."""
    dt = ml_dtype(fmt)
    c = np.asarray(codes)
    return _c(c.astype(_uint(dt.itemsize), copy=False)).view(dt)


def _is_float_dtype(dt):
    """numpy's and ml_dtypes' floating dtypes (bfloat16, float8_*, float6_*, float4_*)."""
    return dt.kind == "f" or (dt.kind == "V" and dt.name.startswith(("float", "bfloat")))


def round(x, format, rounding="rne", overflow="ovf", seed=0, index_offset=0,  # noqa: A001
          as_ml_dtypes=False, as_torch=False):
    """Round `x` into `format` (one rounding of the exact input). float32 in, float32 out
    where the format's values fit binary32; otherwise float64. With ``as_ml_dtypes``, the
    rounded values as an array of the format's own dtype (:func:`ml_dtype`: the codes viewed
    as ``float8_e4m3fn`` …; a value with no code, such as NaN in fp4, is a ValueError).
    ml_dtypes / float16 / bfloat16 inputs are widened exactly; torch tensors and other
    DLPack arrays are read without a copy, and ``as_torch=True`` returns a torch tensor."""
    if as_ml_dtypes:
        return encode(x, format, rounding, overflow, seed, index_offset, as_ml_dtypes=True)
    a = _floats(x)
    r = _lowprec.round(a, _spec(format), rounding, overflow, seed, index_offset)
    return _torch(r, True) if as_torch else _out(r, a)


def encode(x, format, rounding="rne", overflow="ovf", seed=0, index_offset=0,
           as_ml_dtypes=False, as_torch=False):
    """Round `x` into `format` and return the codes (uint8/16/32/64 by the format's width),
    or with ``as_ml_dtypes`` the codes viewed as the format's dtype (:func:`ml_dtype`), or
    with ``as_torch`` as a torch tensor."""
    if as_ml_dtypes:
        ml_dtype(format)  # no dtype: fail before the work
    a = _floats(x)
    c = _lowprec.encode(a, _spec(format), rounding, overflow, seed, index_offset)
    if as_torch:
        return _torch(c, True)
    return _out(_view(c, format) if as_ml_dtypes else c, a)


def round_exact(literals, format, rounding="rne", overflow="ovf", seed=0):
    """Read number strings exactly (decimals of any length, hexadecimal floats such as
    ``"0x1.8p-3"``, ``"inf"``, ``"nan"``) and round each once into `format`: returns
    ``(values, codes)``, float64 and uint64 arrays. A float is taken as its exact binary64
    value. Reading a decimal through float64 first would round twice:

    >>> import lowprec
    >>> lowprec.round_exact(["1.00390625000000000001"], "bf16")[0].tolist()
    [1.0078125]
    >>> float(lowprec.round(1.00390625000000000001, "bf16"))
    1.0
    """
    if isinstance(literals, (str, float, int)):
        literals = [literals]
    texts = [s if isinstance(s, str) else float(s).hex() for s in literals]
    return _lowprec.round_exact(texts, _spec(format), rounding, overflow, seed)


def decode(codes, format, as_ml_dtypes=False, as_torch=False):
    """The float64 values of `codes` (a code above the format's largest is a ValueError).
    `codes` may also be an array of the format's own dtype (``float8_e4m3fn`` … for
    fp8-e4m3): its bits are the codes. With ``as_ml_dtypes``, the codes viewed as the
    format's dtype instead of float64 values; with ``as_torch``, a torch tensor."""
    if as_torch:
        return _torch(decode(codes, format), True)
    c = _c(_np(codes))
    if c.dtype.kind not in "iu":
        own = None
        if _is_float_dtype(c.dtype) and c.dtype.itemsize <= 2:  # ml_dtypes, float16
            _layout(format)  # an unknown format is a ValueError
            try:
                own = ml_dtype(format)
            except ValueError:  # no dtype of this layout, or no ml_dtypes
                pass
        if own is None or c.dtype != own:
            want = f" or an array of {own}" if own is not None else ""
            raise TypeError(f"codes must be integers{want}, got an array of {c.dtype}")
        c = c.view(_uint(c.dtype.itemsize))
    if c.dtype not in (np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64):
        c = c.astype(np.int64)
    if as_ml_dtypes:
        _, info = _layout(format)
        if c.size and (c.min() < 0 or c.max() > info["max_code"]):
            bad = c.min() if c.min() < 0 else c.max()
            raise ValueError(f"code {int(bad):#x} does not fit in {info['name']}'s "
                             f"{info['bits']} bits (largest code {info['max_code']:#x})")
        return _out(_view(c, format), c)
    return _out(_lowprec.decode(c, _spec(format)), c)


def quantize(x, scheme, packed=False, as_ml_dtypes=False):
    """Quantize along the last axis by a named scheme (``mxfp4``, ``mx:fp8-e4m3:block=32``,
    ``nvfp4``, ``int4:group=128``, ``tensor:fp8-e4m3``, ``fp8-e5m2`` …): a dict with
    ``values``, ``codes``, ``code_bits``, ``element_format``, ``scales`` (float64, integer and
    tensor schemes), ``scale_codes`` (E8M0 / E4M3 bytes), ``scale_format``, ``zeros``,
    ``tensor_scale`` and counts.

    ``packed``: also ``packed``, the codes packed row by row (uint8, 1-D; the bytes
    ``lowprec quantize --packed`` writes: 4-bit two per byte with element 2i in the low
    nibble, 6-bit four per three bytes, 2-bit four per byte, 8-bit one per byte, 9 to 16 bits
    little-endian words; a row's partial byte or group zero-padded) and ``packed_row_bytes``.

    ``as_ml_dtypes``: ``codes`` and ``scale_codes`` as arrays of their formats' dtypes
    (mxfp4: ``float4_e2m1fn`` codes and ``float8_e8m0fnu`` scales; nvfp4: ``float4_e2m1fn``
    and ``float8_e4m3fn``); a ValueError for integer schemes."""
    q = _lowprec.quantize(_floats(x), scheme, packed)
    if as_ml_dtypes:
        if q["element_format"] is None or q["codes"] is None:
            raise ValueError(f"the codes of {scheme!r} are integers; no ml_dtypes float dtype "
                             "holds them (use as_ml_dtypes=False)")
        q["codes"] = _view(q["codes"], q["element_format"])
        if q["scale_codes"] is not None:
            q["scale_codes"] = _view(q["scale_codes"], q["scale_format"])
    return q


def quantize_file(path, scheme, output):
    """Quantize every floating tensor (of at least two dimensions) of a ``.safetensors`` file
    with ``scheme`` into lowprec's quantized checkpoint layout at ``output`` (written
    atomically; the rest copied): a list of one dict per quantized tensor (``tensor``,
    ``bits_per_element``, ``sqnr_db``, ``rel_error``, ``cosine``, ``max_abs_error``,
    ``saturated``, ``flushed``, ``nan``, ``tensor_scale``) and the number of tensors copied.
    The layout (packed codes, scales in the block grid, the scheme in the metadata) is in
    docs/schemes.md."""
    return _lowprec.quantize_file(os.fspath(path), scheme, os.fspath(output))


def dequantize_file(path, output):
    """Read a checkpoint written by :func:`quantize_file` (or ``lowprec quantize``) and write
    its tensors back as floats in their original dtypes and shapes: the canonical scheme
    name and the number of tensors dequantized."""
    return _lowprec.dequantize_file(os.fspath(path), os.fspath(output))


def schemes():
    """The named schemes: a list of ``(name, canonical_name, meaning, source)``."""
    return _lowprec.scheme_presets()


def _codes_u8(codes, what):
    c = np.asarray(codes)
    if c.dtype.kind == "V" and c.dtype.itemsize == 1:  # ml_dtypes 1-byte types: their bits
        c = c.view(np.uint8)
    if c.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers (or a 1-byte ml_dtypes array), "
                        f"got an array of {c.dtype}")
    if c.dtype != np.uint8:
        if c.size and (c.min() < 0 or c.max() > 255):
            bad = c.min() if c.min() < 0 else c.max()
            raise ValueError(f"{what}: {int(bad)} is not a byte (0..255)")
        c = c.astype(np.uint8)
    return _c(c.reshape(-1))


def pack(codes, bits):
    """Pack codes (each below ``2**bits``; bits 1..8) into a 1-D uint8 array, in C order:
    4-bit two per byte with element 2i in the low nibble, 6-bit four per three bytes
    (a little-endian 24-bit group), 2-bit four per byte, other widths a little-endian bit
    stream; the last byte or group zero-padded."""
    return _lowprec.pack(_codes_u8(codes, "codes"), int(bits))


def unpack(packed, bits, n):
    """The `n` codes of `bits` bits in `packed` (a uint8 array), as a 1-D uint8 array."""
    return _lowprec.unpack(_codes_u8(packed, "packed"), int(bits), int(n))


def _report_array(name, a):
    """A report tensor as float32 / float64 (16-bit and smaller floats widened exactly to
    float32, as ``lowprec report`` widens float16/bfloat16 files)."""
    a = _np(a)
    if a.dtype in (np.float32, np.float64):
        return _c(a)
    if _is_float_dtype(a.dtype) and a.dtype.itemsize <= 2:
        return _c(a.astype(np.float32))
    raise TypeError(f"report takes floating arrays; tensor {name!r} is an array of {a.dtype}")


def ggml_types():
    """ggml's tensor types: ``(name, number, block size, bytes per block, dequantize?,
    quantize?)`` for each, in number order (see docs/gguf.md)."""
    return _lowprec.ggml_types()


def ggml_quantize(x, qtype, as_torch=False):
    """The raw GGUF bytes of `x` (float32 values, the last axis a whole number of blocks)
    quantized to the ggml type `qtype` (``"Q4_0"``, ``"Q8_0"``, ``"MXFP4"``, …) bit for bit
    as the ``gguf`` package's ``quants.quantize``; uint8, the last axis in bytes.

    >>> import numpy as np, lowprec
    >>> q = lowprec.ggml_quantize(np.arange(32, dtype=np.float32), "Q8_0")
    >>> q.shape, lowprec.ggml_dequantize(q, "Q8_0")[[1, 31]]
    ((34,), array([ 0.9765625, 31.00586  ], dtype=float32))
    """
    x = _np(x)
    q = _lowprec.ggml_quantize(np.ascontiguousarray(x, dtype=np.float32), str(qtype))
    return _torch(q, as_torch)


def ggml_dequantize(data, qtype, as_torch=False):
    """Float32 values of the raw bytes `data` (uint8, the last axis a whole number of blocks)
    of the ggml type `qtype`, bit for bit as the ``gguf`` package's ``quants.dequantize``
    (every type it can dequantize: Q4_0 … Q8_0, the K-quants, the IQ types, TQ1_0/TQ2_0,
    MXFP4, NVFP4, F16, BF16)."""
    data = _np(data)
    v = _lowprec.ggml_dequantize(np.ascontiguousarray(data, dtype=np.uint8), str(qtype))
    return _torch(v, as_torch)


def _schemes_list(schemes):
    """A scheme name or a list of them as a list of str (None stays None)."""
    if isinstance(schemes, str):
        return [schemes]
    return None if schemes is None else [str(s) for s in schemes]


def report(tensors=None, schemes=None, totals=False, include=(), exclude=(), basis="model"):
    """What each scheme does to each tensor: a list of dicts, one per tensor × scheme
    (tensor-major), with ``tensor``, ``shape``, ``scheme``, ``elements``,
    ``bits_per_element``, ``rel_error``, ``sqnr_db``, ``max_abs_error``,
    ``saturated_share``, ``flushed_share``, ``nan`` and ``error`` (None, or why the scheme
    could not quantize the tensor) — the numbers of ``lowprec report --json``.

    `tensors`: a dict name → array (floating; blocks and groups run along the last axis),
    one array, a path to a ``.npy`` / ``.safetensors`` / ``.gguf`` file or to a sharded
    checkpoint (its folder or its ``model.safetensors.index.json``), a list of paths, or
    None for the built-in tensors. Files are read one tensor at a time, as ``lowprec
    report`` reads them (peak memory: about one tensor and its schemes' outputs), with the
    `include` / `exclude` glob patterns applied to tensor names (``"*.weight"``); a
    ``.gguf`` file's tensors are dequantized. `schemes`: a scheme name or a list of them,
    ``gguf:TYPE`` for a ggml type through llama.cpp's reference quantizer (default: fp16,
    bf16, fp8-e4m3, fp8-e5m2, mxfp8, mxfp6, mxfp4, nvfp4, int8, int4:group=128). `totals`:
    also one row per scheme over every tensor (``tensor`` ``"(all)"``). `basis`: where
    rotated schemes measure their error, ``"model"`` or ``"rotated"``.

    The same report on a Ray cluster, bit for bit: :func:`lowprec.ray.report`."""
    schemes = _schemes_list(schemes)
    if basis not in ("model", "rotated"):
        raise ValueError(f"basis must be 'model' or 'rotated', not {basis!r}")
    rotated = basis == "rotated"
    if tensors is None:
        return _lowprec.report(None, None, schemes, totals, rotated=rotated)
    if isinstance(tensors, (str, os.PathLike)):
        tensors = [tensors]
    if isinstance(tensors, np.ndarray) or hasattr(tensors, "__dlpack__"):
        tensors = {"array": tensors}
    if hasattr(tensors, "items"):
        arrays = [(str(k), _report_array(k, v)) for k, v in tensors.items()]
        return _lowprec.report(arrays, None, schemes, totals, rotated=rotated)
    if isinstance(tensors, (list, tuple)) and all(isinstance(p, (str, os.PathLike))
                                                  for p in tensors):
        return _lowprec.report(None, [os.fspath(p) for p in tensors], schemes, totals,
                               [str(g) for g in include], [str(g) for g in exclude], rotated)
    raise TypeError("tensors must be a dict of name → array, an array, a path to a .npy / "
                    ".safetensors / .gguf file or a sharded checkpoint (or a list of paths) "
                    f"or None, not {type(tensors).__name__}")


def quantize_checkpoint(path, scheme, output):
    """Quantize a sharded checkpoint (its folder or ``model.safetensors.index.json``; a
    single ``.safetensors`` file is one shard) with `scheme` into the folder `output`:
    each shard to a shard of the same name (atomically), then the output's index. Shards
    whose output already holds `scheme` are kept (an interrupted run resumes). Returns
    ``(shards written, shards kept)``. On a Ray cluster: :func:`lowprec.ray.quantize`."""
    return _lowprec.quantize_checkpoint(os.fspath(path), str(scheme), os.fspath(output))


def report_frame(tensors=None, schemes=None, totals=False, **kw):
    """:func:`report` as a pandas DataFrame (one row per tensor × scheme; keyword
    arguments as :func:`report`)."""
    try:
        import pandas as pd
    except ImportError:
        raise ValueError("report_frame needs pandas: pip install pandas "
                         "(or use report(), a list of dicts)") from None
    return pd.DataFrame(report(tensors, schemes, totals, **kw))


def accumulate_native(x, acc="fp32", method="sequential", chunk=0, rounding="rne",
                      overflow="ovf", seed=0, outer="fp32"):
    """Sum along the last axis, every addition rounded into `acc` (exact, then rounded once)."""
    return _lowprec.accumulate(_floats(x), _spec(acc), method, chunk, rounding, overflow, seed,
                               _spec(outer))


def gemm(a, b, acc="fp32", input=None, product=None, order="sequential", chunk=0,  # noqa: A002
         rounding="rne", overflow="ovf", seed=0):
    """Simulated ``C = A·B`` against the exact product of the rounded inputs: a dict with
    ``c``, ``exact``, ``max_rel``, ``mean_rel``, ``max_normalized``, ``bound``."""
    return _gemm(_floats(a, True), _floats(b, True), _spec(acc), input,
                 None if product is None else _spec(product), order, chunk, rounding, overflow,
                 seed)


def max_abs_error(approx, exact):
    """max |approx − exact|."""
    a, e = np.broadcast_arrays(_floats(approx, True), _floats(exact, True))
    return _lowprec.max_abs_error(np.ascontiguousarray(a), np.ascontiguousarray(e))


# ---------------------------------------------------------------------------------------
# 1. integers (seed §1)
# ---------------------------------------------------------------------------------------
def int_range(bits, signed=True):
    """(min, max) of a `bits`-bit integer."""
    return _lowprec.int_range(bits, signed)


def twos_complement_encode(v, bits):
    """The `bits`-bit two's complement code of `v` (ValueError outside the range)."""
    return _lowprec.twos_complement_encode(int(v), bits)


def twos_complement_decode(code, bits):
    """The integer of a `bits`-bit two's complement code (only the low `bits` bits count)."""
    return _lowprec.twos_complement_decode(int(code) & ((1 << bits) - 1), bits)


def bits_str(code, bits, groups=None):
    """`code` in binary, `bits` digits, split into `groups` (which must add up to `bits`)."""
    if not 1 <= bits <= 64:
        raise ValueError(f"bit width {bits} is outside 1..=64")
    return _lowprec.bits_str(int(code) & ((1 << bits) - 1), bits,
                             None if groups is None else list(groups))


def wrap_int(v, bits):
    """Wrap integers into the signed `bits`-bit range (C's int8 overflow)."""
    a = _c(np.asarray(v, dtype=np.int64))
    return _out(_lowprec.wrap_int(a, bits), v)


def saturate_int(v, bits):
    """Clamp integers to the signed `bits`-bit range."""
    a = _c(np.asarray(v, dtype=np.int64))
    return _out(_lowprec.saturate_int(a, bits), v)


# ---------------------------------------------------------------------------------------
# 2. FloatFormat (seed §2)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: 1 sign bit, `exp_bits` exponent bits, `man_bits` mantissa bits,
    `bias`, and `special` ("ieee": Inf and NaN; "fn": no Inf, S.1…1.1…1 is NaN; "none": no
    Inf/NaN; also "fnuz"). The seed's class, computed by lowprec."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    special: str = "ieee"

    def __post_init__(self):
        spec = _lowprec.make_format(self.exp_bits, self.man_bits, self.bias, self.special)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_info", format_info(spec))

    # ---- derived quantities ----
    @property
    def bits(self):
        """Total width, 1 + exp_bits + man_bits."""
        return self._info["bits"]

    @property
    def emax(self):
        """Unbiased exponent of the largest finite number."""
        return self._info["emax"]

    @property
    def emin(self):
        """Unbiased exponent of the smallest normal number, 1 − bias."""
        return self._info["emin"]

    @property
    def max_value(self):
        """The largest finite value."""
        return self._info["max_value"]

    @property
    def min_normal(self):
        """The smallest positive normal value, 2^emin."""
        return self._info["min_normal"]

    @property
    def min_subnormal(self):
        """The smallest positive value, 2^(emin − man_bits)."""
        return self._info["min_positive"]

    @property
    def eps(self):
        """Machine epsilon 2^−man_bits."""
        return self._info["eps"]

    @property
    def spec(self):
        """lowprec's name of the format (``fp8-e4m3``, or the custom syntax)."""
        return self._info["name"]

    def _overflow(self, saturate):
        return "sat" if saturate else "ovf"

    def _mode(self, rounding):
        if rounding not in ROUNDING_MODES and not isinstance(rounding, str):
            raise TypeError("rounding must be a string")
        return rounding

    # ---- rounding ----
    def round(self, x, rounding="nearest_even", saturate=None, rng=None):
        """Round to the nearest values of this format; float64 array of x's shape."""
        v = _lowprec.round(_floats(x, True), self._spec, self._mode(rounding),
                           self._overflow(saturate), _seed_of(rng, 0))
        return _out(v, x)

    def encode(self, x, rounding="nearest_even", saturate=None, rng=None):
        """Round and encode; int64 codes (0 … 2^bits − 1). NaN into a format without NaN is
        a ValueError."""
        c = _lowprec.encode(_floats(x, True), self._spec, self._mode(rounding),
                            self._overflow(saturate), _seed_of(rng, 0), 0, True)
        return _out(c.view(np.int64), x)

    def decode(self, code):
        """float64 values of codes (only the low `bits` bits count)."""
        c = _c(np.asarray(code, dtype=np.int64) & ((1 << self.bits) - 1))
        return _out(_lowprec.decode(c, self._spec), code)

    def fields(self, code):
        """(S, E, M) of one code."""
        return _lowprec.fields(int(code) & ((1 << self.bits) - 1), self._spec)

    def all_values(self):
        """The value of every code, indexed by code (formats of at most 16 bits)."""
        return _lowprec.all_values(self._spec)

    def describe(self):
        """One line: name, E?M?, bias, specials, max."""
        return f"{self.name}: {self._info['describe'].split(': ', 1)[1]}"


FP32 = FloatFormat("FP32", 8, 23, 127, "ieee")
TF32 = FloatFormat("TF32", 8, 10, 127, "ieee")
FP16 = FloatFormat("FP16", 5, 10, 15, "ieee")
BF16 = FloatFormat("BF16", 8, 7, 127, "ieee")
FP8_E4M3 = FloatFormat("FP8-E4M3", 4, 3, 7, "fn")
FP8_E5M2 = FloatFormat("FP8-E5M2", 5, 2, 15, "ieee")
FP6_E3M2 = FloatFormat("FP6-E3M2", 3, 2, 3, "none")
FP6_E2M3 = FloatFormat("FP6-E2M3", 2, 3, 1, "none")
FP4_E2M1 = FloatFormat("FP4-E2M1", 2, 1, 1, "none")

FORMATS = [FP32, TF32, FP16, BF16, FP8_E4M3, FP8_E5M2, FP6_E3M2, FP6_E2M3, FP4_E2M1]
BY_NAME = {f.name: f for f in FORMATS}


def bf16_bit_trick(x32):
    """The classic FP32 → BF16 bit trick (add 0x7FFF plus the kept lsb, shift right by 16):
    the seed's reference for ``BF16.round``, kept as the seed wrote it (numpy)."""
    u = np.asarray(x32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u << 16).astype(np.uint32).view(np.float32)


# ---------------------------------------------------------------------------------------
# 3. block scaling (seed §3)
# ---------------------------------------------------------------------------------------
def _elem(elem):
    return _spec(elem) if isinstance(elem, (FloatFormat, str)) else elem


def mx_quantize(x, elem, block=32):
    """OCP MX §6.3 over the flattened array in blocks of `block`: (values, scales), the scales
    as float64 powers of two. An all-zero block's scale is 2^-127 (the seed: 2^-emax)."""
    a = _floats(x, True)
    if a.size % block:
        raise ValueError(f"the length {a.size} is not a multiple of the block size {block}")
    r = _lowprec.mx_quantize(a.reshape(-1), _elem(elem), block)
    scales = _lowprec.decode(r["scales"], "e8m0")
    return r["values"].reshape(a.shape), scales


def nvfp4_quantize(x, block=16):
    """NVFP4 over the flattened array: (values, block scales as float64, tensor scale g)."""
    if block != 16:
        raise ValueError("NVFP4 blocks are 16 elements")
    a = _floats(x, True)
    if a.size % block:
        raise ValueError(f"the length {a.size} is not a multiple of NVFP4's block of 16")
    r = _lowprec.nvfp4_quantize(a.reshape(-1))
    sb = _lowprec.decode(r["scales"], "fp8-e4m3")
    return r["values"].reshape(a.shape), sb, float(r["tensor_scale"])


def tensor_scaled(x, elem):
    """One scale for the tensor, s = max|x| / elem.max_value: round(x / s) · s."""
    a = _floats(x, True)
    return _out(_lowprec.tensor_scaled(a, _spec(elem))["values"], x)


# ---------------------------------------------------------------------------------------
# 4. integer quantization (seed §4)
# ---------------------------------------------------------------------------------------
def quantize_int(x, bits=8, symmetric=True, granularity="tensor", group=None, clip=None):
    """x ≈ scale · (q − zero): (values, q as int64, scale, zero), scale and zero of shape
    (groups, 1) as the seed's. A small negative input gives +0 (the seed: −0)."""
    a = _floats(x, True)
    if granularity == "channel" and a.ndim != 2:
        raise ValueError("channel granularity needs a 2-D array (rows = channels)")
    if granularity == "group" and group is None:
        raise ValueError("group granularity needs a group size that divides the last axis")
    r = _lowprec.quantize_int(a, bits, "symmetric" if symmetric else "asymmetric",
                              granularity, group or 0, clip)
    return (r["values"], r["q"], r["scales"][:, None], r["zeros"][:, None])


# ---------------------------------------------------------------------------------------
# 5. accumulation (seed §5)
# ---------------------------------------------------------------------------------------
def accumulate(values, acc=None, method="sequential", chunk=None, rounding="nearest_even",
               seed=0):
    """Sum each row of `values` (2-D; 1-D is one row) with every addition rounded into `acc`
    (None: float64): 1-D float64 of the row sums. `chunk` promotes into FP32."""
    v = _floats(values, True)
    if v.ndim == 1:
        v = v[None, :]
    if v.ndim != 2:
        raise ValueError(f"accumulate takes a 1-D or 2-D array, not {v.ndim}-D")
    return _lowprec.accumulate(v, "fp64" if acc is None else _spec(acc), method, chunk or 0,
                               rounding, "ovf", seed, "fp32")


# ---------------------------------------------------------------------------------------
# 6. softmax and variance (seed §6)
# ---------------------------------------------------------------------------------------
def _arith(dtype):
    if isinstance(dtype, (FloatFormat, str)):
        return _spec(dtype), np.float64
    d = np.dtype(dtype)
    if d == np.float32:
        return "f32", d.type
    if d == np.float64:
        return "f64", d.type
    if d == np.float16:
        return "fp16", d.type
    raise ValueError(f"dtype must be float16, float32, float64 or a FloatFormat, not {d}")


def softmax_naive(x, dtype=np.float32):
    """exp(x) / Σ exp(x) in `dtype` (overflows to NaN for large x)."""
    ar, t = _arith(dtype)
    a = _floats(x, True)
    return _lowprec.softmax_naive(a.reshape(-1), ar).reshape(a.shape).astype(t)


def softmax_safe(x, dtype=np.float32):
    """exp(x − max) / Σ exp(x − max) in `dtype`."""
    ar, t = _arith(dtype)
    a = _floats(x, True)
    return _lowprec.softmax_safe(a.reshape(-1), ar).reshape(a.shape).astype(t)


def online_softmax_stats(x, dtype=np.float32):
    """One pass: (m, d) with softmax_j = exp(x_j − m) / d."""
    ar, t = _arith(dtype)
    m, d = _lowprec.online_softmax_stats(_floats(x, True).reshape(-1), ar)
    return t(m), t(d)


def merge_softmax_stats(a, b, dtype=np.float32):
    """Merge two (m, d) pairs (associative)."""
    ar, t = _arith(dtype)
    m, d = _lowprec.merge_softmax_stats((float(a[0]), float(a[1])),
                                        (float(b[0]), float(b[1])), ar)
    return t(m), t(d)


def variance_one_pass(x, dtype=np.float32):
    """E[x²] − E[x]² in `dtype` (catastrophic cancellation when mean ≫ std)."""
    ar, t = _arith(dtype)
    return t(_lowprec.variance_one_pass(_floats(x, True).reshape(-1), ar))


def variance_two_pass(x, dtype=np.float32):
    """Σ(x − mean)² / n in `dtype`."""
    ar, t = _arith(dtype)
    return t(_lowprec.variance_two_pass(_floats(x, True).reshape(-1), ar))


def variance_welford(x, dtype=np.float32):
    """Welford's one-pass, stable variance in `dtype`."""
    ar, t = _arith(dtype)
    return t(_lowprec.variance_welford(_floats(x, True).reshape(-1), ar))


# ---------------------------------------------------------------------------------------
# 7. error metrics (seed §7)
# ---------------------------------------------------------------------------------------
def _pair(approx, exact):
    a, e = np.broadcast_arrays(_floats(approx, True), _floats(exact, True))
    return np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(e).reshape(-1)


def rel_error(approx, exact):
    """||approx − exact|| / ||exact|| (2-norms); inf when exact is 0 and approx is not."""
    return _lowprec.rel_error(*_pair(approx, exact))


def sqnr_db(approx, exact):
    """20·log10(||exact|| / ||approx − exact||) in dB."""
    return _lowprec.sqnr_db(*_pair(approx, exact))


# ---------------------------------------------------------------------------------------
# range-safe binary32 (solprop_precision)
# ---------------------------------------------------------------------------------------
PrecisionName = str
SINGLE_RTOL_FLOOR = _lowprec.SINGLE_RTOL_FLOOR
SINGLE_PRECISION_BACKENDS = ("numpy_ref", "mlx")


@dataclass(frozen=True)
class Precision:
    """The arithmetic of a run's state and source: "double" or "single" (not mixed)."""

    state: str = "double"
    source: str = "double"

    def __post_init__(self):
        _lowprec.check_precision(self.state, self.source)

    @property
    def name(self):
        """The public value: "double" or "single"."""
        return self.state

    @property
    def single(self):
        """Whether the state is binary32."""
        return self.state == "single"

    @property
    def complex_dtype(self):
        """complex64 under single precision, complex128 otherwise."""
        return np.dtype(np.complex64 if self.single else np.complex128)

    @property
    def real_dtype(self):
        """float32 under single precision, float64 otherwise."""
        return np.dtype(np.float32 if self.single else np.float64)


DOUBLE = Precision()
SINGLE = Precision("single", "single")


def precision_named(name):
    """The record of "double" / "single" (a Precision is returned unchanged)."""
    if isinstance(name, Precision):
        return name
    if name == "double":
        return DOUBLE
    if name != "single":
        raise ValueError(f"precision must be 'double' or 'single', got {name!r}")
    return SINGLE


_STUDY: ContextVar[bool] = ContextVar("lowprec_precision_study", default=False)


@contextmanager
def study_admission():
    """Admit, inside the block, what the survival study measures and the public refuses."""
    token = _STUDY.set(True)
    try:
        yield
    finally:
        _STUDY.reset(token)


def admit_precision(precision, *, backend, adams, rtol, schedule):
    """The single-precision refusals every backend shares (ValueError naming the refusal)."""
    admit(precision.name, backend, list(SINGLE_PRECISION_BACKENDS), bool(adams),
          None if rtol is None else float(rtol), bool(schedule), _STUDY.get())


def _elems(values):
    a = np.asarray(values)
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        a = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    return _c(a)


def block_exponent(values):
    """e with max|values|·2^-e in [1, 2); 0 for an all-zero buffer (ValueError if not finite)."""
    return _block_exponent(_elems(values).reshape(-1))


@dataclass(frozen=True)
class Narrowed:
    """A binary64 buffer narrowed to binary32: it stands for ``values * 2**exponent``."""

    values: np.ndarray
    exponent: int

    def widened(self):
        """``values * 2**exponent`` exactly, as float64 or complex128."""
        wide = self.values.astype(np.result_type(self.values.dtype, np.float64))
        if np.iscomplexobj(wide):
            out = np.empty_like(wide)
            out.real = np.ldexp(wide.real, self.exponent)
            out.imag = np.ldexp(wide.imag, self.exponent)
            return out
        return np.ldexp(wide, self.exponent)


def narrow(values):
    """Narrow a binary64 buffer to float32/complex64 with its block exponent (read-only)."""
    a = np.asarray(values)
    a = _c(np.asarray(a, dtype=np.complex128 if np.iscomplexobj(a) else np.float64))
    v, e = _lowprec.narrow(a)
    v.setflags(write=False)
    return Narrowed(v, e)


def state_scale(peak):
    """2^k with |peak| / 2^k in [1, 2); 1 for 0."""
    return _lowprec.state_scale(float(peak))


def launch_peak(field0, kind):
    """Peak temporal magnitude of a launch (..., n_omega) on a "field" or "envelope" grid."""
    a = np.ascontiguousarray(field0, dtype=np.complex128)
    if a.size == 0:
        return 0.0
    return _lowprec.launch_peak(a, kind)


@dataclass(frozen=True)
class Coefficient:
    """mantissa · 2^exponent, mantissa 0 or of magnitude in [0.5, 1)."""

    mantissa: float
    exponent: int

    @property
    def value(self):
        """The coefficient as one binary64 number (ValueError beyond binary64's range)."""
        return _lowprec.coefficient_value(self.mantissa, self.exponent)

    def binary32(self):
        """Rounded once to binary32 (ValueError outside binary32's normal range)."""
        return float(_lowprec.coefficient_binary32(self.mantissa, self.exponent))


def combine(*factors, exponent=0):
    """Combine binary64 factors and 2^exponent without forming an out-of-range value."""
    m, e = _lowprec.combine([float(f) for f in factors], int(exponent))
    return Coefficient(m, e)


def _axis(a, axis):
    if a.ndim == 0:
        a = a.reshape(1)
    ax = axis + a.ndim if axis < 0 else axis
    if not 0 <= ax < a.ndim:
        raise ValueError(f"axis {axis} is out of range for a {a.ndim}-D array")
    return a, ax


def pairwise_sum(values, axis=-1):
    """Balanced-tree sum along `axis` in the values' own precision."""
    a, ax = _axis(_elems(values), axis)
    return _lowprec.pairwise_sum(a, ax)


def prefix_sum(values, axis=-1):
    """Running sums along `axis` by doubling (Hillis–Steele), in the values' own precision."""
    a, ax = _axis(_elems(values), axis)
    return _lowprec.prefix_sum(a, ax)


def scaled_square_sum(values, weights=None):
    """sum(w |v|²) as binary64, the values scaled by a power of two before squaring."""
    a = _elems(values)
    w = None
    if weights is not None:
        real = np.float32 if a.dtype in (np.float32, np.complex64) else np.float64
        w = np.ascontiguousarray(np.broadcast_to(np.asarray(weights, dtype=real), a.shape))
        w = w.reshape(-1)
    return _lowprec.scaled_square_sum(a.reshape(-1), w)


from . import ops  # noqa: E402,F401  (lowprec.ops: operations rounded once, ops.py)
