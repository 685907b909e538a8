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
/// widened to binary64, exactly, first).
pub(crate) fn f32_native(fmt: &FloatFormat, values: bool) -> bool {
    fmt.man_bits() <= 23
        && fmt.emin() >= -126
        && fmt.bits() <= 32
        && (!values || fmt.fits_f32())
}

/// A format and options as lane constants for input type `I`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan<I: Float> {
    pub kernel: u8,
    pub mode: u8,
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
                RoundingMode::NearestEven | RoundingMode::NearestAway | RoundingMode::Stochastic => {
                    away(neg)
                }
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
        let nan_val = |neg: bool| I::from_f64(if neg { -f64::NAN } else { f64::NAN }).to_bits().to_u64();

        // float-add kernel: c = 2^(max(e, emin) + mant − m), e clamped at emax + 2.
        let eclamp = fmt.emax() as i64 + 2 + bias_in;
        let exp_max_field = 2 * bias_in; // largest normal exponent field of I
        let add_ok = opts.mode == RoundingMode::NearestEven
            && fmt.has_zero()
            && fmt.is_signed()
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
        let fnuz = fmt.specials() == Specials::Fnuz;
        Plan {
            kernel,
            mode,
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

/// One rounded element: its code, its value (as the input type) and what happened.
#[derive(Clone, Copy)]
pub(crate) struct Elem<I: Float> {
    pub code: I::Bits,
    pub value: I,
    pub inexact: I::Bits,
    pub underflow: I::Bits,
    pub flushed: I::Bits,
    /// NaN or Inf input, overflow, or invalid: recounted in detail by [`rare_status`].
    pub rare: I::Bits,
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

/// The element kernel: rounds the input bits `x` (random word `rnd` for `sr`).
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

    // ord: the rounded magnitude ordinal; rem_nz: whether |x| was not on the grid;
    // vmag: the rounded magnitude as a value of I (for ordinals at or above nozero_min).
    let (ord, rem_nz, vmag) = match K {
        K_PAT => {
            let lsb = a.shr(p.p_d) & one;
            let r = a.wadd(p.p_mask.shr(one)).wadd(lsb);
            let mag = r.shr(p.p_d);
            (mag, (a & p.p_mask) != zero, I::from_bits(mag.shl(p.p_d)))
        }
        K_ADD => {
            let ef = (a & p.exp_mask).max(p.a_emin).min(p.a_eclamp);
            let c = I::from_bits(ef.wadd(p.a_shift));
            let s = I::from_bits(a).add(c);
            let y = s.sub(c);
            let ord = (ef.wsub(p.a_emin)).shr(p.a_dshift) + (s.to_bits() & p.mant_mask);
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
    };

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
    let fin_over = finite & over;
    Elem {
        code,
        value: I::from_bits(vb),
        inexact: b(finite & (rem_nz | over | invalid)),
        underflow: b(finite & rem_nz & (a < p.min_normal)),
        flushed: b(finite & (ord == zero) & (a != zero) & (p.nozero != one)),
        rare: b(!finite | over | invalid),
        nan: b(nan),
        inf: b(inf),
        invalid: b(invalid),
        overflow: b(fin_over & !invalid),
        saturated: b(fin_over & !invalid) & pick(neg, p.sat_ovf) | (b(inf & !invalid) & p.sat_inf),
    }
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

/// The random word of element `lo` (low half of its index) under the block's keys.
#[inline(always)]
pub(crate) fn rand_word<W: Word>(lo: u32, keys: &[u32; 2]) -> W {
    W::from_u64(hash32(lo, keys[0], keys[1]) as u64)
}

/// Round `src` into `dst` with `out` choosing the code or the value; `index0` is the index
/// of `src[0]` (the chunk must not cross a multiple of 2^32).
#[inline(always)]
pub(crate) fn drive<I: Float, T, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(&Elem<I>) -> T,
) -> Status {
    let keys = if MODE == SR {
        block_keys(p.seed, (index0 >> 32) as u32)
    } else {
        [0; 2]
    };
    let lo0 = index0 as u32;
    let zero = <I::Bits as Word>::ZERO;
    let (mut inexact, mut underflow, mut flushed, mut rare) = (zero, zero, zero, zero);
    for (j, (d, s)) in dst.iter_mut().zip(src).enumerate() {
        let rnd = if MODE == SR {
            rand_word::<I::Bits>(lo0.wrapping_add(j as u32), &keys)
        } else {
            zero
        };
        let e = elem::<I, K, MODE>(p, s.to_bits(), rnd);
        *d = out(&e);
        inexact = inexact + e.inexact;
        underflow = underflow + e.underflow;
        flushed = flushed + e.flushed;
        rare = rare + e.rare;
    }
    let mut st = Status {
        inexact: inexact.to_u64(),
        underflow: underflow.to_u64(),
        flushed: flushed.to_u64(),
        ..Status::default()
    };
    if rare != zero {
        rare_status::<I, K, MODE>(p, src, index0, &mut st);
    }
    st
}

/// Count the rare events of a chunk (NaN, Inf, invalid, overflow, saturated) again.
#[inline(never)]
fn rare_status<I: Float, const K: u8, const MODE: u8>(
    p: &Plan<I>,
    src: &[I],
    index0: u64,
    st: &mut Status,
) {
    let keys = if MODE == SR {
        block_keys(p.seed, (index0 >> 32) as u32)
    } else {
        [0; 2]
    };
    for (j, s) in src.iter().enumerate() {
        let rnd = if MODE == SR {
            rand_word::<I::Bits>((index0 as u32).wrapping_add(j as u32), &keys)
        } else {
            <I::Bits as Word>::ZERO
        };
        let e = elem::<I, K, MODE>(p, s.to_bits(), rnd);
        st.nan += e.nan.to_u64();
        st.infinite += e.inf.to_u64();
        st.invalid += e.invalid.to_u64();
        st.overflow += e.overflow.to_u64();
        st.saturated += e.saturated.to_u64();
    }
}

/// Dispatch on the plan's kernel and mode to a monomorphised [`drive`].
#[inline(always)]
pub(crate) fn run<I: Float, T>(
    p: &Plan<I>,
    src: &[I],
    dst: &mut [T],
    index0: u64,
    out: impl Fn(&Elem<I>) -> T,
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

/// A plan forced onto the integer kernel (for tests that compare the kernels).
#[cfg(test)]
pub(crate) fn force_integer<I: Float>(mut p: Plan<I>) -> Plan<I> {
    p.kernel = K_INT;
    p
}
