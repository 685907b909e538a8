//! The element step of the block formats in one branch-free pass: a scaled element is rounded
//! to nearest even into a small signed element format with saturation, and its code and its
//! rounded value come out together (the general path runs the rounding kernel twice, once
//! for codes and once for values, and a third pass for the counts).
//!
//! For `a = |y|` in the lane type `I` (binary32 or binary64, `W` stored mantissa bits) and an
//! element format with `m` mantissa bits, smallest normal `h = 2^emin` and largest finite
//! value `max`:
//!
//! ```text
//! e  = clamp(⌊log2 a⌋, emin, emax + 1)      from the exponent field (subnormal a: emin)
//! M  = 2^(e − m + W)                        a < 2^(e+1) ≤ M, so a + M ∈ [M, 2M]
//! r  = (a ⊕ M) ⊖ M                          ⊕ rounds to nearest even at spacing 2^(e−m),
//!                                           the element's quantum in a's binade; ⊖ is exact
//! saturated = r > max,   r = min(r, max)
//! code = sign · 2^(bits−1) + (r < h ? r / 2^(emin−m)                  (subnormal)
//!                                   : (e_r + bias) · 2^m + frac_m(r)) (normal)
//! ```
//!
//! Both branches of the code are read from bits: for `r < h`, `r + h` lies in `[h, 2h)` and its
//! top `m` fraction bits are `r / 2^(emin−m)`. The result equals the rounding kernel's
//! (round to nearest even, [`crate::round::Overflow::Saturate`]) for every format that
//! [`Elem::new`] accepts; the tests compare the two paths bit for bit.

use crate::round::types::Word;
use crate::round::Float;
use crate::FloatFormat;

/// Elements per vector step: one AVX-512 register of binary32, two of binary64.
pub(crate) const LANES: usize = 16;

/// The constants of an element format in the lane type `I`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Elem<I: Float> {
    /// `I::MANT − m`.
    shift: I::Bits,
    /// The `I` exponent field of `h = 2^emin`.
    lo: I::Bits,
    /// The `I` exponent field of `2^(emax+1)`.
    hi: I::Bits,
    /// `2^emin`.
    h: I,
    /// The largest finite element value.
    max: I,
    /// `(lo − 1) · 2^m`: subtracted from a normal `r`'s shifted bits.
    normal_off: I::Bits,
    /// `2^m`: subtracted as well when `r < h`.
    sub_off: I::Bits,
    /// `I::BITS − 1`: moves the sign to bit 0.
    sign_in: I::Bits,
    /// `bits − 1`: moves it to the element's sign bit.
    sign_out: I::Bits,
    /// The element's magnitude bits (to count flushed elements).
    mag_mask: u8,
}

impl<I: Float> Elem<I> {
    /// The constants of `f`, or `None` when the fused step does not apply: more than 8 bits,
    /// no signed zero (`fnuz` formats and unsigned ones take the general path), or an
    /// exponent range the lane type cannot hold with room for the magic constant.
    pub(crate) fn new(f: &FloatFormat) -> Option<Self> {
        let m = f.man_bits();
        if f.bits() > 8 || !f.is_signed() || !f.has_zero() || !f.has_negative_zero() {
            return None;
        }
        if m + 1 >= I::MANT {
            return None;
        }
        let (emin, emax) = (f.emin(), f.emax());
        let lo = I::BIAS as i64 + emin as i64;
        let hi = I::BIAS as i64 + emax as i64 + 1;
        let magic_top = hi + (I::MANT - m) as i64;
        if lo < 1 || magic_top > 2 * I::BIAS as i64 {
            return None;
        }
        let w = |v: i64| <I::Bits as Word>::from_u64(v as u64);
        Some(Elem {
            shift: w((I::MANT - m) as i64),
            lo: w(lo),
            hi: w(hi),
            h: I::from_f64(crate::format::pow2(emin)),
            max: I::from_f64(f.max_finite()),
            normal_off: w((lo - 1) << m),
            sub_off: w(1 << m),
            sign_in: w(<I::Bits as Word>::BITS as i64 - 1),
            sign_out: w(f.bits() as i64 - 1),
            mag_mask: (f.max_code() & !f.sign_mask()) as u8,
        })
    }

    /// Round `y` (not NaN) to nearest even with saturation: `(code, signed value, saturated)`.
    #[inline(always)]
    pub(crate) fn round(&self, y: I) -> (u8, I, bool) {
        let mant = <I::Bits as Word>::from_u64(I::MANT as u64);
        let yb = y.to_bits();
        let sign_bit = <I::Bits as Word>::ONE.shl(self.sign_in);
        let ab = yb & !sign_bit;
        let field = ab.shr(mant).max_low(self.lo).min_low(self.hi);
        let magic = I::from_bits((field + self.shift).shl(mant));
        let a = I::from_bits(ab);
        let r = a.add(magic).sub(magic);
        let saturated = r > self.max;
        let r = if saturated { self.max } else { r };
        let small = r < self.h;
        let t = if small { r.add(self.h) } else { r };
        let mag = t.to_bits().shr(self.shift)
            - self.normal_off
            - <I::Bits as Word>::sel(small, self.sub_off, <I::Bits as Word>::ZERO);
        let sign = yb.shr(self.sign_in);
        let code = (mag | sign.shl(self.sign_out)).to_u64() as u8;
        let value = I::from_bits(r.to_bits() | (yb & sign_bit));
        (code, value, saturated)
    }

    /// Whether `|y|` lies within `2^−t` half quanta of a midpoint between two neighbours
    /// of the element grid (the quantum of `|y|`'s clamped binade): a rounding that an error
    /// that small in `y` could turn.
    #[inline(always)]
    pub(crate) fn near_midpoint(&self, y: I, t: u32) -> bool {
        let mant = <I::Bits as Word>::from_u64(I::MANT as u64);
        let abs = !<I::Bits as Word>::ONE.shl(self.sign_in);
        let ab = y.to_bits() & abs;
        let field = ab.shr(mant).max_low(self.lo).min_low(self.hi);
        let magic = I::from_bits((field + self.shift).shl(mant));
        let a = I::from_bits(ab);
        let r = a.add(magic).sub(magic);
        // half a quantum, 2^(e − m − 1), and the tolerance below it
        let m1 = mant - self.shift + <I::Bits as Word>::ONE;
        let half = I::from_bits((field - m1).shl(mant));
        let tol = I::from_bits((field - m1 - <I::Bits as Word>::from_u64(t as u64)).shl(mant));
        // |a − r| is exact
        let d = I::from_bits(a.sub(r).to_bits() & abs);
        I::from_bits(d.sub(half).to_bits() & abs) <= tol
    }
}

/// An element step: a scaled element to `(code, signed value, saturated)`.
pub(crate) trait Step<I: Float>: Copy {
    /// The code bits that hold the magnitude (a code with none of them set is a zero).
    fn mag_mask(&self) -> u8;
    /// Round one scaled element: `(code, signed value, saturated)`.
    fn round(&self, y: I) -> (u8, I, bool);
}

impl<I: Float> Step<I> for Elem<I> {
    #[inline(always)]
    fn mag_mask(&self) -> u8 {
        self.mag_mask
    }
    #[inline(always)]
    fn round(&self, y: I) -> (u8, I, bool) {
        Elem::round(self, y)
    }
}

/// MXINT8's element step: `k = clamp(RNE(64·y), −128, 127)`, code `k` as a byte, value
/// `k/64` (`+0` for `k = 0`). `64·y` is exact, and `u = 64·y ⊕ 1.5·2^W` is
/// `1.5·2^W + RNE(64·y)` while `|64·y| < 2^(W−1)`, an integer in the binade where the unit
/// is 1: clamped to `1.5·2^W + [−128, 127]`, its low eight bits are `k` in two's complement
/// and `u ⊖ 1.5·2^W = k` exactly (`+0` for `k = 0`). A larger `|64·y|` lands beyond the
/// clamp bounds and saturates as it should.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Int8;

impl<I: Float> Step<I> for Int8 {
    #[inline(always)]
    fn mag_mask(&self) -> u8 {
        0xff
    }
    #[inline(always)]
    fn round(&self, y: I) -> (u8, I, bool) {
        let magic = I::from_f64(1.5 * crate::format::pow2(I::MANT as i32));
        let lo = I::from_f64(1.5 * crate::format::pow2(I::MANT as i32) - 128.0);
        let hi = I::from_f64(1.5 * crate::format::pow2(I::MANT as i32) + 127.0);
        let u = y.mul(I::from_f64(64.0)).add(magic);
        let uc = if u < lo {
            lo
        } else if u > hi {
            hi
        } else {
            u
        };
        let saturated = uc != u;
        let code = uc.to_bits().to_u64() as u8;
        let value = uc.sub(magic).mul(I::from_f64(1.0 / 64.0));
        (code, value, saturated)
    }
}

/// The largest magnitude bits of a block (a NaN's or an infinity's bits if it holds one),
/// read from the bits: magnitude bits order as the magnitudes do, and, below the sign bit,
/// compare as signed integers (which AVX2 has for 64-bit lanes, and not unsigned).
#[inline(always)]
pub(crate) fn max_abs_bits<I: Float>(x: &[I]) -> I::Bits {
    let abs = <I::Bits as Word>::from_u64(u64::MAX >> (65 - <I::Bits as Word>::BITS as u64));
    x.iter()
        .fold(<I::Bits as Word>::ZERO, |m, e| m.max_low(e.to_bits() & abs))
}

/// How a rounded element `r` (lane type `I`) becomes its output value (type `O`).
pub(crate) trait Rescale<I: Float, O: Float>: Copy {
    /// The value of `r` under this block's scale.
    fn apply(self, r: I) -> O;
}

/// A scale in a float type `S`: `O(S(r) ⊗ s)`, the product rounded in `S`, then to `O`.
impl<I: Float, O: Float, S: Float> Rescale<I, O> for S {
    #[inline(always)]
    fn apply(self, r: I) -> O {
        O::from_f64(S::from_f64(r.to_f64()).mul(self).to_f64())
    }
}

/// A binary64 scale `s = hi + lo ≥ 0` held as two binary32 values, for binary32 values
/// `RN32(r · s)` computed in binary32 lanes as `±fma(|r|, hi, |r| ⊗ lo)` with the sign of
/// `r`: exact when `|r| ⊗ lo` is (see [`Split::new`]), because the fused multiply-add then
/// rounds `|r| · s` once (and the sign of a zero is `r`'s, as `r · s` gives it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Split {
    hi: f32,
    lo: f32,
}

impl Split {
    /// `s` split as `RN32(s) + (s − RN32(s))`, or `None` unless the remainder is a binary32
    /// with at most `24 − r_bits` significant bits and at least `2^−100` (or 0), so that its
    /// product with any `r` of `r_bits` significant bits and `|r| ≥ 2^−20` is exact.
    pub(crate) fn new(s: f64, r_bits: u32) -> Option<Split> {
        let hi = s as f32;
        let lo = s - hi as f64;
        let ok = s >= 0.0
            && hi.is_finite()
            && (hi == 0.0 || hi.is_normal())
            && (lo == 0.0
                || (lo.abs() >= crate::format::pow2(-100)
                    && (lo as f32) as f64 == lo
                    && ((lo as f32).to_bits() & ((1u32 << r_bits) - 1)) == 0));
        ok.then_some(Split { hi, lo: lo as f32 })
    }
}

impl<O: Float> Rescale<f32, O> for Split {
    #[inline(always)]
    fn apply(self, r: f32) -> O {
        let sign = r.to_bits() & 0x8000_0000;
        let a = f32::from_bits(r.to_bits() ^ sign);
        O::from_f32(f32::from_bits(
            a.mul_add(self.hi, a * self.lo).to_bits() | sign,
        ))
    }
}

/// `out[k]` = the largest magnitude bits of block `k` (`b` elements) of `x`, for every whole
/// block (`out.len() = x.len() / b`), one vector maximum per block.
///
/// (An AVX-512 kernel that reduces sixteen blocks at a time in registers was twice as fast
/// on data in cache but 50 % slower here on data streamed from memory, which is this
/// loop's case: the first touch of a work item.)
#[inline(always)]
pub(crate) fn block_maxima<I: Float>(x: &[I], b: usize, out: &mut [I::Bits]) {
    for (o, xb) in out.iter_mut().zip(x.chunks_exact(b)) {
        // (the barrier keeps the compiler from vectorising this loop across blocks with
        // gathers, slower than the per-block vector maximum)
        *o = std::hint::black_box(max_abs_bits(xb));
    }
}

/// Scale, round and write whole blocks of `b` elements: block `k`'s elements become
/// `y = x ⊗ factor[k]` (or `x ⊘ factor[k]` when `DIV`; in the lane type `I`), then codes, and
/// values `out_scale[k].apply(r)` ([`Rescale`]; none when `v` is empty). Returns
/// `(saturated, flushed)` over every block.
///
/// One loop nest over the work item with the counts in sixteen lanes, so that the element
/// step is one straight vector body and the constants stay in registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn blocks<
    I: Float,
    X: Float,
    S: Rescale<I, O>,
    O: Float,
    E: Step<I>,
    const DIV: bool,
>(
    e: &E,
    x: &[X],
    b: usize,
    factor: &[I],
    out_scale: &[S],
    v: &mut [O],
    c: &mut [u8],
) -> (u64, u64) {
    let e = *e;
    // (named functions, not closures: a closure may be compiled out of line, outside the
    // instruction set that `simd::dispatch` enables, where `mul_add` is a library call)
    let mut lanes = Lanes {
        saturated: [0; LANES],
        flushed: [0; LANES],
    };
    let mut tail = (0u32, 0u32);
    // `v` is empty when only codes are asked for: the values go to a scratch register
    let values = !v.is_empty();
    let mut sink = [O::default(); LANES];
    let params = factor.iter().zip(out_scale);
    if b.is_multiple_of(LANES) && values {
        for (((xb, cb), vb), (&f, &os)) in x
            .chunks_exact(b)
            .zip(c.chunks_exact_mut(b))
            .zip(v.chunks_exact_mut(b))
            .zip(params)
        {
            for ((xa, ca), va) in xb
                .chunks_exact(LANES)
                .zip(cb.chunks_exact_mut(LANES))
                .zip(vb.chunks_exact_mut(LANES))
            {
                let ca: &mut [u8; LANES] = ca.try_into().expect("chunks of LANES");
                let va: &mut [O; LANES] = va.try_into().expect("chunks of LANES");
                let xa: &[X; LANES] = xa.try_into().expect("chunks of LANES");
                step::<I, X, S, O, E, DIV>(&e, &mut lanes, xa, ca, va, f, os);
            }
        }
    } else if b.is_multiple_of(LANES) {
        for ((xb, cb), (&f, &os)) in x.chunks_exact(b).zip(c.chunks_exact_mut(b)).zip(params) {
            for (xa, ca) in xb.chunks_exact(LANES).zip(cb.chunks_exact_mut(LANES)) {
                let ca: &mut [u8; LANES] = ca.try_into().expect("chunks of LANES");
                let xa: &[X; LANES] = xa.try_into().expect("chunks of LANES");
                step::<I, X, S, O, E, DIV>(&e, &mut lanes, xa, ca, &mut sink, f, os);
            }
        }
    } else {
        for (k, ((xb, cb), (&f, &os))) in x
            .chunks_exact(b)
            .zip(c.chunks_exact_mut(b))
            .zip(params)
            .enumerate()
        {
            for (j, (&xi, ci)) in xb.iter().zip(cb.iter_mut()).enumerate() {
                let (code, value, s, fl) = one::<I, X, S, O, E, DIV>(&e, xi, f, os);
                *ci = code;
                if values {
                    v[k * b + j] = value;
                }
                tail.0 += s;
                tail.1 += fl;
            }
        }
    }
    lanes.saturated[0] += tail.0;
    lanes.flushed[0] += tail.1;
    let sum = |a: [u32; LANES]| a.iter().map(|&v| v as u64).sum::<u64>();
    (sum(lanes.saturated), sum(lanes.flushed))
}

/// Per-lane counts of [`blocks`] (they stay in registers: every index is a constant after
/// unrolling).
struct Lanes {
    saturated: [u32; LANES],
    flushed: [u32; LANES],
}

/// One element of [`blocks`]: `(code, value, saturated, flushed)`.
#[inline(always)]
fn one<I: Float, X: Float, S: Rescale<I, O>, O: Float, E: Step<I>, const DIV: bool>(
    e: &E,
    xi: X,
    f: I,
    os: S,
) -> (u8, O, u32, u32) {
    let xl = I::from_f64(xi.to_f64());
    let y = if DIV {
        I::from_f64(xl.to_f64() / f.to_f64())
    } else {
        xl.mul(f)
    };
    let (code, r, s) = e.round(y);
    let value = os.apply(r);
    let flush = code & e.mag_mask() == 0 && xi.to_f64() != 0.0;
    (code, value, s as u32, flush as u32)
}

/// One vector step of [`blocks`]: sixteen elements, their codes and values.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn step<I: Float, X: Float, S: Rescale<I, O>, O: Float, E: Step<I>, const DIV: bool>(
    e: &E,
    lanes: &mut Lanes,
    xa: &[X; LANES],
    ca: &mut [u8; LANES],
    va: &mut [O; LANES],
    f: I,
    os: S,
) {
    for i in 0..LANES {
        let (code, value, s, fl) = one::<I, X, S, O, E, DIV>(e, xa[i], f, os);
        ca[i] = code;
        va[i] = value;
        lanes.saturated[i] += s;
        lanes.flushed[i] += fl;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::round::{Overflow, RoundOptions, Rounder};

    /// Every binary32 pattern in a wide sample of binades, and every binary64 near the
    /// element's points: the fused step equals the rounding kernel (codes and values).
    #[test]
    fn fused_rounding_equals_the_kernel() {
        let sat = RoundOptions::default().overflow(Overflow::Saturate);
        let names = [
            "fp8-e4m3",
            "fp8-e5m2",
            "fp6-e3m2",
            "fp6-e2m3",
            "fp4-e2m1",
            "e3m4",
            "e2m5",
            "e5m0:fn",
            "e4m3:ieee",
        ];
        for name in names {
            let f = FloatFormat::parse(name).unwrap();
            let e32 = Elem::<f32>::new(&f).unwrap();
            let e64 = Elem::<f64>::new(&f).unwrap();
            let r32 = Rounder::<f32>::new(&f, &sat);
            let r64 = Rounder::<f64>::new(&f, &sat);
            // every binary32 whose top 20 bits vary (the low 12 bits in a few patterns)
            let mut xs32 = Vec::new();
            for hi in 0u32..(1 << 20) {
                for lo in [0u32, 1, 0x7ff, 0x800, 0x801, 0xfff] {
                    let b = (hi << 12) | lo;
                    let v = f32::from_bits(b);
                    if !v.is_nan() {
                        xs32.push(v);
                    }
                }
            }
            let mut codes = vec![0u8; xs32.len()];
            let mut vals = vec![0f32; xs32.len()];
            r32.encode(&xs32, &mut codes, 0);
            r32.round(&xs32, &mut vals, 0).unwrap();
            for (i, &x) in xs32.iter().enumerate() {
                let (c, v, _) = e32.round(x);
                assert_eq!(c, codes[i], "{name} code of {x:e} ({:#x})", x.to_bits());
                assert_eq!(v.to_bits(), vals[i].to_bits(), "{name} value of {x:e}");
            }
            let xs64: Vec<f64> = xs32
                .iter()
                .step_by(7)
                .flat_map(|&v| {
                    let d = v as f64;
                    [
                        d,
                        f64::from_bits(d.to_bits() + 1),
                        f64::from_bits(d.to_bits().max(1) - 1),
                    ]
                })
                .filter(|v| !v.is_nan())
                .collect();
            let mut codes = vec![0u8; xs64.len()];
            let mut vals = vec![0f64; xs64.len()];
            r64.encode(&xs64, &mut codes, 0);
            r64.round(&xs64, &mut vals, 0).unwrap();
            for (i, &x) in xs64.iter().enumerate() {
                let (c, v, _) = e64.round(x);
                assert_eq!(c, codes[i], "{name} code of {x:e}");
                assert_eq!(v.to_bits(), vals[i].to_bits(), "{name} value of {x:e}");
            }
        }
    }

    /// A split scale gives `RN32(r · s)` of the exact binary64 product for every E2M1 value.
    #[test]
    fn split_scales_round_the_product_once() {
        let mut next = crate::block::test_bits(11);
        let mut split = 0;
        for _ in 0..20000 {
            let g =
                f32::from_bits((next() as u32 & 0x007f_ffff) | ((next() % 254 + 1) as u32) << 23);
            let s = FloatFormat::FP8_E4M3.decode(next() % 127) * g as f64;
            let Some(sp) = Split::new(s, 2) else { continue };
            split += 1;
            for code in 0..16 {
                let r = FloatFormat::FP4_E2M1.decode(code) as f32;
                let got: f32 = Rescale::<f32, f32>::apply(sp, r);
                assert_eq!(
                    got.to_bits(),
                    ((r as f64 * s) as f32).to_bits(),
                    "r = {r}, s = {s:e}"
                );
            }
        }
        assert!(split > 15000, "{split} of 20000 scales split");
    }

    #[test]
    fn formats_without_signed_zero_take_the_general_path() {
        for name in ["fp8-e4m3fnuz", "fp8-e5m2fnuz", "fp16", "e8m0"] {
            let f = FloatFormat::parse(name).unwrap();
            assert!(Elem::<f32>::new(&f).is_none(), "{name}");
        }
    }
}
