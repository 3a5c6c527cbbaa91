//! The greeter's registration limit: `limits.registrations_per_minute` calls
//! of UserRegister per client address, HTTP and gRPC counted together;
//! past it 429 / RESOURCE_EXHAUSTED with reason TOO_MANY_REGISTRATIONS, and
//! nothing stored. Other addresses are not affected.

mod support;

use std::net::IpAddr;

use handwire::services::greeter::api::{UserRegisterRequest, UserRegisterResponse};
use http::{Method, StatusCode};
use serde_json::json;
use support::greeter::{config_text, start_from, user_rows, TempDir};
use support::http::{Client, Proto};

async fn register_http(addr: std::net::SocketAddr, from: &str, name: &str) -> support::http::Reply {
    let ip: IpAddr = from.parse().unwrap();
    Client::new(Proto::H1)
        .from(Some(ip))
        .request(
            Method::POST,
            &format!("http://{addr}/v1/users"),
            &[("content-type", "application/json")],
            json!({"username": name, "password": "pw"}).to_string(),
        )
        .await
}

#[tokio::test]
async fn registrations_past_the_limit_from_one_address_are_refused_over_http_and_grpc() {
    let dir = TempDir::new("limits");
    let db = dir.0.join("greeter.db");
    let text = config_text(&db.display().to_string(), "1s", "1s")
        .replace("registrations_per_minute: 0", "registrations_per_minute: 3");
    let g = start_from(&text, dir, db).await;
    for n in 0..3 {
        let reply = register_http(g.http, "127.0.0.1", &format!("user{n}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    }
    let refused = register_http(g.http, "127.0.0.1", "user3").await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        refused.text()
    );
    assert_eq!(refused.json()["reason"], "TOO_MANY_REGISTRATIONS");

    // gRPC from the same address shares the count.
    let status = support::grpc::call::<_, UserRegisterResponse>(
        g.grpc,
        "/helloworld.v1.Greeter/UserRegister",
        UserRegisterRequest {
            username: "user4".into(),
            password: "pw".into(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status}");

    // Another client is served; nothing refused was stored.
    let other = register_http(g.http, "127.0.0.2", "user5").await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.text());
    let names: Vec<String> = user_rows(&g.db).into_iter().map(|u| u.1).collect();
    assert_eq!(names, ["user0", "user1", "user2", "user5"]);
}
