//! Binary floating-point formats as data.
//!
//! A [`FloatFormat`] is a small `Copy` value: exponent width, mantissa width, bias, the
//! special-value policy ([`Specials`]), whether it has a sign bit, and whether exponent field
//! 0 holds zero and the subnormals. Every quantity of a format (its width, range, epsilon,
//! the value of every code) is derived from these six fields; one rounding kernel
//! ([`crate::round`]) serves every format.
//!
//! # Values
//!
//! With sign `S`, exponent field `E`, mantissa field `M` (`m` bits) and bias `b`:
//!
//! * normal (`E ≥ 1`, or every `E` in a format without zero): `(−1)^S · 2^(E−b) · (1 + M/2^m)`
//! * subnormal (`E = 0`): `(−1)^S · 2^(1−b) · M/2^m`
//!
//! The specials then take some codes away (see [`Specials`]).
//!
//! # Examples
//!
//! ```
//! use lowprec::FloatFormat;
//! let f = FloatFormat::FP8_E4M3;
//! assert_eq!(f.bits(), 8);
//! assert_eq!(f.max_finite(), 448.0);
//! assert_eq!(f.decode(0x7e), 448.0);
//! assert!(f.decode(0x7f).is_nan());
//! assert_eq!(f.min_subnormal(), Some(2f64.powi(-9)));
//! ```

mod parse;
mod presets;

pub use presets::PRESETS;

use crate::error::{Error, Result};
use std::borrow::Cow;
use std::fmt;

/// The special-value policy of a format: which codes are infinities and NaNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Specials {
    /// IEEE 754: the all-ones exponent field holds ±Inf (mantissa 0) and NaN (mantissa ≠ 0).
    /// FP32, FP16, BF16, FP8 E5M2.
    Ieee,
    /// "Finite + NaN" (OCP OFP8 E4M3): no infinities; only the all-ones magnitude
    /// `S.1…1.1…1` is NaN, the rest of the top binade holds ordinary numbers.
    /// For an unsigned format the all-ones code is the NaN (E8M0's `0xFF`).
    Fn,
    /// "Finite, unsigned zero" (ml_dtypes `float8_e4m3fnuz` / `float8_e5m2fnuz`): no
    /// infinities, no −0; the code `1 0…0` (what would be −0) is the one NaN.
    Fnuz,
    /// Every code is a finite number: no Inf, no NaN (OCP MX FP6 and FP4).
    None,
    /// IEEE P3109 *extended*: one zero (no −0), one NaN (the code `1 0…0` of a signed
    /// format, the all-ones code of an unsigned one), +Inf at the largest magnitude code
    /// (`0 1…1`; the all-ones code minus one when unsigned) and −Inf at the all-ones code.
    P3109Extended,
    /// IEEE P3109 *finite*: one zero, one NaN (placed as in [`Specials::P3109Extended`]), no
    /// infinities; every other code is a number. A signed P3109 finite format has the codes
    /// of the `fnuz` format of the same widths and bias, but the P3109 operations' rules.
    P3109Finite,
}

impl Specials {
    /// The short name used in the custom-format syntax: `ieee`, `fn`, `fnuz` or `none`.
    pub const fn name(self) -> &'static str {
        match self {
            Specials::Ieee => "ieee",
            Specials::Fn => "fn",
            Specials::Fnuz => "fnuz",
            Specials::None => "none",
            Specials::P3109Extended => "p3109e",
            Specials::P3109Finite => "p3109f",
        }
    }

    /// Whether this is one of the IEEE P3109 policies.
    pub const fn is_p3109(self) -> bool {
        matches!(self, Specials::P3109Extended | Specials::P3109Finite)
    }
}

/// A binary floating-point format, described entirely by data.
///
/// Build one with [`FloatFormat::new`] (validated), take a preset constant such as
/// [`FloatFormat::FP8_E4M3`], or parse a name with [`FloatFormat::parse`] /
/// [`str::parse`].
///
/// Every format whose values binary64 holds exactly is admitted: `m ≤ 52`, at most 64 bits,
/// and a normal range inside binary64's (`emin ≥ −1022`, `emax ≤ 1023`).
///
/// The IEEE P3109 formats (K bits, precision P, signed or unsigned, extended or finite) are
/// values of the same type: `signed`, `zero` and [`Specials`] are independent fields, and
/// the P3109 policies are the [`Specials::P3109Extended`] and [`Specials::P3109Finite`]
/// variants ([`FloatFormat::p3109`] builds one from K, P and the two letters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FloatFormat {
    exp_bits: u8,
    man_bits: u8,
    bias: i32,
    specials: Specials,
    signed: bool,
    zero: bool,
}

/// `2^k` as an `f64`, exact for every `k` in `[−1074, 1023]` (subnormal powers included).
///
/// ```
/// assert_eq!(lowprec::format::pow2(-1074), f64::from_bits(1));
/// assert_eq!(lowprec::format::pow2(10), 1024.0);
/// ```
pub const fn pow2(k: i32) -> f64 {
    if k > 1023 {
        f64::INFINITY
    } else if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else if k >= -1074 {
        f64::from_bits(1u64 << (k + 1074))
    } else {
        0.0
    }
}

impl FloatFormat {
    /// A validated format.
    ///
    /// * `exp_bits`: exponent field width, 1 to 11;
    /// * `man_bits`: stored mantissa (trailing significand) width, 0 to 52;
    /// * `bias`: exponent bias;
    /// * `specials`: which codes are Inf and NaN;
    /// * `signed`: whether the format has a sign bit (E8M0 and UE4M3 have none);
    /// * `zero`: whether exponent field 0 holds zero and the subnormals; `false` makes
    ///   field 0 an ordinary binade (E8M0: code 0 is 2^−127, there is no zero).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFormat`] when the widths are out of range, the range leaves
    /// binary64's, an `ieee` format has no mantissa bit for its NaN, an `fnuz` format has
    /// no sign bit, or an unsigned format has no NaN code for negative inputs.
    ///
    /// ```
    /// use lowprec::{FloatFormat, Specials};
    /// let f = FloatFormat::new(4, 3, 7, Specials::Fn, true, true).unwrap();
    /// assert_eq!(f, FloatFormat::FP8_E4M3);
    /// assert!(FloatFormat::new(4, 0, 7, Specials::Ieee, true, true).is_err());
    /// ```
    pub fn new(
        exp_bits: u32,
        man_bits: u32,
        bias: i32,
        specials: Specials,
        signed: bool,
        zero: bool,
    ) -> Result<Self> {
        let bad = |why: String| Err(Error::InvalidFormat(why));
        if !(1..=11).contains(&exp_bits) {
            return bad(format!("exponent width {exp_bits} is outside 1..=11"));
        }
        if man_bits > 52 {
            return bad(format!("mantissa width {man_bits} is outside 0..=52"));
        }
        let bits = exp_bits + man_bits + signed as u32;
        if bits > 64 {
            return bad(format!("{bits} bits in all; at most 64 are supported"));
        }
        if specials == Specials::Ieee && man_bits == 0 {
            return bad("an ieee format needs at least one mantissa bit for its NaN".into());
        }
        if specials == Specials::Fnuz && !signed {
            return bad("an fnuz format needs a sign bit (its NaN is the code 1 0…0)".into());
        }
        if !signed && specials == Specials::None {
            return bad(
                "an unsigned format needs a NaN code (specials fn) for negative inputs".into(),
            );
        }
        if specials.is_p3109() && !zero {
            return bad(
                "a P3109 format has a zero (exponent field 0 holds zero and the subnormals)".into(),
            );
        }
        if specials == Specials::P3109Extended && (1u64 << (exp_bits + man_bits)) < 4 {
            return bad("a P3109 extended format needs at least 2 magnitude bits (zero, Inf and NaN take three codes)".into());
        }
        if !zero && specials != Specials::Fn {
            return bad(format!(
                "a format without zero needs the fn specials (a NaN code for zero inputs), not {}",
                specials.name()
            ));
        }
        // (checked first, so that the exponent arithmetic below cannot wrap)
        if !(-4096..=4096).contains(&bias) {
            return bad(format!(
                "bias {bias} puts the exponents outside binary64's [-1022, 1023]; give a bias within ±1100"
            ));
        }
        let f = FloatFormat {
            exp_bits: exp_bits as u8,
            man_bits: man_bits as u8,
            bias,
            specials,
            signed,
            zero,
        };
        if f.max_mag() == 0 && !zero {
            return bad("the format has no finite value".into());
        }
        if f.emin() < -1022 || f.emax() > 1023 {
            return bad(format!(
                "normal exponent range [{}, {}] leaves binary64's [-1022, 1023]",
                f.emin(),
                f.emax()
            ));
        }
        Ok(f)
    }

    /// A format from trusted constants (the presets); not validated.
    pub(crate) const fn raw(
        exp_bits: u8,
        man_bits: u8,
        bias: i32,
        specials: Specials,
        signed: bool,
        zero: bool,
    ) -> Self {
        FloatFormat {
            exp_bits,
            man_bits,
            bias,
            specials,
            signed,
            zero,
        }
    }

    /// Exponent field width.
    pub const fn exp_bits(&self) -> u32 {
        self.exp_bits as u32
    }

    /// Stored mantissa width `m` (the precision is `m + 1` bits).
    pub const fn man_bits(&self) -> u32 {
        self.man_bits as u32
    }

    /// Exponent bias.
    pub const fn bias(&self) -> i32 {
        self.bias
    }

    /// Special-value policy.
    pub const fn specials(&self) -> Specials {
        self.specials
    }

    /// Whether the format has a sign bit.
    pub const fn is_signed(&self) -> bool {
        self.signed
    }

    /// Whether exponent field 0 holds zero and the subnormals (false for E8M0).
    pub const fn has_zero(&self) -> bool {
        self.zero
    }

    /// Total width in bits: sign (if any) + exponent + mantissa.
    ///
    /// ```
    /// assert_eq!(lowprec::FloatFormat::TF32.bits(), 19);
    /// assert_eq!(lowprec::FloatFormat::E8M0.bits(), 8);
    /// ```
    pub const fn bits(&self) -> u32 {
        self.signed as u32 + self.exp_bits as u32 + self.man_bits as u32
    }

    /// The largest code, `2^bits − 1`.
    pub const fn max_code(&self) -> u64 {
        if self.bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits()) - 1
        }
    }

    /// The sign bit's mask (0 for unsigned formats).
    pub const fn sign_mask(&self) -> u64 {
        if self.signed {
            1u64 << (self.bits() - 1)
        } else {
            0
        }
    }

    /// `2^m − 1`, the mantissa field's mask.
    pub(crate) const fn man_mask(&self) -> u64 {
        (1u64 << self.man_bits) - 1
    }

    /// The all-ones exponent field value, `2^E − 1`.
    pub(crate) const fn top_field(&self) -> u64 {
        (1u64 << self.exp_bits) - 1
    }

    /// The magnitude mask (every bit but the sign).
    pub(crate) const fn mag_mask(&self) -> u64 {
        (1u64 << (self.exp_bits + self.man_bits)) - 1
    }

    /// The magnitude code (sign bit clear) of the largest finite value.
    pub const fn max_mag(&self) -> u64 {
        let all = self.mag_mask();
        match (self.specials, self.signed) {
            (Specials::Ieee, _) => (self.top_field() << self.man_bits) - 1,
            (Specials::Fn, _)
            | (Specials::P3109Finite, false)
            | (Specials::P3109Extended, true) => all - 1,
            (Specials::P3109Extended, false) => all - 2,
            (Specials::Fnuz | Specials::None, _) | (Specials::P3109Finite, true) => all,
        }
    }

    /// The unbiased exponent of the smallest normal number: `1 − bias`, or `−bias` for a
    /// format without zero.
    pub const fn emin(&self) -> i32 {
        if self.zero {
            1 - self.bias
        } else {
            -self.bias
        }
    }

    /// The unbiased exponent of the largest finite number.
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// assert_eq!(FloatFormat::FP16.emax(), 15);
    /// assert_eq!(FloatFormat::FP8_E4M3.emax(), 8); // fn: the top binade holds numbers
    /// assert_eq!(FloatFormat::E8M0.emax(), 127);
    /// ```
    pub const fn emax(&self) -> i32 {
        (self.max_mag() >> self.man_bits) as i32 - self.bias
    }

    /// The largest finite value.
    pub fn max_finite(&self) -> f64 {
        self.decode_mag(self.max_mag())
    }

    /// The smallest positive normal value, `2^emin`.
    pub fn min_normal(&self) -> f64 {
        pow2(self.emin())
    }

    /// The smallest positive subnormal value `2^(emin − m)`, or `None` when the format has
    /// no subnormals (no mantissa bits, or no zero).
    pub fn min_subnormal(&self) -> Option<f64> {
        (self.zero && self.man_bits > 0).then(|| pow2(self.emin() - self.man_bits as i32))
    }

    /// The smallest positive value (the smallest subnormal, else the smallest normal).
    pub fn min_positive(&self) -> f64 {
        self.min_subnormal().unwrap_or_else(|| self.min_normal())
    }

    /// Machine epsilon: the gap between 1 and the next larger number, `2^−m`.
    pub fn epsilon(&self) -> f64 {
        pow2(-(self.man_bits as i32))
    }

    /// Unit roundoff `u = 2^−(m+1)`, the relative error bound of round-to-nearest in the
    /// normal range.
    pub fn unit_roundoff(&self) -> f64 {
        pow2(-(self.man_bits as i32) - 1)
    }

    /// Whether the format encodes ±Inf (+Inf only, when unsigned).
    pub const fn has_inf(&self) -> bool {
        matches!(self.specials, Specials::Ieee | Specials::P3109Extended)
    }

    /// Whether the format encodes NaN.
    pub const fn has_nan(&self) -> bool {
        !matches!(self.specials, Specials::None)
    }

    /// Whether the format has a distinct −0.
    pub const fn has_negative_zero(&self) -> bool {
        self.signed
            && self.zero
            && !matches!(
                self.specials,
                Specials::Fnuz | Specials::P3109Extended | Specials::P3109Finite
            )
    }

    /// Whether a NaN code carries the input's sign (ieee and fn formats); fnuz and P3109
    /// formats have one NaN, and formats without NaN none.
    pub const fn nan_is_signed(&self) -> bool {
        self.signed && matches!(self.specials, Specials::Ieee | Specials::Fn)
    }

    /// The canonical NaN code produced for a NaN input of the given sign (see
    /// `shared/vectors/README.md`): ieee: exponent all ones with only the quiet bit, sign
    /// of the input; fn: all ones with the sign of the input; fnuz and signed P3109: `1 0…0`;
    /// unsigned P3109: all ones; `None` for formats without NaN.
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// assert_eq!(FloatFormat::FP16.nan_code(false), Some(0x7e00));
    /// assert_eq!(FloatFormat::FP8_E4M3.nan_code(true), Some(0xff));
    /// assert_eq!(FloatFormat::FP8_E4M3_FNUZ.nan_code(false), Some(0x80));
    /// assert_eq!(FloatFormat::FP4_E2M1.nan_code(false), None);
    /// ```
    pub const fn nan_code(&self, negative: bool) -> Option<u64> {
        let sign = if negative { self.sign_mask() } else { 0 };
        match self.specials {
            Specials::Ieee => {
                Some(sign | (self.top_field() << self.man_bits) | (1u64 << (self.man_bits - 1)))
            }
            Specials::Fn => Some(sign | self.mag_mask()),
            Specials::Fnuz => Some(self.sign_mask()),
            Specials::P3109Extended | Specials::P3109Finite => Some(if self.signed {
                self.sign_mask()
            } else {
                self.max_code()
            }),
            Specials::None => None,
        }
    }

    /// The code of ±Inf, or `None` for formats without infinities (and for −Inf in an
    /// unsigned format).
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// let f = FloatFormat::parse("binary8p3se").unwrap();
    /// assert_eq!((f.inf_code(false), f.inf_code(true)), (Some(0x7f), Some(0xff)));
    /// ```
    pub const fn inf_code(&self, negative: bool) -> Option<u64> {
        let sign = if negative { self.sign_mask() } else { 0 };
        match self.specials {
            Specials::Ieee => Some(sign | (self.top_field() << self.man_bits)),
            Specials::P3109Extended => {
                if self.signed {
                    Some(sign | self.mag_mask())
                } else if negative {
                    None
                } else {
                    Some(self.max_code() - 1)
                }
            }
            Specials::Fn | Specials::Fnuz | Specials::None | Specials::P3109Finite => None,
        }
    }

    /// Whether `code` (low `bits` bits) is an infinity code.
    pub fn is_inf_code(&self, code: u64) -> bool {
        let code = code & self.max_code();
        self.inf_code(false) == Some(code) || self.inf_code(true) == Some(code)
    }

    /// Whether `code` (low `bits` bits) is a NaN code.
    pub fn is_nan_code(&self, code: u64) -> bool {
        let code = code & self.max_code();
        let mag = code & self.mag_mask();
        match self.specials {
            Specials::Ieee => {
                (mag >> self.man_bits) == self.top_field() && mag & self.man_mask() != 0
            }
            Specials::Fn => mag == self.mag_mask(),
            Specials::Fnuz => code == self.sign_mask(),
            Specials::P3109Extended | Specials::P3109Finite => self.nan_code(false) == Some(code),
            Specials::None => false,
        }
    }

    /// The value of a magnitude code (sign clear), ignoring specials.
    pub(crate) fn decode_mag(&self, mag: u64) -> f64 {
        let m = self.man_bits as i32;
        let field = (mag >> m) as i32;
        let man = mag & self.man_mask();
        if self.zero && field == 0 {
            // man < 2^52 converts exactly; the power of two is exact (also subnormal).
            man as f64 * pow2(self.emin() - m)
        } else {
            // (2^m + man) ≤ 2^53 converts exactly; split the scale so each factor is normal.
            ((1u64 << m) + man) as f64 * pow2(-m) * pow2(field - self.bias)
        }
    }

    /// The value of a code, as `f64` (exact: every format's values are binary64 values).
    /// Bits above the format's width are ignored.
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// assert_eq!(FloatFormat::FP8_E5M2.decode(0x7b), 57344.0);
    /// assert_eq!(FloatFormat::FP16.decode(0xfc00), f64::NEG_INFINITY);
    /// assert_eq!(FloatFormat::E8M0.decode(0x00), 2f64.powi(-127));
    /// assert!(FloatFormat::FP8_E4M3_FNUZ.decode(0x80).is_nan());
    /// ```
    pub fn decode(&self, code: u64) -> f64 {
        let code = code & self.max_code();
        if self.is_nan_code(code) {
            return f64::NAN;
        }
        let mag = code & self.mag_mask();
        let negative = code & self.sign_mask() != 0;
        let v = if self.is_inf_code(code) {
            f64::INFINITY
        } else {
            self.decode_mag(mag)
        };
        if negative {
            -v
        } else {
            v
        }
    }

    /// The fields `(sign, exponent, mantissa)` of a code (sign 0 for unsigned formats).
    ///
    /// ```
    /// assert_eq!(lowprec::FloatFormat::FP8_E4M3.fields(0xd5), (1, 0b1010, 0b101));
    /// ```
    pub const fn fields(&self, code: u64) -> (u64, u64, u64) {
        let code = code & self.max_code();
        let sign = if self.signed {
            code >> (self.bits() - 1)
        } else {
            0
        };
        let m = self.man_bits;
        (sign, (code >> m) & self.top_field(), code & self.man_mask())
    }

    /// The field widths `[sign, exponent, mantissa]` for [`crate::int::bits_str`]; the sign
    /// width is 0 for unsigned formats.
    pub const fn field_widths(&self) -> [u32; 3] {
        [
            self.signed as u32,
            self.exp_bits as u32,
            self.man_bits as u32,
        ]
    }

    /// The code written in binary with the fields separated by spaces (`0 1111 110`).
    ///
    /// ```
    /// assert_eq!(lowprec::FloatFormat::FP8_E4M3.bits_str(0x7e), "0 1111 110");
    /// assert_eq!(lowprec::FloatFormat::E8M0.bits_str(0x7f), "01111111");
    /// ```
    pub fn bits_str(&self, code: u64) -> String {
        let w = self.field_widths();
        let groups: Vec<u32> = w.iter().copied().filter(|&g| g > 0).collect();
        crate::int::bits_str(code, self.bits(), Some(&groups)).unwrap_or_default()
    }

    /// The value of every code, indexed by code, for formats of at most 16 bits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for wider formats (FP32 has 4·10⁹ codes).
    ///
    /// ```
    /// let v = lowprec::FloatFormat::FP4_E2M1.all_values().unwrap();
    /// assert_eq!(&v[..8], &[0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    /// ```
    pub fn all_values(&self) -> Result<Vec<f64>> {
        if self.bits() > 16 {
            return Err(Error::InvalidArgument(format!(
                "all_values is for formats of at most 16 bits; {} has {}",
                self.name(),
                self.bits()
            )));
        }
        Ok((0..=self.max_code()).map(|c| self.decode(c)).collect())
    }

    /// The preset name when the format equals a preset, else the custom syntax.
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// assert_eq!(FloatFormat::BF16.name(), "bf16");
    /// let f: FloatFormat = "e5m3b11:fn".parse().unwrap();
    /// assert_eq!(f.name(), "e5m3b11:fn");
    /// ```
    pub fn name(&self) -> Cow<'static, str> {
        match PRESETS.iter().find(|p| p.format == *self) {
            Some(p) => Cow::Borrowed(p.name),
            None => match self.p3109_params() {
                Some((k, p, s, e)) => Cow::Owned(format!(
                    "binary{k}p{p}{}{}",
                    if s { 's' } else { 'u' },
                    if e { 'e' } else { 'f' }
                )),
                None => Cow::Owned(self.spec()),
            },
        }
    }

    /// The format in the custom syntax `[u]e<E>m<M>b<BIAS>:<specials>[:nozero]`, which
    /// [`FloatFormat::parse`] reads back to the same format.
    ///
    /// ```
    /// assert_eq!(lowprec::FloatFormat::FP8_E4M3.spec(), "e4m3b7:fn");
    /// assert_eq!(lowprec::FloatFormat::E8M0.spec(), "ue8m0b127:fn:nozero");
    /// ```
    pub fn spec(&self) -> String {
        format!(
            "{}e{}m{}b{}:{}{}",
            if self.signed { "" } else { "u" },
            self.exp_bits,
            self.man_bits,
            self.bias,
            self.specials.name(),
            if self.zero { "" } else { ":nozero" }
        )
    }

    /// A one-line description.
    ///
    /// ```
    /// assert_eq!(
    ///     lowprec::FloatFormat::FP8_E4M3.describe(),
    ///     "fp8-e4m3: E4M3, bias 7, 8 bits; no Inf, one NaN per sign (S.1111.111); max 448"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        let sp = match (self.specials, self.signed, self.zero) {
            (Specials::Ieee, _, _) => "Inf and NaN (all-ones exponent)".to_string(),
            (Specials::Fn, true, _) => format!(
                "no Inf, one NaN per sign (S.{}.{})",
                "1".repeat(self.exp_bits as usize),
                "1".repeat(self.man_bits as usize)
            ),
            (Specials::Fn, false, true) => "unsigned, no Inf, the all-ones code is NaN".into(),
            (Specials::Fn, false, false) => {
                "unsigned, no zero, no Inf, the all-ones code is NaN".into()
            }
            (Specials::Fnuz, _, _) => "no Inf, no -0, the code 1 0…0 is the one NaN".into(),
            (Specials::None, _, _) => "no Inf, no NaN: every code is a number".into(),
            (Specials::P3109Extended, true, _) => format!(
                "P3109 extended: one zero, NaN 0x{:x}, ±Inf 0x{:x}/0x{:x}",
                self.sign_mask(),
                self.mag_mask(),
                self.max_code()
            ),
            (Specials::P3109Extended, false, _) => format!(
                "P3109 extended, unsigned: NaN 0x{:x}, +Inf 0x{:x}",
                self.max_code(),
                self.max_code() - 1
            ),
            (Specials::P3109Finite, true, _) => format!(
                "P3109 finite: one zero, NaN 0x{:x}, no Inf",
                self.sign_mask()
            ),
            (Specials::P3109Finite, false, _) => format!(
                "P3109 finite, unsigned: NaN 0x{:x}, no Inf",
                self.max_code()
            ),
        };
        let max = self.max_finite();
        let max = if (1e-4..1e7).contains(&max) {
            format!("{max}")
        } else {
            format!("{max:e}")
        };
        format!(
            "{}: E{}M{}, bias {}, {} bits; {}; max {}",
            self.name(),
            self.exp_bits,
            self.man_bits,
            self.bias,
            self.bits(),
            sp,
            max
        )
    }

    /// Whether every value of the format (and ±Inf, NaN) is a binary32 value, so that
    /// rounded values can be returned as `f32`.
    pub fn fits_f32(&self) -> bool {
        self.man_bits <= 23 && self.emax() <= 127 && self.emin() - self.man_bits as i32 >= -149
    }
}

impl fmt::Display for FloatFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
