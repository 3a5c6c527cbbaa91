//! Checks that hand-written prost structs still match a `.proto` file (the
//! greeter's, reflection's, health's: the crate has no protoc at build time).
//!
//! Rust structs carry no field names at run time, so the check works on the
//! wire: a test builds a *sample* of the struct in which every string or
//! bytes field holds its own field name and every integer or enum field its
//! own field number, encodes it, and [`check_sample`] walks the encoded fields against
//! the descriptor parsed from the `.proto` file. A Rust field under the wrong
//! tag carries the wrong name; a tag the `.proto` lacks is reported; a wire
//! type that does not fit the declared type is reported. [`field_numbers`]
//! lets the test prove its samples covered every declared field.

use std::collections::BTreeSet;
use std::fmt;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FileDescriptorProto};

/// How an encoded sample disagrees with the `.proto`. `field` reads
/// `Message.name (= number)`, so the message says which line to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftError {
    /// The message is not declared in the file.
    UnknownMessage { message: String, file: String },
    /// The struct writes a field number the message does not declare.
    UndeclaredField { message: String, number: i32 },
    /// A length-delimited field runs past the end of the sample.
    Truncated { field: String },
    /// A string or bytes field holds another field's name: the tags are swapped.
    WrongName {
        field: String,
        found: String,
        declared: String,
    },
    /// A field declared with a non-length-delimited type was encoded as one.
    NotLengthDelimited { field: String, declared: Type },
    /// The wire type does not fit the declared type.
    WrongWireType {
        field: String,
        declared: Type,
        wire_type: u8,
    },
    /// An integer field does not hold its own field number.
    WrongNumber { field: String, found: u64 },
    /// The sample ends inside a varint.
    TruncatedVarint,
    /// A varint runs past 10 bytes.
    VarintTooLong,
}

impl fmt::Display for DriftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriftError::UnknownMessage { message, file } => {
                write!(f, "message {message} is not in {file}")
            }
            DriftError::UndeclaredField { message, number } => write!(
                f,
                "{message}: the Rust struct writes field number {number}, which the .proto does not declare"
            ),
            DriftError::Truncated { field } => write!(f, "{field}: truncated"),
            DriftError::WrongName {
                field,
                found,
                declared,
            } => write!(
                f,
                "{field}: the Rust struct put {found:?} here; the .proto names this field {declared:?}"
            ),
            DriftError::NotLengthDelimited { field, declared } => write!(
                f,
                "{field}: declared {declared:?} but encoded length-delimited"
            ),
            DriftError::WrongWireType {
                field,
                declared,
                wire_type,
            } => write!(
                f,
                "{field}: declared {declared:?} but encoded with wire type {wire_type}"
            ),
            DriftError::WrongNumber { field, found } => write!(
                f,
                "{field}: the Rust struct put {found} here; samples must hold the field number"
            ),
            DriftError::TruncatedVarint => write!(f, "truncated varint"),
            DriftError::VarintTooLong => write!(f, "varint too long"),
        }
    }
}

impl std::error::Error for DriftError {}

/// The descriptor of message `name` (short or fully qualified, nested as
/// `Outer.Inner`, which is how a `map<>` field names its entry) in `fd`.
pub fn message<'a>(fd: &'a FileDescriptorProto, name: &str) -> Option<&'a DescriptorProto> {
    let short = name.trim_start_matches('.');
    let short = short
        .strip_prefix(fd.package())
        .and_then(|s| s.strip_prefix('.'))
        .unwrap_or(short);
    let mut path = short.split('.');
    let first = path.next()?;
    let top = fd.message_type.iter().find(|m| m.name() == first)?;
    path.try_fold(top, |m, inner| {
        m.nested_type.iter().find(|n| n.name() == inner)
    })
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
) -> Result<BTreeSet<(String, i32)>, DriftError> {
    let mut seen = BTreeSet::new();
    check(fd, name, encoded, &mut seen)?;
    Ok(seen)
}

fn check(
    fd: &FileDescriptorProto,
    name: &str,
    mut buf: &[u8],
    seen: &mut BTreeSet<(String, i32)>,
) -> Result<(), DriftError> {
    let m = message(fd, name).ok_or_else(|| DriftError::UnknownMessage {
        message: name.to_owned(),
        file: fd.name().to_owned(),
    })?;
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let (number, wire_type) = ((key >> 3) as i32, (key & 7) as u8);
        let field = m
            .field
            .iter()
            .find(|f| f.number() == number)
            .ok_or_else(|| DriftError::UndeclaredField {
                message: m.name().to_owned(),
                number,
            })?;
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
                    return Err(DriftError::Truncated { field: what });
                }
                let (payload, rest) = buf.split_at(len);
                buf = rest;
                match ty {
                    Type::String | Type::Bytes => {
                        if payload != field.name().as_bytes() {
                            return Err(DriftError::WrongName {
                                field: what,
                                found: String::from_utf8_lossy(payload).into_owned(),
                                declared: field.name().to_owned(),
                            });
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
                        return Err(DriftError::NotLengthDelimited {
                            field: what,
                            declared: other,
                        })
                    }
                }
            }
            other => {
                return Err(DriftError::WrongWireType {
                    field: what,
                    declared: ty,
                    wire_type: other,
                })
            }
        }
    }
    Ok(())
}

fn is_varint(ty: Type) -> bool {
    matches!(
        ty,
        Type::Int32 | Type::Int64 | Type::Uint32 | Type::Uint64 | Type::Bool | Type::Enum
    )
}

fn expect_number(what: &str, n: u64, number: i32) -> Result<(), DriftError> {
    if n == number as u64 {
        Ok(())
    } else {
        Err(DriftError::WrongNumber {
            field: what.to_owned(),
            found: n,
        })
    }
}

fn varint(buf: &mut &[u8]) -> Result<u64, DriftError> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first().ok_or(DriftError::TruncatedVarint)?;
        *buf = rest;
        n |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return Ok(n);
        }
    }
    Err(DriftError::VarintTooLong)
}
