//! A token names an account, not just an id: tokens issued before the
//! database was recreated (or for an id that now belongs to someone else)
//! are refused, never served as the new holder of the id.

mod support;

use http::{Method, StatusCode};
use serde_json::json;
use std::net::SocketAddr;
use support::bin;
use support::http::{Client, Proto, Reply};
use support::token_auth::TempDb;

const BIN: &str = env!("CARGO_BIN_EXE_token-auth");
const SECRET: &str = "token-binding test secret, long enough: 0123";

fn start(db: &TempDb) -> (std::process::Child, SocketAddr) {
    let path = db.path.to_str().expect("utf-8 path");
    let (child, addrs) = bin::spawn_draining(
        BIN,
        &["--addr", "127.0.0.1:0", "--quiet", "--db", path],
        &[("TOKEN_AUTH_SECRET", SECRET)],
        1,
    );
    (child, addrs[0])
}

async fn call(
    method: Method,
    addr: SocketAddr,
    path: &str,
    auth: Option<&str>,
    body: serde_json::Value,
) -> Reply {
    let bearer = auth.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    Client::new(Proto::H1)
        .request(method, &format!("http://{addr}{path}"), &headers, body)
        .await
}

#[tokio::test]
async fn tokens_of_an_account_never_act_as_the_next_holder_of_its_id() {
    let db = TempDb::new("binding");
    let (mut first, addr) = start(&db);
    let ann = call(
        Method::POST,
        addr,
        "/auth/register",
        None,
        json!({"username": "ann", "password": "password1"}),
    )
    .await;
    assert_eq!(ann.status, StatusCode::CREATED, "{}", ann.text());
    first.kill().ok();
    first.wait().ok();

    // The database is recreated (same path, same secret): bob gets id 1.
    drop(TempDb {
        path: db.path.clone(),
    });
    let (mut second, addr) = start(&db);
    let bob = call(
        Method::POST,
        addr,
        "/auth/register",
        None,
        json!({"username": "bob", "password": "password1"}),
    )
    .await;
    assert_eq!(bob.status, StatusCode::CREATED, "{}", bob.text());
    let bob_profile = call(
        Method::GET,
        addr,
        "/api/user/profile",
        Some(&bob.str("access_token")),
        json!(null),
    )
    .await;
    assert_eq!(bob_profile.json()["user"]["id"], 1);

    // ann's tokens name id 1 too, but not bob's account.
    let profile = call(
        Method::GET,
        addr,
        "/api/user/profile",
        Some(&ann.str("access_token")),
        json!(null),
    )
    .await;
    assert_eq!(
        profile.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        profile.text()
    );
    assert_eq!(profile.json(), json!({"error": "token invalid"}));
    let refreshed = call(
        Method::POST,
        addr,
        "/auth/refresh",
        None,
        json!({"refresh_token": ann.str("refresh_token")}),
    )
    .await;
    assert_eq!(
        refreshed.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        refreshed.text()
    );
    second.kill().ok();
    second.wait().ok();
}
