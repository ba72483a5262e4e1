//! `cargo fuzz run decode`: see `nrt_core_fuzz::decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nrt_core_fuzz::decode(data));
