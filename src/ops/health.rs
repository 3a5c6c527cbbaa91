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

use crate::types::BoxFuture;

/// The readiness check of a service: `Err` says what is not ready.
pub type Probe = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// Longest a readiness check may take; past it the answer is 503.
pub const READY_TIMEOUT: Duration = Duration::from_secs(1);
