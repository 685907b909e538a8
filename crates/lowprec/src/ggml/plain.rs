//! The element types: F32, F16, BF16 and F64, one value per "block".

use super::{f16_to_f32, f32_to_f16};

/// Little-endian binary32 values.
pub(super) fn dequantize_f32(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(4).zip(out.iter_mut()) {
        *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}

/// Binary32 values to little-endian bytes.
pub(super) fn quantize_f32(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.iter().zip(out.chunks_exact_mut(4)) {
        b.copy_from_slice(&x.to_le_bytes());
    }
}

/// Little-endian binary16 values, widened exactly.
pub(super) fn dequantize_f16(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(2).zip(out.iter_mut()) {
        *o = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
    }
}

/// Binary32 to binary16, nearest-even, overflow to ±Inf (numpy's `astype(np.float16)`).
pub(super) fn quantize_f16(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.iter().zip(out.chunks_exact_mut(2)) {
        b.copy_from_slice(&f32_to_f16(*x).to_le_bytes());
    }
}

/// bfloat16: the high half of a binary32.
pub(super) fn dequantize_bf16(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(2).zip(out.iter_mut()) {
        *o = f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16);
    }
}

/// ggml's `fp32_to_bf16`: a NaN keeps its high half with the quiet bit set; anything else
/// rounds to nearest, ties to even (a carry into the exponent gives Inf, correctly).
pub(super) fn quantize_bf16(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.iter().zip(out.chunks_exact_mut(2)) {
        b.copy_from_slice(&bf16_bits(*x).to_le_bytes());
    }
}

/// One binary32 to bfloat16 bits as [`quantize_bf16`] does.
#[inline]
pub(super) fn bf16_bits(x: f32) -> u16 {
    let n = x.to_bits();
    if n & 0x7fff_ffff > 0x7f80_0000 {
        return ((n >> 16) | 0x40) as u16;
    }
    ((n as u64 + 0x7fff + ((n >> 16) & 1) as u64) >> 16) as u16
}

/// Little-endian binary64 values, rounded to the nearest binary32 (ties to even).
pub(super) fn dequantize_f64(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(8).zip(out.iter_mut()) {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        *o = f64::from_le_bytes(a) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even_and_quiets_nan() {
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1
        assert_eq!(bf16_bits(1.0 + 1.0 / 256.0), 0x3f80);
        // just above the tie rounds up
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8001)), 0x3f81);
        // the tie above an odd code rounds up to even
        assert_eq!(bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82);
        // max finite rounds to Inf
        assert_eq!(bf16_bits(f32::MAX), 0x7f80);
        // a signalling NaN with a low payload only becomes quiet
        assert_eq!(bf16_bits(f32::from_bits(0xff80_0001)), 0xffc0);
        let mut o = [0f32; 1];
        dequantize_bf16(&0x3f82u16.to_le_bytes(), &mut o);
        assert_eq!(o[0], 1.015625);
    }
}
