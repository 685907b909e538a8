//! The AVX-512 kernel of TransformerEngine's 16-point random Hadamard transform
//! (`crate::scheme::rotate::forward_bf16`): one block of 16 binary32 elements per vector,
//! the butterfly stage `h` as a lane permutation (`i ↔ i ^ h`), one addition, one
//! subtraction and a blend (lane `i` with `i & h = 0` takes `v_i + v_{i^h}`, the other
//! `v_{i^h} − v_i`: the portable butterflies' `a + b` and `a − b`, bit for bit, IEEE
//! addition being commutative), then `⊗ k`, `+ 0` and the BF16 rounding in integer lanes.

/// Rotate whole blocks of 16: `out = BF16(fwht16(x ⊗ s) ⊗ k + 0)` per block, as binary32
/// (`x.len()` a multiple of 16, `out` as long); `false`, with nothing written, when the CPU
/// has no AVX-512 (the caller takes the portable loop).
pub(crate) fn rht16_bf16(x: &[f32], s: &[f32; 16], k: f32, out: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        assert!(x.len().is_multiple_of(16) && out.len() == x.len());
        // SAFETY: AVX-512F was detected (`active()` never exceeds `detected()`), and the
        // lengths checked above bound every access the kernel makes.
        unsafe { x86::rht16_bf16(x, s, k, out) };
        return true;
    }
    let _ = (x, s, k, out);
    false
}

/// The largest magnitude bits of `BF16(fwht16(x ⊗ s) ⊗ k + 0)` over whole blocks of 16 (a
/// NaN's bits if one arises), nothing stored; `None` when the CPU has no AVX-512.
///
/// The kernel keeps the largest `|fwht16(x ⊗ s)|` (the bits of a NaN, the largest of all,
/// whatever its payload) and rounds that one value: `⊗ k`, `+ 0` and the rounding to BF16
/// are monotone and odd, so the largest rounded magnitude is the rounded largest magnitude.
pub(crate) fn rht16_bf16_max(x: &[f32], s: &[f32; 16], k: f32) -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        assert!(x.len().is_multiple_of(16));
        // SAFETY: AVX-512F was detected; every load goes through a checked 16-element slice.
        let m = f32::from_bits(unsafe { x86::fwht16_max(x, s) });
        if m.is_nan() {
            return Some(m.to_bits());
        }
        let b = (m * k + 0.0).to_bits();
        return Some((b + 0x7fff + ((b >> 16) & 1)) & 0xffff_0000);
    }
    let _ = (x, s, k);
    None
}

/// The unrounded binary64 rotation of whole blocks of `v.len() / s.len()` in place, block
/// sizes 16 to 128: forward `v ⊗ s`, the butterflies, `⊗ k`; inverse the butterflies, then
/// `⊗ k ⊗ s`. The butterflies are `scheme::rotate::fwht`'s additions (lane shuffles for
/// pairs within a vector of eight, whole vectors for the others), so the bits are its bits.
/// `false`, with nothing written, without AVX-512 or for other sizes.
pub(crate) fn fwht_f64(v: &mut [f64], s: &[f64], k: f64, forward: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 && matches!(s.len(), 16 | 32 | 64 | 128) {
        assert!(v.len().is_multiple_of(s.len()));
        // SAFETY: AVX-512F was detected; every access goes through checked slices of the
        // block size (a multiple of 8).
        unsafe { x86::fwht_f64(v, s, k, forward) };
        return true;
    }
    let _ = (v, s, k, forward);
    false
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use std::arch::x86_64::*;

    /// One butterfly stage: `p` is `v` with lanes `i` and `i ^ h` swapped; the lanes set in
    /// `upper` (those with `i & h ≠ 0`) take `p − v`, the others `v + p`.
    #[inline(always)]
    unsafe fn stage(v: __m512, p: __m512, upper: __mmask16) -> __m512 {
        _mm512_mask_blend_ps(upper, _mm512_add_ps(v, p), _mm512_sub_ps(p, v))
    }

    /// One block of sixteen rotated: `BF16(fwht16(v ⊗ s) ⊗ k + 0)` as binary32 bits.
    #[inline(always)]
    pub(in crate::simd) unsafe fn rotate16(v: __m512, sv: __m512, kv: __m512) -> __m512i {
        bf16_scaled(butterflies(v, sv), kv)
    }

    /// `fwht16(v ⊗ s)` in binary32, the butterflies in the portable loop's order.
    #[inline(always)]
    unsafe fn butterflies(v: __m512, sv: __m512) -> __m512 {
        let mut v = _mm512_mul_ps(v, sv);
        // h = 1: swap neighbours; h = 2: swap pairs (within 128-bit lanes)
        v = stage(v, _mm512_permute_ps::<0xb1>(v), 0xaaaa);
        v = stage(v, _mm512_permute_ps::<0x4e>(v), 0xcccc);
        // h = 4: swap 128-bit lanes in pairs; h = 8: swap the 256-bit halves
        v = stage(v, _mm512_shuffle_f32x4::<0xb1>(v, v), 0xf0f0);
        stage(v, _mm512_shuffle_f32x4::<0x4e>(v, v), 0xff00)
    }

    /// `BF16(v ⊗ k + 0)` as binary32 bits.
    #[inline(always)]
    unsafe fn bf16_scaled(v: __m512, kv: __m512) -> __m512i {
        let v = _mm512_add_ps(_mm512_mul_ps(v, kv), _mm512_setzero_ps());
        // BF16, nearest even: (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000, NaN kept
        let b = _mm512_castps_si512(v);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(b), _mm512_set1_epi32(1));
        let r = _mm512_and_si512(
            _mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), lsb),
            _mm512_set1_epi32(0xffff_0000u32 as i32),
        );
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_blend_epi32(nan, r, b)
    }

    /// See [`super::rht16_bf16`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn rht16_bf16(x: &[f32], s: &[f32; 16], k: f32, out: &mut [f32]) {
        let sv = _mm512_loadu_ps(s.as_ptr());
        let kv = _mm512_set1_ps(k);
        for (xb, ob) in x.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
            // each load and store through a checked 16-element slice
            let r = rotate16(_mm512_loadu_ps(xb.as_ptr()), sv, kv);
            _mm512_storeu_si512(ob.as_mut_ptr().cast(), r);
        }
    }

    /// One in-vector butterfly stage of binary64: `p` is `v` with lanes `i` and `i ^ h`
    /// swapped; the lanes in `upper` take `p − v`, the others `v + p`.
    #[inline(always)]
    unsafe fn stage_pd(v: __m512d, p: __m512d, upper: __mmask8) -> __m512d {
        _mm512_mask_blend_pd(upper, _mm512_add_pd(v, p), _mm512_sub_pd(p, v))
    }

    /// See [`super::fwht_f64`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn fwht_f64(v: &mut [f64], s: &[f64], k: f64, forward: bool) {
        let n = s.len();
        let regs = n / 8;
        let kv = _mm512_set1_pd(k);
        let mut r = [_mm512_setzero_pd(); 16];
        for b in v.chunks_exact_mut(n) {
            for (j, rj) in r[..regs].iter_mut().enumerate() {
                let x = _mm512_loadu_pd(b[8 * j..8 * j + 8].as_ptr());
                *rj = if forward {
                    _mm512_mul_pd(x, _mm512_loadu_pd(s[8 * j..8 * j + 8].as_ptr()))
                } else {
                    x
                };
            }
            for rj in r[..regs].iter_mut() {
                let mut x = *rj;
                x = stage_pd(x, _mm512_permute_pd::<0x55>(x), 0xaa);
                x = stage_pd(x, _mm512_permutex_pd::<0x4e>(x), 0xcc);
                x = stage_pd(x, _mm512_shuffle_f64x2::<0x4e>(x, x), 0xf0);
                *rj = x;
            }
            let mut h = 1;
            while h < regs {
                for j in 0..regs {
                    if j & h == 0 {
                        let (a, c) = (r[j], r[j + h]);
                        r[j] = _mm512_add_pd(a, c);
                        r[j + h] = _mm512_sub_pd(a, c);
                    }
                }
                h *= 2;
            }
            for (j, rj) in r[..regs].iter().enumerate() {
                let mut x = _mm512_mul_pd(*rj, kv);
                if !forward {
                    x = _mm512_mul_pd(x, _mm512_loadu_pd(s[8 * j..8 * j + 8].as_ptr()));
                }
                _mm512_storeu_pd(b[8 * j..8 * j + 8].as_mut_ptr(), x);
            }
        }
    }

    /// See [`super::rht16_bf16_max`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn fwht16_max(x: &[f32], s: &[f32; 16]) -> u32 {
        let sv = _mm512_loadu_ps(s.as_ptr());
        let abs = _mm512_set1_epi32(0x7fff_ffff);
        let mut m = _mm512_setzero_si512();
        for xb in x.chunks_exact(16) {
            let r = _mm512_castps_si512(butterflies(_mm512_loadu_ps(xb.as_ptr()), sv));
            m = _mm512_max_epu32(m, _mm512_and_si512(r, abs));
        }
        _mm512_reduce_max_epu32(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest magnitude from the unrounded butterflies, rounded once, is the largest of
    /// the rounded rotation's magnitudes; a NaN of any payload (or one that ±Inf makes)
    /// gives a NaN.
    #[test]
    fn the_rotated_maximum_is_the_rounded_maximum() {
        let s: [f32; 16] = std::array::from_fn(|i| {
            if (0x5a3c_u32 >> i) & 1 == 1 {
                -1.0
            } else {
                1.0
            }
        });
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state
        };
        for case in 0..400 {
            let mut x: Vec<f32> = (0..16 * 64)
                .map(|_| {
                    let r = next();
                    let e = (r >> 58) as i32 - 32 + if case % 7 == 0 { 90 } else { 0 };
                    ((r >> 20) as u32 as f32 / u32::MAX as f32 - 0.5) * 2f32.powi(e)
                })
                .collect();
            match case % 5 {
                1 => x[3 + case] = f32::from_bits(0x7fff_ffff), // a NaN payload that rounds badly
                2 => x[case] = f32::INFINITY,
                3 => x[5 * case % 1024] = f32::MAX,
                _ => {}
            }
            let mut out = vec![0f32; x.len()];
            let Some(m) = rht16_bf16_max(&x, &s, 0.25) else {
                return; // no AVX-512: nothing to compare
            };
            assert!(rht16_bf16(&x, &s, 0.25, &mut out));
            let want = out.iter().map(|v| v.to_bits() & 0x7fff_ffff).max().unwrap();
            let (m, w) = (f32::from_bits(m), f32::from_bits(want));
            assert!(
                m.to_bits() == w.to_bits() || (m.is_nan() && w.is_nan()),
                "case {case}: {m:e} vs {w:e}"
            );
        }
    }
}
