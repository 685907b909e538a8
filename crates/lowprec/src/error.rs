//! Typed errors for bad arguments and bad data.
//!
//! Every variant names the problem and, where there is one, what to do instead. The CLI
//! adds file and argument context on top of these (with `anyhow`).

use thiserror::Error;

/// The error type of every fallible `lowprec` function.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// A format description that no binary float format can have.
    #[error("invalid format: {0}")]
    InvalidFormat(String),

    /// A format name or custom-format string that does not parse.
    #[error("unknown format `{name}`; known formats: {known}; or write a custom one as [u]e<E>m<M>[b<BIAS>][:ieee|fn|fnuz|none|p3109e|p3109f][:nozero], e.g. e4m3b7:fn, or a P3109 name binary<K>p<P><s|u><e|f>, e.g. binary8p3se")]
    UnknownFormat {
        /// The name as given.
        name: String,
        /// The preset names, comma separated.
        known: String,
    },

    /// A rounding-mode name that does not parse.
    #[error("unknown rounding mode `{0}`; use one of rne, rna, rtz, rup, rdn, rto, sr (or nearest_even, nearest_away, toward_zero, up, down, odd, stochastic)")]
    UnknownRounding(String),

    /// An overflow-policy name that does not parse.
    #[error("unknown overflow policy `{0}`; use ovf (IEEE 754 §7.4: Inf/NaN by rounding direction) or sat (saturate to ±max)")]
    UnknownOverflow(String),

    /// A NaN (or a value with no code, such as a negative number in an unsigned format) met a
    /// format that cannot encode it.
    #[error("{count} input value(s) have no code in {format} (first at index {first}): {why}")]
    NotEncodable {
        /// The target format's name.
        format: String,
        /// How many inputs could not be encoded.
        count: u64,
        /// Index of the first such input.
        first: u64,
        /// Why (for example "it has no NaN code; remove NaNs first or round to values instead").
        why: String,
    },

    /// A code that does not fit in the format's width.
    #[error("code {code:#x} does not fit in {format}'s {bits} bits (largest code {max:#x})")]
    CodeOutOfRange {
        /// The format's name.
        format: String,
        /// The code as given.
        code: u64,
        /// The format's width in bits.
        bits: u32,
        /// The largest code.
        max: u64,
    },

    /// Values of the format do not fit the requested output type.
    #[error("{format} values do not fit in {dtype}; use a float64 output")]
    OutputTooNarrow {
        /// The format's name.
        format: String,
        /// The output type that is too narrow.
        dtype: &'static str,
    },

    /// Codes of the format do not fit the requested integer type.
    #[error("{format} codes have {bits} bits and do not fit in {dtype}; use a wider integer type")]
    CodeTypeTooNarrow {
        /// The format's name.
        format: String,
        /// The code width.
        bits: u32,
        /// The integer type that is too narrow.
        dtype: &'static str,
    },

    /// Slices of different lengths where equal lengths are required.
    #[error("length mismatch: input has {input} elements, output has {output}")]
    LengthMismatch {
        /// The input length.
        input: usize,
        /// The output length.
        output: usize,
    },

    /// An integer outside the range of a two's complement width.
    #[error("{value} is outside the {bits}-bit two's complement range [{lo}, {hi}]")]
    IntOutOfRange {
        /// The value as given.
        value: i64,
        /// The width in bits.
        bits: u32,
        /// The smallest value of the width.
        lo: i64,
        /// The largest value of the width.
        hi: i64,
    },

    /// Any other bad argument, with its explanation.
    #[error("{0}")]
    InvalidArgument(String),

    /// A malformed or unsupported file.
    #[error("{0}")]
    BadFile(String),

    /// A refusal or range error of the binary32 range rules ([`crate::range`]).
    #[error(transparent)]
    Range(crate::range::RangeError),
}

/// `Result` with [`enum@Error`].
pub type Result<T> = std::result::Result<T, Error>;
