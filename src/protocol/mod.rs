//! Protocol pieces written by hand, each independent of any service:
//!
//! - [`grpc`]: gRPC over h2: frames, status, dispatch, reflection.
//! - [`jwt`]: HS256 JSON Web Tokens, signed and verified by hand.

pub mod gateway;
pub mod grpc;
pub mod jwt;
