//! Checks that hand-written prost structs still match a `.proto` file.
//!
//! Rust structs carry no field names at run time, so the check works on the
//! wire: a test builds a *sample* of the struct in which every string or
//! bytes field holds its own field name and every integer field its own field
//! number, encodes it, and [`check_sample`] walks the encoded fields against
//! the descriptor parsed from the `.proto` file. A Rust field under the wrong
//! tag carries the wrong name; a tag the `.proto` lacks is reported; a wire
//! type that does not fit the declared type is reported. [`field_numbers`]
//! lets the test prove its samples covered every declared field.

use std::collections::BTreeSet;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FileDescriptorProto};

/// The descriptor of message `name` (short or fully qualified) in `fd`.
pub fn message<'a>(fd: &'a FileDescriptorProto, name: &str) -> Option<&'a DescriptorProto> {
    let short = name.trim_start_matches('.');
    let short = short
        .strip_prefix(fd.package())
        .and_then(|s| s.strip_prefix('.'))
        .unwrap_or(short);
    fd.message_type.iter().find(|m| m.name() == short)
}

/// The field numbers `.proto` declares for message `name`.
pub fn field_numbers(fd: &FileDescriptorProto, name: &str) -> BTreeSet<i32> {
    message(fd, name)
        .map(|m| m.field.iter().map(|f| f.number()).collect())
        .unwrap_or_default()
}

/// Checks one encoded sample of message `name`; returns the `(message,
/// field number)` pairs it exercised, nested messages included.
pub fn check_sample(
    fd: &FileDescriptorProto,
    name: &str,
    encoded: &[u8],
) -> Result<BTreeSet<(String, i32)>, String> {
    let mut seen = BTreeSet::new();
    check(fd, name, encoded, &mut seen)?;
    Ok(seen)
}

fn check(
    fd: &FileDescriptorProto,
    name: &str,
    mut buf: &[u8],
    seen: &mut BTreeSet<(String, i32)>,
) -> Result<(), String> {
    let m = message(fd, name).ok_or_else(|| format!("message {name} is not in {}", fd.name()))?;
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let (number, wire_type) = ((key >> 3) as i32, (key & 7) as u8);
        let field = m
            .field
            .iter()
            .find(|f| f.number() == number)
            .ok_or_else(|| format!("{}: the Rust struct writes field number {number}, which the .proto does not declare", m.name()))?;
        let what = format!("{}.{} (= {number})", m.name(), field.name());
        seen.insert((m.name().to_owned(), number));
        let ty = field.r#type();
        let packed = field.label() == Label::Repeated && is_varint(ty);
        match wire_type {
            0 if is_varint(ty) => {
                let n = varint(&mut buf)?;
                expect_number(&what, n, number)?;
            }
            2 => {
                let len = varint(&mut buf)? as usize;
                if buf.len() < len {
                    return Err(format!("{what}: truncated"));
                }
                let (payload, rest) = buf.split_at(len);
                buf = rest;
                match ty {
                    Type::String | Type::Bytes => {
                        if payload != field.name().as_bytes() {
                            return Err(format!(
                                "{what}: the Rust struct put {:?} here; the .proto names this field {:?}",
                                String::from_utf8_lossy(payload),
                                field.name()
                            ));
                        }
                    }
                    Type::Message => check(fd, field.type_name(), payload, seen)?,
                    _ if packed => {
                        let mut p = payload;
                        while !p.is_empty() {
                            let n = varint(&mut p)?;
                            expect_number(&what, n, number)?;
                        }
                    }
                    other => {
                        return Err(format!(
                            "{what}: declared {other:?} but encoded length-delimited"
                        ))
                    }
                }
            }
            other => {
                return Err(format!(
                    "{what}: declared {ty:?} but encoded with wire type {other}"
                ))
            }
        }
    }
    Ok(())
}

fn is_varint(ty: Type) -> bool {
    matches!(
        ty,
        Type::Int32 | Type::Int64 | Type::Uint32 | Type::Uint64 | Type::Bool
    )
}

fn expect_number(what: &str, n: u64, number: i32) -> Result<(), String> {
    if n == number as u64 {
        Ok(())
    } else {
        Err(format!(
            "{what}: the Rust struct put {n} here; samples must hold the field number"
        ))
    }
}

fn varint(buf: &mut &[u8]) -> Result<u64, String> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first().ok_or("truncated varint")?;
        *buf = rest;
        n |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return Ok(n);
        }
    }
    Err("varint too long".into())
}
