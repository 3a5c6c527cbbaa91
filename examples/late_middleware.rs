//! When global middleware applies: a route's chain is fixed when the route
//! is registered, so `use_middleware` after a route leaves that route as it
//! was. The engine's own answers (404, 405, the trailing-slash redirect) are
//! chained when the engine is built, so they get every global middleware,
//! the late one included. Gin does the same: `Engine.Use` rebuilds the 404
//! and 405 chains, not the routes already registered.
//!
//! `cargo run --example late_middleware`

#[path = "support/mod.rs"]
mod support;

use handwire::web::Engine;
use handwire::web::{named, Handler};
use http::StatusCode;

fn say(name: &'static str) -> Handler {
    named(name, move |c| {
        Box::pin(async move { c.string(StatusCode::OK, name) })
    })
}

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.get("/early", say("early")).expect("route registers");
    e.use_middleware(named("late", |c| {
        Box::pin(async move {
            println!("    late middleware: runs for {} {}", c.method(), c.path());
            c.next().await;
        })
    }));
    e.get("/later", say("later")).expect("route registers");
    println!(
        "GET /early is registered before use_middleware(late), GET /later after.\n\
         late runs on /later and on the engine's answers (404, 405, redirect), not on /early.\n"
    );
    support::serve_and_send(
        e,
        &[
            "GET /early",
            "GET /later",
            "GET /nowhere",
            "POST /early",
            "GET /early/",
        ],
    )
    .await;
}
