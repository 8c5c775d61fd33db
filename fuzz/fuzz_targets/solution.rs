//! libFuzzer target: arbitrary bytes as a solution document for a shipped instance, through
//! `Solution::from_json` and `verify` (`fuzz/checks.rs`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_solution(data));
