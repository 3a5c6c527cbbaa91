//! A tiny `.proto` parser: turns the source of proto3 files into the
//! `FileDescriptorProto`s that server reflection hands to clients, plus the
//! `google.api.http` rules the HTTP gateway derives its routes from.
//!
//! Building descriptors from the `.proto` text (embedded with `include_str!`)
//! keeps one source of truth: what grpcurl sees through reflection is exactly
//! what `grpcurl -proto` would read from disk. The parser covers the subset
//! the crate's files use and rejects everything else by name and line, so a
//! construct it does not understand can never be silently dropped:
//!
//! - `syntax = "proto3";`, `package a.b;`, `import "file";`, the file-level
//!   `option`s upstream files carry (`go_package`, `java_package`,
//!   `java_outer_classname`, `java_multiple_files`, `objc_class_prefix`,
//!   `csharp_namespace`, `php_namespace`, `php_metadata_namespace`,
//!   `ruby_package`, `swift_prefix`, `cc_enable_arenas`, `deprecated`);
//! - `message` with scalar, message and enum fields, `repeated`, `map<K, V>`
//!   (as protoc: a nested `XxxEntry` message with `map_entry`), `oneof`,
//!   nested `message` and `enum`; top-level `enum`;
//! - `service` with `rpc`, `stream` on either side, and the method option
//!   `option (google.api.http) = { ... };` (a text-format literal: `get`,
//!   `put`, `post`, `delete`, `patch`, `custom { kind path }`, `body`,
//!   `response_body`, one level of `additional_bindings`);
//! - `extend google.protobuf.MethodOptions { ... }` and `FieldOptions`, which
//!   `google/api/annotations.proto` and `buf/validate/validate.proto` need;
//! - the field options `[(buf.validate.field)...]` of protovalidate (the
//!   subset in [`FieldRules`]), checked and kept as [`ParsedFile::field_rules`];
//! - leading comments (`//` lines right above an element), kept as
//!   [`ParsedFile::docs`] for the OpenAPI document;
//! - string escapes `\\`, `\"`, `\'`, `\n`, `\r`, `\t`, `\xHH`.
//!
//! Not supported (error naming `file:line`): `optional`, `reserved`,
//! `extensions`, other field options, enum and message options, other
//! method options, `import public`/`weak`, proto2.
//!
//! Names are resolved as protoc does: from the innermost scope outwards, in
//! the file and in the files it imports ([`parse_files`]). The one import
//! that need not be in the set is `google/protobuf/descriptor.proto` (every
//! protobuf runtime has it built in; only `extend` refers to it).

mod field_rules;
mod http_option;
mod lexer;
mod parser;
pub mod pattern;

use std::collections::HashMap;
use std::fmt;

use prost_types::field_descriptor_proto::Type;
use prost_types::{DescriptorProto, FileDescriptorProto};

use parser::Parser;

/// `google/api/annotations.proto` and `google/api/http.proto` as published
/// by googleapis, for files that annotate methods with `google.api.http`.
pub const GOOGLE_API_FILES: [(&str, &str); 2] = [
    (
        "google/api/annotations.proto",
        include_str!("../../../proto/google/api/annotations.proto"),
    ),
    (
        "google/api/http.proto",
        include_str!("../../../proto/google/api/http.proto"),
    ),
];

/// protovalidate's `buf/validate/validate.proto` (the subset of the rules
/// this parser enforces, see [`FieldRules`]), for files whose fields carry
/// `(buf.validate.field)` options.
pub const VALIDATE_FILE: (&str, &str) = (
    VALIDATE_IMPORT,
    include_str!("../../../proto/buf/validate/validate.proto"),
);

/// Imports every protobuf runtime has built in; they need not be in the set.
pub const WELL_KNOWN_IMPORTS: [&str; 1] = ["google/protobuf/descriptor.proto"];

/// The import a file with `(buf.validate.field)` options needs.
pub const VALIDATE_IMPORT: &str = "buf/validate/validate.proto";

/// The constraints of one field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRules {
    /// The message, fully qualified with a leading dot (`.helloworld.v1.HelloRequest`).
    pub message: String,
    /// The field's name in the `.proto`.
    pub field: String,
    /// Line of the field.
    pub line: usize,
    /// `required`: the field may not hold its zero value (proto3 fields
    /// without presence).
    pub required: bool,
    /// `string.min_len`, in characters.
    pub min_len: Option<u64>,
    /// `string.max_len`, in characters.
    pub max_len: Option<u64>,
    /// `string.min_bytes`, in UTF-8 bytes.
    pub min_bytes: Option<u64>,
    /// `string.max_bytes`, in UTF-8 bytes.
    pub max_bytes: Option<u64>,
    /// `string.pattern`.
    pub pattern: Option<pattern::Pattern>,
    /// `<int>.gte`.
    pub gte: Option<i64>,
    /// `<int>.lte`.
    pub lte: Option<i64>,
}

/// Why a `.proto` source was rejected: file, line and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError {
    /// The file name given to [`parse_proto`].
    pub file: String,
    /// 1-based line of the offending token (0 when no line applies).
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

/// One `google.api.http` rule as written (templates are checked by the
/// gateway, which knows the messages).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpRule {
    /// `GET`, `PUT`, `POST`, `DELETE`, `PATCH`, or a `custom` kind as written.
    pub method: String,
    /// The path template.
    pub path: String,
    /// `""` (no body), `"*"` or a field name.
    pub body: String,
    /// `""` (the whole reply) or the reply field sent as the body.
    pub response_body: String,
    /// Further bindings of the same method (empty in a binding).
    pub additional_bindings: Vec<HttpRule>,
    /// Line of the pattern (`get: ...`) in the file.
    pub line: usize,
}

/// The `(google.api.http)` option of one method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodHttpRule {
    /// Fully qualified service name, `helloworld.v1.Greeter`.
    pub service: String,
    /// Method name, `SayHello`.
    pub method: String,
    /// The rule.
    pub rule: HttpRule,
}

/// A parsed file: its descriptor, the HTTP rules of its methods, the
/// validation rules of its fields and the leading comments of its elements.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedFile {
    /// The descriptor, references resolved to `.package.Name`.
    pub descriptor: FileDescriptorProto,
    /// One entry per method that has a `google.api.http` option.
    pub http_rules: Vec<MethodHttpRule>,
    /// One entry per field that has `(buf.validate.field)` options.
    pub field_rules: Vec<FieldRules>,
    /// Leading comments by fully qualified element name with a leading dot:
    /// `.helloworld.v1.HelloRequest`, `.helloworld.v1.HelloRequest.name`,
    /// `.helloworld.v1.Greeter`, `.helloworld.v1.Greeter.SayHello`.
    pub docs: HashMap<String, String>,
}

/// Parses `source` (named `file_name` in the descriptor, e.g.
/// `helloworld/v1/greeter.proto`) on its own: imports are recorded, but
/// only the file's own types can be referenced.
pub fn parse_proto(file_name: &str, source: &str) -> Result<FileDescriptorProto, ProtoError> {
    Ok(parse_files(&[(file_name, source)])?.remove(0).descriptor)
}

/// Parses a set of `(name, source)` files; each may reference the types of
/// the files it imports, which must be in the set (or be
/// [`WELL_KNOWN_IMPORTS`]). Results are in the order given.
pub fn parse_files(files: &[(&str, &str)]) -> Result<Vec<ParsedFile>, ProtoError> {
    let mut parsed = Vec::with_capacity(files.len());
    for (name, source) in files {
        parsed.push(parse_unresolved(name, source)?);
    }
    let mut kinds: HashMap<String, HashMap<String, Kind>> = HashMap::new();
    for p in &parsed {
        kinds.insert(
            p.descriptor.name().to_owned(),
            declared_types(&p.descriptor),
        );
    }
    for p in &mut parsed {
        let fd = &mut p.descriptor;
        let mut visible = kinds[fd.name()].clone();
        for dep in &fd.dependency {
            match kinds.get(dep) {
                Some(theirs) => visible.extend(theirs.iter().map(|(k, v)| (k.clone(), *v))),
                None if WELL_KNOWN_IMPORTS.contains(&dep.as_str()) => {}
                // A lone file (parse_proto) may import what it does not use.
                None if files.len() == 1 => {}
                None => {
                    return Err(ProtoError {
                        file: fd.name().to_owned(),
                        line: 0,
                        message: format!("import \"{dep}\" is not among the files given"),
                    })
                }
            }
        }
        resolve(fd, &visible)?;
    }
    Ok(parsed)
}

fn parse_unresolved(file_name: &str, source: &str) -> Result<ParsedFile, ProtoError> {
    let (tokens, comments) = lexer::tokenize(file_name, source)?;
    let mut p = Parser {
        file: file_name,
        tokens,
        pos: 0,
        rules: Vec::new(),
        comments,
        scope: String::new(),
        docs: HashMap::new(),
        field_rules: Vec::new(),
        imports_validate: false,
    };
    let mut fd = FileDescriptorProto {
        name: Some(file_name.to_owned()),
        ..Default::default()
    };
    p.file_body(&mut fd)?;
    Ok(ParsedFile {
        descriptor: fd,
        http_rules: p.rules,
        field_rules: p.field_rules,
        docs: p.docs,
    })
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
    camel_case(field, false)
}

/// `field` with each `_` dropped and the letter after it upper-cased; the
/// first letter too when `upper_first` (`user_tags` → `UserTags`, the name
/// protoc gives a map's entry message).
pub(crate) fn camel_case(field: &str, upper_first: bool) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = upper_first;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Enum,
}

/// Every message and enum `fd` declares, by fully qualified name (no dot).
fn declared_types(fd: &FileDescriptorProto) -> HashMap<String, Kind> {
    fn walk(prefix: &str, m: &DescriptorProto, out: &mut HashMap<String, Kind>) {
        let name = format!("{prefix}{}", m.name());
        for e in &m.enum_type {
            out.insert(format!("{name}.{}", e.name()), Kind::Enum);
        }
        for n in &m.nested_type {
            walk(&format!("{name}."), n, out);
        }
        out.insert(name, Kind::Message);
    }
    let prefix = match fd.package() {
        "" => String::new(),
        p => format!("{p}."),
    };
    let mut out = HashMap::new();
    for e in &fd.enum_type {
        out.insert(format!("{prefix}{}", e.name()), Kind::Enum);
    }
    for m in &fd.message_type {
        walk(&prefix, m, &mut out);
    }
    out
}

/// Finds `name` as protoc would from inside `scope` (a fully qualified
/// message or package name): innermost scope first.
fn lookup(name: &str, scope: &str, known: &HashMap<String, Kind>) -> Option<(String, Kind)> {
    if let Some(full) = name.strip_prefix('.') {
        return known.get(full).map(|k| (format!(".{full}"), *k));
    }
    let mut scope = scope;
    loop {
        let candidate = if scope.is_empty() {
            name.to_owned()
        } else {
            format!("{scope}.{name}")
        };
        if let Some(k) = known.get(&candidate) {
            return Some((format!(".{candidate}"), *k));
        }
        if scope.is_empty() {
            return None;
        }
        scope = scope.rfind('.').map_or("", |i| &scope[..i]);
    }
}

/// Rewrites type references (fields, extensions, method input/output) to
/// their fully qualified `.package.Name` form, marking enums as such; a
/// name defined nowhere visible is an error.
fn resolve(fd: &mut FileDescriptorProto, known: &HashMap<String, Kind>) -> Result<(), ProtoError> {
    let file = fd.name().to_owned();
    let unknown = |name: &str, what: &str| ProtoError {
        file: file.clone(),
        line: 0,
        message: format!(
            "unknown type `{name}` in {what} (only messages and enums of this file and its \
             imports can be referenced)"
        ),
    };
    fn fields(
        scope: &str,
        m: &mut DescriptorProto,
        known: &HashMap<String, Kind>,
        unknown: &dyn Fn(&str, &str) -> ProtoError,
    ) -> Result<(), ProtoError> {
        let here = format!("{scope}.{}", m.name())
            .trim_start_matches('.')
            .to_owned();
        for f in &mut m.field {
            if let Some(t) = f.type_name.take() {
                let what = format!("field {here}.{}", f.name());
                let (full, kind) = lookup(&t, &here, known).ok_or_else(|| unknown(&t, &what))?;
                if kind == Kind::Enum {
                    f.r#type = Some(Type::Enum as i32);
                }
                f.type_name = Some(full);
            }
        }
        for n in &mut m.nested_type {
            fields(&here, n, known, unknown)?;
        }
        Ok(())
    }
    let package = fd.package().to_owned();
    for m in &mut fd.message_type {
        fields(&package, m, known, &unknown)?;
    }
    for f in &mut fd.extension {
        if let Some(t) = f.type_name.take() {
            let what = format!("extension {}", f.name());
            let (full, kind) = lookup(&t, &package, known).ok_or_else(|| unknown(&t, &what))?;
            if kind == Kind::Enum {
                f.r#type = Some(Type::Enum as i32);
            }
            f.type_name = Some(full);
        }
    }
    for s in &mut fd.service {
        let service = s.name().to_owned();
        for m in &mut s.method {
            for slot in [&mut m.input_type, &mut m.output_type] {
                let t = slot.take().unwrap_or_default();
                let what = format!("method {service}.{}", m.name.as_deref().unwrap_or(""));
                match lookup(&t, &package, known) {
                    Some((full, Kind::Message)) => *slot = Some(full),
                    _ => return Err(unknown(&t, &what)),
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
