//! Black-box tests of the token-auth routes (docs/token-auth.md) on the
//! real server: register → profile → refresh → logout → revoked, roles, the
//! simple 24 h token, and the rows of that page's "Errors" table.

mod support;

use handwire::services::token_auth::user::Role;
use http::StatusCode;
use serde_json::json;
use support::http::{Client, Proto};
use support::token_auth::{payload, start, start_with};

#[tokio::test]
async fn register_profile_refresh_logout_then_revoked() {
    let s = start().await;
    let reply = s
        .post(
            "/auth/register",
            json!({"username": "alice", "password": "wonderland", "email": "alice@example.com"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let pair = reply.json();
    assert_eq!(pair["token_type"], "Bearer");
    assert_eq!(pair["expires_in"], 3600);
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let access = pair["access_token"].as_str().unwrap();
    let refresh = pair["refresh_token"].as_str().unwrap();

    let profile = s.get_bearer("/api/user/profile", access).await;
    assert_eq!(profile.status, StatusCode::OK, "{}", profile.text());
    let user = &profile.json()["user"];
    assert_eq!(user["username"], "alice");
    assert_eq!(user["email"], "alice@example.com");
    assert_eq!(user["role"], "user");
    assert!(user["id"].as_i64().unwrap() > 0);
    assert!(user["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(user.get("password_hash").is_none());

    let renewed = s
        .post("/auth/refresh", json!({ "refresh_token": refresh }))
        .await;
    assert_eq!(renewed.status, StatusCode::OK, "{}", renewed.text());
    let new_access = renewed.str("access_token");
    assert_ne!(new_access, access);
    assert_eq!(
        s.get_bearer("/api/user/profile", &new_access).await.status,
        StatusCode::OK
    );

    let out = s.logout(access, "").await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text());
    let revoked = s.get_bearer("/api/user/profile", access).await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert_eq!(revoked.json(), json!({"error": "token revoked"}));
    // Logout ends the whole sign-in: the pair the refresh issued (same
    // family) is revoked too, and so is its refresh token.
    let sibling = s.get_bearer("/api/user/profile", &new_access).await;
    assert_eq!(sibling.json(), json!({"error": "token revoked"}));
    let again = s
        .post(
            "/auth/refresh",
            json!({ "refresh_token": renewed.str("refresh_token") }),
        )
        .await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    // Logout put its jti and exp in the blacklist.
    let claims = payload(access);
    let exp: i64 =
        s.db.connect()
            .query_row(
                "SELECT expired_at FROM token_blacklist WHERE token_jti = ?1",
                [claims["jti"].as_str().unwrap()],
                |r| r.get(0),
            )
            .unwrap();
    assert_eq!(exp, claims["exp"].as_i64().unwrap());
}

#[tokio::test]
async fn logout_with_refresh_token_revokes_it_too() {
    let s = start().await;
    let pair = s.register("bob-1", "password1").await;
    let access = pair["access_token"].as_str().unwrap();
    let refresh = pair["refresh_token"].as_str().unwrap();
    let out = s
        .logout(access, &json!({ "refresh_token": refresh }).to_string())
        .await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text());
    let reply = s
        .post("/auth/refresh", json!({ "refresh_token": refresh }))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.json(), json!({"error": "token revoked"}));
}

#[tokio::test]
async fn logout_refuses_a_refresh_token_of_another_user_and_revokes_nothing() {
    let s = start().await;
    let ann = s.register("ann", "password1").await;
    let bob = s.register("bob", "password1").await;
    let ann_access = ann["access_token"].as_str().unwrap();
    let body = json!({ "refresh_token": bob["refresh_token"] }).to_string();
    let reply = s.logout(ann_access, &body).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert_eq!(
        s.get_bearer("/api/user/profile", ann_access).await.status,
        StatusCode::OK
    );
    assert_eq!(s.db.count("SELECT count(*) FROM token_blacklist"), 0);
}

#[tokio::test]
async fn login_returns_a_token_object_for_valid_credentials() {
    let s = start().await;
    s.register("carol", "password1").await;
    let reply = s.login("carol", "password1").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let pair = reply.json();
    let keys: Vec<&str> = pair
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["access_token", "expires_in", "refresh_token", "token_type"]
    );
    let access = payload(pair["access_token"].as_str().unwrap());
    assert_eq!(access["type"], "access");
    assert_eq!(access["role"], "user");
    assert_eq!(
        access["exp"].as_u64().unwrap() - access["iat"].as_u64().unwrap(),
        3600
    );
    let refresh = payload(pair["refresh_token"].as_str().unwrap());
    assert_eq!(refresh["type"], "refresh");
    assert!(refresh.get("role").is_none());
    assert_eq!(
        refresh["exp"].as_u64().unwrap() - refresh["iat"].as_u64().unwrap(),
        30 * 86_400
    );
}

#[tokio::test]
async fn wrong_password_and_unknown_user_get_the_same_401() {
    let s = start().await;
    s.register("dave", "password1").await;
    let wrong = s.login("dave", "password2").await;
    let unknown = s.login("nobody", "password1").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong.body, unknown.body);
    assert_eq!(
        wrong.json(),
        json!({"error": "invalid username or password"})
    );
    // Both paths ran one bcrypt verification (the unknown user's against the dummy hash).
    let before = s.service.passwords().computations();
    s.login("nobody-else", "password1").await;
    assert_eq!(s.service.passwords().computations() - before, 1);
}

#[tokio::test]
async fn register_with_existing_username_is_409_username_exists() {
    let s = start().await;
    s.register("erin", "password1").await;
    let again = s
        .post(
            "/auth/register",
            json!({"username": "erin", "password": "another-pw"}),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json(), json!({"error": "username exists"}));
}

#[tokio::test]
async fn re_registering_a_taken_username_says_it_is_taken_whatever_else_is_wrong() {
    let s = start().await;
    s.register("frank", "password1").await;
    // A second try with a password the policy refuses, and a bad email:
    // the first thing to know is that the name is gone.
    let again = s
        .post(
            "/auth/register",
            json!({"username": "Frank", "password": "x", "email": "not-an-email"}),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    assert_eq!(again.json(), json!({"error": "username exists"}));
    // A free name with the same short password still hears about the password.
    let fresh = s
        .post(
            "/auth/register",
            json!({"username": "gina01", "password": "x"}),
        )
        .await;
    assert_eq!(fresh.status, StatusCode::BAD_REQUEST, "{}", fresh.text());
}

#[tokio::test]
async fn unknown_paths_and_methods_are_answered_in_the_services_json_shape() {
    let s = start().await;
    let nope = Client::new(Proto::H1)
        .request(http::Method::GET, &s.url("/nope"), &[], "")
        .await;
    assert_eq!(nope.status, StatusCode::NOT_FOUND);
    assert_eq!(nope.json(), json!({"error": "no route for GET /nope"}));
    let wrong = Client::new(Proto::H1)
        .request(http::Method::GET, &s.url("/login"), &[], "")
        .await;
    assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        wrong.json(),
        json!({"error": "method GET not allowed on /login"})
    );
    assert_eq!(wrong.header("allow"), Some("POST"));
}

#[tokio::test]
async fn register_is_409_for_a_username_or_email_differing_only_in_case() {
    let s = start().await;
    let body = |u: &str, e: &str| json!({"username": u, "password": "password1", "email": e});
    let first = s.post("/auth/register", body("VICTIM01", "V@E.COM")).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let same_name = s.post("/auth/register", body("victim01", "x@e.com")).await;
    assert_eq!(same_name.status, StatusCode::CONFLICT);
    assert_eq!(same_name.json(), json!({"error": "username exists"}));
    let same_email = s.post("/auth/register", body("other01", "v@e.com")).await;
    assert_eq!(same_email.status, StatusCode::CONFLICT);
    assert_eq!(same_email.json(), json!({"error": "email exists"}));
    assert_eq!(s.db.count("SELECT count(*) FROM users"), 1);
}

#[tokio::test]
async fn login_finds_the_account_by_username_in_any_case_and_it_keeps_the_typed_case() {
    let s = start().await;
    s.register("VICTIM01", "password1").await;
    for typed in ["VICTIM01", "victim01", "Victim01"] {
        let reply = s.login(typed, "password1").await;
        assert_eq!(reply.status, StatusCode::OK, "{typed}: {}", reply.text());
        let profile = s
            .get_bearer("/api/user/profile", &reply.str("access_token"))
            .await;
        assert_eq!(profile.json()["user"]["username"], "VICTIM01", "{typed}");
    }
    // The case of the name does not change the password check.
    let wrong = s.login("victim01", "Password1").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn register_rejects_bad_lengths_and_shapes_with_400() {
    let s = start().await;
    let cases = [
        json!({"username": "ab", "password": "password1"}),
        json!({"username": "a".repeat(51), "password": "password1"}),
        json!({"username": "frank", "password": "short"}),
        json!({"username": "frank", "password": "p".repeat(73)}),
        json!({"username": "frank", "password": "password1", "email": "not-an-email"}),
        json!({"username": "frank", "password": "password1", "email": format!("{}@x.io", "e".repeat(96))}),
        json!({"username": "frank"}),
        json!({"username": 5, "password": "password1"}),
        json!(["frank", "password1"]),
    ];
    for body in cases {
        let reply = s.post("/auth/register", body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.text()
        );
        assert!(!reply.error().is_empty(), "{body}");
    }
    assert_eq!(s.db.count("SELECT count(*) FROM users"), 0);
    // The limits themselves are fine.
    s.register(&"u".repeat(50), &"p".repeat(72)).await;
}

#[tokio::test]
async fn duplicate_email_is_409() {
    let s = start().await;
    let body =
        |u: &str| json!({"username": u, "password": "password1", "email": "same@example.com"});
    assert_eq!(
        s.post("/auth/register", body("gail")).await.status,
        StatusCode::CREATED
    );
    let again = s.post("/auth/register", body("gina")).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.error(), "email exists");
}

#[tokio::test]
async fn refresh_rejects_access_tokens_garbage_and_expired_tokens() {
    let s = start().await;
    let pair = s.register("hank", "password1").await;
    let access = pair["access_token"].as_str().unwrap();
    let refresh = pair["refresh_token"].as_str().unwrap();

    let as_access = s
        .post("/auth/refresh", json!({ "refresh_token": access }))
        .await;
    assert_eq!(as_access.status, StatusCode::UNAUTHORIZED);
    assert_eq!(as_access.json(), json!({"error": "token invalid"}));
    let garbage = s
        .post("/auth/refresh", json!({ "refresh_token": "a.b.c" }))
        .await;
    assert_eq!(garbage.status, StatusCode::UNAUTHORIZED);
    assert_eq!(garbage.json(), json!({"error": "token invalid"}));

    s.clock.advance(30 * 86_400 - 1);
    assert_eq!(
        s.post("/auth/refresh", json!({ "refresh_token": refresh }))
            .await
            .status,
        StatusCode::OK
    );
    s.clock.advance(1);
    let expired = s
        .post("/auth/refresh", json!({ "refresh_token": refresh }))
        .await;
    assert_eq!(expired.status, StatusCode::UNAUTHORIZED);
    assert_eq!(expired.json(), json!({"error": "token expired"}));

    let missing = s.post("/auth/refresh", json!({})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn refresh_reloads_the_user_so_a_new_role_takes_effect() {
    let s = start().await;
    let pair = s.register("ivan", "password1").await;
    let access = pair["access_token"].as_str().unwrap();
    assert_eq!(
        s.get_bearer("/api/admin/users", access).await.status,
        StatusCode::FORBIDDEN
    );
    s.db.connect()
        .execute(
            "UPDATE users SET role = 'admin' WHERE username = 'ivan'",
            [],
        )
        .unwrap();
    let renewed = s
        .post(
            "/auth/refresh",
            json!({ "refresh_token": pair["refresh_token"] }),
        )
        .await;
    let new_access = renewed.str("access_token");
    assert_eq!(payload(&new_access)["role"], "admin");
    assert_eq!(
        s.get_bearer("/api/admin/users", &new_access).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn admin_route_lists_users_without_hashes_and_refuses_other_roles() {
    let s = start().await;
    s.create_user("root", "rootpassword", Role::Admin).await;
    s.create_user("vera", "verapassword", Role::Vip).await;
    let user = s.register("judy", "password1").await;

    let admin = s.login("root", "rootpassword").await.str("access_token");
    let list = s.get_bearer("/api/admin/users", &admin).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text());
    let users = list.json();
    let names: Vec<&str> = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["root", "vera", "judy"]);
    assert!(
        !list.text().contains("$2b$"),
        "hash leaked: {}",
        list.text()
    );
    assert!(!list.text().contains("password"), "{}", list.text());

    let vip = s.login("vera", "verapassword").await.str("access_token");
    for token in [vip.as_str(), user["access_token"].as_str().unwrap()] {
        let refused = s.get_bearer("/api/admin/users", token).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert_eq!(refused.json(), json!({"error": "insufficient permission"}));
    }
    // Any role may read its profile.
    assert_eq!(
        s.get_bearer("/api/user/profile", &vip).await.status,
        StatusCode::OK
    );
    assert_eq!(
        s.get_bearer("/api/user/profile", &admin).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn simple_login_returns_one_token_valid_24_hours() {
    let s = start().await;
    s.register("kate", "password1").await;
    let reply = s
        .post(
            "/auth/token",
            json!({"username": "kate", "password": "password1"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body.as_object().unwrap().len(), 1);
    let token = body["token"].as_str().unwrap();
    let claims = payload(token);
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        86_400
    );
    s.clock.advance(86_400 - 1);
    assert_eq!(
        s.get_bearer("/api/user/profile", token).await.status,
        StatusCode::OK
    );
    s.clock.advance(1);
    let expired = s.get_bearer("/api/user/profile", token).await;
    assert_eq!(expired.json(), json!({"error": "token expired"}));
    let wrong = s
        .post(
            "/auth/token",
            json!({"username": "kate", "password": "password2"}),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn expired_blacklist_rows_are_pruned_periodically() {
    let s = start_with(|settings, _| {
        settings.maintenance_every = std::time::Duration::from_millis(20);
    })
    .await;
    let pair = s.register("liam", "password1").await;
    let access = pair["access_token"].as_str().unwrap();
    s.logout(access, "").await;
    // The access token's row, and its family's (kept a refresh lifetime).
    assert_eq!(s.db.count("SELECT count(*) FROM token_blacklist"), 2);
    s.clock.advance(3600);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while s.db.count("SELECT count(*) FROM token_blacklist") != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "blacklist row never pruned"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    s.clock.advance(30 * 86_400);
    while s.db.count("SELECT count(*) FROM token_blacklist") != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "family row never pruned"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn malformed_json_bodies_are_400_and_the_server_keeps_serving() {
    let s = start().await;
    for path in ["/login", "/auth/register", "/auth/refresh", "/auth/token"] {
        let reply = Client::new(Proto::H1)
            .request(
                http::Method::POST,
                &s.url(path),
                &[("content-type", "application/json")],
                "{not json",
            )
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(
            reply
                .error()
                .starts_with("request body must be a JSON object"),
            "{}",
            reply.text()
        );
    }
    s.register("mia", "password1").await;
}

#[tokio::test]
async fn json_bodies_must_be_objects_without_repeated_keys() {
    let s = start().await;
    s.register("ann", "password1").await;
    let cases = [
        (
            "/login",
            r#"["ann","password1"]"#,
            "expected a JSON object, found an array",
        ),
        (
            "/login",
            r#"{"username":"ann","password":"wrong","password":"password1"}"#,
            "duplicate key \"password\"",
        ),
        (
            "/auth/register",
            r#"{"username":"bob","password":"password1","username":"eve"}"#,
            "duplicate key \"username\"",
        ),
        (
            "/auth/refresh",
            r#"["x"]"#,
            "expected a JSON object, found an array",
        ),
    ];
    for (path, body, want) in cases {
        let reply = Client::new(Proto::H1)
            .request(
                http::Method::POST,
                &s.url(path),
                &[("content-type", "application/json")],
                body,
            )
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{path} {body}");
        let error = reply.error();
        assert!(
            error.starts_with("request body must be a JSON object"),
            "{error}"
        );
        assert!(error.contains(want), "{path} {body}: {error}");
    }
    // Neither the array nor the repeated key logged anybody in.
    assert_eq!(s.login("ann", "password1").await.status, StatusCode::OK);
}

/// A cross-origin page may POST `text/plain` without a preflight: a JSON
/// body under any type but `application/json` (or `+json`) is 415 and
/// unread, on every JSON route; a declared one still works.
#[tokio::test]
async fn a_json_route_refuses_a_body_not_declared_json_with_415_and_stores_nothing() {
    let s = start().await;
    let body = json!({"username": "mallory", "password": "wonderland"}).to_string();
    for path in ["/auth/register", "/login", "/auth/token", "/auth/refresh"] {
        for content_type in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            None,
        ] {
            let headers: Vec<(&str, &str)> = content_type
                .map(|t| ("content-type", t))
                .into_iter()
                .collect();
            let reply = Client::new(Proto::H1)
                .request(http::Method::POST, &s.url(path), &headers, body.clone())
                .await;
            assert_eq!(
                reply.status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path} {content_type:?}: {}",
                reply.text()
            );
            assert!(
                reply.json()["error"]
                    .as_str()
                    .unwrap()
                    .contains("application/json"),
                "{}",
                reply.text()
            );
        }
    }
    let login = json!({"username": "mallory", "password": "wonderland"});
    assert_eq!(
        s.post("/login", login.clone()).await.status,
        StatusCode::UNAUTHORIZED,
        "no user was registered by the refused bodies"
    );
    let headers = [("content-type", "application/vnd.api+json; charset=utf-8")];
    let reply = Client::new(Proto::H1)
        .request(http::Method::POST, &s.url("/auth/register"), &headers, body)
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
}
