//! The gRPC header names as [`HeaderName`]s, made once. A `&str` name is
//! parsed (checked, and looked up among the standard names) on every
//! `HeaderMap` lookup or insert: with the six of a call that was about 5 %
//! of the samples of a `Health/Check` call's own work.

use http::HeaderName;

/// The call's final status code (trailers, or Trailers-Only headers).
pub static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
/// The status message, percent-encoded.
pub static GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
/// The encoded `google.rpc.Status` of an error (its details), base64.
pub static GRPC_STATUS_DETAILS_BIN: HeaderName = HeaderName::from_static("grpc-status-details-bin");
/// The encoding of the messages that follow.
pub static GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");
/// The encodings the sender takes.
pub static GRPC_ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");
/// The client's deadline.
pub static GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
