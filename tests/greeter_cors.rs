//! CORS on the greeter's HTTP port, configured under `server.http.cors`:
//! off by default; when on, preflights get 204 with the allow headers and
//! every answer to an allowed origin (errors included) carries
//! `Access-Control-Allow-Origin` and `Vary: Origin`.

mod support;

use bytes::Bytes;
use http::Method;
use support::greeter::{config_text, start_from, TempDir};
use support::http::{send, Proto};

const PAGE: &str = "http://127.0.0.1:5173";

async fn start_with_cors() -> support::greeter::Running {
    let dir = TempDir::new("greeter-cors");
    let db = dir.0.join("greeter.db");
    let text = config_text(&db.display().to_string(), "1s", "1s").replacen(
        "  http: {",
        &format!("  http: {{ cors: {{ allowed_origins: [\"{PAGE}\"], max_age: 5m }}, "),
        1,
    );
    start_from(&text, dir, db).await
}

#[tokio::test]
async fn preflight_for_user_register_is_204_with_the_allow_headers() {
    let g = start_with_cors().await;
    let headers = [
        ("origin", PAGE),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", "content-type"),
    ];
    let r = send(
        Proto::H1,
        g.http,
        Method::OPTIONS,
        "/v1/users",
        &headers,
        Bytes::new(),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.headers["access-control-allow-origin"], PAGE);
    assert!(r.headers["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .contains("POST"));
    assert!(r.headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .contains("content-type"));
    assert_eq!(r.headers["access-control-max-age"], "300");
}

#[tokio::test]
async fn answers_to_an_allowed_origin_carry_allow_origin_vary_and_exposed_headers_errors_too() {
    let g = start_with_cors().await;
    let json = [("origin", PAGE), ("content-type", "application/json")];
    let body = Bytes::from_static(br#"{"username":"ann","password":"pw"}"#);
    for (method, path, body, want) in [
        (Method::POST, "/v1/users", body.clone(), 200),
        (Method::POST, "/v1/users", body, 409),
        (Method::GET, "/helloworld/ann", Bytes::new(), 200),
        (Method::GET, "/no/such/route", Bytes::new(), 404),
        (Method::GET, "/openapi.json", Bytes::new(), 200),
    ] {
        let r = send(Proto::H1, g.http, method, path, &json, body).await;
        assert_eq!(r.status, want, "{path}: {}", r.text());
        assert_eq!(r.headers["access-control-allow-origin"], PAGE, "{path}");
        assert_eq!(r.headers["vary"], "Origin", "{path}");
        let exposed = r.headers["access-control-expose-headers"].to_str().unwrap();
        for h in ["grpc-status", "grpc-message", "traceparent"] {
            assert!(exposed.contains(h), "{path}: {exposed}");
        }
    }
    let other = [("origin", "http://evil.example")];
    let r = send(
        Proto::H1,
        g.http,
        Method::GET,
        "/helloworld/ann",
        &other,
        Bytes::new(),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.headers.get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn without_cors_configured_no_answer_has_access_control_headers() {
    let g = support::greeter::start().await;
    let headers = [("origin", PAGE), ("access-control-request-method", "POST")];
    let r = send(
        Proto::H1,
        g.http,
        Method::OPTIONS,
        "/v1/users",
        &headers,
        Bytes::new(),
    )
    .await;
    assert_eq!(r.status, 405);
    assert!(r.headers.get("access-control-allow-origin").is_none());
    let r = send(
        Proto::H1,
        g.http,
        Method::GET,
        "/helloworld/a",
        &headers,
        Bytes::new(),
    )
    .await;
    assert!(r.headers.get("access-control-allow-origin").is_none());
}
