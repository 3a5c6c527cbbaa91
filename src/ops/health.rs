//! Liveness and readiness over HTTP, for orchestrators and load balancers:
//!
//! - `GET /healthz` (liveness): 200 `{"status":"ok"}` whenever the process
//!   answers HTTP at all. It checks nothing else on purpose: a failing
//!   liveness probe gets the process restarted, which does not help when a
//!   database is down.
//! - `GET /readyz` (readiness): runs the service's [`Probe`] (its store
//!   answers, it is not draining) within [`READY_TIMEOUT`]; 200
//!   `{"status":"ready"}`, or 503 `{"status":"not ready","error":…}` so
//!   traffic goes elsewhere until it passes again.
//!
//! Both answers carry `Cache-Control: no-store`.

use std::sync::Arc;
use std::time::Duration;

use http::header::CACHE_CONTROL;
use http::StatusCode;
use serde_json::json;

use crate::types::BoxFuture;
use crate::web::chain::named;
use crate::web::engine::Engine;
use crate::web::router::InsertError;

/// The readiness check of a service: `Err` says what is not ready.
pub type Probe = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// Longest a readiness check may take; past it the answer is 503.
pub const READY_TIMEOUT: Duration = Duration::from_secs(1);

/// Register `GET /healthz` and `GET /readyz` (the latter asking `ready`).
pub fn register(e: &mut Engine, ready: Probe) -> Result<(), InsertError> {
    e.get(
        "/healthz",
        named("healthz", |c| {
            Box::pin(async move {
                c.set_header(CACHE_CONTROL, "no-store");
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
                c.set_header(CACHE_CONTROL, "no-store");
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
