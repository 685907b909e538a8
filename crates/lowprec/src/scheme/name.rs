//! Scheme names: one grammar, `[ROTATION+]HEAD[:OPTION]…`. The head is a preset (which sets
//! every axis); each option changes one axis. `Display` writes the canonical name: the head
//! that matches the scheme, then only the options that differ from that head's defaults, in
//! a fixed order, so that it parses back to the same scheme.
//!
//! | head | element | blocks | scale | rule | second level |
//! |---|---|---|---|---|---|
//! | `mx:ELEM`, `mxfp8`, `mxfp6`, `mxfp4`, `mxint8` | ELEM (fp8-e4m3, fp6-e2m3, fp4-e2m1, MXINT8) | groups of 32 | E8M0 | MX `floor` | — |
//! | `nvfp4` | fp4-e2m1 | groups of 16 | fp8-e4m3 | amax | `seed` |
//! | `if4` | fp4-e2m1 or INT4 per block | groups of 16 | fp8-e4m3 (sign = INT4) | lowest error | `seed` |
//! | `fp8` | fp8-e4m3 | groups of 128 | fp32 | amax (binary32) | — |
//! | `amax:ELEM` | ELEM | whole tensor | fp32 | amax (binary32) | — |
//! | `tensor:FORMAT` | FORMAT | whole tensor | binary64 | amax (binary64) | — |
//! | `cast:FORMAT` | FORMAT | — | — | none | — |
//! | `intB` | B-bit `±(2^(B−1)−1)` | whole tensor | binary64 | affine | — |
//! | `FORMAT` | `tensor:FORMAT` for formats of at most 8 bits, `cast:FORMAT` for wider ones | | | | |
//!
//! | option | axis |
//! |---|---|
//! | `block=N`, `group=N`, `tile=RxC`, `channel`, `tensor` | blocks |
//! | `elem=FORMAT`, `elem=intB` | element |
//! | `sym`, `full`, `asym` | integer range (`asym`: unsigned with a zero point) |
//! | `scale=floor\|ceil\|even\|rceil` | MX power-of-two rule (E8M0 scales) |
//! | `scale=amax`, `scale=ue8m0`, `scale=FORMAT` | the amax rule; its power-of-two (UE8M0) form; the scale format |
//! | `arith=f32\|f64` | the amax rule's arithmetic |
//! | `convention=seed\|torchao\|te` | the second level's arithmetic |
//! | `4over6` | NVFP4's lowest-error choice of 4 or 6 per block |
//! | `clip=R`, `clip=mse` | the affine rule's clip ratio or search |
//! | `r=MODE`, `seed=N`, `sr-bits=N`, `ovf` | element rounding (default nearest even, saturating) |
//! | `pad` | partial edge blocks allowed |
//!
//! Rotations: `rhtB` (a randomized Hadamard transform of size B; TransformerEngine's signs
//! for B = 16, random signs from seed 0 otherwise), `hadB` (all signs +1), with options
//! `seed=N`, `signs=te|ones`, `bf16` (round the rotated values to BF16), then `+`.

use super::axes::{
    Arith, Best, Blocks, Convention, Element, IntGrid, IntRange, Rotation, Rule, Signs,
};
use super::{Scheme, SATURATE};
use crate::block::mx::ScaleRule;
use crate::error::{Error, Result};
use crate::quant::Clip;
use crate::round::{Overflow, RoundingMode};
use crate::FloatFormat;
use std::fmt;
use std::str::FromStr;

/// A named scheme, its meaning and where it comes from.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The name (parses as a scheme).
    pub name: &'static str,
    /// What it is.
    pub meaning: &'static str,
    /// Its source: specification, paper or library file.
    pub source: &'static str,
}

/// The named recipes (each a line: its name is parsed by the grammar above).
pub const PRESETS: &[Preset] = &[
    Preset { name: "mxfp8", meaning: "OCP MXFP8: E4M3 elements, E8M0 scale per 32, floor rule", source: "OCP MX v1.0 §6.3" },
    Preset { name: "mxfp8:scale=rceil", meaning: "MXFP8 with NVIDIA's RCEIL scale (torchao's default for MXFP8 inference and training)", source: "torchao mx_formats ScaleCalculationMode.RCEIL; cuBLAS" },
    Preset { name: "mx:fp8-e5m2", meaning: "OCP MXFP8 with E5M2 elements", source: "OCP MX v1.0" },
    Preset { name: "mxfp6", meaning: "OCP MXFP6 (E2M3 elements)", source: "OCP MX v1.0" },
    Preset { name: "mx:fp6-e3m2", meaning: "OCP MXFP6 with E3M2 elements", source: "OCP MX v1.0" },
    Preset { name: "mxfp4", meaning: "OCP MXFP4: E2M1 elements, E8M0 scale per 32", source: "OCP MX v1.0" },
    Preset { name: "mxint8", meaning: "OCP MXINT8: k/64 elements, E8M0 scale per 32", source: "OCP MX v1.0 §5.3.4" },
    Preset { name: "nvfp4", meaning: "NVFP4, the seed's binary64 definition: E2M1, E4M3 scale per 16, FP32 tensor scale", source: "shared/seeds/numfmt.py nvfp4_quantize" },
    Preset { name: "nvfp4:convention=torchao", meaning: "NVFP4 as torchao's nvfp4_quantize with a per-tensor scale (binary32, clamped block scales)", source: "torchao prototype/mx_formats/nvfp4_tensor.py" },
    Preset { name: "nvfp4:convention=te", meaning: "NVFP4 as NVIDIA TransformerEngine's recipe, 1×16 blocks (activations)", source: "TransformerEngine core_nvfp4.cuh; torchao test/prototype/moe_training/nvfp4_training/nvfp4_reference.py" },
    Preset { name: "nvfp4:convention=te:tile=16x16", meaning: "TransformerEngine NVFP4 with 16×16 tiles (weights)", source: "as above, block=\"16x16\"" },
    Preset { name: "rht16:bf16+nvfp4:convention=te", meaning: "TransformerEngine's randomized Hadamard transform (16, fixed signs, BF16 output), then NVFP4", source: "torchao nvfp4_reference.reference_rht" },
    Preset { name: "nvfp4:4over6", meaning: "NVFP4 4over6: each block scales its amax to 4 or 6, the lower error kept; tensor scale from 256", source: "TransformerEngine PR 2972; ModelOpt nvfp4_four_over_six" },
    Preset { name: "if4", meaning: "IF4: each 16-block FP4 (E2M1) or INT4 (±7), the lower error kept, the choice in the scale's sign bit", source: "arXiv 2603.28765" },
    Preset { name: "fp8:group=128", meaning: "DeepSeek-V3 activations: FP8 E4M3, FP32 scale per 1×128", source: "DeepSeek-V3 inference/kernel.py act_quant" },
    Preset { name: "fp8:tile=128x128", meaning: "DeepSeek-V3 weights: FP8 E4M3, FP32 scale per 128×128 tile", source: "DeepSeek-V3 weight_quant; DeepGEMM per_block_cast_to_fp8" },
    Preset { name: "fp8:group=128:scale=ue8m0", meaning: "DeepSeek-V3.1 / DeepGEMM UE8M0 scales: the FP32 scale rounded up to a power of two", source: "DeepGEMM ceil_to_ue8m0" },
    Preset { name: "fp8:channel", meaning: "per-channel FP8 with FP32 scales", source: "vLLM scaled_fp8_quant; ModelOpt" },
    Preset { name: "fp8-e4m3", meaning: "FP8 E4M3 with one binary64 scale per tensor", source: "shared/seeds/numfmt.py tensor_scaled" },
    Preset { name: "bf16", meaning: "a plain cast into BF16 (nearest even, saturating)", source: "bfloat16 (Google Brain; Intel BF16 spec)" },
    Preset { name: "int8", meaning: "symmetric int8 per tensor", source: "shared/seeds/numfmt.py quantize_int" },
    Preset { name: "int8:channel", meaning: "symmetric int8 per output channel", source: "torchao int8_weight_only; LLM.int8() weights" },
    Preset { name: "int4:group=128", meaning: "symmetric int4, one scale per 128 (GPTQ/AWQ-style groups)", source: "shared/seeds/numfmt.py quantize_int" },
    Preset { name: "int4:asym:group=128", meaning: "asymmetric int4 with zero points per 128", source: "shared/seeds/numfmt.py quantize_int" },
    Preset { name: "rht32+mxfp4", meaning: "a random Hadamard rotation of 32, then MXFP4", source: "AutoRound hadamard_config; QuaRot" },
];

fn bad(s: &str, why: impl fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "bad scheme `{s}`: {why}; schemes are [rhtB+]HEAD[:OPTION]… with HEAD one of mx:ELEM, mxfp8, \
         mxfp6, mxfp4, mxint8, nvfp4, if4, fp8, amax:ELEM, tensor:FORMAT, cast:FORMAT, intB or a \
         format name (see docs/schemes.md)"
    ))
}

fn value<'a>(opt: &'a str, key: &str) -> Option<&'a str> {
    opt.strip_prefix(key).and_then(|r| r.strip_prefix('='))
}

fn positive(s: &str, v: &str, what: &str) -> Result<usize> {
    v.parse()
        .ok()
        .filter(|&n: &usize| n > 0)
        .ok_or_else(|| bad(s, format!("{what} `{v}` is not a positive integer")))
}

/// The end of a `key=FORMAT` token at `i` and the format-spec tokens that follow it
/// (`elem=e4m3b7:fn`, `scale=e3m4b3:ieee`): the index of the first token after them.
fn spec_end(toks: &[&str], i: usize) -> usize {
    i + 1
        + toks[i + 1..]
            .iter()
            .take_while(|t| is_spec_token(t))
            .count()
}

/// The tokens of a format spec after its first (`e4m3b7`, `fn`, `nozero`, …).
fn is_spec_token(t: &str) -> bool {
    matches!(t, "ieee" | "fn" | "fnuz" | "none" | "nozero")
}

/// An element: a format (with its spec tokens) or `intB`; returns the element and the
/// tokens it took. `mx` makes `int8` MXINT8.
fn element(s: &str, toks: &[&str], mx: bool) -> Result<(Element, usize)> {
    let first = *toks
        .first()
        .ok_or_else(|| bad(s, "an element format is missing"))?;
    if let Some(b) = first
        .strip_prefix("int")
        .filter(|b| !b.is_empty() && b.chars().all(|c| c.is_ascii_digit()))
    {
        let bits: u32 = b.parse().map_err(|_| bad(s, "bad integer width"))?;
        if mx {
            if bits != 8 {
                return Err(bad(s, "MX integers are int8 (MXINT8)"));
            }
            return Ok((
                Element::Int(IntGrid {
                    bits: 8,
                    range: IntRange::Full,
                    frac: 6,
                }),
                1,
            ));
        }
        if !(2..=16).contains(&bits) {
            return Err(bad(s, "integer widths are int2 … int16"));
        }
        return Ok((
            Element::Int(IntGrid {
                bits,
                range: IntRange::Restricted,
                frac: 0,
            }),
            1,
        ));
    }
    if mx && first == "mxint8" {
        return Ok((
            Element::Int(IntGrid {
                bits: 8,
                range: IntRange::Full,
                frac: 6,
            }),
            1,
        ));
    }
    let k = 1 + toks[1..].iter().take_while(|t| is_spec_token(t)).count();
    let f = FloatFormat::parse(&toks[..k].join(":")).map_err(|e| bad(s, e))?;
    Ok((Element::Float(f), k))
}

const MXINT8: Element = Element::Int(IntGrid {
    bits: 8,
    range: IntRange::Full,
    frac: 6,
});

fn mx(e: Element) -> Scheme {
    Scheme::new(
        e,
        Blocks::Group(32),
        FloatFormat::E8M0,
        Rule::Pow2(ScaleRule::Floor),
    )
}

fn nvfp4() -> Scheme {
    Scheme {
        second: Some(Convention::Seed),
        ..Scheme::new(
            Element::Float(FloatFormat::FP4_E2M1),
            Blocks::Group(16),
            FloatFormat::FP8_E4M3,
            Rule::Amax {
                arith: Arith::F64,
                pow2: false,
            },
        )
    }
}

fn amax(e: Element) -> Scheme {
    Scheme::new(
        e,
        Blocks::Tensor,
        FloatFormat::FP32,
        Rule::Amax {
            arith: Arith::F32,
            pow2: false,
        },
    )
}

fn fp8() -> Scheme {
    Scheme {
        blocks: Blocks::Group(128),
        ..amax(Element::Float(FloatFormat::FP8_E4M3))
    }
}

fn tensor(e: Element) -> Scheme {
    Scheme::new(
        e,
        Blocks::Tensor,
        FloatFormat::FP64,
        Rule::Amax {
            arith: Arith::F64,
            pow2: false,
        },
    )
}

fn cast(e: Element) -> Scheme {
    Scheme::new(e, Blocks::Tensor, FloatFormat::FP64, Rule::None)
}

fn int(bits: u32) -> Scheme {
    Scheme::new(
        Element::Int(IntGrid {
            bits,
            range: IntRange::Restricted,
            frac: 0,
        }),
        Blocks::Tensor,
        FloatFormat::FP64,
        Rule::Affine(Clip::None),
    )
}

/// The head of a name: the preset scheme and the tokens it took.
fn head(s: &str, toks: &[&str]) -> Result<(Scheme, usize)> {
    let h = toks[0];
    let rest = &toks[1..];
    Ok(match h {
        "mx" => {
            let (e, k) = element(s, rest, true)?;
            (mx(e), 1 + k)
        }
        "mxfp8" => (mx(Element::Float(FloatFormat::FP8_E4M3)), 1),
        "mxfp6" => (mx(Element::Float(FloatFormat::FP6_E2M3)), 1),
        "mxfp4" => (mx(Element::Float(FloatFormat::FP4_E2M1)), 1),
        "mxint8" => (mx(MXINT8), 1),
        "nvfp4" => (nvfp4(), 1),
        "if4" => (
            Scheme {
                rule: Rule::Best(Best::If4),
                ..nvfp4()
            },
            1,
        ),
        "fp8" => (fp8(), 1),
        "amax" => {
            let (e, k) = element(s, rest, false)?;
            (amax(e), 1 + k)
        }
        "tensor" | "cast" => {
            let (e, k) = element(s, rest, false)?;
            (if h == "tensor" { tensor(e) } else { cast(e) }, 1 + k)
        }
        _ if h.starts_with("int") && h.len() > 3 && h[3..].chars().all(|c| c.is_ascii_digit()) => {
            let bits: u32 = h[3..].parse().map_err(|_| bad(s, "bad integer width"))?;
            if !(2..=16).contains(&bits) {
                return Err(bad(s, "integer widths are int2 … int16"));
            }
            (int(bits), 1)
        }
        _ => {
            let (e, k) =
                element(s, toks, false).map_err(|_| bad(s, "not a scheme or a format name"))?;
            (if e.bits() <= 8 { tensor(e) } else { cast(e) }, k)
        }
    })
}

/// Apply one option to the scheme.
fn option(s: &str, q: &mut Scheme, opt: &str) -> Result<()> {
    if opt == "pad" {
        q.pad = true;
    } else if let Some(v) = value(opt, "block").or_else(|| value(opt, "group")) {
        q.blocks = Blocks::Group(positive(s, v, "block size")?);
    } else if let Some(v) = value(opt, "tile") {
        let (r, c) = v
            .split_once('x')
            .ok_or_else(|| bad(s, format!("tile `{v}` is not RxC")))?;
        q.blocks = Blocks::Tile(
            positive(s, r, "tile rows")?,
            positive(s, c, "tile columns")?,
        );
    } else if opt == "channel" {
        q.blocks = Blocks::Channel;
    } else if opt == "tensor" {
        q.blocks = Blocks::Tensor;
    } else if matches!(opt, "sym" | "full" | "asym") {
        let Element::Int(g) = &mut q.element else {
            return Err(bad(s, format!("`{opt}` is an integer option")));
        };
        g.range = match opt {
            "sym" => IntRange::Restricted,
            "full" => IntRange::Full,
            _ => IntRange::Unsigned,
        };
    } else if let Some(v) = value(opt, "scale") {
        match v {
            "floor" | "ceil" | "even" | "rceil" => {
                q.rule = Rule::Pow2(crate::block::mx::ScaleRule::parse(v)?);
                q.scale = FloatFormat::E8M0;
            }
            "amax" => {
                if !matches!(q.rule, Rule::Amax { .. }) {
                    q.rule = Rule::Amax {
                        arith: Arith::F32,
                        pow2: false,
                    };
                }
            }
            "ue8m0" => {
                let arith = match q.rule {
                    Rule::Amax { arith, .. } => arith,
                    _ => Arith::F32,
                };
                q.rule = Rule::Amax { arith, pow2: true };
                q.scale = FloatFormat::E8M0;
            }
            f => {
                q.scale = FloatFormat::parse(f).map_err(|_| {
                    bad(s, format!("scale `{f}` is not a rule (floor, ceil, even, rceil, amax, ue8m0) or a format"))
                })?;
            }
        }
    } else if let Some(v) = value(opt, "arith") {
        let a = match v {
            "f32" | "fp32" | "binary32" => Arith::F32,
            "f64" | "fp64" | "binary64" => Arith::F64,
            _ => return Err(bad(s, format!("arith `{v}` is not f32 or f64"))),
        };
        match &mut q.rule {
            Rule::Amax { arith, .. } => *arith = a,
            _ => return Err(bad(s, "arith= goes with the amax rule")),
        }
    } else if let Some(v) = value(opt, "convention") {
        if q.second.is_none() {
            return Err(bad(
                s,
                "convention= applies to two-level schemes (nvfp4, if4)",
            ));
        }
        q.second = Some(Convention::parse(v).map_err(|e| bad(s, e))?);
    } else if opt == "4over6" {
        q.rule = Rule::Best(Best::FourOverSix);
    } else if let Some(v) = value(opt, "clip") {
        let c = if v == "mse" {
            Clip::Mse
        } else {
            let c: f64 = v
                .parse()
                .ok()
                .filter(|c: &f64| *c > 0.0 && *c <= 1.0)
                .ok_or_else(|| bad(s, format!("clip `{v}` is not mse or a ratio in (0, 1]")))?;
            Clip::Ratio(c)
        };
        match &mut q.rule {
            Rule::Affine(k) => *k = c,
            _ => return Err(bad(s, "clip= goes with integer schemes")),
        }
    } else if let Some(v) = value(opt, "r").or_else(|| value(opt, "rounding")) {
        q.rounding.mode = RoundingMode::parse(v).map_err(|e| bad(s, e))?;
    } else if let Some(v) = value(opt, "seed") {
        q.rounding.seed = v
            .parse()
            .map_err(|_| bad(s, format!("seed `{v}` is not an integer")))?;
    } else if let Some(v) = value(opt, "sr-bits") {
        q.rounding.sr_bits = v
            .parse()
            .ok()
            .filter(|b: &u32| *b <= 32)
            .ok_or_else(|| bad(s, format!("sr-bits `{v}` is not 0 … 32")))?;
    } else if opt == "ovf" {
        q.rounding.overflow = Overflow::Ieee;
    } else if opt == "sat" {
        q.rounding.overflow = Overflow::Saturate;
    } else {
        return Err(bad(s, format!("unknown option `{opt}`")));
    }
    Ok(())
}

fn rotation(s: &str, r: &str) -> Result<Rotation> {
    let toks: Vec<&str> = r.split(':').collect();
    let (kind, size) = if let Some(n) = toks[0].strip_prefix("rht") {
        ("rht", n)
    } else if let Some(n) = toks[0].strip_prefix("had") {
        ("had", n)
    } else {
        return Err(bad(
            s,
            format!("`{}` is not a rotation (rhtB or hadB)", toks[0]),
        ));
    };
    let size = positive(s, size, "rotation size")?;
    let mut rot = Rotation {
        size,
        signs: match (kind, size) {
            ("had", _) => Signs::Ones,
            (_, 16) => Signs::Te,
            _ => Signs::Seeded(0),
        },
        bf16: false,
    };
    for opt in &toks[1..] {
        if *opt == "bf16" {
            rot.bf16 = true;
        } else if let Some(v) = value(opt, "seed") {
            rot.signs = Signs::Seeded(
                v.parse()
                    .map_err(|_| bad(s, format!("seed `{v}` is not an integer")))?,
            );
        } else if let Some(v) = value(opt, "signs") {
            rot.signs = match v {
                "te" => Signs::Te,
                "ones" => Signs::Ones,
                _ => return Err(bad(s, format!("signs `{v}` is not te or ones (or seed=N)"))),
            };
        } else {
            return Err(bad(s, format!("unknown rotation option `{opt}`")));
        }
    }
    if rot.signs == Signs::Te && size != 16 {
        return Err(bad(
            s,
            "TransformerEngine's sign vector has 16 entries: use rht16, or seed=N",
        ));
    }
    Ok(rot)
}

impl Scheme {
    /// Parse a scheme name (see the module tables and `docs/schemes.md`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the problem and the grammar, or the combination
    /// that cannot work ([`Scheme::validate`]).
    pub fn parse(s: &str) -> Result<Scheme> {
        let lower = s.trim().to_ascii_lowercase();
        let (rot, body) = match lower.split_once('+') {
            Some((r, b)) => (Some(rotation(s, r)?), b),
            None => (None, lower.as_str()),
        };
        let toks: Vec<&str> = body.split(':').collect();
        if toks[0].is_empty() {
            return Err(bad(s, "empty"));
        }
        let (mut q, used) = head(s, &toks)?;
        let mut i = used;
        while i < toks.len() {
            if let Some(v) = value(toks[i], "elem") {
                // a custom format's spec tokens follow it (elem=e4m3b7:fn)
                let j = spec_end(&toks, i);
                let mut et = vec![v];
                et.extend(&toks[i + 1..j]);
                q.element = element(s, &et, false)?.0;
                i = j;
                continue;
            }
            if value(toks[i], "scale").is_some() {
                // a custom scale format's spec tokens follow it (scale=e3m4b3:ieee)
                let j = spec_end(&toks, i);
                option(s, &mut q, &toks[i..j].join(":"))?;
                i = j;
                continue;
            }
            option(s, &mut q, toks[i])?;
            i += 1;
        }
        q.rotation = rot;
        q.validate().map_err(|e| bad(s, e))?;
        Ok(q)
    }
}

impl FromStr for Scheme {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Scheme::parse(s)
    }
}

/// The head that names a scheme, and that head's defaults.
fn head_of(q: &Scheme) -> (String, Scheme) {
    let e = q.element;
    let (name, base) = match q.rule {
        Rule::None => (format!("cast:{e}"), cast(e)),
        Rule::Pow2(_) => {
            let n = match e {
                Element::Float(f) if f == FloatFormat::FP8_E4M3 => "mx:fp8-e4m3".to_string(),
                _ if e == MXINT8 => "mx:int8".to_string(),
                _ => format!("mx:{e}"),
            };
            (n, mx(e))
        }
        Rule::Best(Best::FourOverSix) => (
            "nvfp4:4over6".into(),
            Scheme {
                rule: Rule::Best(Best::FourOverSix),
                ..nvfp4()
            },
        ),
        Rule::Best(Best::If4) => (
            "if4".into(),
            Scheme {
                rule: Rule::Best(Best::If4),
                ..nvfp4()
            },
        ),
        Rule::Amax { .. } if q.second.is_some() => ("nvfp4".into(), nvfp4()),
        Rule::Amax {
            arith: Arith::F64,
            pow2: false,
        } if q.scale == FloatFormat::FP64 && q.blocks == Blocks::Tensor => {
            (format!("tensor:{e}"), tensor(e))
        }
        Rule::Amax {
            arith: Arith::F32, ..
        } if e == Element::Float(FloatFormat::FP8_E4M3) && q.blocks != Blocks::Tensor => {
            ("fp8".into(), fp8())
        }
        Rule::Amax { .. } => (format!("amax:{e}"), amax(e)),
        Rule::Affine(_) => match e {
            Element::Int(g) => (format!("int{}", g.bits), int(g.bits)),
            Element::Float(_) => (format!("amax:{e}"), amax(e)),
        },
    };
    (name, base)
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(r) = self.rotation {
            f.write_str(if r.signs == Signs::Ones { "had" } else { "rht" })?;
            write!(f, "{}", r.size)?;
            let default = if r.size == 16 {
                Signs::Te
            } else {
                Signs::Seeded(0)
            };
            match r.signs {
                Signs::Ones => {}
                s if s == default => {}
                Signs::Te => f.write_str(":signs=te")?,
                Signs::Seeded(n) => write!(f, ":seed={n}")?,
            }
            if r.bf16 {
                f.write_str(":bf16")?;
            }
            f.write_str("+")?;
        }
        let (name, base) = head_of(self);
        f.write_str(&name)?;
        // what the parser makes of the head alone: the options below are the differences
        let toks: Vec<&str> = name.split(':').collect();
        let base = head(&name, &toks).map_or(base, |(b, _)| b);
        let mx_head = matches!(self.rule, Rule::Pow2(_));
        let mut elem_written = false;
        if self.element != base.element {
            match (self.element, base.element) {
                (Element::Int(a), Element::Int(b)) if a.bits == b.bits && a.frac == b.frac => {}
                (e, _) => {
                    write!(f, ":elem={e}")?;
                    elem_written = true;
                }
            }
        }
        if let Element::Int(a) = self.element {
            // `elem=intB` parses as the symmetric range
            let parsed = match base.element {
                Element::Int(b) if !elem_written => b.range,
                _ => IntRange::Restricted,
            };
            if a.range != parsed {
                f.write_str(match a.range {
                    IntRange::Restricted => ":sym",
                    IntRange::Full => ":full",
                    IntRange::Unsigned => ":asym",
                })?;
            }
        }
        if self.blocks != base.blocks && self.rule != Rule::None {
            match self.blocks {
                Blocks::Group(g) if mx_head => write!(f, ":block={g}")?,
                b => write!(f, ":{b}")?,
            }
        }
        match (self.rule, base.rule) {
            (Rule::Pow2(a), Rule::Pow2(b)) if a != b => write!(f, ":scale={}", a.name())?,
            (
                Rule::Amax { arith, pow2 },
                Rule::Amax {
                    arith: ba,
                    pow2: bp,
                },
            ) if self.second.is_none() => {
                if pow2 && !bp {
                    // ue8m0 sets the E8M0 format too: another format follows it
                    f.write_str(":scale=ue8m0")?;
                    if self.scale != FloatFormat::E8M0 {
                        write!(f, ":scale={}", self.scale)?;
                    }
                } else if self.scale != base.scale {
                    write!(f, ":scale={}", self.scale)?;
                }
                if arith != ba {
                    f.write_str(match arith {
                        Arith::F32 => ":arith=f32",
                        Arith::F64 => ":arith=f64",
                    })?;
                }
            }
            _ => {
                if self.scale != base.scale && self.rule != Rule::None {
                    write!(f, ":scale={}", self.scale)?;
                }
            }
        }
        if let (Some(c), Some(b)) = (self.second, base.second) {
            if c != b {
                write!(f, ":convention={}", c.name())?;
            }
        }
        if let Rule::Affine(c) = self.rule {
            match c {
                Clip::None => {}
                Clip::Ratio(r) => write!(f, ":clip={r}")?,
                Clip::Mse => f.write_str(":clip=mse")?,
            }
        }
        let r = self.rounding;
        if r.mode != SATURATE.mode {
            write!(f, ":r={}", r.mode.short_name())?;
        }
        if r.seed != 0 {
            write!(f, ":seed={}", r.seed)?;
        }
        if r.sr_bits != 0 {
            write!(f, ":sr-bits={}", r.sr_bits)?;
        }
        if r.overflow != SATURATE.overflow {
            f.write_str(":ovf")?;
        }
        if self.pad {
            f.write_str(":pad")?;
        }
        Ok(())
    }
}
