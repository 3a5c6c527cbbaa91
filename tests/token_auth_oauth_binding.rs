//! An OAuth sign-in is bound to the client that started it, and no client
//! can hold the pending sign-ins of everyone: black-box over real HTTP, with
//! a loopback identity provider (tests/support/fake_provider.rs).
//!
//! - The redirect to the provider sets a cookie named per provider
//!   (`oauth_state_github`: HttpOnly, SameSite=Lax, the callback's path, 10
//!   minutes; over TLS `__Host-oauth_state_github`: Secure, `Path=/`, and
//!   only that name is read); the callback needs exactly one, of its own
//!   sign-in, with the state, else 400, no tokens, and the state is spent
//!   (login CSRF, RFC 9700 §4.7.1). tests/token_auth_browser.rs shows the
//!   same in a real browser.
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
use support::token_auth::{start_with, AuthServer, TEST_ENC_KEY};

const COOKIE_ATTRIBUTES: &str =
    "; Path=/auth/oauth/github/callback; Max-Age=600; HttpOnly; SameSite=Lax";
/// What the cookie is over TLS: `__Host-` forces `Secure`, `Path=/` and no
/// `Domain`, so no sibling subdomain can plant one.
const TLS_COOKIE_ATTRIBUTES: &str = "; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure";

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
    let value = begun
        .cookie
        .strip_prefix("oauth_state_github=")
        .expect("name");
    assert_eq!(value.len(), 43, "a 256-bit keyed hash: {value}");
    assert_eq!(
        begun.set_cookie,
        format!("oauth_state_github={value}{COOKIE_ATTRIBUTES}"),
        "no Secure on a plain HTTP listener"
    );
    assert_ne!(begin(&s).await.cookie, begun.cookie, "one per sign-in");
}

/// Our server for the loopback provider, as it is behind a TLS listener.
async fn setup_tls() -> (AuthServer, FakeProvider) {
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
    (s, provider)
}

#[tokio::test]
async fn over_tls_the_cookie_is_host_prefixed_secure_for_path_root_with_no_domain() {
    let (s, _provider) = setup_tls().await;
    let begun = begin(&s).await;
    let value = begun
        .cookie
        .strip_prefix("__Host-oauth_state_github=")
        .expect("the __Host- name");
    assert_eq!(
        begun.set_cookie,
        format!("__Host-oauth_state_github={value}{TLS_COOKIE_ATTRIBUTES}")
    );
    let callback = approve(&begun.location).await;
    let reply = finish(&callback, Some(&begun.cookie)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(
        reply.header("set-cookie"),
        Some(format!("__Host-oauth_state_github={TLS_COOKIE_ATTRIBUTES}").replace("600", "0"))
            .as_deref()
    );
}

#[tokio::test]
async fn over_tls_only_the_host_prefixed_cookie_is_read() {
    let (s, provider) = setup_tls().await;
    let begun = begin(&s).await;
    let callback = approve(&begun.location).await;
    // The right value under a name any subdomain can set is not read.
    let unprefixed = begun.cookie.replace("__Host-", "");
    let reply = finish(&callback, Some(&unprefixed)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert!(
        reply
            .error()
            .starts_with("invalid state: no __Host-oauth_state_github cookie"),
        "{}",
        reply.text()
    );
    assert_no_tokens(&reply);
    assert_eq!(provider.token_calls(), 0);
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
        json!({"error": "invalid state: no oauth_state_github cookie: finish the sign-in in the browser that started it"})
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
            .starts_with("invalid state: the oauth_state_github cookie is for another sign-in"),
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
async fn a_callback_with_several_binding_cookies_for_its_provider_is_400_and_exchanges_nothing() {
    let (s, provider) = setup().await;
    // A cookie tossed from a sibling subdomain (another sign-in's, approved
    // with the planter's account) next to the browser's own: fail closed,
    // whichever comes first, and even when both are the browser's own.
    let planted = begin(&s).await;
    for order in 0..3 {
        let own = begin(&s).await;
        let callback = approve(&own.location).await;
        let cookies = match order {
            0 => format!("theme=dark; {}; {}", planted.cookie, own.cookie),
            1 => format!("{}; theme=dark; {}", own.cookie, planted.cookie),
            _ => format!("{}; {}", own.cookie, own.cookie),
        };
        let reply = finish(&callback, Some(&cookies)).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
        assert!(
            reply
                .error()
                .starts_with("invalid state: several oauth_state_github cookies"),
            "{}",
            reply.text()
        );
        assert_no_tokens(&reply);
    }
    assert_eq!(provider.token_calls(), 0, "no code was exchanged");
    assert_eq!(stored_rows(&s), (0, 0));
    // Another provider's binding cookie beside its own is no duplicate.
    let own = begin(&s).await;
    let callback = approve(&own.location).await;
    let cookies = format!("oauth_state_google=x; oauth_state=y; {}", own.cookie);
    let reply = finish(&callback, Some(&cookies)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
}

#[tokio::test]
async fn every_callback_answer_clears_the_cookie_and_is_not_stored() {
    let (s, _provider) = setup().await;
    let cleared = format!("oauth_state_github={COOKIE_ATTRIBUTES}").replace("600", "0");
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
        Some(
            "oauth_state_google=; Path=/auth/oauth/google/callback; Max-Age=0; HttpOnly; SameSite=Lax"
        )
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
