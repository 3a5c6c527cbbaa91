//! The debug pages in a real headless Chromium (`--debug-pages`): the walks
//! page draws a request made after it loaded, its handlers as boxes in
//! chain order and an abort's skipped handlers greyed; the route page
//! draws the tree and says which route a typed path takes (the drawing of
//! each node kind, `*catch-all` included, is proven in `src/web/debug/`). A screenshot
//! of each lands in `target/debug-pages/` for a person to look at.
//! Skipped with a reason without Chromium unless
//! `HANDWIRE_BROWSER_REQUIRED=1`.

mod support;

use std::path::Path;
use std::time::Duration;

use support::bin::spawn_draining;
use support::browser;

/// router-demo on 127.0.0.1:0 with the debug pages on (killed when
/// dropped); its address.
fn router_demo() -> (Running, String) {
    let (child, addrs) = spawn_draining(
        env!("CARGO_BIN_EXE_router-demo"),
        &["--addr", "127.0.0.1:0", "--debug-pages", "--quiet"],
        &[],
        1,
    );
    (Running(child), addrs[0].to_string())
}

/// A child process killed when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` on `addr`, answered with its status (the walk is kept
/// before the answer goes out).
async fn get(addr: &str, path: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer[9..12].parse().expect("status")
}

/// A page expression for the newest walk whose head is `request` (`GET
/// /index`: other requests, a browser's own among them, may land between),
/// or `undefined`.
fn walk_of(request: &str) -> String {
    format!(
        "[...document.querySelectorAll('#walks section.walk')]
           .find(w => w.querySelector('text.head').textContent.startsWith({request:?} + ' ('))"
    )
}

/// The handler boxes of `request`'s newest walk, outermost first: each
/// `index name`, `skipped` added for a greyed one.
fn boxes_of(request: &str) -> String {
    format!(
        r#"(() => {{
  const walk = {walk};
  if (!walk) return [];
  return [...walk.querySelectorAll('g.handler')].map(g =>
    g.dataset.index + ' ' + g.dataset.name + (g.classList.contains('skipped') ? ' skipped' : ''));
}})()"#,
        walk = walk_of(request)
    )
}

/// The boxes of `request`'s newest walk as the page draws them, once
/// `drawn` holds of them (the page polls every second), or as they are
/// after 5 s.
async fn newest_boxes(
    page: &browser::Profile,
    request: &str,
    drawn: impl Fn(&Vec<serde_json::Value>) -> bool,
) -> serde_json::Value {
    let mut boxes = serde_json::Value::Null;
    for _ in 0..50 {
        boxes = page.eval(&boxes_of(request)).await;
        if boxes.as_array().is_some_and(&drawn) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    boxes
}

#[tokio::test]
async fn a_request_made_after_the_walks_page_loaded_appears_with_its_boxes_in_chain_order() {
    let test = "a_request_made_after_the_walks_page_loaded_appears_with_its_boxes_in_chain_order";
    let Some(browser) = browser::shared(test).await else {
        return;
    };
    let (_server, addr) = router_demo();
    let page = browser.new_profile().await;
    let loaded = page.open(&format!("http://{addr}/debug/walks")).await;
    assert_eq!(loaded.status, 200, "{}", loaded.text);
    let none_yet = page
        .eval("document.querySelectorAll('#walks section.walk').length")
        .await;
    assert_eq!(none_yet, 0, "the page's own requests are not kept as walks");

    // GET /index without a token: token_check aborts, index_handler is skipped.
    assert_eq!(get(&addr, "/index").await, 403);
    let boxes = newest_boxes(&page, "GET /index", |b| !b.is_empty()).await;
    assert_eq!(
        boxes,
        serde_json::json!([
            "0 logger",
            "1 recovery",
            "2 global_middleware",
            "3 token_check",
            "4 index_handler skipped",
        ]),
        "the page polled in the new walk, drawn in chain order"
    );
    let status = page
        .eval(&format!(
            "{}.querySelector('text.status').textContent",
            walk_of("GET /index")
        ))
        .await;
    assert_eq!(status, "=> 403, written by 3 token_check");
    page.screenshot(&shots().join("walks.png")).await;

    // A second request lands on top of the first.
    assert_eq!(get(&addr, "/book/42").await, 200);
    let boxes = newest_boxes(&page, "GET /book/42", |b| b.len() == 4).await;
    assert_eq!(
        boxes,
        serde_json::json!([
            "0 logger",
            "1 recovery",
            "2 global_middleware",
            "3 book_handler"
        ])
    );
}

#[tokio::test]
async fn the_routes_page_draws_the_tree_and_says_which_route_a_path_takes() {
    let test = "the_routes_page_draws_the_tree_and_says_which_route_a_path_takes";
    let Some(browser) = browser::shared(test).await else {
        return;
    };
    let (_server, addr) = router_demo();
    let page = browser.new_profile().await;
    let loaded = page
        .open(&format!(
            "http://{addr}/debug/routes?method=GET&path=/book/42"
        ))
        .await;
    assert_eq!(loaded.status, 200, "{}", loaded.text);
    let answer = page
        .eval("document.getElementById('answer').innerText")
        .await;
    let answer = answer.as_str().unwrap_or_default();
    assert!(
        answer.contains("takes the route GET /book/:id")
            && answer.contains("3 book_handler")
            && answer.contains("id is \"42\""),
        "{answer}"
    );
    let chosen = page
        .eval("[...document.querySelectorAll('svg.tree g.node.chosen')].map(g => g.dataset.label)")
        .await;
    let chosen: Vec<&str> = chosen
        .as_array()
        .expect("labels")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        chosen.contains(&":id"),
        "the :id node is marked: {chosen:?}"
    );
    let kinds = page
        .eval(
            "['static','param'].map(k => document.querySelectorAll('svg.tree g.node.' + k).length)",
        )
        .await;
    assert!(
        kinds
            .as_array()
            .expect("counts")
            .iter()
            .all(|n| n.as_u64() > Some(0)),
        "static and :param nodes drawn: {kinds}"
    );
    page.screenshot(&shots().join("routes.png")).await;
}

/// Where the screenshots go: `target/debug-pages/`.
fn shots() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/debug-pages")
}
