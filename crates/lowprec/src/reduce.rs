//! Numerically stable reductions (seed §6): softmax (naive, max-subtracted, online with the
//! associative merge of `(m, d)` pairs, and a parallel online softmax), and variance
//! (one-pass, two-pass, Welford, and Chan's parallel merge of `(n, mean, M2)`), computed in
//! binary32, binary64 or any emulated format.
//!
//! In an emulated format every operation is computed in binary64 and rounded once into the
//! format (nearest even unless the [`Arith`] says otherwise). For `+ − × ÷` of two values of a
//! format with `p ≤ 25` significand bits this is the correctly rounded result (the binary64
//! result is exact for `×` and `±` up to exponent gaps, and double rounding through 53 bits is
//! innocuous for `p ≤ 25`, Figueroa 1995); `exp` is binary64's `exp` rounded, within a unit
//! in the last place of the correctly rounded value. Binary32 is emulated the same way, so its
//! `exp` may differ from a C library's `expf` in the last bit.
//!
//! ```
//! use lowprec::reduce::{merge_softmax_stats, online_softmax_stats, softmax_safe, Arith};
//! let x = [1.0, 3.0, 2.0];
//! let f32 = Arith::F32;
//! let s = online_softmax_stats(&x, &f32);
//! let p = softmax_safe(&x, &f32);
//! assert!(((3.0 - s.m).exp() / s.d - p[1]).abs() < 1e-6);
//! // (m, d) pairs merge associatively: the two halves give the one-pass result.
//! let both = merge_softmax_stats(&online_softmax_stats(&x[..1], &f32), &online_softmax_stats(&x[1..], &f32), &f32);
//! assert!((both.d - s.d).abs() <= 4.0 * 2f64.powi(-24) * s.d);
//! ```

use crate::error::{Error, Result};
use crate::format::FloatFormat;
use crate::{RoundOptions, RoundingMode};
use rayon::prelude::*;

/// The arithmetic a reduction runs in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arith {
    /// IEEE binary32, nearest even.
    F32,
    /// IEEE binary64, nearest even.
    F64,
    /// Any format, every operation rounded by these options (not stochastic).
    Format(FloatFormat, RoundOptions),
}

impl Arith {
    /// An emulated format with nearest-even rounding.
    pub fn format(fmt: FloatFormat) -> Arith {
        Arith::Format(fmt, RoundOptions::default())
    }

    /// Parse `float32`/`fp32`/`f32`, `float64`/`fp64`/`f64`, or any format name.
    ///
    /// # Errors
    ///
    /// An unknown format name.
    pub fn parse(s: &str) -> Result<Arith> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" | "binary32" => Ok(Arith::F32),
            "f64" | "fp64" | "float64" | "binary64" => Ok(Arith::F64),
            _ => Ok(Arith::format(FloatFormat::parse(s)?)),
        }
    }

    /// Check that the arithmetic can run a reduction.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for stochastic rounding (a reduction's operations have no
    /// element index to draw random bits from; use the accumulation functions for that).
    pub fn check(&self) -> Result<()> {
        if let Arith::Format(_, o) = self {
            if o.mode == RoundingMode::Stochastic {
                return Err(Error::InvalidArgument(
                    "stochastic rounding is not available in softmax and variance; use rne, rtz, rna, rup, rdn or rto".into(),
                ));
            }
        }
        Ok(())
    }

    /// Round a binary64 result into the arithmetic.
    #[inline]
    pub fn round(&self, x: f64) -> f64 {
        match self {
            Arith::F32 => x as f32 as f64,
            Arith::F64 => x,
            Arith::Format(f, o) => f.round(x, o),
        }
    }

    /// `round(a + b)`.
    #[inline]
    pub fn add(&self, a: f64, b: f64) -> f64 {
        self.round(a + b)
    }
    /// `round(a − b)`.
    #[inline]
    pub fn sub(&self, a: f64, b: f64) -> f64 {
        self.round(a - b)
    }
    /// `round(a × b)`.
    #[inline]
    pub fn mul(&self, a: f64, b: f64) -> f64 {
        self.round(a * b)
    }
    /// `round(a ÷ b)`.
    #[inline]
    pub fn div(&self, a: f64, b: f64) -> f64 {
        self.round(a / b)
    }
    /// `round(exp(a))`.
    #[inline]
    pub fn exp(&self, a: f64) -> f64 {
        self.round(a.exp())
    }
    /// `Σ x_i`, left to right, every addition rounded.
    pub fn sum(&self, x: &[f64]) -> f64 {
        x.iter().fold(0.0, |s, &v| self.add(s, v))
    }
    /// The values rounded into the arithmetic.
    pub fn round_all(&self, x: &[f64]) -> Vec<f64> {
        x.iter().map(|&v| self.round(v)).collect()
    }
}

/// `exp(x_i) / Σ exp(x_j)` as written: `exp` overflows for large `x` (`Inf/Inf = NaN`).
pub fn softmax_naive(x: &[f64], ar: &Arith) -> Vec<f64> {
    let e: Vec<f64> = ar.round_all(x).iter().map(|&v| ar.exp(v)).collect();
    let d = ar.sum(&e);
    e.iter().map(|&v| ar.div(v, d)).collect()
}

/// `exp(x_i − max) / Σ exp(x_j − max)`: the same value, and no `exp` argument above 0.
pub fn softmax_safe(x: &[f64], ar: &Arith) -> Vec<f64> {
    let x = ar.round_all(x);
    let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
    let e: Vec<f64> = x.iter().map(|&v| ar.exp(ar.sub(v, m))).collect();
    let d = ar.sum(&e);
    e.iter().map(|&v| ar.div(v, d)).collect()
}

/// The running state of an online softmax: the largest value seen `m` and
/// `d = Σ exp(x_j − m)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftmaxStats {
    /// The largest value so far (−∞ for none).
    pub m: f64,
    /// `Σ exp(x_j − m)` over the values so far.
    pub d: f64,
}

impl SoftmaxStats {
    /// The state of no values: `(−∞, 0)`, the identity of the merge.
    pub const EMPTY: SoftmaxStats = SoftmaxStats {
        m: f64::NEG_INFINITY,
        d: 0.0,
    };
}

/// One pass (Milakov and Gimelshein, 2018): for each `x_j`, `m' = max(m, x_j)`,
/// `d ← d · exp(m − m') + exp(x_j − m')`.
pub fn online_softmax_stats(x: &[f64], ar: &Arith) -> SoftmaxStats {
    let mut st = SoftmaxStats::EMPTY;
    for &v in x {
        let v = ar.round(v);
        let m = st.m.max(v);
        // exp(−∞ − m) = 0 for the first value.
        let scale = if st.d == 0.0 {
            0.0
        } else {
            ar.exp(ar.sub(st.m, m))
        };
        st.d = ar.add(ar.mul(st.d, scale), ar.exp(ar.sub(v, m)));
        st.m = m;
    }
    st
}

/// The associative merge: `m = max(m_a, m_b)`, `d = d_a·exp(m_a − m) + d_b·exp(m_b − m)`
/// (FlashAttention's block combination; [`SoftmaxStats::EMPTY`] is its identity).
pub fn merge_softmax_stats(a: &SoftmaxStats, b: &SoftmaxStats, ar: &Arith) -> SoftmaxStats {
    if a.d == 0.0 {
        return *b;
    }
    if b.d == 0.0 {
        return *a;
    }
    let m = a.m.max(b.m);
    let da = ar.mul(a.d, ar.exp(ar.sub(a.m, m)));
    let db = ar.mul(b.d, ar.exp(ar.sub(b.m, m)));
    SoftmaxStats {
        m,
        d: ar.add(da, db),
    }
}

/// Softmax from one online pass: `exp(x_i − m) / d`.
pub fn softmax_online(x: &[f64], ar: &Arith) -> Vec<f64> {
    let st = online_softmax_stats(x, ar);
    normalize(x, &st, ar)
}

/// Softmax with the row split into chunks of `chunk` values, each chunk's `(m, d)` computed
/// in parallel and merged by a balanced tree over the chunks (the same tree whatever the
/// thread count, so the same bits).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for `chunk = 0`.
pub fn softmax_parallel(x: &[f64], chunk: usize, ar: &Arith) -> Result<Vec<f64>> {
    let st = online_softmax_parallel(x, chunk, ar)?;
    Ok(normalize(x, &st, ar))
}

/// The `(m, d)` of [`softmax_parallel`].
///
/// # Errors
///
/// [`Error::InvalidArgument`] for `chunk = 0`.
pub fn online_softmax_parallel(x: &[f64], chunk: usize, ar: &Arith) -> Result<SoftmaxStats> {
    if chunk == 0 {
        return Err(Error::InvalidArgument(
            "the chunk size must be at least 1".into(),
        ));
    }
    let parts: Vec<SoftmaxStats> = x
        .par_chunks(chunk)
        .map(|c| online_softmax_stats(c, ar))
        .collect();
    Ok(tree(&parts, SoftmaxStats::EMPTY, &|a, b| {
        merge_softmax_stats(a, b, ar)
    }))
}

fn normalize(x: &[f64], st: &SoftmaxStats, ar: &Arith) -> Vec<f64> {
    x.iter()
        .map(|&v| ar.div(ar.exp(ar.sub(ar.round(v), st.m)), st.d))
        .collect()
}

/// A balanced merge tree over `parts` (left half ⊕ right half).
fn tree<T: Copy>(parts: &[T], empty: T, f: &impl Fn(&T, &T) -> T) -> T {
    match parts.len() {
        0 => empty,
        1 => parts[0],
        n => {
            let (l, r) = parts.split_at(n / 2);
            f(&tree(l, empty, f), &tree(r, empty, f))
        }
    }
}

/// `E[x²] − E[x]²`, both sums accumulated in the arithmetic: catastrophic cancellation when
/// the mean is large against the spread.
pub fn variance_one_pass(x: &[f64], ar: &Arith) -> f64 {
    let x = ar.round_all(x);
    let n = ar.round(x.len() as f64);
    let s = ar.sum(&x);
    let sq: Vec<f64> = x.iter().map(|&v| ar.mul(v, v)).collect();
    let s2 = ar.sum(&sq);
    let mean = ar.div(s, n);
    ar.sub(ar.div(s2, n), ar.mul(mean, mean))
}

/// `Σ (x − mean)² / n` with the mean from a first pass.
pub fn variance_two_pass(x: &[f64], ar: &Arith) -> f64 {
    let x = ar.round_all(x);
    let n = ar.round(x.len() as f64);
    let mean = ar.div(ar.sum(&x), n);
    let sq: Vec<f64> = x
        .iter()
        .map(|&v| {
            let d = ar.sub(v, mean);
            ar.mul(d, d)
        })
        .collect();
    ar.div(ar.sum(&sq), n)
}

/// The running moments of Welford's algorithm: count, mean and `M2 = Σ (x − mean)²`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Moments {
    /// Values seen.
    pub n: u64,
    /// Their mean.
    pub mean: f64,
    /// `Σ (x_j − mean)²`.
    pub m2: f64,
}

impl Moments {
    /// Welford's update: `δ = x − mean`, `mean += δ/n`, `M2 += δ·(x − mean)`.
    pub fn push(&mut self, x: f64, ar: &Arith) {
        let x = ar.round(x);
        self.n += 1;
        let delta = ar.sub(x, self.mean);
        self.mean = ar.add(self.mean, ar.div(delta, ar.round(self.n as f64)));
        self.m2 = ar.add(self.m2, ar.mul(delta, ar.sub(x, self.mean)));
    }

    /// Chan, Golub and LeVeque's merge: `n = n_a + n_b`, `δ = mean_b − mean_a`,
    /// `mean = mean_a + δ·n_b/n`, `M2 = M2_a + M2_b + δ²·n_a·n_b/n`.
    pub fn merge(&self, o: &Moments, ar: &Arith) -> Moments {
        if self.n == 0 {
            return *o;
        }
        if o.n == 0 {
            return *self;
        }
        let n = self.n + o.n;
        let (na, nb, nn) = (
            ar.round(self.n as f64),
            ar.round(o.n as f64),
            ar.round(n as f64),
        );
        let delta = ar.sub(o.mean, self.mean);
        let mean = ar.add(self.mean, ar.mul(delta, ar.div(nb, nn)));
        let corr = ar.mul(ar.mul(delta, delta), ar.div(ar.mul(na, nb), nn));
        Moments {
            n,
            mean,
            m2: ar.add(ar.add(self.m2, o.m2), corr),
        }
    }

    /// The population variance `M2 / n` (NaN for no values).
    pub fn variance(&self, ar: &Arith) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            ar.div(self.m2, ar.round(self.n as f64))
        }
    }
}

/// Welford's one-pass, stable variance.
pub fn variance_welford(x: &[f64], ar: &Arith) -> f64 {
    let mut m = Moments::default();
    for &v in x {
        m.push(v, ar);
    }
    m.variance(ar)
}

/// Welford on chunks of `chunk` values in parallel, merged by Chan's formula over a
/// balanced tree (the same bits whatever the thread count).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for `chunk = 0`.
pub fn moments_parallel(x: &[f64], chunk: usize, ar: &Arith) -> Result<Moments> {
    if chunk == 0 {
        return Err(Error::InvalidArgument(
            "the chunk size must be at least 1".into(),
        ));
    }
    let parts: Vec<Moments> = x
        .par_chunks(chunk)
        .map(|c| {
            let mut m = Moments::default();
            for &v in c {
                m.push(v, ar);
            }
            m
        })
        .collect();
    Ok(tree(&parts, Moments::default(), &|a, b| a.merge(b, ar)))
}
