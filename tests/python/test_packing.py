"""Packed codes: `lowprec.pack` / `unpack` against layouts rebuilt here with numpy, round
trips of every code, and `quantize(..., packed=True)` against the bytes of
`lowprec quantize --packed`."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

import lowprec

ROOT = pathlib.Path(__file__).resolve().parents[2]


def reference_pack(codes, bits):
    """The README layouts, written independently: element i at bit offset bits*i of a
    little-endian stream, except 6-bit codes padded to whole 3-byte groups."""
    c = np.asarray(codes, np.uint64)
    n = len(c)
    if bits == 6:
        c = np.concatenate([c, np.zeros((-n) % 4, np.uint64)]).reshape(-1, 4)
        word = c[:, 0] | c[:, 1] << 6 | c[:, 2] << 12 | c[:, 3] << 18
        return np.stack([(word >> s) & 0xFF for s in (0, 8, 16)], axis=1).astype(np.uint8).ravel()
    bitstream = ((c[:, None] >> np.arange(bits, dtype=np.uint64)) & 1).astype(np.uint8).ravel()
    bitstream = np.concatenate([bitstream, np.zeros((-len(bitstream)) % 8, np.uint8)])
    return np.packbits(bitstream.reshape(-1, 8), axis=1, bitorder="little").ravel()


@pytest.mark.parametrize("bits", [2, 4, 6, 8, 1, 3, 5, 7])
def test_every_code_round_trips(bits):
    rng = np.random.default_rng(bits)
    every = np.arange(2**bits, dtype=np.uint8)
    for extra in range(9):  # every tail length: partial bytes and 6-bit groups
        codes = np.concatenate([every, rng.integers(0, 2**bits, extra, dtype=np.uint8)])
        p = lowprec.pack(codes, bits)
        assert p.dtype == np.uint8 and p.ndim == 1
        assert np.array_equal(p, reference_pack(codes, bits)), (bits, extra)
        back = lowprec.unpack(p, bits, len(codes))
        assert back.dtype == np.uint8 and np.array_equal(back, codes)


def test_layouts_by_hand():
    assert list(lowprec.pack([0x1, 0x2, 0x3], 4)) == [0x21, 0x03]  # element 2i low nibble
    assert list(lowprec.pack([1, 2, 3, 0], 2)) == [0b00111001]
    assert list(lowprec.pack([0x3F, 0, 0, 0x3F], 6)) == [0x3F, 0x00, 0xFC]
    assert list(lowprec.pack(np.array([[7, 8]], np.int64), 4)) == [0x87]  # any ints, C order


def test_ml_dtypes_codes_pack_as_their_bits():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    v = np.array([0.5, -6.0, 1.5], np.float32).astype(ml_dtypes.float4_e2m1fn)
    assert np.array_equal(lowprec.pack(v, 4), lowprec.pack(v.view(np.uint8), 4))


def test_bad_packing_arguments():
    with pytest.raises(ValueError, match="does not fit in 4 bits"):
        lowprec.pack([16], 4)
    with pytest.raises(ValueError, match="1 to 8 bits"):
        lowprec.pack([1], 9)
    with pytest.raises(ValueError, match="not a byte"):
        lowprec.pack([300], 8)
    with pytest.raises(ValueError, match="not a byte"):
        lowprec.pack([-1], 8)
    with pytest.raises(ValueError, match="cannot hold"):
        lowprec.unpack(np.zeros(2, np.uint8), 6, 4)
    with pytest.raises(TypeError, match="integers"):
        lowprec.pack([0.5], 4)


def cli():
    exe = os.environ.get("LOWPREC_BIN", str(ROOT / "target" / "release" / "lowprec"))
    if not os.path.exists(exe):
        pytest.skip(f"the lowprec CLI is not built at {exe} (cargo build --release)")
    return exe


SCHEMES = [  # scheme, shape: rows that the packing pads (37 4-bit codes: 19 bytes a row)
    ("mxfp4", (6, 64)), ("mx:fp6-e2m3", (5, 96)), ("mx:fp6-e3m2:block=8", (3, 40)),
    ("mxfp8", (4, 64)), ("nvfp4", (4, 48)), ("int4:group=37", (5, 37)),
    ("int2:channel", (3, 21)), ("int8", (7, 9)), ("fp4-e2m1", (6, 10)), ("bf16", (3, 5)),
    ("fp16", (2, 7)),
]


@pytest.mark.parametrize("scheme,shape", SCHEMES)
def test_quantize_packed_is_what_the_cli_writes(tmp_path, scheme, shape):
    exe = cli()
    rng = np.random.default_rng(len(scheme) * 13 + shape[1])
    x = (rng.standard_normal(shape) * 0.3).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([exe, "quantize", str(tmp_path / "x.npy"), "-s", scheme, "-o",
                    str(tmp_path / "y.npy"), "--packed", str(tmp_path / "p.bin"), "--codes",
                    str(tmp_path / "c.npy")], check=True, capture_output=True)
    subprocess.run([exe, "quantize", str(tmp_path / "x.npy"), "-s", scheme, "-o",
                    str(tmp_path / "y2.npy"), "--packed", str(tmp_path / "p.npy")],
                   check=True, capture_output=True)
    q = lowprec.quantize(x, scheme, packed=True)
    cli_bytes = np.fromfile(tmp_path / "p.bin", np.uint8)
    assert q["packed"].dtype == np.uint8 and q["packed"].ndim == 1
    assert np.array_equal(q["packed"], cli_bytes)
    per = q["packed_row_bytes"]
    assert np.array_equal(q["packed"].reshape(shape[0], per), np.load(tmp_path / "p.npy"))
    assert np.array_equal(q["codes"], np.load(tmp_path / "c.npy"))
    bits = q["code_bits"]
    if bits <= 8:  # each row packed on its own, and unpacked back
        rows = q["packed"].reshape(shape[0], per)
        for r in range(shape[0]):
            assert np.array_equal(rows[r], lowprec.pack(q["codes"][r], bits))
            assert np.array_equal(lowprec.unpack(rows[r], bits, shape[1]), q["codes"][r])
    else:  # 16-bit codes: little-endian words
        assert np.array_equal(q["packed"].view("<u2"), q["codes"].ravel())
    assert "packed" not in lowprec.quantize(x, scheme)


def test_packing_wider_codes_is_refused():
    with pytest.raises(ValueError, match="1 to 16 bits"):
        lowprec.quantize(np.ones((2, 4), np.float32), "fp32", packed=True)
