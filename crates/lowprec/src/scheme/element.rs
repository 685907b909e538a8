//! The element step, in one place: scaled elements `y` rounded once into the element grid,
//! their codes, and their values `decode(code) · d` (`d · (k − zero) · 2^−frac` for integer
//! grids). Every scheme's general path runs through `Step`; the fast kernels of
//! [`crate::block`] and [`crate::quant`] are specialisations of it, tested against it.
//!
//! [`encode_block`] is the step as a public function: bring your own scale (gfloat's
//! `encode_block`).

use super::axes::{Element, IntGrid};
use super::rule::{BlockScale, Scaling};
use super::Counts;
use crate::error::{Error, Result};
use crate::round::{random_bits, Code, Float, RoundOptions, Rounder, RoundingMode};

/// The element step of one element grid under one set of rounding options.
pub(crate) struct Step {
    elem: Element,
    opts: RoundOptions,
    rounder: Option<Rounder<f64>>,
    /// The same rounding for binary32 `y` (the binary32 lane: exact binary32 scalings of
    /// binary32 inputs, nearest or directed modes), which gives the codes of `rounder` on
    /// the same values.
    rounder32: Option<Rounder<f32>>,
    /// The value of every code (codes of at most 16 bits).
    table: Vec<f64>,
    /// The codes whose value is zero are those `k` with `k & zero_mask == 0` (the sign bit
    /// left out where −0 is a code; checked on every code when the step is made); `None`
    /// for formats whose zeros are otherwise (none: E8M0), which look up `table`.
    zero_mask: Option<u16>,
    /// The code of a NaN element (the format's positive NaN, else 0).
    nan_code: u16,
}

impl Step {
    /// Prepare `elem` under `opts`.
    pub(crate) fn new(elem: &Element, opts: &RoundOptions) -> Step {
        let (rounder, nan_code) = match elem {
            Element::Float(f) => (
                Some(Rounder::new(f, opts)),
                f.nan_code(false).unwrap_or(0) as u16,
            ),
            Element::Int(_) => (None, 0),
        };
        let table = if elem.has_codes() {
            (0..1u32 << elem.bits())
                .map(|c| elem.decode(c as u16))
                .collect()
        } else {
            Vec::new()
        };
        let rounder32 = match elem {
            Element::Float(f) if opts.mode != RoundingMode::Stochastic && elem.has_codes() => {
                Some(Rounder::new(f, opts))
            }
            _ => None,
        };
        Step {
            elem: *elem,
            opts: *opts,
            rounder,
            rounder32,
            zero_mask: zero_mask(&table),
            table,
            nan_code,
        }
    }

    /// Whether [`Step::run32`] takes these rows (a float element with codes, not stochastic).
    pub(crate) fn has_lane32(&self) -> bool {
        self.rounder32.is_some()
    }

    /// [`Step::run`] for `y` computed exactly in binary32 (the binary32 lane): the same codes,
    /// values and counts as `run` on the same `y` widened, by the binary32 kernel.
    #[inline(always)]
    pub(crate) fn run32<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        y: &[f32],
        segs: &[(usize, usize, &BlockScale)],
        index0: u64,
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        let r = self.rounder32.as_ref().expect("checked by has_lane32");
        let mut codes = vec![0u16; y.len()];
        let st = r.encode(y, &mut codes, index0);
        self.finish_float(x, &codes, st, segs, v, c)
    }

    /// Round `y` (the scaled `x`) into the element; the segments `(start, end, scale)` say
    /// which scale each element has; `index0` is the tensor index of `x[0]` (stochastic
    /// rounding); `v` and `c` may be empty.
    #[inline(always)]
    pub(crate) fn run<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        y: &[f64],
        segs: &[(usize, usize, &BlockScale)],
        index0: u64,
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        match self.elem {
            Element::Float(_) => self.run_float(x, y, segs, index0, v, c),
            Element::Int(g) => self.run_int(&g, x, y, segs, index0, v, c),
        }
    }

    #[inline(always)]
    fn run_float<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        y: &[f64],
        segs: &[(usize, usize, &BlockScale)],
        index0: u64,
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        let r = self
            .rounder
            .as_ref()
            .expect("a float element has a rounder");
        let mut counts = Counts::default();
        if self.table.is_empty() {
            // wide elements: values only
            let mut q = vec![0f64; y.len()];
            let st = r.round(y, &mut q, index0).unwrap_or_default();
            counts.saturated = st.saturated;
            counts.nan = st.nan; // NaN inputs of a cast (scaled blocks take no NaN: y = 0)
            for &(a, e, s) in segs {
                for i in a..e {
                    let val = if s.y == Scaling::Nan {
                        counts.nan += 1;
                        f64::NAN
                    } else {
                        q[i] * s.d
                    };
                    counts.flushed += (val == 0.0 && x[i].to_f64() != 0.0) as u64;
                    if let Some(o) = v.get_mut(i) {
                        *o = O::from_f64(val);
                    }
                }
            }
            return counts;
        }
        let mut codes = vec![0u16; y.len()];
        let st = r.encode(y, &mut codes, index0);
        self.finish_float(x, &codes, st, segs, v, c)
    }

    /// Codes and values of a row from the element codes of its `y`.
    #[inline(always)]
    fn finish_float<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        codes: &[u16],
        st: crate::Status,
        segs: &[(usize, usize, &BlockScale)],
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        let mut counts = Counts {
            saturated: st.saturated,
            nan: st.nan, // NaN inputs of a cast (scaled blocks take no NaN: y = 0)
            ..Counts::default()
        };
        for &(a, e, s) in segs {
            if s.y == Scaling::Nan {
                counts.nan += (e - a) as u64;
                for i in a..e {
                    if let Some(o) = c.get_mut(i) {
                        *o = C::from_u64(self.nan_code as u64);
                    }
                    if let Some(o) = v.get_mut(i) {
                        *o = O::from_f64(f64::NAN);
                    }
                }
                continue;
            }
            let (ks, xs, d) = (&codes[a..e], &x[a..e], s.d);
            if !c.is_empty() {
                c[a..e]
                    .iter_mut()
                    .zip(ks)
                    .for_each(|(o, &k)| *o = C::from_u64(k as u64));
            }
            if !v.is_empty() {
                v[a..e]
                    .iter_mut()
                    .zip(ks)
                    .for_each(|(o, &k)| *o = O::from_f64(self.table[k as usize] * d));
            }
            // flushed: value 0 for a nonzero input; the product of a nonzero code's value and
            // `d` can only underflow to 0 for `d` below 2^-900 (then taken element by element)
            counts.flushed += if d == 0.0 {
                xs.iter().filter(|v| v.to_f64() != 0.0).count() as u64
            } else if d.abs() < crate::format::pow2(-900) || self.zero_mask.is_none() {
                ks.iter()
                    .zip(xs)
                    .filter(|(&k, v)| self.table[k as usize] * d == 0.0 && v.to_f64() != 0.0)
                    .count() as u64
            } else {
                let m = self.zero_mask.unwrap_or(0);
                ks.iter()
                    .zip(xs)
                    .map(|(&k, v)| ((k & m == 0) & (v.to_f64() != 0.0)) as u32)
                    .sum::<u32>() as u64
            };
        }
        counts
    }

    #[allow(clippy::too_many_arguments)]
    fn run_int<I: Float, O: Float, C: Code>(
        &self,
        g: &IntGrid,
        x: &[I],
        y: &[f64],
        segs: &[(usize, usize, &BlockScale)],
        index0: u64,
        v: &mut [O],
        c: &mut [C],
    ) -> Counts {
        let (kmin, kmax) = g.range();
        let up = crate::format::pow2(g.frac as i32);
        let down = crate::format::pow2(-(g.frac as i32));
        let mut counts = Counts::default();
        for &(a, e, s) in segs {
            for i in a..e {
                let (code, val) = if s.y == Scaling::Nan {
                    counts.nan += 1;
                    (0u16, f64::NAN)
                } else {
                    let t = round_int(y[i] * up, &self.opts, index0 + i as u64) + s.zero;
                    let k = t.clamp(kmin, kmax);
                    counts.saturated += (k != t) as u64;
                    let val = s.d * ((k - s.zero) * down);
                    counts.flushed += (val == 0.0 && x[i].to_f64() != 0.0) as u64;
                    (g.code(k as i64), val)
                };
                if let Some(o) = c.get_mut(i) {
                    *o = C::from_u64(code as u64);
                }
                if let Some(o) = v.get_mut(i) {
                    *o = O::from_f64(val);
                }
            }
        }
        counts
    }
}

/// The mask whose zero codes are exactly the codes of value zero in `table` (codes of the
/// values of a format with a zero: `+0` alone, or `±0` one sign bit apart).
fn zero_mask(table: &[f64]) -> Option<u16> {
    let n = table.len();
    let fits = |m: u16| (0..n).all(|k| ((k as u16) & m == 0) == (table[k] == 0.0));
    let all = (n.max(2) - 1) as u16;
    [all >> 1, all].into_iter().find(|&m| fits(m))
}

/// `t` rounded to an integer under the options' mode (stochastic: up with probability
/// `⌊f · 2^32⌋ / 2^32`, `f` the fraction, the bits of element `index`).
fn round_int(t: f64, o: &RoundOptions, index: u64) -> f64 {
    match o.mode {
        RoundingMode::NearestEven => t.round_ties_even(),
        RoundingMode::NearestAway => t.round(),
        RoundingMode::TowardZero => t.trunc(),
        RoundingMode::Up => t.ceil(),
        RoundingMode::Down => t.floor(),
        RoundingMode::ToOdd => {
            let f = t.floor();
            if f == t || f.rem_euclid(2.0) == 1.0 {
                f
            } else {
                f + 1.0
            }
        }
        RoundingMode::Stochastic => {
            let f = t.floor();
            let frac = ((t - f) * 4294967296.0).floor() as u64;
            let bits = random_bits(o.seed, o.index_offset + index) as u64;
            f + (bits < frac) as u64 as f64
        }
    }
}

/// Encode `x` given its decode scale `scale` (gfloat's `encode_block`): `y = RN64(x / scale)`
/// rounded once into `element` under `opts`, the codes into `codes` and the values
/// `decode(code) · scale` into `values` (either may be empty). Integer elements take
/// `k = round(y · 2^frac)`, clamped.
///
/// ```
/// use lowprec::scheme::{encode_block, Element};
/// use lowprec::{FloatFormat, Overflow, RoundOptions};
/// let e2m1 = Element::Float(FloatFormat::FP4_E2M1);
/// let sat = RoundOptions::default().overflow(Overflow::Saturate);
/// let (mut c, mut v) = ([0u16; 4], [0f64; 4]);
/// let n = encode_block(&[0.3f32, -1.0, 2.9, 100.0], &e2m1, 0.5, &sat, &mut c, &mut v).unwrap();
/// // y = 0.6, −2, 5.8, 200: 0.5, −2, 6 and 6 (saturated)
/// assert_eq!(c, [0x1, 0xc, 0x7, 0x7]);
/// assert_eq!(v, [0.25, -1.0, 3.0, 3.0]);
/// assert_eq!(n.saturated, 1);
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] when an output has the wrong length, the scale is not a
/// positive finite number, or a float element's codes are wider than 16 bits.
pub fn encode_block<I: Float>(
    x: &[I],
    element: &Element,
    scale: f64,
    opts: &RoundOptions,
    codes: &mut [u16],
    values: &mut [f64],
) -> Result<Counts> {
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "encode_block: the scale {scale} is not a positive finite number"
        )));
    }
    if (!codes.is_empty() && codes.len() != x.len())
        || (!values.is_empty() && values.len() != x.len())
    {
        return Err(Error::InvalidArgument(format!(
            "encode_block: {} inputs, but {} codes and {} values",
            x.len(),
            codes.len(),
            values.len()
        )));
    }
    if !codes.is_empty() && !element.has_codes() {
        return Err(Error::InvalidArgument(format!(
            "encode_block: {element} has more than 16 bits; ask for values only"
        )));
    }
    let step = Step::new(element, opts);
    let s = BlockScale {
        code: 0,
        value: scale,
        d: scale,
        zero: 0.0,
        y: Scaling::Div64(scale),
        clamped: false,
        alt: false,
    };
    let y: Vec<f64> = x.iter().map(|v| v.to_f64() / scale).collect();
    let mut c = step.run(x, &y, &[(0, x.len(), &s)], 0, values, codes);
    c.elements = x.len() as u64;
    c.blocks = 1;
    Ok(c)
}
