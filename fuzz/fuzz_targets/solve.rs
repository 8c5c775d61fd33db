//! libFuzzer target: bytes decoded into a small instance (structure-aware, `fuzz/checks.rs`),
//! validated, solved by the fast DP, the dense DP and brute force, each answer verified and the
//! answers compared.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_solve(data));
