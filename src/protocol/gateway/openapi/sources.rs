//! What the OpenAPI document takes from the `.proto` files besides the
//! routes: leading comments, `buf.validate` rules (and how each is
//! published in a schema), and the schema names without the package.

use std::collections::HashMap;

use prost_types::DescriptorProto;
use serde_json::{json, Value};

use super::ERROR_SCHEMA;
use crate::protocol::grpc::descriptor::{FieldRules, ParsedFile};

/// What the document is built from besides the routes: the comments and
/// validation rules of the `.proto` files, and the short schema names.
pub(super) struct Sources<'a> {
    pub(super) docs: HashMap<&'a str, &'a str>,
    pub(super) rules: HashMap<(&'a str, &'a str), &'a FieldRules>,
    names: HashMap<String, String>,
}

impl<'a> Sources<'a> {
    pub(super) fn new(files: &'a [ParsedFile]) -> Sources<'a> {
        let mut docs = HashMap::new();
        let mut rules = HashMap::new();
        let mut full_names = Vec::new();
        for f in files {
            docs.extend(f.docs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            for r in &f.field_rules {
                rules.insert((r.message.as_str(), r.field.as_str()), r);
            }
            let fd = &f.descriptor;
            let package = match fd.package() {
                "" => String::new(),
                p => format!(".{p}"),
            };
            fn walk(
                prefix: &str,
                m: &DescriptorProto,
                out: &mut Vec<(String, String)>,
                short: &str,
            ) {
                let full = format!("{prefix}.{}", m.name());
                let short = if short.is_empty() {
                    m.name().to_owned()
                } else {
                    format!("{short}.{}", m.name())
                };
                for e in &m.enum_type {
                    out.push((
                        format!("{full}.{}", e.name()),
                        format!("{short}.{}", e.name()),
                    ));
                }
                for n in &m.nested_type {
                    walk(&full, n, out, &short);
                }
                out.push((full, short));
            }
            for e in &fd.enum_type {
                full_names.push((format!("{package}.{}", e.name()), e.name().to_owned()));
            }
            for m in &fd.message_type {
                walk(&package, m, &mut full_names, "");
            }
        }
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (_, short) in &full_names {
            *count.entry(short.as_str()).or_default() += 1;
        }
        let names = full_names
            .iter()
            .map(|(full, short)| {
                let name = if count[short.as_str()] == 1 && short != ERROR_SCHEMA {
                    short.clone()
                } else {
                    full.trim_start_matches('.').to_owned()
                };
                (full.clone(), name)
            })
            .collect();
        Sources { docs, rules, names }
    }

    /// The schema name of the type `full` (`.pkg.Name`).
    pub(super) fn name(&self, full: &str) -> String {
        self.names
            .get(full)
            .cloned()
            .unwrap_or_else(|| full.trim_start_matches('.').to_owned())
    }

    pub(super) fn doc(&self, key: &str) -> Option<&'a str> {
        self.docs.get(key).copied()
    }
}

/// Adds the `buf.validate` rules of a field to its (scalar) schema.
pub(super) fn publish_rules(schema: &mut Value, rules: Option<&FieldRules>) {
    let Some(r) = rules else { return };
    let mut min_len = r.min_len.max(r.min_bytes).unwrap_or(0);
    if r.required && schema["type"] == "string" {
        min_len = min_len.max(1);
    }
    if min_len > 0 {
        schema["minLength"] = json!(min_len);
    }
    // A bound in bytes is published as the characters that always fit
    // (4 bytes each at most), the bytes themselves in the description.
    let max_len = match (r.max_len, r.max_bytes) {
        (Some(c), Some(b)) => Some(c.min(b / 4)),
        (c, b) => c.or(b.map(|b| b / 4)),
    };
    if let Some(n) = max_len {
        schema["maxLength"] = json!(n);
    }
    if let Some(b) = r.max_bytes {
        schema["description"] = json!(format!("at most {b} bytes of UTF-8"));
    }
    if let Some(p) = &r.pattern {
        schema["pattern"] = json!(p.source());
    }
    if let Some(n) = r.gte {
        schema["minimum"] = json!(n);
    }
    if let Some(n) = r.lte {
        schema["maximum"] = json!(n);
    }
}
