//! The IQ types: codebook (lattice) quantization, decoded bit for bit as `gguf.quants` (and
//! `ggml-quants.c`) do.
//!
//! Most IQ types pick, per group of 8 (or 4) elements, a row of a fixed codebook
//! ([`super::grids`]) and a sign pattern, scaled by a per-sub-block factor computed once in
//! binary32 in the reference's order. A minus sign is applied by flipping the sign bit,
//! which equals the reference's multiplication by −1 for every value that is not a NaN.

use super::grids::{
    IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS,
    KVALUES_IQ4NL,
};
use super::{f16_to_f32, QK_K};

/// The f16 at bytes `i`, `i + 1` (little-endian), as f32.
#[inline]
fn f16_at(b: &[u8], i: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[i], b[i + 1]]))
}

/// The little-endian u16 at bytes `i`, `i + 1`.
#[inline]
fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// The little-endian u32 at bytes `i` … `i + 3`.
#[inline]
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Split `src` and `out` into whole blocks of `N` bytes and `M` values.
#[inline]
fn blocks<'a, 'b, const N: usize, const M: usize>(
    src: &'a [u8],
    out: &'b mut [f32],
) -> impl Iterator<Item = (&'a [u8; N], &'b mut [f32; M])> {
    let (src, rest) = src.as_chunks::<N>();
    let (out, orest) = out.as_chunks_mut::<M>();
    debug_assert!(rest.is_empty() && orest.is_empty() && src.len() == out.len());
    src.iter().zip(out.iter_mut())
}

/// For each sign byte, the 8 sign-bit masks it stands for (bit `j` set: lane `j` negative).
static SIGN_MASKS: [[u32; 8]; 256] = sign_masks();

/// [`SIGN_MASKS`], computed at compile time.
const fn sign_masks() -> [[u32; 8]; 256] {
    let mut m = [[0u32; 8]; 256];
    let mut s = 0;
    while s < 256 {
        let mut j = 0;
        while j < 8 {
            m[s][j] = (((s >> j) & 1) as u32) << 31;
            j += 1;
        }
        s += 1;
    }
    m
}

/// `db · row[j]`, negated where bit `j` of `signs` is set, for the 8 bytes of a grid row.
#[inline]
fn signed_row8(y: &mut [f32], db: f32, row: u64, signs: u8) {
    let g = row.to_le_bytes();
    let m = &SIGN_MASKS[signs as usize];
    for ((y, &g), &m) in y[..8].iter_mut().zip(&g).zip(m) {
        *y = f32::from_bits((db * g as f32).to_bits() ^ m);
    }
}

/// `(0.5 + s) · 0.25` (IQ2) or `· 0.5` (IQ3) applied to `d` in the reference's order.
#[inline]
fn half_odd_scale(d: f32, s: u32, k: f32) -> f32 {
    d * (0.5 + s as f32) * k
}

/// IQ2_XXS: 8 groups of 32, each two u32: four grid indices (bytes) into [`IQ2XXS_GRID`],
/// and four 7-bit sign indices into [`KSIGNS_IQ2XS`] with a 4-bit scale on top;
/// `x = (d · (0.5 + s) · 0.25) · grid · sign`.
pub(super) fn dequantize_iq2_xxs(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 2 + QK_K / 4 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        for (g, y) in b[2..].chunks_exact(8).zip(y.chunks_exact_mut(32)) {
            let aux1 = u32_at(g, 4);
            let db = half_odd_scale(d, aux1 >> 28, 0.25);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux1 >> (7 * l)) & 0x7f) as usize];
                signed_row8(y, db, IQ2XXS_GRID[g[l] as usize], signs);
            }
        }
    }
}

/// The `k`-th 4-bit scale of a run of bytes holding two per byte, low nibble first.
#[inline]
fn nibble(bytes: &[u8], k: usize) -> u32 {
    ((bytes[k / 2] >> (4 * (k % 2))) & 0xf) as u32
}

/// IQ2_XS: 32 u16 codes (9-bit index into [`IQ2XS_GRID`], 7-bit sign index) and 16 4-bit
/// scales, one per 16 elements; `x = (d · (0.5 + s) · 0.25) · grid · sign`.
pub(super) fn dequantize_iq2_xs(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 2 + QK_K / 4 + QK_K / 32 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        let (qs, scales) = b[2..].split_at(QK_K / 4);
        for (k, (q, y)) in qs.chunks_exact(4).zip(y.chunks_exact_mut(16)).enumerate() {
            let db = half_odd_scale(d, nibble(scales, k), 0.25);
            for (r, y) in y.chunks_exact_mut(8).enumerate() {
                let code = u16_at(q, 2 * r);
                let signs = KSIGNS_IQ2XS[(code >> 9) as usize];
                signed_row8(y, db, IQ2XS_GRID[(code & 511) as usize], signs);
            }
        }
    }
}

/// IQ2_S: 32 10-bit indices into [`IQ2S_GRID`] (a byte and a bit pair of `qh`), one explicit
/// sign byte per 8 elements, 16 4-bit scales; `x = (d · (0.5 + s) · 0.25) · grid · sign`.
pub(super) fn dequantize_iq2_s(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 2 + QK_K / 4 + QK_K / 16 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        let qs = &b[2..34];
        let signs = &b[34..66];
        let qh = &b[66..74];
        let scales = &b[74..82];
        for (k, y) in y.chunks_exact_mut(16).enumerate() {
            let db = half_odd_scale(d, nibble(scales, k), 0.25);
            for (r, y) in y.chunks_exact_mut(8).enumerate() {
                let i = 2 * k + r;
                let high = ((qh[i / 4] >> (2 * (i % 4))) & 3) as usize;
                signed_row8(y, db, IQ2S_GRID[qs[i] as usize | high << 8], signs[i]);
            }
        }
    }
}

/// Two 4-value grid rows side by side as one 8-byte row.
#[inline]
fn row_pair(a: u32, b: u32) -> u64 {
    a as u64 | (b as u64) << 32
}

/// IQ3_XXS: 64 byte indices into [`IQ3XXS_GRID`] (4 values each), then per group of 32 a
/// u32 of four 7-bit sign indices and a 4-bit scale; `x = (d · (0.5 + s) · 0.5) · grid · sign`.
pub(super) fn dequantize_iq3_xxs(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 2 + QK_K / 4 + QK_K / 8 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        let (qs, aux) = b[2..].split_at(QK_K / 4);
        for ((q, a), y) in qs
            .chunks_exact(8)
            .zip(aux.chunks_exact(4))
            .zip(y.chunks_exact_mut(32))
        {
            let aux = u32_at(a, 0);
            let db = half_odd_scale(d, aux >> 28, 0.5);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 0x7f) as usize];
                let row = row_pair(
                    IQ3XXS_GRID[q[2 * l] as usize],
                    IQ3XXS_GRID[q[2 * l + 1] as usize],
                );
                signed_row8(y, db, row, signs);
            }
        }
    }
}

/// IQ3_S: 64 9-bit indices into [`IQ3S_GRID`] (a byte and a bit of `qh`), explicit sign
/// bits, 8 4-bit scales, one per 32 elements; `x = (d · (1 + 2s)) · grid · sign`.
pub(super) fn dequantize_iq3_s(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        let qs = &b[2..66];
        let qh = &b[66..74];
        let signs = &b[74..106];
        let scales = &b[106..110];
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let db = d * (1 + 2 * nibble(scales, ib)) as f32;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let k = 8 * ib + 2 * l;
                let idx = |k: usize| qs[k] as usize | (((qh[ib] >> (k % 8)) & 1) as usize) << 8;
                let row = row_pair(IQ3S_GRID[idx(k)], IQ3S_GRID[idx(k + 1)]);
                signed_row8(y, db, row, signs[4 * ib + l]);
            }
        }
    }
}

/// `dl · (row[j] + delta)` for the 8 signed bytes of an IQ1 grid row.
#[inline]
fn iq1_row(y: &mut [f32], dl: f32, row: u64, delta: f32) {
    for (y, &g) in y[..8].iter_mut().zip(&row.to_le_bytes()) {
        *y = dl * ((g as i8) as f32 + delta);
    }
}

/// The shift of the IQ1 types: +1/8, or −1/8 when `negative`.
#[inline]
fn iq1_delta(negative: bool) -> f32 {
    if negative {
        -0.125
    } else {
        0.125
    }
}

/// IQ1_S: 32 11-bit indices into [`IQ1S_GRID`] (values −1, 0, 1): a byte, and 3 bits of the
/// group's u16, which also holds a 3-bit scale and the sign of the shift ±1/8;
/// `x = (d · (2s + 1)) · (grid + delta)`.
pub(super) fn dequantize_iq1_s(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 2 + QK_K / 8 + QK_K / 16 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        let (qs, qh) = b[2..].split_at(QK_K / 8);
        for ((q, h), y) in qs
            .chunks_exact(4)
            .zip(qh.chunks_exact(2))
            .zip(y.chunks_exact_mut(32))
        {
            let h = u16_at(h, 0);
            let dl = d * (2 * ((h >> 12) & 7) + 1) as f32;
            let delta = iq1_delta(h & 0x8000 != 0);
            for (k, y) in y.chunks_exact_mut(8).enumerate() {
                let idx = q[k] as usize | (((h >> (3 * k)) & 7) as usize) << 8;
                iq1_row(y, dl, IQ1S_GRID[idx], delta);
            }
        }
    }
}

/// IQ1_M: the IQ1_S codebook with a nibble per 8 elements (3 index bits, the shift's sign),
/// 16 3-bit scales, one per 16 elements, and the f16 `d` spread over the top nibbles of
/// the four scale u16s; `x = (d · (2s + 1)) · (grid + delta)`.
pub(super) fn dequantize_iq1_m(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ QK_K / 8 + QK_K / 16 + QK_K / 32 }, QK_K>(src, out) {
        let qs = &b[..32];
        let qh = &b[32..48];
        let sc: [u16; 4] = std::array::from_fn(|i| u16_at(b, 48 + 2 * i));
        let d = f16_to_f32(
            (sc[0] >> 12) | (sc[1] >> 12) << 4 | (sc[2] >> 12) << 8 | (sc[3] >> 12) << 12,
        );
        for (t, y) in y.chunks_exact_mut(16).enumerate() {
            let s = (sc[t / 4] >> (3 * (t % 4))) & 7;
            let dl = d * (2 * s + 1) as f32;
            let h = qh[t];
            for (r, y) in y.chunks_exact_mut(8).enumerate() {
                let n = (h >> (4 * r)) & 0xf;
                let idx = qs[2 * t + r] as usize | ((n & 7) as usize) << 8;
                iq1_row(y, dl, IQ1S_GRID[idx], iq1_delta(n & 8 != 0));
            }
        }
    }
}

/// The 16 products `dl · kvalues[i]`, each rounded as the reference rounds `dl · q`.
#[inline]
fn iq4_table(dl: f32) -> [f32; 16] {
    KVALUES_IQ4NL.map(|k| dl * k as f32)
}

/// 32 elements from 16 code bytes through a 16-entry table: low nibbles first, then high.
#[inline]
fn iq4_run(y: &mut [f32; 32], qs: &[u8; 16], table: &[f32; 16]) {
    let (lo, hi) = y.split_at_mut(16);
    for ((lo, hi), &q) in lo.iter_mut().zip(hi).zip(qs) {
        *lo = table[(q & 0xf) as usize];
        *hi = table[(q >> 4) as usize];
    }
}

/// IQ4_NL: blocks of 32, an f16 `d` and 4-bit indices into [`KVALUES_IQ4NL`], `x = d · k[q]`
/// (low nibbles are elements 0–15, high nibbles 16–31).
pub(super) fn dequantize_iq4_nl(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<18, 32>(src, out) {
        let table = iq4_table(f16_at(b, 0));
        iq4_run(y, b[2..].try_into().unwrap(), &table);
    }
}

/// IQ4_XS: IQ4_NL's levels in 8 sub-blocks of 32 with signed 6-bit scales (low nibbles in
/// 4 bytes, high bit pairs in a u16); `x = (d · (sc − 32)) · k[q]`.
pub(super) fn dequantize_iq4_xs(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<{ 4 + QK_K / 2 + QK_K / 64 }, QK_K>(src, out) {
        let d = f16_at(b, 0);
        let scales_h = u16_at(b, 2);
        let scales_l = &b[4..8];
        let qs = b[8..].as_chunks::<16>().0;
        for (ib, (y, q)) in y.as_chunks_mut::<32>().0.iter_mut().zip(qs).enumerate() {
            let low = nibble(scales_l, ib) as i32;
            let high = ((scales_h >> (2 * ib)) & 3) as i32;
            let dl = d * ((low | high << 4) - 32) as f32;
            iq4_run(y, q, &iq4_table(dl));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: [u8; 2] = 0x3c00u16.to_le_bytes();

    fn run(f: fn(&[u8], &mut [f32]), b: &[u8], n: usize) -> Vec<f32> {
        let mut y = vec![f32::NAN; n];
        f(b, &mut y);
        y
    }

    #[test]
    fn block_sizes_match_the_type_table() {
        use super::super::GgmlType as T;
        let sizes = [
            (T::IQ2_XXS, 66),
            (T::IQ2_XS, 74),
            (T::IQ2_S, 82),
            (T::IQ3_XXS, 98),
            (T::IQ3_S, 110),
            (T::IQ1_S, 50),
            (T::IQ1_M, 56),
            (T::IQ4_NL, 18),
            (T::IQ4_XS, 136),
        ];
        for (t, n) in sizes {
            assert_eq!(t.type_size(), n, "{t}");
        }
    }

    #[test]
    fn iq2_xxs_zero_codes_give_the_first_row() {
        // d = 1, all indices 0 (row 0 = eight 8s), sign index 0 (no minus), scale 0:
        // 1 · 0.5 · 0.25 · 8 = 1
        let mut b = [0u8; 66];
        b[..2].copy_from_slice(&ONE);
        assert!(run(dequantize_iq2_xxs, &b, QK_K).iter().all(|&v| v == 1.0));
        // sign index 1 in the first group of 8 (pattern 0x81: elements 0 and 7 negative)
        // and scale 3 in the first group of 32: (0.5 + 3) · 0.25 · 8 = 7
        b[2 + 4..2 + 8].copy_from_slice(&(1u32 | 3 << 28).to_le_bytes());
        let y = run(dequantize_iq2_xxs, &b, QK_K);
        assert_eq!(&y[..8], &[-7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, -7.0]);
        assert!(y[8..32].iter().all(|&v| v == 7.0));
        assert!(y[32..].iter().all(|&v| v == 1.0));
    }

    #[test]
    fn iq2_xs_and_iq2_s_index_and_sign_layout() {
        let mut b = [0u8; 74];
        b[..2].copy_from_slice(&ONE);
        // code 1 with sign index 2 (pattern 0x82: elements 1 and 7 negative) for the first 8
        b[2..4].copy_from_slice(&(1u16 | 2 << 9).to_le_bytes());
        let y = run(dequantize_iq2_xs, &b, QK_K);
        let row: Vec<f32> = (0..8)
            .map(|j| ((IQ2XS_GRID[1] >> (8 * j)) & 0xff) as f32 / 8.0)
            .collect();
        let want: Vec<f32> = row
            .iter()
            .enumerate()
            .map(|(j, &v)| if j == 1 || j == 7 { -v } else { v })
            .collect();
        assert_eq!(&y[..8], &want[..]);
        assert!(y[8..].iter().all(|&v| v == 1.0));

        let mut s = [0u8; 82];
        s[..2].copy_from_slice(&ONE);
        s[2 + 5] = 0x23; // row 5: index 0x123 (high pair 1 from qh[1] bits 2–3)
        s[66 + 1] = 0b0000_0100;
        s[34 + 5] = 0xff; // all eight negative
        s[74 + 1] = 0x01; // scale 2 (byte 1, low nibble) = 1: (0.5 + 1) · 0.25 for 32..48
        let y = run(dequantize_iq2_s, &s, QK_K);
        for j in 0..8 {
            let g = ((IQ2S_GRID[0x123] >> (8 * j)) & 0xff) as f32;
            assert_eq!(y[40 + j], -(g * 0.375));
        }
        assert!(y[32..40].iter().all(|&v| v == 3.0));
        assert!(y[..32].iter().chain(&y[48..]).all(|&v| v == 1.0));
    }

    #[test]
    fn iq3_types_zero_codes() {
        // IQ3_XXS: row 0 is four 4s; 1 · 0.5 · 0.5 · 4 = 1
        let mut b = [0u8; 98];
        b[..2].copy_from_slice(&ONE);
        assert!(run(dequantize_iq3_xxs, &b, QK_K).iter().all(|&v| v == 1.0));
        // IQ3_S: row 0 is four 1s; scale 0 gives d · 1
        let mut s = [0u8; 110];
        s[..2].copy_from_slice(&ONE);
        s[74] = 0x01; // element 0 negative
        s[106] = 0x20; // second group of 32: scale 2 → d · 5
        s[66 + 1] = 0x01; // index 256 for the first row of the second group
        let y = run(dequantize_iq3_s, &s, QK_K);
        assert_eq!(y[0], -1.0);
        assert!(y[1..32].iter().all(|&v| v == 1.0));
        for j in 0..4 {
            assert_eq!(y[32 + j], 5.0 * ((IQ3S_GRID[256] >> (8 * j)) & 0xff) as f32);
        }
        assert!(y[36..64].iter().all(|&v| v == 5.0));
    }

    #[test]
    fn iq1_types_shift_and_scale() {
        let row0: Vec<f32> = (0..8)
            .map(|j| ((IQ1S_GRID[0] >> (8 * j)) as u8 as i8) as f32)
            .collect();
        let mut b = [0u8; 50];
        b[..2].copy_from_slice(&ONE);
        let y = run(dequantize_iq1_s, &b, QK_K);
        for (i, &v) in y.iter().enumerate() {
            assert_eq!(v, row0[i % 8] + 0.125);
        }
        // group 0: scale 2 (×5), negative shift
        b[34..36].copy_from_slice(&(0x8000u16 | 2 << 12).to_le_bytes());
        let y = run(dequantize_iq1_s, &b, QK_K);
        assert_eq!(y[0], 5.0 * (row0[0] - 0.125));

        // IQ1_M: d = 1 spread over the top nibbles (0x3c00: nibbles 0, 0, c, 3)
        let mut m = [0u8; 56];
        for (i, nib) in [0u16, 0, 0xc, 0x3].into_iter().enumerate() {
            m[48 + 2 * i..50 + 2 * i].copy_from_slice(&(nib << 12).to_le_bytes());
        }
        m[32] = 0x80; // second row of 8: negative shift
        let y = run(dequantize_iq1_m, &m, QK_K);
        for (i, &v) in y.iter().enumerate() {
            let delta = if (8..16).contains(&i) { -0.125 } else { 0.125 };
            assert_eq!(v, row0[i % 8] + delta, "element {i}");
        }
    }

    #[test]
    fn iq4_types_take_the_table() {
        let mut b = [0u8; 18];
        b[..2].copy_from_slice(&ONE);
        for (i, q) in b[2..].iter_mut().enumerate() {
            *q = (i as u8) | ((15 - i as u8) << 4);
        }
        let y = run(dequantize_iq4_nl, &b, 32);
        for i in 0..16 {
            assert_eq!(y[i], KVALUES_IQ4NL[i] as f32);
            assert_eq!(y[16 + i], KVALUES_IQ4NL[15 - i] as f32);
        }
        // IQ4_XS: sub-block 1 scale code 33 (= 1): low nibble 1 (byte 0 high), high pair 2
        let mut x = [0u8; 136];
        x[..2].copy_from_slice(&ONE);
        x[2..4].copy_from_slice(&(2u16 << 2).to_le_bytes());
        x[4] = 0x10;
        let y = run(dequantize_iq4_xs, &x, QK_K);
        assert!(y[..32].iter().all(|&v| v == -32.0 * -127.0));
        assert!(y[32..64].iter().all(|&v| v == -127.0));
    }
}
