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

/// Issue: with CORS configured, answers to requests without `Origin` had no
/// `Vary: Origin`, so a shared cache could hand one to a cross-origin page.
#[tokio::test]
async fn with_cors_configured_answers_without_origin_carry_vary_origin_too() {
    let g = start_with_cors().await;
    for path in ["/helloworld/ann", "/no/such/route"] {
        let r = send(Proto::H1, g.http, Method::GET, path, &[], Bytes::new()).await;
        assert_eq!(r.headers["vary"], "Origin", "{path}");
        assert!(r.headers.get("access-control-allow-origin").is_none());
    }
}

/// Issue: a cross-origin "simple" POST (`Content-Type: text/plain`, no
/// preflight) of a JSON body registered a user. A body not declared JSON is
/// refused as Kratos refuses a Content-Type it has no codec for: 400 `CODEC`,
/// and nothing is stored.
#[tokio::test]
async fn a_body_not_declared_json_is_refused_400_codec_and_nothing_is_stored() {
    let g = start_with_cors().await;
    let body = Bytes::from_static(br#"{"username":"mallory","password":"pw"}"#);
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut headers = vec![("origin", "http://evil.example")];
        headers.extend(content_type.map(|t| ("content-type", t)));
        let r = send(
            Proto::H1,
            g.http,
            Method::POST,
            "/v1/users",
            &headers,
            body.clone(),
        )
        .await;
        assert_eq!(r.status, 400, "{content_type:?}: {}", r.text());
        let got: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(got["reason"], "CODEC", "{got}");
    }
    let json = [("content-type", "application/json; charset=utf-8")];
    let r = send(
        Proto::H1,
        g.http,
        Method::GET,
        "/v1/users",
        &json,
        Bytes::new(),
    )
    .await;
    assert!(!r.text().contains("mallory"), "{}", r.text());
    let r = send(Proto::H1, g.http, Method::POST, "/v1/users", &json, body).await;
    assert_eq!(r.status, 200, "{}", r.text());
}
