//! Messages as JSON, by descriptor: a request's JSON becomes the method's
//! input message on the wire, and the reply's bytes become JSON, with no
//! generated code — the field types come from the parsed `.proto`.
//!
//! The mapping is protobuf's JSON mapping as Kratos configures it:
//! - fields are read by JSON name (`firstSeenAt`) or proto name
//!   (`first_seen_at`) and written by JSON name; unknown fields are
//!   ignored (`DiscardUnknown`), a field given under both names is an error,
//!   and so are two members of one `oneof`;
//! - every field is written, set or not (`EmitUnpopulated`): `""`, `0`,
//!   `false`, `[]`, `{}`, the enum's first name, `null` for a message; a
//!   oneof member only when set;
//! - 64-bit integers are written as strings; integers are read from
//!   numbers or strings, enums from names or numbers, bytes as base64.

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
};
use serde_json::Value;

/// A JSON value that does not fit the message, or reply bytes that do not
/// decode (a server defect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every message and enum of a set of files, by `.package.Name`.
#[derive(Debug, Default)]
pub struct Pool {
    messages: HashMap<String, DescriptorProto>,
    enums: HashMap<String, EnumDescriptorProto>,
}

impl Pool {
    /// Indexes the messages and enums (nested ones included) of `files`.
    pub fn new<'a>(files: impl IntoIterator<Item = &'a FileDescriptorProto>) -> Pool {
        fn walk(prefix: &str, m: &DescriptorProto, pool: &mut Pool) {
            let name = format!("{prefix}.{}", m.name());
            for e in &m.enum_type {
                pool.enums.insert(format!("{name}.{}", e.name()), e.clone());
            }
            for n in &m.nested_type {
                walk(&name, n, pool);
            }
            pool.messages.insert(name, m.clone());
        }
        let mut pool = Pool::default();
        for fd in files {
            let prefix = match fd.package() {
                "" => String::new(),
                p => format!(".{p}"),
            };
            for e in &fd.enum_type {
                pool.enums
                    .insert(format!("{prefix}.{}", e.name()), e.clone());
            }
            for m in &fd.message_type {
                walk(&prefix, m, &mut pool);
            }
        }
        pool
    }

    /// The message named `.package.Name`.
    pub fn message(&self, name: &str) -> Option<&DescriptorProto> {
        self.messages.get(name)
    }

    /// The enum named `.package.Name`.
    pub fn enumeration(&self, name: &str) -> Option<&EnumDescriptorProto> {
        self.enums.get(name)
    }

    /// True if `f` is a `map<K, V>` field.
    pub fn is_map(&self, f: &FieldDescriptorProto) -> bool {
        f.r#type() == Type::Message
            && self
                .message(f.type_name())
                .and_then(|m| m.options.as_ref())
                .is_some_and(|o| o.map_entry())
    }

    /// Encodes the JSON object `value` as message `name`.
    pub fn encode(&self, name: &str, value: &Value) -> Result<Vec<u8>, CodecError> {
        let mut out = Vec::new();
        self.encode_message(name, value, "", &mut out)?;
        Ok(out)
    }

    /// Decodes `bytes` as message `name` into JSON.
    pub fn decode(&self, name: &str, bytes: &[u8]) -> Result<Value, CodecError> {
        self.decode_message(name, bytes)
    }

    fn message_or_err(&self, name: &str) -> Result<&DescriptorProto, CodecError> {
        self.message(name)
            .ok_or_else(|| CodecError(format!("message {name} is not known")))
    }

    fn encode_message(
        &self,
        name: &str,
        value: &Value,
        at: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        let m = self.message_or_err(name)?;
        let Value::Object(object) = value else {
            return Err(CodecError(format!(
                "{}: expected a JSON object, found {}",
                here(at),
                kind(value)
            )));
        };
        let mut seen: Vec<i32> = Vec::new();
        // Per oneof, the member already set: a second one is an error, as
        // the proto3 JSON mapping says ("oneof … is already set" in
        // protojson); a member given as `null` sets nothing.
        let mut oneofs: Vec<(i32, &str)> = Vec::new();
        for (key, v) in object {
            let Some(f) = m
                .field
                .iter()
                .find(|f| f.json_name() == key || f.name() == key)
            else {
                continue; // unknown fields are ignored, as Kratos does
            };
            let path = if at.is_empty() {
                f.name().to_owned()
            } else {
                format!("{at}.{}", f.name())
            };
            if seen.contains(&f.number()) {
                return Err(CodecError(format!(
                    "{path}: given twice (as {} and {})",
                    f.name(),
                    f.json_name()
                )));
            }
            seen.push(f.number());
            if v.is_null() {
                continue;
            }
            if let Some(index) = f.oneof_index {
                if let Some((_, other)) = oneofs.iter().find(|(i, _)| *i == index) {
                    let oneof = m.oneof_decl.get(index as usize).map_or("?", |o| o.name());
                    // In declaration order, whatever order the keys came in.
                    let pos = |n: &str| m.field.iter().position(|x| x.name() == n);
                    let (a, b) = if pos(other) < pos(f.name()) {
                        (*other, f.name())
                    } else {
                        (f.name(), *other)
                    };
                    return Err(CodecError(format!(
                        "{}: oneof {oneof} takes one field, but both {a} and {b} are set",
                        here(at)
                    )));
                }
                oneofs.push((index, f.name()));
            }
            if self.is_map(f) {
                let Value::Object(entries) = v else {
                    return Err(CodecError(format!(
                        "{path}: expected a JSON object (a map), found {}",
                        kind(v)
                    )));
                };
                let entry = self.message_or_err(f.type_name())?;
                for (k, item) in entries {
                    let mut buf = Vec::new();
                    let key_field = &entry.field[0];
                    let key_value = if key_field.r#type() == Type::Bool {
                        match k.as_str() {
                            "true" => Value::Bool(true),
                            "false" => Value::Bool(false),
                            _ => {
                                return Err(CodecError(format!(
                                    "{path}: map key {k:?} is not a bool"
                                )))
                            }
                        }
                    } else {
                        Value::String(k.clone())
                    };
                    self.encode_field(key_field, &key_value, &format!("{path}[{k:?}]"), &mut buf)?;
                    if !item.is_null() {
                        self.encode_field(
                            &entry.field[1],
                            item,
                            &format!("{path}[{k:?}]"),
                            &mut buf,
                        )?;
                    }
                    tag(out, f.number(), 2);
                    varint(out, buf.len() as u64);
                    out.extend_from_slice(&buf);
                }
            } else if f.label() == Label::Repeated {
                let Value::Array(items) = v else {
                    return Err(CodecError(format!(
                        "{path}: expected a JSON array, found {}",
                        kind(v)
                    )));
                };
                for (i, item) in items.iter().enumerate() {
                    self.encode_field(f, item, &format!("{path}[{i}]"), out)?;
                }
            } else {
                self.encode_field(f, v, &path, out)?;
            }
        }
        Ok(())
    }

    /// Encodes one value of field `f` (one element, for a repeated field).
    fn encode_field(
        &self,
        f: &FieldDescriptorProto,
        v: &Value,
        path: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        let n = f.number();
        let wrong = |want: &str| CodecError(format!("{path}: expected {want}, found {}", kind(v)));
        match f.r#type() {
            Type::String => {
                let s = v.as_str().ok_or_else(|| wrong("a string"))?;
                tag(out, n, 2);
                varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            Type::Bytes => {
                let s = v.as_str().ok_or_else(|| wrong("a base64 string"))?;
                let bytes = base64_decode(s)
                    .ok_or_else(|| CodecError(format!("{path}: {s:?} is not base64")))?;
                tag(out, n, 2);
                varint(out, bytes.len() as u64);
                out.extend_from_slice(&bytes);
            }
            Type::Bool => {
                let b = v.as_bool().ok_or_else(|| wrong("true or false"))?;
                tag(out, n, 0);
                varint(out, u64::from(b));
            }
            Type::Enum => {
                let e = self
                    .enumeration(f.type_name())
                    .ok_or_else(|| CodecError(format!("enum {} is not known", f.type_name())))?;
                let number = match v {
                    Value::String(s) => e
                        .value
                        .iter()
                        .find(|x| x.name() == s)
                        .map(|x| x.number())
                        .ok_or_else(|| {
                            CodecError(format!("{path}: {s:?} is not a value of {}", e.name()))
                        })?,
                    Value::Number(_) => {
                        integer(v, path, i64::from(i32::MIN) as i128, i32::MAX as i128)? as i32
                    }
                    _ => return Err(wrong("an enum name")),
                };
                tag(out, n, 0);
                varint(out, number as i64 as u64);
            }
            Type::Message => {
                let mut buf = Vec::new();
                self.encode_message(f.type_name(), v, path, &mut buf)?;
                tag(out, n, 2);
                varint(out, buf.len() as u64);
                out.extend_from_slice(&buf);
            }
            Type::Double | Type::Float => {
                let x = float(v, path)?;
                if f.r#type() == Type::Double {
                    tag(out, n, 1);
                    out.extend_from_slice(&x.to_le_bytes());
                } else {
                    tag(out, n, 5);
                    out.extend_from_slice(&(x as f32).to_le_bytes());
                }
            }
            Type::Int32 | Type::Sint32 | Type::Sfixed32 => {
                let x = integer(v, path, i32::MIN as i128, i32::MAX as i128)? as i32;
                match f.r#type() {
                    Type::Int32 => {
                        tag(out, n, 0);
                        varint(out, x as i64 as u64);
                    }
                    Type::Sint32 => {
                        tag(out, n, 0);
                        varint(out, ((x << 1) ^ (x >> 31)) as u32 as u64);
                    }
                    _ => {
                        tag(out, n, 5);
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                }
            }
            Type::Uint32 | Type::Fixed32 => {
                let x = integer(v, path, 0, u32::MAX as i128)? as u32;
                if f.r#type() == Type::Uint32 {
                    tag(out, n, 0);
                    varint(out, u64::from(x));
                } else {
                    tag(out, n, 5);
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            Type::Int64 | Type::Sint64 | Type::Sfixed64 => {
                let x = integer(v, path, i64::MIN as i128, i64::MAX as i128)? as i64;
                match f.r#type() {
                    Type::Int64 => {
                        tag(out, n, 0);
                        varint(out, x as u64);
                    }
                    Type::Sint64 => {
                        tag(out, n, 0);
                        varint(out, ((x << 1) ^ (x >> 63)) as u64);
                    }
                    _ => {
                        tag(out, n, 1);
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                }
            }
            Type::Uint64 | Type::Fixed64 => {
                let x = integer(v, path, 0, u64::MAX as i128)? as u64;
                if f.r#type() == Type::Uint64 {
                    tag(out, n, 0);
                    varint(out, x);
                } else {
                    tag(out, n, 1);
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            Type::Group => return Err(CodecError(format!("{path}: groups are not supported"))),
        }
        Ok(())
    }
}

fn here(at: &str) -> &str {
    if at.is_empty() {
        "request"
    } else {
        at
    }
}

/// The JSON type of `v`, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn integer(v: &Value, path: &str, min: i128, max: i128) -> Result<i128, CodecError> {
    let parsed = match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e19)
                    .map(|f| f as i128)
            }),
        Value::String(s) => s.trim().parse::<i128>().ok(),
        _ => None,
    };
    match parsed {
        Some(x) if (min..=max).contains(&x) => Ok(x),
        Some(x) => Err(CodecError(format!(
            "{path}: {x} is out of range ({min}..={max})"
        ))),
        None => Err(CodecError(format!(
            "{path}: expected an integer, found {}",
            describe(v)
        ))),
    }
}

fn float(v: &Value, path: &str) -> Result<f64, CodecError> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| CodecError(format!("{path}: bad number"))),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            s => s
                .parse()
                .map_err(|_| CodecError(format!("{path}: expected a number, found {s:?}"))),
        },
        other => Err(CodecError(format!(
            "{path}: expected a number, found {}",
            kind(other)
        ))),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => kind(other).to_owned(),
    }
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(s).ok())
}

fn tag(out: &mut Vec<u8>, number: i32, wire: u8) {
    varint(out, ((number as u64) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

mod decode;
mod known;
pub use known::{field_value, known_fields};

#[cfg(test)]
mod tests;
