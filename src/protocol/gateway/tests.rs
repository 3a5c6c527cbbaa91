//! Route derivation: which route a request reaches (verbs, methods, proto
//! order), and the start-up errors a bad rule gives, naming file, line and
//! method.

use super::*;
use crate::protocol::grpc::descriptor::{parse_files, GOOGLE_API_FILES};
use http::Method;
use std::sync::Arc;

/// A service whose methods differ only in their rules.
fn proto(rpcs: &str) -> String {
    format!(
        "syntax = \"proto3\";\npackage t.v1;\nimport \"google/api/annotations.proto\";\n\
         message Item {{ string id = 1; string name = 2; repeated string tags = 3; \
         Inner inner = 4; map<string, string> labels = 5; string display_name = 6; }}\n\
         message Inner {{ string note = 1; }}\n\
         service S {{\n{rpcs}\n}}\n"
    )
}

fn echo() -> UnaryMethod {
    Arc::new(|bytes: Bytes| {
        Box::pin(async move {
            let mut framed = vec![0, 0, 0, 0, 0];
            framed[1..5].copy_from_slice(&(bytes.len() as u32).to_be_bytes());
            framed.extend_from_slice(&bytes);
            Ok(Bytes::from(framed))
        })
    })
}

fn gateway(rpcs: &str) -> Result<Gateway, GatewayError> {
    let src = proto(rpcs);
    let [a, h] = GOOGLE_API_FILES;
    let files = parse_files(&[("t/v1/t.proto", &src), a, h]).unwrap();
    let names: Vec<String> = files[0].descriptor.service[0]
        .method
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    let methods: Vec<(&str, UnaryMethod)> = names.iter().map(|n| (n.as_str(), echo())).collect();
    Gateway::new(&files, "t.v1.S", &methods)
}

/// What `find` gives, comparable: the method name and bound values.
fn find(g: &Gateway, method: Method, path: &str) -> String {
    match g.find(&method, path) {
        Found::Route(r, Ok(values)) => format!("{} {values:?}", r.method),
        Found::Route(r, Err(e)) => format!("{} error {}", r.method, e.message),
        Found::Miss(Miss::MethodNotAllowed { allowed }) => {
            format!(
                "405 {}",
                crate::web::router::allow_header(&allowed).to_str().unwrap()
            )
        }
        Found::Miss(Miss::Redirect { location }) => format!("redirect {location}"),
        Found::Miss(Miss::NotFound) => "404".into(),
    }
}

#[test]
fn custom_verbs_reach_only_routes_that_declare_them() {
    let g = gateway(
        "rpc Get (Item) returns (Item) { option (google.api.http) = { get: \"/v1/users/{id}\" }; }\n\
         rpc Undelete (Item) returns (Item) { option (google.api.http) = { post: \"/v1/{name=users/*}:undelete\" body: \"*\" }; }\n\
         rpc BatchGet (Item) returns (Item) { option (google.api.http) = { get: \"/v1/users:batchGet\" }; }",
    )
    .unwrap();
    let cases = [
        (Method::GET, "/v1/users/a", "Get [\"a\"]"),
        (
            Method::POST,
            "/v1/users/a:undelete",
            "Undelete [\"users/a\"]",
        ),
        // The declared verb is never a part of {id}.
        (Method::GET, "/v1/users/a:undelete", "405 POST"),
        // An undeclared "verb" is text; %3A is never a verb separator.
        (Method::GET, "/v1/users/a:other", "Get [\"a:other\"]"),
        (
            Method::GET,
            "/v1/users/a%3Aundelete",
            "Get [\"a:undelete\"]",
        ),
        (Method::GET, "/v1/users:batchGet", "BatchGet []"),
        (Method::GET, "/v1/users", "404"),
        // Trailing slashes redirect as on the engine's router, never to `//`.
        (Method::GET, "/v1/users/a/", "redirect /v1/users/a"),
        (
            Method::GET,
            "/v1/users:batchGet/",
            "redirect /v1/users:batchGet",
        ),
        (
            Method::POST,
            "/v1/users/a:undelete/",
            "redirect /v1/users/a:undelete",
        ),
        (Method::GET, "//v1/users/a/", "404"),
        (Method::DELETE, "/v1/users/a", "405 GET"),
        (
            Method::GET,
            "/v1/users/%zz",
            "Get error path variable id: malformed percent escape \"%zz\"",
        ),
    ];
    for (method, path, want) in cases {
        assert_eq!(find(&g, method.clone(), path), want, "{method} {path}");
    }
}

#[test]
fn additional_bindings_and_custom_kinds_are_routes_too_and_unannotated_methods_are_not() {
    let g = gateway(
        "rpc Get (Item) returns (Item) { option (google.api.http) = { get: \"/v1/items/{id}\" \
         additional_bindings { custom { kind: \"HEAD\" path: \"/v1/items/{id}\" } } \
         additional_bindings { put: \"/v1/items/{id}\" body: \"inner\" response_body: \"inner\" } }; }\n\
         rpc Hidden (Item) returns (Item);",
    )
    .unwrap();
    let routes: Vec<(&str, &str, &str)> = g
        .routes()
        .iter()
        .map(|r| {
            (
                r.http_method.as_str(),
                r.template.source(),
                r.method.as_str(),
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("GET", "/v1/items/{id}", "Get"),
            ("HEAD", "/v1/items/{id}", "Get"),
            ("PUT", "/v1/items/{id}", "Get"),
        ]
    );
    assert_eq!(g.routes()[2].body, BodyRule::Field("inner".into()));
    assert_eq!(g.routes()[2].response_body.as_deref(), Some("inner"));
    assert_eq!(find(&g, Method::POST, "/v1/items/1"), "405 GET, HEAD, PUT");
}

#[test]
fn bad_rules_are_startup_errors_naming_file_line_and_method() {
    let rule = |r: &str| {
        format!("rpc M (Item) returns (Item) {{\n option (google.api.http) = {{\n {r} }}; }}")
    };
    let cases = [
        (rule("get: \"/v1/{nope}\""), 9, "/v1/{nope}: unknown field `nope` in message Item"),
        (rule("get: \"/v1/{inner.nope}\""), 9, "unknown field `inner.nope` in message Inner"),
        (rule("get: \"/v1/{tags}\""), 9, "path field tags is repeated; path variables must be singular"),
        (rule("get: \"/v1/{inner}\""), 9, "path field inner is a message; path variables must be scalars"),
        (rule("get: \"/v1/{id.x}\""), 9, "id is not a singular message field"),
        (rule("get: \"/v1/{display_name}/{displayName}\""), 9, "field display_name is bound twice"),
        (rule("get: \"/v1/a%2z\""), 9, "\"%2z\" in literal \"a%2z\" is not a percent escape"),
        (rule("get: \"/v1/**/x\""), 9, "path template \"/v1/**/x\": `**` must be the last segment"),
        (rule("post: \"/v1/x\" body: \"nope\""), 9, "body: unknown field `nope` in .t.v1.Item"),
        (rule("get: \"/v1/x\" response_body: \"nope\""), 9, "response_body: unknown field `nope`"),
        (rule("get: \"/v1/x\" body: \"*\""), 9, "a GET binding cannot have a body"),
        (rule("custom { kind: \"BAD KIND\" path: \"/x\" }"), 9, "\"BAD KIND\" is not an HTTP method"),
        (
            format!("{}\nrpc N (Item) returns (Item) {{ option (google.api.http) = {{ get: \"/v1/x\" }}; }}", rule("get: \"/v1/x\"")),
            10,
            "GET /v1/x is already bound to M (t/v1/t.proto:9)",
        ),
    ];
    for (rpcs, line, want) in cases {
        let err = gateway(&rpcs).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("t/v1/t.proto:{line}: method t.v1.S.")),
            "{text}"
        );
        assert!(text.contains(want), "{rpcs}\n=> {text}");
    }
}

/// Route precedence as Google's transcoder decides it: among the routes of
/// the request's method that match, the leftmost segment where templates
/// differ decides (literal, then `*`, then `**`; a verb is one more
/// literal); proto order only between templates of the same shape. Each
/// pair is declared loser first, so proto order alone would pick wrong.
#[test]
fn route_precedence_is_the_leftmost_difference_not_proto_order() {
    let rule = |name: &str, path: &str| {
        format!("rpc {name} (Item) returns (Item) {{ option (google.api.http) = {{ get: \"{path}\" }}; }}\n")
    };
    let g = gateway(
        &[
            rule("StarBC", "/p/{id}/b/c"),
            rule("AStarStar", "/p/a/{id}/{name}"),
            rule("V1Star", "/v1/{id}"),
            rule("V1Foo", "/v1/foo"),
            rule("RestAll", "/r/{id=**}"),
            rule("RestB", "/r/{id=b/**}"),
            rule("SRest", "/s/{id=**}"),
            rule("SOne", "/s/{id}"),
            rule("TRest", "/t/**"),
            rule("TEnd", "/t"),
            rule("SameA", "/u/{id}"),
            rule("SameB", "/u/{name}"),
        ]
        .concat(),
    )
    .unwrap();
    let cases = [
        ("/p/a/b/c", "AStarStar [\"b\", \"c\"]"),
        ("/p/x/b/c", "StarBC [\"x\"]"),
        ("/v1/foo", "V1Foo []"),
        ("/v1/bar", "V1Star [\"bar\"]"),
        ("/r/b/c", "RestB [\"b/c\"]"),
        ("/r/x/c", "RestAll [\"x/c\"]"),
        ("/s/x", "SOne [\"x\"]"),
        ("/s/x/y", "SRest [\"x/y\"]"),
        ("/t", "TEnd []"),
        ("/t/x", "TRest []"),
        ("/u/x", "SameA [\"x\"]"),
    ];
    for (path, want) in cases {
        assert_eq!(find(&g, Method::GET, path), want, "GET {path}");
    }
    let table = g.route_table();
    let pos = |m: &str| {
        table
            .iter()
            .position(|l| l.contains(&format!(".{m} ")))
            .unwrap()
    };
    assert!(pos("AStarStar") < pos("StarBC"), "{table:#?}");
    assert!(pos("V1Foo") < pos("V1Star"), "{table:#?}");
    assert!(pos("SameA") < pos("SameB"), "{table:#?}");
    assert!(
        table.contains(&"GET /r/{id=b/**} -> t.v1.S.RestB (walks /r/b/**)".to_owned()),
        "{table:#?}"
    );
}

#[test]
fn the_method_table_must_match_the_service() {
    let src = proto("rpc A (Item) returns (Item);");
    let [a, h] = GOOGLE_API_FILES;
    let files = parse_files(&[("t/v1/t.proto", &src), a, h]).unwrap();
    let err = Gateway::new(&files, "t.v1.S", &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t/v1/t.proto:0: method t.v1.S.A: is declared in the .proto but has no handler"
    );
    let err = Gateway::new(&files, "t.v1.S", &[("A", echo()), ("B", echo())]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t/v1/t.proto:0: method t.v1.S.B: has a handler but is not in the service"
    );
}
