//! One module per subcommand, and the helpers they share.

/// `print!` that returns the write's error ([`StdoutError`]) instead of panicking: a
/// closed pipe (`lowprec … | head -1`) or a full disk (`> /dev/full`).
macro_rules! out {
    ($($t:tt)*) => {
        $crate::cmd::write_stdout(format_args!($($t)*))
    };
}

/// `println!` that returns the write's error, as [`out!`].
macro_rules! outln {
    () => {
        $crate::cmd::write_stdout(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::cmd::write_stdout(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `eprintln!` that never panics: a failed write to standard error (closed, or a full disk)
/// is ignored, since there is nowhere left to report it; the exit code still says what
/// happened.
macro_rules! errln {
    ($($t:tt)*) => {
        $crate::cmd::write_stderr(format_args!("{}\n", format_args!($($t)*)))
    };
}

pub mod accumulate;
pub mod bench;
pub mod block;
pub mod calc;
pub mod decode;
pub mod dequantize;
pub mod encode;
pub mod formats;
pub mod gemm;
pub mod gguf;
pub mod info;
pub mod op;
pub mod p3109;
pub mod plot;
pub mod quantize;
pub mod report;
pub mod report_groups;
pub mod report_plot;
pub mod round;
pub mod schemes;
pub mod sharded;
pub mod soliton;
pub mod table_op;
pub mod tour;
pub mod verify;

use anyhow::{bail, Context, Result};
use lowprec::{Overflow, RoundOptions, RoundingMode};
use std::path::Path;

/// A failed write to standard output: `main` exits quietly with status 0 on a broken pipe
/// (the reader has what it wanted, as `head` expects), else prints this one line and exits 2.
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

/// Write to standard output (see [`out!`]).
pub fn write_stdout(a: std::fmt::Arguments<'_>) -> Result<()> {
    use std::io::Write;
    std::io::stdout()
        .lock()
        .write_fmt(a)
        .map_err(|e| anyhow::Error::new(StdoutError(e)))
}

/// Write to standard error, ignoring a failure (see [`errln!`]).
pub fn write_stderr(a: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_fmt(a);
}

/// Flush standard output (at the end of a command), as [`write_stdout`].
pub fn flush_stdout() -> Result<()> {
    use std::io::Write;
    std::io::stdout()
        .lock()
        .flush()
        .map_err(|e| anyhow::Error::new(StdoutError(e)))
}

/// The memory budget for buffers sized by command-line options (`--max-memory`), in bytes;
/// 0 until `main` sets it.
static MEMORY_BUDGET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set the budget: `max` bytes, or half of this machine's memory (`MemTotal` of
/// `/proc/meminfo`; 8 GiB where it cannot be read).
pub fn set_memory_budget(max: Option<u64>) {
    let b = max.unwrap_or_else(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib.saturating_mul(1024) / 2)
            })
            .unwrap_or(8 << 30)
    });
    MEMORY_BUDGET.store(b, std::sync::atomic::Ordering::Relaxed);
}

/// `--max-memory`'s value: bytes, or with a suffix `K`, `M`, `G`, `T` (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => bail!("--max-memory {s}: use bytes or a K, M, G or T suffix, e.g. 4G"),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let v: u64 = num.parse().map_err(|_| {
        anyhow::anyhow!("--max-memory {s}: use bytes or a K, M, G or T suffix, e.g. 4G")
    })?;
    v.checked_mul(1u64 << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| anyhow::anyhow!("--max-memory {s}: must be between 1 byte and 2^64"))
}

/// `b` bytes for people: `1.5 GiB`.
fn human(b: u128) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"];
    let (mut v, mut u) = (b as f64, 0);
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Refuse, before any allocation, buffers of `elements × bytes_each` bytes that exceed the
/// memory budget (the arithmetic in 128 bits, so that it cannot wrap); `what` names the
/// options that asked for them, e.g. `--n 1000000 × --rows 64`.
pub fn check_memory(what: &str, elements: u128, bytes_each: u128) -> Result<()> {
    let need = elements.saturating_mul(bytes_each);
    let budget = MEMORY_BUDGET.load(std::sync::atomic::Ordering::Relaxed);
    if budget > 0 && need > budget as u128 {
        bail!(
            "{what} needs {} of memory, above the budget of {}: ask for less, or raise it with --max-memory",
            human(need),
            human(budget as u128)
        );
    }
    Ok(())
}

/// Rounding options shared by `encode` and `round`.
#[derive(clap::Args, Debug, Clone)]
pub struct RoundArgs {
    /// Rounding mode: rne, rna, rtz, rup, rdn, rto, sr (or nearest_even, toward_zero, ...).
    #[arg(long, short = 'r', default_value = "rne")]
    pub rounding: RoundingMode,
    /// Overflow: ovf (IEEE 754 §7.4, Inf/NaN by direction) or sat (±max).
    #[arg(long, default_value = "ovf")]
    pub overflow: Overflow,
    /// Seed of stochastic rounding (sr).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stochastic rounding with only this many random bits (hardware style; 0 = exact).
    #[arg(long, default_value_t = 0)]
    pub sr_bits: u32,
}

impl RoundArgs {
    /// The options.
    pub fn options(&self) -> RoundOptions {
        RoundOptions::new(self.rounding)
            .overflow(self.overflow)
            .seed(self.seed)
            .sr_bits(self.sr_bits)
    }
}

/// Projection options of the arithmetic commands (`op`, `calc`, `table`).
#[derive(clap::Args, Debug, Clone)]
pub struct ProjectionArgs {
    /// Rounding: rne, rna, rup, rdn, rtz, rto, sra<N>, srb<N>, src<N> (N random bits, 1 to
    /// 32), or the draft's names (NearestTiesToEven, …, StochasticA8).
    #[arg(long, short = 'r', default_value = "rne")]
    pub rounding: lowprec::ops::Rounding,
    /// Saturation: none (SatNone, alias OvfInf, ovf), finite (SatFinite, sat) or propagate
    /// (SatPropagate).
    #[arg(long, default_value = "none")]
    pub sat: lowprec::ops::Saturation,
    /// The P3109 text for SatNone on finite formats: d1 (NaN) or v4.0 (max finite).
    #[arg(long, default_value = "d1")]
    pub draft: lowprec::ops::Draft,
    /// Seed of the stochastic roundings' random bits (counter-based: element i draws
    /// random_bits(seed, i)).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl ProjectionArgs {
    /// The projection.
    pub fn projection(&self) -> lowprec::ops::Projection {
        lowprec::ops::Projection {
            rounding: self.rounding,
            saturation: self.sat,
            draft: self.draft,
        }
    }
}

/// A scheme as given on the command line: its text (the label of reports) and its value.
#[derive(Clone, Debug)]
pub struct NamedScheme {
    /// The text as given.
    pub name: String,
    /// The parsed scheme.
    pub scheme: lowprec::scheme::Scheme,
}

/// A report method as given on the command line: a scheme, or `gguf:TYPE` (a ggml type
/// through llama.cpp's reference quantizer), with the text as its label.
#[derive(Debug, Clone)]
pub struct NamedMethod {
    /// The text as given.
    pub name: String,
    /// The parsed method.
    pub method: lowprec::report::Method,
}

impl std::str::FromStr for NamedMethod {
    type Err = lowprec::Error;
    fn from_str(s: &str) -> lowprec::Result<NamedMethod> {
        Ok(NamedMethod {
            name: s.to_string(),
            method: s.parse()?,
        })
    }
}

impl std::str::FromStr for NamedScheme {
    type Err = lowprec::Error;
    fn from_str(s: &str) -> lowprec::Result<NamedScheme> {
        Ok(NamedScheme {
            name: s.to_string(),
            scheme: s.parse()?,
        })
    }
}

/// Refuse an output path that is the input (or the same file by another name), or that is
/// not a place for a regular file ([`lowprec::io::check_output`]).
pub fn check_output(input: &Path, output: &Path) -> Result<()> {
    Ok(lowprec::io::check_output(input, output)?)
}

/// [`check_output`] for every output of a command, and no two outputs naming one file.
pub fn check_outputs(input: &Path, outputs: &[&Path]) -> Result<()> {
    for (i, o) in outputs.iter().enumerate() {
        check_output(input, o)?;
        if let Some(p) = outputs[..i].iter().find(|p| lowprec::io::same_file(p, o)) {
            bail!(
                "two outputs name one file ({} and {}); give each output its own path",
                p.display(),
                o.display()
            );
        }
    }
    Ok(())
}

/// Read a `.npy` file with context.
pub fn read_npy(path: &Path) -> Result<lowprec::io::npy::Array> {
    lowprec::io::npy::read(path).with_context(|| format!("reading {}", path.display()))
}

/// A one-line summary of a [`lowprec::Status`].
pub fn status_line(st: &lowprec::Status, n: usize) -> String {
    let mut parts = vec![format!("{n} values"), format!("inexact {}", st.inexact)];
    for (name, v) in [
        ("overflow", st.overflow),
        ("saturated", st.saturated),
        ("underflow", st.underflow),
        ("flushed to zero", st.flushed),
        ("NaN", st.nan),
        ("Inf", st.infinite),
        ("invalid", st.invalid),
    ] {
        parts.push(format!("{name} {v}"));
    }
    parts.join(", ")
}

/// `n` deterministic normal(0, 1) samples (SplitMix64 and Box–Muller): what weights and
/// activations look like.
pub fn normal_samples(n: usize, seed: u64) -> Vec<f32> {
    samples(Dist::Normal, n, seed)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// A distribution of generated test data.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Every value 1.
    Ones,
    /// Normal(0, 1).
    Normal,
    /// Uniform on (0, 1): all positive, so errors accumulate.
    Uniform,
    /// exp(normal(0, 1)): positive, heavy-tailed.
    Lognormal,
}

impl Dist {
    /// The name used by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Dist::Ones => "ones",
            Dist::Normal => "normal",
            Dist::Uniform => "uniform",
            Dist::Lognormal => "lognormal",
        }
    }
}

/// `n` deterministic samples of `dist` (SplitMix64; Box–Muller for the normal ones).
pub fn samples(dist: Dist, n: usize, seed: u64) -> Vec<f64> {
    use lowprec::report::{normal_samples, uniform_samples};
    match dist {
        Dist::Ones => vec![1.0; n],
        Dist::Normal => normal_samples(n, seed),
        Dist::Uniform => uniform_samples(n, seed),
        Dist::Lognormal => normal_samples(n, seed).into_iter().map(f64::exp).collect(),
    }
}
