//! An HTTP/JSON gateway to gRPC methods, derived at start-up from their
//! `google.api.http` options, in the manner of grpc-gateway and Kratos.
//!
//! - [`template`]: the path-template grammar of `google/api/http.proto`.
pub mod template;
