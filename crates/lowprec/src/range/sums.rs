//! The reduction orders of the single-precision oracle (seed §4.2 Q5, §4.3 rule 6):
//! [`pairwise_sum`], [`prefix_sum`] and [`scaled_square_sum`], each computed in the
//! values' own precision and each with a fixed order, so a result is the same bits on any
//! machine and for any number of threads.
//!
//! ```
//! use lowprec::range::{pairwise_sum, prefix_sum, scaled_square_sum};
//!
//! let x: Vec<f32> = (0..5).map(|i| i as f32).collect();
//! assert_eq!(pairwise_sum(&x), 10.0);
//! assert_eq!(prefix_sum(&x), [0.0, 1.0, 3.0, 6.0, 10.0]);
//!
//! // 3e30 squared is 9e60, far beyond binary32; scaled first, it is not
//! let big = [3.0e30f32; 4];
//! let total = scaled_square_sum(&big, None)?;
//! assert!((total / (4.0 * (3.0e30f32 as f64).powi(2)) - 1.0).abs() < 1e-6);
//! # Ok::<(), lowprec::range::RangeError>(())
//! ```
//!
//! # Error bounds
//!
//! A pairwise sum of `n` terms is a tree of depth `d = ⌈log2 n⌉`: its error is at most
//! `γ_d Σ|x_i|`, `γ_d = d u / (1 − d u)` with `u` the unit roundoff (Higham, *Accuracy and
//! Stability of Numerical Algorithms*, §4.2). Every prefix of [`prefix_sum`] is a tree of
//! depth at most `⌈log2 n⌉` too, where a sequential binary32 sum of `10^4` terms can lose
//! `10^4 u`.
//!
//! # Signed zeros
//!
//! [`pairwise_sum`] pads with `+0`, as the seed does: a padded subtree adds `+0`, and
//! `−0 + (+0) = +0`, so a sum whose terms are all `−0` is `−0` only when `n` is a power of
//! two (an empty sum is `+0`). [`prefix_sum`] adds nothing before the first term (the
//! Hillis–Steele scan copies where there is no earlier entry), so `prefix_sum(&[-0.0])` is
//! `[-0.0]` and a run of leading `−0` keeps its sign.
//!
//! # Parallelism
//!
//! Above [`PARALLEL_THRESHOLD`] terms the work runs on rayon. The tree of a pairwise sum
//! and the levels of a scan are fixed by `n` alone; threads only take disjoint subtrees,
//! tiles and column strips of it, so the bits do not depend on the thread count (tested
//! with 1 and 2 threads).

use super::element::{pow2_pair, Element, Real};
use super::exponent::block_exponent;
use super::RangeError;
use crate::simd::{dispatch, Kernel};
use rayon::prelude::*;
use std::marker::PhantomData;

/// The number of terms from which the sums run on several threads.
pub const PARALLEL_THRESHOLD: usize = 1 << 18;

/// Terms reduced in one block on the stack.
const LEAF: usize = 256;
/// The largest full subtree summed by one dispatched kernel.
const CHUNK: usize = 1 << 14;

/// A sequence of terms read by the tree: the values themselves, or their scaled squares.
trait Terms<T>: Sync {
    /// Term `i`.
    fn term(&self, i: usize) -> T;
    /// `out[j] = term(lo + 2j) + term(lo + 2j + 1)`: the first level of the tree.
    fn pairs(&self, lo: usize, out: &mut [T]);
}

struct Plain<'a, T>(&'a [T]);

impl<T: Element> Terms<T> for Plain<'_, T> {
    #[inline(always)]
    fn term(&self, i: usize) -> T {
        self.0[i]
    }
    #[inline(always)]
    fn pairs(&self, lo: usize, out: &mut [T]) {
        let x = &self.0[lo..lo + 2 * out.len()];
        for (o, p) in out.iter_mut().zip(x.chunks_exact(2)) {
            *o = p[0] + p[1];
        }
    }
}

/// `|x_i × a × b|² × w_i`, with `a × b = 2^-e` applied as two exact-then-rounded products.
struct Squares<'a, T: Element> {
    values: &'a [T],
    weights: Option<&'a [T::Real]>,
    a: T::Real,
    b: T::Real,
}

impl<T: Element> Squares<'_, T> {
    #[inline(always)]
    fn square(&self, x: T) -> T::Real {
        x.mul_real(self.a).mul_real(self.b).norm_sqr()
    }
}

impl<T: Element> Terms<T::Real> for Squares<'_, T> {
    #[inline(always)]
    fn term(&self, i: usize) -> T::Real {
        let s = self.square(self.values[i]);
        match self.weights {
            Some(w) => s * w[i],
            None => s,
        }
    }
    #[inline(always)]
    fn pairs(&self, lo: usize, out: &mut [T::Real]) {
        let x = &self.values[lo..lo + 2 * out.len()];
        match self.weights {
            Some(w) => {
                let w = &w[lo..lo + 2 * out.len()];
                for ((o, p), q) in out.iter_mut().zip(x.chunks_exact(2)).zip(w.chunks_exact(2)) {
                    *o = self.square(p[0]) * q[0] + self.square(p[1]) * q[1];
                }
            }
            None => {
                for (o, p) in out.iter_mut().zip(x.chunks_exact(2)) {
                    *o = self.square(p[0]) + self.square(p[1]);
                }
            }
        }
    }
}

/// Reduce `a[..w]` (`w` a power of two, at most `LEAF / 2`) level by level.
#[inline(always)]
fn reduce<T: Element>(a: &mut [T; LEAF / 2], b: &mut [T; LEAF / 4], mut w: usize) -> T {
    loop {
        if w == 1 {
            return a[0];
        }
        let h = w / 2;
        for i in 0..h {
            b[i] = a[2 * i] + a[2 * i + 1];
        }
        if h == 1 {
            return b[0];
        }
        w = h / 2;
        for i in 0..w {
            a[i] = b[2 * i] + b[2 * i + 1];
        }
    }
}

/// The sum of the full, aligned subtree `[lo, lo + w)`, `w` a power of two.
struct FullTree<'a, S, T> {
    src: &'a S,
    lo: usize,
    w: usize,
    _t: PhantomData<T>,
}

impl<T: Element, S: Terms<T>> Kernel for FullTree<'_, S, T> {
    type Output = T;
    #[inline(always)]
    fn run(self) -> T {
        let (src, lo, w) = (self.src, self.lo, self.w);
        if w == 1 {
            return src.term(lo);
        }
        let mut a = [T::ZERO; LEAF / 2];
        let mut b = [T::ZERO; LEAF / 4];
        if w <= LEAF {
            src.pairs(lo, &mut a[..w / 2]);
            return reduce(&mut a, &mut b, w / 2);
        }
        // Leaves of LEAF terms, merged as a binary counter: the stack holds the left
        // siblings still waiting for their right halves.
        let mut stack = [T::ZERO; 64];
        let mut top = 0;
        for j in 0..w / LEAF {
            src.pairs(lo + j * LEAF, &mut a);
            let mut s = reduce(&mut a, &mut b, LEAF / 2);
            let mut k = j;
            while k & 1 == 1 {
                top -= 1;
                s = stack[top] + s;
                k >>= 1;
            }
            stack[top] = s;
            top += 1;
        }
        stack[0]
    }
}

/// The node `[lo, lo + w)` of the zero-padded tree over `n` terms: `+0` when it is all
/// padding, else its left half plus its right half.
fn tree<T: Element, S: Terms<T>>(src: &S, lo: usize, w: usize, n: usize, par: bool) -> T {
    if lo >= n {
        return T::ZERO;
    }
    if lo + w <= n && w <= CHUNK {
        return dispatch(FullTree {
            src,
            lo,
            w,
            _t: PhantomData,
        });
    }
    let h = w / 2;
    let (l, r) = if par && w > CHUNK {
        rayon::join(|| tree(src, lo, h, n, par), || tree(src, lo + h, h, n, par))
    } else {
        (tree(src, lo, h, n, par), tree(src, lo + h, h, n, par))
    };
    l + r
}

fn tree_sum<T: Element, S: Terms<T>>(src: &S, n: usize) -> T {
    if n == 0 {
        return T::ZERO;
    }
    tree(src, 0, n.next_power_of_two(), n, n >= PARALLEL_THRESHOLD)
}

/// The sum of `values` as a balanced binary tree, in their own precision: the terms padded
/// with `+0` to a power of two and added pairwise, level by level (`x0 + x1`, `x2 + x3`,
/// …, then the pairs of those), the order of the seed's `pairwise_sum`. See the
/// [module docs](self) for the error bound and signed zeros.
///
/// ```
/// use lowprec::range::pairwise_sum;
/// assert_eq!(pairwise_sum(&[0.0f32, 1.0, 2.0, 3.0, 4.0]), 10.0);
/// // ((1 + 2^-24) + 2^-24) + 0 in a sequential sum is 1; the tree adds the small pair first
/// assert_eq!(pairwise_sum(&[2f32.powi(-24), 2f32.powi(-24), 1.0, 0.0]), 1.0 + 2f32.powi(-23));
/// assert!(pairwise_sum(&[-0.0f64, -0.0]).is_sign_negative());
/// assert!(pairwise_sum(&[-0.0f64, -0.0, -0.0]).is_sign_positive()); // padded with +0
/// ```
pub fn pairwise_sum<T: Element>(values: &[T]) -> T {
    tree_sum(&Plain(values), values.len())
}

/// The Hillis–Steele scan of `values` in their own precision: `⌈log2 n⌉` levels, at level
/// `k` each entry `i ≥ 2^k` adding the entry `2^k` before it (as the previous level left
/// it); `out[i] = Σ values[..=i]`. See the [module docs](self) for the error bound.
///
/// ```
/// use lowprec::range::prefix_sum;
/// assert_eq!(prefix_sum(&[0.0f32, 1.0, 2.0, 3.0, 4.0]), [0.0, 1.0, 3.0, 6.0, 10.0]);
/// ```
pub fn prefix_sum<T: Element>(values: &[T]) -> Vec<T> {
    let mut out = vec![T::ZERO; values.len()];
    scan_into(values, &mut out);
    out
}

/// [`prefix_sum`] into a buffer of the same length (no allocation of the output).
///
/// # Errors
/// [`RangeError::Shape`] if the lengths differ.
pub fn prefix_sum_into<T: Element>(values: &[T], out: &mut [T]) -> Result<(), RangeError> {
    if values.len() != out.len() {
        return Err(RangeError::Shape(format!(
            "prefix_sum_into: {} values but an output of {}; give an output of the same length",
            values.len(),
            out.len()
        )));
    }
    scan_into(values, out);
    Ok(())
}

/// Levels with shifts below `2^LOW_LEVELS` run on tiles along the axis (with a halo);
/// the rest on column strips of rows of `2^LOW_LEVELS` entries.
const LOW_LEVELS: u32 = 12;
/// Outputs per tile of the low levels.
const TILE: usize = 1 << 15;
/// Columns per strip of the high levels, and columns per parallel group of strips.
const STRIP: usize = 16;
const GROUP: usize = 256;

/// `dst[j] = src[j] + src[j - s]` for `j ≥ s`, `dst[j] = src[j]` below.
#[inline(always)]
fn level<T: Element>(src: &[T], dst: &mut [T], s: usize) {
    let s = s.min(src.len());
    dst[..s].copy_from_slice(&src[..s]);
    for ((d, a), b) in dst[s..].iter_mut().zip(&src[s..]).zip(src) {
        *d = *a + *b;
    }
}

/// The low levels for the outputs `[t0, t0 + out.len())`.
struct LowTile<'a, T> {
    values: &'a [T],
    t0: usize,
    out: &'a mut [T],
    row: usize,
    bufs: &'a mut (Vec<T>, Vec<T>),
}

impl<T: Element> Kernel for LowTile<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let halo = self.row - 1;
        let base = self.t0.saturating_sub(halo);
        let end = self.t0 + self.out.len();
        let m = end - base;
        let (a, b) = self.bufs;
        a.clear();
        a.extend_from_slice(&self.values[base..end]);
        b.resize(m, T::ZERO);
        let (mut src, mut dst) = (a, b);
        let mut s = 1;
        // Only the shifts of the low levels that the whole scan has (s < n).
        while s < self.row && s < self.values.len() {
            level(src, dst, s);
            std::mem::swap(&mut src, &mut dst);
            s *= 2;
        }
        self.out.copy_from_slice(&src[self.t0 - base..]);
    }
}

/// The high levels for one group of columns: `segs[q]` is row `q`'s part of the group.
struct HighGroup<'a, 'b, T> {
    segs: &'a mut [&'b mut [T]],
    bufs: &'a mut (Vec<T>, Vec<T>),
}

impl<T: Element> Kernel for HighGroup<'_, '_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let rows = self.segs.len();
        let width = self.segs.first().map_or(0, |s| s.len());
        let (a, b) = self.bufs;
        a.resize(rows * STRIP, T::ZERO);
        b.resize(rows * STRIP, T::ZERO);
        for c0 in (0..width).step_by(STRIP) {
            for (q, seg) in self.segs.iter().enumerate() {
                let part = &seg[c0.min(seg.len())..(c0 + STRIP).min(seg.len())];
                let line = &mut a[q * STRIP..(q + 1) * STRIP];
                line[..part.len()].copy_from_slice(part);
                line[part.len()..].fill(T::ZERO);
            }
            let (mut src, mut dst) = (&mut *a, &mut *b);
            let mut shift = 1;
            while shift < rows {
                level(src, dst, shift * STRIP);
                std::mem::swap(&mut src, &mut dst);
                shift *= 2;
            }
            for (q, seg) in self.segs.iter_mut().enumerate() {
                let len = seg.len();
                let part = &mut seg[c0.min(len)..(c0 + STRIP).min(len)];
                let n = part.len();
                part.copy_from_slice(&src[q * STRIP..q * STRIP + n]);
            }
        }
    }
}

fn scan_into<T: Element>(values: &[T], out: &mut [T]) {
    let n = values.len();
    if n == 0 {
        return;
    }
    let levels = usize::BITS - (n - 1).leading_zeros(); // ⌈log2 n⌉
    let row = 1usize << levels.min(LOW_LEVELS);
    let par = n >= PARALLEL_THRESHOLD;
    let new_bufs = || (Vec::new(), Vec::new());
    let low = |bufs: &mut (Vec<T>, Vec<T>), (i, out): (usize, &mut [T])| {
        dispatch(LowTile {
            values,
            t0: i * TILE,
            out,
            row,
            bufs,
        })
    };
    if par {
        out.par_chunks_mut(TILE)
            .enumerate()
            .for_each_init(new_bufs, low);
    } else {
        let mut bufs = new_bufs();
        out.chunks_mut(TILE)
            .enumerate()
            .for_each(|c| low(&mut bufs, c));
    }
    if n <= row {
        return;
    }
    let mut groups: Vec<Vec<&mut [T]>> = (0..row.div_ceil(GROUP)).map(|_| Vec::new()).collect();
    for r in out.chunks_mut(row) {
        for (g, seg) in r.chunks_mut(GROUP).enumerate() {
            groups[g].push(seg);
        }
    }
    let high = |bufs: &mut (Vec<T>, Vec<T>), mut segs: Vec<&mut [T]>| {
        dispatch(HighGroup {
            segs: &mut segs,
            bufs,
        })
    };
    if par {
        groups.into_par_iter().for_each_init(new_bufs, high);
    } else {
        let mut bufs = new_bufs();
        groups.into_iter().for_each(|g| high(&mut bufs, g));
    }
}

/// `Σ w_i |x_i|²` without squaring a value out of range, in binary64.
///
/// As LAPACK's `nrm2`: the values are multiplied by `2^-e`, `e` their
/// [`block_exponent`], before squaring (exactly, unless a value falls into the subnormal
/// range, where it is rounded once as `ldexp` rounds); the squares (`re² + im²` for complex
/// values), times the weights, are summed in the values' own precision by the tree of
/// [`pairwise_sum`]; the scale `2^2e` is restored on the host in binary64. `weights`
/// (non-negative, in the values' real precision) has one weight per value, or is `None`
/// for weight one.
///
/// ```
/// use lowprec::range::{scaled_square_sum, Complex32};
/// // (1e-30)² = 1e-60 underflows binary32 to 0; scaled, it does not
/// let tiny = [1.0e-30f32; 8];
/// let t = scaled_square_sum(&tiny, None)?;
/// assert!((t / (8.0 * (1.0e-30f32 as f64).powi(2)) - 1.0).abs() < 1e-6);
/// let z = [Complex32::new(3.0e20, 4.0e20)];
/// assert!((scaled_square_sum(&z, Some(&[2.0]))? / 5.0e41 - 1.0).abs() < 1e-6);
/// # Ok::<(), lowprec::range::RangeError>(())
/// ```
///
/// # Errors
/// [`RangeError::NotFinite`] for a NaN or infinite value; [`RangeError::Shape`] if the
/// weights are not one per value.
pub fn scaled_square_sum<T: Element>(
    values: &[T],
    weights: Option<&[T::Real]>,
) -> Result<f64, RangeError> {
    if let Some(w) = weights {
        if w.len() != values.len() {
            return Err(RangeError::Shape(format!(
                "scaled_square_sum: {} weights for {} values; give one weight per value",
                w.len(),
                values.len()
            )));
        }
    }
    let e = block_exponent(values)?;
    // -e is within [-MAX_EXP, -MIN_SUB_EXP], which pow2_pair always splits
    let (a, b) = pow2_pair::<T::Real>(-e).expect("a block exponent's inverse is two powers");
    let total = tree_sum(
        &Squares {
            values,
            weights,
            a,
            b,
        },
        values.len(),
    );
    Ok(total.to_f64().scale(2 * e))
}

/// `(outer, length, inner)` of `shape` around `axis`, checked against `len`.
fn split_axis(
    len: usize,
    shape: &[usize],
    axis: usize,
) -> Result<(usize, usize, usize), RangeError> {
    if axis >= shape.len() {
        return Err(RangeError::Shape(format!(
            "axis {axis} is out of range for a shape of {} dimensions; count axes from 0",
            shape.len()
        )));
    }
    let total: usize = shape.iter().product();
    if total != len {
        return Err(RangeError::Shape(format!(
            "shape {shape:?} holds {total} values but {len} were given; give the array's own shape"
        )));
    }
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    Ok((outer, shape[axis], inner))
}

/// One line along the axis: `values[o·len·inner + k·inner + i]`, `k = 0..len`.
fn line<T: Element>(values: &[T], o: usize, i: usize, len: usize, inner: usize) -> Vec<T> {
    (0..len)
        .map(|k| values[(o * len + k) * inner + i])
        .collect()
}

/// [`pairwise_sum`] along `axis` of a row-major array of `shape`: the result has `shape`
/// with `axis` removed (row-major), each entry the tree sum of its line.
///
/// ```
/// use lowprec::range::pairwise_sum_axis;
/// let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // shape (2, 3)
/// assert_eq!(pairwise_sum_axis(&x, &[2, 3], 0)?, [5.0, 7.0, 9.0]);
/// assert_eq!(pairwise_sum_axis(&x, &[2, 3], 1)?, [6.0, 15.0]);
/// # Ok::<(), lowprec::range::RangeError>(())
/// ```
///
/// # Errors
/// [`RangeError::Shape`] if `axis` is not an axis of `shape` or `shape` does not hold
/// `values.len()` values.
pub fn pairwise_sum_axis<T: Element>(
    values: &[T],
    shape: &[usize],
    axis: usize,
) -> Result<Vec<T>, RangeError> {
    let (outer, len, inner) = split_axis(values.len(), shape, axis)?;
    let one = |j: usize| {
        let (o, i) = (j / inner, j % inner);
        if inner == 1 {
            pairwise_sum(&values[o * len..(o + 1) * len])
        } else {
            pairwise_sum(&line(values, o, i, len, inner))
        }
    };
    let count = outer * inner;
    Ok(if values.len() >= PARALLEL_THRESHOLD {
        (0..count).into_par_iter().map(one).collect()
    } else {
        (0..count).map(one).collect()
    })
}

/// [`prefix_sum`] along `axis` of a row-major array of `shape`; same shape out.
///
/// ```
/// use lowprec::range::prefix_sum_axis;
/// let x = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]; // shape (2, 3)
/// assert_eq!(prefix_sum_axis(&x, &[2, 3], 0)?, [1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
/// assert_eq!(prefix_sum_axis(&x, &[2, 3], 1)?, [1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
/// # Ok::<(), lowprec::range::RangeError>(())
/// ```
///
/// # Errors
/// As [`pairwise_sum_axis`].
pub fn prefix_sum_axis<T: Element>(
    values: &[T],
    shape: &[usize],
    axis: usize,
) -> Result<Vec<T>, RangeError> {
    let (outer, len, inner) = split_axis(values.len(), shape, axis)?;
    let mut out = vec![T::ZERO; values.len()];
    if inner == 1 {
        for (src, dst) in values.chunks(len.max(1)).zip(out.chunks_mut(len.max(1))) {
            scan_into(src, dst);
        }
        return Ok(out);
    }
    for o in 0..outer {
        for i in 0..inner {
            let scanned = prefix_sum(&line(values, o, i, len, inner));
            for (k, v) in scanned.into_iter().enumerate() {
                out[(o * len + k) * inner + i] = v;
            }
        }
    }
    Ok(out)
}
