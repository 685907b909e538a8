//! Two-operand operations on formats of at most 8 bits through a table of every pair of
//! codes: `out[i] = T[a[i] · 2^bits_b + b[i]]`, one load per element, with the status counts
//! packed beside each result code.
//!
//! Add, Subtract, Multiply and Divide into a format of at most 8 bits under
//! NearestTiesToEven may instead compute in binary32 lanes and round once
//! ([`crate::simd::arith8`]): a table takes that route only when it gives every one of its
//! entries (all `2^(bits_a + bits_b)` pairs, codes and counts), checked when the table is
//! built, and a work item the lanes cannot finish (a NaN, ±Inf or overflow) reads the table.

use super::{flag, full_table, Counts, Op, Projection, Rounding};
use crate::error::{Error, Result};
use crate::format::FloatFormat;
use crate::simd::arith8::{pair8, Arith, Decode8};
use crate::simd::cast8::Cast8;
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
    /// The binary32-lane route, where it gives every entry.
    lanes: Option<Lanes>,
}

/// The binary32-lane route of a table (see the module text).
#[derive(Debug, Clone, Copy)]
struct Lanes {
    op: Arith,
    round: Cast8,
    da: Decode8,
    db: Decode8,
}

impl Lanes {
    /// The route for `op` from `fa × fb` into `out`, where the kernel takes them.
    fn plan(
        op: Op,
        (fa, fb): (FloatFormat, FloatFormat),
        out: FloatFormat,
        prj: &Projection,
    ) -> Option<Lanes> {
        let op = match op {
            Op::Add => Arith::Add,
            Op::Subtract => Arith::Sub,
            Op::Multiply => Arith::Mul,
            Op::Divide => Arith::Div,
            _ => return None,
        };
        if prj.rounding != Rounding::NearestTiesToEven
            || out.bits() > 8
            || !crate::simd::cast8::available()
            || !crate::round::kernel::f32_native(&out, false)
        {
            return None;
        }
        let opts = crate::RoundOptions::new(crate::RoundingMode::NearestEven);
        Some(Lanes {
            op,
            round: crate::round::kernel::Plan::<f32>::new(&out, &opts).cast8(&out)?,
            da: Decode8::new(&fa)?,
            db: Decode8::new(&fb)?,
        })
    }

    /// Whether the lanes send the pair `(x, y)` back on its own: an undecoded code, or a
    /// binary32 result at or beyond the rounding's overflow bound (NaN and ±Inf included).
    fn sends_back(&self, x: u8, y: u8) -> bool {
        let r = self.op.apply(self.da.value(x), self.db.value(y));
        self.da.undecoded(x) || self.db.undecoded(y) || self.round.sends_back(r.to_bits())
    }

    /// The codes and counts of one work item, `None` where the lanes cannot finish it.
    fn run(&self, a: &[u8], b: &[u8], out: &mut [u8]) -> Option<Counts> {
        let c = pair8(self.op, &self.round, (&self.da, &self.db), a, b, out)?;
        Some(Counts {
            total: out.len() as u64,
            inexact: c.inexact,
            underflow: c.underflow,
            ..Counts::default()
        })
    }
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
        let mut t = PairTable {
            bits_b: fb.bits(),
            out_bits,
            entries,
            bits_a: fa.bits(),
            narrow,
            lanes: None,
        };
        t.lanes = Lanes::plan(op, (fa, fb), out, prj).filter(|l| t.agrees(l));
        Ok(t)
    }

    /// Whether the binary32-lane route gives every entry of the table. A pair the lanes
    /// send back on its own (an undecoded code, a result at or beyond the overflow bound,
    /// found by the same binary32 arithmetic in scalar) must be sent back alone; every other
    /// pair must have a finite entry without overflow, invalid, saturated or NaN, and is run
    /// in one group per its entry's (inexact, underflow) flags: the group must come back
    /// with every code equal and each count either 0 or the group's size, so that each
    /// element's own flags are its entry's.
    fn agrees(&self, lanes: &Lanes) -> bool {
        let mut groups: [(Vec<u8>, Vec<u8>, Vec<u8>); 4] = Default::default();
        let mut alone = vec![];
        for (idx, &e) in self.entries.iter().enumerate() {
            let (x, y) = (
                (idx >> self.bits_b) as u8,
                (idx & ((1 << self.bits_b) - 1)) as u8,
            );
            if lanes.sends_back(x, y) {
                alone.push((x, y));
                continue;
            }
            let field = |s: u32| (e >> s) & 0xff;
            if e == NO_CODE || (24..=56).step_by(8).any(|s| s != 32 && field(s) != 0) {
                return false;
            }
            let g = &mut groups[(field(16) + 2 * field(32)) as usize];
            g.0.push(x);
            g.1.push(y);
            g.2.push((e & 0xff) as u8);
        }
        let whole = groups.iter().enumerate().all(|(g, (a, b, want))| {
            let mut out = vec![0u8; a.len()];
            let n = a.len() as u64;
            match lanes.run(a, b, &mut out) {
                Some(c) => {
                    out == *want
                        && c.inexact == (g as u64 & 1) * n
                        && c.underflow == (g as u64 >> 1) * n
                }
                None => a.is_empty(),
            }
        });
        whole
            && alone
                .iter()
                .all(|&(x, y)| lanes.run(&[x], &[y], &mut [0]).is_none())
    }

    /// Whether this table computes in binary32 lanes where it can (see the module text).
    pub fn uses_lanes(&self) -> bool {
        self.lanes.is_some()
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
        if a.len() != out.len() || b.len() != out.len() {
            return self.run(a, b, out, |c| c as u8);
        }
        // one work item: the binary32 lanes, else the vector gather of the narrow table,
        // else the scalar loop
        let task = |((a, b), o): ((&[u8], &[u8]), &mut [u8])| -> Result<Counts> {
            if let Some(c) = self.lanes.as_ref().and_then(|l| l.run(a, b, o)) {
                return Ok(c);
            }
            if let Some(s) = (self.narrow.as_ref())
                .and_then(|t| crate::simd::pair_u8(t, self.bits_a, self.bits_b, a, b, o))
            {
                return Ok(Counts {
                    total: o.len() as u64,
                    inexact: s[0],
                    overflow: s[1],
                    underflow: s[2],
                    invalid: s[3],
                    saturated: s[4],
                    nan: s[5],
                });
            }
            self.run(a, b, o, |c| c as u8)
        };
        if out.len() <= TASK {
            task(((a, b), out))
        } else {
            a.par_chunks(TASK)
                .zip(b.par_chunks(TASK))
                .zip(out.par_chunks_mut(TASK))
                .map(task)
                .try_reduce(Counts::default, |x, y| Ok(x.merge(y)))
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The check that admits the binary32-lane route rejects a route that is wrong in one
    /// way only: its operation (the codes), a sum that is not exact in binary32 (the inexact
    /// counts of a few pairs; fp8-e5m2's codes span 33 bits), or an overflow bound above the
    /// sum 480 = 240 + 240, which fp8-e4m3 cannot hold.
    #[test]
    fn the_lane_check_rejects_a_wrong_route() {
        if !crate::simd::cast8::available() {
            return;
        }
        let prj = Projection::default();
        let e4m3 = FloatFormat::FP8_E4M3;
        let t = PairTable::new(Op::Add, e4m3, e4m3, e4m3, &prj).unwrap();
        let right = Lanes::plan(Op::Add, (e4m3, e4m3), e4m3, &prj).unwrap();
        assert!(t.uses_lanes() && t.agrees(&right));
        let wrong_op = Lanes::plan(Op::Subtract, (e4m3, e4m3), e4m3, &prj).unwrap();
        assert!(!t.agrees(&wrong_op));
        let mut low = right;
        low.round.over_min = 480f32.to_bits() + 1;
        assert!(!t.agrees(&low));
        let e5m2 = FloatFormat::FP8_E5M2;
        let t = PairTable::new(Op::Add, e5m2, e5m2, e5m2, &prj).unwrap();
        assert!(!t.uses_lanes());
        let m = PairTable::new(Op::Multiply, e5m2, e5m2, e5m2, &prj).unwrap();
        assert!(m.uses_lanes());
    }
}
