//! Percent/form decoding of arbitrary text never panics, and decoding text
//! without escapes returns it unchanged.
#![no_main]
use handwire::web::{form_pairs, percent_decode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let decoded = percent_decode(text);
    if !text.contains('%') {
        assert_eq!(decoded, text);
    }
    for (k, v) in form_pairs(text) {
        let _ = (k.len(), v.len());
    }
});
