//! `next()` after `abort()` runs nothing: abort moves the chain's index past
//! the end, and `next()` only runs the handlers between the index and the
//! end. So a guard that aborts and then, by mistake, still calls `next()`
//! does not let the handler run; its own code after `next()` runs at once.
//! `is_aborted()` tells a middleware whether the chain was stopped.
//!
//! `cargo run --example next_after_abort`

#[path = "support/mod.rs"]
mod support;

use handwire::web::handler;
use handwire::web::Engine;
use http::StatusCode;

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.handle(
        http::Method::GET,
        "/",
        vec![
            handler(|c| {
                Box::pin(async move {
                    println!("    guard: abort()");
                    c.abort_with_status(StatusCode::UNAUTHORIZED);
                    println!("    guard: next() after abort()...");
                    c.next().await;
                    println!(
                        "    guard: ...returned at once, is_aborted() = {}",
                        c.is_aborted()
                    );
                })
            }),
            handler(|c| {
                Box::pin(async move {
                    println!("    handler: runs (this line must not appear)");
                    c.string(StatusCode::OK, "secret");
                })
            }),
        ],
    )
    .expect("route registers");
    println!("A guard aborts with 401, then calls next(): the handler still does not run.\n");
    support::serve_and_send(e, &["GET /"]).await;
}
