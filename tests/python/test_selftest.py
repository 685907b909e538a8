"""The seed's own self-test (`numfmt._selftest`) run with lowprec substituted for numfmt:
the function's source is compiled against lowprec's namespace, so every name it uses
(FloatFormat presets, BY_NAME, encode/decode, mx/nvfp4/int quantization, accumulate,
softmax) is lowprec's. Then the points where the seed is wrong, asserted the other way."""
import ast

import numpy as np

import lowprec
from conftest import SEEDS


def _selftest_against(module):
    src = (SEEDS / "numfmt.py").read_text(encoding="utf-8")
    tree = ast.parse(src)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_selftest")
    ns = {k: getattr(module, k) for k in dir(module) if not k.startswith("__")}
    ns["np"] = np
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "numfmt._selftest", "exec"), ns)
    return ns["_selftest"]


def test_seed_selftest_with_lowprec(capsys):
    _selftest_against(lowprec)()
    out = capsys.readouterr().out
    assert out.count("通过") == 7  # every section printed its "passed"


def test_seed_selftest_with_seed(numfmt):
    # the same harness runs the seed itself (so the harness is not vacuous)
    _selftest_against(numfmt)()


# --- the seed-wrong points (shared/vectors/README.md), asserted the other way ---------------
def test_toward_zero_overflow_is_max_not_inf(numfmt):
    for name, x in (("FP16", 70000.0), ("FP8-E4M3", 1000.0), ("FP8-E5M2", 1e6), ("BF16", 1e39)):
        f, s = lowprec.BY_NAME[name], numfmt.BY_NAME[name]
        with np.errstate(all="ignore"):
            assert not np.isfinite(s.round(x, rounding="toward_zero"))  # the seed: Inf/NaN
        # IEEE 754 §7.4: toward zero carries an overflow to the largest finite number
        assert f.round(x, rounding="toward_zero") == f.max_value
        assert f.round(-x, rounding="toward_zero") == -f.max_value


def test_nearest_away_below_half_min_subnormal_is_zero(numfmt):
    for f in lowprec.FORMATS:
        h = f.min_subnormal / 2
        x = np.nextafter(h, 0)
        seed = numfmt.BY_NAME[f.name].round(x, rounding="nearest_away")
        assert seed == f.min_subnormal  # the seed rounds up below the tie
        assert f.round(x, rounding="nearest_away") == 0.0  # correct: below the tie
        assert f.round(h, rounding="nearest_away") == f.min_subnormal  # the tie goes away


def test_all_zero_mx_block_scale(numfmt):
    z = np.zeros(64)
    v, X = lowprec.mx_quantize(z, lowprec.FP4_E2M1)
    _, Xs = numfmt.mx_quantize(z, numfmt.FP4_E2M1)
    assert np.all(Xs == 0.25)  # the seed: 2^(0 - emax)
    assert np.all(X == 2.0**-127) and np.all(v == 0)  # E8M0 code 0, as gfloat/torchao/OCP


def test_symmetric_int_small_negative_is_plus_zero(numfmt):
    x = np.array([1.0, -1e-6, 0.5])
    d, q, _, _ = lowprec.quantize_int(x, 8)
    ds, qs, _, _ = numfmt.quantize_int(x, 8)
    assert np.signbit(ds[1]) and not np.signbit(d[1])  # seed −0, lowprec +0 (the code 0)
    assert np.array_equal(q, qs) and np.array_equal(d, ds)
