//! Low-precision GEMM: `C = A·B` with inputs rounded to a format or block scheme, products
//! exact or rounded, accumulation in a `p`-bit format in a chosen order, promotion every `N`
//! terms, and the error against the exact product.
//!
//! Products are formed in binary64, exact when both factors have at most 26 significand bits
//! (every input format up to binary32, every MX element, integer codes times a power-of-two
//! scale); otherwise (NVFP4's two-level scales, integer schemes with binary64 scales) a
//! product is rounded to 53 bits, a relative error of at most `2^−53` that
//! [`GemmReport::inexact_products`] counts. The reference is the compensated dot product
//! Dot2 of the rounded inputs (every product and every addition carried with its exact error).
//!
//! ```
//! use lowprec::accum::{gemm, GemmOptions, Order};
//! use lowprec::FloatFormat;
//! // 1 × 300 times 300 × 1 of ones: a BF16 accumulator stops at 256.
//! let a = vec![1.0; 300];
//! let opts = GemmOptions::new(FloatFormat::BF16);
//! let r = gemm(&a, &a, 1, 1, 300, &opts)?;
//! assert_eq!((r.c[0], r.exact[0]), (256.0, 300.0));
//! let r = gemm(&a, &a, 1, 1, 300, &opts.chunk(128))?;
//! assert_eq!(r.c[0], 300.0);
//! let r = gemm(&a, &a, 1, 1, 300, &opts.order(Order::Blocked(16)))?;
//! assert_eq!(r.c[0], 300.0); // groups of 16 are exact; 256 + 16 is a BF16 number
//! # Ok::<(), lowprec::Error>(())
//! ```

use super::adder::{dispatch_mode, unpack, Adder, Flags, FLAG_SPAN};
use super::rows::{self, Rule};
use super::{error_bound, AccumOptions, Method};
use crate::error::{Error, Result};
use crate::format::FloatFormat;
use crate::round::kernel::SR;
use crate::round::random::{block_keys, hash32};
use crate::scheme::Scheme;
use crate::{round_in_place, Overflow, RoundOptions, Status};
use rayon::prelude::*;
use std::fmt;
use std::str::FromStr;

/// The order in which the `k` products of an output are added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Order {
    /// `s ← round(s + p_l)` for `l = 0, 1, …, k − 1`.
    #[default]
    Sequential,
    /// The pairwise tree of [`Method::Pairwise`] over the products.
    Pairwise,
    /// Tensor-core style k-split: each group of `G` consecutive products is summed exactly
    /// (a fused group) and added to the running sum with one rounding:
    /// `s ← round(s + Σ_group p_l)`. The group sum is a compensated binary64 (double-double)
    /// sum: exact whenever the group's rounding errors fit in 53 bits, as for every FP8, FP6,
    /// FP4 and FP16 input.
    Blocked(usize),
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Order::Sequential => f.write_str("sequential"),
            Order::Pairwise => f.write_str("pairwise"),
            Order::Blocked(g) => write!(f, "blocked:{g}"),
        }
    }
}

impl FromStr for Order {
    type Err = Error;
    fn from_str(s: &str) -> Result<Order> {
        let l = s.to_ascii_lowercase();
        match l.as_str() {
            "sequential" | "seq" => return Ok(Order::Sequential),
            "pairwise" | "tree" => return Ok(Order::Pairwise),
            _ => {}
        }
        if let Some(g) = l.strip_prefix("blocked:") {
            if let Ok(g) = g.parse::<usize>() {
                if g > 0 {
                    return Ok(Order::Blocked(g));
                }
            }
        }
        Err(Error::InvalidArgument(format!(
            "unknown GEMM order `{s}`; use sequential, pairwise or blocked:G (G > 0 products per fused group)"
        )))
    }
}

/// Everything that defines a simulated GEMM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmOptions {
    /// How the inputs are rounded (`None`: used as given). `A`'s blocks run along its rows
    /// (the k axis), `B`'s along its columns (the k axis too).
    pub input: Option<Scheme>,
    /// Products rounded to this format (nearest even) before accumulation; `None`: exact.
    pub product: Option<FloatFormat>,
    /// The accumulator format.
    pub acc: FloatFormat,
    /// Rounding of every accumulation step.
    pub rounding: RoundOptions,
    /// The order of the additions.
    pub order: Order,
    /// Promote into `outer` every `chunk` products (0: never).
    pub chunk: usize,
    /// The promotion accumulator (FP32 by default).
    pub outer: FloatFormat,
}

impl GemmOptions {
    /// Inputs as given, exact products, sequential accumulation in `acc`, no promotion.
    pub fn new(acc: FloatFormat) -> GemmOptions {
        GemmOptions {
            input: None,
            product: None,
            acc,
            rounding: RoundOptions::default(),
            order: Order::Sequential,
            chunk: 0,
            outer: FloatFormat::FP32,
        }
    }
    /// Inputs rounded by `scheme`.
    pub fn input(mut self, scheme: Scheme) -> Self {
        self.input = Some(scheme);
        self
    }
    /// Products rounded to `fmt`.
    pub fn product(mut self, fmt: FloatFormat) -> Self {
        self.product = Some(fmt);
        self
    }
    /// With this order.
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }
    /// Promotion every `chunk` products.
    pub fn chunk(mut self, chunk: usize) -> Self {
        self.chunk = chunk;
        self
    }
    /// With these rounding options for the accumulator.
    pub fn rounding(mut self, rounding: RoundOptions) -> Self {
        self.rounding = rounding;
        self
    }

    /// The accumulation these options describe (for its error bound).
    pub fn accum(&self) -> AccumOptions {
        let method = match self.order {
            Order::Pairwise => Method::Pairwise,
            _ => Method::Sequential,
        };
        AccumOptions::new(self.acc)
            .method(method)
            .rounding(self.rounding)
            .chunk(self.chunk)
            .outer(self.outer)
    }
}

/// The result of [`gemm`]: `C`, the exact product of the rounded inputs, and the error table.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmReport {
    /// `C` (`m × n`, row-major) as computed.
    pub c: Vec<f64>,
    /// The reference `A_X · B_X` of the rounded inputs (compensated, see the module docs).
    pub exact: Vec<f64>,
    /// Largest `|ĉ − c| / |c|` over outputs with `c ≠ 0`.
    pub max_rel: f64,
    /// Mean of `|ĉ − c| / |c|` over the same outputs.
    pub mean_rel: f64,
    /// Largest `|ĉ − c| / Σ_l |a_il b_lj|`: the quantity the classical bound limits.
    pub max_normalized: f64,
    /// The classical bound of the order (`γ_k` for sequential, `γ_⌈log2 k⌉` pairwise, with
    /// promotion the two-level bound), in the accumulator's unit roundoff.
    pub bound: f64,
    /// Products that binary64 could not hold exactly (rounded to 53 bits).
    pub inexact_products: u64,
    /// Counts of inexact, overflowing and underflowing additions; NaN and infinite outputs.
    pub status: Status,
}

/// The most terms of a product that the kernels number for stochastic rounding.
const MAX_K: usize = 1 << 28;

/// Simulate `C = A·B` for row-major `A` (`m × k`) and `B` (`k × n`) and compare it with the
/// reference product of the rounded inputs.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for shapes that do not match, an accumulator or promotion
/// format [`Adder::new`] refuses, or the input scheme's errors.
pub fn gemm(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
    opts: &GemmOptions,
) -> Result<GemmReport> {
    let (c, status, ax, bx) = simulate(a, b, m, n, k, opts)?;
    report(c, status, &ax, &bx, m, n, k, opts)
}

/// A simulated dot product `Σ a_l b_l` (a 1 × 1 [`gemm`] with `k = a.len()`): the value and
/// the full report.
///
/// ```
/// use lowprec::accum::{dot, GemmOptions};
/// use lowprec::FloatFormat;
/// let (v, r) = dot(&[1.0; 300], &[1.0; 300], &GemmOptions::new(FloatFormat::BF16))?;
/// assert_eq!((v, r.exact[0]), (256.0, 300.0));
/// # Ok::<(), lowprec::Error>(())
/// ```
///
/// # Errors
///
/// As [`gemm`], and for vectors of different lengths.
pub fn dot(a: &[f64], b: &[f64], opts: &GemmOptions) -> Result<(f64, GemmReport)> {
    if a.len() != b.len() {
        return Err(Error::InvalidArgument(format!(
            "dot of vectors of {} and {} values; give vectors of one length",
            a.len(),
            b.len()
        )));
    }
    let r = gemm(a, b, 1, 1, a.len(), opts)?;
    Ok((r.c[0], r))
}

/// The simulated `C` alone (no reference): `(C, counts)`.
///
/// # Errors
///
/// As [`gemm`].
pub fn gemm_product(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
    opts: &GemmOptions,
) -> Result<(Vec<f64>, Status)> {
    let (c, status, _, _) = simulate(a, b, m, n, k, opts)?;
    Ok((c, status))
}

/// `C`, the counts, and the rounded inputs.
#[allow(clippy::type_complexity)]
fn simulate(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
    opts: &GemmOptions,
) -> Result<(Vec<f64>, Status, Vec<f64>, Vec<f64>)> {
    if a.len() != m * k || b.len() != k * n {
        return Err(Error::InvalidArgument(format!(
            "A holds {} values and B {}; for m = {m}, n = {n}, k = {k} they need {} and {}",
            a.len(),
            b.len(),
            m * k,
            k * n
        )));
    }
    if k >= MAX_K {
        return Err(Error::InvalidArgument(format!(
            "k = {k} is too long (at most 2^28 − 1)"
        )));
    }
    if let Order::Blocked(g) = opts.order {
        if opts.chunk > 0 && !opts.chunk.is_multiple_of(g) {
            return Err(Error::InvalidArgument(format!(
                "a promotion every {} products must be a multiple of the fused group {g}",
                opts.chunk
            )));
        }
    }
    let adder = Adder::new(&opts.acc, &opts.rounding)?;
    let outer = Adder::new(&opts.outer, &RoundOptions::default())?;
    let (ax, bx) = round_inputs(a, b, m, n, k, opts.input.as_ref())?;
    let bt = transpose(&bx, k, n);
    let prod_opts = RoundOptions::default().overflow(Overflow::Ieee);
    let rule = Rule {
        adder: &adder,
        outer: &outer,
        chunk: opts.chunk,
        kahan: false,
    };

    let mut c = vec![0.0; m * n];
    let status = if m * n == 0 {
        Status::default()
    } else {
        c.par_chunks_mut(n)
            .enumerate()
            .map(|(i, crow)| {
                let arow = &ax[i * k..(i + 1) * k];
                match opts.order {
                    Order::Sequential => row_sequential(
                        &rule,
                        arow,
                        &bx,
                        n,
                        i,
                        opts.product.as_ref(),
                        &prod_opts,
                        crow,
                    ),
                    _ => row_scalar(&rule, opts, arow, &bt, k, i, &prod_opts, crow),
                }
            })
            .reduce(Status::default, |x, y| x + y)
    };
    Ok((c, status, ax, bx))
}

/// The error table of a simulated `C` against the reference product.
#[allow(clippy::too_many_arguments)]
fn report(
    c: Vec<f64>,
    status: Status,
    ax: &[f64],
    bx: &[f64],
    m: usize,
    n: usize,
    k: usize,
    opts: &GemmOptions,
) -> Result<GemmReport> {
    let (exact, inexact_products, sums) = reference_product(ax, bx, m, n, k);
    let mut st = status;
    st.nan = c.iter().filter(|v| v.is_nan()).count() as u64;
    st.infinite = c.iter().filter(|v| v.is_infinite()).count() as u64;
    let (mut max_rel, mut sum_rel, mut cnt, mut max_norm) = (0f64, 0f64, 0u64, 0f64);
    for ((&ch, &ce), &sa) in c.iter().zip(&exact).zip(&sums) {
        let d = (ch - ce).abs();
        if ce != 0.0 {
            let r = d / ce.abs();
            max_rel = max_rel.max(r);
            sum_rel += r;
            cnt += 1;
        }
        if sa > 0.0 {
            max_norm = max_norm.max(d / sa);
        } else if d > 0.0 {
            max_norm = f64::INFINITY;
        }
        if d.is_nan() {
            max_rel = f64::NAN;
            max_norm = f64::NAN;
        }
    }
    Ok(GemmReport {
        c,
        exact,
        max_rel,
        mean_rel: if cnt > 0 { sum_rel / cnt as f64 } else { 0.0 },
        max_normalized: max_norm,
        bound: error_bound(&opts.accum(), k as u64),
        inexact_products,
        status: st,
    })
}

/// Round `A` (blocks along rows) and `B` (blocks along columns) by the input scheme.
fn round_inputs(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
    scheme: Option<&Scheme>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let Some(s) = scheme else {
        return Ok((a.to_vec(), b.to_vec()));
    };
    if k == 0 || m * n == 0 {
        return Ok((a.to_vec(), b.to_vec()));
    }
    let ax = s.apply(a, &[m, k])?.values;
    let bt = transpose(b, k, n);
    let btx = s.apply(&bt, &[n, k])?.values;
    Ok((ax, transpose(&btx, n, k)))
}

/// The `cols × rows` transpose of a row-major `rows × cols` matrix.
fn transpose(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; x.len()];
    for (r, row) in x.chunks(cols.max(1)).enumerate().take(rows) {
        for (c, v) in row.iter().enumerate() {
            t[c * rows + r] = *v;
        }
    }
    t
}

/// Row `i` of `C` in sequential order: for each `l`, the products `a_il · B[l, :]` (rounded
/// to the product format when asked), then one vector step of the accumulators.
#[allow(clippy::too_many_arguments)]
fn row_sequential(
    rule: &Rule,
    arow: &[f64],
    b: &[f64],
    n: usize,
    i: usize,
    product: Option<&FloatFormat>,
    prod_opts: &RoundOptions,
    crow: &mut [f64],
) -> Status {
    let adder = rule.adder;
    let sr = adder.options().mode == crate::RoundingMode::Stochastic;
    let seed = adder.options().seed;
    // Output (i, j) numbers its roundings k = 0, 1, … and draws random_bits(seed,
    // (i·n + j)·2^32 + k).
    let keys: Vec<[u32; 2]> = if sr {
        (0..n)
            .map(|j| block_keys(seed, ((i * n + j) as u64) as u32))
            .collect()
    } else {
        Vec::new()
    };
    let mut s = vec![0.0; n];
    let mut outer = vec![0.0; n];
    let mut p = vec![0.0; n];
    let mut st = Status::default();
    let mut op: u32 = 0;
    let mut in_chunk = 0;
    for (l, &ail) in arow.iter().enumerate() {
        for (pj, bj) in p.iter_mut().zip(&b[l * n..(l + 1) * n]) {
            *pj = ail * bj;
        }
        if let Some(f) = product {
            round_in_place(f, &mut p, prod_opts).ok();
        }
        st += dispatch_mode!(adder, K, MODE, {
            crate::simd::dispatch(Axpy::<K, MODE> {
                adder,
                keys: &keys,
                op,
                s: &mut s,
                p: &p,
            })
        });
        op += 1;
        if rule.chunk > 0 {
            in_chunk += 1;
            if in_chunk == rule.chunk || l + 1 == arow.len() {
                for j in 0..n {
                    let idx = (((i * n + j) as u64) << 32) | op as u64;
                    let (v, f) = rule.outer.add_flags(outer[j], s[j], idx);
                    outer[j] = v;
                    add_flags(&mut st, f);
                }
                s.iter_mut().for_each(|v| *v = 0.0);
                op += 1;
                in_chunk = 0;
            }
        }
    }
    crow.copy_from_slice(if rule.chunk > 0 { &outer } else { &s });
    st
}

fn add_flags(st: &mut Status, f: Flags) {
    *st += unpack(f);
}

/// `s_j ← round(s_j + p_j)` for every output of a row.
struct Axpy<'a, const K: u8, const MODE: u8> {
    adder: &'a Adder,
    keys: &'a [[u32; 2]],
    op: u32,
    s: &'a mut [f64],
    p: &'a [f64],
}

impl<const K: u8, const MODE: u8> crate::simd::Kernel for Axpy<'_, K, MODE> {
    type Output = Status;
    #[inline(always)]
    fn run(self) -> Status {
        let adder = *self.adder;
        let mut st = Status::default();
        for (c, (s, p)) in self
            .s
            .chunks_mut(FLAG_SPAN)
            .zip(self.p.chunks(FLAG_SPAN))
            .enumerate()
        {
            let mut f: Flags = 0;
            for (j, (s, &p)) in s.iter_mut().zip(p).enumerate() {
                let rnd = if MODE == SR {
                    let k = self.keys[c * FLAG_SPAN + j];
                    hash32(self.op, k[0], k[1]) as u64
                } else {
                    0
                };
                let (v, g) = adder.step::<K, MODE>(*s, p, rnd);
                *s = v;
                f += g;
            }
            st += unpack(f);
        }
        st
    }
}

/// Row `i` of `C` output by output (pairwise and blocked orders).
#[allow(clippy::too_many_arguments)]
fn row_scalar(
    rule: &Rule,
    opts: &GemmOptions,
    arow: &[f64],
    bt: &[f64],
    k: usize,
    i: usize,
    prod_opts: &RoundOptions,
    crow: &mut [f64],
) -> Status {
    let n = crow.len();
    let mut st = Status::default();
    let mut p = vec![0.0; k];
    for (j, cj) in crow.iter_mut().enumerate() {
        let bcol = &bt[j * k..(j + 1) * k];
        for ((pl, a), b) in p.iter_mut().zip(arow).zip(bcol) {
            *pl = a * b;
        }
        if let Some(f) = &opts.product {
            round_in_place(f, &mut p, prod_opts).ok();
        }
        let index = (i * n + j) as u64;
        let (v, s) = match opts.order {
            Order::Blocked(g) => blocked(rule, &p, g, index),
            _ => rows::pairwise_row(rule, &p, index),
        };
        *cj = v;
        st += s;
    }
    st
}

/// Fused groups of `g` products: `s ← round(s + Σ_group p)`, the group summed in
/// double-double; promotion every `rule.chunk` products.
fn blocked(rule: &Rule, p: &[f64], g: usize, index: u64) -> (f64, Status) {
    let mut st = Status::default();
    let (mut s, mut outer) = (0.0, 0.0);
    let mut op: u64 = 0;
    for (t, group) in p.chunks(g).enumerate() {
        let (mut hi, mut lo) = (s, 0.0);
        for &x in group {
            let h = hi + x;
            let bb = h - hi;
            lo += (hi - (h - bb)) + (x - bb);
            hi = h;
        }
        let (v, f) = rule.adder.add_flags(hi, lo, (index << 32) | op);
        s = v;
        op += 1;
        add_flags(&mut st, f);
        let done = (t + 1) * g;
        if rule.chunk > 0 && (done.is_multiple_of(rule.chunk) || done >= p.len()) {
            let (v, f) = rule.outer.add_flags(outer, s, (index << 32) | op);
            outer = v;
            s = 0.0;
            op += 1;
            add_flags(&mut st, f);
        }
    }
    (if rule.chunk > 0 { outer } else { s }, st)
}

/// The reference product of the rounded inputs by Dot2 (Ogita, Rump and Oishi, *Accurate sum
/// and dot product*, SIAM J. Sci. Comput. 26(6), 2005): every product carried with its exact
/// error (`fma`, only when some product may be inexact), every addition with its TwoSum error,
/// the errors summed aside. Its error is at most `u|c| + γ_k² Σ|a_il b_lj|` (`u = 2^−53`),
/// about `10^−27` relative for `k = 512`: far below any accumulator studied here. Returns
/// the reference, the count of products binary64 rounded, and `Σ_l |a_il b_lj|` per output,
/// for row-major `A` (`m × k`) and `B` (`k × n`) of the right lengths.
///
/// ```
/// let (c, inexact, abs) = lowprec::accum::dot::reference_product(&[1e16, 1.0, -1e16], &[1.0, 1.0, 1.0], 1, 1, 3);
/// assert_eq!((c[0], inexact, abs[0]), (1.0, 0, 2e16 + 1.0));
/// ```
pub fn reference_product(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
) -> (Vec<f64>, u64, Vec<f64>) {
    assert!(
        a.len() >= m * k && b.len() >= k * n,
        "reference_product: A or B too short"
    );
    // A product is exact when the two significands have at most 53 bits together.
    let width = |x: &f64| {
        let bits = x.to_bits() & ((1u64 << 52) - 1);
        if bits == 0 {
            0
        } else {
            53 - bits.trailing_zeros() as i32
        }
    };
    let wa = a.iter().map(width).max().unwrap_or(0);
    let wb = b.iter().map(width).max().unwrap_or(0);
    let tiny = |x: &f64| *x != 0.0 && x.abs() < 2f64.powi(-400);
    let may_round = wa + wb > 52 || a.iter().any(tiny) || b.iter().any(tiny);
    let rows: Vec<(Vec<f64>, u64, Vec<f64>)> = (0..m)
        .into_par_iter()
        .map(|i| {
            let (mut hi, mut lo, mut abs) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
            let mut inexact = 0u64;
            for (l, &x) in a[i * k..(i + 1) * k].iter().enumerate() {
                let brow = &b[l * n..(l + 1) * n];
                for j in 0..n {
                    let p = x * brow[j];
                    let h = hi[j] + p;
                    let bb = h - hi[j];
                    lo[j] += (hi[j] - (h - bb)) + (p - bb);
                    hi[j] = h;
                    abs[j] += p.abs();
                }
                if may_round {
                    for j in 0..n {
                        let p = x * brow[j];
                        let e = x.mul_add(brow[j], -p);
                        if e != 0.0 && e.is_finite() {
                            lo[j] += e;
                            inexact += 1;
                        }
                    }
                }
            }
            let c = hi.iter().zip(&lo).map(|(h, l)| h + l).collect();
            (c, inexact, abs)
        })
        .collect();
    let mut exact = Vec::with_capacity(m * n);
    let mut sums = Vec::with_capacity(m * n);
    let mut inexact = 0;
    for (c, e, s) in rows {
        exact.extend(c);
        sums.extend(s);
        inexact += e;
    }
    (exact, inexact, sums)
}
