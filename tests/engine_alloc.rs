//! Heap allocations per request through the Engine, counted by a counting
//! global allocator (performance issue point 5): `GET /hello` and
//! `GET /book/42` of the router-demo, with its default chain (recovery, the
//! global middleware; the logger into the log sink counted apart), called through
//! `App::handle` with an empty body, so hyper's own allocations are not in
//! the count. A regression past the bound fails `make test`.
//!
//! The counter is per thread; the request runs on a current-thread runtime
//! on the test's own thread.

mod support;

use std::net::SocketAddr;
use support::alloc::{allocations, CountingAllocator};

use bytes::Bytes;
use handwire::ops::metrics::Metrics;
use handwire::services::router_demo::{self, DemoOptions};
use http::{Request, StatusCode};
use http_body_util::Empty;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// docs/load.md states these bounds; raise them only with a reason. They
/// hold with the access log off, as the benchmarks' headline runs. Where
/// the 7 of `GET /hello` go: the chain's future (1: `App::answer` boxes it
/// for the server to poll); one boxed future per handler of the chain (2:
/// recovery and the route's handler; the global middleware answers at
/// once), since a `Handler` is one kind, a function returning a boxed
/// future, as Gin's `HandlerFunc` is one type, and `next()` awaits each;
/// the global middleware's `c.set("middle", …)` (2: the list of keys and
/// the boxed value: `Keys` is a plain list, as Gin's is a map); the
/// response's `content-type` in a `HeaderMap` (1, with its entries); and
/// the boxed response body (1). `/book/42` adds its path parameters (2:
/// the router's list of (name, value) pairs, which the context keeps, and
/// the value's own copy, since the context outlives the router's borrow of
/// the path) and its answer's text (2: `format!` and the body sharing it).
/// A request without a body costs none.
///
/// Before the mechanics were made plain to read (one kind of handler, a
/// list of keys, a list of parameter values, a `format!` in the handler),
/// the bounds were 4 and 5; each step's cost is in docs/load.md.
const MAX_ALLOCATIONS_HELLO: usize = 7;
const MAX_ALLOCATIONS_BOOK: usize = 11;

/// What the access log adds: the logger's future (1) and its line, written
/// as plainly as Gin's `fmt.Sprintf` (a `format!` of the line and one of
/// its timestamp, each growing its `String` as it goes).
const MAX_LOG_LINE_ALLOCATIONS: usize = 7;

/// Allocations of one request to `path`, after warming up (the log buffer
/// and the runtime reach their steady size first).
fn allocations_per_request(path: &str) -> usize {
    allocations_with(path, false, false)
}

/// The same, with Prometheus metrics counting the requests when `metrics`,
/// and the access log on or off.
fn allocations_with(path: &str, metrics: bool, access_log: bool) -> usize {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let opts = DemoOptions {
        access_log,
        ..DemoOptions::default()
    };
    let mut engine = router_demo::engine(opts).unwrap();
    if metrics {
        engine.metrics(&Metrics::new()).unwrap();
    }
    let app = engine.build();
    let remote: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let request = || Request::get(path).body(Empty::<Bytes>::new()).unwrap();
    for _ in 0..1_000 {
        let resp = rt.block_on(app.handle(request(), remote));
        assert_eq!(resp.status(), StatusCode::OK);
    }
    // What the harness costs (building the request, block_on) is measured
    // the same way and taken off.
    const N: usize = 200;
    let count = |f: &dyn Fn()| {
        let before = allocations();
        for _ in 0..N {
            f();
        }
        allocations() - before
    };
    let harness = count(&|| drop(rt.block_on(async { request() })));
    let total = count(&|| drop(rt.block_on(app.handle(request(), remote))));
    (total.saturating_sub(harness) + N / 2) / N
}

#[test]
fn get_hello_through_the_engine_stays_under_the_allocation_bound() {
    let n = allocations_per_request("/hello");
    println!("GET /hello: {n} allocations per request");
    assert!(
        n <= MAX_ALLOCATIONS_HELLO,
        "GET /hello: {n} allocations per request"
    );
}

#[test]
fn get_book_with_a_path_param_stays_under_the_allocation_bound() {
    let n = allocations_per_request("/book/42");
    println!("GET /book/42: {n} allocations per request");
    assert!(
        n <= MAX_ALLOCATIONS_BOOK,
        "GET /book/42: {n} allocations per request"
    );
}

#[test]
fn metrics_add_no_allocation_per_request() {
    for path in ["/hello", "/book/42"] {
        let off = allocations_with(path, false, true);
        let on = allocations_with(path, true, true);
        println!("GET {path}: {off} allocations without metrics, {on} with");
        assert_eq!(on, off, "GET {path}: metrics must only do atomic adds");
    }
}

#[test]
fn the_access_line_costs_at_most_its_bound_of_allocations() {
    for path in ["/hello", "/book/42"] {
        let off = allocations_with(path, false, false);
        let on = allocations_with(path, false, true);
        println!("GET {path}: {off} allocations with the log off, {on} with it on");
        assert!(
            on - off <= MAX_LOG_LINE_ALLOCATIONS,
            "GET {path}: the log line costs {} allocations",
            on - off
        );
    }
}
