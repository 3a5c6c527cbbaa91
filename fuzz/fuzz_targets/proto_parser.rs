//! The small .proto parser behind reflection: arbitrary text gives a
//! descriptor or an error, never a panic.
#![no_main]
use handwire::protocol::grpc::descriptor::parse_proto;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_proto("fuzz.proto", text);
    }
});
