//! Shared by the examples: serve an app on 127.0.0.1:0, send one GET, print
//! the answer, stop.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use handwire::web::engine::Engine;
use handwire::web::server::{self, Options};

/// Serve `engine`, request each of `paths` once and print status and body.
pub async fn serve_and_get(engine: Engine, paths: &[&str]) {
    let listener = server::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(
        listener,
        engine.build(),
        Options::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    for path in paths {
        println!("--> GET {path}");
        let uri = format!("http://{addr}{path}").parse().expect("uri");
        match client.get(uri).await {
            Ok(resp) => {
                let status = resp.status();
                let body = resp
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                println!("<-- {status} {:?}\n", String::from_utf8_lossy(&body));
            }
            Err(e) => println!("<-- error: {e}\n"),
        }
    }
    let _ = stop.send(());
    let _ = server.await;
}
