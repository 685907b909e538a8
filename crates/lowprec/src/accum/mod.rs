//! Accumulation in low precision (seed §5): sums whose every addition is rounded into an
//! accumulator format, as hardware with a `p`-bit accumulator computes them.
//!
//! Each addition is exact-then-round: the exact sum of the running value and the next term,
//! rounded once into the accumulator (see [`Adder`] for why binary64 intermediates are exact).
//!
//! | method | recurrence | error bound (`u` the accumulator's unit roundoff) |
//! |---|---|---|
//! | [`Method::Sequential`] | `s ← round(s + x_j)` | `γ_(n−1) Σ|x_j|`, `γ_n = nu/(1 − nu)` |
//! | [`Method::Pairwise`] | level by level: `x'_i = round(x_2i + x_2i+1)`, an odd level padded with one `0` | `γ_⌈log2 n⌉ Σ|x_j|` |
//! | [`Method::Kahan`] | `y = round(x_j − c)`, `t = round(s + y)`, `c = round(round(t − s) − y)`, `s = t` | `(2u + O(nu²)) Σ|x_j|`; lowprec reports and tests `2u + 4nu²` |
//!
//! With `chunk = N > 0` (chunked promotion, as DeepSeek-V3's FP8 GEMM every 128 terms) each
//! run of `N` terms is summed by the method from zero, and the partial sum is added into a
//! second, wider accumulator (FP32 by default, rounded to nearest even).
//!
//! ```
//! use lowprec::accum::{accumulate, AccumOptions, Method};
//! use lowprec::FloatFormat;
//! let ones = vec![1.0f64; 300];
//! let bf16 = AccumOptions::new(FloatFormat::BF16);
//! assert_eq!(accumulate(&ones, 300, &bf16)?.0, [256.0]); // 256 + 1 rounds back to 256
//! assert_eq!(accumulate(&ones, 300, &bf16.method(Method::Pairwise))?.0, [300.0]);
//! assert_eq!(accumulate(&ones, 300, &bf16.chunk(128))?.0, [300.0]); // 128 + 128 + 44
//! # Ok::<(), lowprec::Error>(())
//! ```

pub(crate) mod adder;
pub mod dot;
mod rows;

pub use adder::Adder;
pub use dot::{dot, gemm, gemm_product, GemmOptions, GemmReport, Order};

use crate::error::{Error, Result};
use crate::format::FloatFormat;
use crate::{Float, RoundOptions, Status};
use rayon::prelude::*;
use std::fmt;
use std::str::FromStr;

/// How the terms of a row are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// `s ← round(s + x_j)`, left to right.
    #[default]
    Sequential,
    /// A balanced tree, level by level: adjacent pairs `(x_0 + x_1), (x_2 + x_3), …`, an odd
    /// level padded with one zero at its end (the seed's tree, and a GPU reduction's).
    Pairwise,
    /// Kahan's compensated summation with every operation rounded into the accumulator.
    Kahan,
}

impl Method {
    /// The name used by the CLI.
    pub const fn name(self) -> &'static str {
        match self {
            Method::Sequential => "sequential",
            Method::Pairwise => "pairwise",
            Method::Kahan => "kahan",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method> {
        match s.to_ascii_lowercase().as_str() {
            "sequential" | "seq" => Ok(Method::Sequential),
            "pairwise" | "tree" => Ok(Method::Pairwise),
            "kahan" | "compensated" => Ok(Method::Kahan),
            _ => Err(Error::InvalidArgument(format!(
                "unknown accumulation method `{s}`; use sequential, pairwise or kahan"
            ))),
        }
    }
}

/// Everything that defines an accumulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccumOptions {
    /// The accumulator format.
    pub acc: FloatFormat,
    /// Rounding of every addition into `acc` (mode, overflow policy, stochastic seed).
    pub rounding: RoundOptions,
    /// How terms are combined.
    pub method: Method,
    /// Terms per chunk before promotion into `outer`; 0 for none.
    pub chunk: usize,
    /// The promotion accumulator (FP32 by default).
    pub outer: FloatFormat,
    /// Rounding of the promotions (nearest even by default).
    pub outer_rounding: RoundOptions,
}

impl AccumOptions {
    /// Sequential accumulation in `acc`, nearest even, no promotion.
    pub fn new(acc: FloatFormat) -> AccumOptions {
        AccumOptions {
            acc,
            rounding: RoundOptions::default(),
            method: Method::Sequential,
            chunk: 0,
            outer: FloatFormat::FP32,
            outer_rounding: RoundOptions::default(),
        }
    }

    /// With this method.
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// With these rounding options for the accumulator.
    pub fn rounding(mut self, rounding: RoundOptions) -> Self {
        self.rounding = rounding;
        self
    }

    /// Promote into the outer accumulator every `chunk` terms (0: never).
    pub fn chunk(mut self, chunk: usize) -> Self {
        self.chunk = chunk;
        self
    }

    /// With this outer (promotion) accumulator.
    pub fn outer(mut self, outer: FloatFormat) -> Self {
        self.outer = outer;
        self
    }
}

/// Rows of at least this many terms in all are summed in parallel.
const PAR_MIN: usize = 1 << 15;

/// Sum each row of the row-major `rows × cols` matrix `values` into `out` (one result per
/// row, as binary64), every addition rounded into the accumulator. Returns the counts of
/// inexact, overflowing and underflowing additions.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an accumulator [`Adder::new`] refuses, `cols = 0` with
/// values, a length that is not a multiple of `cols`, an output of the wrong length, or rows
/// of `2^30` terms or more.
pub fn accumulate_into<I: Float>(
    values: &[I],
    cols: usize,
    out: &mut [f64],
    opts: &AccumOptions,
) -> Result<Status> {
    I::accumulate_into(values, cols, out, opts)
}

/// [`accumulate_into`] for the types it is called with (see `crate::mono`).
pub(crate) fn accumulate_into_generic<I: Float>(
    values: &[I],
    cols: usize,
    out: &mut [f64],
    opts: &AccumOptions,
) -> Result<Status> {
    let rows = check_shape(values.len(), cols)?;
    if out.len() != rows {
        return Err(Error::InvalidArgument(format!(
            "the output holds {} sums for {rows} rows",
            out.len()
        )));
    }
    let adder = Adder::new(&opts.acc, &opts.rounding)?;
    let outer = Adder::new(&opts.outer, &opts.outer_rounding)?;
    let rule = rows::Rule {
        adder: &adder,
        outer: &outer,
        chunk: opts.chunk,
        kahan: opts.method == Method::Kahan,
    };
    if cols == 0 {
        return Ok(Status::default());
    }
    let parallel = values.len() >= PAR_MIN;
    let st = match opts.method {
        Method::Pairwise => {
            let one = |(r, (o, row)): (usize, (&mut f64, &[I]))| {
                let (v, st) = rows::pairwise_row(&rule, row, r as u64);
                *o = v;
                st
            };
            if parallel {
                out.par_iter_mut()
                    .zip(values.par_chunks(cols))
                    .enumerate()
                    .map(one)
                    .reduce(Status::default, |a, b| a + b)
            } else {
                out.iter_mut()
                    .zip(values.chunks(cols))
                    .enumerate()
                    .map(one)
                    .fold(Status::default(), |a, b| a + b)
            }
        }
        _ => {
            let lanes = rows::LANES;
            let one = |(t, o): (usize, &mut [f64])| {
                let r0 = t * lanes;
                rows::tile(
                    &rule,
                    &values[r0 * cols..(r0 + o.len()) * cols],
                    cols,
                    r0 as u64,
                    o,
                )
            };
            if parallel {
                out.par_chunks_mut(lanes)
                    .enumerate()
                    .map(one)
                    .reduce(Status::default, |a, b| a + b)
            } else {
                out.chunks_mut(lanes)
                    .enumerate()
                    .map(one)
                    .fold(Status::default(), |a, b| a + b)
            }
        }
    };
    Ok(finish(st, out))
}

/// [`accumulate_into`] into a new vector.
///
/// # Errors
///
/// As [`accumulate_into`].
pub fn accumulate<I: Float>(
    values: &[I],
    cols: usize,
    opts: &AccumOptions,
) -> Result<(Vec<f64>, Status)> {
    let rows = check_shape(values.len(), cols)?;
    let mut out = vec![0.0; rows];
    let st = accumulate_into(values, cols, &mut out, opts)?;
    Ok((out, st))
}

/// The number of rows of a `len`-element matrix with `cols` columns.
fn check_shape(len: usize, cols: usize) -> Result<usize> {
    if cols == 0 {
        return if len == 0 {
            Ok(0)
        } else {
            Err(Error::InvalidArgument(
                "zero columns for a non-empty input; give the row length".into(),
            ))
        };
    }
    if !len.is_multiple_of(cols) {
        return Err(Error::InvalidArgument(format!(
            "{len} values do not make rows of {cols}; give a row length that divides the input"
        )));
    }
    if cols >= 1 << 30 {
        return Err(Error::InvalidArgument(format!(
            "rows of {cols} terms are too long (at most 2^30 − 1); split them into chunks"
        )));
    }
    Ok(len / cols)
}

/// Add the NaN and infinite results to the counts.
fn finish(mut st: Status, out: &[f64]) -> Status {
    st.nan = out.iter().filter(|v| v.is_nan()).count() as u64;
    st.infinite = out.iter().filter(|v| v.is_infinite()).count() as u64;
    st
}

/// The exact sum of `values` rounded once to binary64 (nearest even): Shewchuk's
/// non-overlapping partials, as Python's `math.fsum`. Non-finite values give their IEEE sum.
///
/// ```
/// use lowprec::accum::exact_sum;
/// assert_eq!(exact_sum(&[1e100, 1.0, -1e100]), 1.0);
/// assert_eq!(exact_sum(&[0.1; 10]), 1.0);
/// ```
pub fn exact_sum(values: &[f64]) -> f64 {
    let mut partials: Vec<f64> = Vec::new();
    let mut special = 0.0;
    for &v in values {
        if !v.is_finite() {
            special += v;
            continue;
        }
        let mut x = v;
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        if !x.is_finite() {
            // An intermediate overflow: fall back to the plain sum.
            return values.iter().sum();
        }
        partials.truncate(i);
        partials.push(x);
    }
    if special != 0.0 || special.is_nan() {
        return special;
    }
    // Sum the partials from the top, then correct a halfway case (as CPython's fsum).
    let mut n = partials.len();
    if n == 0 {
        return 0.0;
    }
    n -= 1;
    let mut hi = partials[n];
    let mut lo = 0.0;
    while n > 0 {
        let x = hi;
        n -= 1;
        let y = partials[n];
        hi = x + y;
        let yr = hi - x;
        lo = y - yr;
        if lo != 0.0 {
            break;
        }
    }
    if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
        let y = lo * 2.0;
        let x = hi + y;
        let yr = x - hi;
        if y == yr {
            hi = x;
        }
    }
    hi
}

/// The classical error constant `γ_n = n·u / (1 − n·u)` (Higham, *Accuracy and Stability of
/// Numerical Algorithms*, §3.1); infinite when `n·u ≥ 1`.
///
/// ```
/// assert_eq!(lowprec::accum::gamma(0, 2f64.powi(-8)), 0.0);
/// assert!(lowprec::accum::gamma(256, 2f64.powi(-8)).is_infinite());
/// ```
pub fn gamma(n: u64, u: f64) -> f64 {
    let nu = n as f64 * u;
    if nu >= 1.0 {
        f64::INFINITY
    } else {
        nu / (1.0 - nu)
    }
}

/// The error bound constant of `method` over `n` terms in `acc` (with `chunk` promotion into
/// `outer`): `|ŝ − s| ≤ bound · Σ|x_j|` to first order.
pub fn error_bound(opts: &AccumOptions, n: u64) -> f64 {
    let u = opts.acc.unit_roundoff();
    let inner = |m: u64| match opts.method {
        Method::Sequential => gamma(m, u),
        Method::Pairwise => gamma(ceil_log2(m), u),
        Method::Kahan => 2.0 * u + 4.0 * m as f64 * u * u,
    };
    if opts.chunk == 0 || opts.chunk as u64 >= n {
        inner(n)
    } else {
        let c = opts.chunk as u64;
        let chunks = n.div_ceil(c);
        let v = opts.outer.unit_roundoff();
        (1.0 + inner(c)) * (1.0 + gamma(chunks, v)) - 1.0
    }
}

fn ceil_log2(n: u64) -> u64 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros() as u64
    }
}
