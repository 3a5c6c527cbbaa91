//! Gin's engine as a Gin user meets it on `gin.New()` (here
//! `Engine::bare()`): the 404 and 405 chains, what registration refuses, how
//! relative paths join, and the engine's switches, each on and off. The
//! cases mirror Gin's own tests (`routes_test.go`, `gin_test.go`,
//! `utils_test.go` at gin-gonic/gin `dcaa4296`) where they apply; each test
//! says which. Every request goes to a real server through a real client.

mod support;

use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use serde_json::json;

use handwire::web::{handler_now, named, Engine, Handler};
use support::app::start;
use support::http::{get, send, Proto, BOTH};

fn ok() -> Handler {
    handler_now("ok", |c| c.string(StatusCode::OK, "ok"))
}

/// A handler that writes its parameters as `name=value` lines.
fn echo_params(names: &'static [&'static str]) -> Handler {
    handler_now("echo", move |c| {
        let text: Vec<String> = (names.iter())
            .map(|n| format!("{n}={}", c.param(n).unwrap_or("-")))
            .collect();
        c.string(StatusCode::OK, text.join("\n"))
    })
}

// ---- the 404 and 405 chains (Gin's serveError) ---------------------------

#[tokio::test]
async fn the_404_status_is_set_before_the_global_middleware_runs() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut e = Engine::bare();
    let record = seen.clone();
    e.use_middleware(handler_now("watch", move |c| {
        record.lock().unwrap().push(c.response_status().as_u16());
    }));
    e.post("/thing", ok()).unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/missing").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        let r = get(proto, srv.addr, "/thing").await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(std::mem::take(&mut *seen.lock().unwrap()), [404, 405]);
    }
}

/// Gin: `TestRouteNotAllowedDisabled` (a `NoRoute` handler that writes
/// nothing) and issue #2843 in `TestRouterNotFound` (one that writes).
#[tokio::test]
async fn a_no_route_chain_that_writes_nothing_gets_gins_text_and_one_that_writes_stands() {
    let mut e = Engine::bare();
    e.get("/logout", ok()).unwrap();
    e.no_route(vec![handler_now("login_only", |c| {
        if c.uri().path() == "/login" {
            c.string(StatusCode::OK, "login");
        }
    })]);
    e.no_method(vec![handler_now("quiet", |_| {})]);
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/login").await;
        assert_eq!((r.status, r.text().as_str()), (StatusCode::OK, "login"));
        let r = get(proto, srv.addr, "/nope").await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (StatusCode::NOT_FOUND, "404 page not found")
        );
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        let r = send(proto, srv.addr, Method::PUT, "/logout", &[], "").await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (StatusCode::METHOD_NOT_ALLOWED, "405 method not allowed")
        );
        assert_eq!(r.header("allow"), Some("GET"));
    }
}

/// Gin: `TestRouteServeErrorWithWriteHeader`.
#[tokio::test]
async fn a_status_a_middleware_set_without_writing_goes_out_with_an_empty_body() {
    let mut e = Engine::bare();
    e.use_middleware(named("misdirected", |c| {
        Box::pin(async move {
            c.status(StatusCode::MISDIRECTED_REQUEST);
            c.next().await;
        })
    }));
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/NotFound").await;
        assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST);
        assert!(r.body.is_empty(), "{:?}", r.text());
    }
}

/// Gin: `TestRouterNotFound`, its custom handler (`AbortWithStatus(404)`
/// writes the status: no default text follows).
#[tokio::test]
async fn a_no_route_handler_that_aborts_with_a_status_answers_that_status_alone() {
    let mut e = Engine::bare();
    e.no_route(vec![handler_now("gone", |c| {
        c.abort_with_status(StatusCode::NOT_FOUND)
    })]);
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/nope").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.is_empty(), "{:?}", r.text());
}

#[tokio::test]
async fn a_global_middleware_that_aborts_a_404_still_gets_gins_text() {
    let mut e = Engine::bare();
    e.use_middleware(handler_now("stop", |c| c.abort()));
    e.no_route(vec![handler_now("never", |c| {
        c.string(StatusCode::OK, "ran")
    })]);
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/nope").await;
    assert_eq!(
        (r.status, r.text().as_str()),
        (StatusCode::NOT_FOUND, "404 page not found")
    );
}

// ---- what registration refuses, and how paths join ----------------------

/// Gin's `addRoute`: "there must be at least one handler".
#[test]
fn a_route_whose_whole_chain_is_empty_is_refused_naming_it() {
    let mut e = Engine::bare();
    let err = e.handle(Method::GET, "/x", vec![]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "there must be at least one handler for GET '/x'"
    );
    let mut g = e.group("/api");
    let err = g.handle(Method::POST, "y", vec![]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "there must be at least one handler for POST '/api/y'"
    );
    // Middleware alone is a chain, as in Gin (`Use`, then `GET(path)`).
    e.use_middleware(ok());
    e.handle(Method::GET, "/x", vec![]).unwrap();
    let mut g = e.group("/g");
    g.use_middleware(ok());
    g.handle(Method::GET, "/y", vec![]).unwrap();
}

/// Gin's `TestRouterGroupInvalidStatic`-style guard in `Handle`: a method
/// is upper-case letters (`regEnLetter`).
#[test]
fn a_method_that_is_not_upper_case_letters_is_refused_naming_it() {
    let mut e = Engine::bare();
    for method in ["PATCh", "1GET", "GET1", "G-T"] {
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let err = e.handle(m, "/x", vec![ok()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("http method {method} is not valid for path '/x'")
        );
    }
    let custom = Method::from_bytes(b"PURGE").unwrap();
    e.handle(custom, "/x", vec![ok()]).unwrap();
}

/// Gin's `joinPaths` (`TestJoinPaths` in `utils_test.go`, through routes
/// and groups): a relative path joins onto its parent, `.`, `..` and `//`
/// are cleaned, a trailing slash is kept.
#[tokio::test]
async fn relative_paths_join_onto_their_parent_as_gins_join_paths() {
    let mut e = Engine::bare();
    e.get("hello", ok()).unwrap();
    e.get("", ok()).unwrap();
    {
        let mut v1 = e.group("v1");
        v1.get("users/", ok()).unwrap();
        v1.get("//a//b", ok()).unwrap();
        let mut deep = v1.group("x/../y/");
        deep.get("./z", ok()).unwrap();
        deep.get("", ok()).unwrap();
    }
    let mut g = e.group("/a/");
    g.get("/", ok()).unwrap();
    g.get("/hola//", ok()).unwrap();
    let srv = start(e.build()).await;
    for path in [
        "/hello",
        "/",
        "/v1/users/",
        "/v1/a/b",
        "/v1/y/z",
        "/v1/y/",
        "/a/",
        "/a/hola/",
    ] {
        let r = get(Proto::H1, srv.addr, path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
    }
}

// ---- the switches ----------------------------------------------------------

/// Gin: `TestRouteRedirectTrailingSlash`, on and off.
#[tokio::test]
async fn redirect_trailing_slash_on_redirects_and_off_answers_404() {
    for on in [true, false] {
        let mut e = Engine::bare();
        e.redirect_trailing_slash(on);
        e.get("/path", ok()).unwrap();
        e.get("/path2/", ok()).unwrap();
        e.post("/path3", ok()).unwrap();
        e.put("/path4/", ok()).unwrap();
        let srv = start(e.build()).await;
        let cases = [
            (
                Method::GET,
                "/path/",
                StatusCode::MOVED_PERMANENTLY,
                "/path",
            ),
            (
                Method::GET,
                "/path2",
                StatusCode::MOVED_PERMANENTLY,
                "/path2/",
            ),
            (
                Method::POST,
                "/path3/",
                StatusCode::TEMPORARY_REDIRECT,
                "/path3",
            ),
            (
                Method::PUT,
                "/path4",
                StatusCode::TEMPORARY_REDIRECT,
                "/path4/",
            ),
        ];
        for (method, path, status, location) in cases {
            let r = send(Proto::H1, srv.addr, method.clone(), path, &[], "").await;
            if on {
                assert_eq!((r.status, r.header("location")), (status, Some(location)));
            } else {
                assert_eq!(r.status, StatusCode::NOT_FOUND, "{method} {path}");
                assert_eq!(r.header("location"), None);
            }
        }
        assert_eq!(
            get(Proto::H1, srv.addr, "/path").await.status,
            StatusCode::OK
        );
    }
}

/// Gin: `TestRouteRedirectFixedPath` and the cases of `TestRouterNotFound`;
/// off (Gin's default), the same requests are 404.
#[tokio::test]
async fn redirect_fixed_path_on_redirects_to_the_routes_case_and_off_answers_404() {
    for on in [true, false] {
        let mut e = Engine::bare();
        e.redirect_fixed_path(on);
        e.get("/path", ok()).unwrap();
        e.get("/Path2", ok()).unwrap();
        e.post("/PATH3", ok()).unwrap();
        e.post("/Path4/", ok()).unwrap();
        e.get("/dir/", ok()).unwrap();
        e.get("/users/:id", echo_params(&["id"])).unwrap();
        let srv = start(e.build()).await;
        let cases = [
            (Method::GET, "/PATH", StatusCode::MOVED_PERMANENTLY, "/path"),
            (
                Method::GET,
                "/path2",
                StatusCode::MOVED_PERMANENTLY,
                "/Path2",
            ),
            (
                Method::POST,
                "/path3",
                StatusCode::TEMPORARY_REDIRECT,
                "/PATH3",
            ),
            (
                Method::POST,
                "/path4",
                StatusCode::TEMPORARY_REDIRECT,
                "/Path4/",
            ),
            (Method::GET, "/DIR/", StatusCode::MOVED_PERMANENTLY, "/dir/"),
            (
                Method::GET,
                "/PATH/",
                StatusCode::MOVED_PERMANENTLY,
                "/path",
            ),
            (Method::GET, "/DIR", StatusCode::MOVED_PERMANENTLY, "/dir/"),
            (
                Method::GET,
                "/../path",
                StatusCode::MOVED_PERMANENTLY,
                "/path",
            ),
            (
                Method::GET,
                "/USERS/AbC",
                StatusCode::MOVED_PERMANENTLY,
                "/users/AbC",
            ),
        ];
        for (method, path, status, location) in cases {
            let r = send(Proto::H1, srv.addr, method.clone(), path, &[], "").await;
            if on {
                let got = (r.status, r.header("location"));
                assert_eq!(got, (status, Some(location)), "{method} {path}");
            } else {
                assert_eq!(r.status, StatusCode::NOT_FOUND, "{method} {path}");
            }
        }
        let r = get(Proto::H1, srv.addr, "/nope").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }
}

/// Gin: `TestRouterNotFoundWithRemoveExtraSlash`, on and off.
#[tokio::test]
async fn remove_extra_slash_on_cleans_the_path_before_matching_and_off_does_not() {
    for on in [true, false] {
        let mut e = Engine::bare();
        e.remove_extra_slash(on);
        e.get("/path", ok()).unwrap();
        e.get("/users/:id", echo_params(&["id"])).unwrap();
        let srv = start(e.build()).await;
        for path in ["/../path", "//path", "/x/./../path"] {
            let r = get(Proto::H1, srv.addr, path).await;
            let want = if on {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            };
            assert_eq!(r.status, want, "{path} with remove_extra_slash {on}");
        }
        let r = get(Proto::H1, srv.addr, "/users//7").await;
        if on {
            assert_eq!((r.status, r.text().as_str()), (StatusCode::OK, "id=7"));
        } else {
            assert_eq!(r.status, StatusCode::NOT_FOUND);
        }
        let r = get(Proto::H1, srv.addr, "/nope").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }
}

/// Gin: `TestRouteRawPath` and `TestRouteRawPathNoUnescape`: handwire's
/// default is Gin's `UseRawPath` with `UnescapePathValues`, so `%2F` stays in
/// its segment and the value is decoded; with `UseRawPath` off (Gin's
/// default) the decoded path is matched and `%2F` separates segments.
#[tokio::test]
async fn use_raw_path_and_unescape_path_values_on_and_off() {
    let path = "/project/Some%2FOther%2FProject/build/222";
    let names: &[&str] = &["name", "num"];
    // (use_raw_path, use_escaped_path, unescape_path_values) -> answer
    let cases = [
        (
            (true, false, true),
            Some("name=Some/Other/Project\nnum=222"),
        ),
        (
            (true, false, false),
            Some("name=Some%2FOther%2FProject\nnum=222"),
        ),
        ((false, false, true), None),
        (
            (false, true, true),
            Some("name=Some/Other/Project\nnum=222"),
        ),
        (
            (false, true, false),
            Some("name=Some%2FOther%2FProject\nnum=222"),
        ),
    ];
    for ((raw, escaped, unescape), want) in cases {
        let mut e = Engine::bare();
        e.use_raw_path(raw);
        e.use_escaped_path(escaped);
        e.unescape_path_values(unescape);
        e.post("/project/:name/build/:num", echo_params(names))
            .unwrap();
        e.post("/project/:name", echo_params(&["name"])).unwrap();
        let srv = start(e.build()).await;
        let r = send(Proto::H1, srv.addr, Method::POST, path, &[], "").await;
        let switches = format!("raw {raw}, escaped {escaped}, unescape {unescape}");
        match want {
            Some(text) => assert_eq!(r.text(), text, "{switches}"),
            None => assert_eq!(r.status, StatusCode::NOT_FOUND, "{switches}"),
        }
        // A plain escape decodes whichever path is matched.
        let r = send(Proto::H1, srv.addr, Method::POST, "/project/a%20b", &[], "").await;
        let want = if unescape || !(raw || escaped) {
            "name=a b"
        } else {
            "name=a%20b"
        };
        assert_eq!(r.text(), want, "{switches}");
    }
}

/// Gin: `TestRouteNotAllowedDisabled` and `TestRouteNotAllowedEnabled`;
/// handwire's default is on (Gin's is off).
#[tokio::test]
async fn handle_method_not_allowed_on_answers_405_with_allow_and_off_404() {
    for on in [true, false] {
        let mut e = Engine::bare();
        e.handle_method_not_allowed(on);
        e.post("/path", ok()).unwrap();
        e.no_method(vec![handler_now("teapot", |c| {
            c.json(StatusCode::IM_A_TEAPOT, &json!({"error": "responseText"}))
        })]);
        let srv = start(e.build()).await;
        let r = get(Proto::H1, srv.addr, "/path").await;
        if on {
            assert_eq!(r.status, StatusCode::IM_A_TEAPOT);
            assert_eq!(r.header("allow"), Some("POST"));
        } else {
            let got = (r.status, r.text());
            assert_eq!(got, (StatusCode::NOT_FOUND, "404 page not found".into()));
            assert_eq!(r.header("allow"), None);
        }
    }
}

// ---- gin.New() + Recovery(): the engine without its access log ------------

/// `Engine::with_access_log(false)`, router-demo's `--no-access-log`, is
/// Gin's `gin.New()` with `Recovery()`: a panicking handler is still
/// answered 500 and the server keeps serving (that the access lines are
/// gone is proven on the binaries, `tests/access_log_switch.rs`).
#[tokio::test]
async fn without_the_access_log_the_engine_still_recovers_a_panic() {
    let mut e = Engine::with_access_log(false);
    e.get("/panic", handler_now("exploding", |_c| panic!("boom")))
        .unwrap();
    e.get("/ok", ok()).unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/panic").await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{proto:?}");
        let r = get(proto, srv.addr, "/ok").await;
        assert_eq!((r.status, r.text()), (StatusCode::OK, "ok".into()));
    }
}
