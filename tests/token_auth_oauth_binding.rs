//! An OAuth sign-in is bound to the client that started it, and no client
//! can hold the pending sign-ins of everyone: black-box over real HTTP, with
//! a loopback identity provider (tests/support/fake_provider.rs).
//!
//! - The redirect to the provider sets a cookie (`oauth_state`: HttpOnly,
//!   SameSite=Lax, the callback's path, 10 minutes, Secure over TLS); the
//!   callback needs it with the state, else 400, no tokens, and the state
//!   is spent (login CSRF, RFC 9700 §4.7.1). tests/token_auth_browser.rs
//!   shows the same in a real browser.
//! - One client address (IPv6 by its /64) holds at most `STATE_PER_CLIENT`
//!   pending sign-ins: a flood from one address gets 429 and leaves the
//!   others signing in.

mod support;

use bytes::Bytes;
use handwire::services::token_auth::config::Provider;
use handwire::services::token_auth::{STATE_CAPACITY, STATE_PER_CLIENT};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::IpAddr;
use support::fake_provider::FakeProvider;
use support::http::{Client, Proto, Reply};
use support::oauth::{
    approve, begin, finish, octocat, provider_config, setup, stored_rows, APPID, SECRET,
};
use support::token_auth::{start_with, TEST_ENC_KEY};

const COOKIE_ATTRIBUTES: &str =
    "; Path=/auth/oauth/github/callback; Max-Age=600; HttpOnly; SameSite=Lax";

/// No tokens in `reply`, whatever its status.
fn assert_no_tokens(reply: &Reply) {
    let text = reply.text();
    assert!(
        !text.contains("access_token") && !text.contains("refresh_token"),
        "{text}"
    );
}

#[tokio::test]
async fn login_sets_an_httponly_lax_cookie_for_the_callback_path_lasting_ten_minutes() {
    let (s, _provider) = setup().await;
    let begun = begin(&s).await;
    let value = begun.cookie.strip_prefix("oauth_state=").expect("name");
    assert_eq!(value.len(), 43, "a 256-bit keyed hash: {value}");
    assert_eq!(
        begun.set_cookie,
        format!("oauth_state={value}{COOKIE_ATTRIBUTES}"),
        "no Secure on a plain HTTP listener"
    );
    assert_ne!(begin(&s).await.cookie, begun.cookie, "one per sign-in");
}

#[tokio::test]
async fn the_cookie_is_secure_when_the_listener_is_tls() {
    let provider = FakeProvider::start("127.0.0.1:0", APPID, SECRET, octocat()).await;
    let base = provider.base();
    let s = start_with(|settings, server_base| {
        settings
            .providers
            .insert(Provider::Github, provider_config(&base, server_base));
        settings.enc_key = Some(TEST_ENC_KEY.into());
        settings.listener_tls = true;
    })
    .await;
    provider.register_redirect_uri(&s.url("/auth/oauth/github/callback"));
    let begun = begin(&s).await;
    assert!(
        begun
            .set_cookie
            .ends_with(&format!("{COOKIE_ATTRIBUTES}; Secure")),
        "{}",
        begun.set_cookie
    );
    let callback = approve(&begun.location).await;
    let reply = finish(&callback, Some(&begun.cookie)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(
        reply.header("set-cookie"),
        Some(format!("oauth_state={COOKIE_ATTRIBUTES}; Secure").replace("600", "0")).as_deref()
    );
}

#[tokio::test]
async fn callback_without_the_binding_cookie_is_400_and_spends_the_state() {
    let (s, provider) = setup().await;
    // Another client starts a sign-in, approves with its own account, and
    // hands the callback URL to someone else.
    let begun = begin(&s).await;
    let callback = approve(&begun.location).await;
    let reply = finish(&callback, None).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert_eq!(
        reply.json(),
        json!({"error": "invalid state: no oauth_state cookie: finish the sign-in in the browser that started it"})
    );
    assert_no_tokens(&reply);
    assert_eq!(provider.token_calls(), 0, "the code was not exchanged");
    assert_eq!(stored_rows(&s), (0, 0));
    // Spent: not even the client that started it can finish it now.
    let late = finish(&callback, Some(&begun.cookie)).await;
    assert_eq!(late.json(), json!({"error": "invalid state"}));
    assert_eq!(provider.token_calls(), 0);
}

#[tokio::test]
async fn callback_with_another_sign_ins_cookie_is_400_and_spends_the_state() {
    let (s, provider) = setup().await;
    let victim = begin(&s).await;
    let attacker = begin(&s).await;
    let attackers_callback = approve(&attacker.location).await;
    // The victim's browser holds a cookie, but of its own sign-in.
    let reply = finish(&attackers_callback, Some(&victim.cookie)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert!(
        reply
            .error()
            .starts_with("invalid state: the oauth_state cookie is for another sign-in"),
        "{}",
        reply.text()
    );
    assert_no_tokens(&reply);
    let late = finish(&attackers_callback, Some(&attacker.cookie)).await;
    assert_eq!(late.json(), json!({"error": "invalid state"}));
    assert_eq!(provider.token_calls(), 0);
    // The victim's own pending sign-in was not spent: with its cookie
    // (which that answer told the browser to drop) it still finishes.
    let own = approve(&victim.location).await;
    let reply = finish(&own, Some(&victim.cookie)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(stored_rows(&s), (1, 1));
}

#[tokio::test]
async fn a_browser_sending_several_oauth_state_cookies_passes_if_one_is_its_own() {
    let (s, _provider) = setup().await;
    let other = begin(&s).await;
    let own = begin(&s).await;
    let callback = approve(&own.location).await;
    let cookies = format!("theme=dark; {}; {}", other.cookie, own.cookie);
    let reply = finish(&callback, Some(&cookies)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
}

#[tokio::test]
async fn every_callback_answer_clears_the_cookie_and_is_not_stored() {
    let (s, _provider) = setup().await;
    let cleared = format!("oauth_state={COOKIE_ATTRIBUTES}").replace("600", "0");
    let begun = begin(&s).await;
    let callback = approve(&begun.location).await;
    let ok = finish(&callback, Some(&begun.cookie)).await;
    let replay = finish(&callback, Some(&begun.cookie)).await;
    let unbound = finish(&approve(&begin(&s).await.location).await, None).await;
    let denied_sign_in = begin(&s).await;
    let denied = finish(
        &format!(
            "{}?error=access_denied&state={}",
            s.url("/auth/oauth/github/callback"),
            denied_sign_in.state()
        ),
        Some(&denied_sign_in.cookie),
    )
    .await;
    let answers = [
        (ok, StatusCode::OK),
        (replay, StatusCode::BAD_REQUEST),
        (unbound, StatusCode::BAD_REQUEST),
        (denied, StatusCode::BAD_REQUEST),
    ];
    for (reply, status) in answers {
        assert_eq!(reply.status, status, "{}", reply.text());
        assert_eq!(reply.header("set-cookie"), Some(cleared.as_str()));
        assert_eq!(reply.header("cache-control"), Some("no-store"));
    }
}

#[tokio::test]
async fn a_state_begun_with_one_provider_is_refused_on_anothers_callback() {
    let provider = FakeProvider::start("127.0.0.1:0", APPID, SECRET, octocat()).await;
    let base = provider.base();
    let s = start_with(|settings, server_base| {
        for (name, config) in [(Provider::Github, "github"), (Provider::Google, "google")] {
            let mut c = provider_config(&base, server_base);
            c.redirect_uri = format!("{server_base}/auth/oauth/{config}/callback");
            settings.providers.insert(name, c);
        }
        settings.enc_key = Some(TEST_ENC_KEY.into());
    })
    .await;
    provider.register_redirect_uri(&s.url("/auth/oauth/github/callback"));
    let begun = begin(&s).await;
    let state = begun.state();
    // Even with github's cookie sent along (a browser would not: its Path
    // is github's callback), google's callback refuses github's state.
    let mixed_up = finish(
        &s.url(&format!(
            "/auth/oauth/google/callback?code=any&state={state}"
        )),
        Some(&begun.cookie),
    )
    .await;
    assert_eq!(mixed_up.status, StatusCode::BAD_REQUEST);
    assert_eq!(mixed_up.json(), json!({"error": "invalid state"}));
    assert_eq!(
        mixed_up.header("set-cookie"),
        Some("oauth_state=; Path=/auth/oauth/google/callback; Max-Age=0; HttpOnly; SameSite=Lax")
    );
    // Spent there, so the right callback cannot use it afterwards.
    let callback = approve(&begun.location).await;
    let late = finish(&callback, Some(&begun.cookie)).await;
    assert_eq!(late.json(), json!({"error": "invalid state"}));
    assert_eq!(provider.token_calls(), 0);
}

/// `n` `GET url` from `from` over 32 keep-alive connections: how many
/// answers had each status, and the `Retry-After` values seen.
async fn flood(url: &str, from: IpAddr, n: usize) -> (BTreeMap<u16, usize>, Vec<u64>) {
    let workers = 32;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let url = url.to_string();
        let count = n / workers + usize::from(w < n % workers);
        tasks.spawn(async move {
            let mut tcp = HttpConnector::new();
            tcp.set_local_address(Some(from));
            let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
                .build::<_, Full<Bytes>>(tcp);
            let mut seen = Vec::with_capacity(count);
            for _ in 0..count {
                let req = Request::get(&url).body(Full::new(Bytes::new())).unwrap();
                let resp = client.request(req).await.expect("flood request");
                let status = resp.status().as_u16();
                let retry: Option<u64> = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()?.parse().ok());
                resp.into_body().collect().await.expect("flood body");
                seen.push((status, retry));
            }
            seen
        });
    }
    let (mut statuses, mut retries) = (BTreeMap::new(), Vec::new());
    while let Some(seen) = tasks.join_next().await {
        for (status, retry) in seen.expect("flood task") {
            *statuses.entry(status).or_insert(0) += 1;
            retries.extend(retry);
        }
    }
    (statuses, retries)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_sign_ins_from_one_address_leaves_other_addresses_signing_in() {
    let (s, _provider) = setup().await;
    let attacker: IpAddr = "127.0.0.1".parse().unwrap();
    // More than the whole table holds, as the attack that used to lock
    // every address out for 10 minutes.
    let n = STATE_CAPACITY + 500;
    let (statuses, retries) = flood(&s.url("/auth/oauth/github/login"), attacker, n).await;
    assert_eq!(
        statuses,
        BTreeMap::from([(302, STATE_PER_CLIENT), (429, n - STATE_PER_CLIENT)]),
        "only the per-client cap is kept for one address"
    );
    assert!(
        retries.iter().all(|r| (590..=600).contains(r)),
        "Retry-After"
    );
    let refused = Client::new(Proto::H1)
        .from(Some(attacker))
        .request(
            Method::GET,
            &s.url("/auth/oauth/github/login"),
            &[],
            Bytes::new(),
        )
        .await;
    assert_eq!(
        refused.json(),
        json!({"error": "too many sign-ins in progress from this address, try again later"})
    );
    // Another address starts and finishes a sign-in as usual.
    let other = Client::new(Proto::H1).from(Some("127.0.0.2".parse().unwrap()));
    let begun = other
        .request(
            Method::GET,
            &s.url("/auth/oauth/github/login"),
            &[],
            Bytes::new(),
        )
        .await;
    assert_eq!(begun.status, StatusCode::FOUND, "{}", begun.text());
    let cookie = begun
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap();
    let callback = approve(begun.header("location").unwrap()).await;
    let reply = finish(&callback, Some(cookie)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
}
