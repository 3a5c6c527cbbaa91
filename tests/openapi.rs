//! `GET /openapi.json`: the OpenAPI 3.0.3 document derived at start-up from
//! the `google.api.http` options and messages. It is validated with a real
//! validator (openapi-spec-validator from PyPI, via tests/openapi-validate.sh)
//! and must list every route the proto declares. Without python3/PyPI the
//! validation is skipped with a printed reason, unless
//! HANDWIRE_PY_TOOLS_REQUIRED=1 (CI) makes it required.

mod support;

use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use handwire::protocol::gateway::Template;
use handwire::protocol::gateway::{openapi, Gateway};
use handwire::protocol::grpc::descriptor::{parse_files, ParsedFile, GOOGLE_API_FILES};
use handwire::protocol::grpc::UnaryMethod;
use handwire::services::greeter::api;
use http::Method;
use serde_json::Value;
use support::greeter::{call, start};

/// Every (method, OpenAPI path) the rules of `files[0]` declare.
fn declared_routes(file: &ParsedFile) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for r in &file.http_rules {
        for rule in std::iter::once(&r.rule).chain(&r.rule.additional_bindings) {
            let path = Template::parse(&rule.path).unwrap().openapi_path();
            out.push((rule.method.to_ascii_lowercase(), path));
        }
    }
    out
}

fn assert_lists_every_route(doc: &Value, routes: &[(String, String)]) {
    assert_eq!(doc["openapi"], "3.0.3");
    assert!(!routes.is_empty());
    for (method, path) in routes {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} missing from {doc:#}");
        assert!(op["responses"]["200"].is_object(), "{method} {path}");
        assert_eq!(
            op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/kratos.Error"
        );
    }
}

/// Runs the validator on `doc`; `false` when it could not be installed
/// and that is allowed (the reason is printed).
fn validate(name: &str, doc: &Value) -> bool {
    let path = support::temp_path(name, ".json");
    std::fs::write(&path, serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/openapi-validate.sh"
        ))
        .arg(&path)
        .output()
        .expect("bash runs");
    let _ = std::fs::remove_file(&path);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => true,
        Some(3) if std::env::var("HANDWIRE_PY_TOOLS_REQUIRED").as_deref() != Ok("1") => {
            eprintln!("SKIPPED OpenAPI validation of {name}: {text}");
            false
        }
        _ => panic!("{name}: OpenAPI document invalid or validator missing:\n{text}"),
    }
}

#[tokio::test]
async fn greeter_serves_a_valid_openapi_document_listing_every_declared_route() {
    let g = start().await;
    let reply = call(g.http, Method::GET, "/openapi.json", "").await;
    assert_eq!(reply.status.as_u16(), 200);
    let ct = reply.header("content-type").unwrap_or_default();
    assert!(ct.starts_with("application/json"), "{ct}");
    let doc = reply.json();
    let files = api::parsed_files().unwrap();
    let routes = declared_routes(&files[0]);
    assert!(routes.contains(&("get".into(), "/helloworld/{name}".into())));
    assert_lists_every_route(&doc, &routes);
    let say_hello = &doc["paths"]["/helloworld/{name}"]["get"];
    assert_eq!(say_hello["parameters"][0]["in"], "path");
    assert_eq!(say_hello["parameters"][0]["name"], "name");
    let register = &doc["paths"]["/v1/users"]["post"]["requestBody"];
    assert_eq!(
        register["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/UserRegisterRequest"
    );
    validate("greeter-openapi", &doc);
}

#[tokio::test]
async fn operations_and_schemas_are_described_by_the_protos_comments_without_file_lines() {
    let g = start().await;
    let doc = call(g.http, Method::GET, "/openapi.json", "").await.json();
    let say_hello = &doc["paths"]["/helloworld/{name}"]["get"];
    assert_eq!(say_hello["summary"], "Sends a greeting.");
    let list = &doc["paths"]["/v1/users"]["get"];
    assert_eq!(
        list["summary"],
        "Lists users, oldest first, one page at a time (AIP-158)."
    );
    let text = doc.to_string();
    assert!(!text.contains(".proto:"), "a file:line is left: {text}");
    let schemas = &doc["components"]["schemas"];
    for name in [
        "HelloRequest",
        "HelloReply",
        "UserRegisterRequest",
        "User",
        "UserListResponse",
    ] {
        assert!(schemas[name].is_object(), "{name} in {schemas:#}");
        assert!(
            schemas[name]["description"].is_string(),
            "{name} has no description"
        );
    }
    assert!(schemas.get("helloworld.v1.HelloReply").is_none());
    assert_eq!(
        schemas["UserListResponse"]["properties"]["nextPageToken"]["description"],
        "Empty on the last page."
    );
}

#[tokio::test]
async fn the_protos_validation_rules_are_published_in_the_schema() {
    let g = start().await;
    let doc = call(g.http, Method::GET, "/openapi.json", "").await.json();
    let register = &doc["components"]["schemas"]["UserRegisterRequest"];
    assert_eq!(
        register["required"],
        serde_json::json!(["username", "password"])
    );
    let username = &register["properties"]["username"];
    assert_eq!(username["minLength"], 1);
    assert_eq!(username["maxLength"], 64);
    assert_eq!(username["pattern"], "^[A-Za-z0-9_.-]+$");
    let password = &register["properties"]["password"];
    assert_eq!(
        password["maxLength"], 32,
        "128 bytes: 32 characters always fit"
    );
    assert_eq!(password["pattern"], r"^[^\x00-\x1F\x7F-\x9F]*$");
    let list = doc["paths"]["/v1/users"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .clone();
    let page_size = list.iter().find(|p| p["name"] == "page_size").unwrap();
    assert_eq!(page_size["schema"]["minimum"], 0);
    let name = &doc["paths"]["/helloworld/{name}"]["get"]["parameters"][0]["schema"];
    assert_eq!(name["minLength"], 1);
    assert_eq!(name["maxLength"], 16, "64 bytes: 16 characters always fit");
}

#[tokio::test]
async fn every_error_status_is_listed_and_a_413_is_the_documented_error_model() {
    let g = start().await;
    let doc = call(g.http, Method::GET, "/openapi.json", "").await.json();
    let responses = &doc["paths"]["/v1/users"]["post"]["responses"];
    for status in [
        "400", "404", "405", "409", "413", "414", "429", "431", "500", "503", "504",
    ] {
        assert_eq!(
            responses[status]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/kratos.Error",
            "{status}"
        );
    }
    let big = format!(r#"{{"username":"{}","password":"x"}}"#, "a".repeat(5 << 20));
    let reply = call(g.http, Method::POST, "/v1/users", &big).await;
    assert_eq!(reply.status.as_u16(), 413);
    let body = reply.json();
    assert_eq!(body["code"], 413);
    assert_eq!(body["reason"], "PAYLOAD_TOO_LARGE");
    assert!(
        body["message"].as_str().unwrap().contains("too large"),
        "{body}"
    );
    assert_eq!(body["metadata"], serde_json::json!({}));
}

#[test]
fn test_proto_document_with_nested_repeated_map_and_enum_fields_is_valid() {
    let echo: UnaryMethod = Arc::new(|b: Bytes| Box::pin(async move { Ok(b) }));
    let source = include_str!("../proto/testdata/library/v1/library.proto");
    let [a, h] = GOOGLE_API_FILES;
    let files = parse_files(&[("library/v1/library.proto", source), a, h]).unwrap();
    let names: Vec<String> = files[0].descriptor.service[0]
        .method
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    let methods: Vec<(&str, UnaryMethod)> =
        names.iter().map(|n| (n.as_str(), echo.clone())).collect();
    let gateway = Gateway::new(&files, "library.v1.Library", &methods).unwrap();
    let info = openapi::Info {
        title: "library".into(),
        version: "1".into(),
        description: "test".into(),
    };
    let doc = openapi::document(&gateway, &files, &info);
    assert_lists_every_route(&doc, &declared_routes(&files[0]));
    let get = &doc["paths"]["/v1/{name}"]["get"]["parameters"];
    let query: Vec<&str> = get
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == "query")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(query.contains(&"shelf.theme"), "{query:?}");
    assert!(query.contains(&"author.address.city"), "{query:?}");
    assert!(!query.contains(&"name"), "path-bound: {query:?}");
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["Book"]["properties"]["tags"]["type"], "array");
    assert_eq!(
        schemas["Book"]["properties"]["ratings"]["additionalProperties"]["format"],
        "int32"
    );
    assert_eq!(schemas["Genre"]["enum"][2], "POETRY");
    assert_eq!(
        schemas["Book"]["properties"]["notes"]["items"]["$ref"],
        "#/components/schemas/Book.Note"
    );
    validate("library-openapi", &doc);
}
