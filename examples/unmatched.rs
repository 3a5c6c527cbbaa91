//! What the engine answers when no route matches, in the order it decides:
//!
//! 1. the path with one trailing slash more or less has a route of this
//!    method: a redirect there, 301 for GET, 307 for other methods (307 makes
//!    the client repeat the method and the body; after a 301 most clients
//!    send GET);
//! 2. the path has routes under other methods: 405 with `Allow` listing them;
//! 3. otherwise 404.
//!
//! A redirect needs a route of the request's own method: `DELETE /thing/`
//! finds no DELETE route either way, and no route of any method has the
//! path `/thing/`, so it is 404.
//!
//! HEAD and OPTIONS are methods like any other: a GET route does not answer
//! HEAD and nothing answers OPTIONS by itself, so both are 405 here until
//! they are registered, as `/page` shows.
//!
//! `cargo run --example unmatched`

#[path = "support/mod.rs"]
mod support;

use handwire::web::Engine;
use handwire::web::{named, Handler};
use http::header::ALLOW;
use http::{HeaderValue, StatusCode};

fn say(name: &'static str) -> Handler {
    named(name, move |c| {
        Box::pin(async move { c.string(StatusCode::OK, name) })
    })
}

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.get("/thing", say("get thing")).expect("route registers");
    e.post("/thing", say("post thing"))
        .expect("route registers");
    e.get("/page", say("get page")).expect("route registers");
    // HEAD and OPTIONS answered on purpose: registered like any method.
    e.head("/page", say("head page")).expect("route registers");
    e.options(
        "/page",
        named("options page", |c| {
            Box::pin(async move {
                c.set_header(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
                c.status(StatusCode::NO_CONTENT);
            })
        }),
    )
    .expect("route registers");
    println!(
        "Routes: GET and POST /thing; GET, HEAD and OPTIONS /page.\n\
         (A response to HEAD has no body on the wire, whatever the handler wrote.)\n"
    );
    support::serve_and_send(
        e,
        &[
            "GET /thing",
            "GET /nothing",
            "DELETE /thing",
            "HEAD /thing",
            "OPTIONS /thing",
            "GET /thing/",
            "POST /thing/",
            "DELETE /thing/",
            "HEAD /page",
            "OPTIONS /page",
        ],
    )
    .await;
}
