//! Field options `[(buf.validate.field)... ]`: protovalidate's constraints,
//! the subset the greeter needs, read at start-up like the HTTP rules.
//!
//! Both forms protoc accepts are read: the message literal
//! `(buf.validate.field).string = { min_len: 1, max_len: 64 }` and the
//! path `(buf.validate.field).string.min_len = 1`, several options
//! separated by commas. Supported: `required`; on `string` fields
//! `string.min_len`, `max_len` (characters), `min_bytes`, `max_bytes`
//! (UTF-8 bytes) and `pattern` ([`super::pattern`]); on `int32`, `int64`,
//! `uint32`, `uint64`, `sint32`, `sint64` fields `<type>.gte` and `lte`. Any
//! other option or constraint, or one for another type than the field's,
//! is an error naming file and line: a rule the server would not enforce
//! must not look declared. The file must import
//! `buf/validate/validate.proto`, as protoc requires.

use super::http_option::Literal;
use super::lexer::Tok;
use super::parser::Parser;
use super::pattern::Pattern;
use super::{FieldRules, ProtoError, VALIDATE_IMPORT};

/// The integer types whose `gte` / `lte` are read.
const INTEGER_TYPES: [&str; 6] = ["int32", "int64", "uint32", "uint64", "sint32", "sint64"];

impl Parser<'_> {
    /// `[ ... ]` after a field's number, if any: its `(buf.validate.field)`
    /// options as rules for `field` of type `type_name` (as written).
    pub(super) fn field_options(
        &mut self,
        field: &str,
        type_name: &str,
        repeated: bool,
        line: usize,
    ) -> Result<Option<FieldRules>, ProtoError> {
        if !self.eat_sym('[') {
            return Ok(None);
        }
        let mut rules = FieldRules {
            message: format!(".{}", self.scope),
            field: field.to_owned(),
            line,
            ..FieldRules::default()
        };
        loop {
            let named = self.eat_sym('(')
                && matches!(self.peek(), Some(Tok::Ident(n)) if n == "buf.validate.field")
                && {
                    self.pos += 1;
                    self.eat_sym(')')
                };
            if !named {
                return Err(self.error(format!(
                    "field {field}: only `(buf.validate.field)` options are supported"
                )));
            }
            if !self.imports_validate {
                return Err(self.error(format!(
                    "field {field}: (buf.validate.field) needs `import \"{VALIDATE_IMPORT}\";`"
                )));
            }
            // `.string.min_len` or `.string` or `.required`: one identifier token.
            let path = match self.next("a rule path")? {
                Tok::Ident(p) if p.starts_with('.') => p[1..].to_owned(),
                other => return Err(self.error(format!("expected `.rule` after ), found {other}"))),
            };
            self.sym('=')?;
            let mut parts = path.splitn(2, '.');
            let kind = parts.next().unwrap_or_default().to_owned();
            let rest = parts.next().map(str::to_owned);
            let line = self.line();
            let values: Vec<(String, usize, Literal)> = match rest {
                Some(key) => vec![(key, line, self.literal_value()?)],
                None if kind == "required" => vec![],
                None => {
                    self.sym('{')?;
                    self.literal_fields()?
                }
            };
            if kind == "required" {
                match self.next("true or false")? {
                    Tok::Ident(b) if b == "true" || b == "false" => rules.required = b == "true",
                    other => {
                        return Err(self.error(format!("required: expected true, found {other}")))
                    }
                }
            } else {
                self.apply(&mut rules, &kind, type_name, repeated, values)?;
            }
            if self.eat_sym(']') {
                return Ok(Some(rules));
            }
            self.sym(',')?;
        }
    }

    /// One value after `=` in the path form.
    fn literal_value(&mut self) -> Result<Literal, ProtoError> {
        Ok(match self.next("a value")? {
            Tok::Str(s) => Literal::Str(s),
            other => Literal::Other(other),
        })
    }

    fn apply(
        &self,
        rules: &mut FieldRules,
        kind: &str,
        type_name: &str,
        repeated: bool,
        values: Vec<(String, usize, Literal)>,
    ) -> Result<(), ProtoError> {
        let field = rules.field.clone();
        let at = |line: usize, message: String| ProtoError {
            file: self.file.to_owned(),
            line,
            message: format!("field {field}: (buf.validate.field).{kind}: {message}"),
        };
        let line = rules.line;
        if repeated
            || (kind == "string" && type_name != "string")
            || (INTEGER_TYPES.contains(&kind) && type_name != kind)
        {
            return Err(at(
                line,
                format!(
                    "does not apply to a field of type {}{type_name}",
                    if repeated { "repeated " } else { "" }
                ),
            ));
        }
        if kind != "string" && !INTEGER_TYPES.contains(&kind) {
            return Err(at(
                line,
                "unsupported (supported: required, string, and gte/lte of integer types)".into(),
            ));
        }
        for (key, line, value) in values {
            let number = |v: &Literal| match v {
                Literal::Other(Tok::Int(n)) => Ok(*n),
                _ => Err(at(line, format!("{key}: expected an integer"))),
            };
            let size = |v: &Literal| {
                number(v).and_then(|n| {
                    u64::try_from(n).map_err(|_| at(line, format!("{key}: must not be negative")))
                })
            };
            match (kind, key.as_str()) {
                ("string", "min_len") => rules.min_len = Some(size(&value)?),
                ("string", "max_len") => rules.max_len = Some(size(&value)?),
                ("string", "min_bytes") => rules.min_bytes = Some(size(&value)?),
                ("string", "max_bytes") => rules.max_bytes = Some(size(&value)?),
                ("string", "pattern") => {
                    let Literal::Str(source) = value else {
                        return Err(at(line, "pattern: expected a string".into()));
                    };
                    rules.pattern =
                        Some(Pattern::new(&source).map_err(|e| at(line, e.to_string()))?);
                }
                (_, "gte") if kind != "string" => rules.gte = Some(number(&value)?),
                (_, "lte") if kind != "string" => rules.lte = Some(number(&value)?),
                _ => return Err(at(line, format!("`{key}` is not supported here"))),
            }
        }
        Ok(())
    }
}
