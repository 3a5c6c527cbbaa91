//! One walk drawn as SVG: each handler a box, nested as the chain ran
//! (a handler's `next()` holds the rest of the chain), its own steps as
//! rows before and after that `next()`; a handler the loop ran after its
//! sibling returned is that sibling's neighbour (the implicit next); the
//! handlers an `abort()` kept from running are greyed boxes at the end.
//!
//! Drawn from the [`Step`]s `--trace` prints (and the drawn-only ones:
//! who wrote the status, which keys were set), with the same labels.

use std::fmt::Write;

use super::escape;
use crate::web::trace::{Ended, Label, Step, StepKind};

/// The drawing's width, in pixels.
pub(crate) const WIDTH: usize = 760;
/// One row of text.
const ROW: usize = 20;
/// How far a nested box is drawn inside its parent.
const INDENT: usize = 16;

/// A handler's box: its label, its rows and boxes in order, how it ended.
struct HandlerBox {
    index: isize,
    label: String,
    items: Vec<Item>,
    ended: Option<Ended>,
    exit: String,
}

enum Item {
    Row(StepKind, String),
    Inner(HandlerBox),
}

/// The walk of `steps` (a trace's, in order) through the chain named
/// `names`, as a standalone `<svg>` element.
pub fn draw(steps: &[Step], names: &[Option<&'static str>]) -> String {
    let head = steps.first().map_or("", |s| s.text.as_str());
    let mut root = HandlerBox {
        index: -1,
        label: head.to_string(),
        items: Vec::new(),
        ended: None,
        exit: String::new(),
    };
    let mut open: Vec<HandlerBox> = Vec::new();
    let mut skipped: Vec<(isize, String)> = Vec::new();
    let mut status = None;
    let mut writer = None;
    for step in steps.iter().skip(1) {
        let here = open.last_mut().unwrap_or(&mut root);
        match &step.kind {
            StepKind::Enter => {
                let index = step.who.unwrap_or(-1);
                let label = step.text.trim_start_matches("enter ").to_string();
                let ended = None;
                let (items, exit) = (Vec::new(), String::new());
                open.push(HandlerBox {
                    index,
                    label,
                    items,
                    ended,
                    exit,
                });
            }
            StepKind::Exit(ended) => {
                if let Some(mut done) = open.pop() {
                    done.ended = Some(*ended);
                    done.exit = step.text.clone();
                    open.last_mut()
                        .unwrap_or(&mut root)
                        .items
                        .push(Item::Inner(done));
                }
            }
            StepKind::Abort(indices) => {
                let who = step
                    .text
                    .split(": abort()")
                    .next()
                    .unwrap_or("")
                    .to_string();
                for &i in indices {
                    if !skipped.iter().any(|(s, _)| *s == i) {
                        skipped.push((i, who.clone()));
                    }
                }
                here.items
                    .push(Item::Row(step.kind.clone(), step.text.clone()));
            }
            StepKind::Wrote(code) => {
                writer = Some(step.who);
                status = Some(*code);
                here.items
                    .push(Item::Row(step.kind.clone(), step.text.clone()));
            }
            StepKind::Finish(code) => status = Some(*code),
            kind => here.items.push(Item::Row(kind.clone(), step.text.clone())),
        }
    }
    // A walk cut off mid-way (it should not be) still draws what it has.
    while let Some(mut done) = open.pop() {
        done.exit = String::from("(still running)");
        open.last_mut()
            .unwrap_or(&mut root)
            .items
            .push(Item::Inner(done));
    }
    let mut body = String::new();
    let mut y = 34;
    for item in &root.items {
        y = draw_item(&mut body, item, 8, y, WIDTH - 16);
    }
    for (index, by) in &skipped {
        let name = usize::try_from(*index)
            .ok()
            .and_then(|i| names.get(i).copied().flatten());
        let label = Label(*index, name).to_string();
        let _ = write!(
            body,
            r#"<g class="handler skipped" data-index="{index}" data-name="{n}"><rect x="8" y="{y}" width="{w}" height="{h}" rx="6"/><text x="16" y="{t}">{l}: skipped (abort() in {b})</text></g>"#,
            n = escape(name.unwrap_or("")),
            w = WIDTH - 16,
            h = ROW + 6,
            t = y + 17,
            l = escape(&label),
            b = escape(by),
        );
        y += ROW + 12;
    }
    let who = match writer {
        Some(Some(i)) => {
            let name = usize::try_from(i)
                .ok()
                .and_then(|i| names.get(i).copied().flatten());
            format!(", written by {}", Label(i, name))
        }
        Some(None) => String::from(", written by the engine"),
        None => String::from(", nobody wrote: the default"),
    };
    let status = status.map_or(String::from("no status"), |s| format!("=> {s}"));
    let early = names.contains(&Some("early_answer"));
    let note = if early {
        " (an early answer: given instead of any route's chain)"
    } else {
        ""
    };
    let height = y + ROW + 8;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="walk" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="13"><style>{STYLE}</style><text class="head" x="8" y="20">{head}{note}</text>{body}<text class="status" x="8" y="{sy}">{status}{who}</text></svg>"#,
        head = escape(&root.label),
        note = escape(note),
        sy = y + ROW,
        status = escape(&status),
        who = escape(&who),
    );
    svg
}

/// The style of a drawn walk, inside the SVG so a standalone file has it.
const STYLE: &str = "rect{fill:#f4f8ff;stroke:#3a5a8c}\
.skipped rect{fill:#eee;stroke:#999;stroke-dasharray:4 3}.skipped text{fill:#888}\
.aborted>rect{stroke:#b35c00}.panicked>rect{fill:#ffecec;stroke:#c00}\
.cut>rect{stroke:#c00;stroke-dasharray:6 3}.timedout>rect{fill:#fff4e0}\
.name{font-weight:bold}.next{fill:#2456a6}.abort{fill:#b35c00}.caught{fill:#08752e}\
.wrote{fill:#6a1b9a}.key{fill:#555}.key.read{fill:#777;font-style:italic}.after{fill:#2456a6;font-style:italic}\
.exit{fill:#444}.head,.status{font-weight:bold}";

/// Draw `item` at (`x`, `y`), `width` wide; returns the `y` below it.
fn draw_item(out: &mut String, item: &Item, x: usize, y: usize, width: usize) -> usize {
    match item {
        Item::Row(kind, text) => {
            let class = match kind {
                StepKind::Next => "next",
                StepKind::Abort(_) => "abort",
                StepKind::Caught => "caught",
                StepKind::Wrote(_) => "wrote",
                StepKind::KeySet => "key",
                StepKind::KeyRead => "key read",
                _ => "note",
            };
            let shown = text.split_once(": ").map_or(text.as_str(), |(_, s)| s);
            let arrow = if *kind == StepKind::Next { "↓ " } else { "" };
            let _ = write!(
                out,
                r#"<text class="{class}" x="{x}" y="{t}">{arrow}{s}</text>"#,
                t = y + 15,
                s = escape(shown),
            );
            y + ROW
        }
        Item::Inner(b) => draw_box(out, b, x, y, width),
    }
}

/// The line where a handler's code after its `next()` starts, at `y`;
/// the height it took added.
fn back_from_next(out: &mut String, x: usize, y: usize) -> usize {
    let _ = write!(
        out,
        r#"<text class="after" x="{tx}" y="{t}">↑ back from next(): its code after next()</text>"#,
        tx = x + 8,
        t = y + 15,
    );
    y + ROW
}

fn draw_box(out: &mut String, b: &HandlerBox, x: usize, y: usize, width: usize) -> usize {
    let class = match b.ended {
        Some(Ended::Aborted) => "handler aborted",
        Some(Ended::Panicked) => "handler panicked",
        Some(Ended::CutShort) => "handler cut",
        Some(Ended::TimedOut) => "handler timedout",
        _ => "handler",
    };
    let name = b.label.split_once(' ').map_or("", |(_, n)| n);
    let mut inner = String::new();
    let mut cy = y + ROW + 6;
    let mut called_next = false;
    let mut inside_next = false;
    let mut previous_box = false;
    for item in &b.items {
        match item {
            Item::Row(StepKind::Next, _) => {
                called_next = true;
                inside_next = true;
            }
            Item::Row(..) if inside_next => {
                cy = back_from_next(&mut inner, x, cy);
                inside_next = false;
            }
            Item::Inner(_) if previous_box => {
                let _ = write!(
                    inner,
                    r#"<text class="next" x="{tx}" y="{t}">↓ implicit next: the loop runs the next handler</text>"#,
                    tx = x + INDENT,
                    t = cy + 13,
                );
                cy += ROW - 2;
            }
            _ => {}
        }
        previous_box = matches!(item, Item::Inner(_));
        cy = draw_item(&mut inner, item, x + INDENT / 2, cy, width - INDENT);
        if previous_box {
            cy += 6;
        }
    }
    let returned = matches!(b.ended, Some(Ended::Returned | Ended::Aborted));
    if inside_next && returned {
        cy = back_from_next(&mut inner, x, cy);
    }
    let exit = match (&b.ended, called_next) {
        (Some(Ended::Returned), false) => String::from("returned without next(): the loop goes on"),
        _ => b
            .exit
            .split_once(" [")
            .map_or(String::from("returned"), |(_, m)| format!("[{m}")),
    };
    let _ = write!(
        inner,
        r#"<text class="exit" x="{tx}" y="{t}">{e}</text>"#,
        tx = x + 8,
        t = cy + 15,
        e = escape(&exit),
    );
    cy += ROW + 4;
    let _ = write!(
        out,
        r#"<g class="{class}" data-index="{i}" data-name="{n}"><rect x="{x}" y="{y}" width="{width}" height="{h}" rx="6"/><text class="name" x="{tx}" y="{ty}">{l}</text>{inner}</g>"#,
        i = b.index,
        n = escape(name),
        h = cy - y,
        tx = x + 8,
        ty = y + 17,
        l = escape(&b.label),
    );
    cy + 4
}
