//! The HTTP gateway on arbitrary input, in two halves split at the first
//! blank line. Before it: up to 8 path templates, each parsed and, if
//! accepted, matched against the others' text and its own (a template of
//! literals only must match itself), ranked and printed. After it: one
//! request, `METHOD /path?query` then the body, routed and mapped to the
//! input message on `proto/testdata/edges/v1/edges.proto` (enums, oneofs,
//! nested and repeated fields, JSON names). Nothing may panic; a request
//! the gateway accepts must encode a message that decodes again.
#![no_main]
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use handwire::protocol::gateway::{split_path, Template};
use handwire::protocol::gateway::{Found, Gateway};
use handwire::protocol::grpc::descriptor::{parse_files, GOOGLE_API_FILES};
use handwire::protocol::grpc::UnaryMethod;
use libfuzzer_sys::fuzz_target;

const EDGES: &str = include_str!("../../proto/testdata/edges/v1/edges.proto");

fn gateway() -> &'static Gateway {
    static GATEWAY: OnceLock<Gateway> = OnceLock::new();
    GATEWAY.get_or_init(|| {
        let [a, h] = GOOGLE_API_FILES;
        let files = parse_files(&[("edges/v1/edges.proto", EDGES), a, h]).expect("edges.proto");
        // Never called: the target stops at the message the handler would get.
        let unused: UnaryMethod = Arc::new(|b: Bytes| Box::pin(async move { Ok(b) }));
        let methods = [("Search", unused.clone()), ("Rename", unused)];
        Gateway::new(&files, "edges.v1.Edges", &methods).expect("edges gateway")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (templates, request) = text.split_once("\n\n").unwrap_or((text, ""));
    let lines: Vec<&str> = templates.lines().take(8).collect();
    for line in &lines {
        let Ok(t) = Template::parse(line) else {
            continue;
        };
        let _ = (t.precedence_key(), t.walk(), t.openapi_path());
        for other in &lines {
            let _ = t.matches(&split_path(other, |v| t.verb() == Some(v)));
        }
        if !line.contains(['{', '*']) {
            let own = split_path(line, |v| t.verb() == Some(v));
            assert!(
                matches!(t.matches(&own), Some(Ok(_))),
                "{line:?} does not match itself"
            );
        }
    }
    let (head, body) = request.split_once('\n').unwrap_or((request, ""));
    let Some((method, target)) = head.split_once(' ') else {
        return;
    };
    let Ok(method) = http::Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let g = gateway();
    if let Found::Route(route, Ok(values)) = g.find(&method, path) {
        assert_eq!(route.http_method, method, "a route of another method");
        if let Ok(bytes) = g.input_message(route, body.as_bytes(), query, values) {
            g.pool()
                .decode(&route.input, &bytes)
                .expect("an accepted request decodes again");
        }
    }
});
