//! The preset formats, as constants, and the table of names and aliases.

use super::{FloatFormat, Specials};

impl FloatFormat {
    /// IEEE binary64: E11M52, bias 1023.
    pub const FP64: Self = Self::raw(11, 52, 1023, Specials::Ieee, true, true);
    /// IEEE binary32: E8M23, bias 127.
    pub const FP32: Self = Self::raw(8, 23, 127, Specials::Ieee, true, true);
    /// NVIDIA TensorFloat-32: E8M10, bias 127, 19 bits (stored in a 32-bit container; codes
    /// here are the 19-bit integers, the container is `code << 13`).
    pub const TF32: Self = Self::raw(8, 10, 127, Specials::Ieee, true, true);
    /// IEEE binary16: E5M10, bias 15.
    pub const FP16: Self = Self::raw(5, 10, 15, Specials::Ieee, true, true);
    /// bfloat16: E8M7, bias 127 (the top half of binary32).
    pub const BF16: Self = Self::raw(8, 7, 127, Specials::Ieee, true, true);
    /// OCP OFP8 E4M3 (`float8_e4m3fn`): bias 7, no Inf, NaN `S.1111.111`, max 448.
    pub const FP8_E4M3: Self = Self::raw(4, 3, 7, Specials::Fn, true, true);
    /// OCP OFP8 E5M2 (`float8_e5m2`): bias 15, IEEE specials, max 57344.
    pub const FP8_E5M2: Self = Self::raw(5, 2, 15, Specials::Ieee, true, true);
    /// ml_dtypes `float8_e4m3fnuz`: bias 8, no Inf, no −0, NaN `0x80`, max 240.
    pub const FP8_E4M3_FNUZ: Self = Self::raw(4, 3, 8, Specials::Fnuz, true, true);
    /// ml_dtypes `float8_e5m2fnuz`: bias 16, no Inf, no −0, NaN `0x80`, max 57344.
    pub const FP8_E5M2_FNUZ: Self = Self::raw(5, 2, 16, Specials::Fnuz, true, true);
    /// OCP MX FP6 E3M2: bias 3, no Inf/NaN, max 28.
    pub const FP6_E3M2: Self = Self::raw(3, 2, 3, Specials::None, true, true);
    /// OCP MX FP6 E2M3: bias 1, no Inf/NaN, max 7.5.
    pub const FP6_E2M3: Self = Self::raw(2, 3, 1, Specials::None, true, true);
    /// OCP MX FP4 E2M1: bias 1, no Inf/NaN, values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
    pub const FP4_E2M1: Self = Self::raw(2, 1, 1, Specials::None, true, true);
    /// OCP MX E8M0 scale: unsigned, value `2^(code − 127)`, `0xFF` NaN, no zero.
    pub const E8M0: Self = Self::raw(8, 0, 127, Specials::Fn, false, false);
    /// NVFP4's block scale UE4M3: the non-negative half of E4M3 (7 bits, no sign bit;
    /// `0x7F` NaN, max 448).
    pub const UE4M3: Self = Self::raw(4, 3, 7, Specials::Fn, false, true);
    /// IEEE P3109 Binary8p3se: E5M2, bias 16, one zero, NaN `0x80`, ±Inf `0x7f`/`0xff`.
    pub const BINARY8P3SE: Self = Self::raw(5, 2, 16, Specials::P3109Extended, true, true);
    /// IEEE P3109 Binary8p4se: E4M3, bias 8, one zero, NaN `0x80`, ±Inf `0x7f`/`0xff`.
    pub const BINARY8P4SE: Self = Self::raw(4, 3, 8, Specials::P3109Extended, true, true);
    /// IEEE P3109 Binary4p2sf: E2M1, bias 2, one zero, NaN `0x8`, no Inf.
    pub const BINARY4P2SF: Self = Self::raw(2, 1, 2, Specials::P3109Finite, true, true);
    /// IEEE P3109 Binary8p1uf, the draft's scale format: unsigned E8M0, bias 128, zero at
    /// code 0, `2^(c−128)` for codes 1..=254, NaN `0xff`.
    pub const BINARY8P1UF: Self = Self::raw(8, 0, 128, Specials::P3109Finite, false, true);
}

/// A preset: its canonical name, the format, accepted aliases and a note.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Canonical name, as printed.
    pub name: &'static str,
    /// The format.
    pub format: FloatFormat,
    /// Other accepted names (matched case-insensitively, ignoring `-`, `_` and spaces).
    pub aliases: &'static [&'static str],
    /// Where the format is used.
    pub note: &'static str,
}

/// Every preset, in table order.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "fp64",
        format: FloatFormat::FP64,
        aliases: &["float64", "f64", "double", "binary64"],
        note: "IEEE binary64",
    },
    Preset {
        name: "fp32",
        format: FloatFormat::FP32,
        aliases: &["float32", "f32", "single", "binary32"],
        note: "IEEE binary32",
    },
    Preset {
        name: "tf32",
        format: FloatFormat::TF32,
        aliases: &["tensorfloat32"],
        note: "NVIDIA tensor-core input",
    },
    Preset {
        name: "fp16",
        format: FloatFormat::FP16,
        aliases: &["float16", "f16", "half", "binary16"],
        note: "IEEE binary16",
    },
    Preset {
        name: "bf16",
        format: FloatFormat::BF16,
        aliases: &["bfloat16"],
        note: "brain float",
    },
    Preset {
        name: "fp8-e4m3",
        format: FloatFormat::FP8_E4M3,
        aliases: &["e4m3", "e4m3fn", "fp8e4m3fn", "float8e4m3fn", "float8e4m3"],
        note: "OCP OFP8",
    },
    Preset {
        name: "fp8-e5m2",
        format: FloatFormat::FP8_E5M2,
        aliases: &["e5m2", "float8e5m2"],
        note: "OCP OFP8",
    },
    Preset {
        name: "fp8-e4m3fnuz",
        format: FloatFormat::FP8_E4M3_FNUZ,
        aliases: &["e4m3fnuz", "float8e4m3fnuz"],
        note: "ml_dtypes, AMD",
    },
    Preset {
        name: "fp8-e5m2fnuz",
        format: FloatFormat::FP8_E5M2_FNUZ,
        aliases: &["e5m2fnuz", "float8e5m2fnuz"],
        note: "ml_dtypes, AMD",
    },
    Preset {
        name: "fp6-e3m2",
        format: FloatFormat::FP6_E3M2,
        aliases: &["e3m2", "e3m2fn", "fp6e3m2fn", "float6e3m2fn", "float6e3m2"],
        note: "OCP MX",
    },
    Preset {
        name: "fp6-e2m3",
        format: FloatFormat::FP6_E2M3,
        aliases: &["e2m3", "e2m3fn", "fp6e2m3fn", "float6e2m3fn", "float6e2m3"],
        note: "OCP MX",
    },
    Preset {
        name: "fp4-e2m1",
        format: FloatFormat::FP4_E2M1,
        aliases: &[
            "fp4",
            "e2m1",
            "e2m1fn",
            "fp4e2m1fn",
            "float4e2m1fn",
            "float4e2m1",
        ],
        note: "OCP MX, NVFP4 elements",
    },
    Preset {
        name: "e8m0",
        format: FloatFormat::E8M0,
        aliases: &["ue8m0", "e8m0fnu", "float8e8m0fnu", "float8e8m0"],
        note: "OCP MX block scale",
    },
    Preset {
        name: "ue4m3",
        format: FloatFormat::UE4M3,
        aliases: &["float8ue4m3", "e4m3unsigned"],
        note: "NVFP4 block scale",
    },
    Preset {
        name: "binary8p3se",
        format: FloatFormat::BINARY8P3SE,
        aliases: &["p3109e5m2"],
        note: "IEEE P3109",
    },
    Preset {
        name: "binary8p4se",
        format: FloatFormat::BINARY8P4SE,
        aliases: &["p3109e4m3"],
        note: "IEEE P3109",
    },
    Preset {
        name: "binary4p2sf",
        format: FloatFormat::BINARY4P2SF,
        aliases: &["p3109e2m1"],
        note: "IEEE P3109",
    },
    Preset {
        name: "binary8p1uf",
        format: FloatFormat::BINARY8P1UF,
        aliases: &["p3109scale"],
        note: "IEEE P3109 scale",
    },
];
