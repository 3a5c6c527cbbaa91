//! A request body's top-level object, keeping only the keys the input
//! message knows.
//!
//! Unknown keys are ignored (as Kratos does), so their values need never be
//! built: parsing the whole body into a `serde_json::Value` first made a
//! 4 MB body whose unknown key held 2 million zeros cost 159 MB (a `Value`
//! is 32 bytes per number, plus the array's growth). Here the values of
//! unknown keys are skipped as they are read (`IgnoredAny`), and only the
//! known ones are built, with the same rules as [`crate::web::bind`]: an
//! object, no repeated key.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::web::bind::{BindError, StrictValue};

/// The object in `body`, with only the keys `known` accepts; the error
/// reads `invalid JSON body: …` like [`crate::web::bind::json_object`].
pub fn known_fields(
    body: &[u8],
    known: &dyn Fn(&str) -> bool,
) -> Result<Map<String, Value>, BindError> {
    let invalid = |why: String| BindError::Decode(format!("invalid JSON body: {why}"));
    let mut de = serde_json::Deserializer::from_slice(body);
    let object = Known(known)
        .deserialize(&mut de)
        .map_err(|e| invalid(e.to_string()))?;
    de.end().map_err(|e| invalid(e.to_string()))?;
    Ok(object)
}

struct Known<'a>(&'a dyn Fn(&str) -> bool);

impl<'de> DeserializeSeed<'de> for Known<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Known<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if !(self.0)(&key) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key {key:?}"
                )));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(out)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(not_an_object("an array"))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Err(not_an_object("a string"))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Err(not_an_object("a number"))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Err(not_an_object("a number"))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Err(not_an_object("a number"))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Err(not_an_object("a boolean"))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Err(not_an_object("null"))
    }
}

fn not_an_object<E: serde::de::Error>(found: &str) -> E {
    E::custom(format_args!("expected a JSON object, found {found}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_skipped_unbuilt_and_known_ones_keep_the_strict_rules() {
        let known = |k: &str| k == "username" || k == "password";
        let body = br#"{"junk":[0,0,0,{"x":1,"x":2}],"username":"ann","password":"pw"}"#;
        let got = known_fields(body, &known).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got["username"], "ann");
        let dup = known_fields(br#"{"username":"a","username":"b"}"#, &known).unwrap_err();
        assert!(dup.to_string().contains("duplicate key"), "{dup}");
        let arr = known_fields(br#"["ann","pw"]"#, &known).unwrap_err();
        assert!(
            arr.to_string()
                .contains("expected a JSON object, found an array"),
            "{arr}"
        );
        assert!(known_fields(br#"{"username":"a"} x"#, &known).is_err());
    }

    #[test]
    fn an_unknown_key_holding_2_million_zeros_is_skipped() {
        let mut body = b"{\"junk\":[".to_vec();
        body.extend(std::iter::repeat_n(b"0,".as_slice(), 2_000_000).flatten());
        body.extend_from_slice(b"0],\"username\":\"ann\"}");
        let got = known_fields(&body, &|k| k == "username").unwrap();
        assert_eq!(got.len(), 1);
    }
}
