//! Groups: a path prefix and middleware shared by routes. A route's chain is
//! global middleware, then its groups' middleware (outer group first), then
//! its own handlers; groups nest; a method the group did not register is 405.
//!
//! `cargo run --example groups`

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;

use handwire::ops::log;
use handwire::web::Engine;
use handwire::web::{named, Handler};
use http::StatusCode;

fn say(name: &'static str, text: &'static str) -> Handler {
    named(name, move |c| {
        Box::pin(async move { c.string(StatusCode::OK, text) })
    })
}

fn tag(name: &'static str) -> Handler {
    named(name, move |c| {
        Box::pin(async move {
            println!("    {name}: before next()");
            c.next().await;
        })
    })
}

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.use_middleware(tag("global"));
    {
        let mut v1 = e.group("/v1");
        v1.use_middleware(tag("v1_mw"));
        v1.get("/login", say("v1_login", "v1 login"))
            .expect("route registers");
        let mut admin = v1.group("/admin");
        admin.use_middleware(tag("admin_mw"));
        admin
            .get("/stats", say("stats", "v1 admin stats"))
            .expect("route registers");
    }
    let mut v2 = e.group("/v2");
    v2.post("/login", say("v2_login", "v2 login"))
        .expect("route registers");
    // The same method and path twice is an error value, not a panic (Gin
    // panics here): this second registration is there on purpose, to show it.
    if let Err(err) = v2.post("/login", say("again", "again")) {
        println!(
            "registering POST /v2/login a second time, on purpose, is refused:\n    {err}\n\
             (the first registration stays; the program goes on)\n"
        );
    }
    println!("each route's chain, as the route table prints it (global, groups, handler):");
    e.study_mode(false, false);
    log::stdout().flush(Duration::from_secs(1));
    println!(
        "\n/v2 registered POST only: POST /v2/login answers, GET /v2/login is 405\n\
         with the methods that would answer in Allow; /v3 is no group at all: 404.\n"
    );
    support::serve_and_send(
        e,
        &[
            "GET /v1/login",
            "GET /v1/admin/stats",
            "POST /v2/login",
            "GET /v2/login",
            "GET /v3/none",
        ],
    )
    .await;
}
