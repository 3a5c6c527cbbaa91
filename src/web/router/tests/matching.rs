//! What matches: priorities, backtracking, wildcards, decoding, trailing
//! slashes and 405s.

use http::Method;

use super::{check, found, lookup, router, Outcome};
use crate::web::router::Router;

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

/// The route set of Gin's `TestTreeWildcard`.
const GIN_WILDCARD_ROUTES: &[&str] = &[
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

/// A path, the route it must match, and the params it must capture.
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The expected matches for [`GIN_WILDCARD_ROUTES`], from Gin's test.
#[rustfmt::skip]
const GIN_WILDCARD_MATCHES: &[Case] = &[
    ("/", "/", &[]),
    ("/cmd/test/", "/cmd/:tool/", &[("tool", "test")]),
    ("/cmd/test/3", "/cmd/:tool/:sub", &[("tool", "test"), ("sub", "3")]),
    ("/cmd/who/", "/cmd/:tool/", &[("tool", "who")]),
    ("/cmd/whoami", "/cmd/whoami", &[]),
    // Gin answers a redirect to /cmd/whoami here, because it looks for a
    // trailing-slash hint before it backtracks; here a path that some route
    // matches is served by that route.
    ("/cmd/whoami/", "/cmd/:tool/", &[("tool", "whoami")]),
    ("/cmd/whoami/r", "/cmd/:tool/:sub", &[("tool", "whoami"), ("sub", "r")]),
    ("/cmd/whoami/root", "/cmd/whoami/root", &[]),
    ("/cmd/whoami/root/", "/cmd/whoami/root/", &[]),
    ("/src/", "/src/*filepath", &[("filepath", "/")]),
    ("/src/some/file.png", "/src/*filepath", &[("filepath", "/some/file.png")]),
    ("/search/", "/search/", &[]),
    ("/search/someth!ng+in+ünìcodé", "/search/:query", &[("query", "someth!ng+in+ünìcodé")]),
    ("/search/gin", "/search/:query", &[("query", "gin")]),
    ("/search/gin-gonic", "/search/gin-gonic", &[]),
    ("/search/google", "/search/google", &[]),
    ("/user_gopher", "/user_:name", &[("name", "gopher")]),
    ("/user_gopher/about", "/user_:name/about", &[("name", "gopher")]),
    ("/files/js/inc/framework.js", "/files/:dir/*filepath", &[("dir", "js"), ("filepath", "/inc/framework.js")]),
    ("/info/gordon/public", "/info/:user/public", &[("user", "gordon")]),
    ("/info/gordon/project/go", "/info/:user/project/:project", &[("user", "gordon"), ("project", "go")]),
    ("/info/gordon/project/golang", "/info/:user/project/golang", &[("user", "gordon")]),
    ("/aa/aa", "/aa/*xx", &[("xx", "/aa")]),
    ("/ab/ab", "/ab/*xx", &[("xx", "/ab")]),
    ("/a", "/:cc", &[("cc", "a")]),
    ("/all", "/:cc", &[("cc", "all")]),
    ("/aa", "/:cc", &[("cc", "aa")]),
    ("/aaa/cc", "/:cc/cc", &[("cc", "aaa")]),
    ("/abb/cc", "/:cc/cc", &[("cc", "abb")]),
    ("/c1/d/e", "/c1/:dd/e", &[("dd", "d")]),
    ("/c1/d/e1", "/c1/:dd/e1", &[("dd", "d")]),
    ("/c1/d/ee", "/:cc/:dd/ee", &[("cc", "c1"), ("dd", "d")]),
    ("/cc/cc", "/:cc/cc", &[("cc", "cc")]),
    ("/c/d/e/ff", "/:cc/:dd/:ee/ff", &[("cc", "c"), ("dd", "d"), ("ee", "e")]),
    ("/cc/dd/ee/ff/gg/hh", "/:cc/:dd/:ee/:ff/:gg/hh", &[("cc", "cc"), ("dd", "dd"), ("ee", "ee"), ("ff", "ff"), ("gg", "gg")]),
    ("/get/test/abc/", "/get/test/abc/", &[]),
    ("/get/te/abc/", "/get/:param/abc/", &[("param", "te")]),
    ("/get/testaa/abc/", "/get/:param/abc/", &[("param", "testaa")]),
    ("/something/secondthing/test", "/something/secondthing/test", &[]),
    ("/something/secondthingaaaa/thirdthing", "/something/:paramname/thirdthing", &[("paramname", "secondthingaaaa")]),
    ("/get/abc", "/get/abc", &[]),
    ("/get/abz", "/get/:param", &[("param", "abz")]),
    ("/get/abcd", "/get/:param", &[("param", "abcd")]),
    ("/get/abc/123abc", "/get/abc/123abc", &[]),
    ("/get/abc/123ab", "/get/abc/:param", &[("param", "123ab")]),
    ("/get/abc/123abcddxx", "/get/abc/:param", &[("param", "123abcddxx")]),
    ("/get/abc/123abc/xxx8", "/get/abc/123abc/xxx8", &[]),
    ("/get/abc/123abc/x", "/get/abc/123abc/:param", &[("param", "x")]),
    ("/get/abc/123abc/xxx8/1234", "/get/abc/123abc/xxx8/1234", &[]),
    ("/get/abc/123abc/xxx8/12", "/get/abc/123abc/xxx8/:param", &[("param", "12")]),
    ("/get/abc/12/test", "/get/abc/:param/test", &[("param", "12")]),
    ("/get/abc/123abc/test", "/get/abc/123abc/:param", &[("param", "test")]),
    ("/get/abc/123abz/test", "/get/abc/:param/test", &[("param", "123abz")]),
    ("/get/abc/123abd/test", "/get/abc/123abd/:param", &[("param", "test")]),
    ("/get/abc/123/test22", "/get/abc/123/:param", &[("param", "test22")]),
];

#[test]
fn gin_tree_wildcard_cases_match_like_gin() {
    let router = router(GIN_WILDCARD_ROUTES);
    for (path, route, params) in GIN_WILDCARD_MATCHES {
        assert_eq!(
            lookup(&router, &Method::GET, path),
            found(route, params),
            "GET {path}"
        );
    }
    let redirects = [
        ("/cmd/test", "/cmd/test/"),
        ("/cmd/who", "/cmd/who/"),
        ("/cmd/whoami/r/", "/cmd/whoami/r"),
        (
            "/search/someth!ng+in+ünìcodé/",
            "/search/someth!ng+in+ünìcodé",
        ),
    ];
    for (path, location) in redirects {
        let want = Outcome::Redirect(location.into());
        assert_eq!(lookup(&router, &Method::GET, path), want, "GET {path}");
    }
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
    // `/\evil.com` cannot be registered (a backslash escapes only `:`), but
    // `/:test` matches it, so a redirect to it would be offered without the check.
    check(
        &["/:test", "//evil.com"],
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
