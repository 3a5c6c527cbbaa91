//! The greeter's HTTP transport on the core engine, with Kratos-shaped JSON
//! errors: `{"code":<http status>,"reason":"…","message":"…","metadata":{}}`.
//!
//! | route                 | use case          |
//! |-----------------------|-------------------|
//! | `GET /helloworld/:name` | SayHello        |
//! | `POST /v1/users`      | UserRegister (JSON `{username,password}`) |
//! | `GET /v1/users`       | UserList          |

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::biz::{self, GreeterUsecase, UserUsecase};
use crate::web::bind;
use crate::web::chain::{handler, Context};
use crate::web::engine::{self, App, Engine};
use crate::web::health::{self, Probe};
use crate::web::metrics::Metrics;
use crate::web::middleware;
use crate::web::router::InsertError;

/// The Kratos error body, fields in Kratos' order.
#[derive(Serialize)]
pub struct ErrorBody<'a> {
    /// The HTTP status.
    pub code: u16,
    /// UPPER_SNAKE reason clients can match on.
    pub reason: &'a str,
    /// Human-readable message.
    pub message: &'a str,
    /// Always empty here.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// The Kratos error body for `status`.
pub fn error_body<'a>(status: StatusCode, reason: &'a str, message: &'a str) -> ErrorBody<'a> {
    ErrorBody {
        code: status.as_u16(),
        reason,
        message,
        metadata: serde_json::Map::new(),
    }
}

fn fail(c: &mut Context, status: StatusCode, reason: &str, message: &str) {
    c.json(status, &error_body(status, reason, message));
    c.abort();
}

fn fail_biz(c: &mut Context, e: &biz::Error) {
    let status = match e {
        biz::Error::InvalidArgument { .. } => StatusCode::BAD_REQUEST,
        biz::Error::AlreadyExists { .. } => StatusCode::CONFLICT,
        biz::Error::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        biz::Error::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
    };
    fail(c, status, e.reason(), e.message());
}

/// The 504 answer when `server.http.timeout` passes while the body is still
/// being read (the engine answers before any chain runs, and closes the
/// connection).
fn body_timeout_response(_: Duration) -> http::Response<crate::types::Body> {
    let status = StatusCode::GATEWAY_TIMEOUT;
    let body = error_body(
        status,
        "DEADLINE_EXCEEDED",
        "request body not received within server.http.timeout",
    );
    engine::json_response(status, &body)
}

/// With `server.http.timeout` off, a body still has the engine's default
/// time; past it the answer is 408, in the same Kratos shape.
fn body_408_response(limit: Duration) -> http::Response<crate::types::Body> {
    let status = StatusCode::REQUEST_TIMEOUT;
    let message = format!("request body not received within {limit:?}");
    engine::json_response(status, &error_body(status, "REQUEST_TIMEOUT", &message))
}

/// The 504 answer when `server.http.timeout` passes.
fn timeout_response(c: &mut Context) {
    fail(
        c,
        StatusCode::GATEWAY_TIMEOUT,
        "DEADLINE_EXCEEDED",
        "request exceeded server.http.timeout",
    );
}

#[derive(Deserialize)]
struct RegisterBody {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

#[derive(Serialize)]
struct WireUser<'a> {
    username: &'a str,
    password: &'a str,
}

#[derive(Serialize)]
struct UserList<'a> {
    users: Vec<WireUser<'a>>,
}

/// Builds the HTTP app; `timeout` (if any) answers 504 past it, counted
/// from the request head, so reading the body counts against it too.
pub fn app(
    greeter: Arc<GreeterUsecase>,
    users: Arc<UserUsecase>,
    timeout: Option<Duration>,
    metrics: &Arc<Metrics>,
    ready: Probe,
) -> Result<Arc<App>, InsertError> {
    let mut e = Engine::new();
    e.metrics(metrics)?;
    health::register(&mut e, ready)?;
    if let Some(d) = timeout {
        e.body_timeout(d);
        e.on_body_timeout(body_timeout_response);
        e.use_middleware(middleware::timeout(d, timeout_response));
    } else {
        e.on_body_timeout(body_408_response);
    }
    e.no_route(vec![handler(|c| {
        Box::pin(async move {
            let message = format!("no route for {} {}", c.method(), c.path());
            fail(c, StatusCode::NOT_FOUND, "NOT_FOUND", &message);
        })
    })]);
    e.no_method(vec![handler(|c| {
        Box::pin(async move {
            let message = format!("method {} not allowed on {}", c.method(), c.path());
            fail(
                c,
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                &message,
            );
        })
    })]);

    e.get(
        "/helloworld/:name",
        handler(move |c| {
            let greeter = greeter.clone();
            Box::pin(async move {
                let name = c.param("name").unwrap_or_default().to_owned();
                match greeter.say_hello(&name).await {
                    Ok(message) => c.json(StatusCode::OK, &json!({ "message": message })),
                    Err(err) => fail_biz(c, &err),
                }
            })
        }),
    )?;

    let u = users.clone();
    e.post(
        "/v1/users",
        handler(move |c| {
            let users = u.clone();
            Box::pin(async move {
                let body: RegisterBody = match bind::json_object(c.body()) {
                    Ok(b) => b,
                    Err(err) => {
                        let message = format!(
                            "request body must be a JSON object {{username, password}}: {err}"
                        );
                        return fail(c, StatusCode::BAD_REQUEST, "CODEC", &message);
                    }
                };
                match users.register(&body.username, &body.password).await {
                    Ok(_) => c.json(StatusCode::OK, &json!({ "result": "success" })),
                    Err(err) => fail_biz(c, &err),
                }
            })
        }),
    )?;

    e.get(
        "/v1/users",
        handler(move |c| {
            let users = users.clone();
            Box::pin(async move {
                match users.list().await {
                    Ok(list) => {
                        let wire: Vec<WireUser<'_>> = list
                            .iter()
                            .map(|u| WireUser {
                                username: &u.username,
                                password: &u.password,
                            })
                            .collect();
                        c.json(StatusCode::OK, &UserList { users: wire });
                    }
                    Err(err) => fail_biz(c, &err),
                }
            })
        }),
    )?;
    Ok(e.build())
}
