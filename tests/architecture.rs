//! The layering of `src/`, checked from the source text: every `crate::…`
//! and `super::…` path in a library file is resolved to the file it names,
//! and these rules must hold (the map in `src/lib.rs` says the same):
//!
//! - `src/ops/` (operations: log sink, trace context, metrics, …) is the
//!   bottom room: it imports only itself and the shared modules;
//! - `src/contract.rs`, where the server and the framework meet, imports
//!   only operations;
//! - `src/web/` (the framework's mechanics) and `src/server/` (the accept
//!   loop and its armour) each import themselves, the contract and
//!   operations: never each other;
//! - `src/protocol/` (gRPC, JWT) and `src/launch.rs` (what the binaries
//!   share from `main` to serving) import the rooms below, never a service
//!   nor each other;
//! - a service (`src/services/NAME/`) never imports another service;
//! - the shared modules (`types`, `cli`, `config`) import nothing else;
//! - no two files import each other, directly or around a longer cycle.
//!
//! Test code (`tests.rs` files, `tests/` folders, and everything from a
//! file's `#[cfg(test)]` on) is left out: it may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Where a file sits in the layering.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layer {
    Shared,
    Ops,
    Contract,
    Framework,
    Server,
    Protocol,
    Launch,
    Service(String),
    Root,
}

/// The module path of a file (`src/web/chain.rs` → `["web", "chain"]`).
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn layer_of(module: &[String]) -> Layer {
    match module.first().map(String::as_str) {
        None => Layer::Root,
        Some("web") => Layer::Framework,
        Some("server") => Layer::Server,
        Some("ops") => Layer::Ops,
        Some("contract") => Layer::Contract,
        Some("launch") => Layer::Launch,
        Some("protocol") => Layer::Protocol,
        Some("services") => match module.get(1) {
            Some(name) => Layer::Service(name.clone()),
            None => Layer::Root,
        },
        Some(_) => Layer::Shared,
    }
}

/// Whether `from` may import `to`.
fn allowed(from: &Layer, to: &Layer) -> bool {
    match (from, to) {
        (_, Layer::Root) => false,
        (Layer::Root, _) => true,
        (Layer::Shared, _) => false,
        (_, Layer::Shared) => true,
        (Layer::Ops, Layer::Ops) => true,
        (Layer::Ops, _) => false,
        (Layer::Contract, Layer::Ops) => true,
        (Layer::Contract, _) => false,
        (Layer::Framework, Layer::Framework | Layer::Contract | Layer::Ops) => true,
        (Layer::Framework, _) => false,
        (Layer::Server, Layer::Server | Layer::Contract | Layer::Ops) => true,
        (Layer::Server, _) => false,
        (Layer::Protocol | Layer::Launch, Layer::Service(_) | Layer::Launch) => false,
        (Layer::Protocol, _) => true,
        (Layer::Launch, Layer::Protocol) => false,
        (Layer::Launch, _) => true,
        (Layer::Service(a), Layer::Service(b)) => a == b,
        (Layer::Service(_), _) => true,
    }
}

/// The library part of a file's text: up to its first `#[cfg(test)]`, with
/// comments removed.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path starting with `crate::` or `super::` in `code`, as segments
/// resolved against `module` (the file's module path).
fn referenced_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in 0..code.len() {
        if !code.is_char_boundary(start) {
            continue;
        }
        let rest = &code[start..];
        let (mut base, after) = if let Some(r) = rest.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if rest.starts_with("super::") {
            // In the file of module M, `super` is M's parent, mod.rs or not.
            let mut base = module.to_vec();
            let mut r = rest;
            while let Some(next) = r.strip_prefix("super::") {
                base.pop();
                r = next;
            }
            (base, r)
        } else {
            continue;
        };
        // Only whole paths: not `mycrate::` or `xsuper::`.
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let path = leading_path(after);
        base.extend(segments(path));
        // `prefix::{a, b::c}`: one path per item of the group.
        match after[path.len()..].strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or("");
                for item in group.split(',') {
                    let mut full = base.clone();
                    full.extend(segments(leading_path(item.trim())));
                    out.push(full);
                }
            }
            None => out.push(base),
        }
    }
    out
}

/// The `a::b::c` at the start of `text`.
fn leading_path(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    &text[..end]
}

fn segments(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split("::")
        .filter(|s| !s.is_empty() && *s != "self")
        .map(str::to_string)
}

/// The file module (longest prefix of `path` that is a known module).
fn resolve(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// Rule breaks in a tree given as (path relative to `src/`, text) pairs.
fn violations(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (rel, text) in files {
        let module = module_of(rel);
        let from = layer_of(&module);
        for path in referenced_paths(&code_of(text), &module) {
            let Some(target) = resolve(&path, &modules) else {
                continue;
            };
            if target == module || module.starts_with(&target) {
                continue; // itself, or its own parent module
            }
            let to = layer_of(&target);
            if !allowed(&from, &to) {
                problems.push(format!(
                    "src/{rel} ({from:?}) imports crate::{} ({to:?})",
                    target.join("::")
                ));
            }
            edges.entry(module.clone()).or_default().insert(target);
        }
    }
    // Cycles between files: depth-first search with colours.
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
        problems: &mut Vec<String>,
    ) {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                0 => visit(next, edges, state, stack, problems),
                1 => {
                    let at = stack.iter().position(|n| n == next).unwrap_or(0);
                    let cycle: Vec<String> = stack[at..]
                        .iter()
                        .chain([next])
                        .map(|m| m.join("::"))
                        .collect();
                    problems.push(format!("import cycle: {}", cycle.join(" -> ")));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if !state.contains_key(node) {
            visit(node, &edges, &mut state, &mut Vec::new(), &mut problems);
        }
    }
    problems
}

/// The library files under `src/` (not `src/bin/`, not test files).
fn library_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        for entry in fs::read_dir(dir).expect("read src/") {
            let path = entry.expect("dir entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "bin" && name != "tests" {
                    walk(&path, root, out);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let rel = path.strip_prefix(root).expect("under src/");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, fs::read_to_string(&path).expect("read source")));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

#[test]
fn layers_framework_and_protocol_never_import_a_service_and_services_never_import_each_other() {
    let files = library_files();
    assert!(files.len() > 40, "found only {} files", files.len());
    let problems = violations(&files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_catches_each_kind_of_violation() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let base = vec![
        file(
            "lib.rs",
            "pub mod web; pub mod server; pub mod ops; pub mod contract; pub mod services; pub mod types;",
        ),
        file("types.rs", ""),
        file("ops/log.rs", "use crate::types::BoxFuture;"),
        file("contract.rs", "use crate::ops::log;"),
        file("server/mod.rs", "use crate::contract::Service; use crate::ops::log;"),
        file("web/mod.rs", "pub mod chain; pub mod engine;"),
        file("web/chain.rs", "use crate::types::BoxFuture; use crate::contract::Caller;"),
        file("web/engine.rs", "use crate::web::chain::Context;"),
        file("protocol/grpc.rs", "use crate::web::chain::Context;"),
        file("services/mod.rs", ""),
        file("services/a/mod.rs", "use crate::web::engine::Engine;"),
        file("services/b/mod.rs", "use super::super::protocol::grpc;"),
    ];
    assert_eq!(violations(&base), Vec::<String>::new());

    let cases = [
        (
            "web/chain.rs",
            "use crate::services::a::X;",
            "web/chain.rs (Framework) imports crate::services::a",
        ),
        (
            "web/chain.rs",
            "use crate::protocol::grpc;",
            "(Framework) imports crate::protocol::grpc",
        ),
        (
            "web/chain.rs",
            "use crate::server::Service;",
            "web/chain.rs (Framework) imports crate::server (Server)",
        ),
        (
            "server/mod.rs",
            "use crate::web::chain::Context;",
            "server/mod.rs (Server) imports crate::web::chain (Framework)",
        ),
        (
            "ops/log.rs",
            "use crate::web::chain::Context;",
            "ops/log.rs (Ops) imports crate::web::chain (Framework)",
        ),
        (
            "contract.rs",
            "use crate::server::Service;",
            "contract.rs (Contract) imports crate::server (Server)",
        ),
        (
            "protocol/grpc.rs",
            "fn f() { crate::services::b::g() }",
            "(Protocol) imports crate::services::b",
        ),
        (
            "services/a/mod.rs",
            "use crate::services::b::Y;",
            "(Service(\"a\")) imports crate::services::b",
        ),
        (
            "services/b/mod.rs",
            "use super::a::Y;",
            "(Service(\"b\")) imports crate::services::a",
        ),
        (
            "types.rs",
            "use crate::web::chain::Context;",
            "types.rs (Shared) imports crate::web::chain",
        ),
        (
            "web/chain.rs",
            "use crate::web::engine::App;",
            "import cycle: web::chain -> web::engine -> web::chain",
        ),
    ];
    for (path, text, want) in cases {
        let mut files = base.clone();
        let slot = files.iter_mut().find(|(p, _)| p == path).unwrap();
        slot.1 = format!("{}\n{text}", slot.1);
        let problems = violations(&files);
        assert!(
            problems.iter().any(|p| p.contains(want)),
            "{path}: {text}: expected {want:?}, got {problems:#?}"
        );
    }
    // Comments and test code do not count.
    let mut files = base.clone();
    let at = files.iter().position(|(p, _)| p == "web/chain.rs").unwrap();
    files[at].1 =
        "// use crate::services::a::X;\n#[cfg(test)]\nmod t { use crate::services::a::X; }".into();
    assert_eq!(violations(&files), Vec::<String>::new());
}
