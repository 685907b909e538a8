//! The largest magnitude of every block of 16 binary32 (NVFP4's blocks) by AVX2: a block is
//! two vectors, `|x|` of each and their lane maximum give one vector per block, and eight
//! blocks' vectors reduce together by a transpose (`vpunpck{l,h}dq`, `vpunpck{l,h}qdq`,
//! `vperm2i128`, a maximum after each level) to one vector of eight maxima, stored at once.
//! Magnitude bits are below 2^31, so the signed maximum is the unsigned one, and the
//! result is the largest `|x|` bits of each block exactly as the portable loop
//! (`crate::block::fused::block_maxima`) gives it (NaN bits above every number's).

/// Write the largest `|x|` bits of every block of 16 elements of `x` to `out`
/// (`x.len() == 16 · out.len()`); `false`, with nothing written, when the active level is
/// below AVX2 (the caller runs the portable loop).
pub(crate) fn block_maxima16(x: &[f32], out: &mut [u32]) -> bool {
    assert_eq!(x.len(), 16 * out.len(), "internal: block_maxima16 lengths");
    #[cfg(target_arch = "x86_64")]
    if super::active() >= super::Level::Avx2 {
        // SAFETY: the AVX2 level was detected (`active()` never exceeds `detected()`), and
        // the kernel reads `x` and writes `out` only through checked slices.
        unsafe { x86::maxima16(x, out) };
        return true;
    }
    let _ = (x, out);
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `|x|` bits of blocks of 16 at `b` (16 elements), their lane maximum.
    #[inline(always)]
    unsafe fn block(b: &[f32]) -> __m256i {
        let abs = _mm256_set1_epi32(0x7fff_ffff);
        let lo = _mm256_and_si256(_mm256_loadu_si256(b[..8].as_ptr().cast()), abs);
        let hi = _mm256_and_si256(_mm256_loadu_si256(b[8..16].as_ptr().cast()), abs);
        _mm256_max_epi32(lo, hi)
    }

    /// Two vectors' lanes `(0 1 2 3 | 4 5 6 7)` → `(max(0,2) of a, of b, max(1,3) of a,
    /// of b | the same of lanes 4–7)`.
    #[inline(always)]
    unsafe fn pair(a: __m256i, b: __m256i) -> __m256i {
        _mm256_max_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b))
    }

    /// Two [`pair`]s (blocks 0 1 and 2 3) → `(blocks 0 1 2 3 over lanes 0–3 | over 4–7)`.
    #[inline(always)]
    unsafe fn quad(a: __m256i, b: __m256i) -> __m256i {
        _mm256_max_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b))
    }

    /// See [`super::block_maxima16`]. No closures: one that is not inlined is compiled
    /// without AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn maxima16(x: &[f32], out: &mut [u32]) {
        let mut eights = out.chunks_exact_mut(8);
        let mut at = 0;
        for o in &mut eights {
            let b = &x[at..at + 128];
            at += 128;
            let q0 = quad(
                pair(block(b), block(&b[16..])),
                pair(block(&b[32..]), block(&b[48..])),
            );
            let q4 = quad(
                pair(block(&b[64..]), block(&b[80..])),
                pair(block(&b[96..]), block(&b[112..])),
            );
            // blocks 0–3 | blocks 4–7, over all eight lanes
            let m = _mm256_max_epi32(
                _mm256_permute2x128_si256::<0x20>(q0, q4),
                _mm256_permute2x128_si256::<0x31>(q0, q4),
            );
            _mm256_storeu_si256(o.as_mut_ptr().cast(), m);
        }
        for o in eights.into_remainder() {
            let mut l = [0u32; 8];
            _mm256_storeu_si256(l.as_mut_ptr().cast(), block(&x[at..]));
            *o = l.into_iter().max().unwrap_or(0);
            at += 16;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn block_maxima_equal_the_portable_loop() {
        let mut bits = crate::block::test_bits(5);
        // every count of blocks from 0 to 40 (whole groups of eight and remainders), with
        // NaN, ±Inf, ±0, subnormals, and the largest element at every position
        for blocks in 0..=40usize {
            let mut x: Vec<f32> = (0..16 * blocks)
                .map(|_| f32::from_bits(bits() as u32))
                .collect();
            for (k, b) in x.chunks_exact_mut(16).enumerate() {
                match k % 5 {
                    0 => b[k % 16] = f32::NAN,
                    1 => b[(k * 7) % 16] = f32::NEG_INFINITY,
                    2 => b.iter_mut().for_each(|v| *v = -0.0),
                    3 => b[(k * 3) % 16] = -f32::MAX,
                    _ => b
                        .iter_mut()
                        .for_each(|v| *v = f32::from_bits(v.to_bits() & 0x807f_ffff)),
                }
            }
            let want: Vec<u32> = x
                .chunks_exact(16)
                .map(|b| {
                    b.iter()
                        .map(|v| v.to_bits() & 0x7fff_ffff)
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            // the portable loop the kernel stands in for
            let mut portable = vec![0u32; blocks];
            crate::block::fused::block_maxima(&x, 16, &mut portable);
            assert_eq!(portable, want, "{blocks} blocks, portable");
            let mut got = vec![u32::MAX; blocks];
            if super::block_maxima16(&x, &mut got) {
                assert_eq!(got, want, "{blocks} blocks");
            } else {
                assert_eq!(got, vec![u32::MAX; blocks], "nothing written");
            }
        }
    }
}
