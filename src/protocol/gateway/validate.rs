//! The `buf.validate` rules of the `.proto` ([`FieldRules`]), enforced on
//! every call before its method runs, so gRPC and HTTP refuse the same
//! input the same way: `INVALID_ARGUMENT` (HTTP 400) with one
//! `google.rpc.BadRequest` violation per field that breaks a rule.
//!
//! [`validated`] wraps each method of a service table: the request's wire
//! bytes are walked once (no decoding into a message), the fields that have
//! rules are checked, and only then is the method called. A field reports
//! its first broken rule, in the order required, length, pattern, bounds.
//!
//! Reasons are the field's name in UPPER_SNAKE plus the problem, so a
//! client matches `USERNAME_EMPTY` whichever transport it used:
//!
//! | rule broken | reason suffix |
//! |---|---|
//! | `required` on an empty string, `min_len`/`min_bytes` by an empty one | `_EMPTY` |
//! | `min_len`, `min_bytes` | `_TOO_SHORT` |
//! | `max_len`, `max_bytes` | `_TOO_LONG` |
//! | `pattern` | `_INVALID_CHARACTERS` |
//! | `gte: 0` | `_NEGATIVE` |
//! | `gte`, `lte` | `_TOO_SMALL`, `_TOO_LARGE` |
//! | `required` on another zero value | `_REQUIRED` |
//!
//! Messages name the field and the bound and, for a pattern, the first
//! character refused, but never quote the value, so an error stays small
//! whatever was sent.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use prost_types::field_descriptor_proto::Type;

use super::codec::Pool;
use super::{Failure, UnaryMethod};
use crate::protocol::grpc::descriptor::{FieldRules, ParsedFile};
use crate::protocol::grpc::details::FieldViolation;
use crate::protocol::grpc::Code;

/// One field with rules, as the wire walk needs it.
#[derive(Debug, Clone)]
struct Checked {
    number: u32,
    kind: Type,
    rules: FieldRules,
}

/// The rules of every message of a set of files, by message name.
#[derive(Debug, Clone, Default)]
pub struct Validator {
    messages: HashMap<String, Vec<Checked>>,
}

impl Validator {
    /// The rules of `files`, attached to their fields' numbers and types.
    pub fn new(files: &[ParsedFile], pool: &Pool) -> Validator {
        let mut messages: HashMap<String, Vec<Checked>> = HashMap::new();
        for rules in files.iter().flat_map(|f| &f.field_rules) {
            let field = pool
                .message(&rules.message)
                .and_then(|m| m.field.iter().find(|f| f.name() == rules.field));
            if let Some(f) = field {
                messages
                    .entry(rules.message.clone())
                    .or_default()
                    .push(Checked {
                        number: u32::try_from(f.number()).unwrap_or(0),
                        kind: f.r#type(),
                        rules: rules.clone(),
                    });
            }
        }
        Validator { messages }
    }

    /// Checks the encoded `message` against its rules (the wrapped methods
    /// look their message's rules up once, when they are wrapped).
    #[cfg(test)]
    pub fn check(&self, message: &str, bytes: &[u8]) -> Result<(), Failure> {
        match self.messages.get(message) {
            Some(fields) => check_fields(fields, bytes),
            None => Ok(()),
        }
    }
}

/// Checks an encoded message against the rules of its `fields`: every
/// broken field, or `Ok` (bytes that are not a well-formed message are left
/// to the decoder). A few fields carry rules, so their values are kept in
/// slots by the field's place in `fields`: on the stack for up to
/// [`INLINE_FIELDS`], so a valid call allocates nothing.
fn check_fields(fields: &[Checked], bytes: &[u8]) -> Result<(), Failure> {
    let mut inline = [None; INLINE_FIELDS];
    let mut spilled = Vec::new();
    let values: &mut [Option<Value<'_>>] = match inline.get_mut(..fields.len()) {
        Some(slots) => slots,
        None => {
            spilled.resize(fields.len(), None);
            &mut spilled
        }
    };
    let walked = walk(bytes, |number, value| {
        // Most fields on the wire carry no rule: one scan of the few that
        // do (a flood of unchecked fields costs that scan each).
        let Some(first) = fields.iter().position(|f| f.number == number) else {
            return;
        };
        // The last occurrence on the wire is the field's value.
        for (f, slot) in fields[first..].iter().zip(&mut values[first..]) {
            if f.number == number {
                *slot = Some(value);
            }
        }
    });
    if walked.is_none() {
        return Ok(());
    }
    let checked = || fields.iter().zip(values.iter());
    // A field on the wire with another type than declared is the
    // decoder's to refuse (INTERNAL, as for any malformed message).
    let mistyped = checked().any(|(f, value)| match value {
        Some(Value::Bytes(_)) => f.kind != Type::String,
        Some(Value::Varint(_)) => f.kind == Type::String,
        Some(Value::Fixed) => true,
        None => false,
    });
    if mistyped {
        return Ok(());
    }
    let violations: Vec<FieldViolation> = checked()
        .filter_map(|(f, value)| violation(f, value.as_ref()))
        .collect();
    let Some(first) = violations.first() else {
        return Ok(());
    };
    let message = violations
        .iter()
        .map(|v| v.description.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    Err(
        Failure::new(Code::InvalidArgument, first.reason.clone(), message)
            .with_violations(violations),
    )
}

/// Wraps each method of `service` in `methods` so its request is checked
/// against the rules of `files` before it runs.
pub fn validated(
    files: &[ParsedFile],
    service: &str,
    methods: Vec<(&'static str, UnaryMethod)>,
) -> Vec<(&'static str, UnaryMethod)> {
    let pool = Pool::new(files.iter().map(|f| &f.descriptor));
    let validator = Arc::new(Validator::new(files, &pool));
    let inputs: HashMap<String, String> = files
        .iter()
        .flat_map(|f| {
            let package = f.descriptor.package().to_owned();
            f.descriptor.service.iter().flat_map(move |s| {
                let full = if package.is_empty() {
                    s.name().to_owned()
                } else {
                    format!("{package}.{}", s.name())
                };
                s.method
                    .iter()
                    .map(move |m| (format!("{full}.{}", m.name()), m.input_type().to_owned()))
            })
        })
        .collect();
    methods
        .into_iter()
        .map(|(name, method)| {
            let Some(input) = inputs.get(&format!("{service}.{name}")).cloned() else {
                return (name, method);
            };
            // The message's rules are found once, here, not per call.
            let Some(fields) = validator.messages.get(&input) else {
                return (name, method);
            };
            let fields: Arc<[Checked]> = fields.as_slice().into();
            let wrapped: UnaryMethod = Arc::new(move |bytes: Bytes| {
                if let Err(f) = check_fields(&fields, &bytes) {
                    return Box::pin(async move { Err(f) });
                }
                method(bytes)
            });
            (name, wrapped)
        })
        .collect()
}

/// Checked fields of a message whose values are kept on the stack.
const INLINE_FIELDS: usize = 8;

/// A field's value on the wire.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// Calls `each` with every top-level field of `bytes`; `None` when the
/// bytes are not a well-formed message.
fn walk<'a>(mut bytes: &'a [u8], mut each: impl FnMut(u32, Value<'a>)) -> Option<()> {
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        // Field number 0 does not exist (the decoder refuses it): a run of
        // zero bytes is not walked to its end.
        let number = u32::try_from(key >> 3).ok().filter(|n| *n != 0)?;
        let value = match key & 7 {
            0 => Value::Varint(varint(&mut bytes)?),
            1 => {
                bytes = bytes.get(8..)?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(varint(&mut bytes)?).ok()?;
                let (v, rest) = (bytes.get(..len)?, bytes.get(len..)?);
                bytes = rest;
                Value::Bytes(v)
            }
            5 => {
                bytes = bytes.get(4..)?;
                Value::Fixed
            }
            _ => return None,
        };
        each(number, value);
    }
    Some(())
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for i in 0..10 {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// The integer a varint holds for a field of `kind`.
fn integer(kind: Type, raw: u64) -> i128 {
    match kind {
        Type::Int32 => i128::from(raw as i32),
        Type::Int64 => i128::from(raw as i64),
        Type::Sint32 | Type::Sint64 => i128::from(((raw >> 1) as i64) ^ -((raw & 1) as i64)),
        _ => i128::from(raw),
    }
}

fn violation(f: &Checked, value: Option<&Value<'_>>) -> Option<FieldViolation> {
    let r = &f.rules;
    let name = r.field.as_str();
    // Built only for a broken field: a valid one allocates nothing.
    let broken = |suffix: &str, description: String| {
        Some(FieldViolation {
            field: name.to_owned(),
            description,
            reason: format!("{}_{suffix}", name.to_ascii_uppercase()),
        })
    };
    if f.kind == Type::String {
        let text = match value {
            Some(Value::Bytes(b)) => std::str::from_utf8(b).ok()?,
            _ => "",
        };
        let (chars, len) = (text.chars().count() as u64, text.len() as u64);
        let empty = text.is_empty();
        if empty
            && (r.required
                || r.min_len.is_some_and(|n| n > 0)
                || r.min_bytes.is_some_and(|n| n > 0))
        {
            return broken("EMPTY", format!("{name} must not be empty"));
        }
        if let Some(n) = r.min_len.filter(|n| chars < *n) {
            return broken(
                "TOO_SHORT",
                format!("{name} must be at least {n} characters, got {chars}"),
            );
        }
        if let Some(n) = r.min_bytes.filter(|n| len < *n) {
            return broken(
                "TOO_SHORT",
                format!("{name} must be at least {n} bytes of UTF-8, got {len} bytes"),
            );
        }
        if let Some(n) = r.max_len.filter(|n| chars > *n) {
            return broken(
                "TOO_LONG",
                format!("{name} must be at most {n} characters, got {chars}"),
            );
        }
        if let Some(n) = r.max_bytes.filter(|n| len > *n) {
            return broken(
                "TOO_LONG",
                format!("{name} must be at most {n} bytes of UTF-8, got {len} bytes"),
            );
        }
        if let Some(p) = &r.pattern {
            if !p.is_match(text) {
                let found = p.first_mismatch(text).map_or(String::new(), |(at, c)| {
                    format!(" (found {c:?}, U+{:04X}, at byte {at})", u32::from(c))
                });
                return broken(
                    "INVALID_CHARACTERS",
                    format!("{name} must match {}{found}", p.source()),
                );
            }
        }
        return None;
    }
    let n = match value {
        Some(Value::Varint(raw)) => integer(f.kind, *raw),
        _ => 0,
    };
    if r.required && n == 0 {
        return broken("REQUIRED", format!("{name} is required (not 0)"));
    }
    if let Some(min) = r.gte.filter(|m| n < i128::from(*m)) {
        return if min == 0 {
            broken("NEGATIVE", format!("{name} must not be negative, got {n}"))
        } else {
            broken(
                "TOO_SMALL",
                format!("{name} must be at least {min}, got {n}"),
            )
        };
    }
    if let Some(max) = r.lte.filter(|m| n > i128::from(*m)) {
        return broken(
            "TOO_LARGE",
            format!("{name} must be at most {max}, got {n}"),
        );
    }
    None
}

#[cfg(test)]
mod tests;
