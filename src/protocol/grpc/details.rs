//! Rich error details: the `grpc-status-details-bin` trailer, a
//! `google.rpc.Status` holding `google.rpc.ErrorInfo` (reason, domain,
//! metadata) and, for invalid input, `google.rpc.BadRequest` (one violation
//! per field), as Google APIs and Kratos send them.
//!
//! The trailer is the status itself encoded with protobuf, then base64
//! (binary headers end in `-bin`; sent without padding, read with or
//! without). Each detail is a `google.protobuf.Any` whose `type_url` is
//! `type.googleapis.com/<full name>`, so any client with the googleapis
//! types (grpcurl, grpcio's `grpc_status`, tonic-types) unpacks it. The
//! messages are written by hand like the greeter's (no protoc at build
//! time); `proto/google/rpc/error_details.proto` holds the subset of
//! googleapis' file they match, which reflection serves so that grpcurl can
//! print them (`google.rpc.Status` itself every gRPC library knows).

use std::collections::BTreeMap;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine as _;
use http::{HeaderMap, HeaderValue};
use prost::Message as _;

use super::headers::GRPC_STATUS_DETAILS_BIN;

/// The domain of reasons the gRPC framework itself gives (an unknown
/// method, a deadline): a service's own failures name the service.
pub const FRAMEWORK_DOMAIN: &str = "grpc.handwire";

/// `google/rpc/error_details.proto` (the messages used here), for reflection.
pub const ERROR_DETAILS_FILE: (&str, &str) = (
    "google/rpc/error_details.proto",
    include_str!("../../../proto/google/rpc/error_details.proto"),
);

/// The descriptor of [`ERROR_DETAILS_FILE`].
pub fn file_descriptor() -> Result<prost_types::FileDescriptorProto, super::descriptor::ProtoError>
{
    super::descriptor::parse_proto(ERROR_DETAILS_FILE.0, ERROR_DETAILS_FILE.1)
}

/// One field that broke its rule (`google.rpc.BadRequest.FieldViolation`).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct FieldViolation {
    /// The field's path in the request, `username` or `user.name`.
    #[prost(string, tag = "1")]
    pub field: String,
    /// What is wrong, for a person.
    #[prost(string, tag = "2")]
    pub description: String,
    /// The UPPER_SNAKE reason of this violation.
    #[prost(string, tag = "3")]
    pub reason: String,
}

/// `google.rpc.BadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BadRequest {
    /// Every field that broke a rule.
    #[prost(message, repeated, tag = "1")]
    pub field_violations: Vec<FieldViolation>,
}

/// `google.rpc.ErrorInfo`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ErrorInfo {
    /// UPPER_SNAKE reason, the same the HTTP body's `reason` holds.
    #[prost(string, tag = "1")]
    pub reason: String,
    /// Who defines the reason (the service name).
    #[prost(string, tag = "2")]
    pub domain: String,
    /// Facts about the failure, the HTTP body's `metadata`.
    #[prost(btree_map = "string, string", tag = "3")]
    pub metadata: BTreeMap<String, String>,
}

/// `google.rpc.Status`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcStatus {
    /// The gRPC code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message (plain text).
    #[prost(string, tag = "2")]
    pub message: String,
    /// `ErrorInfo` first, then `BadRequest` if any.
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<prost_types::Any>,
}

/// The full name `Any` uses for each detail.
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// What a failed call says beyond code and message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorDetails {
    /// UPPER_SNAKE reason.
    pub reason: String,
    /// Who defines the reason.
    pub domain: String,
    /// The metadata (also the HTTP body's).
    pub metadata: BTreeMap<String, String>,
    /// The fields of the request that broke a rule (empty: no `BadRequest`).
    pub violations: Vec<FieldViolation>,
}

impl ErrorDetails {
    /// The `google.rpc.Status` of a call ending with `code` and `message`.
    pub fn to_status(&self, code: i32, message: &str) -> RpcStatus {
        let info = ErrorInfo {
            reason: self.reason.clone(),
            domain: self.domain.clone(),
            metadata: self.metadata.clone(),
        };
        let mut details = vec![prost_types::Any {
            type_url: ERROR_INFO_TYPE.into(),
            value: info.encode_to_vec(),
        }];
        if !self.violations.is_empty() {
            let bad = BadRequest {
                field_violations: self.violations.clone(),
            };
            details.push(prost_types::Any {
                type_url: BAD_REQUEST_TYPE.into(),
                value: bad.encode_to_vec(),
            });
        }
        RpcStatus {
            code,
            message: message.to_owned(),
            details,
        }
    }

    /// Writes the `grpc-status-details-bin` trailer for a call ending with `code` and
    /// `message`. The message is the one `grpc-message` carries, capped the
    /// same way, so the trailer stays small whatever the client sent.
    pub fn write_to(&self, code: i32, message: &str, headers: &mut HeaderMap) {
        let encoded = STANDARD_NO_PAD.encode(self.to_status(code, message).encode_to_vec());
        if let Ok(value) = HeaderValue::from_str(&encoded) {
            headers.insert(&GRPC_STATUS_DETAILS_BIN, value);
        }
    }

    /// Reads the details back from trailers: `None` when the header is
    /// absent or does not decode. Used by clients and tests.
    pub fn from_headers(headers: &HeaderMap) -> Option<(RpcStatus, ErrorDetails)> {
        let raw = headers.get(&GRPC_STATUS_DETAILS_BIN)?.as_bytes();
        let bytes = STANDARD_NO_PAD
            .decode(raw)
            .or_else(|_| STANDARD.decode(raw))
            .ok()?;
        let status = RpcStatus::decode(bytes.as_slice()).ok()?;
        let mut details = ErrorDetails::default();
        for any in &status.details {
            match any.type_url.as_str() {
                ERROR_INFO_TYPE => {
                    let info = ErrorInfo::decode(any.value.as_slice()).ok()?;
                    details.reason = info.reason;
                    details.domain = info.domain;
                    details.metadata = info.metadata;
                }
                BAD_REQUEST_TYPE => {
                    let bad = BadRequest::decode(any.value.as_slice()).ok()?;
                    details.violations = bad.field_violations;
                }
                _ => {}
            }
        }
        Some((status, details))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_written_messages_match_error_details_proto() {
        let fd = file_descriptor().unwrap();
        let names: Vec<_> = fd.message_type.iter().map(|m| m.name()).collect();
        assert_eq!(names, ["ErrorInfo", "BadRequest"]);
        let bad = &fd.message_type[1];
        let violation = &bad.nested_type[0];
        let fields: Vec<_> = violation
            .field
            .iter()
            .map(|f| (f.name(), f.number()))
            .collect();
        assert_eq!(fields, [("field", 1), ("description", 2), ("reason", 3)]);
        let info: Vec<_> = fd.message_type[0]
            .field
            .iter()
            .map(|f| (f.name(), f.number()))
            .collect();
        assert_eq!(info, [("reason", 1), ("domain", 2), ("metadata", 3)]);
    }

    #[test]
    fn details_round_trip_through_the_bin_trailer_as_error_info_then_bad_request() {
        let details = ErrorDetails {
            reason: "USERNAME_EMPTY".into(),
            domain: "helloworld.v1.Greeter".into(),
            metadata: BTreeMap::from([("field".into(), "username".into())]),
            violations: vec![FieldViolation {
                field: "username".into(),
                description: "must not be empty".into(),
                reason: "USERNAME_EMPTY".into(),
            }],
        };
        let mut headers = HeaderMap::new();
        details.write_to(3, "username must not be empty", &mut headers);
        let raw = headers[&GRPC_STATUS_DETAILS_BIN].to_str().unwrap();
        assert!(!raw.ends_with('='), "sent without padding: {raw}");
        let (status, back) = ErrorDetails::from_headers(&headers).unwrap();
        assert_eq!(
            (status.code, status.message.as_str()),
            (3, "username must not be empty")
        );
        let types: Vec<_> = status.details.iter().map(|a| a.type_url.as_str()).collect();
        assert_eq!(types, [ERROR_INFO_TYPE, BAD_REQUEST_TYPE]);
        assert_eq!(back, details);
    }

    #[test]
    fn a_failure_without_invalid_fields_carries_error_info_only() {
        let details = ErrorDetails {
            reason: "USER_ALREADY_EXISTS".into(),
            domain: "helloworld.v1.Greeter".into(),
            ..ErrorDetails::default()
        };
        let status = details.to_status(6, "taken");
        assert_eq!(status.details.len(), 1);
        assert_eq!(status.details[0].type_url, ERROR_INFO_TYPE);
    }
}
