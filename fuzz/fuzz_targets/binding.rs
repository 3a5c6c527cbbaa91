//! JSON, form, multipart and query binding of router-demo's `Login` (and the
//! strict JSON policy): errors are fine, panics are not, and whatever binds
//! has both required fields.
#![no_main]
use bytes::Bytes;
use handwire::services::router_demo::Login;
use handwire::web::bind::{bind, json_object};
use handwire::web::Context;
use handwire::web::PathParams;
use libfuzzer_sys::fuzz_target;

const CONTENT_TYPES: [&str; 5] = [
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=B",
    "multipart/form-data",
    "text/plain",
];

fuzz_target!(|data: &[u8]| {
    let _ = json_object::<serde_json::Value>(data);
    let Some((selector, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[*selector as usize % CONTENT_TYPES.len()];
    let method = if selector & 0x80 != 0 { "GET" } else { "POST" };
    // Part of the input becomes the query string when it is a valid URI.
    let query = String::from_utf8_lossy(&body[..body.len().min(64)])
        .chars()
        .filter(|c| c.is_ascii_graphic() && *c != '#')
        .collect::<String>();
    let uri = format!("/login?{query}");
    let Ok(req) = http::Request::builder()
        .method(method)
        .uri(uri.as_str())
        .header("content-type", content_type)
        .body(())
    else {
        return;
    };
    let (parts, ()) = req.into_parts();
    let c = Context::new(
        parts,
        Bytes::copy_from_slice(body),
        "127.0.0.1:9".parse().expect("addr"),
        std::time::Instant::now(),
        PathParams::none(),
        Vec::new().into(),
    );
    if let Ok(login) = bind::<Login>(&c) {
        assert!(!login.username.is_empty() && !login.password.is_empty());
    }
});
