//! Cross-origin resource sharing (the Fetch standard's CORS protocol) as a
//! middleware, off unless configured, like gin-contrib/cors or rs/cors.
//!
//! A browser page on another origin may call the server only when the
//! answers say so. Two kinds of request:
//!
//! - **Preflight**: `OPTIONS` with `Origin` and
//!   `Access-Control-Request-Method`, sent by the browser before a request
//!   that is not "simple" (a JSON body, a custom header). Answered here and
//!   now, the chain stops: `204` with `Access-Control-Allow-Origin`,
//!   `-Allow-Methods`, `-Allow-Headers`, `-Max-Age` (and `-Allow-Credentials`)
//!   when the origin, the method and every requested header are allowed;
//!   `204` without them otherwise, which the browser reads as a refusal.
//! - **Actual request** with an `Origin`: the chain runs, then an allowed
//!   origin gets `Access-Control-Allow-Origin` and
//!   `Access-Control-Expose-Headers` (the headers a script may read:
//!   `grpc-status`, `grpc-message`, `grpc-status-details-bin` and
//!   `traceparent`, plus any configured).
//!
//! Every answer carries `Vary: Origin`, since it depends on it, so a cache
//! does not hand one origin's answer to another.
//!
//! Origins match exactly (scheme, host and port as the browser sends them,
//! `https://app.example.com`); `"*"` allows any origin, but never together
//! with credentials (the Fetch standard forbids `*` with cookies, and
//! reflecting any origin with credentials would hand every site the user's
//! session): that combination is a start-up error.
//!
//! Registered before recovery, so a 500 from a panic carries the headers
//! too and the page sees the error rather than a CORS failure.

use std::fmt;
use std::time::Duration;

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS,
    VARY,
};
use http::{HeaderName, Method};
use serde::Deserialize;

/// Headers every allowed origin may read, whatever is configured: the
/// gRPC status of a gRPC-Web call and the trace id.
pub const ALWAYS_EXPOSED: [&str; 4] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "traceparent",
];

/// The CORS settings (the greeter reads them from `server.http.cors`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorsConfig {
    /// Origins allowed, exactly as browsers send them
    /// (`https://app.example.com:8443`), or `"*"` for any.
    pub allowed_origins: Vec<String>,
    /// Methods a preflight may ask for.
    #[serde(default = "default_methods")]
    pub allowed_methods: Vec<String>,
    /// Request headers a preflight may ask for (case-insensitive).
    #[serde(default = "default_headers")]
    pub allowed_headers: Vec<String>,
    /// Response headers scripts may read, besides [`ALWAYS_EXPOSED`].
    #[serde(default)]
    pub exposed_headers: Vec<String>,
    /// How long a browser may cache a preflight answer.
    #[serde(
        default = "default_max_age",
        deserialize_with = "crate::config::duration"
    )]
    pub max_age: Duration,
    /// Whether pages may send cookies and read the answer
    /// (`Access-Control-Allow-Credentials: true`); explicit origins only.
    #[serde(default)]
    pub allow_credentials: bool,
}

fn default_methods() -> Vec<String> {
    ["GET", "POST", "PUT", "PATCH", "DELETE"]
        .map(String::from)
        .to_vec()
}

/// What a JSON API and a gRPC-Web client send beyond the safelisted ones.
fn default_headers() -> Vec<String> {
    [
        "content-type",
        "authorization",
        "x-grpc-web",
        "x-user-agent",
        "grpc-timeout",
        "traceparent",
    ]
    .map(String::from)
    .to_vec()
}

fn default_max_age() -> Duration {
    Duration::from_secs(600)
}

/// A configuration that cannot be served; the message names the key (under
/// the section the service reads it from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsError {
    /// The key below the CORS section (`allowed_origins`).
    pub key: &'static str,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CorsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for CorsError {}

/// The checked settings, with the header values written once.
#[derive(Debug)]
pub struct Cors {
    any_origin: bool,
    origins: Vec<String>,
    methods: Vec<Method>,
    headers: Vec<String>,
    pub(crate) allow_methods: String,
    pub(crate) allow_headers: String,
    pub(crate) expose: String,
    pub(crate) max_age: String,
    pub(crate) credentials: bool,
}

impl Cors {
    /// Checks `config`: at least one origin, each `*` or
    /// `scheme://host[:port]` without path; `*` not with credentials;
    /// methods and headers valid tokens.
    pub fn new(config: &CorsConfig) -> Result<Cors, CorsError> {
        let err = |key, message: String| CorsError { key, message };
        if config.allowed_origins.is_empty() {
            return Err(err(
                "allowed_origins",
                "empty; list the origins allowed (https://app.example.com) or \"*\"".into(),
            ));
        }
        let any_origin = config.allowed_origins.iter().any(|o| o == "*");
        for o in &config.allowed_origins {
            if o != "*" && !is_origin(o) {
                return Err(err(
                    "allowed_origins",
                    format!(
                        "{o:?} is not an origin (scheme://host[:port], no path, no trailing /)"
                    ),
                ));
            }
        }
        if any_origin && config.allow_credentials {
            return Err(err(
                "allow_credentials",
                "true needs explicit allowed_origins; \"*\" with credentials would let \
                 every site act with the user's cookies"
                    .into(),
            ));
        }
        let mut methods = Vec::new();
        for m in &config.allowed_methods {
            let method = Method::from_bytes(m.as_bytes())
                .map_err(|_| err("allowed_methods", format!("{m:?} is not an HTTP method")))?;
            methods.push(method);
        }
        for h in config.allowed_headers.iter().chain(&config.exposed_headers) {
            if http::HeaderName::from_bytes(h.as_bytes()).is_err() {
                let key = if config.allowed_headers.contains(h) {
                    "allowed_headers"
                } else {
                    "exposed_headers"
                };
                return Err(err(key, format!("{h:?} is not a header name")));
            }
        }
        let headers: Vec<String> = config
            .allowed_headers
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        let mut expose: Vec<String> = ALWAYS_EXPOSED.iter().map(|h| h.to_string()).collect();
        for h in &config.exposed_headers {
            let h = h.to_ascii_lowercase();
            if !expose.contains(&h) {
                expose.push(h);
            }
        }
        Ok(Cors {
            any_origin,
            origins: config.allowed_origins.clone(),
            allow_methods: config.allowed_methods.join(", "),
            allow_headers: headers.join(", "),
            methods,
            headers,
            expose: expose.join(", "),
            max_age: config.max_age.as_secs().to_string(),
            credentials: config.allow_credentials,
        })
    }

    /// The `Access-Control-Allow-Origin` value for `origin`, if allowed.
    pub(crate) fn allow_origin<'a>(&self, origin: &'a str) -> Option<&'a str> {
        if self.origins.iter().any(|o| o == origin) {
            Some(origin)
        } else if self.any_origin {
            Some("*")
        } else {
            None
        }
    }

    /// The headers the answer to an actual (not preflight) request from
    /// `origin` gets: `Vary: Origin` always (the answer depends on it, its
    /// absence included, so a shared cache must not hand it to another
    /// origin), and for an allowed origin `Access-Control-Allow-Origin`,
    /// `-Expose-Headers` and, if configured, `-Allow-Credentials`.
    pub fn answer_headers<'a>(&'a self, origin: Option<&'a str>) -> Vec<(HeaderName, &'a str)> {
        let mut headers = vec![(VARY, "Origin")];
        let Some(allowed) = origin.and_then(|o| self.allow_origin(o)) else {
            return headers;
        };
        headers.push((ACCESS_CONTROL_ALLOW_ORIGIN, allowed));
        headers.push((ACCESS_CONTROL_EXPOSE_HEADERS, self.expose.as_str()));
        if self.credentials {
            headers.push((ACCESS_CONTROL_ALLOW_CREDENTIALS, "true"));
        }
        headers
    }

    /// Whether a preflight asking for `method` and `headers` (the
    /// comma-separated `Access-Control-Request-Headers`) may go ahead.
    pub(crate) fn preflight_allows(&self, method: &str, headers: &str) -> bool {
        let method_ok = self.methods.iter().any(|m| m.as_str() == method);
        let headers_ok = headers
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .all(|h| self.headers.iter().any(|a| a.eq_ignore_ascii_case(h)));
        method_ok && headers_ok
    }
}

/// `scheme://host[:port]`, nothing after: what a browser's `Origin` holds.
fn is_origin(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let scheme_ok = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host_ok = !rest.is_empty()
        && !rest.contains(['/', '?', '#', ' ', '@'])
        && rest.parse::<http::uri::Authority>().is_ok();
    scheme_ok && host_ok
}

#[cfg(test)]
mod tests;
