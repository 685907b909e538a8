//! The accumulation kernels over the rows of a matrix: sequential and Kahan across a tile of
//! rows (one SIMD lane per row, columns staged through a small transposed buffer), pairwise
//! level by level along each row.
//!
//! Every rounding of row `r` is numbered `k = 0, 1, 2, …` in the order the method performs
//! it (for Kahan four per term: `y`, `t`, `t − s`, `c`; a promotion into the outer
//! accumulator after its chunk's last term); stochastic rounding draws
//! [`crate::round::random_bits`]`(seed, r · 2^32 + k)`, so results depend on neither the
//! tiling nor the thread count.

use super::adder::{dispatch_mode, unpack, Adder, Flags, FLAG_SPAN};
use crate::round::kernel::SR;
use crate::round::random::{block_keys, hash32};
use crate::{Float, Status};

/// Rows per tile (SIMD lanes of the sequential and Kahan kernels).
pub(crate) const LANES: usize = 32;
/// Columns staged per transposition.
const STAGE: usize = 64;

/// The per-row keys of the counter-based generator.
#[derive(Clone, Copy)]
pub(crate) struct Keys {
    k0: [u32; LANES],
    k1: [u32; LANES],
}

impl Keys {
    pub(crate) fn new(seed: u64, row0: u64, rows: usize, sr: bool) -> Keys {
        let mut k = Keys {
            k0: [0; LANES],
            k1: [0; LANES],
        };
        if sr {
            for r in 0..rows {
                let b = block_keys(seed, (row0 + r as u64) as u32);
                k.k0[r] = b[0];
                k.k1[r] = b[1];
            }
        }
        k
    }

    /// The random word of op `k` for lane `r` (zero unless stochastic).
    #[inline(always)]
    pub(crate) fn word<const MODE: u8>(&self, r: usize, k: u32) -> u64 {
        if MODE == SR {
            hash32(k, self.k0[r], self.k1[r]) as u64
        } else {
            0
        }
    }
}

/// Per-lane packed counts (see [`Flags`]), moved into totals before any field can fill.
#[derive(Clone, Copy)]
pub(crate) struct Counts {
    lanes: [Flags; LANES],
    total: Status,
}

impl Counts {
    pub(crate) fn new() -> Counts {
        Counts {
            lanes: [0; LANES],
            total: Status::default(),
        }
    }
    #[inline(always)]
    pub(crate) fn add(&mut self, r: usize, f: Flags) {
        self.lanes[r] += f;
    }
    /// Move the lane counts into the totals (at least every `FLAG_SPAN` additions per lane).
    pub(crate) fn flush(&mut self) {
        for l in &mut self.lanes {
            self.total += unpack(*l);
            *l = 0;
        }
    }
    pub(crate) fn status(mut self) -> Status {
        self.flush();
        self.total
    }
}

/// The rules of one accumulation: the adder, the optional outer accumulator and chunk.
#[derive(Clone, Copy)]
pub(crate) struct Rule<'a> {
    pub adder: &'a Adder,
    pub outer: &'a Adder,
    /// Terms per chunk before promotion into `outer` (0: no promotion).
    pub chunk: usize,
    pub kahan: bool,
}

/// Sum the rows of a tile of at most [`LANES`] rows of `n` terms (`x` row-major), writing
/// one result per row into `out`.
pub(crate) fn tile<I: Float>(rule: &Rule, x: &[I], n: usize, row0: u64, out: &mut [f64]) -> Status {
    dispatch_mode!(rule.adder, K, MODE, {
        if rule.kahan {
            crate::simd::dispatch(Tile::<I, K, MODE, true> {
                rule,
                x,
                n,
                row0,
                out,
            })
        } else {
            crate::simd::dispatch(Tile::<I, K, MODE, false> {
                rule,
                x,
                n,
                row0,
                out,
            })
        }
    })
}

struct Tile<'a, 'b, I, const K: u8, const MODE: u8, const KAHAN: bool> {
    rule: &'a Rule<'b>,
    x: &'a [I],
    n: usize,
    row0: u64,
    out: &'a mut [f64],
}

impl<I: Float, const K: u8, const MODE: u8, const KAHAN: bool> crate::simd::Kernel
    for Tile<'_, '_, I, K, MODE, KAHAN>
{
    type Output = Status;

    /// The lean pass first; if it raised an alarm (overflow, NaN or Inf, a tiny inexact sum),
    /// the full pass redoes the tile with every count.
    #[inline(always)]
    fn run(self) -> Status {
        let Tile {
            rule,
            x,
            n,
            row0,
            out,
        } = self;
        match tile_pass::<I, K, MODE, KAHAN, false>(rule, x, n, row0, out) {
            Some(st) => st,
            None => tile_pass::<I, K, MODE, KAHAN, true>(rule, x, n, row0, out).unwrap_or_default(),
        }
    }
}

/// One rounded addition of a tile pass: with every count (`FULL`), or lean (the inexact
/// count, and an alarm when the lean value may be wrong).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn add<const K: u8, const MODE: u8, const FULL: bool>(
    adder: &Adder,
    a: f64,
    b: f64,
    rnd: u64,
    counts: &mut Counts,
    alarm: &mut [bool; LANES],
    r: usize,
) -> f64 {
    if FULL {
        let (v, f) = adder.step::<K, MODE>(a, b, rnd);
        counts.add(r, f);
        v
    } else {
        let (v, inexact, al) = adder.step_lean::<K, MODE>(a, b, rnd);
        counts.add(r, inexact as u64);
        alarm[r] |= al;
        v
    }
}

/// One pass over a tile; `None` when a lean pass raised an alarm.
#[inline(always)]
fn tile_pass<I: Float, const K: u8, const MODE: u8, const KAHAN: bool, const FULL: bool>(
    rule: &Rule,
    x: &[I],
    n: usize,
    row0: u64,
    out: &mut [f64],
) -> Option<Status> {
    let adder = *rule.adder;
    let rows = out.len();
    // Lanes actually computed: the rows, rounded up to a vector multiple.
    let width = rows.next_multiple_of(8).min(LANES);
    let keys = Keys::new(adder.options().seed, row0, rows, MODE == SR);
    let mut counts = Counts::new();
    let mut alarm = [false; LANES];
    let mut s = [0f64; LANES];
    let mut c = [0f64; LANES];
    let mut outer = [0f64; LANES];
    let mut buf = [[0f64; LANES]; STAGE];
    let mut scratch = [0f64; LANES * STAGE];
    let mut k: u32 = 0;
    let mut in_chunk = 0usize;
    let promote = |s: &mut [f64; LANES],
                   c: &mut [f64; LANES],
                   outer: &mut [f64; LANES],
                   counts: &mut Counts,
                   k: &mut u32| {
        for r in 0..rows {
            let index = ((row0 + r as u64) << 32) | *k as u64;
            let (v, f) = rule.outer.add_flags(outer[r], s[r], index);
            outer[r] = v;
            counts.add(r, f);
        }
        *s = [0.0; LANES];
        *c = [0.0; LANES];
        *k += 1;
    };
    let mut j0 = 0;
    while j0 < n {
        let w = STAGE.min(n - j0);
        stage(x, n, rows, j0, w, &mut scratch, &mut buf);
        for xs in &buf[..w] {
            let (cn, al) = (&mut counts, &mut alarm);
            if KAHAN {
                for r in 0..width {
                    let y = add::<K, MODE, FULL>(
                        &adder,
                        xs[r],
                        -c[r],
                        keys.word::<MODE>(r, k),
                        cn,
                        al,
                        r,
                    );
                    let t = add::<K, MODE, FULL>(
                        &adder,
                        s[r],
                        y,
                        keys.word::<MODE>(r, k + 1),
                        cn,
                        al,
                        r,
                    );
                    let z = add::<K, MODE, FULL>(
                        &adder,
                        t,
                        -s[r],
                        keys.word::<MODE>(r, k + 2),
                        cn,
                        al,
                        r,
                    );
                    c[r] =
                        add::<K, MODE, FULL>(&adder, z, -y, keys.word::<MODE>(r, k + 3), cn, al, r);
                    s[r] = t;
                }
                k = k.wrapping_add(4);
            } else {
                for r in 0..width {
                    s[r] = add::<K, MODE, FULL>(
                        &adder,
                        s[r],
                        xs[r],
                        keys.word::<MODE>(r, k),
                        cn,
                        al,
                        r,
                    );
                }
                k = k.wrapping_add(1);
            }
            if rule.chunk > 0 {
                in_chunk += 1;
                if in_chunk == rule.chunk {
                    promote(&mut s, &mut c, &mut outer, &mut counts, &mut k);
                    in_chunk = 0;
                }
            }
        }
        j0 += w;
        // At most 4 · STAGE + STAGE additions per lane since the last flush.
        counts.flush();
        if !FULL && alarm.iter().any(|&a| a) {
            return None;
        }
    }
    if rule.chunk > 0 {
        if in_chunk > 0 {
            promote(&mut s, &mut c, &mut outer, &mut counts, &mut k);
        }
        s = outer;
    }
    // Lanes beyond `rows` summed zeros: exact, so they add nothing to the counts.
    out.copy_from_slice(&s[..rows]);
    Some(counts.status())
}

/// Sum one row pairwise (see [`super::Method::Pairwise`]), chunk by chunk when promoting.
pub(crate) fn pairwise_row<I: Float>(rule: &Rule, row: &[I], row_index: u64) -> (f64, Status) {
    let adder = rule.adder;
    let keys = Keys::new(
        adder.options().seed,
        row_index,
        1,
        adder.options().mode == crate::RoundingMode::Stochastic,
    );
    let piece = if rule.chunk > 0 {
        rule.chunk
    } else {
        row.len().max(1)
    };
    let mut k: u32 = 0;
    let mut st = Status::default();
    let mut outer = 0.0;
    let mut cur: Vec<f64> = Vec::with_capacity(piece + 1);
    let mut next: Vec<f64> = Vec::with_capacity(piece / 2 + 1);
    let mut partial = 0.0;
    for part in row.chunks(piece) {
        cur.clear();
        cur.extend(part.iter().map(|v| v.to_f64()));
        if cur.len() == 1 {
            // One term: still one rounding into the accumulator.
            cur.push(0.0);
        }
        while cur.len() > 1 {
            if cur.len() % 2 == 1 {
                cur.push(0.0);
            }
            next.clear();
            next.resize(cur.len() / 2, 0.0);
            st += dispatch_mode!(adder, K, MODE, {
                crate::simd::dispatch(Level::<K, MODE> {
                    adder,
                    keys: &keys,
                    k0: k,
                    src: &cur,
                    dst: &mut next,
                })
            });
            k = k.wrapping_add(next.len() as u32);
            std::mem::swap(&mut cur, &mut next);
        }
        partial = cur[0];
        if rule.chunk > 0 {
            let (v, f) = rule
                .outer
                .add_flags(outer, partial, (row_index << 32) | k as u64);
            outer = v;
            st += unpack(f);
            k = k.wrapping_add(1);
        }
    }
    (if rule.chunk > 0 { outer } else { partial }, st)
}

/// One level of the pairwise tree: `dst[i] = round(src[2i] + src[2i+1])`.
struct Level<'a, const K: u8, const MODE: u8> {
    adder: &'a Adder,
    keys: &'a Keys,
    k0: u32,
    src: &'a [f64],
    dst: &'a mut [f64],
}

impl<const K: u8, const MODE: u8> crate::simd::Kernel for Level<'_, K, MODE> {
    type Output = Status;

    #[inline(always)]
    fn run(self) -> Status {
        let adder = *self.adder;
        let mut st = Status::default();
        let span = FLAG_SPAN / 2;
        for (c, (dst, src)) in self
            .dst
            .chunks_mut(span)
            .zip(self.src.chunks(2 * span))
            .enumerate()
        {
            let k0 = self.k0.wrapping_add((c * span) as u32);
            let mut f: Flags = 0;
            for (i, (d, p)) in dst.iter_mut().zip(src.chunks_exact(2)).enumerate() {
                let rnd = self.keys.word::<MODE>(0, k0.wrapping_add(i as u32));
                let (v, g) = adder.step::<K, MODE>(p[0], p[1], rnd);
                *d = v;
                f += g;
            }
            st += unpack(f);
        }
        st
    }
}

/// Copy columns `j0 .. j0 + w` of the tile's `rows` rows into `buf` transposed
/// (`buf[t][r] = x[r][j0 + t]`), as binary64, transposed by register blocks (binary32
/// inputs are first widened row by row into `scratch`).
#[inline(always)]
fn stage<I: Float>(
    x: &[I],
    n: usize,
    rows: usize,
    j0: usize,
    w: usize,
    scratch: &mut [f64; LANES * STAGE],
    buf: &mut [[f64; LANES]; STAGE],
) {
    let dst = buf.as_flattened_mut();
    if let Some(x) = I::as_f64_slice(x) {
        crate::simd::transpose_f64(&x[j0..], n, rows, w, dst, LANES);
        return;
    }
    for r in 0..rows {
        let row = &x[r * n + j0..r * n + j0 + w];
        for (d, v) in scratch[r * STAGE..r * STAGE + w].iter_mut().zip(row) {
            *d = v.to_f64();
        }
    }
    crate::simd::transpose_f64(scratch, STAGE, rows, w, dst, LANES);
}
