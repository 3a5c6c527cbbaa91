//! The few types every layer shares: the boxed future handlers and services
//! return, and the response body type.
//!
//! They live here, not in the accept loop, so that the chain, the engine,
//! gRPC and the services can name them without depending on the server.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};

/// A boxed error, as carried by response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A boxed, sendable future: the shape every handler and service returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Response body type every service returns. Boxed so that a whole buffer
/// and a stream (gRPC) share one type.
pub type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

/// A body holding `data` in one piece.
pub fn full(data: impl Into<Bytes>) -> Body {
    Full::new(data.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// A body with no bytes.
pub fn empty() -> Body {
    Empty::<Bytes>::new()
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}
