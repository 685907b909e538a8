//! Integers: two's complement ranges, encoding, wrapping and saturating arithmetic, and
//! bit strings with field groups.
//!
//! ```
//! use lowprec::int;
//! assert_eq!(int::int_range(8, true).unwrap(), (-128, 127));
//! assert_eq!(int::twos_complement_encode(-1, 8).unwrap(), 0xff);
//! assert_eq!(int::twos_complement_decode(0x80, 8).unwrap(), -128);
//! let mut v = [127 + 1, -129, 5];
//! int::wrap_int_in_place(&mut v, 8).unwrap();
//! assert_eq!(v, [-128, 127, 5]);
//! ```

use crate::error::{Error, Result};

fn check_width(bits: u32, signed: bool) -> Result<()> {
    let max = if signed { 64 } else { 63 };
    if (1..=max).contains(&bits) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "integer width {bits} is outside 1..={max} for {} integers",
            if signed { "signed" } else { "unsigned" }
        )))
    }
}

/// The smallest and largest value of a `bits`-bit integer: `[−2^(bits−1), 2^(bits−1) − 1]`
/// signed (two's complement has one more negative value than positive ones: the top bit
/// weighs `−2^(bits−1)`), `[0, 2^bits − 1]` unsigned.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `bits` is 0, above 64 (signed) or above 63 (unsigned).
pub fn int_range(bits: u32, signed: bool) -> Result<(i64, i64)> {
    check_width(bits, signed)?;
    Ok(if signed {
        let lo = i64::MIN >> (64 - bits);
        (lo, !lo)
    } else {
        (0, ((1u64 << bits) - 1) as i64)
    })
}

/// The `bits`-bit two's complement code of `v` (`v mod 2^bits`, as an unsigned integer).
///
/// # Errors
///
/// [`Error::IntOutOfRange`] when `v` is outside [`int_range`]`(bits, true)`.
///
/// ```
/// assert_eq!(lowprec::int::twos_complement_encode(-128, 8).unwrap(), 0x80);
/// assert!(lowprec::int::twos_complement_encode(128, 8).is_err());
/// ```
pub fn twos_complement_encode(v: i64, bits: u32) -> Result<u64> {
    let (lo, hi) = int_range(bits, true)?;
    if v < lo || v > hi {
        return Err(Error::IntOutOfRange {
            value: v,
            bits,
            lo,
            hi,
        });
    }
    Ok((v as u64) & (u64::MAX >> (64 - bits)))
}

/// The integer of a `bits`-bit two's complement code (bits above `bits` are ignored): the
/// top bit weighs `−2^(bits−1)`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a width outside 1..=64.
pub fn twos_complement_decode(code: u64, bits: u32) -> Result<i64> {
    check_width(bits, true)?;
    Ok(((code << (64 - bits)) as i64) >> (64 - bits))
}

/// Wrap each value into the `bits`-bit signed range, modulo `2^bits` (C's and numpy's
/// fixed-width overflow: `127 + 1 → −128` for 8 bits).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a width outside 1..=64.
pub fn wrap_int_in_place(values: &mut [i64], bits: u32) -> Result<()> {
    check_width(bits, true)?;
    let s = 64 - bits;
    values.iter_mut().for_each(|v| *v = (*v << s) >> s);
    Ok(())
}

/// Clamp each value into the `bits`-bit signed range (`127 + 1 → 127`), the overflow rule
/// of quantization.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a width outside 1..=64.
pub fn saturate_int_in_place(values: &mut [i64], bits: u32) -> Result<()> {
    let (lo, hi) = int_range(bits, true)?;
    values.iter_mut().for_each(|v| *v = (*v).clamp(lo, hi));
    Ok(())
}

/// `code` in binary, `bits` digits, optionally split into groups of the given widths
/// separated by spaces (`[1, 8, 23]` for binary32).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `bits` is outside 1..=64 or the groups do not add up to
/// `bits`.
///
/// ```
/// use lowprec::int::bits_str;
/// assert_eq!(bits_str(0x3f80_0000, 32, Some(&[1, 8, 23])).unwrap(),
///            "0 01111111 00000000000000000000000");
/// assert_eq!(bits_str(5, 4, None).unwrap(), "0101");
/// assert!(bits_str(5, 4, Some(&[1, 2])).is_err());
/// ```
pub fn bits_str(code: u64, bits: u32, groups: Option<&[u32]>) -> Result<String> {
    if !(1..=64).contains(&bits) {
        return Err(Error::InvalidArgument(format!(
            "bit width {bits} is outside 1..=64"
        )));
    }
    let digits: String = (0..bits)
        .rev()
        .map(|i| if (code >> i) & 1 == 1 { '1' } else { '0' })
        .collect();
    let Some(groups) = groups else {
        return Ok(digits);
    };
    if groups.iter().sum::<u32>() != bits {
        return Err(Error::InvalidArgument(format!(
            "field groups {groups:?} add up to {} bits, not {bits}",
            groups.iter().sum::<u32>()
        )));
    }
    let mut out = String::with_capacity(digits.len() + groups.len());
    let mut at = 0usize;
    for (i, &g) in groups.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&digits[at..at + g as usize]);
        at += g as usize;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_the_definition() {
        for bits in 1..=64u32 {
            let (lo, hi) = int_range(bits, true).unwrap();
            assert_eq!(lo as i128, -(1i128 << (bits - 1)));
            assert_eq!(hi as i128, (1i128 << (bits - 1)) - 1);
        }
        for bits in 1..=63u32 {
            assert_eq!(
                int_range(bits, false).unwrap(),
                (0, ((1u64 << bits) - 1) as i64)
            );
        }
        assert!(int_range(0, true).is_err());
        assert!(int_range(64, false).is_err());
    }

    #[test]
    fn encode_decode_round_trip_every_8_bit_value() {
        for v in -128i64..=127 {
            let c = twos_complement_encode(v, 8).unwrap();
            assert!(c <= 0xff);
            assert_eq!(c, (v.rem_euclid(256)) as u64);
            assert_eq!(twos_complement_decode(c, 8).unwrap(), v);
        }
        assert!(twos_complement_encode(-129, 8).is_err());
    }

    #[test]
    fn wrap_and_saturate_agree_with_modular_and_clamp_arithmetic() {
        let mut w: Vec<i64> = (-600..600).collect();
        let mut s = w.clone();
        wrap_int_in_place(&mut w, 8).unwrap();
        saturate_int_in_place(&mut s, 8).unwrap();
        for (i, v) in (-600i64..600).enumerate() {
            assert_eq!(w[i], (v + 128).rem_euclid(256) - 128);
            assert_eq!(s[i], v.clamp(-128, 127));
        }
    }
}
