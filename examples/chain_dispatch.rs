//! Dispatch `N` requests (default 100,000) through a five-handler chain with
//! tracing off, for counting instructions with valgrind, which repeats to
//! the instruction whatever else the machine does:
//!
//! ```text
//! cargo build --release --example chain_dispatch
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/chain_dispatch 100000
//! ```
//!
//! This is how the README's "tracing off costs N instructions per request"
//! was measured (against the same program built without the trace branch).

use std::net::SocketAddr;

use bytes::Bytes;
use handwire::web::chain::named;
use handwire::web::engine::Engine;
use handwire::web::middleware;
use http::{Request, StatusCode};
use http_body_util::Empty;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let mut e = Engine::bare();
    e.use_middleware(named("recovery", middleware::recovery));
    e.use_middleware(named("global_middleware", |c| {
        Box::pin(async move {
            c.set("middle", "value");
            c.next().await;
        })
    }));
    e.handle(
        http::Method::GET,
        "/index",
        vec![
            named("token_check", |c| {
                Box::pin(async move {
                    if c.header("token").is_none() {
                        c.abort_with_status(StatusCode::FORBIDDEN);
                        return;
                    }
                    c.next().await;
                })
            }),
            named("index_handler", |c| {
                Box::pin(async move { c.string(StatusCode::OK, "welcome") })
            }),
        ],
    )
    .expect("route");
    let app = e.build();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let remote: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let mut ok = 0;
    for _ in 0..n {
        let req = Request::get("/index")
            .header("token", "x")
            .body(Empty::<Bytes>::new())
            .expect("request");
        if rt.block_on(app.handle(req, remote)).status() == StatusCode::OK {
            ok += 1;
        }
    }
    println!("{ok} of {n} requests answered 200");
}
