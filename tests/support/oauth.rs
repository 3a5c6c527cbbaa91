//! The OAuth sign-in tests' common moves: token-auth configured for a
//! loopback [`FakeProvider`], and the steps a browser takes — begin at our
//! server (a redirect and the binding cookie), approve at the provider,
//! finish at our callback with the cookie.

use bytes::Bytes;
use handwire::services::token_auth::config::{Provider, ProviderConfig};
use handwire::services::token_auth::oauth::form;
use http::{Method, StatusCode};
use std::path::PathBuf;

use super::fake_provider::{FakeProvider, FakeUser};
use super::http::{Client, Proto, Reply};
use super::token_auth::{start_with, AuthServer, TEST_ENC_KEY};

pub const APPID: &str = "test-app";
pub const SECRET: &str = "test-app-secret";

pub fn octocat() -> FakeUser {
    FakeUser {
        openid: "octo-1".into(),
        nickname: "The Octocat".into(),
        avatar: "http://127.0.0.1/octocat.png".into(),
    }
}

pub fn provider_config(provider_base: &str, server_base: &str) -> ProviderConfig {
    ProviderConfig {
        appid: APPID.into(),
        secret: SECRET.into(),
        auth_url: format!("{provider_base}/authorize"),
        token_url: format!("{provider_base}/token"),
        userinfo_url: format!("{provider_base}/userinfo"),
        redirect_uri: format!("{server_base}/auth/oauth/github/callback"),
        scope: "profile".into(),
        ca_file: None,
    }
}

/// A provider on loopback and our server configured for it.
pub async fn setup() -> (AuthServer, FakeProvider) {
    let provider = FakeProvider::start("127.0.0.1:0", APPID, SECRET, octocat()).await;
    (serve_with(&provider, None).await, provider)
}

/// Our server, configured for `provider` with `ca_file`.
pub async fn serve_with(provider: &FakeProvider, ca_file: Option<PathBuf>) -> AuthServer {
    let base = provider.base();
    let s = start_with(|settings, server_base| {
        let mut config = provider_config(&base, server_base);
        config.ca_file = ca_file;
        settings.providers.insert(Provider::Github, config);
        settings.enc_key = Some(TEST_ENC_KEY.into());
    })
    .await;
    provider.register_redirect_uri(&s.url("/auth/oauth/github/callback"));
    s
}

pub async fn get(url: &str) -> Reply {
    Client::new(Proto::H1)
        .request(Method::GET, url, &[], Bytes::new())
        .await
}

pub fn query_of(url: &str) -> Vec<(String, String)> {
    form::parse(url.split_once('?').map_or("", |(_, q)| q)).expect("well-formed query")
}

/// A sign-in begun at our server.
#[derive(Debug, Clone)]
pub struct Begun {
    /// The provider URL we redirected to.
    pub location: String,
    /// `oauth_state_github=…`, as a `Cookie` header sends it back.
    pub cookie: String,
    /// The whole `Set-Cookie` value.
    pub set_cookie: String,
}

impl Begun {
    /// The `state` of the authorization request.
    pub fn state(&self) -> String {
        form::get(&query_of(&self.location), "state")
            .expect("state")
            .to_string()
    }
}

/// Start a sign-in at our server.
pub async fn begin(s: &AuthServer) -> Begun {
    let reply = get(&s.url("/auth/oauth/github/login")).await;
    assert_eq!(reply.status, StatusCode::FOUND, "{}", reply.text());
    let set_cookie = reply.header("set-cookie").expect("Set-Cookie").to_string();
    Begun {
        location: reply.header("location").expect("Location").to_string(),
        cookie: set_cookie.split(';').next().unwrap_or_default().to_string(),
        set_cookie,
    }
}

/// Play the browser at the provider: the callback URL it sends us back to.
pub async fn approve(authorize_url: &str) -> String {
    let reply = get(authorize_url).await;
    assert_eq!(
        reply.status,
        StatusCode::FOUND,
        "provider: {}",
        reply.text()
    );
    reply.header("location").expect("Location").to_string()
}

/// Open `callback` with `cookie` (a `Cookie` header value), or none.
pub async fn finish(callback: &str, cookie: Option<&str>) -> Reply {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
    Client::new(Proto::H1)
        .request(Method::GET, callback, &headers, Bytes::new())
        .await
}

/// A whole sign-in, as one browser does it.
pub async fn sign_in(s: &AuthServer) -> Reply {
    let begun = begin(s).await;
    let callback = approve(&begun.location).await;
    finish(&callback, Some(&begun.cookie)).await
}

/// Rows in `users` and `user_auth_providers`.
pub fn stored_rows(s: &AuthServer) -> (i64, i64) {
    (
        s.db.count("SELECT count(*) FROM users"),
        s.db.count("SELECT count(*) FROM user_auth_providers"),
    )
}
