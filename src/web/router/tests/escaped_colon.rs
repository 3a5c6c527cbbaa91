//! Gin's escaped colon (Gin >= 1.11): `\:` in a route is a literal `:`, so
//! routes can spell AIP-136 custom methods (`/v1/users\:batchGet`); a
//! backslash before anything else is refused.

use http::Method;

use super::{check, found, router, Outcome};
use crate::web::router::{InsertError, Router};

#[test]
fn escaped_colon_is_a_literal_colon_and_beats_a_parameter() {
    let routes = [
        r"/v1/users\:batchGet",
        "/v1/users",
        "/v1/:collection",
        r"/v1/users/:id\:undelete\:x",
    ];
    // The last route is refused (two wildcards in one segment, as Gin), so
    // it is not in the table below.
    let mut r = Router::new();
    for route in &routes[..3] {
        r.insert(Method::GET, route, route.to_string()).unwrap();
    }
    assert!(matches!(
        r.insert(Method::GET, routes[3], String::new()),
        Err(InsertError::TooManyWildcards { .. })
    ));
    check(
        &routes[..3],
        &[
            ("/v1/users:batchGet", found(r"/v1/users\:batchGet", &[])),
            ("/v1/users", found("/v1/users", &[])),
            // Static text first, then the parameter, which takes the colon.
            (
                "/v1/users:other",
                found("/v1/:collection", &[("collection", "users:other")]),
            ),
            (
                "/v1/users%3AbatchGet",
                found("/v1/:collection", &[("collection", "users:batchGet")]),
            ),
            (
                "/v1/users\\:batchGet",
                found("/v1/:collection", &[("collection", "users\\:batchGet")]),
            ),
        ],
    );
}

#[test]
fn escaped_colons_mix_with_parameters_and_catch_alls() {
    check(
        &[r"/v1/\:admin/:name", r"/files\:raw/*path", r"/a\:b\:c"],
        &[
            (
                "/v1/:admin/ann",
                found(r"/v1/\:admin/:name", &[("name", "ann")]),
            ),
            ("/v1/admin/ann", Outcome::NotFound),
            (
                "/files:raw/x/y",
                found(r"/files\:raw/*path", &[("path", "/x/y")]),
            ),
            ("/a:b:c", found(r"/a\:b\:c", &[])),
        ],
    );
}

#[test]
fn a_backslash_before_anything_but_a_colon_is_an_insert_error() {
    let cases = [r"/v1/a\b", r"/v1/users\", r"/v1/\\:x", r"/\*x"];
    for path in cases {
        let mut r: Router<()> = Router::new();
        let err = r.insert(Method::GET, path, ()).unwrap_err();
        assert_eq!(err, InsertError::InvalidEscape { path: path.into() });
        assert_eq!(
            err.to_string(),
            format!("invalid escape string in path '{path}'")
        );
        assert_eq!(r.routes().count(), 0);
    }
    // The same route twice, escapes and all, is a duplicate.
    let mut r = router(&[r"/v1/users\:batchGet"]);
    assert_eq!(
        r.insert(Method::GET, r"/v1/users\:batchGet", String::new()),
        Err(InsertError::AlreadyRegistered {
            path: r"/v1/users\:batchGet".into()
        })
    );
}
