#![no_main]

// The properties live in rnic_proto::fuzzing, where `cargo test` runs them too.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rnic_proto::fuzzing::cm_frames(data);
});
