#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| runread_fuzz_targets::opencode_view(data));
