//! OAuth sign-in across instances: begun on A, finished on B with the
//! cookie A set (never without it), and the per-client cap on pending
//! sign-ins held in Redis for both instances.

use bytes::Bytes;
use http::{Method, StatusCode};
use std::path::PathBuf;

use super::{cluster, Cluster, Instance};
use crate::support::fake_provider::{FakeProvider, FakeUser};
use crate::support::http::{Client, Proto};
use crate::support::servers::{available, free_port};

/// An identity provider and two instances configured for it, behind one
/// public address (a load balancer), which is what the provider sends the
/// browser back to; the config file to remove afterwards.
async fn oauth_cluster() -> (FakeProvider, String, Cluster, PathBuf) {
    let user = FakeUser {
        openid: "octo-1".into(),
        nickname: "The Octocat".into(),
        avatar: "http://127.0.0.1/octocat.png".into(),
    };
    let provider = FakeProvider::start("127.0.0.1:0", "app", "app-secret", user).await;
    let public = format!("127.0.0.1:{}", free_port());
    let redirect_uri = format!("http://{public}/auth/oauth/github/callback");
    provider.register_redirect_uri(&redirect_uri);
    let config = crate::support::temp_path("oauth", ".yaml");
    let base = provider.base();
    std::fs::write(
        &config,
        format!(
            "oauth:\n  github:\n    appid: app\n    secret: app-secret\n    \
             auth_url: {base}/authorize\n    token_url: {base}/token\n    \
             userinfo_url: {base}/userinfo\n    redirect_uri: {redirect_uri}\n    \
             scope: profile\n"
        ),
    )
    .unwrap();
    let config_path = config.to_str().unwrap().to_string();
    let c = cluster(&["--config", &config_path]);
    (provider, public, c, config)
}

#[tokio::test]
async fn an_oauth_sign_in_begun_on_a_completes_on_b_once_only_with_a_cookie() {
    if !available("an_oauth_sign_in_begun_on_a_completes_on_b_once_only_with_a_cookie") {
        return;
    }
    let (provider, public, c, config) = oauth_cluster().await;
    // Begin on A, be sent back by the provider: the callback path, and the
    // binding cookie A gave the browser.
    let begin = async || {
        let begun = c.a.get("/auth/oauth/github/login", None).await;
        assert_eq!(begun.status, StatusCode::FOUND, "{}", begun.text());
        let set_cookie = begun.header("set-cookie").expect("binding cookie");
        let cookie = set_cookie.split(';').next().unwrap().to_string();
        let at_provider = Client::new(Proto::H1)
            .request(
                Method::GET,
                begun.header("location").unwrap(),
                &[],
                Bytes::new(),
            )
            .await;
        assert_eq!(
            at_provider.status,
            StatusCode::FOUND,
            "{}",
            at_provider.text()
        );
        let callback = at_provider.header("location").unwrap().to_string();
        let path = callback
            .strip_prefix(&format!("http://{public}"))
            .unwrap()
            .to_string();
        (path, cookie)
    };
    let with_cookie = async |instance: &Instance, path: &str, cookie: &str| {
        Client::new(Proto::H1)
            .request(
                Method::GET,
                &instance.url(path),
                &[("cookie", cookie)],
                Bytes::new(),
            )
            .await
    };
    let (path, cookie) = begin().await;
    // The balancer sends the callback to B, which checks A's cookie.
    let on_b = with_cookie(&c.b, &path, &cookie).await;
    assert_eq!(on_b.status, StatusCode::OK, "{}", on_b.text());
    let profile =
        c.a.get("/api/user/profile", Some(&on_b.str("access_token")))
            .await;
    assert_eq!(profile.status, StatusCode::OK, "{}", profile.text());
    // A replay reaches nothing, on either instance.
    for instance in [&c.a, &c.b] {
        let replay = with_cookie(instance, &path, &cookie).await;
        assert_eq!(replay.status, StatusCode::BAD_REQUEST, "{}", replay.text());
        assert_eq!(replay.error(), "invalid state");
    }
    // A callback without the cookie is refused on B and spends the state
    // for A too.
    let (path, cookie) = begin().await;
    let unbound = c.b.get(&path, None).await;
    assert_eq!(
        unbound.status,
        StatusCode::BAD_REQUEST,
        "{}",
        unbound.text()
    );
    assert!(unbound
        .error()
        .starts_with("invalid state: no oauth_state_github cookie"));
    let late = with_cookie(&c.a, &path, &cookie).await;
    assert_eq!(late.error(), "invalid state");
    assert_eq!(provider.token_calls(), 1, "the code was exchanged once");
    let _ = std::fs::remove_file(config);
}

#[tokio::test]
async fn one_address_past_its_pending_sign_ins_on_a_is_refused_on_b_and_others_still_start() {
    use handwire::services::token_auth::STATE_PER_CLIENT;
    if !available(
        "one_address_past_its_pending_sign_ins_on_a_is_refused_on_b_and_others_still_start",
    ) {
        return;
    }
    let (_provider, _public, c, config) = oauth_cluster().await;
    let start_from = async |instance: &Instance, ip: &str| {
        Client::new(Proto::H1)
            .from(Some(ip.parse().unwrap()))
            .request(
                Method::GET,
                &instance.url("/auth/oauth/github/login"),
                &[],
                Bytes::new(),
            )
            .await
    };
    for n in 0..STATE_PER_CLIENT {
        let instance = if n % 2 == 0 { &c.a } else { &c.b };
        let reply = start_from(instance, "127.0.0.1").await;
        assert_eq!(
            reply.status,
            StatusCode::FOUND,
            "sign-in {n}: {}",
            reply.text()
        );
    }
    for instance in [&c.a, &c.b] {
        let refused = start_from(instance, "127.0.0.1").await;
        assert_eq!(
            refused.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{}",
            refused.text()
        );
        let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
        assert!((590..=600).contains(&retry), "retry after {retry}");
        let other = start_from(instance, "127.0.0.2").await;
        assert_eq!(other.status, StatusCode::FOUND, "{}", other.text());
    }
    let _ = std::fs::remove_file(config);
}
