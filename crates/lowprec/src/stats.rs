//! Mergeable error statistics: what the report prints for a tensor × scheme, kept so that a
//! tensor reported in pieces, or a checkpoint reported shard by shard, merges to exactly
//! the same figures, bit for bit, as one pass ([`ErrorStats::merge`]).
//!
//! For approximations `q_i` of reference values `x_i`, over the elements where both are
//! finite:
//!
//! | figure | formula |
//! |---|---|
//! | relative error | `sqrt(Σ (q−x)² / Σ x²)` |
//! | SQNR | `10 · log10(Σ x² / Σ (q−x)²)` dB |
//! | NMSE | `Σ (q−x)² / Σ x²` |
//! | RMSE | `sqrt(Σ (q−x)² / n)` |
//! | cosine similarity | `Σ q·x / sqrt(Σ q² · Σ x²)` |
//! | max abs error | `max |q − x|` |
//! | p50, p99, p99.9 of `|q − x|` | from a log-binned histogram: 8 bins per binade (each bin `[2^e (1 + t/8), 2^e (1 + (t+1)/8))`), the percentile reported as the upper edge of its bin (within 12.5 % above the true value); 0 when it falls among exact elements |
//!
//! **How the sums are exact to merge.** Elements are taken in chunks of [`CHUNK`] (65,536)
//! counted from the start of the tensor. Each chunk is scaled by the power of two `2^k` that
//! brings its largest magnitude into `[1, 2)` (so neither squares of 1e200 overflow nor
//! squares of 1e-170 underflow), its sums are taken in binary64 in a fixed order (eight
//! lanes, `i mod 8`, reduced pairwise), and each chunk's sums are added, times `2^−2k`,
//! into exact integer accumulators ([`ExactSum`]: every binary64 value times any power of
//! two in `[2^−2304, 2^2304)`, without rounding). Integer addition is associative, so the
//! totals do not depend on the order, the thread count or the grouping of chunks into
//! pieces and tensors. A piece of a tensor must start at a multiple of `CHUNK` elements
//! ([`ErrorStats::of_piece`]).
//!
//! **Degenerate data.** Elements whose reference is NaN or ±Inf are counted
//! ([`ErrorStats::nonfinite_ref`]) and left out; approximations that are NaN or ±Inf for a
//! finite reference are counted ([`ErrorStats::nonfinite_out`]) and left out. With no
//! element left every figure is NaN (printed `n/a`), never 0. An all-zero reference with a
//! nonzero error gives relative error ∞ and SQNR −∞; an approximation flushed entirely to
//! zero gives relative error 1 and SQNR 0 dB.
//!
//! ```
//! use lowprec::stats::ErrorStats;
//! let x: Vec<f64> = (0..200_000).map(|i| ((i as f64) * 0.001).sin()).collect();
//! let q: Vec<f64> = x.iter().map(|v| (v * 64.0).round() / 64.0).collect();
//! let whole = ErrorStats::of(&q, &x);
//! let split = 3 * lowprec::stats::CHUNK;
//! let a = ErrorStats::of_piece(&q[..split], &x[..split], 0).unwrap();
//! let b = ErrorStats::of_piece(&q[split..], &x[split..], split).unwrap();
//! assert_eq!(a.merge(&b), whole); // bit for bit
//! assert!(whole.sqnr_db() > 40.0 && whole.cosine() > 0.9999);
//! ```

use crate::error::{Error, Result};
use crate::round::Float;
use rayon::prelude::*;

/// Elements per statistics chunk; pieces of a tensor start at multiples of it.
pub const CHUNK: usize = 1 << 16;

/// The exponent of bit 0 of limb 0 of an [`ExactSum`].
const BASE: i32 = -2304;
/// Limbs of 64 bits: `[2^−2304, 2^2304)`.
const LIMBS: usize = 72;

/// An exact sum of binary64 values times powers of two: a fixed-point integer of 4,608
/// bits held in 64-bit digits (each in an `i128`, so that 2^63 additions never carry out).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ExactSum {
    limbs: Box<[i128; LIMBS]>,
    /// A term fell below `2^−2304` (dropped) or reached `2^2304` (the sum is infinite).
    lost_low: bool,
    overflow: bool,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum {
            limbs: Box::new([0; LIMBS]),
            lost_low: false,
            overflow: false,
        }
    }
}

impl ExactSum {
    /// Add `v · 2^e2` exactly (`v` finite).
    pub fn add(&mut self, v: f64, e2: i32) {
        if v == 0.0 {
            return;
        }
        let b = v.to_bits();
        let neg = b >> 63 != 0;
        let field = ((b >> 52) & 0x7ff) as i32;
        let frac = b & ((1u64 << 52) - 1);
        let (m, e) = if field == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), field - 1075)
        };
        let t = e + e2 - BASE;
        if t < 0 {
            self.lost_low = true;
            return;
        }
        let (k, s) = ((t / 64) as usize, (t % 64) as u32);
        if k + 1 >= LIMBS {
            self.overflow = true;
            return;
        }
        let w = (m as u128) << s;
        let (lo, hi) = ((w as u64) as i128, ((w >> 64) as u64) as i128);
        if neg {
            self.limbs[k] -= lo;
            self.limbs[k + 1] -= hi;
        } else {
            self.limbs[k] += lo;
            self.limbs[k + 1] += hi;
        }
    }

    /// The sum of two sums (exact).
    pub fn merge(&self, o: &ExactSum) -> ExactSum {
        let mut r = self.clone();
        for (a, b) in r.limbs.iter_mut().zip(o.limbs.iter()) {
            *a += b;
        }
        r.lost_low |= o.lost_low;
        r.overflow |= o.overflow;
        r
    }

    /// The sum as `(sign, mantissa, exponent)`: `±m · 2^e` with `m` rounded to 53 bits
    /// (nearest even), `m ∈ [2^52, 2^53]`; `None` for zero.
    fn parts(&self) -> Option<(bool, u64, i64)> {
        let mut l = *self.limbs;
        // digits in [0, 2^64), the top one carrying the sign
        for k in 0..LIMBS - 1 {
            let c = l[k] >> 64;
            l[k] -= c << 64;
            l[k + 1] += c;
        }
        let neg = l[LIMBS - 1] < 0;
        if neg {
            // negate: −v = (~digits) + 1, renormalised
            for d in l.iter_mut() {
                *d = -*d;
            }
            for k in 0..LIMBS - 1 {
                let c = l[k] >> 64;
                l[k] -= c << 64;
                l[k + 1] += c;
            }
        }
        let t = (0..LIMBS).rev().find(|&k| l[k] != 0)?;
        let digit = |k: usize| if k < LIMBS { l[k] as u64 } else { 0 };
        let hi = digit(t);
        let mid = if t >= 1 { digit(t - 1) } else { 0 };
        let lo = if t >= 2 { digit(t - 2) } else { 0 };
        let sticky_low = t >= 3 && l[..t - 2].iter().any(|&d| d != 0);
        let lz = hi.leading_zeros();
        let mut top = ((hi as u128) << 64) | mid as u128;
        let mut sticky = sticky_low;
        if lz > 0 {
            top = (top << lz) | (lo >> (64 - lz)) as u128;
            sticky |= lo << lz != 0;
        } else {
            sticky |= lo != 0;
        }
        // bit 127 of `top` is the leading one; exponent of bit 0:
        let e0 = BASE as i64 + 64 * (t as i64 - 1) - lz as i64;
        let mant = (top >> 75) as u64;
        let rem = top & ((1u128 << 75) - 1);
        let half = 1u128 << 74;
        let up = rem > half || (rem == half && (sticky || mant & 1 == 1));
        Some((neg, mant + up as u64, e0 + 75))
    }

    /// The sum rounded to binary64 (±∞ beyond its range).
    pub fn to_f64(&self) -> f64 {
        if self.overflow {
            return f64::INFINITY;
        }
        match self.parts() {
            None => 0.0,
            Some((neg, m, e)) => {
                let v = ldexp(m as f64, e);
                if neg {
                    -v
                } else {
                    v
                }
            }
        }
    }

    /// `self / o` (NaN for 0/0, ±∞ for x/0), without overflow in between.
    pub fn ratio(&self, o: &ExactSum) -> f64 {
        match (self.parts(), o.parts()) {
            (None, None) => f64::NAN,
            (Some((n, _, _)), None) => {
                if n {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            }
            (None, Some(_)) => 0.0,
            (Some((na, ma, ea)), Some((nb, mb, eb))) => {
                let v = ldexp(ma as f64 / mb as f64, ea - eb);
                if na != nb {
                    -v
                } else {
                    v
                }
            }
        }
    }
}

/// `v · 2^e`, saturating to ±∞ and 0.
fn ldexp(v: f64, e: i64) -> f64 {
    let e = e.clamp(-3000, 3000) as i32;
    let mut v = v;
    let mut e = e;
    while e > 1000 {
        v *= crate::format::pow2(1000);
        e -= 1000;
    }
    while e < -1000 {
        v *= crate::format::pow2(-1000);
        e += 1000;
    }
    v * crate::format::pow2(e)
}

/// The bin of the histogram holding `2^e (1 + t/8)`: `(e + BIN_BIAS) · 8 + t`.
const BIN_BIAS: i32 = 2400;

/// A log-binned histogram of `|q − x|`: 8 bins per binade, and a count of exact elements.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Histogram {
    /// Elements whose error is exactly 0.
    pub zeros: u64,
    /// The index of `counts[0]`.
    lo: u32,
    /// Counts of consecutive bins.
    counts: Vec<u64>,
}

impl Histogram {
    fn add_bins(&mut self, lo: u32, counts: &[u64]) {
        if counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.lo = lo;
            self.counts = counts.to_vec();
            return;
        }
        let new_lo = self.lo.min(lo);
        let new_hi = (self.lo as usize + self.counts.len()).max(lo as usize + counts.len());
        if new_lo < self.lo || new_hi > self.lo as usize + self.counts.len() {
            let mut c = vec![0u64; new_hi - new_lo as usize];
            let off = (self.lo - new_lo) as usize;
            c[off..off + self.counts.len()].copy_from_slice(&self.counts);
            self.counts = c;
            self.lo = new_lo;
        }
        let off = (lo - self.lo) as usize;
        for (a, b) in self.counts[off..off + counts.len()].iter_mut().zip(counts) {
            *a += b;
        }
    }

    /// The histogram of both.
    pub fn merge(&self, o: &Histogram) -> Histogram {
        let mut r = self.clone();
        r.zeros += o.zeros;
        r.add_bins(o.lo, &o.counts);
        r
    }

    /// The elements counted: the exact ones ([`Histogram::zeros`]) and those in the bins.
    pub fn count(&self) -> u64 {
        self.zeros + self.counts.iter().sum::<u64>()
    }

    /// The bins of the nonzero errors in increasing order, as `(lower edge, upper edge,
    /// count)`: bin `[2^e (1 + t/8), 2^e (1 + (t+1)/8))`, 8 per binade, from the lowest bin
    /// holding an element to the highest (the empty bins between included, with count 0;
    /// nothing for a histogram of exact elements only). The exact elements are
    /// [`Histogram::zeros`], outside every bin.
    ///
    /// ```
    /// use lowprec::stats::ErrorStats;
    /// // errors 0, 0.25, 0.25, 0.375
    /// let s = ErrorStats::of(&[1.0f64, 1.25, 2.25, 3.375], &[1.0, 1.0, 2.0, 3.0]);
    /// assert_eq!(s.hist.zeros, 1);
    /// let bins: Vec<(f64, f64, u64)> = s.hist.bins().collect();
    /// assert_eq!(bins[0], (0.25, 0.28125, 2)); // [2^-2, 2^-2 · 9/8)
    /// assert_eq!(bins.last(), Some(&(0.375, 0.40625, 1))); // [2^-2 · 12/8, 2^-2 · 13/8)
    /// assert_eq!(bins.len(), 5);
    /// ```
    pub fn bins(&self) -> impl Iterator<Item = (f64, f64, u64)> + '_ {
        let first = self.counts.iter().position(|&c| c != 0);
        let last = self.counts.iter().rposition(|&c| c != 0);
        let range = match (first, last) {
            (Some(a), Some(b)) => a..b + 1,
            _ => 0..0,
        };
        self.counts[range.clone()]
            .iter()
            .zip(range)
            .map(move |(&c, i)| {
                let b = self.lo as i64 + i as i64;
                let (e, t) = ((b >> 3) - BIN_BIAS as i64, (b & 7) as f64);
                (ldexp(1.0 + t / 8.0, e), ldexp(1.0 + (t + 1.0) / 8.0, e), c)
            })
    }

    /// The `p`-quantile (`0 < p ≤ 1`) of the errors: the upper edge of the bin holding the
    /// `⌈p · n⌉`-th smallest; 0 when that one is exact; NaN when there is no element.
    pub fn quantile(&self, p: f64) -> f64 {
        let n = self.zeros + self.counts.iter().sum::<u64>();
        if n == 0 {
            return f64::NAN;
        }
        let rank = ((p * n as f64).ceil() as u64).clamp(1, n);
        if rank <= self.zeros {
            return 0.0;
        }
        let mut seen = self.zeros;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let b = self.lo as i64 + i as i64;
                let (e, t) = ((b >> 3) as i32 - BIN_BIAS, (b & 7) as f64);
                return crate::format::pow2(e.clamp(-1074, 1023)) * (1.0 + (t + 1.0) / 8.0);
            }
        }
        f64::NAN
    }
}

/// Mergeable error statistics of an approximation (see the module docs).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ErrorStats {
    /// Elements compared (reference and approximation finite).
    pub n: u64,
    /// Elements whose reference is NaN or ±Inf (left out).
    pub nonfinite_ref: u64,
    /// Elements whose approximation is NaN or ±Inf for a finite reference (left out).
    pub nonfinite_out: u64,
    sse: ExactSum,
    energy: ExactSum,
    qq: ExactSum,
    qx: ExactSum,
    /// `max |q − x|` as bits (an `f64`, compared as bits so that the type is `Eq`).
    max_abs_bits: u64,
    /// The errors' histogram.
    pub hist: Histogram,
}

/// The histogram bin of a positive finite `d`: `(e + BIN_BIAS) · 8 + t` for
/// `d ∈ [2^e (1 + t/8), 2^e (1 + (t+1)/8))`.
fn bin_of(d: f64) -> u32 {
    let e = crate::block::floor_log2(d);
    // d / 2^e ∈ [1, 2), exact (in two steps: 2^−e may exceed binary64)
    let f = d
        * crate::format::pow2((-e).clamp(-1000, 1000))
        * crate::format::pow2(-e - (-e).clamp(-1000, 1000));
    ((e + BIN_BIAS).max(0) as u32) * 8 + ((f.to_bits() >> 49) & 7) as u32
}

/// Histogram keys of the scaled `|d| < 4`: the top 14 bits of its binary64 pattern (11
/// exponent bits, 3 fraction bits), so key `f·8 + t` is the bin `[2^(f−1023)(1 + t/8), …)`
/// of a normal `|d|`; keys below 8 are zero or subnormal.
const KEYS: usize = 1025 * 8;

/// Lanes of the chunk loops (independent partial sums, reduced pairwise).
const L: usize = 8;

/// The sums of one chunk: `(n, nonfinite_ref, nonfinite_out, sse, energy, qq, qx, max|d|)`,
/// scaled by `2^k`, with the histogram.
///
/// Two branch-free passes: the counts and the largest magnitude, then the sums (a pair
/// that is not compared enters as `0, 0`, which adds nothing) and one histogram key per
/// element. Zero and subnormal `|d|` (keys below 8) are sorted out after the pass. Run
/// compiled for the widest vector unit of the CPU ([`crate::simd::dispatch`]).
fn chunk<I: Float>(q: &[I], x: &[I]) -> ErrorStats {
    crate::simd::dispatch(Chunk { q, x })
}

/// [`chunk`] as a [`crate::simd::Kernel`].
struct Chunk<'a, I> {
    q: &'a [I],
    x: &'a [I],
}

impl<I: Float> crate::simd::Kernel for Chunk<'_, I> {
    type Output = ErrorStats;
    #[inline(always)]
    fn run(self) -> ErrorStats {
        chunk_body(self.q, self.x)
    }
}

#[inline(always)]
fn chunk_body<I: Float>(q: &[I], x: &[I]) -> ErrorStats {
    let mut st = ErrorStats::default();
    // magnitudes as bits: integer compares order them, and vectorise
    const ABS: u64 = !(1u64 << 63);
    const INF: u64 = 0x7ff0_0000_0000_0000;
    let (mut mb, mut bad_ref, mut bad_out) = (0u64, 0u64, 0u64);
    for (a, b) in q.iter().zip(x) {
        let (a, b) = (a.to_f64().to_bits() & ABS, b.to_f64().to_bits() & ABS);
        let (fa, fb) = ((a < INF) as u64, (b < INF) as u64);
        bad_ref += 1 - fb;
        bad_out += fb & (1 - fa);
        mb = mb.max(a.max(b) & 0u64.wrapping_sub(fa & fb));
    }
    st.nonfinite_ref = bad_ref;
    st.nonfinite_out = bad_out;
    let m = f64::from_bits(mb);
    st.n = q.len() as u64 - st.nonfinite_ref - st.nonfinite_out;
    if st.n == 0 {
        return st;
    }
    if m == 0.0 {
        st.hist.zeros = st.n;
        return st;
    }
    let k = -crate::block::floor_log2(m);
    let s = crate::format::pow2(k.clamp(-1022, 1023));
    // (k beyond ±1022 happens only for subnormal maxima, whose squares the scaling keeps)
    let s2 = crate::format::pow2((k - k.clamp(-1022, 1023)).clamp(-1022, 1023));
    let (mut sse, mut en, mut qq, mut qx) = ([0f64; L], [0f64; L], [0f64; L], [0f64; L]);
    let mut mx = [0u64; L];
    let mut zeros = [0u32; L];
    // two tables, even and odd lanes, so that runs of one key do not wait on each other
    let mut bins = vec![0u32; 2 * KEYS];
    let (b0, b1) = bins.split_at_mut(KEYS);
    let mut keys = [0usize; L];
    let mut pass2 = |a: I, b: I, l: usize, keys: &mut [usize; L]| {
        let (a, b) = (a.to_f64(), b.to_f64());
        let ok = a.is_finite() & b.is_finite();
        zeros[l] += (ok & (a == b)) as u32;
        let (a, b) = if ok {
            (a * s * s2, b * s * s2)
        } else {
            (0.0, 0.0)
        };
        let d = a - b;
        sse[l] += d * d;
        en[l] += b * b;
        qq[l] += a * a;
        qx[l] += a * b;
        let ad = d.abs();
        mx[l] = mx[l].max(ad.to_bits());
        // scaled |d| < 4: the key is below KEYS
        keys[l] = ((ad.to_bits() >> 49) as usize).min(KEYS - 1);
    };
    let (qc, xc) = (q.chunks_exact(L), x.chunks_exact(L));
    let (qr, xr) = (qc.remainder(), xc.remainder());
    for (qa, xa) in qc.zip(xc) {
        for l in 0..L {
            pass2(qa[l], xa[l], l, &mut keys);
        }
        for p in keys.chunks_exact(2) {
            b0[p[0]] += 1;
            b1[p[1]] += 1;
        }
    }
    for (l, (&a, &b)) in qr.iter().zip(xr).enumerate() {
        pass2(a, b, l, &mut keys);
        b0[keys[l]] += 1;
    }
    for (a, b) in b0.iter_mut().zip(b1.iter()) {
        *a += b;
    }
    let red = |v: [f64; L]| ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    let back = -2 * k;
    st.sse.add(red(sse), back);
    st.energy.add(red(en), back);
    st.qq.add(red(qq), back);
    st.qx.add(red(qx), back);
    let mx_scaled = f64::from_bits(mx.iter().fold(0, |a, &b| a.max(b)));
    let mut mx = ldexp(mx_scaled, -(k as i64));
    st.hist.zeros = zeros.iter().map(|&c| c as u64).sum();
    // Keys below LOW hold the pairs left out and the exact ones (key 0), and the
    // differences below 2^−969 times the chunk's largest magnitude, whose scaled value may
    // have lost bits (rare): those are binned again from their unscaled difference.
    const LOW: usize = 54 * 8;
    let low: u64 = b0[..LOW].iter().map(|&c| c as u64).sum();
    if low > st.hist.zeros + st.nonfinite_ref + st.nonfinite_out {
        b0[..LOW].fill(0);
        let tiny = crate::format::pow2(-969);
        for (a, b) in q.iter().zip(x) {
            let (a, b) = (a.to_f64(), b.to_f64());
            if a.is_finite() && b.is_finite() && a != b && (a * s * s2 - b * s * s2).abs() < tiny {
                let d = (a - b).abs();
                st.hist.add_bins(bin_of(d), &[1]);
                if mx_scaled < tiny {
                    // every difference is tiny: the largest is taken unscaled
                    mx = mx.max(d);
                }
            }
        }
    }
    st.max_abs_bits = mx.to_bits();
    // a scaled |d| of key f·8 + t has the true exponent f − 1023 − k
    let to_global =
        |key: usize| ((key as i64 + (BIN_BIAS as i64 - 1023 - k as i64) * 8).max(0)) as u32;
    if let Some(f) = b0[1..].iter().position(|&c| c != 0).map(|p| p + 1) {
        let last = KEYS - 1 - b0.iter().rev().position(|&c| c != 0).unwrap_or(0);
        let counts: Vec<u64> = b0[f..=last].iter().map(|&c| c as u64).collect();
        st.hist.add_bins(to_global(f), &counts);
    }
    st
}

/// A reader over the bytes of [`ErrorStats::to_bytes`] (and of the report's rows, which
/// embed them): little-endian fields, every length checked against the bytes left.
pub(crate) struct Wire<'a> {
    b: &'a [u8],
}

impl<'a> Wire<'a> {
    /// A reader at the start of `b`.
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Wire { b }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.b.len() {
            return Err(Error::BadFile(format!(
                "serialized report statistics end early ({} bytes left, {n} wanted); \
                 pass the bytes that report_partial returned, unchanged",
                self.b.len()
            )));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }

    /// The next `u64`.
    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// The next count of items of at least `min` bytes each, checked against the bytes left
    /// (so that no allocation is sized by a corrupt count).
    pub(crate) fn len(&mut self, min: usize) -> Result<usize> {
        let n = self.u64()?;
        if n.saturating_mul(min.max(1) as u64) > self.b.len() as u64 {
            return Err(Error::BadFile(format!(
                "serialized report statistics hold a count ({n}) larger than their bytes; \
                 pass the bytes that report_partial returned, unchanged"
            )));
        }
        Ok(n as usize)
    }

    /// Whether every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.b.is_empty()
    }
}

impl ExactSum {
    fn write_to(&self, out: &mut Vec<u8>) {
        for l in self.limbs.iter() {
            out.extend_from_slice(&l.to_le_bytes());
        }
        out.push(self.lost_low as u8 | (self.overflow as u8) << 1);
    }

    fn read_from(w: &mut Wire<'_>) -> Result<ExactSum> {
        let mut s = ExactSum::default();
        for l in s.limbs.iter_mut() {
            *l = i128::from_le_bytes(w.take(16)?.try_into().expect("16 bytes"));
        }
        let flags = w.take(1)?[0];
        (s.lost_low, s.overflow) = (flags & 1 != 0, flags & 2 != 0);
        Ok(s)
    }
}

impl ErrorStats {
    /// The statistics as bytes (little-endian, every field, the exact sums unrounded), for
    /// merging statistics computed in other processes ([`ErrorStats::from_bytes`] gives back
    /// an equal value, so merged figures are bit-identical to a single process's).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out);
        out
    }

    /// The statistics of [`ErrorStats::to_bytes`].
    ///
    /// # Errors
    ///
    /// [`Error::BadFile`] for bytes that are not exactly one serialized value.
    pub fn from_bytes(b: &[u8]) -> Result<ErrorStats> {
        let mut w = Wire::new(b);
        let s = Self::read_from(&mut w)?;
        if !w.is_empty() {
            return Err(Error::BadFile(
                "serialized error statistics are followed by extra bytes; pass the bytes that \
                 to_bytes returned, unchanged"
                    .into(),
            ));
        }
        Ok(s)
    }

    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        for v in [self.n, self.nonfinite_ref, self.nonfinite_out] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for s in [&self.sse, &self.energy, &self.qq, &self.qx] {
            s.write_to(out);
        }
        out.extend_from_slice(&self.max_abs_bits.to_le_bytes());
        out.extend_from_slice(&self.hist.zeros.to_le_bytes());
        out.extend_from_slice(&(self.hist.lo as u64).to_le_bytes());
        out.extend_from_slice(&(self.hist.counts.len() as u64).to_le_bytes());
        for c in &self.hist.counts {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }

    pub(crate) fn read_from(w: &mut Wire<'_>) -> Result<ErrorStats> {
        let (n, nonfinite_ref, nonfinite_out) = (w.u64()?, w.u64()?, w.u64()?);
        let sse = ExactSum::read_from(w)?;
        let energy = ExactSum::read_from(w)?;
        let qq = ExactSum::read_from(w)?;
        let qx = ExactSum::read_from(w)?;
        let max_abs_bits = w.u64()?;
        let zeros = w.u64()?;
        let lo = u32::try_from(w.u64()?)
            .map_err(|_| Error::BadFile("serialized histogram out of range".into()))?;
        let k = w.len(8)?;
        let counts = (0..k).map(|_| w.u64()).collect::<Result<Vec<u64>>>()?;
        Ok(ErrorStats {
            n,
            nonfinite_ref,
            nonfinite_out,
            sse,
            energy,
            qq,
            qx,
            max_abs_bits,
            hist: Histogram { zeros, lo, counts },
        })
    }
}

impl ErrorStats {
    /// The statistics of a whole tensor: `approx` against `exact`, chunks in parallel.
    ///
    /// # Panics
    ///
    /// When the two slices differ in length (a caller's bug, not a property of the data).
    pub fn of<I: Float>(approx: &[I], exact: &[I]) -> ErrorStats {
        I::error_stats(approx, exact)
    }

    /// [`Self::of`] for the types it is called with (see `crate::mono`).
    pub(crate) fn of_generic<I: Float>(approx: &[I], exact: &[I]) -> ErrorStats {
        assert_eq!(
            approx.len(),
            exact.len(),
            "ErrorStats::of: approximations and references differ in length"
        );
        approx
            .par_chunks(CHUNK)
            .zip(exact.par_chunks(CHUNK))
            .map(|(a, e)| chunk(a, e))
            .reduce(ErrorStats::default, |a, b| a.merge(&b))
    }

    /// The statistics of the piece of a tensor that starts at element `offset`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `offset` is not a multiple of [`CHUNK`] (the chunks
    /// would not be those of one pass) or the lengths differ.
    pub fn of_piece<I: Float>(approx: &[I], exact: &[I], offset: usize) -> Result<ErrorStats> {
        if !offset.is_multiple_of(CHUNK) || approx.len() != exact.len() {
            return Err(Error::InvalidArgument(format!(
                "statistics of a piece: the piece must start at a multiple of {CHUNK} elements \
                 (it starts at {offset}) and both sides must have the same length ({} and {})",
                approx.len(),
                exact.len()
            )));
        }
        Ok(Self::of(approx, exact))
    }

    /// The statistics of the concatenation (exact: any order, any grouping).
    pub fn merge(&self, o: &ErrorStats) -> ErrorStats {
        ErrorStats {
            n: self.n + o.n,
            nonfinite_ref: self.nonfinite_ref + o.nonfinite_ref,
            nonfinite_out: self.nonfinite_out + o.nonfinite_out,
            sse: self.sse.merge(&o.sse),
            energy: self.energy.merge(&o.energy),
            qq: self.qq.merge(&o.qq),
            qx: self.qx.merge(&o.qx),
            max_abs_bits: f64::from_bits(self.max_abs_bits)
                .max(f64::from_bits(o.max_abs_bits))
                .to_bits(),
            hist: self.hist.merge(&o.hist),
        }
    }

    fn none(&self) -> bool {
        self.n == 0
    }

    /// `Σ (q − x)²` (binary64, ±∞ beyond its range).
    pub fn sse(&self) -> f64 {
        self.sse.to_f64()
    }

    /// `Σ x²`.
    pub fn energy(&self) -> f64 {
        self.energy.to_f64()
    }

    /// `sqrt(Σ (q−x)² / Σ x²)`: 0 when exact, ∞ for an error on an all-zero reference, NaN
    /// when nothing was compared.
    pub fn rel_error(&self) -> f64 {
        self.nmse().sqrt()
    }

    /// `Σ (q−x)² / Σ x²`.
    pub fn nmse(&self) -> f64 {
        if self.none() {
            return f64::NAN;
        }
        match self.sse.ratio(&self.energy) {
            r if r.is_nan() => 0.0, // 0 / 0: an exact all-zero tensor
            r => r,
        }
    }

    /// `10 · log10(Σ x² / Σ (q−x)²)` dB: ∞ when exact, −∞ for an error on an all-zero
    /// reference.
    pub fn sqnr_db(&self) -> f64 {
        if self.none() {
            return f64::NAN;
        }
        -10.0 * self.nmse().log10()
    }

    /// `sqrt(Σ (q−x)² / n)`.
    pub fn rmse(&self) -> f64 {
        if self.none() {
            return f64::NAN;
        }
        let mut n = ExactSum::default();
        n.add(self.n as f64, 0);
        self.sse.ratio(&n).sqrt()
    }

    /// `Σ q·x / sqrt(Σ q² · Σ x²)`: 1 for a perfect match; NaN when either side is all zero.
    pub fn cosine(&self) -> f64 {
        if self.none() {
            return f64::NAN;
        }
        let a = self.qx.ratio(&self.qq);
        let b = self.qx.ratio(&self.energy);
        // (Σqx/Σqq)·(Σqx/Σxx) = cos², with the sign of Σqx
        let c2 = a * b;
        if c2.is_nan() {
            return f64::NAN;
        }
        c2.abs().sqrt().copysign(a)
    }

    /// `max |q − x|` (NaN when nothing was compared).
    pub fn max_abs(&self) -> f64 {
        if self.none() {
            return f64::NAN;
        }
        f64::from_bits(self.max_abs_bits)
    }

    /// The `p`-quantile of `|q − x|` ([`Histogram::quantile`]).
    pub fn quantile(&self, p: f64) -> f64 {
        self.hist.quantile(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sums_are_exact_and_merge_in_any_order() {
        let vals = [1e300, 1.0, -1e300, 2f64.powi(-1074), 3.5, -1.0];
        let mut a = ExactSum::default();
        for v in vals {
            a.add(v, 0);
        }
        // 1e300 cancels exactly; 3.5 + 2^-1074 rounds to 3.5
        assert_eq!(a.to_f64(), 3.5 + 2f64.powi(-1074));
        let mut b = ExactSum::default();
        for v in vals.iter().rev() {
            b.add(*v, 0);
        }
        assert_eq!(a, b);
        let mut big = ExactSum::default();
        big.add(f64::MAX, 1000);
        big.add(f64::MAX, 1000);
        let mut one = ExactSum::default();
        one.add(f64::MAX, 1000);
        assert_eq!(big.ratio(&one), 2.0);
        // a negative total
        let mut n = ExactSum::default();
        n.add(1.0, 0);
        n.add(-3.0, 0);
        assert_eq!(n.to_f64(), -2.0);
        // rounding to nearest even from the exact sum: 1 + 2^-53 + 2^-80 rounds up
        let mut r = ExactSum::default();
        r.add(1.0, 0);
        r.add(1.0, -53);
        r.add(1.0, -80);
        assert_eq!(r.to_f64(), 1.0 + f64::EPSILON);
    }

    #[test]
    fn statistics_survive_their_bytes_and_merge_the_same() {
        let x: Vec<f32> = (0..CHUNK + 999)
            .map(|i| ((i as f32) * 0.013).cos() * 1e-3)
            .collect();
        let q: Vec<f32> = x.iter().map(|v| (v * 4096.0).round() / 4096.0).collect();
        let mut x2 = x.clone();
        x2[7] = f32::NAN;
        x2[9] = 1e30;
        let (a, b) = (ErrorStats::of(&q, &x), ErrorStats::of(&q, &x2));
        for s in [&a, &b, &ErrorStats::default()] {
            assert_eq!(&ErrorStats::from_bytes(&s.to_bytes()).unwrap(), s);
        }
        let ab = ErrorStats::from_bytes(&a.to_bytes())
            .unwrap()
            .merge(&ErrorStats::from_bytes(&b.to_bytes()).unwrap());
        assert_eq!(ab, a.merge(&b));
        assert_eq!(ab.sqnr_db().to_bits(), a.merge(&b).sqnr_db().to_bits());
        // truncated, extended or with a huge count: an error, never a panic or a huge allocation
        let bytes = a.to_bytes();
        for cut in [0, 1, 100, bytes.len() - 1] {
            assert!(ErrorStats::from_bytes(&bytes[..cut]).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(ErrorStats::from_bytes(&longer).is_err());
        let k = bytes.len() - 8 * a.hist.counts.len() - 8;
        let mut huge = bytes.clone();
        huge[k..k + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(ErrorStats::from_bytes(&huge).is_err());
    }

    #[test]
    fn pieces_merge_to_one_pass_and_degenerate_data_is_honest() {
        let x: Vec<f32> = (0..3 * CHUNK + 777)
            .map(|i| ((i as f32) * 0.01).sin() * 3.0)
            .collect();
        let q: Vec<f32> = x.iter().map(|v| (v * 8.0).round() / 8.0).collect();
        let one = ErrorStats::of(&q, &x);
        for cut in [CHUNK, 2 * CHUNK, 3 * CHUNK] {
            let a = ErrorStats::of_piece(&q[..cut], &x[..cut], 0).unwrap();
            let b = ErrorStats::of_piece(&q[cut..], &x[cut..], cut).unwrap();
            assert_eq!(b.merge(&a), one);
        }
        assert!(ErrorStats::of_piece(&q[5..], &x[5..], 5).is_err());
        // every element NaN: nothing compared, figures NaN
        let nan = vec![f32::NAN; 100];
        let s = ErrorStats::of(&nan, &nan);
        assert_eq!((s.n, s.nonfinite_ref), (0, 100));
        assert!(s.rel_error().is_nan() && s.sqnr_db().is_nan());
        // squares that overflow or underflow binary64 are scaled
        let big = vec![1e200f64; 64];
        let qb: Vec<f64> = big.iter().map(|v| v * 1.5).collect();
        assert!((ErrorStats::of(&qb, &big).rel_error() - 0.5).abs() < 1e-15);
        let tiny = vec![1e-170f64; 64];
        let flushed = vec![0f64; 64];
        let t = ErrorStats::of(&flushed, &tiny);
        assert_eq!((t.rel_error(), t.sqnr_db()), (1.0, 0.0));
        // an all-zero reference with an error
        let z = ErrorStats::of(&[1.0f64, 0.0], &[0.0, 0.0]);
        assert_eq!(
            (z.rel_error(), z.sqnr_db()),
            (f64::INFINITY, f64::NEG_INFINITY)
        );
        // an exact all-zero tensor
        let e = ErrorStats::of(&[0.0f64; 4], &[0.0; 4]);
        assert_eq!(
            (e.rel_error(), e.sqnr_db(), e.quantile(0.5)),
            (0.0, f64::INFINITY, 0.0)
        );
    }

    #[test]
    fn quantiles_bracket_the_true_ones_and_cosine_is_right() {
        let x: Vec<f64> = (0..10_000).map(|i| i as f64).collect();
        let q: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| v + (i % 100) as f64 * 0.01)
            .collect();
        let s = ErrorStats::of(&q, &x);
        // errors 0, .01, …, .99 evenly: p50 ≈ 0.49, p99 ≈ 0.98
        for (p, t) in [(0.5, 0.49), (0.99, 0.98)] {
            let v = s.quantile(p);
            assert!(v >= t && v <= t * 1.125 + 1e-12, "{p}: {v}");
        }
        let dot: f64 = q.iter().zip(&x).map(|(a, b)| a * b).sum();
        let nq: f64 = q.iter().map(|a| a * a).sum::<f64>().sqrt();
        let nx: f64 = x.iter().map(|a| a * a).sum::<f64>().sqrt();
        assert!((s.cosine() - dot / (nq * nx)).abs() < 1e-12);
        assert!(
            (s.rmse()
                - (q.iter()
                    .zip(&x)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    / 1e4)
                    .sqrt())
            .abs()
                < 1e-12
        );
    }

    /// The histogram by definition, element by element: `(zeros, bin → count)`, for pairs
    /// whose difference is exact in binary64.
    fn direct_bins(q: &[f64], x: &[f64]) -> (u64, std::collections::BTreeMap<u32, u64>) {
        let (mut zeros, mut bins) = (0, std::collections::BTreeMap::new());
        for (a, b) in q.iter().zip(x) {
            if !(a.is_finite() && b.is_finite()) {
                continue;
            }
            let d = (a - b).abs();
            if d == 0.0 {
                zeros += 1;
                continue;
            }
            let e = crate::block::floor_log2(d);
            let m = if e < 0 {
                d * crate::format::pow2(600) * crate::format::pow2(-e - 600)
            } else {
                d * crate::format::pow2(-e)
            };
            let bin = ((e + BIN_BIAS) * 8) as u32 + ((m - 1.0) * 8.0).floor() as u32;
            *bins.entry(bin).or_insert(0) += 1;
        }
        (zeros, bins)
    }

    /// The histogram's nonzero bins: bin → count.
    fn nonzero_bins(s: &ErrorStats) -> std::collections::BTreeMap<u32, u64> {
        (s.hist.counts.iter().enumerate())
            .filter(|(_, &c)| c != 0)
            .map(|(i, &c)| (s.hist.lo + i as u32, c))
            .collect()
    }

    #[test]
    fn bins_hold_each_error_between_their_edges() {
        let x: Vec<f64> = (0..5000)
            .map(|i| ((i as f64) * 0.731).sin() * 40.0)
            .collect();
        let q: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if i % 7 == 0 {
                    *v
                } else {
                    (v * 16.0).round() / 16.0
                }
            })
            .collect();
        let s = ErrorStats::of(&q, &x);
        let bins: Vec<(f64, f64, u64)> = s.hist.bins().collect();
        // contiguous, increasing, 8 per binade, the outer ones nonempty
        assert!(bins.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 < w[1].0));
        assert!(bins[0].2 > 0 && bins[bins.len() - 1].2 > 0);
        assert!(bins
            .iter()
            .all(|b| b.1 / b.0 <= 1.125 && b.1 / b.0 > 1.0625));
        // every error counted in the bin whose edges bracket it
        let (zeros, direct) = direct_bins(&q, &x);
        assert_eq!(s.hist.zeros, zeros);
        assert_eq!(s.hist.count(), s.n);
        let mut want = vec![0u64; bins.len()];
        for (a, b) in q.iter().zip(&x) {
            let d = (a - b).abs();
            if d != 0.0 {
                let i = bins.iter().position(|&(lo, hi, _)| lo <= d && d < hi);
                want[i.expect("a bin holds it")] += 1;
            }
        }
        assert_eq!(bins.iter().map(|b| b.2).collect::<Vec<_>>(), want);
        assert_eq!(
            bins.iter().filter(|b| b.2 > 0).count(),
            direct.len(),
            "{direct:?}"
        );
        // merged histograms: the union of the bins; exact elements only: no bin
        let m = s.hist.merge(&s.hist);
        assert_eq!(
            m.bins().map(|b| b.2).collect::<Vec<_>>(),
            want.iter().map(|c| 2 * c).collect::<Vec<_>>()
        );
        let exact = ErrorStats::of(&[1.0f64; 3], &[1.0; 3]);
        assert_eq!((exact.hist.bins().count(), exact.hist.count()), (0, 3));
        assert_eq!(Histogram::default().bins().count(), 0);
    }

    #[test]
    fn one_pass_equals_the_definition_at_every_instruction_level() {
        use crate::simd::{set_max_level, Level};
        let n = 2 * CHUNK + 333;
        let mut x: Vec<f64> = (0..n)
            .map(|i| (((i * 7919) % 10007) as f32 * 0.37 - 1800.0) as f64)
            .collect();
        let mut q: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| (*v as f32 + ((i % 17) as f32 - 8.0) * 0.001) as f64)
            .collect();
        // left out on either side, exact pairs, and (second chunk) differences that are
        // subnormal even after the chunk's scaling
        for i in (0..n).step_by(101) {
            x[i] = f64::NAN;
        }
        for i in (50..n).step_by(211) {
            q[i] = f64::INFINITY;
        }
        for i in (7..n).step_by(13) {
            q[i] = x[i];
        }
        for (j, i) in (CHUNK + 5..CHUNK + 600).step_by(7).enumerate() {
            x[i] = f64::from_bits(1 + 977 * j as u64);
            q[i] = 0.0;
        }
        x[CHUNK + 1] = 1.5;
        let levels = [Level::Portable, Level::Avx2, Level::Avx512];
        let all: Vec<ErrorStats> = levels
            .iter()
            .map(|&l| {
                set_max_level(l);
                let s = ErrorStats::of(&q, &x);
                set_max_level(Level::Avx512);
                s
            })
            .collect();
        assert!(all.iter().all(|s| *s == all[0]));
        let s = &all[0];
        let (zeros, bins) = direct_bins(&q, &x);
        let got = nonzero_bins(s);
        assert_eq!((s.hist.zeros, &got), (zeros, &bins));
        let left_out = x.iter().filter(|v| !v.is_finite()).count() as u64;
        assert_eq!(s.nonfinite_ref, left_out);
        assert_eq!(s.n + s.nonfinite_ref + s.nonfinite_out, n as u64);
        let dmax = q
            .iter()
            .zip(&x)
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .map(|(a, b)| (a - b).abs())
            .fold(0f64, f64::max);
        assert_eq!(s.max_abs(), dmax);
        // every difference subnormal beside a large exact pair
        let x = [1e300, 3e-310, 1e-320, -2e-315];
        let q = [1e300, 0.0, 0.0, 0.0];
        let s = ErrorStats::of(&q, &x);
        assert_eq!(s.max_abs(), 3e-310);
        let got = nonzero_bins(&s);
        assert_eq!((s.hist.zeros, got), direct_bins(&q, &x));
    }
}
