//! Table-driven tests of the router: what matches, what is refused and why,
//! and a randomized comparison with a naive matcher that follows the rules
//! literally.

use http::Method;

use super::{InsertError, Lookup, Router};

/// A GET router whose values are the route strings themselves.
fn router(routes: &[&str]) -> Router<String> {
    let mut router = Router::new();
    for route in routes {
        if let Err(err) = router.insert(Method::GET, route, route.to_string()) {
            panic!("route {route:?} refused: {err}");
        }
    }
    router
}

/// What a GET lookup gave, in a comparable form.
#[derive(Debug, PartialEq)]
enum Outcome {
    Found(String, Vec<(String, String)>),
    Redirect(String),
    NotAllowed(Vec<Method>),
    NotFound,
}

fn lookup(router: &Router<String>, method: &Method, path: &str) -> Outcome {
    match router.lookup(method, path) {
        Lookup::Found { value, params } => Outcome::Found(
            value.clone(),
            params.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        ),
        Lookup::RedirectTrailingSlash { location } => Outcome::Redirect(location),
        Lookup::MethodNotAllowed { allowed } => Outcome::NotAllowed(allowed),
        Lookup::NotFound => Outcome::NotFound,
    }
}

fn found(route: &str, params: &[(&str, &str)]) -> Outcome {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    Outcome::Found(route.into(), params.collect())
}

/// Runs `(path, expected)` cases against `routes` registered under GET.
fn check(routes: &[&str], cases: &[(&str, Outcome)]) {
    let router = router(routes);
    for (path, want) in cases {
        assert_eq!(&lookup(&router, &Method::GET, path), want, "GET {path}");
    }
}

#[test]
fn static_beats_param_and_dead_end_static_branches_fall_back_to_params() {
    check(
        &[
            "/users/new",
            "/users/:id",
            "/a/b/c",
            "/a/:x/d",
            "/cmd/whoami/root",
        ],
        &[
            ("/users/new", found("/users/new", &[])),
            ("/users/newx", found("/users/:id", &[("id", "newx")])),
            ("/users/ne", found("/users/:id", &[("id", "ne")])),
            ("/a/b/c", found("/a/b/c", &[])),
            ("/a/b/d", found("/a/:x/d", &[("x", "b")])),
            ("/a/bb/d", found("/a/:x/d", &[("x", "bb")])),
            ("/a/b/e", Outcome::NotFound),
        ],
    );
}

#[test]
fn backtracking_forgets_params_captured_on_the_abandoned_branch() {
    check(
        &["/s/:p/deep", "/:q/other/x"],
        &[
            ("/s/other/x", found("/:q/other/x", &[("q", "s")])),
            ("/s/v/deep", found("/s/:p/deep", &[("p", "v")])),
        ],
    );
    check(
        &["/:a/x/:c/y", "/:a/:b/z"],
        &[
            ("/1/x/2/y", found("/:a/x/:c/y", &[("a", "1"), ("c", "2")])),
            ("/1/x/z", found("/:a/:b/z", &[("a", "1"), ("b", "x")])),
        ],
    );
}

/// The route set of Gin's `TestTreeWildcard` with its expected matches.
#[test]
fn gin_tree_wildcard_cases_match_like_gin() {
    let routes = [
        "/",
        "/cmd/:tool/",
        "/cmd/:tool/:sub",
        "/cmd/whoami",
        "/cmd/whoami/root",
        "/cmd/whoami/root/",
        "/src/*filepath",
        "/search/",
        "/search/:query",
        "/search/gin-gonic",
        "/search/google",
        "/user_:name",
        "/user_:name/about",
        "/files/:dir/*filepath",
        "/doc/",
        "/doc/go_faq.html",
        "/doc/go1.html",
        "/info/:user/public",
        "/info/:user/project/:project",
        "/info/:user/project/golang",
        "/aa/*xx",
        "/ab/*xx",
        "/:cc",
        "/c1/:dd/e",
        "/c1/:dd/e1",
        "/:cc/cc",
        "/:cc/:dd/ee",
        "/:cc/:dd/:ee/ff",
        "/:cc/:dd/:ee/:ff/gg",
        "/:cc/:dd/:ee/:ff/:gg/hh",
        "/get/test/abc/",
        "/get/:param/abc/",
        "/something/:paramname/thirdthing",
        "/something/secondthing/test",
        "/get/abc",
        "/get/:param",
        "/get/abc/123abc",
        "/get/abc/:param",
        "/get/abc/123abc/xxx8",
        "/get/abc/123abc/:param",
        "/get/abc/123abc/xxx8/1234",
        "/get/abc/123abc/xxx8/:param",
        "/get/abc/:param/test",
        "/get/abc/123abd/:param",
        "/get/abc/123/:param",
    ];
    check(
        &routes,
        &[
            ("/", found("/", &[])),
            ("/cmd/test", Outcome::Redirect("/cmd/test/".into())),
            ("/cmd/test/", found("/cmd/:tool/", &[("tool", "test")])),
            (
                "/cmd/test/3",
                found("/cmd/:tool/:sub", &[("tool", "test"), ("sub", "3")]),
            ),
            ("/cmd/who", Outcome::Redirect("/cmd/who/".into())),
            ("/cmd/who/", found("/cmd/:tool/", &[("tool", "who")])),
            ("/cmd/whoami", found("/cmd/whoami", &[])),
            // Gin answers a redirect to /cmd/whoami here because it checks for a
            // trailing-slash hint before backtracking; a path that a route
            // matches is served by it.
            ("/cmd/whoami/", found("/cmd/:tool/", &[("tool", "whoami")])),
            (
                "/cmd/whoami/r",
                found("/cmd/:tool/:sub", &[("tool", "whoami"), ("sub", "r")]),
            ),
            ("/cmd/whoami/r/", Outcome::Redirect("/cmd/whoami/r".into())),
            ("/cmd/whoami/root", found("/cmd/whoami/root", &[])),
            ("/cmd/whoami/root/", found("/cmd/whoami/root/", &[])),
            ("/src/", found("/src/*filepath", &[("filepath", "/")])),
            (
                "/src/some/file.png",
                found("/src/*filepath", &[("filepath", "/some/file.png")]),
            ),
            ("/search/", found("/search/", &[])),
            (
                "/search/someth!ng+in+ünìcodé",
                found("/search/:query", &[("query", "someth!ng+in+ünìcodé")]),
            ),
            (
                "/search/someth!ng+in+ünìcodé/",
                Outcome::Redirect("/search/someth!ng+in+ünìcodé".into()),
            ),
            ("/search/gin", found("/search/:query", &[("query", "gin")])),
            ("/search/gin-gonic", found("/search/gin-gonic", &[])),
            ("/search/google", found("/search/google", &[])),
            ("/user_gopher", found("/user_:name", &[("name", "gopher")])),
            (
                "/user_gopher/about",
                found("/user_:name/about", &[("name", "gopher")]),
            ),
            (
                "/files/js/inc/framework.js",
                found(
                    "/files/:dir/*filepath",
                    &[("dir", "js"), ("filepath", "/inc/framework.js")],
                ),
            ),
            (
                "/info/gordon/public",
                found("/info/:user/public", &[("user", "gordon")]),
            ),
            (
                "/info/gordon/project/go",
                found(
                    "/info/:user/project/:project",
                    &[("user", "gordon"), ("project", "go")],
                ),
            ),
            (
                "/info/gordon/project/golang",
                found("/info/:user/project/golang", &[("user", "gordon")]),
            ),
            ("/aa/aa", found("/aa/*xx", &[("xx", "/aa")])),
            ("/ab/ab", found("/ab/*xx", &[("xx", "/ab")])),
            ("/a", found("/:cc", &[("cc", "a")])),
            ("/all", found("/:cc", &[("cc", "all")])),
            ("/aa", found("/:cc", &[("cc", "aa")])),
            ("/aaa/cc", found("/:cc/cc", &[("cc", "aaa")])),
            ("/abb/cc", found("/:cc/cc", &[("cc", "abb")])),
            ("/c1/d/e", found("/c1/:dd/e", &[("dd", "d")])),
            ("/c1/d/e1", found("/c1/:dd/e1", &[("dd", "d")])),
            (
                "/c1/d/ee",
                found("/:cc/:dd/ee", &[("cc", "c1"), ("dd", "d")]),
            ),
            ("/cc/cc", found("/:cc/cc", &[("cc", "cc")])),
            (
                "/c/d/e/ff",
                found("/:cc/:dd/:ee/ff", &[("cc", "c"), ("dd", "d"), ("ee", "e")]),
            ),
            (
                "/cc/dd/ee/ff/gg/hh",
                found(
                    "/:cc/:dd/:ee/:ff/:gg/hh",
                    &[
                        ("cc", "cc"),
                        ("dd", "dd"),
                        ("ee", "ee"),
                        ("ff", "ff"),
                        ("gg", "gg"),
                    ],
                ),
            ),
            ("/get/test/abc/", found("/get/test/abc/", &[])),
            (
                "/get/te/abc/",
                found("/get/:param/abc/", &[("param", "te")]),
            ),
            (
                "/get/testaa/abc/",
                found("/get/:param/abc/", &[("param", "testaa")]),
            ),
            (
                "/something/secondthing/test",
                found("/something/secondthing/test", &[]),
            ),
            (
                "/something/secondthingaaaa/thirdthing",
                found(
                    "/something/:paramname/thirdthing",
                    &[("paramname", "secondthingaaaa")],
                ),
            ),
            ("/get/abc", found("/get/abc", &[])),
            ("/get/abz", found("/get/:param", &[("param", "abz")])),
            ("/get/abcd", found("/get/:param", &[("param", "abcd")])),
            ("/get/abc/123abc", found("/get/abc/123abc", &[])),
            (
                "/get/abc/123ab",
                found("/get/abc/:param", &[("param", "123ab")]),
            ),
            (
                "/get/abc/123abcddxx",
                found("/get/abc/:param", &[("param", "123abcddxx")]),
            ),
            ("/get/abc/123abc/xxx8", found("/get/abc/123abc/xxx8", &[])),
            (
                "/get/abc/123abc/x",
                found("/get/abc/123abc/:param", &[("param", "x")]),
            ),
            (
                "/get/abc/123abc/xxx8/1234",
                found("/get/abc/123abc/xxx8/1234", &[]),
            ),
            (
                "/get/abc/123abc/xxx8/12",
                found("/get/abc/123abc/xxx8/:param", &[("param", "12")]),
            ),
            (
                "/get/abc/12/test",
                found("/get/abc/:param/test", &[("param", "12")]),
            ),
            (
                "/get/abc/123abc/test",
                found("/get/abc/123abc/:param", &[("param", "test")]),
            ),
            (
                "/get/abc/123abz/test",
                found("/get/abc/:param/test", &[("param", "123abz")]),
            ),
            (
                "/get/abc/123abd/test",
                found("/get/abc/123abd/:param", &[("param", "test")]),
            ),
            (
                "/get/abc/123/test22",
                found("/get/abc/123/:param", &[("param", "test22")]),
            ),
        ],
    );
}

#[test]
fn catch_all_value_includes_the_leading_slash_like_gin() {
    check(
        &["/src/*filepath", "/src", "/:dir/files/*rest"],
        &[
            ("/src/a/b", found("/src/*filepath", &[("filepath", "/a/b")])),
            ("/src/", found("/src/*filepath", &[("filepath", "/")])),
            ("/src//", found("/src/*filepath", &[("filepath", "//")])),
            ("/src", found("/src", &[])),
            (
                "/x/files/",
                found("/:dir/files/*rest", &[("dir", "x"), ("rest", "/")]),
            ),
            ("/x/files", Outcome::Redirect("/x/files/".into())),
        ],
    );
}

#[test]
fn params_need_a_non_empty_value_and_may_follow_text_in_their_segment() {
    check(
        &["/user/:id", "/file_:name.txt/x", "/v:version/api"],
        &[
            ("/user/", Outcome::NotFound),
            ("/user//", Outcome::NotFound),
            ("/user/7", found("/user/:id", &[("id", "7")])),
            (
                "/file_a.txt/x",
                found("/file_:name.txt/x", &[("name.txt", "a.txt")]),
            ),
            ("/v2/api", found("/v:version/api", &[("version", "2")])),
            ("/v/api", Outcome::NotFound),
        ],
    );
}

#[test]
fn param_values_are_decoded_after_matching_the_raw_path() {
    check(
        &[
            "/files/:name",
            "/files/:name/meta",
            "/search/:q",
            "/raw/*rest",
            "/users",
            "/ü/:名前",
        ],
        &[
            ("/files/a%2Fb", found("/files/:name", &[("name", "a/b")])),
            (
                "/files/a%2Fb/meta",
                found("/files/:name/meta", &[("name", "a/b")]),
            ),
            ("/search/caf%C3%A9", found("/search/:q", &[("q", "café")])),
            ("/search/café", found("/search/:q", &[("q", "café")])),
            ("/search/a+b%20c", found("/search/:q", &[("q", "a+b c")])),
            ("/search/100%", found("/search/:q", &[("q", "100%")])),
            ("/search/%zz", found("/search/:q", &[("q", "%zz")])),
            ("/search/%FF", found("/search/:q", &[("q", "%FF")])),
            (
                "/raw/a%20b/c%2Fd",
                found("/raw/*rest", &[("rest", "/a b/c/d")]),
            ),
            ("/ü/日本", found("/ü/:名前", &[("名前", "日本")])),
            ("/%C3%BC/x", Outcome::NotFound),
            ("/us%65rs", Outcome::NotFound),
        ],
    );
}

#[test]
fn more_params_than_the_inline_capacity_are_all_captured() {
    let route = "/:a/:b/:c/:d/:e/:f";
    let want = [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("d", "4"),
        ("e", "5"),
        ("f", "6"),
    ];
    check(
        &[route, "/1/2/3/4/5/x"],
        &[("/1/2/3/4/5/6", found(route, &want))],
    );
}

/// The route set of Gin's `TestTreeTrailingSlashRedirect`.
#[test]
fn trailing_slash_redirect_is_offered_only_when_the_other_form_is_registered() {
    let routes = [
        "/hi",
        "/b/",
        "/search/:query",
        "/cmd/:tool/",
        "/src/*filepath",
        "/x",
        "/x/y",
        "/y/",
        "/y/z",
        "/0/:id",
        "/0/:id/1",
        "/1/:id/",
        "/1/:id/2",
        "/aa",
        "/a/",
        "/admin",
        "/admin/:category",
        "/admin/:category/:page",
        "/doc",
        "/doc/go_faq.html",
        "/doc/go1.html",
        "/no/a",
        "/no/b",
        "/api/:page/:name",
        "/api/hello/:name/bad/",
        "/api/hello/:name",
        "/api/:page",
        "/blog/:p",
        "/posts/:b/:c",
        "/posts/b/:c/d/",
        "/vendor/:x/*y",
    ];
    let redirects = [
        "/hi/",
        "/b",
        "/search/gopher/",
        "/cmd/vet",
        "/src",
        "/x/",
        "/y",
        "/0/go/",
        "/1/go",
        "/a",
        "/admin/",
        "/admin/config/",
        "/admin/config/permissions/",
        "/doc/",
        "/admin/static/",
        "/admin/cfg/",
        "/admin/cfg/users/",
        "/api/hello/x/bad",
        "/api/abc/",
        "/api/abc/def/",
        "/blog/go/",
        "/posts/b/c/d",
        "/vendor/x",
    ];
    let router = router(&routes);
    for path in redirects {
        let location = match path.strip_suffix('/') {
            Some(without) => without.to_string(),
            None => format!("{path}/"),
        };
        assert_eq!(
            lookup(&router, &Method::GET, path),
            Outcome::Redirect(location),
            "GET {path}"
        );
    }
    let not_found = [
        "/",
        "/no",
        "/no/",
        "/_",
        "/_/",
        "/api",
        "/api/",
        "/api/hello/x/foo",
        "/api/baz/foo/bad",
        "/foo/p/p",
    ];
    for path in not_found {
        assert_eq!(
            lookup(&router, &Method::GET, path),
            Outcome::NotFound,
            "GET {path}"
        );
    }
}

#[test]
fn no_trailing_slash_redirect_for_root_or_to_host_like_locations() {
    check(
        &["/:test", "//evil.com", "/\\evil.com"],
        &[
            ("/", Outcome::NotFound),
            ("//evil.com/", Outcome::NotFound),
            ("/\\evil.com/", Outcome::NotFound),
        ],
    );
    check(
        &["/"],
        &[
            ("//", Outcome::Redirect("/".into())),
            ("", Outcome::NotFound),
        ],
    );
}

#[test]
fn method_not_allowed_lists_the_methods_that_match_sorted() {
    let mut router = Router::new();
    let purge = Method::from_bytes(b"PURGE").expect("valid token");
    for (method, path) in [
        (Method::PUT, "/items/:id"),
        (Method::GET, "/items/:id"),
        (purge.clone(), "/items/:id"),
        (Method::DELETE, "/items/:id"),
        (Method::POST, "/items/"),
        (Method::GET, "/only-get"),
    ] {
        router
            .insert(method.clone(), path, format!("{method} {path}"))
            .expect("valid route");
    }
    let cases = [
        (
            Method::GET,
            "/items/7",
            found("GET /items/:id", &[("id", "7")]),
        ),
        (
            purge.clone(),
            "/items/7",
            found("PURGE /items/:id", &[("id", "7")]),
        ),
        (
            Method::POST,
            "/items/7",
            Outcome::NotAllowed(vec![
                Method::DELETE,
                Method::GET,
                purge.clone(),
                Method::PUT,
            ]),
        ),
        (
            Method::PATCH,
            "/only-get",
            Outcome::NotAllowed(vec![Method::GET]),
        ),
        // The other form matching under another method is not a 405.
        (Method::POST, "/only-get/", Outcome::NotFound),
        // A redirect within the method wins over 405.
        (Method::POST, "/items", Outcome::Redirect("/items/".into())),
        (
            Method::GET,
            "/items/",
            Outcome::NotAllowed(vec![Method::POST]),
        ),
        (Method::GET, "/nothing", Outcome::NotFound),
    ];
    for (method, path, want) in cases {
        assert_eq!(lookup(&router, &method, path), want, "{method} {path}");
    }
}

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

/// Deterministic xorshift64* generator: reproducible "random" tables.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

#[test]
fn random_static_routes_look_up_to_themselves() {
    let words = [
        "a", "ab", "abc", "b", "ba", "é", "éa", "日本", "%41", "x.y", "-", "",
    ];
    let wildcards = [":p", "*rest"];
    let mut rng = Rng(0x5EED);
    let mut router = Router::new();
    let mut statics = Vec::new();
    for i in 0..3000 {
        let mut route = String::new();
        for depth in 0..1 + rng.below(5) {
            route.push('/');
            if rng.below(8) == 0 {
                // Some wildcard routes too: statics must still win over them.
                route.push_str(&format!("{}{depth}", rng.pick(&wildcards)));
            } else {
                route.push_str(rng.pick(&words));
            }
        }
        let is_static = !route.contains([':', '*']);
        if router.insert(Method::GET, &route, i).is_ok() && is_static {
            statics.push((route, i));
        }
    }
    assert!(statics.len() > 300, "only {} static routes", statics.len());
    for (route, i) in &statics {
        match router.lookup(&Method::GET, route) {
            Lookup::Found { value, params } => {
                assert_eq!((value, params.len()), (i, 0), "{route}")
            }
            _ => panic!("{route} not found"),
        }
    }
}

/// The matching rules, applied literally to every route: split into
/// segments, match each, and prefer static over param over catch-all at the
/// first segment where two matching routes differ.
fn reference_match(routes: &[String], path: &str) -> Option<(String, Vec<(String, String)>)> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let mut best: Option<(Vec<u8>, String, Vec<(String, String)>)> = None;
    'routes: for route in routes {
        let mut rank = Vec::new();
        let mut params = Vec::new();
        let pieces: Vec<&str> = route[1..].split('/').collect();
        for (i, piece) in pieces.iter().enumerate() {
            if let Some(name) = piece.strip_prefix('*') {
                if segments.len() <= i {
                    continue 'routes;
                }
                params.push((name.into(), format!("/{}", segments[i..].join("/"))));
                rank.push(2);
                break;
            }
            let Some(segment) = segments.get(i) else {
                continue 'routes;
            };
            if let Some(name) = piece.strip_prefix(':') {
                if segment.is_empty() {
                    continue 'routes;
                }
                params.push((name.into(), segment.to_string()));
                rank.push(1);
            } else if piece == segment {
                rank.push(0);
            } else {
                continue 'routes;
            }
            if i + 1 == pieces.len() && segments.len() != pieces.len() {
                continue 'routes;
            }
        }
        if best
            .as_ref()
            .is_none_or(|(best_rank, ..)| rank < *best_rank)
        {
            best = Some((rank, route.clone(), params));
        }
    }
    best.map(|(_, route, params)| (route, params))
}

fn reference_lookup(routes: &[String], path: &str) -> Outcome {
    if let Some((route, params)) = reference_match(routes, path) {
        return Outcome::Found(route, params);
    }
    let other = match path.strip_suffix('/') {
        Some(without) => without.to_string(),
        None => format!("{path}/"),
    };
    if path.len() > 1 && !other.starts_with("//") && reference_match(routes, &other).is_some() {
        return Outcome::Redirect(other);
    }
    Outcome::NotFound
}

#[test]
fn random_routes_agree_with_a_naive_reference_matcher() {
    let route_words = ["a", "b", "ab", "", ":p", ":p", "*rest"];
    let path_words = ["a", "b", "ab", "ba", "", "x"];
    let mut rng = Rng(0xC0FFEE);
    for round in 0..200 {
        let mut router = Router::new();
        let mut accepted = Vec::new();
        for _ in 0..1 + rng.below(12) {
            let depth = 1 + rng.below(4);
            let mut route = String::new();
            for level in 0..depth {
                let mut word = rng.pick(&route_words).to_string();
                if word.starts_with('*') && level + 1 < depth {
                    word = "a".into();
                }
                if word == ":p" {
                    word = format!(":p{level}"); // same position, same name
                }
                route.push('/');
                route.push_str(&word);
            }
            if router.insert(Method::GET, &route, route.clone()).is_ok() {
                accepted.push(route);
            }
        }
        for _ in 0..50 {
            let mut path = String::new();
            for _ in 0..1 + rng.below(5) {
                path.push('/');
                path.push_str(rng.pick(&path_words));
            }
            assert_eq!(
                lookup(&router, &Method::GET, &path),
                reference_lookup(&accepted, &path),
                "round {round}, GET {path} with routes {accepted:?}"
            );
        }
    }
}

#[test]
fn odd_inputs_never_panic_and_accepted_routes_match_their_own_text() {
    let long_static = "/a".repeat(10_000);
    let long_params: String = (0..200).map(|i| format!("/:p{i}")).collect();
    let long_unicode = format!("/{}", "é".repeat(3_000));
    let odd = [
        "",
        "/",
        "//",
        "///",
        "%",
        "/%",
        "/%zz",
        "/%%",
        "/%2",
        "/%FF",
        ":",
        "*",
        "/:",
        "/*",
        "/:/",
        "/*/",
        "/::",
        "/**",
        "/:a:b",
        "/a*",
        "/ü",
        "/ü/:ü",
        "/日本/*語",
        "\0",
        "/\0",
        "/a b",
        "/?q=1",
        "/#",
        "/\\",
        "//:x",
        "/:x//",
        "/*x/",
        "/a/*",
        "/:x/*y",
        "/é:x",
        "/é/é",
        "/éa",
        "/éb",
        "/\u{10FFFF}",
        "/a/:b/",
        "/a/:b/c",
        "/a/:b",
        "/a:b/c",
        &long_static,
        &long_params,
        &long_unicode,
    ];
    let methods = [
        Method::GET,
        Method::POST,
        Method::from_bytes(b"X-ODD").expect("token"),
    ];
    let mut router = Router::new();
    let mut accepted = Vec::new();
    for (i, route) in odd.iter().enumerate() {
        for prefix in ["", "/p"] {
            let route = format!("{prefix}{route}");
            let method = &methods[i % methods.len()];
            if router.insert(method.clone(), &route, i).is_ok() {
                accepted.push((method.clone(), route));
            }
        }
    }
    for (method, route) in &accepted {
        let outcome = router.lookup(method, route);
        assert!(
            matches!(outcome, Lookup::Found { .. }),
            "{method} {route}: {outcome:?}"
        );
    }
    for path in odd {
        for prefix in ["", "/p", "/p/"] {
            for method in &methods {
                let _ = router.lookup(method, &format!("{prefix}{path}"));
            }
        }
    }
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
