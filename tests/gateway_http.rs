//! The HTTP gateway through real HTTP, on an annotated test proto
//! (`proto/testdata/library/v1/library.proto`) whose handlers echo their
//! input: what comes back is exactly the message the gateway built from
//! path, query and body, encoded by descriptor, decoded again as JSON.

mod support;

use std::sync::Arc;

use handwire::protocol::gateway::Gateway;
use handwire::protocol::grpc::descriptor::{parse_files, GOOGLE_API_FILES};
use handwire::protocol::grpc::{Code, Failure, UnaryMethod};
use http::Method;
use serde_json::{json, Value};
use support::app::TestServer;
use support::gateway::{echo, serve};
use support::greeter::call;

const LIBRARY: &str = include_str!("../proto/testdata/library/v1/library.proto");

async fn library() -> TestServer {
    let [a, h] = GOOGLE_API_FILES;
    let files = parse_files(&[("library/v1/library.proto", LIBRARY), a, h]).unwrap();
    let not_found: UnaryMethod = Arc::new(|_| {
        Box::pin(async {
            Err(Failure::new(
                Code::NotFound,
                "BOOK_NOT_FOUND",
                "no such book",
            ))
        })
    });
    let methods = [
        ("GetBook", echo()),
        ("CreateBook", echo()),
        ("UpdateAuthor", echo()),
        ("Undelete", echo()),
        ("ReadFile", echo()),
        ("DeleteBook", not_found),
        ("Audit", echo()),
    ];
    serve(Gateway::new(&files, "library.v1.Library", &methods).unwrap()).await
}

/// The echoed book with every unset field at its JSON default, then `set`.
fn book(set: Value) -> Value {
    let mut b = json!({
        "name": "", "id": "0", "shelf": null, "author": null, "tags": [], "notes": [],
        "genre": "GENRE_UNSPECIFIED", "inPrint": false, "ratings": {}, "path": "",
        "cover": "", "price": 0.0, "editions": []
    });
    for (k, v) in set.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

async fn ok(s: &TestServer, method: Method, path: &str, body: &str) -> Value {
    let reply = call(s.addr, method.clone(), path, body).await;
    assert_eq!(
        reply.status.as_u16(),
        200,
        "{method} {path}: {}",
        reply.text()
    );
    reply.json()
}

#[tokio::test]
async fn path_variables_bind_nested_fields_and_query_keys_set_nested_and_repeated_fields() {
    let s = library().await;
    let got = ok(
        &s,
        Method::GET,
        "/v1/shelves/s%2F1/books/b%201?shelf.theme=sea&tags=a&tags=b%20c&author.address.city=Oslo\
         &genre=POETRY&inPrint=true&editions=1&editions=9007199254740993&unknown=ignored",
        "",
    )
    .await;
    let want = book(json!({
        // A multi-segment variable keeps %2F, decodes the rest.
        "name": "shelves/s%2F1/books/b 1",
        "shelf": {"id": "0", "theme": "sea"},
        "author": {"name": "", "address": {"city": "Oslo"}, "penNames": []},
        "tags": ["a", "b c"],
        "genre": "POETRY",
        "inPrint": true,
        "editions": ["1", "9007199254740993"],
    }));
    assert_eq!(got, want);
    // The additional binding: a one-segment variable, fully decoded, int64.
    let got = ok(&s, Method::GET, "/v1/books/42?id=7", "").await;
    assert_eq!(
        got,
        book(json!({"id": "42"})),
        "the path wins over the query"
    );
}

#[tokio::test]
async fn body_star_is_the_whole_message_and_the_path_wins_over_it() {
    let s = library().await;
    let body = json!({
        "name": "n", "shelf": {"id": 3, "theme": "t"}, "notes": [{"text": "x", "page": 2}],
        "ratings": {"amy": 5}, "cover": "AAEC", "price": 1.5, "in_print": true,
        "author": {"name": "A", "penNames": ["P"]}
    });
    let got = ok(
        &s,
        Method::POST,
        "/v1/shelves/9/books?name=ignored",
        &body.to_string(),
    )
    .await;
    let want = book(json!({
        "name": "n",
        "shelf": {"id": "9", "theme": "t"},
        "notes": [{"text": "x", "page": 2}],
        "ratings": {"amy": 5},
        "cover": "AAEC",
        "price": 1.5,
        "inPrint": true,
        "author": {"name": "A", "address": null, "penNames": ["P"]},
    }));
    assert_eq!(got, want);
}

#[tokio::test]
async fn body_field_takes_that_field_and_response_body_answers_one_field() {
    let s = library().await;
    let body = json!({"name": "Ann", "address": {"city": "Rome"}});
    let got = ok(
        &s,
        Method::PATCH,
        "/v1/books/5/author?tags=q",
        &body.to_string(),
    )
    .await;
    assert_eq!(
        got,
        json!({"name": "Ann", "address": {"city": "Rome"}, "penNames": []})
    );
}

#[tokio::test]
async fn custom_verb_and_double_star_routes() {
    let s = library().await;
    let got = ok(&s, Method::POST, "/v1/shelves/1/books/2:undelete", "{}").await;
    assert_eq!(got, book(json!({"name": "shelves/1/books/2"})));
    // GET on the same path is no GetBook with name ".../2:undelete".
    let reply = call(s.addr, Method::GET, "/v1/shelves/1/books/2:undelete", "").await;
    assert_eq!(reply.status.as_u16(), 405, "{}", reply.text());
    assert_eq!(reply.header("allow"), Some("POST"));
    let got = ok(&s, Method::GET, "/files/a/b%2Fc/d.txt", "").await;
    assert_eq!(got, book(json!({"path": "a/b%2Fc/d.txt"})));
}

#[tokio::test]
async fn errors_are_kratos_json_with_grpc_gateway_statuses() {
    let s = library().await;
    let cases = [
        (
            Method::DELETE,
            "/v1/books/1",
            "",
            404,
            "BOOK_NOT_FOUND",
            "no such book",
        ),
        (
            Method::GET,
            "/v1/books/x",
            "",
            400,
            "CODEC",
            "id: expected an integer, found \"x\"",
        ),
        (
            Method::GET,
            "/v1/books/1?genre=EPIC",
            "",
            400,
            "INVALID_ARGUMENT",
            "query parameter genre: \"EPIC\" is not a value of Genre",
        ),
        (
            Method::GET,
            "/v1/books/1?inPrint=yes",
            "",
            400,
            "INVALID_ARGUMENT",
            "query parameter inPrint: expected true or false, found \"yes\"",
        ),
        (
            Method::GET,
            "/v1/books/1?name=a&name=b",
            "",
            400,
            "INVALID_ARGUMENT",
            "query parameter name: given twice, but the field is not repeated",
        ),
        (
            Method::GET,
            "/v1/books/1?shelf=x",
            "",
            400,
            "INVALID_ARGUMENT",
            "query parameter shelf: shelf is a message or map, not a single value",
        ),
        (
            Method::GET,
            "/v1/books/%zz",
            "",
            400,
            "INVALID_ARGUMENT",
            "path variable id: malformed percent escape \"%zz\"",
        ),
        (
            Method::POST,
            "/v1/shelves/1/books",
            "[1]",
            400,
            "CODEC",
            "request body must be a JSON object {name, id, shelf, author, tags, notes, genre, \
             inPrint, ratings, path, cover, price, editions}: invalid JSON body: expected a JSON \
             object, found an array",
        ),
        (
            Method::PATCH,
            "/v1/books/1/author",
            "7",
            400,
            "CODEC",
            "request body must be a JSON object {name, address, penNames}: invalid JSON body: \
             expected a JSON object, found a number",
        ),
        (
            Method::POST,
            "/v1/shelves/1/books",
            "{\"tags\": \"a\"}",
            400,
            "CODEC",
            "tags: expected a JSON array, found a string",
        ),
        (
            Method::POST,
            "/v1/shelves/1/books",
            "{\"name\": \"a\", \"name\": \"b\"}",
            400,
            "CODEC",
            "duplicate key \"name\"",
        ),
        (
            Method::POST,
            "/v1/shelves/1/books",
            "{\"in_print\": true, \"inPrint\": false}",
            400,
            "CODEC",
            "in_print: given twice",
        ),
        (
            Method::GET,
            "/v1/nothing",
            "",
            404,
            "NOT_FOUND",
            "no route for GET /v1/nothing",
        ),
        (
            Method::PUT,
            "/v1/books/1",
            "",
            405,
            "METHOD_NOT_ALLOWED",
            "method PUT not allowed on /v1/books/1",
        ),
    ];
    for (method, path, body, status, reason, message) in cases {
        let reply = call(s.addr, method.clone(), path, body).await;
        let got = reply.json();
        assert_eq!(reply.status.as_u16(), status, "{method} {path}: {got}");
        assert_eq!(got["code"], status, "{got}");
        assert_eq!(got["reason"], reason, "{method} {path}: {got}");
        assert_eq!(got["metadata"], json!({}));
        let text = got["message"].as_str().unwrap();
        assert!(text.contains(message), "{method} {path}: {text}");
    }
}

#[tokio::test]
async fn a_method_without_a_rule_is_not_exposed() {
    let s = library().await;
    for path in ["/library.v1.Library/Audit", "/v1/audit", "/Audit"] {
        let reply = call(s.addr, Method::POST, path, "{}").await;
        assert_eq!(reply.status.as_u16(), 404, "{path}");
    }
}

#[tokio::test]
async fn a_trailing_slash_redirects_as_on_the_engines_router() {
    let s = library().await;
    let reply = call(s.addr, Method::GET, "/v1/books/1/?tags=a", "").await;
    assert_eq!(reply.status.as_u16(), 301);
    assert_eq!(reply.header("location"), Some("/v1/books/1?tags=a"));
    let reply = call(s.addr, Method::POST, "/v1/shelves/1/books/", "{}").await;
    assert_eq!(reply.status.as_u16(), 307);
    assert_eq!(reply.header("location"), Some("/v1/shelves/1/books"));
}
