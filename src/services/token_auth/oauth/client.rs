//! Outbound calls to an identity provider: code exchange and user info.
//!
//! Built on hyper-util's pooled client with a rustls connector: `https://`
//! endpoints are certificate-checked against the roots the provider's config
//! trusts (see [`crate::services::token_auth::trust`]) and negotiate HTTP/2 or HTTP/1.1 by ALPN;
//! plain `http://` stays possible for local providers. A refused certificate
//! is its own error, [`ProviderError::Untrusted`], so the log says what to fix.
//!
//! Every call has a deadline and a cap on the response size, because a slow
//! or hostile provider must not hold a request of ours open forever or fill
//! our memory. Answers are checked before use: the identifiers we will store
//! must be present and fit the schema, and an error reported inside a 200
//! body (WeChat style `{"errcode":…,"errmsg":…}`) counts as an error.
//!
//! Wire format (WeChat-like, plus PKCE):
//! * token: `POST token_url` form `appid, secret, code, grant_type=authorization_code,
//!   code_verifier, redirect_uri` → JSON `{access_token, openid, refresh_token?, expires_in?}`
//! * user info: `GET userinfo_url?openid=…` with `Authorization: Bearer <access_token>`
//!   (kept out of the URL, where logs would keep it) → JSON `{openid?, nickname, avatar}`

use crate::services::token_auth::config::ProviderConfig;
use crate::services::token_auth::oauth::form;
use crate::web::bind::StrictValue;
use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::{CertificateError, ClientConfig, RootCertStore};
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Deadline for one provider call, connect to last body byte.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest provider response read.
pub const MAX_RESPONSE: usize = 64 * 1024;
/// Longest provider token kept.
const MAX_TOKEN: usize = 4096;

/// How a provider call failed. All of these become 502 for our client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// No connection, or the connection broke.
    Unreachable(String),
    /// The provider's TLS certificate was refused (unknown CA, wrong host
    /// name, expired…).
    Untrusted(String),
    /// No complete answer within [`CALL_TIMEOUT`].
    Timeout,
    /// A non-success HTTP status.
    Status(u16, String),
    /// The provider answered with an error object.
    Refused(String),
    /// The answer is not what the protocol promises.
    BadResponse(String),
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderError::Unreachable(e) => write!(f, "provider unreachable: {e}"),
            ProviderError::Untrusted(e) => write!(f, "provider TLS certificate not trusted: {e}"),
            ProviderError::Timeout => write!(f, "provider did not answer within {CALL_TIMEOUT:?}"),
            ProviderError::Status(code, detail) => {
                write!(f, "provider answered HTTP {code}{detail}")
            }
            ProviderError::Refused(e) => write!(f, "provider refused: {e}"),
            ProviderError::BadResponse(e) => write!(f, "provider sent an unusable answer: {e}"),
        }
    }
}

impl std::error::Error for ProviderError {}

/// Tokens from a successful code exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderTokens {
    /// Provider access token.
    pub access_token: String,
    /// The user's id at the provider, when the token answer carries it.
    pub openid: Option<String>,
    /// Provider refresh token, if any.
    pub refresh_token: Option<String>,
    /// Lifetime of the access token, seconds, if given.
    pub expires_in: Option<u64>,
}

/// The profile the provider reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user's id at the provider (`openid`, `sub` or `id`), if reported.
    pub openid: Option<String>,
    /// Display name.
    pub nickname: Option<String>,
    /// Avatar address.
    pub avatar: Option<String>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    openid: Option<String>,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
    #[serde(flatten)]
    error: ErrorFields,
}

#[derive(Deserialize)]
struct InfoAnswer {
    #[serde(alias = "sub", default, deserialize_with = "string_or_number")]
    openid: Option<String>,
    #[serde(default, deserialize_with = "string_or_number")]
    id: Option<String>,
    #[serde(alias = "name")]
    nickname: Option<String>,
    #[serde(alias = "headimgurl", alias = "avatar_url", alias = "picture")]
    avatar: Option<String>,
    #[serde(flatten)]
    error: ErrorFields,
}

/// Error members used by WeChat (`errcode`/`errmsg`) and RFC 6749 (`error`).
#[derive(Deserialize, Default)]
struct ErrorFields {
    errcode: Option<i64>,
    errmsg: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

impl ErrorFields {
    fn message(&self) -> Option<String> {
        if let Some(code) = self.errcode.filter(|&c| c != 0) {
            return Some(format!(
                "errcode {code}: {}",
                self.errmsg.as_deref().unwrap_or("")
            ));
        }
        let error = self.error.as_deref()?;
        Some(match &self.error_description {
            Some(d) => format!("{error}: {d}"),
            None => error.to_owned(),
        })
    }
}

fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(d)?;
    Ok(match value {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    })
}

/// HTTP(S) client for one provider; cheap to clone (shares the connection pool).
#[derive(Clone, Debug)]
pub struct ProviderClient {
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl ProviderClient {
    /// A client with its own connection pool that trusts `roots` for
    /// `https://` (certificate and host name are always verified) and also
    /// speaks plain `http://`.
    pub fn new(roots: RootCertStore) -> ProviderClient {
        // The ring provider is named explicitly rather than taken from the
        // process default, so the choice cannot depend on crate features.
        let tls =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("the ring provider supports rustls' default protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
        let mut tcp = HttpConnector::new();
        tcp.set_connect_timeout(Some(CALL_TIMEOUT));
        // The HTTPS connector decides by scheme; the TCP one must not refuse https.
        tcp.enforce_http(false);
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(tcp);
        ProviderClient {
            http: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Exchange an authorization `code` (with its PKCE verifier) for tokens.
    pub async fn exchange_code(
        &self,
        provider: &ProviderConfig,
        code: &str,
        code_verifier: &str,
    ) -> Result<ProviderTokens, ProviderError> {
        let body = form::encode_pairs([
            ("appid", provider.appid.as_str()),
            ("secret", provider.secret.as_str()),
            ("code", code),
            ("grant_type", "authorization_code"),
            ("code_verifier", code_verifier),
            ("redirect_uri", provider.redirect_uri.as_str()),
        ]);
        let request = Request::builder()
            .method(Method::POST)
            .uri(provider.token_url.as_str())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ProviderError::BadResponse(format!("token_url: {e}")))?;
        let answer: TokenAnswer = self.call(request).await?;
        if let Some(message) = answer.error.message() {
            return Err(ProviderError::Refused(message));
        }
        let access_token = answer
            .access_token
            .filter(|t| !t.is_empty() && t.len() <= MAX_TOKEN)
            .ok_or_else(|| ProviderError::BadResponse("no usable access_token".into()))?;
        let refresh_token = answer
            .refresh_token
            .filter(|t| !t.is_empty() && t.len() <= MAX_TOKEN);
        Ok(ProviderTokens {
            access_token,
            openid: answer.openid,
            refresh_token,
            expires_in: answer.expires_in,
        })
    }

    /// Read the profile of the user `tokens` belong to.
    pub async fn user_info(
        &self,
        provider: &ProviderConfig,
        tokens: &ProviderTokens,
    ) -> Result<UserInfo, ProviderError> {
        let mut url = provider.userinfo_url.clone();
        if let Some(openid) = &tokens.openid {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&form::encode_pairs([("openid", openid.as_str())]));
        }
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(
                header::AUTHORIZATION,
                format!("Bearer {}", tokens.access_token),
            )
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| ProviderError::BadResponse(format!("userinfo_url: {e}")))?;
        let answer: InfoAnswer = self.call(request).await?;
        if let Some(message) = answer.error.message() {
            return Err(ProviderError::Refused(message));
        }
        Ok(UserInfo {
            openid: answer.openid.or(answer.id),
            nickname: answer.nickname,
            avatar: answer.avatar,
        })
    }

    /// `POST url` with the form `body`, and the JSON object of a 2xx answer,
    /// within the same deadline and size cap: for the other form-posting
    /// verifier the service calls (a captcha provider's siteverify).
    pub(crate) async fn post_form<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        body: String,
    ) -> Result<T, ProviderError> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ProviderError::BadResponse(format!("{url}: {e}")))?;
        self.call(request).await
    }

    /// Send `request` and parse a JSON object from a 2xx answer, all within the deadline.
    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<T, ProviderError> {
        let exchange = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| connect_error(&e))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_RESPONSE)
                .collect()
                .await
                .map_err(|e| ProviderError::BadResponse(format!("reading body: {e}")))?
                .to_bytes();
            Ok::<_, ProviderError>((status, body))
        };
        let (status, body) = tokio::time::timeout(CALL_TIMEOUT, exchange)
            .await
            .map_err(|_| ProviderError::Timeout)??;
        if !status.is_success() {
            return Err(status_error(status, &body));
        }
        // A key given twice (`{"success":false,"success":true}`) has no one
        // meaning: refused, not read last-wins as serde_json would.
        let StrictValue(value) = serde_json::from_slice(&body).map_err(|e| {
            let why = if e.is_data() {
                format!(": {e}")
            } else {
                String::new()
            };
            ProviderError::BadResponse(format!("body is not JSON{why}"))
        })?;
        if !value.is_object() {
            return Err(ProviderError::BadResponse(
                "body is not a JSON object".into(),
            ));
        }
        serde_json::from_value(value).map_err(|e| ProviderError::BadResponse(e.to_string()))
    }
}

/// A status error, with the provider's own error message when it sent one.
fn status_error(status: StatusCode, body: &[u8]) -> ProviderError {
    let detail = serde_json::from_slice::<ErrorFields>(body)
        .ok()
        .and_then(|e| e.message())
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    ProviderError::Status(status.as_u16(), detail)
}

/// A failed request: [`ProviderError::Untrusted`] when rustls refused the
/// provider's certificate, otherwise [`ProviderError::Unreachable`].
fn connect_error(e: &(dyn std::error::Error + 'static)) -> ProviderError {
    match tls_error(e) {
        Some(tls @ rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
            ProviderError::Untrusted(format!(
                "{tls} (a private CA belongs in the provider's ca_file)"
            ))
        }
        Some(tls @ rustls::Error::InvalidCertificate(_)) => {
            ProviderError::Untrusted(tls.to_string())
        }
        _ => ProviderError::Unreachable(error_chain(e)),
    }
}

/// The rustls error behind `e`, if any. The TLS stream reports it wrapped in
/// `io::Error`s, whose `source()` skips the wrapped error itself, so those
/// are opened with `get_ref()`.
fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// `e` and its sources, joined, so "connection refused" is not lost behind
/// "client error (Connect)".
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
