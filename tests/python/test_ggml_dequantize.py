"""ggml dequantization against the `gguf` package's numpy reference (`gguf.quants.dequantize`),
bit for bit, on every type that both lowprec and `gguf` decode.

Inputs are raw blocks: random bytes (fixed seeds), blocks with "tame" scales (finite normal
f16, so that nearly every output is finite), every byte value in every byte position, and
edge scales (±0, ±subnormal, ±65504, ±Inf, NaN) in every f16 scale field; 1-D and 2-D
arrays, one block, a few blocks, and inputs past the parallel threshold. Values compare
as bit patterns, NaN equal to NaN whatever its payload.
"""
import zlib

import numpy as np
import pytest

gguf = pytest.importorskip(
    "gguf", reason="the gguf package (the reference dequantizers) is not installed"
)
from gguf import quants  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType  # noqa: E402

import lowprec  # noqa: E402

lp = lowprec._lowprec

# the reference's numpy warns on Inf · 0 and the like, which the edge blocks are for
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TYPES = {t[0]: t for t in lp.ggml_types()}  # name -> (name, id, block, size, deq, q)


def _gguf_decodes(name):
    """Whether gguf.quants has a dequantizer for the type (probed on one zero block)."""
    qt = GGMLQuantizationType[name]
    _, size = GGML_QUANT_SIZES[qt]
    try:
        quants.dequantize(np.zeros(size, dtype=np.uint8), qt)
    except NotImplementedError:
        return False
    return True


REF_TYPES = [n for n in TYPES if n in GGMLQuantizationType.__members__ and _gguf_decodes(n)]

# byte offsets of the f16 scale fields in each block
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ2_XXS": [0], "IQ2_XS": [0], "IQ2_S": [0], "IQ3_XXS": [0], "IQ3_S": [0],
    "IQ1_S": [0], "IQ4_NL": [0], "IQ4_XS": [0], "TQ1_0": [52], "TQ2_0": [64],
}
# IQ1_M: the f16 d sits in the top nibbles of the four u16 at bytes 48..56
IQ1_M_SCALES = 48
# one-byte scales: MXFP4's E8M0 and NVFP4's four UE4M3
BYTE_SCALES = {"MXFP4": ([0], 100, 150), "NVFP4": ([0, 1, 2, 3], 0x08, 0x70)}

EDGE_F16 = [
    0x0000, 0x8000,  # ±0
    0x0001, 0x8001, 0x03FF, 0x83FF,  # ±subnormal (least, greatest)
    0x0400, 0x8400,  # ±least normal
    0x3C00, 0xBC00,  # ±1
    0x7BFF, 0xFBFF,  # ±65504
    0x7C00, 0xFC00,  # ±Inf
    0x7E00, 0xFE00, 0x7C01, 0x7FFF,  # NaNs (quiet, signalling, payloads)
]


def seed(name, salt):
    return zlib.crc32(f"{name}/{salt}".encode())


def sizes(name):
    _, _, block, size, _, _ = TYPES[name]
    return block, size


def set_f16(blocks, name, value, fields=None):
    """Set the f16 scale field(s) of every block (rows of `blocks`) to `value` (array or int)."""
    value = np.asarray(value, dtype=np.uint16)
    if name == "IQ1_M":
        w = blocks[:, IQ1_M_SCALES:IQ1_M_SCALES + 8].copy().view(np.uint16)
        for k in range(4):
            w[:, k] = (w[:, k] & 0x0FFF) | (((value >> (4 * k)) & 0xF) << 12)
        blocks[:, IQ1_M_SCALES:IQ1_M_SCALES + 8] = w.view(np.uint8)
        return
    for off in F16_FIELDS.get(name, []) if fields is None else fields:
        v = np.broadcast_to(value, blocks.shape[:1])
        blocks[:, off] = (v & 0xFF).astype(np.uint8)
        blocks[:, off + 1] = (v >> 8).astype(np.uint8)


def has_scales(name):
    return name in F16_FIELDS or name == "IQ1_M"


def tame(rng, blocks, name):
    """Give every block finite, normal scales (f16 exponent 1..30; moderate byte scales)."""
    n = blocks.shape[0]
    if has_scales(name):
        fields = F16_FIELDS.get(name, [None])
        for off in fields:
            sign = rng.integers(0, 2, n, dtype=np.uint16) << 15
            exp = rng.integers(1, 31, n, dtype=np.uint16) << 10
            man = rng.integers(0, 1024, n, dtype=np.uint16)
            set_f16(blocks, name, sign | exp | man, None if off is None else [off])
    if name in BYTE_SCALES:
        offs, lo, hi = BYTE_SCALES[name]
        for off in offs:
            blocks[:, off] = rng.integers(lo, hi, n, dtype=np.uint8)
    return blocks


def random_blocks(name, n, salt, tamed=False):
    block, size = sizes(name)
    rng = np.random.default_rng(seed(name, salt))
    b = rng.integers(0, 256, (n, size), dtype=np.uint8)
    return tame(rng, b, name) if tamed else b


def assert_same(raw, name):
    """lowprec and gguf decode `raw` to the same float32 bits (NaN equal to any NaN)."""
    want = quants.dequantize(raw, GGMLQuantizationType[name])
    got = lp.ggml_dequantize(raw, name)
    assert got.dtype == np.float32 and want.dtype == np.float32
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = got.reshape(-1).view(np.uint32), want.reshape(-1).view(np.uint32)
    bad = (g != w) & ~(np.isnan(got.reshape(-1)) & np.isnan(want.reshape(-1)))
    if bad.any():
        block, size = sizes(name)
        idx = np.flatnonzero(bad)
        rows = raw.reshape(-1, size)
        lines = [f"{name}: {idx.size} of {g.size} values differ; first:"]
        for i in idx[:8]:
            b = i // block
            lines.append(
                f"  element {i} (block {b}, index {i % block}): got {g[i]:#010x} "
                f"({got.reshape(-1)[i]!r}), want {w[i]:#010x} ({want.reshape(-1)[i]!r}); "
                f"block bytes {rows[b].tobytes().hex()}"
            )
        pytest.fail("\n".join(lines))
    return want


def test_type_table_matches_gguf():
    for name, (_, tid, block, size, can_deq, _) in TYPES.items():
        qt = GGMLQuantizationType[name]
        assert int(qt) == tid, name
        assert GGML_QUANT_SIZES[qt] == (block, size), name
    for name in REF_TYPES:
        assert TYPES[name][4], f"gguf decodes {name} but lowprec says it cannot"
    # the reference types this file covers, at least these (a shrinking list is a bug)
    assert {"Q4_K", "Q6_K", "IQ2_XXS", "IQ1_M", "IQ4_XS", "F16", "BF16"} <= set(REF_TYPES)


@pytest.mark.parametrize("name", REF_TYPES)
def test_random_blocks(name):
    """Several thousand random blocks, 1-D, in one call (past the parallel threshold for
    the block types), then the same bytes with tame scales."""
    block, _ = sizes(name)
    n = max(4096, 300_000 // block)
    assert_same(random_blocks(name, n, "random").reshape(-1), name)
    assert_same(random_blocks(name, n, "tame", tamed=True).reshape(-1), name)


@pytest.mark.parametrize("name", REF_TYPES)
def test_shapes(name):
    """One block, three blocks, 2-D (rows × bytes), and a large 2-D input."""
    block, size = sizes(name)
    b = random_blocks(name, 3, "few", tamed=True)
    assert_same(b[0].copy(), name)
    assert_same(b.reshape(-1), name)
    rows = max(1, 1024 // block)
    two = random_blocks(name, 24 * rows, "2d", tamed=True).reshape(24, rows * size)
    want = assert_same(two, name)
    assert want.shape == (24, rows * block)
    big_rows = max(1, 2048 // block)
    big = random_blocks(name, 160 * big_rows, "2d-big", tamed=True).reshape(160, big_rows * size)
    assert big.size // size * block > 200_000
    assert_same(big, name)
    three = random_blocks(name, 2 * 3 * rows, "3d", tamed=True).reshape(2, 3, rows * size)
    assert_same(three, name)


@pytest.mark.parametrize("name", REF_TYPES)
def test_every_byte_in_every_position(name):
    """For each byte position, 256 blocks that hold every value there (the rest random with
    tame scales): every code, scale, sign and high-bit byte takes every value."""
    _, size = sizes(name)
    rng = np.random.default_rng(seed(name, "sweep"))
    b = tame(rng, rng.integers(0, 256, (size, 256, size), dtype=np.uint8).reshape(-1, size), name)
    b = b.reshape(size, 256, size)
    pos = np.arange(size)
    b[pos, :, pos] = np.arange(256, dtype=np.uint8)
    assert_same(b.reshape(-1), name)


@pytest.mark.parametrize("name", [n for n in REF_TYPES if has_scales(n)])
def test_edge_scales(name):
    """Each edge f16 in each scale field (the rest random, tame or not), and in all fields
    at once; a NaN scale makes every value of its block NaN (checks the field table)."""
    _, size = sizes(name)
    fields = F16_FIELDS.get(name, [None])
    raws = []
    for k, off in enumerate(fields):
        for tamed in (False, True):
            b = random_blocks(name, 64 * len(EDGE_F16), f"edge{k}{tamed}", tamed=tamed)
            v = np.repeat(np.array(EDGE_F16, dtype=np.uint16), 64)
            set_f16(b, name, v, None if off is None else [off])
            raws.append(b)
    b = random_blocks(name, 16 * len(EDGE_F16), "edge-all", tamed=True)
    set_f16(b, name, np.repeat(np.array(EDGE_F16, dtype=np.uint16), 16))
    raws.append(b)
    raw = np.concatenate(raws)
    assert_same(raw.reshape(-1), name)

    nan = random_blocks(name, 8, "nan", tamed=True)
    for off in fields:
        one = nan.copy()
        set_f16(one, name, 0x7E00, None if off is None else [off])
        ref = quants.dequantize(one.reshape(-1), GGMLQuantizationType[name])
        assert np.isnan(ref).all(), f"{name}: the scale field at {off} is not where the test thinks"


@pytest.mark.parametrize("name", [n for n in ("F16", "BF16") if n in REF_TYPES])
def test_every_16_bit_code(name):
    codes = np.arange(1 << 16, dtype=np.uint16).view(np.uint8)
    assert_same(codes, name)
    assert_same(codes.reshape(256, 512), name)


@pytest.mark.parametrize("name", [n for n in ("F32",) if n in REF_TYPES])
def test_f32_special_patterns(name):
    special = np.array(
        [0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
         0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x3F800000],
        dtype=np.uint32,
    )
    assert_same(special.view(np.uint8), name)
