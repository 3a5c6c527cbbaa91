//! Routes compiled from `google.api.http` rules, checked against the
//! messages at start-up, and the request → input message mapping:
//!
//! | `body`     | request body              | query string           |
//! |------------|---------------------------|------------------------|
//! | omitted    | not read                  | every other field      |
//! | `"*"`      | the whole input message   | ignored                |
//! | `"field"`  | that field                | every other field      |
//!
//! Query keys are field paths (`a.b=x` sets a nested field), a repeated
//! field takes `?p=A&p=B`, keys naming no field are ignored (as Kratos),
//! and the path's variables are set last: the path wins over query and body.
//! Every field path (template, `body`, query key) is read by proto or JSON
//! name and kept in proto names, so `?pageSize=1&page_size=2` is one field
//! given twice; an enum in the query or path is a name or a number the enum
//! declares. No body at all is the empty message.

use std::sync::Arc;

use http::Method;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto};
use serde_json::{Map, Value};

use super::codec::Pool;
use super::template::Template;
use super::{Failure, GatewayError, UnaryMethod};
use crate::ops::metrics::Operation;
use crate::protocol::grpc::descriptor::{HttpRule, MethodHttpRule};
use crate::protocol::grpc::Code;
use crate::web::urlenc;

/// Where the request body goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyRule {
    /// No body; all non-path fields come from the query.
    None,
    /// The body is the whole input message; the query is ignored.
    All,
    /// The body is this top-level field (proto name).
    Field(String),
}

/// One HTTP binding of one method.
pub struct Route {
    /// The HTTP method (`custom` kinds as written).
    pub http_method: Method,
    /// The compiled path template.
    pub template: Template,
    /// `helloworld.v1.Greeter`.
    pub service: String,
    /// `SayHello`.
    pub method: String,
    /// Input message, `.helloworld.v1.HelloRequest`.
    pub input: String,
    /// Output message.
    pub output: String,
    /// Where the body goes.
    pub body: BodyRule,
    /// The reply field sent as the body (proto name), or the whole reply.
    pub response_body: Option<String>,
    /// `file:line` of the rule, for messages.
    pub origin: String,
    /// The line alone.
    pub line: usize,
    pub(super) handler: UnaryMethod,
    /// Its metrics series, once [`super::Gateway::meter`] was called.
    pub(super) operation: Option<Arc<Operation>>,
}

/// Compiles the rule of one method (and its additional bindings).
pub(super) fn compile(
    pool: &Pool,
    file: &str,
    rule: &MethodHttpRule,
    input: &str,
    output: &str,
    handler: &UnaryMethod,
) -> Result<Vec<Route>, GatewayError> {
    let mut routes = Vec::new();
    for r in std::iter::once(&rule.rule).chain(&rule.rule.additional_bindings) {
        let err = |message: String| GatewayError {
            file: file.to_owned(),
            line: r.line,
            method: format!("{}.{}", rule.service, rule.method),
            message,
        };
        let mut route = compile_one(pool, r, input, output, handler.clone(), err)?;
        route.service.clone_from(&rule.service);
        route.method.clone_from(&rule.method);
        route.origin = format!("{file}:{}", r.line);
        route.line = r.line;
        routes.push(route);
    }
    Ok(routes)
}

/// One binding, checked against the messages (names are filled in by the caller).
fn compile_one(
    pool: &Pool,
    r: &HttpRule,
    input: &str,
    output: &str,
    handler: UnaryMethod,
    err: impl Fn(String) -> GatewayError,
) -> Result<Route, GatewayError> {
    let mut template = Template::parse(&r.path).map_err(|e| err(e.to_string()))?;
    let http_method = Method::from_bytes(r.method.as_bytes())
        .map_err(|_| err(format!("{:?} is not an HTTP method", r.method)))?;
    let in_msg = pool
        .message(input)
        .ok_or_else(|| err(format!("unknown input {input}")))?;
    let mut bound: Vec<Vec<String>> = Vec::new();
    for (i, v) in template.variables().to_vec().iter().enumerate() {
        let (canonical, f) = resolve_path(pool, in_msg, &v.field_path)
            .map_err(|m| err(format!("{}: {m}", r.path)))?;
        if f.label() == Label::Repeated {
            return Err(err(format!(
                "{}: path field {} is repeated; path variables must be singular",
                r.path,
                v.dotted()
            )));
        }
        if f.r#type() == Type::Message {
            return Err(err(format!(
                "{}: path field {} is a message; path variables must be scalars",
                r.path,
                v.dotted()
            )));
        }
        // `{authorInfo}` and `{author_info}` are one field: bound twice.
        if bound.contains(&canonical) {
            return Err(err(format!(
                "{}: field {} is bound twice",
                r.path,
                canonical.join(".")
            )));
        }
        bound.push(canonical.clone());
        template.set_field_path(i, canonical);
    }
    let body = match r.body.as_str() {
        "" => BodyRule::None,
        "*" => BodyRule::All,
        name => {
            let f = named_field(in_msg, name)
                .ok_or_else(|| err(format!("body: unknown field `{name}` in {input}")))?;
            BodyRule::Field(f.name().to_owned())
        }
    };
    if body != BodyRule::None && http_method == Method::GET {
        return Err(err("a GET binding cannot have a body".into()));
    }
    let response_body = match r.response_body.as_str() {
        "" => None,
        name => {
            let out_msg = pool
                .message(output)
                .ok_or_else(|| err(format!("unknown output {output}")))?;
            let f = named_field(out_msg, name)
                .ok_or_else(|| err(format!("response_body: unknown field `{name}` in {output}")))?;
            Some(f.name().to_owned())
        }
    };
    Ok(Route {
        http_method,
        template,
        service: String::new(),
        method: String::new(),
        input: input.to_owned(),
        output: output.to_owned(),
        body,
        response_body,
        origin: String::new(),
        line: r.line,
        handler,
        operation: None,
    })
}

fn top_field<'a>(m: &'a DescriptorProto, name: &str) -> Option<&'a FieldDescriptorProto> {
    m.field.iter().find(|f| f.name() == name)
}

/// The field called `name` by its proto name or its JSON name: the proto3
/// JSON mapping accepts both, and Google's transcoder resolves the field
/// paths of a rule with the same lookup (`TypeHelper::ResolveFieldPath`).
fn named_field<'a>(m: &'a DescriptorProto, name: &str) -> Option<&'a FieldDescriptorProto> {
    top_field(m, name).or_else(|| m.field.iter().find(|f| f.json_name() == name))
}

/// The field a dotted path names, through singular message fields.
pub(super) fn field_path<'a>(
    pool: &'a Pool,
    m: &'a DescriptorProto,
    path: &[String],
) -> Result<&'a FieldDescriptorProto, String> {
    resolve_path(pool, m, path).map(|(_, f)| f)
}

/// The field a dotted path names (each step by proto or JSON name) and the
/// path in proto names, through singular message fields.
fn resolve_path<'a>(
    pool: &'a Pool,
    mut m: &'a DescriptorProto,
    path: &[String],
) -> Result<(Vec<String>, &'a FieldDescriptorProto), String> {
    let mut f = None;
    let mut canonical = Vec::with_capacity(path.len());
    for (i, name) in path.iter().enumerate() {
        if let Some(prev) = f {
            let prev: &FieldDescriptorProto = prev;
            if prev.r#type() != Type::Message || prev.label() == Label::Repeated {
                return Err(format!(
                    "{} is not a singular message field",
                    path[..i].join(".")
                ));
            }
            m = pool
                .message(prev.type_name())
                .ok_or_else(|| format!("unknown message {}", prev.type_name()))?;
        }
        let found = named_field(m, name).ok_or_else(|| {
            format!(
                "unknown field `{}` in message {}",
                path[..=i].join("."),
                m.name()
            )
        })?;
        canonical.push(found.name().to_owned());
        f = Some(found);
    }
    let f = f.ok_or_else(|| "empty field path".to_owned())?;
    Ok((canonical, f))
}

/// A 400 in Kratos shape.
fn bad(reason: &str, message: String) -> Failure {
    Failure::new(Code::InvalidArgument, reason, message)
}

impl Route {
    /// Builds the input message's JSON from body, query and path values.
    pub(super) fn input_json(
        &self,
        pool: &Pool,
        body: &[u8],
        query: Option<&str>,
        path_values: Vec<String>,
    ) -> Result<Value, Failure> {
        let input = pool
            .message(&self.input)
            .ok_or_else(|| Failure::new(Code::Internal, "INTERNAL", "input message not known"))?;
        // "request body must be a JSON object {username, password}: …", as
        // the hand-written routes said it (the README quotes it). No body at
        // all is the empty message, as Google's transcoder (`"{}"` when it
        // saw no input), grpc-gateway and Envoy read it; a body of only
        // whitespace is still invalid JSON.
        let object = |m: &DescriptorProto| {
            if body.is_empty() {
                return Ok(Map::new());
            }
            let names: Vec<&str> = m.field.iter().map(|f| f.json_name()).collect();
            let shape = format!("{{{}}}", names.join(", "));
            super::codec::known_fields(body, pool, m).map_err(move |e| {
                bad(
                    "CODEC",
                    format!("request body must be a JSON object {shape}: {e}"),
                )
            })
        };
        let mut root = match &self.body {
            BodyRule::None => Map::new(),
            BodyRule::All => object(input)?,
            BodyRule::Field(_) if body.is_empty() => Map::new(),
            BodyRule::Field(name) => {
                let f = top_field(input, name).expect("checked at start-up");
                let message = (f.r#type() == Type::Message && f.label() != Label::Repeated)
                    .then(|| pool.message(f.type_name()))
                    .flatten();
                let value = if let Some(m) = message {
                    Value::Object(object(m)?)
                } else {
                    super::codec::field_value(body, pool, f)
                        .map_err(|e| bad("CODEC", format!("request body: {e}")))?
                };
                Map::from_iter([(name.clone(), value)])
            }
        };
        if self.body != BodyRule::All {
            // Fields set so far, by proto-name path: `pageSize` and
            // `page_size` are one field, given twice.
            let mut seen: Vec<(String, String)> = Vec::new();
            for (key, value) in urlenc::pairs(query.unwrap_or("")) {
                let path: Vec<String> = key.split('.').map(str::to_owned).collect();
                let canonical = resolve_path(pool, input, &path).ok().map(|(c, _)| c);
                let bound_by_path = self
                    .template
                    .variables()
                    .iter()
                    .any(|v| Some(&v.field_path) == canonical.as_ref());
                let in_body = matches!(&self.body, BodyRule::Field(b)
                    if named_field(input, &path[0]).is_some_and(|f| f.name() == b));
                if bound_by_path || in_body {
                    continue;
                }
                let set = set(pool, input, &mut root, &path, value.into_owned(), true)
                    .map_err(|m| bad("INVALID_ARGUMENT", format!("query parameter {key}: {m}")))?;
                if let Some((false, field)) = set {
                    if let Some((_, first)) = seen.iter().find(|(f, _)| *f == field) {
                        let also = if *first == key {
                            String::new()
                        } else {
                            format!(" ({first} and {key} name the same field)")
                        };
                        return Err(bad(
                            "INVALID_ARGUMENT",
                            format!(
                                "query parameter {key}: given twice, but the field is not repeated{also}"
                            ),
                        ));
                    }
                    seen.push((field, key.into_owned()));
                }
            }
        }
        for (v, value) in self.template.variables().iter().zip(path_values) {
            set(pool, input, &mut root, &v.field_path, value, false).map_err(|m| {
                bad(
                    "INVALID_ARGUMENT",
                    format!("path variable {}: {m}", v.dotted()),
                )
            })?;
        }
        Ok(Value::Object(root))
    }
}

/// Sets the field at `path` to the text `raw` (appending, for a repeated
/// field from the query). `Ok(None)`: the path names no field and is
/// ignored (query only); otherwise `Ok(Some((repeated, field)))`, the
/// field's path in proto names (`page_size` for `pageSize`).
fn set<'a>(
    pool: &'a Pool,
    mut m: &'a DescriptorProto,
    root: &mut Map<String, Value>,
    path: &[String],
    raw: String,
    from_query: bool,
) -> Result<Option<(bool, String)>, String> {
    let mut object = root;
    let mut canonical: Vec<&str> = Vec::with_capacity(path.len());
    for (i, name) in path.iter().enumerate() {
        let Some(f) = m
            .field
            .iter()
            .find(|f| f.name() == name || f.json_name() == name)
        else {
            return Ok(None); // unknown: ignored, as Kratos does
        };
        canonical.push(f.name());
        // One key per field: the proto name (a body may have used the JSON name).
        if f.json_name() != f.name() {
            if let Some(v) = object.remove(f.json_name()) {
                object.insert(f.name().to_owned(), v);
            }
        }
        let last = i + 1 == path.len();
        if !last {
            if f.r#type() != Type::Message || f.label() == Label::Repeated || pool.is_map(f) {
                return Err(format!(
                    "{} is not a singular message field",
                    path[..=i].join(".")
                ));
            }
            m = pool
                .message(f.type_name())
                .ok_or_else(|| format!("unknown message {}", f.type_name()))?;
            let slot = object
                .entry(f.name().to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            object = slot.as_object_mut().expect("just made an object");
            continue;
        }
        if f.r#type() == Type::Message {
            return Err(format!(
                "{} is a message or map, not a single value",
                path.join(".")
            ));
        }
        let value = match f.r#type() {
            Type::Bool => match raw.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                other => return Err(format!("expected true or false, found {other:?}")),
            },
            Type::Enum => enum_value(pool, f, raw)?,
            _ => Value::String(raw),
        };
        let repeated = f.label() == Label::Repeated;
        if repeated && from_query {
            match object.get_mut(f.name()) {
                Some(Value::Array(items)) => items.push(value),
                _ => {
                    object.insert(f.name().to_owned(), Value::Array(vec![value]));
                }
            }
        } else {
            object.insert(f.name().to_owned(), value);
        }
        return Ok(Some((repeated, canonical.join("."))));
    }
    Ok(None)
}

/// An enum value written in a query or path: its name or its number, as
/// the proto3 JSON mapping accepts both, and only a value the enum
/// declares (grpc-gateway's `runtime/query.go` looks up the name, then the
/// number, and refuses anything else).
fn enum_value(pool: &Pool, f: &FieldDescriptorProto, raw: String) -> Result<Value, String> {
    let e = pool
        .enumeration(f.type_name())
        .ok_or_else(|| format!("enum {} is not known", f.type_name()))?;
    if e.value.iter().any(|v| v.name() == raw) {
        return Ok(Value::String(raw));
    }
    let number = raw.parse::<i32>().ok();
    match e.value.iter().find(|v| Some(v.number()) == number) {
        Some(v) => Ok(Value::String(v.name().to_owned())),
        None => Err(format!(
            "{raw:?} is not a value of {} (a name or a number it declares)",
            e.name()
        )),
    }
}
