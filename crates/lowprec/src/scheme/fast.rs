//! The specialised kernels: the presets whose axes match a hand-tuned kernel run it. Each is
//! the general engine's result bit for bit (codes, scales, values and counts; tested in
//! `tests/schemes.rs` on random and adversarial tensors), only faster.
//!
//! | axes | kernel |
//! |---|---|
//! | float element of at most 8 bits or MXINT8, groups along the last axis, E8M0, an MX rule | [`crate::block::mx`] |
//! | E2M1, groups of 16, E4M3 block scales, the amax rule with any second level (seed, torchao, TransformerEngine) | [`crate::block::nvfp4`] |
//! | integer element, whole tensor / channel / groups dividing the last axis, binary64 scales | [`crate::quant`] |
//! | float element, whole tensor, binary64 amax scale | [`crate::block::tensor`] |
//! | a cast | the slice API of [`crate::round`] |
//!
//! All of them round to nearest even with saturation and take no rotation.

use super::axes::{Arith, Blocks, Element, IntRange, Rule};
use super::{Counts, Encoded, Scales, Scheme, SATURATE};
use crate::block::mx::{self, MxElement, MxOptions};
use crate::block::nvfp4::{self, Nvfp4Options};
use crate::block::BlockStatus;
use crate::error::Result;
use crate::quant::{Granularity, IntOptions, Mapping};
use crate::round::{Code, Float, Rounder};
use crate::FloatFormat;

fn counts(st: BlockStatus, per_nan_block: u64) -> Counts {
    Counts {
        elements: st.elements,
        blocks: st.blocks,
        saturated: st.saturated,
        flushed: st.flushed,
        nan: st.nan_blocks * per_nan_block,
        nan_blocks: st.nan_blocks,
        scale_clamped: st.scale_clamped,
    }
}

/// Byte codes for a byte kernel (which always writes `n` codes): the caller's buffer when it
/// holds bytes, else a scratch whose codes are widened afterwards (if wanted).
fn with_bytes<C: Code, T>(codes: &mut [C], n: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    if let Some(b) = C::as_u8s(codes).filter(|b| !b.is_empty()) {
        return f(b);
    }
    let mut tmp = vec![0u8; n];
    let r = f(&mut tmp);
    if !codes.is_empty() {
        codes
            .iter_mut()
            .zip(&tmp)
            .for_each(|(c, &b)| *c = C::from_u64(b as u64));
    }
    r
}

/// The MX kernel's options, when the scheme is one it runs.
fn mx_options(s: &Scheme) -> Option<MxOptions> {
    let Rule::Pow2(rule) = s.rule else {
        return None;
    };
    let Blocks::Group(block) = s.blocks else {
        return None;
    };
    let element = match s.element {
        Element::Float(f) if f.bits() <= 8 && f.is_signed() && f.has_zero() => MxElement::Float(f),
        Element::Int(g) if g.bits == 8 && g.range == IntRange::Full && g.frac == 6 => {
            MxElement::Int8
        }
        _ => return None,
    };
    (s.scale == FloatFormat::E8M0).then_some(MxOptions {
        element,
        block,
        scale: rule,
        pad: s.pad,
    })
}

/// TransformerEngine's rotation then NVFP4 (`rht16:bf16+nvfp4:convention=te` and any sign
/// vector of 16), codes and scales of binary32 inputs, through the kernel that rotates in
/// registers ([`nvfp4::rht16_te_codes`]); `None`: use the general path. `s` is the scheme
/// without its rotation.
pub(crate) fn rotated_te<I: Float, C: Code>(
    s: &Scheme,
    r: &super::axes::Rotation,
    x: &[I],
    shape: &[usize],
    codes: &mut [C],
    enc: &mut Encoded,
) -> Option<Counts> {
    let te = s.rounding == SATURATE
        && s.element == Element::Float(FloatFormat::FP4_E2M1)
        && s.blocks == Blocks::Group(nvfp4::BLOCK)
        && s.scale == FloatFormat::FP8_E4M3
        && matches!(s.rule, Rule::Amax { .. })
        && s.second == Some(nvfp4::Convention::Te)
        && r.size == 16
        && r.bf16;
    let x32 = I::as_f32_slice(x).filter(|_| te)?;
    let s = super::rotate::signs(r);
    let signs: [f32; 16] = std::array::from_fn(|i| s[i] as f32);
    let k = 1.0f32 / (r.size as f32).sqrt();
    let row_len = shape.last().copied().unwrap_or(1);
    let Scales::Codes(sc) = &mut enc.scales else {
        return None;
    };
    let (g, st) = with_bytes(codes, x.len(), |c| {
        nvfp4::rht16_te_codes(x32, row_len, &signs, k, c, sc)
    })?;
    enc.tensor_scale = Some(g);
    Some(counts(st, 0))
}

/// Run the specialised kernel for `s`, if there is one (`None`: use the general engine).
pub(crate) fn run<I: Float, C: Code>(
    s: &Scheme,
    x: &[I],
    shape: &[usize],
    values: &mut [I],
    codes: &mut [C],
    enc: &mut Encoded,
    tensor_amax: Option<f64>,
) -> Result<Option<Counts>> {
    if s.rounding != SATURATE || s.rotation.is_some() {
        return Ok(None);
    }
    let nvfp4_codes = s.element == Element::Float(FloatFormat::FP4_E2M1)
        && s.blocks == Blocks::Group(nvfp4::BLOCK)
        && values.is_empty();
    if tensor_amax.is_some() && !nvfp4_codes {
        return Ok(None); // pieces of a tensor: the general engine takes the tensor's amax
    }
    let n = x.len();
    let row_len = shape.last().copied().unwrap_or(1).max(1);
    if let Some(o) = mx_options(s) {
        let Scales::Codes(sc) = &mut enc.scales else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(None); // the general engine: no element, no block
        }
        let st = with_bytes(codes, n, |c| -> Result<BlockStatus> {
            if values.is_empty() {
                mx::mx_encode_into(x, row_len, &o, c, sc)
            } else {
                mx::mx_quantize_into(x, row_len, &o, values, c, sc)
            }
        })?;
        let mut k = counts(st, o.block as u64);
        if st.nan_blocks > 0 && !row_len.is_multiple_of(o.block) {
            // NaN blocks (scale 0xFF) at a padded row end hold fewer elements
            let g = s.grid(shape)?;
            k.nan = (sc.iter().enumerate())
                .filter(|&(_, &c)| c == 0xff)
                .map(|(b, _)| g.block_len(b) as u64)
                .sum();
        }
        return Ok(Some(k));
    }
    if s.element == Element::Float(FloatFormat::FP4_E2M1)
        && s.blocks == Blocks::Group(nvfp4::BLOCK)
        && s.scale == FloatFormat::FP8_E4M3
        && matches!(s.rule, Rule::Amax { .. })
        && s.second.is_some()
    {
        let convention = s.second.unwrap_or_default();
        let o = Nvfp4Options {
            convention,
            pad: s.pad,
        };
        let Scales::Codes(sc) = &mut enc.scales else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(None); // the general engine: no element, no block
        }
        let (g, st) = with_bytes(codes, n, |c| -> Result<(f32, BlockStatus)> {
            if values.is_empty() {
                nvfp4::encode_piece_into(x, row_len, &o, tensor_amax, c, sc)
            } else if tensor_amax.is_some() {
                Err(crate::error::Error::InvalidArgument(
                    "internal: NVFP4 pieces are encoded without values".into(),
                ))
            } else {
                nvfp4::nvfp4_quantize_into(x, row_len, &o, values, c, sc)
            }
        })?;
        enc.tensor_scale = Some(g);
        return Ok(Some(counts(st, 0)));
    }
    if let (Element::Int(g), Rule::Affine(clip)) = (s.element, s.rule) {
        let granularity = match s.blocks {
            Blocks::Tensor => Granularity::Tensor,
            Blocks::Channel => Granularity::Channel,
            Blocks::Group(k) if row_len.is_multiple_of(k) => Granularity::Group(k),
            _ => return Ok(None),
        };
        if g.frac != 0 || s.scale != FloatFormat::FP64 {
            return Ok(None);
        }
        let o = IntOptions {
            bits: g.bits,
            mapping: match g.range {
                IntRange::Restricted => Mapping::Symmetric,
                IntRange::Full => Mapping::SymmetricFull,
                IntRange::Unsigned => Mapping::Asymmetric,
            },
            granularity,
            clip,
        };
        let Scales::Values(sv) = &mut enc.scales else {
            return Ok(None);
        };
        let groups = sv.len();
        let mut zeros_tmp = vec![0.0; groups];
        let zeros: &mut [f64] = match &mut enc.zeros {
            Some(z) => z,
            None => &mut zeros_tmp,
        };
        let mut clips = vec![1.0; groups];
        let mut scratch = Vec::new();
        let cbuf: &mut [C] = if codes.is_empty() {
            scratch.resize(n, C::default());
            &mut scratch
        } else {
            codes
        };
        let v = (!values.is_empty()).then_some(values);
        let (sat, fl) =
            crate::quant::quantize_int_codes_into(x, row_len, &o, v, cbuf, sv, zeros, &mut clips)?;
        return Ok(Some(Counts {
            elements: n as u64,
            blocks: groups as u64,
            saturated: sat,
            flushed: fl,
            ..Counts::default()
        }));
    }
    if let (
        Element::Float(f),
        Rule::Amax {
            arith: Arith::F64,
            pow2: false,
        },
        Blocks::Tensor,
        None,
    ) = (s.element, s.rule, s.blocks, s.second)
    {
        if s.scale != FloatFormat::FP64 || f.bits() > 16 {
            return Ok(None);
        }
        let (scale, st) = crate::block::tensor::tensor_scaled_into(x, &f, values, codes)?;
        enc.scales = Scales::Values(vec![scale]);
        return Ok(Some(counts(st, 0)));
    }
    if let (Element::Float(f), Rule::None) = (s.element, s.rule) {
        let r = Rounder::<I>::new(&f, &SATURATE);
        let st = if values.is_empty() {
            if codes.is_empty() {
                // the counts alone: codes into a small buffer, piece by piece
                let mut c = [0u64; 4096];
                x.chunks(4096)
                    .enumerate()
                    .map(|(i, p)| r.encode(p, &mut c[..p.len()], (i * 4096) as u64))
                    .fold(Default::default(), |a, b| a + b)
            } else {
                r.encode(x, codes, 0)
            }
        } else {
            if !codes.is_empty() {
                r.encode(x, codes, 0);
            }
            if f.fits_f32() || I::MANT == 52 {
                crate::round_into(&f, x, values, &SATURATE)?
            } else {
                let mut v = vec![0f64; n];
                let st = crate::round_into(&f, x, &mut v, &SATURATE)?;
                values
                    .iter_mut()
                    .zip(&v)
                    .for_each(|(o, v)| *o = I::from_f64(*v));
                st
            }
        };
        return Ok(Some(Counts {
            elements: n as u64,
            saturated: st.saturated,
            flushed: st.flushed,
            nan: st.nan,
            ..Counts::default()
        }));
    }
    Ok(None)
}
