//! Operations: what running the services needs beside the framework and
//! the server, and what both of them use.
//!
//! - [`log`]: the one log sink: buffered, drained off the runtime, never blocking.
//! - [`tracecontext`]: W3C `traceparent`: each request's trace, in its log lines.
//! - [`metrics`]: Prometheus counters and histograms, `GET /metrics`.
//! - [`health`]: `GET /healthz` (liveness) and `GET /readyz` (readiness).
//! - [`cors`]: cross-origin resource sharing (preflight, allowed origins), off by default.
//! - [`ratelimit`]: a per-client sliding-window limit.
//! - [`peer`]: the client address of the call being served (a task-local).
//! - [`deadline`]: a call's deadline, which never cuts a write mid-commit.
//! - [`timefmt`]: UTC calendar formatting for logs and API timestamps.

pub(crate) mod cors;
pub(crate) mod deadline;
pub(crate) mod health;
pub mod log;
pub mod metrics;
pub(crate) mod peer;
pub(crate) mod ratelimit;
pub(crate) mod timefmt;
pub(crate) mod tracecontext;

pub use cors::{Cors, CorsConfig};
pub use ratelimit::{client_key, PerClient};
