//! The load-test peer: the same accept loop, but no router, no chain and no
//! middleware — every request gets "Hello World!" straight from a `Service`.
//! `load/load.sh` compares `router-demo`'s `/hello` against it (and against
//! axum); the ratio to this one is the cost of the hand-written routing,
//! chain, logger and recovery.
//!
//! `cargo run --release --example bare_hyper -- 127.0.0.1:8001`

use std::sync::Arc;

use handwire::types::{self, Body, BoxFuture};
use handwire::web::server::{self, Caller, Options, Service};
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Request, Response};
use hyper::body::Incoming;

struct Hello;

impl Service for Hello {
    fn call(&self, _req: Request<Incoming>, _caller: Caller) -> BoxFuture<'static, Response<Body>> {
        Box::pin(async {
            let mut resp = Response::new(types::full("Hello World!"));
            resp.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            resp
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8001".into());
    let listener = server::bind(&addr).await?;
    println!("bare hyper listening on http://{}", listener.local_addr()?);
    server::serve(
        listener,
        Arc::new(Hello),
        Options::default(),
        server::shutdown_signal(),
    )
    .await?;
    Ok(())
}
