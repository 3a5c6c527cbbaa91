//! Path templates of `google/api/http.proto`, parsed once at start-up into
//! a flat list of segments, then matched against request paths.
//!
//! ```text
//! Template = "/" Segments [ Verb ] ;
//! Segments = Segment { "/" Segment } ;
//! Segment  = "*" | "**" | LITERAL | Variable ;
//! Variable = "{" FieldPath [ "=" Segments ] "}" ;
//! FieldPath = IDENT { "." IDENT } ;
//! Verb     = ":" LITERAL ;
//! ```
//!
//! As in grpc-gateway's `runtime/pattern.go`, a template compiles to a list
//! of segment matchers plus, per variable, the range of segments it
//! captures; matching walks the request's segments once. The rules:
//!
//! - `{f}` is `{f=*}`; `*` matches one non-empty segment, `**` zero or more
//!   and may only be the last segment; variables do not nest, and a field
//!   is bound at most once per template.
//! - A variable over exactly one segment is fully percent-decoded (`%2F`
//!   becomes `/`); one over several segments (or `**`) keeps `%2F` and
//!   `%2f` as they are, so the captured `/`s are the real separators.
//!   A malformed escape or a value that is not UTF-8 is a [`MatchError`].
//! - Literals are compared with the raw (still encoded) request segment.
//!   They hold RFC 3986 `pchar`s but `*` and `:`; a `%` must start a
//!   `%XX` escape (else a start-up error).
//! - Of several templates matching one request, [`Template::precedence_key`]
//!   ranks them as Google's transcoder walks its trie.
//! - The verb (`:undelete`) is split off the request's last segment by the
//!   caller ([`split_path`]), and only when some route declares that verb:
//!   a template with a verb matches only requests with that verb, one
//!   without only requests without. So `/v1/users/{id}` never binds
//!   `id = "a:undelete"` when `:undelete` is a declared verb, while a
//!   colon that is no declared verb stays ordinary text.

use std::fmt;

use crate::web::urlenc::{decode_strict, Component};

/// A template that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// The template as written.
    pub template: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "path template {:?}: {}", self.template, self.message)
    }
}

impl std::error::Error for TemplateError {}

/// A matched variable whose raw text cannot become a field value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchError {
    /// Why, naming the variable.
    pub message: String,
}

/// One segment matcher.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// These exact (raw) bytes.
    Literal(String),
    /// `*`: one non-empty segment.
    One,
    /// `**`: the rest of the path, zero or more segments.
    Rest,
}

/// A `{field.path=...}` of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The field path, `["book", "name"]` for `{book.name}`.
    pub field_path: Vec<String>,
    /// First segment captured.
    start: usize,
    /// One past the last segment captured (for `**`: the end of the path).
    end: usize,
}

impl Variable {
    /// `book.name`.
    pub fn dotted(&self) -> String {
        self.field_path.join(".")
    }

    /// True if the variable spans exactly one segment (`{f}`, `{f=*}`,
    /// `{f=lit}`): its value is then fully percent-decoded.
    pub fn is_single_segment(&self, t: &Template) -> bool {
        self.end - self.start == 1 && t.segments[self.start] != Segment::Rest
    }
}

/// A compiled path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    segments: Vec<Segment>,
    variables: Vec<Variable>,
    verb: Option<String>,
}

/// A request path split into raw segments and, if its last segment ends in
/// a declared `:verb`, that verb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPath<'a> {
    segments: Vec<&'a str>,
    verb: Option<&'a str>,
}

/// Splits a raw request path (`/v1/users/a:undelete`). The verb is split off
/// only if `is_verb` says some route declares it.
pub fn split_path<'a>(path: &'a str, is_verb: impl Fn(&str) -> bool) -> RequestPath<'a> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let mut segments: Vec<&str> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split('/').collect()
    };
    let mut verb = None;
    if let Some(last) = segments.last_mut() {
        if let Some(colon) = last.rfind(':') {
            let candidate = &last[colon + 1..];
            if is_verb(candidate) {
                verb = Some(candidate);
                *last = &last[..colon];
            }
        }
    }
    RequestPath { segments, verb }
}

impl Template {
    /// Parses and checks `source`.
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        Parser::new(source).template()
    }

    /// The template as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The verb, without its `:`.
    pub fn verb(&self) -> Option<&str> {
        self.verb.as_deref()
    }

    /// The variables, in template order.
    pub fn variables(&self) -> &[Variable] {
        &self.variables
    }

    /// The template with each variable written `{field}` and each bare
    /// wildcard as is, for OpenAPI (`/v1/{name}:undelete`), and whether
    /// that form is exact (every variable a single `*` segment).
    pub fn openapi_path(&self) -> String {
        self.render(true)
    }

    /// Sets variable `i`'s field path: the routes resolve a path written
    /// with JSON names (`{book.authorInfo}`) to proto names once, at start-up.
    pub(super) fn set_field_path(&mut self, i: usize, path: Vec<String>) {
        if let Some(v) = self.variables.get_mut(i) {
            v.field_path = path;
        }
    }

    /// The template's rank among templates that match the same request,
    /// as Google's transcoder decides it: its trie walk
    /// (`path_matcher_node.cc`, `LookupPath`) tries at each segment the
    /// literal child, then `*`, then `**`, and backtracks. One entry per
    /// segment (0 a literal, 1 `*`, 2 `**`; a variable counts by its
    /// sub-template) and the verb as one more literal: of two templates
    /// that match, the smaller key wins, so the leftmost segment where they
    /// differ decides, and one that ends where the other goes on with a
    /// `**` matching nothing wins. Equal keys: the caller's order decides.
    pub fn precedence_key(&self) -> Vec<u8> {
        let mut key: Vec<u8> = self
            .segments
            .iter()
            .map(|s| match s {
                Segment::Literal(_) => 0,
                Segment::One => 1,
                Segment::Rest => 2,
            })
            .collect();
        if self.verb.is_some() {
            key.push(0);
        }
        key
    }

    /// The segments the matcher walks, variables replaced by their
    /// sub-templates (`/v1/{name=shelves/*}:get` walks `/v1/shelves/*:get`).
    pub fn walk(&self) -> String {
        self.render(false)
    }

    /// The segments written out, `:verb` last; with `variables`, each
    /// variable as `{field.path}` in place of its sub-template.
    fn render(&self, variables: bool) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < self.segments.len() {
            out.push('/');
            let variable = variables
                .then(|| self.variables.iter().find(|v| v.start == i))
                .flatten();
            if let Some(v) = variable {
                out.push('{');
                out.push_str(&v.dotted());
                out.push('}');
                i = v.end.max(i + 1);
                continue;
            }
            match &self.segments[i] {
                Segment::Literal(l) => out.push_str(l),
                Segment::One => out.push('*'),
                Segment::Rest => out.push_str("**"),
            }
            i += 1;
        }
        if out.is_empty() {
            out.push('/');
        }
        if let Some(verb) = &self.verb {
            out.push(':');
            out.push_str(verb);
        }
        out
    }

    /// Matches `path`; on success returns each variable's decoded value,
    /// in the order of [`variables`](Self::variables).
    pub fn matches(&self, path: &RequestPath<'_>) -> Option<Result<Vec<String>, MatchError>> {
        if path.verb != self.verb.as_deref() {
            return None;
        }
        let segs = &path.segments;
        let mut pos = 0;
        for s in &self.segments {
            match s {
                Segment::Literal(l) => {
                    if segs.get(pos) != Some(&l.as_str()) {
                        return None;
                    }
                    pos += 1;
                }
                Segment::One => {
                    if segs.get(pos).is_none_or(|s| s.is_empty()) {
                        return None;
                    }
                    pos += 1;
                }
                Segment::Rest => pos = segs.len(),
            }
        }
        if pos != segs.len() {
            return None;
        }
        let values = self.variables.iter().map(|v| {
            // Segments map one to one up to a final `**`, which takes the rest.
            let to_rest =
                v.end == self.segments.len() && self.segments.last() == Some(&Segment::Rest);
            let end = if to_rest { segs.len() } else { v.end };
            let raw = segs[v.start..end].join("/");
            let single = v.end - v.start == 1 && !to_rest;
            let component = if single {
                Component::Path
            } else {
                Component::PathKeepSlash
            };
            decode_strict(&raw, component).map_err(|why| MatchError {
                message: format!("path variable {}: {why}", v.dotted()),
            })
        });
        Some(values.collect())
    }
}

/// Characters a literal or verb may hold: RFC 3986's `pchar` (unreserved,
/// sub-delims, `@`, `%` escapes), minus the two the template grammar
/// reserves: `*` (a wildcard segment) and `:` (the verb). `=` is a
/// sub-delim like `&` or `;`, so it is text here too; it is special only
/// right after a variable's field path. Never `/ { } ? #` or spaces.
fn literal_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()+,;=@%".contains(c)
}

/// A literal's `%` must start a `pct-encoded` triplet (RFC 3986 §2.1:
/// `"%" HEXDIG HEXDIG`); `/%`, `/%2` and `/a%2z` can never equal a
/// well-formed request segment, so they are refused, not silently dead.
fn check_escapes(literal: &str) -> Result<(), String> {
    let bytes = literal.as_bytes();
    for (i, _) in literal.match_indices('%') {
        let hex = bytes.get(i + 1..i + 3);
        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
            let bad: String = literal[i..].chars().take(3).collect();
            return Err(format!(
                "{bad:?} in literal {literal:?} is not a percent escape (`%` and two hex digits)"
            ));
        }
    }
    Ok(())
}

struct Parser<'a> {
    source: &'a str,
    chars: Vec<char>,
    pos: usize,
    segments: Vec<Segment>,
    variables: Vec<Variable>,
}

impl<'a> Parser<'a> {
    fn new(source: &'a str) -> Self {
        Parser {
            source,
            chars: Vec::new(),
            pos: 0,
            segments: Vec::new(),
            variables: Vec::new(),
        }
    }

    fn error(&self, message: impl Into<String>) -> TemplateError {
        TemplateError {
            template: self.source.to_owned(),
            message: message.into(),
        }
    }

    fn template(mut self) -> Result<Template, TemplateError> {
        let Some(body) = self.source.strip_prefix('/') else {
            return Err(self.error("must start with `/`"));
        };
        // The verb is a `:` after the last `/` and the last `}`.
        let tail_start = body.rfind(['/', '}']).map_or(0, |i| i + 1);
        let (body, verb) = match body[tail_start..].find(':') {
            Some(i) => {
                let at = tail_start + i;
                (&body[..at], Some(&body[at + 1..]))
            }
            None => (body, None),
        };
        if let Some(verb) = verb {
            if verb.is_empty() || !verb.chars().all(literal_char) {
                return Err(self.error(format!(
                    "verb {verb:?} must be a non-empty literal (letters, digits, -._~!$&'()+,;=@)"
                )));
            }
            check_escapes(verb).map_err(|m| self.error(m))?;
        }
        self.chars = body.chars().collect();
        if !self.chars.is_empty() {
            self.segments_until(None)?;
        } else if verb.is_some() {
            return Err(self.error("a verb needs a segment before it"));
        }
        if let Some(i) = self.segments.iter().position(|s| *s == Segment::Rest) {
            if i + 1 != self.segments.len() {
                return Err(self.error("`**` must be the last segment"));
            }
        }
        for (i, v) in self.variables.iter().enumerate() {
            if self.variables[..i]
                .iter()
                .any(|w| w.field_path == v.field_path)
            {
                return Err(self.error(format!("field {} is bound twice", v.dotted())));
            }
        }
        Ok(Template {
            source: self.source.to_owned(),
            segments: self.segments,
            variables: self.variables,
            verb: verb.map(str::to_owned),
        })
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// `Segment { "/" Segment }`, up to the end or to `stop` (`}`).
    fn segments_until(&mut self, stop: Option<char>) -> Result<(), TemplateError> {
        loop {
            self.segment(stop.is_some())?;
            match self.peek() {
                Some('/') => self.pos += 1,
                c if c == stop => return Ok(()),
                None => return Err(self.error("`{` without its `}`")),
                Some(c) => return Err(self.error(format!("{c:?} is not allowed in a literal"))),
            }
        }
    }

    fn segment(&mut self, in_variable: bool) -> Result<(), TemplateError> {
        match self.peek() {
            Some('*') => {
                self.pos += 1;
                if self.peek() == Some('*') {
                    self.pos += 1;
                    self.segments.push(Segment::Rest);
                } else {
                    self.segments.push(Segment::One);
                }
                if matches!(self.peek(), Some(c) if c != '/' && c != '}') {
                    return Err(self.error("`*` and `**` must be a whole segment"));
                }
                Ok(())
            }
            Some('{') if in_variable => Err(self.error("variables cannot nest")),
            Some('{') => {
                self.pos += 1;
                self.variable()
            }
            _ => {
                let start = self.pos;
                while matches!(self.peek(), Some(c) if literal_char(c)) {
                    self.pos += 1;
                }
                if self.pos == start {
                    return Err(match self.peek() {
                        None | Some('/') | Some('}') => self.error("empty segment"),
                        Some(c) => self.error(format!("{c:?} is not allowed in a literal")),
                    });
                }
                let literal: String = self.chars[start..self.pos].iter().collect();
                check_escapes(&literal).map_err(|m| self.error(m))?;
                self.segments.push(Segment::Literal(literal));
                Ok(())
            }
        }
    }

    fn variable(&mut self) -> Result<(), TemplateError> {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c != '=' && c != '}') {
            self.pos += 1;
        }
        let path: String = self.chars[start..self.pos].iter().collect();
        let field_path: Vec<String> = path.split('.').map(str::to_owned).collect();
        let ident = |s: &String| {
            let mut cs = s.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !field_path.iter().all(ident) {
            return Err(self.error(format!(
                "{path:?} is not a field path (IDENT {{ \".\" IDENT }})"
            )));
        }
        let first = self.segments.len();
        match self.peek() {
            Some('=') => {
                self.pos += 1;
                self.segments_until(Some('}'))?;
            }
            Some('}') => self.segments.push(Segment::One),
            _ => return Err(self.error("`{` without its `}`")),
        }
        self.pos += 1; // the `}`
        self.variables.push(Variable {
            field_path,
            start: first,
            end: self.segments.len(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests;
