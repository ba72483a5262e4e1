//! `cargo fuzz run harvest`: see `nrt_core_fuzz::harvest`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nrt_core_fuzz::harvest(data));
