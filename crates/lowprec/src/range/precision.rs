//! The arithmetic a run is held in: [`Precision`], the record of seed §4.2.
//!
//! A run is `double` (binary64 throughout, the default) or `single`: the propagated state,
//! the stages, the transforms and the responses in IEEE binary32, with the controller, every
//! host scalar and the propagator's exponent in binary64. The record has two named fields so
//! that a later mixed mode (a binary32 source beside a binary64 state) is a third value
//! rather than a redesign; today a mixed record is refused.
//!
//! ```
//! use lowprec::range::{ElementType, Precision, PrecisionName};
//!
//! let single: Precision = "single".parse()?;
//! assert_eq!(single, Precision::SINGLE);
//! assert_eq!(format!("{single:?}"), "Precision { state: Single, source: Single }");
//! assert_eq!((Precision::default().name(), single.is_single()), (PrecisionName::Double, true));
//! assert_eq!(single.complex_type(), ElementType::Complex64);
//! assert_eq!(single.real_type().name(), "float32");
//! assert!(Precision::new(PrecisionName::Single, PrecisionName::Double).is_err());
//! # Ok::<(), lowprec::range::RangeError>(())
//! ```

use super::RangeError;
use std::fmt;
use std::str::FromStr;

/// A public precision value: binary64 or binary32 arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PrecisionName {
    /// IEEE binary64, the default.
    #[default]
    Double,
    /// IEEE binary32.
    Single,
}

impl PrecisionName {
    /// `"double"` or `"single"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            PrecisionName::Double => "double",
            PrecisionName::Single => "single",
        }
    }
}

impl fmt::Display for PrecisionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PrecisionName {
    type Err = RangeError;
    /// `"double"` or `"single"` (exactly; no aliases).
    fn from_str(s: &str) -> Result<Self, RangeError> {
        match s {
            "double" => Ok(PrecisionName::Double),
            "single" => Ok(PrecisionName::Single),
            _ => Err(RangeError::UnknownPrecision(s.to_string())),
        }
    }
}

/// The element type of a pass, by its numpy name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// IEEE binary32.
    Float32,
    /// IEEE binary64.
    Float64,
    /// Two binary32 parts.
    Complex64,
    /// Two binary64 parts.
    Complex128,
}

impl ElementType {
    /// The numpy name: `float32`, `float64`, `complex64`, `complex128`.
    pub const fn name(self) -> &'static str {
        match self {
            ElementType::Float32 => "float32",
            ElementType::Float64 => "float64",
            ElementType::Complex64 => "complex64",
            ElementType::Complex128 => "complex128",
        }
    }

    /// Bytes per element: 4, 8, 8, 16.
    pub const fn size(self) -> usize {
        match self {
            ElementType::Float32 => 4,
            ElementType::Float64 | ElementType::Complex64 => 8,
            ElementType::Complex128 => 16,
        }
    }
}

/// The arithmetic of a run's propagated state and of its source evaluation.
///
/// The fields are private so that every value is admitted: [`Precision::DOUBLE`] (the
/// default), [`Precision::SINGLE`], or one built by [`Precision::new`] or parsed, both of
/// which refuse a mixed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Precision {
    state: PrecisionName,
    source: PrecisionName,
}

impl Precision {
    /// Binary64 throughout: the default.
    pub const DOUBLE: Precision = Precision {
        state: PrecisionName::Double,
        source: PrecisionName::Double,
    };

    /// Binary32 for the state, the stages and the source evaluation.
    pub const SINGLE: Precision = Precision {
        state: PrecisionName::Single,
        source: PrecisionName::Single,
    };

    /// The record with these fields.
    ///
    /// # Errors
    /// [`RangeError::MixedPrecision`] if they differ.
    pub fn new(state: PrecisionName, source: PrecisionName) -> Result<Self, RangeError> {
        if state != source {
            return Err(RangeError::MixedPrecision);
        }
        Ok(Precision { state, source })
    }

    /// The record for a public value.
    pub const fn named(name: PrecisionName) -> Self {
        match name {
            PrecisionName::Double => Precision::DOUBLE,
            PrecisionName::Single => Precision::SINGLE,
        }
    }

    /// The propagated state's precision (also the stages' and the error estimate's).
    pub const fn state(self) -> PrecisionName {
        self.state
    }

    /// The precision of a source evaluation's transforms and responses.
    pub const fn source(self) -> PrecisionName {
        self.source
    }

    /// The public value this record stands for (the shared value of its fields).
    pub const fn name(self) -> PrecisionName {
        self.state
    }

    /// Whether the state is held in binary32.
    pub const fn is_single(self) -> bool {
        matches!(self.state, PrecisionName::Single)
    }

    /// The type of the state and of every complex pass: `complex64` under single
    /// precision, `complex128` otherwise.
    pub const fn complex_type(self) -> ElementType {
        if self.is_single() {
            ElementType::Complex64
        } else {
            ElementType::Complex128
        }
    }

    /// The type of every real pass: `float32` under single precision, `float64` otherwise.
    pub const fn real_type(self) -> ElementType {
        if self.is_single() {
            ElementType::Float32
        } else {
            ElementType::Float64
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().as_str())
    }
}

impl FromStr for Precision {
    type Err = RangeError;
    /// `"double"` or `"single"`.
    fn from_str(s: &str) -> Result<Self, RangeError> {
        Ok(Precision::named(s.parse()?))
    }
}
