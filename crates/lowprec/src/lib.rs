//! # lowprec
//!
//! Bit-exact low-precision number formats: any binary float format as data, every rounding
//! mode, saturating and IEEE overflow, encode and decode, fast over slices.
//!
//! ```
//! use lowprec::{FloatFormat, RoundOptions, RoundingMode};
//! let e4m3: FloatFormat = "fp8-e4m3".parse().unwrap();
//! assert_eq!(e4m3.encode(448.0, &RoundOptions::default()).unwrap(), 0x7e);
//! let up = RoundOptions::new(RoundingMode::Up);
//! assert_eq!(e4m3.round(1.01, &up), 1.125);
//! ```
//!
//! | module | what |
//! |---|---|
//! | [`mod@format`] | [`FloatFormat`]: widths, bias, specials; derived quantities; presets; names |
//! | [`round`] | modes, overflow policy, [`Status`]; scalar and slice rounding, encoding, decoding |
//! | [`int`] | two's complement, wrapping and saturating integers, bit strings |
//! | [`mod@reference`] | a slow, exact reference rounding that the tests hold the kernels to |
//! | [`io`] | `.npy` files |
//! | [`simd`] | runtime instruction-set dispatch (the only `unsafe`) |

#![deny(unsafe_code)]

pub mod error;
pub mod format;
pub mod int;
pub mod io;
pub mod reference;
pub mod round;
#[allow(unsafe_code)]
pub mod simd;

pub use error::{Error, Result};
pub use format::{FloatFormat, Specials};
pub use round::{
    decode_into, decode_vec, encode_into, encode_vec, round_in_place, round_into, round_vec, Code,
    Float, Overflow, RoundOptions, RoundingMode, Status,
};
