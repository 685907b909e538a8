"""lowprec: bit-exact low-precision number formats for numpy.

Two APIs over one Rust core (``lowprec._lowprec``):

* **the seed's** (``numfmt.py``), same names and signatures, so that ``import lowprec as
  numfmt`` runs code written for the seed: :class:`FloatFormat` and the presets ``FP32`` …
  ``FP4_E2M1``, ``FORMATS``, ``BY_NAME``; the integer helpers; ``mx_quantize``,
  ``nvfp4_quantize``, ``tensor_scaled``, ``quantize_int``; ``accumulate``; softmax and
  variance; ``rel_error``, ``sqnr_db``; and the range rules of ``solprop_precision``
  (``Precision`` … ``scaled_square_sum``);
* **lowprec's own**: :func:`round`, :func:`encode`, :func:`decode`, :func:`quantize`,
  :func:`accumulate_native` / :func:`gemm`, every format by name (``"fp8-e4m3"``,
  ``"e4m3b7:fn"``, …), every mode (``rne rna rtz rup rdn rto sr``), ``ovf``/``sat``.

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
    "round", "encode", "decode", "quantize", "accumulate_native", "gemm", "format_info",
    "preset_names", "max_abs_error",
]

ROUNDING_MODES = ("nearest_even", "toward_zero", "nearest_away", "stochastic")


# ---------------------------------------------------------------------------------------
# argument plumbing
# ---------------------------------------------------------------------------------------
def _floats(x, f64=False):
    """A C-contiguous float32 or float64 array (float64 for anything else, or with f64)."""
    a = np.asarray(x)
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
def round(x, format, rounding="rne", overflow="ovf", seed=0, index_offset=0):  # noqa: A001
    """Round `x` into `format` (one rounding of the exact input). float32 in, float32 out
    where the format's values fit binary32; otherwise float64."""
    a = _floats(x)
    return _out(_lowprec.round(a, _spec(format), rounding, overflow, seed, index_offset), x)


def encode(x, format, rounding="rne", overflow="ovf", seed=0, index_offset=0):
    """Round `x` into `format` and return the codes (uint8/16/32/64 by the format's width)."""
    a = _floats(x)
    return _out(_lowprec.encode(a, _spec(format), rounding, overflow, seed, index_offset), x)


def decode(codes, format):
    """The float64 values of `codes` (a code above the format's largest is a ValueError)."""
    c = _c(np.asarray(codes))
    if c.dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got an array of {c.dtype}")
    if c.dtype not in (np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64):
        c = c.astype(np.int64)
    return _out(_lowprec.decode(c, _spec(format)), codes)


def quantize(x, scheme):
    """Quantize along the last axis by a named scheme (``mxfp4``, ``mx:fp8-e4m3:block=32``,
    ``nvfp4``, ``int4:group=128``, ``tensor:fp8-e4m3``, ``fp8-e5m2`` …): a dict with
    ``values``, ``codes``, ``code_bits``, ``scales`` (float64, integer and tensor schemes),
    ``scale_codes`` (E8M0 / E4M3 bytes), ``zeros``, ``tensor_scale`` and counts."""
    return _lowprec.quantize(_floats(x), scheme)


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
    return (r["values"], r["q"].astype(np.int64), r["scales"][:, None], r["zeros"][:, None])


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
