//! The K-quants (Q2_K … Q6_K): super-blocks of [`QK_K`] = 256 elements with packed
//! sub-block scales, decoded bit for bit as `gguf.quants` (and `ggml-quants.c`) do.
//!
//! Every type decodes its sub-block scales once, in binary32 exactly as the reference:
//! `d · scale` (and `dmin · min`) rounded once, then per element `dl · q` (`− ml`), each
//! operation rounded. The per-element loops run over 16 or 32 codes of fixed-size arrays.

use super::{f16_to_f32, QK_K};

/// The f16 at bytes `i`, `i + 1` (little-endian), as f32.
#[inline]
fn f16_at(b: &[u8], i: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[i], b[i + 1]]))
}

/// Bytes of a Q2_K block: 16 scale/min bytes, 64 code bytes, `d`, `dmin`.
const Q2_K_SIZE: usize = QK_K / 16 + QK_K / 4 + 4;
/// Bytes of a Q3_K block: 32 high-bit bytes, 64 code bytes, 12 scale bytes, `d`.
const Q3_K_SIZE: usize = QK_K / 8 + QK_K / 4 + 12 + 2;
/// Bytes of a Q4_K block: `d`, `dmin`, 12 scale bytes, 128 code bytes.
const Q4_K_SIZE: usize = 4 + 12 + QK_K / 2;
/// Bytes of a Q5_K block: `d`, `dmin`, 12 scale bytes, 32 high-bit bytes, 128 code bytes.
const Q5_K_SIZE: usize = 4 + 12 + QK_K / 8 + QK_K / 2;
/// Bytes of a Q6_K block: 128 low-nibble bytes, 64 high-bit bytes, 16 int8 scales, `d`.
const Q6_K_SIZE: usize = QK_K / 2 + QK_K / 4 + QK_K / 16 + 2;

/// Split `src` and `out` into whole blocks of `N` bytes and [`QK_K`] values.
#[inline]
fn blocks<'a, 'b, const N: usize>(
    src: &'a [u8],
    out: &'b mut [f32],
) -> impl Iterator<Item = (&'a [u8; N], &'b mut [f32; QK_K])> {
    let (src, rest) = src.as_chunks::<N>();
    let (out, orest) = out.as_chunks_mut::<QK_K>();
    debug_assert!(rest.is_empty() && orest.is_empty() && src.len() == out.len());
    src.iter().zip(out.iter_mut())
}

/// Q2_K: 16 sub-blocks of 16, each with a 4-bit scale (low nibble) and a 4-bit minimum
/// (high nibble) of the 16 scale bytes; `x = (d · sc) · q − dmin · m` for 2-bit codes `q`.
///
/// The 64 code bytes are two halves of 32; in each half, bit pair `s` of byte `l` is
/// element `32 s + l` of the half's 128.
pub(super) fn dequantize_q2_k(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<Q2_K_SIZE>(src, out) {
        let (scales, rest) = b.split_at(QK_K / 16);
        let (qs, dd) = rest.split_at(QK_K / 4);
        let d = f16_at(dd, 0);
        let dmin = f16_at(dd, 2);
        for (h, (qs, y)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(128)).enumerate() {
            for (s, y) in y.chunks_exact_mut(32).enumerate() {
                let shift = 2 * s;
                for (half, (q, y)) in qs.chunks_exact(16).zip(y.chunks_exact_mut(16)).enumerate() {
                    let sc = scales[h * 8 + s * 2 + half];
                    let dl = d * (sc & 0xf) as f32;
                    let ml = dmin * (sc >> 4) as f32;
                    for (y, &q) in y.iter_mut().zip(q) {
                        *y = dl * ((q >> shift) & 3) as f32 - ml;
                    }
                }
            }
        }
    }
}

/// Q3_K's 16 six-bit scales, minus 32: low nibbles in bytes 0–7 (first the low, then the
/// high nibbles), high bit pairs in bytes 8–11 (pair `i / 4` of byte `8 + i % 4`).
#[inline]
fn q3_k_scales(sc: &[u8]) -> [i32; 16] {
    std::array::from_fn(|i| {
        let low = if i < 8 { sc[i] & 0xf } else { sc[i - 8] >> 4 };
        let high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
        (low | (high << 4)) as i32 - 32
    })
}

/// Q3_K: 16 sub-blocks of 16 with signed 6-bit scales; 3-bit codes as 2 low bits (laid out as
/// Q2_K's) and a high bit, set meaning "no offset": `x = (d · sc) · (ql − 4 · (1 − hbit))`.
/// Bit `b` of high-bit byte `l` belongs to element `32 b + l`.
pub(super) fn dequantize_q3_k(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<Q3_K_SIZE>(src, out) {
        let (hmask, rest) = b.split_at(QK_K / 8);
        let (qs, rest) = rest.split_at(QK_K / 4);
        let (sc, dd) = rest.split_at(12);
        let d = f16_at(dd, 0);
        let scales = q3_k_scales(sc);
        for (h, (qs, y)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(128)).enumerate() {
            for (s, y) in y.chunks_exact_mut(32).enumerate() {
                let shift = 2 * s;
                let hbit = h * 4 + s;
                for (half, y) in y.chunks_exact_mut(16).enumerate() {
                    let dl = d * scales[h * 8 + s * 2 + half] as f32;
                    let q = &qs[half * 16..half * 16 + 16];
                    let m = &hmask[half * 16..half * 16 + 16];
                    for ((y, &q), &m) in y.iter_mut().zip(q).zip(m) {
                        let low = ((q >> shift) & 3) as i32;
                        let offset = (((m >> hbit) & 1) ^ 1) as i32 * 4;
                        *y = dl * (low - offset) as f32;
                    }
                }
            }
        }
    }
}

/// The 8 six-bit scales and minima of Q4_K and Q5_K from their 12 bytes (`get_scale_min_k4`):
/// sub-blocks 0–3 in the low 6 bits of bytes 0–3 (scales) and 4–7 (minima); sub-blocks 4–7
/// from the nibbles of bytes 8–11 and the top bit pairs of bytes 0–7.
#[inline]
fn k4_scales_mins(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let sc = std::array::from_fn(|j| {
        if j < 4 {
            s[j] & 0x3f
        } else {
            (s[j + 4] & 0xf) | ((s[j - 4] >> 2) & 0x30)
        }
    });
    let m = std::array::from_fn(|j| {
        if j < 4 {
            s[j + 4] & 0x3f
        } else {
            (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30)
        }
    });
    (sc, m)
}

/// Q4_K: 8 sub-blocks of 32 with 6-bit scales and minima, `x = (d · sc) · q − dmin · m`;
/// code byte `l` of each 32-byte chunk `c` holds element `l` of sub-block `2c` (low nibble)
/// and of sub-block `2c + 1` (high nibble).
pub(super) fn dequantize_q4_k(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<Q4_K_SIZE>(src, out) {
        let d = f16_at(b, 0);
        let dmin = f16_at(b, 2);
        let (sc, m) = k4_scales_mins(&b[4..16]);
        let qs = &b[16..];
        for (j, y) in y.as_chunks_mut::<32>().0.iter_mut().enumerate() {
            let dl = d * sc[j] as f32;
            let ml = dmin * m[j] as f32;
            let shift = 4 * (j & 1);
            let q: &[u8; 32] = qs[(j / 2) * 32..(j / 2) * 32 + 32].try_into().unwrap();
            for (y, &q) in y.iter_mut().zip(q) {
                *y = dl * ((q >> shift) & 0xf) as f32 - ml;
            }
        }
    }
}

/// Q5_K: Q4_K with a fifth code bit, bit `j` of high-bit byte `l` for element `l` of
/// sub-block `j`: `x = (d · sc) · (q | hbit << 4) − dmin · m`.
pub(super) fn dequantize_q5_k(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<Q5_K_SIZE>(src, out) {
        let d = f16_at(b, 0);
        let dmin = f16_at(b, 2);
        let (sc, m) = k4_scales_mins(&b[4..16]);
        let qh: &[u8; 32] = b[16..48].try_into().unwrap();
        let qs = &b[48..];
        for (j, y) in y.as_chunks_mut::<32>().0.iter_mut().enumerate() {
            let dl = d * sc[j] as f32;
            let ml = dmin * m[j] as f32;
            let shift = 4 * (j & 1);
            let q: &[u8; 32] = qs[(j / 2) * 32..(j / 2) * 32 + 32].try_into().unwrap();
            for ((y, &q), &h) in y.iter_mut().zip(q).zip(qh) {
                let code = ((q >> shift) & 0xf) | (((h >> j) & 1) << 4);
                *y = dl * code as f32 - ml;
            }
        }
    }
}

/// Q6_K: 16 sub-blocks of 16 with int8 scales, 6-bit codes minus 32, `x = (d · sc) · (q − 32)`.
///
/// Each half of 128 elements takes 64 low-nibble bytes (element `r` from byte `r % 64`,
/// nibble `r / 64`) and 32 high-bit bytes (element `r` from byte `r % 32`, bit pair `r / 32`).
pub(super) fn dequantize_q6_k(src: &[u8], out: &mut [f32]) {
    for (b, y) in blocks::<Q6_K_SIZE>(src, out) {
        let (ql, rest) = b.split_at(QK_K / 2);
        let (qh, rest) = rest.split_at(QK_K / 4);
        let (scales, dd) = rest.split_at(QK_K / 16);
        let d = f16_at(dd, 0);
        for (h, y) in y.chunks_exact_mut(128).enumerate() {
            let ql = &ql[h * 64..h * 64 + 64];
            let qh = &qh[h * 32..h * 32 + 32];
            for (s, y) in y.chunks_exact_mut(32).enumerate() {
                let lo = &ql[(s & 1) * 32..(s & 1) * 32 + 32];
                let lshift = 4 * (s / 2);
                let hshift = 2 * s;
                for (half, y) in y.chunks_exact_mut(16).enumerate() {
                    let dl = d * (scales[h * 8 + s * 2 + half] as i8) as f32;
                    let lo = &lo[half * 16..half * 16 + 16];
                    let hi = &qh[half * 16..half * 16 + 16];
                    for ((y, &l), &hb) in y.iter_mut().zip(lo).zip(hi) {
                        let code = ((l >> lshift) & 0xf) | (((hb >> hshift) & 3) << 4);
                        *y = dl * (code as i32 - 32) as f32;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: [u8; 2] = 0x3c00u16.to_le_bytes();
    const TWO: [u8; 2] = 0x4000u16.to_le_bytes();

    fn run(f: fn(&[u8], &mut [f32]), b: &[u8]) -> Vec<f32> {
        let mut y = vec![f32::NAN; QK_K];
        f(b, &mut y);
        y
    }

    #[test]
    fn block_sizes_match_the_type_table() {
        use super::super::GgmlType as T;
        assert_eq!(T::Q2_K.type_size(), Q2_K_SIZE);
        assert_eq!(T::Q3_K.type_size(), Q3_K_SIZE);
        assert_eq!(T::Q4_K.type_size(), Q4_K_SIZE);
        assert_eq!(T::Q5_K.type_size(), Q5_K_SIZE);
        assert_eq!(T::Q6_K.type_size(), Q6_K_SIZE);
    }

    #[test]
    fn q2_k_codes_in_place() {
        // scales: sub-block j gets scale j % 16 and minimum 1; d = 1, dmin = 2
        let mut b = [0u8; Q2_K_SIZE];
        for (j, sc) in b[..16].iter_mut().enumerate() {
            *sc = 0x10 | j as u8;
        }
        // code byte l of each half: pairs 0..3 hold 0, 1, 2, 3
        for l in 0..64 {
            b[16 + l] = 0b11_10_01_00;
        }
        b[80..82].copy_from_slice(&ONE);
        b[82..84].copy_from_slice(&TWO);
        let y = run(dequantize_q2_k, &b);
        for (i, &v) in y.iter().enumerate() {
            let q = ((i % 128) / 32) as f32; // the bit pair
            assert_eq!(v, (i / 16) as f32 * q - 2.0, "element {i}");
        }
    }

    #[test]
    fn q3_k_scales_and_offset() {
        let mut b = [0u8; Q3_K_SIZE];
        // every scale 6-bit code 33 (= 1 after −32): low nibble 1, high pair 2
        for byte in &mut b[96..104] {
            *byte = 0x11;
        }
        for byte in &mut b[104..108] {
            *byte = 0b10_10_10_10;
        }
        b[108..110].copy_from_slice(&TWO);
        // low bits 3 everywhere; high bit set only on element 0 (bit 0 of hmask byte 0)
        for byte in &mut b[32..96] {
            *byte = 0xff;
        }
        b[0] = 1;
        let y = run(dequantize_q3_k, &b);
        assert_eq!(y[0], 6.0);
        assert!(y[1..].iter().all(|&v| v == -2.0));
    }

    #[test]
    fn q4_k_and_q5_k_scales_and_minima() {
        // scales 1..8 and minima 0..7 through the packed 12 bytes
        let sc: [u8; 8] = [1, 2, 3, 4, 63, 40, 7, 8];
        let mn: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 63];
        let mut s = [0u8; 12];
        for j in 0..4 {
            s[j] = sc[j] | ((sc[j + 4] >> 4) << 6);
            s[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6);
            s[j + 8] = (sc[j + 4] & 0xf) | ((mn[j + 4] & 0xf) << 4);
        }
        assert_eq!(k4_scales_mins(&s), (sc, mn));

        let mut b4 = [0u8; Q4_K_SIZE];
        b4[0..2].copy_from_slice(&ONE);
        b4[2..4].copy_from_slice(&ONE);
        b4[4..16].copy_from_slice(&s);
        for (l, byte) in b4[16..].iter_mut().enumerate() {
            *byte = 0x50 | (l % 16) as u8; // low nibble l % 16, high nibble 5
        }
        let y = run(dequantize_q4_k, &b4);
        for (i, &v) in y.iter().enumerate() {
            let j = i / 32;
            let q = if j % 2 == 0 { (i % 16) as f32 } else { 5.0 };
            assert_eq!(v, sc[j] as f32 * q - mn[j] as f32, "element {i}");
        }

        let mut b5 = [0u8; Q5_K_SIZE];
        b5[0..16].copy_from_slice(&b4[0..16]);
        b5[48..].copy_from_slice(&b4[16..]);
        b5[16..48].fill(0b1010_1010); // the fifth bit on in odd sub-blocks
        let y5 = run(dequantize_q5_k, &b5);
        for (i, &v) in y5.iter().enumerate() {
            let j = i / 32;
            let q = if j % 2 == 0 { (i % 16) as f32 } else { 21.0 };
            assert_eq!(v, sc[j] as f32 * q - mn[j] as f32, "element {i}");
        }
    }

    #[test]
    fn q6_k_codes_and_signed_scales() {
        let mut b = [0u8; Q6_K_SIZE];
        for (l, byte) in b[..128].iter_mut().enumerate() {
            *byte = (l % 16) as u8 | 0xf0; // low nibbles l % 16, high nibbles 15
        }
        b[128..192].fill(0b11_10_01_00); // bit pair s is s
        for j in 0..16 {
            b[192 + j] = (j as i8 - 8) as u8;
        }
        b[208..210].copy_from_slice(&ONE);
        let y = run(dequantize_q6_k, &b);
        for (i, &v) in y.iter().enumerate() {
            let r = i % 128;
            let low = if r < 64 { (r % 64 % 16) as i32 } else { 15 };
            let code = low | ((r / 32) as i32) << 4;
            assert_eq!(
                v,
                ((i / 16) as i32 - 8) as f32 * (code - 32) as f32,
                "element {i}"
            );
        }
    }

    #[test]
    fn zero_scale_and_infinite_scale_follow_ieee() {
        // d = +Inf with a zero scale gives NaN (Inf · 0), as the reference
        let mut b = [0u8; Q4_K_SIZE];
        b[0..2].copy_from_slice(&0x7c00u16.to_le_bytes());
        let y = run(dequantize_q4_k, &b);
        assert!(y.iter().all(|v| v.is_nan()));
        let y = run(dequantize_q4_k, &[0u8; Q4_K_SIZE]);
        assert!(y.iter().all(|&v| v == 0.0 && v.is_sign_positive()));
    }
}
