//! The three services. Each is built on the framework
//! ([`crate::web`]) and the protocol pieces ([`crate::protocol`]); none
//! imports another.
//!
//! - [`greeter`]: `GET /helloworld/{name}` and `helloworld.v1.Greeter`
//!   over hand-framed gRPC, users in SQLite, Kratos-style configuration.
//! - [`router_demo`]: the Gin-style demo routes.
//! - [`token_auth`]: HS256 access/refresh tokens, roles, blacklist,
//!   login limits and OAuth sign-in.

pub mod greeter;
pub mod router_demo;
pub mod token_auth;
