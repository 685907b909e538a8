//! # lowprec
//!
//! Bit-exact low-precision number formats: any binary float format as data, every rounding
//! mode, saturating and IEEE overflow, encode and decode, fast over slices.
//!
//! ```
//! use lowprec::{encode_into, round_into, FloatFormat, Overflow, RoundOptions, RoundingMode};
//!
//! let e4m3: FloatFormat = "float8_e4m3fn".parse()?;
//! assert_eq!(e4m3.encode(448.0, &RoundOptions::default())?, 0x7e);
//! assert_eq!(e4m3.round(1.01, &RoundOptions::new(RoundingMode::Up)), 1.125);
//!
//! let x = [0.1f32, 1.0, 300.0, 1e-4, 1000.0];
//! let mut codes = [0u8; 5];
//! let opts = RoundOptions::new(RoundingMode::NearestEven).overflow(Overflow::Saturate);
//! let status = encode_into(&e4m3, &x, &mut codes, &opts)?;
//! assert_eq!(codes, [0x1d, 0x38, 0x79, 0x00, 0x7e]);
//! assert_eq!((status.flushed, status.saturated), (1, 1));
//! let mut y = [0f32; 5];
//! round_into(&e4m3, &x, &mut y, &RoundOptions::new(RoundingMode::Stochastic).seed(7))?;
//! # Ok::<(), lowprec::Error>(())
//! ```
//!
//! Every policy is an explicit argument ([`RoundOptions`]); every call reports what happened
//! ([`Status`]). See `docs/formats.md` for the exact semantics and where they differ from the seed
//! `numfmt.py`.
//!
//! | module | what |
//! |---|---|
//! | [`mod@format`] | [`FloatFormat`]: widths, bias, specials; derived quantities; presets; names |
//! | [`round`] | modes, overflow policy, [`Status`]; scalar and slice rounding, encoding, decoding |
//! | [`exact`] | exact numeric literals (decimal of any length, hexadecimal floats) rounded once into a format |
//! | [`int`] | two's complement, wrapping and saturating integers, bit strings |
//! | [`mod@reference`] | a slow, exact reference rounding that the tests hold the kernels to |
//! | [`io`] | `.npy` and `.safetensors` files (memory-mapped), atomic writes |
//! | [`block`] | OCP MX and NVFP4 block scaling, per-tensor scaling, bit packing |
//! | [`quant`] | affine integer quantization per tensor, channel or group, clipping |
//! | [`scheme`] | quantization schemes as data: element × blocks × scale format × rule × second level × rotation; named recipes (`mxfp4`, `nvfp4:convention=te`, `fp8:group=128`, …) |
//! | [`accum`] | accumulation in a low-precision format (sequential, pairwise, Kahan, promotion); dot products and GEMM |
//! | [`reduce`] | stable softmax (online, mergeable) and variance (Welford, Chan's merge) |
//! | [`metrics`] | relative error, SQNR, max abs error, ulp error |
//! | [`stats`] | mergeable error statistics: SQNR, cosine, RMSE, NMSE, percentiles, exact to merge |
//! | [`report`] | the quantization report: every tensor × scheme, bits per element and error; built-in tensors |
//! | [`layer_group`] | tensor names to layer groups (embeddings, attention, MLP, norms, yours) and the report's totals per group |
//! | [`range`] | range-safe binary32: precision record, block exponents, coefficients, pairwise / prefix / scaled-square sums, a soliton solver that proves them |
//! | [`simd`] | runtime instruction-set dispatch and the hand-written vector kernels |
//!
//! `unsafe` lives in two places only, each with its safety argument: [`simd`] (target-feature
//! functions called after run-time detection) and the private `io::mmap` (read-only memory
//! maps). Everything else is `#![deny(unsafe_code)]`; the CLI and the Python crate forbid it.
//! `ARCHITECTURE.md` at the repository root is the map of the code.

#![deny(unsafe_code)]

pub mod accum;
pub mod block;
pub mod error;
pub mod exact;
pub mod format;
pub mod ggml;
pub mod int;
pub mod io;
pub mod layer_group;
pub mod metrics;
mod mono;
pub mod ops;
pub mod quant;
pub mod range;
pub mod reduce;
pub mod reference;
pub mod report;
pub mod round;
pub mod scheme;
#[allow(unsafe_code)]
pub mod simd;
pub mod stats;

pub use error::{Error, Result};
pub use format::{FloatFormat, Specials};
pub use round::{
    decode_into, decode_vec, encode_into, encode_vec, round_in_place, round_into, round_vec, Code,
    Float, Overflow, RoundOptions, Rounder, RoundingMode, Status,
};

/// The Rust examples of the documentation pages (`docs/*.md`), run as doctests.
#[cfg(doctest)]
mod docs_pages {
    #[doc = include_str!("../../../docs/formats.md")]
    struct Formats;
    #[doc = include_str!("../../../docs/schemes.md")]
    struct Schemes;
    #[doc = include_str!("../../../docs/accumulation.md")]
    struct Accumulation;
    #[doc = include_str!("../../../docs/range.md")]
    struct Range;
    #[doc = include_str!("../../../ARCHITECTURE.md")]
    struct Architecture;
}
