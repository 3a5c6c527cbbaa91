//! The method option `option (google.api.http) = { ... };`: its
//! text-format message literal (`key: "value"`, `key { ... }`, adjacent
//! strings joined) and its check against `google.api.HttpRule`'s fields.

use super::lexer::Tok;
use super::parser::Parser;
use super::{HttpRule, MethodHttpRule, ProtoError};

/// A text-format value inside an option's `{ ... }` literal.
pub(super) enum Literal {
    Str(String),
    Message(Vec<(String, usize, Literal)>),
    Other(Tok),
}

impl Parser<'_> {
    /// `option (google.api.http) = { get: "/v1/x" body: "*" ... };`, the
    /// only method option understood.
    pub(super) fn method_option(&mut self, service: &str, method: &str) -> Result<(), ProtoError> {
        self.keyword("option")?;
        let line = self.line();
        let named_http = self.eat_sym('(')
            && matches!(self.peek(), Some(Tok::Ident(n)) if n == "google.api.http")
            && {
                self.pos += 1;
                self.eat_sym(')')
            };
        if !named_http {
            return Err(self.error(format!(
                "method {method}: only `option (google.api.http) = {{ ... }};` is supported"
            )));
        }
        if self
            .rules
            .iter()
            .any(|r| r.service == service && r.method == method)
        {
            return Err(self.error(format!("method {method}: (google.api.http) given twice")));
        }
        self.sym('=')?;
        self.sym('{')?;
        let fields = self.literal_fields()?;
        self.sym(';')?;
        let rule = self.http_rule(method, fields, line, true)?;
        self.rules.push(MethodHttpRule {
            service: service.to_owned(),
            method: method.to_owned(),
            rule,
        });
        Ok(())
    }

    /// The `key: value` / `key { ... }` pairs of a text-format message, up
    /// to and including its closing `}`.
    pub(super) fn literal_fields(&mut self) -> Result<Vec<(String, usize, Literal)>, ProtoError> {
        let mut fields = Vec::new();
        loop {
            if self.eat_sym('}') {
                return Ok(fields);
            }
            if self.eat_sym(',') || self.eat_sym(';') {
                continue;
            }
            let line = self.line();
            let key = self.ident("a field name")?;
            let colon = self.eat_sym(':');
            let value = if self.eat_sym('{') {
                Literal::Message(self.literal_fields()?)
            } else if !colon {
                return Err(self.error(format!("expected `:` or `{{` after {key}")));
            } else {
                match self.next("a value")? {
                    Tok::Str(mut s) => {
                        // Adjacent strings concatenate, as in text format.
                        while let Some(Tok::Str(more)) = self.peek().cloned() {
                            s.push_str(&more);
                            self.pos += 1;
                        }
                        Literal::Str(s)
                    }
                    other => Literal::Other(other),
                }
            };
            fields.push((key, line, value));
        }
    }

    fn http_rule(
        &self,
        method: &str,
        fields: Vec<(String, usize, Literal)>,
        line: usize,
        top: bool,
    ) -> Result<HttpRule, ProtoError> {
        let at = |line: usize, message: String| ProtoError {
            file: self.file.to_owned(),
            line,
            message: format!("method {method}: (google.api.http): {message}"),
        };
        let mut rule = HttpRule {
            line,
            ..Default::default()
        };
        for (key, line, value) in fields {
            let pattern = ["get", "put", "post", "delete", "patch"].contains(&key.as_str());
            match (key.as_str(), value) {
                (_, Literal::Str(path)) if pattern => {
                    if !rule.method.is_empty() {
                        return Err(at(
                            line,
                            format!(
                                "`{key}` after `{}`: one pattern per rule",
                                rule.method.to_lowercase()
                            ),
                        ));
                    }
                    rule.method = key.to_uppercase();
                    rule.path = path;
                    rule.line = line;
                }
                ("custom", Literal::Message(custom)) => {
                    if !rule.method.is_empty() {
                        return Err(at(
                            line,
                            "`custom` after another pattern: one pattern per rule".into(),
                        ));
                    }
                    for (k, l, v) in custom {
                        match (k.as_str(), v) {
                            ("kind", Literal::Str(s)) => rule.method = s,
                            ("path", Literal::Str(s)) => rule.path = s,
                            _ => {
                                return Err(at(
                                    l,
                                    format!("custom: unknown or non-string field `{k}`"),
                                ))
                            }
                        }
                    }
                    if rule.method.is_empty() || rule.path.is_empty() {
                        return Err(at(line, "custom needs both `kind` and `path`".into()));
                    }
                    rule.line = line;
                }
                ("body", Literal::Str(s)) => rule.body = s,
                ("response_body", Literal::Str(s)) => rule.response_body = s,
                ("selector", Literal::Str(_)) => {}
                ("additional_bindings", Literal::Message(inner)) if top => {
                    let binding = self.http_rule(method, inner, line, false)?;
                    rule.additional_bindings.push(binding);
                }
                ("additional_bindings", _) if !top => {
                    return Err(at(
                        line,
                        "additional_bindings may not nest (one level only)".into(),
                    ))
                }
                (_, Literal::Other(tok)) => {
                    return Err(at(
                        line,
                        format!("`{key}`: unknown field, or {tok} is not a string"),
                    ))
                }
                (_, _) => {
                    return Err(at(
                        line,
                        format!("unknown field `{key}` or value of the wrong kind"),
                    ))
                }
            }
        }
        if rule.method.is_empty() {
            return Err(at(
                line,
                "no pattern (get, put, post, delete, patch or custom)".into(),
            ));
        }
        Ok(rule)
    }
}
