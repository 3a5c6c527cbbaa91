use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};

use super::DebugPages;
use crate::web::chain::{handler_now, named};
use crate::web::{App, Engine};

const LOOPBACK: ([u8; 4], u16) = ([127, 0, 0, 1], 1);

/// `GET path` from `from`: status and body.
async fn get(app: &App, path: &str, from: impl Into<SocketAddr>) -> (StatusCode, String) {
    let req = Request::get(path).body(Empty::<Bytes>::new()).unwrap();
    let resp = app.handle(req, from.into()).await;
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// logger, recovery, a guard that aborts on `/deny`, a panicking route and
/// a catch-all route.
fn engine(pages: Option<DebugPages>) -> std::sync::Arc<App> {
    let mut e = Engine::new();
    e.use_middleware(named("guard", |c| {
        Box::pin(async move {
            if c.uri().path() == "/deny" {
                c.abort_with_status(StatusCode::FORBIDDEN);
            }
        })
    }));
    let ok = || handler_now("ok", |c| c.string(StatusCode::OK, "ok"));
    e.get("/deny", ok()).unwrap();
    e.get("/boom", handler_now("boom", |_| panic!("boom")))
        .unwrap();
    e.get("/src/*filepath", ok()).unwrap();
    e.get("/user/:name", ok()).unwrap();
    if let Some(pages) = pages {
        e.debug_pages(pages);
    }
    e.build()
}

#[tokio::test]
async fn without_debug_pages_the_pages_are_404() {
    let app = engine(None);
    for path in ["/debug/walks", "/debug/walks/since", "/debug/routes"] {
        assert_eq!(
            get(&app, path, LOOPBACK).await.0,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
}

#[tokio::test]
async fn the_pages_answer_loopback_peers_only_unless_told_otherwise() {
    let remote = ([192, 0, 2, 7], 1);
    let app = engine(Some(DebugPages::default()));
    assert_eq!(get(&app, "/debug/walks", LOOPBACK).await.0, StatusCode::OK);
    assert_eq!(
        get(&app, "/debug/walks", ([0u16, 0, 0, 0, 0, 0, 0, 1], 1))
            .await
            .0,
        StatusCode::OK
    );
    let (status, body) = get(&app, "/debug/walks", remote).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::NOT_FOUND, "404 page not found")
    );
    let open = engine(Some(DebugPages { any_peer: true }));
    assert_eq!(get(&open, "/debug/routes", remote).await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_abort_greys_the_handlers_it_skipped_and_names_who_wrote_the_status() {
    let app = engine(Some(DebugPages::default()));
    get(&app, "/deny?token=secret", LOOPBACK).await;
    let (_, page) = get(&app, "/debug/walks", LOOPBACK).await;
    let boxes: Vec<&str> = page
        .split("<g class=\"handler")
        .skip(1)
        .map(|g| g.split('>').next().unwrap_or(""))
        .collect();
    assert_eq!(
        boxes,
        [
            " aborted\" data-index=\"0\" data-name=\"logger\"",
            " aborted\" data-index=\"1\" data-name=\"recovery\"",
            " aborted\" data-index=\"2\" data-name=\"guard\"",
            " skipped\" data-index=\"3\" data-name=\"ok\"",
        ]
    );
    assert!(page.contains("=&gt; 403, written by 2 guard"), "{page}");
    assert!(!page.contains("secret"), "the query string is never shown");
    assert!(
        !page.contains("GET /debug/"),
        "a page's own requests are not kept"
    );
}

#[tokio::test]
async fn a_panic_is_drawn_in_the_handler_that_panicked_and_caught_by_recovery() {
    let app = engine(Some(DebugPages::default()));
    get(&app, "/boom", LOOPBACK).await;
    let (_, page) = get(&app, "/debug/walks/since?after=0", LOOPBACK).await;
    assert!(
        page.contains(r#"<g class="handler panicked" data-index="3" data-name="boom">"#),
        "{page}"
    );
    assert!(page.contains(r#"<text class="caught" x="24" y="#), "{page}");
    assert!(page.contains("caught the panic"), "{page}");
    assert!(page.contains("=&gt; 500, written by 1 recovery"), "{page}");
}

#[tokio::test]
async fn every_step_trace_prints_is_drawn_with_the_same_words() {
    let app = engine(Some(DebugPages::default()));
    get(&app, "/deny", LOOPBACK).await;
    let walks = app.trace.as_ref().and_then(|s| s.walks.clone()).unwrap();
    let walk = walks.since(0).remove(0);
    let svg = super::walk_svg::draw(&walk.steps, &walk.names);
    for step in walk.steps.iter().filter(|s| s.printed()) {
        let words = step
            .text
            .split_once(": ")
            .map_or(step.text.as_str(), |(_, w)| w);
        let words = words
            .trim_start_matches("enter ")
            .trim_start_matches("exit  ");
        let words = words.split(" [").next().unwrap_or(words);
        assert!(
            svg.contains(&super::escape(words)),
            "{words:?} is not drawn"
        );
    }
}

#[tokio::test]
async fn the_route_tree_draws_static_param_and_catch_all_nodes_and_marks_the_route_taken() {
    let app = engine(Some(DebugPages::default()));
    let (_, page) = get(&app, "/debug/routes?method=GET&path=/src/a/b", LOOPBACK).await;
    for kind in ["static", "param", "catch-all"] {
        assert!(
            page.contains(&format!("<g class=\"node {kind}")),
            "no {kind} node"
        );
    }
    assert!(
        page.contains(r#"<g class="node catch-all chosen" data-label="*filepath">"#),
        "{page}"
    );
    assert!(
        page.contains("takes the route GET /src/*filepath"),
        "{page}"
    );
    assert!(
        page.contains("The parameter filepath is &quot;/a/b&quot;."),
        "{page}"
    );
    let (_, page) = get(&app, "/debug/routes?method=POST&path=/user/ann", LOOPBACK).await;
    assert!(
        page.contains("405 through the no_method chain, with Allow: GET"),
        "{page}"
    );
}

#[tokio::test]
async fn an_early_answer_is_drawn_as_given_instead_of_any_routes_chain() {
    let mut e = Engine::new();
    e.body_limit(4);
    e.post(
        "/deny",
        handler_now("ok", |c| c.string(StatusCode::OK, "ok")),
    )
    .unwrap();
    e.debug_pages(DebugPages::default());
    let app = e.build();
    let req = Request::post("/deny")
        .body(http_body_util::Full::new(Bytes::from_static(b"too long")))
        .unwrap();
    let resp = app.handle(req, SocketAddr::from(LOOPBACK)).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let (_, page) = get(&app, "/debug/walks", LOOPBACK).await;
    assert!(
        page.contains(
            "POST /deny (3 handlers) (an early answer: given instead of any route&#39;s chain)"
        ),
        "{page}"
    );
    assert!(
        page.contains("=&gt; 413, written by 2 early_answer"),
        "{page}"
    );
    assert!(
        !page.contains("data-name=\"ok\""),
        "the route's handler is not in the walk"
    );
}

#[tokio::test]
async fn the_pages_name_an_inline_icon_so_a_browser_adds_no_favicon_walk() {
    // A browser asks /favicon.ico of a page without an icon; on the walks
    // page that 404 would land on top of the walk a student just made.
    let app = engine(Some(DebugPages::default()));
    for path in ["/debug/walks", "/debug/routes"] {
        let (status, page) = get(&app, path, LOOPBACK).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(
            page.contains(r#"<link rel="icon" href="data:,">"#),
            "{path}: {page}"
        );
    }
}

#[tokio::test]
async fn a_key_set_and_a_key_read_are_drawn_in_the_handlers_that_did_them() {
    let mut e = Engine::new();
    e.handle(
        http::Method::GET,
        "/keys",
        vec![
            handler_now("setter", |c| c.set("user", "ada")),
            handler_now("reader", |c| {
                let user = c.get::<&str>("user").copied().unwrap_or("nobody");
                c.string(StatusCode::OK, user);
            }),
        ],
    )
    .unwrap();
    e.debug_pages(DebugPages::default());
    let app = e.build();
    assert_eq!(get(&app, "/keys", LOOPBACK).await.1, "ada");
    let (_, page) = get(&app, "/debug/walks", LOOPBACK).await;
    let of = |name: &str| {
        let at = page
            .find(&format!("data-name=\"{name}\""))
            .unwrap_or_else(|| panic!("no box of {name}: {page}"));
        let rest = &page[at..];
        rest[..rest.find("</g>").unwrap_or(rest.len())].to_string()
    };
    let (setter, reader) = (of("setter"), of("reader"));
    assert!(
        setter.contains(r#"class="key""#) && setter.contains("set key &quot;user&quot;"),
        "{setter}"
    );
    assert!(!setter.contains("read key"), "{setter}");
    assert!(
        reader.contains(r#"class="key read""#) && reader.contains("read key &quot;user&quot;"),
        "{reader}"
    );
}
