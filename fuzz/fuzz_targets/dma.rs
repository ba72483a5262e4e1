//! `cargo fuzz run dma`: see `nrt_core_fuzz::dma`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nrt_core_fuzz::dma(data));
