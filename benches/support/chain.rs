//! The chain the trace-cost measurements dispatch through (the bench
//! `chain_trace` and `examples/chain_dispatch.rs`): recovery, a global
//! middleware that stores a value and calls `next()`, a token check that
//! aborts without the `token` header, and the handler; `GET /index`.

use std::sync::Arc;

use handwire::web::middleware;
use handwire::web::named;
use handwire::web::{App, Engine};
use http::StatusCode;

/// The app, with tracing on or off.
pub fn index_app(trace: bool) -> Arc<App> {
    let mut e = Engine::bare();
    e.use_middleware(middleware::recovery());
    e.use_middleware(named("global_middleware", |c| {
        Box::pin(async move {
            c.set("middle", "value");
            c.next().await;
        })
    }));
    e.handle(
        http::Method::GET,
        "/index",
        vec![
            named("token_check", |c| {
                Box::pin(async move {
                    if c.header("token").is_none() {
                        c.abort_with_status(StatusCode::FORBIDDEN);
                        return;
                    }
                    c.next().await;
                })
            }),
            named("index_handler", |c| {
                Box::pin(async move { c.string(StatusCode::OK, "welcome") })
            }),
        ],
    )
    .expect("route");
    e.trace(trace);
    e.build()
}
