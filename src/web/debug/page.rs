//! The HTML around the drawings: whole pages, and the walk sections the
//! walks page fetches from its own server to stay live. No framework, no
//! asset from anywhere else.

use std::fmt::Write;
use std::sync::Arc;

use http::Method;

use super::{escape, routes_svg, walk_svg, RouteMap};
use crate::web::study::{Walk, WALKS_KEPT};

const STYLE: &str = "body{font-family:sans-serif;margin:1em 2em;color:#222}\
section.walk{margin:0 0 1.5em}h1{font-size:1.3em}p.why{max-width:60em}\
svg{display:block;margin:.5em 0}";

/// The walks page: the walks kept, newest first, and the script that
/// polls for newer ones.
pub(super) fn walks(kept: &[Arc<Walk>]) -> String {
    let sections = walk_sections(kept);
    let last = kept.first().map_or(0, |w| w.id);
    let script = SCRIPT.replace("KEPT", &WALKS_KEPT.to_string());
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>walks</title><style>{STYLE}</style></head><body><h1>The last requests' walks of their chains</h1><p>Each handler is a box inside the one whose <code>next()</code> ran it; a box beside the one before it was run by the loop after that one returned (the implicit next). Greyed: what an <code>abort()</code> kept from running. Drawn from the steps <code>--trace</code> prints. The newest is on top; this page asks its server for newer walks every second. <a href="/debug/routes">The route tree</a>.</p><div id="walks" data-last="{last}">{sections}</div><script>{script}</script></body></html>"#
    )
}

/// Polls `/debug/walks/since` and puts the newer walks on top.
const SCRIPT: &str = r#"
const list = document.getElementById('walks');
async function poll() {
  try {
    const r = await fetch('/debug/walks/since?after=' + list.dataset.last);
    const html = await r.text();
    if (html) {
      list.insertAdjacentHTML('afterbegin', html);
      list.dataset.last = list.firstElementChild.dataset.id;
      while (list.children.length > KEPT) list.lastElementChild.remove();
    }
  } catch (e) {}
  setTimeout(poll, 1000);
}
setTimeout(poll, 1000);
"#;

/// One `<section>` per walk, newest first.
pub(super) fn walk_sections(walks: &[Arc<Walk>]) -> String {
    let mut out = String::new();
    for w in walks {
        let _ = write!(
            out,
            r#"<section class="walk" data-id="{}">{}</section>"#,
            w.id,
            walk_svg::draw(&w.steps, &w.names)
        );
    }
    out
}

/// The routes page: the path box, its answer, the trees.
pub(super) fn routes(map: &RouteMap, method: Option<&str>, path: Option<&str>) -> String {
    let method_text = method.unwrap_or("GET");
    let mut answer = String::new();
    let mut chosen = None;
    if let Some(path) = path.filter(|p| p.starts_with('/')) {
        match Method::from_bytes(method_text.as_bytes()) {
            Ok(m) => {
                let (route, why) = routes_svg::explain(map, &m, path);
                chosen = route;
                for sentence in why {
                    let _ = write!(answer, r#"<p class="why">{}</p>"#, escape(&sentence));
                }
            }
            Err(_) => answer.push_str(r#"<p class="why">Not a method.</p>"#),
        }
    }
    let mut options = String::new();
    for (m, _) in &map.trees {
        let selected = if m.as_str() == method_text {
            " selected"
        } else {
            ""
        };
        let _ = write!(options, "<option{selected}>{}</option>", escape(m.as_str()));
    }
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>routes</title><style>{STYLE}</style></head><body><h1>The route trees</h1><form method="get" action="/debug/routes"><select name="method">{options}</select> <input name="path" size="40" placeholder="/book/42" value="{path}"> <button>Which route?</button></form><div id="answer">{answer}</div>{trees}<p><a href="/debug/walks">The walks</a>.</p></body></html>"#,
        path = escape(path.unwrap_or("")),
        trees = routes_svg::draw(map, chosen),
    )
}
