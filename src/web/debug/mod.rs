//! The debug pages (`--debug-pages`): the walk of the chain and the route
//! tree, drawn. Not part of the lesson's reading path: the pages draw what
//! the lesson's code already records.
//!
//! - `GET /debug/walks`: the last requests' walks, each as server-made SVG
//!   (`walk_svg.rs`) drawn from the same steps `--trace` prints, with a
//!   few lines of plain JavaScript that poll `GET /debug/walks/since` for
//!   the walks made after the page loaded.
//! - `GET /debug/routes`: each method's radix tree (`routes_svg.rs`), each
//!   route's chain, and a path box saying which route a path takes, and why.
//!
//! As Go's `net/http/pprof` and Envoy's admin page: off unless asked for
//! (without it the paths are 404 like any other), nothing fetched from the
//! network, and by default answered to loopback peers only. The pages show
//! no query string, no header and no stored value, only what the access log
//! shows too (the path, the status, a panic's message).

mod page;
pub(crate) mod routes_svg;
pub(crate) mod walk_svg;

use std::sync::{Arc, OnceLock};

use http::{Method, StatusCode};

use crate::web::chain::{handler_now, Context, Handler};
use crate::web::router::{Router, Shape};
use crate::web::study::Walks;

/// The debug pages' settings ([`Engine::debug_pages`](crate::web::Engine::debug_pages)).
#[derive(Clone, Copy, Debug, Default)]
pub struct DebugPages {
    /// Answer every peer, not only loopback ones (`127.0.0.1`, `::1`).
    pub any_peer: bool,
}

/// One route as `/debug/routes` lists it.
pub(crate) struct RouteInfo {
    pub(crate) method: Method,
    pub(crate) path: String,
    /// The chain's handlers as the trace names them (`0 logger`, `#2`).
    pub(crate) chain: Vec<String>,
}

/// What `/debug/routes` draws: the engine's trees and routes, and a router
/// of the same routes to look a typed path up in.
pub(crate) struct RouteMap {
    pub(crate) trees: Vec<(Method, Shape<usize>)>,
    pub(crate) routes: Vec<RouteInfo>,
    pub(crate) lookup: Router<usize>,
}

/// The debug routes of an engine, registered before its other routes are
/// known: the route map is filled in at [`Engine::build`](crate::web::Engine::build).
pub(crate) struct Pages {
    pub(crate) settings: DebugPages,
    pub(crate) walks: Arc<Walks>,
    pub(crate) map: Arc<OnceLock<RouteMap>>,
}

impl Pages {
    pub(crate) fn new(settings: DebugPages) -> Pages {
        Pages {
            settings,
            walks: Arc::new(Walks::default()),
            map: Arc::new(OnceLock::new()),
        }
    }

    /// The three routes and their handlers.
    pub(crate) fn routes(&self) -> Vec<(&'static str, Handler)> {
        let any_peer = self.settings.any_peer;
        let walks = self.walks.clone();
        let since = self.walks.clone();
        let map = self.map.clone();
        vec![
            (
                "/debug/walks",
                handler_now("debug_walks", move |c| {
                    if allowed(c, any_peer) {
                        html(c, page::walks(&walks.since(0)));
                    }
                }),
            ),
            (
                "/debug/walks/since",
                handler_now("debug_walks_since", move |c| {
                    if allowed(c, any_peer) {
                        let after = c.query("after").and_then(|a| a.parse().ok());
                        html(c, page::walk_sections(&since.since(after.unwrap_or(0))));
                    }
                }),
            ),
            (
                "/debug/routes",
                handler_now("debug_routes", move |c| {
                    if allowed(c, any_peer) {
                        let (method, path) = (c.query("method"), c.query("path"));
                        let body = match map.get() {
                            Some(map) => page::routes(map, method.as_deref(), path.as_deref()),
                            None => String::from("the route map is made when the engine is built"),
                        };
                        html(c, body);
                    }
                }),
            ),
        ]
    }
}

impl crate::web::App {
    /// The walks this app kept (it serves the debug pages), oldest first,
    /// as one standalone SVG: what a study example writes for the docs
    /// (`HANDWIRE_WALK_SVG`). `None` without the debug pages.
    pub fn walks_svg(&self) -> Option<String> {
        let walks = self.trace.as_ref()?.walks.as_ref()?.since(0);
        let (mut body, mut y) = (String::new(), 0);
        for walk in walks.iter().rev() {
            let svg = walk_svg::draw(&walk.steps, &walk.names);
            let height = svg_height(&svg);
            body.push_str(&svg.replacen("<svg ", &format!("<svg y=\"{y}\" "), 1));
            y += height + 12;
        }
        Some(format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{y}" viewBox="0 0 {w} {y}">{body}</svg>
"#,
            w = walk_svg::WIDTH,
        ))
    }
}

/// The `height` an `<svg>` of [`walk_svg::draw`] declares.
fn svg_height(svg: &str) -> usize {
    let after = svg.split(" height=\"").nth(1).unwrap_or("0");
    after
        .split('"')
        .next()
        .and_then(|h| h.parse().ok())
        .unwrap_or(0)
}

/// Whether `c`'s peer may see the pages; if not, `c` answers as for a path
/// no route matches.
fn allowed(c: &mut Context, any_peer: bool) -> bool {
    if any_peer || c.remote_addr().ip().to_canonical().is_loopback() {
        return true;
    }
    c.string(StatusCode::NOT_FOUND, "404 page not found");
    false
}

fn html(c: &mut Context, body: String) {
    c.data(
        StatusCode::OK,
        "text/html; charset=utf-8",
        body.into_bytes(),
    );
}

/// `text` with `&`, `<`, `>` and quotes escaped, for SVG and HTML.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
