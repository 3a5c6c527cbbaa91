//! The gateway's proto3 JSON rules at their edges, through real HTTP, on
//! `proto/testdata/edges/v1/edges.proto` (its handlers echo the request
//! message): enums by name or number, one member per oneof, one field under
//! two names, the empty body, field paths by JSON name. Each table row is
//! (method, path, body, status, what the reply must hold).

mod support;

use handwire::protocol::gateway::Gateway;
use handwire::protocol::grpc::descriptor::{parse_files, GOOGLE_API_FILES};
use http::Method;
use serde_json::{json, Value};
use support::app::TestServer;
use support::gateway::{echo, serve};
use support::greeter::call;

const EDGES: &str = include_str!("../proto/testdata/edges/v1/edges.proto");

async fn edges() -> TestServer {
    let [a, h] = GOOGLE_API_FILES;
    let files = parse_files(&[("edges/v1/edges.proto", EDGES), a, h]).unwrap();
    let methods = [("Search", echo()), ("Rename", echo())];
    serve(Gateway::new(&files, "edges.v1.Edges", &methods).unwrap()).await
}

/// The echoed query with every unset field at its JSON default (oneof
/// members only when set), then `set`.
fn query(set: Value) -> Value {
    let mut q = json!({
        "kind": "KIND_UNSPECIFIED", "kinds": [], "pageSize": 0, "authorInfo": null
    });
    for (k, v) in set.as_object().unwrap() {
        q[k] = v.clone();
    }
    q
}

/// What a row expects back.
enum Want {
    /// 200 with exactly this message.
    Echo(Value),
    /// 400 with this reason, the message containing this text.
    Bad(&'static str, &'static str),
}
use Want::*;

async fn check(s: &TestServer, cases: Vec<(Method, &str, &str, Want)>) {
    for (method, path, body, want) in cases {
        let reply = call(s.addr, method.clone(), path, body).await;
        let got = reply.json();
        match want {
            Echo(message) => {
                assert_eq!(reply.status.as_u16(), 200, "{method} {path} {body}: {got}");
                assert_eq!(got, message, "{method} {path} {body}");
            }
            Bad(reason, text) => {
                assert_eq!(reply.status.as_u16(), 400, "{method} {path} {body}: {got}");
                assert_eq!(got["reason"], reason, "{method} {path} {body}: {got}");
                let message = got["message"].as_str().unwrap_or_default();
                assert!(message.contains(text), "{method} {path} {body}: {message}");
            }
        }
    }
}

#[tokio::test]
async fn enums_in_the_query_take_the_name_or_the_number_and_refuse_unknown_ones() {
    let s = edges().await;
    check(
        &s,
        vec![
            (
                Method::GET,
                "/v1/search?kind=1",
                "",
                Echo(query(json!({"kind": "ALPHA"}))),
            ),
            (
                Method::GET,
                "/v1/search?kind=BETA",
                "",
                Echo(query(json!({"kind": "BETA"}))),
            ),
            (
                Method::GET,
                "/v1/search?kinds=1&kinds=2",
                "",
                Echo(query(json!({"kinds": ["ALPHA", "BETA"]}))),
            ),
            (
                Method::GET,
                "/v1/search?kinds=BETA&kinds=1&kinds=0",
                "",
                Echo(query(
                    json!({"kinds": ["BETA", "ALPHA", "KIND_UNSPECIFIED"]}),
                )),
            ),
            (
                Method::GET,
                "/v1/search?authorInfo.kind=2",
                "",
                Echo(query(
                    json!({"authorInfo": {"firstName": "", "kind": "BETA"}}),
                )),
            ),
            (
                Method::GET,
                "/v1/search?kind=7",
                "",
                Bad(
                    "INVALID_ARGUMENT",
                    "query parameter kind: \"7\" is not a value of Kind",
                ),
            ),
            (
                Method::GET,
                "/v1/search?kinds=1&kinds=GAMMA",
                "",
                Bad(
                    "INVALID_ARGUMENT",
                    "query parameter kinds: \"GAMMA\" is not a value of Kind",
                ),
            ),
            (
                Method::GET,
                "/v1/search?kind=alpha",
                "",
                Bad(
                    "INVALID_ARGUMENT",
                    "query parameter kind: \"alpha\" is not a value of Kind",
                ),
            ),
            // The JSON body already took numbers (the mapping's own form).
            (
                Method::POST,
                "/v1/search",
                r#"{"kind": 2}"#,
                Echo(query(json!({"kind": "BETA"}))),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn two_members_of_one_oneof_are_400_naming_the_oneof() {
    let s = edges().await;
    let oneof = "oneof target takes one field, but both user_id and group_id are set";
    check(
        &s,
        vec![
            (
                Method::GET,
                "/v1/search?userId=u",
                "",
                Echo(query(json!({"userId": "u"}))),
            ),
            (
                Method::GET,
                "/v1/search?user_id=u&group_id=g",
                "",
                Bad("CODEC", oneof),
            ),
            (
                Method::POST,
                "/v1/search",
                r#"{"userId": "u", "groupId": "g"}"#,
                Bad("CODEC", oneof),
            ),
            // A member given as null sets nothing.
            (
                Method::POST,
                "/v1/search",
                r#"{"userId": "u", "groupId": null}"#,
                Echo(query(json!({"userId": "u"}))),
            ),
            // One in the query, one in the body (the body is the member
            // `filter`; the query cannot reach into the body field).
            (
                Method::POST,
                "/v1/search/3:filter?filter.name=x",
                r#"{"age": 4}"#,
                Echo(query(
                    json!({"pageSize": 3, "filter": {"age": 4, "tags": []}}),
                )),
            ),
            (
                Method::POST,
                "/v1/search/3:filter?userId=u",
                r#"{"age": 4}"#,
                Bad(
                    "CODEC",
                    "oneof target takes one field, but both user_id and filter are set",
                ),
            ),
            // Nested: the oneof `by` of the message `filter`.
            (
                Method::GET,
                "/v1/search?filter.name=n&filter.age=3",
                "",
                Bad(
                    "CODEC",
                    "filter: oneof by takes one field, but both name and age are set",
                ),
            ),
            (
                Method::POST,
                "/v1/search/3:filter",
                r#"{"name": "n", "author": {"firstName": "f"}}"#,
                Bad(
                    "CODEC",
                    "filter: oneof by takes one field, but both name and author are set",
                ),
            ),
            (
                Method::POST,
                "/v1/search",
                r#"{"filter": {"age": 1, "name": "n"}, "userId": "u"}"#,
                Bad(
                    "CODEC",
                    "filter: oneof by takes one field, but both name and age are set",
                ),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn one_field_under_its_two_names_is_given_twice() {
    let s = edges().await;
    check(
        &s,
        vec![
            (
                Method::GET,
                "/v1/search?pageSize=1&page_size=2",
                "",
                Bad(
                    "INVALID_ARGUMENT",
                    "query parameter page_size: given twice, but the field is not repeated \
                     (pageSize and page_size name the same field)",
                ),
            ),
            (
                Method::GET,
                "/v1/search?authorInfo.firstName=a&author_info.first_name=b",
                "",
                Bad("INVALID_ARGUMENT", "given twice"),
            ),
            (
                Method::POST,
                "/v1/search",
                r#"{"pageSize": 1, "page_size": 2}"#,
                Bad(
                    "CODEC",
                    "page_size: given twice (as page_size and pageSize)",
                ),
            ),
            (
                Method::POST,
                "/v1/search",
                r#"{"authorInfo": {"firstName": "a", "first_name": "b"}}"#,
                Bad("CODEC", "author_info.first_name: given twice"),
            ),
            // A repeated field given twice adds up.
            (
                Method::GET,
                "/v1/search?filter.tags=a&filter.tags=b",
                "",
                Echo(query(json!({"filter": {"tags": ["a", "b"]}}))),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn no_body_at_all_is_the_empty_message_and_whitespace_is_still_invalid_json() {
    let s = edges().await;
    check(
        &s,
        vec![
            (Method::POST, "/v1/search", "", Echo(query(json!({})))),
            (
                Method::POST,
                "/v1/search/5:filter?kind=1",
                "",
                Echo(query(json!({"pageSize": 5, "kind": "ALPHA"}))),
            ),
            (
                Method::POST,
                "/v1/search",
                " \n",
                Bad("CODEC", "request body must be a JSON object"),
            ),
            (
                Method::POST,
                "/v1/search/5:filter",
                " ",
                Bad("CODEC", "request body must be a JSON object"),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn path_variables_resolve_field_paths_written_with_json_names() {
    let s = edges().await;
    check(
        &s,
        vec![
            (
                Method::PUT,
                "/v1/authors/Ann?authorInfo.kind=1",
                r#"{"name": "n"}"#,
                Echo(query(json!({
                    "authorInfo": {"firstName": "Ann", "kind": "ALPHA"},
                    "filter": {"name": "n", "tags": []}
                }))),
            ),
            // The path wins over the same field from the query, by either name.
            (
                Method::PUT,
                "/v1/authors/Ann?author_info.first_name=Bob",
                "",
                Echo(query(
                    json!({"authorInfo": {"firstName": "Ann", "kind": "KIND_UNSPECIFIED"}}),
                )),
            ),
        ],
    )
    .await;
}
