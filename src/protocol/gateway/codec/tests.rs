//! The descriptor-driven codec against prost as the oracle: JSON encoded
//! here decodes with prost to the expected struct, and prost's bytes
//! decode here to the expected JSON (every scalar type, zigzag, packed
//! repeated, nested, map, enum, defaults emitted).

use std::collections::HashMap;

use serde_json::json;

use super::*;
use crate::protocol::grpc::descriptor::parse_proto;

const PROTO: &str = r#"
syntax = "proto3";
package c;
enum E { E0 = 0; E1 = 1; }
message Inner { string name = 1; }
message All {
  double d = 1; float f = 2; int32 i32 = 3; int64 i64 = 4; uint32 u32 = 5;
  uint64 u64 = 6; sint32 s32 = 7; sint64 s64 = 8; fixed32 fx32 = 9;
  fixed64 fx64 = 10; sfixed32 sf32 = 11; sfixed64 sf64 = 12; bool b = 13;
  string s = 14; bytes by = 15; E e = 16; Inner inner = 17;
  repeated int32 ri = 18; repeated Inner rinner = 19; map<string, int64> m = 20;
  string first_name = 21;
}
"#;

#[derive(Clone, PartialEq, prost::Message)]
struct Inner {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct All {
    #[prost(double, tag = "1")]
    d: f64,
    #[prost(float, tag = "2")]
    f: f32,
    #[prost(int32, tag = "3")]
    i32: i32,
    #[prost(int64, tag = "4")]
    i64: i64,
    #[prost(uint32, tag = "5")]
    u32: u32,
    #[prost(uint64, tag = "6")]
    u64: u64,
    #[prost(sint32, tag = "7")]
    s32: i32,
    #[prost(sint64, tag = "8")]
    s64: i64,
    #[prost(fixed32, tag = "9")]
    fx32: u32,
    #[prost(fixed64, tag = "10")]
    fx64: u64,
    #[prost(sfixed32, tag = "11")]
    sf32: i32,
    #[prost(sfixed64, tag = "12")]
    sf64: i64,
    #[prost(bool, tag = "13")]
    b: bool,
    #[prost(string, tag = "14")]
    s: String,
    #[prost(bytes = "vec", tag = "15")]
    by: Vec<u8>,
    #[prost(int32, tag = "16")]
    e: i32,
    #[prost(message, optional, tag = "17")]
    inner: Option<Inner>,
    #[prost(int32, repeated, tag = "18")]
    ri: Vec<i32>,
    #[prost(message, repeated, tag = "19")]
    rinner: Vec<Inner>,
    #[prost(map = "string, int64", tag = "20")]
    m: HashMap<String, i64>,
    #[prost(string, tag = "21")]
    first_name: String,
}

fn pool() -> Pool {
    Pool::new([&parse_proto("c.proto", PROTO).unwrap()])
}

fn sample() -> All {
    All {
        d: -2.5,
        f: 0.5,
        i32: -7,
        i64: i64::MIN,
        u32: u32::MAX,
        u64: u64::MAX,
        s32: -3,
        s64: -9_007_199_254_740_993,
        fx32: 4,
        fx64: 5,
        sf32: -6,
        sf64: -8,
        b: true,
        s: "zoë".into(),
        by: vec![0, 1, 2, 255],
        e: 1,
        inner: Some(Inner { name: "in".into() }),
        ri: vec![1, -1, 300],
        rinner: vec![Inner { name: "a".into() }, Inner::default()],
        m: HashMap::from([("k".to_owned(), -1)]),
        first_name: "ann".into(),
    }
}

fn sample_json() -> Value {
    json!({
        "d": -2.5, "f": 0.5, "i32": -7, "i64": "-9223372036854775808",
        "u32": 4294967295u32, "u64": "18446744073709551615", "s32": -3,
        "s64": "-9007199254740993", "fx32": 4, "fx64": "5", "sf32": -6, "sf64": "-8",
        "b": true, "s": "zoë", "by": "AAEC/w==", "e": "E1", "inner": {"name": "in"},
        "ri": [1, -1, 300], "rinner": [{"name": "a"}, {"name": ""}], "m": {"k": "-1"},
        "firstName": "ann"
    })
}

#[test]
fn json_encoded_by_descriptor_decodes_with_prost_to_the_same_values() {
    let bytes = pool().encode(".c.All", &sample_json()).unwrap();
    assert_eq!(
        <All as prost::Message>::decode(&bytes[..]).unwrap(),
        sample()
    );
    // Numbers as strings, enum numbers, proto names and URL-safe base64 are read too.
    let loose = json!({"i32": "-7", "u64": 18446744073709551615u64, "e": 1, "first_name": "ann", "by": "AAEC_w"});
    let bytes = pool().encode(".c.All", &loose).unwrap();
    let got = <All as prost::Message>::decode(&bytes[..]).unwrap();
    assert_eq!(
        (got.i32, got.u64, got.e, got.first_name.as_str(), got.by),
        (-7, u64::MAX, 1, "ann", vec![0, 1, 2, 255])
    );
}

#[test]
fn prost_bytes_decode_by_descriptor_to_protojson_with_every_field_emitted() {
    let bytes = prost::Message::encode_to_vec(&sample());
    assert_eq!(pool().decode(".c.All", &bytes).unwrap(), sample_json());
    let empty = pool().decode(".c.All", &[]).unwrap();
    assert_eq!(empty["i64"], "0");
    assert_eq!(empty["e"], "E0");
    assert_eq!(empty["inner"], Value::Null);
    assert_eq!(
        (&empty["ri"], &empty["m"], &empty["by"]),
        (&json!([]), &json!({}), &json!(""))
    );
}

#[test]
fn values_that_do_not_fit_their_field_are_errors_naming_the_field() {
    let cases = [
        (
            json!({"i32": 2147483648u64}),
            "i32: 2147483648 is out of range",
        ),
        (json!({"u32": -1}), "u32: -1 is out of range"),
        (
            json!({"i64": 1.5}),
            "i64: expected an integer, found a number",
        ),
        (json!({"s": 5}), "s: expected a string, found a number"),
        (
            json!({"b": "true"}),
            "b: expected true or false, found a string",
        ),
        (json!({"e": "E9"}), "e: \"E9\" is not a value of E"),
        (json!({"by": "***"}), "by: \"***\" is not base64"),
        (
            json!({"inner": []}),
            "inner: expected a JSON object, found an array",
        ),
        (
            json!({"rinner": [{"name": 1}]}),
            "rinner[0].name: expected a string, found a number",
        ),
        (
            json!({"m": {"k": "x"}}),
            "m[\"k\"]: expected an integer, found \"x\"",
        ),
        (json!({"firstName": "a", "first_name": "b"}), "given twice"),
        (
            json!([1]),
            "request: expected a JSON object, found an array",
        ),
    ];
    for (value, want) in cases {
        let err = pool().encode(".c.All", &value).unwrap_err();
        assert!(err.0.contains(want), "{value}: {err}");
    }
    // Unknown fields and nulls are ignored.
    assert_eq!(
        pool()
            .encode(".c.All", &json!({"nope": 1, "s": null}))
            .unwrap(),
        Vec::<u8>::new()
    );
}
