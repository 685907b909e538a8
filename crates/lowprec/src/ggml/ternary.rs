//! The ternary types TQ1_0 and TQ2_0: 256 elements in {−1, 0, +1} times an f16 scale
//! `d = max|x|` (codes `round(x / d)`, half away from zero, stored as `q + 1`).
//!
//! TQ2_0 keeps four 2-bit codes per byte: byte `32g + m` holds elements `128g + 32k + m` at
//! bits `2k`. TQ1_0 packs five trits per byte as a base-3 fraction: the trits
//! `t_0 … t_4` (most significant first) become `⌈256 · (81 t_0 + 27 t_1 + 9 t_2 + 3 t_3 + t_4) / 243⌉`,
//! and trit `n` comes back as `⌊3 · (byte · 3^n mod 256) / 256⌋`. Bytes 0‥32 hold elements
//! `32n + m` (n = 0‥5), bytes 32‥48 elements `160 + 16n + m`, bytes 48‥52 elements
//! `240 + 4n + m` (n = 0‥4, with `3^4` as the last multiplier unused), then `d`.

use super::legacy::{absmax, inverse, round_away_cast_u8};
use super::{f16_to_f32, f32_to_f16, QK_K};

const POW3: [u8; 5] = [1, 3, 9, 27, 81];

/// The codes `q + 1 ∈ {0, 1, 2}` of a block and its scale.
#[inline]
fn trits(x: &[f32]) -> ([u8; QK_K], f32) {
    let d = absmax(x);
    let id = inverse(d);
    let mut q = [0u8; QK_K];
    for (q, &v) in q.iter_mut().zip(x) {
        *q = round_away_cast_u8(v * id).wrapping_add(1);
    }
    (q, d)
}

/// Trit `n` of a packed byte: `⌊3 · (b · 3^n mod 256) / 256⌋ − 1`.
#[inline]
fn trit(b: u8, n: usize) -> i8 {
    (((b.wrapping_mul(POW3[n]) as u16 * 3) >> 8) as i8) - 1
}

/// TQ1_0 blocks to values.
pub(super) fn dequantize_tq1_0(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(54).zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(u16::from_le_bytes([b[52], b[53]]));
        let (qs0, qs1, qh) = (&b[..32], &b[32..48], &b[48..52]);
        for n in 0..5 {
            for m in 0..32 {
                o[32 * n + m] = d * trit(qs0[m], n) as f32;
            }
            for m in 0..16 {
                o[160 + 16 * n + m] = d * trit(qs1[m], n) as f32;
            }
        }
        for n in 0..4 {
            for m in 0..4 {
                o[240 + 4 * n + m] = d * trit(qh[m], n) as f32;
            }
        }
    }
}

/// `⌈256 · v / 243⌉` of a base-3 number `v < 243`, as a byte.
#[inline]
fn scale_trits(v: u16) -> u8 {
    (v * 256).div_ceil(243) as u8
}

/// Values to TQ1_0 blocks.
pub(super) fn quantize_tq1_0(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK_K).zip(out.chunks_exact_mut(54)) {
        let (q, d) = trits(x);
        // trits t_0 … t_4 with weights 81 … 1 (uint8 arithmetic, as the reference)
        let pack = |at: &dyn Fn(usize) -> u8, k: usize| -> u8 {
            let mut s = 0u16;
            for (n, w) in [81u8, 27, 9, 3, 1][..k].iter().enumerate() {
                s += at(n).wrapping_mul(*w) as u16;
            }
            scale_trits(s & 0xff)
        };
        for m in 0..32 {
            b[m] = pack(&|n| q[32 * n + m], 5);
        }
        for m in 0..16 {
            b[32 + m] = pack(&|n| q[160 + 16 * n + m], 5);
        }
        for m in 0..4 {
            b[48 + m] = pack(&|n| q[240 + 4 * n + m], 4);
        }
        b[52..54].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    }
}

/// TQ2_0 blocks to values.
pub(super) fn dequantize_tq2_0(src: &[u8], out: &mut [f32]) {
    for (b, o) in src.chunks_exact(66).zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(u16::from_le_bytes([b[64], b[65]]));
        for g in 0..2 {
            for k in 0..4 {
                for m in 0..32 {
                    let q = ((b[32 * g + m] >> (2 * k)) & 3) as i8 - 1;
                    o[128 * g + 32 * k + m] = d * q as f32;
                }
            }
        }
    }
}

/// Values to TQ2_0 blocks.
pub(super) fn quantize_tq2_0(src: &[f32], out: &mut [u8]) {
    for (x, b) in src.chunks_exact(QK_K).zip(out.chunks_exact_mut(66)) {
        let (q, d) = trits(x);
        for g in 0..2 {
            for m in 0..32 {
                let mut v = 0u8;
                for k in 0..4 {
                    v |= q[128 * g + 32 * k + m] << (2 * k);
                }
                b[32 * g + m] = v;
            }
        }
        b[64..66].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ternary_round_trips_of_exact_trits() {
        // values in {−2, 0, 2}: d = 2, every element exact in both types
        let x: Vec<f32> = (0..QK_K)
            .map(|i| [(-2.0f32), 0.0, 2.0][(i * 7 + i / 5) % 3])
            .collect();
        for (q, dq, size) in [
            (
                quantize_tq1_0 as fn(&[f32], &mut [u8]),
                dequantize_tq1_0 as fn(&[u8], &mut [f32]),
                54,
            ),
            (quantize_tq2_0, dequantize_tq2_0, 66),
        ] {
            let mut b = vec![0u8; size];
            q(&x, &mut b);
            let mut y = vec![0f32; QK_K];
            dq(&b, &mut y);
            assert_eq!(y, x);
        }
    }

    #[test]
    fn every_base3_byte_decodes_to_its_trits() {
        for v in 0..243u16 {
            let b = scale_trits(v);
            let digits = [v / 81, v / 27 % 3, v / 9 % 3, v / 3 % 3, v % 3];
            for (n, &t) in digits.iter().enumerate() {
                assert_eq!(trit(b, n), t as i8 - 1, "v = {v}, trit {n}");
            }
        }
    }
}
