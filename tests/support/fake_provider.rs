//! A real OAuth 2.0 identity provider on loopback HTTP or HTTPS, small enough
//! to read, strict enough to catch a wrong client. Used by the token-auth
//! tests and by `examples/fake_oauth_provider.rs`.
//!
//! Over TLS ([`FakeProvider::start_tls`], tokio-rustls with the ring
//! provider) it offers HTTP/2 and HTTP/1.1 by ALPN and records which version
//! the back-channel calls (`/token`, `/userinfo`) used.
//!
//! * `GET /authorize?appid&redirect_uri&response_type=code&scope&state&code_challenge&code_challenge_method=S256`
//!   — the "user" approves at once: 302 to `redirect_uri?code=…&state=…`.
//!   appid and redirect_uri must be the registered ones.
//! * `POST /token` (form: appid, secret, code, grant_type=authorization_code,
//!   code_verifier, redirect_uri) — checks the client, the code (single use:
//!   removed on first presentation, whatever happens next) and PKCE
//!   (`BASE64URL(SHA256(code_verifier)) == code_challenge`); answers
//!   `{access_token, openid, refresh_token, expires_in, scope}`.
//! * `GET /userinfo?openid=…` with `Authorization: Bearer <access_token>` —
//!   answers `{openid, nickname, avatar}`.
//!
//! Failures can be switched on to test the client's error handling,
//! including a user who declines at `/authorize` (`error=access_denied`).
//!
//! The example includes this file on its own (`#[path]`), outside
//! `support/mod.rs`, so it carries its own dead-code allowance.
#![allow(dead_code)]

use bytes::Bytes;
use handwire::services::token_auth::oauth::challenge_s256;
use handwire::services::token_auth::oauth::form;
use http::{header, Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The user the provider signs in.
#[derive(Debug, Clone)]
pub struct FakeUser {
    pub openid: String,
    pub nickname: String,
    pub avatar: String,
}

/// A failure to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// `/authorize` sends the user back with `error=access_denied` (the
    /// user declined), keeping the `state`.
    AuthorizeDenied,
    /// `/authorize` answers 200 with a consent page and sends nobody back
    /// (a user still deciding).
    AuthorizeHeld,
    /// `/token` answers 500.
    TokenServerError,
    /// `/token` answers 200 with a WeChat-style error object.
    TokenErrcode,
    /// `/token` answers 200 with a body that is not JSON.
    TokenGarbage,
    /// `/userinfo` answers 500.
    UserinfoServerError,
}

struct IssuedCode {
    challenge: String,
    redirect_uri: String,
    openid: String,
}

struct State {
    appid: String,
    secret: String,
    redirect_uri: Mutex<String>,
    user: Mutex<FakeUser>,
    codes: Mutex<HashMap<String, IssuedCode>>,
    tokens: Mutex<HashMap<String, String>>,
    failure: Mutex<Option<Failure>>,
    token_calls: AtomicUsize,
    userinfo_calls: AtomicUsize,
    backchannel_versions: Mutex<Vec<Version>>,
}

/// A running provider; stops when dropped.
pub struct FakeProvider {
    pub addr: SocketAddr,
    tls: bool,
    state: Arc<State>,
    stop: tokio::sync::oneshot::Sender<()>,
    accept_loop: tokio::task::JoinHandle<()>,
}

fn random_hex(bytes: usize) -> String {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).expect("OS randomness");
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

impl FakeProvider {
    /// Start on `addr` (e.g. `127.0.0.1:0`) for client `appid`/`secret`, plain HTTP.
    pub async fn start(addr: &str, appid: &str, secret: &str, user: FakeUser) -> FakeProvider {
        FakeProvider::serve(addr, appid, secret, user, None).await
    }

    /// Like [`start`](Self::start), but HTTPS with the certificate in `tls`.
    pub async fn start_tls(
        addr: &str,
        appid: &str,
        secret: &str,
        user: FakeUser,
        tls: Arc<rustls::ServerConfig>,
    ) -> FakeProvider {
        FakeProvider::serve(addr, appid, secret, user, Some(tls)).await
    }

    async fn serve(
        addr: &str,
        appid: &str,
        secret: &str,
        user: FakeUser,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> FakeProvider {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("fake provider cannot listen on {addr}: {e}"));
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            appid: appid.into(),
            secret: secret.into(),
            redirect_uri: Mutex::new(String::new()),
            user: Mutex::new(user),
            codes: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            failure: Mutex::new(None),
            token_calls: AtomicUsize::new(0),
            userinfo_calls: AtomicUsize::new(0),
            backchannel_versions: Mutex::new(Vec::new()),
        });
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = Arc::clone(&state);
        let acceptor = tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let accept_loop = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = &mut stopped => break,
                };
                let Ok((stream, _)) = accepted else { continue };
                let state = Arc::clone(&shared);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(handle(&state, req).await) }
                    });
                    let server = auto::Builder::new(TokioExecutor::new());
                    match acceptor {
                        // A client that refuses our certificate ends here.
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                let _ = server.serve_connection(TokioIo::new(stream), svc).await;
                            }
                        }
                        None => {
                            let _ = server.serve_connection(TokioIo::new(stream), svc).await;
                        }
                    }
                });
            }
        });
        FakeProvider {
            addr,
            tls: tls.is_some(),
            state,
            stop,
            accept_loop,
        }
    }

    /// Stop listening; when this returns, new connections are refused.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.accept_loop.await;
    }

    /// Register the client's callback; `/authorize` and `/token` insist on it.
    pub fn register_redirect_uri(&self, uri: &str) {
        *self.state.redirect_uri.lock().unwrap() = uri.to_string();
    }

    /// Change the user signed in from now on.
    pub fn set_user(&self, user: FakeUser) {
        *self.state.user.lock().unwrap() = user;
    }

    /// Inject a failure (or clear it with `None`).
    pub fn fail_with(&self, failure: Option<Failure>) {
        *self.state.failure.lock().unwrap() = failure;
    }

    /// Base URL, e.g. `http://127.0.0.1:9100` (`https://` when serving TLS).
    pub fn base(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// HTTP versions of the `/token` and `/userinfo` requests so far.
    pub fn backchannel_versions(&self) -> Vec<Version> {
        self.state.backchannel_versions.lock().unwrap().clone()
    }

    /// Calls to `/token` so far.
    pub fn token_calls(&self) -> usize {
        self.state.token_calls.load(Ordering::SeqCst)
    }

    /// Calls to `/userinfo` so far.
    pub fn userinfo_calls(&self) -> usize {
        self.state.userinfo_calls.load(Ordering::SeqCst)
    }

    /// The plain access tokens handed out so far.
    pub fn issued_access_tokens(&self) -> Vec<String> {
        self.state.tokens.lock().unwrap().keys().cloned().collect()
    }
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .expect("static response parts")
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response<Full<Bytes>> {
    json(
        status,
        serde_json::json!({ "error": error, "error_description": description }),
    )
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let query = form::parse(parts.uri.query().unwrap_or("")).unwrap_or_default();
    if matches!(parts.uri.path(), "/token" | "/userinfo") {
        state
            .backchannel_versions
            .lock()
            .unwrap()
            .push(parts.version);
    }
    match (parts.method.clone(), parts.uri.path()) {
        (Method::GET, "/authorize") => authorize(state, &query),
        (Method::POST, "/token") => {
            let Ok(body) = Limited::new(body, 16 * 1024).collect().await else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "body");
            };
            let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
            token(state, &form::parse(&text).unwrap_or_default())
        }
        (Method::GET, "/userinfo") => {
            let auth = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            userinfo(state, auth, &query)
        }
        _ => oauth_error(StatusCode::NOT_FOUND, "not_found", "no such endpoint"),
    }
}

fn authorize(state: &State, q: &[(String, String)]) -> Response<Full<Bytes>> {
    let registered = state.redirect_uri.lock().unwrap().clone();
    let checks = [
        (form::get(q, "appid") == Some(&state.appid), "unknown appid"),
        (
            form::get(q, "redirect_uri") == Some(&registered),
            "redirect_uri is not the registered one",
        ),
        (
            form::get(q, "response_type") == Some("code"),
            "response_type must be code",
        ),
        (
            form::get(q, "code_challenge_method") == Some("S256"),
            "PKCE S256 required",
        ),
        (
            form::get(q, "code_challenge").is_some_and(|c| c.len() == 43),
            "code_challenge missing",
        ),
        (
            form::get(q, "scope").is_some_and(|s| !s.is_empty()),
            "scope missing",
        ),
        (
            form::get(q, "state").is_some_and(|s| !s.is_empty()),
            "state missing",
        ),
    ];
    if let Some((_, why)) = checks.iter().find(|(ok, _)| !ok) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", why);
    }
    let state_param = form::get(q, "state").unwrap_or_default();
    match *state.failure.lock().unwrap() {
        Some(Failure::AuthorizeDenied) => {
            let back = form::encode_pairs([("error", "access_denied"), ("state", state_param)]);
            return redirect_back(&registered, &back);
        }
        Some(Failure::AuthorizeHeld) => {
            return Response::builder()
                .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
                .body(Full::new(Bytes::from_static(
                    b"<p>Allow test-app to read your profile?</p>",
                )))
                .expect("static response parts")
        }
        _ => {}
    }
    let code = random_hex(16);
    let openid = state.user.lock().unwrap().openid.clone();
    state.codes.lock().unwrap().insert(
        code.clone(),
        IssuedCode {
            challenge: form::get(q, "code_challenge")
                .unwrap_or_default()
                .to_string(),
            redirect_uri: registered.clone(),
            openid,
        },
    );
    let back = form::encode_pairs([("code", code.as_str()), ("state", state_param)]);
    redirect_back(&registered, &back)
}

/// 302 to the registered `redirect_uri` with `query` added.
fn redirect_back(registered: &str, query: &str) -> Response<Full<Bytes>> {
    let joiner = if registered.contains('?') { '&' } else { '?' };
    Response::builder()
        .status(StatusCode::FOUND)
        .header(header::LOCATION, format!("{registered}{joiner}{query}"))
        .body(Full::new(Bytes::new()))
        .expect("static response parts")
}

fn token(state: &State, f: &[(String, String)]) -> Response<Full<Bytes>> {
    state.token_calls.fetch_add(1, Ordering::SeqCst);
    match *state.failure.lock().unwrap() {
        Some(Failure::TokenServerError) => {
            return oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "down")
        }
        Some(Failure::TokenErrcode) => {
            return json(
                StatusCode::OK,
                serde_json::json!({ "errcode": 40029, "errmsg": "invalid code" }),
            )
        }
        Some(Failure::TokenGarbage) => {
            return Response::new(Full::new(Bytes::from_static(b"<html>oops</html>")))
        }
        _ => {}
    }
    if form::get(f, "grant_type") != Some("authorization_code") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "");
    }
    if form::get(f, "appid") != Some(&state.appid) || form::get(f, "secret") != Some(&state.secret)
    {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "appid/secret");
    }
    // Single use: the code is gone from here on, even if the checks below fail.
    let issued = form::get(f, "code").and_then(|c| state.codes.lock().unwrap().remove(c));
    let Some(issued) = issued else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "unknown or used code",
        );
    };
    if form::get(f, "redirect_uri") != Some(&issued.redirect_uri) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "redirect_uri mismatch",
        );
    }
    let verifier = form::get(f, "code_verifier").unwrap_or_default();
    if challenge_s256(verifier) != issued.challenge {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "PKCE verification failed",
        );
    }
    let access_token = format!("fake-at-{}", random_hex(16));
    state
        .tokens
        .lock()
        .unwrap()
        .insert(access_token.clone(), issued.openid.clone());
    json(
        StatusCode::OK,
        serde_json::json!({
            "access_token": access_token,
            "openid": issued.openid,
            "refresh_token": format!("fake-rt-{}", random_hex(16)),
            "expires_in": 7200,
            "scope": "profile",
        }),
    )
}

fn userinfo(state: &State, auth: Option<&str>, q: &[(String, String)]) -> Response<Full<Bytes>> {
    state.userinfo_calls.fetch_add(1, Ordering::SeqCst);
    if *state.failure.lock().unwrap() == Some(Failure::UserinfoServerError) {
        return oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "down");
    }
    let token = auth.and_then(|a| a.strip_prefix("Bearer ")).unwrap_or("");
    let Some(openid) = state.tokens.lock().unwrap().get(token).cloned() else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "unknown access token",
        );
    };
    if form::get(q, "openid").is_some_and(|asked| asked != openid) {
        return oauth_error(StatusCode::FORBIDDEN, "invalid_request", "openid mismatch");
    }
    let user = state.user.lock().unwrap().clone();
    json(
        StatusCode::OK,
        serde_json::json!({ "openid": openid, "nickname": user.nickname, "avatar": user.avatar }),
    )
}
