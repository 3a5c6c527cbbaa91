//! The OpenAPI 3.0.3 document of a [`Gateway`]'s routes, built at start-up
//! from the same descriptors the routes come from, so the document cannot
//! drift from what is served.
//!
//! Per binding: the path (variables as `{field.path}`, the verb kept as in
//! `/v1/greetings:sayAgain`), path parameters, query parameters (every
//! scalar field the body and path leave, nested ones as `a.b`, repeated
//! ones as arrays), the request body, the reply (or its `response_body`
//! field) for 200 and the Kratos error for every other status the server
//! gives (each listed: 400, 404, 405, 409, 413, 414, 429, 431, 500, 503,
//! 504, and
//! `default`). Messages and enums become `components.schemas` under their
//! names without the package where that name is unique (as grpc-gateway
//! does; the full name otherwise), fields under their JSON names, with
//! protobuf's JSON mapping (64-bit integers are strings, bytes are base64).
//!
//! The proto's leading comments become the text: an RPC's first line is
//! the operation's `summary`, the whole comment its `description`; messages
//! and fields get theirs as `description`. The `buf.validate` rules are
//! published: `required` (also `minLength: 1` on a string), `minLength`,
//! `maxLength` (a `max_bytes` bound as the characters that always fit,
//! `max_bytes / 4`, the bytes said in the description), `pattern`,
//! `minimum`, `maximum`.
//!
//! Limits, said here rather than hidden: a variable over several segments
//! (`{name=users/*}`) is one path parameter whose value holds `/`, which
//! OpenAPI cannot express; `custom` kinds outside OpenAPI's methods are left
//! out; two bindings that give the same OpenAPI path and method keep the first.

use std::collections::BTreeSet;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto};
use serde_json::{json, Map, Value};

use super::codec::Pool;
use super::routes::BodyRule;
use super::Gateway;
use crate::protocol::grpc::descriptor::ParsedFile;
use sources::{publish_rules, Sources};

mod sources;

/// The `info` object.
#[derive(Debug, Clone)]
pub struct Info {
    /// API title.
    pub title: String,
    /// API version.
    pub version: String,
    /// One paragraph.
    pub description: String,
}

/// The name of the Kratos error schema.
pub const ERROR_SCHEMA: &str = "kratos.Error";

/// The error statuses every operation lists (the server's answers besides
/// 200: invalid input or body, no route, wrong method, conflict, body too
/// large, rate limit, internal, store unavailable or busy, time-out), each
/// with the Kratos error body.
const ERROR_STATUSES: [(&str, &str); 11] = [
    (
        "400",
        "Invalid input (a field breaking its rule, a body that does not decode)",
    ),
    ("404", "No such route"),
    ("405", "Method not allowed on this path"),
    ("409", "Conflict (the thing to create exists)"),
    ("413", "Request body too large"),
    ("414", "Request target (path and query) longer than 8 KiB"),
    ("429", "Too many requests from this client"),
    ("431", "More than 100 header fields or 64 KiB of headers"),
    ("500", "Internal error"),
    ("503", "The store is unavailable or busy; try again shortly"),
    ("504", "Past server.http.timeout"),
];

/// OpenAPI's operation keys (lower-case methods).
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Builds the document of `gateway`'s routes; `files` (those the gateway
/// was built from) give the comments and the validation rules.
pub fn document(gateway: &Gateway, files: &[ParsedFile], info: &Info) -> Value {
    let sources = Sources::new(files);
    let pool = gateway.pool();
    let mut paths = Map::new();
    let mut wanted: Vec<String> = Vec::new();
    let mut operation_ids = BTreeSet::new();
    for route in gateway.routes() {
        let method = route.http_method.as_str().to_ascii_lowercase();
        if !METHODS.contains(&method.as_str()) {
            continue;
        }
        let path = route.template.openapi_path();
        let item = paths
            .entry(path.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        if item.contains_key(&method) {
            continue;
        }
        let Some(input) = pool.message(&route.input) else {
            continue;
        };
        let service = route.service.rsplit('.').next().unwrap_or(&route.service);
        let mut id = format!("{service}_{}", route.method);
        let mut n = 1;
        while !operation_ids.insert(id.clone()) {
            n += 1;
            id = format!("{service}_{}{n}", route.method);
        }
        let mut parameters = Vec::new();
        let mut bound: Vec<String> = Vec::new();
        for v in route.template.variables() {
            let dotted = v.dotted();
            let field = super::routes::field_path(pool, input, &v.field_path).ok();
            let mut schema = field.map_or(json!({"type": "string"}), |f| scalar_schema(pool, f));
            if v.field_path.len() == 1 {
                publish_rules(
                    &mut schema,
                    sources
                        .rules
                        .get(&(route.input.as_str(), v.dotted().as_str()))
                        .copied(),
                );
                if let Some(text) = sources.doc(&format!("{}.{}", route.input, v.dotted())) {
                    schema["description"] = json!(text);
                }
            }
            if !v.is_single_segment(&route.template) {
                schema["description"] =
                    json!("may contain `/` (the variable spans several path segments)");
            }
            parameters
                .push(json!({"name": dotted, "in": "path", "required": true, "schema": schema}));
            bound.push(dotted);
        }
        if route.body != BodyRule::All {
            let skip = match &route.body {
                BodyRule::Field(f) => Some(f.as_str()),
                _ => None,
            };
            let mut query = Vec::new();
            query_fields(pool, input, "", skip, &mut Vec::new(), &mut query);
            for (name, field) in query {
                if bound.contains(&name) {
                    continue;
                }
                let mut schema = scalar_schema(pool, field);
                let rules = sources
                    .rules
                    .get(&(route.input.as_str(), name.as_str()))
                    .copied();
                publish_rules(&mut schema, rules);
                if field.label() == Label::Repeated {
                    schema = json!({"type": "array", "items": schema});
                }
                let mut parameter = json!({
                    "name": name, "in": "query",
                    "required": rules.is_some_and(|r| r.required),
                    "schema": schema
                });
                if let Some(text) = sources.doc(&format!("{}.{name}", route.input)) {
                    parameter["description"] = json!(text);
                }
                parameters.push(parameter);
            }
        }
        let comment = sources.doc(&format!(".{}.{}", route.service, route.method));
        let summary = comment.and_then(|c| c.lines().next()).map_or_else(
            || format!("{}.{}", route.service, route.method),
            str::to_owned,
        );
        let error = json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{ERROR_SCHEMA}")}}});
        let mut responses = Map::new();
        responses.insert(
            "200".into(),
            json!({"description": "OK", "content": {"application/json": {"schema": reply_schema(pool, &sources, route, &mut wanted)}}}),
        );
        for (status, description) in ERROR_STATUSES {
            responses.insert(
                status.into(),
                json!({"description": description, "content": error}),
            );
        }
        responses.insert(
            "default".into(),
            json!({"description": "Any other error, in Kratos' shape; `code` is the HTTP status", "content": error}),
        );
        let mut op = json!({
            "operationId": id,
            "tags": [service],
            "summary": summary,
            "parameters": parameters,
            "responses": responses
        });
        if let Some(text) = comment {
            op["description"] = json!(text);
        }
        let body_schema = match &route.body {
            BodyRule::None => None,
            BodyRule::All => Some(reference(&sources, &route.input, &mut wanted)),
            BodyRule::Field(name) => input
                .field
                .iter()
                .find(|f| f.name() == name)
                .map(|f| field_schema(pool, &sources, f, &mut wanted)),
        };
        if let Some(schema) = body_schema {
            op["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": schema}}});
        }
        item.insert(method, op);
    }
    let mut schemas = Map::new();
    while let Some(name) = wanted.pop() {
        let key = sources.name(&name);
        if schemas.contains_key(&key) {
            continue;
        }
        let mut schema = if let Some(m) = pool.message(&name) {
            message_schema(pool, &sources, &name, m, &mut wanted)
        } else if let Some(e) = pool.enumeration(&name) {
            json!({"type": "string", "enum": e.value.iter().map(|v| v.name()).collect::<Vec<_>>()})
        } else {
            json!({})
        };
        if let Some(text) = sources.doc(&name) {
            schema["description"] = json!(text);
        }
        schemas.insert(key, schema);
    }
    schemas.insert(
        ERROR_SCHEMA.to_owned(),
        json!({
            "type": "object",
            "required": ["code", "reason", "message", "metadata"],
            "properties": {
                "code": {"type": "integer", "format": "int32", "description": "the HTTP status"},
                "reason": {"type": "string", "description": "UPPER_SNAKE identifier to match on"},
                "message": {"type": "string"},
                "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                "details": {
                    "type": "array",
                    "description": "for invalid input, a google.rpc.BadRequest naming each field",
                    "items": {
                        "type": "object",
                        "required": ["@type"],
                        "properties": {
                            "@type": {"type": "string"},
                            "fieldViolations": {"type": "array", "items": {
                                "type": "object",
                                "properties": {
                                    "field": {"type": "string"},
                                    "description": {"type": "string"},
                                    "reason": {"type": "string"}
                                }
                            }}
                        }
                    }
                }
            }
        }),
    );
    json!({
        "openapi": "3.0.3",
        "info": {"title": info.title, "version": info.version, "description": info.description},
        "paths": paths,
        "components": {"schemas": schemas}
    })
}

fn reference(sources: &Sources<'_>, name: &str, wanted: &mut Vec<String>) -> Value {
    wanted.push(name.to_owned());
    json!({"$ref": format!("#/components/schemas/{}", sources.name(name))})
}

fn reply_schema(
    pool: &Pool,
    sources: &Sources<'_>,
    route: &super::Route,
    wanted: &mut Vec<String>,
) -> Value {
    if let Some(field) = &route.response_body {
        if let Some(f) = pool
            .message(&route.output)
            .and_then(|m| m.field.iter().find(|f| f.name() == field))
        {
            return field_schema(pool, sources, f, wanted);
        }
    }
    reference(sources, &route.output, wanted)
}

fn message_schema(
    pool: &Pool,
    sources: &Sources<'_>,
    name: &str,
    m: &DescriptorProto,
    wanted: &mut Vec<String>,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for f in &m.field {
        let mut schema = field_schema(pool, sources, f, wanted);
        let rules = sources.rules.get(&(name, f.name())).copied();
        publish_rules(&mut schema, rules);
        if rules.is_some_and(|r| r.required) {
            required.push(f.json_name().to_owned());
        }
        if let Some(text) = sources.doc(&format!("{name}.{}", f.name())) {
            if schema.get("$ref").is_some() {
                // A `$ref` takes no siblings in OpenAPI 3.0: wrap it.
                schema = json!({"allOf": [schema]});
            }
            schema["description"] = json!(text);
        }
        properties.insert(f.json_name().to_owned(), schema);
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// A field's schema, repeated and map fields included.
fn field_schema(
    pool: &Pool,
    sources: &Sources<'_>,
    f: &FieldDescriptorProto,
    wanted: &mut Vec<String>,
) -> Value {
    if pool.is_map(f) {
        let value = pool
            .message(f.type_name())
            .and_then(|entry| entry.field.get(1))
            .map_or(json!({}), |v| single_schema(pool, sources, v, wanted));
        return json!({"type": "object", "additionalProperties": value});
    }
    let one = single_schema(pool, sources, f, wanted);
    if f.label() == Label::Repeated {
        json!({"type": "array", "items": one})
    } else {
        one
    }
}

fn single_schema(
    pool: &Pool,
    sources: &Sources<'_>,
    f: &FieldDescriptorProto,
    wanted: &mut Vec<String>,
) -> Value {
    match f.r#type() {
        Type::Message | Type::Enum => reference(sources, f.type_name(), wanted),
        _ => scalar_schema(pool, f),
    }
}

/// The schema of a scalar or enum value (no `$ref`: parameters inline it).
fn scalar_schema(pool: &Pool, f: &FieldDescriptorProto) -> Value {
    match f.r#type() {
        Type::String => json!({"type": "string"}),
        Type::Bytes => json!({"type": "string", "format": "byte"}),
        Type::Bool => json!({"type": "boolean"}),
        Type::Int32 | Type::Sint32 | Type::Sfixed32 => {
            json!({"type": "integer", "format": "int32"})
        }
        Type::Uint32 | Type::Fixed32 => json!({"type": "integer", "format": "int64", "minimum": 0}),
        Type::Int64 | Type::Sint64 | Type::Sfixed64 => json!({"type": "string", "format": "int64"}),
        Type::Uint64 | Type::Fixed64 => json!({"type": "string", "format": "uint64"}),
        Type::Double => json!({"type": "number", "format": "double"}),
        Type::Float => json!({"type": "number", "format": "float"}),
        Type::Enum => {
            let names: Vec<&str> = pool
                .enumeration(f.type_name())
                .map(|e| e.value.iter().map(|v| v.name()).collect())
                .unwrap_or_default();
            json!({"type": "string", "enum": names})
        }
        Type::Message | Type::Group => json!({"type": "object"}),
    }
}

/// The scalar leaves of `m` reachable through singular message fields, as
/// dotted query keys; `skip` is the top-level body field.
fn query_fields<'a>(
    pool: &'a Pool,
    m: &'a DescriptorProto,
    prefix: &str,
    skip: Option<&str>,
    stack: &mut Vec<String>,
    out: &mut Vec<(String, &'a FieldDescriptorProto)>,
) {
    for f in &m.field {
        if prefix.is_empty() && skip == Some(f.name()) {
            continue;
        }
        let name = format!("{prefix}{}", f.name());
        if pool.is_map(f) {
            continue;
        }
        if f.r#type() == Type::Message {
            // Singular messages only, and no recursion into a type already open.
            if f.label() == Label::Repeated || stack.iter().any(|t| t == f.type_name()) {
                continue;
            }
            if let Some(inner) = pool.message(f.type_name()) {
                stack.push(f.type_name().to_owned());
                query_fields(pool, inner, &format!("{name}."), None, stack, out);
                stack.pop();
            }
            continue;
        }
        out.push((name, f));
    }
}
