//! The NLS fundamental soliton in binary64, in binary32 by the range rules, and in naive
//! binary32, at amplitudes 1e-20, 1 and 1e20: `cargo run --release --example soliton`.
//!
//! Optional arguments: `STEPS POINTS` (defaults 200 and 256).

use lowprec::range::soliton::{study, SolitonProblem};

fn main() -> Result<(), lowprec::Error> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let mut p = SolitonProblem::default();
    if let Some(Ok(steps)) = args.next() {
        p.steps = steps;
    }
    if let Some(Ok(points)) = args.next() {
        p.points = points;
    }
    println!(
        "NLS soliton, {} points over {} widths, z = {} in {} steps; u = 2^-24, u·steps = {:.3e}",
        p.points,
        p.window,
        p.distance,
        p.steps,
        2f64.powi(-24) * p.steps as f64
    );
    println!(
        "{:>9}  {:<14}  {:>6}  {:>11}  {:>11}  {:>12}  {:>12}",
        "amplitude", "run", "scale", "vs binary64", "vs exact", "/(u·steps)", "energy drift"
    );
    for r in study(&p, &[1e-20, 1.0, 1e20])? {
        println!(
            "{:>9.0e}  {:<14}  {:>6}  {:>11.3e}  {:>11.3e}  {:>12.3}  {:>12.3e}",
            r.amplitude,
            r.arithmetic.name(),
            r.state_exponent.map_or("-".into(), |k| format!("2^{k}")),
            r.vs_binary64,
            r.vs_exact,
            r.per_u_step,
            r.energy_drift
        );
    }
    Ok(())
}
