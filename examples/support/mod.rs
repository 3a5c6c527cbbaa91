//! Shared by the study examples: serve an app on 127.0.0.1:0, send each
//! request once, print what came back, stop.
//!
//! A request is written as it would be on the wire, `"GET /v1/login"` or
//! `"POST /v2/login"` (any method; a bare path means GET). The answer is
//! printed as `<-- STATUS "BODY"`, with the `Allow` and `Location` headers
//! when there are any: they are part of what the routing examples show.
//! Before each answer is printed, the log lines the engine wrote for that
//! request (the request log, recovery, `--trace`) are flushed, so they
//! appear in the order they happened.
//!
//! With `HANDWIRE_WALK_SVG=FILE` the example also writes its requests'
//! walks of the chain, drawn as `/debug/walks` draws them, to FILE as one
//! SVG: the pictures in `docs/walks/`, which `make demo` makes again and
//! compares.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, LOCATION};
use http::{Method, Request};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use handwire::ops::log;
use handwire::server::{self, Options};
use handwire::web::{DebugPages, Engine};

/// Serve `engine`, send each of `requests` (`"METHOD /path"`) once and
/// print status, body and the routing headers.
pub async fn serve_and_send(mut engine: Engine, requests: &[&str]) {
    let walks = std::env::var_os("HANDWIRE_WALK_SVG");
    if walks.is_some() {
        engine.debug_pages(DebugPages::default());
    }
    let app = engine.build();
    let listener = server::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(
        listener,
        app.clone(),
        Options::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    for request in requests {
        let (method, path) = match request.split_once(' ') {
            Some((method, path)) => (method, path),
            None => ("GET", *request),
        };
        println!("--> {method} {path}");
        let req = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).expect("method"))
            .uri(format!("http://{addr}{path}"))
            .body(Empty::new())
            .expect("request");
        let answer = client.request(req).await;
        // The engine logged before it answered; let those lines out first.
        log::stdout().flush(Duration::from_secs(1));
        match answer {
            Ok(resp) => {
                let status = resp.status();
                let mut headers = String::new();
                for (name, label) in [(ALLOW, "Allow"), (LOCATION, "Location")] {
                    if let Some(value) = resp.headers().get(name) {
                        let value = value.to_str().unwrap_or("?");
                        headers.push_str(&format!(" ({label}: {value})"));
                    }
                }
                let body = resp
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let body = String::from_utf8_lossy(&body);
                println!("<-- {status} {body:?}{headers}\n");
            }
            Err(e) => println!("<-- no answer: {e}\n"),
        }
    }
    let _ = stop.send(());
    let _ = server.await;
    if let (Some(path), Some(svg)) = (walks, app.walks_svg()) {
        std::fs::write(&path, svg).expect("write HANDWIRE_WALK_SVG");
    }
}
