//! Errors over HTTP in Kratos' JSON shape, and gRPC codes as HTTP statuses.
//!
//! `{"code":<http status>,"reason":"…","message":"…","metadata":{}}`: the
//! reason is an UPPER_SNAKE identifier a client can match on, the status is
//! grpc-gateway's `HTTPStatusFromCode` of the gRPC code. Invalid input adds
//! `details`: one `google.rpc.BadRequest` naming each field, in the JSON
//! form grpc-gateway gives it (`@type`, `fieldViolations`).
//!
//! Over gRPC the same failure becomes a `Status` whose
//! `grpc-status-details-bin` holds `ErrorInfo` (reason, domain, metadata)
//! and the same `BadRequest` ([`Failure::into_status`]).

use http::StatusCode;
use serde::Serialize;

use crate::protocol::grpc::{Code, Failure};

/// The HTTP side of a method's [`Failure`] (the type lives with the gRPC
/// method it ends, in `protocol::grpc`).
impl Failure {
    /// The HTTP status of this failure.
    pub fn http_status(&self) -> StatusCode {
        http_status(self.code)
    }

    /// The Kratos body of this failure.
    pub fn body(&self) -> ErrorBody<'_> {
        let mut body = error_body(self.http_status(), &self.reason, &self.message);
        body.metadata = self
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        if !self.violations.is_empty() {
            body.details.push(Detail::BadRequest {
                field_violations: self
                    .violations
                    .iter()
                    .map(|v| JsonViolation {
                        field: &v.field,
                        description: &v.description,
                        reason: &v.reason,
                    })
                    .collect(),
            });
        }
        body
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
    /// Facts about the failure (string values).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// A `google.rpc.BadRequest` when fields broke their rules; absent
    /// otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Detail<'a>>,
}

/// One entry of [`ErrorBody::details`], in protobuf's JSON form of `Any`.
#[derive(Debug, Serialize)]
#[serde(tag = "@type")]
pub enum Detail<'a> {
    /// `google.rpc.BadRequest`.
    #[serde(rename = "type.googleapis.com/google.rpc.BadRequest")]
    BadRequest {
        /// One per field.
        #[serde(rename = "fieldViolations")]
        field_violations: Vec<JsonViolation<'a>>,
    },
}

/// `google.rpc.BadRequest.FieldViolation` in JSON.
#[derive(Debug, Serialize)]
pub struct JsonViolation<'a> {
    /// The field's path.
    pub field: &'a str,
    /// What is wrong.
    pub description: &'a str,
    /// UPPER_SNAKE reason.
    pub reason: &'a str,
}

/// The Kratos error body for `status`.
pub fn error_body<'a>(status: StatusCode, reason: &'a str, message: &'a str) -> ErrorBody<'a> {
    ErrorBody {
        code: status.as_u16(),
        reason,
        message,
        metadata: serde_json::Map::new(),
        details: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::grpc::details::FieldViolation;

    #[test]
    fn a_failure_with_violations_names_each_field_in_the_body_and_the_grpc_details() {
        let failure = Failure::new(Code::InvalidArgument, "USERNAME_EMPTY", "username: empty")
            .with_violations(vec![FieldViolation {
                field: "username".into(),
                description: "must not be empty".into(),
                reason: "USERNAME_EMPTY".into(),
            }]);
        let body = serde_json::to_value(failure.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "code": 400, "reason": "USERNAME_EMPTY", "message": "username: empty",
                "metadata": {},
                "details": [{
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": "username", "description": "must not be empty", "reason": "USERNAME_EMPTY"}]
                }]
            })
        );
        let status = failure.into_status("helloworld.v1.Greeter");
        let details = status.details.unwrap();
        assert_eq!(details.reason, "USERNAME_EMPTY");
        assert_eq!(details.domain, "helloworld.v1.Greeter");
        assert_eq!(details.violations[0].field, "username");
    }

    #[test]
    fn a_body_without_violations_has_no_details_key() {
        let body =
            serde_json::to_value(Failure::new(Code::AlreadyExists, "X", "y").body()).unwrap();
        assert!(body.get("details").is_none(), "{body}");
    }

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
