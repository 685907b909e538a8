//! The vector kernels of the E2M1 lookup steps (`crate::block::lookup`), NVFP4's and
//! MXFP4's. AVX-512: one block of 16 binary32 elements per vector, the quarter-binade table
//! in two registers (`vpermt2d`), each block's value table broadcast from memory
//! (`vpermps`), the counts in mask registers. AVX2: a block as two vectors of eight, two
//! blocks' codes in one store, the table as bytes in two registers (`vpshufb` on the low
//! four bits of the clamped index less `IDX_LO − 1`, a blend on the fifth), the counts of a
//! block by one byte mask and `popcnt` (the exact-scale step: in 32-bit lane counters), and
//! the tests on the index itself (`idx ≥ IDX_SAT`, not
//! `y ≥ IDX_SAT·2^SHIFT`: the same test, since the index is `⌊y / 2^SHIFT⌋` clamped). The
//! same IEEE product and the same tests as the portable loop, so the same bits; the tests
//! of `crate::block::lookup` compare all three.

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
    use crate::simd::cast8::x86::{store_bytes32, sum_u32_lanes};
    use std::arch::x86_64::*;

    /// The lanes' quarter index is `j = clamp(idx, BASE, IDX_HI) − BASE` (0–22): one below
    /// `IDX_LO`, so that `j = 0` is `y < IDX_LO·2^SHIFT` (outside the window of "near").
    const BASE: u32 = IDX_LO - 1;

    /// The quarter table as bytes (every entry is below 256) by `j`: entries 0–15 and
    /// 16–31, each in both 128-bit halves (`vpshufb` looks up within a half). Entries 0
    /// and 1 (every `y` below 1/4) are 0 in both tables (the tests of `crate::block::lookup`
    /// check it), which [`entry`] relies on.
    #[inline(always)]
    unsafe fn table(lut: &[u32; 32]) -> (__m256i, __m256i) {
        debug_assert_eq!(lut[(IDX_LO % 32) as usize], 0);
        let half = |o: u32| -> __m256i {
            let b: [u8; 16] = std::array::from_fn(|j| {
                lut[((BASE + o + j as u32).clamp(IDX_LO, IDX_HI) % 32) as usize] as u8
            });
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

    /// The quarter index `j` (see [`BASE`]) of eight `y` with bits `yb`. The upper 16 bits
    /// of every `⌊y / 2^SHIFT⌋` are zero (it is below 2^11), so that the 16-bit saturating
    /// subtraction is `max(⌊y / 2^SHIFT⌋ − BASE, 0)` in each lane.
    #[inline(always)]
    unsafe fn index(yb: __m256i) -> __m256i {
        _mm256_min_epi32(
            _mm256_subs_epu16(
                _mm256_srli_epi32::<{ SHIFT as i32 }>(yb),
                _mm256_set1_epi32(BASE as i32),
            ),
            _mm256_set1_epi32((IDX_HI - BASE) as i32),
        )
    }

    /// The table entry at every index `j` (from [`index`]). An index sits in its lane's low
    /// byte, the other three bytes zero: they look up entry 0 of the low table, which is 0;
    /// the high table is taken where bit 4 of `j` is set, moved to the byte's top bit by a
    /// shift (`j < 32`: the shift leaves the other bytes zero).
    #[inline(always)]
    unsafe fn entry(t: (__m256i, __m256i), j: __m256i) -> __m256i {
        _mm256_blendv_epi8(
            _mm256_shuffle_epi8(t.0, j),
            _mm256_shuffle_epi8(t.1, j),
            _mm256_slli_epi32::<3>(j),
        )
    }

    /// The codes `mag | 8·sign(x)` of eight elements, in 32-bit lanes.
    #[inline(always)]
    unsafe fn code(m: __m256i, x: __m256i) -> __m256i {
        let sign = _mm256_andnot_si256(_mm256_set1_epi32(0x7fff_ffff), x);
        _mm256_or_si256(m, _mm256_srli_epi32::<28>(sign))
    }

    /// Store the sixteen codes of two vectors of codes at `at`.
    #[inline(always)]
    unsafe fn store16(at: *mut u8, c: [__m256i; 2]) {
        // dwords → words → bytes (within halves), then the four byte quads in order
        let w = _mm256_packus_epi32(c[0], c[1]);
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

    /// What the lookup step makes of eight elements: the inputs' bits, the magnitude
    /// codes, and three lane masks (near a quarter start, saturated, flushed).
    #[derive(Clone, Copy)]
    struct Eight {
        x: __m256i,
        m: __m256i,
        near: __m256i,
        sat: __m256i,
        flushed: __m256i,
    }

    /// The lookup step of eight elements at `at` with the factor `f` (table `t`).
    #[inline(always)]
    unsafe fn eight(t: (__m256i, __m256i), at: *const f32, f: __m256) -> Eight {
        let (x, ab, yb) = scaled(at, f);
        let j = index(yb);
        let zero = _mm256_setzero_si256();
        // near: y ≥ IDX_LO·2^SHIFT (j ≠ 0) and (y + TOL) mod 2^SHIFT < 2·TOL
        let off = _mm256_and_si256(
            _mm256_add_epi32(yb, _mm256_set1_epi32(TOL as i32)),
            _mm256_set1_epi32((1 << SHIFT) - 1),
        );
        let near = _mm256_andnot_si256(
            _mm256_cmpeq_epi32(j, zero),
            _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * TOL as i32), off),
        );
        // saturated: the quarter index at or above IDX_SAT; flushed: x ≠ 0 and the index
        // below IDX_ZERO (every lane is small: the signed comparisons are the unsigned ones)
        let sat = _mm256_cmpgt_epi32(j, _mm256_set1_epi32((IDX_SAT - BASE) as i32 - 1));
        let flushed = _mm256_andnot_si256(
            _mm256_cmpeq_epi32(ab, zero),
            _mm256_cmpgt_epi32(_mm256_set1_epi32((IDX_ZERO - BASE) as i32), j),
        );
        Eight {
            x,
            m: entry(t, j),
            near,
            sat,
            flushed,
        }
    }

    /// The counts of unflagged blocks, and how many blocks were flagged.
    struct Counters {
        sat: u64,
        fl: u64,
        n: usize,
    }

    /// The lookup step of block `k` (scale code `scales[k]`): its codes in two vectors of
    /// 32-bit lanes; its counts into `c`, or, flagged, its index into `flagged`; `VALUES`
    /// writes its values at `vp`. Each block is counted as it is computed, so that few
    /// vectors stay live (sixteen registers).
    #[inline(always)]
    unsafe fn block<const VALUES: bool>(
        t: (__m256i, __m256i),
        (x, scales, k): (&[f32], &[u8], usize),
        (recip, vtab, vp): (&[f32; 256], &[[f32; 8]], *mut f32),
        c: &mut Counters,
        flagged: &mut [u16],
    ) -> [__m256i; 2] {
        let sk = *scales.get_unchecked(k) as usize;
        let f = _mm256_set1_ps(recip[sk]);
        let at = x.as_ptr().add(16 * k);
        let e = [eight(t, at, f), eight(t, at.add(8), f)];
        if VALUES {
            let vt = _mm256_loadu_ps(vtab.get_unchecked(sk).as_ptr());
            let v = vp.add(16 * k);
            store_values(v, _mm256_permutevar8x32_ps(vt, e[0].m), e[0].x);
            store_values(v.add(8), _mm256_permutevar8x32_ps(vt, e[1].m), e[1].x);
        }
        let near = _mm256_or_si256(e[0].near, e[1].near);
        if _mm256_testz_si256(near, near) == 0 {
            *flagged.get_unchecked_mut(c.n) = k as u16;
            c.n += 1;
        } else {
            // the sixteen saturated and sixteen flushed masks as bytes, one bit each in a
            // byte mask: (saturated 0–7, flushed 0–7, saturated 8–15, flushed 8–15)
            let b = _mm256_packs_epi16(
                _mm256_packs_epi32(e[0].sat, e[1].sat),
                _mm256_packs_epi32(e[0].flushed, e[1].flushed),
            );
            let bits = _mm256_movemask_epi8(b) as u32;
            c.sat += u64::from((bits & 0x00ff_00ff).count_ones());
            c.fl += u64::from((bits & 0xff00_ff00).count_ones());
        }
        [code(e[0].m, e[0].x), code(e[1].m, e[1].x)]
    }

    /// See [`super::e2m1_lookup`]; `VALUES` writes the values. Two blocks per step (their
    /// 32 codes in one store), an odd last block alone. No closures: a closure that is not
    /// inlined is compiled without AVX2.
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
        let mut c = Counters {
            sat: 0,
            fl: 0,
            n: 0,
        };
        let v = (recip, vtab, values.as_mut_ptr());
        let nb = scales.len();
        let mut k = 0;
        while k + 2 <= nb {
            let p = block::<VALUES>(t, (x, scales, k), v, &mut c, flagged);
            let q = block::<VALUES>(t, (x, scales, k + 1), v, &mut c, flagged);
            store_bytes32(codes.as_mut_ptr().add(16 * k), [p[0], p[1], q[0], q[1]]);
            k += 2;
        }
        if k < nb {
            let p = block::<VALUES>(t, (x, scales, k), v, &mut c, flagged);
            store16(codes.as_mut_ptr().add(16 * k), p);
        }
        Tally {
            saturated: c.sat,
            flushed: c.fl,
            flagged: c.n,
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

    /// See [`super::e2m1_exact`]; `VALUES` writes the values. The counts in 32-bit lane
    /// counters (decreased by true masks, −1; each lane counts at most one in eight
    /// elements).
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
        let sat_above = _mm256_set1_epi32((IDX_SAT - BASE) as i32 - 1);
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
        // flushed: x ≠ 0 and a zero code
        let flushed = |a: __m256i, m: __m256i| {
            _mm256_andnot_si256(_mm256_cmpeq_epi32(a, zero), _mm256_cmpeq_epi32(m, zero))
        };
        let (mut sat, mut fl) = (zero, zero);
        for (k, &f) in inv.iter().enumerate() {
            let f = _mm256_set1_ps(f);
            for j in (k * b..(k + 1) * b).step_by(16) {
                let at = x.as_ptr().add(j);
                let (x0, a0, y0) = scaled(at, f);
                let (x1, a1, y1) = scaled(at.add(8), f);
                let (j0, j1) = (index(y0), index(y1));
                let m0 = mag(entry(t, j0), y0);
                let m1 = mag(entry(t, j1), y1);
                store16(codes.as_mut_ptr().add(j), [code(m0, x0), code(m1, x1)]);
                if VALUES {
                    let u = _mm256_set1_ps(*up.get_unchecked(k));
                    let v = values.as_mut_ptr().add(j);
                    let q0 = _mm256_mul_ps(_mm256_permutevar8x32_ps(e2m1, m0), u);
                    let q1 = _mm256_mul_ps(_mm256_permutevar8x32_ps(e2m1, m1), u);
                    store_values(v, q0, x0);
                    store_values(v.add(8), q1, x1);
                }
                // saturated: the quarter index at or above IDX_SAT
                let s = _mm256_add_epi32(
                    _mm256_cmpgt_epi32(j0, sat_above),
                    _mm256_cmpgt_epi32(j1, sat_above),
                );
                sat = _mm256_sub_epi32(sat, s);
                fl = _mm256_sub_epi32(fl, _mm256_add_epi32(flushed(a0, m0), flushed(a1, m1)));
            }
        }
        (sum_u32_lanes(sat), sum_u32_lanes(fl))
    }

    /// See [`super::e2m1_exact`].
    #[target_feature(enable = "avx2")]
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
