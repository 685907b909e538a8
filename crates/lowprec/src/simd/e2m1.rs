//! The AVX-512 kernel of NVFP4's E2M1 lookup step (`crate::block::lookup`): one block of
//! 16 binary32 elements per vector, the quarter-binade table in two registers
//! (`vpermt2d`), each block's value table broadcast from memory (`vpermps`), the counts in
//! mask registers. The same IEEE product and the same integer operations as the portable
//! loop, so the same bits.

use super::quarter::{Tally, IDX_HI, IDX_LO, IDX_SAT, IDX_ZERO, SHIFT, TOL};

/// [`crate::block::lookup::e2m1_blocks`] when the CPU has AVX-512 (`None` otherwise, with
/// nothing written). The caller has checked the lengths.
#[allow(clippy::too_many_arguments)]
pub(crate) fn e2m1_lookup(
    lut: &[u32; 32],
    x: &[f32],
    scales: &[u8],
    recip: &[f32; 256],
    vtab: &[[f32; 8]],
    codes: &mut [u8],
    values: &mut [f32],
    flagged: &mut [u16],
) -> Option<Tally> {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        let blocks = x.len() / 16;
        assert!(
            x.len() == blocks * 16
                && scales.len() == blocks
                && codes.len() == x.len()
                && flagged.len() >= blocks
                && blocks <= 1 << 16
                && (values.is_empty() || (values.len() == x.len() && vtab.len() == 256))
        );
        // SAFETY: AVX-512F/DQ were detected (`active()` never exceeds `detected()`), and
        // the lengths checked above bound every access the kernel makes.
        return Some(unsafe {
            x86::e2m1_lookup(lut, x, scales, recip, vtab, codes, values, flagged)
        });
    }
    let _ = (lut, x, scales, recip, vtab, codes, values, flagged);
    None
}

/// [`crate::block::lookup::e2m1_exact_blocks`] when the CPU has AVX-512 (`None` otherwise,
/// with nothing written). The caller has checked the lengths.
pub(crate) fn e2m1_exact(
    lut: &[u32; 32],
    x: &[f32],
    b: usize,
    inv: &[f32],
    up: &[f32],
    codes: &mut [u8],
    values: &mut [f32],
) -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    if super::active() == super::Level::Avx512 {
        assert!(
            b.is_multiple_of(16)
                && x.len() == inv.len() * b
                && codes.len() == x.len()
                && (values.is_empty() || (values.len() == x.len() && up.len() == inv.len()))
        );
        // SAFETY: AVX-512F/DQ were detected, and the lengths checked above bound every
        // access the kernel makes.
        return Some(unsafe { x86::e2m1_exact(lut, x, b, inv, up, codes, values) });
    }
    let _ = (lut, x, b, inv, up, codes, values);
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    /// The quarter table, entries 0–15 and 16–31.
    #[inline(always)]
    unsafe fn table(lut: &[u32; 32]) -> (__m512i, __m512i) {
        (
            _mm512_loadu_si512(lut.as_ptr().cast()),
            _mm512_loadu_si512(lut.as_ptr().add(16).cast()),
        )
    }

    /// `|x|` and the bits of `y = |x| ⊗ f` for sixteen elements at `at`.
    #[inline(always)]
    unsafe fn scaled(at: *const f32, f: __m512) -> (__m512i, __m512i, __m512i) {
        let xv = _mm512_loadu_si512(at.cast());
        let ab = _mm512_and_si512(xv, _mm512_set1_epi32(0x7fff_ffff));
        let yb = _mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(ab), f));
        (xv, ab, yb)
    }

    /// The table entry of `y`'s clamped quarter index (`y` with bits `yb`).
    #[inline(always)]
    unsafe fn quarter(t: (__m512i, __m512i), yb: __m512i) -> __m512i {
        let (lo, hi) = (
            _mm512_set1_epi32(IDX_LO as i32),
            _mm512_set1_epi32(IDX_HI as i32),
        );
        let idx = _mm512_min_epu32(_mm512_max_epu32(_mm512_srli_epi32::<SHIFT>(yb), lo), hi);
        _mm512_permutex2var_epi32(t.0, idx, t.1)
    }

    /// Store the sixteen codes `mag | 8·sign(x)` at `at`.
    #[inline(always)]
    unsafe fn store_codes(at: *mut u8, mag: __m512i, xv: __m512i) {
        // mag | (x >> 28 & 8)
        let code = _mm512_ternarylogic_epi32::<0xf8>(
            mag,
            _mm512_srli_epi32::<28>(xv),
            _mm512_set1_epi32(8),
        );
        _mm_storeu_si128(at.cast(), _mm512_cvtepi32_epi8(code));
    }

    /// Store the sixteen values `v` with the signs of `x` at `at`.
    #[inline(always)]
    unsafe fn store_values(at: *mut f32, v: __m512, xv: __m512i) {
        // v | (x & sign)
        let v = _mm512_ternarylogic_epi32::<0xf8>(
            _mm512_castps_si512(v),
            xv,
            _mm512_set1_epi32(i32::MIN),
        );
        _mm512_storeu_si512(at.cast(), v);
    }

    /// See [`super::e2m1_lookup`]; `VALUES` writes the values.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blocks<const VALUES: bool>(
        lut: &[u32; 32],
        x: &[f32],
        scales: &[u8],
        recip: &[f32; 256],
        vtab: &[[f32; 8]],
        codes: &mut [u8],
        values: &mut [f32],
        flagged: &mut [u16],
    ) -> Tally {
        let t = table(lut);
        let frac = _mm512_set1_epi32((1 << SHIFT) - 1);
        let (tol, tol2) = (
            _mm512_set1_epi32(TOL as i32),
            _mm512_set1_epi32(2 * TOL as i32),
        );
        let near_from = _mm512_set1_epi32((IDX_LO << SHIFT) as i32);
        let sat_from = _mm512_set1_epi32((IDX_SAT << SHIFT) as i32);
        let zero_below = _mm512_set1_epi32((IDX_ZERO << SHIFT) as i32);
        let (mut saturated, mut flushed, mut n) = (0u64, 0u64, 0usize);
        for (k, &sk) in scales.iter().enumerate() {
            let f = _mm512_set1_ps(recip[sk as usize]);
            let (xv, ab, yb) = scaled(x.as_ptr().add(16 * k), f);
            let mag = quarter(t, yb);
            store_codes(codes.as_mut_ptr().add(16 * k), mag, xv);
            if VALUES {
                let vt = _mm512_broadcast_f32x8(_mm256_loadu_ps(
                    vtab.get_unchecked(sk as usize).as_ptr(),
                ));
                let v = _mm512_permutexvar_ps(mag, vt);
                store_values(values.as_mut_ptr().add(16 * k), v, xv);
            }
            let off = _mm512_and_si512(_mm512_add_epi32(yb, tol), frac);
            let near =
                _mm512_mask_cmplt_epu32_mask(_mm512_cmpge_epu32_mask(yb, near_from), off, tol2);
            if near != 0 {
                *flagged.get_unchecked_mut(n) = k as u16;
                n += 1;
                continue;
            }
            saturated += u64::from(_mm512_cmpge_epu32_mask(yb, sat_from).count_ones());
            let nonzero = _mm512_test_epi32_mask(ab, ab);
            flushed +=
                u64::from(_mm512_mask_cmplt_epu32_mask(nonzero, yb, zero_below).count_ones());
        }
        Tally {
            saturated,
            flushed,
            flagged: n,
        }
    }

    /// See [`super::e2m1_lookup`].
    #[target_feature(enable = "avx512f,avx512dq,avx512vl,popcnt")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn e2m1_lookup(
        lut: &[u32; 32],
        x: &[f32],
        scales: &[u8],
        recip: &[f32; 256],
        vtab: &[[f32; 8]],
        codes: &mut [u8],
        values: &mut [f32],
        flagged: &mut [u16],
    ) -> Tally {
        if values.is_empty() {
            blocks::<false>(lut, x, scales, recip, vtab, codes, values, flagged)
        } else {
            blocks::<true>(lut, x, scales, recip, vtab, codes, values, flagged)
        }
    }

    /// See [`super::e2m1_exact`]; `VALUES` writes the values.
    #[inline(always)]
    unsafe fn exact<const VALUES: bool>(
        lut: &[u32; 32],
        x: &[f32],
        b: usize,
        inv: &[f32],
        up: &[f32],
        codes: &mut [u8],
        values: &mut [f32],
    ) -> (u64, u64) {
        let t = table(lut);
        let e2m1 = _mm512_setr_ps(
            0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
        );
        let (fifteen, sixteen, one) = (
            _mm512_set1_epi32(15),
            _mm512_set1_epi32(16),
            _mm512_set1_epi32(1),
        );
        let frac = _mm512_set1_epi32((1 << SHIFT) - 1);
        let sat_from = _mm512_set1_epi32((IDX_SAT << SHIFT) as i32);
        let (mut saturated, mut flushed) = (0u64, 0u64);
        for (k, &f) in inv.iter().enumerate() {
            let f = _mm512_set1_ps(f);
            for j in (k * b..(k + 1) * b).step_by(16) {
                let (xv, ab, yb) = scaled(x.as_ptr().add(j), f);
                let e = quarter(t, yb);
                // one less at an exact quarter start whose midpoint rounds down
                let start = _mm512_testn_epi32_mask(yb, frac);
                let down = _mm512_mask_test_epi32_mask(start, e, sixteen);
                let low = _mm512_and_si512(e, fifteen);
                let mag = _mm512_mask_sub_epi32(low, down, low, one);
                store_codes(codes.as_mut_ptr().add(j), mag, xv);
                if VALUES {
                    let q = _mm512_permutexvar_ps(mag, e2m1);
                    let up = _mm512_set1_ps(*up.get_unchecked(k));
                    store_values(values.as_mut_ptr().add(j), _mm512_mul_ps(q, up), xv);
                }
                saturated += u64::from(_mm512_cmpge_epu32_mask(yb, sat_from).count_ones());
                let zero = _mm512_mask_testn_epi32_mask(_mm512_test_epi32_mask(ab, ab), mag, mag);
                flushed += u64::from(zero.count_ones());
            }
        }
        (saturated, flushed)
    }

    /// See [`super::e2m1_exact`].
    #[target_feature(enable = "avx512f,avx512dq,avx512vl,popcnt")]
    pub(super) unsafe fn e2m1_exact(
        lut: &[u32; 32],
        x: &[f32],
        b: usize,
        inv: &[f32],
        up: &[f32],
        codes: &mut [u8],
        values: &mut [f32],
    ) -> (u64, u64) {
        if values.is_empty() {
            exact::<false>(lut, x, b, inv, up, codes, values)
        } else {
            exact::<true>(lut, x, b, inv, up, codes, values)
        }
    }
}
