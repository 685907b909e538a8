//! Add, Subtract, Multiply and Divide of byte codes into byte codes by AVX2: each operand
//! decoded to binary32 in the lanes, the operation in binary32, the result rounded by the
//! byte kernel of [`super::cast8`] (round to nearest even).
//!
//! A code of at most 8 bits decodes by moving its fields into binary32's and scaling:
//!
//! ```text
//! bits  = (code & mag) << (23 − m)  |  sign(code) << 31
//! value = f32(bits) · 2^(127 − bias)
//! ```
//!
//! (a subnormal code gives a binary32 subnormal, and the same scale makes it right; the
//! product is exact). The codes this does not decode — NaN, ±Inf, and the codes that stand
//! for something else (a P3109 NaN at the code of −0) — are recognised in the bytes by
//! `mag > thr` or `code == eq`, and a work item that holds one is sent back to the caller.
//!
//! Whether the binary32 operation and one rounding give the exact operation's result is not
//! assumed here: the caller (`ops::PairTable`) runs this on every pair of codes and takes it
//! only when every code and count equals its table's.

use crate::format::FloatFormat;

/// How one operand format's codes decode in the lanes (see the module text).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Decode8 {
    /// The code bits: `2^bits − 1`.
    pub code_mask: u8,
    /// The magnitude bits.
    pub mag: u8,
    /// The sign bit.
    pub sign: u8,
    /// `23 − m`.
    pub shift: u32,
    /// `31 −` the sign bit's position.
    pub sign_shift: u32,
    /// `2^(127 − bias)`.
    pub scale: f32,
    /// Magnitudes above it are not decoded (127: none).
    pub thr: u8,
    /// One more code that is not decoded, if any.
    pub eq: Option<u8>,
}

impl Decode8 {
    /// The decoding of `f`'s codes, when `f` is signed, has at most 8 bits, at most 8
    /// exponent bits, a normal binary32 scale, and at most 16 codes that the field move gets
    /// wrong.
    pub(crate) fn new(f: &FloatFormat) -> Option<Decode8> {
        let bits = f.bits();
        let (e, m) = (f.exp_bits(), f.man_bits());
        let k = 127 - f.bias();
        if bits > 8 || e > 8 || !f.is_signed() || !(-126..=127).contains(&k) {
            return None;
        }
        let sign = 1u8 << (bits - 1);
        let mut d = Decode8 {
            code_mask: ((1u32 << bits) - 1) as u8,
            mag: sign - 1,
            sign,
            shift: 23 - m,
            sign_shift: 31 - (bits - 1),
            scale: f32::from_bits(((127 + k) as u32) << 23),
            thr: 127,
            eq: None,
        };
        // the codes the field move gets wrong (a NaN is never right)
        let wrong: Vec<u8> = (0..=d.code_mask)
            .filter(|&c| {
                let want = f.decode(u64::from(c));
                let got = f64::from(d.value(c));
                !(want == got && want.is_sign_negative() == got.is_sign_negative())
            })
            .collect();
        // recognise them by `mag > thr` or `code == eq`, whichever choice of `eq` (none or
        // one of them) leaves the fewest codes undecoded
        let count = |thr: u8, eq: Option<u8>| {
            (0..=d.code_mask)
                .filter(|&c| (c & d.mag) > thr || Some(c) == eq)
                .count()
        };
        let thr_of = |eq: Option<u8>| {
            wrong
                .iter()
                .filter(|&&c| Some(c) != eq)
                .map(|&c| (c & d.mag).saturating_sub(1))
                .min()
                .unwrap_or(127)
        };
        let (thr, eq) = std::iter::once(None)
            .chain(wrong.iter().map(|&c| Some(c)))
            .map(|eq| (thr_of(eq), eq))
            .min_by_key(|&(thr, eq)| count(thr, eq))?;
        // a wrong code of magnitude 0 needs `eq`
        if wrong.iter().any(|&c| !((c & d.mag) > thr || Some(c) == eq)) || count(thr, eq) > 16 {
            return None;
        }
        (d.thr, d.eq) = (thr, eq);
        Some(d)
    }

    /// The lanes' decoding of `code`, in scalar arithmetic (the same binary32 operations).
    pub(crate) fn value(&self, code: u8) -> f32 {
        let bits = (u32::from(code & self.mag) << self.shift)
            | (u32::from(code & self.sign) << self.sign_shift);
        f32::from_bits(bits) * self.scale
    }

    /// Whether the lanes leave `code` undecoded (`mag > thr` or `code == eq`).
    pub(crate) fn undecoded(&self, code: u8) -> bool {
        let c = code & self.code_mask;
        (c & self.mag) > self.thr || Some(c) == self.eq
    }
}

/// The operations this kernel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arith {
    /// `a + b`.
    Add,
    /// `a − b`.
    Sub,
    /// `a · b`.
    Mul,
    /// `a / b`.
    Div,
}

impl Arith {
    /// The binary32 operation, as the lanes compute it.
    pub(crate) fn apply(self, x: f32, y: f32) -> f32 {
        match self {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div => x / y,
        }
    }
}

/// What [`pair8`] computed, when the work item held no undecoded code and no result at or
/// above the rounding's `over_min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PairCounts {
    /// Inexact results.
    pub inexact: u64,
    /// Inexact results below the smallest normal.
    pub underflow: u64,
}

/// `out[i] = round(a[i] op b[i])` with the decodings `da`, `db` and the rounding constants
/// `k`; `None` (the codes in `out` are not to be used) when the CPU lacks AVX2, `k`'s `m`
/// is above 7, an operand code is undecoded, or a result reaches `k.over_min` (an overflow,
/// a NaN, ±Inf): the caller then computes the work item another way.
pub(crate) fn pair8(
    op: Arith,
    k: &super::cast8::Cast8,
    (da, db): (&Decode8, &Decode8),
    a: &[u8],
    b: &[u8],
    out: &mut [u8],
) -> Option<PairCounts> {
    assert!(
        a.len() == out.len() && b.len() == out.len(),
        "internal: pair8 lengths differ"
    );
    if !super::cast8::available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut c = [0u64; 3];
        let byte = da.code_mask == 0xff && db.code_mask == 0xff;
        // SAFETY: `available()` confirmed the AVX2 level (`active() <= detected()`).
        let (amax, undecoded) = unsafe {
            macro_rules! go {
                ($byte:literal, $($d:literal)*) => {{
                    let mut src = x86::Pair::<$byte>::new(op, da, db, a, b);
                    let amax = match (k.dshift, k.zero_keeps_sign) {
                        $(($d, true) => super::cast8::x86::avx2::<$d, true, _>(k, &mut src, out, &mut c),
                        ($d, false) => super::cast8::x86::avx2::<$d, false, _>(k, &mut src, out, &mut c),)*
                        _ => return None,
                    };
                    (amax, src.undecoded())
                }};
            }
            if byte {
                go!(true, 16 17 18 19 20 21 22 23)
            } else {
                go!(false, 16 17 18 19 20 21 22 23)
            }
        };
        (amax < k.over_min && !undecoded).then_some(PairCounts {
            inexact: c[0],
            underflow: c[1],
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, k, da, db, a, b, out);
        None
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Arith, Decode8};
    use crate::simd::cast8::x86::Lanes32;
    use std::arch::x86_64::*;

    /// One operand's lane constants.
    #[derive(Clone, Copy)]
    struct Lane {
        code_mask: __m256i,
        low: __m256i,
        thr: __m256i,
        eq: __m256i,
        shift: __m128i,
        sign_shift: __m128i,
        mag: __m256i,
        sign: __m256i,
        fields: __m256i,
        scale: __m256,
    }

    impl Lane {
        #[target_feature(enable = "avx2")]
        fn new(d: &Decode8) -> Lane {
            let b = |v: u8| _mm256_set1_epi8(v as i8);
            let w = |v: u32| _mm256_set1_epi32(v as i32);
            Lane {
                code_mask: b(d.code_mask),
                low: b(d.mag),
                thr: b(d.thr),
                // no second undecoded code: one that no masked code equals (a format of 8
                // bits has none to spare, and flags its largest magnitude, which only sends
                // work back)
                eq: b(d
                    .eq
                    .unwrap_or(if d.code_mask == 0xff { 0x7f } else { 0xff })),
                shift: _mm_cvtsi32_si128(d.shift as i32),
                sign_shift: _mm_cvtsi32_si128(d.sign_shift as i32),
                mag: w(u32::from(d.mag)),
                sign: w(u32::from(d.sign)),
                fields: w((u32::from(d.mag) << d.shift) | 0x8000_0000),
                scale: _mm256_set1_ps(d.scale),
            }
        }
    }

    /// Two operands of byte codes and an operation as [`Lanes32`]; `flag` gathers the
    /// undecoded codes. `BYTE`: both formats have 8 bits (the sign at bit 7), and a code
    /// sign-extends into its lane: `bits = (x << (23 − m)) & (mag << (23 − m) | 2^31)`;
    /// otherwise the magnitude and the sign move separately.
    pub(super) struct Pair<'a, const BYTE: bool> {
        op: Arith,
        a: &'a [u8],
        b: &'a [u8],
        la: Lane,
        lb: Lane,
        flag: __m256i,
        ahead: [__m256i; 4],
        ahead_at: usize,
    }

    impl<'a, const BYTE: bool> Pair<'a, BYTE> {
        #[target_feature(enable = "avx2")]
        pub(super) fn new(
            op: Arith,
            da: &Decode8,
            db: &Decode8,
            a: &'a [u8],
            b: &'a [u8],
        ) -> Pair<'a, BYTE> {
            Pair {
                op,
                a,
                b,
                la: Lane::new(da),
                lb: Lane::new(db),
                flag: _mm256_setzero_si256(),
                ahead: [_mm256_setzero_si256(); 4],
                ahead_at: usize::MAX,
            }
        }

        /// The results of elements `i..i + 32` (`i + 32 ≤ len`).
        #[inline(always)]
        unsafe fn compute(&mut self, i: usize) -> [__m256i; 4] {
            debug_assert!(i + 32 <= self.a.len() && self.a.len() == self.b.len());
            // in bounds: `i + 32 ≤ len`
            let x = decode::<BYTE>(&self.la, self.a.as_ptr().add(i), &mut self.flag);
            let y = decode::<BYTE>(&self.lb, self.b.as_ptr().add(i), &mut self.flag);
            macro_rules! each {
                ($f:ident) => {
                    [
                        _mm256_castps_si256($f(x[0], y[0])),
                        _mm256_castps_si256($f(x[1], y[1])),
                        _mm256_castps_si256($f(x[2], y[2])),
                        _mm256_castps_si256($f(x[3], y[3])),
                    ]
                };
            }
            match self.op {
                Arith::Add => each!(_mm256_add_ps),
                Arith::Sub => each!(_mm256_sub_ps),
                Arith::Mul => each!(_mm256_mul_ps),
                Arith::Div => each!(_mm256_div_ps),
            }
        }

        /// Whether an undecoded code was seen.
        #[target_feature(enable = "avx2")]
        pub(super) fn undecoded(&self) -> bool {
            _mm256_testz_si256(self.flag, self.flag) == 0
        }
    }

    /// The 32 codes at `p` (readable) in binary32 lanes, their undecoded codes into `flag`.
    #[inline(always)]
    unsafe fn decode<const BYTE: bool>(l: &Lane, p: *const u8, flag: &mut __m256i) -> [__m256; 4] {
        let mut v = _mm256_loadu_si256(p.cast());
        if !BYTE {
            v = _mm256_and_si256(v, l.code_mask);
        }
        // magnitudes are below 128: the signed byte comparison is the unsigned one
        let odd = _mm256_or_si256(
            _mm256_cmpgt_epi8(_mm256_and_si256(v, l.low), l.thr),
            _mm256_cmpeq_epi8(v, l.eq),
        );
        *flag = _mm256_or_si256(*flag, odd);
        let one = |k: usize| {
            let q = _mm_loadl_epi64(p.add(8 * k).cast());
            let bits = if BYTE {
                let x = _mm256_cvtepi8_epi32(q);
                _mm256_and_si256(_mm256_sll_epi32(x, l.shift), l.fields)
            } else {
                let x = _mm256_cvtepu8_epi32(q);
                _mm256_or_si256(
                    _mm256_sll_epi32(_mm256_and_si256(x, l.mag), l.shift),
                    _mm256_sll_epi32(_mm256_and_si256(x, l.sign), l.sign_shift),
                )
            };
            _mm256_mul_ps(_mm256_castsi256_ps(bits), l.scale)
        };
        [one(0), one(1), one(2), one(3)]
    }

    impl<const BYTE: bool> Lanes32 for &mut Pair<'_, BYTE> {
        fn len(&self) -> usize {
            self.a.len()
        }
        #[inline(always)]
        unsafe fn whole(&mut self, i: usize) -> [__m256i; 4] {
            // the results of the next 32 elements are computed one call ahead of their
            // rounding (software pipelining: the decode and the operation of one step
            // overlap the rounding of the one before)
            let r = if self.ahead_at == i {
                self.ahead
            } else {
                self.compute(i)
            };
            if i + 64 <= self.a.len() {
                self.ahead = self.compute(i + 32);
                self.ahead_at = i + 32;
            }
            r
        }
        #[inline(always)]
        unsafe fn tail(&mut self, i: usize) -> [__m256i; 4] {
            // zero codes after the last element, and binary32 zeros for their results
            // (which may be NaN: 0/0)
            let n = self.a.len() - i;
            let (mut ta, mut tb) = ([0u8; 32], [0u8; 32]);
            ta[..n].copy_from_slice(&self.a[i..]);
            tb[..n].copy_from_slice(&self.b[i..]);
            let mut p = Pair {
                a: &ta,
                b: &tb,
                ahead_at: usize::MAX,
                ..**self
            };
            let r = (&mut p).whole(0);
            self.flag = p.flag;
            let mut lanes = [0u32; 32];
            for (q, v) in r.iter().enumerate() {
                _mm256_storeu_si256(lanes[8 * q..].as_mut_ptr().cast(), *v);
            }
            lanes[n..].fill(0);
            let at = |q: usize| _mm256_loadu_si256(lanes[8 * q..].as_ptr().cast());
            [at(0), at(1), at(2), at(3)]
        }
    }
}
