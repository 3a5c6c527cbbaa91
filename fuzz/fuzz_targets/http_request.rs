//! Whole requests: arbitrary bytes as one HTTP/1.1 connection, served by
//! hyper and the router-demo's engine over an in-memory stream. Any answer
//! (or a closed connection) is fine; a panic, a hang or a 5xx other than a
//! deliberate one is not.
#![no_main]
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use handwire::services::router_demo::{self, DemoOptions};
use handwire::web::App;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fn app() -> &'static Arc<App> {
    static APP: OnceLock<Arc<App>> = OnceLock::new();
    APP.get_or_init(|| {
        router_demo::engine(DemoOptions::default())
            .expect("demo routes")
            .build()
    })
}

fuzz_target!(|data: &[u8]| {
    let app = app().clone();
    runtime().block_on(async move {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let remote: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let service = hyper::service::service_fn(move |req| {
            let fut = app.handle(req, remote);
            async move { Ok::<_, std::convert::Infallible>(fut.await) }
        });
        let conn = http1::Builder::new().serve_connection(TokioIo::new(server), service);
        let serve = tokio::spawn(conn);
        let _ = client.write_all(data).await;
        let _ = client.shutdown().await;
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(2), client.read_to_end(&mut answer)).await;
        assert!(read.is_ok(), "the connection hung on {} input bytes", data.len());
        // The engine's own answers are never 5xx for bad input.
        for status in answer.windows(12).filter(|w| w.starts_with(b"HTTP/1.1 5")) {
            panic!("5xx answer: {:?}", String::from_utf8_lossy(status));
        }
        serve.abort();
    });
});
