//! gRPC over HTTP/2, framed by hand: enough of the protocol for unary calls,
//! bidirectional streams and server reflection, with nothing service-specific.
//!
//! - [`frame`]: the 5-byte length prefix and a two-phase decoder.
//! - [`headers`]: the gRPC header names, made once.
//! - [`status`]: status codes, `grpc-status` / percent-encoded `grpc-message`.
//! - [`details`]: `grpc-status-details-bin` (`google.rpc.ErrorInfo`, `BadRequest`).
//! - [`timeout`]: the `grpc-timeout` header and the call deadline.
//! - [`compression`]: `identity` and `gzip` messages, negotiated per call.
//! - [`body`]: response bodies (DATA then trailers) and Trailers-Only errors.
//! - [`access_log`]: one log line per call, with its final status.
//! - [`method`]: a unary method ([`UnaryMethod`], [`unary`]) and its [`Failure`],
//!   the one table both the gRPC server and the HTTP gateway call.
//! - [`server`]: request checks, unary and streaming dispatch, the [`Server`].
//! - [`stream`]: a call's request messages ([`Streaming`]) and reply [`Sink`].
//! - [`descriptor`]: a tiny `.proto` parser producing `FileDescriptorProto`s.
//! - [`reflection`]: the server reflection service (v1 and v1alpha).
//! - [`health`]: the standard health service (`grpc.health.v1.Health`).
//! - [`web`]: gRPC-Web (binary and base64 text) on an HTTP/1.1 port.

pub(crate) mod access_log;
pub(crate) mod body;
pub(crate) mod compression;
pub mod descriptor;
pub(crate) mod details;
pub(crate) mod frame;
pub(crate) mod headers;
pub mod health;
pub(crate) mod method;
pub mod reflection;
pub(crate) mod server;
pub(crate) mod status;
pub(crate) mod stream;
pub(crate) mod timeout;
pub(crate) mod web;

// The public surface: the three namespaces above stay public (a caller
// names their messages as such: `health::HealthCheckRequest`); the rest
// of the protocol is reached through these names.
pub use details::{ErrorDetails, RpcStatus};
pub use frame::{Decoder, Frame, FrameError};
pub use method::{unary, Failure, UnaryMethod};
pub use server::{Builder, Options, Server, Sink, Streaming};
pub use status::{Code, Status};
