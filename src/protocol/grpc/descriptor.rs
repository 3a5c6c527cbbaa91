//! A tiny `.proto` parser: turns the source of a proto3 file into the
//! `FileDescriptorProto` that server reflection hands to clients.
//!
//! Building descriptors from the `.proto` text (embedded with `include_str!`)
//! keeps one source of truth: what grpcurl sees through reflection is exactly
//! what `grpcurl -proto` would read from disk. The parser covers the subset
//! the crate's files use and rejects everything else by name, so a construct
//! it does not understand can never be silently dropped:
//!
//! - `syntax = "proto3";`, `package a.b;`, file-level `option`s
//!   (`go_package`, `java_package`, `java_outer_classname`,
//!   `java_multiple_files`, `deprecated`);
//! - `message` with scalar and message fields, `repeated`, and `oneof`;
//! - `service` with `rpc`, including `stream` on either side.
//!
//! Not supported (error): `import`, `enum`, nested messages, `map<>`,
//! `optional`, `reserved`, field or method options, proto2.

use std::collections::HashSet;
use std::fmt;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileOptions, MethodDescriptorProto,
    OneofDescriptorProto, ServiceDescriptorProto,
};

/// Why a `.proto` source was rejected: file, line and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError {
    /// The file name given to [`parse_proto`].
    pub file: String,
    /// 1-based line of the offending token (0 at end of file).
    pub line: usize,
    /// What was expected or found.
    pub message: String,
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for ProtoError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Str(String),
    Sym(char),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Int(n) => write!(f, "`{n}`"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Sym(c) => write!(f, "`{c}`"),
        }
    }
}

/// Parses `source` (named `file_name` in the descriptor, e.g.
/// `helloworld/v1/greeter.proto`) into a file descriptor.
pub fn parse_proto(file_name: &str, source: &str) -> Result<FileDescriptorProto, ProtoError> {
    let tokens = tokenize(file_name, source)?;
    let mut p = Parser {
        file: file_name,
        tokens,
        pos: 0,
    };
    let mut fd = FileDescriptorProto {
        name: Some(file_name.to_owned()),
        ..Default::default()
    };
    p.file_body(&mut fd)?;
    resolve_types(&p, &mut fd)?;
    Ok(fd)
}

fn tokenize(file: &str, src: &str) -> Result<Vec<(Tok, usize)>, ProtoError> {
    let err = |line: usize, message: String| ProtoError {
        file: file.to_owned(),
        line,
        message,
    };
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let start = line;
                i += 2;
                loop {
                    match chars.get(i) {
                        None => return Err(err(start, "unterminated /* comment".into())),
                        Some('*') if chars.get(i + 1) == Some(&'/') => {
                            i += 2;
                            break;
                        }
                        Some(ch) => {
                            if *ch == '\n' {
                                line += 1;
                            }
                            i += 1;
                        }
                    }
                }
            }
            '"' | '\'' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None | Some('\n') => return Err(err(line, "unterminated string".into())),
                        Some(ch) if *ch == c => break,
                        Some('\\') => {
                            return Err(err(line, "escapes in strings are not supported".into()))
                        }
                        Some(ch) => s.push(*ch),
                    }
                    i += 1;
                }
                i += 1;
                out.push((Tok::Str(s), line));
            }
            c if c.is_ascii_digit() => {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let n = text
                    .parse()
                    .map_err(|_| err(line, format!("bad number `{text}` (decimal only)")))?;
                out.push((Tok::Int(n), line));
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == '.' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                out.push((Tok::Ident(chars[start..i].iter().collect()), line));
            }
            '{' | '}' | '(' | ')' | '[' | ']' | ';' | '=' | '<' | '>' | ',' => {
                out.push((Tok::Sym(c), line));
                i += 1;
            }
            other => return Err(err(line, format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    file: &'a str,
    tokens: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> ProtoError {
        // The line of the token just consumed (or the last one at end of file).
        let line = self
            .tokens
            .get(self.pos.saturating_sub(1))
            .or(self.tokens.last())
            .map_or(0, |t| t.1);
        ProtoError {
            file: self.file.to_owned(),
            line,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.0)
    }

    fn next(&mut self, what: &str) -> Result<Tok, ProtoError> {
        let tok = self.tokens.get(self.pos).map(|t| t.0.clone());
        self.pos += 1;
        tok.ok_or_else(|| self.error(format!("unexpected end of file, expected {what}")))
    }

    fn sym(&mut self, c: char) -> Result<(), ProtoError> {
        match self.next(&format!("`{c}`"))? {
            Tok::Sym(s) if s == c => Ok(()),
            other => Err(self.error(format!("expected `{c}`, found {other}"))),
        }
    }

    fn ident(&mut self, what: &str) -> Result<String, ProtoError> {
        match self.next(what)? {
            Tok::Ident(s) => Ok(s),
            other => Err(self.error(format!("expected {what}, found {other}"))),
        }
    }

    fn keyword(&mut self, kw: &str) -> Result<(), ProtoError> {
        match self.next(&format!("`{kw}`"))? {
            Tok::Ident(s) if s == kw => Ok(()),
            other => Err(self.error(format!("expected `{kw}`, found {other}"))),
        }
    }

    fn eat_ident(&mut self, kw: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(s)) if s == kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_sym(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Sym(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn file_body(&mut self, fd: &mut FileDescriptorProto) -> Result<(), ProtoError> {
        while let Some(tok) = self.peek().cloned() {
            self.pos += 1;
            match tok {
                Tok::Sym(';') => {}
                Tok::Ident(kw) if kw == "syntax" => {
                    self.sym('=')?;
                    match self.next("a syntax string")? {
                        Tok::Str(s) if s == "proto3" => fd.syntax = Some(s),
                        other => {
                            return Err(self.error(format!(
                                "only syntax \"proto3\" is supported, found {other}"
                            )))
                        }
                    }
                    self.sym(';')?;
                }
                Tok::Ident(kw) if kw == "package" => {
                    fd.package = Some(self.ident("a package name")?);
                    self.sym(';')?;
                }
                Tok::Ident(kw) if kw == "option" => self.file_option(fd)?,
                Tok::Ident(kw) if kw == "message" => {
                    let m = self.message()?;
                    fd.message_type.push(m);
                }
                Tok::Ident(kw) if kw == "service" => {
                    let s = self.service()?;
                    fd.service.push(s);
                }
                other => {
                    return Err(self.error(format!(
                        "unsupported top-level statement starting with {other}"
                    )))
                }
            }
        }
        if fd.syntax.is_none() {
            return Err(self.error("missing `syntax = \"proto3\";`"));
        }
        Ok(())
    }

    fn file_option(&mut self, fd: &mut FileDescriptorProto) -> Result<(), ProtoError> {
        let name = self.ident("an option name")?;
        self.sym('=')?;
        let value = self.next("an option value")?;
        self.sym(';')?;
        let opts = fd.options.get_or_insert_with(FileOptions::default);
        match (name.as_str(), value) {
            ("go_package", Tok::Str(s)) => opts.go_package = Some(s),
            ("java_package", Tok::Str(s)) => opts.java_package = Some(s),
            ("java_outer_classname", Tok::Str(s)) => opts.java_outer_classname = Some(s),
            ("java_multiple_files", Tok::Ident(b)) if b == "true" || b == "false" => {
                opts.java_multiple_files = Some(b == "true")
            }
            ("deprecated", Tok::Ident(b)) if b == "true" || b == "false" => {
                opts.deprecated = Some(b == "true")
            }
            (_, value) => {
                return Err(self.error(format!("unsupported file option `{name}` = {value}")))
            }
        }
        Ok(())
    }

    fn message(&mut self) -> Result<DescriptorProto, ProtoError> {
        let name = self.ident("a message name")?;
        self.sym('{')?;
        let mut m = DescriptorProto {
            name: Some(name.clone()),
            ..Default::default()
        };
        loop {
            if self.eat_sym('}') {
                break;
            }
            if self.eat_sym(';') {
                continue;
            }
            if self.eat_ident("oneof") {
                let index = m.oneof_decl.len() as i32;
                m.oneof_decl.push(OneofDescriptorProto {
                    name: Some(self.ident("a oneof name")?),
                    ..Default::default()
                });
                self.sym('{')?;
                while !self.eat_sym('}') {
                    let mut f = self.field(false)?;
                    f.oneof_index = Some(index);
                    m.field.push(f);
                }
                continue;
            }
            let repeated = self.eat_ident("repeated");
            let f = self.field(repeated)?;
            m.field.push(f);
        }
        let mut numbers = HashSet::new();
        let mut names = HashSet::new();
        for f in &m.field {
            if !numbers.insert(f.number()) {
                return Err(self.error(format!(
                    "message {name}: field number {} used twice",
                    f.number()
                )));
            }
            if !names.insert(f.name().to_owned()) {
                return Err(self.error(format!(
                    "message {name}: field name {} used twice",
                    f.name()
                )));
            }
        }
        Ok(m)
    }

    fn field(&mut self, repeated: bool) -> Result<FieldDescriptorProto, ProtoError> {
        let type_name = self.ident("a field type")?;
        if [
            "optional",
            "required",
            "map",
            "reserved",
            "enum",
            "message",
            "extensions",
            "option",
        ]
        .contains(&type_name.as_str())
        {
            return Err(self.error(format!("`{type_name}` is not supported by this parser")));
        }
        let name = self.ident("a field name")?;
        self.sym('=')?;
        let number = match self.next("a field number")? {
            Tok::Int(n) if (1..=536_870_911).contains(&n) && !(19_000..=19_999).contains(&n) => {
                n as i32
            }
            other => {
                return Err(self.error(format!("invalid field number {other} for field {name}")))
            }
        };
        if self.peek() == Some(&Tok::Sym('[')) {
            return Err(self.error(format!("field options on {name} are not supported")));
        }
        self.sym(';')?;
        let mut f = FieldDescriptorProto {
            json_name: Some(json_name(&name)),
            name: Some(name),
            number: Some(number),
            label: Some(if repeated {
                Label::Repeated
            } else {
                Label::Optional
            } as i32),
            ..Default::default()
        };
        match scalar_type(&type_name) {
            Some(t) => f.r#type = Some(t as i32),
            // Resolved to `.package.Name` once all messages are known.
            None => {
                f.r#type = Some(Type::Message as i32);
                f.type_name = Some(type_name);
            }
        }
        Ok(f)
    }

    fn service(&mut self) -> Result<ServiceDescriptorProto, ProtoError> {
        let mut s = ServiceDescriptorProto {
            name: Some(self.ident("a service name")?),
            ..Default::default()
        };
        self.sym('{')?;
        loop {
            if self.eat_sym('}') {
                break;
            }
            if self.eat_sym(';') {
                continue;
            }
            self.keyword("rpc")?;
            let name = self.ident("a method name")?;
            self.sym('(')?;
            let client_streaming = self.eat_ident("stream");
            let input = self.ident("a request type")?;
            self.sym(')')?;
            self.keyword("returns")?;
            self.sym('(')?;
            let server_streaming = self.eat_ident("stream");
            let output = self.ident("a response type")?;
            self.sym(')')?;
            if self.eat_sym('{') {
                self.sym('}').map_err(|_| {
                    self.error(format!("method options on {name} are not supported"))
                })?;
            } else {
                self.sym(';')?;
            }
            s.method.push(MethodDescriptorProto {
                name: Some(name),
                input_type: Some(input),
                output_type: Some(output),
                client_streaming: client_streaming.then_some(true),
                server_streaming: server_streaming.then_some(true),
                ..Default::default()
            });
        }
        Ok(s)
    }
}

fn scalar_type(name: &str) -> Option<Type> {
    Some(match name {
        "double" => Type::Double,
        "float" => Type::Float,
        "int64" => Type::Int64,
        "uint64" => Type::Uint64,
        "int32" => Type::Int32,
        "fixed64" => Type::Fixed64,
        "fixed32" => Type::Fixed32,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "uint32" => Type::Uint32,
        "sfixed32" => Type::Sfixed32,
        "sfixed64" => Type::Sfixed64,
        "sint32" => Type::Sint32,
        "sint64" => Type::Sint64,
        _ => return None,
    })
}

/// protoc's default JSON name: drop `_` and upper-case the letter after it.
pub fn json_name(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Rewrites message references (fields, method input/output) to their fully
/// qualified `.package.Name` form; a name defined nowhere in the file is an error.
fn resolve_types(p: &Parser<'_>, fd: &mut FileDescriptorProto) -> Result<(), ProtoError> {
    let package = fd.package().to_owned();
    let qualify = |name: &str| {
        if package.is_empty() {
            name.to_owned()
        } else {
            format!("{package}.{name}")
        }
    };
    let known: HashSet<String> = fd.message_type.iter().map(|m| qualify(m.name())).collect();
    let resolve = |name: &str| -> Result<String, ProtoError> {
        let bare = name.trim_start_matches('.');
        for candidate in [qualify(bare), bare.to_owned()] {
            if known.contains(&candidate) {
                return Ok(format!(".{candidate}"));
            }
        }
        Err(ProtoError {
            file: p.file.to_owned(),
            line: 0,
            message: format!(
                "unknown type `{name}` (only messages of this file can be referenced)"
            ),
        })
    };
    for m in &mut fd.message_type {
        for f in &mut m.field {
            if let Some(t) = f.type_name.take() {
                f.type_name = Some(resolve(&t)?);
            }
        }
    }
    for s in &mut fd.service {
        for m in &mut s.method {
            m.input_type = Some(resolve(m.input_type())?);
            m.output_type = Some(resolve(m.output_type())?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
