//! Range-safe binary32: the rules by which a solver runs its state, stages and transforms
//! in IEEE binary32 while the controller, the host scalars and the exponents stay in
//! binary64, without ever leaving binary32's range (seed `solprop_precision`, SEP 33).
//!
//! A kernel of magnitude `1e-50` or a density of `2.5e25` is fine in binary64 and lost in
//! binary32; these rules keep every binary32 quantity near 1 and move the units into exact
//! powers of two and binary64 coefficients:
//!
//! 1. every table narrowed to binary32 carries its own block exponent ([`narrow`],
//!    [`block_exponent`]);
//! 2. the state is held as `a / s` with `s = 2^k` an exact power of two chosen from the
//!    launch's peak ([`state_scale`], [`launch_peak`]);
//! 3. scalar factors, block exponents and powers of `k` are combined on the host in
//!    binary64 as a mantissa and an integer exponent ([`Coefficient`], [`combine`]), and
//!    only the combined coefficient is rounded to binary32;
//! 4. reductions run in a fixed order with a known bound: [`pairwise_sum`],
//!    [`prefix_sum`], and [`scaled_square_sum`] for norms and energies (LAPACK `nrm2`
//!    scaling);
//! 5. runs are admitted by a policy ([`Precision`], [`admit`]).
//!
//! [`soliton`] proves them end to end: a split-step Fourier solver of the nonlinear
//! Schrödinger equation in binary64, in binary32 by these rules, and in naive binary32.
//!
//! | file | what |
//! |---|---|
//! | [`precision`] | [`Precision`] (`double` / `single`), element types, parsing |
//! | [`admission`] | [`AdmissionPolicy`], [`admit`], the scoped [`study_admission`] guard |
//! | [`element`] | [`Element`], [`Real`], [`Wide`]: `f32`, `f64`, [`Complex32`], [`Complex64`] |
//! | [`exponent`] | [`block_exponent`], [`narrow`] → [`Narrowed`], [`state_scale`] |
//! | [`launch`] | [`launch_peak`] on [`GridKind::Field`] and [`GridKind::Envelope`] grids |
//! | [`coefficient`] | [`Coefficient`], [`combine`] |
//! | [`sums`] | [`pairwise_sum`], [`prefix_sum`], [`scaled_square_sum`], along any axis |
//! | [`soliton`] | the NLS soliton solver in three arithmetics, and its study |
//! | [`error`] | [`RangeError`] |

pub mod admission;
pub mod coefficient;
pub mod element;
pub mod error;
pub mod exponent;
pub mod launch;
pub mod precision;
pub mod soliton;
pub mod sums;

pub use admission::{
    admit, study_active, study_admission, AdmissionPolicy, Request, StudyGuard, SINGLE_RTOL_FLOOR,
};
pub use coefficient::{combine, frexp, Coefficient};
pub use element::{Element, Real, Wide};
pub use error::RangeError;
pub use exponent::{block_exponent, exponent_of, narrow, state_exponent, state_scale, Narrowed};
pub use launch::{launch_peak, GridKind};
pub use precision::{ElementType, Precision, PrecisionName};
pub use rustfft::num_complex::{Complex32, Complex64};
pub use sums::{
    pairwise_sum, pairwise_sum_axis, prefix_sum, prefix_sum_axis, prefix_sum_into,
    scaled_square_sum, PARALLEL_THRESHOLD,
};
