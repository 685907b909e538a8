//! ggml's tensor types (the types of GGUF files): the type table, and dequantization and
//! quantization bit for bit equal to llama.cpp's reference (the `gguf` Python package's
//! `quants.py`, itself checked against `ggml-quants.c`).
//!
//! Every type is a row of one table ([`GgmlType`]): its number in the file format, its name,
//! the elements per block and the bytes per block, and the functions that decode a run of
//! whole blocks to `f32` and, for the types with a reference quantizer, encode `f32` blocks.
//! Each function works on whole blocks (`src.len() = n · type_size`,
//! `out.len() = n · block_size`); [`dequantize`] and [`quantize`] check the lengths, split
//! the work into pieces of whole blocks and run the pieces in parallel above a threshold, so
//! the result is the same whatever the thread count.
//!
//! The arithmetic follows the reference operation for operation in binary32 (Rust never
//! contracts `a * b + c` into a fused multiply-add), which is what makes the results
//! identical rather than close.
//!
//! ```
//! use lowprec::ggml::{self, GgmlType};
//!
//! let t: GgmlType = "q8_0".parse()?;
//! assert_eq!((t.id(), t.block_size(), t.type_size()), (8, 32, 34));
//! let x: Vec<f32> = (0..32).map(|i| i as f32 - 15.5).collect();
//! let mut q = vec![0u8; t.type_size()];
//! ggml::quantize(t, &x, &mut q)?;
//! let mut y = vec![0f32; 32];
//! ggml::dequantize(t, &q, &mut y)?;
//! assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 15.5 / 127.0));
//! # Ok::<(), lowprec::Error>(())
//! ```

mod fp4;
mod grids;
mod iquants;
mod kquants;
mod legacy;
mod plain;
mod ternary;

use crate::error::{Error, Result};
use rayon::prelude::*;

/// Decode a run of whole blocks: `src.len() = n · type_size`, `out.len() = n · block_size`.
pub type DequantizeFn = fn(src: &[u8], out: &mut [f32]);
/// Encode a run of whole blocks: `src.len() = n · block_size`, `out.len() = n · type_size`.
pub type QuantizeFn = fn(src: &[f32], out: &mut [u8]);

/// One row of the type table.
struct Row {
    name: &'static str,
    id: u32,
    block_size: usize,
    type_size: usize,
    dequantize: Option<DequantizeFn>,
    quantize: Option<QuantizeFn>,
}

macro_rules! ggml_types {
    ($($(#[$doc:meta])* $v:ident = $id:literal, $name:literal, $block:literal, $size:expr, $deq:expr, $q:expr;)*) => {
        /// A ggml tensor type, as numbered in GGUF files (`ggml_type` in `ggml.h`,
        /// `GGMLQuantizationType` in the `gguf` package).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        pub enum GgmlType {
            $($(#[$doc])* $v,)*
        }

        impl GgmlType {
            /// Every type, in the order of their numbers.
            pub const ALL: &'static [GgmlType] = &[$(GgmlType::$v,)*];

            fn row(self) -> &'static Row {
                match self {
                    $(GgmlType::$v => &Row {
                        name: $name,
                        id: $id,
                        block_size: $block,
                        type_size: $size,
                        dequantize: $deq,
                        quantize: $q,
                    },)*
                }
            }
        }
    };
}

const QK_K: usize = 256;

ggml_types! {
    /// IEEE binary32.
    F32 = 0, "F32", 1, 4, Some(plain::dequantize_f32), Some(plain::quantize_f32);
    /// IEEE binary16.
    F16 = 1, "F16", 1, 2, Some(plain::dequantize_f16), Some(plain::quantize_f16);
    /// 32 elements: an f16 scale `d` and 4-bit codes `q`, `x = d · (q − 8)`.
    Q4_0 = 2, "Q4_0", 32, 2 + 16, Some(legacy::dequantize_q4_0), Some(legacy::quantize_q4_0);
    /// 32 elements: f16 scale `d` and minimum `m`, 4-bit codes, `x = d · q + m`.
    Q4_1 = 3, "Q4_1", 32, 2 + 2 + 16, Some(legacy::dequantize_q4_1), Some(legacy::quantize_q4_1);
    /// 32 elements: f16 scale, 5-bit codes (high bits packed apart), `x = d · (q − 16)`.
    Q5_0 = 6, "Q5_0", 32, 2 + 4 + 16, Some(legacy::dequantize_q5_0), Some(legacy::quantize_q5_0);
    /// 32 elements: f16 scale and minimum, 5-bit codes, `x = d · q + m`.
    Q5_1 = 7, "Q5_1", 32, 2 + 2 + 4 + 16, Some(legacy::dequantize_q5_1), Some(legacy::quantize_q5_1);
    /// 32 elements: an f16 scale and int8 codes, `x = d · q`.
    Q8_0 = 8, "Q8_0", 32, 2 + 32, Some(legacy::dequantize_q8_0), Some(legacy::quantize_q8_0);
    /// 32 elements: f32 scale and sum, int8 codes (llama.cpp's intermediate dot-product type; no reference dequantizer).
    Q8_1 = 9, "Q8_1", 32, 4 + 4 + 32, None, None;
    /// 256 elements, 16 sub-blocks of 16 with 4-bit scales and minima, 2-bit codes.
    Q2_K = 10, "Q2_K", 256, 2 + 2 + QK_K / 16 + QK_K / 4, Some(kquants::dequantize_q2_k), None;
    /// 256 elements, 16 sub-blocks of 16 with 6-bit scales, 3-bit codes.
    Q3_K = 11, "Q3_K", 256, 2 + QK_K / 4 + QK_K / 8 + 12, Some(kquants::dequantize_q3_k), None;
    /// 256 elements, 8 sub-blocks of 32 with 6-bit scales and minima, 4-bit codes.
    Q4_K = 12, "Q4_K", 256, 2 + 2 + QK_K / 2 + 12, Some(kquants::dequantize_q4_k), None;
    /// 256 elements, 8 sub-blocks of 32 with 6-bit scales and minima, 5-bit codes.
    Q5_K = 13, "Q5_K", 256, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, Some(kquants::dequantize_q5_k), None;
    /// 256 elements, 16 sub-blocks of 16 with int8 scales, 6-bit codes.
    Q6_K = 14, "Q6_K", 256, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, Some(kquants::dequantize_q6_k), None;
    /// 256 elements: f32 scale, int8 codes and block sums (an intermediate type; no reference dequantizer).
    Q8_K = 15, "Q8_K", 256, 4 + QK_K + QK_K / 8, None, None;
    /// 256 elements, 2.06 bits each: an E8 lattice codebook of 256 entries, signs by parity.
    IQ2_XXS = 16, "IQ2_XXS", 256, 2 + QK_K / 4, Some(iquants::dequantize_iq2_xxs), None;
    /// 256 elements, 2.31 bits each: a codebook of 512 entries, 4-bit sub-block scales.
    IQ2_XS = 17, "IQ2_XS", 256, 2 + QK_K / 4 + QK_K / 32, Some(iquants::dequantize_iq2_xs), None;
    /// 256 elements, 3.06 bits each: a codebook of 256 groups of 4.
    IQ3_XXS = 18, "IQ3_XXS", 256, 2 + QK_K / 4 + QK_K / 8, Some(iquants::dequantize_iq3_xxs), None;
    /// 256 elements, 1.56 bits each: a codebook of 2048 groups of 8 with shifts.
    IQ1_S = 19, "IQ1_S", 256, 2 + QK_K / 8 + QK_K / 16, Some(iquants::dequantize_iq1_s), None;
    /// 32 elements: an f16 scale and 4-bit indices into a non-linear table of 16 values.
    IQ4_NL = 20, "IQ4_NL", 32, 2 + 16, Some(iquants::dequantize_iq4_nl), None;
    /// 256 elements, 3.44 bits each: a codebook of 512 groups of 4, explicit signs.
    IQ3_S = 21, "IQ3_S", 256, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, Some(iquants::dequantize_iq3_s), None;
    /// 256 elements, 2.5 bits each: a codebook of 1024 entries, explicit signs.
    IQ2_S = 22, "IQ2_S", 256, 2 + QK_K / 4 + QK_K / 16, Some(iquants::dequantize_iq2_s), None;
    /// 256 elements: the IQ4_NL table with 6-bit sub-block scales.
    IQ4_XS = 23, "IQ4_XS", 256, 2 + 2 + QK_K / 2 + QK_K / 64, Some(iquants::dequantize_iq4_xs), None;
    /// 8-bit integers (copied through, not a float type).
    I8 = 24, "I8", 1, 1, None, None;
    /// 16-bit integers (copied through).
    I16 = 25, "I16", 1, 2, None, None;
    /// 32-bit integers (copied through).
    I32 = 26, "I32", 1, 4, None, None;
    /// 64-bit integers (copied through).
    I64 = 27, "I64", 1, 8, None, None;
    /// IEEE binary64 (decoded to the nearest binary32, ties to even).
    F64 = 28, "F64", 1, 8, Some(plain::dequantize_f64), None;
    /// 256 elements, 1.75 bits each: the IQ1_S codebook with per-16 shifts and packed f16 scale.
    IQ1_M = 29, "IQ1_M", 256, QK_K / 8 + QK_K / 16 + QK_K / 32, Some(iquants::dequantize_iq1_m), None;
    /// bfloat16 (quantized with ggml's rounding: NaN made quiet, ties to even).
    BF16 = 30, "BF16", 1, 2, Some(plain::dequantize_bf16), Some(plain::quantize_bf16);
    /// 256 ternary elements, 1.69 bits each: five trits per byte, an f16 scale.
    TQ1_0 = 34, "TQ1_0", 256, 2 + 4 * 13, Some(ternary::dequantize_tq1_0), Some(ternary::quantize_tq1_0);
    /// 256 ternary elements, 2.06 bits each: four 2-bit codes per byte, an f16 scale.
    TQ2_0 = 35, "TQ2_0", 256, 2 + 64, Some(ternary::dequantize_tq2_0), Some(ternary::quantize_tq2_0);
    /// ggml's MXFP4: 32 E2M1 elements and an E8M0 scale (split-half nibbles; scale from ⌊log2 amax⌋ − 2).
    MXFP4 = 39, "MXFP4", 32, 1 + 16, Some(fp4::dequantize_mxfp4), Some(fp4::quantize_mxfp4);
    /// ggml's NVFP4: 64 E2M1 elements in four sub-blocks of 16, each with a UE4M3 scale (×0.5), no tensor scale.
    NVFP4 = 40, "NVFP4", 64, 4 + 32, Some(fp4::dequantize_nvfp4), None;
    /// 128 one-bit elements and an f16 scale (no reference dequantizer in `gguf` 0.19).
    Q1_0 = 41, "Q1_0", 128, 2 + 16, None, None;
}

impl GgmlType {
    /// The type's number in GGUF files.
    pub fn id(self) -> u32 {
        self.row().id
    }

    /// The type's name as llama.cpp spells it (`Q4_K`, `IQ2_XXS`, `BF16`).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Elements per block (1 for the plain types).
    pub fn block_size(self) -> usize {
        self.row().block_size
    }

    /// Bytes per block.
    pub fn type_size(self) -> usize {
        self.row().type_size
    }

    /// Bits per element, `8 · type_size / block_size` (4.5 for Q4_0, 4.5 for Q4_K).
    pub fn bits_per_element(self) -> f64 {
        8.0 * self.type_size() as f64 / self.block_size() as f64
    }

    /// Whether [`dequantize`] decodes this type (every float and block type; not the
    /// integer types, nor the intermediate types Q8_1 and Q8_K, nor Q1_0).
    pub fn can_dequantize(self) -> bool {
        self.row().dequantize.is_some()
    }

    /// Whether [`quantize`] encodes this type bit for bit as the reference does.
    pub fn can_quantize(self) -> bool {
        self.row().quantize.is_some()
    }

    /// Whether the type holds integers (I8 … I64), which GGUF tools copy through.
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            GgmlType::I8 | GgmlType::I16 | GgmlType::I32 | GgmlType::I64
        )
    }

    /// The type with number `id`.
    ///
    /// # Errors
    ///
    /// [`Error::BadFile`] naming the number when no ggml type has it.
    pub fn from_id(id: u32) -> Result<GgmlType> {
        GgmlType::ALL
            .iter()
            .copied()
            .find(|t| t.id() == id)
            .ok_or_else(|| {
                Error::BadFile(format!(
                    "unknown ggml tensor type {id}; known: {}",
                    known_names()
                ))
            })
    }

    /// Bytes of `n` elements, or an error when `n` is not a whole number of blocks.
    ///
    /// # Errors
    ///
    /// [`Error::BadFile`] when `n` is not a multiple of the block size, or the size overflows.
    pub fn bytes_for(self, n: u64) -> Result<u64> {
        let b = self.block_size() as u64;
        if !n.is_multiple_of(b) {
            return Err(Error::BadFile(format!(
                "{n} elements are not a whole number of {} blocks of {b}",
                self.name()
            )));
        }
        (n / b)
            .checked_mul(self.type_size() as u64)
            .ok_or_else(|| Error::BadFile(format!("{n} elements of {} overflow", self.name())))
    }
}

fn known_names() -> String {
    GgmlType::ALL
        .iter()
        .map(|t| format!("{} ({})", t.name(), t.id()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for GgmlType {
    type Err = Error;

    /// A type by name, any case (`q4_k`, `Q4_K`, `iq2_xxs`).
    fn from_str(s: &str) -> Result<GgmlType> {
        GgmlType::ALL
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown ggml type `{s}`; known: {}",
                    GgmlType::ALL
                        .iter()
                        .map(|t| t.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

/// Elements per parallel piece: below two pieces the work runs on the calling thread.
const PIECE: usize = 1 << 16;

/// Decode `src` (whole blocks of `t`) into `out` (`block_size` values per block).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the lengths do not match or the type has no dequantizer.
pub fn dequantize(t: GgmlType, src: &[u8], out: &mut [f32]) -> Result<()> {
    let f = t.row().dequantize.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "ggml type {} has no reference dequantizer (integer or intermediate type)",
            t.name()
        ))
    })?;
    let (bs, ts) = (t.block_size(), t.type_size());
    if !src.len().is_multiple_of(ts) || out.len() != src.len() / ts * bs {
        return Err(Error::InvalidArgument(format!(
            "{}: {} bytes are not {} values of whole blocks ({ts} bytes per {bs} values)",
            t.name(),
            src.len(),
            out.len()
        )));
    }
    let blocks = PIECE.div_ceil(bs).max(1);
    if out.len() < 2 * PIECE {
        f(src, out);
    } else {
        src.par_chunks(blocks * ts)
            .zip(out.par_chunks_mut(blocks * bs))
            .for_each(|(s, o)| f(s, o));
    }
    Ok(())
}

/// Encode `src` (a whole number of blocks of `t`) into `out` (`type_size` bytes per block),
/// bit for bit as the reference quantizer.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the lengths do not match or the type has no reference
/// quantizer here (K-quants, IQ types, NVFP4: dequantize only).
pub fn quantize(t: GgmlType, src: &[f32], out: &mut [u8]) -> Result<()> {
    let f = t.row().quantize.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "ggml type {} is dequantize-only here; quantize to one of {}",
            t.name(),
            GgmlType::ALL
                .iter()
                .filter(|t| t.can_quantize())
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let (bs, ts) = (t.block_size(), t.type_size());
    if !src.len().is_multiple_of(bs) || out.len() != src.len() / bs * ts {
        return Err(Error::InvalidArgument(format!(
            "{}: {} values are not whole blocks of {bs}, or the output is not {ts} bytes per block ({} given)",
            t.name(),
            src.len(),
            out.len()
        )));
    }
    let blocks = PIECE.div_ceil(bs).max(1);
    if src.len() < 2 * PIECE {
        f(src, out);
    } else {
        src.par_chunks(blocks * bs)
            .zip(out.par_chunks_mut(blocks * ts))
            .for_each(|(s, o)| f(s, o));
    }
    Ok(())
}

/// A quantizer's block loop, to be compiled for the widest vector unit of the CPU by
/// [`vectorized`]. `blocks` is marked `#[inline(always)]` so that its body is compiled inside
/// the target-feature function of [`crate::simd::dispatch`] (a function pointer or a
/// `Fn` would be called, not inlined, and run without the wider instructions).
pub(crate) trait BlockLoop {
    /// Encode whole blocks.
    fn blocks(src: &[f32], out: &mut [u8]);
}

/// [`BlockLoop`] as a [`crate::simd::Kernel`].
struct Vectorized<'a, L> {
    src: &'a [f32],
    out: &'a mut [u8],
    of: std::marker::PhantomData<L>,
}

impl<L: BlockLoop> crate::simd::Kernel for Vectorized<'_, L> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        L::blocks(self.src, self.out)
    }
}

/// Run `L`'s block loop compiled for the active instruction set: the same binary32
/// operations in the same order at every level (Rust never fuses or reorders them), so the
/// same bits.
#[inline(always)]
pub(crate) fn vectorized<L: BlockLoop>(src: &[f32], out: &mut [u8]) {
    crate::simd::dispatch(Vectorized::<L> {
        src,
        out,
        of: std::marker::PhantomData,
    })
}

/// binary16 bits to binary32 (exact).
#[inline]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let e = ((h >> 10) & 0x1f) as u32;
    let m = (h & 0x3ff) as u32;
    let bits = if e == 0x1f {
        sign | 0x7f80_0000 | (m << 13)
    } else if e != 0 {
        sign | ((e + 112) << 23) | (m << 13)
    } else {
        // subnormal or zero: m · 2^-24, exact in binary32
        let v = m as f32 * (1.0 / 16_777_216.0);
        return if sign != 0 { -v } else { v };
    };
    f32::from_bits(bits)
}

/// binary32 to binary16 bits, nearest with ties to even, overflow to ±Inf, NaN kept quiet
/// (numpy's `astype(np.float16)`).
#[inline(always)]
pub(crate) fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        return sign | 0x7e00 | ((a >> 13) & 0x3ff) as u16;
    }
    if a >= 0x4780_0000 {
        // |x| ≥ 65536: beyond the rounding boundary 65520 in every case
        return sign | 0x7c00;
    }
    if a >= 0x3880_0000 {
        // normal in binary16: drop 13 bits, ties to even; a carry may reach Inf (correctly)
        let r = a - 0x3800_0000; // rebias 127 → 15
        let half = 0x0fff + ((r >> 13) & 1);
        return sign | ((r + half) >> 13) as u16;
    }
    // subnormal or zero in binary16: value / 2^-24 rounded to an integer, ties to even
    let e = (a >> 23) as i32;
    if e < 102 {
        return sign; // below half the smallest subnormal (2^-25)
    }
    let m = (a & 0x7f_ffff) | 0x80_0000;
    let shift = (126 - e) as u32; // m · 2^(e−150) / 2^-24 = m / 2^(126 − e), 14 ≤ shift ≤ 24
    let q = m >> shift;
    let rem = m & ((1 << shift) - 1);
    let halfway = 1 << (shift - 1);
    let up = rem > halfway || (rem == halfway && q & 1 == 1);
    sign | (q + up as u32) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FloatFormat, RoundOptions};

    #[test]
    fn f16_decode_every_code_matches_the_format() {
        let f = FloatFormat::FP16;
        for c in 0..=u16::MAX {
            let v = f.decode(c as u64);
            let got = f16_to_f32(c);
            if v.is_nan() {
                assert!(got.is_nan());
                assert_eq!(got.to_bits() & 0x1fff, 0);
            } else {
                assert_eq!(got as f64, v, "code {c:#x}");
                assert_eq!(got.is_sign_negative(), v.is_sign_negative());
            }
        }
    }

    #[test]
    fn f16_encode_matches_the_format_on_a_sweep() {
        let f = FloatFormat::FP16;
        let opts = RoundOptions::default();
        let mut b: u32 = 0;
        loop {
            let x = f32::from_bits(b);
            if !x.is_nan() {
                let want = f.encode(x as f64, &opts).unwrap() as u16;
                assert_eq!(f32_to_f16(x), want, "{x:e} ({b:#x})");
            }
            b = match b.checked_add(4099) {
                Some(n) => n,
                None => break,
            };
        }
        assert_eq!(f32_to_f16(f32::NAN) & 0x7e00, 0x7e00);
    }

    #[test]
    fn table_sizes_and_names_round_trip() {
        for &t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()).unwrap(), t);
            assert_eq!(t.name().to_lowercase().parse::<GgmlType>().unwrap(), t);
        }
        assert!(GgmlType::from_id(31).is_err());
        assert_eq!(GgmlType::Q4_K.type_size(), 144);
        assert_eq!(GgmlType::Q6_K.type_size(), 210);
        assert_eq!(GgmlType::IQ4_XS.type_size(), 136);
    }
}
