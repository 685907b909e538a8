//! The end-to-end proof of the range rules: a split-step Fourier solver of the nonlinear
//! Schrödinger equation for the fundamental soliton, whose exact solution is known, run in
//! binary64, in binary32 by the rules, and in naive binary32.
//!
//! The equation, in physical units with dispersion `β2 = −1` and soliton width `T0 = 1`:
//!
//! ```text
//! ∂A/∂z = −i (β2/2) ∂²A/∂T² + i γ |A|² A,    A(0, T) = P sech(T),    γ = 1 / P²
//! ```
//!
//! whose solution is `A(z, T) = P sech(T) e^{i z / 2}` for any amplitude `P`. With `P`
//! around `1e-20` or `1e20`, `γ` is `1e40` or `1e-40` and `|A|²` is `1e-40` or `1e40`:
//! outside binary32's range, so a naive binary32 run underflows or overflows, while the
//! physics is the same as at `P = 1`.
//!
//! The solver is Strang splitting on a periodic grid of `points` times over `[−window/2,
//! window/2)`: half a linear step in the spectrum (`Â ← Â e^{i β2 ω² h / 4}`, `ω` in numpy's
//! `fftfreq` order), a full nonlinear step in time (`A ← A e^{i γ |A|² h}`, exact for that
//! part), half a linear step. Its own discretisation error (the binary64 run against the
//! exact soliton) is measured separately from the rounding error of binary32 (the binary32
//! runs against the binary64 run).
//!
//! The binary32 run follows the rules of [`crate::range`]:
//!
//! * the state is `a = A / s` in binary32, `s = 2^k` from [`state_exponent`] of the
//!   launch's [`launch_peak`] (the launch's spectrum taken back to time);
//! * the linear propagator table is computed in binary64 and [`narrow`]ed with its block
//!   exponent `e_L`; the inverse transform's `1/n` and `2^{e_L}` are one [`combine`]d
//!   coefficient;
//! * the nonlinear phase `γ h |A|² = (γ h 2^{2k}) |a|²`: `γ`, `h` and `2k` are combined on
//!   the host and only the coefficient is rounded to binary32;
//! * energies are [`scaled_square_sum`]s (pairwise, scaled), with the scale restored in
//!   binary64.
//!
//! ```
//! use lowprec::range::soliton::{run, Arithmetic, SolitonProblem};
//!
//! let p = SolitonProblem { amplitude: 1e20, ..SolitonProblem::default() };
//! let wide = run(&p, Arithmetic::Binary64)?;
//! let single = run(&p, Arithmetic::Binary32)?;
//! let naive = run(&p, Arithmetic::Naive32)?;
//! let u = 2f64.powi(-24);
//! assert!(single.distance_to(&wide.field) < 8.0 * u * p.steps as f64); // ≈ 5.7 u·steps
//! assert!(naive.distance_to(&wide.field).is_nan()); // |A|² overflowed
//! # Ok::<(), lowprec::Error>(())
//! ```

use super::element::{Element, Wide};
use super::{
    admit, combine, launch_peak, narrow, scaled_square_sum, state_exponent, AdmissionPolicy,
    Complex32, Complex64, GridKind, Precision, Request,
};
use crate::metrics::rel_error;
use crate::Result;
use rustfft::{Fft, FftPlanner};
use std::f64::consts::PI;
use std::sync::Arc;

/// One soliton problem: its amplitude (units), grid and schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolitonProblem {
    /// The peak amplitude `P` of the launch, in the field's units.
    pub amplitude: f64,
    /// Grid points in time.
    pub points: usize,
    /// The time window (the grid is `[−window/2, window/2)`), in soliton widths.
    pub window: f64,
    /// The propagation distance, in dispersion lengths.
    pub distance: f64,
    /// Split steps over the distance.
    pub steps: usize,
}

impl Default for SolitonProblem {
    /// `P = 1`, 256 points over 40 widths, 4 dispersion lengths in 100 steps.
    fn default() -> Self {
        SolitonProblem {
            amplitude: 1.0,
            points: 256,
            window: 40.0,
            distance: 4.0,
            steps: 100,
        }
    }
}

impl SolitonProblem {
    /// The time grid.
    pub fn times(&self) -> Vec<f64> {
        let dt = self.window / self.points as f64;
        (0..self.points)
            .map(|j| -self.window / 2.0 + j as f64 * dt)
            .collect()
    }

    /// The angular frequencies in FFT order (numpy's `2π fftfreq(points, dt)`).
    pub fn omegas(&self) -> Vec<f64> {
        let n = self.points;
        let dt = self.window / n as f64;
        (0..n)
            .map(|k| {
                let k = if k < n.div_ceil(2) {
                    k as f64
                } else {
                    k as f64 - n as f64
                };
                2.0 * PI * k / (n as f64 * dt)
            })
            .collect()
    }

    /// The nonlinear coefficient `γ = 1 / P²` (binary64; it may be far outside binary32).
    pub fn gamma(&self) -> f64 {
        1.0 / (self.amplitude * self.amplitude)
    }

    /// The step `h = distance / steps`.
    pub fn step(&self) -> f64 {
        self.distance / self.steps as f64
    }

    /// The exact solution `P sech(T) e^{i z / 2}` on the grid at distance `z`.
    pub fn exact(&self, z: f64) -> Vec<Complex64> {
        let phase = Complex64::from_polar(1.0, z / 2.0);
        self.times()
            .iter()
            .map(|&t| phase * (self.amplitude / t.cosh()))
            .collect()
    }

    /// The linear half-step table `e^{i β2 ω² h / 4}`, `β2 = −1`, in binary64.
    pub fn half_step(&self) -> Vec<Complex64> {
        let h = self.step();
        self.omegas()
            .iter()
            .map(|w| Complex64::from_polar(1.0, -w * w * h / 4.0))
            .collect()
    }

    fn check(&self) -> Result<()> {
        let ok = self.points >= 2
            && self.steps >= 1
            && self.window.is_finite()
            && self.window > 0.0
            && self.distance.is_finite()
            && self.distance >= 0.0
            && self.amplitude.is_finite()
            && self.amplitude > 0.0
            && self.gamma().is_finite();
        if ok {
            Ok(())
        } else {
            Err(crate::Error::InvalidArgument(format!(
                "a soliton problem needs points ≥ 2, steps ≥ 1, a positive finite window, a finite distance ≥ 0 and an amplitude with a finite 1/P² in binary64 (got {self:?})"
            )))
        }
    }
}

/// The arithmetic of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// Binary64 throughout.
    Binary64,
    /// Binary32 state and transforms by the range rules; binary64 host scalars.
    Binary32,
    /// Binary32 everywhere, the physical values as they are: the counter-example.
    Naive32,
}

impl Arithmetic {
    /// `binary64`, `binary32` or `naive binary32`.
    pub const fn name(self) -> &'static str {
        match self {
            Arithmetic::Binary64 => "binary64",
            Arithmetic::Binary32 => "binary32",
            Arithmetic::Naive32 => "naive binary32",
        }
    }
}

/// What a run ends with.
#[derive(Debug, Clone, PartialEq)]
pub struct SolitonRun {
    /// The arithmetic.
    pub arithmetic: Arithmetic,
    /// The final field in the problem's units, binary64 (widened exactly from binary32).
    pub field: Vec<Complex64>,
    /// The state scale's exponent `k` (binary32 run only).
    pub state_exponent: Option<i32>,
    /// The final energy `Σ |A|² dT`, binary64 (NaN if the field is not finite).
    pub energy: f64,
}

impl SolitonRun {
    /// The relative L2 distance `‖field − other‖ / ‖other‖` (NaN if either is not finite).
    pub fn distance_to(&self, other: &[Complex64]) -> f64 {
        distance(&self.field, other)
    }
}

/// The relative L2 distance `‖a − b‖ / ‖b‖` between two complex fields, in binary64.
pub fn distance(a: &[Complex64], b: &[Complex64]) -> f64 {
    let flat = |x: &[Complex64]| -> Vec<f64> { x.iter().flat_map(|z| [z.re, z.im]).collect() };
    rel_error(&flat(a), &flat(b))
}

/// One forward and one inverse transform of length `n`, with their scratch.
struct Transforms<F: rustfft::FftNum> {
    forward: Arc<dyn Fft<F>>,
    inverse: Arc<dyn Fft<F>>,
    scratch: Vec<rustfft::num_complex::Complex<F>>,
}

impl<F: rustfft::FftNum> Transforms<F> {
    fn new(n: usize) -> Self {
        let mut planner = FftPlanner::<F>::new();
        let forward = planner.plan_fft_forward(n);
        let inverse = planner.plan_fft_inverse(n);
        let len = forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len());
        Transforms {
            forward,
            inverse,
            scratch: vec![rustfft::num_complex::Complex::new(F::zero(), F::zero()); len],
        }
    }

    /// `a ← c · ifft_unnormalised(table ⊙ fft(a))`.
    fn linear(
        &mut self,
        a: &mut [rustfft::num_complex::Complex<F>],
        table: &[rustfft::num_complex::Complex<F>],
        c: F,
    ) {
        self.forward.process_with_scratch(a, &mut self.scratch);
        for (x, l) in a.iter_mut().zip(table) {
            *x = *x * *l;
        }
        self.inverse.process_with_scratch(a, &mut self.scratch);
        for x in a.iter_mut() {
            *x = rustfft::num_complex::Complex::new(x.re * c, x.im * c);
        }
    }
}

/// Run the problem in one arithmetic.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] for a problem that is not well posed; a range error
/// if a combined coefficient leaves binary32's normal range (the binary32 run).
pub fn run(problem: &SolitonProblem, arithmetic: Arithmetic) -> Result<SolitonRun> {
    problem.check()?;
    let n = problem.points;
    let h = problem.step();
    let gamma = problem.gamma();
    let dt = problem.window / n as f64;
    let launch = problem.exact(0.0);
    let table = problem.half_step();
    match arithmetic {
        Arithmetic::Binary64 => {
            let mut t = Transforms::<f64>::new(n);
            let mut a = launch;
            let inv_n = 1.0 / n as f64;
            for _ in 0..problem.steps {
                t.linear(&mut a, &table, inv_n);
                for x in a.iter_mut() {
                    *x *= Complex64::from_polar(1.0, gamma * h * x.norm_sqr());
                }
                t.linear(&mut a, &table, inv_n);
            }
            let energy = scaled_square_sum(&a, None)? * dt;
            Ok(SolitonRun {
                arithmetic,
                field: a,
                state_exponent: None,
                energy,
            })
        }
        Arithmetic::Binary32 => {
            admit(
                &AdmissionPolicy::new(["split-step"]),
                &Request::new(Precision::SINGLE, "split-step").schedule(true),
            )?;
            // Rule 2: the state scale from the launch, given as its spectrum.
            let mut spectrum = launch.clone();
            FftPlanner::<f64>::new()
                .plan_fft_forward(n)
                .process(&mut spectrum);
            let k = state_exponent(launch_peak(&spectrum, n, GridKind::Envelope)?)?;
            let mut a: Vec<Complex32> = launch
                .iter()
                .map(|&x| Element::scale(x, -k).narrow())
                .collect();
            // Rule 1: the propagator narrowed with its exponent; rule 3: coefficients.
            let table = narrow(&table)?;
            let c_lin = combine(&[1.0 / n as f64], table.exponent())?.binary32()?;
            let c_nl = combine(&[gamma, h], 2 * k)?.binary32()?;
            let mut t = Transforms::<f32>::new(n);
            for _ in 0..problem.steps {
                t.linear(&mut a, table.values(), c_lin);
                for x in a.iter_mut() {
                    let (s, c) = (c_nl * x.norm_sqr()).sin_cos();
                    *x *= Complex32::new(c, s);
                }
                t.linear(&mut a, table.values(), c_lin);
            }
            // Rule 6: the energy scaled, summed pairwise, the scale restored in binary64.
            let energy = combine(&[scaled_square_sum(&a, None)?, dt], 2 * k)?.value()?;
            Ok(SolitonRun {
                arithmetic,
                field: a
                    .iter()
                    .map(|&x| Element::scale(Complex64::widen(x), k))
                    .collect(),
                state_exponent: Some(k),
                energy,
            })
        }
        Arithmetic::Naive32 => {
            let mut a: Vec<Complex32> = launch.iter().map(|x| x.narrow()).collect();
            let table: Vec<Complex32> = table.iter().map(|x| x.narrow()).collect();
            let (g, h, inv_n) = (gamma as f32, h as f32, 1.0 / n as f32);
            let mut t = Transforms::<f32>::new(n);
            for _ in 0..problem.steps {
                t.linear(&mut a, &table, inv_n);
                for x in a.iter_mut() {
                    let (s, c) = (g * h * x.norm_sqr()).sin_cos();
                    *x *= Complex32::new(c, s);
                }
                t.linear(&mut a, &table, inv_n);
            }
            let energy = scaled_square_sum(&a, None).map_or(f64::NAN, |e| e * dt);
            Ok(SolitonRun {
                arithmetic,
                field: a.iter().map(|&x| Complex64::widen(x)).collect(),
                state_exponent: None,
                energy,
            })
        }
    }
}

/// One row of [`study`]: a run against the binary64 run and the exact soliton.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyRow {
    /// The launch amplitude `P`.
    pub amplitude: f64,
    /// The run's arithmetic.
    pub arithmetic: Arithmetic,
    /// The state scale's exponent (binary32 run).
    pub state_exponent: Option<i32>,
    /// Relative L2 distance to the binary64 run: the rounding error (0 for binary64).
    pub vs_binary64: f64,
    /// Relative L2 distance to the exact soliton: discretisation plus rounding.
    pub vs_exact: f64,
    /// `vs_binary64 / (u · steps)`, `u = 2^-24` the binary32 unit roundoff.
    pub per_u_step: f64,
    /// `|energy / launch energy − 1|` (the scheme conserves energy exactly in exact
    /// arithmetic).
    pub energy_drift: f64,
}

/// Run the problem at each amplitude in the three arithmetics.
///
/// # Errors
/// As [`run`].
pub fn study(problem: &SolitonProblem, amplitudes: &[f64]) -> Result<Vec<StudyRow>> {
    let u = f32::UNIT_ROUNDOFF_F64;
    let mut rows = Vec::new();
    for &amplitude in amplitudes {
        let p = SolitonProblem {
            amplitude,
            ..*problem
        };
        let exact = p.exact(p.distance);
        let e0 = scaled_square_sum(&p.exact(0.0), None)? * (p.window / p.points as f64);
        let wide = run(&p, Arithmetic::Binary64)?;
        for arithmetic in [
            Arithmetic::Binary64,
            Arithmetic::Binary32,
            Arithmetic::Naive32,
        ] {
            let r = if arithmetic == Arithmetic::Binary64 {
                wide.clone()
            } else {
                run(&p, arithmetic)?
            };
            let vs_binary64 = r.distance_to(&wide.field);
            rows.push(StudyRow {
                amplitude,
                arithmetic,
                state_exponent: r.state_exponent,
                vs_binary64,
                vs_exact: r.distance_to(&exact),
                per_u_step: vs_binary64 / (u * p.steps as f64),
                energy_drift: (r.energy / e0 - 1.0).abs(),
            });
        }
    }
    Ok(rows)
}

/// The binary32 unit roundoff as binary64.
trait UnitRoundoff {
    const UNIT_ROUNDOFF_F64: f64;
}

impl UnitRoundoff for f32 {
    const UNIT_ROUNDOFF_F64: f64 = <f32 as super::Real>::UNIT_ROUNDOFF;
}
