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
use super::exponent::exponent_of;
use super::RangeError;
use crate::simd::{columns4, dispatch, stream8, Kernel};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

/// The number of terms from which the sums run on several threads.
pub const PARALLEL_THRESHOLD: usize = 1 << 18;

/// Terms reduced in one block on the stack.
const LEAF: usize = 256;
/// The largest full subtree summed by one dispatched kernel.
const CHUNK: usize = 1 << 14;

/// The leaves of `scaled_square_sum`: small enough that the pass for the largest magnitude
/// leaves the leaf in the first-level cache for the pass that sums it (8 KiB of binary32).
const SQUARE_LEAF: usize = 1 << 11;

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

/// `|x_i × a × b|² × w_i`, with `a × b = 2^-e` applied as two exact-then-rounded products
/// (`TWO`), or as one when `b = 1` (the same bits: `× 1` is exact), the common case.
struct Squares<'a, T: Element, const TWO: bool> {
    values: &'a [T],
    weights: Option<&'a [T::Real]>,
    a: T::Real,
    b: T::Real,
}

impl<T: Element, const TWO: bool> Squares<'_, T, TWO> {
    #[inline(always)]
    fn square(&self, x: T) -> T::Real {
        let y = x.mul_real(self.a);
        if TWO {
            y.mul_real(self.b).norm_sqr()
        } else {
            y.norm_sqr()
        }
    }
}

impl<T: Element, const TWO: bool> Terms<T::Real> for Squares<'_, T, TWO> {
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

/// `out[i] = a[2i] + a[2i + 1]`: one level of the tree on a fixed width, which the compiler
/// unrolls and keeps in registers.
#[inline(always)]
fn halve<T: Element, const N: usize, const H: usize>(a: &[T; N]) -> [T; H] {
    let mut out = [T::ZERO; H];
    for (o, p) in out.iter_mut().zip(a.chunks_exact(2)) {
        *o = p[0] + p[1];
    }
    out
}

/// [`reduce`] of a whole leaf's pairs (`LEAF / 2` = 128 entries), level by level on fixed
/// widths.
#[inline(always)]
fn reduce_leaf<T: Element>(a: &[T; LEAF / 2]) -> T {
    let b: [T; 64] = halve(a);
    let c: [T; 32] = halve(&b);
    let d: [T; 16] = halve(&c);
    let e: [T; 8] = halve(&d);
    let f: [T; 4] = halve(&e);
    let g: [T; 2] = halve(&f);
    g[0] + g[1]
}

/// The sum of the full, aligned subtree `[lo, lo + w)`, `w` a power of two.
struct FullTree<'a, S, T> {
    src: &'a S,
    lo: usize,
    w: usize,
    _t: PhantomData<T>,
}

impl<'a, S, T> FullTree<'a, S, T> {
    /// The subtree `[lo, lo + w)` of `src`.
    fn new(src: &'a S, lo: usize, w: usize) -> Self {
        FullTree {
            src,
            lo,
            w,
            _t: PhantomData,
        }
    }
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
            let mut s = reduce_leaf(&a);
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
        return dispatch(FullTree::new(src, lo, w));
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

/// Lanes of one vector of the scan kernels.
const LANES: usize = 16;
/// Vectors of a block of the streaming kernels (the longest delay, in vectors or rows).
const BLOCK: usize = 8;
/// Levels done on the whole axis by [`Stream8`] (shifts `1 … 128`).
const STREAM_LEVELS: u32 = 8;
/// Entries of one row of the tiles' column levels (shifts `256 … 2048`, [`Columns4`]).
const TILE_ROW: usize = 1 << STREAM_LEVELS;
/// Levels done on the tiles: shifts below `ROW` (the last one, shift `ROW / 2`, as the
/// tile is written out).
const TILE_LEVELS: u32 = STREAM_LEVELS + 5;
/// The row length of the matrix view whose columns take the levels with shifts `≥ ROW`.
const ROW: usize = 1 << TILE_LEVELS;
/// Outputs per tile of the low levels.
const TILE: usize = 1 << 16;
/// Columns per strip of the high levels (at most).
const STRIP: usize = 128;
/// Bytes of a strip's buffer (at most, unless a strip is one vector wide).
const STRIP_BYTES: usize = 1 << 19;
/// Below this many values the scan runs level by level.
const SMALL: usize = 1 << 10;

/// One vector of lanes.
type V<T> = [T; LANES];

/// `-0` in every part: `x + (-0)` is `x` for every number `x` (`-0` included; a NaN stays
/// a NaN), so an entry with no predecessor (the scan copies it) can add it.
#[inline(always)]
fn neg_zero<T: Element>() -> T {
    T::ZERO.mul_real(T::Real::from_f64(-0.0))
}

/// `a + b`, lane by lane.
#[inline(always)]
fn vadd<T: Element>(a: &V<T>, b: &V<T>) -> V<T> {
    std::array::from_fn(|l| a[l] + b[l])
}

/// `cur[l] + cur[l − S]`, lanes `l < S` taking `prev[LANES − S + l]` (the vector before).
#[inline(always)]
fn shift_add<T: Element, const S: usize>(cur: &V<T>, prev: &V<T>) -> V<T> {
    std::array::from_fn(|l| {
        cur[l]
            + if l >= S {
                cur[l - S]
            } else {
                prev[LANES - S + l]
            }
    })
}

/// The vector at `s[at..]`.
#[inline(always)]
fn load<T: Element>(s: &[T], at: usize) -> V<T> {
    s[at..at + LANES].try_into().expect("LANES entries")
}

/// Write `v` at `s[at..]`.
#[inline(always)]
fn store<T: Element>(s: &mut [T], at: usize, v: &V<T>) {
    s[at..at + LANES].copy_from_slice(v);
}

/// The state of four delay levels with delays `1, 2, 4, 8` (in vectors or rows): `dK`
/// holds the inputs of the level of delay `K` for the last `K` steps.
struct Delays<T> {
    d1: [V<T>; 1],
    d2: [V<T>; 2],
    d4: [V<T>; 4],
    d8: [V<T>; 8],
}

impl<T: Element> Delays<T> {
    #[inline(always)]
    fn new() -> Self {
        let z = [neg_zero::<T>(); LANES];
        Delays {
            d1: [z; 1],
            d2: [z; 2],
            d4: [z; 4],
            d8: [z; 8],
        }
    }

    /// Step `k` (mod 8) of the four levels on `v`.
    #[inline(always)]
    fn step(&mut self, k: usize, v: V<T>) -> V<T> {
        let v1 = vadd(&v, &self.d1[0]);
        self.d1[0] = v;
        let v2 = vadd(&v1, &self.d2[k % 2]);
        self.d2[k % 2] = v1;
        let v3 = vadd(&v2, &self.d4[k % 4]);
        self.d4[k % 4] = v2;
        let v4 = vadd(&v3, &self.d8[k % 8]);
        self.d8[k % 8] = v3;
        v4
    }

    /// Steps `0 … 7` on a block of eight vectors.
    #[inline(always)]
    fn block(&mut self, b: &mut [V<T>; BLOCK]) {
        for (k, v) in b.iter_mut().enumerate() {
            *v = self.step(k, *v);
        }
    }
}

/// The first eight levels (shifts `1 … 128`) streamed along `src` into `dst` (as long,
/// a multiple of `LANES`): `dst[i]` is the scan's level-8 entry of `src` taken as the
/// whole axis.
struct Stream8<'a, T> {
    src: &'a [T],
    dst: &'a mut [T],
}

impl<T: Element> Kernel for Stream8<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (src, dst) = (self.src, self.dst);
        let z = [neg_zero::<T>(); LANES];
        let mut p = [z; 4];
        let mut d = Delays::new();
        let step = BLOCK * LANES;
        let full = src.len() / step * step;
        for at in (0..full).step_by(step) {
            let mut b: [V<T>; BLOCK] = std::array::from_fn(|k| load(src, at + k * LANES));
            stream_block(&mut p, &mut d, &mut b);
            for (k, v) in b.iter().enumerate() {
                store(dst, at + k * LANES, v);
            }
        }
        if full < src.len() {
            let mut tail = [z; BLOCK];
            let flat = tail.as_flattened_mut();
            let rest = src.len() - full;
            flat[..rest].copy_from_slice(&src[full..]);
            stream_block(&mut p, &mut d, &mut tail);
            let room = dst.len() - full;
            dst[full..].copy_from_slice(&tail.as_flattened()[..room]);
        }
    }
}

/// The eight levels of [`Stream8`] on one block: `p` holds the last vector fed to each of
/// the in-vector levels (shifts `1, 2, 4, 8`), `d` the delays of the next four.
#[inline(always)]
fn stream_block<T: Element>(p: &mut [V<T>; 4], d: &mut Delays<T>, b: &mut [V<T>; BLOCK]) {
    for v in b.iter_mut() {
        let v1 = shift_add::<T, 1>(v, &p[0]);
        p[0] = *v;
        let v2 = shift_add::<T, 2>(&v1, &p[1]);
        p[1] = v1;
        let v3 = shift_add::<T, 4>(&v2, &p[2]);
        p[2] = v2;
        *v = shift_add::<T, 8>(&v3, &p[3]);
        p[3] = v3;
    }
    d.block(b);
}

/// Four column levels (row shifts `1, 2, 4, 8`) in place on the first `rows` rows of
/// `buf`, rows of `row` entries (a multiple of `LANES`), streamed down each column.
struct Columns4<'a, T> {
    buf: &'a mut [T],
    row: usize,
    rows: usize,
}

impl<T: Element> Kernel for Columns4<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (buf, row, rows) = (self.buf, self.row, self.rows);
        let full = rows / BLOCK * BLOCK;
        for c in (0..row).step_by(LANES) {
            let mut d = Delays::new();
            for r0 in (0..full).step_by(BLOCK) {
                let mut b: [V<T>; BLOCK] = std::array::from_fn(|k| load(buf, (r0 + k) * row + c));
                d.block(&mut b);
                for (k, v) in b.iter().enumerate() {
                    store(buf, (r0 + k) * row + c, v);
                }
            }
            if full < rows {
                let mut b = [[neg_zero::<T>(); LANES]; BLOCK];
                for (k, v) in b.iter_mut().enumerate().take(rows - full) {
                    *v = load(buf, (full + k) * row + c);
                }
                d.block(&mut b);
                for (k, v) in b.iter().enumerate().take(rows - full) {
                    store(buf, (full + k) * row + c, v);
                }
            }
        }
    }
}

/// `dst[j] = src[j] + src[j - s]` for `j ≥ s`, `dst[j] = src[j]` below.
fn level<T: Element>(src: &[T], dst: &mut [T], s: usize) {
    let s = s.min(src.len());
    dst[..s].copy_from_slice(&src[..s]);
    for ((d, a), b) in dst[s..].iter_mut().zip(&src[s..]).zip(src) {
        *d = *a + *b;
    }
}

/// The scan level by level, for short axes.
fn scan_small<T: Element>(values: &[T], out: &mut [T]) {
    let mut tmp = values.to_vec();
    let (mut src, mut dst) = (&mut tmp[..], &mut *out);
    let mut s = 1;
    let mut in_out = false;
    while s < values.len() {
        level(src, dst, s);
        std::mem::swap(&mut src, &mut dst);
        in_out = !in_out;
        s *= 2;
    }
    if !in_out {
        out.copy_from_slice(&tmp);
    }
}

/// Round `x` up to a multiple of `m`.
fn round_up(x: usize, m: usize) -> usize {
    x.div_ceil(m) * m
}

/// The tile levels (shifts below `ROW`) for the outputs `[t0, t0 + out.len())`: the first
/// eight streamed from a halo of `TILE_ROW` entries, the next four down the columns of rows
/// of `TILE_ROW` entries from a halo of 15 rows, the last (shift `ROW / 2`) as the tile is
/// written out, from a halo of `ROW / 2`.
fn low_tile<T: Element>(values: &[T], t0: usize, out: &mut [T], buf: &mut Vec<T>) {
    let t1 = t0 + out.len();
    let half = ROW / 2;
    // t0 is a multiple of TILE, so these are multiples of TILE_ROW
    let b13 = t0.saturating_sub(half);
    let base = b13.saturating_sub(15 * TILE_ROW);
    let a = base.saturating_sub(TILE_ROW);
    let skip = base - a;
    let rows = (t1 - base).div_ceil(TILE_ROW);
    // the rows past the outputs may hold anything: they feed no output
    grow(buf, skip + round_up(rows, BLOCK) * TILE_ROW);
    let len = round_up(t1 - a, LANES);
    if !stream8(&values[a..t1], &mut buf[..len]) {
        dispatch(Stream8 {
            src: &values[a..t1],
            dst: &mut buf[..len],
        });
    }
    if !columns4(&mut buf[skip..], TILE_ROW, rows) {
        dispatch(Columns4 {
            buf: &mut buf[skip..],
            row: TILE_ROW,
            rows,
        });
    }
    // out[j - t0] = y[j] + y[j - half] for j ≥ half, y[j] below (y[j] at buf[j - a])
    let copied = half.saturating_sub(t0).min(out.len());
    out[..copied].copy_from_slice(&buf[t0 - a..][..copied]);
    let from = t0 + copied;
    if from < t1 {
        dispatch(AddShifted {
            hi: &buf[from - a..t1 - a],
            lo: &buf[from - half - a..t1 - half - a],
            out: &mut out[copied..],
        });
    }
}

/// `out[j] = hi[j] + lo[j]`.
struct AddShifted<'a, T> {
    hi: &'a [T],
    lo: &'a [T],
    out: &'a mut [T],
}

impl<T: Element> Kernel for AddShifted<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for ((o, h), l) in self.out.iter_mut().zip(self.hi).zip(self.lo) {
            *o = *h + *l;
        }
    }
}

/// The high levels (row shifts `1, 2, 4, …` of the `ROW`-wide view) for one strip of
/// columns, `segs[q]` row `q`'s part (all as wide but the last): the strip is copied into
/// `buf` row by row, its columns take the levels four at a time ([`Columns4`] with row
/// shifts `1 … 8`, then on the view of rows 16 times as long, shifts `16 … 128`, and so
/// on: each row `r` adds row `r − s` as a column scan does), and it is copied back.
fn high_strip<T: Element>(segs: &mut [&mut [T]], buf: &mut Vec<T>) {
    let m = segs.len();
    let width = segs.first().map_or(0, |s| s.len());
    // the rows of the last view: each view adds the levels of row shifts mult · 1 … 8
    let mut top = 1;
    while top * 16 < m {
        top *= 16;
    }
    // every row of every view lies in buf (rows past m feed no output, whatever they hold)
    grow(buf, round_up(m, top) * width);
    for (seg, row) in segs.iter().zip(buf.chunks_mut(width)) {
        row[..seg.len()].copy_from_slice(seg);
    }
    let mut mult = 1;
    while mult < m {
        let (row, rows) = (mult * width, m.div_ceil(mult));
        if !columns4(buf, row, rows) {
            dispatch(Columns4 { buf, row, rows });
        }
        mult *= 16;
    }
    for (seg, row) in segs.iter_mut().zip(buf.chunks(width)) {
        let n = seg.len();
        seg.copy_from_slice(&row[..n]);
    }
}

/// Make `v` at least `n` long (new entries `+0`); what it held stays.
fn grow<T: Element>(v: &mut Vec<T>, n: usize) {
    if v.len() < n {
        v.resize(n, T::ZERO);
    }
}

/// The Hillis–Steele scan of `values` into `out`, in two passes over memory: tiles of
/// `TILE` outputs take the levels with shifts below `ROW` (from a halo of `ROW` entries),
/// then strips of `STRIP` columns of the `ROW`-wide view take the rest, each column a scan
/// of its own rows. Each level adds the same two entries as the level-by-level scan, so
/// the bits are the same, whatever the threads.
fn scan_into<T: Element>(values: &[T], out: &mut [T]) {
    let n = values.len();
    if n <= SMALL {
        scan_small(values, out);
        return;
    }
    let par = n >= PARALLEL_THRESHOLD;
    let low = |buf: &mut Vec<T>, (i, out): (usize, &mut [T])| low_tile(values, i * TILE, out, buf);
    if par {
        out.par_chunks_mut(TILE)
            .enumerate()
            .for_each_init(Vec::new, low);
    } else {
        let mut buf = Vec::new();
        out.chunks_mut(TILE)
            .enumerate()
            .for_each(|c| low(&mut buf, c));
    }
    if n <= ROW {
        return;
    }
    // strips as wide as fit STRIP_BYTES (at least one vector of lanes)
    let rows = n.div_ceil(ROW);
    let mut width = STRIP;
    while width > LANES && rows * width * std::mem::size_of::<T>() > STRIP_BYTES {
        width /= 2;
    }
    let mut strips: Vec<Vec<&mut [T]>> = (0..ROW / width).map(|_| Vec::new()).collect();
    for r in out.chunks_mut(ROW) {
        for (g, seg) in r.chunks_mut(width).enumerate() {
            strips[g].push(seg);
        }
    }
    let high = |buf: &mut Vec<T>, mut segs: Vec<&mut [T]>| high_strip(&mut segs, buf);
    if par {
        strips.into_par_iter().for_each_init(Vec::new, high);
    } else {
        let mut buf = Vec::new();
        strips.into_iter().for_each(|g| high(&mut buf, g));
    }
}

/// `Σ w_i |x_i|²` without squaring a value out of range, in binary64.
///
/// As LAPACK's `nrm2`: the values are multiplied by `2^-e`, `e` their
/// [`block_exponent`](super::block_exponent), before squaring (exactly, unless a value falls into the subnormal
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
    let n = values.len();
    if n == 0 {
        return Ok(0.0);
    }
    // One read of the values: each leaf of the tree takes its largest magnitude and, while
    // it is in cache, its sum at the exponent of the largest magnitude seen so far. A leaf
    // whose guess is not the final block exponent is summed again, so every leaf is the
    // sum at the block exponent, as two passes would give.
    let mut leaves = Vec::new();
    tree_leaves(0, n.next_power_of_two(), n, &mut leaves);
    // the sum of a leaf's squares at exponent e, and the largest magnitude when `track`
    let leaf_sum = |lo: usize, w: usize, e: i32, track: bool| {
        // -e is within [-MAX_EXP, -MIN_SUB_EXP], which pow2_pair always splits
        let (a, b) = pow2_pair::<T::Real>(-e).expect("a block exponent's inverse is two powers");
        if b == T::Real::ONE {
            square_leaf::<T, false>(values, weights, a, b, lo, w, track)
        } else {
            square_leaf::<T, true>(values, weights, a, b, lo, w, track)
        }
    };
    let seen = AtomicU64::new(0);
    let first = |&(lo, w): &(usize, usize)| {
        // summed at the exponent of the largest magnitude before it, while its own is taken
        let e0 = exponent_of(f64::from_bits(seen.load(Ordering::Relaxed))).unwrap_or(0);
        let (largest, sum) = leaf_sum(lo, w, e0, true);
        if !largest.is_finite() {
            return (largest, 0, T::Real::ZERO);
        }
        let guess =
            f64::from_bits(seen.fetch_max(largest.to_bits(), Ordering::Relaxed)).max(largest);
        let e = exponent_of(guess).unwrap_or(0);
        // a leaf that raised the exponent is summed again while it is in cache
        (
            largest,
            e,
            if e == e0 {
                sum
            } else {
                leaf_sum(lo, w, e, false).1
            },
        )
    };
    let mut parts: Vec<(f64, i32, T::Real)> = if n >= PARALLEL_THRESHOLD {
        leaves.par_iter().map(first).collect()
    } else {
        leaves.iter().map(first).collect()
    };
    // the largest magnitude is exact and order-free
    if parts.iter().any(|p| !p.0.is_finite()) {
        return Err(RangeError::NotFinite {
            what: "the buffer".into(),
        });
    }
    let largest = parts.iter().fold(0.0f64, |m, p| m.max(p.0));
    let e = exponent_of(largest).unwrap_or(0);
    let again = |(p, &(lo, w)): (&mut (f64, i32, T::Real), &(usize, usize))| {
        if p.1 != e {
            p.2 = leaf_sum(lo, w, e, false).1;
        }
    };
    if n >= PARALLEL_THRESHOLD {
        parts.par_iter_mut().zip(&leaves).for_each(again);
    } else {
        parts.iter_mut().zip(&leaves).for_each(again);
    }
    let mut sums = parts.iter().map(|p| p.2);
    let total = tree_join(0, n.next_power_of_two(), n, &mut sums);
    Ok(total.to_f64().scale(2 * e))
}

/// The sum of the squares `[lo, lo + w)` scaled by `a × b` (one product unless `TWO`), and,
/// when `track`, the largest magnitude of those values (else `0`), taken as the tree reads
/// them (so memory is read once).
fn square_leaf<T: Element, const TWO: bool>(
    values: &[T],
    weights: Option<&[T::Real]>,
    a: T::Real,
    b: T::Real,
    lo: usize,
    w: usize,
    track: bool,
) -> (f64, T::Real) {
    let squares = Squares::<T, TWO> {
        values,
        weights,
        a,
        b,
    };
    if !track {
        return (0.0, dispatch(FullTree::new(&squares, lo, w)));
    }
    let src = Tracked {
        squares,
        largest: AtomicU64::new(0),
    };
    let sum = dispatch(FullTree::new(&src, lo, w));
    (f64::from_bits(src.largest.into_inner()), sum)
}

/// [`Squares`] that also keep the largest magnitude of the values they read (binary64 bits:
/// a non-negative binary64 orders as its bits; a NaN stays).
struct Tracked<'a, T: Element, const TWO: bool> {
    squares: Squares<'a, T, TWO>,
    largest: AtomicU64,
}

impl<T: Element, const TWO: bool> Tracked<'_, T, TWO> {
    /// Take the largest magnitude of `v` into account (one thread owns `self`, so a load
    /// and a store suffice).
    #[inline(always)]
    fn note(&self, v: &[T]) {
        let m = T::max_magnitude(v);
        let cur = f64::from_bits(self.largest.load(Ordering::Relaxed));
        if m > cur || (m.is_nan() && !cur.is_nan()) {
            self.largest.store(m.to_bits(), Ordering::Relaxed);
        }
    }
}

impl<T: Element, const TWO: bool> Terms<T::Real> for Tracked<'_, T, TWO> {
    #[inline(always)]
    fn term(&self, i: usize) -> T::Real {
        self.note(&self.squares.values[i..=i]);
        self.squares.term(i)
    }
    #[inline(always)]
    fn pairs(&self, lo: usize, out: &mut [T::Real]) {
        self.note(&self.squares.values[lo..lo + 2 * out.len()]);
        self.squares.pairs(lo, out);
    }
}

/// The leaves of [`tree`] over `n` terms, in order: the full subtrees it sums with one
/// kernel.
fn tree_leaves(lo: usize, w: usize, n: usize, out: &mut Vec<(usize, usize)>) {
    if lo >= n {
        return;
    }
    if lo + w <= n && w <= SQUARE_LEAF {
        out.push((lo, w));
        return;
    }
    tree_leaves(lo, w / 2, n, out);
    tree_leaves(lo + w / 2, w / 2, n, out);
}

/// [`tree`] with its leaves' sums given in order.
fn tree_join<T: Element>(lo: usize, w: usize, n: usize, leaves: &mut impl Iterator<Item = T>) -> T {
    if lo >= n {
        return T::ZERO;
    }
    if lo + w <= n && w <= SQUARE_LEAF {
        return leaves.next().expect("one sum per leaf");
    }
    let l = tree_join(lo, w / 2, n, leaves);
    let r = tree_join(lo + w / 2, w / 2, n, leaves);
    l + r
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
