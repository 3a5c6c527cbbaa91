//! The captcha, verified: after 3 failed logins in a row a login must carry
//! a `captcha_token` that the captcha provider confirms (siteverify, as
//! hCaptcha and Turnstile do it), checked against a real fake provider on
//! loopback ([`support::fake_captcha`]). Without a provider the captcha
//! stays a hint, and the binary says so at start-up.

mod support;

use std::io::BufRead;

use handwire::services::token_auth::config::CaptchaConfig;
use handwire::services::token_auth::routes::{
    BAD_CREDENTIALS, CAPTCHA_FAILED, CAPTCHA_REQUIRED, CAPTCHA_UNAVAILABLE,
};
use http::StatusCode;
use serde_json::json;

use support::fake_captcha::FakeCaptcha;
use support::http::Reply;
use support::token_auth::{start_with, AuthServer};

const SECRET: &str = "test-captcha-secret";

/// token-auth verifying captchas at `provider`, expecting hostname
/// `localhost` and action `login`; user `ann` registered.
async fn server_with(provider: &FakeCaptcha, secret: &str) -> AuthServer {
    let config = CaptchaConfig {
        verify_url: provider.verify_url(),
        secret: secret.into(),
        hostname: Some("localhost".into()),
        action: Some("login".into()),
        ca_file: None,
    };
    let s = start_with(move |settings, _| settings.captcha = Some(config)).await;
    s.register("ann", "password1").await;
    s
}

async fn login(s: &AuthServer, password: &str, captcha: Option<&str>) -> Reply {
    let mut body = json!({ "username": "ann", "password": password });
    if let Some(token) = captcha {
        body["captcha_token"] = json!(token);
    }
    s.post("/login", body).await
}

/// Three wrong passwords: from now on a captcha is required.
async fn fail_three_times(s: &AuthServer) {
    for _ in 0..3 {
        let r = login(s, "wrong-password", None).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        assert_eq!(r.error(), BAD_CREDENTIALS);
    }
}

fn assert_captcha_refused(r: &Reply, message: &str) {
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({ "error": message, "captcha_required": true })
    );
}

#[tokio::test]
async fn after_three_failures_the_right_password_needs_a_captcha_the_provider_confirms() {
    let provider = FakeCaptcha::start("127.0.0.1:0", SECRET).await;
    let s = server_with(&provider, SECRET).await;
    // Before any failure no captcha is asked for, and none is verified.
    assert_eq!(login(&s, "password1", None).await.status, StatusCode::OK);
    fail_three_times(&s).await;
    assert!(provider.calls().is_empty());

    // The right password alone no longer signs in.
    let r = login(&s, "password1", None).await;
    assert_captcha_refused(&r, CAPTCHA_REQUIRED);

    // With a solved captcha it does; the provider got secret, token, client IP.
    s.clock.advance(60);
    let token = provider.solve("localhost", "login");
    let r = login(&s, "password1", Some(&token)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let calls = provider.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].secret.as_deref(), Some(SECRET));
    assert_eq!(calls[0].response.as_deref(), Some(token.as_str()));
    assert_eq!(calls[0].remoteip.as_deref(), Some("127.0.0.1"));

    // The success reset the count: the next login needs no captcha.
    assert_eq!(login(&s, "password1", None).await.status, StatusCode::OK);
    assert_eq!(provider.calls().len(), 1);
}

#[tokio::test]
async fn a_forged_spent_or_foreign_captcha_token_is_401_and_the_password_is_not_checked() {
    let provider = FakeCaptcha::start("127.0.0.1:0", SECRET).await;
    let s = server_with(&provider, SECRET).await;
    fail_three_times(&s).await;
    let spent = provider.solve("localhost", "login");
    assert_eq!(
        login(&s, "password1", Some(&spent)).await.status,
        StatusCode::OK
    );
    s.clock.advance(60); // login limits: 5 a minute per username and per IP
    fail_three_times(&s).await;

    let cases = [
        ("forged", "fake-0000".to_string()),
        ("spent", spent),
        ("other hostname", provider.solve("evil.example", "login")),
        ("other action", provider.solve("localhost", "signup")),
        ("too long", "x".repeat(4096)),
    ];
    for (what, token) in cases {
        s.clock.advance(60);
        // The right password: refused all the same (the captcha is checked
        // first), so no success resets the count.
        let r = login(&s, "password1", Some(&token)).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{what}: {}", r.text());
        assert_captcha_refused(&r, CAPTCHA_FAILED);
    }
    // Still required: the refused captchas did not count as a pass.
    s.clock.advance(60);
    assert_captcha_refused(&login(&s, "password1", None).await, CAPTCHA_REQUIRED);
}

#[tokio::test]
async fn a_captcha_provider_outage_is_503_never_a_pass() {
    let provider = FakeCaptcha::start("127.0.0.1:0", SECRET).await;
    let s = server_with(&provider, SECRET).await;
    fail_three_times(&s).await;
    provider.set_outage(true);
    let token = provider.solve("localhost", "login");
    let r = login(&s, "password1", Some(&token)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert_eq!(r.error(), CAPTCHA_UNAVAILABLE);

    // The provider answers again: the same token passes (it was never spent).
    provider.set_outage(false);
    let r = login(&s, "password1", Some(&token)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
}

#[tokio::test]
async fn a_captcha_answer_with_a_duplicated_key_is_503_never_a_pass() {
    let provider = FakeCaptcha::start("127.0.0.1:0", SECRET).await;
    let s = server_with(&provider, SECRET).await;
    fail_three_times(&s).await;
    // Read last-wins, the first passes; read first-wins, the second does.
    for answer in [
        r#"{"success":false,"success":true,"hostname":"localhost","action":"login"}"#,
        r#"{"success":true,"hostname":"localhost","action":"login","success":false}"#,
        r#"{"success":true,"hostname":"evil.example","hostname":"localhost","action":"login"}"#,
    ] {
        provider.set_answer(Some(answer));
        s.clock.advance(60); // past the 5 logins a minute
        let token = provider.solve("localhost", "login");
        let r = login(&s, "password1", Some(&token)).await;
        assert_eq!(
            r.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{answer}: {}",
            r.text()
        );
        assert_eq!(r.error(), CAPTCHA_UNAVAILABLE);
    }
    // An answer in one piece passes again.
    provider.set_answer(None);
    s.clock.advance(60);
    let token = provider.solve("localhost", "login");
    let r = login(&s, "password1", Some(&token)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
}

#[tokio::test]
async fn an_unreachable_captcha_provider_is_503() {
    let provider = FakeCaptcha::start("127.0.0.1:0", SECRET).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = CaptchaConfig {
        verify_url: format!("http://{closed}/siteverify"),
        secret: SECRET.into(),
        hostname: None,
        action: None,
        ca_file: None,
    };
    let s = start_with(move |settings, _| settings.captcha = Some(config)).await;
    s.register("ann", "password1").await;
    fail_three_times(&s).await;
    let token = provider.solve("localhost", "login");
    let r = login(&s, "password1", Some(&token)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert_eq!(r.error(), CAPTCHA_UNAVAILABLE);
}

#[tokio::test]
async fn a_wrong_site_secret_is_503_not_the_clients_401() {
    let provider = FakeCaptcha::start("127.0.0.1:0", SECRET).await;
    let s = server_with(&provider, "not-the-secret").await;
    fail_three_times(&s).await;
    let token = provider.solve("localhost", "login");
    let r = login(&s, "password1", Some(&token)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
}

#[tokio::test]
async fn without_a_provider_the_captcha_is_only_a_hint() {
    let s = start_with(|_, _| {}).await;
    s.register("ann", "password1").await;
    fail_three_times(&s).await;
    let r = login(&s, "password1", None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
}

/// The start-up lines of the binary before it listens.
fn startup_lines(args: &[&str], dir: &std::path::Path) -> String {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_token-auth"))
        .args(["--addr", "127.0.0.1:0", "--quiet", "--db"])
        .arg(dir.join("auth.db"))
        .args(args)
        .env(
            "TOKEN_AUTH_SECRET",
            "test-secret-test-secret-test-secret-0123",
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start token-auth");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = String::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
            panic!("token-auth exited: {err}");
        }
        lines.push_str(&line);
        if line.contains("listening on") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    lines
}

#[test]
fn the_binary_says_at_start_up_whether_the_captcha_is_verified_or_a_hint() {
    let dir = support::greeter::TempDir::new("captcha-bin");
    let lines = startup_lines(&[], &dir.0);
    assert!(
        lines.contains("token-auth: captcha is hint-only"),
        "{lines}"
    );

    let config = dir.0.join("auth.yaml");
    std::fs::write(
        &config,
        "captcha:\n  verify_url: http://127.0.0.1:9/siteverify\n  secret: s3cret\n  action: login\n",
    )
    .unwrap();
    let lines = startup_lines(&["--config", config.to_str().unwrap()], &dir.0);
    assert!(
        lines.contains(
            "token-auth: captcha verified at verify_url=http://127.0.0.1:9/siteverify action=login"
        ),
        "{lines}"
    );
    assert!(
        !lines.contains("s3cret"),
        "the secret is never logged: {lines}"
    );
}
