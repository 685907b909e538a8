//! Shared helpers of the integration tests: the golden-vector files and a seeded generator.
#![allow(dead_code)]

pub mod rat;

use std::path::PathBuf;

/// The folder of golden vectors: `$LOWPREC_VECTORS`, else `../shared/vectors` beside the
/// repository. Missing vectors fail the test (they are part of the test suite).
pub fn vectors_dir() -> PathBuf {
    if let Ok(d) = std::env::var("LOWPREC_VECTORS") {
        return PathBuf::from(d);
    }
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors");
    assert!(
        d.join("rounding.csv").exists(),
        "golden vectors not found at {}; set LOWPREC_VECTORS to the folder holding rounding.csv",
        d.display()
    );
    d
}

/// The rows of a CSV file (header checked, then split on commas).
pub fn csv(name: &str, header: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(vectors_dir().join(name)).expect("read vectors");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header), "{name}: unexpected header");
    lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// `0x…` as u64.
pub fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
}

/// A small deterministic generator (SplitMix64) for test inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

use lowprec::FloatFormat;

/// Test inputs for `f`: random bit patterns, log-uniform magnitudes across and beyond the
/// format's range, values next to the format's ties and neighbours, and the edges
/// (zeros, infinities, NaNs, max, max + ulp/2, subnormal boundaries).
pub fn inputs_f64(f: &FloatFormat, n: usize, seed: u64) -> Vec<f64> {
    let mut r = Rng(seed);
    let lo = f.min_positive().log2() - 3.0;
    let hi = f.max_finite().log2().min(1020.0) + 3.0;
    let max_code = f.max_code();
    let mut out = Vec::with_capacity(n);
    let edges = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f.max_finite(),
        f.max_finite() * (1.0 + f.epsilon() / 4.0),
        f.max_finite() * (1.0 + f.epsilon() / 2.0),
        f.min_positive() / 2.0,
        f.min_positive() * 0.75,
        f.min_normal(),
        f.min_normal() - f.min_positive() / 2.0,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
    ];
    while out.len() < n {
        let pick = r.below(100);
        let x = if pick < 20 {
            f64::from_bits(r.next_u64())
        } else if pick < 55 {
            let e = lo + (hi - lo) * r.unit();
            let m = 1.0 + r.unit();
            let v = m * 2f64.powf(e.floor());
            if r.below(2) == 0 {
                v
            } else {
                -v
            }
        } else if pick < 90 {
            // a code, its neighbour, their midpoint, and a few binary64 ulps around them
            let c = r.below(max_code.min(1 << 40) + 1);
            let c = if f.bits() > 40 {
                r.next_u64() & max_code
            } else {
                c
            };
            let a = f.decode(c);
            let b = f.decode(c.wrapping_add(1) & max_code);
            if !a.is_finite() || !b.is_finite() {
                continue;
            }
            let base = match r.below(3) {
                0 => a,
                _ => a / 2.0 + b / 2.0,
            };
            let k = r.below(7) as i64 - 3;
            let v = f64::from_bits((base.to_bits() as i64 + k) as u64);
            if v.is_nan() {
                base
            } else {
                v
            }
        } else {
            let e = edges[r.below(edges.len() as u64) as usize];
            let k = r.below(5) as i64 - 2;
            let v = if e.is_finite() && e != 0.0 {
                f64::from_bits((e.to_bits() as i64 + k) as u64)
            } else {
                e
            };
            if r.below(2) == 0 {
                v
            } else {
                -v
            }
        };
        out.push(x);
    }
    out
}

/// Binary32 test inputs: the binary64 inputs narrowed, and random binary32 bit patterns.
pub fn inputs_f32(f: &FloatFormat, n: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng(seed ^ 0xf32);
    inputs_f64(f, n, seed)
        .into_iter()
        .map(|x| {
            if r.below(4) == 0 {
                f32::from_bits(r.next_u64() as u32)
            } else {
                x as f32
            }
        })
        .collect()
}

/// Every preset plus custom formats that exercise the corners of the format model.
pub fn all_formats() -> Vec<FloatFormat> {
    let mut v: Vec<FloatFormat> = lowprec::format::PRESETS.iter().map(|p| p.format).collect();
    for s in [
        "e3m4",
        "e5m3b11:fn",
        "e2m2:none",
        "ue5m2:fn",
        "e6m1",
        "ue4m0b7:fn:nozero",
        "e1m5:none",
        "e4m3b7:fnuz",
        "e8m3",
        "e9m6b200",
        "e11m10",
        "e3m0:fn",
        "e7m12:fnuz",
        "ue3m3:fn",
        // as wide as binary32: the ordinals of a format without zero pass 2^32
        "ue9m23b0:fn:nozero",
        "ue9m23b100:fn",
    ] {
        v.push(FloatFormat::parse(s).unwrap_or_else(|e| panic!("{s}: {e}")));
    }
    v
}

/// Whether two values are the same bits, or both NaN.
pub fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}
