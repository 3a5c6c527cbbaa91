//! The answers given at the edge, before any route runs, over raw TCP (a
//! client library would refuse to send most of these): where handwire's
//! own code answers, the answer is shaped like the service's other errors
//! (Kratos JSON for the greeter, `{"error": …}` for token-auth), and a
//! path is quoted in a message at most 256 characters. The answers hyper
//! gives itself, before handwire sees a request, are listed last.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde_json::Value;
use support::http::{send, Proto};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `request` on a fresh connection; the status and the body.
async fn raw(addr: SocketAddr, request: Vec<u8>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&request).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 8192];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
            if let Some(head_end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&out[..head_end]).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse::<usize>().ok());
                if len.is_some_and(|n| out.len() >= head_end + 4 + n) {
                    break;
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no whole answer within 10 s");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:.200}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

fn get(path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n").into_bytes()
}

fn flood(fields: usize) -> String {
    (0..fields).map(|i| format!("X-Flood-{i}: v\r\n")).collect()
}

/// `GET path` over HTTP/2 with `fields` header fields: status and body.
async fn h2_flood(addr: SocketAddr, path: &str, fields: usize) -> (u16, String) {
    let names: Vec<String> = (0..fields).map(|i| format!("x-flood-{i}")).collect();
    let headers: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    let reply = send(Proto::H2, addr, Method::GET, path, &headers, Bytes::new()).await;
    let body = String::from_utf8_lossy(&reply.body).into_owned();
    (reply.status.as_u16(), body)
}

fn kratos(body: &str, code: u16, reason: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:.300}"));
    assert_eq!(v["code"], code, "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    assert_eq!(v["metadata"], serde_json::json!({}), "{v}");
    v["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_greeters_edge_answers_414_431_413_are_kratos_json_and_echo_a_path_at_most_256_characters(
) {
    let g = support::greeter::start().await;
    let long = format!("/{}", "a".repeat(4 * 1024));

    let (status, body) = raw(g.http, get(&long, "")).await;
    assert_eq!(status, 404);
    let message = kratos(&body, 404, "NOT_FOUND");
    assert!(
        message.chars().count() < 300,
        "{} chars",
        message.chars().count()
    );
    assert!(
        message.starts_with(&format!("no route for GET /{}", "a".repeat(255))),
        "{message:.300}"
    );
    assert!(message.ends_with("… (4097 bytes)"), "{message:.300}");

    // Past 8 KiB of request target (below hyper's own 64 KiB limit): 414,
    // in the same Kratos shape.
    let longer = format!("/{}", "a".repeat(60 * 1024));
    let (status, body) = raw(g.http, get(&longer, "")).await;
    assert_eq!(status, 414);
    let message = kratos(&body, 414, "URI_TOO_LONG");
    assert_eq!(
        message,
        "request target too long: 61441 bytes (at most 8192)"
    );

    let (status, body) = raw(
        g.http,
        format!("DELETE {long} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").into_bytes(),
    )
    .await;
    assert!(status == 404 || status == 405, "{status}");
    assert!(body.len() < 600, "{} bytes echoed", body.len());

    // A short path is quoted whole.
    let (_, body) = raw(g.http, get("/nowhere", "")).await;
    assert_eq!(kratos(&body, 404, "NOT_FOUND"), "no route for GET /nowhere");

    // Past the engine's 100 fields: on HTTP/2, where hyper has no count.
    let (status, body) = h2_flood(g.http, "/helloworld/a", 120).await;
    assert_eq!(status, 431);
    let message = kratos(&body, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE");
    assert_eq!(message, "too many header fields: 120 (at most 100)");

    let big = format!("X-Big: {}\r\n", "b".repeat(100 * 1024));
    let (status, body) = raw(g.http, get("/helloworld/a", &big)).await;
    assert_eq!(status, 431);
    let message = kratos(&body, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE");
    assert!(
        message.starts_with("header fields too large: "),
        "{message}"
    );

    let post = "POST /v1/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 99999999\r\n\r\n";
    let (status, body) = raw(g.http, post.as_bytes().to_vec()).await;
    assert_eq!(status, 413);
    kratos(&body, 413, "PAYLOAD_TOO_LARGE");

    // Still serving.
    let (status, _) = raw(g.http, get("/helloworld/a", "")).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn token_auths_edge_answers_414_431_are_its_error_json_and_echo_a_path_at_most_256_characters(
) {
    let s = support::token_auth::start().await;
    let long = format!("/{}", "a".repeat(4 * 1024));
    let (status, body) = raw(s.addr, get(&long, "")).await;
    assert_eq!(status, 404);
    let v: Value = serde_json::from_str(&body).unwrap();
    let message = v["error"].as_str().unwrap();
    assert!(
        message.ends_with("… (4097 bytes)") && message.len() < 400,
        "{message:.300}"
    );

    let longer = format!("/{}", "a".repeat(60 * 1024));
    let (status, body) = raw(s.addr, get(&longer, "")).await;
    assert_eq!(status, 414);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["error"],
        "request target too long: 61441 bytes (at most 8192)"
    );

    let (status, body) = h2_flood(s.addr, "/x", 120).await;
    assert_eq!(status, 431);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"], "too many header fields: 120 (at most 100)");
}

/// What hyper answers itself, before handwire sees a request, with an empty
/// body: these remain (docs/reliability.md lists them).
#[tokio::test]
async fn hypers_own_answers_remain_for_what_it_cannot_parse() {
    let g = support::greeter::start().await;
    let cases = [
        (get(&format!("/{}", "a".repeat(100 * 1024)), ""), 414),
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (get("/helloworld/a", "Bad Header: x\r\n"), 400),
        (
            get(
                "/helloworld/a",
                &format!("X-Big: {}\r\n", "b".repeat(200 * 1024)),
            ),
            431,
        ),
        // hyper's own count on HTTP/1: more than 100 fields.
        (get("/helloworld/a", &flood(120)), 431),
        (get("/helloworld/a", &flood(1200)), 431),
    ];
    for (request, status) in cases {
        let (got, body) = raw(g.http, request).await;
        assert_eq!((got, body.as_str()), (status, ""));
    }
}
