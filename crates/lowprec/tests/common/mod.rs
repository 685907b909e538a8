//! Shared helpers of the integration tests: the golden-vector files and a seeded generator.
#![allow(dead_code)]

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
