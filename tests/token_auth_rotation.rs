//! Refresh-token rotation with reuse detection (OWASP; RFC 6819 §5.2.2.3):
//! a refresh token works once; a second use revokes its whole family; a
//! logout ends the refresh token of its sign-in; the blacklist grows by a
//! bounded number of rows per refresh token.

mod support;

use http::StatusCode;
use serde_json::json;
use support::token_auth::start;

#[tokio::test]
async fn a_refresh_token_works_once_and_its_reuse_revokes_the_whole_family() {
    let s = start().await;
    let first = s.register("rotor", "password1").await;
    let r1 = first["refresh_token"].as_str().unwrap();
    let second = s
        .post("/auth/refresh", json!({ "refresh_token": r1 }))
        .await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.text());
    let (a2, r2) = (second.str("access_token"), second.str("refresh_token"));
    assert_ne!(r2, r1);
    assert_eq!(
        s.get_bearer("/api/user/profile", &a2).await.status,
        StatusCode::OK
    );

    // r1 again: someone else holds it. Refused, and every token descending
    // from that sign-in with it, including the ones minted from r1.
    let reuse = s
        .post("/auth/refresh", json!({ "refresh_token": r1 }))
        .await;
    assert_eq!(reuse.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reuse.json(), json!({"error": "token revoked"}));
    let minted = s.get_bearer("/api/user/profile", &a2).await;
    assert_eq!(minted.json(), json!({"error": "token revoked"}));
    let next = s
        .post("/auth/refresh", json!({ "refresh_token": r2 }))
        .await;
    assert_eq!(next.status, StatusCode::UNAUTHORIZED);
    let original = s
        .get_bearer("/api/user/profile", first["access_token"].as_str().unwrap())
        .await;
    assert_eq!(original.status, StatusCode::UNAUTHORIZED);

    // Another sign-in of the same account is a family of its own.
    let login = s
        .post(
            "/login",
            json!({"username": "rotor", "password": "password1"}),
        )
        .await;
    assert_eq!(login.status, StatusCode::OK, "{}", login.text());
    let fresh = s
        .get_bearer("/api/user/profile", &login.str("access_token"))
        .await;
    assert_eq!(fresh.status, StatusCode::OK);
}

#[tokio::test]
async fn a_logout_naming_only_the_access_token_ends_its_refresh_token_too() {
    let s = start().await;
    let pair = s.register("leaver", "password1").await;
    let out = s.logout(pair["access_token"].as_str().unwrap(), "").await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text());
    let reply = s
        .post(
            "/auth/refresh",
            json!({ "refresh_token": pair["refresh_token"] }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.json(), json!({"error": "token revoked"}));
}

/// A refresh + logout loop from one refresh token used to add two rows a
/// round without end; with rotation the second round is refused, and the
/// table holds at most three rows for it.
#[tokio::test]
async fn a_refresh_and_logout_loop_from_one_refresh_token_adds_at_most_three_rows() {
    let s = start().await;
    let pair = s.register("looper", "password1").await;
    let refresh = pair["refresh_token"].as_str().unwrap().to_string();
    let mut served = 0;
    for _ in 0..50 {
        let renewed = s
            .post("/auth/refresh", json!({ "refresh_token": refresh }))
            .await;
        if renewed.status != StatusCode::OK {
            continue;
        }
        served += 1;
        let out = s.logout(&renewed.str("access_token"), "").await;
        assert_eq!(out.status, StatusCode::OK);
    }
    assert_eq!(served, 1);
    let rows = s.db.count("SELECT count(*) FROM token_blacklist");
    assert!(rows <= 3, "{rows} rows");
}

/// Two refreshes with one token at the same moment: exactly one gets a pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_refreshes_with_one_token_yield_one_pair() {
    let s = std::sync::Arc::new(start().await);
    let pair = s.register("racer", "password1").await;
    let refresh = pair["refresh_token"].as_str().unwrap().to_string();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (s, refresh) = (s.clone(), refresh.clone());
            tokio::spawn(async move {
                s.post("/auth/refresh", json!({ "refresh_token": refresh }))
                    .await
                    .status
            })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        if task.await.unwrap() == StatusCode::OK {
            ok += 1;
        }
    }
    assert_eq!(ok, 1);
}
