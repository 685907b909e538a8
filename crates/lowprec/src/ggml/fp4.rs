//! ggml's own FP4 types. They differ from OCP MX and NVIDIA's NVFP4 (docs/gguf.md):
//!
//! - **MXFP4** (32 elements, one E8M0 byte `e`, 16 bytes of E2M1 codes, elements `j` and
//!   `j + 16` in the low and high nibble of byte `j`): the values are the E2M1 values
//!   doubled, `{0, 1, 2, 3, 4, 6, 8, 12}`, times `2^(e − 128)` (half the E8M0 scale). The
//!   quantizer takes `e = ⌊log2 amax⌋ − 2 + 127` (the binary32 `log2`; 0 for an all-zero
//!   block) and, for each element, the code of least `|d · v − x|`, ties to the lower code.
//! - **NVFP4** (64 elements: four UE4M3 scale bytes, then four sub-blocks of 8 bytes, low
//!   nibbles first): sub-block `s` is `0.5 · ue4m3(scale_s) · v` with the doubled values
//!   above; the scale byte 0x7F (the E4M3 NaN) reads as 0; no tensor scale. Dequantize only.

use super::legacy::{absmax, np_cast_u8};

/// E2M1 values doubled, indexed by the 4-bit code.
const KVALUES: [f32; 16] = [
    0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0,
];

/// `2^(e − 128)`: half the E8M0 scale, subnormal for e < 2.
#[inline]
fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        (e as u32 - 1) << 23
    };
    f32::from_bits(bits)
}

/// ggml MXFP4 blocks to values.
pub(super) fn dequantize_mxfp4(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(17).zip(out.chunks_exact_mut(32)) {
        let d = e8m0_half(b[0]);
        for j in 0..16 {
            o[j] = d * KVALUES[(b[1 + j] & 0x0f) as usize];
            o[j + 16] = d * KVALUES[(b[1 + j] >> 4) as usize];
        }
    }
}

/// The scale byte of a block: `⌊log2 amax⌋ − 2 + 127` through binary32 `log2` (numpy's, whose
/// floor agrees with the binary64 logarithm rounded to binary32), cast as numpy casts.
#[inline]
fn mxfp4_exponent(amax: f32) -> u8 {
    if amax > 0.0 {
        let l = ((amax as f64).log2() as f32).floor();
        np_cast_u8(l - 2.0 + 127.0)
    } else {
        0
    }
}

/// The code of least error `|d · v − x|`, the first of equals (a NaN error wins, as numpy's
/// `argmin` takes the first NaN).
#[inline]
fn nearest_code(d: f32, x: f32) -> u8 {
    let mut best = 0u8;
    let mut err = f32::INFINITY;
    for (c, &v) in KVALUES.iter().enumerate() {
        let e = (d * v - x).abs();
        if e.is_nan() {
            return c as u8;
        }
        if e < err || c == 0 {
            err = e;
            best = c as u8;
        }
    }
    best
}

/// Values to ggml MXFP4 blocks.
pub(super) fn quantize_mxfp4(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(32).zip(out.chunks_exact_mut(17)) {
        let e = mxfp4_exponent(absmax(x));
        let d = e8m0_half(e);
        b[0] = e;
        for j in 0..16 {
            b[1 + j] = nearest_code(d, x[j]) | (nearest_code(d, x[j + 16]) << 4);
        }
    }
}

/// Half of a UE4M3 scale byte's value (0 for 0x00 and 0x7F; the top bit ignored).
#[inline]
fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7f {
        return 0.0;
    }
    let e = ((x >> 3) & 0x0f) as i32;
    let m = (x & 7) as f32;
    let v = if e == 0 {
        m * (1.0 / 512.0)
    } else {
        (1.0 + m / 8.0) * f32::from_bits(((e - 7 + 127) as u32) << 23)
    };
    v * 0.5
}

/// ggml NVFP4 blocks to values.
pub(super) fn dequantize_nvfp4(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(36).zip(out.chunks_exact_mut(64)) {
        for s in 0..4 {
            let d = ue4m3_half(b[s]);
            let qs = &b[4 + 8 * s..12 + 8 * s];
            let o = &mut o[16 * s..16 * s + 16];
            for j in 0..8 {
                o[j] = d * KVALUES[(qs[j] & 0x0f) as usize];
                o[j + 8] = d * KVALUES[(qs[j] >> 4) as usize];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mxfp4_scale_is_half_the_e8m0_value() {
        assert_eq!(e8m0_half(127), 0.5);
        assert_eq!(e8m0_half(0), 2f32.powi(-128));
        assert_eq!(e8m0_half(1), 2f32.powi(-127));
        assert_eq!(e8m0_half(255), 2f32.powi(127));
        // amax 6: ⌊log2 6⌋ = 2, e = 127, d = 0.5: 6 is the doubled value 12
        assert_eq!(mxfp4_exponent(6.0), 127);
        assert_eq!(nearest_code(0.5, 6.0), 7);
        // a tie between 1 (code 2) and 1.5 (code 3) at 1.25 goes to the lower code
        assert_eq!(nearest_code(0.5, 1.25), 2);
        // −0 and +0: code 0 (the first)
        assert_eq!(nearest_code(0.5, -0.0), 0);
    }

    #[test]
    fn ue4m3_half_reads_every_byte() {
        assert_eq!(ue4m3_half(0x38), 0.5); // 1.0 · 0.5
        assert_eq!(ue4m3_half(0x01), 0.5 / 512.0);
        assert_eq!(ue4m3_half(0x7e), 224.0);
        assert_eq!(ue4m3_half(0x7f), 0.0);
        assert_eq!(ue4m3_half(0xff), 240.0);
    }
}
