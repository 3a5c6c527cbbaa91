//! Unit tests of the `.proto` parser.

use super::*;
use prost_types::field_descriptor_proto::Label;

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
            "syntax = \"proto3\";\nimport public \"x.proto\";",
            2,
            "only plain `import \"file\";` is supported",
        ),
        (
            "syntax = \"proto3\";\nenum E {\n A = 1; }",
            3,
            "enum E: the first value must be 0 in proto3, A is 1",
        ),
        (
            "syntax = \"proto3\";\nmessage M {\n reserved 2; }",
            3,
            "`reserved` is not supported",
        ),
        (
            "syntax = \"proto3\";\nmessage M { map<float, string> m = 1; }",
            2,
            "map key type `float` is not allowed",
        ),
        (
            "syntax = \"proto3\";\nmessage M {}\nservice S { rpc A (M) returns (M) {\n option deprecated = true; } }",
            4,
            "method A: only `option (google.api.http) = { ... };` is supported",
        ),
        (
            "syntax = \"proto3\";\nmessage M {}\nservice S { rpc A (M) returns (M) {\n option (google.api.http) = {\n  get: \"/a\"\n  post: \"/b\" }; } }",
            6,
            "method A: (google.api.http): `post` after `get`: one pattern per rule",
        ),
        (
            "syntax = \"proto3\";\nmessage M {}\nservice S { rpc A (M) returns (M) {\n option (google.api.http) = {\n  get: \"/a\"\n  additional_bindings { post: \"/b\"\n additional_bindings { put: \"/c\" } } }; } }",
            7,
            "additional_bindings may not nest (one level only)",
        ),
        (
            "syntax = \"proto3\";\nmessage M {}\nservice S { rpc A (M) returns (M) {\n option (google.api.http) = {\n  bdy: \"*\" get: \"/a\" }; } }",
            5,
            "unknown field `bdy`",
        ),
        (
            "syntax = \"proto3\";\nmessage M {}\nservice S { rpc A (M) returns (M) {\n option (google.api.http) = { body: \"*\" }; } }",
            4,
            "no pattern (get, put, post, delete, patch or custom)",
        ),
        (
            "syntax = \"proto3\";\nextend Foo { string x = 1; }",
            2,
            "`extend Foo` is not supported",
        ),
        (
            "syntax = \"proto3\";\nmessage M {\n optional string a = 1; }",
            3,
            "`optional` is not supported",
        ),
        (
            "syntax = \"proto3\";\nmessage M { string a = 1 [deprecated = true]; }",
            2,
            "field a: only `(buf.validate.field)` options are supported",
        ),
        (
            "syntax = \"proto3\";\noption optimize_for = SPEED;",
            2,
            "unsupported file option `optimize_for`",
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
        "t.proto:0: unknown type `Missing` in method S.A (only messages and enums of this file \
         and its imports can be referenced)"
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

const SHOP: &str = r#"
syntax = "proto3";
package shop.v1;
import "google/api/annotations.proto";

enum Color { COLOR_UNSPECIFIED = 0; RED = 1; }

message Item {
  message Price { int64 cents = 1; Currency currency = 2; }
  enum Currency { EUR = 0; USD = 1; }
  string name = 1;
  Price price = 2;
  repeated Color colors = 3;
  map<string, Price> by_region = 4;
}

service Shop {
  rpc GetItem (Item) returns (Item) {
    option (google.api.http) = {
      get: "/v1/items/{name}"
      additional_bindings { custom: { kind: "HEAD" path: "/v1/items/{name}" } }
      additional_bindings { post: "/v1/items:" "lookup" body: "*" response_body: "price" }
    };
  }
  rpc Plain (Item) returns (Item);
}
"#;

fn google_files() -> [(&'static str, &'static str); 2] {
    [
        (
            "google/api/annotations.proto",
            include_str!("../../../../proto/google/api/annotations.proto"),
        ),
        (
            "google/api/http.proto",
            include_str!("../../../../proto/google/api/http.proto"),
        ),
    ]
}

#[test]
fn enums_nested_messages_maps_and_imports_resolve_from_the_innermost_scope() {
    let [a, h] = google_files();
    let files = parse_files(&[("shop.proto", SHOP), a, h]).unwrap();
    let fd = &files[0].descriptor;
    assert_eq!(fd.dependency, ["google/api/annotations.proto"]);
    assert_eq!(fd.enum_type[0].value[1].name(), "RED");
    let item = &fd.message_type[0];
    let field = |n: &str| item.field.iter().find(|f| f.name() == n).unwrap();
    assert_eq!(
        (field("price").r#type(), field("price").type_name()),
        (Type::Message, ".shop.v1.Item.Price")
    );
    assert_eq!(
        (field("colors").r#type(), field("colors").type_name()),
        (Type::Enum, ".shop.v1.Color")
    );
    let price = &item.nested_type[0];
    assert_eq!(price.field[1].r#type(), Type::Enum);
    assert_eq!(price.field[1].type_name(), ".shop.v1.Item.Currency");
    // map<string, Price> is a repeated entry message, as protoc makes it.
    let by_region = field("by_region");
    assert_eq!(by_region.label(), Label::Repeated);
    assert_eq!(by_region.type_name(), ".shop.v1.Item.ByRegionEntry");
    assert_eq!(by_region.json_name(), "byRegion");
    let entry = item
        .nested_type
        .iter()
        .find(|m| m.name() == "ByRegionEntry")
        .unwrap();
    assert_eq!(entry.options.as_ref().unwrap().map_entry, Some(true));
    assert_eq!(
        (entry.field[0].r#type(), entry.field[1].type_name()),
        (Type::String, ".shop.v1.Item.Price")
    );
    // annotations.proto declares the extension and imports http.proto.
    let ann = &files[1].descriptor;
    assert_eq!(
        ann.dependency,
        ["google/api/http.proto", "google/protobuf/descriptor.proto"]
    );
    assert_eq!(ann.extension[0].type_name(), ".google.api.HttpRule");
    assert_eq!(
        ann.extension[0].extendee(),
        ".google.protobuf.MethodOptions"
    );
    assert_eq!(ann.extension[0].number(), 72295728);
    let http = &files[2].descriptor;
    let names: Vec<&str> = http.message_type.iter().map(|m| m.name()).collect();
    assert_eq!(names, ["Http", "HttpRule", "CustomHttpPattern"]);
}

#[test]
fn http_option_becomes_a_rule_with_its_bindings_and_lines() {
    let [a, h] = google_files();
    let files = parse_files(&[("shop.proto", SHOP), a, h]).unwrap();
    let rules = &files[0].http_rules;
    assert_eq!(rules.len(), 1, "Plain has no rule");
    let r = &rules[0];
    assert_eq!(
        (r.service.as_str(), r.method.as_str()),
        ("shop.v1.Shop", "GetItem")
    );
    assert_eq!(
        (r.rule.method.as_str(), r.rule.path.as_str(), r.rule.line),
        ("GET", "/v1/items/{name}", 20)
    );
    let b = &r.rule.additional_bindings;
    assert_eq!(
        (b[0].method.as_str(), b[0].path.as_str(), b[0].line),
        ("HEAD", "/v1/items/{name}", 21)
    );
    assert_eq!(
        (
            b[1].method.as_str(),
            b[1].path.as_str(),
            b[1].body.as_str(),
            b[1].response_body.as_str()
        ),
        ("POST", "/v1/items:lookup", "*", "price")
    );
}

#[test]
fn imports_must_be_given_and_types_of_other_files_need_an_import() {
    let err = parse_files(&[("a.proto", SHOP), ("x.proto", "syntax = \"proto3\";")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a.proto:0: import \"google/api/annotations.proto\" is not among the files given"
    );
    let err = parse_files(&[
        ("a.proto", "syntax = \"proto3\"; message A { B b = 1; }"),
        ("b.proto", "syntax = \"proto3\"; message B {}"),
    ])
    .unwrap_err();
    assert!(
        err.message.contains("unknown type `B` in field A.b"),
        "{err}"
    );
}

#[test]
fn leading_comments_document_messages_fields_services_and_methods_but_not_detached_ones() {
    let src = "syntax = \"proto3\";\npackage p.v1;\n\n// Detached: a blank line follows.\n\n\
               // A request.\n// Two lines.\nmessage Req {\n  // The name.\n  string name = 1; // trailing\n\
               \n  string other = 2;\n  // Inner.\n  message In { int32 n = 1; }\n}\n\
               // The service.\nservice S {\n  // Does it.\n  rpc Do (Req) returns (Req);\n}\n";
    let file = parse_files(&[("t.proto", src)]).unwrap().remove(0);
    let doc = |k: &str| file.docs.get(k).map(String::as_str);
    assert_eq!(doc(".p.v1.Req"), Some("A request.\nTwo lines."));
    assert_eq!(doc(".p.v1.Req.name"), Some("The name."));
    assert_eq!(doc(".p.v1.Req.other"), None);
    assert_eq!(doc(".p.v1.Req.In"), Some("Inner."));
    assert_eq!(doc(".p.v1.S"), Some("The service."));
    assert_eq!(doc(".p.v1.S.Do"), Some("Does it."));
    assert_eq!(file.docs.len(), 5, "{:?}", file.docs);
}

#[test]
fn the_file_options_of_upstream_protos_are_kept() {
    let src = "syntax = \"proto3\";\n\
        option csharp_namespace = \"Grpc.Health.V1\";\n\
        option php_namespace = \"Google\\\\Api\";\n\
        option php_metadata_namespace = \"GPBMetadata\\\\Api\";\n\
        option ruby_package = \"Google::Api\";\n\
        option swift_prefix = \"GAPI\";\n\
        option cc_enable_arenas = true;\n";
    let fd = parse_proto("o.proto", src).unwrap();
    let o = fd.options.unwrap();
    assert_eq!(o.csharp_namespace(), "Grpc.Health.V1");
    assert_eq!(o.php_namespace(), "Google\\Api");
    assert_eq!(o.php_metadata_namespace(), "GPBMetadata\\Api");
    assert_eq!(o.ruby_package(), "Google::Api");
    assert_eq!(o.swift_prefix(), "GAPI");
    assert!(o.cc_enable_arenas());
}

#[test]
fn strings_take_escapes() {
    let src = "syntax = \"proto3\";\noption go_package = \"a\\\\b\\x41\\\"\";\n";
    let fd = parse_proto("t.proto", src).unwrap();
    assert_eq!(fd.options.unwrap().go_package(), "a\\bA\"");
}
