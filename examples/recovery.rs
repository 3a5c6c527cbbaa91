//! Recovery: a panicking handler under three engines.
//!
//! 1. `Engine::new()` = logger, then recovery, then the routes. The panic
//!    becomes a 500 with an empty body (what the handler wrote before it
//!    panicked is discarded); recovery logs a `[recovery]` line and the
//!    logger, which wraps recovery, logs the request with its 500. The
//!    trace (`--trace` in the binaries) shows who did what.
//! 2. `Engine::bare()` = no middleware at all. Nothing catches the panic:
//!    the connection is dropped without an answer and the engine logs
//!    nothing. The server itself goes on: the next request is answered.
//! 3. Recovery *before* the logger: the panic unwinds through the logger's
//!    `next()`, so its code after `next()`, which writes the log line, never
//!    runs. The client gets its 500 and the log has no line for it. This is
//!    why the logger comes first.
//!
//! Each panic also makes Rust's panic hook print `thread '…' panicked at …`
//! on stderr: that is the runtime, not the engine, and it happens with or
//! without recovery. The output below is stdout.
//!
//! `cargo run --example recovery`

#[path = "support/mod.rs"]
mod support;

use handwire::web::middleware;
use handwire::web::Engine;
use handwire::web::{named, Handler};
use http::StatusCode;

fn boom() -> Handler {
    named("boom", |c| {
        Box::pin(async move {
            c.string(StatusCode::OK, "half an answer");
            panic!("boom went off");
        })
    })
}

fn fine() -> Handler {
    named("fine", |c| {
        Box::pin(async move { c.string(StatusCode::OK, "still serving") })
    })
}

#[tokio::main]
async fn main() {
    println!("== 1. Engine::new(): logger, recovery (traced)\n");
    let mut e = Engine::new();
    e.trace(true);
    e.get("/boom", boom()).expect("route registers");
    support::serve_and_send(e, &["GET /boom"]).await;

    println!("== 2. Engine::bare(): no recovery, no logger\n");
    let mut e = Engine::bare();
    e.get("/boom", boom()).expect("route registers");
    e.get("/fine", fine()).expect("route registers");
    support::serve_and_send(e, &["GET /boom", "GET /fine"]).await;

    println!("== 3. recovery before the logger: the 500 is not logged\n");
    let mut e = Engine::bare();
    e.use_middleware(middleware::recovery());
    e.use_middleware(middleware::logger());
    e.get("/boom", boom()).expect("route registers");
    e.get("/fine", fine()).expect("route registers");
    support::serve_and_send(e, &["GET /boom", "GET /fine"]).await;
}
