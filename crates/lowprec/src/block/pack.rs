//! Packed bit layouts for sub-byte codes (little-endian within each byte).
//!
//! ```text
//! 4-bit (fp4, int4): two per byte, element 2i in the low nibble (as torchao)
//!   byte k:  | e(2k+1) bits 7..4 | e(2k) bits 3..0 |
//! 2-bit (int2): four per byte, element 4i in the lowest bits
//!   byte k:  | e(4k+3) 7..6 | e(4k+2) 5..4 | e(4k+1) 3..2 | e(4k) 1..0 |
//! 6-bit (fp6): four per three bytes, a little-endian 24-bit group
//!   bits 0..5 = e(4k), 6..11 = e(4k+1), 12..17 = e(4k+2), 18..23 = e(4k+3)
//!   byte 3k = bits 0..7, byte 3k+1 = bits 8..15, byte 3k+2 = bits 16..23
//! 8-bit: one per byte (MX and NVFP4 scales, fp8 and int8 elements)
//! other widths b ≤ 8 (int3, int5, int7, …): a little-endian bit stream, element i in bits
//!   [b·i, b·i + b) counting from bit 0 of byte 0 (the layouts above are this rule too)
//! ```
//!
//! A trailing partial group is padded with zero codes (6-bit codes to a whole group of
//! three bytes, other widths to a whole byte). [`unpack`] needs the element count.
//!
//! ```
//! use lowprec::block::pack::{pack, unpack};
//! assert_eq!(pack(&[0x1, 0x2, 0x3], 4).unwrap(), [0x21, 0x03]);
//! assert_eq!(pack(&[1, 2, 3, 4], 6).unwrap(), [0x81, 0x30, 0x10]);
//! assert_eq!(unpack(&[0x81, 0x30, 0x10], 6, 4).unwrap(), [1, 2, 3, 4]);
//! ```

use crate::error::{Error, Result};

fn check_bits(bits: u32) -> Result<()> {
    if (1..=8).contains(&bits) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "packing is defined for codes of 1 to 8 bits, not {bits}"
        )))
    }
}

/// Bytes holding `n` packed codes of `bits` bits.
pub fn packed_len(n: usize, bits: u32) -> usize {
    match bits {
        6 => n.div_ceil(4) * 3,
        b => (n * b as usize).div_ceil(8),
    }
}

/// Pack codes (each below `2^bits`) into bytes.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an unsupported width or a code that does not fit it.
pub fn pack(codes: &[u8], bits: u32) -> Result<Vec<u8>> {
    check_bits(bits)?;
    if bits < 8 {
        if let Some(i) = codes.iter().position(|&c| c >> bits != 0) {
            return Err(Error::InvalidArgument(format!(
                "code {:#x} at index {i} does not fit in {bits} bits",
                codes[i]
            )));
        }
    }
    let mut out = vec![0u8; packed_len(codes.len(), bits)];
    match bits {
        8 => out.copy_from_slice(codes),
        4 => out.iter_mut().zip(codes.chunks(2)).for_each(|(o, c)| {
            *o = c[0] | c.get(1).map_or(0, |h| h << 4);
        }),
        2 => out.iter_mut().zip(codes.chunks(4)).for_each(|(o, c)| {
            *o = c
                .iter()
                .enumerate()
                .fold(0, |a, (i, &v)| a | (v << (2 * i)));
        }),
        6 => out.chunks_mut(3).zip(codes.chunks(4)).for_each(|(o, c)| {
            let w = c
                .iter()
                .enumerate()
                .fold(0u32, |a, (i, &v)| a | ((v as u32) << (6 * i)));
            o.copy_from_slice(&w.to_le_bytes()[..3]);
        }),
        b => {
            for (i, &v) in codes.iter().enumerate() {
                let at = i * b as usize;
                let w = (v as u16) << (at % 8);
                out[at / 8] |= w as u8;
                if at % 8 + b as usize > 8 {
                    out[at / 8 + 1] |= (w >> 8) as u8;
                }
            }
        }
    }
    Ok(out)
}

/// Unpack `n` codes of `bits` bits.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for an unsupported width or too few bytes.
pub fn unpack(bytes: &[u8], bits: u32, n: usize) -> Result<Vec<u8>> {
    check_bits(bits)?;
    if bytes.len() < packed_len(n, bits) {
        return Err(Error::InvalidArgument(format!(
            "{} bytes cannot hold {n} packed {bits}-bit codes (need {})",
            bytes.len(),
            packed_len(n, bits)
        )));
    }
    let mask = ((1u32 << bits) - 1) as u8;
    Ok((0..n)
        .map(|i| match bits {
            8 => bytes[i],
            4 => (bytes[i / 2] >> (4 * (i % 2))) & mask,
            2 => (bytes[i / 4] >> (2 * (i % 4))) & mask,
            6 => {
                let g = &bytes[3 * (i / 4)..3 * (i / 4) + 3];
                let w = u32::from_le_bytes([g[0], g[1], g[2], 0]);
                ((w >> (6 * (i % 4))) as u8) & mask
            }
            b => {
                let at = i * b as usize;
                let lo = bytes[at / 8] as u16;
                let hi = bytes.get(at / 8 + 1).copied().unwrap_or(0) as u16;
                (((lo | (hi << 8)) >> (at % 8)) as u8) & mask
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_at_every_width_and_length() {
        for bits in 1u32..=8 {
            let all: Vec<u8> = (0..(1u32 << bits)).map(|c| c as u8).collect();
            for n in 0..=all.len() + 5 {
                let codes: Vec<u8> = (0..n).map(|i| all[(i * 7 + 3) % all.len()]).collect();
                let p = pack(&codes, bits).unwrap();
                assert_eq!(p.len(), packed_len(n, bits));
                assert_eq!(
                    unpack(&p, bits, n).unwrap(),
                    codes,
                    "{bits} bits, {n} codes"
                );
            }
        }
    }

    #[test]
    fn layouts_put_element_zero_in_the_low_bits() {
        assert_eq!(pack(&[0xa, 0x5], 4).unwrap(), [0x5a]);
        assert_eq!(pack(&[1, 2, 3, 0], 2).unwrap(), [0b00_11_10_01]);
        assert_eq!(pack(&[0x3f, 0, 0, 0], 6).unwrap(), [0x3f, 0, 0]);
        assert_eq!(pack(&[0, 0, 0, 0x3f], 6).unwrap(), [0, 0, 0xfc]);
        assert!(pack(&[0x10], 4).is_err());
        assert_eq!(
            pack(&[0b101, 0b011, 0b111], 3).unwrap(),
            [0b11_011_101, 0b1]
        );
        assert!(pack(&[1], 9).is_err());
        assert!(pack(&[8], 3).is_err());
        assert!(unpack(&[0], 6, 1).is_err());
    }
}
