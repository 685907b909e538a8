//! Block scaling: OCP MX ([`mx`]), NVFP4 ([`nvfp4`]), per-tensor scaling ([`tensor`]), and the
//! packed bit layouts of their codes ([`pack`]).
//!
//! Arrays of any shape are flattened in C order; blocks run along the last axis, whose
//! length is the `row_len` argument of every function here. A block never spans two rows.

pub(crate) mod fused;
pub(crate) use fused::max_abs_bits;
pub(crate) mod lookup;
pub mod mx;
pub mod nvfp4;
pub mod pack;
pub mod tensor;

use std::ops::{Add, AddAssign};

/// Inputs at least this long are converted in parallel.
pub(crate) const PARALLEL_MIN: usize = 1 << 16;

/// What happened in a block-scaling call (counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockStatus {
    /// Elements in.
    pub elements: u64,
    /// Blocks (scales) out.
    pub blocks: u64,
    /// Elements whose scaled value exceeded the element format's largest finite value and
    /// were clamped to it.
    pub saturated: u64,
    /// Nonzero elements that became ±0.
    pub flushed: u64,
    /// Blocks holding a NaN or an infinity: their scale is NaN and every element NaN.
    pub nan_blocks: u64,
    /// Blocks whose scale exponent had to be clamped to the scale format's range.
    pub scale_clamped: u64,
}

impl Add for BlockStatus {
    type Output = BlockStatus;
    fn add(self, o: BlockStatus) -> BlockStatus {
        BlockStatus {
            elements: self.elements + o.elements,
            blocks: self.blocks + o.blocks,
            saturated: self.saturated + o.saturated,
            flushed: self.flushed + o.flushed,
            nan_blocks: self.nan_blocks + o.nan_blocks,
            scale_clamped: self.scale_clamped + o.scale_clamped,
        }
    }
}

impl AddAssign for BlockStatus {
    fn add_assign(&mut self, o: BlockStatus) {
        *self = *self + o;
    }
}

/// `⌊log2 a⌋` of a positive finite binary64, exact (read from the exponent bits; binary64
/// subnormals included), never from a floating-point `log2`.
///
/// ```
/// use lowprec::block::floor_log2;
/// assert_eq!(floor_log2(1.0), 0);
/// assert_eq!(floor_log2(f64::from_bits(0x412f_ffff_ffff_ffff)), 19); // just below 2^20
/// assert_eq!(floor_log2(f32::from_bits(1) as f64), -149);
/// ```
pub fn floor_log2(a: f64) -> i32 {
    let b = a.to_bits() & !(1u64 << 63);
    let field = (b >> 52) as i32;
    if field == 0 {
        -1074 + 63 - (b.leading_zeros() as i32)
    } else {
        field - 1023
    }
}

/// Whether a positive finite binary64 is a power of two.
pub(crate) fn is_pow2(a: f64) -> bool {
    let b = a.to_bits() & !(1u64 << 63);
    if b >> 52 == 0 {
        b.is_power_of_two()
    } else {
        b & ((1u64 << 52) - 1) == 0
    }
}

/// Check that `len` elements form whole rows of `row_len` and return the row count.
pub(crate) fn rows_of(len: usize, row_len: usize) -> crate::Result<usize> {
    if row_len == 0 {
        return Err(crate::Error::InvalidArgument(
            "the last axis has length 0; there is nothing to scale".into(),
        ));
    }
    if !len.is_multiple_of(row_len) {
        return Err(crate::Error::InvalidArgument(format!(
            "{len} elements are not whole rows of {row_len}"
        )));
    }
    Ok(len / row_len)
}

/// Run `f` over matching work items of the input and the three outputs (values, codes,
/// scales): `unit` elements and `unit_blocks` scales per item, in parallel for long inputs.
/// `f` also receives the index of the item's first scale. Empty `values` (codes only) give
/// every item an empty values slice.
pub(crate) fn for_items<I: Sync, O: Send>(
    x: &[I],
    values: &mut [O],
    codes: &mut [u8],
    scales: &mut [u8],
    unit: usize,
    unit_blocks: usize,
    f: impl Fn(usize, &[I], &mut [O], &mut [u8], &mut [u8]) -> BlockStatus + Sync,
) -> BlockStatus {
    use rayon::prelude::*;
    let parallel = x.len() >= PARALLEL_MIN && rayon::current_num_threads() > 1;
    let ub = unit_blocks;
    if values.is_empty() && !x.is_empty() {
        return if parallel {
            x.par_chunks(unit)
                .zip(codes.par_chunks_mut(unit))
                .zip(scales.par_chunks_mut(ub))
                .enumerate()
                .map(|(i, ((x, c), s))| f(i * ub, x, &mut [], c, s))
                .reduce(BlockStatus::default, |a, b| a + b)
        } else {
            x.chunks(unit)
                .zip(codes.chunks_mut(unit))
                .zip(scales.chunks_mut(ub))
                .enumerate()
                .map(|(i, ((x, c), s))| f(i * ub, x, &mut [], c, s))
                .fold(BlockStatus::default(), |a, b| a + b)
        };
    }
    if parallel {
        x.par_chunks(unit)
            .zip(values.par_chunks_mut(unit))
            .zip(codes.par_chunks_mut(unit).zip(scales.par_chunks_mut(ub)))
            .enumerate()
            .map(|(i, ((x, v), (c, s)))| f(i * ub, x, v, c, s))
            .reduce(BlockStatus::default, |a, b| a + b)
    } else {
        x.chunks(unit)
            .zip(values.chunks_mut(unit))
            .zip(codes.chunks_mut(unit).zip(scales.chunks_mut(ub)))
            .enumerate()
            .map(|(i, ((x, v), (c, s)))| f(i * ub, x, v, c, s))
            .fold(BlockStatus::default(), |a, b| a + b)
    }
}

/// The values of the elements `r`: `v[r]`, or empty when `v` is (codes only).
pub(crate) fn values_in<O>(v: &mut [O], r: std::ops::Range<usize>) -> &mut [O] {
    if v.is_empty() {
        v
    } else {
        &mut v[r]
    }
}

/// Per-work-item scratch of `n` entries: the first `n` of `stack` when they fit (no heap
/// allocation and no large memset per item), else `heap` grown to `n` with `fill`.
pub(crate) fn scratch<'a, T: Copy>(
    stack: &'a mut [T],
    heap: &'a mut Vec<T>,
    n: usize,
    fill: T,
) -> &'a mut [T] {
    if n <= stack.len() {
        &mut stack[..n]
    } else {
        heap.resize(n, fill);
        &mut heap[..]
    }
}

/// The largest magnitude of a short slice (NaN or Inf if any element is one).
#[inline(always)]
pub(crate) fn max_abs_serial<I: crate::Float>(x: &[I]) -> f64 {
    I::from_bits(max_abs_bits(x)).to_f64()
}

/// The largest magnitude of `x` (NaN or Inf if any element is one), from the bits, in
/// parallel for long inputs.
pub(crate) fn max_abs<I: crate::Float>(x: &[I]) -> f64 {
    use crate::round::types::Word;
    use rayon::prelude::*;
    /// One chunk's maximum, compiled for the best instruction set.
    struct MaxAbs<'a, I>(&'a [I]);
    impl<I: crate::Float> crate::simd::Kernel for MaxAbs<'_, I> {
        type Output = I::Bits;
        #[inline(always)]
        fn run(self) -> I::Bits {
            max_abs_bits(self.0)
        }
    }
    let m = if x.len() >= PARALLEL_MIN {
        x.par_chunks(1 << 14)
            .map(|c| crate::simd::dispatch(MaxAbs(c)))
            .reduce(|| <I::Bits as Word>::ZERO, |a, b| a.max(b))
    } else {
        crate::simd::dispatch(MaxAbs(x))
    };
    I::from_bits(m).to_f64()
}

/// The largest magnitude bits of every block of `b` elements of binary32 `x` (`x.len()` a
/// multiple of `b`), sixteen blocks per entry (the last entry padded with zeros; read them
/// with `as_flattened`), and of the whole of `x` (a NaN's or an infinity's bits if it holds
/// one): one pass, in parallel for long inputs. Blocks of 16 (NVFP4's) take the AVX2 kernel
/// [`crate::simd::block_maxima16`] where the CPU has it, other sizes the portable loop
/// compiled for the best instruction set; both give the same bits (the simd module's tests
/// compare them).
pub(crate) fn block_maxima_and_max(x: &[f32], b: usize) -> (Vec<[u32; 16]>, u32) {
    use rayon::prelude::*;
    /// Sixteen blocks' maxima, compiled for the best instruction set.
    struct Maxima<'a>(&'a [f32], usize);
    impl crate::simd::Kernel for Maxima<'_> {
        type Output = [u32; 16];
        #[inline(always)]
        fn run(self) -> [u32; 16] {
            let mut out = [0u32; 16];
            let n = self.0.len() / self.1;
            fused::block_maxima(self.0, self.1, &mut out[..n]);
            out
        }
    }
    let sixteen = |c: &[f32]| -> [u32; 16] {
        let mut out = [0u32; 16];
        if b == 16 && crate::simd::block_maxima16(c, &mut out[..c.len() / 16]) {
            return out;
        }
        crate::simd::dispatch(Maxima(c, b))
    };
    debug_assert!(b > 0 && x.len().is_multiple_of(b));
    let max = |m: &[u32; 16]| m.iter().fold(0, |a, &e| a.max(e));
    if x.len() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
        let bm: Vec<[u32; 16]> = x.par_chunks(16 * b).map(sixteen).collect();
        let m = bm
            .par_chunks(1 << 10)
            .map(|c| c.iter().map(max).fold(0, |a, e| a.max(e)))
            .reduce(|| 0, |a, e| a.max(e));
        (bm, m)
    } else {
        let bm: Vec<[u32; 16]> = x.chunks(16 * b).map(sixteen).collect();
        let m = bm.iter().map(max).fold(0, |a, e| a.max(e));
        (bm, m)
    }
}

/// The work-item layout of a block conversion: `(unit, unit_blocks, seg)` — elements and
/// scales per work item, and the length of the segments whose blocks are cut from the
/// start (one block when rows are whole blocks, so rows may merge; else one row).
pub(crate) fn layout(row_len: usize, block: usize, chunk: usize) -> (usize, usize, usize) {
    if row_len.is_multiple_of(block) {
        let blocks = (chunk / block).max(1);
        (blocks * block, blocks, block)
    } else {
        let k = (chunk / row_len).max(1);
        (k * row_len, k * row_len.div_ceil(block), row_len)
    }
}

/// A block conversion's per-call state: converts whole rows of `seg` elements (blocks cut
/// from the start of each row) into values, element codes and scale codes.
pub(crate) trait RowKernel<I: crate::Float, O: crate::Float>: Sync {
    /// Convert one work item, whose first scale is scale `at` of the whole conversion.
    fn rows(
        &self,
        at: usize,
        x: &[I],
        seg: usize,
        v: &mut [O],
        c: &mut [u8],
        s: &mut [u8],
    ) -> BlockStatus;
}

/// One work item, compiled for the best instruction set ([`crate::simd`]).
struct Item<'a, K, I, O> {
    k: &'a K,
    at: usize,
    x: &'a [I],
    seg: usize,
    v: &'a mut [O],
    c: &'a mut [u8],
    s: &'a mut [u8],
}

impl<K: RowKernel<I, O>, I: crate::Float, O: crate::Float> crate::simd::Kernel
    for Item<'_, K, I, O>
{
    type Output = BlockStatus;
    #[inline(always)]
    fn run(self) -> BlockStatus {
        self.k
            .rows(self.at, self.x, self.seg, self.v, self.c, self.s)
    }
}

/// Run a block conversion over every work item ([`layout`], [`for_items`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn convert<K: RowKernel<I, O>, I: crate::Float, O: crate::Float>(
    k: &K,
    x: &[I],
    row_len: usize,
    block: usize,
    chunk: usize,
    values: &mut [O],
    codes: &mut [u8],
    scales: &mut [u8],
) -> BlockStatus {
    let (unit, unit_blocks, seg) = layout(row_len, block, chunk);
    for_items(
        x,
        values,
        codes,
        scales,
        unit,
        unit_blocks,
        |at, x, v, c, s| {
            crate::simd::dispatch(Item {
                k,
                at,
                x,
                seg,
                v,
                c,
                s,
            })
        },
    )
}

/// Deterministic bits for the block modules' unit tests (xorshift64).
#[cfg(test)]
pub(crate) fn test_bits(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}
