"""`lowprec table --plot t.png` read back by an independent PNG reader (struct + zlib: the
chunk CRCs checked with zlib.crc32, the Adler-32 trailer by zlib.decompress), its cells
against the CSV of the same run and the colour rule of the SVG heat map: grey NaN, white 0,
red shades for positive and blue for negative values, darker the larger |value|."""
import csv
import math
import struct
import subprocess
import zlib

import numpy as np

from conftest import lowprec_bin

NAN, WHITE = (0x99, 0x99, 0x99), (0xFF, 0xFF, 0xFF)


def read_png(path):
    """(width, height, pixels as a height × width × 3 uint8 array), every structural field
    and checksum verified."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    at, chunks = 8, []
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        (crc,) = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
        assert crc == zlib.crc32(kind + body), f"CRC of {kind}"
        chunks.append((kind, body))
        at += 12 + n
    assert at == len(data)
    kinds = [k for k, _ in chunks]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds, kinds
    assert chunks[-1][1] == b""
    w, h, depth, ctype, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, ctype, comp, filt, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert len(raw) == h * (1 + 3 * w)
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert (rows[:, 0] == 0).all(), "filter type 0 on every row"
    return w, h, rows[:, 1:].reshape(h, w, 3)


def expected(value, lo, hi):
    """The SVG's colour rule (table_op.rs `colour`), with the shade before truncation."""
    if math.isnan(value):
        return NAN, None
    if math.isinf(value):
        return ((0x44, 0, 0) if value > 0 else (0, 0, 0x44)), None
    if value == 0:
        return WHITE, None
    t = min(max((math.log2(abs(value)) - lo) / max(hi - lo, 1.0), 0.0), 1.0)
    return ("+" if value > 0 else "-"), 235.0 - 200.0 * t


def test_multiply_fp8_e4m3_png_matches_the_csv(tmp_path):
    r = subprocess.run(
        [lowprec_bin(), "table", "multiply", "--in", "fp8-e4m3", "--out", "fp8-e4m3",
         "-o", "t.csv", "--plot", "t.png"],
        cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote t.csv and t.png" in r.stdout, r.stdout
    assert not list(tmp_path.glob("*.tmp"))
    with open(tmp_path / "t.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 65536
    a = np.array([int(x["a"], 16) for x in rows])
    b = np.array([int(x["b"], 16) for x in rows])
    assert (a == np.repeat(np.arange(256), 256)).all() and (b == np.tile(np.arange(256), 256)).all()
    values = np.array([float(x["value"]) for x in rows])  # "nan", "-0", "448", ...
    nan = np.isnan(values)
    # fp8-e4m3 (E4M3FN) has NaN but no infinities: NaN operands and overflow give NaN
    assert nan.sum() > 0 and not np.isinf(values).any()
    assert ((values == 0) & ~nan).sum() > 0 and (values > 0).sum() > 0 and (values < 0).sum() > 0

    w, h, img = read_png(tmp_path / "t.png")
    k = w // 256
    assert k >= 2 and w == 256 * k and h > 256 * k, (w, h)
    grid = img[:256 * k].reshape(256, k, 256, k, 3)
    # every cell is one k × k square of one colour
    assert (grid == grid[:, :1, :, :1]).all()
    cells = grid[:, 0, :, 0].reshape(65536, 3).astype(int)

    finite = np.isfinite(values) & (values != 0)
    mags = np.log2(np.abs(values[finite]))
    lo, hi = mags.min(), mags.max()
    shade_of = {}
    for i, v in enumerate(values):
        want, shade = expected(v, lo, hi)
        got = tuple(cells[i])
        if shade is None:
            assert got == want, (rows[i], got, want)
            continue
        # red: (255, s, s); blue: (s, s, 255); s = floor(235 − 200 t), ±1 for libm's log2
        if want == "+":
            assert got[0] == 255 and got[1] == got[2] < 255, (rows[i], got)
            s = got[1]
        else:
            assert got[2] == 255 and got[0] == got[1] < 255, (rows[i], got)
            s = got[0]
        assert abs(s - math.floor(shade)) <= 1 and 35 <= s <= 235, (rows[i], got, shade)
        shade_of.setdefault(v, set()).add(s)
    # one colour per value, and darker (smaller shade) the larger |value|
    assert all(len(s) == 1 for s in shade_of.values()), shade_of
    for sign in (1, -1):
        vs = sorted((abs(v), next(iter(s))) for v, s in shade_of.items() if v * sign > 0)
        shades = [s for _, s in vs]
        assert shades == sorted(shades, reverse=True), sign
        assert shades[0] > shades[-1] and shades[0] >= 234 and shades[-1] <= 36
    # the classes of result have different colours: NaN, 0, positive, negative
    classes = {
        "nan": nan, "zero": values == 0, "pos": values > 0, "neg": values < 0}
    colours = {c: {tuple(x) for x in cells[m]} for c, m in classes.items()}
    assert colours["nan"] == {NAN} and colours["zero"] == {WHITE}
    for c1 in classes:
        for c2 in classes:
            if c1 < c2:
                assert not colours[c1] & colours[c2], (c1, c2)
    # a few cells by hand: NaN × 1 (code 0x7f is NaN in E4M3FN), 0 × 1, 1 × 1, −1 × 1
    one, neg_one = 0x38, 0xB8
    assert tuple(cells[0x7F * 256 + one]) == NAN
    assert tuple(cells[0x00 * 256 + one]) == WHITE
    assert cells[one * 256 + one][0] == 255 and cells[one * 256 + one][1] < 255
    assert cells[neg_one * 256 + one][2] == 255 and cells[neg_one * 256 + one][0] < 255

    # the legend strip below the grid holds the NaN grey, white and both hues
    strip = img[256 * k:].reshape(-1, 3)
    legend = {tuple(int(c) for c in x) for x in strip}
    assert NAN in legend and WHITE in legend
    assert any(c[0] == 255 and c[1] < 100 for c in legend)
    assert any(c[2] == 255 and c[0] < 100 for c in legend)


def test_png_cells_have_the_svg_colours(tmp_path):
    """The same table drawn as SVG and as PNG: every cell has the SVG rectangle's fill."""
    import xml.etree.ElementTree as ET

    args = ["table", "mul", "--in", "fp8-e5m2,binary8p3se", "--out", "fp8-e4m3", "-r", "rtz"]
    for plot in ("t.svg", "t.png"):
        r = subprocess.run([lowprec_bin(), *args, "-o", "t.csv", "--plot", plot],
                           cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    w, _, img = read_png(tmp_path / "t.png")
    k = w // 256
    cells = img[:256 * k:k, :256 * k:k].astype(int)
    svg = np.full((256, 256, 3), -1)
    root = ET.parse(tmp_path / "t.svg").getroot()
    rects = [e for e in root.iter() if e.tag.endswith("rect")]
    assert rects
    for e in rects:
        x, y, width = (int(e.get(a)) for a in ("x", "y", "width"))
        fill = e.get("fill")
        assert fill.startswith("#") and len(fill) == 7, fill
        c0, r0 = (x - 10) // k, (y - 40) // k
        svg[r0, c0:c0 + width // k] = [int(fill[i:i + 2], 16) for i in (1, 3, 5)]
    assert (svg >= 0).all(), "the SVG covers every cell"
    assert (cells == svg).all()
    assert len({tuple(c) for c in cells.reshape(-1, 3)}) > 50
