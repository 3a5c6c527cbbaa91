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
use http::{Request, StatusCode};
use http_body_util::Empty;

#[path = "../benches/support/chain.rs"]
mod chain;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let app = chain::index_app(false);
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
