//! handwire: three small services on raw hyper, with the framework parts
//! written by hand so they can be read.
//!
//! Map of the crate:
//!
//! - [`server`]: the accept loop (HTTP/1.1 + h2c, timeouts, graceful shutdown).
//! - [`router`]: the path matcher (static, `:param`, `*catch-all` segments).
//! - [`chain`]: [`chain::Context`] and the Next/Abort handler chain.
//! - [`engine`]: Gin-style route registration, groups, dispatch, 404/405.
//! - [`middleware`]: the default logger and panic recovery.
//! - [`bind`]: JSON / form / multipart / query binding with required fields.
//! - [`urlenc`]: percent and form decoding.
//! - [`timefmt`]: UTC calendar formatting for logs and API timestamps.
//! - [`cli`]: the tiny `--flag value` parser the binaries share.
//! - [`jwt`]: HS256 JSON Web Tokens, signed and verified by hand.
//! - [`demo`]: Area B, the router-demo routes.
//! - [`config`]: the greeter's YAML configuration (Kratos layout).
//! - [`grpc`]: gRPC over h2 by hand: frames, status, dispatch, reflection.
//! - [`greeter`]: Area A, the greeter (HTTP + gRPC over a SQLite store).
//! - [`auth`]: Area C, the token-auth service.
//!
//! Service areas depend on the core modules, never on each other.

pub mod auth;
pub mod bind;
pub mod chain;
pub mod cli;
pub mod config;
pub mod demo;
pub mod engine;
pub mod greeter;
pub mod grpc;
pub mod jwt;
pub mod middleware;
pub mod router;
pub mod server;
pub mod timefmt;
pub mod urlenc;
