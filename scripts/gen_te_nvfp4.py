#!/usr/bin/env python3
"""Golden vectors for TransformerEngine's NVFP4 recipe, from the plain-PyTorch reference
that torchao keeps beside its NVFP4 kernel tests
(pytorch/ao: test/prototype/moe_training/nvfp4_training/nvfp4_reference.py, a test file
that is not in the torchao wheel). The reference is passed by path and imported with
importlib; none of its code is copied here. Everything runs on the CPU.

    python3 -m venv /tmp/tvenv
    /tmp/tvenv/bin/pip install 'torch==2.15.*' 'torchao==0.18.*' numpy
    # the reference, e.g. from a clone of pytorch/ao at REF_COMMIT:
    git -C ao show REF_COMMIT:test/prototype/moe_training/nvfp4_training/nvfp4_reference.py \
        > /tmp/nvfp4_reference.py
    /tmp/tvenv/bin/python scripts/gen_te_nvfp4.py /tmp/nvfp4_reference.py \
        [--out tests/vectors/te_nvfp4.csv] [--ref-commit SHA]

The torchao 0.18 wheel's hadamard_utils predates DEFAULT_SIGN_VECTOR, which the reference
imports; when it is missing, TE's vector (below) is set on the module before the import,
and when present it is checked to equal TE's.

What the reference computes (read from its source, and checked here by an independent
numpy re-implementation that must agree with it bit for bit on every case):

Tensor scale.  amax = max|x| over the whole quantized tensor (binary32), then
    S_enc = 2688 / amax        (binary32, correctly rounded; 2688 = 448 * 6)
    S_enc = min(S_enc, FLT_MAX)                       (amax below 2688/FLT_MAX)
    S_enc = 1  if amax == 0 or S_enc == 0             (S_enc == 0 only for amax = inf)

Block scale (E4M3, "decode scale").  For every block b (1x16 or 16x16, below):
    s_b = E4M3_RNE( min( amax_b * (S_enc * f32(1/6)), 448 ) )
  binary32 arithmetic, the product S_enc*f32(1/6) rounded first, then one rounding of the
  product with amax_b. No lower clamp: a zero block, and a block whose scale is below half
  the least E4M3 subnormal (2^-10), gets the literal E4M3 code 0x00.

Element encode.  enc_b = min( 1 / (f32(s_b) * (1 / S_enc)), FLT_MAX )  (binary32, each
  operation correctly rounded; 1/S_enc may be a binary32 subnormal), then for each element
    q = E2M1_RNE( clamp(x * enc_b, -6, 6) )
  E2M1 magnitudes [0, .5, 1, 1.5, 2, 3, 4, 6] are codes 0..7, sign bit 0x8, and the sign is
  kept for results that round to zero (-0.0 and small negatives give 0x8). When s_b == 0,
  enc_b = FLT_MAX, so the nonzero elements of an underflowed block saturate to +-6 (codes
  0x7 / 0xf) even though the block decodes to 0 (its scale is 0). Decode is
    x' = e2m1(q) * f32(s_b) / S_enc.
  The same FLT_MAX clamp bites when amax < 2688/FLT_MAX (~7.9e-36): S_enc = FLT_MAX,
  1/S_enc = 2^-128 (a binary32 subnormal), and every block with s_b below ~1 gets
  enc_b = FLT_MAX instead of ~2^128/s_b, so its codes are too small for its own scale
  (case subnormal_amax_*, 1x16 and 16x16: decode is far from the input there; the
  reference's arithmetic, kept as is).
  The reference packs two codes a byte, the even element in the low nibble; the CSV holds
  them unpacked (one hex digit each).

Recipes (the CSV's `recipe` column):
  1x16        nvfp4_reference_quantize(x, amax(x), block="1x16"): blocks are 16
              consecutive elements of a row (along cols); scales grid rows x cols/16.
  16x16       nvfp4_reference_quantize(x, amax(x), block="16x16") (the 2-D weight
              recipe, rowwise output of reference_weight_quantize_2d): one scale per
              16x16 tile, amax_b over the 256 elements; grid rows/16 x cols/16. (The
              reference returns the tile scales repeated over the tile's 16 rows; the CSV
              keeps one per tile.)
  rht16+1x16  the columnwise output of reference_rht_quantize_row_col: the input A
              (rows=M x cols=N, must be bfloat16: the reference's matmul takes bf16 only)
              is transposed and rotated,
                  R = RHT(A^T)   of shape (N, M), bfloat16,
                  R[j, 16k + c] = bf16( f32( sum_i A[16k + i, j] * s_i * H[i, c] / 4 ) )
              i.e. every 16-element run down a column of A, as a row vector x, becomes
                  x . diag(s) . H16 / 4     (the signs act on the input index i;
              H16 is the Sylvester Hadamard matrix, H[i, c] = (-1)^popcount(i & c),
              symmetric, so H16 and H16^T are the same; s is TE's fixed sign vector
              (1,1,1,-1,1,-1,-1,-1,-1,-1,-1,1,-1,1,-1,-1)). The products are exact; the
              reference (torch CPU bf16 GEMM) sums in binary32 and rounds that sum to
              bf16, so the rounding is double (binary32, then bf16), e.g. the run
              (1, 2^-8, 2^-30, 0, ...) gives 1.0, not the correctly rounded 1 + 2^-7.
              amax = max|R| (of the bf16 R), then R is quantized 1x16 along its rows,
              i.e. blocks are 16 consecutive rows of one column of A, exactly the runs
              the Hadamard transform mixed. Scales grid N x M/16; codes are those of R,
              row-major over (N, M). (reference_rht_quantize_row_col's rowwise output is
              the plain 1x16 recipe of A, so it is not repeated here.)
              Portability of R: the binary32 sum can depend on the summation order,
              and the reference's CPU bf16 GEMM flushes subnormal inputs to zero. So
              the rht data are made (rht_safe) such that every element of R is the same
              for every order and bracketing of IEEE binary32 additions and no term or
              partial sum is subnormal (rht_numpy's certificate); runs of A that fail
              are snapped to a coarser grid. Then R = bf16(f32(exact sum)) is what any
              binary32-accumulating implementation must produce.

CSV columns (one row per case):
  case      name of the data set (the same data under the 1x16 and 16x16 recipes; the
            rht rows use the same generator, rounded to bf16)
  recipe    1x16 | 16x16 | rht16+1x16
  rows,cols shape of the input tensor
  dtype     f32 | bf16 (bf16: every input value is exactly a bfloat16, and the reference
            was given a bfloat16 tensor)
  input     the input's binary32 bit patterns, row-major, 8 lowercase hex digits each,
            no separator
  s_enc     binary32 bits of S_enc (8 hex digits)
  scales    E4M3 block-scale codes, 2 hex digits each, the block grid row-major
  codes     E2M1 codes, one hex digit per element, row-major over the quantized tensor
            (rows x cols; for rht16+1x16, cols x rows = R)
"""
import argparse
import csv
import hashlib
import importlib.util
import io
import math
import pathlib
import platform
import sys

import numpy as np

SEED = 20240917
TE_SIGN_VECTOR = (1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1)
REF_REPO_PATH = "test/prototype/moe_training/nvfp4_training/nvfp4_reference.py"
# pytorch/ao HEAD these vectors were made from, and the git blob of the reference there.
KNOWN_REF = {"23d26c50e1ef6459c72f61176a48cb146d93e8a0": "36027d82d1ad9949597ea16002ff4940374b1b94"}
COLUMNS = ["case", "recipe", "rows", "cols", "dtype", "input", "s_enc", "scales", "codes"]
RECIPES = ["1x16", "16x16", "rht16+1x16"]

F32 = np.float32
FLT_MAX = F32(np.finfo(np.float32).max)
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_TABLE = np.concatenate([E2M1_VALUES, -E2M1_VALUES])  # code -> value (0x8 = -0.0)

# Sylvester Hadamard matrix of order 16 (integers).
H16 = np.array([[(-1) ** bin(i & c).count("1") for c in range(16)] for i in range(16)])


# ---------------------------------------------------------------------------
# Independent numpy model (exact rounding, no torch)
# ---------------------------------------------------------------------------


def f32_bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def round_bf16(a):
    """binary32 -> nearest bfloat16 (ties to even), returned as binary32. Finite input."""
    b = f32_bits(a).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32)


def _round_to_grid(mag, min_exp, mant_bits):
    """Nearest (ties to even) point of a binary format with `mant_bits` fraction bits and
    least normal exponent `min_exp` (below it the subnormal step), for mag >= 0; exact in
    binary64 for binary32 input. No overflow handling (callers clamp first)."""
    mag = np.asarray(mag, dtype=np.float64)
    _, e = np.frexp(mag)  # mag = m * 2^e, m in [0.5, 1)
    exp = np.maximum(e - 1, min_exp)
    step = np.ldexp(1.0, exp - mant_bits)
    return np.rint(mag / step) * step  # np.rint: ties to even


def e4m3_encode(v):
    """binary32 in [0, 448] -> E4M3 (fn) code, round to nearest even."""
    q = _round_to_grid(v, -6, 3)
    _, e = np.frexp(q)
    sub = q < 2.0 ** -6
    exp_field = np.where(sub, 0, e - 1 + 7)
    mant = np.where(sub, q / 2.0 ** -9, q / np.ldexp(1.0, e - 1 - 3) - 8)
    return ((exp_field << 3) | mant.astype(np.int64)).astype(np.uint8)


def e4m3_decode(code):
    code = np.asarray(code, dtype=np.int64)
    e, m = (code >> 3) & 0xF, code & 7
    mag = np.where(e == 0, m * 2.0 ** -9, (8 + m) * np.ldexp(1.0, e - 7 - 3))
    mag = np.where((code & 0x7F) == 0x7F, np.nan, mag)
    return np.where(code & 0x80, -mag, mag)


def e2m1_encode(v):
    """binary32 in [-6, 6] -> E2M1 code (sign kept for values that round to zero)."""
    q = _round_to_grid(np.abs(v), 0, 1)
    idx = np.searchsorted(E2M1_VALUES, q)
    assert np.array_equal(E2M1_VALUES[idx], q)
    return (idx | np.where(np.signbit(v), 8, 0)).astype(np.uint8)


def _round_rat(num, den, shift, p, emin):
    """The value (num/den) * 2^shift (ints, den > 0) rounded to p significant bits,
    least normal exponent emin, ties to even; a Python float (exact, signed zero kept)."""
    if num == 0:
        return 0.0
    a = abs(num)
    t = a.bit_length() - den.bit_length()
    if (a << -t if t < 0 else a) < (den << t if t > 0 else den):
        t -= 1  # now 2^t <= a/den < 2^(t+1)
    lsb = max(t + shift, emin) - (p - 1)
    d = lsb - shift
    n_, d_ = (a, den << d) if d >= 0 else (a << -d, den)
    m, r = divmod(n_, d_)
    if 2 * r > d_ or (2 * r == d_ and m & 1):
        m += 1
    val = math.ldexp(m, lsb)
    return -val if num < 0 else val


def _tree_sums_f32(terms):
    """Every binary32 result of summing `terms` (binary32 values) in any order and any
    bracketing (IEEE binary32 additions, round to nearest even), as a set of bit patterns."""
    k = len(terms)
    res = {1 << i: {F32(terms[i]).view(np.uint32).item()} for i in range(k)}
    for mask in range(1, 1 << k):
        if mask in res:
            continue
        out = set()
        sub = (mask - 1) & mask
        while sub:
            rest = mask ^ sub
            if sub < rest:  # each unordered split once (addition commutes)
                for a in res[sub]:
                    for b in res[rest]:
                        va, vb = np.array(a, np.uint32).view(np.float32), np.array(b, np.uint32).view(np.float32)
                        out.add((va + vb).view(np.uint32).item())
            sub = (sub - 1) & mask
        res[mask] = out
    return res[(1 << k) - 1]


GAMMA_NUM, GAMMA_DEN = 15, 2 ** 24 - 15  # gamma_15 = 15u / (1 - 15u), u = 2^-24


def rht_numpy(a):
    """R = RHT(A^T) as documented: (M, N) bf16-valued binary32 -> (N, M) binary32 holding
    bf16 values, bf16(f32(exact sum)). Also returns how many of its elements differ from
    the single rounding bf16(exact sum), and a (N, M) mask of the elements whose value
    depends on the order of binary32 summation. An element is certified order-free when
    (a) it has at most 6 nonzero terms and every summation tree gives the same bf16, or
    (b) all partial sums are exact in binary32 (the terms are multiples of 2^L and the sum
    of their magnitudes is below 2^(L+24)), or (c) every value within the recursive-
    summation error bound gamma_15 * sum|t| of the exact sum rounds to the same bf16;
    and, in every case, all its terms are multiples of 2^-126, so no term or partial sum
    is a binary32 subnormal (flushed by some GEMMs, the reference's CPU one included)."""
    m, n = a.shape
    runs = a.T.reshape(-1, 16).astype(np.float64)
    # every bf16 value is an integer multiple of 2^-133; the /4 makes it 2^-135
    ints = [[int(v * 2.0 ** 133) for v in run] for run in runs]
    coef = np.array(TE_SIGN_VECTOR)[:, None] * H16  # diag(s) @ H; the matrix is that / 4
    out = np.empty((len(ints), 16), dtype=np.float32)
    double_rounded = 0
    ambiguous = np.zeros((len(ints), 16), dtype=bool)
    for r, run in enumerate(ints):
        for c in range(16):
            terms = [run[i] * int(coef[i, c]) for i in range(16)]
            s = sum(terms)
            f32 = _round_rat(s, 1, -135, 24, -126)
            assert abs(f32) <= float(FLT_MAX), "binary32 overflow in the rotation"
            bf = float(round_bf16(np.array([f32], dtype=np.float32))[0])
            out[r, c] = bf
            exact_bf = _round_rat(s, 1, -135, 8, -126)
            double_rounded += bf != exact_bf
            nz = [t for t in terms if t]
            mags = sum(abs(t) for t in nz)
            low = min(((t & -t).bit_length() - 1 for t in map(abs, nz)), default=9)
            if low < 9:  # a term or partial sum may be a binary32 subnormal: not
                ok = False  # portable (the reference's CPU GEMM flushes them)
            elif not nz:
                ok = True
            elif len(nz) <= 6:
                tv = [math.ldexp(t, -135) for t in nz]
                bfs = {round_bf16(np.array(v, np.uint32).view(np.float32)).view(np.uint32).item()
                       for v in _tree_sums_f32(tv)}
                ok = len(bfs) == 1 and bfs == {np.float32(bf).view(np.uint32).item()}
            else:
                ok = mags < 1 << (low + 24)
                if not ok:
                    lo = _round_rat(s * GAMMA_DEN - GAMMA_NUM * mags, GAMMA_DEN, -135, 8, -126)
                    hi = _round_rat(s * GAMMA_DEN + GAMMA_NUM * mags, GAMMA_DEN, -135, 8, -126)
                    ok = (np.float32(lo).view(np.uint32) == np.float32(hi).view(np.uint32)
                          and lo == bf)
            ambiguous[r, c] = not ok
    return out.reshape(n, m), int(double_rounded), ambiguous.reshape(n, m)


def rht_safe(a):
    """Snap the 16-element column runs of A whose rotation is summation-order dependent to
    multiples of 2^(e-19), e = exponent of the run's largest magnitude: then every partial
    sum is exact in binary32 (criterion (b) of rht_numpy)."""
    _, _, amb = rht_numpy(a)
    n_fixed = 0
    a = a.copy()
    for j, k in sorted({(j, mm // 16) for j, mm in np.argwhere(amb)}):
        run = a[16 * k : 16 * k + 16, j].astype(np.float64)
        e = np.frexp(np.abs(run).max())[1] - 1
        g = math.ldexp(1.0, max(int(e) - 19, -124))
        a[16 * k : 16 * k + 16, j] = (np.rint(run / g) * g).astype(np.float32)
        n_fixed += 1
    assert np.array_equal(f32_bits(round_bf16(a)), f32_bits(a))
    assert not rht_numpy(a)[2].any()
    return a, n_fixed


def nvfp4_numpy(x, amax, block_rows):
    """(s_enc, block scale codes, enc_b, scaled, codes) of the documented recipe."""
    x = np.asarray(x, dtype=np.float32)
    rows, cols = x.shape
    amax = F32(amax)
    with np.errstate(divide="ignore", over="ignore"):
        s_enc = min(F32(2688.0) / amax, FLT_MAX)
        if amax == 0 or s_enc == 0:
            s_enc = F32(1.0)
        blk = np.abs(x).reshape(rows // block_rows, block_rows, cols // 16, 16).max(axis=(1, 3))
        pre = np.minimum(blk * (s_enc * F32(1.0 / 6.0)), F32(448.0))
        sc = e4m3_encode(pre)
        sdec = e4m3_decode(sc).astype(np.float32)
        enc = np.minimum(F32(1.0) / (sdec * (F32(1.0) / s_enc)), FLT_MAX)
        expanded = enc.repeat(block_rows, axis=0).repeat(16, axis=1)
        scaled = x * expanded
    codes = e2m1_encode(np.clip(scaled, F32(-6.0), F32(6.0)))
    return F32(s_enc), sc, enc, scaled, codes


# ---------------------------------------------------------------------------
# The reference (torch)
# ---------------------------------------------------------------------------


def load_reference(path):
    import torch  # noqa: F401
    import torchao.prototype.moe_training.nvfp4_training.hadamard_utils as hu

    patched = not hasattr(hu, "DEFAULT_SIGN_VECTOR")
    if patched:
        hu.DEFAULT_SIGN_VECTOR = TE_SIGN_VECTOR
    assert tuple(hu.DEFAULT_SIGN_VECTOR) == TE_SIGN_VECTOR
    spec = importlib.util.spec_from_file_location("nvfp4_reference", path)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    return ref, hu, patched


def unpack_codes(packed):
    """(R, C/2) uint8, even element in the low nibble -> (R, C) codes."""
    p = packed.numpy()
    out = np.empty((p.shape[0], p.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = p & 0xF
    out[:, 1::2] = p >> 4
    return out


def run_reference(ref, x, dtype, recipe):
    """-> dict(s_enc, scales, codes, target, double_rounded) from the reference, each
    checked bit for bit against the numpy model."""
    import torch
    from torchao.prototype.mx_formats.kernels import f32_to_f4_unpacked

    t = torch.from_numpy(x.copy())
    if dtype == "bf16":
        t = t.to(torch.bfloat16)
        assert np.array_equal(f32_bits(t.float().numpy()), f32_bits(x)), "input not bf16"
    double_rounded = 0
    if recipe == "rht16+1x16":
        assert dtype == "bf16"
        rot = ref.reference_rht(t)
        col_amax, row_amax = ref.reference_rht_amax(t)
        out, _row = ref.reference_rht_quantize_row_col(t, col_amax, row_amax, layout="plain")
        assert torch.equal(out.values, rot.float())
        target = rot.float().numpy()
        mine, double_rounded, ambiguous = rht_numpy(x)
        assert not ambiguous.any(), "summation-order dependent RHT element"
        assert np.array_equal(f32_bits(mine), f32_bits(target)), "numpy RHT != reference RHT"
        amax = col_amax
        block_rows = 1
    else:
        block_rows = 1 if recipe == "1x16" else 16
        amax = t.float().abs().max()
        out = ref.nvfp4_reference_quantize(t, amax, block=recipe, layout="plain")
        target = x
    assert out.block_rows == block_rows
    assert float(amax) == float(np.abs(target).max())
    s_enc = F32(ref.global_encode_scale(amax).item())
    scales = out.block_scale.view(torch.uint8).numpy()
    assert torch.equal(
        out.scales.view(torch.uint8), out.block_scale.view(torch.uint8).repeat_interleave(block_rows, 0)
    )
    codes = unpack_codes(out.codes)
    # nibble order: the unpacked reference codes are f32_to_f4_unpacked of the clamped
    # pre-round values, element for element
    direct = f32_to_f4_unpacked(out.scaled.clamp(-6.0, 6.0).contiguous()).numpy()
    assert np.array_equal(codes, direct), "nibble order"

    n_s_enc, n_sc, n_enc, n_scaled, n_codes = nvfp4_numpy(target, amax.item(), block_rows)
    assert f32_bits(n_s_enc) == f32_bits(s_enc), "S_enc"
    assert np.array_equal(n_sc, scales), "block scales"
    assert np.array_equal(f32_bits(n_enc), f32_bits(out.encode_scale.numpy())), "encode scales"
    assert np.array_equal(f32_bits(n_scaled), f32_bits(out.scaled.numpy())), "scaled"
    assert np.array_equal(n_codes, codes), "codes"
    return dict(s_enc=s_enc, scales=scales, codes=codes, target=target, double_rounded=double_rounded)


# ---------------------------------------------------------------------------
# Test data
# ---------------------------------------------------------------------------


def _normal(rng, r, c):
    return rng.standard_normal((r, c)).astype(np.float32)


def d_normal(rng, r, c, rht):
    return _normal(rng, r, c)


def d_outliers(rng, r, c, rht):
    x = _normal(rng, r, c)
    n = max(2, r * c // 200)
    idx = rng.choice(r * c, n, replace=False)
    x.flat[idx] *= F32(60.0) * rng.uniform(0.5, 2.0, n).astype(np.float32)
    return x


def d_mixed_rows(rng, r, c, rht):
    # each row and each 16-column run its own power-of-two scale over ~2^-24..2^12:
    # block scales over the whole E4M3 range, subnormal ones and underflows included
    # (rht: one scale per 16-row run of a column, the blocks of R)
    if rht:
        k = rng.integers(-24, 13, (r // 16, c)).repeat(16, axis=0)
    else:
        k = rng.integers(-24, 13, (r, c // 16)).repeat(16, axis=1)
    return (_normal(rng, r, c) * np.ldexp(1.0, k)).astype(np.float32)


def d_zero_blocks(rng, r, c, rht):
    x = _normal(rng, r, c)
    x[0:16, 16:32] = 0.0  # a whole 16x16 tile (and 16 column runs for the rht)
    x[16:32, 32:48] = -0.0  # a tile of negative zeros
    for row in range(0, r, 3):  # scattered 1x16 zero runs
        j = int(rng.integers(0, c // 16))
        x[row, 16 * j : 16 * j + 16] = 0.0
    x[5, 48:64] = -0.0
    x[7, 0:16] = 0.0
    x[7, 3] = -0.0
    return x


def d_all_zero(rng, r, c, rht):
    return np.zeros((r, c), dtype=np.float32)


def d_underflow(rng, r, c, rht):
    # amax 1e4 (S_enc = 0.2688): runs at 1e-6 and 1e-3 scale get E4M3 scale 0, runs at
    # 0.03..0.3 get subnormal E4M3 scales, and tiny values share runs with 1e4
    mags = np.array([1e-6, 1e-3, 0.03, 0.1, 0.3, 1.0, 30.0, 1e3], dtype=np.float32)
    if rht:  # magnitudes per 16-row run of a column, the blocks of R
        k = rng.integers(0, len(mags), (r // 16, c)).repeat(16, axis=0)
    else:
        k = rng.integers(0, len(mags), (r, c // 16)).repeat(16, axis=1)
    x = _normal(rng, r, c) * mags[k]
    x = np.clip(x, -9000, 9000).astype(np.float32)
    for row in range(0, r, 4):
        x[row, int(rng.integers(0, c))] = F32(1e4) * (1 if row % 8 else -1)
    if rht:
        x[0:16, 3] = F32(1e-6) * rng.standard_normal(16).astype(np.float32)
        x[5, 3] = F32(1e4)
    else:
        x[1, 0:16] = F32(1e-6) * rng.standard_normal(16).astype(np.float32)
        x[1, 5] = F32(1e4)
    if rht:  # a column run whose binary32 sum is rounded again to bf16 (double rounding)
        x[0:16, 1] = 0.0
        x[0, 1], x[1, 1], x[2, 1] = 8192.0, 32.0, 2.0 ** -17
    return x


def d_huge(rng, r, c, rht):
    x = _normal(rng, r, c)
    # near 1e38 (the rotated tensor can be up to 4x larger: keep it finite there)
    return (x * F32((2e37 if rht else 1e38) / np.abs(x).max())).astype(np.float32)


def d_tiny(rng, r, c, rht):
    x = _normal(rng, r, c)
    return (x * F32(1e-30 / np.abs(x).max())).astype(np.float32)


def d_subnormal(rng, r, c, rht):
    # amax below 2688/FLT_MAX (~7.9e-36): 2688/amax overflows binary32, S_enc = FLT_MAX.
    # 1x16/16x16: binary32 subnormals, amax ~1e-39. rht: the reference's CPU bf16 GEMM
    # flushes subnormal inputs to zero, so there the values are the normal multiples
    # n * 2^-124, |n| <= 16 (every term and partial sum of the rotation is a normal
    # multiple of 2^-126 and |R| <= 2^-118)
    if rht:
        n = np.clip(np.rint(_normal(rng, r, c) * 6), -16, 16)
        return np.ldexp(n, -124).astype(np.float32)
    x = _normal(rng, r, c).astype(np.float64) * (1e-39 / 4.0)
    return x.astype(np.float32)


def d_ties(rng, r, c, rht):
    # global amax 2688 -> S_enc = 1; block amax 6*2^j -> scale 2^j exactly, elements on
    # E2M1 midpoints (ties to even); some blocks' amax is 6 * (E4M3 midpoint), so the
    # block scale is itself a tie
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0.5, 1.0, 3.0])
    x = np.empty((r, c), dtype=np.float32)
    for i in range(r):
        for j in range(c // 16):
            v = rng.choice(mids, 16) * rng.choice([-1.0, 1.0], 16)
            v[int(rng.integers(0, 16))] = 6.0
            k = 2.0 ** int(rng.integers(-3, 4))
            if (i + j) % 5 == 0:  # E4M3 midpoints 1+1/16, 1+3/16, 2+1/8, 0.5+1/32 (tie)
                k = float(rng.choice([1.0625, 1.1875, 2.125, 0.53125]))
                v = np.where(np.abs(v) == 6.0, 6.0, v)
            x[i, 16 * j : 16 * j + 16] = v * k
    x[0, 0] = 2688.0  # 6 * 448
    return x


CASES = [
    # name, generator, rows, cols, dtype for 1x16 / 16x16 (rht is always bf16)
    ("normal_16x32", d_normal, 16, 32, "f32"),
    ("normal_32x64", d_normal, 32, 64, "f32"),
    ("normal_48x128", d_normal, 48, 128, "f32"),
    ("outliers_32x64", d_outliers, 32, 64, "f32"),
    ("outliers_bf16_48x128", d_outliers, 48, 128, "bf16"),
    ("mixed_scales_32x64", d_mixed_rows, 32, 64, "f32"),
    ("zero_blocks_32x64", d_zero_blocks, 32, 64, "f32"),
    ("all_zero_16x32", d_all_zero, 16, 32, "f32"),
    ("underflow_32x64", d_underflow, 32, 64, "f32"),
    ("huge_amax_16x32", d_huge, 16, 32, "f32"),
    ("tiny_amax_16x32", d_tiny, 16, 32, "f32"),
    ("subnormal_amax_32x32", d_subnormal, 32, 32, "f32"),
    ("ties_16x32", d_ties, 16, 32, "f32"),
]


def case_data(name, gen, rows, cols, dtype, rht):
    # one generator per (case, rht) so the data do not depend on the order of cases
    tag = int.from_bytes(hashlib.sha256(f"{name}/{rht}".encode()).digest()[:4], "little")
    x = gen(np.random.default_rng([SEED, tag]), rows, cols, rht).astype(np.float32)
    assert np.all(np.isfinite(x))
    if rht or dtype == "bf16":
        x = round_bf16(x)
    n_fixed = 0
    if rht:
        x, n_fixed = rht_safe(x)
    return x, n_fixed


# ---------------------------------------------------------------------------
# CSV, and reading it back
# ---------------------------------------------------------------------------


def hexs(a, width):
    return "".join(format(int(v), f"0{width}x") for v in np.asarray(a).ravel())


def unhex(s, width, dtype):
    return np.array([int(s[i : i + width], 16) for i in range(0, len(s), width)], dtype=dtype)


def self_check(path):
    """Parse the CSV back; re-derive every row with the numpy model; check the decoded
    values against the input (or R). Returns the number of rows."""
    lines = [l for l in pathlib.Path(path).read_text().splitlines() if not l.startswith("#")]
    stats = {}
    reader = csv.DictReader(lines)
    assert reader.fieldnames == COLUMNS, reader.fieldnames
    n = 0
    for row in reader:
        n += 1
        rows, cols, recipe = int(row["rows"]), int(row["cols"]), row["recipe"]
        x = unhex(row["input"], 8, np.uint32).view(np.float32).reshape(rows, cols)
        if row["dtype"] == "bf16":
            assert np.array_equal(f32_bits(round_bf16(x)), f32_bits(x))
        s_enc = unhex(row["s_enc"], 8, np.uint32).view(np.float32)[0]
        if recipe == "rht16+1x16":
            target, _, ambiguous = rht_numpy(x)
            assert not ambiguous.any(), row["case"]
            block = (1, 16)
        else:
            target = x
            block = (1, 16) if recipe == "1x16" else (16, 16)
        tr, tc = target.shape
        grid = (tr // block[0], tc // block[1])
        scales = unhex(row["scales"], 2, np.uint8).reshape(grid)
        codes = unhex(row["codes"], 1, np.uint8).reshape(tr, tc)
        n_s_enc, n_sc, n_enc, _, n_codes = nvfp4_numpy(target, np.abs(target).max(), block[0])
        assert f32_bits(n_s_enc) == f32_bits(s_enc), row["case"]
        assert np.array_equal(n_sc, scales) and np.array_equal(n_codes, codes), row["case"]
        # decode: e2m1 * scale / S_enc, and compare with what was quantized
        dscale = e4m3_decode(scales).repeat(block[0], 0).repeat(16, 1)
        deq = E2M1_TABLE[codes] * dscale / float(s_enc)
        err = np.abs(deq - target.astype(np.float64))
        bamax = np.abs(target.astype(np.float64)).reshape(grid[0], block[0], grid[1], 16).max(axis=(1, 3))
        # per block: half an E2M1 step at the top (1/6 of amax), the scale's own rounding
        # (<= 1/16 relative when normal), saturation; an E4M3-subnormal or underflowed
        # scale adds up to 6 * 2^-9 / S_enc
        tol = 0.25 * bamax + 6 * 2.0 ** -9 / float(s_enc)
        # except where enc_b saturated at FLT_MAX with a nonzero scale (S_enc = FLT_MAX,
        # s_b < ~1): there the codes are too small for their own scale (see the header)
        saturated = (n_enc == FLT_MAX) & (scales != 0)
        tol = np.where(saturated, np.inf, tol)
        assert np.all(err <= tol.repeat(block[0], 0).repeat(16, 1)), row["case"]
        if saturated.any():
            assert row["case"].startswith("subnormal_amax"), row["case"]
            stats[(row["case"], recipe)] = int(saturated.sum())
        assert np.all(deq[target == 0] == 0)
        if row["case"].startswith("normal"):
            rel = np.sqrt(np.mean(err ** 2) / np.mean(target.astype(np.float64) ** 2))
            assert rel < 0.15, (row["case"], recipe, rel)
    for (case, recipe), k in stats.items():
        print(f"self-check: {case} {recipe}: {k} blocks with enc_b saturated at FLT_MAX", file=sys.stderr)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference", help="path to pytorch/ao's " + REF_REPO_PATH)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[1] / "tests/vectors/te_nvfp4.csv"))
    ap.add_argument("--ref-commit", default=None, help="pytorch/ao commit the reference came from")
    args = ap.parse_args()

    import torch
    import torchao

    torch.set_num_threads(1)
    ref_bytes = pathlib.Path(args.reference).read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(ref_bytes) + ref_bytes).hexdigest()
    commit = args.ref_commit or KNOWN_REF.get(blob, "unknown")
    ref, hu, patched = load_reference(args.reference)

    # the Hadamard matrix the reference uses is diag(s) @ H16 / 4, as modelled here
    b = hu.get_rht_matrix(TE_SIGN_VECTOR, "cpu", torch.bfloat16, 16).float().numpy()
    assert np.array_equal(b * 4, np.array(TE_SIGN_VECTOR)[:, None] * H16)

    out_rows, stats = [], {"double_rounded": 0, "snapped": 0}
    for name, gen, rows, cols, dtype in CASES:
        for recipe in RECIPES:
            rht = recipe == "rht16+1x16"
            d = "bf16" if rht else dtype
            x, n_fixed = case_data(name, gen, rows, cols, d, rht)
            stats["snapped"] += n_fixed
            res = run_reference(ref, x, d, recipe)
            stats["double_rounded"] += res["double_rounded"]
            out_rows.append([name, recipe, rows, cols, d, hexs(f32_bits(x), 8),
                             hexs(f32_bits(res["s_enc"]).reshape(1), 8),
                             hexs(res["scales"], 2), hexs(res["codes"], 1)])
            print(f"{name:24s} {recipe:11s} s_enc={float(res['s_enc']):.6g} "
                  f"zero scales={int((res['scales'] == 0).sum())}/{res['scales'].size}", file=sys.stderr)

    header = [
        "TransformerEngine NVFP4 golden vectors (lowprec).",
        "Generated by scripts/gen_te_nvfp4.py (see its docstring for the recipe in full):",
        "  /tmp/tvenv/bin/python scripts/gen_te_nvfp4.py /tmp/nvfp4_reference.py",
        f"Reference: github.com/pytorch/ao {REF_REPO_PATH} at commit {commit} (git blob {blob}),",
        "  a plain-PyTorch transcription of TE's core_nvfp4.cuh scale chain and RHT, run on CPU.",
        f"Versions: python {platform.python_version()}, torch {torch.__version__}, torchao {torchao.__version__}, numpy {np.__version__}.",
        "  hadamard_utils.DEFAULT_SIGN_VECTOR "
        + ("was missing in this torchao and was set to TE's vector before importing the reference."
           if patched else "was present and equals TE's vector."),
        f"Every row was re-derived bit for bit by the script's own numpy model; data seed {SEED}.",
        "",
        "Columns:",
        "  case     data set name (same data under 1x16 and 16x16; rht rows: same generator, bf16-rounded)",
        "  recipe   1x16: blocks of 16 consecutive elements of a row; scales grid rows x cols/16",
        "           16x16: one scale per 16x16 tile; scales grid rows/16 x cols/16",
        "           rht16+1x16: R = RHT(A^T) (N x M bf16, A = input M x N), R quantized 1x16 along its rows;",
        "             R[j,16k+c] = bf16(f32(sum_i A[16k+i,j] * s_i * H[i,c] / 4)), H[i,c] = (-1)^popcount(i&c),",
        "             s = (1,1,1,-1,1,-1,-1,-1,-1,-1,-1,1,-1,1,-1,-1) (the sum rounded to binary32, then to bf16);",
        "             scales grid cols x rows/16; codes are those of R (cols x rows)",
        "  rows,cols  input shape",
        "  dtype    f32 | bf16 (bf16: every input value is a bfloat16 and the reference got a bf16 tensor)",
        "  input    input binary32 bit patterns, row-major, 8 lowercase hex digits each, no separator",
        "  s_enc    binary32 bits of S_enc = min(2688/amax, FLT_MAX), 1 if amax == 0 (amax = max|x|, or max|R|)",
        "  scales   E4M3 (e4m3fn) decode-scale codes, 2 hex digits each, block grid row-major;",
        "           s_b = e4m3_rne(min(amax_b * (S_enc * f32(1/6)), 448)), no lower clamp (0x00 for zero/underflow)",
        "  codes    E2M1 codes, 1 hex digit per element (unpacked; sign 0x8, magnitudes 0,.5,1,1.5,2,3,4,6 = 0..7),",
        "           row-major over the quantized tensor; q = e2m1_rne(clamp(x * enc_b, -6, 6)),",
        "           enc_b = min(1 / (f32(s_b) * (1/S_enc)), FLT_MAX); signed zero kept (-0.0 -> 0x8);",
        "           elements of a block with s_b == 0 saturate (enc_b = FLT_MAX) though the block decodes to 0.",
        "  decode   x' = e2m1(code) * f32(s_b) / S_enc",
        "Note: when amax < 2688/FLT_MAX (~7.9e-36; case subnormal_amax_* under 1x16/16x16) S_enc = FLT_MAX and",
        "  enc_b saturates at FLT_MAX for blocks with s_b below ~1, so those codes are too small for their scale",
        "  (the reference's arithmetic, kept as is).",
        "rht rows: every element of R is independent of the order of the binary32 summation (any order or",
        "  bracketing of IEEE binary32 additions gives the same bf16) and no term or partial sum is a binary32",
        "  subnormal (the reference's CPU GEMM flushes them); to make it so, the generator snapped",
        f"  {stats['snapped']} 16-element column runs of A to multiples of 2^(e-19) (e: the run's largest exponent).",
        f"  {stats['double_rounded']} elements of R differ from a single correct rounding of the exact sum to bf16",
        "  (double rounding: binary32 then bf16).",
    ]
    buf = io.StringIO()
    for line in header:
        buf.write(("# " + line).rstrip() + "\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(out_rows)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(buf.getvalue())
    n = self_check(out)
    print(f"wrote {out}: {n} rows, {out.stat().st_size} bytes; self-check passed", file=sys.stderr)


if __name__ == "__main__":
    main()
