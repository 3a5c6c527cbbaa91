//! Groups: a prefix and middleware shared by routes; groups nest, and a
//! route's chain is fixed when it is registered (Gin's rule).
//!
//! `cargo run --example groups`

#[path = "support/mod.rs"]
mod support;

use handwire::web::chain::{handler, Handler};
use handwire::web::engine::Engine;
use http::StatusCode;

fn say(text: &'static str) -> Handler {
    handler(move |c| Box::pin(async move { c.string(StatusCode::OK, text) }))
}

fn tag(name: &'static str) -> Handler {
    handler(move |c| {
        Box::pin(async move {
            println!("    middleware of {name}");
            c.next().await;
        })
    })
}

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    {
        let mut v1 = e.group("/v1");
        v1.use_middleware(tag("group /v1"));
        v1.get("/login", say("v1 login")).expect("route registers");
        let mut admin = v1.group("/admin");
        admin.use_middleware(tag("group /v1/admin"));
        admin
            .get("/stats", say("v1 admin stats"))
            .expect("route registers");
    }
    let mut v2 = e.group("/v2");
    v2.post("/login", say("v2 login")).expect("route registers");
    // The same method and path twice is an error value, not a panic (Gin
    // panics here): this second registration is there on purpose, to show it.
    if let Err(err) = v2.post("/login", say("again")) {
        println!(
            "registering POST /v2/login a second time, on purpose, is refused:\n    {err}\n\
             (the first registration stays; the program goes on)\n"
        );
    }
    support::serve_and_get(
        e,
        &["/v1/login", "/v1/admin/stats", "/v2/login", "/v3/none"],
    )
    .await;
}
