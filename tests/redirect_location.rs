//! Every redirect the engine gives itself (the trailing slash's, the fixed
//! path's) names, in a valid percent-encoded `Location`, the resource the
//! request named, on every switch setting; and never a place a browser
//! reads as another host, even after it drops tabs, newlines and leading
//! control characters. A header a handler sets is never dropped silently.
//!
//! Requests go to the app in-process (`App::handle`): the targets here
//! hold bytes a client library would refuse to send.

use http::header::{HeaderValue, LOCATION};
use http::{Method, Request, StatusCode};
use http_body_util::Empty;

use handwire::web::{handler_now, App, Engine, Handler};

fn ok() -> Handler {
    handler_now("ok", |c| c.string(StatusCode::OK, "ok"))
}

/// Status and `Location` of `method target` on `app`.
async fn answer(app: &App, method: Method, target: &str) -> (u16, Option<String>) {
    let req = Request::builder()
        .method(method)
        .uri(target)
        .body(Empty::<bytes::Bytes>::new())
        .expect("a request target http accepts");
    let remote = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
    let resp = app.handle(req, remote).await;
    let location = (resp.headers().get(LOCATION))
        .map(|v| v.to_str().expect("a Location is visible ASCII").to_owned());
    (resp.status().as_u16(), location)
}

#[tokio::test]
async fn a_trailing_slash_redirect_from_a_decoded_path_is_percent_encoded_again() {
    for raw in [false, true] {
        let mut e = Engine::bare();
        e.use_raw_path(raw);
        e.get("/:x/y", ok()).unwrap();
        let app = e.build();
        for (target, want) in [
            ("/a%3Fb/y/", "/a%3Fb/y"),
            ("/a%23b/y/", "/a%23b/y"),
            ("/caf%C3%A9/y/", "/caf%C3%A9/y"),
            ("/a%0Ab/y/", "/a%0Ab/y"),
            ("/100%25/y/", "/100%25/y"),
            ("/a%20b/y/?q=1", "/a%20b/y?q=1"),
        ] {
            let got = answer(&app, Method::GET, target).await;
            assert_eq!(got, (301, Some(want.to_owned())), "{target} raw={raw}");
        }
    }
}

#[tokio::test]
async fn a_trailing_slash_redirect_under_remove_extra_slash_goes_to_the_cleaned_path() {
    for raw in [false, true] {
        let mut e = Engine::bare();
        e.use_raw_path(raw);
        e.remove_extra_slash(true);
        e.post("/b", ok()).unwrap();
        let app = e.build();
        let got = answer(&app, Method::POST, "//b/").await;
        assert_eq!(got, (307, Some("/b".to_owned())), "raw={raw}");
    }
}

#[tokio::test]
async fn the_fixed_path_redirect_refuses_a_target_a_browser_reads_as_another_host() {
    for raw in [false, true] {
        let mut e = Engine::bare();
        e.use_raw_path(raw);
        e.redirect_fixed_path(true);
        e.get("/:name", ok()).unwrap();
        let app = e.build();
        let got = answer(&app, Method::GET, "/\\evil.example/").await;
        assert_eq!(got, (404, None), "raw={raw}");
        // Still redirected when the target stays on this host.
        let got = answer(&app, Method::GET, "/./Fine/").await;
        assert_eq!(got, (301, Some("/Fine".to_owned())), "raw={raw}");
    }
    let mut e = Engine::bare();
    e.use_raw_path(false);
    e.redirect_fixed_path(true);
    e.get("/:name", ok()).unwrap();
    let app = e.build();
    let got = answer(&app, Method::GET, "/%5Cevil.example/").await;
    assert_eq!(got, (404, None));
}

#[tokio::test]
async fn no_redirect_goes_where_a_browser_dropping_tabs_and_newlines_sees_another_host() {
    let mut e = Engine::bare();
    e.use_raw_path(false);
    e.post("/:name/:id", ok()).unwrap();
    let app = e.build();
    for target in [
        "/%09/EVIL.example/",
        "/%0A/EVIL.example/",
        "/%0D/%5CEVIL.example/",
    ] {
        let got = answer(&app, Method::POST, target).await;
        assert_eq!(got, (404, None), "{target}");
    }
    // The same with something in the first segment is a plain redirect.
    let got = answer(&app, Method::POST, "/a%09/EVIL.example/").await;
    assert_eq!(got, (307, Some("/a%09/EVIL.example".to_owned())));
}

#[tokio::test]
async fn a_handler_learns_that_a_header_value_was_refused_and_a_redirect_is_encoded() {
    let mut e = Engine::bare();
    e.get(
        "/set",
        handler_now("set", |c| {
            let refused = c.try_set_header(http::header::SERVER, "a\r\nInjected: 1");
            assert!(refused.is_err(), "a newline is not header text");
            assert!(c.try_set_header(http::header::VARY, "Origin").is_ok());
            c.set_header(http::header::EXPIRES, HeaderValue::from_static("0"));
            c.string(StatusCode::OK, "set");
        }),
    )
    .unwrap();
    e.get(
        "/go",
        handler_now("go", |c| {
            c.redirect(StatusCode::FOUND, "/next\nInjected: 1/é")
        }),
    )
    .unwrap();
    let app = e.build();
    let req = Request::get("/set")
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = app
        .handle(req, std::net::SocketAddr::from(([127, 0, 0, 1], 1)))
        .await;
    assert_eq!(resp.headers().get("server"), None);
    assert_eq!(resp.headers()["vary"], "Origin");
    assert_eq!(resp.headers()["expires"], "0");
    let got = answer(&app, Method::GET, "/go").await;
    assert_eq!(got, (302, Some("/next%0AInjected:%201/%C3%A9".to_owned())));
}
