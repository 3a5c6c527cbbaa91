//! Test support: start a real server on 127.0.0.1:0 and talk to it with a
//! real hyper client over HTTP/1.1 or HTTP/2 (prior knowledge).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use handwire::web::server::{self, Options, Service};

/// A running server; dropping it asks it to shut down.
pub struct TestServer {
    pub addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn start(app: Arc<dyn Service>) -> TestServer {
    start_with(app, Options::default()).await
}

pub async fn start_with(app: Arc<dyn Service>, opts: Options) -> TestServer {
    let listener = server::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = server::serve(listener, app, opts, async {
            let _ = rx.await;
        })
        .await;
    });
    TestServer { addr, _stop: tx }
}

/// Which HTTP version the client speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Proto {
    H1,
    H2,
}

pub const BOTH: [Proto; 2] = [Proto::H1, Proto::H2];

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub version: http::Version,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Send one request and read the whole reply.
pub async fn send(
    proto: Proto,
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    let mut builder = Client::builder(TokioExecutor::new());
    if proto == Proto::H2 {
        builder.http2_only(true);
    }
    let client: Client<_, Full<Bytes>> = builder.build_http();
    let mut req = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(body.into())).unwrap();
    let resp = client.request(req).await.expect("request failed");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("read body").to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
        version: parts.version,
    }
}

pub async fn get(proto: Proto, addr: SocketAddr, path: &str) -> Reply {
    send(proto, addr, Method::GET, path, &[], Bytes::new()).await
}
