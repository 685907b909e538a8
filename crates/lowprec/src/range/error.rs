//! The errors of the range rules: refusals of the admission, and buffers or coefficients
//! that would leave a format's range.

use thiserror::Error;

/// What the range rules refuse. Converts into [`crate::Error`] (variant `Range`).
///
/// Every message names the problem and what to do instead. The numbers carried are never
/// NaN (a NaN tolerance is refused as [`RangeError::InvalidTolerance`], whose text is
/// kept as given), so equality is an equivalence.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RangeError {
    /// A name that is not `double` or `single`.
    #[error("precision must be 'double' or 'single', got {0:?}")]
    UnknownPrecision(String),

    /// A record whose state and source precisions differ.
    #[error("a mixed precision (a binary32 source beside a binary64 state, or the reverse) is not admitted; use precision='double' or 'single'")]
    MixedPrecision,

    /// A grid-kind name that is not `field` or `envelope`.
    #[error("grid kind must be 'field' or 'envelope', got {0:?}")]
    UnknownGridKind(String),

    /// An engine that does not admit single precision under the policy.
    #[error(
        "engine {engine:?} computes in binary64 only and refuses precision='single'; {admitted}"
    )]
    EngineRefused {
        /// The engine named by the request.
        engine: String,
        /// Which engines admit it, or that none does, and the way out.
        admitted: String,
    },

    /// A multistep integrator under single precision, outside a study.
    #[error("a multistep (Adams) integrator is not admitted under precision='single' until its single-precision survival is established; use a single-step (Runge-Kutta) integrator, the single-precision default, or precision='double'")]
    MultistepRefused,

    /// An adaptive tolerance below the single-precision floor.
    #[error("rtol={rtol:e} is below the single-precision floor {floor:e}: a tighter local error target buys steps without accuracy in binary32; take rtol at least the floor, or precision='double'")]
    ToleranceBelowFloor {
        /// The tolerance asked for.
        rtol: f64,
        /// The policy's floor.
        floor: f64,
    },

    /// A tolerance that is NaN, infinite or not positive.
    #[error("rtol={0} is not a positive finite number; give a tolerance of at least the single-precision floor")]
    InvalidTolerance(String),

    /// A buffer holding NaN or an infinity where a finite one is needed.
    #[error("{what} holds a NaN or an infinity, and the range rules need finite values; find where it stopped being finite before narrowing or combining it")]
    NotFinite {
        /// What held it ("the buffer", "factor 2", …).
        what: String,
    },

    /// A combined coefficient beyond binary64's range.
    #[error("a combined coefficient of magnitude about 2^{exponent} overflows binary64; keep it as a Coefficient (mantissa and exponent) and fold the exponent into a buffer's or the state's scale")]
    Binary64Overflow {
        /// The coefficient's power of two.
        exponent: i64,
    },

    /// A combined coefficient outside binary32's normal range.
    #[error("a combined coefficient {value:.3e} leaves binary32's normal range; the pass applying it must apply it where its intermediate is largest")]
    Binary32Range {
        /// The coefficient's binary64 value (finite).
        value: f64,
    },

    /// A shape, axis or length that does not fit the data.
    #[error("{0}")]
    Shape(String),
}

// The floats carried are never NaN (see the type's docs), so `==` is reflexive.
impl Eq for RangeError {}

impl From<RangeError> for crate::Error {
    fn from(e: RangeError) -> Self {
        crate::Error::Range(e)
    }
}
