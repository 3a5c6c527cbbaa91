//! Proves the router's allocation promises with a counting global allocator:
//! a static lookup touches no heap, nor does a 404 that captured nothing; a
//! lookup with parameters allocates their list once (Gin's `Params` is a slice
//! kept in a pooled context; handwire makes a context per request), and a
//! value only to hold what percent-decoding made.
//!
//! The counter is per thread, so allocations made by the test harness on
//! other threads do not disturb the count.

mod support;

use handwire::web::router::{Lookup, Miss, Router};
use http::Method;
use support::alloc::{allocations_during, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn demo_router() -> Router<&'static str> {
    let mut router = Router::new();
    let routes = [
        (Method::GET, "/"),
        (Method::GET, "/hello"),
        (Method::GET, "/users/new"),
        (Method::GET, "/users/:id"),
        (Method::GET, "/users/:id/books/:book"),
        (Method::GET, "/static/*filepath"),
        (Method::POST, "/login"),
    ];
    for (method, path) in routes {
        router.insert(method, path, path).expect("valid route");
    }
    router
}

#[test]
fn static_lookup_allocates_nothing() {
    let router = demo_router();
    for path in ["/", "/hello", "/users/new"] {
        let count = allocations_during(|| match router.lookup(&Method::GET, path) {
            Lookup::Found(value, params) => {
                assert_eq!((*value, params.len()), (path, 0));
            }
            other => panic!("GET {path}: {other:?}"),
        });
        assert_eq!(count, 0, "GET {path} allocated");
    }
}

#[test]
fn lookups_allocate_only_the_lists_of_the_parameters_they_capture() {
    let router = demo_router();
    let cases = [
        (Method::GET, "/users/newx", true, 1),
        (Method::GET, "/users/7/books/rust", true, 1),
        (Method::GET, "/static/css/site.css", true, 1),
        (Method::GET, "/nothing/here", false, 0),
        // A miss that captured `:id`: its own try and the trailing-slash one.
        (Method::GET, "/users/7/books", false, 2),
        (Method::PUT, "/nothing", false, 0),
    ];
    for (method, path, expect_found, allocations) in cases {
        let count = allocations_during(|| {
            let lookup = router.lookup(&method, path);
            assert_eq!(
                matches!(lookup, Lookup::Found(..)),
                expect_found,
                "{method} {path}"
            );
            assert!(matches!(
                lookup,
                Lookup::Found(..) | Lookup::Miss(Miss::NotFound)
            ));
        });
        assert_eq!(count, allocations, "{method} {path}");
    }
}

#[test]
fn decoding_a_percent_encoded_param_is_what_allocates() {
    let router = demo_router();
    let count = allocations_during(|| match router.lookup(&Method::GET, "/users/a%20b") {
        Lookup::Found(_, params) => assert_eq!(params.get("id"), Some("a b")),
        other => panic!("{other:?}"),
    });
    assert_eq!(count, 2, "the list, and one String for the decoded value");
}
