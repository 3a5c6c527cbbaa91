//! The OAuth authorization-code flow (docs/token-auth.md, "OAuth sign-in")
//! end to end: our server, a real loopback identity provider
//! (tests/support/fake_provider.rs) and a client playing the browser, over
//! real HTTP — and over HTTPS with a certificate made at test time, trusted
//! through the provider's `ca_file`.

mod support;

use bytes::Bytes;
use handwire::services::token_auth::config::Provider;
use handwire::services::token_auth::oauth::form;
use handwire::services::token_auth::service::{AuthService, Settings};
use handwire::services::token_auth::store::NO_PASSWORD;
use handwire::services::token_auth::Clock;
use http::{Method, StatusCode, Version};
use serde_json::json;
use support::fake_provider::{Failure, FakeProvider};
use support::http::{Client, Proto, Reply};
use support::oauth::{
    approve, begin, finish, get, octocat, provider_config, query_of, serve_with, setup, sign_in,
    stored_rows, APPID, SECRET,
};
use support::tls::TestPki;
use support::token_auth::{start, TEST_ENC_KEY};

#[tokio::test]
async fn login_redirects_to_the_provider_with_state_and_pkce() {
    let (s, _provider) = setup().await;
    let location = begin(&s).await.location;
    assert!(location.starts_with(&format!(
        "http://127.0.0.1:{}/authorize?",
        _provider.addr.port()
    )));
    let q = query_of(&location);
    assert_eq!(form::get(&q, "appid"), Some(APPID));
    let redirect_uri = s.url("/auth/oauth/github/callback");
    assert_eq!(form::get(&q, "redirect_uri"), Some(redirect_uri.as_str()));
    assert_eq!(form::get(&q, "response_type"), Some("code"));
    assert_eq!(form::get(&q, "scope"), Some("profile"));
    assert_eq!(form::get(&q, "code_challenge_method"), Some("S256"));
    assert_eq!(form::get(&q, "code_challenge").map(str::len), Some(43));
    let state = form::get(&q, "state").unwrap();
    assert!(state.len() >= 43, "state {state:?}");
    assert_ne!(
        query_of(&begin(&s).await.location),
        q,
        "each sign-in gets its own state"
    );
}

#[tokio::test]
async fn callback_creates_a_local_user_and_returns_a_token_object() {
    let (s, provider) = setup().await;
    let reply = sign_in(&s).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["token_type"], "Bearer");
    assert_eq!(reply.json()["expires_in"], 3600);
    let profile = s
        .get_bearer("/api/user/profile", &reply.str("access_token"))
        .await;
    assert_eq!(profile.status, StatusCode::OK);
    assert_eq!(profile.json()["user"]["username"], "github_TheOctocat");
    assert_eq!(profile.json()["user"]["role"], "user");

    let (provider_name, openid, nickname, avatar, sealed, sealed_refresh, expires_at): (
        String,
        String,
        String,
        String,
        String,
        String,
        i64,
    ) = s
        .db
        .connect()
        .query_row(
            "SELECT provider, provider_user_id, nickname, avatar_url, access_token, refresh_token, expires_at \
             FROM user_auth_providers",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    assert_eq!(
        (provider_name.as_str(), openid.as_str()),
        ("github", "octo-1")
    );
    assert_eq!(
        (nickname.as_str(), avatar.as_str()),
        ("The Octocat", "http://127.0.0.1/octocat.png")
    );
    assert_eq!(expires_at as u64, s.clock.now() + 7200);
    // Provider tokens are stored sealed, never in clear.
    let plain = provider.issued_access_tokens();
    assert_eq!(plain.len(), 1);
    assert!(
        sealed.starts_with("v1:") && !sealed.contains(&plain[0]),
        "{sealed}"
    );
    assert!(sealed_refresh.starts_with("v1:") && !sealed_refresh.contains("fake-rt-"));
    let cipher = s.service.oauth().unwrap().cipher();
    assert_eq!(
        cipher.open(&sealed, "github/octo-1/access_token").unwrap(),
        plain[0]
    );
    // The account has no password: password login cannot work.
    let hash: String =
        s.db.connect()
            .query_row("SELECT password_hash FROM users", [], |r| r.get(0))
            .unwrap();
    assert_eq!(hash, NO_PASSWORD);
    assert_eq!(
        s.login("github_TheOctocat", NO_PASSWORD).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn signing_in_again_updates_the_same_local_user() {
    let (s, provider) = setup().await;
    let first = sign_in(&s).await;
    let mut renamed = octocat();
    renamed.nickname = "Octo Renamed".into();
    provider.set_user(renamed);
    let second = sign_in(&s).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.text());
    let id = |r: &Reply| support::token_auth::payload(&r.str("access_token"))["user_id"].clone();
    assert_eq!(id(&first), id(&second));
    assert_eq!(stored_rows(&s), (1, 1));
    let nickname: String =
        s.db.connect()
            .query_row("SELECT nickname FROM user_auth_providers", [], |r| r.get(0))
            .unwrap();
    assert_eq!(nickname, "Octo Renamed");
}

#[tokio::test]
async fn reused_unknown_missing_or_expired_state_is_400_invalid_state() {
    let (s, provider) = setup().await;
    let begun = begin(&s).await;
    let callback = approve(&begun.location).await;
    let cookie = Some(begun.cookie.as_str());
    assert_eq!(finish(&callback, cookie).await.status, StatusCode::OK);
    let replay = finish(&callback, cookie).await;
    assert_eq!(replay.status, StatusCode::BAD_REQUEST);
    assert_eq!(replay.json(), json!({"error": "invalid state"}));

    let code = form::get(&query_of(&callback), "code").unwrap().to_string();
    let base = s.url("/auth/oauth/github/callback");
    for url in [
        format!("{base}?code={code}&state=forged"),
        format!("{base}?code={code}"),
        format!("{base}?code={code}&state="),
    ] {
        let reply = finish(&url, cookie).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{url}");
        assert_eq!(reply.json(), json!({"error": "invalid state"}), "{url}");
    }

    let begun = begin(&s).await;
    let late = approve(&begun.location).await;
    s.clock.advance(10 * 60);
    let reply = finish(&late, Some(&begun.cookie)).await;
    assert_eq!(reply.json(), json!({"error": "invalid state"}));
    // None of the refused callbacks reached the provider's token endpoint.
    assert_eq!(provider.token_calls(), 1);
    assert_eq!(stored_rows(&s), (1, 1));
}

#[tokio::test]
async fn an_authorization_code_is_single_use() {
    let (s, provider) = setup().await;
    let begun = begin(&s).await;
    let first = approve(&begun.location).await;
    assert_eq!(
        finish(&first, Some(&begun.cookie)).await.status,
        StatusCode::OK
    );
    let used_code = form::get(&query_of(&first), "code").unwrap().to_string();
    // A fresh, valid state (and its cookie) with the already used code: the
    // provider refuses it.
    let begun = begin(&s).await;
    let state = begun.state();
    let url = format!(
        "{}?{}",
        s.url("/auth/oauth/github/callback"),
        form::encode_pairs([("code", used_code.as_str()), ("state", state.as_str())])
    );
    let reply = finish(&url, Some(&begun.cookie)).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.text());
    assert!(reply.error().contains("invalid_grant"), "{}", reply.text());
    assert_eq!(provider.token_calls(), 2);
}

#[tokio::test]
async fn provider_failures_are_502_and_store_nothing() {
    let (s, provider) = setup().await;
    let cases = [
        (Failure::TokenServerError, "HTTP 500"),
        (Failure::TokenErrcode, "errcode 40029"),
        (Failure::TokenGarbage, "not JSON"),
        (Failure::UserinfoServerError, "HTTP 500"),
    ];
    for (failure, detail) in cases {
        provider.fail_with(Some(failure));
        let reply = sign_in(&s).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_GATEWAY,
            "{failure:?}: {}",
            reply.text()
        );
        let error = reply.error();
        assert!(
            error.starts_with("identity provider failed"),
            "{failure:?}: {error}"
        );
        assert!(error.contains(detail), "{failure:?}: {error}");
        assert!(!error.contains(SECRET), "secret leaked: {error}");
        assert_eq!(stored_rows(&s), (0, 0), "{failure:?}");
    }
    assert_eq!(provider.userinfo_calls(), 1);
    provider.fail_with(None);
    assert_eq!(sign_in(&s).await.status, StatusCode::OK);
}

#[tokio::test]
async fn unreachable_provider_is_502_and_stores_nothing() {
    let (s, provider) = setup().await;
    let begun = begin(&s).await;
    let callback = approve(&begun.location).await;
    provider.stop().await;
    let reply = finish(&callback, Some(&begun.cookie)).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.text());
    assert!(reply.error().contains("unreachable"), "{}", reply.text());
    assert_eq!(stored_rows(&s), (0, 0));
}

#[tokio::test]
async fn provider_denial_is_400_and_unknown_providers_are_404() {
    let (s, provider) = setup().await;
    let begun = begin(&s).await;
    let state = begun.state();
    let url = format!(
        "{}?{}",
        s.url("/auth/oauth/github/callback"),
        form::encode_pairs([("error", "access_denied"), ("state", state.as_str())])
    );
    let denied = finish(&url, Some(&begun.cookie)).await;
    assert_eq!(denied.status, StatusCode::BAD_REQUEST);
    assert!(
        denied.error().contains("access_denied"),
        "{}",
        denied.text()
    );
    assert_eq!(provider.token_calls(), 0);

    for path in [
        "/auth/oauth/google/login",
        "/auth/oauth/facebook/login",
        "/auth/oauth/google/callback?state=x&code=y",
    ] {
        let reply = get(&s.url(path)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.json(), json!({"error": "unknown provider"}), "{path}");
    }
    let plain = start().await;
    let reply = get(&plain.url("/auth/oauth/github/login")).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

#[test]
fn providers_without_an_encryption_key_refuse_to_start_naming_the_variable() {
    let db = support::token_auth::TempDb::new("no-enc-key");
    let mut settings = Settings::new(support::token_auth::TEST_SECRET, db.path.clone());
    settings.bcrypt_cost = support::token_auth::TEST_COST;
    settings.providers.insert(
        Provider::Github,
        provider_config("http://127.0.0.1:1", "http://127.0.0.1:2"),
    );
    let err = AuthService::open(settings.clone()).unwrap_err().to_string();
    assert!(err.contains("TOKEN_AUTH_ENC_KEY"), "{err}");
    settings.enc_key = Some("too-short".into());
    let err = AuthService::open(settings).unwrap_err().to_string();
    assert!(err.contains("TOKEN_AUTH_ENC_KEY"), "{err}");
}

#[tokio::test]
async fn https_provider_trusted_through_ca_file_signs_in_over_tls() {
    let pki = TestPki::new("handwire test CA");
    let ca_file = pki.write_ca_file("oauth-ca");
    let provider =
        FakeProvider::start_tls("127.0.0.1:0", APPID, SECRET, octocat(), pki.server_config()).await;
    let s = serve_with(&provider, Some(ca_file.path.clone())).await;

    let begun = begin(&s).await;
    let location = begun.location.clone();
    let port = provider.addr.port();
    assert!(
        location.starts_with(&format!("https://127.0.0.1:{port}/authorize?")),
        "{location}"
    );
    let approved = Client::new(Proto::H1)
        .trusting(pki.client_roots())
        .request(Method::GET, &location, &[], Bytes::new())
        .await;
    assert_eq!(approved.status, StatusCode::FOUND, "{}", approved.text());
    let callback = approved.header("location").expect("Location").to_string();
    let reply = finish(&callback, Some(&begun.cookie)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());

    let profile = s
        .get_bearer("/api/user/profile", &reply.str("access_token"))
        .await;
    assert_eq!(profile.json()["user"]["username"], "github_TheOctocat");
    assert_eq!(stored_rows(&s), (1, 1));
    // Both back-channel calls went to the TLS-only provider, and ALPN chose
    // HTTP/2 (which a client only speaks there after a TLS handshake).
    assert_eq!(
        provider.backchannel_versions(),
        [Version::HTTP_2, Version::HTTP_2]
    );
}

#[tokio::test]
async fn https_provider_whose_ca_is_not_trusted_is_502_and_stores_nothing() {
    let pki = TestPki::new("handwire test CA");
    let other_ca = TestPki::new("some other CA").write_ca_file("other-ca");
    let provider =
        FakeProvider::start_tls("127.0.0.1:0", APPID, SECRET, octocat(), pki.server_config()).await;
    // Built-in roots only, then a ca_file holding an unrelated CA.
    for ca_file in [None, Some(other_ca.path.clone())] {
        let s = serve_with(&provider, ca_file.clone()).await;
        let begun = begin(&s).await;
        let approved = Client::new(Proto::H1)
            .trusting(pki.client_roots())
            .request(Method::GET, &begun.location, &[], Bytes::new())
            .await;
        let callback = approved.header("location").expect("Location").to_string();
        let reply = finish(&callback, Some(&begun.cookie)).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_GATEWAY,
            "{ca_file:?}: {}",
            reply.text()
        );
        let error = reply.error();
        assert!(
            error.starts_with("identity provider failed: provider TLS certificate not trusted")
                && error.contains("UnknownIssuer"),
            "{ca_file:?}: {error}"
        );
        assert_eq!(stored_rows(&s), (0, 0), "{ca_file:?}");
    }
    // The handshake failed before any request was sent.
    assert_eq!(provider.token_calls(), 0);
    assert!(provider.backchannel_versions().is_empty());
}

#[tokio::test]
async fn https_provider_certificate_for_another_host_is_502_even_with_its_ca_trusted() {
    let pki = TestPki::for_names("handwire test CA", &["id.example.com"]);
    let ca_file = pki.write_ca_file("oauth-ca-other-host");
    let provider =
        FakeProvider::start_tls("127.0.0.1:0", APPID, SECRET, octocat(), pki.server_config()).await;
    let s = serve_with(&provider, Some(ca_file.path.clone())).await;
    // The browser step is played over plain HTTP to our own callback: a
    // valid state and code are all the callback needs to call the provider.
    let begun = begin(&s).await;
    let state = begun.state();
    let url = format!(
        "{}?{}",
        s.url("/auth/oauth/github/callback"),
        form::encode_pairs([("code", "any"), ("state", state.as_str())])
    );
    let reply = finish(&url, Some(&begun.cookie)).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.text());
    let error = reply.error();
    assert!(
        error.contains("provider TLS certificate not trusted")
            && error.contains("not valid for name"),
        "{error}"
    );
    assert_eq!(stored_rows(&s), (0, 0));
    assert_eq!(provider.token_calls(), 0);
}

#[test]
fn an_unusable_ca_file_refuses_to_start_naming_the_key() {
    let db = support::token_auth::TempDb::new("bad-ca-file");
    let mut settings = Settings::new(support::token_auth::TEST_SECRET, db.path.clone());
    settings.bcrypt_cost = support::token_auth::TEST_COST;
    settings.enc_key = Some(TEST_ENC_KEY.into());
    let mut config = provider_config("https://127.0.0.1:1", "http://127.0.0.1:2");
    let missing = db.path.with_extension("missing.pem");
    config.ca_file = Some(missing.clone());
    settings.providers.insert(Provider::Github, config);
    let err = AuthService::open(settings).unwrap_err().to_string();
    assert!(
        err.starts_with("oauth.github.ca_file: cannot read")
            && err.contains(&missing.display().to_string()),
        "{err}"
    );
}
