use prost::Message;

use super::*;
use crate::protocol::grpc::descriptor::{parse_files, VALIDATE_FILE};

const PROTO: &str = r#"
syntax = "proto3";
package t.v1;
import "buf/validate/validate.proto";
message Req {
  string name = 1 [(buf.validate.field).required = true, (buf.validate.field).string.max_bytes = 8];
  string code = 2 [(buf.validate.field).string = {min_len: 2, max_len: 4, pattern: "^[a-z]+$"}];
  int32 size = 3 [(buf.validate.field).int32 = {gte: 0, lte: 10}];
  sint64 delta = 4 [(buf.validate.field).sint64.gte = -5];
  string free = 5;
}
"#;

#[derive(Clone, PartialEq, prost::Message)]
struct Req {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    code: String,
    #[prost(int32, tag = "3")]
    size: i32,
    #[prost(sint64, tag = "4")]
    delta: i64,
}

fn validator() -> Validator {
    let files = parse_files(&[("t.proto", PROTO), VALIDATE_FILE]).unwrap();
    let pool = Pool::new(files.iter().map(|f| &f.descriptor));
    Validator::new(&files, &pool)
}

fn reasons(req: Req) -> Vec<String> {
    match validator().check(".t.v1.Req", &req.encode_to_vec()) {
        Ok(()) => vec![],
        Err(f) => {
            assert_eq!(f.code, Code::InvalidArgument);
            assert_eq!(f.reason, f.violations[0].reason);
            f.violations.into_iter().map(|v| v.reason).collect()
        }
    }
}

fn req(name: &str, code: &str, size: i32, delta: i64) -> Req {
    Req {
        name: name.into(),
        code: code.into(),
        size,
        delta,
    }
}

#[test]
fn each_rule_is_enforced_with_its_reason_and_every_broken_field_is_named() {
    let cases: [(Req, &[&str]); 9] = [
        (req("ann", "ab", 3, 0), &[]),
        (req("", "ab", 3, 0), &["NAME_EMPTY"]),
        (req("山山山", "ab", 3, 0), &["NAME_TOO_LONG"]),
        (req("ann", "a", 3, 0), &["CODE_TOO_SHORT"]),
        (req("ann", "abcde", 3, 0), &["CODE_TOO_LONG"]),
        (req("ann", "aB", 3, 0), &["CODE_INVALID_CHARACTERS"]),
        (
            req("ann", "ab", -1, -6),
            &["SIZE_NEGATIVE", "DELTA_TOO_SMALL"],
        ),
        (req("ann", "ab", 11, 0), &["SIZE_TOO_LARGE"]),
        // Rules apply to zero values too (proto3 fields have no presence),
        // as protovalidate does: an empty code breaks min_len.
        (req("", "", 0, 0), &["NAME_EMPTY", "CODE_EMPTY"]),
    ];
    for (req, want) in cases {
        assert_eq!(reasons(req.clone()), want, "{req:?}");
    }
}

#[test]
fn messages_name_field_and_bound_never_the_value() {
    let f = validator()
        .check(
            ".t.v1.Req",
            &req(&"x".repeat(9), "aB", 3, 0).encode_to_vec(),
        )
        .unwrap_err();
    assert_eq!(
        f.message,
        "name must be at most 8 bytes of UTF-8, got 9 bytes; \
         code must match ^[a-z]+$ (found 'B', U+0042, at byte 1)"
    );
    assert_eq!(f.violations[0].field, "name");
    assert_eq!(f.violations[1].field, "code");
}

#[test]
fn malformed_bytes_and_messages_without_rules_are_left_to_the_decoder() {
    let v = validator();
    assert!(v.check(".t.v1.Req", &[0x0a, 0x05, b'a']).is_ok());
    // Field 1 (a string) sent as a varint: the wrong wire type.
    assert!(v.check(".t.v1.Req", &[0x08, 0x01]).is_ok());
    assert!(v.check(".t.v1.Other", b"anything").is_ok());
    // Zero bytes read as field number 0, which does not exist: not walked
    // (a gzip bomb of zeros stops at its first byte), left to the decoder.
    assert!(v.check(".t.v1.Req", &vec![0u8; 1 << 20]).is_ok());
}

#[test]
fn rules_the_parser_cannot_enforce_are_startup_errors_naming_the_line() {
    let cases = [
        (
            "string s = 1 [(buf.validate.field).string.email = true];",
            "`email` is not supported",
        ),
        (
            "int32 n = 1 [(buf.validate.field).string.min_len = 1];",
            "does not apply to a field of type int32",
        ),
        (
            "string s = 1 [(buf.validate.field).string.pattern = \"a|b\"];",
            "must start with ^[",
        ),
        (
            "string s = 1 [deprecated = true];",
            "only `(buf.validate.field)` options",
        ),
        (
            "repeated string s = 1 [(buf.validate.field).string.min_len = 1];",
            "repeated",
        ),
    ];
    for (field, want) in cases {
        let src = format!(
            "syntax = \"proto3\";\npackage t;\nimport \"buf/validate/validate.proto\";\n\
             message M {{\n  {field}\n}}\n"
        );
        let err = parse_files(&[("t.proto", &src), VALIDATE_FILE]).unwrap_err();
        assert_eq!(err.line, 5, "{err}");
        assert!(err.message.contains(want), "{err}");
    }
    let without_import = "syntax = \"proto3\";\nmessage M {\n  \
                          string s = 1 [(buf.validate.field).required = true];\n}\n";
    let err = parse_files(&[("t.proto", without_import)]).unwrap_err();
    assert!(
        err.message
            .contains("needs `import \"buf/validate/validate.proto\";`"),
        "{err}"
    );
}

#[test]
fn a_message_with_more_checked_fields_than_the_stack_holds_is_checked_whole() {
    // Ten required strings: more than `INLINE_FIELDS`, so the values spill.
    let fields: String = (1..=10)
        .map(|n| format!("  string f{n} = {n} [(buf.validate.field).required = true];\n"))
        .collect();
    let proto = format!(
        "syntax = \"proto3\";\npackage w.v1;\nimport \"buf/validate/validate.proto\";\nmessage Wide {{\n{fields}}}\n"
    );
    let files = parse_files(&[("w.proto", &proto), VALIDATE_FILE]).unwrap();
    let pool = Pool::new(files.iter().map(|f| &f.descriptor));
    let validator = Validator::new(&files, &pool);
    assert!(validator.messages[".w.v1.Wide"].len() > INLINE_FIELDS);
    // Fields 1..=10 set to "x", except 3 and 10: length-delimited, tag n.
    let mut bytes = Vec::new();
    for n in (1..=10u8).filter(|n| *n != 3 && *n != 10) {
        bytes.extend_from_slice(&[n << 3 | 2, 1, b'x']);
    }
    let failure = validator.check(".w.v1.Wide", &bytes).unwrap_err();
    let reasons: Vec<_> = failure
        .violations
        .iter()
        .map(|v| v.reason.as_str())
        .collect();
    assert_eq!(reasons, ["F3_EMPTY", "F10_EMPTY"]);
    // The last occurrence of a field on the wire is its value.
    bytes.extend_from_slice(&[3 << 3 | 2, 0, 3 << 3 | 2, 1, b'y', 10 << 3 | 2, 1, b'z']);
    assert!(validator.check(".w.v1.Wide", &bytes).is_ok());
}
