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
//! Preset names and aliases come first, so `e4m3` is OCP's E4M3 (`fn`); write `e4m3:ieee`
//! for the IEEE-style variant.

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
        if specials == Specials::Fnuz {
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
    /// ```
    pub fn parse(name: &str) -> Result<FloatFormat> {
        let key = squash(name.trim());
        for p in PRESETS {
            if squash(p.name) == key || p.aliases.iter().any(|a| squash(a) == key) {
                return Ok(p.format);
            }
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

impl FromStr for FloatFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        FloatFormat::parse(s)
    }
}
