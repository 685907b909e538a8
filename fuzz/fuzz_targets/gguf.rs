#![no_main]
//! The `gguf_reader` property of crates/lowprec/tests/fuzz_checks on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/lowprec/tests/fuzz_checks/mod.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::gguf_reader(data));
