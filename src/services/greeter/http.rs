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

use super::biz::{self, Usecases};
use crate::types::BoxFuture;
use crate::web::bind;
use crate::web::chain::{handler, Context, Handler};
use crate::web::engine::{self, App, Engine};
use crate::web::middleware;
use crate::web::reply::{fallible, ErrorResponse};
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

/// A Kratos error as a value, what the route handlers return with `?`
/// ([`fallible`]); it answers in the Kratos shape.
#[derive(Debug)]
pub struct KratosError {
    status: StatusCode,
    reason: &'static str,
    message: String,
}

impl From<biz::Error> for KratosError {
    fn from(e: biz::Error) -> KratosError {
        let status = match e {
            biz::Error::InvalidArgument { .. } => StatusCode::BAD_REQUEST,
            biz::Error::AlreadyExists { .. } => StatusCode::CONFLICT,
            biz::Error::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            biz::Error::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        };
        KratosError {
            status,
            reason: e.reason(),
            message: e.message().to_owned(),
        }
    }
}

impl ErrorResponse for KratosError {
    fn respond(self, c: &mut Context) {
        fail(c, self.status, self.reason, &self.message);
    }
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
pub fn routes(
    usecases: &Arc<Usecases>,
    timeout: Option<Duration>,
) -> Result<Arc<App>, InsertError> {
    let mut e = Engine::new();
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

    e.get("/helloworld/:name", route(usecases, "say_hello", say_hello))?;
    e.post("/v1/users", route(usecases, "register", register))?;
    e.get("/v1/users", route(usecases, "list_users", list_users))?;
    Ok(e.build())
}

type Reply = Result<(), KratosError>;
type Route = for<'a> fn(Arc<Usecases>, &'a mut Context) -> BoxFuture<'a, Reply>;

/// `f` as a handler called `name`, over the shared use cases.
fn route(usecases: &Arc<Usecases>, name: &'static str, f: Route) -> Handler {
    let usecases = Arc::clone(usecases);
    fallible(name, move |c| f(Arc::clone(&usecases), c))
}

/// `GET /helloworld/:name` → `{"message":"Hello <name>"}`.
fn say_hello(usecases: Arc<Usecases>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let name = c.param("name").unwrap_or_default().to_owned();
        let message = usecases.greeter.say_hello(&name).await?;
        c.json(StatusCode::OK, &json!({ "message": message }));
        Ok(())
    })
}

/// `POST /v1/users` `{username, password}` → `{"result":"success"}`.
fn register(usecases: Arc<Usecases>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let body: RegisterBody = bind::json_object(c.body()).map_err(|err| KratosError {
            status: StatusCode::BAD_REQUEST,
            reason: "CODEC",
            message: format!("request body must be a JSON object {{username, password}}: {err}"),
        })?;
        usecases
            .users
            .register(&body.username, &body.password)
            .await?;
        c.json(StatusCode::OK, &json!({ "result": "success" }));
        Ok(())
    })
}

/// `GET /v1/users` → `{"users":[{username, password}, …]}`.
fn list_users(usecases: Arc<Usecases>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let list = usecases.users.list().await?;
        let wire: Vec<WireUser<'_>> = list
            .iter()
            .map(|u| WireUser {
                username: &u.username,
                password: &u.password,
            })
            .collect();
        c.json(StatusCode::OK, &UserList { users: wire });
        Ok(())
    })
}
