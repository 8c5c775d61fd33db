//! libFuzzer target: arbitrary bytes into the instance parser (`Instance::from_json`), then the
//! round trip through `to_json` and the derivation of the round problem (`fuzz/checks.rs`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_parse(data));
