"""lowprec.ops: every operation of the IEEE P3109 draft (and of IEEE 754 for its formats) on
operands in any formats, the exact result rounded **once** into any result format.

The Rust core is ``lowprec::ops``: exact sums, products, quotients and roots (nothing goes
through a binary64 rounding), projected with a rounding (``rne rna rup rdn rtz rto``, the
stochastic ``sra<N> srb<N> src<N>``), a saturation (``none`` = SatNone / ``ovf``, ``finite``
= SatFinite / ``sat``, ``propagate``) and the draft text for SatNone on finite P3109 formats
(``d1``, ``v4.0``). An operation follows the P3109 draft when any operand or the result is a
P3109 format (``binary8p4se`` …), IEEE 754 otherwise.

>>> import numpy as np
>>> from lowprec import ops
>>> ops.add(np.array([1.0, 2.0]), "0.1", formats="bf16", out="fp32")
array([1.1015625, 2.1015625])
>>> ops.multiply(np.uint8(0x38), np.uint8(0x38), formats="fp8-e4m3", out="fp8-e4m3", codes_out=True)
np.uint8(56)

:func:`apply` takes any operation by name; the functions below (:func:`add`, :func:`fma`,
:func:`compare_less`, :func:`class_of`, …) call it with their operation. The arrays are
computed in Rust with the GIL released; this file only moves arguments.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from . import _lowprec

__all__ = [
    "CLASS_NAMES", "apply", "table", "names", "queries",
    "convert", "negate", "abs", "add", "subtract", "multiply", "divide", "fma", "faa", "sqrt",
    "recip", "rsqrt", "minimum", "maximum", "minimum_number", "maximum_number",
    "minimum_magnitude", "maximum_magnitude", "minimum_magnitude_number",
    "maximum_magnitude_number", "minimum_finite", "maximum_finite", "clamp", "copy_sign",
    "scaled_add", "scaled_subtract", "scaled_multiply", "compare_less", "compare_less_equal",
    "compare_equal", "compare_greater", "compare_greater_equal", "total_order", "is_zero",
    "is_one", "is_nan", "is_infinite", "is_finite", "is_sign_minus", "is_normal",
    "is_subnormal", "class_of", "next_greater_than", "next_less_than",
    "block_dot_product", "block_reduce_add", "block_reduce_multiply", "block_map", "convert_to_block", "convert_from_block",
]

#: The classes of :func:`class_of` (``Class``), by result index (``ClsNegativeZero`` only in
#: formats with −0).
CLASS_NAMES = tuple(_lowprec.OPS_CLASS_NAMES)


def names():
    """The draft's names of every operation (``["Convert", "Negate", …, "NextLessThan"]``).
    :func:`apply` also takes them in any case, with ``_``/``-`` ignored, and the aliases
    ``sub mul div neg min max lt le eq gt ge nextup nextdown``."""
    return list(_lowprec.ops_names())


def queries(format):
    """The format queries of the draft (§4.14) as a dict of floats: ``BitwidthOf``,
    ``PrecisionOf``, ``SignednessOf`` (1 signed), ``DomainOf`` (1 extended: with infinities),
    ``ExponentBitwidthOf``, ``TrailingSignificandBitwidthOf``, ``ExponentBiasOf``,
    ``MaxFiniteOf``, ``MinFiniteOf``, ``MinPositiveOf``, ``MaxSubnormalOf`` (NaN without
    subnormals), ``MinNormalOf``."""
    return dict(_lowprec.ops_queries(_spec(format)))


# ---------------------------------------------------------------------------------------
# argument plumbing
# ---------------------------------------------------------------------------------------
def _spec(fmt):
    """A format argument as the name the core parses: a string or a lowprec.FloatFormat."""
    if isinstance(fmt, str):
        return fmt
    spec = getattr(fmt, "_spec", None)
    if isinstance(spec, str):
        return spec
    raise TypeError(f"expected a format name or a lowprec.FloatFormat, got {type(fmt).__name__}")


@functools.lru_cache(maxsize=256)
def _info(spec):
    """format_info of a spec (ValueError for an unknown name); not to be modified."""
    return _lowprec.format_info(spec)


def _uint(bits):
    return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32 if bits <= 32 \
        else np.uint64


def _where(shape, i):
    """Element `i` (flat) of an array of `shape`, as numpy indexes it."""
    if len(shape) == 0:
        return ""
    if len(shape) == 1:
        return f" element {i}"
    return f" element {tuple(int(j) for j in np.unravel_index(i, shape))}"


def _formats(formats, arity, name):
    if formats is None:
        raise ValueError(f"{name}: name the operands' format, formats='bf16', or one per "
                         "operand, formats=('fp32', 'bf16')")
    if isinstance(formats, (list, tuple)):
        specs = [_spec(f) for f in formats]
        if len(specs) != arity:
            raise ValueError(f"{name} takes {arity} operand(s) and {len(specs)} formats were "
                             "given; give one format for all, or one per operand")
    else:
        specs = [_spec(formats)] * arity
    for s in specs:
        _info(s)
    return specs


def _result_format(out, kind, specs, name):
    if kind == "numeric":
        if out is None:
            raise ValueError(f"{name} gives a number: name its result format, out='bf16' (any "
                             "format, the operands' or another)")
        spec = _spec(out)
        _info(spec)
        return spec
    if kind == "same_format" and out is not None:
        if _info(_spec(out))["spec"] != _info(specs[0])["spec"]:
            raise ValueError(f"{name} gives a code of its operand's format "
                             f"{_info(specs[0])['name']}, not {_info(_spec(out))['name']}; "
                             "leave out=None")
    return specs[0]


def _classify(x, k, name):
    """Operand `k` (1-based) as ("literal" | "codes" | "values", array in its own shape)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: operand {k} is a bool; give a number, a code or a string")
    if isinstance(x, str):
        return "literal", np.asarray(x)
    if isinstance(x, int) and not isinstance(x, np.integer):
        try:
            v = float(x)
        except OverflowError:
            v = None
        if v is None or v != x:
            raise ValueError(f"{name}: operand {k}, the integer {x}, is not a binary64 value; "
                             f"give it as a string ({str(x)!r}) to round it once")
        return "values", np.asarray(v)
    a = np.asarray(x)
    kind = a.dtype.kind
    if kind == "U":
        return "literal", a
    if kind == "S":
        return "literal", a.astype(str)
    if kind == "O":
        if all(isinstance(e, str) for e in a.flat):
            return "literal", a.astype(str)
        raise TypeError(f"{name}: operand {k} is an object array; give numbers (float), codes "
                        "(unsigned integers) or strings")
    if kind == "u":
        return "codes", a
    if kind == "f" and a.dtype.itemsize <= 8:
        return "values", a.astype(np.float64)
    if kind == "V" and a.dtype.name.startswith(("float", "bfloat")):  # ml_dtypes: exact
        return "values", a.astype(np.float32).astype(np.float64)
    if kind == "i":
        raise TypeError(f"{name}: operand {k} is an array of {a.dtype}: give codes as unsigned "
                        "integers (x.astype(np.uint16)) or values as floats (x.astype(float))")
    raise TypeError(f"{name}: operand {k} is an array of {a.dtype}; give numbers (float), codes "
                    "(unsigned integers) or strings")


def _value_codes(v, spec, k, name):
    """The codes of values that must be values of `spec` (ValueError naming the first one
    that is not)."""
    flat = np.ascontiguousarray(v.reshape(-1))
    nan = np.isnan(flat)
    codes = None
    if _info(spec)["has_nan"] or not nan.any():
        codes = _lowprec.encode(flat, spec, "rne", "ovf", 0, 0, True)
        back = _lowprec.decode(codes, spec)
        bad = ~((back == flat) | (np.isnan(back) & nan))
    else:  # no code for NaN: encode would refuse the whole array
        bad = nan
    if bad.any():
        i = int(np.argmax(bad))
        x = float(flat[i])
        fmt = _info(spec)["name"]
        between = ""
        if np.isfinite(x):
            lo = float(_lowprec.round(flat[i:i + 1], spec, "rdn", "ovf")[0])
            hi = float(_lowprec.round(flat[i:i + 1], spec, "rup", "ovf")[0])
            top = _info(spec)["max_value"]
            if lo < x < hi:
                between = f" (it lies between {lo!r} and {hi!r})"
            elif -top <= x <= top:
                pass
            else:
                between = f" (it is beyond the largest finite value, {top!r})"
        raise ValueError(f"{name}: operand {k}{_where(v.shape, i)}, {x!r}, is not a value of "
                         f"{fmt}{between}; give values of the format, its codes (unsigned "
                         "integers), or the number as a string ('0.1') to round it once into "
                         "the format")
    return codes.reshape(v.shape)


def _checked_codes(a, spec, k, name):
    c = a.astype(np.uint64)
    top = _info(spec)["max_code"]
    bad = c > top
    if bad.any():
        i = int(np.argmax(bad.reshape(-1)))
        raise ValueError(f"{name}: operand {k}{_where(a.shape, i)} is the code "
                         f"{int(c.reshape(-1)[i])}, beyond {_info(spec)['name']}'s codes "
                         f"(0 to {top})")
    return c


def _random_words(random, shape, name):
    r = np.asarray(random)
    if r.dtype.kind not in "ui":
        raise TypeError(f"{name}: random must be unsigned integers (uint32), not {r.dtype}")
    if r.size and (r.min() < 0 or r.max() > 0xFFFFFFFF):
        raise ValueError(f"{name}: the random words must lie in 0 to 2**32 - 1")
    try:
        r = np.broadcast_to(r, shape)
    except ValueError:
        raise ValueError(f"{name}: random has the shape {r.shape} and the operands {shape}; "
                         "give one word per element") from None
    return np.ascontiguousarray(r.reshape(-1), dtype=np.uint32)


def _flat(a, shape, dtype):
    return np.ascontiguousarray(np.broadcast_to(a, shape).reshape(-1), dtype=dtype)


# ---------------------------------------------------------------------------------------
# the operations
# ---------------------------------------------------------------------------------------
def apply(op, *operands, formats, out=None, rounding="rne", saturation="none", draft="d1",
          seed=0, random=None, codes_out=False, counts=False):
    """Apply the operation `op` to `operands` and round its exact result once into `out`.

    ``op``: a name of :func:`names` (``"Add"``, ``"FMA"``, ``"CompareLess"``,
    ``"NextGreaterThan"`` …), in any case with ``_``/``-`` ignored, or an alias (``add``,
    ``sub``, ``mul``, ``div``, ``fma``, ``sqrt``, ``lt``, ``nextup`` …); ValueError listing the
    names when unknown.

    ``operands`` (as many as the operation takes; arrays of one shape, or shapes numpy
    broadcasts, scalars included), each read in its format:

    * unsigned integers (numpy uint8 … uint64 arrays or scalars): **codes** of the format;
    * floats (Python floats and ints, float16/32/64 arrays, ml_dtypes arrays): **values**,
      which must be values of the format (a ValueError names the first element that is not,
      and its neighbours);
    * strings (a Python str or an array of str): **number literals** (decimals of any length,
      hexadecimal floats ``0x1.8p-3``, ``inf``, ``nan``) read exactly and rounded once into
      the operand's format with this call's projection (under a stochastic rounding, with
      the ``R`` of their element).

    Signed integer arrays are refused (codes or values? give ``uint`` or ``float``).

    ``formats``: one format for every operand, or a list/tuple of one per operand (names such
    as ``"bf16"``, ``"fp8-e4m3"``, ``"binary8p4se"``, ``"e4m3b7:fn"``, or
    ``lowprec.FloatFormat``).

    ``out``: the result format; required for numeric operations; the next-up/down operations
    give codes of their operand's format (``out`` may be left out), and the boolean and class
    operations ignore it.

    ``rounding``: ``rne`` (default), ``rna``, ``rup``, ``rdn``, ``rtz``, ``rto``, ``sra<N>``,
    ``srb<N>``, ``src<N>`` (stochastic A/B/C with ``N`` random bits, 1 to 32; ``sr`` is
    ``sra32``) or the draft's names (``TowardZero``, ``StochasticA8``). ``saturation``:
    ``none`` (SatNone, ``ovf``: IEEE-style overflow, the default), ``finite`` (SatFinite,
    ``sat``), ``propagate`` (SatPropagate). ``draft``: ``d1`` (default) or ``v4.0``, the text
    that decides SatNone on finite P3109 formats.

    Stochastic roundings take element ``i``'s random word ``R`` (below ``2**N``) from
    ``random`` (an unsigned array of the result's shape, or broadcast to it) or, without it,
    from the counter-based generator keyed by ``seed`` (as ``lowprec.round`` does).

    Returns a numpy array of the broadcast shape (a numpy scalar when every operand is a
    scalar): float64 values of ``out`` by default; with ``codes_out=True`` the codes (uint8,
    uint16, uint32 or uint64 by the result format's width); bool for the boolean operations
    (compares, ``Is*``, ``TotalOrder``); uint8 indices into :data:`CLASS_NAMES` for ``Class``.
    With ``counts=True``, ``(result, counts)`` where ``counts`` is a dict of ``total``,
    ``inexact``, ``overflow``, ``underflow``, ``invalid``, ``saturated``, ``nan``.

    A NaN result in a format without NaN (``fp4-e2m1`` …) is a ValueError naming the element.
    """
    name, arity, kind = _lowprec.ops_info(op)
    if len(operands) != arity:
        raise ValueError(f"{name} takes {arity} operand(s), not {len(operands)}")
    specs = _formats(formats, arity, name)
    out_spec = _result_format(out, kind, specs, name)
    _, nbits = _lowprec.ops_rounding(rounding)
    parts = [_classify(x, k + 1, name) for k, x in enumerate(operands)]
    shapes = [a.shape for _, a in parts]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{name}: the operands' shapes {', '.join(map(str, shapes))} differ "
                         "and do not broadcast; give arrays of one shape (scalars broadcast "
                         "to it)") from None
    words = None if random is None else _random_words(random, shape, name)
    args = []
    for k, ((how, a), spec) in enumerate(zip(parts, specs)):
        if how == "codes":
            c = _flat(_checked_codes(a, spec, k + 1, name), shape, np.uint64)
        elif how == "values":
            c = _flat(_value_codes(a, spec, k + 1, name), shape, np.uint64)
        elif nbits == 0:  # deterministic: each literal rounded once, then broadcast
            c = _lowprec.ops_literals(a.reshape(-1).tolist(), spec, rounding, saturation, draft)
            c = _flat(c.reshape(a.shape), shape, np.uint64)
        else:  # stochastic: each element's literal with that element's R
            lits, which = np.unique(a.reshape(-1), return_inverse=True)
            which = _flat(which.reshape(a.shape), shape, np.uint64)
            c = _lowprec.ops_literals(lits.tolist(), spec, rounding, saturation, draft, seed,
                                      words, which)
        args.append((spec, c))
    codes, cnt = _lowprec.ops_apply(name, args, out_spec, rounding, saturation, draft, seed,
                                    words)
    codes = codes.reshape(shape)
    if kind == "boolean":
        res = codes.astype(bool)
    elif kind == "class":
        res = codes.astype(np.uint8)
    elif codes_out:
        res = codes.astype(_uint(_info(out_spec)["bits"]))
    else:
        res = _lowprec.decode(codes, out_spec)
    if res.ndim == 0:
        res = res[()]
    return (res, dict(cnt)) if counts else res


def table(op, formats, out=None, rounding="rne", saturation="none", draft="d1"):
    """Every result of a one- or two-operand operation on formats of at most 8 bits, as
    uint64 codes of `out` (``Class``: indices, boolean operations: 0/1): shape
    ``(2**bits_a, 2**bits_b)`` indexed by the operands' codes, or ``(2**bits,)`` for one
    operand. `formats`, `out` and the projection are :func:`apply`'s (deterministic roundings
    only). A NaN result in a format without NaN is a ValueError naming the codes."""
    name, arity, kind = _lowprec.ops_info(op)
    specs = _formats(formats, arity, name)
    out_spec = _result_format(out, kind, specs, name)
    codes = _lowprec.ops_table(name, specs, out_spec, rounding, saturation, draft)
    return codes.reshape([1 << _info(s)["bits"] for s in specs])


_OPTIONS = [
    inspect.Parameter("formats", inspect.Parameter.KEYWORD_ONLY),
    *(inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=d) for p, d in [
        ("out", None), ("rounding", "rne"), ("saturation", "none"), ("draft", "d1"),
        ("seed", 0), ("random", None), ("codes_out", False), ("counts", False)]),
]

_RESULTS = {
    "numeric": "float64 values of `out` (codes with ``codes_out=True``)",
    "same_format": "float64 values of the operand's format (codes with ``codes_out=True``)",
    "boolean": "a bool array",
    "class": "uint8 indices into :data:`CLASS_NAMES`",
}


def _op(pyname, op, params, summary):
    """A function of the operands calling :func:`apply` with `op`."""
    name, arity, kind = _lowprec.ops_info(op)
    params = params.split()
    assert len(params) == arity, (op, params)

    def f(*operands, **options):
        return apply(name, *operands, **options)

    f.__name__ = f.__qualname__ = pyname
    f.__module__ = __name__
    f.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in params] + _OPTIONS)
    f.__doc__ = (f"{summary}\n\n``apply({name!r}, {', '.join(params)}, formats=..., ...)``: "
                 f"the operands, `formats`, `out`, the projection and the options are "
                 f":func:`apply`'s; the result is {_RESULTS[kind]}.")
    return f


convert = _op("convert", "Convert", "x", "`x` converted into `out`, rounded once.")
negate = _op("negate", "Negate", "x", "`-x` in `out`.")
abs = _op("abs", "Abs", "x", "`|x|` in `out`.")  # noqa: A001
add = _op("add", "Add", "a b", "`a + b` rounded once into `out`.")
subtract = _op("subtract", "Subtract", "a b", "`a - b` rounded once into `out`.")
multiply = _op("multiply", "Multiply", "a b", "`a * b` rounded once into `out`.")
divide = _op("divide", "Divide", "a b", "`a / b` rounded once into `out` (`x / 0` is ±Inf in "
             "IEEE 754 formats, NaN in P3109 ones; `0 / 0` NaN).")
fma = _op("fma", "FMA", "a b c", "`a * b + c` with one rounding into `out`.")
faa = _op("faa", "FAA", "a b c", "`a + b + c` with one rounding into `out`.")
sqrt = _op("sqrt", "Sqrt", "x", "`√x` rounded once into `out` (NaN for `x < 0`).")
recip = _op("recip", "Recip", "x", "`1 / x` rounded once into `out`.")
rsqrt = _op("rsqrt", "RSqrt", "x", "`1 / √x` rounded once into `out`.")
minimum = _op("minimum", "Minimum", "a b", "The smaller operand (NaN if either is NaN; "
              "-0 < +0).")
maximum = _op("maximum", "Maximum", "a b", "The larger operand (NaN if either is NaN; "
              "-0 < +0).")
minimum_number = _op("minimum_number", "MinimumNumber", "a b",
                     "The smaller operand, a NaN operand ignored.")
maximum_number = _op("maximum_number", "MaximumNumber", "a b",
                     "The larger operand, a NaN operand ignored.")
minimum_magnitude = _op("minimum_magnitude", "MinimumMagnitude", "a b",
                        "The operand of smaller magnitude (NaN if either is NaN).")
maximum_magnitude = _op("maximum_magnitude", "MaximumMagnitude", "a b",
                        "The operand of larger magnitude (NaN if either is NaN).")
minimum_magnitude_number = _op("minimum_magnitude_number", "MinimumMagnitudeNumber", "a b",
                               "The operand of smaller magnitude, a NaN operand ignored.")
maximum_magnitude_number = _op("maximum_magnitude_number", "MaximumMagnitudeNumber", "a b",
                               "The operand of larger magnitude, a NaN operand ignored.")
minimum_finite = _op("minimum_finite", "MinimumFinite", "a b",
                     "The smaller operand, non-finite operands ignored where one is finite.")
maximum_finite = _op("maximum_finite", "MaximumFinite", "a b",
                     "The larger operand, non-finite operands ignored where one is finite.")
clamp = _op("clamp", "Clamp", "x lo hi",
            "`x` clamped into `[lo, hi]` (NaN when any is NaN or `lo > hi`).")
copy_sign = _op("copy_sign", "CopySign", "x y", "`|x|` with the sign of `y`.")
scaled_add = _op("scaled_add", "ScaledAdd", "s1 x1 s2 x2",
                 "`s1 * x1 + s2 * x2` (scales and elements as separate operands).")
scaled_subtract = _op("scaled_subtract", "ScaledSubtract", "s1 x1 s2 x2",
                      "`s1 * x1 - s2 * x2` (scales and elements as separate operands).")
scaled_multiply = _op("scaled_multiply", "ScaledMultiply", "s1 x1 s2 x2",
                      "`(s1 * x1) * (s2 * x2)` (scales and elements as separate operands).")
compare_less = _op("compare_less", "CompareLess", "a b", "`a < b` (False with a NaN).")
compare_less_equal = _op("compare_less_equal", "CompareLessEqual", "a b",
                         "`a <= b` (False with a NaN).")
compare_equal = _op("compare_equal", "CompareEqual", "a b",
                    "`a == b` (False with a NaN; -0 == +0).")
compare_greater = _op("compare_greater", "CompareGreater", "a b", "`a > b` (False with a NaN).")
compare_greater_equal = _op("compare_greater_equal", "CompareGreaterEqual", "a b",
                            "`a >= b` (False with a NaN).")
total_order = _op("total_order", "TotalOrder", "a b",
                  "Whether `a` comes no later than `b` in the total order (P3109: NaN first; "
                  "IEEE 754: -NaN < -Inf < … < -0 < +0 < … < +Inf < +NaN).")
is_zero = _op("is_zero", "IsZero", "x", "Whether `x` is zero.")
is_one = _op("is_one", "IsOne", "x", "Whether `x` is one.")
is_nan = _op("is_nan", "IsNaN", "x", "Whether `x` is NaN.")
is_infinite = _op("is_infinite", "IsInfinite", "x", "Whether `x` is ±Inf.")
is_finite = _op("is_finite", "IsFinite", "x", "Whether `x` is finite.")
is_sign_minus = _op("is_sign_minus", "IsSignMinus", "x",
                    "Whether `x` is negative (IEEE 754: its sign bit, -0 and -NaN included).")
is_normal = _op("is_normal", "IsNormal", "x", "Whether `x` is normal (finite, nonzero, at "
                "least the smallest normal in magnitude).")
is_subnormal = _op("is_subnormal", "IsSubnormal", "x", "Whether `x` is subnormal.")
class_of = _op("class_of", "Class", "x", "The class of `x`: an index into :data:`CLASS_NAMES`.")
next_greater_than = _op("next_greater_than", "NextGreaterThan", "x",
                        "The next value above `x` in its own format (the result format is the "
                        "operand's).")
next_less_than = _op("next_less_than", "NextLessThan", "x",
                     "The next value below `x` in its own format (the result format is the "
                     "operand's).")


# ---------------------------------------------------------------------------------------
# block operations (P3109 §5): a block is (scale format, scale code, element format, codes)
# ---------------------------------------------------------------------------------------

def _block(block, what):
    """A block argument as the core takes it: ``(scale_format, scale_code, format, codes)``."""
    try:
        sf, sc, ef, codes = block
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a tuple (scale_format, scale_code, format, codes)") from None
    return (_spec(sf), int(sc), _spec(ef), np.ascontiguousarray(codes, dtype=np.uint64).ravel())


def _decoded(code, out):
    return float("nan") if code is None else float(_lowprec.decode(np.array([code], np.uint64), out)[0])


def block_dot_product(a, b, out, rounding="rne", saturation="none", draft="d1", acc=None,
                      method="sequential", codes_out=False):
    """BlockDotProduct: ``Σ (s_a·a_i)(s_b·b_i)`` computed exactly and rounded once into `out`
    (blocks ``(scale_format, scale_code, format, codes)``); with `acc` (``"fp16"``,
    ``"fp32"``, …) the products are instead summed in that accumulator (`method`
    sequential / pairwise / kahan) as hardware does, the accumulator's value rounded into
    `out`. The value (the code with ``codes_out=True``; None for a NaN into a format without
    one)."""
    out = _spec(out)
    code, _ = _lowprec.ops_block(_block(a, "a"), _block(b, "b"), out, rounding, saturation,
                                 draft, None if acc is None else _spec(acc), method)
    return code if codes_out else _decoded(code, out)


def block_reduce_add(block, out, rounding="rne", saturation="none", draft="d1", acc=None,
                     method="sequential", codes_out=False):
    """BlockReduceAdd: ``Σ s·x_i`` computed exactly and rounded once into `out` (or, with
    `acc`, accumulated as :func:`block_dot_product` does)."""
    out = _spec(out)
    code, _ = _lowprec.ops_block(_block(block, "block"), None, out, rounding, saturation, draft,
                                 None if acc is None else _spec(acc), method)
    return code if codes_out else _decoded(code, out)


def block_reduce_multiply(block, out, rounding="rne", saturation="none", draft="d1",
                          codes_out=False):
    """BlockReduceMultiply: ``Π s·x_i`` computed exactly and rounded once into `out` (``0·∞``
    is NaN; an exact zero product keeps the product's sign in IEEE-style formats)."""
    out = _spec(out)
    code, _ = _lowprec.ops_block(_block(block, "block"), None, out, rounding, saturation, draft,
                                 None, "sequential", 0, True)
    return code if codes_out else _decoded(code, out)


def block_map(op, blocks, result_scale, out, rounding="rne", saturation="none", draft="d1",
              seed=0, codes_out=False):
    """An elementwise block operation (P3109 §5.4): ``op`` (``"Add"``, ``"Multiply"``,
    ``"FMA"``, ``"MaximumNumber"``, ``"Sqrt"``, …) on the blocks (one per operand, each
    ``(scale_format, scale_code, format, codes)``), each element's exact result divided by
    the result scale (``(scale_format, code)``: a power of two, or 0, ±Inf, NaN) and rounded
    once into `out`. The values (float64), or the codes with ``codes_out=True``."""
    out = _spec(out)
    bl = [_block(b, f"block {i}") for i, b in enumerate(blocks)]
    sf, sc = result_scale
    codes = _lowprec.ops_block_map(op, bl, (_spec(sf), int(sc)), out, rounding, saturation,
                                   draft, seed)
    return codes if codes_out else _lowprec.decode(codes, out).astype(np.float64)


def convert_to_block(x, format, scale_format="binary8p1uf", scale=None, target="one",
                     rounding="rne", saturation="none", draft="d1", seed=0):
    """ConvertToBlock: each ``x_i / s`` rounded once into `format`, `s` the caller's scale
    code `scale` of `scale_format`; with ``scale=None`` ConvertToBlockMaxAbsFinite, the scale
    from the largest finite magnitude (`target` ``"one"``: the draft's rule, the smallest
    scale at least max|x|; ``"max-finite"``: max|x| maps to the format's largest finite
    value). Returns ``(scale code, uint64 element codes)``."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    return _lowprec.ops_to_block(x, _spec(format), _spec(scale_format), scale, target, rounding,
                                 saturation, draft, seed)


def convert_from_block(block, out="fp64", rounding="rne", saturation="none", draft="d1",
                       codes_out=False):
    """ConvertFromBlock: each ``s·x_i`` exact, rounded once into `out` (float64 values; the
    codes with ``codes_out=True``)."""
    out = _spec(out)
    codes = _lowprec.ops_from_block(_block(block, "block"), out, rounding, saturation, draft)
    return codes if codes_out else _lowprec.decode(codes, out).astype(np.float64)
