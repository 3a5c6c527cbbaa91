//! What registration refuses, with which message, and what it leaves behind.

use http::Method;

use super::{lookup, router};
use crate::web::router::{InsertError, Router};

#[test]
fn every_insert_error_has_gins_message_naming_the_path() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&[], "x", "path must begin with '/' in path 'x'"),
        (&[], "", "path must begin with '/' in path ''"),
        (
            &[],
            "/user:",
            "wildcards must be named with a non-empty name in path '/user:'",
        ),
        (
            &[],
            "/user/:",
            "wildcards must be named with a non-empty name in path '/user/:'",
        ),
        (
            &[],
            "/user/:/x",
            "wildcards must be named with a non-empty name in path '/user/:/x'",
        ),
        (
            &[],
            "/src/*",
            "wildcards must be named with a non-empty name in path '/src/*'",
        ),
        (
            &[],
            "/:a:b",
            "only one wildcard per path segment is allowed, has: ':a:b' in path '/:a:b'",
        ),
        (
            &[],
            "/a/:b*c/d",
            "only one wildcard per path segment is allowed, has: ':b*c' in path '/a/:b*c/d'",
        ),
        (
            &[],
            "/src/*x/y",
            "catch-all routes are only allowed at the end of the path in path '/src/*x/y'",
        ),
        (&[], "/src*x", "no / before catch-all in path '/src*x'"),
        (&[], "/src/x*y", "no / before catch-all in path '/src/x*y'"),
        (
            &["/book/:id"],
            "/book/:id",
            "handlers are already registered for path '/book/:id'",
        ),
        (&["/"], "/", "handlers are already registered for path '/'"),
        (
            &["/src/*fp"],
            "/src/*fp",
            "handlers are already registered for path '/src/*fp'",
        ),
        (
            &["/foo/:name"],
            "/foo/:names",
            "':names' in new path '/foo/:names' conflicts with existing wildcard ':name' in \
             existing prefix '/foo/:name'",
        ),
        (
            &["/foo/:name/x"],
            "/foo/:id/y",
            "':id' in new path '/foo/:id/y' conflicts with existing wildcard ':name' in \
             existing prefix '/foo/:name'",
        ),
        (
            &["/src/:x"],
            "/src/*fp",
            "'*fp' in new path '/src/*fp' conflicts with existing wildcard ':x' in existing \
             prefix '/src/:x'",
        ),
        (
            &["/src/*filepath"],
            "/src/:x",
            "'/:x' in new path '/src/:x' conflicts with existing wildcard '/*filepath' in \
             existing prefix '/src/*filepath'",
        ),
        (
            &["/src/*filepath"],
            "/src/a",
            "'/a' in new path '/src/a' conflicts with existing wildcard '/*filepath' in \
             existing prefix '/src/*filepath'",
        ),
        (
            &["/src/*filepath"],
            "/src/",
            "'/' in new path '/src/' conflicts with existing wildcard '/*filepath' in \
             existing prefix '/src/*filepath'",
        ),
        (
            &["/src/*filepath"],
            "/src/*other",
            "'/*other' in new path '/src/*other' conflicts with existing wildcard \
             '/*filepath' in existing prefix '/src/*filepath'",
        ),
        (
            &["/src/abc/def", "/src/x"],
            "/src/*fp",
            "catch-all wildcard '*fp' in new path '/src/*fp' conflicts with existing path \
             segment 'abc' in existing prefix '/src/abc'",
        ),
        (
            &["/src/"],
            "/src/*fp",
            "catch-all wildcard '*fp' in new path '/src/*fp' conflicts with existing path \
             segment '' in existing prefix '/src/'",
        ),
        (
            &["/api"],
            "/*any",
            "catch-all wildcard '*any' in new path '/*any' conflicts with existing path \
             segment 'api' in existing prefix '/api'",
        ),
    ];
    for (existing, path, message) in cases {
        let mut router = router(existing);
        let err = router
            .insert(Method::GET, path, path.to_string())
            .expect_err(path);
        assert_eq!(
            err.to_string(),
            *message,
            "inserting {path:?} after {existing:?}"
        );
    }
}

/// Gin's `TestTreeWildcardConflict` and `TestTreeChildConflict` sequences:
/// each route is inserted in order and must be accepted or refused.
#[test]
fn conflict_sequences_accept_and_refuse_like_gin() {
    let sequences: &[&[(&str, bool)]] = &[
        &[
            ("/cmd/:tool/:sub", true),
            ("/cmd/vet", true),
            ("/foo/bar", true),
            ("/foo/:name", true),
            ("/foo/:names", false),
            ("/cmd/*path", false),
            ("/cmd/:badvar", false),
            ("/cmd/:tool/names", true),
            ("/cmd/:tool/:badsub/details", false),
            ("/src/*filepath", true),
            ("/src/:file", false),
            ("/src/static.json", false),
            ("/src/*filepathx", false),
            ("/src/", false),
            ("/src/foo/bar", false),
            ("/src1/", true),
            ("/src1/*filepath", false),
            ("/src2*filepath", false),
            ("/src2/*filepath", true),
            ("/search/:query", true),
            ("/search/valid", true),
            ("/user_:name", true),
            ("/user_x", true),
            ("/id:id", true),
            ("/id/:id", true),
        ],
        &[
            ("/cmd/vet", true),
            ("/cmd/:tool", true),
            ("/cmd/:tool/:sub", true),
            ("/cmd/:tool/misc", true),
            ("/cmd/:tool/:othersub", false),
            ("/src/AUTHORS", true),
            ("/src/*filepath", false),
            ("/user_x", true),
            ("/user_:name", true),
            ("/id/:id", true),
            ("/id:id", true),
            ("/:id", true),
            ("/*filepath", false),
        ],
    ];
    for sequence in sequences {
        let mut router = Router::new();
        for (path, accepted) in *sequence {
            let result = router.insert(Method::GET, path, ());
            assert_eq!(result.is_ok(), *accepted, "inserting {path:?}: {result:?}");
        }
    }
}

#[test]
fn refused_insert_leaves_the_router_unchanged() {
    let routes = ["/src/abc/def", "/src/abd", "/src/:x/y"];
    let mut router = router(&routes);
    let paths = [
        "/src/abc/def",
        "/src/abd",
        "/src/ab/y",
        "/src/abc",
        "/src/abd/",
    ];
    let before: Vec<_> = paths
        .iter()
        .map(|p| lookup(&router, &Method::GET, p))
        .collect();
    for refused in ["/src/*all", "/src/:other", "/src/abc/*rest", "/src/abd"] {
        assert!(
            router.insert(Method::GET, refused, refused.into()).is_err(),
            "{refused}"
        );
    }
    let after: Vec<_> = paths
        .iter()
        .map(|p| lookup(&router, &Method::GET, p))
        .collect();
    assert_eq!(before, after);
    assert_eq!(router.routes().map(|(_, p)| p).collect::<Vec<_>>(), routes);
}

#[test]
fn routes_lists_registered_pairs_in_order() {
    let mut router = Router::new();
    router.insert(Method::POST, "/a", 1).expect("valid");
    router.insert(Method::GET, "/b/:id", 2).expect("valid");
    assert!(router.insert(Method::GET, "/b/:id", 3).is_err());
    router.insert(Method::GET, "/a", 4).expect("valid");
    let routes: Vec<_> = router.routes().collect();
    assert_eq!(
        routes,
        [
            (&Method::POST, "/a"),
            (&Method::GET, "/b/:id"),
            (&Method::GET, "/a")
        ]
    );
    assert_eq!(
        format!("{router:?}"),
        r#"[(POST, "/a"), (GET, "/b/:id"), (GET, "/a")]"#
    );
}

#[test]
fn insert_errors_are_comparable_and_std_errors() {
    let mut router = Router::new();
    let err = router
        .insert(Method::GET, "x", ())
        .expect_err("no leading slash");
    assert_eq!(
        err.clone(),
        InsertError::MissingLeadingSlash { path: "x".into() }
    );
    let boxed: Box<dyn std::error::Error> = Box::new(err);
    assert_eq!(boxed.to_string(), "path must begin with '/' in path 'x'");
}
