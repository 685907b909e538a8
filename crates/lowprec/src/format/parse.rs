//! Format names: presets, their aliases, and the custom-format syntax.
//!
//! # Custom syntax
//!
//! ```text
//! [u]e<E>m<M>[b<BIAS>][:ieee|:fn|:fnuz|:none][:nozero]
//! ```
//!
//! * `u`: unsigned (no sign bit);
//! * `E`, `M`: exponent and mantissa widths;
//! * `BIAS`: the exponent bias (may be negative); default `2^(E−1) − 1`, or `2^(E−1)` for
//!   `fnuz` (as ml_dtypes' fnuz types);
//! * specials (see [`Specials`]): default `ieee` for signed formats, `fn` for unsigned ones;
//! * `nozero`: exponent field 0 is an ordinary binade (no zero, no subnormals), as in E8M0.
//!
//! * `p3109e` / `p3109f`: the IEEE P3109 extended / finite policies (see [`Specials`]).
//!
//! Preset names and aliases come first, so `e4m3` is OCP's E4M3 (`fn`); write `e4m3:ieee`
//! for the IEEE-style variant.
//!
//! # P3109 names
//!
//! ```text
//! binary<K>p<P><s|u><e|f>
//! ```
//!
//! The IEEE P3109 draft's own names (any case, `-`/`_` ignored): `K` bits, precision `P`,
//! `s`igned or `u`nsigned, `e`xtended or `f`inite; see [`FloatFormat::p3109`].

use super::{FloatFormat, Specials, PRESETS};
use crate::error::{Error, Result};
use std::str::FromStr;

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Parse a non-negative decimal integer at the front of `s`: (value, rest).
fn number(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `binary<K>p<P><s|u><e|f>` (already lower-cased and squashed).
fn parse_p3109(key: &str) -> Option<Result<FloatFormat>> {
    let (k, rest) = number(key.strip_prefix("binary")?)?;
    let (p, rest) = number(rest.strip_prefix('p')?)?;
    let mut c = rest.chars();
    let signed = match c.next()? {
        's' => true,
        'u' => false,
        _ => return None,
    };
    let extended = match c.next()? {
        'e' => true,
        'f' => false,
        _ => return None,
    };
    if c.next().is_some() {
        return None;
    }
    Some(FloatFormat::p3109(k, p, signed, extended))
}

fn parse_custom(s: &str) -> Option<Result<FloatFormat>> {
    let mut parts = s.split(':');
    let head = parts.next()?;
    let (signed, head) = match head.strip_prefix('u') {
        Some(rest) => (false, rest),
        None => (true, head),
    };
    let (e, rest) = number(head.strip_prefix('e')?)?;
    let (m, rest) = number(rest.strip_prefix('m')?)?;
    let bias = match rest.strip_prefix('b') {
        None if rest.is_empty() => None,
        None => return None,
        Some(b) => Some(b.parse::<i32>().ok()?),
    };
    let mut specials = None;
    let mut zero = true;
    for opt in parts {
        match opt {
            "ieee" => specials = Some(Specials::Ieee),
            "fn" => specials = Some(Specials::Fn),
            "fnuz" => specials = Some(Specials::Fnuz),
            "none" => specials = Some(Specials::None),
            "p3109e" => specials = Some(Specials::P3109Extended),
            "p3109f" => specials = Some(Specials::P3109Finite),
            "nozero" => zero = false,
            _ => return None,
        }
    }
    let specials = specials.unwrap_or(if signed { Specials::Ieee } else { Specials::Fn });
    if e == 0 || e > 11 {
        return Some(Err(Error::InvalidFormat(format!(
            "exponent width {e} is outside 1..=11"
        ))));
    }
    let bias = bias.unwrap_or_else(|| {
        let half = 1i32 << (e - 1);
        if specials == Specials::Fnuz || (specials.is_p3109() && signed) {
            half
        } else {
            half - 1
        }
    });
    Some(FloatFormat::new(e, m, bias, specials, signed, zero))
}

impl FloatFormat {
    /// Parse a preset name or alias (case-insensitive; `-`, `_` and spaces ignored, so
    /// `FP8_E4M3`, `float8_e4m3fn` and `e4m3` all name OCP E4M3) or a custom format in the
    /// syntax of this module's documentation.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownFormat`] listing the presets, or [`Error::InvalidFormat`] when a
    /// custom format parses but cannot exist.
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// assert_eq!(FloatFormat::parse("float8_e4m3fn").unwrap(), FloatFormat::FP8_E4M3);
    /// assert_eq!(FloatFormat::parse("BFloat16").unwrap(), FloatFormat::BF16);
    /// assert_eq!(FloatFormat::parse("e4m3b7:fn").unwrap(), FloatFormat::FP8_E4M3);
    /// assert_eq!(FloatFormat::parse("e5m2b16:fnuz").unwrap(), FloatFormat::FP8_E5M2_FNUZ);
    /// let custom = FloatFormat::parse("e3m4").unwrap();
    /// assert_eq!((custom.bias(), custom.max_finite()), (3, 15.5));
    /// assert!(FloatFormat::parse("fp7").is_err());
    /// let p = FloatFormat::parse("Binary8p3se").unwrap();
    /// assert_eq!((p.exp_bits(), p.man_bits(), p.bias()), (5, 2, 16));
    /// ```
    pub fn parse(name: &str) -> Result<FloatFormat> {
        let key = squash(name.trim());
        for p in PRESETS {
            if squash(p.name) == key || p.aliases.iter().any(|a| squash(a) == key) {
                return Ok(p.format);
            }
        }
        if let Some(r) = parse_p3109(&key) {
            return r;
        }
        match parse_custom(&name.trim().to_lowercase()) {
            Some(r) => r,
            None => Err(Error::UnknownFormat {
                name: name.to_string(),
                known: PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

impl FloatFormat {
    /// The IEEE P3109 format `Binary{K}p{P}{s|u}{e|f}`: `k` bits, precision `p` (so `p − 1`
    /// trailing significand bits), signed or unsigned, extended (±Inf) or finite.
    ///
    /// | | exponent width | bias | NaN | +Inf / −Inf (extended) |
    /// |---|---|---|---|---|
    /// | signed | `K − P` | `2^(K−P−1)` | `2^(K−1)` | `2^(K−1) − 1` / `2^K − 1` |
    /// | unsigned | `K − P + 1` | `2^(K−P)` | `2^K − 1` | `2^K − 2` / none |
    ///
    /// One zero (code 0, no −0), subnormals in exponent field 0.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFormat`] when `k < 3`, `p < 1`, `p ≥ k` for a signed format or
    /// `p > k` for an unsigned one, or when the exponent width exceeds 10 (the range would
    /// leave binary64's normal range, which holds every lowprec format's values:
    /// `Binary16p1`..`p5` signed and `Binary16p1`..`p6` unsigned are not available).
    ///
    /// ```
    /// use lowprec::FloatFormat;
    /// let f = FloatFormat::p3109(8, 4, true, true).unwrap();
    /// assert_eq!(f.name(), "binary8p4se");
    /// assert_eq!(f.max_finite(), 224.0);
    /// assert!(f.decode(0x80).is_nan());
    /// assert_eq!(f.decode(0xff), f64::NEG_INFINITY);
    /// let s = FloatFormat::p3109(8, 1, false, false).unwrap(); // the scale format
    /// assert_eq!((s.decode(0), s.decode(1), s.decode(0xfe)), (0.0, 2f64.powi(-127), 2f64.powi(126)));
    /// ```
    pub fn p3109(k: u32, p: u32, signed: bool, extended: bool) -> Result<FloatFormat> {
        let bad = |why: String| Err(Error::InvalidFormat(why));
        let name = format!(
            "binary{k}p{p}{}{}",
            if signed { 's' } else { 'u' },
            if extended { 'e' } else { 'f' }
        );
        if k < 3 || p < 1 || (signed && p >= k) || (!signed && p > k) {
            return bad(format!(
                "{name}: P3109 needs K ≥ 3 and 1 ≤ P ≤ K − 1 (signed) or P ≤ K (unsigned)"
            ));
        }
        let exp_bits = k - p + u32::from(!signed);
        if exp_bits > 10 {
            return bad(format!(
                "{name}: exponent width {exp_bits} puts the range beyond binary64's; lowprec takes P3109 formats with K − P ≤ 10 (signed) or K − P ≤ 9 (unsigned)"
            ));
        }
        let bias = 1i32 << (exp_bits - 1);
        let specials = if extended {
            Specials::P3109Extended
        } else {
            Specials::P3109Finite
        };
        FloatFormat::new(exp_bits, p - 1, bias, specials, signed, true)
    }

    /// `(K, P, signed, extended)` when this is a P3109 format with the draft's bias.
    pub fn p3109_params(&self) -> Option<(u32, u32, bool, bool)> {
        if !self.specials().is_p3109() || self.bias() != 1 << (self.exp_bits() - 1) {
            return None;
        }
        Some((
            self.bits(),
            self.man_bits() + 1,
            self.is_signed(),
            self.specials() == Specials::P3109Extended,
        ))
    }
}

impl FromStr for FloatFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        FloatFormat::parse(s)
    }
}
