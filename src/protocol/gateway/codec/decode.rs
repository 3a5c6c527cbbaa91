//! Reply bytes to JSON, by descriptor (the other half of [`super`]).

use base64::Engine as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::FieldDescriptorProto;
use serde_json::{Map, Number, Value};

use super::{CodecError, Pool};

impl Pool {
    pub(super) fn decode_message(&self, name: &str, mut buf: &[u8]) -> Result<Value, CodecError> {
        let m = self.message_or_err(name)?;
        let mut out = Map::new();
        for f in &m.field {
            if f.oneof_index.is_none() {
                out.insert(f.json_name().to_owned(), self.default_json(f));
            }
        }
        let bad = |what: &str| CodecError(format!("reply message {name}: {what}"));
        while !buf.is_empty() {
            let key = read_varint(&mut buf).ok_or_else(|| bad("truncated field key"))?;
            let (number, wire) = ((key >> 3) as i32, (key & 7) as u8);
            let payload: &[u8];
            let mut scalar = 0u64;
            match wire {
                0 => scalar = read_varint(&mut buf).ok_or_else(|| bad("truncated varint"))?,
                1 | 5 => {
                    let len = if wire == 1 { 8 } else { 4 };
                    let (head, rest) = buf
                        .split_at_checked(len)
                        .ok_or_else(|| bad("truncated fixed field"))?;
                    let mut b = [0u8; 8];
                    b[..len].copy_from_slice(head);
                    scalar = u64::from_le_bytes(b);
                    buf = rest;
                }
                2 => {}
                _ => return Err(bad(&format!("unsupported wire type {wire}"))),
            }
            if wire == 2 {
                let len = read_varint(&mut buf).ok_or_else(|| bad("truncated length"))? as usize;
                let (head, rest) = buf
                    .split_at_checked(len)
                    .ok_or_else(|| bad("truncated field"))?;
                payload = head;
                buf = rest;
            } else {
                payload = &[];
            }
            let Some(f) = m.field.iter().find(|f| f.number() == number) else {
                continue; // unknown field
            };
            let key = f.json_name().to_owned();
            if self.is_map(f) {
                let entry = self.message_or_err(f.type_name())?;
                let decoded = self.decode_message(f.type_name(), payload)?;
                let k = match &decoded[entry.field[0].json_name()] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let v = decoded[entry.field[1].json_name()].clone();
                if let Some(Value::Object(map)) = out.get_mut(&key) {
                    map.insert(k, v);
                }
                continue;
            }
            let values: Vec<Value> = if wire == 2 && is_packable(f.r#type()) {
                // A packed run of scalars.
                let mut p = payload;
                let mut values = Vec::new();
                while !p.is_empty() {
                    let x = match fixed_width(f.r#type()) {
                        Some(len) => {
                            let (head, rest) = p
                                .split_at_checked(len)
                                .ok_or_else(|| bad("truncated packed field"))?;
                            let mut b = [0u8; 8];
                            b[..len].copy_from_slice(head);
                            p = rest;
                            u64::from_le_bytes(b)
                        }
                        None => {
                            read_varint(&mut p).ok_or_else(|| bad("truncated packed varint"))?
                        }
                    };
                    values.push(self.scalar_json(f, x));
                }
                values
            } else if wire == 2 {
                vec![match f.r#type() {
                    Type::String => Value::String(
                        String::from_utf8(payload.to_vec())
                            .map_err(|_| bad("a string field is not UTF-8"))?,
                    ),
                    Type::Bytes => {
                        Value::String(base64::engine::general_purpose::STANDARD.encode(payload))
                    }
                    Type::Message => self.decode_message(f.type_name(), payload)?,
                    _ => return Err(bad(&format!("field {} has the wrong wire type", f.name()))),
                }]
            } else {
                vec![self.scalar_json(f, scalar)]
            };
            if f.label() == Label::Repeated {
                if let Some(Value::Array(items)) = out.get_mut(&key) {
                    items.extend(values);
                }
            } else if let Some(v) = values.into_iter().last() {
                out.insert(key, v);
            }
        }
        Ok(Value::Object(out))
    }

    /// What an unset field looks like in JSON (`EmitUnpopulated`).
    fn default_json(&self, f: &FieldDescriptorProto) -> Value {
        if self.is_map(f) {
            return Value::Object(Map::new());
        }
        if f.label() == Label::Repeated {
            return Value::Array(Vec::new());
        }
        match f.r#type() {
            Type::Message => Value::Null,
            Type::String | Type::Bytes => Value::String(String::new()),
            _ => self.scalar_json(f, 0),
        }
    }

    /// A varint or fixed-width value of field `f` as JSON.
    fn scalar_json(&self, f: &FieldDescriptorProto, x: u64) -> Value {
        match f.r#type() {
            Type::Bool => Value::Bool(x != 0),
            Type::Int32 | Type::Sfixed32 => Value::from(x as i32),
            Type::Sint32 => Value::from(((x as u32) >> 1) as i32 ^ -((x & 1) as i32)),
            Type::Uint32 | Type::Fixed32 => Value::from(x as u32),
            Type::Int64 | Type::Sfixed64 => Value::String((x as i64).to_string()),
            Type::Sint64 => Value::String(((x >> 1) as i64 ^ -((x & 1) as i64)).to_string()),
            Type::Uint64 | Type::Fixed64 => Value::String(x.to_string()),
            Type::Double => float_json(f64::from_bits(x)),
            Type::Float => float_json(f64::from(f32::from_bits(x as u32))),
            Type::Enum => {
                let n = x as i32;
                self.enumeration(f.type_name())
                    .and_then(|e| e.value.iter().find(|v| v.number() == n))
                    .map_or(Value::from(n), |v| Value::String(v.name().to_owned()))
            }
            _ => Value::Null,
        }
    }
}

fn float_json(x: f64) -> Value {
    if x.is_nan() {
        Value::String("NaN".into())
    } else if x.is_infinite() {
        Value::String(if x > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

fn is_packable(t: Type) -> bool {
    !matches!(t, Type::String | Type::Bytes | Type::Message | Type::Group)
}

fn fixed_width(t: Type) -> Option<usize> {
    match t {
        Type::Fixed32 | Type::Sfixed32 | Type::Float => Some(4),
        Type::Fixed64 | Type::Sfixed64 | Type::Double => Some(8),
        _ => None,
    }
}

fn read_varint(buf: &mut &[u8]) -> Option<u64> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        x |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return Some(x);
        }
    }
    None
}
