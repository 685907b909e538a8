//! `lowprec bench`: elements/s of rounding and encoding, one thread and all threads, beside
//! what bounds them, measured in the same run: the memory-copy rate, streaming probes of the
//! same bytes (read 4 B, write 1, 2 or 4 B per element, ordinary and non-temporal stores;
//! [`lowprec::simd::stream_probe`]; and `r4+r4w1`, a read pass for the tensor's largest
//! magnitude before r4w1, [`lowprec::simd::read_probe`]: the limit of a two-pass encode) and the `half` crate's slice conversions. Every record of
//! a binary32 input carries its ratio to its probe and, for binary16 and bfloat16 encodes,
//! to `half`.

use crate::table::Table;
use anyhow::{Context, Result};
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use lowprec::format::PRESETS;
use lowprec::ggml::{self, GgmlType};
use lowprec::ops::{Op, PairTable, Projection};
use lowprec::simd::{read_probe, stream_probe, Store};
use lowprec::{encode_into, round_into, FloatFormat, RoundOptions, RoundingMode};
use rayon::prelude::*;
use serde::Serialize;
use std::process::ExitCode;
use std::time::Instant;

/// `half`'s slice conversion of `src` into `dst` (as `$t`'s bits), over rayon's pool in the
/// same chunks as lowprec's kernels when it has several threads (the crate itself runs on one).
macro_rules! half_slices {
    ($name:ident, $t:ty) => {
        fn $name(src: &[f32], dst: &mut [u16]) {
            const CHUNK: usize = 1 << 14;
            let one =
                |s: &[f32], d: &mut [u16]| d.reinterpret_cast_mut::<$t>().convert_from_f32_slice(s);
            if rayon::current_num_threads() > 1 && src.len() >= 1 << 17 {
                src.par_chunks(CHUNK)
                    .zip(dst.par_chunks_mut(CHUNK))
                    .for_each(|(s, d)| one(s, d));
            } else {
                one(src, dst);
            }
        }
    };
}
half_slices!(half_f16, half::f16);
half_slices!(half_bf16, half::bf16);

/// Arguments of `lowprec bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  lowprec bench -f fp8-e4m3 -f bf16 --scheme mxfp4 --scheme nvfp4 --no-accum
  lowprec bench -f fp4-e2m1 --scheme none --no-accum --n 1048576 --reps 3 --json")]
pub struct Args {
    /// Print one JSON array of records instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Elements per array.
    #[arg(long, default_value_t = 1 << 24)]
    pub n: usize,
    /// Timed repetitions per measurement (the best and the median are reported).
    #[arg(long, default_value_t = 7)]
    pub reps: usize,
    /// Formats (default: every preset).
    #[arg(long = "format", short = 'f')]
    pub formats: Vec<FloatFormat>,
    /// Block and integer schemes to time as `quantize` records (values, codes and scales)
    /// and as `encode` records (codes and scales only; integer codes in bytes up to 8 bits) (default: mx:fp8-e4m3,
    /// mx:fp6-e2m3, mx:fp4-e2m1, mxint8, nvfp4, int8:group=128, int4:group=128; `none` for
    /// none), on rows of 4096.
    #[arg(long = "scheme", short = 's')]
    pub schemes: Vec<BenchScheme>,
    /// Skip the accumulation and GEMM records (BF16 sums of a 64 × 4096 block, a
    /// 512 × 512 × 512 GEMM with FP8 inputs, a BF16 accumulator and FP32 promotion every 128).
    #[arg(long)]
    pub no_accum: bool,
    /// ggml types to time (`dequantize` records, against the copy rate of the binary32
    /// output; `quantize` records for types with a reference quantizer, against MXFP8's encode
    /// rate) (default: Q4_0, Q4_K, IQ4_XS, Q8_0; `none` for none), on rows of 4096.
    #[arg(long = "ggml")]
    pub ggml: Vec<BenchGgml>,
}

/// A `--ggml` of `lowprec bench`: a ggml type, or `none`.
#[derive(Clone, Copy, Debug)]
pub struct BenchGgml(Option<GgmlType>);

impl std::str::FromStr for BenchGgml {
    type Err = lowprec::Error;
    fn from_str(s: &str) -> lowprec::Result<BenchGgml> {
        Ok(BenchGgml(if s.eq_ignore_ascii_case("none") {
            None
        } else {
            Some(s.parse()?)
        }))
    }
}

/// The default ggml types of `lowprec bench`.
pub const BENCH_GGML: [GgmlType; 4] = [
    GgmlType::Q4_0,
    GgmlType::Q4_K,
    GgmlType::IQ4_XS,
    GgmlType::Q8_0,
];

/// A `--scheme` of `lowprec bench`: a scheme, or `none` (time no scheme).
#[derive(Clone, Debug)]
pub struct BenchScheme(Option<super::NamedScheme>);

impl std::str::FromStr for BenchScheme {
    type Err = lowprec::Error;
    fn from_str(s: &str) -> lowprec::Result<BenchScheme> {
        Ok(BenchScheme(if s.eq_ignore_ascii_case("none") {
            None
        } else {
            Some(s.parse()?)
        }))
    }
}

/// The default schemes of `lowprec bench`.
pub const BENCH_SCHEMES: [&str; 7] = [
    "mx:fp8-e4m3",
    "mx:fp6-e2m3",
    "mx:fp4-e2m1",
    "mxint8",
    "nvfp4",
    "int8:group=128",
    "int4:group=128",
];

/// One measurement.
#[derive(Serialize, Clone)]
pub struct Record {
    op: String,
    format: String,
    rounding: String,
    input: String,
    threads: usize,
    elements: usize,
    /// From the fastest repetition.
    elements_per_s: f64,
    /// From the median repetition.
    median_elements_per_s: f64,
    /// `preallocated` (into a caller's buffer) or `allocating` (a new Vec per call); for
    /// probes, `ordinary` or `non-temporal` stores.
    buffer: String,
    /// Whose code: `lowprec`, `half` (the crate's slice conversion) or `probe`.
    kernel: String,
    /// The streaming probe of the same traffic (`r4w1`: read 4 B, write 1 B per element …),
    /// where one applies.
    probe: Option<String>,
    /// The rate over the probe's rate with ordinary stores, same run and threads.
    ratio_to_probe: Option<f64>,
    /// The rate over the probe's rate with non-temporal stores.
    ratio_to_probe_nt: Option<f64>,
    /// For binary16 and bfloat16 encodes: the rate over `half`'s conversion's.
    ratio_to_half: Option<f64>,
}

impl Record {
    fn new(
        (op, format, rounding, input): (&str, &str, &str, &str),
        threads: usize,
        elements: usize,
        (best, med): (f64, f64),
    ) -> Record {
        Record {
            op: op.into(),
            format: format.into(),
            rounding: rounding.into(),
            input: input.into(),
            threads,
            elements,
            elements_per_s: elements as f64 / best,
            median_elements_per_s: elements as f64 / med,
            buffer: "preallocated".into(),
            kernel: "lowprec".into(),
            probe: None,
            ratio_to_probe: None,
            ratio_to_probe_nt: None,
            ratio_to_half: None,
        }
    }

    /// The probe of a record's traffic: binary32 in, and the bytes written per element.
    fn probe_name(&self, code_bytes: Option<usize>) -> Option<String> {
        if self.format.starts_with("gguf:") {
            // ggml types: dequantizing against the copy of the output, quantizing against
            // MXFP8's encode
            return match self.op.as_str() {
                "dequantize" => Some("copy".into()),
                "quantize" => Some("encode mx:fp8-e4m3".into()),
                _ => None,
            };
        }
        if self.input == "u16" && self.op.starts_with("op ") {
            // two 2-byte operands in, a 2-byte code out
            return Some("r2r2w2".into());
        }
        if self.input == "u8u8f32" && self.op.starts_with("op ") {
            // two 1-byte operands and a 4-byte addend in, a 4-byte code out
            return Some("r1r1r4w4".into());
        }
        if self.input == "u8" && self.op.starts_with("op ") {
            // two 1-byte operands in, a 1- or 2-byte code out
            let wide = self.format.ends_with("bf16") || self.format.ends_with("fp16");
            return Some(format!("r2w{}", if wide { 2 } else { 1 }));
        }
        if self.kernel == "probe" && self.format == "r4+r4w1" {
            // the two-pass limit against the one-pass one: the ceiling of a ratio to r4w1
            return Some("r4w1".into());
        }
        if self.input != "f32" || self.buffer != "preallocated" || self.kernel == "probe" {
            return None;
        }
        let w = match self.op.as_str() {
            "round" => 4,
            "encode" => code_bytes?,
            _ => return None,
        };
        Some(format!("r4w{w}"))
    }
}

/// Fill in every record's probe and ratios from the probe and `half` records of the same
/// thread count. `code_bytes` gives the bytes of an encode record's code (by format or scheme
/// name).
fn add_ratios(records: &mut [Record], code_bytes: impl Fn(&str) -> Option<usize>) {
    let rate = |rs: &[Record], op: &str, format: &str, buffer: &str, kernel: &str, t: usize| {
        rs.iter()
            .find(|r| {
                r.op == op
                    && r.format == format
                    && r.buffer == buffer
                    && r.kernel == kernel
                    && r.threads == t
            })
            .map(|r| r.elements_per_s)
    };
    let snapshot = records.to_vec();
    for r in records.iter_mut() {
        r.probe = r.probe_name(code_bytes(&r.format));
        if r.format.starts_with("gguf:") {
            let base = match r.op.as_str() {
                "dequantize" => rate(
                    &snapshot,
                    "copy",
                    "float32",
                    "preallocated",
                    "lowprec",
                    r.threads,
                ),
                _ => rate(
                    &snapshot,
                    "encode",
                    "mx:fp8-e4m3",
                    "preallocated",
                    "lowprec",
                    r.threads,
                ),
            };
            r.ratio_to_probe = base.map(|o| r.elements_per_s / o);
            continue;
        }
        if let Some(p) = &r.probe {
            let ord = rate(&snapshot, "probe", p, "ordinary", "probe", r.threads);
            let nt = rate(&snapshot, "probe", p, "non-temporal", "probe", r.threads);
            r.ratio_to_probe = ord.map(|o| r.elements_per_s / o);
            r.ratio_to_probe_nt = nt.map(|o| r.elements_per_s / o);
        }
        if r.kernel == "lowprec" && r.op == "encode" && r.input == "f32" && r.rounding == "rne" {
            let h = rate(
                &snapshot,
                "encode",
                &r.format,
                "preallocated",
                "half",
                r.threads,
            );
            r.ratio_to_half = h.map(|h| r.elements_per_s / h);
        }
    }
}

/// A streaming probe over two operand slices: `out[i] = f(x[i], y[i])` in the pieces (and
/// with the threads) of the kernels it is the yardstick of.
fn probe2<A: Copy + Sync, O: Send>(x: &[A], y: &[A], out: &mut [O], f: impl Fn(A, A) -> O + Sync) {
    out.par_chunks_mut(1 << 16)
        .zip(x.par_chunks(1 << 16).zip(y.par_chunks(1 << 16)))
        .for_each(|(o, (x, y))| {
            o.iter_mut()
                .zip(x.iter().zip(y))
                .for_each(|(o, (&x, &y))| *o = f(x, y))
        })
}

fn time(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2])
}

struct Bufs {
    x32: Vec<f32>,
    x64: Vec<f64>,
    y32: Vec<f32>,
    y64: Vec<f64>,
    c8: Vec<u8>,
    c16: Vec<u16>,
    c32: Vec<u32>,
    c64: Vec<u64>,
}

fn measure(
    a: &Args,
    formats: &[FloatFormat],
    schemes: &[(String, lowprec::scheme::Scheme)],
    threads: usize,
    b: &mut Bufs,
) -> Result<Vec<Record>> {
    let n = a.n;
    let mut out = Vec::new();
    let mut push = |op: &str, f: &str, r: &str, input: &str, buffer: &str, kernel: &str, t| {
        let mut rec = Record::new((op, f, r, input), threads, n, t);
        rec.buffer = buffer.into();
        rec.kernel = kernel.into();
        out.push(rec);
    };
    let t = time(a.reps, || b.y32.copy_from_slice(&b.x32));
    push("copy", "float32", "-", "f32", "preallocated", "lowprec", t);
    let t = time(a.reps, || b.y64.copy_from_slice(&b.x64));
    push("copy", "float64", "-", "f64", "preallocated", "lowprec", t);
    let mut probes = vec![];
    for (store, name) in [
        (Store::Ordinary, "ordinary"),
        (Store::NonTemporal, "non-temporal"),
    ] {
        let t = time(a.reps, || stream_probe(&b.x32, &mut b.c8, store));
        probes.push(("r4w1", name, t));
        let t = time(a.reps, || stream_probe(&b.x32, &mut b.c16, store));
        probes.push(("r4w2", name, t));
        let t = time(a.reps, || stream_probe(&b.x32, &mut b.c32, store));
        probes.push(("r4w4", name, t));
        // two passes: the tensor's largest magnitude, then r4w1 — the memory limit of an
        // encode whose scale depends on the whole tensor (NVFP4)
        let t = time(a.reps, || {
            std::hint::black_box(read_probe(&b.x32));
            stream_probe(&b.x32, &mut b.c8, store)
        });
        probes.push(("r4+r4w1", name, t));
    }
    let t = time(a.reps, || {
        std::hint::black_box(read_probe(&b.x32));
    });
    probes.push(("r4", "ordinary", t));
    // elementwise operations on 8-bit codes through a pair table, and the streaming probe of
    // the same bytes (read two 1-byte operands, write a 1- or 2-byte result). The operands:
    // the data's values as codes of the operand format (as a tensor stored in it: no NaN),
    // the second one element on; the probes read the data's low bytes.
    let (ca, cb): (Vec<u8>, Vec<u8>) = (
        b.x32.iter().map(|v| v.to_bits() as u8).collect(),
        b.x32.iter().map(|v| (v.to_bits() >> 8) as u8).collect(),
    );
    for (op, fa, fo) in [
        (Op::Add, FloatFormat::FP8_E4M3, FloatFormat::FP8_E4M3),
        (Op::Multiply, FloatFormat::FP8_E4M3, FloatFormat::FP8_E4M3),
        (Op::Add, FloatFormat::BINARY8P4SE, FloatFormat::BINARY8P3SE),
        (Op::Multiply, FloatFormat::FP8_E4M3, FloatFormat::BF16),
    ] {
        let mut xa = vec![0u8; n];
        encode_into(
            &fa,
            &b.x32,
            &mut xa,
            &RoundOptions::new(RoundingMode::NearestEven),
        )?;
        let xb: Vec<u8> = xa.iter().skip(1).chain(&xa[..1]).copied().collect();
        let built = std::time::Instant::now();
        let table = PairTable::new(op, fa, fa, fo, &Projection::default())?;
        let build_s = built.elapsed().as_secs_f64();
        let name = format!("{}→{}", fa.name(), fo.name());
        let t = if fo.bits() <= 8 {
            time(a.reps, || drop(table.apply_u8(&xa, &xb, &mut b.c8)))
        } else {
            time(a.reps, || drop(table.apply_u16(&xa, &xb, &mut b.c16)))
        };
        push(
            &format!("op {}", op.name().to_lowercase()),
            &name,
            "rne",
            "u8",
            "preallocated",
            "lowprec",
            t,
        );
        push(
            &format!("op {} table", op.name().to_lowercase()),
            &name,
            "rne",
            "-",
            "build",
            "lowprec",
            (build_s * n as f64 / 65536.0, build_s * n as f64 / 65536.0),
        );
    }
    let t = time(a.reps, || probe2(&ca, &cb, &mut b.c8, |x, y| x ^ y));
    push("probe", "r2w1", "-", "u8", "ordinary", "probe", t);
    // the floor of any method that reads each result from a table of every pair: one load
    // from a 64 KB table of result codes per element and nothing else (no status counts, no
    // specials): what a pair table can reach on these cores
    let lut: Vec<u8> = (0..1u32 << 16).map(|i| (i ^ (i >> 8)) as u8).collect();
    let t = time(a.reps, || {
        probe2(&ca, &cb, &mut b.c8, |x, y| {
            lut[usize::from(x) << 8 | usize::from(y)]
        })
    });
    push("probe", "lookup8", "-", "u8", "ordinary", "probe", t);
    let t = time(a.reps, || {
        probe2(&ca, &cb, &mut b.c16, |x, y| {
            u16::from(x) << 8 | u16::from(y)
        })
    });
    push("probe", "r2w2", "-", "u8", "ordinary", "probe", t);
    // bfloat16 Add and Multiply in binary32 lanes, and the probe of the same bytes (two
    // 2-byte operands in, a 2-byte result out)
    let (ha, hb): (Vec<u16>, Vec<u16>) = (
        b.x32.iter().map(|v| (v.to_bits() >> 16) as u16).collect(),
        // the second operand: the same data one element on (normal(0, 1) values)
        (b.x32.iter().skip(1).chain(&b.x32[..1]))
            .map(|v| (v.to_bits() >> 16) as u16)
            .collect(),
    );
    for op in [Op::Add, Op::Multiply] {
        let prj = Projection::default();
        let t = time(a.reps, || {
            drop(lowprec::ops::apply_bf16(op, &ha, &hb, &prj, &mut b.c16))
        });
        push(
            &format!("op {}", op.name().to_lowercase()),
            "bf16→bf16",
            "rne",
            "u16",
            "preallocated",
            "lowprec",
            t,
        );
    }
    let t = time(a.reps, || probe2(&ha, &hb, &mut b.c16, |x, y| x ^ y));
    push("probe", "r2r2w2", "-", "u16", "ordinary", "probe", t);
    // FMA of two fp8-e4m3 codes and a binary32 addend into binary32 in binary64 lanes, and
    // the probe of the same bytes (two 1-byte operands and a 4-byte addend in, 4 bytes out):
    // the data's values rounded to fp8-e4m3, the second operand one element on, the addend
    // two elements on
    let e4m3 = FloatFormat::FP8_E4M3;
    let mut fa = vec![0u8; n];
    encode_into(
        &e4m3,
        &b.x32,
        &mut fa,
        &RoundOptions::new(RoundingMode::NearestEven),
    )?;
    let fb: Vec<u8> = fa.iter().skip(1).chain(&fa[..1]).copied().collect();
    let fz: Vec<f32> = b.x32.iter().skip(2).chain(&b.x32[..2]).copied().collect();
    let prj = Projection::default();
    let fp32 = FloatFormat::FP32;
    let t = time(a.reps, || {
        drop(lowprec::ops::apply_fma_f32(
            e4m3, &fa, e4m3, &fb, &fz, fp32, &prj, &mut b.c32,
        ))
    });
    push(
        "op fma",
        "fp8-e4m3,fp8-e4m3,fp32→fp32",
        "rne",
        "u8u8f32",
        "preallocated",
        "lowprec",
        t,
    );
    let t = time(a.reps, || {
        b.c32
            .par_chunks_mut(1 << 16)
            .zip(fa.par_chunks(1 << 16))
            .zip(fb.par_chunks(1 << 16).zip(fz.par_chunks(1 << 16)))
            .for_each(|((o, x), (y, z))| {
                for (o, ((x, y), z)) in o.iter_mut().zip(x.iter().zip(y).zip(z)) {
                    *o = u32::from(*x ^ *y) ^ z.to_bits();
                }
            })
    });
    push("probe", "r1r1r4w4", "-", "u8u8f32", "ordinary", "probe", t);
    let half_f16 = time(a.reps, || half_f16(&b.x32, &mut b.c16));
    let half_bf16 = time(a.reps, || half_bf16(&b.x32, &mut b.c16));
    for (f, store, t) in probes {
        push("probe", f, "-", "f32", store, "probe", t);
    }
    push(
        "encode",
        "fp16",
        "rne",
        "f32",
        "preallocated",
        "half",
        half_f16,
    );
    push(
        "encode",
        "bf16",
        "rne",
        "f32",
        "preallocated",
        "half",
        half_bf16,
    );
    let mut rec = |op: &str, f: &str, r: &str, input: &str, buffer: &str, t: (f64, f64)| {
        push(op, f, r, input, buffer, "lowprec", t)
    };
    let headline = [
        FloatFormat::FP8_E4M3,
        FloatFormat::FP8_E5M2,
        FloatFormat::BF16,
        FloatFormat::FP16,
        FloatFormat::FP4_E2M1,
    ];
    // an unsigned format is timed on |x|, its domain (a negative input is invalid there)
    let mut abs32: Vec<f32> = vec![];
    for f in formats {
        let name = f.name();
        if !f.is_signed() && abs32.is_empty() {
            abs32 = b.x32.iter().map(|v| v.abs()).collect();
        }
        let x32: &[f32] = if f.is_signed() { &b.x32 } else { &abs32 };
        for mode in [RoundingMode::NearestEven, RoundingMode::Stochastic] {
            let o = RoundOptions::new(mode).seed(1);
            let r = mode.short_name();
            let t = if f.fits_f32() {
                time(a.reps, || drop(round_into(f, x32, &mut b.y32, &o)))
            } else {
                time(a.reps, || drop(round_into(f, x32, &mut b.y64, &o)))
            };
            rec("round", &name, r, "f32", "preallocated", t);
            let t = match f.bits() {
                0..=8 => time(a.reps, || drop(encode_into(f, x32, &mut b.c8, &o))),
                9..=16 => time(a.reps, || drop(encode_into(f, x32, &mut b.c16, &o))),
                17..=32 => time(a.reps, || drop(encode_into(f, x32, &mut b.c32, &o))),
                _ => time(a.reps, || drop(encode_into(f, x32, &mut b.c64, &o))),
            };
            rec("encode", &name, r, "f32", "preallocated", t);
            if headline.contains(f) {
                let t = time(a.reps, || drop(round_into(f, &b.x64, &mut b.y64, &o)));
                rec("round", &name, r, "f64", "preallocated", t);
                let t = match f.bits() {
                    0..=8 => time(a.reps, || drop(encode_into(f, &b.x64, &mut b.c8, &o))),
                    _ => time(a.reps, || drop(encode_into(f, &b.x64, &mut b.c16, &o))),
                };
                rec("encode", &name, r, "f64", "preallocated", t);
                if mode == RoundingMode::NearestEven {
                    let t = time(a.reps, || drop(lowprec::round_vec(f, &b.x32, &o)));
                    rec("round", &name, r, "f32", "allocating", t);
                }
            }
        }
    }
    for (name, scheme) in schemes {
        // rows of 4096 (the tensor a matrix of n / 4096 rows); partial edge blocks padded
        let row = 4096.min(n);
        let shape = [n / row, row];
        let len = shape[0] * shape[1];
        let scheme = scheme.padded();
        let mut enc = scheme.encoded(&shape)?;
        let small = scheme.code_bits() <= 8;
        let (x, y) = (&b.x32[..len], &mut b.y32[..len]);
        let (c8, c16) = (&mut b.c8[..len], &mut b.c16[..len]);
        let mut quantize = |values: bool| -> Result<(f64, f64)> {
            let v: &mut [f32] = if values { &mut y[..] } else { &mut [] };
            let mut err = None;
            let t = time(a.reps, || {
                let r = if small {
                    scheme.quantize_into(x, &shape, v, &mut c8[..], &mut enc)
                } else {
                    scheme.quantize_into(x, &shape, v, &mut c16[..], &mut enc)
                };
                if let Err(e) = r {
                    err = Some(e);
                }
            });
            match err {
                Some(e) => Err(e).with_context(|| format!("bench scheme {name}")),
                None => Ok(t),
            }
        };
        let t = quantize(true)?;
        rec("quantize", name, "rne", "f32", "preallocated", t);
        // the codes and scales alone (the quantization proper, as torchao's to_mx gives it)
        let t = quantize(false)?;
        rec("encode", name, "rne", "f32", "preallocated", t);
    }
    for ty in ggml_types(a) {
        let row = 4096.min(n) / 256 * 256;
        if row == 0 {
            break;
        }
        let len = n / row * row;
        let (x, y) = (&b.x32[..len], &mut b.y32[..len]);
        let bytes = len / ty.block_size() * ty.type_size();
        let mut q = vec![0u8; bytes];
        let name = format!("gguf:{}", ty.name());
        if ty.can_quantize() {
            let mut err = None;
            let t = time(a.reps, || {
                if let Err(e) = ggml::quantize(ty, x, &mut q) {
                    err = Some(e);
                }
            });
            if let Some(e) = err {
                return Err(e).context("bench ggml quantize");
            }
            rec("quantize", &name, "-", "f32", "preallocated", t);
        } else {
            // blocks of random bytes with every 16-bit word at offsets 0 and 2 of a block
            // (the scales of the K and IQ types) a small f16, 2^-7
            let mut s = 0x9e37_79b9_7f4a_7c15u64;
            for v in q.iter_mut() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *v = s as u8;
            }
            for blk in q.chunks_exact_mut(ty.type_size()) {
                blk[..4].copy_from_slice(&[0x00, 0x20, 0x00, 0x20]);
            }
        }
        let mut err = None;
        let t = time(a.reps, || {
            if let Err(e) = ggml::dequantize(ty, &q, &mut y[..]) {
                err = Some(e);
            }
        });
        if let Some(e) = err {
            return Err(e).context("bench ggml dequantize");
        }
        rec("dequantize", &name, "-", "f32", "preallocated", t);
    }
    if !a.no_accum {
        out.extend(measure_accum(a.reps, threads)?);
    }
    Ok(out)
}

/// The ggml types to time.
fn ggml_types(a: &Args) -> Vec<GgmlType> {
    if a.ggml.iter().any(|g| g.0.is_none()) {
        vec![]
    } else if a.ggml.is_empty() {
        BENCH_GGML.to_vec()
    } else {
        a.ggml.iter().filter_map(|g| g.0).collect()
    }
}

/// Accumulation records (rounded additions/s) and the GEMM record (multiply-adds/s).
fn measure_accum(reps: usize, threads: usize) -> Result<Vec<Record>> {
    use lowprec::accum::{accumulate_into, gemm_product, AccumOptions, GemmOptions, Method};
    let mut out = vec![];
    let record = |op: &str, f: &str, r: &str, elements: usize, t: (f64, f64)| {
        Record::new((op, f, r, "f64"), threads, elements, t)
    };
    let (rows, cols) = (64, 4096);
    let x = super::samples(super::Dist::Normal, rows * cols, 7);
    let mut sums = vec![0.0; rows];
    for (name, method, mode) in [
        ("sequential", Method::Sequential, RoundingMode::NearestEven),
        ("sequential", Method::Sequential, RoundingMode::Stochastic),
        ("pairwise", Method::Pairwise, RoundingMode::NearestEven),
        ("kahan", Method::Kahan, RoundingMode::NearestEven),
    ] {
        let o = AccumOptions::new(FloatFormat::BF16)
            .method(method)
            .rounding(RoundOptions::new(mode));
        let t = time(reps, || drop(accumulate_into(&x, cols, &mut sums, &o)));
        out.push(record(
            &format!("accumulate {name}"),
            "bf16",
            mode.short_name(),
            rows * cols,
            t,
        ));
    }
    let n = 512;
    let ab = super::samples(super::Dist::Normal, 2 * n * n, 8);
    let o = GemmOptions::new(FloatFormat::BF16)
        .input(lowprec::scheme::Scheme::cast(FloatFormat::FP8_E4M3))
        .chunk(128);
    let t = time(reps.min(3), || {
        drop(gemm_product(&ab[..n * n], &ab[n * n..], n, n, n, &o))
    });
    out.push(record(
        "gemm 512³ fp8 in, promote 128",
        "bf16",
        "rne",
        n * n * n,
        t,
    ));
    Ok(out)
}

/// Run `lowprec bench`.
pub fn run(a: &Args) -> Result<ExitCode> {
    let formats: Vec<FloatFormat> = if a.formats.is_empty() {
        PRESETS.iter().map(|p| p.format).collect()
    } else {
        a.formats.clone()
    };

    if a.n == 0 || a.reps == 0 {
        anyhow::bail!("--n and --reps must be at least 1");
    }
    // the inputs (binary32, binary64) and every output buffer
    super::check_memory(&format!("--n {}", a.n), a.n as u128, 39)?;
    let n = a.n;
    let x32 = super::normal_samples(n, 0x1234_5678);
    let mut b = Bufs {
        x64: x32.iter().map(|&v| v as f64).collect(),
        x32,
        y32: vec![1.0; n],
        y64: vec![1.0; n],
        c8: vec![1; n],
        c16: vec![1; n],
        c32: vec![1; n],
        c64: vec![1; n],
    };
    let schemes: Vec<(String, lowprec::scheme::Scheme)> = if a.schemes.iter().any(|s| s.0.is_none())
    {
        vec![]
    } else if a.schemes.is_empty() {
        BENCH_SCHEMES
            .iter()
            .map(|s| Ok((s.to_string(), s.parse()?)))
            .collect::<Result<_>>()?
    } else {
        a.schemes
            .iter()
            .flat_map(|s| &s.0)
            .map(|s| (s.name.clone(), s.scheme))
            .collect()
    };
    let all = std::thread::available_parallelism().map_or(1, |v| v.get());
    let mut records: Vec<Record> = Vec::new();
    for threads in [1, all] {
        if threads == all && all == 1 && !records.is_empty() {
            break;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("building the thread pool")?;
        records.extend(pool.install(|| measure(a, &formats, &schemes, threads, &mut b))?);
    }
    let code_bytes = |name: &str| -> Option<usize> {
        let bytes = |bits: u32| (bits as usize).div_ceil(8).next_power_of_two();
        if let Some(f) = formats.iter().find(|f| f.name() == name) {
            return Some(bytes(f.bits()));
        }
        if let Some((_, s)) = schemes.iter().find(|(n, _)| n == name) {
            return Some(bytes(s.code_bits()).min(2));
        }
        (name == "fp16" || name == "bf16").then_some(2)
    };
    add_ratios(&mut records, code_bytes);
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&records)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} elements (accumulate: 64 × 4096 additions; gemm: multiply-adds), normal(0,1) data (|x| for unsigned formats), simd level {}, best of {} (median in brackets), G elements/s; /probe and /nt: ratio to the streaming probe of the same bytes (ordinary and non-temporal stores), /half: to the `half` crate's conversion, same run and threads",
        n,
        lowprec::simd::active().name(),
        a.reps
    )?;
    let g = |r: &Record| {
        format!(
            "{:.2} ({:.2})",
            r.elements_per_s / 1e9,
            r.median_elements_per_s / 1e9
        )
    };
    let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let many_head = format!("{all} threads");
    let mut t = Table::new(&[
        "op", "format", "rounding", "input", "buffer", "kernel", "probe", "1 thread", "/probe",
        "/nt", "/half", &many_head, "/probe",
    ]);
    let ones: Vec<&Record> = records.iter().filter(|r| r.threads == 1).collect();
    for r in ones {
        let many = records.iter().find(|m| {
            m.threads == all
                && m.op == r.op
                && m.format == r.format
                && m.rounding == r.rounding
                && m.input == r.input
                && m.buffer == r.buffer
                && m.kernel == r.kernel
        });
        t.row(vec![
            r.op.clone(),
            r.format.clone(),
            r.rounding.clone(),
            r.input.clone(),
            r.buffer.clone(),
            r.kernel.clone(),
            r.probe.clone().unwrap_or("-".into()),
            g(r),
            ratio(r.ratio_to_probe),
            ratio(r.ratio_to_probe_nt),
            ratio(r.ratio_to_half),
            many.map_or("-".to_string(), g),
            ratio(many.and_then(|m| m.ratio_to_probe)),
        ]);
    }
    out!("{}", t.render())?;
    Ok(ExitCode::SUCCESS)
}
