//! The HTTP framework, written by hand on hyper: what Gin is to Go.
//!
//! From the socket inwards:
//!
//! - [`server`]: the accept loop (HTTP/1.1 + h2c, connection cap, graceful shutdown).
//! - [`budget`]: the one connection budget all listeners of a process share.
//! - [`clocks`]: one connection's header and idle time-outs.
//! - [`beside`]: the clocks polled beside the connection only when they woke.
//! - [`intake`]: reading a request body: size, time-out, minimum rate, process budget.
//! - [`admission`]: scarce work (database reads) admitted process-wide, connections holding nothing first.
//! - [`governor`]: what one connection may cost (its handler window, its inflate allowance).
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
//! - `numfmt`: the request log's status, latency and IP digits, without `core::fmt`.
//!
//! - [`launch`]: what the binaries share from `main` to serving: flags, bind, start-up lines.
//!
//! Nothing here knows about a service.

pub(crate) mod admission;
pub(crate) mod app;
pub(crate) mod beside;
pub mod bind;
pub(crate) mod budget;
pub(crate) mod chain;
pub(crate) mod clocks;
pub(crate) mod cors;
pub(crate) mod deadline;
pub(crate) mod engine;
pub(crate) mod governor;
pub(crate) mod health;
pub(crate) mod intake;
pub(crate) mod keys;
pub mod launch;
pub mod log;
pub mod metrics;
pub mod middleware;
pub(crate) mod numfmt;
pub(crate) mod path_params;
pub(crate) mod peer;
pub(crate) mod ratelimit;
pub(crate) mod reply;
pub mod router;
pub mod server;
pub(crate) mod timefmt;
pub mod tls;
pub(crate) mod trace;
pub(crate) mod tracecontext;
pub(crate) mod unwind;
pub(crate) mod urlenc;

// The public surface. The modules above stay crate-private except the
// namespaces a caller names as such (`server::serve`, `middleware::logger()`,
// `metrics::Metrics`, `log::stdout()`, `bind::bind`, `tls::from_flags`,
// `router::Router`); everything else a user of the framework needs is here.
pub use app::{App, BodyTimeoutAnswer, EdgeAnswer, HEADER_BYTES_MAX, HEADER_FIELDS_MAX, URI_MAX};
pub use budget::ConnectionBudget;
pub use chain::{
    after_rest, catching, handler, handler_now, named, Context, Handler, HandlerFn,
    HandlerFnCaught, HandlerFnNow,
};
pub use cors::{Cors, CorsConfig};
pub use engine::{Engine, Group, DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT};
pub use governor::{HANDLERS_AT_START, HANDLERS_PER_CONNECTION};
pub use path_params::PathParams;
pub use ratelimit::{client_key, PerClient};
pub use reply::{fallible, ErrorResponse, Status};
pub use trace::Trace;
pub use urlenc::{pairs as form_pairs, percent_decode};
