//! The rounding kernels: branch-free element functions over the input's bits, parameterised
//! by a [`Plan`] (the format and the options turned into lane constants).
//!
//! Three element kernels, chosen per call by [`Plan::new`]; all three give identical bits
//! (the tests compare each with a slow exact reference, and with each other):
//!
//! * **integer** (every format, every mode): the significand `sig` of `|x|` with its implicit
//!   bit, the shift `d = (p_in − 1 − m) + max(0, emin_field − e_field)` that aligns it to the
//!   target's quantum (larger in the target's subnormal range), quotient `q = sig >> d` and
//!   remainder; the mode decides the increment; the magnitude ordinal is
//!   `ord = ((max(e, emin) − emin) << m) + q'`, which is the target's magnitude code for
//!   formats with zero (a carry into the next binade is just `q' = 2^(m+1)`), and overflow is
//!   `ord > max_mag`, decided after rounding as IEEE 754 requires.
//! * **float-add** (round to nearest even, targets whose range sits inside the input's):
//!   with `c = 2^(max(e, emin) + p_in − 1 − m)`, the IEEE sum `|x| + c` rounds `|x|` to the
//!   target's quantum in hardware (ties to even), its mantissa field is `q'` and `(|x| + c) − c`
//!   the rounded value: a handful of instructions per element.
//! * **pattern** (round to nearest even, targets with the input's exponent field: bf16 and
//!   tf32 from binary32): `(bits + 2^(d−1) − 1 + lsb) >> d`, subnormals included.

use super::random::{block_keys, hash32};
use super::types::{Float, Word};
use super::{Overflow, RoundOptions, RoundingMode, Status};
use crate::format::{FloatFormat, Specials};

pub(crate) const RNE: u8 = 0;
pub(crate) const RNA: u8 = 1;
pub(crate) const RTZ: u8 = 2;
pub(crate) const RUP: u8 = 3;
pub(crate) const RDN: u8 = 4;
pub(crate) const RTO: u8 = 5;
pub(crate) const SR: u8 = 6;

pub(crate) const K_INT: u8 = 0;
pub(crate) const K_ADD: u8 = 1;
pub(crate) const K_PAT: u8 = 2;

pub(crate) const fn mode_id(m: RoundingMode) -> u8 {
    match m {
        RoundingMode::NearestEven => RNE,
        RoundingMode::NearestAway => RNA,
        RoundingMode::TowardZero => RTZ,
        RoundingMode::Up => RUP,
        RoundingMode::Down => RDN,
        RoundingMode::ToOdd => RTO,
        RoundingMode::Stochastic => SR,
    }
}

/// Whether binary32 inputs can be rounded in 32-bit lanes for this format (else they are
/// widened to binary64, exactly, first). The largest ordinal (code magnitude plus `2^m` for
/// a format without zero), and one past it, must fit a 32-bit lane: a 32-bit unsigned format
/// without zero (`ue9m23b0:fn:nozero`) does not, and takes the binary64 lanes.
pub(crate) fn f32_native(fmt: &FloatFormat, values: bool) -> bool {
    let nozero_min = if fmt.has_zero() {
        0
    } else {
        1u64 << fmt.man_bits()
    };
    fmt.man_bits() <= 23
        && fmt.emin() >= -126
        && fmt.bits() <= 32
        && fmt.max_mag() + nozero_min < u64::from(u32::MAX)
        && (!values || fmt.fits_f32())
}

/// A format and options as lane constants for input type `I`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan<I: Float> {
    pub kernel: u8,
    pub mode: u8,
    /// Whether the format or policy needs the full kernel (unsigned, no zero, or an overflow
    /// result that depends on the sign).
    pub full: bool,
    pub seed: u64,
    // input layout
    abs: I::Bits,
    inf: I::Bits,
    mant: I::Bits,
    mant_mask: I::Bits,
    top: I::Bits, // WIDTH - 1
    // integer kernel
    emin_field: I::Bits,
    base_d2: I::Bits,
    max_d2: I::Bits,
    m: I::Bits,
    nozero_min: I::Bits,
    max_ord: I::Bits,
    pow2_neg_m: I,
    sr_mask: I::Bits,
    // float-add kernel (fields in place)
    a_emin: I::Bits,
    a_eclamp: I::Bits,
    a_shift: I::Bits,
    a_dshift: I::Bits,
    exp_mask: I::Bits,
    // pattern kernel
    p_d: I::Bits,
    p_mask: I::Bits,
    // finishing
    min_normal: I::Bits,
    sign_shift: I::Bits,
    signed_keep: I::Bits,
    zero_sign_keep: I::Bits,
    unsigned: I::Bits,
    nozero: I::Bits,
    code_ovf: [I::Bits; 2],
    code_inf: [I::Bits; 2],
    code_nan: [I::Bits; 2],
    code_invalid: I::Bits,
    val_ovf: [I::Bits; 2],
    val_inf: [I::Bits; 2],
    val_nan: [I::Bits; 2],
    sat_ovf: [I::Bits; 2],
    sat_inf: I::Bits,
    ovf_mag: I::Bits,
    ovf_vmag: I::Bits,
    sign_down: I::Bits,
    sign_bit: I::Bits,
}

fn w<W: Word>(v: u64) -> W {
    W::from_u64(v)
}

impl<I: Float> Plan<I> {
    /// The plan for `fmt` and `opts`. Requires `I = f64`, or `f32_native(fmt, _)`.
    pub(crate) fn new(fmt: &FloatFormat, opts: &RoundOptions) -> Self {
        let width = I::Bits::BITS as u64;
        let mant = I::MANT as u64;
        let bias_in = I::BIAS as i64;
        let m = fmt.man_bits() as u64;
        debug_assert!(m <= mant && fmt.emin() as i64 + bias_in >= 1);
        let mode = mode_id(opts.mode);
        let emin_field = (fmt.emin() as i64 + bias_in) as u64;
        let nozero_min = if fmt.has_zero() { 0 } else { 1u64 << m };
        let max_ord = fmt.max_mag() + nozero_min;
        debug_assert!(
            max_ord < u64::MAX >> (64 - width),
            "ordinals overflow the lane"
        );

        // Results beyond max, for a positive (0) and a negative (1) input.
        let max_code = |neg: bool| fmt.max_mag() | if neg { fmt.sign_mask() } else { 0 };
        let away = |neg: bool| {
            fmt.inf_code(neg)
                .or(fmt.nan_code(neg))
                .unwrap_or_else(|| max_code(neg))
        };
        let ovf_code = |neg: bool| -> u64 {
            if opts.overflow == Overflow::Saturate || fmt.specials() == Specials::None {
                return max_code(neg);
            }
            match opts.mode {
                RoundingMode::NearestEven
                | RoundingMode::NearestAway
                | RoundingMode::Stochastic => away(neg),
                RoundingMode::TowardZero | RoundingMode::ToOdd => max_code(neg),
                RoundingMode::Up => {
                    if neg {
                        max_code(neg)
                    } else {
                        away(neg)
                    }
                }
                RoundingMode::Down => {
                    if neg {
                        away(neg)
                    } else {
                        max_code(neg)
                    }
                }
            }
        };
        let inf_code = |neg: bool| -> u64 {
            if opts.overflow == Overflow::Saturate || fmt.specials() == Specials::None {
                max_code(neg)
            } else {
                away(neg)
            }
        };
        let nan_code = |neg: bool| fmt.nan_code(neg).unwrap_or(0);
        let val = |code: u64, neg: bool| -> u64 {
            let v = fmt.decode(code);
            let v = if v.is_nan() && neg { -f64::NAN } else { v };
            I::from_f64(v).to_bits().to_u64()
        };
        let nan_val = |neg: bool| {
            I::from_f64(if neg { -f64::NAN } else { f64::NAN })
                .to_bits()
                .to_u64()
        };

        // float-add kernel: c = 2^(max(e, emin) + mant − m), e clamped at emax + 2.
        let eclamp = fmt.emax() as i64 + 2 + bias_in;
        let exp_max_field = 2 * bias_in; // largest normal exponent field of I
        let add_ok = opts.mode == RoundingMode::NearestEven
            && fmt.has_zero()
            && m < mant
            && eclamp + (mant - m) as i64 <= exp_max_field;
        let pat_ok = opts.mode == RoundingMode::NearestEven
            && fmt.has_zero()
            && fmt.is_signed()
            && m < mant
            && emin_field == 1
            && fmt.emax() as i64 >= bias_in;
        let kernel = if pat_ok {
            K_PAT
        } else if add_ok {
            K_ADD
        } else {
            K_INT
        };
        let sr_r = match opts.sr_bits {
            0 => 32,
            r => r.min(32) as u64,
        };
        let min_normal_bits = I::from_f64(fmt.min_normal()).to_bits().to_u64();
        let fnuz = fmt.is_signed() && fmt.has_zero() && !fmt.has_negative_zero();
        let symmetric = (ovf_code(false) | fmt.sign_mask()) == ovf_code(true);
        let full = !fmt.is_signed() || !fmt.has_zero() || !symmetric;
        Plan {
            kernel,
            mode,
            full,
            ovf_mag: w(ovf_code(false)),
            sign_down: w(width - fmt.bits() as u64),
            sign_bit: w(fmt.sign_mask()),
            ovf_vmag: w(val(ovf_code(false), false)),
            seed: opts.seed,
            abs: w(u64::MAX >> (65 - width)),
            inf: w(((2 * bias_in as u64) + 1) << mant),
            mant: w(mant),
            mant_mask: w((1u64 << mant) - 1),
            top: w(width - 1),
            emin_field: w(emin_field),
            base_d2: w(mant - m + 1),
            max_d2: w(width - 1),
            m: w(m),
            nozero_min: w(nozero_min),
            max_ord: w(max_ord),
            pow2_neg_m: I::from_f64(crate::format::pow2(-(m as i32))),
            sr_mask: w((u32::MAX << (32 - sr_r)) as u64),
            a_emin: w(emin_field << mant),
            a_eclamp: w((eclamp.max(1) as u64) << mant),
            a_shift: w((mant - m) << mant),
            a_dshift: w(mant - m),
            exp_mask: w(((2 * bias_in as u64) + 1) << mant),
            p_d: w(mant - m),
            p_mask: w((1u64 << (mant - m)) - 1),
            min_normal: w(min_normal_bits),
            sign_shift: w(fmt.bits() as u64 - 1),
            signed_keep: w(if fmt.is_signed() { u64::MAX } else { 0 }),
            zero_sign_keep: w(if fnuz { 0 } else { u64::MAX }),
            unsigned: w(!fmt.is_signed() as u64),
            nozero: w(!fmt.has_zero() as u64),
            code_ovf: [w(ovf_code(false)), w(ovf_code(true))],
            code_inf: [w(inf_code(false)), w(inf_code(true))],
            code_nan: [w(nan_code(false)), w(nan_code(true))],
            code_invalid: w(nan_code(false)),
            val_ovf: [w(val(ovf_code(false), false)), w(val(ovf_code(true), true))],
            val_inf: [w(val(inf_code(false), false)), w(val(inf_code(true), true))],
            val_nan: [w(nan_val(false)), w(nan_val(true))],
            sat_ovf: [
                w((ovf_code(false) == max_code(false)) as u64),
                w((ovf_code(true) == max_code(true)) as u64),
            ],
            sat_inf: w((inf_code(false) == max_code(false)) as u64),
        }
    }
}

impl Plan<f32> {
    /// The constants of the AVX2 byte-code kernel ([`crate::simd::cast8`]), which is this
    /// plan's lean float-add kernel with intrinsics: for round to nearest even into `fmt`
    /// (this plan's format) of at most 8 bits with a zero, signed and taking the lean kernel,
    /// or unsigned (the full kernel only for its negative inputs, which the byte kernel
    /// sends back); else `None`.
    pub(crate) fn cast8(&self, fmt: &FloatFormat) -> Option<crate::simd::cast8::Cast8> {
        let unsigned = !fmt.is_signed() && fmt.has_zero();
        if self.kernel != K_ADD || self.mode != RNE || (self.full && !unsigned) || fmt.bits() > 8 {
            return None;
        }
        // the smallest |x| whose ordinal overflows: ordinals grow with |x|, so a binary
        // search with this kernel's own rounding finds it (the infinity's bits if none)
        let over = |a: u32| core::<f32, K_ADD, RNE>(self, a, 0, 0).0 > self.max_ord;
        let (mut lo, mut hi) = (0u32, self.inf);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if over(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(crate::simd::cast8::Cast8 {
            exp_mask: self.exp_mask,
            a_emin: self.a_emin,
            a_shift: self.a_shift,
            dshift: self.a_dshift,
            sign_bit: self.sign_bit,
            zero_keeps_sign: self.zero_sign_keep != 0,
            min_normal: self.min_normal,
            over_min: lo,
            a_eclamp: self.a_eclamp,
            max_ord: self.max_ord,
            unsigned,
        })
    }
}

/// One rounded element: its code, its value (as the input type) and what happened.
#[derive(Clone, Copy)]
pub(crate) struct Elem<I: Float> {
    pub code: I::Bits,
    pub value: I,
    pub inexact: I::Bits,
    pub underflow: I::Bits,
    pub flushed: I::Bits,
    pub nan: I::Bits,
    pub inf: I::Bits,
    pub invalid: I::Bits,
    pub overflow: I::Bits,
    pub saturated: I::Bits,
}

#[inline(always)]
fn pick<W: Word>(neg: bool, v: [W; 2]) -> W {
    W::sel(neg, v[1], v[0])
}

/// The rounding proper: from `|x|` (bits `a`, sign `negw`) to the rounded magnitude ordinal,
/// whether `|x|` was off the grid, and the rounded magnitude as a value of `I` (valid for
/// finite inputs whose ordinal is at least `nozero_min` and does not overflow).
#[inline(always)]
fn core<I: Float, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    a: I::Bits,
    negw: I::Bits,
    rnd: I::Bits,
) -> (I::Bits, bool, I) {
    let one = <I::Bits as Word>::ONE;
    let zero = <I::Bits as Word>::ZERO;
    match K {
        K_PAT => {
            let lsb = a.shr(p.p_d) & one;
            let r = a.wadd(p.p_mask.shr(one)).wadd(lsb);
            let mag = r.shr(p.p_d);
            (mag, (a & p.p_mask) != zero, I::from_bits(mag.shl(p.p_d)))
        }
        K_ADD => {
            let ef = (a & p.exp_mask).max(p.a_emin).min(p.a_eclamp);
            let cb = ef.wadd(p.a_shift);
            let c = I::from_bits(cb);
            let s = I::from_bits(a).add(c);
            let y = s.sub(c);
            let ord = (ef.wsub(p.a_emin))
                .shr(p.a_dshift)
                .wadd(s.to_bits().wsub(cb));
            (ord, y.to_bits() != a, y)
        }
        _ => {
            let e_in = a.shr(p.mant);
            let eeff = e_in.max(one);
            let implicit = <I::Bits as Word>::from_bool(e_in != zero).shl(p.mant);
            let sig2 = ((a & p.mant_mask) | implicit).shl(one);
            let ef = eeff.max(p.emin_field);
            let d2_true = p.base_d2.wadd(ef.wsub(eeff));
            let d2 = d2_true.min(p.max_d2);
            let mask = one.shl(d2).wsub(one);
            let q = sig2.shr(d2);
            let rem = sig2 & mask;
            let half = mask.shr(one) + one;
            let carry = |v: I::Bits| v.shr(d2);
            let qr = match MODE {
                RNE => q + carry(rem + mask.shr(one) + (q & one)),
                RNA => q + carry(rem + half),
                RTZ => q,
                RUP => q + (carry(rem + mask) & (negw ^ one)),
                RDN => q + (carry(rem + mask) & negw),
                RTO => q | carry(rem + mask),
                _ => {
                    // floor(frac · 2^32), frac = rem / 2^d2_true, then add the random word.
                    let b32 = <I::Bits as Word>::from_u64(32);
                    let up = d2_true <= b32;
                    let sh_l = b32.wsub(d2_true).min(p.top);
                    let sh_r = d2_true.wsub(b32).min(p.top);
                    let big = d2_true.wsub(b32) > p.top;
                    let f_l = rem.shl(sh_l);
                    let f_r = <I::Bits as Word>::sel(big, zero, rem.shr(sh_r));
                    let f32b = <I::Bits as Word>::sel(up, f_l, f_r) & p.sr_mask;
                    q + carry32(f32b, rnd & p.sr_mask)
                }
            };
            let ord = (ef.wsub(p.emin_field)).shl(p.m).wadd(qr);
            let qv = qr.max(p.nozero_min);
            let v = I::from_count(qv)
                .mul(p.pow2_neg_m)
                .mul(I::from_bits(ef.shl(p.mant)));
            (ord, rem != zero, v)
        }
    }
}

/// The element kernel with every policy (any format): code, value and all counts.
#[inline(always)]
pub(crate) fn elem<I: Float, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    x: I::Bits,
    rnd: I::Bits,
) -> Elem<I> {
    let one = <I::Bits as Word>::ONE;
    let zero = <I::Bits as Word>::ZERO;
    let a = x & p.abs;
    let negw = x.shr(p.top);
    let neg = negw == one;
    let finite = a < p.inf;
    let (ord, rem_nz, vmag) = core::<I, K, MODE>(p, a, negw, rnd);

    let ord_c = ord.max(p.nozero_min);
    let mag = ord_c - p.nozero_min;
    let over = ord > p.max_ord;
    let nan = a > p.inf;
    let inf = a == p.inf;
    let invalid_neg = neg & (p.unsigned == one) & (a != zero) & !nan;
    let invalid_zero = (p.nozero == one) & (a == zero);
    let invalid = invalid_neg | invalid_zero;

    let keep = <I::Bits as Word>::sel(mag == zero, p.zero_sign_keep, !zero) & p.signed_keep;
    let mut code = mag | (negw.shl(p.sign_shift) & keep);
    code = <I::Bits as Word>::sel(over, pick(neg, p.code_ovf), code);
    code = <I::Bits as Word>::sel(inf, pick(neg, p.code_inf), code);
    code = <I::Bits as Word>::sel(nan, pick(neg, p.code_nan), code);
    code = <I::Bits as Word>::sel(invalid, p.code_invalid, code);

    let mut vb = vmag.to_bits() | (negw.shl(p.top) & keep);
    vb = <I::Bits as Word>::sel(over, pick(neg, p.val_ovf), vb);
    vb = <I::Bits as Word>::sel(inf, pick(neg, p.val_inf), vb);
    vb = <I::Bits as Word>::sel(nan | invalid, pick(neg, p.val_nan), vb);

    let b = <I::Bits as Word>::from_bool;
    let fin_over = finite & over & !invalid;
    Elem {
        code,
        value: I::from_bits(vb),
        inexact: b(finite & (rem_nz | over | invalid)),
        underflow: b(finite & rem_nz & (a < p.min_normal) & !invalid),
        flushed: b(finite & (ord == zero) & (a != zero) & (p.nozero != one) & !invalid),
        nan: b(nan),
        inf: b(inf),
        invalid: b(invalid),
        overflow: b(fin_over),
        saturated: b(fin_over) & pick(neg, p.sat_ovf) | (b(inf & !invalid) & p.sat_inf),
    }
}

/// The value kernel of a running sum (binary64 lanes): the rounded value and the packed
/// counts `inexact + (overflow << 21) + (underflow << 42)`, for signed formats with zero
/// (fnuz included) and any input, NaN and ±Inf too (they give the values [`elem`] gives).
#[inline(always)]
pub(crate) fn value_flags<const K: u8, const MODE: u8>(
    p: &Plan<f64>,
    x: u64,
    rnd: u64,
) -> (f64, u64) {
    let a = x & p.abs;
    let neg = (x >> 63) == 1;
    let (ord, rem_nz, vmag) = core::<f64, K, MODE>(p, a, x >> 63, rnd);
    let over = ord > p.max_ord;
    let finite = a < p.inf;
    let keep = if ord == 0 { p.zero_sign_keep } else { u64::MAX };
    let mut vb = vmag.to_bits() | (x & !p.abs & keep);
    vb = u64::sel(over, pick(neg, p.val_ovf), vb);
    let special = u64::sel(a == p.inf, pick(neg, p.val_inf), pick(neg, p.val_nan));
    vb = u64::sel(finite, vb, special);
    let flags = u64::from_bool(finite & (rem_nz | over))
        + u64::sel(finite & over, 1 << 21, 0)
        + u64::sel(finite & rem_nz & (a < p.min_normal), 1 << 42, 0);
    (f64::from_bits(vb), flags)
}

/// The lean value kernel of a running sum: the rounded value, whether it is inexact, and an
/// alarm (overflow, a NaN or ±Inf input, or an inexact result below the smallest normal)
/// under which the value may be wrong and [`value_flags`] must redo the work. For the
/// formats [`value_flags`] takes.
#[inline(always)]
pub(crate) fn value_lean<const K: u8, const MODE: u8>(
    p: &Plan<f64>,
    x: u64,
    rnd: u64,
) -> (f64, bool, bool) {
    let a = x & p.abs;
    let (ord, rem_nz, vmag) = core::<f64, K, MODE>(p, a, x >> 63, rnd);
    let alarm = (ord > p.max_ord) | (a >= p.inf) | (rem_nz & (a < p.min_normal));
    let keep = if ord == 0 { p.zero_sign_keep } else { u64::MAX };
    let vb = vmag.to_bits() | (x & !p.abs & keep);
    (f64::from_bits(vb), rem_nz, alarm)
}

/// The lean element kernel for signed formats with a zero (with or without −0) and symmetric
/// overflow results: exact for finite inputs; NaN and Inf inputs are fixed up afterwards.
/// Returns (code, value, inexact, underflow, flushed, overflow, nonfinite).
#[inline(always)]
fn lean<I: Float, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    x: I::Bits,
    rnd: I::Bits,
) -> (I::Bits, I, bool, bool, bool, bool, bool) {
    let a = x & p.abs;
    let negw = x.shr(p.top);
    let (ord, rem_nz, vmag) = core::<I, K, MODE>(p, a, negw, rnd);
    let over = ord > p.max_ord;
    // a format without −0 (fnuz, P3109) keeps no sign on a result rounded to zero, as in
    // [`elem`]; an overflow is never zero
    let keep = <I::Bits as Word>::sel(
        ord == <I::Bits as Word>::ZERO,
        p.zero_sign_keep,
        !<I::Bits as Word>::ZERO,
    );
    let code =
        <I::Bits as Word>::sel(over, p.ovf_mag, ord) | (x.shr(p.sign_down) & p.sign_bit & keep);
    let vb = <I::Bits as Word>::sel(over, p.ovf_vmag, vmag.to_bits()) | (x & !p.abs & keep);
    let inexact = rem_nz | over;
    (
        code,
        I::from_bits(vb),
        inexact,
        rem_nz & (a < p.min_normal),
        rem_nz & (ord == <I::Bits as Word>::ZERO),
        over,
        a >= p.inf,
    )
}

/// The carry out of bit 31 of `a + b` for two values below 2^32.
#[inline(always)]
fn carry32<W: Word>(a: W, b: W) -> W {
    if W::BITS == 32 {
        W::from_bool(a.wadd(b) < a)
    } else {
        (a + b).shr(W::from_u64(32))
    }
}

/// The random word of element `j` of a call whose first index has low half `lo0` (zero
/// unless the mode is stochastic).
#[inline(always)]
fn rnd_at<W: Word, const MODE: u8>(keys: &[u32; 2], lo0: u32, j: usize) -> W {
    if MODE == SR {
        W::from_u64(hash32(lo0.wrapping_add(j as u32), keys[0], keys[1]) as u64)
    } else {
        W::ZERO
    }
}

/// One chunk of work for [`crate::simd::dispatch`].
struct Drive<'a, I: Float, T, F, const K: u8, const MODE: u8, const FULL: bool> {
    p: &'a Plan<I>,
    src: &'a [I],
    dst: &'a mut [T],
    index0: u64,
    out: F,
}

impl<I: Float, T, F: Fn(I::Bits, I) -> T, const K: u8, const MODE: u8, const FULL: bool>
    crate::simd::Kernel for Drive<'_, I, T, F, K, MODE, FULL>
{
    type Output = Status;
    #[inline(always)]
    fn run(self) -> Status {
        if FULL {
            drive_full::<I, T, K, MODE>(self.p, self.src, self.dst, self.index0, self.out)
        } else {
            drive_lean::<I, T, K, MODE>(self.p, self.src, self.dst, self.index0, self.out)
        }
    }
}

#[inline(always)]
fn keys_for(seed: u64, index0: u64, sr: bool) -> [u32; 2] {
    if sr {
        block_keys(seed, (index0 >> 32) as u32)
    } else {
        [0; 2]
    }
}

#[inline(always)]
fn drive_lean<I: Float, T, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(I::Bits, I) -> T,
) -> Status {
    // A local copy: the loop's stores cannot alias it, so its fields stay in registers.
    let plan = *p;
    let p = &plan;
    let keys = keys_for(p.seed, index0, MODE == SR);
    let lo0 = index0 as u32;
    let zero = <I::Bits as Word>::ZERO;
    // Two packed counters with 16-bit fields (a call sees at most MAX_CALL < 2^16 elements):
    // inexact + (overflow << 16), and underflow + (flushed << 16); overflow implies inexact
    // and flushed implies underflow, so each is two selects and one add.
    let one = <I::Bits as Word>::ONE;
    let both = <I::Bits as Word>::from_u64(0x1_0001);
    let (mut acc_i, mut acc_u, mut amax) = (zero, zero, zero);
    for (j, (d, s)) in dst.iter_mut().zip(src).enumerate() {
        let rnd = rnd_at::<I::Bits, MODE>(&keys, lo0, j);
        let x = s.to_bits();
        let (code, value, ie, uf, fl, ov, _) = lean::<I, K, MODE>(p, x, rnd);
        *d = out(code, value);
        acc_i = acc_i + <I::Bits as Word>::sel(ie, <I::Bits as Word>::sel(ov, both, one), zero);
        acc_u = acc_u + <I::Bits as Word>::sel(uf, <I::Bits as Word>::sel(fl, both, one), zero);
        amax = amax.max(x & p.abs);
    }
    let (ie, ov) = (acc_i.to_u64() & 0xffff, acc_i.to_u64() >> 16);
    let (uf, fl) = (acc_u.to_u64() & 0xffff, acc_u.to_u64() >> 16);
    let mut st = Status {
        inexact: ie,
        underflow: uf,
        flushed: fl,
        overflow: ov,
        saturated: ov * p.sat_ovf[0].to_u64(),
        ..Status::default()
    };
    if amax >= p.inf {
        fix_nonfinite::<I, T, K, MODE>(p, src, dst, index0, &out, &mut st);
    }
    st
}

/// Redo the NaN and Inf elements of a chunk with the full kernel, and correct the counts.
#[inline(never)]
fn fix_nonfinite<I: Float, T, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: &impl Fn(I::Bits, I) -> T,
    st: &mut Status,
) {
    let keys = keys_for(p.seed, index0, MODE == SR);
    for (j, (d, s)) in dst.iter_mut().zip(src).enumerate() {
        if s.to_bits() & p.abs < p.inf {
            continue;
        }
        let rnd = rnd_at::<I::Bits, MODE>(&keys, index0 as u32, j);
        let (_, _, ie, _, fl, ov, _) = lean::<I, K, MODE>(p, s.to_bits(), rnd);
        st.inexact -= ie as u64;
        st.flushed -= fl as u64;
        st.overflow -= ov as u64;
        st.saturated -= (ov as u64) * p.sat_ovf[0].to_u64();
        let e = elem::<I, K, MODE>(p, s.to_bits(), rnd);
        *d = out(e.code, e.value);
        st.nan += e.nan.to_u64();
        st.infinite += e.inf.to_u64();
        st.saturated += e.saturated.to_u64();
    }
}

#[inline(always)]
fn drive_full<I: Float, T, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(I::Bits, I) -> T,
) -> Status {
    // A local copy: the loop's stores cannot alias it, so its fields stay in registers.
    let plan = *p;
    let p = &plan;
    let keys = keys_for(p.seed, index0, MODE == SR);
    let lo0 = index0 as u32;
    let zero = <I::Bits as Word>::ZERO;
    let mut acc = [zero; 8];
    for (j, (d, s)) in dst.iter_mut().zip(src).enumerate() {
        let rnd = rnd_at::<I::Bits, MODE>(&keys, lo0, j);
        let e = elem::<I, K, MODE>(p, s.to_bits(), rnd);
        *d = out(e.code, e.value);
        acc[0] = acc[0] + e.inexact;
        acc[1] = acc[1] + e.underflow;
        acc[2] = acc[2] + e.flushed;
        acc[3] = acc[3] + e.nan;
        acc[4] = acc[4] + e.inf;
        acc[5] = acc[5] + e.invalid;
        acc[6] = acc[6] + e.overflow;
        acc[7] = acc[7] + e.saturated;
    }
    Status {
        inexact: acc[0].to_u64(),
        underflow: acc[1].to_u64(),
        flushed: acc[2].to_u64(),
        nan: acc[3].to_u64(),
        infinite: acc[4].to_u64(),
        invalid: acc[5].to_u64(),
        overflow: acc[6].to_u64(),
        saturated: acc[7].to_u64(),
    }
}

/// Round `src` into `dst` under the best instruction set, with `out` making the output
/// element from the code and the value; `index0` is the index of `src[0]` (the chunk must
/// not cross a multiple of 2^32).
#[inline(always)]
fn drive<I: Float, T, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(I::Bits, I) -> T,
) -> Status {
    if p.full {
        crate::simd::dispatch(Drive::<I, T, _, K, MODE, true> {
            p,
            src,
            dst,
            index0,
            out,
        })
    } else {
        crate::simd::dispatch(Drive::<I, T, _, K, MODE, false> {
            p,
            src,
            dst,
            index0,
            out,
        })
    }
}

/// The most elements one kernel call takes (its packed counters have 16-bit fields).
const MAX_CALL: usize = 1 << 15;

/// Dispatch on the plan's kernel and mode to a monomorphised [`drive`].
#[inline(always)]
pub(crate) fn run<I: Float, T>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(I::Bits, I) -> T,
) -> Status {
    let mut st = Status::default();
    for (k, (s, d)) in src
        .chunks(MAX_CALL)
        .zip(dst.chunks_mut(MAX_CALL))
        .enumerate()
    {
        st += run_one(p, s, d, index0 + (k * MAX_CALL) as u64, &out);
    }
    st
}

#[inline(always)]
fn run_one<I: Float, T>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(I::Bits, I) -> T,
) -> Status {
    match (p.kernel, p.mode) {
        (K_PAT, _) => drive::<I, T, K_PAT, RNE>(p, src, dst, index0, out),
        (K_ADD, _) => drive::<I, T, K_ADD, RNE>(p, src, dst, index0, out),
        (_, RNE) => drive::<I, T, K_INT, RNE>(p, src, dst, index0, out),
        (_, RNA) => drive::<I, T, K_INT, RNA>(p, src, dst, index0, out),
        (_, RTZ) => drive::<I, T, K_INT, RTZ>(p, src, dst, index0, out),
        (_, RUP) => drive::<I, T, K_INT, RUP>(p, src, dst, index0, out),
        (_, RDN) => drive::<I, T, K_INT, RDN>(p, src, dst, index0, out),
        (_, RTO) => drive::<I, T, K_INT, RTO>(p, src, dst, index0, out),
        _ => drive::<I, T, K_INT, SR>(p, src, dst, index0, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float-add and pattern kernels give the integer kernel's bits (which the
    /// integration tests hold to the reference) on every format that uses them.
    fn same_as_integer<I: Float>(bits: impl Fn(u64) -> I::Bits) {
        for p in crate::format::PRESETS {
            let plan = Plan::<I>::new(&p.format, &RoundOptions::default());
            if plan.kernel == K_INT || (I::MANT == 23 && !f32_native(&p.format, true)) {
                continue;
            }
            let mut int = plan;
            int.kernel = K_INT;
            let mut s = 0x1234u64;
            for i in 0..400_000u64 {
                s = crate::round::random::splitmix64(s.wrapping_add(i));
                let x = bits(s);
                let a = run_one(
                    &plan,
                    &[I::from_bits(x)],
                    &mut [(zero::<I>(), zero::<I>())],
                    0,
                    |c, v| (c, v.to_bits()),
                );
                let b = run_one(
                    &int,
                    &[I::from_bits(x)],
                    &mut [(zero::<I>(), zero::<I>())],
                    0,
                    |c, v| (c, v.to_bits()),
                );
                assert_eq!(a, b, "{}: status of {x:?}", p.name);
                let mut ya = [(zero::<I>(), zero::<I>())];
                let mut yb = ya;
                run_one(&plan, &[I::from_bits(x)], &mut ya, 0, |c, v| {
                    (c, v.to_bits())
                });
                run_one(&int, &[I::from_bits(x)], &mut yb, 0, |c, v| {
                    (c, v.to_bits())
                });
                assert_eq!(ya, yb, "{}: {x:?}", p.name);
            }
        }
    }

    fn zero<I: Float>() -> I::Bits {
        <I::Bits as Word>::ZERO
    }

    /// The AVX2 byte kernel ([`crate::simd::cast8`]) gives the lean kernel's codes and
    /// counts on every format and overflow policy that takes it, on slices of every length
    /// modulo 32, and sends a slice to the generic kernel exactly when it holds an overflow,
    /// a NaN or ±Inf.
    #[test]
    fn the_avx2_byte_kernel_equals_the_generic_kernel() {
        use crate::round::Overflow;
        if !crate::simd::cast8::available() {
            return; // nothing to compare below AVX2
        }
        let mut formats: Vec<FloatFormat> =
            crate::format::PRESETS.iter().map(|p| p.format).collect();
        for name in [
            "e3m4",
            "e5m2:fn",
            "e2m3:fnuz",
            "binary6p3se",
            "binary7p2sf",
            "e6m1",
            "e4m0:fn",
        ] {
            formats.push(FloatFormat::parse(name).unwrap());
        }
        let mut taken = 0;
        let mut redone = 0;
        for fmt in &formats {
            for ovf in [Overflow::Ieee, Overflow::Saturate] {
                let opts = RoundOptions::default().overflow(ovf);
                if !f32_native(fmt, false) {
                    continue;
                }
                let p = Plan::<f32>::new(fmt, &opts);
                let Some(k) = p.cast8(fmt) else {
                    continue;
                };
                taken += 1;
                // magnitudes around the format's range, and its edges exactly
                let edge = |v: f64| (v as f32).to_bits();
                let mut edges = vec![
                    0,
                    edge(fmt.min_normal()),
                    edge(fmt.max_finite()),
                    k.over_min,
                    0x7f80_0000,
                    0x7fc0_0000,
                ];
                if let Some(s) = fmt.min_subnormal() {
                    edges.extend([edge(s), edge(s / 2.0)]);
                }
                let lo_e = (fmt.emin() - fmt.man_bits() as i32 - 3 + 127).max(0) as u64;
                let hi_e = (fmt.emax() + 3 + 127) as u64;
                let mut r = 0x5eed_u64 ^ u64::from(fmt.bits());
                let mut next = || {
                    r = crate::round::random::splitmix64(r);
                    r
                };
                for round in 0..400 {
                    let n = (next() % 300) as usize + 1;
                    let x: Vec<f32> = (0..n)
                        .map(|_| {
                            let b = next();
                            let mag = match b % 64 {
                                // rare: an edge, one step either side
                                0 => {
                                    let e = edges[(b >> 8) as usize % edges.len()];
                                    e.wrapping_add(((b >> 16) % 3) as u32).wrapping_sub(1)
                                        & 0x7fff_ffff
                                }
                                _ => {
                                    let e = lo_e + (b >> 8) % (hi_e - lo_e + 1);
                                    ((e.min(254) as u32) << 23) | ((b >> 32) as u32 & 0x7f_ffff)
                                }
                            };
                            // most slices stay below the overflow threshold
                            let mag = if round % 4 != 0 {
                                mag.min(k.over_min - 1)
                            } else {
                                mag
                            };
                            // all positive in a third of an unsigned format's slices
                            let neg = (b >> 7) as u32 & u32::from(!k.unsigned || round % 3 != 0);
                            f32::from_bits(mag | neg << 31)
                        })
                        .collect();
                    let mut fast = vec![0u8; n];
                    let c = crate::simd::cast8::cast8(&k, &x, &mut fast).unwrap();
                    let mut gen = vec![0u8; n];
                    let st = run(&p, &x, &mut gen, 0, |c, _| c as u8);
                    if c.amax < k.over_min {
                        assert_eq!(fast, gen, "{fmt} {ovf:?}: codes of {x:?}");
                        let st8 = Status {
                            inexact: c.inexact,
                            underflow: c.underflow,
                            flushed: c.flushed,
                            ..Status::default()
                        };
                        assert_eq!(st8, st, "{fmt} {ovf:?}: counts of {x:?}");
                    } else {
                        redone += 1;
                        // (an unsigned format sends back every negative input, −0 included)
                        assert!(
                            st.overflow + st.nan + st.infinite + st.invalid > 0
                                || (k.unsigned && x.iter().any(|v| v.is_sign_negative())),
                            "{fmt} {ovf:?}: redone without cause: {x:?}"
                        );
                    }
                }
            }
        }
        assert!(taken >= 16, "only {taken} formats took the byte kernel");
        assert!(redone > 0);
    }

    /// A NaN into a format without NaN is refused on the byte kernel's route as on the
    /// generic one (the byte kernel sends the item holding it to the generic kernel, whose
    /// count the check reads).
    #[test]
    fn nan_into_a_format_without_nan_is_refused_on_the_byte_route() {
        let x: Vec<f32> = (0..100).map(|i| i as f32 / 7.0).chain([f32::NAN]).collect();
        for fmt in [FloatFormat::FP4_E2M1, FloatFormat::FP6_E3M2] {
            let mut c = vec![0u8; x.len()];
            let r = crate::encode_into(&fmt, &x, &mut c, &RoundOptions::default());
            assert!(
                matches!(
                    r,
                    Err(crate::Error::NotEncodable {
                        count: 1,
                        first: 100,
                        ..
                    })
                ),
                "{fmt}: {r:?}"
            );
        }
    }

    #[test]
    fn fast_kernels_equal_the_integer_kernel_f32() {
        same_as_integer::<f32>(|s| s as u32);
        // values near each format's range: exponent field 100..160
        same_as_integer::<f32>(|s| {
            ((s as u32) & 0x807f_ffff) | ((100 + (s >> 40) as u32 % 60) << 23)
        });
    }

    #[test]
    fn fast_kernels_equal_the_integer_kernel_f64() {
        same_as_integer::<f64>(|s| s);
        same_as_integer::<f64>(|s| (s & 0x800f_ffff_ffff_ffff) | ((900 + (s >> 52) % 250) << 52));
    }
}
