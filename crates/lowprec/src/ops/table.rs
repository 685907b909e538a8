//! Two-operand operations on formats of at most 8 bits through a table of every pair of
//! codes: `out[i] = T[a[i] · 2^bits_b + b[i]]`, one load per element, with the status counts
//! packed beside each result code.

use super::{flag, full_table, Counts, Op, Projection};
use crate::error::{Error, Result};
use crate::format::FloatFormat;
use rayon::prelude::*;

/// Every result of a two-operand operation on ≤ 8-bit formats, packed for fast application
/// to code slices. Building one runs the exact operation 65,536 times (a few milliseconds);
/// applying it costs one table load per element. Results equal [`super::apply`]'s.
///
/// ```
/// use lowprec::ops::{Op, PairTable, Projection};
/// use lowprec::FloatFormat;
/// let f = FloatFormat::FP8_E4M3;
/// let t = PairTable::new(Op::Add, f, f, f, &Projection::default()).unwrap();
/// let (a, b) = ([0x38u8, 0x40], [0x38u8, 0x38]); // 1 + 1, 2 + 1
/// let mut out = [0u8; 2];
/// let counts = t.apply_u8(&a, &b, &mut out).unwrap();
/// assert_eq!((f.decode(out[0] as u64), f.decode(out[1] as u64)), (2.0, 3.0));
/// assert_eq!(counts.inexact, 0);
/// ```
#[derive(Debug, Clone)]
pub struct PairTable {
    bits_b: u32,
    out_bits: u32,
    /// result code (16 bits) | six 8-bit counters (inexact, overflow, underflow, invalid,
    /// saturated, NaN) each 0 or 1; `u64::MAX` where a NaN result has no code
    entries: Vec<u64>,
    bits_a: u32,
    /// For results of at most 8 bits that all have a code: `code | Σ flag_f · 2^(8+4f)`
    /// (the six counters in 4-bit fields), the AVX-512 kernel's table.
    narrow: Option<Vec<u32>>,
}

const NO_CODE: u64 = u64::MAX;
/// Elements per counter flush (each packed 8-bit counter stays below 256).
const FLUSH: usize = 255;
/// Elements per parallel task.
const TASK: usize = 1 << 16;

fn pack(code: u64, f: u8, nan: bool) -> u64 {
    let bit = |b: u8| (f & b != 0) as u64;
    code | bit(flag::INEXACT) << 16
        | bit(flag::OVERFLOW) << 24
        | bit(flag::UNDERFLOW) << 32
        | bit(flag::INVALID) << 40
        | bit(flag::SATURATED) << 48
        | (nan as u64) << 56
}

fn unpack(acc: u64, c: &mut Counts) {
    let field = |s: u32| (acc >> s) & 0xff;
    c.inexact += field(16);
    c.overflow += field(24);
    c.underflow += field(32);
    c.invalid += field(40);
    c.saturated += field(48);
    c.nan += field(56);
}

impl PairTable {
    /// The table of `op` (two operands) from `fa × fb` (each at most 8 bits) into `out` (at
    /// most 16 bits) under a deterministic projection.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] otherwise.
    pub fn new(
        op: Op,
        fa: FloatFormat,
        fb: FloatFormat,
        out: FloatFormat,
        prj: &Projection,
    ) -> Result<PairTable> {
        if op.arity() != 2 || out.bits() > 16 {
            return Err(Error::InvalidArgument(format!(
                "a pair table is for two-operand operations into formats of at most 16 bits; {op} into {}",
                out.name()
            )));
        }
        let table = full_table(op, &[fa, fb], &out, prj)?;
        let nan = out.nan_code(false);
        let numeric = matches!(op.kind(), super::Kind::Numeric);
        let entries: Vec<u64> = table
            .iter()
            .map(|o| match o.code {
                Some(c) => pack(c, o.flags, numeric && Some(c) == nan),
                None => NO_CODE,
            })
            .collect();
        let out_bits = match op.kind() {
            super::Kind::Numeric | super::Kind::SameFormat => out.bits(),
            super::Kind::Boolean | super::Kind::Class => 8,
        };
        let narrow = (out_bits <= 8 && !entries.contains(&NO_CODE)).then(|| {
            entries
                .iter()
                .map(|&e| {
                    let bit = |s: u32| ((e >> s) & 1) as u32;
                    (e & 0xff) as u32 | (0..6).map(|f| bit(16 + 8 * f) << (8 + 4 * f)).sum::<u32>()
                })
                .collect()
        });
        Ok(PairTable {
            bits_b: fb.bits(),
            out_bits,
            entries,
            bits_a: fa.bits(),
            narrow,
        })
    }

    fn run<T: Copy + Send, F: Fn(u64) -> T + Copy + Sync>(
        &self,
        a: &[u8],
        b: &[u8],
        out: &mut [T],
        cast: F,
    ) -> Result<Counts> {
        let n = out.len();
        if a.len() != n || b.len() != n {
            return Err(Error::InvalidArgument(format!(
                "operands of {} and {} elements for {n} results; give slices of the same length",
                a.len(),
                b.len()
            )));
        }
        let mask_a = (self.entries.len() >> self.bits_b) - 1;
        let mask_b = (1usize << self.bits_b) - 1;
        let entries: &[u64] = &self.entries;
        let bits_b = self.bits_b;
        let task = |a: &[u8], b: &[u8], out: &mut [T]| -> std::result::Result<Counts, usize> {
            let mut c = Counts::default();
            for ((a, b), out) in a
                .chunks(FLUSH)
                .zip(b.chunks(FLUSH))
                .zip(out.chunks_mut(FLUSH))
            {
                let mut acc = 0u64;
                let mut bad = false;
                for ((&x, &y), o) in a.iter().zip(b).zip(out.iter_mut()) {
                    let idx = ((x as usize & mask_a) << bits_b) | (y as usize & mask_b);
                    // in bounds: idx < 2^(bits_a + bits_b) = entries.len()
                    let e = entries[idx & (entries.len() - 1)];
                    bad |= e == NO_CODE;
                    *o = cast(e & 0xffff);
                    acc = acc.wrapping_add(e & !0xffff);
                }
                if bad {
                    return Err(0);
                }
                unpack(acc, &mut c);
                c.total += a.len() as u64;
            }
            Ok(c)
        };
        let r = if n <= TASK {
            task(a, b, out)
        } else {
            a.par_chunks(TASK)
                .zip(b.par_chunks(TASK))
                .zip(out.par_chunks_mut(TASK))
                .map(|((a, b), o)| task(a, b, o))
                .try_reduce(Counts::default, |x, y| Ok(x.merge(y)))
        };
        r.map_err(|_| {
            Error::InvalidArgument(
                "a result is NaN and the result format has no NaN; choose a result format with a NaN".into(),
            )
        })
    }

    /// Apply to code slices, results of at most 8 bits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for slices of different lengths, results wider than 8 bits,
    /// or a NaN result without a code.
    pub fn apply_u8(&self, a: &[u8], b: &[u8], out: &mut [u8]) -> Result<Counts> {
        if self.out_bits > 8 {
            return Err(Error::InvalidArgument(format!(
                "results of {} bits need apply_u16",
                self.out_bits
            )));
        }
        if let (Some(t), true) = (&self.narrow, a.len() == out.len() && b.len() == out.len()) {
            let task = |((a, b), o): ((&[u8], &[u8]), &mut [u8])| {
                crate::simd::pair_u8(t, self.bits_a, self.bits_b, a, b, o)
            };
            let sums = if out.len() <= TASK {
                task(((a, b), out))
            } else {
                a.par_chunks(TASK)
                    .zip(b.par_chunks(TASK))
                    .zip(out.par_chunks_mut(TASK))
                    .map(task)
                    .try_reduce(
                        || [0u64; 6],
                        |x, y| Some(std::array::from_fn(|i| x[i] + y[i])),
                    )
            };
            if let Some(s) = sums {
                return Ok(Counts {
                    total: out.len() as u64,
                    inexact: s[0],
                    overflow: s[1],
                    underflow: s[2],
                    invalid: s[3],
                    saturated: s[4],
                    nan: s[5],
                });
            }
        }
        self.run(a, b, out, |c| c as u8)
    }

    /// Apply to code slices, results of at most 16 bits.
    ///
    /// # Errors
    ///
    /// As [`PairTable::apply_u8`].
    pub fn apply_u16(&self, a: &[u8], b: &[u8], out: &mut [u16]) -> Result<Counts> {
        self.run(a, b, out, |c| c as u16)
    }
}
