//! Keys: a middleware stores a value with `c.set(key, value)`; every handler
//! after it reads it with `c.get::<Type>(key)`. Values are typed: `get`
//! gives `None` for a key never set and for a key holding another type. The
//! store belongs to one request: the next request starts empty.
//!
//! `cargo run --example keys`

#[path = "support/mod.rs"]
mod support;

use handwire::web::handler;
use handwire::web::Engine;
use http::StatusCode;

/// What the request's user asked to be called, for the middleware to store.
#[derive(Debug)]
struct User(String);

#[tokio::main]
async fn main() {
    let mut e = Engine::bare();
    e.use_middleware(handler(|c| {
        Box::pin(async move {
            // Nothing from an earlier request is there: a fresh store each time.
            println!(
                "    middleware: before set, get(\"user\") = {:?}",
                c.get::<User>("user")
            );
            if let Some(name) = c.query("name") {
                c.set("user", User(name));
            }
            c.set("visits", 1u32);
            c.next().await;
        })
    }));
    e.get(
        "/whoami",
        handler(|c| {
            Box::pin(async move {
                // Set again: the later value replaces the earlier one.
                let visits = c.get::<u32>("visits").copied().unwrap_or(0);
                c.set("visits", visits + 1);
                println!("    handler: get::<User>(\"user\")   = {:?}", c.get::<User>("user"));
                println!("    handler: get::<u32>(\"visits\")  = {:?}", c.get::<u32>("visits"));
                println!("    handler: get::<u64>(\"visits\")  = {:?}  (stored as u32: another type is None)", c.get::<u64>("visits"));
                println!("    handler: get::<u32>(\"missing\") = {:?}  (never set)", c.get::<u32>("missing"));
                let text = match c.get::<User>("user") {
                    Some(User(name)) => format!("hello {name}"),
                    None => "hello stranger".to_string(),
                };
                c.string(StatusCode::OK, text);
            })
        }),
    )
    .expect("route registers");
    println!(
        "The middleware stores User under \"user\" (when ?name= is given) and 1u32\n\
         under \"visits\"; the handler adds one and reads them back.\n"
    );
    support::serve_and_send(e, &["GET /whoami?name=ann", "GET /whoami"]).await;
}
