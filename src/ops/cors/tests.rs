use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::*;
use crate::types::Body;
use crate::web::chain::handler;
use crate::web::engine::Engine;

fn config(origins: &[&str]) -> CorsConfig {
    serde_yaml::from_str(&format!("allowed_origins: {origins:?}")).unwrap()
}

fn app_of(config: &CorsConfig) -> Arc<crate::web::app::App> {
    let mut e = Engine::bare();
    e.use_middleware(Arc::new(Cors::new(config).unwrap()).middleware());
    e.post(
        "/v1/users",
        handler(|c| Box::pin(async move { c.string(StatusCode::CREATED, "made") })),
    )
    .unwrap();
    e.build()
}

async fn send(
    app: &crate::web::app::App,
    method: &str,
    headers: &[(&str, &str)],
) -> Response<Body> {
    let mut req = Request::builder().method(method).uri("/v1/users");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(Bytes::new())).unwrap();
    app.handle(req, "127.0.0.1:1".parse::<std::net::SocketAddr>().unwrap())
        .await
}

fn header<'a>(resp: &'a Response<Body>, name: &str) -> Option<&'a str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

const SWAGGER: &str = "http://127.0.0.1:5555";

#[tokio::test]
async fn preflight_from_an_allowed_origin_is_204_with_the_allow_headers() {
    let app = app_of(&config(&[SWAGGER]));
    let resp = send(
        &app,
        "OPTIONS",
        &[
            ("origin", SWAGGER),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "Content-Type, X-Grpc-Web"),
        ],
    )
    .await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(&resp, "access-control-allow-origin"), Some(SWAGGER));
    assert_eq!(
        header(&resp, "access-control-allow-methods"),
        Some("GET, POST, PUT, PATCH, DELETE")
    );
    assert!(header(&resp, "access-control-allow-headers")
        .unwrap()
        .contains("x-grpc-web"));
    assert_eq!(header(&resp, "access-control-max-age"), Some("600"));
    assert!(header(&resp, "access-control-allow-credentials").is_none());
    assert!(header(&resp, "vary").unwrap().starts_with("Origin"));
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(body.is_empty());
}

#[tokio::test]
async fn preflight_from_another_origin_or_for_an_unlisted_header_gets_no_allow_origin() {
    let app = app_of(&config(&[SWAGGER]));
    let cases: [&[(&str, &str)]; 3] = [
        &[
            ("origin", "http://evil.example"),
            ("access-control-request-method", "POST"),
        ],
        &[
            ("origin", SWAGGER),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "x-secret"),
        ],
        &[
            ("origin", SWAGGER),
            ("access-control-request-method", "TRACE"),
        ],
    ];
    for headers in cases {
        let resp = send(&app, "OPTIONS", headers).await;
        assert_eq!(resp.status(), StatusCode::NO_CONTENT, "{headers:?}");
        assert!(
            header(&resp, "access-control-allow-origin").is_none(),
            "{headers:?}"
        );
    }
}

#[tokio::test]
async fn an_actual_request_gets_allow_origin_vary_and_the_exposed_grpc_and_trace_headers() {
    let app = app_of(&config(&[SWAGGER]));
    let resp = send(&app, "POST", &[("origin", SWAGGER)]).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(header(&resp, "access-control-allow-origin"), Some(SWAGGER));
    assert_eq!(header(&resp, "vary"), Some("Origin"));
    let exposed = header(&resp, "access-control-expose-headers").unwrap();
    for h in [
        "grpc-status",
        "grpc-message",
        "grpc-status-details-bin",
        "traceparent",
    ] {
        assert!(exposed.contains(h), "{exposed}");
    }
    let other = send(&app, "POST", &[("origin", "http://evil.example")]).await;
    assert_eq!(other.status(), StatusCode::CREATED);
    assert!(header(&other, "access-control-allow-origin").is_none());
    assert_eq!(header(&other, "vary"), Some("Origin"));
    let no_origin = send(&app, "POST", &[]).await;
    assert!(header(&no_origin, "access-control-allow-origin").is_none());
}

#[tokio::test]
async fn any_origin_is_answered_with_a_star_and_credentials_echo_the_origin() {
    let app = app_of(&config(&["*"]));
    let resp = send(&app, "POST", &[("origin", "http://x.example")]).await;
    assert_eq!(header(&resp, "access-control-allow-origin"), Some("*"));

    let mut with_credentials = config(&[SWAGGER]);
    with_credentials.allow_credentials = true;
    let app = app_of(&with_credentials);
    let resp = send(&app, "POST", &[("origin", SWAGGER)]).await;
    assert_eq!(header(&resp, "access-control-allow-origin"), Some(SWAGGER));
    assert_eq!(
        header(&resp, "access-control-allow-credentials"),
        Some("true")
    );
}

#[test]
fn bad_settings_are_errors_naming_the_key() {
    let mut star_with_credentials = config(&["*"]);
    star_with_credentials.allow_credentials = true;
    let mut bad_method = config(&[SWAGGER]);
    bad_method.allowed_methods = vec!["GE T".into()];
    let cases = [
        (config(&[]), "allowed_origins"),
        (config(&["https://app.example.com/"]), "allowed_origins"),
        (config(&["app.example.com"]), "allowed_origins"),
        (star_with_credentials, "allow_credentials"),
        (bad_method, "allowed_methods"),
    ];
    for (config, key) in cases {
        let err = Cors::new(&config).unwrap_err();
        assert_eq!(err.key, key, "{config:?}: {err}");
    }
    assert!(Cors::new(&config(&[
        "https://app.example.com:8443",
        "http://[::1]:5173"
    ]))
    .is_ok());
}
