//! What a single-precision run is admitted with: [`AdmissionPolicy`], [`admit`], and the
//! scoped [`study_admission`] override (seed §5.2).
//!
//! A binary64 run always passes. A single-precision run is refused on an engine the policy
//! does not list, with a multistep integrator (unless the policy admits them, or a study
//! guard is alive on this thread), and with an adaptive tolerance below the policy's floor
//! ([`SINGLE_RTOL_FLOOR`] by default). Each refusal says what to do instead.
//!
//! ```
//! use lowprec::range::{admit, study_admission, AdmissionPolicy, Precision, Request};
//!
//! let policy = AdmissionPolicy::new(["reference", "gpu"]);
//! let rk = Request::new(Precision::SINGLE, "reference").rtol(1e-6);
//! assert!(admit(&policy, &rk).is_ok());
//! let err = admit(&policy, &Request::new(Precision::SINGLE, "reference").rtol(1e-8)).unwrap_err();
//! assert!(err.to_string().starts_with("rtol=1e-8 is below the single-precision floor 1e-6"));
//! let err = admit(&policy, &Request::new(Precision::SINGLE, "cpu")).unwrap_err();
//! assert!(err.to_string().contains("the engines that admit it are reference, gpu"));
//!
//! let adams = Request::new(Precision::SINGLE, "reference").multistep(true);
//! assert!(admit(&policy, &adams).is_err());
//! {
//!     let _study = study_admission();
//!     assert!(admit(&policy, &adams).is_ok());
//! }
//! assert!(admit(&policy, &adams).is_err());
//! assert!(admit(&policy, &Request::new(Precision::DOUBLE, "cpu").multistep(true)).is_ok());
//! ```

use super::{Precision, RangeError};
use std::cell::Cell;
use std::marker::PhantomData;

/// The smallest relative tolerance a single-precision run admits by default (seed Q1).
///
/// A local error target below the per-step rounding of binary32, about ten times its unit
/// roundoff (`2^-24 ≈ 6e-8`), buys steps without accuracy.
pub const SINGLE_RTOL_FLOOR: f64 = 1e-6;

/// Which runs a program admits in single precision.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionPolicy {
    engines: Vec<String>,
    multistep: bool,
    rtol_floor: f64,
}

impl AdmissionPolicy {
    /// A policy admitting single precision on these engines (by name), refusing multistep
    /// integrators, with the floor [`SINGLE_RTOL_FLOOR`].
    pub fn new<I, S>(engines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        AdmissionPolicy {
            engines: engines.into_iter().map(Into::into).collect(),
            multistep: false,
            rtol_floor: SINGLE_RTOL_FLOOR,
        }
    }

    /// Admit (or not) multistep integrators under single precision.
    pub fn admit_multistep(mut self, yes: bool) -> Self {
        self.multistep = yes;
        self
    }

    /// Set the tolerance floor.
    pub fn rtol_floor(mut self, floor: f64) -> Self {
        self.rtol_floor = floor;
        self
    }

    /// The engines that admit single precision.
    pub fn engines(&self) -> &[String] {
        &self.engines
    }

    /// Whether multistep integrators are admitted under single precision.
    pub fn multistep(&self) -> bool {
        self.multistep
    }

    /// The tolerance floor.
    pub fn floor(&self) -> f64 {
        self.rtol_floor
    }
}

/// What a run asks to be admitted with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request<'a> {
    /// The run's precision.
    pub precision: Precision,
    /// The engine (backend) the run executes on.
    pub engine: &'a str,
    /// Whether the integrator is a multistep (Adams) method.
    pub multistep: bool,
    /// The controller's relative tolerance, or `None` where it has none.
    pub rtol: Option<f64>,
    /// Whether a fixed schedule is replayed (which reads no tolerance).
    pub schedule: bool,
}

impl<'a> Request<'a> {
    /// A single-step run with no tolerance and no schedule.
    pub fn new(precision: Precision, engine: &'a str) -> Self {
        Request {
            precision,
            engine,
            multistep: false,
            rtol: None,
            schedule: false,
        }
    }

    /// With a multistep integrator (or not).
    pub fn multistep(mut self, yes: bool) -> Self {
        self.multistep = yes;
        self
    }

    /// With this relative tolerance.
    pub fn rtol(mut self, rtol: f64) -> Self {
        self.rtol = Some(rtol);
        self
    }

    /// Replaying a fixed schedule (or not).
    pub fn schedule(mut self, yes: bool) -> Self {
        self.schedule = yes;
        self
    }
}

/// Apply the single-precision refusals every engine shares.
///
/// # Errors
/// In this order: [`RangeError::EngineRefused`] (an engine the policy does not list),
/// [`RangeError::MultistepRefused`] (a multistep integrator, unless the policy admits it or
/// a [`study_admission`] guard is alive on this thread), [`RangeError::InvalidTolerance`]
/// (a NaN, infinite or non-positive tolerance) and [`RangeError::ToleranceBelowFloor`]
/// (below the policy's floor); tolerances are not read when a schedule is replayed.
pub fn admit(policy: &AdmissionPolicy, request: &Request<'_>) -> Result<(), RangeError> {
    if !request.precision.is_single() {
        return Ok(());
    }
    if !policy.engines.iter().any(|e| e == request.engine) {
        let admitted = if policy.engines.is_empty() {
            "no engine admits it under this policy; use precision='double'".to_string()
        } else {
            format!(
                "the engines that admit it are {}; run on one of them or use precision='double'",
                policy.engines.join(", ")
            )
        };
        return Err(RangeError::EngineRefused {
            engine: request.engine.to_string(),
            admitted,
        });
    }
    if request.multistep && !policy.multistep && !study_active() {
        return Err(RangeError::MultistepRefused);
    }
    if let (false, Some(rtol)) = (request.schedule, request.rtol) {
        if !(rtol.is_finite() && rtol > 0.0) {
            return Err(RangeError::InvalidTolerance(format!("{rtol}")));
        }
        if rtol < policy.rtol_floor {
            return Err(RangeError::ToleranceBelowFloor {
                rtol,
                floor: policy.rtol_floor,
            });
        }
    }
    Ok(())
}

thread_local! {
    static STUDY_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether a [`study_admission`] guard is alive on this thread.
pub fn study_active() -> bool {
    STUDY_DEPTH.with(|d| d.get() > 0)
}

/// Admit, while the guard lives, what a survival study measures and the public refuses
/// (today: multistep integrators under single precision).
///
/// For tests and studies only; no public interface should hold one. The override is
/// thread-local, nests, and ends when the guard is dropped, also when a panic unwinds
/// through its scope. The guard is neither `Send` nor `Sync`, so it is dropped on the
/// thread that made it.
pub fn study_admission() -> StudyGuard {
    STUDY_DEPTH.with(|d| d.set(d.get() + 1));
    StudyGuard {
        _thread: PhantomData,
    }
}

/// The guard of [`study_admission`]; the override ends when the last one on the thread is
/// dropped.
#[must_use = "the study override ends when the guard is dropped"]
#[derive(Debug)]
pub struct StudyGuard {
    _thread: PhantomData<*const ()>,
}

impl Drop for StudyGuard {
    fn drop(&mut self) {
        STUDY_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}
