//! The multipart parser gets arbitrary bodies: errors are fine, panics are not.
#![no_main]
use handwire::web::bind::multipart;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = multipart::parse(data, "B0uNd");
    if let Some((b, body)) = data.split_first() {
        let boundary = format!("{b:02x}");
        let _ = multipart::parse(body, &boundary);
    }
});
