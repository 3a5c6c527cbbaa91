//! The one HTTP client of the tests: a real hyper client that sends one
//! request over HTTP/1.1 or HTTP/2 (prior knowledge on plain TCP, ALPN over
//! TLS) and reads the whole reply into a [`Reply`].
//!
//! [`Client`] carries the few ways tests differ in how they connect: the
//! HTTP version, a loopback source address (to play a different client IP),
//! and the roots to trust for `https://` URLs (a test CA). [`send`] and
//! [`get`] are shorthands for "this path on this loopback server".

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::TokioExecutor;
use rustls::RootCertStore;

/// Which HTTP version the client speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Proto {
    H1,
    H2,
}

/// Both versions, for tests that must hold over each.
pub const BOTH: [Proto; 2] = [Proto::H1, Proto::H2];

/// A reply, fully read.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub version: Version,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics, showing the body, if it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `error` member of a JSON body.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The string member `key` of a JSON body; panics if there is none.
    pub fn str(&self, key: &str) -> String {
        self.json()[key]
            .as_str()
            .unwrap_or_else(|| panic!("no string {key:?} in {}", self.text()))
            .to_string()
    }
}

/// How to connect: HTTP version, source address, trusted roots for https.
#[derive(Clone, Debug)]
pub struct Client {
    proto: Proto,
    from: Option<IpAddr>,
    roots: Option<RootCertStore>,
}

impl Client {
    /// Plain HTTP in version `proto`, from the default source address.
    pub fn new(proto: Proto) -> Client {
        Client {
            proto,
            from: None,
            roots: None,
        }
    }

    /// Connect from the loopback address `from` (`None`: let the OS choose).
    pub fn from(mut self, from: Option<IpAddr>) -> Client {
        self.from = from;
        self
    }

    /// Allow `https://` URLs, trusting only `roots` (`http://` still works).
    pub fn trusting(mut self, roots: RootCertStore) -> Client {
        self.roots = Some(roots);
        self
    }

    /// Send one request to `url` and read the whole reply; panics when the
    /// server cannot be reached.
    pub async fn request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        self.try_request(method, url, headers, body)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`request`](Self::request), with a failure to connect or to read the
    /// reply as an error (for tests that kill the server under load).
    pub async fn try_request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Result<Reply, String> {
        let mut req = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(body.into())).expect("request");

        let mut tcp = HttpConnector::new();
        tcp.set_local_address(self.from);
        let Some(roots) = &self.roots else {
            return self.exchange(tcp, req).await;
        };
        tcp.enforce_http(false);
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http();
        // ALPN offers only the version asked for.
        let https = match self.proto {
            Proto::H1 => https.enable_http1().wrap_connector(tcp),
            Proto::H2 => https.enable_http2().wrap_connector(tcp),
        };
        self.exchange(https, req).await
    }

    async fn exchange<C>(&self, connector: C, req: Request<Full<Bytes>>) -> Result<Reply, String>
    where
        C: Connect + Clone + Send + Sync + 'static,
    {
        let url = req.uri().to_string();
        let mut builder = hyper_util::client::legacy::Client::builder(TokioExecutor::new());
        if self.proto == Proto::H2 {
            builder.http2_only(true);
        }
        let client = builder.build::<_, Full<Bytes>>(connector);
        let resp = client
            .request(req)
            .await
            .map_err(|e| format!("request to {url} failed: {e}"))?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("reading the reply from {url} failed: {e}"))?
            .to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
            version: parts.version,
        })
    }
}

/// Send `method path` to the loopback server at `addr` over `proto`.
pub async fn send(
    proto: Proto,
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    Client::new(proto)
        .request(method, &format!("http://{addr}{path}"), headers, body)
        .await
}

/// `GET path` from the loopback server at `addr` over `proto`.
pub async fn get(proto: Proto, addr: SocketAddr, path: &str) -> Reply {
    send(proto, addr, Method::GET, path, &[], Bytes::new()).await
}
