//! One rounded addition: the exact sum of two binary64 numbers, rounded once into the
//! accumulator's format.
//!
//! Why binary64 intermediates give the exact result. Let `S = fl64(a + b)` (round to nearest
//! even) and `E = (a + b) − S`, recovered exactly by Knuth's TwoSum (six binary64 operations,
//! exact for any finite `a`, `b` without overflow, subnormals included). If `E ≠ 0` and the
//! last bit of `S` is even, `S` is moved one binary64 ulp toward `E`: the result is
//! `RO(a + b)`, the exact sum rounded *to odd* at 53 bits. For a target with `p` significand
//! bits, rounding `RO(a + b)` once to the target in any mode (nearest even, nearest away,
//! toward zero, up, down, to odd) gives the same result as rounding the exact sum, whenever
//! `p + 2 ≤ 53` and the target's spacing at every magnitude is at least four binary64
//! spacings (Boldo and Melquiond, *Emulation of FMA and correctly rounded sums: proved
//! algorithms using rounding to odd*, IEEE TC 57(4), 2008): the odd last bit is a sticky bit
//! below the target's guard bit. lowprec therefore admits every signed format with zero and
//! with at most 50 fraction bits, `emax ≤ 1023` and smallest spacing `2^(emin − m) ≥ 2^−1072`
//! (every preset except binary64, every format that fits binary32 with room to spare).
//! Stochastic rounding reads the 32 fraction bits below the target's last bit; `RO` keeps
//! `52 − m` of them exactly and folds the rest into the sticky bit, so its decisions are those
//! of the exact sum whenever `m ≤ 20` (FP16, BF16, TF32, FP8, …) and differ with probability
//! below `2^(m − 52)` otherwise.
//!
//! A binary64 accumulator (binary64 itself) cannot use the trick (`p + 2 > 53`); there the
//! pair `(S, E)` decides the direction directly: `S` is already the nearest-even result, and
//! the other modes move `S` one ulp toward `E` when their rule says so (ties of nearest-away
//! are `|E|` equal to half the gap; stochastic rounding moves with probability
//! `floor(|E|/gap · 2^32)/2^32`).
//!
//! A plain binary64 sum followed by one rounding (what the seed `numfmt.py` does) is *double
//! rounding*: right for nearest-even when both operands already have `p ≤ 25` bits, wrong
//! otherwise (for example toward zero: `1 + (−2^−60)` rounds to `1` in binary64, and then stays
//! `1`, where the exact sum truncates to the number below 1).

use crate::error::{Error, Result};
use crate::format::{FloatFormat, Specials};
use crate::round::kernel::{
    mode_id, value_flags, value_lean, Plan, K_ADD, K_INT, RDN, RNA, RNE, RTO, RTZ, RUP,
};
use crate::round::random::{block_keys, hash32};
use crate::{Overflow, RoundOptions, RoundingMode};

/// Run `$body` with `$k` and `$mode` bound to the adder's kernel and mode as constants.
macro_rules! dispatch_mode {
    ($adder:expr, $k:ident, $mode:ident, $body:expr) => {{
        use $crate::accum::adder::K_NATIVE;
        use $crate::round::kernel::{K_ADD, K_INT, RDN, RNA, RNE, RTO, RTZ, RUP, SR};
        match ($adder.kernel, $adder.mode) {
            (K_ADD, _) => {
                const $k: u8 = K_ADD;
                const $mode: u8 = RNE;
                $body
            }
            (K_NATIVE, m) => match m {
                RNE => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = RNE;
                    $body
                }
                RNA => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = RNA;
                    $body
                }
                RTZ => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = RTZ;
                    $body
                }
                RUP => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = RUP;
                    $body
                }
                RDN => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = RDN;
                    $body
                }
                RTO => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = RTO;
                    $body
                }
                _ => {
                    const $k: u8 = K_NATIVE;
                    const $mode: u8 = SR;
                    $body
                }
            },
            (_, m) => match m {
                RNE => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = RNE;
                    $body
                }
                RNA => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = RNA;
                    $body
                }
                RTZ => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = RTZ;
                    $body
                }
                RUP => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = RUP;
                    $body
                }
                RDN => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = RDN;
                    $body
                }
                RTO => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = RTO;
                    $body
                }
                _ => {
                    const $k: u8 = K_INT;
                    const $mode: u8 = SR;
                    $body
                }
            },
        }
    }};
}
pub(crate) use dispatch_mode;

/// The kernel of a binary64 accumulator (TwoSum decides the direction).
pub(crate) const K_NATIVE: u8 = 3;

/// What rounded additions did, packed: `inexact + (overflow << 21) + (underflow << 42)`
/// (sums of at most 2^21 − 1 additions per field).
pub(crate) type Flags = u64;

/// The largest number of additions whose [`Flags`] may be summed before [`unpack`].
pub(crate) const FLAG_SPAN: usize = (1 << 21) - 1;

/// Packed flags of one addition.
#[inline(always)]
const fn pack(inexact: bool, overflow: bool, underflow: bool) -> Flags {
    inexact as u64 + ((overflow as u64) << 21) + ((underflow as u64) << 42)
}

/// Summed packed flags as counts.
pub(crate) fn unpack(f: Flags) -> crate::Status {
    crate::Status {
        inexact: f & FLAG_SPAN as u64,
        overflow: (f >> 21) & FLAG_SPAN as u64,
        underflow: f >> 42,
        ..crate::Status::default()
    }
}

/// An accumulator format and rounding options, prepared for exact-then-round additions.
///
/// ```
/// use lowprec::accum::Adder;
/// use lowprec::{FloatFormat, RoundOptions, RoundingMode};
/// let bf16 = Adder::new(&FloatFormat::BF16, &RoundOptions::default())?;
/// assert_eq!(bf16.add(256.0, 1.0, 0), 256.0); // 257 is a tie: to even 256
/// let rtz = Adder::new(&FloatFormat::BF16, &RoundOptions::new(RoundingMode::TowardZero))?;
/// assert_eq!(rtz.add(1.0, -2f64.powi(-60), 0), 1.0 - 2f64.powi(-8)); // exact, then truncated
/// # Ok::<(), lowprec::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Adder {
    fmt: FloatFormat,
    opts: RoundOptions,
    pub(crate) plan: Plan<f64>,
    pub(crate) kernel: u8,
    pub(crate) mode: u8,
}

impl Adder {
    /// Prepare additions rounded into `fmt` under `opts`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a format that cannot hold a running sum (unsigned or
    /// without zero) or that binary64 intermediates cannot round exactly (more than 50
    /// fraction bits other than binary64 itself, or a range beyond binary64's).
    pub fn new(fmt: &FloatFormat, opts: &RoundOptions) -> Result<Adder> {
        check_accumulator(fmt)?;
        let plan = Plan::<f64>::new(fmt, opts);
        let kernel = if is_binary64(fmt) {
            K_NATIVE
        } else if plan.kernel == K_ADD {
            K_ADD
        } else {
            K_INT
        };
        Ok(Adder {
            fmt: *fmt,
            opts: *opts,
            plan,
            kernel,
            mode: mode_id(opts.mode),
        })
    }

    /// The accumulator format.
    pub fn format(&self) -> &FloatFormat {
        &self.fmt
    }

    /// The rounding options.
    pub fn options(&self) -> &RoundOptions {
        &self.opts
    }

    /// `round(a + b)`: the exact sum rounded once into the format. `index` numbers the
    /// rounding for stochastic rounding (it draws [`crate::round::random_bits`]`(seed, index)`).
    pub fn add(&self, a: f64, b: f64, index: u64) -> f64 {
        self.add_flags(a, b, index).0
    }

    /// [`Adder::add`] with what the rounding did.
    pub(crate) fn add_flags(&self, a: f64, b: f64, index: u64) -> (f64, Flags) {
        let rnd = if self.opts.mode == RoundingMode::Stochastic {
            let k = block_keys(self.opts.seed, (index >> 32) as u32);
            hash32(index as u32, k[0], k[1]) as u64
        } else {
            0
        };
        dispatch_mode!(self, K, MODE, self.step::<K, MODE>(a, b, rnd))
    }

    /// One rounded addition with the kernel and mode as constants.
    #[inline(always)]
    pub(crate) fn step<const K: u8, const MODE: u8>(
        &self,
        a: f64,
        b: f64,
        rnd: u64,
    ) -> (f64, Flags) {
        if K == K_NATIVE {
            return add_binary64::<MODE>(&self.opts, a, b, rnd);
        }
        value_flags::<K, MODE>(&self.plan, round_to_odd_sum::<MODE>(a, b), rnd)
    }

    /// [`Adder::step`] without the overflow and underflow counts: the value, whether it is
    /// inexact, and an alarm under which the value may be wrong and `step` must redo it.
    #[inline(always)]
    pub(crate) fn step_lean<const K: u8, const MODE: u8>(
        &self,
        a: f64,
        b: f64,
        rnd: u64,
    ) -> (f64, bool, bool) {
        if K == K_NATIVE {
            let (v, f) = add_binary64::<MODE>(&self.opts, a, b, rnd);
            return (v, f & 1 == 1, f > 1);
        }
        value_lean::<K, MODE>(&self.plan, round_to_odd_sum::<MODE>(a, b), rnd)
    }
}

/// The bits of `RO(a + b)`: the exact sum rounded to odd at 53 bits (an exact zero sum under
/// rounding down carries IEEE 754's sign).
#[inline(always)]
fn round_to_odd_sum<const MODE: u8>(a: f64, b: f64) -> u64 {
    {
        let s = a + b;
        let bb = s - a;
        let e = (a - (s - bb)) + (b - bb);
        let sb = s.to_bits();
        // Round to odd: a nonzero, finite error and an even last bit move S toward E.
        let nudge = (e.abs() > 0.0) & (sb & 1 == 0);
        let away = ((e.to_bits() ^ sb) >> 63) == 0;
        let step = if away { 1u64 } else { u64::MAX };
        let mut y = if nudge { sb.wrapping_add(step) } else { sb };
        if MODE == RDN {
            y |= exact_zero_sign(s, a, b);
        }
        y
    }
}

/// IEEE 754 §6.3: an exact zero sum of operands that are not both +0 is −0 when rounding
/// down. Returns the sign bit to OR in.
#[inline(always)]
fn exact_zero_sign(s: f64, a: f64, b: f64) -> u64 {
    let zero = s == 0.0;
    let not_both_pos0 = (a.to_bits() | b.to_bits()) != 0;
    ((zero & not_both_pos0) as u64) << 63
}

/// Exact-then-round addition into binary64 itself, from TwoSum's `(S, E)`.
#[inline(always)]
fn add_binary64<const MODE: u8>(opts: &RoundOptions, a: f64, b: f64, rnd: u64) -> (f64, Flags) {
    let s = a + b;
    if !s.is_finite() {
        let over = a.is_finite() && b.is_finite();
        let v = if over { overflow_binary64(opts, s) } else { s };
        return (v, pack(over, over, false));
    }
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    if e == 0.0 {
        let v = if MODE == RDN {
            f64::from_bits(s.to_bits() | exact_zero_sign(s, a, b))
        } else {
            s
        };
        return (v, 0);
    }
    let sb = s.to_bits();
    let away = ((e.to_bits() ^ sb) >> 63) == 0;
    let toward = f64::from_bits(if away { sb + 1 } else { sb - 1 });
    let gap = (toward - s).abs();
    let move_it = match MODE {
        RNE => false,
        RNA => away && 2.0 * e.abs() == gap,
        RTZ => !away,
        RUP => e > 0.0,
        RDN => e < 0.0,
        RTO => sb & 1 == 0,
        _ => {
            let f = ((e.abs() / gap) * 4294967296.0).floor() as u64;
            f + (rnd & 0xffff_ffff) >= 1 << 32
        }
    };
    let mut v = if move_it { toward } else { s };
    let overflow = v.is_infinite();
    if overflow && opts.overflow == Overflow::Saturate {
        v = s;
    }
    (v, pack(true, overflow, v.abs() < f64::MIN_POSITIVE))
}

/// The result of a finite binary64 sum that overflowed (`s` is ±Inf), by IEEE 754 §7.4.
fn overflow_binary64(opts: &RoundOptions, s: f64) -> f64 {
    let neg = s < 0.0;
    let max = if neg { -f64::MAX } else { f64::MAX };
    if opts.overflow == Overflow::Saturate {
        return max;
    }
    match opts.mode {
        RoundingMode::TowardZero | RoundingMode::ToOdd => max,
        RoundingMode::Up if neg => max,
        RoundingMode::Down if !neg => max,
        _ => s,
    }
}

fn is_binary64(fmt: &FloatFormat) -> bool {
    fmt.exp_bits() == 11
        && fmt.man_bits() == 52
        && fmt.emin() == -1022
        && fmt.specials() == Specials::Ieee
        && fmt.is_signed()
        && fmt.has_zero()
}

/// Whether `fmt` can be an accumulator (see the module docs for why these limits).
fn check_accumulator(fmt: &FloatFormat) -> Result<()> {
    let name = fmt.name();
    if !fmt.is_signed() || !fmt.has_zero() {
        return Err(Error::InvalidArgument(format!(
            "{name} cannot hold a running sum (it is unsigned or has no zero); use a signed format such as bf16 or fp32"
        )));
    }
    if is_binary64(fmt) {
        return Ok(());
    }
    let m = fmt.man_bits() as i64;
    if m > 50 || fmt.emax() > 1023 || (fmt.emin() as i64 - m) < -1072 {
        return Err(Error::InvalidArgument(format!(
            "{name} is too wide or too long-ranged for exact binary64 intermediates (at most 50 fraction bits, emax ≤ 1023, smallest spacing ≥ 2^-1072); use fp64 or a narrower format"
        )));
    }
    Ok(())
}
