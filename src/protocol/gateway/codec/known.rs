//! A request body as the input message sees it: only the keys the message
//! knows, at every depth, are built.
//!
//! Unknown keys are ignored (as Kratos does), so their values need never be
//! built: parsing the whole body into a `serde_json::Value` first made a
//! 4 MB body whose unknown key held 2 million zeros cost 159 MB (a `Value`
//! is 32 bytes per number, plus the array's growth). Here the body is read
//! against the message's descriptor: the value of a key the message (or a
//! nested message, a repeated message's elements, a map's message values)
//! does not know is skipped as it is read (`IgnoredAny`), and so are the
//! insides of an array or object where the field takes neither (a string
//! field given `[0,0,…]`): an empty one stands in for it, so that the
//! encoder still refuses it by its kind. Known values are built with the
//! same rules as [`crate::web::bind`]: no repeated key.

use std::fmt;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::Pool;
use crate::web::bind::BindError;

/// The object in `body` read as message `m`: its unknown keys, at every
/// depth, skipped unbuilt. The error reads `invalid JSON body: …` like
/// [`crate::web::bind::json_object`].
pub fn known_fields(
    body: &[u8],
    pool: &Pool,
    m: &DescriptorProto,
) -> Result<Map<String, Value>, BindError> {
    let seed = Seed {
        pool,
        shape: Shape::Message(m),
        top: true,
    };
    match read(body, seed)? {
        Value::Object(object) => Ok(object),
        _ => unreachable!("the top-level seed only accepts an object"),
    }
}

/// `body` read as the value of field `f` (a body bound to one field).
pub fn field_value(body: &[u8], pool: &Pool, f: &FieldDescriptorProto) -> Result<Value, BindError> {
    let seed = Seed {
        pool,
        shape: Shape::of(pool, f),
        top: false,
    };
    read(body, seed)
}

fn read(body: &[u8], seed: Seed<'_>) -> Result<Value, BindError> {
    let invalid = |why: String| BindError::Decode(format!("invalid JSON body: {why}"));
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = seed
        .deserialize(&mut de)
        .map_err(|e| invalid(e.to_string()))?;
    de.end().map_err(|e| invalid(e.to_string()))?;
    Ok(value)
}

/// What the value at one place of the body may be.
#[derive(Clone, Copy)]
enum Shape<'a> {
    /// A message: an object of its fields.
    Message(&'a DescriptorProto),
    /// A repeated message field: an array of messages.
    Messages(&'a DescriptorProto),
    /// A map field: an object of any keys, whose values are messages
    /// (`Some`) or scalars.
    Map(Option<&'a DescriptorProto>),
    /// A singular scalar field (numbers, strings, booleans, enums, bytes).
    Scalar,
    /// A repeated scalar field: an array of scalars.
    Scalars,
}

impl<'a> Shape<'a> {
    /// The shape of field `f`'s value.
    fn of(pool: &'a Pool, f: &FieldDescriptorProto) -> Shape<'a> {
        if pool.is_map(f) {
            let value = pool
                .message(f.type_name())
                .and_then(|entry| entry.field.get(1))
                .filter(|v| v.r#type() == Type::Message)
                .and_then(|v| pool.message(v.type_name()));
            return Shape::Map(value);
        }
        let message = (f.r#type() == Type::Message)
            .then(|| pool.message(f.type_name()))
            .flatten();
        match (message, f.label() == Label::Repeated) {
            (Some(m), false) => Shape::Message(m),
            (Some(m), true) => Shape::Messages(m),
            (None, false) => Shape::Scalar,
            (None, true) => Shape::Scalars,
        }
    }
}

struct Seed<'a> {
    pool: &'a Pool,
    shape: Shape<'a>,
    /// The body itself: anything but an object is refused here.
    top: bool,
}

impl<'a> Seed<'a> {
    fn with(&self, shape: Shape<'a>) -> Seed<'a> {
        Seed {
            pool: self.pool,
            shape,
            top: false,
        }
    }

    /// A scalar where the top level wants an object is refused.
    fn scalar<E: serde::de::Error>(&self, v: Value, found: &str) -> Result<Value, E> {
        if self.top {
            return Err(not_an_object(found));
        }
        Ok(v)
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.top {
            "a JSON object"
        } else {
            "a JSON value"
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let (fields, values) = match self.shape {
            Shape::Message(m) => (Some(m), None),
            Shape::Map(values) => (None, Some(values)),
            // An object where none fits: skipped, an empty one stands in.
            Shape::Messages(_) | Shape::Scalar | Shape::Scalars => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return Ok(Value::Object(Map::new()));
            }
        };
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let shape = match (fields, values) {
                (Some(m), _) => {
                    let field = m
                        .field
                        .iter()
                        .find(|f| f.json_name() == key || f.name() == key);
                    match field {
                        Some(f) => Shape::of(self.pool, f),
                        None => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    }
                }
                (None, Some(Some(m))) => Shape::Message(m),
                _ => Shape::Scalar,
            };
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key {key:?}"
                )));
            }
            let v = map.next_value_seed(self.with(shape))?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self.top {
            return Err(not_an_object("an array"));
        }
        let element = match self.shape {
            Shape::Messages(m) => Shape::Message(m),
            Shape::Scalars => Shape::Scalar,
            // An array where none fits: skipped, an empty one stands in.
            Shape::Message(_) | Shape::Map(_) | Shape::Scalar => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(Value::Array(Vec::new()));
            }
        };
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self.with(element))? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.scalar(Value::String(v.to_owned()), "a string")
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.scalar(Value::String(v), "a string")
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.scalar(Value::from(v), "a number")
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.scalar(Value::from(v), "a number")
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.scalar(Value::from(v), "a number")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.scalar(Value::Bool(v), "a boolean")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.scalar(Value::Null, "null")
    }
}

fn not_an_object<E: serde::de::Error>(found: &str) -> E {
    E::custom(format_args!("expected a JSON object, found {found}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::grpc::descriptor::parse_proto;

    const PROTO: &str = r#"
syntax = "proto3";
package k;
message Inner { string name = 1; }
message Login {
  string username = 1; string password = 2; Inner inner = 3;
  repeated Inner rinner = 4; map<string, Inner> minner = 5; repeated int32 ri = 6;
}
"#;

    fn login(pool: &Pool) -> &DescriptorProto {
        pool.message(".k.Login").unwrap()
    }

    fn pool() -> Pool {
        Pool::new([&parse_proto("k.proto", PROTO).unwrap()])
    }

    #[test]
    fn unknown_keys_are_skipped_unbuilt_and_known_ones_keep_the_strict_rules() {
        let pool = pool();
        let body = br#"{"junk":[0,0,0,{"x":1,"x":2}],"username":"ann","password":"pw"}"#;
        let got = known_fields(body, &pool, login(&pool)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got["username"], "ann");
        let dup = br#"{"username":"a","username":"b"}"#;
        let dup = known_fields(dup, &pool, login(&pool)).unwrap_err();
        assert!(dup.to_string().contains("duplicate key"), "{dup}");
        let arr = known_fields(br#"["ann","pw"]"#, &pool, login(&pool)).unwrap_err();
        assert!(
            arr.to_string()
                .contains("expected a JSON object, found an array"),
            "{arr}"
        );
        assert!(known_fields(br#"{"username":"a"} x"#, &pool, login(&pool)).is_err());
        let deep_dup = br#"{"inner":{"name":"a","name":"b"}}"#;
        assert!(known_fields(deep_dup, &pool, login(&pool)).is_err());
    }

    #[test]
    fn unknown_keys_are_skipped_at_every_depth() {
        let pool = pool();
        let body = br#"{
            "inner": {"name": "a", "junk": [1, 2, {"deep": 3}]},
            "rinner": [{"name": "b", "junk": {"x": 1}}, {"junk": 2}],
            "minner": {"k": {"name": "c", "junk": [0]}},
            "ri": [1, 2],
            "username": {"not": "a string"},
            "password": [0, 0, 0]
        }"#;
        let got = Value::Object(known_fields(body, &pool, login(&pool)).unwrap());
        let want = serde_json::json!({
            "inner": {"name": "a"},
            "rinner": [{"name": "b"}, {}],
            "minner": {"k": {"name": "c"}},
            "ri": [1, 2],
            // Where the field takes neither, an empty one of the same kind
            // stands in, so that the encoder refuses it as before.
            "username": {},
            "password": []
        });
        assert_eq!(got, want);
    }

    #[test]
    fn two_million_zeros_under_nested_unknown_keys_are_skipped() {
        let pool = pool();
        let zeros = "0,".repeat(2_000_000);
        let body = format!(
            r#"{{"inner":{{"name":"a","junk":[{zeros}0]}},"rinner":[{{"junk":[{zeros}0]}}],"username":[{zeros}0]}}"#
        );
        let got = known_fields(body.as_bytes(), &pool, login(&pool)).unwrap();
        assert_eq!(got["inner"], serde_json::json!({"name": "a"}));
        assert_eq!(got["rinner"], serde_json::json!([{}]));
        assert_eq!(got["username"], serde_json::json!([]));
    }
}
