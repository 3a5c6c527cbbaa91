//! gRPC-Web is a transport of the one gRPC server path: a call on the
//! greeter's HTTP port runs through the same code as a call on the gRPC
//! port, under the gRPC time-out, with its method's metrics, gzip both ways
//! and the same 4 MiB message limit on the decoded bytes of a text body
//! (docs/reliability.md, "gRPC-Web"). The process cap on long-lived
//! streams is proved in `tests/governor.rs`, the access line in
//! `tests/greeter_grpc.rs`.

mod support;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use handwire::protocol::grpc::Frame;
use handwire::services::greeter::api::{
    HelloReply, HelloRequest, UserListRequest, UserListResponse, UserRegisterRequest,
};
use http::{HeaderMap, Method, StatusCode};
use prost::Message;
use support::greeter::{start, start_with, user_rows, WriteLock};
use support::http::{send, Proto};

const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";
const REGISTER: &str = "/helloworld.v1.Greeter/UserRegister";
const USER_LIST: &str = "/helloworld.v1.Greeter/UserList";

/// A gRPC-Web answer, its body split into frames.
struct WebReply {
    status: StatusCode,
    headers: HeaderMap,
    /// The message frames: (flag byte, payload).
    messages: Vec<(u8, Bytes)>,
    /// The trailer frame's lines (`grpc-status:0\r\n…`).
    trailers: String,
}

impl WebReply {
    fn grpc_status(&self) -> &str {
        self.trailers
            .lines()
            .find_map(|l| l.strip_prefix("grpc-status:"))
            .unwrap_or_else(|| panic!("no grpc-status in {:?}", self.trailers))
    }
}

/// A binary-mode gRPC-Web call over HTTP/1.1 with `headers` besides the
/// content-type; `body` is the framed request.
async fn web_call(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: Bytes) -> WebReply {
    let mut all = vec![("content-type", "application/grpc-web+proto")];
    all.extend_from_slice(headers);
    let r = send(Proto::H1, addr, Method::POST, path, &all, body).await;
    let raw = if r.headers["content-type"] == "application/grpc-web-text+proto" {
        decode_segments(&r.body)
    } else {
        r.body.to_vec()
    };
    let (messages, trailers) = split_frames(&raw);
    WebReply {
        status: r.status,
        headers: r.headers,
        messages,
        trailers,
    }
}

/// Base64 segments, each padded on its own, decoded one after the other.
fn decode_segments(text: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut start = 0;
    for end in (4..=text.len()).step_by(4) {
        if text[end - 1] == b'=' || end == text.len() {
            raw.extend(STANDARD.decode(&text[start..end]).unwrap());
            start = end;
        }
    }
    raw
}

fn split_frames(mut raw: &[u8]) -> (Vec<(u8, Bytes)>, String) {
    let mut messages = Vec::new();
    while raw.len() >= 5 {
        let flag = raw[0];
        let len = u32::from_be_bytes([raw[1], raw[2], raw[3], raw[4]]) as usize;
        let payload = &raw[5..5 + len];
        if flag & 0x80 != 0 {
            let trailers = String::from_utf8(payload.to_vec()).unwrap();
            assert_eq!(5 + len, raw.len(), "the trailer frame is the last");
            return (messages, trailers);
        }
        messages.push((flag, Bytes::copy_from_slice(payload)));
        raw = &raw[5 + len..];
    }
    panic!("no trailer frame; the answer was {raw:?}");
}

fn framed(message: &impl Message) -> Bytes {
    Frame::encode_message(message)
}

/// The HTTP time-out (100 ms) is far below the gRPC one (5 s): a gRPC-Web
/// call runs under the gRPC time-out and its own `grpc-timeout`, so a
/// write held up by the store for 300 ms is answered by its commit, and a
/// deadline is a gRPC status in the trailer frame, never the HTTP port's
/// JSON 504; a call answered DEADLINE_EXCEEDED stored nothing.
#[tokio::test]
async fn a_grpc_web_call_runs_under_the_grpc_deadline_and_is_stored_exactly_when_answered_ok() {
    let g = start_with("100ms", "5s").await;
    let register = |username: &str, timeout: Option<&'static str>| {
        let body = framed(&UserRegisterRequest {
            username: username.into(),
            password: "secret1".into(),
        });
        let headers: Vec<(&str, &str)> = timeout.map(|t| ("grpc-timeout", t)).into_iter().collect();
        let http = g.http;
        tokio::spawn(async move { web_call(http, REGISTER, &headers, body).await })
    };
    let lock = WriteLock::take(&g.db);
    let waits = register("waits", None);
    let hurries = register("hurries", Some("100m"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(lock);
    let waits = waits.await.unwrap();
    assert_eq!(waits.status, StatusCode::OK);
    assert_eq!(waits.headers["content-type"], "application/grpc-web+proto");
    assert_eq!(waits.grpc_status(), "0", "{}", waits.trailers);
    let hurries = hurries.await.unwrap();
    assert_eq!(hurries.status, StatusCode::OK);
    assert_eq!(hurries.grpc_status(), "4", "{}", hurries.trailers);
    let stored: Vec<String> = user_rows(&g.db).into_iter().map(|r| r.1).collect();
    assert_eq!(stored, ["waits"]);
}

/// gRPC-Web calls are counted in their method's series with their gRPC
/// code, not as HTTP requests no route matched.
#[tokio::test]
async fn a_grpc_web_call_is_counted_in_its_methods_metrics_with_its_grpc_code() {
    let g = start().await;
    let ok = web_call(
        g.http,
        SAY_HELLO,
        &[],
        framed(&HelloRequest { name: "m".into() }),
    )
    .await;
    assert_eq!(ok.grpc_status(), "0");
    let bad = web_call(
        g.http,
        SAY_HELLO,
        &[],
        framed(&HelloRequest {
            name: String::new(),
        }),
    )
    .await;
    assert_eq!(bad.grpc_status(), "3");
    let metrics = send(
        Proto::H1,
        g.http,
        Method::GET,
        "/metrics",
        &[],
        Bytes::new(),
    )
    .await;
    let text = metrics.text();
    let series = |code: &str, reason: &str| {
        format!(
            "server_requests_code_total{{kind=\"grpc\",operation=\"{SAY_HELLO}\",code=\"{code}\",reason=\"{reason}\"}} 1\n"
        )
    };
    assert!(text.contains(&series("0", "")), "{text}");
    assert!(text.contains(&series("3", "INVALID_ARGUMENT")), "{text}");
    assert!(
        !text.contains("kind=\"http\",operation=\"unmatched\""),
        "no gRPC-Web call is an unmatched HTTP request: {text}"
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `grpc-encoding: gzip` works on gRPC-Web as on gRPC: a compressed
/// request is inflated, and a reply over 1 KiB to a client that accepts
/// gzip comes compressed, its frame flagged.
#[tokio::test]
async fn grpc_web_takes_gzip_both_ways() {
    let g = start().await;
    let hello = HelloRequest { name: "zip".into() };
    let compressed = gzip(&hello.encode_to_vec());
    let mut body = vec![1];
    body.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
    body.extend_from_slice(&compressed);
    let r = web_call(
        g.http,
        SAY_HELLO,
        &[("grpc-encoding", "gzip")],
        Bytes::from(body),
    )
    .await;
    assert_eq!(r.grpc_status(), "0", "{}", r.trailers);
    let reply = HelloReply::decode(&r.messages[0].1[..]).unwrap();
    assert_eq!(reply.message, "Hello zip");

    for i in 0..30 {
        let req = UserRegisterRequest {
            username: format!("user-{i:02}-with-a-longish-name"),
            password: "secret1".into(),
        };
        assert_eq!(
            web_call(g.http, REGISTER, &[], framed(&req))
                .await
                .grpc_status(),
            "0"
        );
    }
    let headers = [("grpc-accept-encoding", "gzip")];
    let list = framed(&UserListRequest::default());
    let r = web_call(g.http, USER_LIST, &headers, list).await;
    assert_eq!(r.grpc_status(), "0", "{}", r.trailers);
    assert_eq!(r.headers["grpc-encoding"], "gzip");
    let (flag, payload) = &r.messages[0];
    assert_eq!(*flag, 1, "the reply frame is flagged compressed");
    let mut inflated = Vec::new();
    GzDecoder::new(&payload[..])
        .read_to_end(&mut inflated)
        .unwrap();
    let users = UserListResponse::decode(&inflated[..]).unwrap();
    assert_eq!(users.users.len(), 30);
}

/// A grpc-web-text body is limited by its decoded size: a message of
/// exactly 4 MiB (5.3 MiB of base64) passes the framing and is refused by
/// its method's rule (the name is too long), as on the gRPC port; one byte
/// more is RESOURCE_EXHAUSTED from its prefix.
#[tokio::test]
async fn a_grpc_web_text_body_is_limited_by_its_decoded_size_as_on_every_transport() {
    let g = start().await;
    let limit = 4 << 20;
    for (size, code) in [(limit, "3"), (limit + 1, "8")] {
        let mut frame = vec![0];
        frame.extend_from_slice(&(size as u32).to_be_bytes());
        // A HelloRequest whose name fills the message: field 1, length.
        let mut message = vec![0x0a];
        let name_len = size - 1 - varint_len(size);
        let mut n = name_len;
        while n >= 0x80 {
            message.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        message.push(n as u8);
        message.resize(size, b'a');
        frame.extend_from_slice(&message);
        let text = STANDARD.encode(&frame);
        let headers = [("content-type", "application/grpc-web-text")];
        // Over h2c: an HTTP/1.1 answer before the body is read ends with
        // the connection, as any early answer to an upload does.
        let r = send(Proto::H2, g.http, Method::POST, SAY_HELLO, &headers, text).await;
        assert_eq!(r.status, StatusCode::OK, "{size}: {}", r.text());
        let (_, trailers) = split_frames(&decode_segments(&r.body));
        assert!(
            trailers.contains(&format!("grpc-status:{code}\r\n")),
            "{size}: {trailers}"
        );
    }
}

/// Bytes of the varint length prefix of a name filling a `size`-byte
/// message (tag byte, prefix, name).
fn varint_len(size: usize) -> usize {
    (1..=5).find(|&k| (size - 1 - k) < 1 << (7 * k)).unwrap()
}

/// A text body that is not base64 is INTERNAL, in the trailer frame.
#[tokio::test]
async fn a_grpc_web_text_body_that_is_not_base64_is_internal() {
    let g = start().await;
    let headers = [("content-type", "application/grpc-web-text")];
    let r = send(Proto::H1, g.http, Method::POST, SAY_HELLO, &headers, "!!!!").await;
    assert_eq!(r.status, StatusCode::OK);
    let (_, trailers) = split_frames(&decode_segments(&r.body));
    assert!(trailers.contains("grpc-status:13\r\n"), "{trailers}");
    assert!(trailers.contains("not base64"), "{trailers}");
}
