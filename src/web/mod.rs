//! The Gin-style framework: the mechanics a student reads.
//!
//! A request comes in through [`App`] (the frozen [`Engine`]), which asks
//! the [`router`] for the route's chain and runs it through
//! [`Context::next`]:
//!
//! - [`router`]: the path matcher (static, `:param`, `*catch-all` segments).
//! - [`chain`]: [`chain::Context`] and the Next/Abort handler chain.
//! - [`draft`]: the response the chain builds, made into the response at its end.
//! - [`keys`]: the values middleware hand down the chain (`c.set`, `c.get`).
//! - [`engine`]: Gin-style route registration and groups.
//! - [`app`]: the frozen engine serving requests: dispatch, 404/405, early answers.
//! - [`middleware`]: the default logger and panic recovery, and a time-out.
//! - [`unwind`]: catching a handler's panic, for recovery.
//! - [`operations`]: CORS, rate limits, `/metrics` and health as middleware and routes.
//! - [`trace`]: the chain trace of `--trace`.
//! - [`study`]: where a finished trace goes: printed, kept for the pages.
//! - [`debug`]: the debug pages (`--debug-pages`), which draw that trace
//!   and the route tree; not on the reading path.
//! - [`reply`]: handlers returning `Result`, whose error becomes the response.
//! - [`bind`]: JSON / form / multipart / query binding with required fields.
//! - [`urlenc`]: percent and form decoding.
//!
//! The server that accepts connections and hands requests to an [`App`]
//! lives in [`crate::server`]; the log sink, metrics, trace context and the
//! other operations in [`crate::ops`]. Nothing here knows about a service.

pub(crate) mod app;
pub mod bind;
pub(crate) mod chain;
pub mod debug;
pub(crate) mod draft;
pub(crate) mod engine;
pub(crate) mod keys;
pub mod middleware;
pub mod operations;
pub(crate) mod reply;
pub mod router;
pub(crate) mod study;
pub(crate) mod trace;
pub(crate) mod unwind;
pub(crate) mod urlenc;

// The public surface. The modules above stay crate-private except the
// namespaces a caller names as such (`middleware::logger()`, `bind::bind`,
// `router::Router`); everything else a user of the framework needs is here.
pub use crate::contract::{HEADER_BYTES_MAX, HEADER_FIELDS_MAX, URI_MAX};
pub use app::{App, BodyTimeoutAnswer, EdgeAnswer};
pub use chain::{
    after_rest, catching, handler, handler_now, named, Context, Handler, HandlerFn, PathParams,
};
pub use debug::DebugPages;
pub use engine::{Engine, Group, DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT};
pub use reply::{fallible, ErrorResponse, Status};
pub use trace::Trace;
pub use urlenc::{pairs as form_pairs, percent_decode};
