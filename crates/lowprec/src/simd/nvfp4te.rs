//! The AVX-512 kernel of TransformerEngine's NVFP4 codes (`crate::block::nvfp4`, convention
//! `te`, binary32 inputs, codes and scales only), optionally after TE's 16-point random
//! Hadamard transform with BF16 output (`rht16:bf16+nvfp4:convention=te`): sixteen blocks of
//! sixteen at a time, each block one vector. Per group:
//!
//! ```text
//! v_j   = x_j                       (or rotate16(x_j): the RHT kernel's step, in registers)
//! b_j   = max |v_j|                 sixteen block maxima in one vector
//! arg   = min(b ⊗ (S ⊗ RN32(1/6)), 448)
//! e     = E4M3(arg)                 nearest even: 3 fraction bits at and above 2^−6, a
//!                                   multiple of 2^−9 below, by (arg ⊕ 2^14) ⊖ 2^14
//! m     = min(1 ⊘ (e ⊗ RN32(1/S)), FLT_MAX)
//! y     = |v_j| ⊗ m_j               its E2M1 code by the exact quarter table
//! ```
//!
//! the same binary32 operations, in the same order, as the portable path (`Ctx::te_arg`,
//! `Ctx::te_mul` and `lookup::e2m1_exact_blocks`), so the same bits; the tests compare them.

/// TE's NVFP4 codes of whole blocks of 16 (`x.len()` a multiple of 16, `codes` as long,
/// `scales` one per block) with encode scale `s_enc`, after the rotation `(signs, k)` when
/// given; `lut` is `lookup::lut_exact()`. Returns `(saturated, flushed)` as the portable
/// path counts them (zero-scale blocks flush every nonzero element), or `None`, with nothing
/// written, when the CPU has no AVX-512.
pub(crate) fn te_codes(
    x: &[f32],
    rht: Option<(&[f32; 16], f32)>,
    s_enc: f32,
    lut: &[u32; 32],
    codes: &mut [u8],
    scales: &mut [u8],
) -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        let blocks = x.len() / 16;
        assert!(x.len() == blocks * 16 && codes.len() == x.len() && scales.len() == blocks);
        // SAFETY: AVX-512F/BW/DQ were detected (`active()` never exceeds `detected()`), and
        // the lengths checked above bound every access the kernel makes.
        return Some(unsafe { x86::te_codes(x, rht, s_enc, lut, codes, scales) });
    }
    let _ = (x, rht, s_enc, lut, codes, scales);
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::quarter::{IDX_HI, IDX_LO, IDX_SAT, SHIFT};
    use super::super::rht::x86::rotate16;
    use std::arch::x86_64::*;

    /// Lane `j` of the result: the largest magnitude bits of `v[j]`'s sixteen lanes (one
    /// transposing reduction: 15 pairwise steps instead of sixteen horizontal ones).
    #[inline(always)]
    unsafe fn block_maxima(v: &[__m512i; 16]) -> __m512i {
        // (no closures here: a closure is compiled outside the kernel's target features)
        let abs = _mm512_set1_epi32(0x7fff_ffff);
        // per 128-bit lane: [v0 (0,2), v1 (0,2), v0 (1,3), v1 (1,3)] for each pair
        let mut t = [_mm512_setzero_si512(); 8];
        for p in 0..8 {
            let x = _mm512_and_si512(v[2 * p], abs);
            let y = _mm512_and_si512(v[2 * p + 1], abs);
            t[p] = _mm512_max_epu32(_mm512_unpacklo_epi32(x, y), _mm512_unpackhi_epi32(x, y));
        }
        // per 128-bit lane: [v0, v1, v2, v3] of each quadruple, over the lane's four
        let mut u = [_mm512_setzero_si512(); 4];
        for q in 0..4 {
            let (x, y) = (t[2 * q], t[2 * q + 1]);
            u[q] = _mm512_max_epu32(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
        }
        // across the 128-bit lanes: pairs of lanes, then all four
        lanes_max(lanes_max(u[0], u[1]), lanes_max(u[2], u[3]))
    }

    /// `[x₀₁, x₂₃, y₀₁, y₂₃]` in 128-bit lanes: the maxima of lanes 0 and 1 and of lanes 2
    /// and 3 of `x`, then of `y`.
    #[inline(always)]
    unsafe fn lanes_max(x: __m512i, y: __m512i) -> __m512i {
        _mm512_max_epu32(
            _mm512_shuffle_i32x4::<0b10_00_10_00>(x, y),
            _mm512_shuffle_i32x4::<0b11_01_11_01>(x, y),
        )
    }

    /// Sixteen blocks (`x`: 256 elements, `codes` 256, `scales` 16): `(saturated, flushed)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn group(
        x: *const f32,
        rot: Option<(__m512, __m512)>,
        arg_mul: __m512,
        inv_s: __m512,
        t: (__m512i, __m512i),
        codes: *mut u8,
        scales: *mut u8,
    ) -> (u64, u64) {
        let abs = _mm512_set1_epi32(0x7fff_ffff);
        let mut v = [_mm512_setzero_si512(); 16];
        for (j, vj) in v.iter_mut().enumerate() {
            let xv = _mm512_loadu_ps(x.add(16 * j));
            *vj = match rot {
                Some((sv, kv)) => rotate16(xv, sv, kv),
                None => _mm512_castps_si512(xv),
            };
        }
        // the block scales: min(b ⊗ c, 448), rounded to nearest even into E4M3
        let b = _mm512_castsi512_ps(block_maxima(&v));
        let arg = _mm512_min_ps(_mm512_mul_ps(b, arg_mul), _mm512_set1_ps(448.0));
        let ab = _mm512_castps_si512(arg);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<20>(ab), _mm512_set1_epi32(1));
        let normal = _mm512_and_si512(
            _mm512_add_epi32(_mm512_add_epi32(ab, _mm512_set1_epi32(0x7_ffff)), lsb),
            _mm512_set1_epi32(0xfff0_0000u32 as i32),
        );
        let magic = _mm512_set1_ps(16384.0);
        let sub = _mm512_sub_ps(_mm512_add_ps(arg, magic), magic);
        let small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(arg, _mm512_set1_ps(1.0 / 64.0));
        let e = _mm512_mask_blend_ps(small, _mm512_castsi512_ps(normal), sub);
        let code_n = _mm512_sub_epi32(
            _mm512_srli_epi32::<20>(_mm512_castps_si512(e)),
            _mm512_set1_epi32(120 << 3),
        );
        let code_s = _mm512_cvttps_epi32(_mm512_mul_ps(e, _mm512_set1_ps(512.0)));
        let code = _mm512_mask_blend_epi32(small, code_n, code_s);
        _mm_storeu_si128(scales.cast(), _mm512_cvtepi32_epi8(code));
        // the element multipliers min(1 ⊘ (e ⊗ RN32(1/S)), FLT_MAX)
        let m = _mm512_min_ps(
            _mm512_div_ps(_mm512_set1_ps(1.0), _mm512_mul_ps(e, inv_s)),
            _mm512_set1_ps(f32::MAX),
        );
        let zero_scale = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(e, _mm512_setzero_ps());
        let mut mul = [0f32; 16];
        _mm512_storeu_ps(mul.as_mut_ptr(), m);
        let (lo, hi) = (
            _mm512_set1_epi32(IDX_LO as i32),
            _mm512_set1_epi32(IDX_HI as i32),
        );
        let frac = _mm512_set1_epi32((1 << SHIFT) - 1);
        let sat_from = _mm512_set1_epi32((IDX_SAT << SHIFT) as i32);
        let (fifteen, sixteen, one) = (
            _mm512_set1_epi32(15),
            _mm512_set1_epi32(16),
            _mm512_set1_epi32(1),
        );
        let (mut saturated, mut flushed) = (0u64, 0u64);
        for j in 0..16 {
            let a = _mm512_and_si512(v[j], abs);
            let y = _mm512_mul_ps(_mm512_castsi512_ps(a), _mm512_set1_ps(mul[j]));
            let yb = _mm512_castps_si512(y);
            let idx = _mm512_min_epu32(_mm512_max_epu32(_mm512_srli_epi32::<SHIFT>(yb), lo), hi);
            let te = _mm512_permutex2var_epi32(t.0, idx, t.1);
            // one less at an exact quarter start whose midpoint rounds down
            let start = _mm512_testn_epi32_mask(yb, frac);
            let down = _mm512_mask_test_epi32_mask(start, te, sixteen);
            let low = _mm512_and_si512(te, fifteen);
            let mag = _mm512_mask_sub_epi32(low, down, low, one);
            // mag | (v >> 28 & 8)
            let c = _mm512_ternarylogic_epi32::<0xf8>(
                mag,
                _mm512_srli_epi32::<28>(v[j]),
                _mm512_set1_epi32(8),
            );
            _mm_storeu_si128(codes.add(16 * j).cast(), _mm512_cvtepi32_epi8(c));
            saturated += u64::from(_mm512_cmpge_epu32_mask(yb, sat_from).count_ones());
            let nonzero = _mm512_test_epi32_mask(a, a);
            let lost = if zero_scale & (1 << j) != 0 {
                nonzero
            } else {
                _mm512_mask_testn_epi32_mask(nonzero, mag, mag)
            };
            flushed += u64::from(lost.count_ones());
        }
        (saturated, flushed)
    }

    /// See [`super::te_codes`].
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
    pub(super) unsafe fn te_codes(
        x: &[f32],
        rht: Option<(&[f32; 16], f32)>,
        s_enc: f32,
        lut: &[u32; 32],
        codes: &mut [u8],
        scales: &mut [u8],
    ) -> (u64, u64) {
        let rot = rht.map(|(s, k)| (_mm512_loadu_ps(s.as_ptr()), _mm512_set1_ps(k)));
        let arg_mul = _mm512_set1_ps(s_enc * (1.0f32 / 6.0f32));
        let inv_s = _mm512_set1_ps(1.0f32 / s_enc);
        let t = (
            _mm512_loadu_si512(lut.as_ptr().cast()),
            _mm512_loadu_si512(lut.as_ptr().add(16).cast()),
        );
        let (mut sat, mut fl) = (0u64, 0u64);
        let whole = x.len() / 256 * 256;
        for ((xg, cg), sg) in x[..whole]
            .chunks_exact(256)
            .zip(codes.chunks_exact_mut(256))
            .zip(scales.chunks_exact_mut(16))
        {
            let (s, f) = group(
                xg.as_ptr(),
                rot,
                arg_mul,
                inv_s,
                t,
                cg.as_mut_ptr(),
                sg.as_mut_ptr(),
            );
            sat += s;
            fl += f;
        }
        if whole < x.len() {
            // the last blocks through zero-padded buffers (zero elements count nothing)
            let rest = x.len() - whole;
            let (mut xb, mut cb, mut sb) = ([0f32; 256], [0u8; 256], [0u8; 16]);
            xb[..rest].copy_from_slice(&x[whole..]);
            let (s, f) = group(
                xb.as_ptr(),
                rot,
                arg_mul,
                inv_s,
                t,
                cb.as_mut_ptr(),
                sb.as_mut_ptr(),
            );
            codes[whole..].copy_from_slice(&cb[..rest]);
            scales[whole / 16..].copy_from_slice(&sb[..rest / 16]);
            sat += s;
            fl += f;
        }
        (sat, fl)
    }
}
