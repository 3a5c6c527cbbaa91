//! The HTTP framework, written by hand on hyper: what Gin is to Go.
//!
//! From the socket inwards:
//!
//! - [`server`]: the accept loop (HTTP/1.1 + h2c, connection cap, graceful shutdown).
//! - [`budget`]: the one connection budget all listeners of a process share.
//! - [`clocks`]: one connection's header and idle time-outs.
//! - [`intake`]: reading a request body: size, time-out, minimum rate, process budget.
//! - [`governor`]: what one connection may cost (its inflate allowance).
//! - [`deadline`]: a call's deadline, which never cuts a write mid-commit.
//! - [`tls`]: optional TLS on a listener, certificates reloaded on SIGHUP.
//! - [`router`]: the path matcher (static, `:param`, `*catch-all` segments).
//! - [`chain`]: [`chain::Context`] and the Next/Abort handler chain.
//! - [`trace`]: the chain trace of `--trace`.
//! - [`tracecontext`]: W3C `traceparent`: each request's trace, in its log lines.
//! - [`path_params`]: a route's parameters, held as ranges of the path.
//! - [`engine`]: Gin-style route registration and groups.
//! - [`app`]: the frozen engine serving requests: dispatch, 404/405, early answers.
//! - [`health`]: `GET /healthz` (liveness) and `GET /readyz` (readiness).
//! - [`middleware`]: the default logger and panic recovery, and a time-out.
//! - [`cors`]: cross-origin resource sharing (preflight, allowed origins), off by default.
//! - [`reply`]: handlers returning `Result`, whose error becomes the response.
//! - [`peer`]: the client address of the call being served (a task-local).
//! - [`ratelimit`]: a per-client sliding-window limit.
//! - [`log`]: the one log sink: buffered, drained off the runtime, never blocking.
//! - [`metrics`]: Prometheus counters and histograms, `GET /metrics`.
//! - [`bind`]: JSON / form / multipart / query binding with required fields.
//! - [`urlenc`]: percent and form decoding.
//! - [`timefmt`]: UTC calendar formatting for logs and API timestamps.
//!
//! Nothing here knows about a service.

pub mod app;
pub mod bind;
pub mod budget;
pub mod chain;
pub mod clocks;
pub mod cors;
pub mod deadline;
pub mod engine;
pub mod governor;
pub mod health;
pub mod intake;
pub mod log;
pub mod metrics;
pub mod middleware;
pub mod path_params;
pub mod peer;
pub mod ratelimit;
pub mod reply;
pub mod router;
pub mod server;
pub mod timefmt;
pub mod tls;
pub mod trace;
pub mod tracecontext;
pub mod urlenc;
