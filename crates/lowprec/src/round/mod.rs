//! Rounding into any [`FloatFormat`]: the modes, the overflow policy, the per-call options,
//! what happened ([`Status`]), and the scalar and slice entry points.
//!
//! # Semantics
//!
//! The input (binary32 or binary64) is rounded **once**, exactly, to the format's precision
//! with gradual underflow and an unbounded exponent range; only then is overflow decided
//! (IEEE 754-2019 §4.3 and §7.4; OCP OFP8 rev 1.0 for the saturating mode). An `f64` input is
//! never rounded through `f32`.
//!
//! | result beyond max finite | `Overflow::Ieee` (`ovf`) | `Overflow::Saturate` (`sat`) |
//! |---|---|---|
//! | `rne`, `rna`, `sr` | ±Inf (ieee formats), NaN (fn, fnuz, e8m0) | ±max |
//! | `rtz`, `rto` | ±max | ±max |
//! | `rup` | +Inf/NaN for x > 0, −max for x < 0 | ±max |
//! | `rdn` | −Inf/NaN for x < 0, +max for x > 0 | ±max |
//! | ±Inf input | ±Inf (ieee), NaN (fn, fnuz, e8m0) | ±max |
//!
//! Formats without Inf and NaN (`none`: FP6, FP4) always saturate. NaN in gives NaN out
//! (encoding a NaN into a format without NaN is an error). Zeros keep their sign, a negative
//! number that rounds to zero gives −0, except in `fnuz` formats, which have no −0.
//! Unsigned formats (E8M0, UE4M3) give NaN for negative inputs (−0 gives +0); E8M0, which has
//! no zero, gives NaN for ±0 and its smallest value 2^−127 for positive inputs below it (as
//! ml_dtypes). Under `rne` an E8M0 tie `1.5·2^k` goes to the larger power: the one-digit
//! significand `1` is odd (ml_dtypes and torch agree; gfloat picks the even exponent).
//!
//! `rto` (round to odd) returns an exactly representable input unchanged and otherwise the
//! bracketing value whose code is odd; a nonzero input below the smallest subnormal gives
//! ±min subnormal. It never overflows to Inf (IEEE leaves round-to-odd overflow undefined;
//! lowprec treats it as round-toward-zero, so the result is ±max).
//!
//! `sr` (stochastic) rounds up with probability (x − lower)/(upper − lower). The random bits
//! of element `i` are a counter-based function of `(seed, index_offset + i)` (see
//! [`RoundOptions::seed`]), so results do not depend on threads or chunking, and a binary32
//! input gives the same result as the same value in binary64. With
//! [`RoundOptions::sr_bits`] `= r > 0` only the top `r` bits of the remainder are compared
//! with `r` random bits, as hardware SR units do (slightly biased toward zero).
//!
//! Tininess for the [`Status::underflow`] count is detected before rounding
//! (`0 < |x| < min normal` and inexact).

pub(crate) mod kernel;
pub(crate) mod random;
pub(crate) mod slice;
pub(crate) mod types;

pub use random::random_bits;
pub use slice::{
    decode_into, decode_vec, encode_into, encode_vec, round_in_place, round_into, round_vec,
    Rounder,
};
pub use types::{Code, Float};

use crate::error::{Error, Result};
use crate::format::FloatFormat;
use std::fmt;
use std::ops::{Add, AddAssign};
use std::str::FromStr;

/// A rounding mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RoundingMode {
    /// `rne`: to nearest, ties to even (IEEE roundTiesToEven, the default).
    #[default]
    NearestEven,
    /// `rna`: to nearest, ties away from zero (IEEE roundTiesToAway).
    NearestAway,
    /// `rtz`: toward zero (truncation).
    TowardZero,
    /// `rup`: toward +∞.
    Up,
    /// `rdn`: toward −∞.
    Down,
    /// `rto`: to odd (sticky rounding; `RNE_p(RTO_{p+2}(x)) = RNE_p(x)`).
    ToOdd,
    /// `sr`: stochastic, up with probability equal to the distance to the lower neighbour
    /// over the gap.
    Stochastic,
}

impl RoundingMode {
    /// Every mode, in the order of the table above.
    pub const ALL: [RoundingMode; 7] = [
        RoundingMode::NearestEven,
        RoundingMode::NearestAway,
        RoundingMode::TowardZero,
        RoundingMode::Up,
        RoundingMode::Down,
        RoundingMode::ToOdd,
        RoundingMode::Stochastic,
    ];

    /// The short name: `rne`, `rna`, `rtz`, `rup`, `rdn`, `rto` or `sr`.
    pub const fn short_name(self) -> &'static str {
        match self {
            RoundingMode::NearestEven => "rne",
            RoundingMode::NearestAway => "rna",
            RoundingMode::TowardZero => "rtz",
            RoundingMode::Up => "rup",
            RoundingMode::Down => "rdn",
            RoundingMode::ToOdd => "rto",
            RoundingMode::Stochastic => "sr",
        }
    }

    /// Parse a short name or the seed's long names (`nearest_even`, `nearest_away`,
    /// `toward_zero`, `stochastic`) and `up`, `down`, `odd`; case-insensitive.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRounding`] listing the accepted names.
    ///
    /// ```
    /// use lowprec::RoundingMode;
    /// assert_eq!(RoundingMode::parse("nearest_away").unwrap(), RoundingMode::NearestAway);
    /// assert_eq!(RoundingMode::parse("RTZ").unwrap(), RoundingMode::TowardZero);
    /// assert!(RoundingMode::parse("nearest").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self> {
        let k = s.trim().to_ascii_lowercase().replace('-', "_");
        Ok(match k.as_str() {
            "rne" | "nearest_even" | "even" | "rn" => RoundingMode::NearestEven,
            "rna" | "nearest_away" | "away" => RoundingMode::NearestAway,
            "rtz" | "toward_zero" | "towards_zero" | "zero" | "truncate" | "rz" => {
                RoundingMode::TowardZero
            }
            "rup" | "up" | "toward_positive" | "ru" => RoundingMode::Up,
            "rdn" | "down" | "toward_negative" | "rd" => RoundingMode::Down,
            "rto" | "odd" | "to_odd" => RoundingMode::ToOdd,
            "sr" | "stochastic" => RoundingMode::Stochastic,
            _ => return Err(Error::UnknownRounding(s.to_string())),
        })
    }
}

impl fmt::Display for RoundingMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

impl FromStr for RoundingMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        RoundingMode::parse(s)
    }
}

/// What a result beyond the largest finite value becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Overflow {
    /// `ovf`: IEEE 754-2019 §7.4 by rounding direction (see the module table); NaN where
    /// an ieee format would give Inf in formats without Inf.
    #[default]
    Ieee,
    /// `sat`: ±max finite, infinite inputs included (OCP's saturating conversion,
    /// `__NV_SATFINITE`).
    Saturate,
}

impl Overflow {
    /// `ovf` or `sat`.
    pub const fn short_name(self) -> &'static str {
        match self {
            Overflow::Ieee => "ovf",
            Overflow::Saturate => "sat",
        }
    }

    /// Parse `ovf` / `sat` (also `ieee`, `inf`, `saturate`, `satfinite`).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownOverflow`].
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ovf" | "ieee" | "inf" | "nonsat" | "overflow" => Ok(Overflow::Ieee),
            "sat" | "saturate" | "satfinite" | "saturating" => Ok(Overflow::Saturate),
            _ => Err(Error::UnknownOverflow(s.to_string())),
        }
    }
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

impl FromStr for Overflow {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Overflow::parse(s)
    }
}

/// Every policy of a rounding call, explicit (nothing is global).
///
/// ```
/// use lowprec::{RoundOptions, RoundingMode, Overflow};
/// let o = RoundOptions::new(RoundingMode::Stochastic).overflow(Overflow::Saturate).seed(42);
/// assert_eq!(o.mode, RoundingMode::Stochastic);
/// assert_eq!(RoundOptions::default().mode, RoundingMode::NearestEven);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RoundOptions {
    /// The rounding mode.
    pub mode: RoundingMode,
    /// The overflow policy.
    pub overflow: Overflow,
    /// Stochastic rounding: the key of the counter-based generator. Element `i` of a call
    /// uses [`random_bits`]`(seed, index_offset + i)`.
    pub seed: u64,
    /// Stochastic rounding: the index of the first element, so that a tensor rounded in
    /// pieces gets the same bits as in one call.
    pub index_offset: u64,
    /// Stochastic rounding with only `r` random bits (hardware style); 0 = exact.
    pub sr_bits: u32,
}

impl RoundOptions {
    /// Options with the given mode, `ovf` overflow, seed 0.
    pub const fn new(mode: RoundingMode) -> Self {
        RoundOptions {
            mode,
            overflow: Overflow::Ieee,
            seed: 0,
            index_offset: 0,
            sr_bits: 0,
        }
    }

    /// With this overflow policy.
    pub const fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// With this stochastic-rounding seed.
    pub const fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// With this index of the first element (stochastic rounding).
    pub const fn index_offset(mut self, index_offset: u64) -> Self {
        self.index_offset = index_offset;
        self
    }

    /// With hardware-style stochastic rounding on `r` random bits (0 = exact).
    pub const fn sr_bits(mut self, r: u32) -> Self {
        self.sr_bits = r;
        self
    }
}

/// What happened in a rounding call: counts of elements (IEEE 754's flags, counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Status {
    /// Results that differ from their input (overflows and flushes included).
    pub inexact: u64,
    /// Finite inputs whose rounded magnitude exceeds the largest finite value (they became
    /// ±max, ±Inf or NaN according to the policy).
    pub overflow: u64,
    /// Nonzero inputs below the smallest normal whose result is inexact.
    pub underflow: u64,
    /// Nonzero finite inputs that became ±0.
    pub flushed: u64,
    /// NaN inputs.
    pub nan: u64,
    /// ±Inf inputs.
    pub infinite: u64,
    /// Inputs with no value in the format: negative numbers in an unsigned format, zeros in
    /// E8M0 (they give NaN).
    pub invalid: u64,
    /// Results clamped to ±max: overflows under `sat` or toward zero, and infinite inputs
    /// under `sat` or into `none` formats.
    pub saturated: u64,
}

impl Add for Status {
    type Output = Status;
    fn add(self, o: Status) -> Status {
        Status {
            inexact: self.inexact + o.inexact,
            overflow: self.overflow + o.overflow,
            underflow: self.underflow + o.underflow,
            flushed: self.flushed + o.flushed,
            nan: self.nan + o.nan,
            infinite: self.infinite + o.infinite,
            invalid: self.invalid + o.invalid,
            saturated: self.saturated + o.saturated,
        }
    }
}

impl AddAssign for Status {
    fn add_assign(&mut self, o: Status) {
        *self = *self + o;
    }
}

impl FloatFormat {
    /// Round one `f64` to the nearest value of this format under `opts` (one rounding of
    /// the exact input), returned as `f64`. NaN gives NaN.
    ///
    /// ```
    /// use lowprec::{FloatFormat, RoundOptions, RoundingMode, Overflow};
    /// let e4m3 = FloatFormat::FP8_E4M3;
    /// let rne = RoundOptions::default();
    /// assert_eq!(e4m3.round(0.3, &rne), 0.3125);
    /// assert_eq!(e4m3.round(464.0, &rne), 448.0); // the tie goes to even 448
    /// assert!(e4m3.round(465.0, &rne).is_nan());   // overflow: e4m3 has no Inf
    /// let rtz = RoundOptions::new(RoundingMode::TowardZero);
    /// assert_eq!(e4m3.round(1000.0, &rtz), 448.0); // IEEE 754 §7.4
    /// let sat = RoundOptions::default().overflow(Overflow::Saturate);
    /// assert_eq!(FloatFormat::FP16.round(f64::INFINITY, &sat), 65504.0);
    /// ```
    pub fn round(&self, x: f64, opts: &RoundOptions) -> f64 {
        let mut out = [0.0f64];
        // One element: the slice kernel with the same options (infallible for values).
        let _ = round_into(self, &[x], &mut out, opts);
        out[0]
    }

    /// Round one `f64` and return its code.
    ///
    /// # Errors
    ///
    /// [`Error::NotEncodable`] for a NaN into a format without NaN (FP6, FP4).
    ///
    /// ```
    /// use lowprec::{FloatFormat, RoundOptions};
    /// let o = RoundOptions::default();
    /// assert_eq!(FloatFormat::FP8_E4M3.encode(-2.0, &o).unwrap(), 0xc0);
    /// assert_eq!(FloatFormat::BF16.encode(1.0, &o).unwrap(), 0x3f80);
    /// assert_eq!(FloatFormat::E8M0.encode(3.0, &o).unwrap(), 0x81); // tie: up to 4
    /// assert!(FloatFormat::FP4_E2M1.encode(f64::NAN, &o).is_err());
    /// ```
    pub fn encode(&self, x: f64, opts: &RoundOptions) -> Result<u64> {
        let mut out = [0u64];
        encode_into(self, &[x], &mut out, opts)?;
        Ok(out[0])
    }
}
