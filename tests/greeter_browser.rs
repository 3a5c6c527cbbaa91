//! The greeter as browsers meet it, with clients no one here wrote:
//! Connect's gRPC-Web transport (npm, stubs generated from proto/) in Node
//! and in headless Chromium on another origin, Swagger UI (swagger-ui-dist)
//! on another origin loading `/openapi.json` and "Try it out" on SayHello
//! and UserRegister, plus grpc-web-text spoken by hand. The npm tools come
//! from `tests/web/setup.sh`; skipped with a reason without node/npm or
//! Chromium unless `HANDWIRE_BROWSER_REQUIRED=1`.

mod support;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use handwire::protocol::grpc::Frame;
use handwire::services::greeter::api::{HelloReply, HelloRequest};
use http::Method;
use prost::Message;
use support::greeter::{config_text, start_from, Running, TempDir};
use support::http::{send, Proto};

/// A greeter whose CORS allows pages of `http://127.0.0.1:<page_port>`.
async fn start_for_page(page_port: u16) -> Running {
    let dir = TempDir::new("greeter-browser");
    let db = dir.0.join("greeter.db");
    let origin = format!("http://127.0.0.1:{page_port}");
    let text = config_text(&db.display().to_string(), "1s", "1s").replacen(
        "  http: {",
        &format!("  http: {{ cors: {{ allowed_origins: [\"{origin}\"] }}, "),
        1,
    );
    start_from(&text, dir, db).await
}

fn assert_grpc_web_results(got: &serde_json::Value, user: &str) {
    assert_eq!(got["sayHello"], "Hello web", "{got}");
    assert_eq!(got["register"], "success", "{got}");
    let dup = &got["duplicate"];
    assert_eq!(dup["code"], 6, "ALREADY_EXISTS: {got}");
    assert_eq!(dup["reason"], "USER_ALREADY_EXISTS", "{got}");
    assert_eq!(dup["domain"], "helloworld.v1.Greeter", "{got}");
    let bad = &got["invalid"];
    assert_eq!(bad["code"], 3, "INVALID_ARGUMENT: {got}");
    assert_eq!(bad["reason"], "USERNAME_EMPTY", "{got}");
    assert_eq!(bad["fields"], serde_json::json!(["username"]), "{got}");
    assert_eq!(got["users"], serde_json::json!([user]), "{got}");
    assert_eq!(got["watch"], 1, "Health/Watch streams SERVING first: {got}");
}

#[tokio::test]
async fn connect_grpc_web_client_in_node_calls_unary_and_streaming_methods() {
    let Some(dir) = support::web::tools("grpc_web_in_node", false) else {
        return;
    };
    let g = start_for_page(support::servers::free_port()).await;
    let url = format!("http://{}", g.http);
    let got = support::web::node(dir, vec!["grpc-web-node.mjs".into(), url, "ann".into()]).await;
    assert_grpc_web_results(&got, "ann");
}

#[tokio::test]
async fn connect_grpc_web_client_in_chromium_on_another_origin_passes_cors() {
    let Some(dir) = support::web::tools("grpc_web_in_chromium", true) else {
        return;
    };
    let port = support::servers::free_port();
    let g = start_for_page(port).await;
    let url = format!("http://{}", g.http);
    let args = ["browser.mjs", "grpc-web", &url, &port.to_string(), "bob"];
    let got = support::web::node(dir, args.map(String::from).to_vec()).await;
    assert_eq!(got["origin"], format!("http://127.0.0.1:{port}"));
    assert_grpc_web_results(&got, "bob");
}

#[tokio::test]
async fn swagger_ui_on_another_origin_loads_the_spec_and_try_it_out_succeeds() {
    let Some(dir) = support::web::tools("swagger_ui_in_chromium", true) else {
        return;
    };
    let port = support::servers::free_port();
    let g = start_for_page(port).await;
    let url = format!("http://{}", g.http);
    let args = ["browser.mjs", "swagger", &url, &port.to_string(), "cyd"];
    let got = support::web::node(dir, args.map(String::from).to_vec()).await;
    assert!(
        got["title"]
            .as_str()
            .unwrap()
            .starts_with("helloworld.v1.Greeter"),
        "{got}"
    );
    assert_eq!(got["sayHello"]["status"], "200", "{got}");
    assert!(
        got["sayHello"]["body"]
            .as_str()
            .unwrap()
            .contains("Hello swagger"),
        "{got}"
    );
    assert_eq!(got["userRegister"]["status"], "200", "{got}");
    assert!(
        got["userRegister"]["body"]
            .as_str()
            .unwrap()
            .contains("success"),
        "{got}"
    );
}

/// grpc-web-text by hand: the request framed and base64-encoded, the
/// answer base64 segments holding the reply frame and then the trailer
/// frame (flag 0x80, `grpc-status:0`).
#[tokio::test]
async fn grpc_web_text_unary_call_answers_the_reply_then_trailers_as_the_last_frame() {
    let g = support::greeter::start().await;
    let framed = Frame::encode_message(&HelloRequest {
        name: "text".into(),
    });
    let body = Bytes::from(STANDARD.encode(&framed));
    let headers = [
        ("content-type", "application/grpc-web-text"),
        ("x-grpc-web", "1"),
    ];
    let path = "/helloworld.v1.Greeter/SayHello";
    let r = send(Proto::H1, g.http, Method::POST, path, &headers, body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/grpc-web-text+proto");
    // Decode segment by segment (each frame is padded on its own).
    let mut raw = Vec::new();
    let mut rest = r.body.as_ref();
    while !rest.is_empty() {
        let end = rest
            .windows(1)
            .enumerate()
            .find(|(i, w)| w[0] == b'=' && (i + 1 == rest.len() || rest[i + 1] != b'='))
            .map_or(rest.len(), |(i, _)| i + 1);
        let end = end.div_ceil(4) * 4;
        raw.extend(STANDARD.decode(&rest[..end.min(rest.len())]).unwrap());
        rest = &rest[end.min(rest.len())..];
    }
    assert_eq!(raw[0], 0, "a message frame first");
    let len = u32::from_be_bytes([raw[1], raw[2], raw[3], raw[4]]) as usize;
    let reply = HelloReply::decode(&raw[5..5 + len]).unwrap();
    assert_eq!(reply.message, "Hello text");
    let trailer = &raw[5 + len..];
    assert_eq!(trailer[0], 0x80, "the trailers are the last frame");
    assert_eq!(&trailer[5..], b"grpc-status:0\r\n");
}

/// An error before any message is one trailer frame holding the status
/// and its details, binary mode.
#[tokio::test]
async fn grpc_web_error_is_a_lone_trailer_frame_with_the_status_details() {
    let g = support::greeter::start().await;
    let framed = Frame::encode_message(&HelloRequest {
        name: String::new(),
    });
    let headers = [("content-type", "application/grpc-web+proto")];
    let path = "/helloworld.v1.Greeter/SayHello";
    let r = send(Proto::H1, g.http, Method::POST, path, &headers, framed).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body[0], 0x80, "{:?}", r.body);
    let text = String::from_utf8_lossy(&r.body[5..]).into_owned();
    assert!(text.contains("grpc-status:3\r\n"), "{text}");
    assert!(
        text.contains("grpc-message:name must not be empty\r\n"),
        "{text}"
    );
    assert!(text.contains("grpc-status-details-bin:"), "{text}");
}
