//! The greeter's HTTP transport on the core engine: the routes are not
//! written here but derived at start-up from the `google.api.http` options
//! of greeter.proto by the [`Gateway`] (see docs/proto-http.md), which
//! answers every request the engine has no route for; errors are Kratos
//! JSON, `{"code":<http status>,"reason":"…","message":"…","metadata":{}}`.
//! `GET /openapi.json` serves the OpenAPI document of the same routes. A
//! request whose content-type is gRPC-Web (`application/grpc-web[-text]`)
//! never reaches this engine: the port's [`web::Port`] hands it to the gRPC
//! server, so browsers reach both sides.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use super::config::Config;
use crate::ops::health::Probe;
use crate::ops::metrics::Metrics;
use crate::protocol::gateway::{self, error_body, fail, Gateway};
use crate::protocol::grpc::{web, Server};
use crate::server::Service;
use crate::web::app::json_response;
use crate::web::chain::{handler, Context};
use crate::web::engine::Engine;
use crate::web::middleware;
use crate::web::router::InsertError;
use crate::web::DebugPages;

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
    json_response(status, &body)
}

/// With `server.http.timeout` off, a body still has the engine's default
/// time; past it the answer is 408, in the same Kratos shape.
fn body_408_response(limit: Duration) -> http::Response<crate::types::Body> {
    let status = StatusCode::REQUEST_TIMEOUT;
    let message = format!("request body not received within {limit:?}");
    json_response(status, &error_body(status, "REQUEST_TIMEOUT", &message))
}

/// The answers the engine gives before any chain (431, 413, 400 for an
/// unreadable body), in Kratos JSON like the greeter's other errors.
fn edge_response(
    status: StatusCode,
    reason: &str,
    message: &str,
) -> http::Response<crate::types::Body> {
    json_response(status, &error_body(status, reason, message))
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

/// Builds the HTTP port over `gateway`, gRPC-Web calls going to
/// `grpc_web` ([`web::Port`]); `openapi` is the document served at
/// `GET /openapi.json`. From `config`: `server.http.timeout` (if any)
/// answers 504 past it, counted from the request head, so reading the body
/// counts against it too; `server.http.cors`, if any, runs between the
/// logger and recovery, so every answer (a 404, a 413, a 500 from a panic)
/// carries its headers; with `log.access: false` the logger is left out.
/// `pages`: the debug pages (`--debug-pages`), if asked for.
pub fn app(
    gateway: Arc<Gateway>,
    openapi: Arc<serde_json::Value>,
    config: &Config,
    metrics: &Arc<Metrics>,
    ready: Probe,
    pages: Option<DebugPages>,
    grpc_web: Server,
) -> Result<Arc<dyn Service>, InsertError> {
    let timeout = config.server.http.timeout;
    let cors = config.cors().map(Arc::new);
    let mut e = Engine::bare();
    if config.log.access {
        e.use_middleware(middleware::logger());
    }
    if let Some(cors) = &cors {
        e.use_middleware(cors.clone().middleware());
    }
    e.use_middleware(middleware::recovery());
    e.metrics(metrics)?;
    crate::web::operations::health::register(&mut e, ready)?;
    e.on_edge_error(edge_response);
    if let Some(d) = timeout {
        e.body_timeout(d);
        e.on_body_timeout(body_timeout_response);
        e.use_middleware(middleware::timeout(d, timeout_response));
    } else {
        e.on_body_timeout(body_408_response);
    }
    e.get(
        "/openapi.json",
        handler(move |c| {
            let openapi = openapi.clone();
            Box::pin(async move { c.json(StatusCode::OK, &*openapi) })
        }),
    )?;
    e.no_method(vec![handler(|c| {
        Box::pin(async move { gateway::method_not_allowed(c) })
    })]);
    // Every other request: the routes derived from greeter.proto, with
    // their own 404 and 405.
    e.no_route(vec![handler(move |c| {
        let gateway = gateway.clone();
        Box::pin(async move { gateway.serve(c).await })
    })]);
    if let Some(pages) = pages {
        e.debug_pages(pages);
    }
    Ok(Arc::new(web::Port::new(e.build(), grpc_web, cors)))
}
