//! The generic entry points of the slice API, instantiated here, once, for every element
//! type.
//!
//! A public function generic over [`Float`](crate::Float) or [`Code`](crate::Code) is
//! compiled in the crate that calls it, for the types it is called with (Rust shares no
//! instances of generic code between crates in optimised builds). Each such function is a
//! one-line shell that erases its element types (a code slice into [`CodesMut`], an output
//! float slice into [`FloatsMut`]) and calls the method of [`Instances`] of its input type;
//! the implementations for `f32` and `f64` below are ordinary (non-generic) functions of this
//! crate, compiled once with every kernel they reach, and call the `*_generic` function
//! beside the shell.
//!
//! Before this, the CLI compiled 14.6 MB of lowprec's kernels again and each integration test
//! up to 8.8 MB (`nm` on the `ci` build): the units of lowprec and its CLI took 1303 s of
//! compile time in the test suite's build, 647 s after (`cargo test --no-run --timings`,
//! December 2026); the CLI binary 249 s → 14 s.

use crate::accum::AccumOptions;
use crate::block::mx::MxOptions;
use crate::block::nvfp4::Nvfp4Options;
use crate::block::BlockStatus;
use crate::error::Result;
use crate::format::FloatFormat;
use crate::quant::IntOptions;
use crate::round::{RoundOptions, Status};
use crate::scheme::{Counts, Encoded, Scheme};
use crate::stats::ErrorStats;

/// A code slice of any [`Code`](crate::Code) type.
pub enum Codes<'a> {
    /// `u8` codes.
    U8(&'a [u8]),
    /// `u16` codes.
    U16(&'a [u16]),
    /// `u32` codes.
    U32(&'a [u32]),
    /// `u64` codes.
    U64(&'a [u64]),
}

/// A mutable code slice of any [`Code`](crate::Code) type.
pub enum CodesMut<'a> {
    /// `u8` codes.
    U8(&'a mut [u8]),
    /// `u16` codes.
    U16(&'a mut [u16]),
    /// `u32` codes.
    U32(&'a mut [u32]),
    /// `u64` codes.
    U64(&'a mut [u64]),
}

/// A mutable float slice of either [`Float`](crate::Float) type.
pub enum FloatsMut<'a> {
    /// `f32` values.
    F32(&'a mut [f32]),
    /// `f64` values.
    F64(&'a mut [f64]),
}

/// `$body` with `$d` bound to the slice inside a [`Codes`] or [`CodesMut`] `$e`, for each
/// code type.
macro_rules! with_codes {
    ($kind:ident, $e:expr, $d:ident => $body:expr) => {
        match $e {
            $crate::mono::$kind::U8($d) => $body,
            $crate::mono::$kind::U16($d) => $body,
            $crate::mono::$kind::U32($d) => $body,
            $crate::mono::$kind::U64($d) => $body,
        }
    };
}

/// `$body` with `$d` bound to the slice inside a [`FloatsMut`] `$e`, for each float type.
macro_rules! with_floats {
    ($e:expr, $d:ident => $body:expr) => {
        match $e {
            $crate::mono::FloatsMut::F32($d) => $body,
            $crate::mono::FloatsMut::F64($d) => $body,
        }
    };
}

/// The code type's slices, erased (a supertrait of [`Code`](crate::Code)).
pub trait CodeSlices: Sized {
    /// The slice as [`Codes`].
    fn codes(s: &[Self]) -> Codes<'_>;
    /// The slice as [`CodesMut`].
    fn codes_mut(s: &mut [Self]) -> CodesMut<'_>;
}

macro_rules! code_slices {
    ($t:ty, $v:ident) => {
        impl CodeSlices for $t {
            #[inline(always)]
            fn codes(s: &[Self]) -> Codes<'_> {
                Codes::$v(s)
            }
            #[inline(always)]
            fn codes_mut(s: &mut [Self]) -> CodesMut<'_> {
                CodesMut::$v(s)
            }
        }
    };
}
code_slices!(u8, U8);
code_slices!(u16, U16);
code_slices!(u32, U32);
code_slices!(u64, U64);

/// Declares [`Instances`] from one list of methods (documentation, signature, body) and
/// implements it for `f32` and `f64` (`$v`: the [`FloatsMut`] variant of each).
macro_rules! instances {
    ($(
        $(#[$doc:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty { $body:expr }
    )*) => {
        /// The float type's slices, erased, and the entry points instantiated for it (a
        /// supertrait of [`Float`](crate::Float)): each method is the public generic
        /// function it names, for `Self`, with the other element types erased.
        #[allow(clippy::too_many_arguments)]
        pub trait Instances: Sized {
            /// The slice as [`FloatsMut`].
            fn floats_mut(s: &mut [Self]) -> FloatsMut<'_>;
            $($(#[$doc])* fn $name($($arg: $ty),*) -> $ret;)*
        }
        instances!(@impl f32, F32, $(fn $name($($arg: $ty),*) -> $ret { $body })*);
        instances!(@impl f64, F64, $(fn $name($($arg: $ty),*) -> $ret { $body })*);
    };
    (@impl $t:ty, $v:ident, $(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $body:expr })*) => {
        impl Instances for $t {
            #[inline(always)]
            fn floats_mut(s: &mut [Self]) -> FloatsMut<'_> {
                FloatsMut::$v(s)
            }
            $(
                #[inline(never)]
                fn $name($($arg: $ty),*) -> $ret {
                    $body
                }
            )*
        }
    };
}

instances! {
    /// [`crate::round::round_into`].
    fn round_into(fmt: &FloatFormat, src: &[Self], dst: FloatsMut<'_>, opts: &RoundOptions)
        -> Result<Status> {
        with_floats!(dst, d => crate::round::slice::round_into_generic(fmt, src, d, opts))
    }
    /// [`crate::round::round_in_place`].
    fn round_in_place(fmt: &FloatFormat, data: &mut [Self], opts: &RoundOptions)
        -> Result<Status> {
        crate::round::slice::round_in_place_generic(fmt, data, opts)
    }
    /// [`crate::round::encode_into`].
    fn encode_into(fmt: &FloatFormat, src: &[Self], dst: CodesMut<'_>, opts: &RoundOptions)
        -> Result<Status> {
        with_codes!(CodesMut, dst, d => crate::round::slice::encode_into_generic(fmt, src, d, opts))
    }
    /// [`crate::round::decode_into`] (`Self` the output type).
    fn decode_into(fmt: &FloatFormat, codes: Codes<'_>, dst: &mut [Self]) -> Result<()> {
        with_codes!(Codes, codes, c => crate::round::slice::decode_into_generic(fmt, c, dst))
    }
    /// [`Scheme::quantize_into`].
    fn scheme_quantize_into(
        s: &Scheme,
        x: &[Self],
        shape: &[usize],
        values: &mut [Self],
        codes: CodesMut<'_>,
        enc: &mut Encoded,
    ) -> Result<Counts> {
        with_codes!(CodesMut, codes, c => s.quantize_into_generic(x, shape, values, c, enc))
    }
    /// [`Scheme::general_into`].
    fn scheme_general_into(
        s: &Scheme,
        x: &[Self],
        shape: &[usize],
        values: FloatsMut<'_>,
        codes: CodesMut<'_>,
        enc: &mut Encoded,
    ) -> Result<Counts> {
        with_floats!(values, v => with_codes!(CodesMut, codes, c => s.general_into_generic(x, shape, v, c, enc)))
    }
    /// [`Scheme::dequantize_into`] (`Self` the output type).
    fn scheme_dequantize_into(
        s: &Scheme,
        codes: Codes<'_>,
        enc: &Encoded,
        shape: &[usize],
        out: &mut [Self],
    ) -> Result<()> {
        with_codes!(Codes, codes, c => s.dequantize_into_generic(c, enc, shape, out))
    }
    /// [`crate::block::mx_quantize_into`].
    fn mx_quantize_into(
        x: &[Self],
        row_len: usize,
        opts: &MxOptions,
        values: FloatsMut<'_>,
        codes: &mut [u8],
        scales: &mut [u8],
    ) -> Result<BlockStatus> {
        with_floats!(values, v => crate::block::mx::mx_quantize_into_generic(x, row_len, opts, v, codes, scales))
    }
    /// [`crate::block::mx_encode_into`].
    fn mx_encode_into(
        x: &[Self],
        row_len: usize,
        opts: &MxOptions,
        codes: &mut [u8],
        scales: &mut [u8],
    ) -> Result<BlockStatus> {
        crate::block::mx::mx_encode_into_generic(x, row_len, opts, codes, scales)
    }
    /// [`crate::block::nvfp4_quantize_into`].
    fn nvfp4_quantize_into(
        x: &[Self],
        row_len: usize,
        opts: &Nvfp4Options,
        values: FloatsMut<'_>,
        codes: &mut [u8],
        scales: &mut [u8],
    ) -> Result<(f32, BlockStatus)> {
        with_floats!(values, v => crate::block::nvfp4::nvfp4_quantize_into_generic(x, row_len, opts, v, codes, scales))
    }
    /// [`crate::block::nvfp4_encode_into`].
    fn nvfp4_encode_into(
        x: &[Self],
        row_len: usize,
        opts: &Nvfp4Options,
        codes: &mut [u8],
        scales: &mut [u8],
    ) -> Result<(f32, BlockStatus)> {
        crate::block::nvfp4::encode_piece_into(x, row_len, opts, None, codes, scales)
    }
    /// [`crate::accum::accumulate_into`].
    fn accumulate_into(values: &[Self], cols: usize, out: &mut [f64], opts: &AccumOptions)
        -> Result<Status> {
        crate::accum::accumulate_into_generic(values, cols, out, opts)
    }
    /// [`crate::quant::quantize_int_codes_into`].
    fn quantize_int_codes_into(
        x: &[Self],
        row_len: usize,
        o: &IntOptions,
        values: Option<&mut [Self]>,
        codes: CodesMut<'_>,
        scales: &mut [f64],
        zeros: &mut [f64],
        clips: &mut [f64],
    ) -> Result<(u64, u64)> {
        with_codes!(CodesMut, codes, c => crate::quant::quantize_int_codes_into_generic(
            x, row_len, o, values, c, scales, zeros, clips
        ))
    }
    /// [`ErrorStats::of`].
    fn error_stats(approx: &[Self], exact: &[Self]) -> ErrorStats {
        ErrorStats::of_generic(approx, exact)
    }
}
