//! Quantization schemes as data: one [`Scheme`] value says how a tensor becomes element codes
//! and scales, along independent axes:
//!
//! | axis | type | values |
//! |---|---|---|
//! | element | [`Element`] | any float format of the core, or a `b`-bit integer grid |
//! | block shape | [`Blocks`] | whole tensor, per channel (row), groups of `g` along the last axis, `r × c` tiles of the last two axes |
//! | scale format | [`FloatFormat`] | E8M0, E4M3, UE4M3, FP32, BF16, FP16, binary64, any format of the core |
//! | scale rule | [`Rule`] | none (a cast), MX power of two, amax to the element's max, affine integers (clip ratio, MSE search), lowest-error candidate |
//! | second level | [`Convention`] | a tensor scale over the block scales, in the seed's, torchao's or TransformerEngine's arithmetic |
//! | rotation | [`Rotation`] | a block Hadamard transform before quantizing |
//! | rounding | [`RoundOptions`] | every mode and overflow policy of the core (stochastic rounding reproducible) |
//!
//! Every scheme runs through one general engine (per block: statistics, the rule's scale,
//! the element step of [`element`]); the presets whose axes match a specialised kernel
//! (OCP MX, NVFP4 in the seed and torchao conventions, integer groups, per-tensor scaling,
//! casts) run that kernel, which the tests hold to the general engine bit for bit. Names,
//! presets and their formulas are in `docs/schemes.md`; [`Scheme::parse`] reads them and
//! `Display` writes the canonical name, which parses back to the same scheme.
//!
//! ```
//! use lowprec::scheme::Scheme;
//! let s: Scheme = "int4:group=128:clip=mse".parse().unwrap();
//! assert_eq!(s.to_string(), "int4:group=128:clip=mse");
//! assert_eq!("mxfp4".parse::<Scheme>().unwrap().to_string(), "mx:fp4-e2m1");
//! assert_eq!("fp8-e4m3".parse::<Scheme>().unwrap().to_string(), "tensor:fp8-e4m3");
//! assert_eq!("bf16".parse::<Scheme>().unwrap().to_string(), "cast:bf16");
//! let q = "nvfp4".parse::<Scheme>().unwrap().apply(&[1.0f32, -2.0, 3.0, 6.0].repeat(4), &[16]).unwrap();
//! assert_eq!(q.codes[3], 0b0111); // E2M1 6.0: the block's largest element reaches 6
//! assert!((q.values[3] - 6.0).abs() < 1e-6); // times the binary32 tensor scale
//! ```

pub mod axes;
pub mod element;
mod fast;
mod generic;
pub mod grid;
mod name;
pub mod rotate;
pub(crate) mod rule;

pub use axes::{
    Arith, Best, Blocks, Convention, Element, IntGrid, IntRange, Rotation, Rule, Signs,
};
pub use element::encode_block;
pub use grid::Grid;
pub use name::{Preset, PRESETS};

use crate::error::{Error, Result};
use crate::round::{Code, Float, Overflow, RoundOptions};
use crate::FloatFormat;
use std::ops::{Add, AddAssign};

/// A quantization scheme: one value of every axis (see the module table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scheme {
    /// What scaled elements are rounded into.
    pub element: Element,
    /// Which elements share a scale.
    pub blocks: Blocks,
    /// The format the block scales are stored in.
    pub scale: FloatFormat,
    /// How each block's scale is chosen.
    pub rule: Rule,
    /// A tensor scale over the block scales, and its arithmetic.
    pub second: Option<Convention>,
    /// A rotation before quantizing.
    pub rotation: Option<Rotation>,
    /// The element rounding (nearest even with saturation by default).
    pub rounding: RoundOptions,
    /// Partial edge blocks are allowed (holding only the elements that exist) instead of
    /// refused.
    pub pad: bool,
}

/// What happened in a quantization (counts), the same for every scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Counts {
    /// Elements in.
    pub elements: u64,
    /// Blocks (scales) out.
    pub blocks: u64,
    /// Elements whose scaled value exceeded the element's largest magnitude (clamped).
    pub saturated: u64,
    /// Nonzero elements that became zero.
    pub flushed: u64,
    /// Elements made NaN (NaN blocks; NaN inputs of a cast).
    pub nan: u64,
    /// Blocks holding NaN or ±Inf (MX: a NaN scale).
    pub nan_blocks: u64,
    /// Blocks whose scale had to be clamped to the scale format's range.
    pub scale_clamped: u64,
}

impl Add for Counts {
    type Output = Counts;
    fn add(self, o: Counts) -> Counts {
        Counts {
            elements: self.elements + o.elements,
            blocks: self.blocks + o.blocks,
            saturated: self.saturated + o.saturated,
            flushed: self.flushed + o.flushed,
            nan: self.nan + o.nan,
            nan_blocks: self.nan_blocks + o.nan_blocks,
            scale_clamped: self.scale_clamped + o.scale_clamped,
        }
    }
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        *self = *self + o;
    }
}

/// The stored scales of a quantized tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum Scales {
    /// No scale (a plain cast).
    None,
    /// One code per block in a scale format of at most 8 bits (E8M0, E4M3, …).
    Codes(Vec<u8>),
    /// One value per block (FP32, BF16, FP16 or binary64 scales).
    Values(Vec<f64>),
}

impl Scales {
    /// The number of scales.
    pub fn len(&self) -> usize {
        match self {
            Scales::None => 0,
            Scales::Codes(c) => c.len(),
            Scales::Values(v) => v.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Everything beside the element codes that a quantized tensor stores: block scales (in
/// the block grid's row-major order, `scale_shape`), zero points, the tensor scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    /// The block scales.
    pub scales: Scales,
    /// The shape of the block grid ([`Grid::scale_shape`]).
    pub scale_shape: Vec<usize>,
    /// Asymmetric integers: one zero point per block (integer units).
    pub zeros: Option<Vec<f64>>,
    /// Two-level schemes: the decode tensor scale `g` (binary32).
    pub tensor_scale: Option<f32>,
}

impl Encoded {
    /// The outputs as slices: scale codes (formats of at most 8 bits), scale values (wider
    /// formats) and zero points; empty where the scheme has none.
    fn slices_mut(&mut self) -> (&mut [u8], &mut [f64], &mut [f64]) {
        let (sc, sv): (&mut [u8], &mut [f64]) = match &mut self.scales {
            Scales::None => (&mut [], &mut []),
            Scales::Codes(c) => (c, &mut []),
            Scales::Values(v) => (&mut [], v),
        };
        let zs: &mut [f64] = match &mut self.zeros {
            Some(z) => z,
            None => &mut [],
        };
        (sc, sv, zs)
    }
}

/// A quantized tensor: values, codes, scales, and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized<O> {
    /// The dequantized values, in the input's shape (rotated back for rotated schemes).
    pub values: Vec<O>,
    /// Element codes, unpacked, right-aligned, in the input's shape (integers: two's
    /// complement for signed grids); empty for elements wider than 16 bits.
    pub codes: Vec<u16>,
    /// Bits per element code.
    pub code_bits: u32,
    /// Scales, zero points, tensor scale.
    pub encoded: Encoded,
    /// What happened.
    pub counts: Counts,
}

/// The largest rotation size.
pub const MAX_ROTATION: usize = 1 << 16;

/// Nearest even with saturation: the element rounding of every preset.
pub const SATURATE: RoundOptions = RoundOptions {
    overflow: Overflow::Saturate,
    ..RoundOptions::new(crate::RoundingMode::NearestEven)
};

impl Scheme {
    /// A scheme with every axis given and the default rounding (nearest even, saturating),
    /// no second level, no rotation, no padding.
    pub const fn new(element: Element, blocks: Blocks, scale: FloatFormat, rule: Rule) -> Scheme {
        Scheme {
            element,
            blocks,
            scale,
            rule,
            second: None,
            rotation: None,
            rounding: SATURATE,
            pad: false,
        }
    }

    /// A plain cast into `f` (no scales): what `cast:FORMAT` names.
    pub const fn cast(f: FloatFormat) -> Scheme {
        Scheme::new(
            Element::Float(f),
            Blocks::Tensor,
            FloatFormat::FP64,
            Rule::None,
        )
    }

    /// The same scheme with partial edge blocks allowed (what the report uses, so that
    /// every tensor gets a number).
    pub fn padded(mut self) -> Scheme {
        self.pad = true;
        self
    }

    /// Bits per element code.
    pub fn code_bits(&self) -> u32 {
        self.element.bits()
    }

    /// Whether every axis combination makes sense (the element can take the rule, the
    /// scale format can hold the rule's scales, …).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the option and what would work.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if let Some(r) = self.rotation {
            if r.size < 2 || !r.size.is_power_of_two() || r.size > MAX_ROTATION {
                return bad(format!(
                    "the rotation size {} is not a power of two from 2 to {MAX_ROTATION} (use 16, 32, 64, …)",
                    r.size
                ));
            }
        }
        match (self.rule, &self.element) {
            (Rule::None, Element::Int(_)) => {
                return bad("an integer element needs a scale rule (affine)".into())
            }
            (Rule::None, Element::Float(_)) => {
                if self.blocks != Blocks::Tensor
                    || self.second.is_some()
                    || self.scale != FloatFormat::FP64
                {
                    return bad("a cast has no blocks or scales; drop the block and scale options, or use tensor:FORMAT or amax:FORMAT".into());
                }
                return Ok(());
            }
            (Rule::Affine(_), Element::Float(f)) => {
                return bad(format!(
                    "the affine (clip) rule takes integer elements, not {f}; use intB, or the amax rule for floats"
                ))
            }
            (Rule::Best(Best::If4), _) if self.scale.is_signed() && self.scale.bits() <= 8 => {}
            (Rule::Best(Best::If4), _) => {
                return bad(format!(
                    "IF4 stores its FP4/INT4 choice in the scale's sign bit, and {} has none; use a signed scale format such as fp8-e4m3",
                    self.scale
                ))
            }
            _ => {}
        }
        self.element.check()?;
        if let Element::Int(g) = self.element {
            let mx = matches!(self.rule, Rule::Pow2(_));
            if (g.frac != 0 || mx)
                && !(mx && g.bits == 8 && g.frac == 6 && g.range == IntRange::Full)
            {
                return bad(format!(
                    "MX integer elements are MXINT8 (mx:int8 or mxint8), and k/2^frac grids are MX only; int{} needs the affine or amax rule",
                    g.bits
                ));
            }
        }
        if let (Element::Int(g), Rule::Affine(_)) = (&self.element, self.rule) {
            if g.frac != 0 {
                return bad("affine integers have no fraction bits".into());
            }
        }
        if matches!(self.rule, Rule::Affine(_)) && self.scale != FloatFormat::FP64 {
            return bad(format!(
                "integer (affine) scales are binary64 values, not {}; drop the scale= option",
                self.scale
            ));
        }
        if matches!(self.rule, Rule::Pow2(_)) && self.scale != FloatFormat::E8M0 {
            return bad(format!(
                "the MX power-of-two rules store E8M0 scales, not {}; use scale=amax for other scale formats",
                self.scale
            ));
        }
        if !self.scale.has_zero()
            && !matches!(self.rule, Rule::Pow2(_) | Rule::Amax { pow2: true, .. })
        {
            return bad(format!(
                "{} holds powers of two only (no zero): use it with an MX rule or scale=ue8m0",
                self.scale
            ));
        }
        if self.scale.bits() > 8 && self.scale.bits() < 16 {
            return bad(format!(
                "scale formats are stored as bytes (at most 8 bits) or as values (16 bits or more); {} has {}",
                self.scale,
                self.scale.bits()
            ));
        }
        if self.second.is_some() && !matches!(self.rule, Rule::Amax { .. } | Rule::Best(_)) {
            return bad(
                "a tensor scale (second level) goes with the amax rule (NVFP4-style)".into(),
            );
        }
        if let (Some(_), Rule::Amax { arith, pow2 }) = (self.second, self.rule) {
            if pow2 || arith != Arith::F64 {
                return bad(
                    "a two-level scheme's arithmetic is its convention's (convention=seed|torchao|te), and its block scales round to nearest: drop arith= and scale=ue8m0".into(),
                );
            }
        }
        if self.second.is_some() && self.scale.bits() > 8 {
            return bad(format!(
                "a two-level scheme's block scales are a small float format (E4M3), not {}",
                self.scale
            ));
        }
        if let Rule::Best(_) = self.rule {
            if self.second.is_none() || self.element != Element::Float(FloatFormat::FP4_E2M1) {
                return bad(
                    "4over6 and IF4 are NVFP4 variants: E2M1 elements with a tensor scale".into(),
                );
            }
        }
        Ok(())
    }

    /// The block grid of a tensor of `shape` (validated: partial blocks need `pad`; a
    /// rotation's size must divide the last axis).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the axis and what would work.
    pub fn grid(&self, shape: &[usize]) -> Result<Grid> {
        self.validate()?;
        if let Some(r) = self.rotation {
            let cols = shape.last().copied().unwrap_or(1);
            if cols % r.size != 0 {
                return Err(Error::InvalidArgument(format!(
                    "the rotation of size {} does not divide the last axis ({cols}); choose a size that divides it",
                    r.size
                )));
            }
        }
        let blocks = match self.rule {
            Rule::None => Blocks::Tensor,
            _ => self.blocks,
        };
        Grid::new(shape, blocks, self.pad)
    }

    /// Storage per element in bits, scales included, for a tensor of `shape`: the element
    /// bits, plus every block scale at its format's width (binary64 scales are charged 32
    /// bits, as the seed stores them in binary32), plus 32 bits per zero point and 32 for a
    /// tensor scale.
    pub fn bits_per_element(&self, shape: &[usize]) -> f64 {
        let n = shape.iter().product::<usize>().max(1) as f64;
        if self.rule == Rule::None {
            return self.element.bits() as f64;
        }
        let blocks = match self.grid(shape) {
            Ok(g) => g.blocks() as f64,
            Err(_) => return f64::NAN,
        };
        let per = self.scale.bits().min(32) as f64 + if self.has_zeros() { 32.0 } else { 0.0 };
        let tensor = if self.second.is_some() { 32.0 } else { 0.0 };
        self.element.bits() as f64 + (per * blocks + tensor) / n
    }

    fn has_zeros(&self) -> bool {
        matches!(self.rule, Rule::Affine(_))
            && matches!(self.element, Element::Int(g) if g.range == IntRange::Unsigned)
    }

    /// Empty scale outputs for a tensor of `shape`, sized for [`Scheme::encode_into`].
    ///
    /// # Errors
    ///
    /// As [`Scheme::grid`].
    pub fn encoded(&self, shape: &[usize]) -> Result<Encoded> {
        let g = self.grid(shape)?;
        let nb = g.blocks();
        let scales = if self.rule == Rule::None {
            Scales::None
        } else if self.scale.bits() <= 8 {
            Scales::Codes(vec![0; nb])
        } else {
            Scales::Values(vec![0.0; nb])
        };
        Ok(Encoded {
            scales,
            scale_shape: if self.rule == Rule::None {
                vec![0]
            } else {
                g.scale_shape(shape)
            },
            zeros: self.has_zeros().then(|| vec![0.0; nb]),
            tensor_scale: self.second.map(|_| 0.0),
        })
    }

    /// Quantize `x` (C order, `shape`): the element codes into `codes` (empty: not wanted)
    /// and the scales into `enc` (from [`Scheme::encoded`]); the quantization proper.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a shape that does not hold `x`, outputs of the wrong
    /// size, an impossible combination, or NaN/Inf where the rule cannot take them.
    pub fn encode_into<I: Float, C: Code>(
        &self,
        x: &[I],
        shape: &[usize],
        codes: &mut [C],
        enc: &mut Encoded,
    ) -> Result<Counts> {
        self.quantize_into(x, shape, &mut [], codes, enc)
    }

    /// [`Scheme::encode_into`] with the dequantized values too (`values` in the input's
    /// type; empty: not wanted).
    ///
    /// # Errors
    ///
    /// As [`Scheme::encode_into`].
    pub fn quantize_into<I: Float, C: Code>(
        &self,
        x: &[I],
        shape: &[usize],
        values: &mut [I],
        codes: &mut [C],
        enc: &mut Encoded,
    ) -> Result<Counts> {
        I::scheme_quantize_into(self, x, shape, values, C::codes_mut(codes), enc)
    }

    /// [`Self::quantize_into`] for the types it is called with (see `crate::mono`).
    pub(crate) fn quantize_into_generic<I: Float, C: Code>(
        &self,
        x: &[I],
        shape: &[usize],
        values: &mut [I],
        codes: &mut [C],
        enc: &mut Encoded,
    ) -> Result<Counts> {
        self.check_outputs(x, shape, values.len(), codes.len(), enc)?;
        if let Some(r) = self.rotation {
            return self.rotated(&r, x, shape, values, codes, enc, true);
        }
        // the specialised kernels refuse NaN and ±Inf themselves where their rule needs
        // finite inputs (no extra pass); the general engine checks first
        self.check_nan_cast(x)?;
        if let Some(c) = fast::run(self, x, shape, values, codes, enc, None)? {
            return Ok(c);
        }
        self.engine_into(x, shape, values, codes, enc, true, None)
    }

    /// A cast into a format without NaN refuses NaN inputs.
    fn check_nan_cast<I: Float>(&self, x: &[I]) -> Result<()> {
        if let (Rule::None, Element::Float(f)) = (self.rule, self.element) {
            if !f.has_nan() && x.iter().any(|v| v.to_f64().is_nan()) {
                return Err(Error::InvalidArgument(format!(
                    "{f} has no NaN: remove the NaN inputs before casting into it"
                )));
            }
        }
        Ok(())
    }

    /// The general engine, whatever the axes, with no specialised kernel or element step:
    /// what the fast paths are tested against.
    ///
    /// # Errors
    ///
    /// As [`Scheme::encode_into`].
    #[doc(hidden)]
    pub fn general_into<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        shape: &[usize],
        values: &mut [O],
        codes: &mut [C],
        enc: &mut Encoded,
    ) -> Result<Counts> {
        I::scheme_general_into(
            self,
            x,
            shape,
            O::floats_mut(values),
            C::codes_mut(codes),
            enc,
        )
    }

    /// [`Self::general_into`] for the types it is called with (see `crate::mono`).
    pub(crate) fn general_into_generic<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        shape: &[usize],
        values: &mut [O],
        codes: &mut [C],
        enc: &mut Encoded,
    ) -> Result<Counts> {
        if let Some(r) = self.rotation {
            self.check_outputs(x, shape, values.len(), codes.len(), enc)?;
            return self.rotated(&r, x, shape, values, codes, enc, false);
        }
        self.engine_into(x, shape, values, codes, enc, false, None)
    }

    /// The general engine; `specialised`: rows may take the element step's binary32
    /// specialisation; `tensor_amax`: `x` is a piece of a tensor of that largest magnitude.
    #[allow(clippy::too_many_arguments)]
    fn engine_into<I: Float, O: Float, C: Code>(
        &self,
        x: &[I],
        shape: &[usize],
        values: &mut [O],
        codes: &mut [C],
        enc: &mut Encoded,
        specialised: bool,
        tensor_amax: Option<f64>,
    ) -> Result<Counts> {
        self.check_outputs(x, shape, values.len(), codes.len(), enc)?;
        self.check_nan_cast(x)?;
        let grid = self.grid(shape)?;
        let ctx = generic::Ctx::new(self, x, grid, specialised, tensor_amax)?;
        let (sc, sv, zeros) = enc.slices_mut();
        let mut counts = if ctx.refused() {
            Counts::default()
        } else {
            generic::run(
                &ctx,
                x,
                generic::Outputs {
                    values,
                    codes,
                    scale_codes: sc,
                    scale_values: sv,
                    zeros,
                },
            )
        };
        if ctx.refused() {
            // NaN or ±Inf under a rule that needs finite inputs: name the element
            generic::check_finite(self, x)?;
            return Err(Error::InvalidArgument(format!(
                "{self} needs finite inputs"
            )));
        }
        if self.rule == Rule::None {
            counts.blocks = 0;
        }
        enc.tensor_scale = ctx.tensor_scale();
        Ok(counts)
    }

    fn check_outputs<I: Float>(
        &self,
        x: &[I],
        shape: &[usize],
        values: usize,
        codes: usize,
        enc: &Encoded,
    ) -> Result<()> {
        let n: usize = shape.iter().product();
        if n != x.len() {
            return Err(Error::InvalidArgument(format!(
                "the shape {shape:?} holds {n} elements, but there are {}",
                x.len()
            )));
        }
        let want = self.encoded(shape)?;
        if (values != 0 && values != n) || (codes != 0 && codes != n) {
            return Err(Error::InvalidArgument(format!(
                "{self}: {n} elements, but {values} values and {codes} codes asked for"
            )));
        }
        if codes != 0 && !self.element.has_codes() {
            return Err(Error::InvalidArgument(format!(
                "{self}: {} codes are wider than 16 bits; ask for values only",
                self.element
            )));
        }
        let same = |a: &Scales, b: &Scales| match (a, b) {
            (Scales::None, Scales::None) => true,
            (Scales::Codes(a), Scales::Codes(b)) => a.len() == b.len(),
            (Scales::Values(a), Scales::Values(b)) => a.len() == b.len(),
            _ => false,
        };
        if !same(&enc.scales, &want.scales)
            || enc.zeros.as_ref().map(Vec::len) != want.zeros.as_ref().map(Vec::len)
        {
            return Err(Error::InvalidArgument(format!(
                "{self}: the scale outputs do not fit the shape {shape:?}; make them with Scheme::encoded"
            )));
        }
        Ok(())
    }

    /// Quantize `x` into new buffers: values, codes (up to 16 bits), scales, counts.
    ///
    /// # Errors
    ///
    /// As [`Scheme::encode_into`].
    pub fn apply<I: Float>(&self, x: &[I], shape: &[usize]) -> Result<Quantized<I>> {
        let mut enc = self.encoded(shape)?;
        let mut values = vec![I::default(); x.len()];
        let mut codes = vec![0u16; if self.element.has_codes() { x.len() } else { 0 }];
        let counts = self.quantize_into(x, shape, &mut values, &mut codes, &mut enc)?;
        Ok(Quantized {
            values,
            codes,
            code_bits: self.code_bits(),
            encoded: enc,
            counts,
        })
    }

    /// Values from codes and scales, the inverse of [`Scheme::encode_into`] bit for bit
    /// (`codes` unpacked in the tensor's shape).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the codes or scales do not fit the scheme and shape.
    pub fn dequantize_into<C: Code, O: Float>(
        &self,
        codes: &[C],
        enc: &Encoded,
        shape: &[usize],
        out: &mut [O],
    ) -> Result<()> {
        O::scheme_dequantize_into(self, C::codes(codes), enc, shape, out)
    }

    /// [`Self::dequantize_into`] for the types it is called with (see `crate::mono`).
    pub(crate) fn dequantize_into_generic<C: Code, O: Float>(
        &self,
        codes: &[C],
        enc: &Encoded,
        shape: &[usize],
        out: &mut [O],
    ) -> Result<()> {
        let n: usize = shape.iter().product();
        if codes.len() != n || out.len() != n {
            return Err(Error::InvalidArgument(format!(
                "dequantize {self}: the shape {shape:?} holds {n} elements, but there are {} codes and {} outputs",
                codes.len(),
                out.len()
            )));
        }
        let grid = self.grid(shape)?;
        let want = self.encoded(shape)?;
        let mismatch = |what: &str| {
            Error::InvalidArgument(format!(
                "dequantize {self}: {what} do not match the scheme and the shape {shape:?}"
            ))
        };
        if enc.scales.len() != want.scales.len()
            || enc.zeros.as_ref().map(Vec::len) != want.zeros.as_ref().map(Vec::len)
        {
            return Err(mismatch("the scales"));
        }
        if self.second.is_some() && enc.tensor_scale.is_none() {
            return Err(mismatch("a missing tensor scale"));
        }
        let g = enc.tensor_scale.unwrap_or(1.0) as f64;
        let alt = rule_alt_element(self);
        let decode_scale = |k: usize| -> (f64, f64, bool) {
            let z = enc.zeros.as_ref().map_or(0.0, |z| z[k]);
            match &enc.scales {
                Scales::None => (1.0, 0.0, false),
                Scales::Values(v) => (v[k], z, false),
                Scales::Codes(c) => {
                    let code = c[k] as u64;
                    let (code, is_alt) = match self.rule {
                        Rule::Best(Best::If4) => (
                            code & !self.scale.sign_mask(),
                            code & self.scale.sign_mask() != 0,
                        ),
                        _ => (code, false),
                    };
                    let s = self.scale.decode(code);
                    let d = if self.second.is_some() { s * g } else { s };
                    (d, z, is_alt)
                }
            }
        };
        let elem = self.element;
        let max_code = (1u64 << elem.bits().min(63)) - 1;
        if let Some(c) = codes.iter().find(|c| c.to_u64() > max_code) {
            return Err(Error::InvalidArgument(format!(
                "dequantize {self}: the code {:#x} does not fit {} bits",
                c.to_u64(),
                elem.bits()
            )));
        }
        let mut vals = vec![0f64; n];
        for (i, (c, v)) in codes.iter().zip(vals.iter_mut()).enumerate() {
            let (d, z, is_alt) = decode_scale(grid.block_of(i));
            let e = if is_alt { alt.unwrap_or(elem) } else { elem };
            let code = c.to_u64() as u16;
            *v = match e {
                Element::Float(_) => {
                    let q = e.decode(code);
                    // a zero keeps its sign under a finite scale; a NaN scale (an MX NaN
                    // block) makes every element NaN, whether or not its format has a NaN
                    if q == 0.0 && !d.is_nan() {
                        q
                    } else {
                        q * d
                    }
                }
                Element::Int(ig) => {
                    d * ((ig.integer(code) as f64 - z) * crate::format::pow2(-(ig.frac as i32)))
                }
            };
        }
        if let Some(r) = self.rotation {
            let cols = shape.last().copied().unwrap_or(1);
            vals = rotate::inverse(&r, &vals, cols);
        }
        out.iter_mut()
            .zip(&vals)
            .for_each(|(o, v)| *o = O::from_f64(*v));
        Ok(())
    }

    /// A rotated scheme: rotate, quantize without the rotation, rotate the values back;
    /// `specialised`: the inner scheme may take the kernels (off: the general engine alone).
    #[allow(clippy::too_many_arguments)]
    fn rotated<I: Float, O: Float, C: Code>(
        &self,
        r: &Rotation,
        x: &[I],
        shape: &[usize],
        values: &mut [O],
        codes: &mut [C],
        enc: &mut Encoded,
        specialised: bool,
    ) -> Result<Counts> {
        self.grid(shape)?;
        let cols = shape.last().copied().unwrap_or(1);
        let inner = Scheme {
            rotation: None,
            ..*self
        };
        if specialised && values.is_empty() {
            if let Some(c) = fast::rotated_te(&inner, r, x, shape, codes, enc) {
                return Ok(c);
            }
        }
        if specialised && inner.rounding.mode != crate::RoundingMode::Stochastic {
            if let Some(band_rows) = inner.band_rows(shape)? {
                return if r.bf16 {
                    inner.rotated_bands::<I, O, C, f32>(r, band_rows, x, cols, values, codes, enc)
                } else {
                    inner.rotated_bands::<I, O, C, f64>(r, band_rows, x, cols, values, codes, enc)
                };
            }
        }
        let mut v = vec![0f64; if values.is_empty() { 0 } else { x.len() }];
        let counts = if r.bf16 {
            // BF16 values are binary32: the binary32 kernels and lanes take them
            let xr = rotate::forward_bf16(r, x);
            match (specialised, v.is_empty()) {
                (true, true) => inner.quantize_into(&xr, shape, &mut [], codes, enc)?,
                (s, _) => inner.engine_into(&xr, shape, &mut v, codes, enc, s, None)?,
            }
        } else {
            let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
            let xr = rotate::forward(r, &xf, cols);
            if specialised {
                inner.quantize_into(&xr, shape, &mut v, codes, enc)?
            } else {
                inner.engine_into(&xr, shape, &mut v, codes, enc, false, None)?
            }
        };
        if !values.is_empty() {
            let back = rotate::inverse(r, &v, cols);
            values
                .iter_mut()
                .zip(&back)
                .for_each(|(o, b)| *o = O::from_f64(*b));
        }
        Ok(counts)
    }
}

impl Scheme {
    /// Rows per band of [`Scheme::rotated_bands`] on a tensor of `shape` (whole tiles, about
    /// 64 Ki elements), or `None` when the blocks do not split into bands of rows (one scale
    /// for the whole tensor, tiles across a partial edge, an empty tensor).
    fn band_rows(&self, shape: &[usize]) -> Result<Option<usize>> {
        let g = self.grid(shape)?;
        let tr = match g.tile {
            Some((tr, _)) if g.n > 0 && g.rows.is_multiple_of(tr) => tr,
            _ => return Ok(None),
        };
        let rows = (BAND_ELEMENTS / g.cols.max(1)).max(1);
        Ok(Some(rows.div_ceil(tr) * tr))
    }

    /// A scheme after a rotation (`T`: binary32 for TransformerEngine's BF16 output, binary64
    /// unrounded), band by band: each band of whole
    /// rows is rotated into a buffer of its own and quantized (and its values rotated back)
    /// while it is in cache, with the largest magnitude of the whole rotated tensor (a first
    /// pass that rotates and keeps only the maximum) for a second level. Nothing the size of
    /// the tensor is allocated; the results are those of the whole-tensor path (blocks do
    /// not cross bands, the tensor scale is the same; the tests compare them).
    #[allow(clippy::too_many_arguments)]
    fn rotated_bands<I: Float, O: Float, C: Code, T: rotate::Rotated>(
        &self,
        r: &Rotation,
        band_rows: usize,
        x: &[I],
        cols: usize,
        values: &mut [O],
        codes: &mut [C],
        enc: &mut Encoded,
    ) -> Result<Counts> {
        use rayon::prelude::*;
        let band = band_rows * cols;
        // the rotated tensor's largest magnitude (a second level), and the inputs' (a rule
        // that needs finite inputs refuses NaN and ±Inf, naming the input element)
        let needs_finite = !matches!(self.rule, Rule::Pow2(_) | Rule::None);
        let max = |a: f64, b: f64| if b > a || b.is_nan() { b } else { a };
        let (tensor_amax, input_amax) = match self.second {
            Some(_) => {
                let (t, i) = x
                    .par_chunks(band)
                    .map_init(Vec::new, |buf: &mut Vec<T>, xb| {
                        buf.resize(xb.len(), T::default());
                        T::rotate_into(r, xb, buf);
                        (crate::block::max_abs(buf), crate::block::max_abs(xb))
                    })
                    .reduce(|| (0.0, 0.0), |a, b| (max(a.0, b.0), max(a.1, b.1)));
                (Some(t), i)
            }
            None if needs_finite => (None, crate::block::max_abs(x)),
            None => (None, 0.0),
        };
        if needs_finite && !input_amax.is_finite() {
            generic::check_finite(self, x)?;
        }
        let per_band = self.encoded(&[band_rows, cols])?.scales.len();
        let bands = x.len().div_ceil(band);
        let pieces = |len: usize, each: usize| -> Vec<usize> {
            (0..bands)
                .map(|b| {
                    if len == 0 {
                        0
                    } else {
                        each.min(len - b * each)
                    }
                })
                .collect()
        };
        let nsc = enc.scales.len();
        let (sc, sv, zs) = enc.slices_mut();
        use generic::split_lens as cut;
        let work: Vec<_> = x
            .chunks(band)
            .zip(cut(values, &pieces(values.len(), band)))
            .zip(cut(codes, &pieces(codes.len(), band)))
            .zip(cut(sc, &pieces(sc.len(), per_band)))
            .zip(cut(sv, &pieces(sv.len(), per_band)))
            .zip(cut(zs, &pieces(zs.len(), per_band)))
            .collect();
        debug_assert!(nsc == 0 || nsc.div_ceil(per_band) == bands);
        let results: Vec<Result<(Counts, Option<f32>)>> = work
            .into_par_iter()
            .map(|(((((xb, vb), cb), scb), svb), zb)| {
                let shape = [xb.len() / cols, cols];
                let mut xr = vec![T::default(); xb.len()];
                T::rotate_into(r, xb, &mut xr);
                let mut e = self.encoded(&shape)?;
                let mut v = vec![0f64; vb.len()];
                let fast = if v.is_empty() {
                    fast::run(self, &xr, &shape, &mut [], cb, &mut e, tensor_amax)?
                } else {
                    None
                };
                let counts = match fast {
                    Some(c) => c,
                    None => self.engine_into(&xr, &shape, &mut v, cb, &mut e, true, tensor_amax)?,
                };
                if !vb.is_empty() {
                    let back = rotate::inverse(r, &v, cols);
                    vb.iter_mut()
                        .zip(&back)
                        .for_each(|(o, b)| *o = O::from_f64(*b));
                }
                match &e.scales {
                    Scales::None => {}
                    Scales::Codes(c) => scb.copy_from_slice(c),
                    Scales::Values(v) => svb.copy_from_slice(v),
                }
                if let Some(z) = &e.zeros {
                    zb.copy_from_slice(z);
                }
                Ok((counts, e.tensor_scale))
            })
            .collect();
        let mut total = Counts::default();
        for res in results {
            let (c, t) = res?;
            total += c;
            enc.tensor_scale = t;
        }
        Ok(total)
    }
}

/// Elements per band of [`Scheme::rotated_bands`].
const BAND_ELEMENTS: usize = 1 << 16;

/// IF4's alternative element: INT4 `±7` (the choice is the scale's sign bit).
pub(crate) fn rule_alt_element(s: &Scheme) -> Option<Element> {
    match s.rule {
        Rule::Best(Best::If4) => Some(Element::Int(IntGrid {
            bits: 4,
            range: IntRange::Restricted,
            frac: 0,
        })),
        _ => None,
    }
}

/// The block scale of the lowest-error candidate rules.
pub(crate) fn best_block(ctx: &generic::Ctx, b: Best, st: &rule::BlockStats) -> rule::BlockScale {
    rule::best::block_scale(ctx, b, st)
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
