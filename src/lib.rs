//! handwire: three small services on raw hyper, with the framework parts
//! written by hand so they can be read.
//!
//! The folders are rooms, one above the other; imports point down the
//! rooms only (the framework and the server side by side, never importing
//! each other):
//!
//! - `src/bin/`: the three binaries, thin: parse arguments, run a service.
//! - [`services`]: the three services —
//!   [`services::greeter`], [`services::router_demo`],
//!   [`services::token_auth`]. A service never imports another.
//! - [`protocol`]: protocol pieces by hand — [`protocol::grpc`] (framing,
//!   status, dispatch, reflection over h2, the `.proto` parser),
//!   [`protocol::gateway`] (HTTP/JSON routes derived from `google.api.http`
//!   options, OpenAPI) and [`protocol::jwt`] (HS256).
//!   They may use the framework and the server, never a service.
//! - [`launch`]: what the binaries share from `main` to serving: the server
//!   flags read into options, the listener bound, the start-up and stop
//!   lines; where the server and the framework are put together. It never
//!   imports a service or a protocol piece.
//! - [`web`]: the Gin-style framework, what a student reads — router,
//!   chain, context, engine, the logger and recovery, binding, the chain
//!   trace and its debug pages ([`web::debug`]).
//! - [`server`]: the armour beside it — accept loop and connection, clocks,
//!   the connection budget, the governor, admission, reading a body under
//!   limits, TLS. The framework and the server never import each other.
//! - [`contract`]: where the two meet — the `Service` trait the server
//!   calls, `Caller`, `Answer`, the body limits and their refusals. It
//!   imports only operations.
//! - [`ops`]: operations, the bottom room both use — the log sink, trace
//!   context, metrics, health, CORS, rate limits, deadlines.
//! - [`types`]: the shared boxed future and body types; [`cli`]: the tiny
//!   flag parser the binaries share; [`config`]: shared configuration
//!   support (YAML through serde, errors naming the key path, Go durations)
//!   for the services' config files; `cluster` (feature `cluster` only):
//!   PostgreSQL and Redis connections with time-outs, migrations and the
//!   start-up errors both services report. They import nothing from the crate.
//!
//! The public surface, for the binaries, tests, benches, examples and fuzz
//! targets: each of [`web`], [`protocol::grpc`], [`protocol::gateway`] and
//! [`services::token_auth`] keeps its modules crate-private and re-exports
//! what a caller names (`web::Engine`, `web::Context`, `grpc::Server`,
//! `gateway::Gateway`, `token_auth::Passwords`), keeping public only the few
//! namespaces read as such (`web::middleware`, `web::debug`, `grpc::health`,
//! `grpc::reflection`, `grpc::descriptor`, `gateway::openapi`,
//! `token_auth::{config, routes, service, store, user}`). Everything else
//! is an implementation detail free to move.
//!
//! `tests/architecture.rs` reads the `use crate::…` lines of `src/` and fails
//! when an import breaks these rules.

pub mod cli;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod config;
pub mod contract;
pub mod launch;
pub mod ops;
pub mod protocol;
pub mod server;
pub mod services;
pub mod types;
pub mod web;
