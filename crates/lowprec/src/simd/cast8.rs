//! Binary32 → a signed format of at most 8 bits with a zero, round to nearest even, into
//! byte codes, by AVX2: the float-add rounding of the generic kernel (`round::kernel`, its
//! `K_ADD` element step) written with intrinsics over 32 lanes per step, so that four
//! vectors of codes pack into one 32-byte store, with the lean kernel's counts.
//!
//! For `a = |x|` (binary32 bits), the lane constants of [`Cast8`] and `e` the exponent field:
//!
//! ```text
//! ef  = max(a & exp_mask, a_emin)                exponent field of the target quantum's binade
//! cb  = ef + a_shift                             c = 2^(e_eff + 23 − m), as bits
//! s   = a ⊕ c                                    IEEE add: rounds |x| to the quantum, ties to even
//! ord = ((ef − a_emin) >> (23 − m)) + (s − cb)   the magnitude code (a carry is the next binade)
//! code = ord | sign                              sign moved to the format's sign bit
//! ```
//!
//! and the counts: inexact `(s ⊖ c) ≠ a`, underflow inexact and `a < 2^emin`, flushed
//! inexact and `ord = 0`. Overflow, NaN and ±Inf take no lane work: [`Counts8::amax`] (the
//! largest `a`) at or above [`Cast8::over_min`] (the smallest `a` that overflows) tells the
//! caller to redo the slice with the generic kernel, which has every policy. The tests compare
//! codes and counts with the generic kernel on every format that takes this path; `lowprec
//! verify` checks fp8-e4m3 on all 2^32 binary32 patterns.

/// The lane constants of one format (the generic kernel's plan makes them; they mean what
/// its `K_ADD` fields mean).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cast8 {
    /// The binary32 exponent field mask, `0x7f80_0000`.
    pub exp_mask: u32,
    /// The exponent field (in place) of the target's smallest normal binade.
    pub a_emin: u32,
    /// `(23 − m) << 23`: from an exponent field to the rounding constant's.
    pub a_shift: u32,
    /// `23 − m` (16 to 23: the formats of at most 8 bits).
    pub dshift: u32,
    /// The format's sign bit.
    pub sign_bit: u32,
    /// Whether a result rounded to zero keeps its sign (false for formats without −0).
    pub zero_keeps_sign: bool,
    /// The binary32 bits of the target's smallest normal.
    pub min_normal: u32,
    /// The smallest `|x|` bits that round beyond the largest finite value.
    pub over_min: u32,
}

/// What [`cast8`] counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts8 {
    /// Inexact results.
    pub inexact: u64,
    /// Inexact results below the smallest normal.
    pub underflow: u64,
    /// Inexact results rounded to zero.
    pub flushed: u64,
    /// The largest `|x|` bits: at or above [`Cast8::over_min`] the slice held an overflow,
    /// a NaN or ±Inf, and the codes and counts are not to be used.
    pub amax: u32,
}

/// Whether [`cast8`] runs on this CPU at the active level.
pub(crate) fn available() -> bool {
    super::active() >= super::Level::Avx2
}

/// Round `src` into byte codes `dst` (the same length) with the constants `k`; `None` when
/// the active level is below AVX2 or `m > 7` (the caller runs the generic kernel).
pub(crate) fn cast8(k: &Cast8, src: &[f32], dst: &mut [u8]) -> Option<Counts8> {
    assert_eq!(src.len(), dst.len(), "internal: cast8 lengths differ");
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut c = [0u64; 3];
        macro_rules! go {
            ($($d:literal)*) => {
                match (k.dshift, k.zero_keeps_sign) {
                    // SAFETY: `available()` confirmed the AVX2 level (`active() <= detected()`).
                    $(($d, true) => unsafe { x86::avx2::<$d, true>(k, src, dst, &mut c) },
                    ($d, false) => unsafe { x86::avx2::<$d, false>(k, src, dst, &mut c) },)*
                    _ => return None,
                }
            };
        }
        let amax = go!(16 17 18 19 20 21 22 23);
        Some(Counts8 {
            inexact: c[0],
            underflow: c[1],
            flushed: c[2],
            amax,
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (k, src, dst);
        None
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Cast8;
    use std::arch::x86_64::*;

    /// 32 lanes per step (four vectors), the tail through a zero-padded stack block (a zero
    /// adds nothing to the counts); `D = 23 − m` and `KEEP` (a zero keeps its sign) are
    /// compile-time so that the shifts take immediates and no register. Returns the largest
    /// `|x|` bits.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<const D: i32, const KEEP: bool>(
        k: &Cast8,
        src: &[f32],
        dst: &mut [u8],
        c: &mut [u64; 3],
    ) -> u32 {
        let set = |v: u32| _mm256_set1_epi32(v as i32);
        let abs = set(0x7fff_ffff);
        let exp_mask = set(k.exp_mask);
        let a_emin = set(k.a_emin);
        let a_shift = set(k.a_shift);
        let sign_bit = set(k.sign_bit);
        let min_normal = set(k.min_normal);
        let zero = _mm256_setzero_si256();
        // per-lane counters, each decreased by a true mask (−1): at most n / 8 per lane
        let (mut exact, mut uf_n, mut fl_n, mut amax) = (zero, zero, zero, zero);
        // One vector of eight binary32 inputs to eight codes in 32-bit lanes, valid unless
        // an input reaches `over_min` (the caller redoes such a slice). Macros, not closures:
        // the loop's state stays in registers and every intrinsic is inlined.
        macro_rules! lane {
            ($x:expr) => {{
                let x: __m256i = $x;
                let a = _mm256_and_si256(x, abs);
                let ef = _mm256_max_epu32(_mm256_and_si256(a, exp_mask), a_emin);
                let cb = _mm256_add_epi32(ef, a_shift);
                let c = _mm256_castsi256_ps(cb);
                let s = _mm256_add_ps(_mm256_castsi256_ps(a), c);
                let y = _mm256_castps_si256(_mm256_sub_ps(s, c));
                let ord = _mm256_add_epi32(
                    _mm256_srli_epi32::<D>(_mm256_sub_epi32(ef, a_emin)),
                    _mm256_sub_epi32(_mm256_castps_si256(s), cb),
                );
                // every lane is below 2^31: the signed comparisons are the unsigned ones
                let same = _mm256_cmpeq_epi32(y, a);
                let is_zero = _mm256_cmpeq_epi32(ord, zero);
                let tiny = _mm256_cmpgt_epi32(min_normal, a);
                exact = _mm256_sub_epi32(exact, same);
                uf_n = _mm256_sub_epi32(uf_n, _mm256_andnot_si256(same, tiny));
                fl_n = _mm256_sub_epi32(fl_n, _mm256_andnot_si256(same, is_zero));
                amax = _mm256_max_epi32(amax, a);
                let mut sign = _mm256_and_si256(_mm256_srai_epi32::<31>(x), sign_bit);
                if !KEEP {
                    sign = _mm256_andnot_si256(is_zero, sign);
                }
                _mm256_or_si256(ord, sign)
            }};
        }
        // 32 inputs to 32 bytes: the two packs interleave 128-bit halves, the permute
        // restores the order
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        macro_rules! block {
            ($s:expr, $d:expr) => {{
                let (s, d): (*const f32, *mut u8) = ($s, $d);
                let r0 = lane!(_mm256_loadu_si256(s.cast()));
                let r1 = lane!(_mm256_loadu_si256(s.add(8).cast()));
                let r2 = lane!(_mm256_loadu_si256(s.add(16).cast()));
                let r3 = lane!(_mm256_loadu_si256(s.add(24).cast()));
                let b =
                    _mm256_packus_epi16(_mm256_packus_epi32(r0, r1), _mm256_packus_epi32(r2, r3));
                _mm256_storeu_si256(d.cast(), _mm256_permutevar8x32_epi32(b, order));
            }};
        }
        let n = src.len();
        let whole = n / 32 * 32;
        let mut i = 0;
        while i < whole {
            block!(src[i..i + 32].as_ptr(), dst[i..i + 32].as_mut_ptr());
            i += 32;
        }
        if whole < n {
            let mut t = [0f32; 32];
            let mut o = [0u8; 32];
            t[..n - whole].copy_from_slice(&src[whole..]);
            block!(t.as_ptr(), o.as_mut_ptr());
            dst[whole..].copy_from_slice(&o[..n - whole]);
        }
        let lanes = |v: __m256i| -> [u32; 8] {
            let mut l = [0u32; 8];
            _mm256_storeu_si256(l.as_mut_ptr().cast(), v);
            l
        };
        let sum = |v: __m256i| -> u64 { lanes(v).iter().map(|&x| u64::from(x)).sum() };
        // the zero padding of the tail counted as exact
        let padded = (n.div_ceil(32) * 32) as u64;
        c[0] = padded - sum(exact);
        c[1] = sum(uf_n);
        c[2] = sum(fl_n);
        lanes(amax).into_iter().max().unwrap_or(0)
    }
}
