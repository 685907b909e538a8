//! The vector kernels of the E2M1 lookup steps (`crate::block::lookup`), NVFP4's and
//! MXFP4's. AVX-512: one block of 16 binary32 elements per vector, the quarter-binade table
//! in two registers (`vpermt2d`), each block's value table broadcast from memory
//! (`vpermps`), the counts in mask registers. AVX2: a block as two vectors of eight, the
//! table as bytes in two registers (`vpshufb` on the index's low four bits, a blend on its
//! fifth), the counts by `movmskps` and `popcnt`. The same IEEE product and the same
//! integer operations (unsigned comparisons included) as the portable loop, so the same
//! bits.

use super::quarter::{Tally, IDX_HI, IDX_LO, IDX_SAT, IDX_ZERO, SHIFT, TOL};

/// [`crate::block::lookup::e2m1_blocks`] when the CPU has AVX-512 or AVX2 (`None`
/// otherwise, with nothing written). The caller has checked the lengths.
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
    {
        let level = super::active();
        if level == super::Level::Portable {
            return None;
        }
        let blocks = x.len() / 16;
        assert!(
            x.len() == blocks * 16
                && scales.len() == blocks
                && codes.len() == x.len()
                && flagged.len() >= blocks
                && blocks <= 1 << 16
                && (values.is_empty() || (values.len() == x.len() && vtab.len() == 256))
        );
        // SAFETY: the level's features were detected (`active()` never exceeds
        // `detected()`), and the lengths checked above bound every access the kernels make.
        return Some(unsafe {
            match level {
                super::Level::Avx512 => {
                    x86::e2m1_lookup(lut, x, scales, recip, vtab, codes, values, flagged)
                }
                _ => avx2::e2m1_lookup(lut, x, scales, recip, vtab, codes, values, flagged),
            }
        });
    }
    #[allow(unreachable_code)]
    {
        let _ = (lut, x, scales, recip, vtab, codes, values, flagged);
        None
    }
}

/// [`crate::block::lookup::e2m1_exact_blocks`] when the CPU has AVX-512 or AVX2 (`None`
/// otherwise, with nothing written). The caller has checked the lengths.
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
    {
        let level = super::active();
        if level == super::Level::Portable {
            return None;
        }
        assert!(
            b.is_multiple_of(16)
                && x.len() == inv.len() * b
                && codes.len() == x.len()
                && (values.is_empty() || (values.len() == x.len() && up.len() == inv.len()))
        );
        // SAFETY: the level's features were detected, and the lengths checked above bound
        // every access the kernels make.
        return Some(unsafe {
            match level {
                super::Level::Avx512 => x86::e2m1_exact(lut, x, b, inv, up, codes, values),
                _ => avx2::e2m1_exact(lut, x, b, inv, up, codes, values),
            }
        });
    }
    #[allow(unreachable_code)]
    {
        let _ = (lut, x, b, inv, up, codes, values);
        None
    }
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    /// The quarter table as bytes (every entry is below 256), entries 0–15 and 16–31, each
    /// in both 128-bit halves (`vpshufb` looks up within a half).
    #[inline(always)]
    unsafe fn table(lut: &[u32; 32]) -> (__m256i, __m256i) {
        let half = |o: usize| -> __m256i {
            let b: [u8; 16] = std::array::from_fn(|i| lut[o + i] as u8);
            let v = _mm_loadu_si128(b.as_ptr().cast());
            _mm256_set_m128i(v, v)
        };
        (half(0), half(16))
    }

    /// `x`, `|x|` and the bits of `y = |x| ⊗ f` for eight elements at `at`.
    #[inline(always)]
    unsafe fn scaled(at: *const f32, f: __m256) -> (__m256i, __m256i, __m256i) {
        let xv = _mm256_loadu_si256(at.cast());
        let ab = _mm256_and_si256(xv, _mm256_set1_epi32(0x7fff_ffff));
        let yb = _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(ab), f));
        (xv, ab, yb)
    }

    /// Unsigned `a ≥ b` in every lane, as a lane mask.
    #[inline(always)]
    unsafe fn ge_u32(a: __m256i, b: __m256i) -> __m256i {
        _mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a)
    }

    /// The number of lanes of a lane mask that are set.
    #[inline(always)]
    unsafe fn count(m: __m256i) -> u64 {
        u64::from(_mm256_movemask_ps(_mm256_castsi256_ps(m)).count_ones())
    }

    /// The table entry of `y`'s clamped quarter index (`y` with bits `yb`).
    #[inline(always)]
    unsafe fn quarter(t: (__m256i, __m256i), yb: __m256i) -> __m256i {
        let (lo, hi) = (
            _mm256_set1_epi32(IDX_LO as i32),
            _mm256_set1_epi32(IDX_HI as i32),
        );
        let idx = _mm256_min_epu32(
            _mm256_max_epu32(_mm256_srli_epi32::<{ SHIFT as i32 }>(yb), lo),
            hi,
        );
        // idx mod 32 in the low byte of each lane (the other bytes look up entry 0, masked)
        let i = _mm256_and_si256(idx, _mm256_set1_epi32(31));
        let upper = _mm256_cmpgt_epi32(i, _mm256_set1_epi32(15));
        let e = _mm256_blendv_epi8(
            _mm256_shuffle_epi8(t.0, i),
            _mm256_shuffle_epi8(t.1, i),
            upper,
        );
        _mm256_and_si256(e, _mm256_set1_epi32(0xff))
    }

    /// Store the sixteen codes `mag | 8·sign(x)` of two vectors at `at`.
    #[inline(always)]
    unsafe fn store_codes(at: *mut u8, m: [__m256i; 2], xv: [__m256i; 2]) {
        let eight = _mm256_set1_epi32(8);
        let code = |m: __m256i, x: __m256i| {
            _mm256_or_si256(m, _mm256_and_si256(_mm256_srli_epi32::<28>(x), eight))
        };
        // dwords → words → bytes (within halves), then the four byte quads in order
        let w = _mm256_packus_epi32(code(m[0], xv[0]), code(m[1], xv[1]));
        let b = _mm256_packus_epi16(w, w);
        let o = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0));
        _mm_storeu_si128(at.cast(), _mm256_castsi256_si128(o));
    }

    /// Store the eight values `v` with the signs of `x` at `at`.
    #[inline(always)]
    unsafe fn store_values(at: *mut f32, v: __m256, xv: __m256i) {
        let s = _mm256_and_si256(xv, _mm256_set1_epi32(i32::MIN));
        _mm256_storeu_si256(at.cast(), _mm256_or_si256(_mm256_castps_si256(v), s));
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
        let frac = _mm256_set1_epi32((1 << SHIFT) - 1);
        let tol = _mm256_set1_epi32(TOL as i32);
        let tol2 = _mm256_set1_epi32(2 * TOL as i32);
        let near_from = _mm256_set1_epi32((IDX_LO << SHIFT) as i32);
        let sat_from = _mm256_set1_epi32((IDX_SAT << SHIFT) as i32);
        let zero_below = _mm256_set1_epi32((IDX_ZERO << SHIFT) as i32);
        let zero = _mm256_setzero_si256();
        let (mut saturated, mut flushed, mut n) = (0u64, 0u64, 0usize);
        for (k, &sk) in scales.iter().enumerate() {
            let f = _mm256_set1_ps(recip[sk as usize]);
            let at = x.as_ptr().add(16 * k);
            let (x0, a0, y0) = scaled(at, f);
            let (x1, a1, y1) = scaled(at.add(8), f);
            let (m0, m1) = (quarter(t, y0), quarter(t, y1));
            store_codes(codes.as_mut_ptr().add(16 * k), [m0, m1], [x0, x1]);
            if VALUES {
                let vt = _mm256_loadu_ps(vtab.get_unchecked(sk as usize).as_ptr());
                let v = values.as_mut_ptr().add(16 * k);
                store_values(v, _mm256_permutevar8x32_ps(vt, m0), x0);
                store_values(v.add(8), _mm256_permutevar8x32_ps(vt, m1), x1);
            }
            // near: y ≥ 499·2^21 (unsigned) and (y + TOL) mod 2^21 < 2·TOL
            let near = |y: __m256i| {
                let off = _mm256_and_si256(_mm256_add_epi32(y, tol), frac);
                _mm256_and_si256(ge_u32(y, near_from), _mm256_cmpgt_epi32(tol2, off))
            };
            if _mm256_testz_si256(_mm256_or_si256(near(y0), near(y1)), _mm256_set1_epi32(-1)) == 0 {
                *flagged.get_unchecked_mut(n) = k as u16;
                n += 1;
                continue;
            }
            saturated += count(ge_u32(y0, sat_from)) + count(ge_u32(y1, sat_from));
            // flushed: x ≠ 0 and y < 500·2^21 (unsigned)
            let fl = |a: __m256i, y: __m256i| {
                _mm256_andnot_si256(
                    _mm256_or_si256(_mm256_cmpeq_epi32(a, zero), ge_u32(y, zero_below)),
                    _mm256_set1_epi32(-1),
                )
            };
            flushed += count(fl(a0, y0)) + count(fl(a1, y1));
        }
        Tally {
            saturated,
            flushed,
            flagged: n,
        }
    }

    /// See [`super::e2m1_lookup`].
    #[target_feature(enable = "avx2,popcnt")]
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
        let e2m1 = _mm256_setr_ps(0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);
        let (fifteen, sixteen) = (_mm256_set1_epi32(15), _mm256_set1_epi32(16));
        let frac = _mm256_set1_epi32((1 << SHIFT) - 1);
        let sat_from = _mm256_set1_epi32((IDX_SAT << SHIFT) as i32);
        let zero = _mm256_setzero_si256();
        // the magnitude code: one less at an exact quarter start whose midpoint rounds down
        let mag = |e: __m256i, y: __m256i| {
            let start = _mm256_cmpeq_epi32(_mm256_and_si256(y, frac), zero);
            let down = _mm256_and_si256(
                start,
                _mm256_cmpeq_epi32(_mm256_and_si256(e, sixteen), sixteen),
            );
            _mm256_add_epi32(_mm256_and_si256(e, fifteen), down)
        };
        let (mut saturated, mut flushed) = (0u64, 0u64);
        for (k, &f) in inv.iter().enumerate() {
            let f = _mm256_set1_ps(f);
            for j in (k * b..(k + 1) * b).step_by(16) {
                let at = x.as_ptr().add(j);
                let (x0, a0, y0) = scaled(at, f);
                let (x1, a1, y1) = scaled(at.add(8), f);
                let m0 = mag(quarter(t, y0), y0);
                let m1 = mag(quarter(t, y1), y1);
                store_codes(codes.as_mut_ptr().add(j), [m0, m1], [x0, x1]);
                if VALUES {
                    let u = _mm256_set1_ps(*up.get_unchecked(k));
                    let v = values.as_mut_ptr().add(j);
                    let q0 = _mm256_mul_ps(_mm256_permutevar8x32_ps(e2m1, m0), u);
                    let q1 = _mm256_mul_ps(_mm256_permutevar8x32_ps(e2m1, m1), u);
                    store_values(v, q0, x0);
                    store_values(v.add(8), q1, x1);
                }
                saturated += count(ge_u32(y0, sat_from)) + count(ge_u32(y1, sat_from));
                // flushed: x ≠ 0 and a zero code
                let fl = |a: __m256i, m: __m256i| {
                    _mm256_andnot_si256(_mm256_cmpeq_epi32(a, zero), _mm256_cmpeq_epi32(m, zero))
                };
                flushed += count(fl(a0, m0)) + count(fl(a1, m1));
            }
        }
        (saturated, flushed)
    }

    /// See [`super::e2m1_exact`].
    #[target_feature(enable = "avx2,popcnt")]
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
