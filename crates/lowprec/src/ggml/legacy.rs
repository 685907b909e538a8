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

use super::{f16_to_f32, f32_to_f16, BlockLoop};

/// Bytes per element block: all these types have 32 elements per block.
const QK: usize = 32;

#[inline(always)]
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// numpy's cast of a binary32 to uint8 or int8 on x86-64 (through a 32-bit integer,
/// truncating; NaN and values beyond ±2^31 give 0): the reference's behaviour where its
/// arithmetic leaves the code range (inputs whose reciprocal scale overflows).
#[inline(always)]
pub(super) fn np_cast_u8(v: f32) -> u8 {
    if v.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&v) {
        0
    } else {
        (v as i32) as u8
    }
}

/// `1/d`, or 0 when `d = 0`.
#[inline(always)]
pub(super) fn inverse(d: f32) -> f32 {
    if d == 0.0 {
        0.0
    } else {
        1.0 / d
    }
}

/// The element of largest magnitude (the first of equals; NaN counts as largest, as numpy's
/// `argmax` does), with its sign.
#[inline(always)]
fn signed_absmax(x: &[f32]) -> f32 {
    let m = x.iter().fold(0u32, |m, v| m.max(v.to_bits() & 0x7fff_ffff));
    if m > 0x7f80_0000 {
        return x.iter().copied().find(|v| v.is_nan()).unwrap_or(f32::NAN);
    }
    x.iter()
        .copied()
        .find(|v| v.to_bits() & 0x7fff_ffff == m)
        .unwrap_or(0.0)
}

/// Minimum and maximum, NaN propagating (numpy's `min`/`max`). Of a zero minimum or
/// maximum present with both signs, the first one's sign (numpy's SIMD reduction may give
/// the other; the dequantized values are the same).
#[inline(always)]
fn min_max(x: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = (x[0], x[0]);
    let mut nan = false;
    for &v in x {
        nan |= v.is_nan();
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
    }
    if nan {
        (f32::NAN, f32::NAN)
    } else {
        (lo, hi)
    }
}

/// Nibbles: `q[j]` low, `q[j + 16]` high.
#[inline(always)]
fn pack_nibbles(q: &[u8; QK], qs: &mut [u8]) {
    for j in 0..QK / 2 {
        qs[j] = (q[j] & 0x0f) | (q[j + QK / 2] << 4);
    }
}

/// The fifth bits of 32 codes as a little-endian word.
#[inline(always)]
fn fifth_bits(q: &[u8; QK]) -> [u8; 4] {
    let mut h = 0u32;
    for (j, &v) in q.iter().enumerate() {
        h |= (((v >> 4) & 1) as u32) << j;
    }
    h.to_le_bytes()
}

/// Decode 32 nibbles (+ fifth bits) to codes.
#[inline(always)]
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

/// `np_cast_u8(w.trunc())` without the library call (the conversion truncates already),
/// branch-free so that blocks vectorize.
#[inline(always)]
pub(super) fn trunc_cast_u8(w: f32) -> u8 {
    let in_range = w.abs() < 2_147_483_648.0;
    let t = w as i32;
    if in_range {
        t as u8
    } else {
        0
    }
}

/// `np_cast_u8(round_away(v))` without the library call: the integer part, plus one when
/// the (exact) fraction is at least a half, with the sign; branch-free.
#[inline(always)]
pub(super) fn round_away_cast_u8(v: f32) -> u8 {
    let a = v.abs();
    let in_range = a < 2_147_483_648.0;
    let t = a as i32;
    let r = t.wrapping_add(((a - t as f32) >= 0.5) as i32);
    let r = if v < 0.0 { r.wrapping_neg() } else { r };
    if in_range {
        r as u8
    } else {
        0
    }
}

/// `1.5 · 2^23`: an integral binary32 `r` with `|r| < 2^22` plus this has `r mod 2^8` in
/// its low 8 bits (the integer conversion without a saturating one).
const MAGIC: f32 = 12_582_912.0;
/// The magnitude below which [`MAGIC`] works.
const MAGIC_RANGE: f32 = 4_194_304.0;

/// The low byte of `trunc(w)` for `|w| < 2^22` (what [`trunc_cast_u8`] gives there).
#[inline(always)]
fn trunc_low_byte(w: f32) -> u8 {
    (w.trunc() + MAGIC).to_bits() as u8
}

/// The low byte of `round_away(v)` for `|v| < 2^22` (what [`round_away_cast_u8`] gives
/// there): the integer part plus one when the exact fraction is at least a half, signed.
#[inline(always)]
fn round_away_low_byte(v: f32) -> u8 {
    let a = v.abs();
    let t = a.trunc();
    let r = t + if a - t >= 0.5 { 1.0 } else { 0.0 };
    let r = if v < 0.0 { -r } else { r };
    (r + MAGIC).to_bits() as u8
}

/// `conv` of the 32 values, through `fast` when every one is below 2^22 in magnitude (so
/// that the block vectorizes), else through the general `slow`.
#[inline(always)]
fn block_codes(y: [f32; QK], fast: impl Fn(f32) -> u8, slow: impl Fn(f32) -> u8) -> [u8; QK] {
    let mut small = true;
    for v in &y {
        small &= v.abs() < MAGIC_RANGE;
    }
    if small {
        std::array::from_fn(|j| fast(y[j]))
    } else {
        std::array::from_fn(|j| slow(y[j]))
    }
}

/// Codes `clip(trunc(x · id + offset), 0, max)` of a symmetric block.
#[inline(always)]
fn symmetric_codes(x: &[f32], id: f32, offset: f32, max: u8) -> [u8; QK] {
    let x: &[f32; QK] = x.try_into().expect("a block");
    let y: [f32; QK] = std::array::from_fn(|j| x[j] * id + offset);
    block_codes(
        y,
        |w| trunc_low_byte(w).min(max),
        |w| trunc_cast_u8(w).min(max),
    )
}

/// Codes `clip(trunc((x − min) · id + 0.5), 0, max)` of an asymmetric block.
#[inline(always)]
fn affine_codes(x: &[f32], min: f32, id: f32, max: u8) -> [u8; QK] {
    let x: &[f32; QK] = x.try_into().expect("a block");
    let y: [f32; QK] = std::array::from_fn(|j| (x[j] - min) * id + 0.5);
    block_codes(
        y,
        |w| trunc_low_byte(w).min(max),
        |w| trunc_cast_u8(w).min(max),
    )
}

/// Values to Q4_0 blocks.
pub(super) fn quantize_q4_0(src: &[f32], out: &mut [u8]) {
    super::vectorized::<Q4_0>(src, out)
}

/// The Q4_0 block loop.
struct Q4_0;

impl BlockLoop for Q4_0 {
    #[inline(always)]
    fn blocks(src: &[f32], out: &mut [u8]) {
        for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(18)) {
            let d = signed_absmax(x) / -8.0;
            let q = symmetric_codes(x, inverse(d), 8.5, 15);
            b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
            pack_nibbles(&q, &mut b[2..]);
        }
    }
}

/// Values to Q4_1 blocks.
pub(super) fn quantize_q4_1(src: &[f32], out: &mut [u8]) {
    super::vectorized::<Q4_1>(src, out)
}

/// The Q4_1 block loop.
struct Q4_1;

impl BlockLoop for Q4_1 {
    #[inline(always)]
    fn blocks(src: &[f32], out: &mut [u8]) {
        for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(20)) {
            let (min, max) = min_max(x);
            let d = (max - min) / 15.0;
            let q = affine_codes(x, min, inverse(d), 15);
            b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
            b[2..4].copy_from_slice(&f32_to_f16(min).to_le_bytes());
            pack_nibbles(&q, &mut b[4..]);
        }
    }
}

/// Values to Q5_0 blocks.
pub(super) fn quantize_q5_0(src: &[f32], out: &mut [u8]) {
    super::vectorized::<Q5_0>(src, out)
}

/// The Q5_0 block loop.
struct Q5_0;

impl BlockLoop for Q5_0 {
    #[inline(always)]
    fn blocks(src: &[f32], out: &mut [u8]) {
        for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(22)) {
            let d = signed_absmax(x) / -16.0;
            let q = symmetric_codes(x, inverse(d), 16.5, 31);
            b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
            b[2..6].copy_from_slice(&fifth_bits(&q));
            pack_nibbles(&q, &mut b[6..]);
        }
    }
}

/// Values to Q5_1 blocks.
pub(super) fn quantize_q5_1(src: &[f32], out: &mut [u8]) {
    super::vectorized::<Q5_1>(src, out)
}

/// The Q5_1 block loop.
struct Q5_1;

impl BlockLoop for Q5_1 {
    #[inline(always)]
    fn blocks(src: &[f32], out: &mut [u8]) {
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
}

/// The largest magnitude, NaN propagating (numpy's `abs(x).max()`): the largest of the
/// magnitudes' bit patterns, which order as the magnitudes do (an integer maximum, which
/// vectorizes where a float maximum with NaN rules does not); a pattern above +Inf's is a NaN.
#[inline(always)]
pub(super) fn absmax(x: &[f32]) -> f32 {
    let m = x.iter().fold(0u32, |m, v| m.max(v.to_bits() & 0x7fff_ffff));
    if m > 0x7f80_0000 {
        f32::NAN
    } else {
        f32::from_bits(m)
    }
}

/// Round half away from zero as the reference's `np_roundf` (NaN stays NaN).
#[cfg(test)]
fn round_away(v: f32) -> f32 {
    v.round()
}

/// Values to Q8_0 blocks.
pub(super) fn quantize_q8_0(src: &[f32], out: &mut [u8]) {
    super::vectorized::<Q8_0>(src, out)
}

/// The Q8_0 block loop.
struct Q8_0;

impl BlockLoop for Q8_0 {
    #[inline(always)]
    fn blocks(src: &[f32], out: &mut [u8]) {
        for (x, b) in src.chunks_exact(QK).zip(out.chunks_exact_mut(34)) {
            let d = absmax(x) / 127.0;
            let id = inverse(d);
            b[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
            let x: &[f32; QK] = x.try_into().expect("a block");
            let y: [f32; QK] = std::array::from_fn(|j| x[j] * id);
            let q = block_codes(y, round_away_low_byte, round_away_cast_u8);
            b[2..].copy_from_slice(&q);
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
    fn fast_casts_equal_the_step_by_step_ones() {
        let mut s = 1u32;
        for _ in 0..2_000_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            // every exponent, and small values near the half-integers
            let v = if s & 1 == 0 {
                f32::from_bits(s)
            } else {
                (s >> 8) as f32 / 65536.0 - 128.0
            };
            assert_eq!(trunc_cast_u8(v), np_cast_u8(v.trunc()), "{v:e}");
            assert_eq!(round_away_cast_u8(v), np_cast_u8(round_away(v)), "{v:e}");
        }
        for v in [
            0.5f32,
            -0.5,
            1.5,
            -2.5,
            0.49999997,
            127.5,
            -128.5,
            2147483520.0,
            -2147483648.0,
            2147483648.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
        ] {
            assert_eq!(trunc_cast_u8(v), np_cast_u8(v.trunc()), "{v:e}");
            assert_eq!(round_away_cast_u8(v), np_cast_u8(round_away(v)), "{v:e}");
        }
    }

    #[test]
    fn magic_low_bytes_equal_the_casts_below_2_22() {
        let mut s = 7u32;
        for _ in 0..2_000_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let v = ((s >> 1) as f32 / 2_147_483_648.0 - 0.5) * 2.0 * MAGIC_RANGE
                / (1u32 << (s % 23)) as f32;
            if v.abs() < MAGIC_RANGE {
                assert_eq!(trunc_low_byte(v), trunc_cast_u8(v), "{v:e}");
                assert_eq!(round_away_low_byte(v), round_away_cast_u8(v), "{v:e}");
            }
        }
        for v in [
            0.5f32,
            -0.5,
            0.49999997,
            -0.49999997,
            1.5,
            -2.5,
            127.5,
            -128.5,
            4194303.5,
            -4194303.5,
            -0.0,
        ] {
            assert_eq!(trunc_low_byte(v), trunc_cast_u8(v), "{v:e}");
            assert_eq!(round_away_low_byte(v), round_away_cast_u8(v), "{v:e}");
        }
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
