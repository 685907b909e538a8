//! Quantization schemes by name: one value that says how a tensor is turned into codes and
//! scales, for the CLI (`--scheme`), the report and the bindings.
//!
//! | scheme | meaning |
//! |---|---|
//! | `mx:ELEM[:block=N][:scale=floor\|ceil\|even\|rceil][:pad]` | OCP MX; ELEM one of fp8-e4m3, fp8-e5m2, fp6-e3m2, fp6-e2m3, fp4-e2m1, int8 |
//! | `mxfp8`, `mxfp6`, `mxfp4`, `mxint8` | `mx:fp8-e4m3`, `mx:fp6-e2m3`, `mx:fp4-e2m1`, `mx:int8` (options may follow) |
//! | `nvfp4[:convention=seed\|torchao][:pad]` | NVFP4 |
//! | `tensor:FORMAT` | one binary64 scale for the tensor, then FORMAT (round to nearest even, saturating) |
//! | `cast:FORMAT` | a plain rounding into FORMAT (round to nearest even, saturating), no scale |
//! | `FORMAT` | `tensor:FORMAT` for formats of at most 8 bits, `cast:FORMAT` for wider ones (fp8 is used with a scale; fp16 and bf16 are cast) |
//! | `intB[:asym\|:full][:tensor\|:channel\|:group=G][:clip=R\|:clip=mse]` | affine integers, B = 2…16 (default symmetric, per tensor) |
//!
//! ```
//! use lowprec::scheme::Scheme;
//! let s: Scheme = "int4:group=128:clip=mse".parse().unwrap();
//! assert_eq!(s.to_string(), "int4:group=128:clip=mse");
//! assert_eq!("mxfp4".parse::<Scheme>().unwrap().to_string(), "mx:fp4-e2m1");
//! assert_eq!("fp8-e4m3".parse::<Scheme>().unwrap().to_string(), "tensor:fp8-e4m3");
//! assert_eq!("bf16".parse::<Scheme>().unwrap().to_string(), "cast:bf16");
//! ```

use crate::block::mx::{mx_quantize_into, MxElement, MxOptions, ScaleRule};
use crate::block::nvfp4::{self, Convention, Nvfp4Options};
use crate::block::tensor::tensor_scaled;
use crate::block::BlockStatus;
use crate::error::{Error, Result};
use crate::quant::{quantize_int_codes_into, Clip, Granularity, IntOptions, Mapping};
use crate::round::{Float, Overflow, RoundOptions, Rounder};
use crate::FloatFormat;
use std::fmt;
use std::str::FromStr;

/// A quantization scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheme {
    /// A plain rounding into a format (RNE, saturating).
    Cast(FloatFormat),
    /// One scale for the tensor, then a format.
    Tensor(FloatFormat),
    /// OCP MX.
    Mx(MxOptions),
    /// NVFP4.
    Nvfp4(Nvfp4Options),
    /// Affine integers.
    Int(IntOptions),
}

/// Scales of a quantized tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum Scales {
    /// No scale (a plain cast).
    None,
    /// One byte per block: E8M0 (MX) or E4M3 (NVFP4) codes, `rows × blocks_per_row`.
    Codes(Vec<u8>),
    /// Binary64 scales: one (tensor scaling) or one per channel/group (integers).
    Values(Vec<f64>),
}

/// A quantized tensor: values, codes, scales, and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized<O> {
    /// The dequantized values, in the input's shape.
    pub values: Vec<O>,
    /// Element codes, unpacked, right-aligned, in the input's shape (integers: two's
    /// complement for symmetric mappings); empty for formats wider than 16 bits.
    pub codes: Vec<u16>,
    /// Bits per element code.
    pub code_bits: u32,
    /// The scales.
    pub scales: Scales,
    /// Scales per row (blocks per row, groups per row, or 1 for one scale per row).
    pub scales_per_row: usize,
    /// Asymmetric integers: one zero point per group.
    pub zeros: Option<Vec<f64>>,
    /// NVFP4: the binary32 tensor scale.
    pub tensor_scale: Option<f32>,
    /// Elements clamped to the largest representable magnitude (saturated / clipped).
    pub saturated: u64,
    /// Nonzero elements that became zero.
    pub flushed: u64,
    /// Elements made NaN (NaN/Inf blocks; NaN inputs of a cast).
    pub nan: u64,
}

fn opt_value<'a>(opt: &'a str, key: &str) -> Option<&'a str> {
    opt.strip_prefix(key).and_then(|r| r.strip_prefix('='))
}

fn bad(s: &str, why: impl fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "bad scheme `{s}`: {why}; schemes are mx:ELEM[:block=N][:scale=floor|ceil|even|rceil][:pad], \
         mxfp8, mxfp6, mxfp4, mxint8, nvfp4[:convention=seed|torchao], tensor:FORMAT, cast:FORMAT, \
         FORMAT, intB[:asym|:full][:channel|:group=G][:clip=R|:clip=mse]"
    ))
}

fn parse_mx(s: &str, elem: &str, opts: &[&str]) -> Result<Scheme> {
    let mut o = MxOptions::new(MxElement::parse(elem).map_err(|e| bad(s, e))?);
    for opt in opts {
        if let Some(v) = opt_value(opt, "block") {
            o.block = v
                .parse()
                .ok()
                .filter(|&b: &usize| b > 0)
                .ok_or_else(|| bad(s, format!("block size `{v}` is not a positive integer")))?;
        } else if let Some(v) = opt_value(opt, "scale") {
            o.scale = ScaleRule::parse(v).map_err(|e| bad(s, e))?;
        } else if *opt == "pad" {
            o.pad = true;
        } else {
            return Err(bad(s, format!("unknown MX option `{opt}`")));
        }
    }
    Ok(Scheme::Mx(o))
}

fn parse_int(s: &str, bits: &str, opts: &[&str]) -> Result<Scheme> {
    let b: u32 = bits
        .parse()
        .ok()
        .filter(|b| (2..=16).contains(b))
        .ok_or_else(|| bad(s, "integer widths are int2 … int16"))?;
    let mut o = IntOptions::new(b);
    for opt in opts {
        match *opt {
            "asym" => o.mapping = Mapping::Asymmetric,
            "sym" => o.mapping = Mapping::Symmetric,
            "full" => o.mapping = Mapping::SymmetricFull,
            "tensor" => o.granularity = Granularity::Tensor,
            "channel" => o.granularity = Granularity::Channel,
            _ => {
                if let Some(v) = opt_value(opt, "group") {
                    let g = v.parse().ok().filter(|&g: &usize| g > 0).ok_or_else(|| {
                        bad(s, format!("group size `{v}` is not a positive integer"))
                    })?;
                    o.granularity = Granularity::Group(g);
                } else if let Some(v) = opt_value(opt, "clip") {
                    o.clip = if v == "mse" {
                        Clip::Mse
                    } else {
                        let c: f64 = v
                            .parse()
                            .ok()
                            .filter(|c: &f64| *c > 0.0 && *c <= 1.0)
                            .ok_or_else(|| {
                                bad(s, format!("clip `{v}` is not mse or a ratio in (0, 1]"))
                            })?;
                        Clip::Ratio(c)
                    };
                } else {
                    return Err(bad(s, format!("unknown integer option `{opt}`")));
                }
            }
        }
    }
    Ok(Scheme::Int(o))
}

impl Scheme {
    /// Parse a scheme name (see the module table).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] (or a format error) naming the problem and the grammar.
    pub fn parse(s: &str) -> Result<Scheme> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split(':').collect();
        let head = parts[0];
        let rest = &parts[1..];
        match head {
            "mx" => {
                let (elem, opts) = rest
                    .split_first()
                    .ok_or_else(|| bad(s, "mx needs an element type"))?;
                parse_mx(s, elem, opts)
            }
            "mxfp8" => parse_mx(s, "fp8-e4m3", rest),
            "mxfp6" => parse_mx(s, "fp6-e2m3", rest),
            "mxfp4" => parse_mx(s, "fp4-e2m1", rest),
            "mxint8" => parse_mx(s, "int8", rest),
            "nvfp4" => {
                let mut o = Nvfp4Options::default();
                for opt in rest {
                    if let Some(v) = opt_value(opt, "convention") {
                        o.convention = Convention::parse(v).map_err(|e| bad(s, e))?;
                    } else if *opt == "pad" {
                        o.pad = true;
                    } else {
                        return Err(bad(s, format!("unknown NVFP4 option `{opt}`")));
                    }
                }
                Ok(Scheme::Nvfp4(o))
            }
            "tensor" | "cast" => {
                let f = t
                    .split_once(':')
                    .map(|x| x.1)
                    .ok_or_else(|| bad(s, "missing format"))?;
                let f = FloatFormat::parse(f)?;
                Ok(if head == "tensor" {
                    Scheme::Tensor(f)
                } else {
                    Scheme::Cast(f)
                })
            }
            h if h.starts_with("int")
                && h[3..].chars().all(|c| c.is_ascii_digit())
                && h.len() > 3 =>
            {
                parse_int(s, &h[3..], rest)
            }
            _ => {
                let f =
                    FloatFormat::parse(t).map_err(|_| bad(s, "not a scheme or a format name"))?;
                Ok(if f.bits() <= 8 {
                    Scheme::Tensor(f)
                } else {
                    Scheme::Cast(f)
                })
            }
        }
    }

    /// Storage per element in bits, scale overhead included, for `n` elements whose last axis
    /// is `row_len` (scales: E8M0/E4M3 one byte per block, binary32 tensor and integer
    /// scales, integer zero points as 32 bits).
    pub fn bits_per_element(&self, n: usize, row_len: usize) -> f64 {
        let n = n.max(1) as f64;
        let rows = (n / row_len.max(1) as f64).ceil();
        match self {
            Scheme::Cast(f) => f.bits() as f64,
            Scheme::Tensor(f) => f.bits() as f64 + 32.0 / n,
            Scheme::Mx(o) => {
                o.element.bits() as f64 + 8.0 * rows * o.blocks_per_row(row_len) as f64 / n
            }
            Scheme::Nvfp4(_) => {
                4.0 + (8.0 * rows * nvfp4::blocks_per_row(row_len) as f64 + 32.0) / n
            }
            Scheme::Int(o) => {
                let groups = match o.granularity {
                    Granularity::Tensor => 1.0,
                    Granularity::Channel => rows,
                    Granularity::Group(g) => n / g as f64,
                };
                let per = if o.mapping == Mapping::Asymmetric {
                    64.0
                } else {
                    32.0
                };
                o.bits as f64 + per * groups / n
            }
        }
    }

    /// Bits per element code.
    pub fn code_bits(&self) -> u32 {
        match self {
            Scheme::Cast(f) | Scheme::Tensor(f) => f.bits(),
            Scheme::Mx(o) => o.element.bits(),
            Scheme::Nvfp4(_) => 4,
            Scheme::Int(o) => o.bits,
        }
    }

    /// Quantize `x` (`row_len` = the last axis).
    ///
    /// # Errors
    ///
    /// The errors of the underlying conversion (bad shapes, NaN where the scheme cannot
    /// hold it).
    pub fn apply<I: Float>(&self, x: &[I], row_len: usize) -> Result<Quantized<I>> {
        let n = x.len();
        let mut q = Quantized {
            values: vec![I::default(); n],
            codes: vec![0; if self.code_bits() <= 16 { n } else { 0 }],
            code_bits: self.code_bits(),
            scales: Scales::None,
            scales_per_row: 1,
            zeros: None,
            tensor_scale: None,
            saturated: 0,
            flushed: 0,
            nan: 0,
        };
        crate::block::rows_of(n, row_len)?;
        let from_block = |q: &mut Quantized<I>, st: BlockStatus, per: u64| {
            q.saturated = st.saturated;
            q.flushed = st.flushed;
            q.nan = st.nan_blocks * per;
        };
        match self {
            Scheme::Cast(f) => {
                let sat = RoundOptions::default().overflow(Overflow::Saturate);
                // NaN inputs of formats without NaN get code 0 (counted in `nan`)
                if !q.codes.is_empty() {
                    Rounder::<I>::new(f, &sat).encode(x, &mut q.codes, 0);
                }
                let st = if f.fits_f32() || I::MANT == 52 {
                    crate::round_into(f, x, &mut q.values, &sat)?
                } else {
                    let mut v = vec![0f64; n];
                    let st = crate::round_into(f, x, &mut v, &sat)?;
                    q.values
                        .iter_mut()
                        .zip(&v)
                        .for_each(|(o, v)| *o = I::from_f64(*v));
                    st
                };
                q.saturated = st.saturated;
                q.flushed = st.flushed;
                q.nan = st.nan;
            }
            Scheme::Tensor(f) => {
                let t = tensor_scaled(x, f)?;
                q.values = t.values;
                if !q.codes.is_empty() {
                    q.codes
                        .iter_mut()
                        .zip(&t.codes)
                        .for_each(|(d, &c)| *d = c as u16);
                }
                q.scales = Scales::Values(vec![t.scale]);
                q.scales_per_row = 0;
                from_block(&mut q, t.status, 0);
            }
            Scheme::Mx(o) => {
                let nb = o.blocks_per_row(row_len);
                let mut c = vec![0u8; n];
                let mut s = vec![0u8; (n / row_len) * nb];
                let st = mx_quantize_into(x, row_len, o, &mut q.values, &mut c, &mut s)?;
                q.codes.iter_mut().zip(&c).for_each(|(d, &c)| *d = c as u16);
                q.scales = Scales::Codes(s);
                q.scales_per_row = nb;
                from_block(&mut q, st, o.block as u64);
            }
            Scheme::Nvfp4(o) => {
                let nb = nvfp4::blocks_per_row(row_len);
                let mut c = vec![0u8; n];
                let mut s = vec![0u8; (n / row_len) * nb];
                let (g, st) =
                    nvfp4::nvfp4_quantize_into(x, row_len, o, &mut q.values, &mut c, &mut s)?;
                q.codes.iter_mut().zip(&c).for_each(|(d, &c)| *d = c as u16);
                q.scales = Scales::Codes(s);
                q.scales_per_row = nb;
                q.tensor_scale = Some(g);
                from_block(&mut q, st, 0);
            }
            Scheme::Int(o) => {
                let groups = o.groups(n, row_len)?;
                let (mut scales, mut zeros, mut clips) =
                    (vec![1.0; groups], vec![0.0; groups], vec![1.0; groups]);
                (q.saturated, q.flushed) = quantize_int_codes_into(
                    x,
                    row_len,
                    o,
                    Some(&mut q.values),
                    &mut q.codes,
                    &mut scales,
                    &mut zeros,
                    &mut clips,
                )?;
                q.scales_per_row = match o.granularity {
                    Granularity::Tensor => 0,
                    Granularity::Channel => 1,
                    Granularity::Group(g) => row_len / g,
                };
                q.scales = Scales::Values(scales);
                if o.mapping == Mapping::Asymmetric {
                    q.zeros = Some(zeros);
                }
            }
        }
        Ok(q)
    }
}

impl Scheme {
    /// Values from codes and scales (the inverse of [`Scheme::apply`], bit for bit): `codes`
    /// unpacked in the tensor's shape, `scales` / `zeros` / `tensor_scale` as
    /// [`Scheme::apply`] returned them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the scales do not match the scheme or the shape.
    pub fn dequantize_into<O: Float>(
        &self,
        codes: &[u16],
        scales: &Scales,
        zeros: Option<&[f64]>,
        tensor_scale: Option<f32>,
        row_len: usize,
        out: &mut [O],
    ) -> Result<()> {
        let n = codes.len();
        let rows = crate::block::rows_of(n, row_len)?;
        if out.len() != n {
            return Err(Error::InvalidArgument(format!(
                "dequantize: {n} codes but {} outputs",
                out.len()
            )));
        }
        let mismatch = |what: &str| {
            Error::InvalidArgument(format!("dequantize {self}: {what} do not match the scheme"))
        };
        match (self, scales) {
            (Scheme::Cast(f), _) => {
                let v: Vec<f64> = crate::decode_vec(f, codes)?;
                out.iter_mut()
                    .zip(&v)
                    .for_each(|(o, v)| *o = O::from_f64(*v));
            }
            (Scheme::Tensor(f), Scales::Values(s)) if s.len() == 1 => {
                let v: Vec<f64> = crate::decode_vec(f, codes)?;
                out.iter_mut()
                    .zip(&v)
                    .for_each(|(o, v)| *o = O::from_f64(v * s[0]));
            }
            (Scheme::Mx(o), Scales::Codes(s)) => {
                let c: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
                crate::block::mx::mx_dequantize_into(&c, s, row_len, o, out)?;
            }
            (Scheme::Nvfp4(_), Scales::Codes(s)) => {
                let g = tensor_scale.ok_or_else(|| mismatch("a missing tensor scale"))?;
                let c: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
                nvfp4::nvfp4_dequantize_into(&c, s, g, row_len, out)?;
            }
            (Scheme::Int(o), Scales::Values(s)) => {
                let glen = o.group_len(n, row_len)?;
                if s.len() != n.div_ceil(glen).max(1) {
                    return Err(mismatch("the scales"));
                }
                let sym = o.mapping != Mapping::Asymmetric;
                let shift = 32 - o.bits;
                for (k, (cg, og)) in codes.chunks(glen).zip(out.chunks_mut(glen)).enumerate() {
                    let z = zeros.map_or(0.0, |z| z.get(k).copied().unwrap_or(0.0));
                    for (c, o) in cg.iter().zip(og.iter_mut()) {
                        let q = if sym {
                            (((*c as u32) << shift) as i32 >> shift) as f64
                        } else {
                            *c as f64
                        };
                        *o = O::from_f64(s[k] * (q - z));
                    }
                }
            }
            _ => return Err(mismatch("the scales")),
        }
        let _ = rows;
        Ok(())
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheme::Cast(x) => write!(f, "cast:{x}"),
            Scheme::Tensor(x) => write!(f, "tensor:{x}"),
            Scheme::Mx(o) => {
                write!(f, "mx:{}", o.element)?;
                if o.block != 32 {
                    write!(f, ":block={}", o.block)?;
                }
                if o.scale != ScaleRule::Floor {
                    write!(f, ":scale={}", o.scale.name())?;
                }
                if o.pad {
                    f.write_str(":pad")?;
                }
                Ok(())
            }
            Scheme::Nvfp4(o) => {
                f.write_str("nvfp4")?;
                if o.convention != Convention::Seed {
                    write!(f, ":convention={}", o.convention.name())?;
                }
                if o.pad {
                    f.write_str(":pad")?;
                }
                Ok(())
            }
            Scheme::Int(o) => {
                write!(f, "int{}", o.bits)?;
                match o.mapping {
                    Mapping::Symmetric => {}
                    Mapping::SymmetricFull => f.write_str(":full")?,
                    Mapping::Asymmetric => f.write_str(":asym")?,
                }
                match o.granularity {
                    Granularity::Tensor => {}
                    Granularity::Channel => f.write_str(":channel")?,
                    Granularity::Group(g) => write!(f, ":group={g}")?,
                }
                match o.clip {
                    Clip::None => Ok(()),
                    Clip::Ratio(c) => write!(f, ":clip={c}"),
                    Clip::Mse => f.write_str(":clip=mse"),
                }
            }
        }
    }
}

impl FromStr for Scheme {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Scheme::parse(s)
    }
}

/// Codes packed row by row, as `lowprec quantize --packed` writes them: each row of
/// `row_len` codes (the last axis) packed on its own with [`crate::block::pack::pack`]
/// (2/4/6/8-bit and other widths up to 8: the layouts there, a partial byte or 6-bit group
/// at the end of a row zero-padded), codes of 9 to 16 bits as little-endian 16-bit words.
/// Returns the bytes and the bytes per row.
///
/// ```
/// use lowprec::scheme::pack_rows;
/// // two rows of three 4-bit codes: each row packs into two bytes, element 2i low
/// assert_eq!(pack_rows(&[1, 2, 3, 4, 5, 6], 4, 3).unwrap(), (vec![0x21, 0x03, 0x54, 0x06], 2));
/// assert_eq!(pack_rows(&[0x1234], 16, 1).unwrap(), (vec![0x34, 0x12], 2));
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] for widths outside 1..=16 or a code that does not fit `bits`.
pub fn pack_rows(codes: &[u16], bits: u32, row_len: usize) -> Result<(Vec<u8>, usize)> {
    use crate::block::pack::{pack, packed_len};
    let row_len = row_len.max(1);
    match bits {
        1..=8 => {
            let per = packed_len(row_len, bits);
            let mut out = Vec::with_capacity(per * codes.len().div_ceil(row_len));
            for row in codes.chunks(row_len) {
                let b = row
                    .iter()
                    .map(|&c| {
                        u8::try_from(c).map_err(|_| {
                            Error::InvalidArgument(format!(
                                "code {c:#x} does not fit in {bits} bits"
                            ))
                        })
                    })
                    .collect::<Result<Vec<u8>>>()?;
                out.extend(pack(&b, bits)?);
            }
            Ok((out, per))
        }
        9..=16 => {
            if let Some(&c) = codes.iter().find(|&&c| bits < 16 && c >> bits != 0) {
                return Err(Error::InvalidArgument(format!(
                    "code {c:#x} does not fit in {bits} bits"
                )));
            }
            Ok((
                codes.iter().flat_map(|c| c.to_le_bytes()).collect(),
                2 * row_len,
            ))
        }
        b => Err(Error::InvalidArgument(format!(
            "packing is defined for codes of 1 to 16 bits, not {b}-bit"
        ))),
    }
}

impl<O> Quantized<O> {
    /// The element codes packed row by row ([`pack_rows`]) and the bytes per row.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the codes are wider than 16 bits (not kept).
    pub fn packed(&self, row_len: usize) -> Result<(Vec<u8>, usize)> {
        pack_rows(&self.codes, self.code_bits, row_len)
    }
}
