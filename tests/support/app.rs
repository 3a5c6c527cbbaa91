//! Start any framework app (a [`Service`]) on 127.0.0.1:0, for the tests of
//! the framework itself and of the router demo.

use std::net::SocketAddr;
use std::sync::Arc;

use handwire::server::{self, Options, Service};

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
