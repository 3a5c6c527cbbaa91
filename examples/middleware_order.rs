//! Middleware order: global → group → route middleware → handler, and back
//! out in reverse, because each middleware wraps `c.next().await`.
//!
//! `cargo run --example middleware_order`

#[path = "support/mod.rs"]
mod support;

use handwire::web::Engine;
use handwire::web::{handler, Handler};
use http::StatusCode;

/// A middleware that prints on the way in and on the way out.
fn traced(name: &'static str) -> Handler {
    handler(move |c| {
        Box::pin(async move {
            println!("    {name}: before next()");
            c.next().await;
            println!(
                "    {name}: after next() (status so far {})",
                c.response_status()
            );
        })
    })
}

/// A middleware that never calls next(): the chain still continues after it.
fn quiet(name: &'static str) -> Handler {
    handler(move |_c| {
        Box::pin(async move {
            println!("    {name}: returns without next(); the loop runs the next handler");
        })
    })
}

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.use_middleware(traced("global"));
    let mut api = e.group("/api");
    api.use_middleware(traced("group /api"));
    api.handle(
        http::Method::GET,
        "/hello/:name",
        vec![
            traced("route middleware"),
            quiet("quiet middleware"),
            handler(|c| {
                Box::pin(async move {
                    let name = c.param("name").unwrap_or("?").to_string();
                    println!("    handler: writing the response");
                    c.string(StatusCode::OK, format!("hello {name}"));
                })
            }),
        ],
    )
    .expect("route registers");
    support::serve_and_send(e, &["GET /api/hello/gopher"]).await;
}
