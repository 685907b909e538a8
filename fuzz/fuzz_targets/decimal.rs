#![no_main]
//! The `decimal` property of crates/lowprec/tests/fuzz_checks on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/lowprec/tests/fuzz_checks/mod.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::decimal(data));
