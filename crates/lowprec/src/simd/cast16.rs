//! Binary32 → binary16 and bfloat16, round to nearest even with IEEE overflow, by the CPU's
//! own conversion instructions: F16C / AVX-512F `vcvtps2ph` for binary16 and AVX-512 BF16
//! `vcvtneps2bf16` for bfloat16.
//!
//! The instructions alone do not give lowprec's results, so each vector is corrected:
//!
//! * a NaN becomes the format's canonical NaN of the input's sign (the instructions keep
//!   the payload);
//! * `vcvtneps2bf16` flushes binary32 subnormal inputs to zero whatever MXCSR says, while
//!   bfloat16 has the same subnormals as binary32: lanes holding one are rounded by the
//!   integer form of round-to-nearest-even, `(x + 0x7fff + ((x >> 16) & 1)) >> 16` (exact
//!   on every finite input; the branch is taken only by vectors that hold one).
//!
//! The status counts come from the rounded value `y` (the code converted back, which
//! both instructions do exactly): inexact `y ≠ x`; overflow `x` finite and `y` infinite;
//! underflow `0 < |x| < 2^emin` and inexact; flushed `x` nonzero and finite, `y = 0`; NaN
//! and Inf from `x`. The tests compare codes, values and counts with the generic kernel
//! on special values and slices of every binary32 bit pattern, and `lowprec verify` on all
//! 2^32 of them.

/// What happened, counted: the fields of the round module's `Status` that these
/// conversions can produce (the caller turns them into one; `simd` depends on nothing above
/// it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    /// Results that differ from their input.
    pub inexact: u64,
    /// Finite inputs that became ±Inf.
    pub overflow: u64,
    /// Nonzero inputs below the smallest normal whose result is inexact.
    pub underflow: u64,
    /// Nonzero finite inputs that became ±0.
    pub flushed: u64,
    /// NaN inputs.
    pub nan: u64,
    /// ±Inf inputs.
    pub infinite: u64,
}

/// Which 16-bit format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half16 {
    /// IEEE binary16.
    Fp16,
    /// bfloat16.
    Bf16,
}

/// Where a vector's results go.
pub(crate) enum Dst<'a> {
    /// The 16-bit codes.
    Codes(&'a mut [u16]),
    /// The rounded values, as binary32.
    Values(&'a mut [f32]),
}

impl Dst<'_> {
    fn len(&self) -> usize {
        match self {
            Dst::Codes(d) => d.len(),
            Dst::Values(d) => d.len(),
        }
    }
}

/// Whether [`convert`] runs for `kind` on this CPU at the active level
/// ([`super::set_max_level`] below AVX-512 turns the bfloat16 path off; below AVX2 both).
pub(crate) fn available(kind: Half16) -> bool {
    available_at(kind, super::active())
}

/// Whether `kind` has a path at `level` on this CPU.
fn available_at(kind: Half16, level: super::Level) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use super::Level;
        level <= super::detected()
            && match kind {
                Half16::Fp16 => level >= Level::Avx2 && std::arch::is_x86_feature_detected!("f16c"),
                Half16::Bf16 => {
                    level >= Level::Avx512 && std::arch::is_x86_feature_detected!("avx512bf16")
                }
            }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kind, level);
        false
    }
}

/// Round `src` to `kind` (nearest even, overflow to ±Inf) into `dst` (the same length);
/// `nan` holds the format's NaN codes for a positive and a negative sign. With `stream`, the
/// AVX-512 paths write with non-temporal stores (for outputs too large to stay in cache:
/// the line is not read before it is written); the results are the same. `None` when the
/// CPU lacks the instructions ([`available`] is false); the caller then runs the generic
/// kernel.
pub(crate) fn convert(
    kind: Half16,
    src: &[f32],
    dst: Dst<'_>,
    nan: [u16; 2],
    stream: bool,
) -> Option<Counts> {
    convert_at(kind, super::active(), src, dst, nan, stream)
}

/// [`convert`] with the instructions of `level`.
fn convert_at(
    kind: Half16,
    level: super::Level,
    src: &[f32],
    dst: Dst<'_>,
    nan: [u16; 2],
    stream: bool,
) -> Option<Counts> {
    assert_eq!(src.len(), dst.len(), "internal: cast16 lengths differ");
    if !available_at(kind, level) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut c = [0u64; 6];
        if kind == Half16::Bf16 {
            // SAFETY: `available_at(Bf16, level)` confirmed the AVX-512 level (F/BW/VL/AVX2;
            // F16C is implied by AVX-512F) and AVX-512 BF16 on this CPU.
            unsafe { x86::avx512_bf16(src, dst, nan, &mut c, stream) };
        } else if level >= super::Level::Avx512 {
            // SAFETY: the AVX-512 level (F/BW/VL/AVX2) is detected (`level <= detected()`)
            // and `available_at(Fp16, level)` confirmed F16C.
            unsafe { x86::avx512_fp16(src, dst, nan, &mut c, stream) };
        } else {
            // SAFETY: `available_at(Fp16, level)` confirmed the AVX2 level and F16C.
            unsafe { x86::avx2_f16c(src, dst, nan, &mut c) };
        }
        Some(Counts {
            inexact: c[0],
            overflow: c[1],
            underflow: c[2],
            flushed: c[3],
            nan: c[4],
            infinite: c[5],
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (src, dst, nan, stream);
        None
    }
}

/// Binary32 → bfloat16 codes (round to nearest even) on AVX2, for slices of normal and zero
/// inputs that do not overflow: `(x + 0x7fff + lsb) >> 16` on the whole pattern (the sign
/// rides along), inexact when the low 16 bits are not zero (bfloat16 has binary32's
/// exponent range, so nothing else can happen there). `None`, with `dst` not to be used,
/// when the slice holds a binary32 subnormal, a magnitude of at least `0x7f7f_8000` (it
/// rounds to Inf: an overflow, or an Inf or NaN input), or below AVX2: the caller then
/// rounds the slice with the generic kernel, which gives the same codes here (the tests
/// compare them).
pub(crate) fn bf16_codes_avx2(src: &[f32], dst: &mut [u16]) -> Option<Counts> {
    assert_eq!(src.len(), dst.len(), "internal: bf16 lengths differ");
    if super::active() < super::Level::Avx2 {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the AVX2 level is active, so detected (`active() <= detected()`).
        let exact = unsafe { x86::avx2_bf16(src, dst) }?;
        Some(Counts {
            inexact: src.len() as u64 - exact,
            ..Counts::default()
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (src, dst);
        None
    }
}

/// The body of the two AVX-512 functions: sixteen lanes at a time, the tail through a
/// zero-padded stack vector (zeros add nothing to the counts). A macro, not a function, so
/// that its closure is compiled inside each function's target features (a closure inherits
/// them; an `#[inline(always)]` function of its own would call the intrinsics out of line).
#[cfg(target_arch = "x86_64")]
macro_rules! avx512_body {
    ($kind:expr, $src:expr, $dst:expr, $nan:expr, $c:expr, $nt:expr) => {{
        let (kind, src, mut dst, nan, c, nt): (
            Half16,
            &[f32],
            Dst<'_>,
            [u16; 2],
            &mut [u64; 6],
            bool,
        ) = ($kind, $src, $dst, $nan, $c, $nt);
        let n = src.len();
        let nan_pos = _mm256_set1_epi16(nan[0] as i16);
        let nan_neg = _mm256_set1_epi16(nan[1] as i16);
        let min_normal = _mm512_set1_epi32(match kind {
            Half16::Fp16 => MIN_NORMAL_F16,
            Half16::Bf16 => MIN_NORMAL_BF16,
        });
        // per-lane counters (a lane counts at most n / 16 elements), summed at the end
        let mut cnt = [_mm512_setzero_si512(); 6];
        let step = |x: __m512, cnt: &mut [__m512i; 6]| -> (__m256i, __m512) {
            let xi = _mm512_castps_si512(x);
            let a = _mm512_and_si512(xi, _mm512_set1_epi32(ABS));
            let inf = _mm512_set1_epi32(INF);
            let is_nan = _mm512_cmpgt_epu32_mask(a, inf);
            let is_inf = _mm512_cmpeq_epu32_mask(a, inf);
            let finite = _mm512_cmplt_epu32_mask(a, inf);
            let nonzero = _mm512_test_epi32_mask(a, a);
            let tiny = _mm512_cmplt_epu32_mask(a, min_normal) & nonzero;
            let mut h = match kind {
                Half16::Fp16 => {
                    _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x)
                }
                Half16::Bf16 => {
                    let h: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(x));
                    if tiny != 0 {
                        // binary32 subnormals: the integer round-to-nearest-even
                        let odd =
                            _mm512_and_si512(_mm512_srli_epi32::<16>(xi), _mm512_set1_epi32(1));
                        let r =
                            _mm512_add_epi32(_mm512_add_epi32(xi, _mm512_set1_epi32(0x7fff)), odd);
                        let r = _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(r));
                        _mm256_mask_blend_epi16(tiny, h, r)
                    } else {
                        h
                    }
                }
            };
            if is_nan != 0 {
                let neg = _mm512_cmplt_epi32_mask(xi, _mm512_setzero_si512());
                let canon = _mm256_mask_blend_epi16(neg, nan_pos, nan_neg);
                h = _mm256_mask_blend_epi16(is_nan, h, canon);
            }
            let y = match kind {
                Half16::Fp16 => _mm512_cvtph_ps(h),
                Half16::Bf16 => {
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
                }
            };
            let ya = _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(ABS));
            let inexact = _mm512_cmp_ps_mask::<_CMP_NEQ_OQ>(y, x);
            let overflow = finite & _mm512_cmpeq_epu32_mask(ya, inf);
            let flushed = finite & nonzero & _mm512_testn_epi32_mask(ya, ya);
            let one = _mm512_set1_epi32(1);
            let masks = [inexact, overflow, tiny & inexact, flushed, is_nan, is_inf];
            for (v, m) in cnt.iter_mut().zip(masks) {
                *v = _mm512_mask_add_epi32(*v, m, *v, one);
            }
            (h, y)
        };
        // Vectors whose every lane is normal in the format and rounds below the overflow
        // threshold (the common case) can only be inexact: `min_normal <= |x| < top`, one
        // unsigned comparison of |x| − min_normal.
        let top = match kind {
            Half16::Fp16 => 0x477f_f000, // 65520: rounds to Inf
            Half16::Bf16 => 0x7f7f_8000, // rounds to Inf
        };
        let span = _mm512_set1_epi32(
            top - MIN_NORMAL_F16 * (kind == Half16::Fp16) as i32
                - MIN_NORMAL_BF16 * (kind == Half16::Bf16) as i32,
        );
        let plain = |x: __m512| -> bool {
            let a = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(ABS));
            _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, min_normal), span) == 0xffff
        };
        // In a plain vector every lane is normal in the format, so a lane is inexact exactly
        // when the binary32 bits below the format's last place are not all zero (13 for
        // binary16, 16 for bfloat16); the rounded values are made only when they are wanted.
        let low_bits = _mm512_set1_epi32(match kind {
            Half16::Fp16 => 0x1fff,
            Half16::Bf16 => 0xffff,
        });
        let values = matches!(dst, Dst::Values(_));
        let fast = |x: __m512, cnt: &mut [__m512i; 6]| -> (__m256i, __m512) {
            let h = match kind {
                Half16::Fp16 => {
                    _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x)
                }
                Half16::Bf16 => std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(x)),
            };
            let y = match (values, kind) {
                (false, _) => x,
                (true, Half16::Fp16) => _mm512_cvtph_ps(h),
                (true, Half16::Bf16) => {
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
                }
            };
            let inexact = _mm512_test_epi32_mask(_mm512_castps_si512(x), low_bits);
            cnt[0] = _mm512_mask_add_epi32(cnt[0], inexact, cnt[0], _mm512_set1_epi32(1));
            (h, y)
        };
        // a partial vector (the unaligned head of a streaming call, the tail): through a
        // zero-padded stack vector
        let part = |dst: &mut Dst<'_>, lo: usize, hi: usize, cnt: &mut [__m512i; 6]| {
            let mut t = [0f32; 16];
            t[..hi - lo].copy_from_slice(&src[lo..hi]);
            let (h, y) = step(_mm512_loadu_ps(t.as_ptr()), cnt);
            match dst {
                Dst::Codes(d) => {
                    let mut o = [0u16; 16];
                    _mm256_storeu_si256(o.as_mut_ptr().cast(), h);
                    d[lo..hi].copy_from_slice(&o[..hi - lo]);
                }
                Dst::Values(d) => {
                    _mm512_storeu_ps(t.as_mut_ptr(), y);
                    d[lo..hi].copy_from_slice(&t[..hi - lo]);
                }
            }
        };
        // streaming stores need a 32-byte (codes) or 64-byte (values) aligned destination
        let head = if nt {
            let (addr, unit, size) = match &dst {
                Dst::Codes(d) => (d.as_ptr() as usize, 32, 2),
                Dst::Values(d) => (d.as_ptr() as usize, 64, 4),
            };
            ((unit - addr % unit) % unit / size).min(n)
        } else {
            0
        };
        if head > 0 {
            part(&mut dst, 0, head, &mut cnt);
        }
        let whole = head + (n - head) / 16 * 16;
        let mut i = head;
        while i < whole {
            let x = _mm512_loadu_ps(src[i..i + 16].as_ptr());
            let (h, y) = if plain(x) {
                fast(x, &mut cnt)
            } else {
                step(x, &mut cnt)
            };
            match (&mut dst, nt) {
                (Dst::Codes(d), false) => _mm256_storeu_si256(d[i..i + 16].as_mut_ptr().cast(), h),
                (Dst::Values(d), false) => _mm512_storeu_ps(d[i..i + 16].as_mut_ptr(), y),
                // aligned: `head` brought the address to a multiple of the vector
                (Dst::Codes(d), true) => _mm256_stream_si256(d[i..i + 16].as_mut_ptr().cast(), h),
                (Dst::Values(d), true) => _mm512_stream_ps(d[i..i + 16].as_mut_ptr(), y),
            }
            i += 16;
        }
        if nt {
            _mm_sfence();
        }
        if whole < n {
            part(&mut dst, whole, n, &mut cnt);
        }
        for (c, v) in c.iter_mut().zip(cnt) {
            *c += _mm512_reduce_add_epi32(v) as u32 as u64;
        }
    }};
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Dst, Half16};
    use std::arch::x86_64::*;

    const INF: i32 = 0x7f80_0000;
    const ABS: i32 = 0x7fff_ffff;
    /// The smallest normal of binary16 (2^-14) and of bfloat16 (2^-126), as binary32 bits.
    const MIN_NORMAL_F16: i32 = 0x3880_0000;
    /// 65520 = 65504 + half its spacing: binary32 magnitudes below it round to a finite
    /// binary16 under round to nearest.
    const NO_OVERFLOW_F16: i32 = 0x477f_f000;
    const MIN_NORMAL_BF16: i32 = 0x0080_0000;

    /// Binary16 on AVX-512.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,f16c")]
    pub(super) unsafe fn avx512_fp16(
        src: &[f32],
        dst: Dst<'_>,
        nan: [u16; 2],
        c: &mut [u64; 6],
        nt: bool,
    ) {
        avx512_body!(Half16::Fp16, src, dst, nan, c, nt)
    }

    /// Bfloat16 on AVX-512 BF16.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16,avx2,f16c")]
    pub(super) unsafe fn avx512_bf16(
        src: &[f32],
        dst: Dst<'_>,
        nan: [u16; 2],
        c: &mut [u64; 6],
        nt: bool,
    ) {
        avx512_body!(Half16::Bf16, src, dst, nan, c, nt)
    }

    /// Binary16 on AVX2 + F16C: eight lanes at a time, the tail zero-padded.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn avx2_f16c(src: &[f32], mut dst: Dst<'_>, nan: [u16; 2], c: &mut [u64; 6]) {
        let n = src.len();
        let whole = n / 8 * 8;
        let nan_pos = _mm_set1_epi16(nan[0] as i16);
        let nan_neg = _mm_set1_epi16(nan[1] as i16);
        // per-lane counters (a lane counts at most n / 8 elements), summed at the end
        let mut cnt = [_mm256_setzero_si256(); 6];
        let step = |x: __m256, cnt: &mut [__m256i; 6]| -> (__m128i, __m256) {
            let xi = _mm256_castps_si256(x);
            let a = _mm256_and_si256(xi, _mm256_set1_epi32(ABS));
            let inf = _mm256_set1_epi32(INF);
            let zero = _mm256_setzero_si256();
            // the common case: every lane zero or normal in binary16 and below 65520, where
            // nothing overflows, underflows, flushes or is special: only inexact counts
            let common = _mm256_and_si256(
                _mm256_or_si256(
                    _mm256_cmpgt_epi32(a, _mm256_set1_epi32(MIN_NORMAL_F16 - 1)),
                    _mm256_cmpeq_epi32(a, zero),
                ),
                _mm256_cmpgt_epi32(_mm256_set1_epi32(NO_OVERFLOW_F16), a),
            );
            if _mm256_movemask_ps(_mm256_castsi256_ps(common)) == 0xff {
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
                let y = _mm256_cvtph_ps(h);
                let inexact = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_OQ>(y, x));
                cnt[0] = _mm256_sub_epi32(cnt[0], inexact);
                return (h, y);
            }
            // every lane is below 2^31, so the signed comparisons are the unsigned ones
            let is_nan = _mm256_cmpgt_epi32(a, inf);
            let is_inf = _mm256_cmpeq_epi32(a, inf);
            let finite = _mm256_cmpgt_epi32(inf, a);
            let nonzero = _mm256_xor_si256(_mm256_cmpeq_epi32(a, zero), _mm256_set1_epi32(-1));
            let tiny = _mm256_and_si256(
                _mm256_cmpgt_epi32(_mm256_set1_epi32(MIN_NORMAL_F16), a),
                nonzero,
            );
            let mut h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
            let mask = |m: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(m)) as u32;
            if mask(is_nan) != 0 {
                let narrow = |m: __m256i| {
                    _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m))
                };
                let neg = narrow(_mm256_srai_epi32::<31>(xi));
                let canon = _mm_blendv_epi8(nan_pos, nan_neg, neg);
                h = _mm_blendv_epi8(h, canon, narrow(is_nan));
            }
            let y = _mm256_cvtph_ps(h);
            let ya = _mm256_and_si256(_mm256_castps_si256(y), _mm256_set1_epi32(ABS));
            let inexact = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_OQ>(y, x));
            let overflow = _mm256_and_si256(finite, _mm256_cmpeq_epi32(ya, inf));
            let flushed = _mm256_and_si256(
                _mm256_and_si256(finite, nonzero),
                _mm256_cmpeq_epi32(ya, zero),
            );
            // a true lane is −1: subtracting it counts one
            let masks = [
                inexact,
                overflow,
                _mm256_and_si256(tiny, inexact),
                flushed,
                is_nan,
                is_inf,
            ];
            for (v, m) in cnt.iter_mut().zip(masks) {
                *v = _mm256_sub_epi32(*v, m);
            }
            (h, y)
        };
        let mut i = 0;
        // Codes, 32 at a time: when all 32 lanes are zero or normal in binary16 below 65520
        // (one test for the four vectors), a lane is inexact exactly when the binary32 bits
        // below binary16's last place (13) are not all zero: no conversion back is needed.
        if let Dst::Codes(d) = &mut dst {
            let bias = _mm256_set1_epi32(i32::MIN.wrapping_sub(MIN_NORMAL_F16));
            let span = _mm256_set1_epi32(i32::MIN.wrapping_add(NO_OVERFLOW_F16 - MIN_NORMAL_F16));
            let abs = _mm256_set1_epi32(ABS);
            let low = _mm256_set1_epi32(0x1fff);
            let zero = _mm256_setzero_si256();
            // zero, or min_normal ≤ |x| < 65520: |x| − min_normal below the span, compared
            // as signed numbers after moving the range by 2^31
            let common = |x: __m256| {
                let a = _mm256_and_si256(_mm256_castps_si256(x), abs);
                _mm256_or_si256(
                    _mm256_cmpgt_epi32(span, _mm256_add_epi32(a, bias)),
                    _mm256_cmpeq_epi32(a, zero),
                )
            };
            let whole32 = n / 32 * 32;
            // the exact lanes of the fast groups, and how many lanes those had
            let mut exact_fast = zero;
            let mut fast_lanes = 0u64;
            while i < whole32 {
                let xs = [
                    _mm256_loadu_ps(src[i..i + 8].as_ptr()),
                    _mm256_loadu_ps(src[i + 8..i + 16].as_ptr()),
                    _mm256_loadu_ps(src[i + 16..i + 24].as_ptr()),
                    _mm256_loadu_ps(src[i + 24..i + 32].as_ptr()),
                ];
                let all = _mm256_and_si256(
                    _mm256_and_si256(common(xs[0]), common(xs[1])),
                    _mm256_and_si256(common(xs[2]), common(xs[3])),
                );
                if _mm256_movemask_ps(_mm256_castsi256_ps(all)) == 0xff {
                    fast_lanes += 32;
                    for (q, &x) in xs.iter().enumerate() {
                        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
                        let exact =
                            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(x), low), zero);
                        exact_fast = _mm256_sub_epi32(exact_fast, exact);
                        _mm_storeu_si128(d[i + 8 * q..i + 8 * q + 8].as_mut_ptr().cast(), h);
                    }
                } else {
                    for (q, &x) in xs.iter().enumerate() {
                        let (h, _) = step(x, &mut cnt);
                        _mm_storeu_si128(d[i + 8 * q..i + 8 * q + 8].as_mut_ptr().cast(), h);
                    }
                }
                i += 32;
            }
            let mut lanes = [0u32; 8];
            _mm256_storeu_si256(lanes.as_mut_ptr().cast(), exact_fast);
            c[0] += fast_lanes - lanes.iter().map(|&l| u64::from(l)).sum::<u64>();
        }
        while i < whole {
            let x = _mm256_loadu_ps(src[i..i + 8].as_ptr());
            let (h, y) = step(x, &mut cnt);
            match &mut dst {
                Dst::Codes(d) => _mm_storeu_si128(d[i..i + 8].as_mut_ptr().cast(), h),
                Dst::Values(d) => _mm256_storeu_ps(d[i..i + 8].as_mut_ptr(), y),
            }
            i += 8;
        }
        if whole < n {
            let mut t = [0f32; 8];
            t[..n - whole].copy_from_slice(&src[whole..]);
            let (h, y) = step(_mm256_loadu_ps(t.as_ptr()), &mut cnt);
            match &mut dst {
                Dst::Codes(d) => {
                    let mut o = [0u16; 8];
                    _mm_storeu_si128(o.as_mut_ptr().cast(), h);
                    d[whole..].copy_from_slice(&o[..n - whole]);
                }
                Dst::Values(d) => {
                    _mm256_storeu_ps(t.as_mut_ptr(), y);
                    d[whole..].copy_from_slice(&t[..n - whole]);
                }
            }
        }
        for (c, v) in c.iter_mut().zip(cnt) {
            let mut lanes = [0u32; 8];
            _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v);
            *c += lanes.iter().map(|&l| u64::from(l)).sum::<u64>();
        }
    }

    /// [`super::bf16_codes_avx2`]: 32 lanes per step, the tail through a zero-padded block;
    /// the number of exact elements, or `None` when the slice needs the generic kernel.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_bf16(src: &[f32], dst: &mut [u16]) -> Option<u64> {
        let abs = _mm256_set1_epi32(ABS);
        let low = _mm256_set1_epi32(0xffff);
        let half = _mm256_set1_epi32(0x7fff);
        let one = _mm256_set1_epi32(1);
        let zero = _mm256_setzero_si256();
        // per-lane exact counts (decreased by true masks), the largest |x| and the smallest
        // |x| − 1 (unsigned: a zero gives 2^32 − 1, a subnormal less than 2^23 − 1)
        let (mut exact, mut amax, mut tmin) = (zero, zero, _mm256_set1_epi32(-1));
        macro_rules! lane {
            ($x:expr) => {{
                let x: __m256i = $x;
                let a = _mm256_and_si256(x, abs);
                amax = _mm256_max_epi32(amax, a);
                tmin = _mm256_min_epu32(tmin, _mm256_sub_epi32(a, one));
                exact = _mm256_sub_epi32(exact, _mm256_cmpeq_epi32(_mm256_and_si256(x, low), zero));
                let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), one);
                _mm256_srli_epi32::<16>(_mm256_add_epi32(_mm256_add_epi32(x, half), lsb))
            }};
        }
        macro_rules! block {
            ($s:expr, $d:expr) => {{
                let (s, d): (*const f32, *mut u16) = ($s, $d);
                let r0 = lane!(_mm256_loadu_si256(s.cast()));
                let r1 = lane!(_mm256_loadu_si256(s.add(8).cast()));
                let r2 = lane!(_mm256_loadu_si256(s.add(16).cast()));
                let r3 = lane!(_mm256_loadu_si256(s.add(24).cast()));
                // the packs interleave 128-bit halves; the permutes restore the order
                let p01 = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(r0, r1));
                let p23 = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(r2, r3));
                _mm256_storeu_si256(d.cast(), p01);
                _mm256_storeu_si256(d.add(16).cast(), p23);
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
            let mut o = [0u16; 32];
            t[..n - whole].copy_from_slice(&src[whole..]);
            block!(t.as_ptr(), o.as_mut_ptr());
            dst[whole..].copy_from_slice(&o[..n - whole]);
        }
        let lanes = |v: __m256i| -> [u32; 8] {
            let mut l = [0u32; 8];
            _mm256_storeu_si256(l.as_mut_ptr().cast(), v);
            l
        };
        let amax = lanes(amax).into_iter().max().unwrap_or(0);
        let tmin = lanes(tmin).into_iter().min().unwrap_or(u32::MAX);
        if amax >= 0x7f7f_8000 || tmin < 0x7f_ffff {
            return None;
        }
        // the zero padding of the tail counted as exact
        let padded = (n.div_ceil(32) * 32) as u64;
        let e: u64 = lanes(exact).iter().map(|&x| u64::from(x)).sum();
        Some(e - (padded - n as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::{available_at, convert_at, Dst, Half16};
    use crate::round::kernel::{run, Plan};
    use crate::round::{RoundOptions, Status};
    use crate::simd::Level;
    use crate::FloatFormat;

    /// The generic kernel's codes, values and counts.
    fn generic(fmt: &FloatFormat, x: &[f32]) -> (Vec<u16>, Vec<f32>, Status) {
        let p = Plan::<f32>::new(fmt, &RoundOptions::default());
        let mut c = vec![0u16; x.len()];
        let mut v = vec![0f32; x.len()];
        let st = run(&p, x, &mut c, 0, |c, _| c as u16);
        let sv = run(&p, x, &mut v, 0, |_, v| v);
        assert_eq!(st, sv);
        (c, v, st)
    }

    fn check(kind: Half16, fmt: &FloatFormat, x: &[f32]) {
        let nan = [
            fmt.nan_code(false).unwrap() as u16,
            fmt.nan_code(true).unwrap() as u16,
        ];
        let (gc, gv, gst) = generic(fmt, x);
        for level in [Level::Avx2, Level::Avx512] {
            if !available_at(kind, level) {
                continue;
            }
            for stream in [false, true] {
                let mut c = vec![0u16; x.len()];
                let mut v = vec![0f32; x.len()];
                let st = convert_at(kind, level, x, Dst::Codes(&mut c), nan, stream).unwrap();
                let sv = convert_at(kind, level, x, Dst::Values(&mut v), nan, stream).unwrap();
                for i in 0..x.len() {
                    let b = x[i].to_bits();
                    assert_eq!(c[i], gc[i], "{fmt} {level:?} {stream} code of {b:#010x}");
                    let (vb, gb) = (v[i].to_bits(), gv[i].to_bits());
                    assert_eq!(vb, gb, "{fmt} {level:?} {stream} value of {b:#010x}");
                }
                assert_eq!(Status::from(st), gst, "{fmt} {level:?} {stream} counts");
                assert_eq!(
                    Status::from(sv),
                    gst,
                    "{fmt} {level:?} {stream} counts (values)"
                );
            }
        }
    }

    fn kinds() -> Vec<(Half16, FloatFormat)> {
        [
            (Half16::Fp16, FloatFormat::FP16),
            (Half16::Bf16, FloatFormat::BF16),
        ]
        .into_iter()
        .filter(|(k, _)| {
            let on = available_at(*k, Level::Avx2) || available_at(*k, Level::Avx512);
            if !on {
                eprintln!("{k:?}: this CPU lacks the instruction, path not tested here");
            }
            on
        })
        .collect()
    }

    /// The AVX2 bfloat16 codes equal the generic kernel's on every high half-word with the
    /// low half-words at the rounding boundaries, in slices of many lengths, and the path
    /// declines exactly the slices holding a subnormal, an overflow, a NaN or ±Inf.
    #[test]
    fn avx2_bf16_codes_equal_the_generic_kernel() {
        if crate::simd::active() < Level::Avx2 {
            return;
        }
        let lows: [u32; 9] = [
            0, 1, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff, 0x5a5a, 0x18000,
        ];
        let x: Vec<f32> = (0..1u32 << 16)
            .flat_map(|hi| {
                lows.iter()
                    .map(move |lo| f32::from_bits((hi << 16).wrapping_add(*lo)))
            })
            .collect();
        let (mut taken, mut declined) = (0, 0);
        let mut at = 0;
        let mut len = 1;
        while at < x.len() {
            let s = &x[at..(at + len).min(x.len())];
            let (gc, _, gst) = generic(&FloatFormat::BF16, s);
            let mut c = vec![0u16; s.len()];
            let special = s.iter().any(|v| {
                let a = v.to_bits() & 0x7fff_ffff;
                a >= 0x7f7f_8000 || (a != 0 && a < 0x0080_0000)
            });
            match super::bf16_codes_avx2(s, &mut c) {
                Some(st) => {
                    taken += 1;
                    assert!(!special, "took a slice it must decline at {at}");
                    assert_eq!(c, gc, "codes at {at}");
                    assert_eq!(Status::from(st), gst, "counts at {at}");
                }
                None => {
                    declined += 1;
                    assert!(special, "declined a plain slice at {at}");
                }
            }
            at += len;
            len = len % 97 + 1;
        }
        assert!(
            taken > 1000 && declined > 100,
            "{taken} taken, {declined} declined"
        );
    }

    /// Every high half-word with the low half-words at the rounding boundaries of both
    /// formats (binary16's normal ties at bit 12, bfloat16's at bit 15, and the ones
    /// around them): ties, one above, one below, zeros, all ones.
    #[test]
    fn every_exponent_and_tie_equals_the_generic_kernel() {
        let lows: [u32; 14] = [
            0, 1, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xf000,
            0xffff, 0x5a5a,
        ];
        for (kind, fmt) in kinds() {
            let x: Vec<f32> = (0..1u32 << 16)
                .flat_map(|hi| lows.iter().map(move |lo| f32::from_bits(hi << 16 | lo)))
                .collect();
            check(kind, &fmt, &x);
        }
    }

    /// Every binary32 pattern around binary16's subnormal and overflow boundaries, where the
    /// rounding bit moves, and a pseudo-random sample of all patterns.
    #[test]
    fn subnormal_ranges_and_a_sample_equal_the_generic_kernel() {
        let mut x: Vec<f32> = Vec::new();
        for sign in [0u32, 0x8000_0000] {
            // |x| from 2^-26 to 2^-13 (binary16 subnormals and their rounding), every pattern
            // with stride 7; and from 65504 to 65536 and beyond, every pattern
            x.extend(
                (0x3280_0000u32..0x3900_0000)
                    .step_by(7)
                    .map(|b| f32::from_bits(b | sign)),
            );
            x.extend((0x477f_e000u32..0x4780_2000).map(|b| f32::from_bits(b | sign)));
            // binary32 subnormals (bfloat16 keeps them), every 3rd pattern
            x.extend(
                (0u32..0x0080_0000)
                    .step_by(3)
                    .map(|b| f32::from_bits(b | sign)),
            );
            // bfloat16's overflow boundary
            x.extend(
                (0x7f7f_0000u32..=0x7fff_ffff)
                    .step_by(5)
                    .map(|b| f32::from_bits(b | sign)),
            );
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        x.extend((0..1 << 20).map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            f32::from_bits((s >> 32) as u32)
        }));
        for (kind, fmt) in kinds() {
            check(kind, &fmt, &x);
            // every tail length, starting at every offset of a vector
            for start in 0..17 {
                for len in 0..40 {
                    check(kind, &fmt, &x[start..start + len]);
                }
            }
        }
    }

    #[test]
    fn special_values_and_nan_payloads() {
        let x: Vec<f32> = [
            0x0000_0000u32,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0xff80_0001,
            0x7fbf_ffff,
            0x7fff_ffff,
            0xffff_ffff,
            0x7fc0_1234,
            0x0000_0001,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x477f_f000,
            0x477f_efff,
            0x4780_0000,
            0x3380_0000,
            0x3300_0000,
            0x3300_0001,
        ]
        .map(f32::from_bits)
        .to_vec();
        for (kind, fmt) in kinds() {
            check(kind, &fmt, &x);
        }
    }
}
