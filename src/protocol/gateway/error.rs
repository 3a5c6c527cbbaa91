//! Errors over HTTP in Kratos' JSON shape, and gRPC codes as HTTP statuses.
//!
//! `{"code":<http status>,"reason":"…","message":"…","metadata":{}}`: the
//! reason is an UPPER_SNAKE identifier a client can match on, the status is
//! grpc-gateway's `HTTPStatusFromCode` of the gRPC code.

use http::StatusCode;
use serde::Serialize;

use crate::protocol::grpc::Code;

/// A method's failure as both transports report it: the gRPC code (the
/// HTTP status derives from it), a Kratos reason and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The gRPC status code.
    pub code: Code,
    /// UPPER_SNAKE reason (`USER_ALREADY_EXISTS`).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl Failure {
    /// A failure with `code`, `reason` and `message`.
    pub fn new(code: Code, reason: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure {
            code,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// The HTTP status of this failure.
    pub fn http_status(&self) -> StatusCode {
        http_status(self.code)
    }
}

/// grpc-gateway's `HTTPStatusFromCode`.
pub fn http_status(code: Code) -> StatusCode {
    let n = match code {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::Unknown => 500,
        Code::InvalidArgument => 400,
        Code::DeadlineExceeded => 504,
        Code::NotFound => 404,
        Code::AlreadyExists => 409,
        Code::PermissionDenied => 403,
        Code::Unauthenticated => 401,
        Code::ResourceExhausted => 429,
        // Deliberately not 412, as grpc-gateway.
        Code::FailedPrecondition => 400,
        Code::Aborted => 409,
        Code::OutOfRange => 400,
        Code::Unimplemented => 501,
        Code::Internal => 500,
        Code::Unavailable => 503,
        Code::DataLoss => 500,
    };
    StatusCode::from_u16(n).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The Kratos error body, fields in Kratos' order.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    /// The HTTP status.
    pub code: u16,
    /// UPPER_SNAKE reason clients can match on.
    pub reason: &'a str,
    /// Human-readable message.
    pub message: &'a str,
    /// Always empty here.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// The Kratos error body for `status`.
pub fn error_body<'a>(status: StatusCode, reason: &'a str, message: &'a str) -> ErrorBody<'a> {
    ErrorBody {
        code: status.as_u16(),
        reason,
        message,
        metadata: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grpc_code_maps_to_grpc_gateways_http_status() {
        let table = [
            (Code::Ok, 200),
            (Code::Cancelled, 499),
            (Code::Unknown, 500),
            (Code::InvalidArgument, 400),
            (Code::DeadlineExceeded, 504),
            (Code::NotFound, 404),
            (Code::AlreadyExists, 409),
            (Code::PermissionDenied, 403),
            (Code::ResourceExhausted, 429),
            (Code::FailedPrecondition, 400),
            (Code::Aborted, 409),
            (Code::OutOfRange, 400),
            (Code::Unimplemented, 501),
            (Code::Internal, 500),
            (Code::Unavailable, 503),
            (Code::DataLoss, 500),
            (Code::Unauthenticated, 401),
        ];
        for n in 0..17 {
            let code = Code::from_i32(n);
            let want = table.iter().find(|(c, _)| *c == code).unwrap().1;
            assert_eq!(http_status(code).as_u16(), want, "{}", code.name());
        }
    }
}
