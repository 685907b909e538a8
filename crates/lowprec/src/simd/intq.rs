//! The AVX2 kernel of integer quantization's binary32 lane step (`crate::quant`'s
//! `group_lanes`, codes of at most 8 bits, no values): eight elements per vector, the same
//! binary32 operations in the same order as the portable step, so the same bits (the tests
//! of `crate::quant` compare them):
//!
//! ```text
//! y    = x ⊗ r                          r = RN32(1 / scale)
//! t    = (y ⊕ M) ⊖ M                    M = 1.5 · 2^23: rint(y), ties to even
//! near = ||y ⊖ t| ⊖ ½| ≤ |y| ⊗ 2^−21     y too close to a half-integer to trust t
//! rr   = t ⊕ zero,  qc = clamp(rr, lo, hi)  (rr < lo → lo, rr > hi → hi)
//! code = (bits(qc ⊕ M) − bits(M)) & mask
//! ```
//!
//! counting `qc ≠ rr` (clipped) and `qc = zero ∧ x ≠ 0` (flushed) in 32-bit lanes, and
//! whether any element was `near` (the caller then redoes the piece by division).

/// The constants of one group.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntLane {
    /// `RN32(1 / scale)`.
    pub r: f32,
    /// The zero point.
    pub zero: f32,
    /// The least and greatest integers.
    pub lo: f32,
    /// See `lo`.
    pub hi: f32,
    /// `2^bits − 1`.
    pub mask: u32,
}

/// What [`int_codes`] did with a piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntPiece {
    /// Elements whose integer was clamped.
    pub clipped: u32,
    /// Nonzero elements whose integer is the zero point.
    pub flushed: u32,
    /// Whether an element lay near a half-integer (the codes are then not to be used).
    pub near: bool,
}

/// The byte codes of `x` (a multiple of 8 elements, at most 2^24) into `q` (as long) with
/// the group constants `k`; `None`, with nothing written, when the CPU lacks AVX2.
pub(crate) fn int_codes(x: &[f32], q: &mut [u8], k: &IntLane) -> Option<IntPiece> {
    assert!(
        x.len() == q.len() && x.len().is_multiple_of(8) && x.len() <= 1 << 24,
        "internal: int_codes lengths"
    );
    #[cfg(target_arch = "x86_64")]
    if super::active() >= super::Level::Avx2 {
        // SAFETY: the AVX2 level was detected (`active()` never exceeds `detected()`), and
        // the kernel reads `x` and writes `q` only through checked slices of eight.
        return Some(unsafe { x86::int_codes(x, q, k) });
    }
    let _ = (x, q, k);
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{IntLane, IntPiece};
    use crate::simd::cast8::x86::{store_bytes32, sum_u32_lanes};
    use std::arch::x86_64::*;

    /// The constants in lanes.
    #[derive(Clone, Copy)]
    struct Consts {
        r: __m256,
        magic: __m256,
        magic_bits: __m256i,
        half: __m256,
        tol: __m256,
        abs: __m256,
        zero: __m256,
        lo: __m256,
        hi: __m256,
        mask: __m256i,
    }

    /// Eight codes (in 32-bit lanes) of the eight elements at `x`; their clipped and
    /// flushed masks subtracted from `cl`, `fl` (a true mask is −1), near ORed into `near`.
    #[inline(always)]
    unsafe fn eight(
        c: &Consts,
        x: &[f32],
        cl: &mut __m256i,
        fl: &mut __m256i,
        near: &mut __m256,
    ) -> __m256i {
        let xv = _mm256_loadu_ps(x[..8].as_ptr());
        let y = _mm256_mul_ps(xv, c.r);
        let t = _mm256_sub_ps(_mm256_add_ps(y, c.magic), c.magic);
        let d = _mm256_and_ps(
            _mm256_sub_ps(_mm256_and_ps(_mm256_sub_ps(y, t), c.abs), c.half),
            c.abs,
        );
        let bound = _mm256_mul_ps(_mm256_and_ps(y, c.abs), c.tol);
        *near = _mm256_or_ps(*near, _mm256_cmp_ps::<_CMP_LE_OQ>(d, bound));
        let rr = _mm256_add_ps(t, c.zero);
        let below = _mm256_cmp_ps::<_CMP_LT_OQ>(rr, c.lo);
        let above = _mm256_cmp_ps::<_CMP_GT_OQ>(rr, c.hi);
        let qc = _mm256_blendv_ps(_mm256_blendv_ps(rr, c.lo, below), c.hi, above);
        let clipped = _mm256_cmp_ps::<_CMP_NEQ_UQ>(qc, rr);
        let flushed = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_EQ_OQ>(qc, c.zero),
            _mm256_cmp_ps::<_CMP_NEQ_UQ>(xv, _mm256_setzero_ps()),
        );
        *cl = _mm256_sub_epi32(*cl, _mm256_castps_si256(clipped));
        *fl = _mm256_sub_epi32(*fl, _mm256_castps_si256(flushed));
        let code = _mm256_sub_epi32(
            _mm256_castps_si256(_mm256_add_ps(qc, c.magic)),
            c.magic_bits,
        );
        _mm256_and_si256(code, c.mask)
    }

    /// See [`super::int_codes`]. Four vectors' codes per 32-byte store, then eight at a
    /// time. No closures: one that is not inlined is compiled without AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn int_codes(x: &[f32], q: &mut [u8], k: &IntLane) -> IntPiece {
        let magic = 1.5f32 * (1u32 << 23) as f32;
        let c = Consts {
            r: _mm256_set1_ps(k.r),
            magic: _mm256_set1_ps(magic),
            magic_bits: _mm256_set1_epi32(magic.to_bits() as i32),
            half: _mm256_set1_ps(0.5),
            tol: _mm256_set1_ps(f32::from_bits((127 - 21) << 23)),
            abs: _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff)),
            zero: _mm256_set1_ps(k.zero),
            lo: _mm256_set1_ps(k.lo),
            hi: _mm256_set1_ps(k.hi),
            mask: _mm256_set1_epi32(k.mask as i32),
        };
        let (mut cl, mut fl) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let mut near = _mm256_setzero_ps();
        let whole = x.len() / 32 * 32;
        for (xs, qs) in x[..whole]
            .chunks_exact(32)
            .zip(q[..whole].chunks_exact_mut(32))
        {
            let v0 = eight(&c, &xs[0..], &mut cl, &mut fl, &mut near);
            let v1 = eight(&c, &xs[8..], &mut cl, &mut fl, &mut near);
            let v2 = eight(&c, &xs[16..], &mut cl, &mut fl, &mut near);
            let v3 = eight(&c, &xs[24..], &mut cl, &mut fl, &mut near);
            // (codes below 256: the unsigned packs keep them)
            store_bytes32(qs.as_mut_ptr(), [v0, v1, v2, v3]);
        }
        for (xs, qs) in x[whole..]
            .chunks_exact(8)
            .zip(q[whole..].chunks_exact_mut(8))
        {
            let v = eight(&c, xs, &mut cl, &mut fl, &mut near);
            let w = _mm256_packus_epi32(v, v);
            let b = _mm256_packus_epi16(w, w);
            // bytes 0–3 of each half
            let lo = _mm256_castsi256_si128(b);
            let hi = _mm256_extracti128_si256::<1>(b);
            let eight = _mm_unpacklo_epi32(lo, hi);
            _mm_storel_epi64(qs.as_mut_ptr().cast(), eight);
        }
        IntPiece {
            clipped: sum_u32_lanes(cl) as u32,
            flushed: sum_u32_lanes(fl) as u32,
            near: _mm256_movemask_ps(near) != 0,
        }
    }
}
