//! The rules of the middleware chain and of routing, each proved against a
//! real server with a real client; `docs/middleware.md` teaches them in this
//! order and names the test of each. The handlers record what they do into a
//! shared log, and the tests assert the exact order of entries and exits.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::json;

use handwire::types::BoxFuture;
use handwire::web::middleware;
use handwire::web::Engine;
use handwire::web::{after_rest, catching, handler, handler_now, named, Context, Handler};
use support::app::start;
use support::http::{get, send, Client, Proto, BOTH};

type Log = Arc<Mutex<Vec<String>>>;

fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn push(log: &Log, entry: impl Into<String>) {
    log.lock().unwrap().push(entry.into());
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// Middleware that logs `name>` on the way in and `<name` on the way out.
fn wrap(log: &Log, name: &'static str) -> Handler {
    let log = log.clone();
    handler(move |c| {
        let log = log.clone();
        Box::pin(async move {
            push(&log, format!("{name}>"));
            c.next().await;
            push(&log, format!("<{name}"));
        })
    })
}

/// Middleware that logs `name` and returns without calling next.
fn no_next(log: &Log, name: &'static str) -> Handler {
    let log = log.clone();
    handler(move |c| {
        let log = log.clone();
        Box::pin(async move {
            let _ = &c;
            push(&log, name);
        })
    })
}

/// Middleware that aborts, then logs `name: after abort (aborted=..)`.
fn aborting(log: &Log, name: &'static str) -> Handler {
    let log = log.clone();
    handler(move |c| {
        let log = log.clone();
        Box::pin(async move {
            push(&log, format!("{name}>"));
            c.abort();
            push(
                &log,
                format!("{name}: after abort (aborted={})", c.is_aborted()),
            );
        })
    })
}

/// Final handler: logs `name` and writes `name` as the body.
fn endpoint(log: &Log, name: &'static str) -> Handler {
    let log = log.clone();
    handler(move |c| {
        let log = log.clone();
        Box::pin(async move {
            push(&log, name);
            c.string(StatusCode::OK, name);
        })
    })
}

#[tokio::test]
async fn chain_is_global_then_group_then_route_middleware_then_handler() {
    let log = new_log();
    let mut e = Engine::bare();
    e.use_middleware(wrap(&log, "global"));
    let mut g = e.group("/g");
    g.use_middleware(wrap(&log, "group"));
    g.handle(
        Method::GET,
        "/r",
        vec![wrap(&log, "route"), endpoint(&log, "handler")],
    )
    .unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/g/r").await;
        assert_eq!(r.text(), "handler");
        assert_eq!(
            take(&log),
            ["global>", "group>", "route>", "handler", "<route", "<group", "<global"]
        );
    }
}

#[tokio::test]
async fn logger_and_recovery_run_by_default_and_a_panic_becomes_500() {
    let mut e = Engine::new();
    e.get(
        "/panic",
        handler(|c| {
            Box::pin(async move {
                c.string(StatusCode::OK, "partial");
                panic!("handler exploded");
            })
        }),
    )
    .unwrap();
    e.get(
        "/ok",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "fine") })),
    )
    .unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/panic").await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            r.body.is_empty(),
            "partial body must be discarded: {:?}",
            r.text()
        );
        // The server keeps serving, on a new connection and with both protocols.
        let r = get(proto, srv.addr, "/ok").await;
        assert_eq!((r.status, r.text().as_str()), (StatusCode::OK, "fine"));
    }
}

#[tokio::test]
async fn next_runs_rest_of_chain_then_returns_to_caller() {
    let log = new_log();
    let mut e = Engine::bare();
    e.handle(
        Method::GET,
        "/",
        vec![wrap(&log, "a"), wrap(&log, "b"), endpoint(&log, "h")],
    )
    .unwrap();
    let srv = start(e.build()).await;
    get(Proto::H1, srv.addr, "/").await;
    assert_eq!(take(&log), ["a>", "b>", "h", "<b", "<a"]);
}

#[tokio::test]
async fn middleware_without_next_still_continues_chain() {
    let log = new_log();
    let mut e = Engine::bare();
    e.handle(
        Method::GET,
        "/",
        vec![wrap(&log, "a"), no_next(&log, "quiet"), endpoint(&log, "h")],
    )
    .unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/").await;
    assert_eq!(r.text(), "h");
    // "quiet" returns before "h" runs: the loop in next(), not "quiet", runs h.
    assert_eq!(take(&log), ["a>", "quiet", "h", "<a"]);
}

/// Middleware whose code all runs after the rest: logs `<name (aborted=..)`.
fn after(log: &Log, name: &'static str) -> Handler {
    let log = log.clone();
    after_rest(name, move |c| {
        push(&log, format!("<{name} (aborted={})", c.is_aborted()))
    })
}

/// A handler that never awaits: logs `name`, aborts if asked to.
fn now(log: &Log, name: &'static str, abort: bool) -> Handler {
    let log = log.clone();
    handler_now(name, move |c| {
        push(&log, name);
        if abort {
            c.abort();
        }
    })
}

#[tokio::test]
async fn handlers_that_never_await_follow_the_same_next_and_abort_rules() {
    // The same chains as the awaiting rules above, built of the two kinds
    // the loop runs without a future: a `handler_now` is a handler that
    // returns without next() (the implicit next); an `after_rest` is one
    // whose whole code follows `next().await`, so its code runs on the
    // way out, innermost first, in order with the awaiting ones.
    let log = new_log();
    let mut e = Engine::bare();
    // The same chain twice: its fourth handler goes on, or aborts.
    for (path, fourth) in [
        ("/", now(&log, "quiet", false)),
        ("/abort", now(&log, "guard", true)),
    ] {
        let chain = vec![
            after(&log, "a"),
            wrap(&log, "b"),
            after(&log, "c"),
            fourth,
            endpoint(&log, "h"),
        ];
        e.handle(Method::GET, path, chain).unwrap();
    }
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/").await;
        assert_eq!(r.text(), "h");
        assert_eq!(
            take(&log),
            [
                "b>",
                "quiet",
                "h",
                "<c (aborted=false)",
                "<b",
                "<a (aborted=false)"
            ]
        );
        let r = get(proto, srv.addr, "/abort").await;
        assert_eq!((r.status, r.body.len()), (StatusCode::OK, 0));
        assert_eq!(
            take(&log),
            [
                "b>",
                "guard",
                "<c (aborted=true)",
                "<b",
                "<a (aborted=true)"
            ]
        );
    }
}

#[tokio::test]
async fn a_handler_called_on_its_own_runs_as_its_kind_says() {
    // `Handler::call` gives every kind a future: an `after_rest` runs the
    // rest of the chain first, as the chain's loop would.
    let log = new_log();
    let mut e = Engine::bare();
    let (first, quiet) = (after(&log, "first"), now(&log, "quiet", false));
    e.handle(
        Method::GET,
        "/",
        vec![
            handler(move |c| {
                let (first, quiet) = (first.clone(), quiet.clone());
                Box::pin(async move {
                    quiet.call(c).await;
                    first.call(c).await;
                })
            }),
            endpoint(&log, "h"),
        ],
    )
    .unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/").await;
    assert_eq!(r.text(), "h");
    assert_eq!(take(&log), ["quiet", "h", "<first (aborted=false)"]);
}

#[tokio::test]
async fn abort_stops_chain_but_runs_rest_of_aborting_middleware() {
    let log = new_log();
    let mut e = Engine::bare();
    e.handle(
        Method::GET,
        "/",
        vec![
            wrap(&log, "outer"),
            aborting(&log, "guard"),
            endpoint(&log, "h"),
        ],
    )
    .unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/").await;
        assert_eq!(
            take(&log),
            [
                "outer>",
                "guard>",
                "guard: after abort (aborted=true)",
                "<outer"
            ]
        );
        // Abort with nothing written: 200 and an empty body.
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.body.is_empty());
    }
}

#[tokio::test]
async fn abort_inside_next_stops_the_callers_loop_too() {
    // A middleware that aborts *after* next() returned must not make the
    // outer loop re-run anything; one that aborts in a nested position stops
    // the handlers after it even though the outer middleware called next().
    let log = new_log();
    let mut e = Engine::bare();
    e.handle(
        Method::GET,
        "/",
        vec![
            wrap(&log, "a"),
            no_next(&log, "b"),
            aborting(&log, "c"),
            endpoint(&log, "h"),
        ],
    )
    .unwrap();
    let srv = start(e.build()).await;
    get(Proto::H1, srv.addr, "/").await;
    assert_eq!(
        take(&log),
        ["a>", "b", "c>", "c: after abort (aborted=true)", "<a"]
    );
}

#[tokio::test]
async fn abort_helpers_set_status_and_json_body() {
    let mut e = Engine::bare();
    e.handle(
        Method::GET,
        "/status",
        vec![
            handler(|c| Box::pin(async move { c.abort_with_status(StatusCode::UNAUTHORIZED) })),
            handler(|c| Box::pin(async move { c.string(StatusCode::OK, "must not run") })),
        ],
    )
    .unwrap();
    e.handle(
        Method::GET,
        "/json",
        vec![
            handler(|c| {
                Box::pin(
                    async move { c.abort_with_json(StatusCode::FORBIDDEN, json!({"msg": "no"})) },
                )
            }),
            handler(|c| Box::pin(async move { c.string(StatusCode::OK, "must not run") })),
        ],
    )
    .unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/status").await;
    assert_eq!((r.status, r.body.len()), (StatusCode::UNAUTHORIZED, 0));
    let r = get(Proto::H2, srv.addr, "/json").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.json(), json!({"msg": "no"}));
}

#[tokio::test]
async fn values_set_by_middleware_are_readable_by_later_handlers() {
    let mut e = Engine::bare();
    e.use_middleware(handler(|c| {
        Box::pin(async move {
            c.set("middle", "from global".to_string());
            c.set("count", 41u32);
            c.next().await;
        })
    }));
    e.handle(
        Method::GET,
        "/",
        vec![
            handler(|c| {
                Box::pin(async move {
                    let n = *c.get::<u32>("count").unwrap();
                    c.set("count", n + 1);
                })
            }),
            handler(|c| {
                Box::pin(async move {
                    let body = format!(
                        "{} {} {:?}",
                        c.get::<String>("middle").unwrap(),
                        c.get::<u32>("count").unwrap(),
                        c.get::<u64>("count"), // wrong type: None, not a panic
                    );
                    c.string(StatusCode::OK, body);
                })
            }),
        ],
    )
    .unwrap();
    let srv = start(e.build()).await;
    assert_eq!(
        get(Proto::H1, srv.addr, "/").await.text(),
        "from global 42 None"
    );
}

#[tokio::test]
async fn groups_prefix_routes_add_middleware_and_nest() {
    let log = new_log();
    let mut e = Engine::bare();
    {
        let mut api = e.group("/api");
        api.use_middleware(wrap(&log, "api"));
        api.get("/ping", endpoint(&log, "ping")).unwrap();
        let mut v1 = api.group("/v1");
        v1.use_middleware(wrap(&log, "v1"));
        v1.get("/users", endpoint(&log, "users")).unwrap();
    }
    e.get("/ping", endpoint(&log, "root ping")).unwrap();
    let srv = start(e.build()).await;
    assert_eq!(
        get(Proto::H1, srv.addr, "/api/v1/users").await.text(),
        "users"
    );
    assert_eq!(take(&log), ["api>", "v1>", "users", "<v1", "<api"]);
    assert_eq!(get(Proto::H1, srv.addr, "/api/ping").await.text(), "ping");
    assert_eq!(take(&log), ["api>", "ping", "<api"]);
    assert_eq!(get(Proto::H1, srv.addr, "/ping").await.text(), "root ping");
    assert_eq!(take(&log), ["root ping"]);
    assert_eq!(
        get(Proto::H1, srv.addr, "/v1/users").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn matching_is_by_method_and_path_and_colon_segments_are_params() {
    fn show(c: &mut Context) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let body = format!(
                "{} {} {}",
                c.method(),
                c.param("id").unwrap_or("-"),
                c.param("name").unwrap_or("-")
            );
            c.string(StatusCode::OK, body);
        })
    }
    let mut e = Engine::bare();
    e.get("/book/:id", handler(show)).unwrap();
    e.post("/book/:id/author/:name", handler(show)).unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        assert_eq!(get(proto, srv.addr, "/book/42").await.text(), "GET 42 -");
        assert_eq!(
            get(proto, srv.addr, "/book/caf%C3%A9").await.text(),
            "GET café -"
        );
        let r = send(proto, srv.addr, Method::POST, "/book/7/author/ann", &[], "").await;
        assert_eq!(r.text(), "POST 7 ann");
        let r = send(proto, srv.addr, Method::POST, "/book/42", &[], "").await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    }
}

#[tokio::test]
async fn unmatched_requests_get_404_and_405_with_allow_and_global_middleware_sees_them() {
    let log = new_log();
    let mut e = Engine::bare();
    e.use_middleware(wrap(&log, "global"));
    e.get("/thing", endpoint(&log, "get")).unwrap();
    e.put("/thing", endpoint(&log, "put")).unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/missing").await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (StatusCode::NOT_FOUND, "404 page not found")
        );
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(take(&log), ["global>", "<global"]);
        let r = send(proto, srv.addr, Method::DELETE, "/thing", &[], "").await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.text(), "405 method not allowed");
        assert_eq!(r.header("allow"), Some("GET, PUT"));
        assert_eq!(take(&log), ["global>", "<global"]);
    }
}

#[tokio::test]
async fn not_found_and_method_not_allowed_handlers_are_replaceable() {
    let mut e = Engine::bare();
    e.get(
        "/thing",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "x") })),
    )
    .unwrap();
    e.no_route(vec![handler(|c| {
        Box::pin(async move { c.json(StatusCode::NOT_FOUND, &json!({"error": "no such route"})) })
    })]);
    e.no_method(vec![handler(|c| {
        Box::pin(async move {
            c.json(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({"error": "wrong method"}),
            )
        })
    })]);
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/nope").await;
    assert_eq!(r.json(), json!({"error": "no such route"}));
    let r = send(Proto::H1, srv.addr, Method::POST, "/thing", &[], "").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.header("allow"), Some("GET"));
    assert_eq!(r.json(), json!({"error": "wrong method"}));
}

#[tokio::test]
async fn trailing_slash_redirects_301_for_get_and_307_otherwise() {
    let mut e = Engine::bare();
    let ok = || handler(|c| Box::pin(async move { c.string(StatusCode::OK, "ok") }));
    e.get("/a", ok()).unwrap();
    e.post("/b/", ok()).unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/a/?x=1").await;
    assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(r.header("location"), Some("/a?x=1"));
    let r = send(Proto::H1, srv.addr, Method::POST, "/b", &[], "").await;
    assert_eq!(r.status, StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(r.header("location"), Some("/b/"));
}

#[tokio::test]
async fn route_registration_conflicts_are_errors_naming_the_path() {
    let mut e = Engine::bare();
    let ok = || handler(|c| Box::pin(async move { c.string(StatusCode::OK, "ok") }));
    e.get("/book/:id", ok()).unwrap();
    let err = e.get("/book/:id", ok()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "handlers are already registered for path '/book/:id'"
    );
    // Same path under another method is fine.
    e.post("/book/:id", ok()).unwrap();
}

#[tokio::test]
async fn middleware_registered_after_a_route_does_not_apply_to_it_as_in_gin() {
    let log = new_log();
    let mut e = Engine::bare();
    e.get("/early", endpoint(&log, "early")).unwrap();
    e.use_middleware(wrap(&log, "late"));
    e.get("/later", endpoint(&log, "later")).unwrap();
    let srv = start(e.build()).await;
    get(Proto::H1, srv.addr, "/early").await;
    assert_eq!(take(&log), ["early"]);
    get(Proto::H1, srv.addr, "/later").await;
    assert_eq!(take(&log), ["late>", "later", "<late"]);
    // The engine's own answers are chained at build(): the late one is there.
    for (method, path, status) in [
        (Method::GET, "/nowhere", StatusCode::NOT_FOUND),
        (Method::POST, "/early", StatusCode::METHOD_NOT_ALLOWED),
        (Method::GET, "/early/", StatusCode::MOVED_PERMANENTLY),
    ] {
        let r = send(Proto::H1, srv.addr, method, path, &[], "").await;
        assert_eq!(r.status, status, "{path}");
        assert_eq!(take(&log), ["late>", "<late"], "{path}");
    }
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_json_and_the_server_keeps_serving() {
    let mut e = Engine::bare();
    e.body_limit(1024);
    e.post(
        "/echo",
        handler(|c| {
            Box::pin(async move {
                let n = c.body().len();
                c.string(StatusCode::OK, n.to_string())
            })
        }),
    )
    .unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/echo",
            &[],
            vec![b'x'; 1024],
        )
        .await;
        assert_eq!(r.text(), "1024");
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/echo",
            &[],
            vec![b'x'; 1025],
        )
        .await;
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(r.json()["error"].as_str().unwrap().contains("too large"));
    }
}

/// The early answer comes before the router's verdict: a body over the
/// limit is 413 on a path no route matches (not 404) and on a route of
/// another method (not 405), and no route handler runs.
#[tokio::test]
async fn a_body_over_the_limit_is_413_whatever_route_the_path_would_take() {
    let mut e = Engine::bare();
    e.body_limit(16);
    e.get(
        "/thing",
        handler_now("thing", |c| c.string(StatusCode::OK, "thing")),
    )
    .unwrap();
    e.no_route(vec![handler_now("never", |c| {
        c.string(StatusCode::IM_A_TEAPOT, "the 404 chain ran")
    })]);
    let srv = start(e.build()).await;
    for path in ["/nowhere", "/thing"] {
        let r = send(Proto::H1, srv.addr, Method::POST, path, &[], vec![b'x'; 17]).await;
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        let r = send(Proto::H1, srv.addr, Method::POST, path, &[], vec![b'x'; 2]).await;
        assert_ne!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{path}");
    }
}

#[tokio::test]
async fn timeout_middleware_answers_for_slow_chains_and_outer_middleware_still_finishes() {
    let log = new_log();
    let mut e = Engine::bare();
    e.use_middleware(wrap(&log, "outer"));
    e.use_middleware(middleware::timeout(Duration::from_millis(50), |c| {
        c.string(StatusCode::GATEWAY_TIMEOUT, "too slow")
    }));
    let slow_log = log.clone();
    e.get(
        "/slow",
        handler(move |c| {
            let log = slow_log.clone();
            Box::pin(async move {
                c.set_header(
                    http::header::CACHE_CONTROL,
                    http::HeaderValue::from_static("max-age=60"),
                );
                push(&log, "slow handler started");
                tokio::time::sleep(Duration::from_secs(5)).await;
                push(&log, "slow handler finished");
                c.string(StatusCode::OK, "late");
            })
        }),
    )
    .unwrap();
    e.get("/fast", endpoint(&log, "fast")).unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/slow").await;
    assert_eq!(
        (r.status, r.text().as_str()),
        (StatusCode::GATEWAY_TIMEOUT, "too slow")
    );
    assert_eq!(
        r.header("cache-control"),
        None,
        "half-written response must be discarded"
    );
    assert_eq!(take(&log), ["outer>", "slow handler started", "<outer"]);
    assert_eq!(get(Proto::H2, srv.addr, "/fast").await.text(), "fast");
    assert_eq!(take(&log), ["outer>", "fast", "<outer"]);
}

#[tokio::test]
async fn next_after_abort_runs_nothing_and_returns_at_once() {
    let log = new_log();
    let guard_log = log.clone();
    let mut e = Engine::bare();
    e.handle(
        Method::GET,
        "/",
        vec![
            wrap(&log, "outer"),
            handler(move |c| {
                let log = guard_log.clone();
                Box::pin(async move {
                    c.abort_with_status(StatusCode::UNAUTHORIZED);
                    c.next().await;
                    push(
                        &log,
                        format!("guard: next() returned, aborted={}", c.is_aborted()),
                    );
                })
            }),
            endpoint(&log, "h"),
        ],
    )
    .unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/").await;
    assert_eq!((r.status, r.body.len()), (StatusCode::UNAUTHORIZED, 0));
    assert_eq!(
        take(&log),
        ["outer>", "guard: next() returned, aborted=true", "<outer"]
    );
}

#[tokio::test]
async fn keys_belong_to_one_request_and_a_missing_key_is_none() {
    let log = new_log();
    let seen = log.clone();
    let mut e = Engine::bare();
    e.use_middleware(handler(move |c| {
        let log = seen.clone();
        Box::pin(async move {
            // Whatever an earlier request stored is not here.
            push(&log, format!("before set: {:?}", c.get::<String>("user")));
            if let Some(name) = c.query("name") {
                c.set("user", name);
            }
            c.next().await;
        })
    }));
    e.get(
        "/",
        handler(|c| {
            Box::pin(async move {
                let text = format!(
                    "{:?} {:?}",
                    c.get::<String>("user"),
                    c.get::<u32>("never set")
                );
                c.string(StatusCode::OK, text);
            })
        }),
    )
    .unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/?name=ann").await;
        assert_eq!(r.text(), r#"Some("ann") None"#);
        let r = get(proto, srv.addr, "/").await;
        assert_eq!(r.text(), "None None");
        assert_eq!(take(&log), ["before set: None", "before set: None"]);
    }
}

#[tokio::test]
async fn a_middleware_can_delete_a_key_an_earlier_one_stored() {
    let mut e = Engine::bare();
    e.use_middleware(handler(|c| {
        Box::pin(async move {
            c.set("user", String::from("ann"));
            c.set("role", String::from("admin"));
            c.next().await;
        })
    }));
    e.use_middleware(handler(|c| {
        Box::pin(async move {
            if c.query("drop").is_some() {
                c.delete("role");
            }
            c.next().await;
        })
    }));
    e.get(
        "/",
        handler(|c| {
            Box::pin(async move {
                let text = format!(
                    "{:?} {:?}",
                    c.get::<String>("user"),
                    c.get::<String>("role")
                );
                c.string(StatusCode::OK, text);
            })
        }),
    )
    .unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/").await;
        assert_eq!(r.text(), r#"Some("ann") Some("admin")"#);
        let r = get(proto, srv.addr, "/?drop=1").await;
        assert_eq!(
            r.text(),
            r#"Some("ann") None"#,
            "the later handler sees it gone"
        );
    }
}

/// Over both protocols: `/panic` gets no answer, and `/ok` after it does.
async fn panic_gets_no_answer_and_ok_still_does(addr: std::net::SocketAddr) {
    for proto in BOTH {
        let url = format!("http://{}/panic", addr);
        let answer = Client::new(proto)
            .try_request(Method::GET, &url, &[], "")
            .await;
        assert!(answer.is_err(), "no answer expected, got {answer:?}");
        let r = get(proto, addr, "/ok").await;
        assert_eq!((r.status, r.text().as_str()), (StatusCode::OK, "fine"));
    }
}

#[tokio::test]
async fn without_recovery_a_panic_drops_the_connection_and_the_server_keeps_serving() {
    let mut e = Engine::bare();
    e.get(
        "/panic",
        handler(|c| {
            Box::pin(async move {
                c.string(StatusCode::OK, "partial");
                panic!("no recovery here");
            })
        }),
    )
    .unwrap();
    e.get(
        "/ok",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "fine") })),
    )
    .unwrap();
    let srv = start(e.build()).await;
    panic_gets_no_answer_and_ok_still_does(srv.addr).await;
}

/// A chain that never awaits is run in the server's call, inside hyper's
/// connection task: a panic there must still cost only its own request
/// (HTTP/1.1: the connection; HTTP/2: the stream, its connection serving
/// on).
#[tokio::test]
async fn without_recovery_a_panic_in_a_chain_that_never_awaits_resets_only_its_stream() {
    let mut e = Engine::bare();
    e.get(
        "/panic",
        handler_now("panics", |c| {
            c.string(StatusCode::OK, "partial");
            panic!("no recovery here");
        }),
    )
    .unwrap();
    e.get(
        "/ok",
        handler_now("ok", |c| c.string(StatusCode::OK, "fine")),
    )
    .unwrap();
    let srv = start(e.build()).await;
    panic_gets_no_answer_and_ok_still_does(srv.addr).await;
    // HTTP/2: the panicking stream is reset, and the same connection
    // answers the next one.
    let tcp = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let (h2, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let get_on = |path: &str| {
        http::Request::get(format!("http://{}{path}", srv.addr))
            .body(())
            .unwrap()
    };
    let mut h2 = h2.ready().await.unwrap();
    let (panicked, _) = h2.send_request(get_on("/panic"), true).unwrap();
    let reset = panicked.await.expect_err("the stream is reset");
    assert_eq!(reset.reason(), Some(h2::Reason::INTERNAL_ERROR));
    let mut h2 = h2.ready().await.unwrap();
    let (ok, _) = h2.send_request(get_on("/ok"), true).unwrap();
    let ok = ok.await.expect("the connection still serves");
    assert_eq!(ok.status(), StatusCode::OK);
    let mut body = ok.into_body();
    let mut text = Vec::new();
    while let Some(chunk) = body.data().await {
        text.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(text, b"fine");
}

#[tokio::test]
async fn a_panic_cuts_short_the_middleware_inside_recovery_not_those_outside() {
    // Why the logger comes before recovery: only code outside recovery gets
    // to run after next() when a handler panics.
    let log = new_log();
    let mut e = Engine::bare();
    e.use_middleware(wrap(&log, "outside"));
    e.use_middleware(middleware::recovery());
    e.use_middleware(wrap(&log, "inside"));
    e.get(
        "/panic",
        handler(|_c| Box::pin(async move { panic!("boom") })),
    )
    .unwrap();
    let srv = start(e.build()).await;
    let r = get(Proto::H1, srv.addr, "/panic").await;
    assert_eq!(
        (r.status, r.body.len()),
        (StatusCode::INTERNAL_SERVER_ERROR, 0)
    );
    assert_eq!(take(&log), ["outside>", "inside>", "<outside"]);
}

#[tokio::test]
async fn recovery_catches_a_panic_whether_the_rest_awaits_or_not() {
    // Recovery is the chain's catching kind: with a rest that never awaits
    // it runs the rest as a plain call inside `catch_unwind`; with one that
    // awaits, inside a future. The rules are the same either way: the 500
    // is recovery's, what ran inside it is cut short (an `after_rest`
    // included), what is outside it finishes, and `on_panic` gets the text.
    let log = new_log();
    let caught = log.clone();
    let mut e = Engine::bare();
    e.use_middleware(after(&log, "outside"));
    e.use_middleware(catching("catcher", move |c, message| {
        push(&caught, format!("caught: {message}"));
        c.abort_with_status(StatusCode::INTERNAL_SERVER_ERROR);
    }));
    e.use_middleware(after(&log, "inside"));
    e.get(
        "/now",
        handler_now("exploding", |_c| panic!("never awaited")),
    )
    .unwrap();
    e.get(
        "/awaited",
        named("exploding", |_c| {
            Box::pin(async move {
                tokio::task::yield_now().await;
                panic!("after an await");
            })
        }),
    )
    .unwrap();
    e.get("/fine", now(&log, "fine", false)).unwrap();
    let srv = start(e.build()).await;
    for (path, message) in [("/now", "never awaited"), ("/awaited", "after an await")] {
        for proto in BOTH {
            let r = get(proto, srv.addr, path).await;
            assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
            assert_eq!(
                take(&log),
                [
                    format!("caught: {message}"),
                    "<outside (aborted=true)".into()
                ],
                "{path}"
            );
        }
    }
    let r = get(Proto::H1, srv.addr, "/fine").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        take(&log),
        [
            "fine",
            "<inside (aborted=false)",
            "<outside (aborted=false)"
        ]
    );
}

#[tokio::test]
async fn head_and_options_are_405_unless_registered_and_a_head_answer_has_no_body() {
    // Over HTTP/2 too: hyper would send the body there, and the client must
    // reject DATA on a HEAD answer, so the engine leaves it out itself.
    let ok = |text: &'static str| {
        handler(move |c| Box::pin(async move { c.string(StatusCode::OK, text) }))
    };
    let mut e = Engine::bare();
    e.get("/thing", ok("get")).unwrap();
    e.get("/page", ok("get")).unwrap();
    e.head("/page", ok("head")).unwrap();
    e.options("/page", ok("options")).unwrap();
    let srv = start(e.build()).await;
    for proto in BOTH {
        for method in [Method::HEAD, Method::OPTIONS] {
            let r = send(proto, srv.addr, method.clone(), "/thing", &[], "").await;
            assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(r.header("allow"), Some("GET"), "{method}");
        }
        let r = send(proto, srv.addr, Method::HEAD, "/page", &[], "").await;
        assert_eq!((r.status, r.body.len()), (StatusCode::OK, 0));
        assert_eq!(
            r.header("content-length"),
            Some("4"),
            "the body GET would get"
        );
        let r = send(proto, srv.addr, Method::OPTIONS, "/page", &[], "").await;
        assert_eq!((r.status, r.text().as_str()), (StatusCode::OK, "options"));
    }
}

#[tokio::test]
async fn a_global_middleware_can_answer_options_before_the_405_handler() {
    // What a CORS middleware does with a preflight: the 405 chain starts
    // with the global middleware, which answers and aborts.
    let mut e = Engine::bare();
    e.use_middleware(handler(|c| {
        Box::pin(async move {
            if c.method() == Method::OPTIONS {
                c.set_header(
                    http::header::ACCESS_CONTROL_ALLOW_METHODS,
                    http::HeaderValue::from_static("GET, POST"),
                );
                c.abort_with_status(StatusCode::NO_CONTENT);
                return;
            }
            c.next().await;
        })
    }));
    e.get(
        "/thing",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "get") })),
    )
    .unwrap();
    let srv = start(e.build()).await;
    let r = send(Proto::H1, srv.addr, Method::OPTIONS, "/thing", &[], "").await;
    assert_eq!((r.status, r.body.len()), (StatusCode::NO_CONTENT, 0));
    assert_eq!(r.header("access-control-allow-methods"), Some("GET, POST"));
    let r = send(Proto::H1, srv.addr, Method::DELETE, "/thing", &[], "").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}
