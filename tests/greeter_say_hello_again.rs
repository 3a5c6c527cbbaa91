//! `SayHelloAgain`, the example RPC added with only its `.proto` lines, its
//! use case and this test: its HTTP route `POST /v1/greetings:sayAgain`
//! (body `*`) exists because the proto says so.

mod support;

use http::Method;
use serde_json::json;
use support::greeter::{call, start};

#[tokio::test]
async fn say_hello_again_is_served_at_the_route_its_annotation_declares() {
    let g = start().await;
    let body = json!({"name": "kratos"}).to_string();
    let reply = call(g.http, Method::POST, "/v1/greetings:sayAgain", &body).await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    assert_eq!(reply.json(), json!({"message": "Hello again kratos"}));

    let reply = call(g.http, Method::POST, "/v1/greetings:sayAgain", "{}").await;
    assert_eq!(reply.status.as_u16(), 400);
    assert_eq!(
        reply.json(),
        json!({"code": 400, "reason": "NAME_EMPTY", "message": "name must not be empty", "metadata": {},
               "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                            "fieldViolations": [{"field": "name", "description": "name must not be empty", "reason": "NAME_EMPTY"}]}]})
    );
    // The verb is part of the route: without it, or with GET, no SayHelloAgain.
    let reply = call(g.http, Method::POST, "/v1/greetings", &body).await;
    assert_eq!(reply.status.as_u16(), 404);
    let reply = call(g.http, Method::GET, "/v1/greetings:sayAgain", "").await;
    assert_eq!(reply.status.as_u16(), 405);
    assert_eq!(reply.header("allow"), Some("POST"));
}
