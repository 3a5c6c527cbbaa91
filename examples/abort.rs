//! Abort: a guard stops the chain, but its own remaining code still runs,
//! and the middleware that wrapped it still finishes. With nothing written,
//! an aborted request answers 200 with an empty body.
//!
//! `cargo run --example abort`

#[path = "support/mod.rs"]
mod support;

use handwire::web::handler;
use handwire::web::Engine;
use http::StatusCode;
use serde_json::json;

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.use_middleware(handler(|c| {
        Box::pin(async move {
            println!("    outer: before next()");
            c.next().await;
            println!("    outer: after next(), aborted = {}", c.is_aborted());
        })
    }));
    let guard = |deny_with_json: bool| {
        handler(move |c| {
            Box::pin(async move {
                if c.query("pass").is_none() {
                    println!("    guard: no ?pass, aborting");
                    if deny_with_json {
                        c.abort_with_json(StatusCode::FORBIDDEN, json!({"msg": "denied"}));
                    } else {
                        c.abort();
                    }
                    println!("    guard: still running after abort()");
                    return;
                }
                c.next().await;
            })
        })
    };
    let secret = handler(|c| {
        Box::pin(async move {
            println!("    handler: runs only when the guard let it");
            c.string(StatusCode::OK, "the secret");
        })
    });
    e.handle(
        http::Method::GET,
        "/plain",
        vec![guard(false), secret.clone()],
    )
    .expect("route registers");
    e.handle(http::Method::GET, "/json", vec![guard(true), secret])
        .expect("route registers");
    println!(
        "/plain: the guard calls abort() and writes nothing. abort() only stops the\n\
         chain; the status stays the default 200 and the body empty, as in Gin.\n\
         To refuse, write the answer too: /json uses abort_with_json(403, …).\n"
    );
    support::serve_and_send(e, &["GET /plain", "GET /json", "GET /json?pass=1"]).await;
}
