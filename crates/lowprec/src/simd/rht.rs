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
pub(crate) fn rht16_bf16_max(x: &[f32], s: &[f32; 16], k: f32) -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        assert!(x.len().is_multiple_of(16));
        // SAFETY: AVX-512F was detected; every load goes through a checked 16-element slice.
        return Some(unsafe { x86::rht16_bf16_max(x, s, k) });
    }
    let _ = (x, s, k);
    None
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
        let mut v = _mm512_mul_ps(v, sv);
        // h = 1: swap neighbours; h = 2: swap pairs (within 128-bit lanes)
        v = stage(v, _mm512_permute_ps::<0xb1>(v), 0xaaaa);
        v = stage(v, _mm512_permute_ps::<0x4e>(v), 0xcccc);
        // h = 4: swap 128-bit lanes in pairs; h = 8: swap the 256-bit halves
        v = stage(v, _mm512_shuffle_f32x4::<0xb1>(v, v), 0xf0f0);
        v = stage(v, _mm512_shuffle_f32x4::<0x4e>(v, v), 0xff00);
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

    /// See [`super::rht16_bf16_max`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn rht16_bf16_max(x: &[f32], s: &[f32; 16], k: f32) -> u32 {
        let sv = _mm512_loadu_ps(s.as_ptr());
        let kv = _mm512_set1_ps(k);
        let abs = _mm512_set1_epi32(0x7fff_ffff);
        let mut m = _mm512_setzero_si512();
        for xb in x.chunks_exact(16) {
            let r = rotate16(_mm512_loadu_ps(xb.as_ptr()), sv, kv);
            m = _mm512_max_epu32(m, _mm512_and_si512(r, abs));
        }
        _mm512_reduce_max_epu32(m)
    }
}
