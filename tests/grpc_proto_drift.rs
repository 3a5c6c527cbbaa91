//! The hand-written prost structs of the gRPC framework match the `.proto`
//! files they stand for: reflection's (v1 and v1alpha) and health's, checked
//! on the wire by `support::drift` (the greeter's own structs are checked
//! in tests/greeter_proto.rs); and the drift check itself reports each way a
//! struct can disagree, in words that say which line to fix.

mod support;

use std::collections::{BTreeSet, HashMap};

use handwire::protocol::grpc::descriptor::parse_proto;
use handwire::protocol::grpc::health::{
    self, HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse,
    ServingStatus,
};
use handwire::protocol::grpc::reflection::*;
use prost::Message;
use prost_types::FileDescriptorProto;
use support::drift::{check_sample, field_numbers};

/// Checks every sample against `fd` and that together they set every field
/// of every top-level message.
fn assert_samples_cover(fd: &FileDescriptorProto, samples: Vec<(&str, Vec<u8>)>) {
    let file = fd.name();
    let mut seen = BTreeSet::new();
    for (message, bytes) in samples {
        seen.extend(check_sample(fd, message, &bytes).unwrap_or_else(|e| panic!("{file}: {e}")));
    }
    for m in &fd.message_type {
        for number in field_numbers(fd, m.name()) {
            assert!(
                seen.contains(&(m.name().to_owned(), number)),
                "{file}: {}.{number} never sampled",
                m.name()
            );
        }
    }
}

fn s(name: &str) -> String {
    name.to_owned()
}

/// One sample per oneof variant; strings hold their field name, integers
/// their field number (see `support::drift`).
fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let request = |r: MessageRequest| ServerReflectionRequest {
        host: s("host"),
        message_request: Some(r),
    };
    let response = |r: MessageResponse| ServerReflectionResponse {
        valid_host: s("valid_host"),
        original_request: Some(request(MessageRequest::ListServices(s("list_services")))),
        message_response: Some(r),
    };
    let ext = ExtensionRequest {
        containing_type: s("containing_type"),
        extension_number: 2,
    };
    vec![
        (
            "ServerReflectionRequest",
            request(MessageRequest::FileByFilename(s("file_by_filename"))).encode_to_vec(),
        ),
        (
            "ServerReflectionRequest",
            request(MessageRequest::FileContainingSymbol(s(
                "file_containing_symbol",
            )))
            .encode_to_vec(),
        ),
        (
            "ServerReflectionRequest",
            request(MessageRequest::FileContainingExtension(ext.clone())).encode_to_vec(),
        ),
        (
            "ServerReflectionRequest",
            request(MessageRequest::AllExtensionNumbersOfType(s(
                "all_extension_numbers_of_type",
            )))
            .encode_to_vec(),
        ),
        (
            "ServerReflectionRequest",
            request(MessageRequest::ListServices(s("list_services"))).encode_to_vec(),
        ),
        ("ExtensionRequest", ext.encode_to_vec()),
        (
            "ServerReflectionResponse",
            response(MessageResponse::FileDescriptorResponse(
                FileDescriptorResponse {
                    file_descriptor_proto: vec![b"file_descriptor_proto".to_vec()],
                },
            ))
            .encode_to_vec(),
        ),
        (
            "ServerReflectionResponse",
            response(MessageResponse::AllExtensionNumbersResponse(
                ExtensionNumberResponse {
                    base_type_name: s("base_type_name"),
                    extension_number: vec![2, 2],
                },
            ))
            .encode_to_vec(),
        ),
        (
            "ServerReflectionResponse",
            response(MessageResponse::ListServicesResponse(ListServiceResponse {
                service: vec![ServiceResponse { name: s("name") }],
            }))
            .encode_to_vec(),
        ),
        (
            "ServerReflectionResponse",
            response(MessageResponse::ErrorResponse(ErrorResponse {
                error_code: 1,
                error_message: s("error_message"),
            }))
            .encode_to_vec(),
        ),
    ]
}

#[test]
fn reflection_structs_match_both_proto_files() {
    for (file, src) in [
        ("v1.proto", REFLECTION_V1_PROTO),
        ("v1alpha.proto", REFLECTION_V1ALPHA_PROTO),
    ] {
        assert_samples_cover(&parse_proto(file, src).unwrap(), samples());
    }
}

#[test]
fn drift_check_catches_a_swapped_tag() {
    // A struct that puts `host` under tag 3 instead of 1.
    #[derive(Clone, PartialEq, Message)]
    struct Drifted {
        #[prost(string, tag = "3")]
        host: String,
    }
    let fd = parse_proto("v1.proto", REFLECTION_V1_PROTO).unwrap();
    let err = check_sample(
        &fd,
        "ServerReflectionRequest",
        &Drifted { host: s("host") }.encode_to_vec(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("the .proto names this field \"file_by_filename\""),
        "{err}"
    );
    #[derive(Clone, PartialEq, Message)]
    struct Extra {
        #[prost(string, tag = "9")]
        extra: String,
    }
    let err = check_sample(
        &fd,
        "ServiceResponse",
        &Extra { extra: s("extra") }.encode_to_vec(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("field number 9, which the .proto does not declare"),
        "{err}"
    );
}

#[test]
fn health_structs_match_the_shipped_health_proto() {
    let fd = health::file_descriptor().unwrap();
    // `status` is field 1, so the sample holds SERVING (= 1).
    let serving = HealthCheckResponse {
        status: ServingStatus::Serving as i32,
    };
    let samples = vec![
        (
            "HealthCheckRequest",
            HealthCheckRequest {
                service: "service".into(),
            }
            .encode_to_vec(),
        ),
        ("HealthCheckResponse", serving.encode_to_vec()),
        ("HealthListRequest", HealthListRequest {}.encode_to_vec()),
        (
            "HealthListResponse",
            HealthListResponse {
                // A map entry is a message of its own: `key` (1), `value` (2).
                statuses: HashMap::from([("key".to_owned(), serving.clone())]),
            }
            .encode_to_vec(),
        ),
    ];
    let entry = ".grpc.health.v1.HealthListResponse.StatusesEntry";
    let seen = check_sample(&fd, "HealthListResponse", &samples[3].1).unwrap();
    for number in field_numbers(&fd, entry) {
        assert!(
            seen.contains(&("StatusesEntry".to_owned(), number)),
            "StatusesEntry.{number} never sampled"
        );
    }
    assert_samples_cover(&fd, samples);
}

#[test]
fn drift_errors_are_typed_and_keep_their_messages() {
    let fd = parse_proto(
        "t.proto",
        "syntax = \"proto3\"; package t; message M { string name = 1; int32 count = 2; }",
    )
    .unwrap();
    let cases: [(&str, &[u8], &str); 9] = [
        ("Nope", &[], "message Nope is not in t.proto"),
        (
            "M",
            &[0x48, 0x01],
            "M: the Rust struct writes field number 9, which the .proto does not declare",
        ),
        ("M", &[0x0a, 0x05, b'n'], "M.name (= 1): truncated"),
        (
            "M",
            &[0x0a, 0x01, b'x'],
            "M.name (= 1): the Rust struct put \"x\" here; the .proto names this field \"name\"",
        ),
        (
            "M",
            &[0x12, 0x00],
            "M.count (= 2): declared Int32 but encoded length-delimited",
        ),
        (
            "M",
            &[0x08, 0x01],
            "M.name (= 1): declared String but encoded with wire type 0",
        ),
        (
            "M",
            &[0x10, 0x07],
            "M.count (= 2): the Rust struct put 7 here; samples must hold the field number",
        ),
        ("M", &[0x80], "truncated varint"),
        ("M", &[0xff; 10], "varint too long"),
    ];
    for (message, encoded, want) in cases {
        let err = check_sample(&fd, message, encoded).unwrap_err();
        assert_eq!(err.to_string(), want, "{err:?}");
    }
}
