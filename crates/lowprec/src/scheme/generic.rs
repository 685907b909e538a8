//! The general engine: any element × block shape × scale format × rule × second level.
//!
//! The tensor is cut into bands (a band is one row of tiles, or a run of whole rows for
//! groups and channels) that run in parallel; a band takes every block's statistics, then
//! every block's scale ([`super::rule`]), then scales its elements row by row and rounds
//! each row once through the element step ([`super::element`]). Bands are fixed by the
//! shape alone, so the results do not depend on the thread count; stochastic rounding draws
//! the bits of element `i` of the tensor from `(seed, i)`.

use super::axes::{Element, Rule};
use super::element::Step;
use super::grid::Grid;
use super::rule::two_level::{self, Global};
use super::rule::{self, BlockScale, BlockStats, ScaleRounder, Scaling};
use super::{Counts, Scheme};
use crate::error::{Error, Result};
use crate::round::{Code, Float};
use rayon::prelude::*;

/// Elements per band of whole rows (at least one row).
const BAND: usize = 1 << 14;

/// Where the engine writes; an empty slice is an output not asked for.
pub(crate) struct Outputs<'a, O, C> {
    /// Dequantized values, in the input's shape.
    pub values: &'a mut [O],
    /// Element codes, in the input's shape.
    pub codes: &'a mut [C],
    /// Scale codes (scale formats of at most 8 bits), one per block.
    pub scale_codes: &'a mut [u8],
    /// Scale values (wider scale formats), one per block.
    pub scale_values: &'a mut [f64],
    /// Zero points (asymmetric integers), one per block.
    pub zeros: &'a mut [f64],
}

/// The per-call constants.
pub(crate) struct Ctx {
    pub s: Scheme,
    pub grid: Grid,
    step: Step,
    /// The element step's binary32 specialisation ([`crate::block::fused`]: nearest even
    /// with saturation into a signed float element of at most 8 bits), where it applies.
    fused32: Option<crate::block::fused::Elem<f32>>,
    alt: Option<Step>,
    sr: ScaleRounder,
    global: Option<Global>,
    need_data: bool,
    /// The element's largest value (asked once per block).
    max_e: f64,
    /// A block held NaN or ±Inf under a rule that needs finite inputs (the call fails).
    refused: std::sync::atomic::AtomicBool,
}

/// The largest value the tensor's amax maps to in the block-scale format: the format's
/// largest (448 for E4M3), or 256 for 4over6.
fn global_max(s: &Scheme) -> f64 {
    match s.rule {
        Rule::Best(super::axes::Best::FourOverSix) => 256.0,
        _ => s.scale.max_finite(),
    }
}

impl Ctx {
    /// The constants of `s` on `x`; `specialised` lets rows take the element step's
    /// binary32 specialisation (off: the reference the kernels are tested against);
    /// `tensor_amax` is the largest magnitude of the whole tensor when `x` is a piece of it
    /// (the second level's scale comes from it), else `None`.
    pub(crate) fn new<I: Float>(
        s: &Scheme,
        x: &[I],
        grid: Grid,
        specialised: bool,
        tensor_amax: Option<f64>,
    ) -> Result<Ctx> {
        let amax = s
            .second
            .map(|_| tensor_amax.unwrap_or_else(|| crate::block::max_abs(x)));
        let global = s
            .second
            .zip(amax)
            .map(|(conv, amax)| two_level::global(conv, amax, s.element.max(), global_max(s)));
        Ok(Ctx {
            s: *s,
            grid,
            step: Step::new(&s.element, &s.rounding),
            fused32: match s.element {
                Element::Float(f)
                    if specialised
                        && s.rounding.mode == crate::RoundingMode::NearestEven
                        && s.rounding.overflow == crate::Overflow::Saturate
                        && super::rule_alt_element(s).is_none() =>
                {
                    crate::block::fused::Elem::new(&f)
                }
                _ => None,
            },
            alt: super::rule_alt_element(s).map(|e| Step::new(&e, &s.rounding)),
            sr: ScaleRounder::new(&s.scale),
            global,
            max_e: s.element.max(),
            refused: amax.is_some_and(|a| !a.is_finite()).into(),
            need_data: matches!(
                s.rule,
                Rule::Affine(crate::quant::Clip::Mse) | Rule::Best(_)
            ),
        })
    }

    /// The tensor scale of a two-level scheme.
    pub(crate) fn tensor_scale(&self) -> Option<f32> {
        self.global.map(|g| g.g)
    }

    /// Whether a block held NaN or ±Inf under a rule that needs finite inputs: the run's
    /// outputs are meaningless and the call fails ([`check_finite`] names the element).
    pub(crate) fn refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The scale of a block of statistics `st`; a block with NaN or ±Inf under a rule that
    /// needs finite inputs is marked refused (and given NaN).
    fn checked_scale(&self, st: &BlockStats) -> BlockScale {
        if !st.finite && !matches!(self.s.rule, Rule::Pow2(_) | Rule::None) {
            self.refused
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return BlockScale::nan(0);
        }
        self.block_scale(st)
    }

    /// The scale of one block.
    fn block_scale(&self, st: &BlockStats) -> BlockScale {
        match self.s.rule {
            Rule::None => BlockScale {
                code: 0,
                value: 1.0,
                d: 1.0,
                zero: 0.0,
                y: Scaling::Mul64(1.0),
                clamped: false,
                alt: false,
            },
            Rule::Pow2(r) => rule::pow2::block_scale(r, &self.s.element, st),
            Rule::Amax { arith, pow2 } => match &self.global {
                Some(g) => two_level::block_scale(g, self.max_e, &self.sr, st.amax),
                None => rule::amax::block_scale(arith, pow2, &self.s.element, &self.sr, st),
            },
            Rule::Affine(clip) => match self.s.element {
                Element::Int(g) => rule::affine::block_scale(&g, clip, st),
                Element::Float(_) => unreachable!("validated: affine rules take integer elements"),
            },
            Rule::Best(b) => super::best_block(self, b, st),
        }
    }

    /// The element step of a block.
    pub(crate) fn step(&self, alt: bool) -> &Step {
        match (&self.alt, alt) {
            (Some(a), true) => a,
            _ => &self.step,
        }
    }

    /// The global tensor scale context (two-level schemes).
    pub(crate) fn global(&self) -> Option<&Global> {
        self.global.as_ref()
    }

    /// The block-scale rounder.
    pub(crate) fn scale_rounder(&self) -> &ScaleRounder {
        &self.sr
    }
}

/// Running statistics of a block.
#[derive(Debug, Clone, Copy)]
struct Acc {
    /// The largest magnitude's bits in the input type (magnitude bits order as the
    /// magnitudes do, with ±Inf above every finite value and NaN above ±Inf).
    bits: u64,
    lo: f64,
    hi: f64,
}

impl Acc {
    const EMPTY: Acc = Acc {
        bits: 0,
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    #[inline(always)]
    fn add<I: Float>(&mut self, seg: &[I], lohi: bool) {
        use crate::round::types::Word;
        self.bits = self.bits.max(crate::block::max_abs_bits(seg).to_u64());
        if lohi {
            for v in seg {
                let v = v.to_f64();
                self.lo = self.lo.min(v);
                self.hi = self.hi.max(v);
            }
        }
    }

    fn stats<'a, I: Float>(&self, data: &'a [f64]) -> BlockStats<'a> {
        use crate::round::types::Word;
        let amax = I::from_bits(<I::Bits as Word>::from_u64(self.bits)).to_f64();
        BlockStats {
            amax,
            lo: if self.lo.is_finite() { self.lo } else { 0.0 },
            hi: if self.hi.is_finite() { self.hi } else { 0.0 },
            finite: amax.is_finite(),
            data,
        }
    }
}

/// Cut `s` into consecutive pieces of the given lengths (an empty `s` gives empty pieces).
pub(crate) fn split_lens<'a, T>(mut s: &'a mut [T], lens: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(lens.len());
    for &l in lens {
        if s.is_empty() {
            out.push(Default::default());
            continue;
        }
        let (a, b) = s.split_at_mut(l);
        out.push(a);
        s = b;
    }
    out
}

/// One band: `rows` rows starting at the tensor's row `row0`; `blocks` scales.
struct Band {
    row0: usize,
    rows: usize,
    blocks: usize,
}

fn bands(g: &Grid) -> Vec<Band> {
    let (tr, tc) = g.tile.expect("tiled");
    let bc = g.cols.div_ceil(tc);
    let mut out = Vec::new();
    if tr > 1 {
        for m in 0..g.mats {
            let mut i = 0;
            while i < g.rows {
                let rows = tr.min(g.rows - i);
                out.push(Band {
                    row0: m * g.rows + i,
                    rows,
                    blocks: bc,
                });
                i += tr;
            }
        }
    } else {
        let total = g.mats * g.rows;
        let k = (BAND / g.cols.max(1)).max(1);
        let mut r = 0;
        while r < total {
            let rows = k.min(total - r);
            out.push(Band {
                row0: r,
                rows,
                blocks: rows * bc,
            });
            r += k;
        }
    }
    out
}

/// Run the scheme over `x`.
pub(crate) fn run<I: Float, O: Float, C: Code>(
    ctx: &Ctx,
    x: &[I],
    out: Outputs<'_, O, C>,
) -> Counts {
    let g = &ctx.grid;
    if g.tile.is_none() {
        return whole(ctx, x, out);
    }
    let bs = bands(g);
    let cols = g.cols;
    let elems: Vec<usize> = bs.iter().map(|b| b.rows * cols).collect();
    let nblocks: Vec<usize> = bs.iter().map(|b| b.blocks).collect();
    let xs: Vec<&[I]> = {
        let mut v = Vec::with_capacity(bs.len());
        let mut rest = x;
        for &l in &elems {
            let (a, b) = rest.split_at(l);
            v.push(a);
            rest = b;
        }
        v
    };
    let vs = split_lens(out.values, &elems);
    let cs = split_lens(out.codes, &elems);
    let scs = split_lens(out.scale_codes, &nblocks);
    let svs = split_lens(out.scale_values, &nblocks);
    let zs = split_lens(out.zeros, &nblocks);
    let work: Vec<BandWork<'_, I, O, C>> = bs
        .iter()
        .zip(xs)
        .zip(vs)
        .zip(cs)
        .zip(scs)
        .zip(svs)
        .zip(zs)
        .map(|((((((b, x), v), c), sc), sv), z)| BandWork {
            b,
            x,
            out: Outputs {
                values: v,
                codes: c,
                scale_codes: sc,
                scale_values: sv,
                zeros: z,
            },
        })
        .collect();
    let one = |w: BandWork<'_, I, O, C>| crate::simd::dispatch(BandKernel { ctx, w });
    if x.len() >= crate::block::PARALLEL_MIN {
        work.into_par_iter()
            .map(one)
            .reduce(Counts::default, |a, b| a + b)
    } else {
        work.into_iter()
            .map(one)
            .fold(Counts::default(), |a, b| a + b)
    }
}

/// One band's input and outputs.
struct BandWork<'a, I, O, C> {
    b: &'a Band,
    x: &'a [I],
    out: Outputs<'a, O, C>,
}

/// A band as a [`crate::simd::Kernel`]: the statistics, the scaling and the element step
/// compiled for the widest vector unit of the CPU.
struct BandKernel<'a, I, O, C> {
    ctx: &'a Ctx,
    w: BandWork<'a, I, O, C>,
}

impl<I: Float, O: Float, C: Code> crate::simd::Kernel for BandKernel<'_, I, O, C> {
    type Output = Counts;
    #[inline(always)]
    fn run(self) -> Counts {
        band(self.ctx, self.w.b, self.w.x, self.w.out)
    }
}

#[inline(always)]
fn band<I: Float, O: Float, C: Code>(
    ctx: &Ctx,
    b: &Band,
    x: &[I],
    out: Outputs<'_, O, C>,
) -> Counts {
    let Outputs {
        values: v,
        codes: c,
        scale_codes: sc,
        scale_values: sv,
        zeros: z,
    } = out;
    let g = &ctx.grid;
    let (tr, tc) = g.tile.expect("tiled");
    let cols = g.cols;
    let bc = cols.div_ceil(tc);
    let tile_band = tr > 1;
    let lohi = matches!(ctx.s.element, Element::Int(ig) if ig.range == super::axes::IntRange::Unsigned)
        && matches!(ctx.s.rule, Rule::Affine(_));
    let block_of = |r: usize, j: usize| if tile_band { j } else { r * bc + j };
    // 1. statistics
    let mut acc = vec![Acc::EMPTY; b.blocks];
    for r in 0..b.rows {
        let row = &x[r * cols..(r + 1) * cols];
        for j in 0..bc {
            let seg = &row[j * tc..((j + 1) * tc).min(cols)];
            acc[block_of(r, j)].add(seg, lohi);
        }
    }
    // 2. scales (the candidate rules read the block's elements)
    let mut data: Vec<f64> = Vec::new();
    let scales: Vec<BlockScale> = (0..b.blocks)
        .map(|k| {
            if ctx.need_data && acc[k].stats::<I>(&[]).finite {
                data.clear();
                let (j, rows) = if tile_band {
                    (k, 0..b.rows)
                } else {
                    (k % bc, k / bc..k / bc + 1)
                };
                for r in rows {
                    let row = &x[r * cols..(r + 1) * cols];
                    data.extend(
                        row[j * tc..((j + 1) * tc).min(cols)]
                            .iter()
                            .map(|v| v.to_f64()),
                    );
                }
            }
            ctx.checked_scale(&acc[k].stats::<I>(&data))
        })
        .collect();
    let mut counts = Counts {
        blocks: b.blocks as u64,
        ..Counts::default()
    };
    for (k, s) in scales.iter().enumerate() {
        if let Some(o) = sc.get_mut(k) {
            *o = s.code;
        }
        if let Some(o) = sv.get_mut(k) {
            *o = s.value;
        }
        if let Some(o) = z.get_mut(k) {
            *o = s.zero;
        }
        counts.scale_clamped += s.clamped as u64;
        counts.nan_blocks += (s.y == Scaling::Nan) as u64;
    }
    // 3. elements, one row at a time
    let mut segs: Vec<(usize, usize, &BlockScale)> = Vec::with_capacity(bc);
    let mut y = vec![0f64; cols];
    let mut y32 = Vec::new();
    let mut row_scales = RowScales {
        shared: tile_band,
        ..RowScales::default()
    };
    for r in 0..b.rows {
        segs.clear();
        for j in 0..bc {
            segs.push((j * tc, ((j + 1) * tc).min(cols), &scales[block_of(r, j)]));
        }
        let at = r * cols..(r + 1) * cols;
        let vr = if v.is_empty() {
            &mut [][..]
        } else {
            &mut v[at.clone()]
        };
        let cr = if c.is_empty() {
            &mut [][..]
        } else {
            &mut c[at.clone()]
        };
        let index0 = ((b.row0 + r) * cols) as u64;
        if let Some(n) = ctx.fused_row(&x[at.clone()], &segs, tc, &mut row_scales, vr, cr) {
            counts += n;
            continue;
        }
        if ctx.lane32::<I>(&segs) {
            y32.resize(cols, 0f32);
            fill32(&x[at.clone()], &segs, &mut y32);
            counts += ctx.step.run32(&x[at], &y32, &segs, index0, vr, cr);
            continue;
        }
        ctx.fill(&x[at.clone()], &segs, &mut y);
        counts += ctx.round_row(&x[at], &y, &segs, index0, vr, cr);
    }
    counts.elements = x.len() as u64;
    counts
}

/// One scale for the whole tensor.
fn whole<I: Float, O: Float, C: Code>(ctx: &Ctx, x: &[I], out: Outputs<'_, O, C>) -> Counts {
    let mut acc = Acc::EMPTY;
    let lohi =
        matches!(ctx.s.element, Element::Int(ig) if ig.range == super::axes::IntRange::Unsigned);
    for ch in x.chunks(BAND) {
        acc.add(ch, lohi);
    }
    let data: Vec<f64> = if ctx.need_data && acc.stats::<I>(&[]).finite {
        x.iter().map(|v| v.to_f64()).collect()
    } else {
        Vec::new()
    };
    let s = ctx.checked_scale(&acc.stats::<I>(&data));
    if ctx.refused() {
        return Counts::default();
    }
    if let Some(o) = out.scale_codes.first_mut() {
        *o = s.code;
    }
    if let Some(o) = out.scale_values.first_mut() {
        *o = s.value;
    }
    if let Some(o) = out.zeros.first_mut() {
        *o = s.zero;
    }
    let n = x.len();
    let segs_of = |len: usize| vec![(0usize, len, &s)];
    let lens: Vec<usize> = (0..n.div_ceil(BAND))
        .map(|i| BAND.min(n - i * BAND))
        .collect();
    let vs = split_lens(out.values, &lens);
    let cs = split_lens(out.codes, &lens);
    type Piece<'a, I, O, C> = (usize, ((&'a [I], &'a mut [O]), &'a mut [C]));
    let work: Vec<Piece<'_, I, O, C>> = x.chunks(BAND).zip(vs).zip(cs).enumerate().collect();
    let one = |(i, ((xc, vc), cc)): Piece<'_, I, O, C>| {
        ctx.step_row(xc, &segs_of(xc.len()), (i * BAND) as u64, vc, cc)
    };
    let mut counts = if n >= crate::block::PARALLEL_MIN {
        work.into_par_iter()
            .map(one)
            .reduce(Counts::default, |a, b| a + b)
    } else {
        work.into_iter()
            .map(one)
            .fold(Counts::default(), |a, b| a + b)
    };
    counts.elements = n as u64;
    counts.blocks = 1;
    counts.scale_clamped = s.clamped as u64;
    counts.nan_blocks = (s.y == Scaling::Nan) as u64;
    counts
}

/// `y` of a row in binary32 (every segment [`Scaling::is_f32`], binary32 inputs): the same
/// values as [`Ctx::fill`], in a loop the compiler vectorises.
#[inline(always)]
fn fill32<I: Float>(x: &[I], segs: &[(usize, usize, &BlockScale)], y: &mut [f32]) {
    for &(a, e, s) in segs {
        let (ys, xs) = (&mut y[a..e], &x[a..e]);
        match s.y {
            Scaling::Mul32(m) => ys
                .iter_mut()
                .zip(xs)
                .for_each(|(o, v)| *o = (v.to_f64() as f32) * m),
            Scaling::Div32(d) => ys
                .iter_mut()
                .zip(xs)
                .for_each(|(o, v)| *o = (v.to_f64() as f32) / d),
            _ => unreachable!("checked by Ctx::lane32"),
        }
    }
}

/// Per-row scratch of [`Ctx::fused_row`]: the blocks' multipliers or divisors, their decode
/// factors, and codes when none are asked for.
#[derive(Default)]
struct RowScales {
    factor: Vec<f32>,
    d: Vec<f64>,
    codes: Vec<u8>,
    /// Every row has the same blocks (a band of tiles): made once.
    shared: bool,
    /// `factor` and `d` hold the band's (shared rows, after the first).
    ready: bool,
    /// The blocks divide (else multiply).
    div: bool,
    /// The rows may take the specialised step.
    ok: bool,
}

impl Ctx {
    /// A row through the element step's binary32 specialisation
    /// ([`crate::block::fused::blocks`]), when it applies: binary32 inputs, whole blocks of
    /// `tc`, every block scaled in binary32 the same way (all multiplied or all divided), no
    /// NaN block, decode factors that cannot underflow a nonzero code's value, and byte codes.
    /// The same codes, values and counts as [`Step::run32`] (the tests compare the general
    /// engine with the kernels, which share this step).
    #[inline(always)]
    fn fused_row<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        segs: &[(usize, usize, &BlockScale)],
        tc: usize,
        rs: &mut RowScales,
        v: &mut [O],
        c: &mut [C],
    ) -> Option<Counts> {
        let e = self.fused32.as_ref()?;
        if I::MANT != 23 || !x.len().is_multiple_of(tc) || segs.len() != x.len() / tc {
            return None;
        }
        // the rows of a band of tiles share their blocks: their factors are made once
        if !rs.ready {
            rs.div = matches!(segs.first()?.2.y, Scaling::Div32(_));
            let tiny = crate::format::pow2(-900);
            rs.factor.clear();
            rs.d.clear();
            rs.ok = true;
            for &(_, _, s) in segs {
                let f = match (s.y, rs.div) {
                    (Scaling::Mul32(m), false) | (Scaling::Div32(m), true) => m,
                    _ => {
                        rs.ok = false;
                        break;
                    }
                };
                if s.d.abs() < tiny {
                    rs.ok = false;
                    break;
                }
                rs.factor.push(f);
                rs.d.push(s.d);
            }
            rs.ready = rs.shared;
        }
        if !rs.ok {
            return None;
        }
        let div = rs.div;
        let c: &mut [u8] = if c.is_empty() {
            rs.codes.resize(x.len(), 0);
            &mut rs.codes[..]
        } else {
            C::as_u8s(c)?
        };
        use crate::block::fused::blocks;
        let (saturated, flushed) = if div {
            blocks::<f32, I, f64, O, _, true>(e, x, tc, &rs.factor, &rs.d, v, c)
        } else {
            blocks::<f32, I, f64, O, _, false>(e, x, tc, &rs.factor, &rs.d, v, c)
        };
        Some(Counts {
            saturated,
            flushed,
            ..Counts::default()
        })
    }

    /// Whether a row takes the binary32 lane: binary32 inputs, an element step that has it
    /// (no IF4 alternative), and binary32 scalings in every segment.
    fn lane32<I: Float>(&self, segs: &[(usize, usize, &BlockScale)]) -> bool {
        I::MANT == 23
            && self.alt.is_none()
            && self.step.has_lane32()
            && segs.iter().all(|s| s.2.y.is_f32())
    }

    /// Scale, round and decode one row (or piece) whose segments share the given scales;
    /// `index0` is the tensor index of its first element.
    fn step_row<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        segs: &[(usize, usize, &BlockScale)],
        index0: u64,
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        if self.lane32::<I>(segs) {
            let mut y = vec![0f32; x.len()];
            fill32(x, segs, &mut y);
            return self.step.run32(x, &y, segs, index0, v, c);
        }
        let mut y = vec![0f64; x.len()];
        self.fill(x, segs, &mut y);
        self.round_row(x, &y, segs, index0, v, c)
    }

    /// `y` of every element of a row.
    #[inline(always)]
    fn fill<I: Float>(&self, x: &[I], segs: &[(usize, usize, &BlockScale)], y: &mut [f64]) {
        for &(a, e, s) in segs {
            for (yi, xi) in y[a..e].iter_mut().zip(&x[a..e]) {
                *yi = s.y.apply(xi.to_f64());
            }
        }
    }

    /// Round a row whose `y` is filled.
    #[inline(always)]
    fn round_row<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        y: &[f64],
        segs: &[(usize, usize, &BlockScale)],
        index0: u64,
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        let mut counts = Counts::default();
        // the alternative element (IF4): segments that use it take their own step
        if self.alt.is_some() && segs.iter().any(|s| s.2.alt) {
            for &(a, e, s) in segs {
                let st = self.step(s.alt);
                let seg = [(0, e - a, s)];
                let vr = if v.is_empty() {
                    &mut [][..]
                } else {
                    &mut v[a..e]
                };
                let cr = if c.is_empty() {
                    &mut [][..]
                } else {
                    &mut c[a..e]
                };
                counts += st.run(&x[a..e], &y[a..e], &seg, index0 + a as u64, vr, cr);
            }
            return counts;
        }
        self.step.run(x, y, segs, index0, v, c)
    }
}

/// Check that the inputs suit the rule: every rule but MX's and a plain cast refuses NaN and
/// ±Inf (a scale computed from them would be meaningless). The engine finds them in its
/// block statistics ([`Ctx::refused`]); this pass names the first one.
pub(crate) fn check_finite<I: Float>(s: &Scheme, x: &[I]) -> Result<()> {
    if matches!(s.rule, Rule::Pow2(_) | Rule::None) {
        return Ok(());
    }
    let m = crate::block::max_abs(x);
    if m.is_finite() {
        return Ok(());
    }
    let i = x.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
    Err(Error::InvalidArgument(format!(
        "{s} needs finite inputs (its scales come from the values); index {i} is NaN or Inf: \
         remove them first, or use an MX scheme, which gives NaN blocks"
    )))
}
