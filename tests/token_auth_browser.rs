//! The OAuth sign-in in a real browser: headless Chromium (one process for
//! this file, tests/support/browser.rs) against token-auth and the loopback
//! identity provider, each test in fresh browser profiles.
//!
//! The provider is addressed as `localhost` and token-auth as `127.0.0.1`:
//! two different sites, so the provider's redirect back is a cross-site
//! navigation, and the binding cookie reaches the callback only because it
//! is `SameSite=Lax` (a `Strict` cookie would stay behind).
//!
//! Without chromium the tests print SKIPPED and pass, unless
//! `HANDWIRE_BROWSER_REQUIRED=1` (CI).

mod support;

use handwire::services::token_auth::config::Provider;
use http::StatusCode;
use serde_json::{json, Value};
use support::browser::{self, Page, Profile};
use support::fake_provider::{Failure, FakeProvider};
use support::oauth::{
    approve, begin, finish, octocat, provider_config, stored_rows, APPID, SECRET,
};
use support::token_auth::{start_with, AuthServer, TEST_ENC_KEY};

/// The provider (seen as `http://localhost:PORT`) and our server.
async fn setup() -> (AuthServer, FakeProvider) {
    let provider = FakeProvider::start("127.0.0.1:0", APPID, SECRET, octocat()).await;
    let base = format!("http://localhost:{}", provider.addr.port());
    let s = start_with(|settings, server_base| {
        let config = provider_config(&base, server_base);
        settings.providers.insert(Provider::Github, config);
        settings.enc_key = Some(TEST_ENC_KEY.into());
    })
    .await;
    provider.register_redirect_uri(&s.url("/auth/oauth/github/callback"));
    (s, provider)
}

fn json_of(page: &Page) -> Value {
    serde_json::from_str(&page.text)
        .unwrap_or_else(|e| panic!("{} shows no JSON ({e}): {}", page.url, page.text))
}

fn assert_no_tokens(page: &Page) {
    assert!(
        !page.text.contains("access_token") && !page.text.contains("refresh_token"),
        "{}",
        page.text
    );
}

/// The profile's `oauth_state_github` cookies.
async fn binding_cookies(profile: &Profile) -> Vec<Value> {
    let cookies = profile.cookies().await;
    cookies
        .into_iter()
        .filter(|c| c["name"] == "oauth_state_github")
        .collect()
}

#[tokio::test]
async fn a_browser_that_starts_and_finishes_a_sign_in_is_shown_the_token_object() {
    let test = "a_browser_that_starts_and_finishes_a_sign_in_is_shown_the_token_object";
    let Some(browser) = browser::shared(test).await else {
        return;
    };
    let (s, provider) = setup().await;
    let profile = browser.new_profile().await;
    let page = profile.open(&s.url("/auth/oauth/github/login")).await;

    assert_eq!(page.status, 200, "{}: {}", page.url, page.text);
    assert!(
        page.url
            .starts_with(&s.url("/auth/oauth/github/callback?code=")),
        "{}",
        page.url
    );
    assert_eq!(
        page.headers.get("cache-control").map(String::as_str),
        Some("no-store")
    );
    let tokens = json_of(&page);
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    let access = tokens["access_token"].as_str().expect("access_token");
    let profile_reply = s.get_bearer("/api/user/profile", access).await;
    assert_eq!(
        profile_reply.json()["user"]["username"],
        "github_TheOctocat"
    );
    assert_eq!(provider.token_calls(), 1);

    // On the way the browser was given the binding cookie (HttpOnly, Lax,
    // for the callback only, 10 minutes), and the answer removed it.
    let given = &page.set_cookies[0];
    assert!(
        given.starts_with("oauth_state_github=")
            && given.ends_with(
                "; Path=/auth/oauth/github/callback; Max-Age=600; HttpOnly; SameSite=Lax"
            ),
        "{:?}",
        page.set_cookies
    );
    assert_eq!(page.set_cookies.len(), 2, "{:?}", page.set_cookies);
    assert!(page.set_cookies[1]
        .starts_with("oauth_state_github=; Path=/auth/oauth/github/callback; Max-Age=0"));
    assert!(binding_cookies(&profile).await.is_empty(), "cookie cleared");
}

#[tokio::test]
async fn a_callback_from_a_sign_in_another_client_started_gives_a_fresh_browser_no_tokens() {
    let test = "a_callback_from_a_sign_in_another_client_started_gives_a_fresh_browser_no_tokens";
    let Some(browser) = browser::shared(test).await else {
        return;
    };
    let (s, provider) = setup().await;
    // Another client starts a sign-in, approves it with its own account,
    // and does not follow the last redirect: it sends the URL to a victim.
    let attacker = begin(&s).await;
    let callback = approve(&attacker.location).await;

    let victim = browser.new_profile().await;
    let page = victim.open(&callback).await;
    assert_eq!(page.status, 400, "{}", page.text);
    assert_eq!(
        json_of(&page),
        json!({"error": "invalid state: no oauth_state_github cookie: finish the sign-in in the browser that started it"})
    );
    assert_no_tokens(&page);
    assert_eq!(provider.token_calls(), 0, "the code was never exchanged");
    assert_eq!(stored_rows(&s), (0, 0));

    // A victim in the middle of a sign-in of their own (at the provider's
    // consent page) holds a cookie, but not this sign-in's: refused too.
    let second = begin(&s).await;
    let second_callback = approve(&second.location).await;
    provider.fail_with(Some(Failure::AuthorizeHeld));
    let deciding = browser.new_profile().await;
    let consent = deciding.open(&s.url("/auth/oauth/github/login")).await;
    provider.fail_with(None);
    assert_eq!(consent.status, 200, "{}", consent.text);
    assert_eq!(binding_cookies(&deciding).await.len(), 1);
    let page = deciding.open(&second_callback).await;
    assert_eq!(page.status, 400, "{}", page.text);
    assert!(
        json_of(&page)["error"].as_str().is_some_and(|e| {
            e.starts_with("invalid state: the oauth_state_github cookie is for another sign-in")
        }),
        "{}",
        page.text
    );
    assert_no_tokens(&page);
    let late = finish(&second_callback, Some(&second.cookie)).await;
    assert_eq!(late.json(), json!({"error": "invalid state"}));

    // The attacker cannot use the callback afterwards either: spent.
    let late = finish(&callback, Some(&attacker.cookie)).await;
    assert_eq!(late.status, StatusCode::BAD_REQUEST);
    assert_eq!(late.json(), json!({"error": "invalid state"}));
    assert_eq!(stored_rows(&s), (0, 0));
}

#[tokio::test]
async fn a_provider_denial_in_a_browser_is_a_clean_400_that_spends_the_state() {
    let test = "a_provider_denial_in_a_browser_is_a_clean_400_that_spends_the_state";
    let Some(browser) = browser::shared(test).await else {
        return;
    };
    let (s, provider) = setup().await;
    provider.fail_with(Some(Failure::AuthorizeDenied));

    // The user declines at the provider in the browser that started.
    let profile = browser.new_profile().await;
    let page = profile.open(&s.url("/auth/oauth/github/login")).await;
    assert_eq!(page.status, 400, "{}", page.text);
    assert!(page.url.contains("error=access_denied"), "{}", page.url);
    assert_eq!(
        json_of(&page),
        json!({"error": "sign-in was not granted by the provider: access_denied"})
    );
    assert_eq!(
        page.headers.get("cache-control").map(String::as_str),
        Some("no-store")
    );
    assert!(binding_cookies(&profile).await.is_empty(), "cookie cleared");
    // Spent: the same callback with the cookie the browser was given.
    let cookie = page.set_cookies[0].split(';').next().unwrap().to_string();
    let replay = finish(&page.url, Some(&cookie)).await;
    assert_eq!(replay.json(), json!({"error": "invalid state"}));

    // The same, started by another client and opened in a fresh profile:
    // refused for the missing binding before the denial is looked at.
    let attacker = begin(&s).await;
    let callback = approve(&attacker.location).await;
    let fresh = browser.new_profile().await;
    let page = fresh.open(&callback).await;
    assert_eq!(page.status, 400, "{}", page.text);
    assert!(
        json_of(&page)["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("invalid state: no oauth_state_github cookie")),
        "{}",
        page.text
    );
    let late = finish(&callback, Some(&attacker.cookie)).await;
    assert_eq!(late.json(), json!({"error": "invalid state"}));
    assert_no_tokens(&page);
    assert_eq!((provider.token_calls(), stored_rows(&s)), (0, (0, 0)));
}
