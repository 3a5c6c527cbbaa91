//! Protocol pieces written by hand, each independent of any service:
//!
//! - [`gateway`]: HTTP/JSON routes to unary gRPC methods, derived from their
//!   `google.api.http` options at start-up, and their OpenAPI document.
//! - [`grpc`]: gRPC over h2: frames, status, dispatch, reflection, `.proto` parsing.
//! - [`jwt`]: HS256 JSON Web Tokens, signed and verified by hand.

pub mod gateway;
pub mod grpc;
pub mod jwt;
