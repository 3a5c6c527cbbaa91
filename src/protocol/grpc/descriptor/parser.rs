//! The recursive-descent parser: tokens to an unresolved
//! `FileDescriptorProto` (type references still as written) plus the
//! `google.api.http` rules of its methods, the `buf.validate` rules of its
//! fields and the leading comments of its elements.

use std::collections::{HashMap, HashSet};

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileOptions, MessageOptions, MethodDescriptorProto, OneofDescriptorProto,
    ServiceDescriptorProto,
};

use super::lexer::Tok;
use super::{
    json_name, scalar_type, FieldRules, MethodHttpRule, ProtoError, VALIDATE_IMPORT,
    WELL_KNOWN_IMPORTS,
};

pub(super) struct Parser<'a> {
    pub(super) file: &'a str,
    pub(super) tokens: Vec<(Tok, usize)>,
    pub(super) pos: usize,
    /// The `google.api.http` rules found so far.
    pub(super) rules: Vec<MethodHttpRule>,
    /// Leading comments by token index (from the lexer).
    pub(super) comments: HashMap<usize, String>,
    /// The fully qualified name of the message being parsed (or the
    /// package), without the leading dot.
    pub(super) scope: String,
    /// Leading comments by element (`.pkg.Message.field`, `.pkg.Service.Method`).
    pub(super) docs: HashMap<String, String>,
    /// The `(buf.validate.field)` rules found so far.
    pub(super) field_rules: Vec<FieldRules>,
    /// Whether the file imports `buf/validate/validate.proto`.
    pub(super) imports_validate: bool,
}

impl Parser<'_> {
    pub(super) fn error(&self, message: impl Into<String>) -> ProtoError {
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

    pub(super) fn line(&self) -> usize {
        self.tokens.get(self.pos).map_or(0, |t| t.1)
    }

    pub(super) fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.0)
    }

    pub(super) fn next(&mut self, what: &str) -> Result<Tok, ProtoError> {
        let tok = self.tokens.get(self.pos).map(|t| t.0.clone());
        self.pos += 1;
        tok.ok_or_else(|| self.error(format!("unexpected end of file, expected {what}")))
    }

    pub(super) fn sym(&mut self, c: char) -> Result<(), ProtoError> {
        match self.next(&format!("`{c}`"))? {
            Tok::Sym(s) if s == c => Ok(()),
            other => Err(self.error(format!("expected `{c}`, found {other}"))),
        }
    }

    pub(super) fn ident(&mut self, what: &str) -> Result<String, ProtoError> {
        match self.next(what)? {
            Tok::Ident(s) => Ok(s),
            other => Err(self.error(format!("expected {what}, found {other}"))),
        }
    }

    pub(super) fn keyword(&mut self, kw: &str) -> Result<(), ProtoError> {
        match self.next(&format!("`{kw}`"))? {
            Tok::Ident(s) if s == kw => Ok(()),
            other => Err(self.error(format!("expected `{kw}`, found {other}"))),
        }
    }

    pub(super) fn eat_ident(&mut self, kw: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(s)) if s == kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Records the comment leading token `at` as the documentation of
    /// `name` (scope-qualified below `scope`).
    fn document(&mut self, at: usize, name: &str) {
        if let Some(text) = self.comments.get(&at) {
            let key = if self.scope.is_empty() {
                format!(".{name}")
            } else {
                format!(".{}.{name}", self.scope)
            };
            self.docs.insert(key, text.clone());
        }
    }

    pub(super) fn eat_sym(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Sym(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn file_body(&mut self, fd: &mut FileDescriptorProto) -> Result<(), ProtoError> {
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
                    let package = self.ident("a package name")?;
                    self.scope = package.clone();
                    fd.package = Some(package);
                    self.sym(';')?;
                }
                Tok::Ident(kw) if kw == "import" => {
                    if matches!(self.peek(), Some(Tok::Ident(m)) if m == "public" || m == "weak") {
                        return Err(self.error("only plain `import \"file\";` is supported"));
                    }
                    match self.next("an import path")? {
                        Tok::Str(path) => {
                            self.imports_validate |= path == VALIDATE_IMPORT;
                            fd.dependency.push(path)
                        }
                        other => {
                            return Err(
                                self.error(format!("expected an import path, found {other}"))
                            )
                        }
                    }
                    self.sym(';')?;
                }
                Tok::Ident(kw) if kw == "option" => self.file_option(fd)?,
                Tok::Ident(kw) if kw == "message" => {
                    let m = self.message()?;
                    fd.message_type.push(m);
                }
                Tok::Ident(kw) if kw == "enum" => {
                    let e = self.enumeration()?;
                    fd.enum_type.push(e);
                }
                Tok::Ident(kw) if kw == "service" => {
                    let s = self.service(fd.package())?;
                    fd.service.push(s);
                }
                Tok::Ident(kw) if kw == "extend" => self.extend(fd)?,
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
            ("objc_class_prefix", Tok::Str(s)) => opts.objc_class_prefix = Some(s),
            ("csharp_namespace", Tok::Str(s)) => opts.csharp_namespace = Some(s),
            ("php_namespace", Tok::Str(s)) => opts.php_namespace = Some(s),
            ("php_metadata_namespace", Tok::Str(s)) => opts.php_metadata_namespace = Some(s),
            ("ruby_package", Tok::Str(s)) => opts.ruby_package = Some(s),
            ("swift_prefix", Tok::Str(s)) => opts.swift_prefix = Some(s),
            ("cc_enable_arenas", Tok::Ident(b)) if b == "true" || b == "false" => {
                opts.cc_enable_arenas = Some(b == "true")
            }
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

    /// `extend google.protobuf.MethodOptions { HttpRule http = 72295728; }`:
    /// the one extension the crate's files declare (google/api/annotations.proto).
    fn extend(&mut self, fd: &mut FileDescriptorProto) -> Result<(), ProtoError> {
        let extendee = self.ident("a message to extend")?;
        let bare = extendee.trim_start_matches('.').to_owned();
        let options = [
            "google.protobuf.MethodOptions",
            "google.protobuf.FieldOptions",
        ];
        if !options.contains(&bare.as_str())
            || !fd
                .dependency
                .iter()
                .any(|d| WELL_KNOWN_IMPORTS.contains(&d.as_str()))
        {
            return Err(self.error(format!(
                "`extend {extendee}` is not supported (only google.protobuf.MethodOptions \
                 and FieldOptions, after `import \"google/protobuf/descriptor.proto\";`)"
            )));
        }
        self.sym('{')?;
        while !self.eat_sym('}') {
            if self.eat_sym(';') {
                continue;
            }
            let mut f = self.field(false)?;
            f.extendee = Some(format!(".{bare}"));
            fd.extension.push(f);
        }
        Ok(())
    }

    fn message(&mut self) -> Result<DescriptorProto, ProtoError> {
        let keyword = self.pos - 1;
        let name = self.ident("a message name")?;
        self.document(keyword, &name);
        let outer = std::mem::take(&mut self.scope);
        self.scope = if outer.is_empty() {
            name.clone()
        } else {
            format!("{outer}.{name}")
        };
        let m = self.message_body(name);
        self.scope = outer;
        m
    }

    fn message_body(&mut self, name: String) -> Result<DescriptorProto, ProtoError> {
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
            if self.eat_ident("message") {
                let nested = self.message()?;
                m.nested_type.push(nested);
                continue;
            }
            if self.eat_ident("enum") {
                let e = self.enumeration()?;
                m.enum_type.push(e);
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
                    let start = self.pos;
                    let mut f = self.field(false)?;
                    self.document(start, f.name());
                    f.oneof_index = Some(index);
                    m.field.push(f);
                }
                continue;
            }
            if self.eat_ident("map") {
                self.map_field(&mut m)?;
                continue;
            }
            let start = self.pos;
            let repeated = self.eat_ident("repeated");
            let f = self.field(repeated)?;
            self.document(start, f.name());
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
        let mut nested = HashSet::new();
        let nested_names = m.nested_type.iter().map(|n| n.name());
        for n in nested_names.chain(m.enum_type.iter().map(|e| e.name())) {
            if !nested.insert(n) {
                return Err(self.error(format!("message {name}: type {n} declared twice")));
            }
        }
        Ok(m)
    }

    /// `map<K, V> name = N;` becomes a repeated field of a nested
    /// `NameEntry { K key = 1; V value = 2; }` marked `map_entry`, as protoc does.
    fn map_field(&mut self, m: &mut DescriptorProto) -> Result<(), ProtoError> {
        self.sym('<')?;
        let key = self.ident("a map key type")?;
        self.sym(',')?;
        let value = self.ident("a map value type")?;
        self.sym('>')?;
        let key_type =
            scalar_type(&key).filter(|t| !matches!(t, Type::Double | Type::Float | Type::Bytes));
        if key_type.is_none() {
            return Err(self.error(format!(
                "map key type `{key}` is not allowed (integral types and string only)"
            )));
        }
        let name = self.ident("a field name")?;
        self.sym('=')?;
        let number = self.field_number(&name)?;
        self.no_field_options(&name)?;
        self.sym(';')?;
        let entry_name = format!("{}Entry", super::camel_case(&name, true));
        let entry_field = |n: &str, number: i32, ty: &str| {
            let mut f = FieldDescriptorProto {
                name: Some(n.into()),
                json_name: Some(n.into()),
                number: Some(number),
                label: Some(Label::Optional as i32),
                ..Default::default()
            };
            set_type(&mut f, ty);
            f
        };
        m.nested_type.push(DescriptorProto {
            name: Some(entry_name.clone()),
            field: vec![entry_field("key", 1, &key), entry_field("value", 2, &value)],
            options: Some(MessageOptions {
                map_entry: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        });
        m.field.push(FieldDescriptorProto {
            json_name: Some(json_name(&name)),
            name: Some(name),
            number: Some(number),
            label: Some(Label::Repeated as i32),
            r#type: Some(Type::Message as i32),
            type_name: Some(entry_name),
            ..Default::default()
        });
        Ok(())
    }

    fn enumeration(&mut self) -> Result<EnumDescriptorProto, ProtoError> {
        let keyword = self.pos - 1;
        let name = self.ident("an enum name")?;
        self.document(keyword, &name);
        self.sym('{')?;
        let mut e = EnumDescriptorProto {
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
            let value = self.ident("an enum value name")?;
            if value == "option" || value == "reserved" {
                return Err(self.error(format!("`{value}` in enum {name} is not supported")));
            }
            self.sym('=')?;
            let number = match self.next("an enum value number")? {
                Tok::Int(n) if n <= i64::from(i32::MAX) => n as i32,
                other => {
                    return Err(self.error(format!(
                        "invalid number {other} for {value} (0..=2147483647)"
                    )))
                }
            };
            if e.value.is_empty() && number != 0 {
                return Err(self.error(format!(
                    "enum {name}: the first value must be 0 in proto3, {value} is {number}"
                )));
            }
            if e.value.iter().any(|v| v.name() == value) {
                return Err(self.error(format!("enum {name}: value {value} declared twice")));
            }
            self.no_field_options(&value)?;
            self.sym(';')?;
            e.value.push(EnumValueDescriptorProto {
                name: Some(value),
                number: Some(number),
                ..Default::default()
            });
        }
        if e.value.is_empty() {
            return Err(self.error(format!("enum {name} has no values")));
        }
        Ok(e)
    }

    fn field_number(&mut self, name: &str) -> Result<i32, ProtoError> {
        match self.next("a field number")? {
            Tok::Int(n) if (1..=536_870_911).contains(&n) && !(19_000..=19_999).contains(&n) => {
                Ok(n as i32)
            }
            other => Err(self.error(format!("invalid field number {other} for field {name}"))),
        }
    }

    fn no_field_options(&mut self, name: &str) -> Result<(), ProtoError> {
        if self.peek() == Some(&Tok::Sym('[')) {
            self.pos += 1;
            return Err(self.error(format!("field options on {name} are not supported")));
        }
        Ok(())
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
            "extend",
            "option",
            "group",
        ]
        .contains(&type_name.as_str())
        {
            return Err(self.error(format!("`{type_name}` is not supported by this parser")));
        }
        let line = self.line();
        let name = self.ident("a field name")?;
        self.sym('=')?;
        let number = self.field_number(&name)?;
        if let Some(rules) = self.field_options(&name, &type_name, repeated, line)? {
            self.field_rules.push(rules);
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
        set_type(&mut f, &type_name);
        Ok(f)
    }

    fn service(&mut self, package: &str) -> Result<ServiceDescriptorProto, ProtoError> {
        let keyword = self.pos - 1;
        let mut s = ServiceDescriptorProto {
            name: Some(self.ident("a service name")?),
            ..Default::default()
        };
        self.document(keyword, s.name());
        let full = match package {
            "" => s.name().to_owned(),
            p => format!("{p}.{}", s.name()),
        };
        self.sym('{')?;
        loop {
            if self.eat_sym('}') {
                break;
            }
            if self.eat_sym(';') {
                continue;
            }
            let keyword = self.pos;
            self.keyword("rpc")?;
            let name = self.ident("a method name")?;
            self.document(keyword, &format!("{}.{name}", s.name()));
            if s.method.iter().any(|m| m.name() == name) {
                return Err(self.error(format!(
                    "service {}: method {name} declared twice",
                    s.name()
                )));
            }
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
                while !self.eat_sym('}') {
                    if self.eat_sym(';') {
                        continue;
                    }
                    self.method_option(&full, &name)?;
                }
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

/// Sets a field's type: a scalar, or a reference resolved later.
fn set_type(f: &mut FieldDescriptorProto, type_name: &str) {
    match scalar_type(type_name) {
        Some(t) => f.r#type = Some(t as i32),
        None => {
            // Message or enum: decided when the name is resolved.
            f.r#type = Some(Type::Message as i32);
            f.type_name = Some(type_name.to_owned());
        }
    }
}
