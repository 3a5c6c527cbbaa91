//! A fake captcha provider on loopback HTTP, in the shape hCaptcha and
//! Cloudflare Turnstile share, strict enough to catch a wrong client. Used by
//! the token-auth captcha tests and by `examples/fake_captcha_provider.rs`.
//!
//! * `POST /solve` (form: `hostname`, `action`, both optional; defaults
//!   `localhost` and `login`) — the "widget": a person solved the challenge;
//!   answers `{"token": "…"}`, a fresh single-use token.
//! * `POST /siteverify` (form: `secret`, `response`, `remoteip`) — answers
//!   `{"success": true, "challenge_ts", "hostname", "action", "error-codes": []}`
//!   for a token it issued and nobody verified yet; else `success: false`
//!   with the providers' error codes: `missing-input-secret`,
//!   `invalid-input-secret`, `missing-input-response`,
//!   `invalid-input-response`, `timeout-or-duplicate`. The form must be
//!   `application/x-www-form-urlencoded`, as the providers require.
//!
//! An outage can be switched on ([`FakeCaptcha::set_outage`]): siteverify
//! then answers 500. [`FakeCaptcha::set_answer`] makes siteverify answer a
//! given body instead, as a broken or hostile provider would.
//!
//! The example includes this file on its own (`#[path]`), outside
//! `support/mod.rs`, so it carries its own dead-code allowance.
#![allow(dead_code)]

use bytes::Bytes;
use handwire::services::token_auth::oauth::form;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One siteverify call as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyCall {
    pub secret: Option<String>,
    pub response: Option<String>,
    pub remoteip: Option<String>,
}

/// What a token was issued for, and whether it was verified already.
struct Issued {
    hostname: String,
    action: String,
    spent: bool,
}

struct State {
    secret: String,
    tokens: Mutex<HashMap<String, Issued>>,
    calls: Mutex<Vec<VerifyCall>>,
    outage: AtomicBool,
    answer: Mutex<Option<String>>,
}

/// A running fake provider; stops when dropped.
pub struct FakeCaptcha {
    pub addr: SocketAddr,
    state: Arc<State>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn random_hex(bytes: usize) -> String {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).expect("OS randomness");
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

impl FakeCaptcha {
    /// Start on `addr` (e.g. `127.0.0.1:0`), accepting the site `secret`.
    pub async fn start(addr: &str, secret: &str) -> FakeCaptcha {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("fake captcha provider cannot listen on {addr}: {e}"));
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            secret: secret.into(),
            tokens: Mutex::new(HashMap::new()),
            calls: Mutex::new(Vec::new()),
            outage: AtomicBool::new(false),
            answer: Mutex::new(None),
        });
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = &mut stopped => break,
                };
                let Ok((stream, _)) = accepted else { continue };
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(handle(&state, req).await) }
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        FakeCaptcha {
            addr,
            state,
            _stop: stop,
        }
    }

    /// The verify URL to configure, e.g. `http://127.0.0.1:9300/siteverify`.
    pub fn verify_url(&self) -> String {
        format!("http://{}/siteverify", self.addr)
    }

    /// A fresh token, as the widget gives a person who solved the challenge
    /// on `hostname` for `action`.
    pub fn solve(&self, hostname: &str, action: &str) -> String {
        issue(&self.state, hostname, action)
    }

    /// Answer siteverify with 500 from now on (`true`) or normally again.
    pub fn set_outage(&self, on: bool) {
        self.state.outage.store(on, Ordering::SeqCst);
    }

    /// Answer siteverify with `body` (200, JSON) from now on, or normally
    /// again (`None`).
    pub fn set_answer(&self, body: Option<&str>) {
        *self.state.answer.lock().unwrap() = body.map(str::to_string);
    }

    /// Every siteverify call received so far.
    pub fn calls(&self) -> Vec<VerifyCall> {
        self.state.calls.lock().unwrap().clone()
    }
}

fn issue(state: &State, hostname: &str, action: &str) -> String {
    let token = format!("fake-{}", random_hex(16));
    state.tokens.lock().unwrap().insert(
        token.clone(),
        Issued {
            hostname: hostname.into(),
            action: action.into(),
            spent: false,
        },
    );
    token
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .expect("response")
}

fn failure(code: &str) -> Response<Full<Bytes>> {
    json(
        StatusCode::OK,
        serde_json::json!({ "success": false, "error-codes": [code] }),
    )
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let form_encoded = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let route = (req.method().clone(), req.uri().path().to_string());
    let body = match Limited::new(req.into_body(), 16 * 1024).collect().await {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        Err(_) => return json(StatusCode::BAD_REQUEST, serde_json::json!({})),
    };
    let pairs = form::parse(&body).unwrap_or_default();
    let field = |k: &str| form::get(&pairs, k).map(str::to_string);
    match (route.0, route.1.as_str()) {
        (Method::POST, "/solve") => {
            let hostname = field("hostname").unwrap_or_else(|| "localhost".into());
            let action = field("action").unwrap_or_else(|| "login".into());
            let token = issue(state, &hostname, &action);
            json(StatusCode::OK, serde_json::json!({ "token": token }))
        }
        (Method::POST, "/siteverify") => {
            let call = VerifyCall {
                secret: field("secret"),
                response: field("response"),
                remoteip: field("remoteip"),
            };
            state.calls.lock().unwrap().push(call.clone());
            if state.outage.load(Ordering::SeqCst) {
                return json(StatusCode::INTERNAL_SERVER_ERROR, serde_json::json!({}));
            }
            if let Some(body) = state.answer.lock().unwrap().clone() {
                return Response::builder()
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .expect("response");
            }
            if !form_encoded {
                return failure("bad-request");
            }
            match call.secret.as_deref() {
                None | Some("") => return failure("missing-input-secret"),
                Some(s) if s != state.secret => return failure("invalid-input-secret"),
                Some(_) => {}
            }
            let Some(response) = call.response.filter(|r| !r.is_empty()) else {
                return failure("missing-input-response");
            };
            let mut tokens = state.tokens.lock().unwrap();
            let Some(issued) = tokens.get_mut(&response) else {
                return failure("invalid-input-response");
            };
            if issued.spent {
                return failure("timeout-or-duplicate");
            }
            issued.spent = true;
            json(
                StatusCode::OK,
                serde_json::json!({
                    "success": true,
                    "challenge_ts": "2026-01-01T00:00:00Z",
                    "hostname": issued.hostname,
                    "action": issued.action,
                    "error-codes": [],
                }),
            )
        }
        _ => json(StatusCode::NOT_FOUND, serde_json::json!({})),
    }
}
