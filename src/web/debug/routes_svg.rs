//! The engine's route trees drawn as SVG, one per method: the radix tree
//! the router walks ([`Router::shapes`](crate::web::router::Router::shapes)),
//! static nodes, `:param` and `*catch-all` nodes, each route's chain
//! beside the node where it ends; and the answer to "which route does
//! this path take, and why", from the same router's lookup.

use std::fmt::Write;

use http::Method;

use super::{escape, RouteMap};
use crate::web::router::{Lookup, Miss, Shape};

/// Horizontal step between a node and its children.
const STEP: usize = 120;
/// One node's row.
const ROW: usize = 30;

/// Which route `method` and `path` take in `map`, and why: the route's
/// index (to highlight its nodes) and the explanation as sentences.
pub(crate) fn explain(map: &RouteMap, method: &Method, path: &str) -> (Option<usize>, Vec<String>) {
    match map.lookup.lookup(method, path) {
        Lookup::Found(value, params) => {
            let route = &map.routes[*value];
            let mut why = vec![format!(
                "{method} {path} takes the route {} {}: its chain is {}.",
                route.method,
                route.path,
                route.chain.join(", ")
            )];
            why.push(String::from(
                "The tree is walked from its root `/`; at each node the static child \
                 whose first byte matches is tried first, then the `:param` child (up to \
                 the next `/`), then the `*catch-all` child (the rest); a static branch \
                 that dead-ends falls back to the wildcard.",
            ));
            for (name, value) in params.iter() {
                why.push(format!("The parameter {name} is {value:?}."));
            }
            (Some(*value), why)
        }
        Lookup::Miss(Miss::Redirect { location }) => (
            None,
            vec![format!(
                "No {method} route matches {path}, but {location} does: the engine \
                 redirects there (301 for GET, 307 otherwise)."
            )],
        ),
        Lookup::Miss(Miss::MethodNotAllowed { allowed }) => {
            let allowed: Vec<&str> = allowed.iter().map(Method::as_str).collect();
            let allowed = allowed.join(", ");
            (
                None,
                vec![format!(
                    "No {method} route matches {path}; routes of {allowed} do: \
                     405 through the no_method chain, with Allow: {allowed}."
                )],
            )
        }
        Lookup::Miss(Miss::NotFound) => (
            None,
            vec![format!(
                "No route of any method matches {path}: 404 through the no_route chain."
            )],
        ),
    }
}

/// Each method's tree of `map` as one `<svg>`, the nodes of route
/// `chosen` (and their ancestors) marked.
pub(crate) fn draw(map: &RouteMap, chosen: Option<usize>) -> String {
    let mut out = String::new();
    for (method, root) in &map.trees {
        let mut body = String::new();
        let mut rows = 0;
        let mut widest = 0;
        place(map, root, 0, &mut rows, &mut widest, chosen, &mut body);
        let height = rows * ROW + 36;
        let width = widest + 40;
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="tree" data-method="{m}" width="{width}" height="{height}" font-family="monospace" font-size="12"><style>{STYLE}</style><text class="method" x="8" y="18">{m}</text>{body}</svg>"#,
            m = escape(method.as_str()),
        );
    }
    out
}

const STYLE: &str = "rect{fill:#fff;stroke:#3a5a8c}.param rect{fill:#e8f0ff}\
.catch-all rect{fill:#fff0e0;stroke:#b35c00}.chosen rect{stroke:#08752e;stroke-width:3}\
line{stroke:#888}.route{fill:#333}.chosen .route{fill:#08752e;font-weight:bold}\
.method{font-weight:bold}";

/// Draw `node` at `depth`, on the next free row; returns its row, so the
/// parent can draw the line to it. Marks whether `chosen` ends here or
/// below.
fn place(
    map: &RouteMap,
    node: &Shape<usize>,
    depth: usize,
    rows: &mut usize,
    widest: &mut usize,
    chosen: Option<usize>,
    out: &mut String,
) -> (usize, bool) {
    let row = *rows;
    *rows += 1;
    let mut marked = chosen.is_some() && node.value == chosen;
    let x = 8 + depth * STEP;
    let y = 28 + row * ROW;
    let mut lines = String::new();
    for child in &node.children {
        let (child_row, child_marked) = place(map, child, depth + 1, rows, widest, chosen, out);
        marked |= child_marked;
        let _ = write!(
            lines,
            r#"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>"#,
            x1 = x + 10,
            y1 = y + 22,
            x2 = x + STEP,
            y2 = 28 + child_row * ROW + 11,
        );
    }
    let label: String = node.label.chars().take(14).collect();
    let w = (label.chars().count() * 8 + 12).min(STEP - 8);
    let route = node
        .value
        .and_then(|i| map.routes.get(i))
        .map(|r| format!("{} {} → {}", r.method, r.path, r.chain.join(", ")));
    let route_text = route.as_deref().map_or(String::new(), |r| {
        format!(
            r#"<text class="route" x="{rx}" y="{ry}">{r}</text>"#,
            rx = x + w + 8,
            ry = y + 15,
            r = escape(r),
        )
    });
    let text_width = route.as_deref().map_or(0, |r| r.chars().count() * 7 + 8);
    *widest = (*widest).max(x + w + text_width);
    let class = if marked { " chosen" } else { "" };
    let _ = write!(
        out,
        r#"{lines}<g class="node {kind}{class}" data-label="{l}"><rect x="{x}" y="{y}" width="{w}" height="22" rx="4"/><text x="{tx}" y="{ty}">{l}</text>{route_text}</g>"#,
        kind = node.kind,
        l = escape(&label),
        tx = x + 6,
        ty = y + 15,
    );
    (row, marked)
}
