//! Login limits on the real server (docs/token-auth.md): 5 attempts per minute per IP
//! and per username (in any case), captcha hint after 3 consecutive failures,
//! 30-minute lock after 10; and 10 registrations per minute per IP. Time is
//! a manual clock moved by the test: nothing sleeps.
//! Different client IPs are real: the client binds 127.0.0.x as its source.

mod support;

use http::StatusCode;
use serde_json::json;
use std::net::IpAddr;
use support::http::Reply;
use support::token_auth::{start, AuthServer};

fn ip(last: u8) -> Option<IpAddr> {
    Some(IpAddr::from([127, 0, 0, last]))
}

async fn login_from(s: &AuthServer, username: &str, password: &str, from: Option<IpAddr>) -> Reply {
    s.post_from(
        "/login",
        json!({ "username": username, "password": password }),
        from,
    )
    .await
}

fn assert_too_many(reply: &Reply, what: &str) {
    assert_eq!(
        reply.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{what}: {}",
        reply.text()
    );
    assert_eq!(
        reply.json(),
        json!({"error": "too many login attempts, try again in 1 minute"}),
        "{what}"
    );
    let retry: u64 = reply
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{what}: Retry-After {retry}");
}

#[tokio::test]
async fn sixth_login_attempt_per_minute_from_one_ip_is_429() {
    let s = start().await;
    s.register("ann", "password1").await;
    for n in 0..5 {
        // Different usernames: only the IP is shared.
        let reply = login_from(&s, &format!("user{n}"), "password1", ip(1)).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "attempt {n}");
    }
    let sixth = login_from(&s, "ann", "password1", ip(1)).await;
    assert_too_many(&sixth, "6th from 127.0.0.1");
    // Another client is not affected.
    assert_eq!(
        login_from(&s, "ann", "password1", ip(2)).await.status,
        StatusCode::OK
    );
    // A minute later the first client may try again.
    s.clock.advance(60);
    assert_eq!(
        login_from(&s, "ann", "password1", ip(1)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn sixth_login_attempt_per_minute_for_one_username_is_429_from_any_ip() {
    let s = start().await;
    s.register("bob", "password1").await;
    for n in 1..=5 {
        let reply = login_from(&s, "bob", "password1", ip(n)).await;
        assert_eq!(reply.status, StatusCode::OK, "attempt from 127.0.0.{n}");
    }
    let sixth = login_from(&s, "bob", "password1", ip(9)).await;
    assert_too_many(&sixth, "6th for bob");
    assert_eq!(sixth.header("retry-after"), Some("60"));
    s.clock.advance(30);
    assert_eq!(
        sixth.status,
        login_from(&s, "bob", "password1", ip(10)).await.status
    );
    s.clock.advance(30);
    assert_eq!(
        login_from(&s, "bob", "password1", ip(11)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_simple_token_login_shares_the_limits() {
    let s = start().await;
    for _ in 0..5 {
        let reply = s
            .post(
                "/auth/token",
                json!({"username": "carl", "password": "password1"}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }
    assert_too_many(
        &s.login("carl", "password1").await,
        "/login after 5 on /auth/token",
    );
}

#[tokio::test]
async fn captcha_is_required_after_three_consecutive_failures() {
    let s = start().await;
    s.register("dora", "password1").await;
    let mut flags = Vec::new();
    for _ in 0..4 {
        let reply = s.login("dora", "wrong-password").await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert_eq!(reply.error(), "invalid username or password");
        flags.push(reply.json().get("captcha_required").cloned());
    }
    assert_eq!(flags, [None, None, Some(json!(true)), Some(json!(true))]);
    // A success resets the count.
    s.clock.advance(60);
    assert_eq!(s.login("dora", "password1").await.status, StatusCode::OK);
    let after = s.login("dora", "wrong-password").await;
    assert_eq!(
        after.json(),
        json!({"error": "invalid username or password"})
    );
}

#[tokio::test]
async fn ten_failures_lock_the_account_for_30_minutes_even_with_the_right_password() {
    let s = start().await;
    s.register("eve", "password1").await;
    for n in 0..10 {
        if n > 0 && n % 5 == 0 {
            s.clock.advance(60); // stay under the per-minute limit
        }
        let reply = s.login("eve", "wrong-password").await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "failure {n}");
    }
    s.clock.advance(60);
    let locked = s.login("eve", "password1").await;
    assert_eq!(
        locked.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        locked.text()
    );
    assert_eq!(
        locked.json(),
        json!({"error": "account locked after too many failed logins, try again in 30 minutes"})
    );
    assert_eq!(locked.header("retry-after"), Some("1740"));
    // Also through the simple login, and from another IP.
    let other = s
        .post_from(
            "/auth/token",
            json!({"username": "eve", "password": "password1"}),
            ip(7),
        )
        .await;
    assert_eq!(other.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(other.error(), locked.error());
    // Other accounts are not locked.
    s.register("fay", "password1").await;
    assert_eq!(s.login("fay", "password1").await.status, StatusCode::OK);
    // After the lock the right password works again.
    s.clock.advance(30 * 60 - 60);
    assert_eq!(s.login("eve", "password1").await.status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_usernames_are_limited_exactly_like_real_ones() {
    let s = start().await;
    s.register("gus", "password1").await;
    let mut real = Vec::new();
    let mut ghost = Vec::new();
    for _ in 0..6 {
        real.push(login_from(&s, "gus", "wrong-password", ip(20)).await);
        ghost.push(login_from(&s, "ghost", "wrong-password", ip(21)).await);
    }
    for (r, g) in real.iter().zip(&ghost) {
        assert_eq!((r.status, r.text()), (g.status, g.text()));
    }
}

#[tokio::test]
async fn login_limit_for_a_username_counts_every_case_variant() {
    let s = start().await;
    s.register("hal", "password1").await;
    for (n, name) in ["hal", "HAL", "Hal", "hAl", "haL"].iter().enumerate() {
        let reply = login_from(&s, name, "password1", ip(30 + n as u8)).await;
        assert_eq!(reply.status, StatusCode::OK, "{name}");
    }
    let sixth = login_from(&s, "HaL", "password1", ip(40)).await;
    assert_too_many(&sixth, "6th for hal, another case");
}

async fn register_from(s: &AuthServer, n: usize, from: Option<IpAddr>) -> Reply {
    s.post_from(
        "/auth/register",
        json!({ "username": format!("user{n:03}"), "password": "password1" }),
        from,
    )
    .await
}

#[tokio::test]
async fn eleventh_registration_per_minute_from_one_ip_is_429_before_any_bcrypt() {
    let s = start().await;
    for n in 0..10 {
        let reply = register_from(&s, n, ip(1)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{n}: {}", reply.text());
        s.clock.advance(1);
    }
    let hashed = s.service.passwords().computations();
    let eleventh = register_from(&s, 10, ip(1)).await;
    assert_eq!(eleventh.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        eleventh.json(),
        json!({"error": "too many registrations, try again in 1 minute"})
    );
    // The first registration was 10 s ago: it leaves the window in 50 s.
    assert_eq!(eleventh.header("retry-after"), Some("50"));
    assert_eq!(
        s.service.passwords().computations(),
        hashed,
        "no bcrypt work"
    );
    assert_eq!(s.db.count("SELECT count(*) FROM users"), 10);
    // Another client is not affected; the first may register again later.
    assert_eq!(
        register_from(&s, 11, ip(2)).await.status,
        StatusCode::CREATED
    );
    s.clock.advance(50);
    assert_eq!(
        register_from(&s, 12, ip(1)).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn registration_limit_is_configurable_and_counts_refused_registrations_too() {
    let s = support::token_auth::start_with(|settings, _| {
        settings.register_limits.attempts = 2;
    })
    .await;
    // A refused registration counts: probing for taken names is throttled.
    let short = json!({"username": "ab", "password": "password1"});
    let refused = s.post_from("/auth/register", short, ip(3)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        register_from(&s, 0, ip(3)).await.status,
        StatusCode::CREATED
    );
    let third = register_from(&s, 2, ip(3)).await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(third.header("retry-after"), Some("60"));
}
