//! The launch's peak temporal amplitude, [`launch_peak`]: the quantity the state scale is
//! chosen from (seed §4.3, rule 2).
//!
//! # Layout and normalisation
//!
//! The launch is a complex spectrum in the canonical layout `(..., n_omega)`, row-major:
//! `field.len() / n_omega` columns ("rows" in memory), each one spectrum of `n_omega`
//! frequencies, contiguous. Each is taken to time on its own grid, without padding, in
//! binary64, with numpy's conventions (`rustfft` computes the transforms):
//!
//! * [`GridKind::Envelope`]: a complex envelope, frequencies in FFT order (numpy's
//!   `fftfreq`: zero first, negative frequencies in the second half). Time is
//!   `numpy.fft.ifft`: `a[t] = (1/n) Σ_k A[k] e^{+2πi k t / n}`, `n = n_omega` points.
//! * [`GridKind::Field`]: a real field stored as its half spectrum (numpy's `rfftfreq`:
//!   frequencies `0 … n/2`). Time is `numpy.fft.irfft` with its default length
//!   `n = 2 (n_omega − 1)` points: the spectrum is extended by Hermitian symmetry, and the
//!   imaginary parts of the zero and Nyquist frequencies are ignored, as numpy does.
//!
//! Both carry the `1/n` of the inverse, so a launch's peak is in the state's own units.
//!
//! ```
//! use lowprec::range::{launch_peak, Complex64, GridKind};
//!
//! // numpy: launch_peak(np.full((1, 1, 1, 4), 2.0 + 0.0j), "envelope") == 2.0
//! let field = [Complex64::new(2.0, 0.0); 4];
//! assert_eq!(launch_peak(&field, 4, GridKind::Envelope)?, 2.0);
//! // irfft([2, 2, 2, 2]) has 6 points, the first (2 + 2·2 + 2·2 + 2) / 6 = 2
//! assert_eq!(launch_peak(&field, 4, "field".parse()?)?, 2.0);
//! # Ok::<(), lowprec::range::RangeError>(())
//! ```

use super::RangeError;
use rustfft::num_complex::Complex64;
use rustfft::FftPlanner;
use std::fmt;
use std::str::FromStr;

/// The spectral layout of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GridKind {
    /// A real field, stored as its half spectrum (`rfft` layout); time by `irfft`.
    Field,
    /// A complex envelope, full spectrum in FFT order; time by `ifft`.
    Envelope,
}

impl GridKind {
    /// `"field"` or `"envelope"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            GridKind::Field => "field",
            GridKind::Envelope => "envelope",
        }
    }

    /// The number of time points a spectrum of `n_omega` frequencies has on this grid:
    /// `n_omega` (envelope) or `2 (n_omega − 1)` (field).
    pub const fn time_points(self, n_omega: usize) -> usize {
        match self {
            GridKind::Envelope => n_omega,
            GridKind::Field => 2 * n_omega.saturating_sub(1),
        }
    }
}

impl fmt::Display for GridKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GridKind {
    type Err = RangeError;
    /// `"field"` or `"envelope"`.
    fn from_str(s: &str) -> Result<Self, RangeError> {
        match s {
            "field" => Ok(GridKind::Field),
            "envelope" => Ok(GridKind::Envelope),
            _ => Err(RangeError::UnknownGridKind(s.to_string())),
        }
    }
}

/// The largest temporal magnitude of a launch (non-negative, binary64): every column of
/// `field` (layout `(..., n_omega)`, see the [module docs](self)) taken to time on its own
/// grid, the `1/n` of the inverse included. `0` for an empty launch.
///
/// # Errors
/// [`RangeError::Shape`] if `n_omega` is 0 (for a non-empty launch) or does not divide
/// `field.len()`, or is 1 on a field grid (which has no time points);
/// [`RangeError::NotFinite`] if the launch or its transform is not finite.
pub fn launch_peak(field: &[Complex64], n_omega: usize, kind: GridKind) -> Result<f64, RangeError> {
    if field.is_empty() {
        return Ok(0.0);
    }
    if n_omega == 0 || !field.len().is_multiple_of(n_omega) {
        return Err(RangeError::Shape(format!(
            "a launch of {} values is not a whole number of spectra of {n_omega} frequencies; give the length of its last axis",
            field.len()
        )));
    }
    let n = kind.time_points(n_omega);
    if n == 0 {
        return Err(RangeError::Shape(
            "a field-grid spectrum needs at least 2 frequencies (irfft of 1 has no points); use the envelope grid or a longer spectrum".into(),
        ));
    }
    let plan = FftPlanner::<f64>::new().plan_fft_inverse(n);
    let mut buf = vec![Complex64::new(0.0, 0.0); n];
    let mut scratch = vec![Complex64::new(0.0, 0.0); plan.get_inplace_scratch_len()];
    let inv_n = 1.0 / n as f64;
    let mut peak = 0.0f64;
    for column in field.chunks_exact(n_omega) {
        match kind {
            GridKind::Envelope => buf.copy_from_slice(column),
            GridKind::Field => {
                buf[..n_omega].copy_from_slice(column);
                for k in 1..n_omega - 1 {
                    buf[n - k] = column[k].conj();
                }
            }
        }
        plan.process_with_scratch(&mut buf, &mut scratch);
        for z in &buf {
            let a = match kind {
                GridKind::Envelope => (z.re * inv_n).hypot(z.im * inv_n),
                GridKind::Field => (z.re * inv_n).abs(),
            };
            if !a.is_finite() {
                return Err(RangeError::NotFinite {
                    what: "the launch's temporal field".into(),
                });
            }
            peak = peak.max(a);
        }
    }
    Ok(peak)
}
