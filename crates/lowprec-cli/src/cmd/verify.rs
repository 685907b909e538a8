//! `lowprec verify`: every binary32 bit pattern through the fast kernels and the exact
//! reference, compared bit for bit (codes, values, and the status counts of each block).

use anyhow::{bail, Result};
use lowprec::{
    encode_into, reference, round_into, FloatFormat, RoundOptions, RoundingMode, Status,
};
use rayon::prelude::*;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `lowprec verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec verify --format fp8-e4m3 --format fp16 --format bf16 --rounding rne
  lowprec verify -f bf16 -r rtz -r rup --overflow sat --count 16777216
  lowprec verify -f fp4-e2m1 -r sr --start 1056964608 --count 1048576")]
pub struct Args {
    /// Formats to check (repeatable).
    #[arg(long = "format", short = 'f', default_values = ["fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "fp4-e2m1"])]
    pub formats: Vec<FloatFormat>,
    /// Rounding modes to check (repeatable).
    #[arg(long = "rounding", short = 'r', default_values = ["rne"])]
    pub modes: Vec<RoundingMode>,
    /// First bit pattern.
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Number of bit patterns (default: all 2^32).
    #[arg(long, default_value_t = 1u64 << 32)]
    pub count: u64,
    /// Overflow policy: ovf or sat.
    #[arg(long, default_value = "ovf")]
    pub overflow: lowprec::Overflow,
}

const BLOCK: u64 = 1 << 16;

/// One worker's buffers, reused from block to block (a fresh allocation per block of 2^16
/// patterns costs page faults comparable to the reference's own work).
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    v32: Vec<f32>,
    v64: Vec<f64>,
    c8: Vec<u8>,
    c16: Vec<u16>,
    c32: Vec<u32>,
    c64: Vec<u64>,
}

/// `buf` resized to `n` elements (their values are overwritten by the caller).
fn sized<T: Copy + Default>(buf: &mut Vec<T>, n: usize) -> &mut [T] {
    buf.resize(n, T::default());
    &mut buf[..n]
}

/// Encode `s.x` in the format's own code width (`u8` up to 8 bits, `u16` up to 16, then
/// `u32`, `u64`), so that the specialised paths of those widths are the ones checked; the
/// status, or `None` when the encoding is refused (NaN into a format without NaN).
fn encode(f: &FloatFormat, s: &mut Scratch, o: &RoundOptions) -> Option<Status> {
    let n = s.x.len();
    let x = &s.x;
    match f.bits() {
        0..=8 => encode_into(f, x, sized(&mut s.c8, n), o).ok(),
        9..=16 => encode_into(f, x, sized(&mut s.c16, n), o).ok(),
        17..=32 => encode_into(f, x, sized(&mut s.c32, n), o).ok(),
        _ => encode_into(f, x, sized(&mut s.c64, n), o).ok(),
    }
}

/// The code [`encode`] wrote for element `i`.
fn code_at(f: &FloatFormat, s: &Scratch, i: usize) -> u64 {
    match f.bits() {
        0..=8 => s.c8[i].into(),
        9..=16 => s.c16[i].into(),
        17..=32 => s.c32[i].into(),
        _ => s.c64[i],
    }
}

/// Mismatches in one block: (count, first few descriptions). The status counts of the
/// encoding and of the rounding to values must equal the reference's, summed.
fn check_block(
    f: &FloatFormat,
    o: &RoundOptions,
    s: &mut Scratch,
    start: u64,
    len: u64,
) -> (u64, Vec<String>) {
    s.x.clear();
    s.x.extend((start..start + len).map(|b| f32::from_bits(b as u32)));
    let n = s.x.len();
    let o = o.index_offset(start);
    let code_st = encode(f, s, &o);
    let round_st = if f.fits_f32() {
        round_into(f, &s.x, sized(&mut s.v32, n), &o).expect("lengths match")
    } else {
        round_into(f, &s.x, sized(&mut s.v64, n), &o).expect("lengths match")
    };
    let mut bad = 0;
    let mut first = Vec::new();
    let mut ref_st = Status::default();
    for (i, &xi) in s.x.iter().enumerate() {
        let r = reference::round(f, xi as f64, &o, i as u64);
        ref_st += r.status;
        let v = if f.fits_f32() {
            s.v32[i] as f64
        } else {
            s.v64[i]
        };
        let code = code_st.map(|_| code_at(f, s, i));
        let same_v = (v.is_nan() && r.value.is_nan()) || v.to_bits() == r.value.to_bits();
        let same_c = code.is_none() || r.code.is_none() || r.code == code;
        if !(same_v && same_c) {
            bad += 1;
            if first.len() < 5 {
                first.push(format!(
                    "x = {:#010x} ({xi:e}): kernel {v:e} / {:#x}, reference {:e} / {:?}",
                    xi.to_bits(),
                    code.unwrap_or(0),
                    r.value,
                    r.code
                ));
            }
        }
    }
    for (what, st) in [("rounding", Some(round_st)), ("encoding", code_st)] {
        if let Some(st) = st.filter(|st| *st != ref_st) {
            bad += 1;
            if first.len() < 5 {
                first.push(format!(
                    "patterns {start:#x}..{:#x}: {what} status {st:?}, reference {ref_st:?}",
                    start + len
                ));
            }
        }
    }
    (bad, first)
}

/// Run `lowprec verify`.
pub fn run(a: &Args) -> Result<ExitCode> {
    if a.count == 0 {
        bail!("--count must be at least 1");
    }
    if a.start
        .checked_add(a.count)
        .is_none_or(|end| end > 1u64 << 32)
    {
        bail!(
            "--start {} + --count {} exceeds the 2^32 binary32 bit patterns; give a range within them",
            a.start,
            a.count
        );
    }
    let overflow = a.overflow;
    let mut total_bad = 0;
    for &f in &a.formats {
        for &mode in &a.modes {
            let o = RoundOptions::new(mode).overflow(overflow).seed(0x5eed);
            let t0 = Instant::now();
            let blocks: Vec<u64> = (a.start..a.start + a.count)
                .step_by(BLOCK as usize)
                .collect();
            let (bad, first) = blocks
                .par_iter()
                .map_init(Scratch::default, |scratch, &s| {
                    check_block(&f, &o, scratch, s, BLOCK.min(a.start + a.count - s))
                })
                .reduce(
                    || (0, Vec::new()),
                    |mut x, y| {
                        x.0 += y.0;
                        x.1.extend(y.1.into_iter().take(5usize.saturating_sub(x.1.len())));
                        x
                    },
                );
            outln!(
                "{f} {} {}: {} binary32 patterns, {} mismatches (codes, values, status counts), {:.1} s",
                mode.short_name(),
                overflow.short_name(),
                a.count,
                bad,
                t0.elapsed().as_secs_f64()
            )?;
            for line in first {
                outln!("  {line}")?;
            }
            total_bad += bad;
        }
    }
    Ok(if total_bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
