#![no_main]
//! The `format_name` property of crates/lowprec/tests/fuzz_checks on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/lowprec/tests/fuzz_checks/mod.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::format_name(data));
