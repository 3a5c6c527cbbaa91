//! The chain's side of the operations in [`crate::ops`]: each is a thin
//! [`Handler`] over a policy that knows nothing of the chain.
//!
//! - [`Cors::middleware`]: answers preflights, marks answers for browsers;
//! - [`PerClient::middleware`]: a per-client limit, `Retry-After` past it;
//! - [`Metrics::handler`]: `GET /metrics`;
//! - [`health`]: `GET /healthz` and `GET /readyz`.
//!
//! A student of the chain may skip this file: it uses `next()` and
//! `abort()` as any middleware does.

use std::sync::Arc;
use std::time::Duration;

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    ACCESS_CONTROL_REQUEST_METHOD, CACHE_CONTROL, ORIGIN, RETRY_AFTER, VARY,
};
use http::{HeaderName, HeaderValue, Method, StatusCode};
use serde_json::json;

use crate::ops::cors::Cors;
use crate::ops::health::{Probe, READY_TIMEOUT};
use crate::ops::metrics::{Metrics, CONTENT_TYPE};
use crate::ops::ratelimit::{retry_after_secs, PerClient};
use crate::types::BoxFuture;
use crate::web::chain::{named, Context, Handler};
use crate::web::engine::Engine;
use crate::web::router::InsertError;

impl Cors {
    /// The middleware, named `cors` in the route table.
    pub fn middleware(self: Arc<Self>) -> Handler {
        named("cors", move |c| {
            let cors = self.clone();
            Box::pin(async move { cors_handle(&cors, c).await })
        })
    }
}

async fn cors_handle(cors: &Cors, c: &mut Context) {
    let origin = c.header(ORIGIN.as_str()).map(str::to_owned);
    // A preflight is an OPTIONS from an origin naming the method it will
    // send: only then is that header looked up.
    let requested = match (&origin, c.method() == Method::OPTIONS) {
        (Some(_), true) => c
            .header(ACCESS_CONTROL_REQUEST_METHOD.as_str())
            .map(str::to_owned),
        _ => None,
    };
    if let (Some(origin), Some(method)) = (&origin, requested) {
        let headers = c
            .header(ACCESS_CONTROL_REQUEST_HEADERS.as_str())
            .unwrap_or("")
            .to_owned();
        c.set_header(
            VARY,
            HeaderValue::from_static(
                "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
            ),
        );
        c.status(StatusCode::NO_CONTENT);
        if let Some(allowed) = cors.allow_origin(origin) {
            if cors.preflight_allows(&method, &headers) {
                let mut grant = vec![
                    (ACCESS_CONTROL_ALLOW_ORIGIN, allowed),
                    (ACCESS_CONTROL_ALLOW_METHODS, &cors.allow_methods),
                    (ACCESS_CONTROL_ALLOW_HEADERS, &cors.allow_headers),
                    (ACCESS_CONTROL_MAX_AGE, &cors.max_age),
                ];
                if cors.credentials {
                    grant.push((ACCESS_CONTROL_ALLOW_CREDENTIALS, "true"));
                }
                set_all(c, grant);
            }
        }
        return c.abort();
    }
    c.next().await;
    set_all(c, cors.answer_headers(origin.as_deref()));
}

/// Sets each header. The values are checked settings and an `Origin` the
/// request carried, so none should fail; one that does is a 500 naming
/// the header, never a grant silently left out.
fn set_all(c: &mut Context, headers: Vec<(HeaderName, &str)>) {
    for (name, value) in headers {
        if c.try_set_header(name.clone(), value).is_err() {
            let error = format!("CORS: the {name} value is not header text");
            c.json(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({ "error": error }),
            );
            return;
        }
    }
}

impl PerClient {
    /// The limit as chain middleware: a request within it runs the rest of
    /// the chain; one past it gets `Retry-After` (whole seconds, at least 1)
    /// and the answer `refused` writes, and the chain is aborted.
    pub fn middleware(self: &Arc<Self>, refused: fn(&mut Context, Duration)) -> Handler {
        let limit = Arc::clone(self);
        named("ratelimit", move |c| {
            let limit = Arc::clone(&limit);
            Box::pin(async move {
                match limit.admit(c.client_ip()) {
                    Ok(()) => c.next().await,
                    Err(wait) => {
                        c.set_header(RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
                        refused(c, wait);
                        c.abort();
                    }
                }
            })
        })
    }
}

impl Metrics {
    /// The `GET /metrics` handler.
    pub fn handler(self: &Arc<Self>) -> Handler {
        let metrics = self.clone();
        named("metrics", move |c: &mut Context| -> BoxFuture<'_, ()> {
            let text = metrics.render();
            Box::pin(async move {
                c.data(StatusCode::OK, CONTENT_TYPE, text);
            })
        })
    }
}

/// Routes `GET /healthz` and `GET /readyz` ([`crate::ops::health`]).
pub mod health {
    use super::*;

    /// Register `GET /healthz` and `GET /readyz` (the latter asking `ready`).
    pub fn register(e: &mut Engine, ready: Probe) -> Result<(), InsertError> {
        e.get(
            "/healthz",
            named("healthz", |c| {
                Box::pin(async move {
                    c.set_header(CACHE_CONTROL, HeaderValue::from_static("no-store"));
                    c.json(StatusCode::OK, &json!({ "status": "ok" }));
                })
            }),
        )?;
        e.get(
            "/readyz",
            named("readyz", move |c| {
                let check = ready();
                Box::pin(async move {
                    let outcome = tokio::time::timeout(READY_TIMEOUT, check)
                        .await
                        .unwrap_or_else(|_| {
                            Err(format!(
                                "readiness check took longer than {READY_TIMEOUT:?}"
                            ))
                        });
                    c.set_header(CACHE_CONTROL, HeaderValue::from_static("no-store"));
                    match outcome {
                        Ok(()) => c.json(StatusCode::OK, &json!({ "status": "ready" })),
                        Err(error) => c.json(
                            StatusCode::SERVICE_UNAVAILABLE,
                            &json!({ "status": "not ready", "error": error }),
                        ),
                    }
                })
            }),
        )?;
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::web::Engine;
        use bytes::Bytes;
        use http::Request;
        use http_body_util::{BodyExt, Empty};
        use std::sync::atomic::{AtomicBool, Ordering};

        #[tokio::test]
        async fn readyz_follows_the_probe_and_healthz_does_not() {
            let ok = Arc::new(AtomicBool::new(true));
            let flag = ok.clone();
            let probe: Probe = Arc::new(move || {
                let ready = flag.load(Ordering::Relaxed);
                Box::pin(async move { ready.then_some(()).ok_or_else(|| "store down".to_string()) })
            });
            let mut e = Engine::bare();
            register(&mut e, probe).unwrap();
            let app = e.build();
            let get = |path: &'static str| {
                let app = app.clone();
                async move {
                    let req = Request::get(path).body(Empty::<Bytes>::new()).unwrap();
                    let resp = app
                        .handle(req, "127.0.0.1:1".parse::<std::net::SocketAddr>().unwrap())
                        .await;
                    let status = resp.status();
                    let body = resp.into_body().collect().await.unwrap().to_bytes();
                    (status, String::from_utf8(body.to_vec()).unwrap())
                }
            };
            assert_eq!(
                get("/readyz").await,
                (StatusCode::OK, r#"{"status":"ready"}"#.into())
            );
            ok.store(false, Ordering::Relaxed);
            assert_eq!(
                get("/readyz").await,
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    r#"{"error":"store down","status":"not ready"}"#.into()
                )
            );
            assert_eq!(
                get("/healthz").await,
                (StatusCode::OK, r#"{"status":"ok"}"#.into())
            );
        }

        #[tokio::test]
        async fn a_readiness_check_that_hangs_is_not_ready_after_the_time_out() {
            let probe: Probe = Arc::new(|| Box::pin(std::future::pending()));
            let mut e = Engine::bare();
            register(&mut e, probe).unwrap();
            let app = e.build();
            let req = Request::get("/readyz").body(Empty::<Bytes>::new()).unwrap();
            let resp = app
                .handle(req, "127.0.0.1:1".parse::<std::net::SocketAddr>().unwrap())
                .await;
            assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        }
    }
}
