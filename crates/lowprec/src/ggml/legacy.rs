//! The first ggml block types: Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, 32 elements per block with
//! an f16 scale (and minimum), codes in nibbles (and a 32-bit word of fifth bits).
//!
//! Element `j < 16` of a block is the low nibble of byte `j`, element `j + 16` the high
//! nibble; the fifth bit of element `j` is bit `j` of the little-endian word `qh`.
//!
//! | type | bytes | value | scale from the block |
//! |---|---|---|---|
//! | Q4_0 | d, qs | `d · (q − 8)` | `d = x_m / −8`, `x_m` the element of largest magnitude (the first) |
//! | Q4_1 | d, m, qs | `d · q + m` | `d = (max − min) / 15`, `m = min` |
//! | Q5_0 | d, qh, qs | `d · (q − 16)` | `d = x_m / −16` |
//! | Q5_1 | d, m, qh, qs | `d · q + m` | `d = (max − min) / 31`, `m = min` |
//! | Q8_0 | d, qs (int8) | `d · q` | `d = max|x| / 127`, `q = round(x / d)` half away from zero |
//!
//! The quantizers compute `1/d` once (0 when `d = 0`) and the codes as `trunc(x · (1/d) + 8.5)`
//! (`+ 16.5`, `+ 0.5` from the minimum), each step in binary32, clipped to the code range.

use super::{f16_to_f32, f32_to_f16};

/// Bytes per element block: all these types have 32 elements per block.
const QK: usize = 32;

#[inline]
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// numpy's cast of a binary32 to uint8 or int8 on x86-64 (through a 32-bit integer,
/// truncating; NaN and values beyond ±2^31 give 0): the reference's behaviour where its
/// arithmetic leaves the code range (inputs whose reciprocal scale overflows).
#[inline]
pub(super) fn np_cast_u8(v: f32) -> u8 {
    if v.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&v) {
        0
    } else {
        (v as i32) as u8
    }
}

/// `1/d`, or 0 when `d = 0`.
#[inline]
pub(super) fn inverse(d: f32) -> f32 {
    if d == 0.0 {
        0.0
    } else {
        1.0 / d
    }
}

/// The element of largest magnitude (the first of equals; NaN counts as largest, as numpy's
/// `argmax` does), with its sign.
#[inline]
fn signed_absmax(x: &[f32]) -> f32 {
    let mut best = x[0];
    for &v in &x[1..] {
        if best.is_nan() {
            break;
        }
        if v.is_nan() || v.abs() > best.abs() {
            best = v;
        }
    }
    best
}

/// Minimum and maximum, NaN propagating (numpy's `min`/`max`).
#[inline]
fn min_max(x: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = (x[0], x[0]);
    for &v in &x[1..] {
        if v.is_nan() || lo.is_nan() {
            lo = f32::NAN;
            hi = f32::NAN;
            continue;
        }
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
    }
    (lo, hi)
}

/// Nibbles: `q[j]` low, `q[j + 16]` high.
#[inline]
fn pack_nibbles(q: &[u8; QK], qs: &mut [u8]) {
    for j in 0..QK / 2 {
        qs[j] = (q[j] & 0x0f) | (q[j + QK / 2] << 4);
    }
}

/// The fifth bits of 32 codes as a little-endian word.
#[inline]
fn fifth_bits(q: &[u8; QK]) -> [u8; 4] {
    let mut h = 0u32;
    for (j, &v) in q.iter().enumerate() {
        h |= (((v >> 4) & 1) as u32) << j;
    }
    h.to_le_bytes()
}

/// Decode 32 nibbles (+ fifth bits) to codes.
#[inline]
fn unpack(qs: &[u8], qh: u32) -> [u8; QK] {
    let mut q = [0u8; QK];
    for j in 0..QK / 2 {
        q[j] = (qs[j] & 0x0f) | ((((qh >> j) & 1) as u8) << 4);
        q[j + QK / 2] = (qs[j] >> 4) | ((((qh >> (j + 16)) & 1) as u8) << 4);
    }
    q
}

/// Q4_0 blocks to values.
pub(super) fn dequantize_q4_0(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(18).zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(le16(b, 0));
        let q = unpack(&b[2..18], 0);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * (q as i32 - 8) as f32;
        }
    }
}

/// Q4_1 blocks to values.
pub(super) fn dequantize_q4_1(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(20).zip(out.chunks_exact_mut(QK)) {
        let (d, m) = (f16_to_f32(le16(b, 0)), f16_to_f32(le16(b, 2)));
        let q = unpack(&b[4..20], 0);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * q as f32 + m;
        }
    }
}

/// Q5_0 blocks to values.
pub(super) fn dequantize_q5_0(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(22).zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(le16(b, 0));
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        let q = unpack(&b[6..22], qh);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * (q as i32 - 16) as f32;
        }
    }
}

/// Q5_1 blocks to values.
pub(super) fn dequantize_q5_1(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(24).zip(out.chunks_exact_mut(QK)) {
        let (d, m) = (f16_to_f32(le16(b, 0)), f16_to_f32(le16(b, 2)));
        let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        let q = unpack(&b[8..24], qh);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * q as f32 + m;
        }
    }
}

/// Q8_0 blocks to values.
pub(super) fn dequantize_q8_0(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(34).zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(le16(b, 0));
        for (o, &q) in o.iter_mut().zip(&b[2..34]) {
            *o = (q as i8) as f32 * d;
        }
    }
}

/// Codes `clip(trunc(x · id + offset), 0, max)` of a symmetric block.
#[inline]
fn symmetric_codes(x: &[f32], id: f32, offset: f32, max: u8) -> [u8; QK] {
    let mut q = [0u8; QK];
    for (q, &v) in q.iter_mut().zip(x) {
        *q = np_cast_u8((v * id + offset).trunc()).min(max);
    }
    q
}

/// Codes `clip(trunc((x − min) · id + 0.5), 0, max)` of an asymmetric block.
#[inline]
fn affine_codes(x: &[f32], min: f32, id: f32, max: u8) -> [u8; QK] {
    let mut q = [0u8; QK];
    for (q, &v) in q.iter_mut().zip(x) {
        *q = np_cast_u8(((v - min) * id + 0.5).trunc()).min(max);
    }
    q
}

/// Values to Q4_0 blocks.
pub(super) fn quantize_q4_0(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(18)) {
        let d = signed_absmax(x) / -8.0;
        let q = symmetric_codes(x, inverse(d), 8.5, 15);
        b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
        pack_nibbles(&q, &mut b[2..]);
    }
}

/// Values to Q4_1 blocks.
pub(super) fn quantize_q4_1(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(20)) {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let q = affine_codes(x, min, inverse(d), 15);
        b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
        b[2..4].copy_from_slice(&f32_to_f16(min).to_le_bytes());
        pack_nibbles(&q, &mut b[4..]);
    }
}

/// Values to Q5_0 blocks.
pub(super) fn quantize_q5_0(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(22)) {
        let d = signed_absmax(x) / -16.0;
        let q = symmetric_codes(x, inverse(d), 16.5, 31);
        b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
        b[2..6].copy_from_slice(&fifth_bits(&q));
        pack_nibbles(&q, &mut b[6..]);
    }
}

/// Values to Q5_1 blocks.
pub(super) fn quantize_q5_1(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(24)) {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let q = affine_codes(x, min, inverse(d), 31);
        b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
        b[2..4].copy_from_slice(&f32_to_f16(min).to_le_bytes());
        b[4..8].copy_from_slice(&fifth_bits(&q));
        pack_nibbles(&q, &mut b[8..]);
    }
}

/// The largest magnitude, NaN propagating (numpy's `abs(x).max()`).
#[inline]
pub(super) fn absmax(x: &[f32]) -> f32 {
    let mut m = 0f32;
    for &v in x {
        let a = v.abs();
        m = if a.is_nan() || m.is_nan() {
            f32::NAN
        } else if a > m {
            a
        } else {
            m
        };
    }
    m
}

/// Round half away from zero as the reference's `np_roundf` (NaN stays NaN).
#[inline]
pub(super) fn round_away(v: f32) -> f32 {
    v.round()
}

/// Values to Q8_0 blocks.
pub(super) fn quantize_q8_0(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(34)) {
        let d = absmax(x) / 127.0;
        let id = inverse(d);
        b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
        for (q, &v) in b[2..].iter_mut().zip(x) {
            *q = np_cast_u8(round_away(v * id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_0_round_trip_of_a_ramp() {
        // x = −8 … 7 twice: the largest magnitude is −8, d = 1, codes x + 8, exact.
        let x: Vec<f32> = (0..32).map(|i| (i % 16) as f32 - 8.0).collect();
        let mut b = [0u8; 18];
        quantize_q4_0(&x, &mut b);
        assert_eq!(f16_to_f32(le16(&b, 0)), 1.0);
        assert_eq!(b[2], 0x00); // elements 0 and 16 are both −8: code 0
        assert_eq!(b[3], 0x11);
        let mut y = [0f32; 32];
        dequantize_q4_0(&b, &mut y);
        assert_eq!(&y[..], &x[..]);
    }

    #[test]
    fn q5_1_keeps_the_fifth_bit_and_minimum() {
        // x = 10 + j for j = 0..32: min 10, d = 1, codes j (needing five bits)
        let x: Vec<f32> = (0..32).map(|j| 10.0 + j as f32).collect();
        let mut b = [0u8; 24];
        quantize_q5_1(&x, &mut b);
        assert_eq!(u32::from_le_bytes([b[4], b[5], b[6], b[7]]), 0xffff_0000);
        let mut y = [0f32; 32];
        dequantize_q5_1(&b, &mut y);
        assert_eq!(&y[..], &x[..]);
    }

    #[test]
    fn q8_0_rounds_half_away_and_zero_blocks_stay_zero() {
        let mut x = [0f32; 32];
        x[0] = 127.0;
        x[1] = 2.5;
        x[2] = -2.5;
        let mut b = [0u8; 34];
        quantize_q8_0(&x, &mut b);
        assert_eq!((b[2] as i8, b[3] as i8, b[4] as i8), (127, 3, -3));
        quantize_q8_0(&[0.0; 32], &mut b);
        assert!(b.iter().all(|&v| v == 0));
    }

    #[test]
    fn numpy_casts_wrap_through_int32() {
        assert_eq!(np_cast_u8(300.0), 44);
        assert_eq!(np_cast_u8(-1.5), 255);
        assert_eq!(np_cast_u8(f32::NAN), 0);
        assert_eq!(np_cast_u8(f32::INFINITY), 0);
        assert_eq!(np_cast_u8(1e10), 0);
    }
}
