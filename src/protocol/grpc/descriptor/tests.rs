//! Unit tests of the `.proto` parser.

use super::*;

const SAMPLE: &str = r#"
// leading comment
syntax = "proto3";
/* block
   comment */
package demo.v1;
option go_package = "example/demo/v1;v1";

service Echo {
  rpc Say (Ping) returns (Pong);
  rpc Chat (stream Ping) returns (stream Pong) {}
}

message Ping { string text = 1; repeated int32 ids = 2; }
message Pong {
  Ping echo = 1;
  oneof kind {
    string note = 3;
    bytes blob = 4;
  }
  repeated Ping history = 5;
  uint64 first_seen_at = 6;
}
"#;

#[test]
fn sample_file_parses_into_a_descriptor() {
    let fd = parse_proto("demo/v1/echo.proto", SAMPLE).unwrap();
    assert_eq!(fd.name(), "demo/v1/echo.proto");
    assert_eq!(fd.package(), "demo.v1");
    assert_eq!(fd.syntax(), "proto3");
    assert_eq!(
        fd.options.as_ref().unwrap().go_package(),
        "example/demo/v1;v1"
    );

    let echo = &fd.service[0];
    assert_eq!(echo.name(), "Echo");
    let say = &echo.method[0];
    assert_eq!(
        (say.name(), say.input_type(), say.output_type()),
        ("Say", ".demo.v1.Ping", ".demo.v1.Pong")
    );
    assert!(!say.client_streaming() && !say.server_streaming());
    let chat = &echo.method[1];
    assert!(chat.client_streaming() && chat.server_streaming());

    let ping = &fd.message_type[0];
    assert_eq!(ping.field[0].name(), "text");
    assert_eq!(ping.field[0].r#type(), Type::String);
    assert_eq!(ping.field[1].label(), Label::Repeated);
    assert_eq!(ping.field[1].r#type(), Type::Int32);

    let pong = &fd.message_type[1];
    let echo_field = &pong.field[0];
    assert_eq!(echo_field.r#type(), Type::Message);
    assert_eq!(echo_field.type_name(), ".demo.v1.Ping");
    assert_eq!(pong.oneof_decl[0].name(), "kind");
    assert_eq!(pong.field[1].oneof_index, Some(0));
    assert_eq!(pong.field[2].r#type(), Type::Bytes);
    assert_eq!(pong.field[3].oneof_index, None);
    assert_eq!(pong.field[4].json_name(), "firstSeenAt");
    assert_eq!(pong.field[4].number(), 6);
}

#[test]
fn json_names_follow_protoc() {
    assert_eq!(json_name("file_by_filename"), "fileByFilename");
    assert_eq!(json_name("name"), "name");
    assert_eq!(json_name("a_b_c"), "aBC");
}

#[test]
fn unsupported_constructs_are_errors_naming_the_line() {
    let cases = [
        (
            "syntax = \"proto2\";",
            1,
            "only syntax \"proto3\" is supported",
        ),
        (
            "syntax = \"proto3\";\nimport \"x.proto\";",
            2,
            "unsupported top-level statement starting with `import`",
        ),
        (
            "syntax = \"proto3\";\nenum E { A = 0; }",
            2,
            "unsupported top-level statement starting with `enum`",
        ),
        (
            "syntax = \"proto3\";\nmessage M {\n optional string a = 1; }",
            3,
            "`optional` is not supported",
        ),
        (
            "syntax = \"proto3\";\nmessage M { string a = 1 [deprecated = true]; }",
            2,
            "field options on a are not supported",
        ),
        (
            "syntax = \"proto3\";\noption cc_enable_arenas = true;",
            2,
            "unsupported file option `cc_enable_arenas`",
        ),
        (
            "syntax = \"proto3\";\nmessage M { string a = 0; }",
            2,
            "invalid field number `0` for field a",
        ),
        (
            "syntax = \"proto3\";\nmessage M { string a = 1; string b = 1; }",
            2,
            "message M: field number 1 used twice",
        ),
        ("message M {}", 1, "missing `syntax = \"proto3\";`"),
        (
            "syntax = \"proto3\";\nmessage M { string a = 1;",
            2,
            "unexpected end of file",
        ),
        (
            "syntax = \"proto3\";\n/* open",
            2,
            "unterminated /* comment",
        ),
    ];
    for (src, line, want) in cases {
        let err = parse_proto("t.proto", src).unwrap_err();
        assert_eq!(err.line, line, "{src}: {err}");
        assert!(err.message.contains(want), "{src}: {err}");
    }
}

#[test]
fn unknown_message_reference_is_an_error() {
    let err = parse_proto(
        "t.proto",
        "syntax = \"proto3\";\nservice S { rpc A (Missing) returns (Missing); }",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.proto:0: unknown type `Missing` (only messages of this file can be referenced)"
    );
}

#[test]
fn the_crate_proto_files_parse() {
    for (name, src) in [
        (
            "grpc/reflection/v1/reflection.proto",
            crate::protocol::grpc::reflection::REFLECTION_V1_PROTO,
        ),
        (
            "grpc/reflection/v1alpha/reflection.proto",
            crate::protocol::grpc::reflection::REFLECTION_V1ALPHA_PROTO,
        ),
    ] {
        let fd = parse_proto(name, src).unwrap();
        assert_eq!(fd.service[0].name(), "ServerReflection");
        assert_eq!(fd.message_type.len(), 8);
    }
}
