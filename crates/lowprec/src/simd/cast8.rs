//! Binary32 → a format of at most 8 bits with a zero (signed or unsigned), round to nearest
//! even, into byte codes, by AVX2: the float-add rounding of the generic kernel
//! (`round::kernel`, its `K_ADD` element step) written with intrinsics over 32 lanes per
//! step, so that four vectors of codes pack into one 32-byte store, with the lean kernel's
//! counts.
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
//! caller to redo the slice with the generic kernel, which has every policy. For an unsigned
//! format `amax` is the largest `x` bits, sign included, so that a negative input (invalid)
//! sends the slice back the same way. The tests compare codes and counts with the generic
//! kernel on every format that takes this path; `lowprec verify` checks fp8-e4m3 on all
//! 2^32 binary32 patterns in CI (ue4m3, binary8p3ue: by hand, 0 mismatches).

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
    /// The exponent field (in place) at which the binade is clamped (`emax + 2`; for
    /// [`blocks8`], whose inputs may overflow).
    pub a_eclamp: u32,
    /// The largest finite magnitude code (for [`blocks8`]'s saturation).
    pub max_ord: u32,
    /// An unsigned format: [`Counts8::amax`] is the largest input *bits*, sign included, so
    /// that a negative input (invalid; −0 too, which the generic kernel takes as well) sends
    /// the slice back. [`blocks8`] and [`mx8`] do not take unsigned formats.
    pub unsigned: bool,
}

impl Cast8 {
    /// Whether an input with binary32 bits `bits` sends its slice back to the generic kernel
    /// (the test [`cast8`]'s `amax` makes for the whole slice): `|x|` (or, unsigned, `x`'s
    /// bits) at or above [`Cast8::over_min`].
    pub fn sends_back(&self, bits: u32) -> bool {
        bits & self.key() >= self.over_min
    }

    /// What [`Counts8::amax`] keeps of each input's bits: the magnitude, or all of them for
    /// an unsigned format (the one definition the kernel and [`Cast8::sends_back`] share).
    pub fn key(&self) -> u32 {
        if self.unsigned {
            u32::MAX
        } else {
            0x7fff_ffff
        }
    }
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
    /// The largest `|x|` bits (an unsigned format: the largest bits, sign included): at or
    /// above [`Cast8::over_min`] the slice held an overflow, a NaN or ±Inf (or a negative
    /// input into an unsigned format), and the codes and counts are not to be used.
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
                    $(($d, true) => unsafe { x86::avx2::<$d, true, _>(k, x86::F32s(src), dst, &mut c) },
                    ($d, false) => unsafe { x86::avx2::<$d, false, _>(k, x86::F32s(src), dst, &mut c) },)*
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

/// The element pass of a block scaling: element `i` of `x` becomes `y = x[i] ⊗ factor[i / b]`
/// (binary32 product), rounded to nearest even with saturation at the largest finite value,
/// as byte codes into `dst`; returns `(saturated, flushed)`: elements whose rounded `|y|`
/// exceeded the largest finite value, and nonzero `x[i]` whose code has a zero magnitude.
/// `None` below AVX2, when `b` is not a multiple of 8, or for a format without −0 (the
/// caller's general path).
pub(crate) fn blocks8(
    k: &Cast8,
    x: &[f32],
    b: usize,
    factor: &[f32],
    dst: &mut [u8],
) -> Option<(u64, u64)> {
    assert_eq!(x.len(), dst.len(), "internal: blocks8 lengths differ");
    if !available() || b == 0 || !b.is_multiple_of(8) || !k.zero_keeps_sign || k.unsigned {
        return None;
    }
    assert!(
        factor.len() >= x.len().div_ceil(b),
        "internal: blocks8 factors"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let mut c = [0u64; 2];
        macro_rules! go {
            ($($d:literal)*) => {
                match k.dshift {
                    // SAFETY: `available()` confirmed the AVX2 level (`active() <= detected()`).
                    $($d => unsafe { x86::blocks::<$d>(k, x, b, factor, dst, &mut c) },)*
                    _ => return None,
                }
            };
        }
        go!(16 17 18 19 20 21 22 23);
        Some((c[0], c[1]))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (k, x, factor, dst);
        None
    }
}

/// How an MX block's shared exponent comes from its largest magnitude's binary32 bits
/// (`crate::block::mx::rule_field`, the one definition of the floor, ceil and even rules),
/// and the scale exponent is `e − 127 − E` (element emax `E`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MxRule {
    /// 0 floor, 1 ceil, 2 even.
    pub rule: u8,
    /// The even rule's `2^(23 − m − 1)`.
    pub half: u32,
    /// `127 + E`.
    pub off: i32,
}

/// MX blocks of 32 in one pass: each block's largest magnitude, its scale exponent by
/// `rule`, the scale code `s + 127` into `scales`, and the element codes as [`blocks8`] makes
/// them with the factor `2^−s`. Returns `(saturated, flushed)`; `None` below AVX2, for a
/// length that is not whole blocks of 32, a format without −0, or when some block needs the
/// general rules (a zero, subnormal or non-finite maximum, or a scale exponent outside
/// `[−126, 126]`, where a factor or its inverse would leave binary32's normal range): the
/// caller then redoes everything.
pub(crate) fn mx8(
    k: &Cast8,
    rule: MxRule,
    x: &[f32],
    codes: &mut [u8],
    scales: &mut [u8],
) -> Option<(u64, u64)> {
    assert_eq!(x.len(), codes.len(), "internal: mx8 lengths differ");
    if !available()
        || !x.len().is_multiple_of(32)
        || !k.zero_keeps_sign
        || k.unsigned
        || rule.rule > 2
    {
        return None;
    }
    assert_eq!(scales.len(), x.len() / 32, "internal: mx8 scales");
    #[cfg(target_arch = "x86_64")]
    {
        let mut c = [0u64; 2];
        macro_rules! go {
            ($($d:literal)*) => {
                match (k.dshift, rule.rule) {
                    // SAFETY: `available()` confirmed the AVX2 level (`active() <= detected()`).
                    $(($d, 0) => unsafe { x86::mx::<$d, 0>(k, rule, x, codes, scales, &mut c) },
                    ($d, 1) => unsafe { x86::mx::<$d, 1>(k, rule, x, codes, scales, &mut c) },
                    ($d, _) => unsafe { x86::mx::<$d, 2>(k, rule, x, codes, scales, &mut c) },)*
                    _ => return None,
                }
            };
        }
        go!(16 17 18 19 20 21 22 23).then_some((c[0], c[1]))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (k, x, codes, scales);
        None
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::Cast8;
    use std::arch::x86_64::*;

    /// What [`avx2`] rounds: binary32 lanes, 32 elements at a time (a slice of binary32,
    /// or values an operation computes in registers).
    pub(crate) trait Lanes32 {
        /// The number of elements.
        fn len(&self) -> usize;
        /// The binary32 bits of elements `i..i + 32` (`i + 32 ≤ len`).
        ///
        /// # Safety
        ///
        /// The CPU has AVX2 (the caller is compiled with it).
        unsafe fn whole(&mut self, i: usize) -> [__m256i; 4];
        /// Elements `i..len` (fewer than 32), then binary32 zeros.
        ///
        /// # Safety
        ///
        /// As [`Lanes32::whole`].
        unsafe fn tail(&mut self, i: usize) -> [__m256i; 4];
    }

    /// The sum of the four 64-bit lanes of `v` (the kernels' widened counters).
    #[inline(always)]
    pub(crate) unsafe fn sum_u64_lanes(v: __m256i) -> u64 {
        let mut l = [0u64; 4];
        _mm256_storeu_si256(l.as_mut_ptr().cast(), v);
        l.iter().sum()
    }

    /// Store the 32 codes of four vectors of 32-bit lanes (every lane below 256) at `at`, in
    /// lane order: one unsigned pack tree and one 32-byte store (the byte kernels' output).
    #[inline(always)]
    pub(crate) unsafe fn store_bytes32(at: *mut u8, c: [__m256i; 4]) {
        let b = _mm256_packus_epi16(
            _mm256_packus_epi32(c[0], c[1]),
            _mm256_packus_epi32(c[2], c[3]),
        );
        let o = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(at.cast(), o);
    }

    /// The sum of the eight 32-bit lanes of `v`, unsigned (the kernels' lane counters).
    #[inline(always)]
    pub(crate) unsafe fn sum_u32_lanes(v: __m256i) -> u64 {
        let mut l = [0u32; 8];
        _mm256_storeu_si256(l.as_mut_ptr().cast(), v);
        l.iter().map(|&x| u64::from(x)).sum()
    }

    /// A slice of binary32 as [`Lanes32`].
    pub(crate) struct F32s<'a>(pub &'a [f32]);

    impl Lanes32 for F32s<'_> {
        fn len(&self) -> usize {
            self.0.len()
        }
        #[inline(always)]
        unsafe fn whole(&mut self, i: usize) -> [__m256i; 4] {
            let s = self.0[i..i + 32].as_ptr();
            [
                _mm256_loadu_si256(s.cast()),
                _mm256_loadu_si256(s.add(8).cast()),
                _mm256_loadu_si256(s.add(16).cast()),
                _mm256_loadu_si256(s.add(24).cast()),
            ]
        }
        #[inline(always)]
        unsafe fn tail(&mut self, i: usize) -> [__m256i; 4] {
            let mut t = [0f32; 32];
            t[..self.0.len() - i].copy_from_slice(&self.0[i..]);
            F32s(&t).whole(0)
        }
    }

    /// The lane constants of [`scaled_step!`].
    #[derive(Clone, Copy)]
    struct Scaled {
        abs: __m256i,
        exp_mask: __m256i,
        a_emin: __m256i,
        a_eclamp: __m256i,
        a_shift: __m256i,
        max_ord: __m256i,
        sign_bit: __m256i,
        zero: __m256i,
    }

    impl Scaled {
        #[target_feature(enable = "avx2")]
        fn new(k: &Cast8) -> Scaled {
            let set = |v: u32| _mm256_set1_epi32(v as i32);
            Scaled {
                abs: set(0x7fff_ffff),
                exp_mask: set(k.exp_mask),
                a_emin: set(k.a_emin),
                a_eclamp: set(k.a_eclamp),
                a_shift: set(k.a_shift),
                max_ord: set(k.max_ord),
                sign_bit: set(k.sign_bit),
                zero: _mm256_setzero_si256(),
            }
        }
    }

    /// The rounding core of the block kernels: eight elements `x` scaled by `f` (the
    /// binary32 product), their magnitude ordinals rounded to nearest even before
    /// saturation, in 32-bit lanes (each below 2^31: `|y|`'s binade is clamped at
    /// `a_eclamp`, and a NaN or ±Inf gives a large positive ordinal). `D = 23 − m`. A
    /// macro: it is compiled inside each caller's target features.
    macro_rules! scaled_ord {
        ($c:expr, $d:ident, $x:expr, $f:expr) => {{
            let c: Scaled = $c;
            let y = _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps($x), $f));
            let a = _mm256_and_si256(y, c.abs);
            let ef = _mm256_min_epu32(
                _mm256_max_epu32(_mm256_and_si256(a, c.exp_mask), c.a_emin),
                c.a_eclamp,
            );
            let cb = _mm256_add_epi32(ef, c.a_shift);
            let s = _mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(cb));
            _mm256_add_epi32(
                _mm256_srli_epi32::<$d>(_mm256_sub_epi32(ef, c.a_emin)),
                _mm256_sub_epi32(_mm256_castps_si256(s), cb),
            )
        }};
    }

    /// The element step of the block kernels: [`scaled_ord!`] with saturation at the
    /// largest finite value and the sign of `x`, as codes in 32-bit lanes; saturated lanes
    /// and nonzero `x` with a zero ordinal decrease the counters `sat` and `fl` (by true
    /// masks, −1). A macro: it is compiled inside each caller's target features, its
    /// counters in the caller's registers.
    macro_rules! scaled_step {
        ($c:expr, $d:ident, $x:expr, $f:expr, $sat:ident, $fl:ident) => {{
            let c: Scaled = $c;
            let x: __m256i = $x;
            let ord = scaled_ord!(c, $d, x, $f);
            // every lane is below 2^31: the signed comparisons are the unsigned ones
            $sat = _mm256_sub_epi32($sat, _mm256_cmpgt_epi32(ord, c.max_ord));
            let x_zero = _mm256_cmpeq_epi32(_mm256_and_si256(x, c.abs), c.zero);
            let ord_zero = _mm256_cmpeq_epi32(ord, c.zero);
            $fl = _mm256_sub_epi32($fl, _mm256_andnot_si256(x_zero, ord_zero));
            let sign = _mm256_and_si256(_mm256_srai_epi32::<31>(x), c.sign_bit);
            _mm256_or_si256(_mm256_min_epu32(ord, c.max_ord), sign)
        }};
    }

    /// 32 lanes per step (four vectors), the tail through a zero-padded stack block (a zero
    /// adds nothing to the counts); `D = 23 − m` and `KEEP` (a zero keeps its sign) are
    /// compile-time so that the shifts take immediates and no register. The rounding runs in
    /// 32-bit lanes; the ordinals, signs and the masks the counts need are packed to bytes
    /// (the four vectors' packs all order the lanes alike), where one operation covers 32
    /// elements: the sign of a zero, the codes, and the counts in byte counters widened
    /// every 255 steps. Returns the largest `|x|` bits.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn avx2<const D: i32, const KEEP: bool, S: Lanes32>(
        k: &Cast8,
        mut src: S,
        dst: &mut [u8],
        c: &mut [u64; 3],
    ) -> u32 {
        let set = |v: u32| _mm256_set1_epi32(v as i32);
        let abs = set(0x7fff_ffff);
        // what `amax` keeps of each input: `|x|`, or all of `x` for an unsigned format
        let key = set(k.key());
        let exp_mask = set(k.exp_mask);
        let a_emin = set(k.a_emin);
        let a_shift = set(k.a_shift);
        let min_normal = set(k.min_normal);
        let sign_byte = _mm256_set1_epi8(k.sign_bit as u8 as i8);
        let zero = _mm256_setzero_si256();
        let mut amax = zero;
        // one vector of eight binary32 inputs: (ordinal, exact, tiny, negative) in 32-bit
        // lanes, the ordinal valid unless an input reaches `over_min` (the caller redoes
        // such a slice). Macros, not closures: the state stays in registers.
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
                amax = _mm256_max_epu32(amax, _mm256_and_si256(x, key));
                // every lane of `a` is below 2^31: the signed comparison is the unsigned one
                (
                    ord,
                    _mm256_cmpeq_epi32(y, a),
                    _mm256_cmpgt_epi32(min_normal, a),
                    _mm256_srai_epi32::<31>(x),
                )
            }};
        }
        // four vectors of 32-bit lanes to one of bytes (signed saturation keeps masks masks)
        macro_rules! pack {
            ($v:expr, $f32:ident, $f16:ident) => {{
                let v: [__m256i; 4] = $v;
                $f16($f32(v[0], v[1]), $f32(v[2], v[3]))
            }};
        }
        // the order of the packs' lanes back to the elements'
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        // byte counters (exact, underflow, flushed), each decreased by true masks (−1)
        let (mut eb, mut ub, mut fb): (__m256i, __m256i, __m256i);
        // their widened sums (four 64-bit lanes each)
        let (mut e64, mut u64s, mut f64s) = (zero, zero, zero);
        macro_rules! block {
            ($s:expr, $d:expr) => {{
                let (s, d): ([__m256i; 4], *mut u8) = ($s, $d);
                let l0 = lane!(s[0]);
                let l1 = lane!(s[1]);
                let l2 = lane!(s[2]);
                let l3 = lane!(s[3]);
                let ord = pack!(
                    [l0.0, l1.0, l2.0, l3.0],
                    _mm256_packus_epi32,
                    _mm256_packus_epi16
                );
                let same = pack!(
                    [l0.1, l1.1, l2.1, l3.1],
                    _mm256_packs_epi32,
                    _mm256_packs_epi16
                );
                let tiny = pack!(
                    [l0.2, l1.2, l2.2, l3.2],
                    _mm256_packs_epi32,
                    _mm256_packs_epi16
                );
                let neg = pack!(
                    [l0.3, l1.3, l2.3, l3.3],
                    _mm256_packs_epi32,
                    _mm256_packs_epi16
                );
                let is_zero = _mm256_cmpeq_epi8(ord, zero);
                let mut sign = _mm256_and_si256(neg, sign_byte);
                if !KEEP {
                    sign = _mm256_andnot_si256(is_zero, sign);
                }
                eb = _mm256_sub_epi8(eb, same);
                ub = _mm256_sub_epi8(ub, _mm256_andnot_si256(same, tiny));
                fb = _mm256_sub_epi8(fb, _mm256_andnot_si256(same, is_zero));
                let code = _mm256_or_si256(ord, sign);
                _mm256_storeu_si256(d.cast(), _mm256_permutevar8x32_epi32(code, order));
            }};
        }
        // the byte counters into the wide sums (the caller zeroes them before reuse)
        macro_rules! widen {
            () => {{
                e64 = _mm256_add_epi64(e64, _mm256_sad_epu8(eb, zero));
                u64s = _mm256_add_epi64(u64s, _mm256_sad_epu8(ub, zero));
                f64s = _mm256_add_epi64(f64s, _mm256_sad_epu8(fb, zero));
            }};
        }
        let n = src.len();
        let whole = n / 32 * 32;
        let mut i = 0;
        while i < whole {
            // at most 255 steps between widenings: a byte counter counts one per step
            let end = whole.min(i + 255 * 32);
            (eb, ub, fb) = (zero, zero, zero);
            while i < end {
                block!(src.whole(i), dst[i..i + 32].as_mut_ptr());
                i += 32;
            }
            widen!();
        }
        if whole < n {
            let mut o = [0u8; 32];
            (eb, ub, fb) = (zero, zero, zero);
            block!(src.tail(whole), o.as_mut_ptr());
            dst[whole..].copy_from_slice(&o[..n - whole]);
            widen!();
        }
        // the zero padding of the tail counted as exact
        let padded = (n.div_ceil(32) * 32) as u64;
        c[0] = padded - sum_u64_lanes(e64);
        c[1] = sum_u64_lanes(u64s);
        c[2] = sum_u64_lanes(f64s);
        let mut l = [0u32; 8];
        _mm256_storeu_si256(l.as_mut_ptr().cast(), amax);
        l.into_iter().max().unwrap_or(0)
    }

    /// [`super::blocks8`]: 32 lanes per step, each vector of eight within one block (`b` is
    /// a multiple of 8), the tail through a zero-padded stack block.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn blocks<const D: i32>(
        k: &Cast8,
        x: &[f32],
        b: usize,
        factor: &[f32],
        dst: &mut [u8],
        c: &mut [u64; 2],
    ) {
        let sc = Scaled::new(k);
        let (mut sat_n, mut fl_n) = (sc.zero, sc.zero);
        macro_rules! lane {
            ($x:expr, $f:expr) => {
                scaled_step!(sc, D, $x, $f, sat_n, fl_n)
            };
        }
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        macro_rules! block {
            ($s:expr, $d:expr, $f:expr) => {{
                let (s, d, f): (*const f32, *mut u8, [__m256; 4]) = ($s, $d, $f);
                let r0 = lane!(_mm256_loadu_si256(s.cast()), f[0]);
                let r1 = lane!(_mm256_loadu_si256(s.add(8).cast()), f[1]);
                let r2 = lane!(_mm256_loadu_si256(s.add(16).cast()), f[2]);
                let r3 = lane!(_mm256_loadu_si256(s.add(24).cast()), f[3]);
                let b =
                    _mm256_packus_epi16(_mm256_packus_epi32(r0, r1), _mm256_packus_epi32(r2, r3));
                _mm256_storeu_si256(d.cast(), _mm256_permutevar8x32_epi32(b, order));
            }};
        }
        let n = x.len();
        // the factor of the vector at element `i` (zero for the tail's padding)
        let fac = |i: usize| _mm256_set1_ps(if i < n { factor[i / b] } else { 0.0 });
        let whole = n / 32 * 32;
        let mut i = 0;
        if b.is_multiple_of(32) {
            while i < whole {
                let f = fac(i);
                block!(
                    x[i..i + 32].as_ptr(),
                    dst[i..i + 32].as_mut_ptr(),
                    [f, f, f, f]
                );
                i += 32;
            }
        } else {
            while i < whole {
                let f = [fac(i), fac(i + 8), fac(i + 16), fac(i + 24)];
                block!(x[i..i + 32].as_ptr(), dst[i..i + 32].as_mut_ptr(), f);
                i += 32;
            }
        }
        if whole < n {
            let mut t = [0f32; 32];
            let mut o = [0u8; 32];
            t[..n - whole].copy_from_slice(&x[whole..]);
            let f = [fac(i), fac(i + 8), fac(i + 16), fac(i + 24)];
            block!(t.as_ptr(), o.as_mut_ptr(), f);
            dst[whole..].copy_from_slice(&o[..n - whole]);
        }
        c[0] = sum_u32_lanes(sat_n);
        c[1] = sum_u32_lanes(fl_n);
    }

    /// [`super::mx8`]: per block of 32, the four vectors stay in registers from the maximum
    /// to the codes. Returns false when a block needs the general rules.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mx<const D: i32, const RULE: u8>(
        k: &Cast8,
        rule: super::MxRule,
        x: &[f32],
        codes: &mut [u8],
        scales: &mut [u8],
        c: &mut [u64; 2],
    ) -> bool {
        let sc = Scaled::new(k);
        let (abs, zero) = (sc.abs, sc.zero);
        let max_b = _mm256_set1_epi8(k.max_ord as u8 as i8);
        let sign_b = _mm256_set1_epi8(k.sign_bit as u8 as i8);
        // byte counters (not saturated, flushed), one per element of a block, each
        // decreased by true masks (−1) and widened every 255 blocks
        let (mut ns_b, mut fl_b) = (zero, zero);
        let (mut ns_64, mut fl_64) = (zero, zero);
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        // The block's loads, maximum and factor come one iteration ahead of its rounding
        // (software pipelining): the chain load → maximum → scale → factor of one block
        // overlaps the rounding of the one before.
        macro_rules! head {
            ($k:expr) => {{
                let p = x.as_ptr().add($k * 32);
                let xs = [
                    _mm256_loadu_si256(p.cast()),
                    _mm256_loadu_si256(p.add(8).cast()),
                    _mm256_loadu_si256(p.add(16).cast()),
                    _mm256_loadu_si256(p.add(24).cast()),
                ];
                // the block's largest magnitude (bits order as magnitudes, below 2^31)
                let m = _mm256_max_epi32(
                    _mm256_max_epi32(_mm256_and_si256(xs[0], abs), _mm256_and_si256(xs[1], abs)),
                    _mm256_max_epi32(_mm256_and_si256(xs[2], abs), _mm256_and_si256(xs[3], abs)),
                );
                let m = _mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m));
                let m = _mm_max_epi32(m, _mm_shuffle_epi32::<0b1110>(m));
                let m = _mm_max_epi32(m, _mm_shuffle_epi32::<0b01>(m));
                let bits = _mm_cvtsi128_si32(m) as u32;
                let field = (bits >> 23) as i32;
                let e =
                    crate::block::mx::rule_field(RULE, bits.into(), 23, rule.half.into()) as i32;
                let sc = e - rule.off;
                let ok = (1..=254).contains(&field) && (-126..=126).contains(&sc);
                let f = _mm256_castsi256_ps(_mm256_set1_epi32((((127 - sc) & 0xff) << 23) as i32));
                (xs, f, (sc + 127) as u8, ok)
            }};
        }
        let nb = x.len() / 32;
        let mut ok = true;
        if nb == 0 {
            return ok;
        }
        let (mut xs, mut f, mut code, mut ok_b) = head!(0);
        for k in 0..nb {
            // the last iteration reads its own block again (no branch)
            let next = head!((k + 1).min(nb - 1));
            scales[k] = code;
            ok &= ok_b;
            let mut r = [zero; 4];
            for q in 0..4 {
                r[q] = scaled_ord!(sc, D, xs[q], f);
            }
            // The block's 32 ordinals, signs and zero inputs packed to bytes (the packs
            // order all three alike): an ordinal (below 2^31) saturates to 255 where it
            // exceeds a byte, above every `max_ord`, and is zero only where it was; a
            // signed pack of `x` is negative exactly where `x` is; one of `x << 1` (the
            // sign dropped) is zero exactly where `x` is ±0. Then the saturation, the sign
            // and the counts, one operation for 32 elements.
            let ord = _mm256_packus_epi16(
                _mm256_packus_epi32(r[0], r[1]),
                _mm256_packus_epi32(r[2], r[3]),
            );
            let neg = _mm256_packs_epi16(
                _mm256_packs_epi32(xs[0], xs[1]),
                _mm256_packs_epi32(xs[2], xs[3]),
            );
            let nonzero = _mm256_packs_epi16(
                _mm256_packs_epi32(_mm256_slli_epi32::<1>(xs[0]), _mm256_slli_epi32::<1>(xs[1])),
                _mm256_packs_epi32(_mm256_slli_epi32::<1>(xs[2]), _mm256_slli_epi32::<1>(xs[3])),
            );
            let clamped = _mm256_min_epu8(ord, max_b);
            ns_b = _mm256_sub_epi8(ns_b, _mm256_cmpeq_epi8(clamped, ord));
            fl_b = _mm256_sub_epi8(
                fl_b,
                _mm256_andnot_si256(
                    _mm256_cmpeq_epi8(nonzero, zero),
                    _mm256_cmpeq_epi8(ord, zero),
                ),
            );
            let b = _mm256_or_si256(clamped, _mm256_blendv_epi8(zero, sign_b, neg));
            _mm256_storeu_si256(
                codes[k * 32..k * 32 + 32].as_mut_ptr().cast(),
                _mm256_permutevar8x32_epi32(b, order),
            );
            if k % 255 == 254 || k + 1 == nb {
                ns_64 = _mm256_add_epi64(ns_64, _mm256_sad_epu8(ns_b, zero));
                fl_64 = _mm256_add_epi64(fl_64, _mm256_sad_epu8(fl_b, zero));
                (ns_b, fl_b) = (zero, zero);
            }
            (xs, f, code, ok_b) = next;
        }
        c[0] = 32 * nb as u64 - sum_u64_lanes(ns_64);
        c[1] = sum_u64_lanes(fl_64);
        ok
    }
}
