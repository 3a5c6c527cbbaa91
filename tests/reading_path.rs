//! The reading path of one request stays short, and `docs/middleware.md`
//! says how long it is.
//!
//! The section "One request end to end" of `docs/middleware.md` lists, in
//! order, every function and type a `GET /book/42` to router-demo passes
//! through, from the contract's call into the framework to the response:
//! a table of file, item and code lines. One test counts each item again
//! in the source (code lines only: no blank lines, no comment lines, no
//! tests), fails when a row's count or the total is no longer true, and
//! holds the total to the committed [`CEILING`]: it may fall, and rises
//! only with a reason in the commit, never past [`LIMIT`]. Another derives
//! the path from the code: it runs a real `GET /book/42` under valgrind's
//! callgrind and fails when a function of the crate that ran is not a row
//! (and not [`DECLARED_OUT`]), or a function row did not run (and is not
//! [`READ_NOT_RUN`]).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use handwire::contract::{Answer, Caller, Service};
use handwire::ops::metrics::Metrics;
use handwire::server::{self, Options};
use handwire::services::router_demo::{self, DemoOptions};
use handwire::web::App;
use http::Request;
use hyper::body::Incoming;

/// The most code lines a student reads to follow one request, today. A
/// change that shortens the path lowers it.
const CEILING: usize = 496;

/// The most the path may ever be: one request, from the contract to the
/// response, readable in a sitting.
const LIMIT: usize = 500;
const _: () = assert!(CEILING <= LIMIT, "the ceiling is past the limit");

/// The section of `docs/middleware.md` that holds the table.
const SECTION: &str = "## 12. One request end to end";

/// One row of the table: file, item (`Type::method`, `function`,
/// `struct Name`, `enum Name`, `type Name`) and the lines it claims.
#[derive(Debug)]
struct Row {
    file: String,
    item: String,
    lines: usize,
}

/// The rows and the claimed total of the section's table.
fn table() -> (Vec<Row>, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("docs/middleware.md")).expect("read middleware.md");
    let at = doc
        .find(SECTION)
        .expect("the section is in docs/middleware.md");
    let section = &doc[at + SECTION.len()..];
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = Vec::new();
    let mut total = None;
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let number = |cell: &str| cell.trim_matches('*').parse::<usize>().ok();
        if cells.iter().any(|c| c.contains("total")) {
            total = cells.last().and_then(|c| number(c));
            continue;
        }
        let quoted = |cell: &str| {
            cell.strip_prefix('`')?
                .strip_suffix('`')
                .map(str::to_string)
        };
        let (Some(file), Some(item), Some(lines)) = (
            cells.get(1).and_then(|c| quoted(c)),
            cells.get(2).and_then(|c| quoted(c)),
            cells.get(3).and_then(|c| number(c)),
        ) else {
            continue;
        };
        rows.push(Row { file, item, lines });
    }
    (rows, total.expect("a total row"))
}

/// `line` without string and character literals and without its `//`
/// comment, so that the braces left are code.
fn code_of(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => break,
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
            }
            // A character literal ('x', '\n'), not a lifetime ('a).
            '\'' if chars.get(i + 1) == Some(&'\\') => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '\'' if chars.get(i + 2) == Some(&'\'') => i += 2,
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// The line where `item` starts in `src`.
fn start_of(lines: &[&str], item: &str) -> Option<usize> {
    let strip = |l: &str| {
        let mut l = l.trim_start();
        for prefix in ["pub(crate) ", "pub(super) ", "pub ", "async ", "const "] {
            l = l.strip_prefix(prefix).unwrap_or(l);
        }
        l.to_string()
    };
    let is = |l: &str, head: &str| {
        strip(l)
            .strip_prefix(head)
            .is_some_and(|rest| rest.starts_with(|c: char| !(c.is_alphanumeric() || c == '_')))
    };
    // A `static` (a task-local's, inside its macro, too) or a `const`.
    for kind in ["static ", "const "] {
        if let Some(name) = item.strip_prefix(kind) {
            let head = format!("{kind}{name}:");
            let bare = |l: &&str| {
                let l = l.trim_start();
                let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
                l.starts_with(&head)
            };
            return lines.iter().position(bare);
        }
    }
    for kind in ["struct ", "enum ", "type ", "trait "] {
        if let Some(name) = item.strip_prefix(kind) {
            let head = format!("{kind}{name}");
            return lines
                .iter()
                .position(|l| !l.starts_with(' ') && is(l, &head));
        }
    }
    let Some((ty, name)) = item.split_once("::") else {
        let head = format!("fn {item}");
        return lines
            .iter()
            .position(|l| !l.starts_with(' ') && is(l, &head));
    };
    // `impl Ty`, `impl<T> Ty<T>`, `impl Trait for Ty`.
    let names_ty = |l: &str| {
        let Some(rest) = l.strip_prefix("impl") else {
            return false;
        };
        let rest = rest.split('{').next().unwrap_or("");
        let target = rest.rsplit(" for ").next().unwrap_or(rest).trim();
        let target = match target.strip_prefix('<') {
            Some(generic) => generic.split_once('>').map_or("", |(_, t)| t.trim()),
            None => target,
        };
        target.split(['<', ' ']).next() == Some(ty)
    };
    let from = lines.iter().position(|l| names_ty(l))?;
    let head = format!("fn {name}");
    (from..lines.len()).find(|&i| lines[i].starts_with("    ") && is(lines[i], &head))
}

/// The code lines of `item` in `src`: from its first line to its closing
/// brace (or semicolon), blank and comment lines left out.
fn code_lines(src: &str, item: &str) -> Result<usize, String> {
    let src = src.split("#[cfg(test)]").next().unwrap_or(src);
    let lines: Vec<&str> = src.lines().collect();
    let start = start_of(&lines, item).ok_or_else(|| format!("{item} not found"))?;
    let mut depth = 0i32;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        let code = code_of(line);
        for c in code.chars() {
            match c {
                '{' => (depth, opened) = (depth + 1, true),
                '}' => depth -= 1,
                _ => {}
            }
        }
        let ended = (opened && depth == 0) || (!opened && code.trim_end().ends_with(';'));
        if ended {
            let counted = lines[start..=i]
                .iter()
                .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
                .count();
            return Ok(counted);
        }
    }
    Err(format!("{item} has no end"))
}

/// What the path calls but the table leaves out, and why: the server's
/// side (a file prefix), and the operations the path only calls.
const DECLARED_OUT: &[(&str, &str, &str)] = &[
    (
        "src/server/",
        "",
        "the server, before App::call and after the answer",
    ),
    (
        "src/ops/log.rs",
        "Sink::line",
        "the log sink: hands the line to its writer thread",
    ),
    (
        "src/ops/log.rs",
        "Shared::lock",
        "the log sink's lock, inside Sink::line",
    ),
    ("src/ops/metrics.rs", "", "a metric's observe"),
];

/// Rows a reader needs that this one request does not run, and why.
const READ_NOT_RUN: &[(&str, &str, &str)] = &[(
    "src/web/middleware.rs",
    "recovery",
    "what recovery is; its own code runs on a panic",
)];

/// Why `(file, item)` is left out of the table, if it is.
fn declared_out(file: &str, item: &str) -> Option<&'static str> {
    DECLARED_OUT.iter().find_map(|&(f, i, why)| {
        let hit = if i.is_empty() {
            file.starts_with(f)
        } else {
            file == f && item == i
        };
        hit.then_some(why)
    })
}

#[test]
fn following_get_book_42_from_the_contract_to_the_response_reads_no_more_than_the_ceiling() {
    let (rows, total) = table();
    assert!(rows.len() >= 40, "only {} rows in the table", rows.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    let mut sum = 0;
    for row in &rows {
        let src = fs::read_to_string(root.join(&row.file)).expect("read a listed file");
        match code_lines(&src, &row.item) {
            Ok(n) if n == row.lines => {}
            Ok(n) => wrong.push(format!(
                "{} {}: {n} lines, the table says {}",
                row.file, row.item, row.lines
            )),
            Err(e) => wrong.push(format!("{}: {e}", row.file)),
        }
        sum += row.lines;
    }
    assert!(
        wrong.is_empty(),
        "docs/middleware.md is out of date:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        sum, total,
        "the rows add up to {sum}, the total row says {total}"
    );
    assert!(
        total <= CEILING,
        "{total} lines to read, more than {CEILING}"
    );
}

/// The table is the path a real request takes: every function of the
/// crate that `GET /book/42` runs inside the server's call (recorded by
/// callgrind) is a row, unless [`DECLARED_OUT`] says why not, and every
/// function row ran. Needs valgrind; without it the test says SKIPPED and
/// passes, unless `HANDWIRE_VALGRIND_REQUIRED=1`.
#[test]
fn every_function_get_book_42_runs_is_a_row_of_the_table_and_every_row_ran() {
    let Some(ran) = executed() else {
        let required = std::env::var("HANDWIRE_VALGRIND_REQUIRED").as_deref() == Ok("1");
        assert!(
            !required,
            "valgrind is required (HANDWIRE_VALGRIND_REQUIRED=1)"
        );
        eprintln!("SKIPPED: valgrind is not installed");
        return;
    };
    let (rows, _) = table();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.file.clone(), r.item.clone()))
        .collect();
    let mut missing = Vec::new();
    for (file, item) in &ran {
        if declared_out(file, item).is_some() || listed.contains(&(file.clone(), item.clone())) {
            continue;
        }
        let src = fs::read_to_string(root.join(file)).expect("read a source file");
        // Not written in the file: derived (`#[derive(Default)]`).
        if code_lines(&src, item).is_ok() {
            missing.push(format!("{file} {item}"));
        }
    }
    assert!(
        missing.is_empty(),
        "GET /book/42 runs these, and docs/middleware.md §12 does not list them:\n{}",
        missing.join("\n")
    );
    let kinds = ["struct ", "enum ", "type ", "trait ", "static ", "const "];
    let not_run: Vec<String> = rows
        .iter()
        .filter(|r| !kinds.iter().any(|k| r.item.starts_with(k)))
        .filter(|r| !ran.contains(&(r.file.clone(), r.item.clone())))
        .filter(|r| {
            !READ_NOT_RUN
                .iter()
                .any(|&(f, i, _)| r.file == f && r.item == i)
        })
        .map(|r| format!("{} {}", r.file, r.item))
        .collect();
    assert!(
        not_run.is_empty(),
        "docs/middleware.md §12 lists these, and GET /book/42 does not run them:\n{}",
        not_run.join("\n")
    );
}

#[test]
fn the_counter_counts_code_lines_of_functions_methods_and_types() {
    let src = r#"
/// A doc.
pub struct Point {
    x: u32, // a comment with a brace {
    y: u32,
}

pub type Pair = (u32, u32);

impl Point {
    pub fn sum(&self) -> u32 {
        // not counted
        let s = "a } in a string";

        self.x + self.y + s.len() as u32 + u32::from('{' as u8)
    }
}

fn free<'a>(text: &'a str) -> &'a str {
    text
}
"#;
    assert_eq!(code_lines(src, "struct Point"), Ok(4));
    assert_eq!(code_lines(src, "type Pair"), Ok(1));
    assert_eq!(code_lines(src, "Point::sum"), Ok(4));
    assert_eq!(code_lines(src, "free"), Ok(3));
    assert!(code_lines(src, "Point::missing").is_err());
}

/// router-demo's app, whose second call is [`measured_call`]: the first
/// request warms what a process does once (the log sink's thread, the
/// clock's first second), which is not the path of a request.
struct Measured {
    app: Arc<App>,
    calls: AtomicUsize,
}

impl Service for Measured {
    fn call(&self, req: Request<Incoming>, caller: Caller) -> Answer {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            return Service::call(&*self.app, req, caller);
        }
        measured_call(&self.app, req, caller)
    }
}

/// The server's call into the framework for the measured request, and the
/// one poll the server gives work that may be polled now, as the server
/// does it (`Pending::call`); callgrind records what runs inside it
/// (`--toggle-collect`).
#[inline(never)]
fn measured_call(app: &App, req: Request<Incoming>, caller: Caller) -> Answer {
    let Answer::Now(mut work) = Service::call(app, req, caller) else {
        panic!("GET /book/42 was not work to poll in the call");
    };
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // The server polls inside the request's trace scope (declared out);
    // nothing on this path reads it.
    let polled = work.as_mut().poll(&mut cx);
    // Done at that poll: the whole path ran inside it.
    let std::task::Poll::Ready(resp) = polled else {
        panic!("GET /book/42 was pending at its first poll");
    };
    Answer::Now(Box::pin(std::future::ready(resp)))
}

/// `GET /book/42` on a new connection to `addr`; its status.
async fn get_book_42(addr: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = "GET /book/42 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer.lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
#[ignore = "one request for callgrind, run by the reading path test"]
async fn one_get_book_42_for_callgrind() {
    // As the binary runs by default: with metrics.
    let mut engine = router_demo::engine(DemoOptions::default()).expect("routes");
    engine.metrics(&Metrics::new()).expect("GET /metrics");
    let app = engine.build();
    let listener = server::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let calls = AtomicUsize::new(0);
    let service = Arc::new(Measured { app, calls });
    let shutdown = std::future::pending();
    tokio::spawn(server::serve(
        listener,
        service,
        Options::default(),
        shutdown,
    ));
    for _ in 0..2 {
        assert_eq!(get_book_42(addr).await, "HTTP/1.1 200 OK");
    }
}

/// The crate's functions a real `GET /book/42` runs inside the server's
/// call, recorded by callgrind, as `(file, item)`; `None` without valgrind.
fn executed() -> Option<BTreeSet<(String, String)>> {
    let out = std::env::temp_dir().join(format!("reading-path-{}.callgrind", std::process::id()));
    let exe = std::env::current_exe().expect("the test binary");
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg("--toggle-collect=*measured_call*")
        .arg(&exe)
        .args(["--exact", "one_get_book_42_for_callgrind", "--ignored"])
        .output();
    let Ok(run) = run else {
        return None;
    };
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = fs::read_to_string(&out).expect("callgrind's output");
    let _ = fs::remove_file(&out);
    // `fn=(7) name` names a function the first time, `fn=(7)` after; cost
    // lines (`+2 31`, `15 4`) follow the function they belong to.
    let mut ids = std::collections::HashMap::new();
    let mut names = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut after_call = false;
    for line in text.lines() {
        let named = line.strip_prefix("fn=").map(|r| (r, true));
        let named = named.or(line.strip_prefix("cfn=").map(|r| (r, false)));
        if let Some((rest, is_fn)) = named {
            let (id, name) = match rest.split_once(' ') {
                Some((id, name)) => (id.to_string(), name.to_string()),
                None => (rest.to_string(), ids.get(rest).cloned().unwrap_or_default()),
            };
            ids.insert(id, name.clone());
            if is_fn {
                current = Some(name);
            }
        } else if line.starts_with("calls=") {
            // The next cost line is the call's, not the caller's own.
            after_call = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-') {
            if let (Some(name), false) = (&current, after_call) {
                names.insert(name.clone());
            }
            after_call = false;
        }
    }
    Some(names.iter().filter_map(|n| item_of(n)).collect())
}

/// The file and table item of a demangled function name of this crate
/// (`handwire::web::chain::Context::next::{{closure}}` →
/// `src/web/chain.rs`, `Context::next`; `<handwire::web::app::App as
/// handwire::contract::Service>::call` → `src/web/app.rs`, `App::call`).
fn item_of(name: &str) -> Option<(String, String)> {
    let name = match name.strip_prefix('<') {
        Some(inner) => {
            let (ty, rest) = inner.split_once(" as ")?;
            let method = rest.split_once(">::")?.1;
            format!("{ty}::{method}")
        }
        None => name.to_string(),
    };
    let path = name.strip_prefix("handwire::")?;
    // `Node<T>` is `Node`; a static inside a function is that function.
    let mut segments: Vec<&str> = path
        .split("::")
        .take_while(|s| !s.starts_with('{') && !s.starts_with('<'))
        .map(|s| s.split('<').next().unwrap_or(s))
        .collect();
    let is_static = |s: &&str| s.len() > 1 && s.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    if let Some(at) = segments.iter().position(is_static) {
        segments.truncate(at + 1);
    }
    // A generic function's demangled name may end in its hash: `h1234…`.
    if segments
        .last()
        .is_some_and(|s| s.len() == 17 && s.starts_with('h'))
    {
        segments.pop();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // The longest run of segments that is a file; the rest is the item.
    for split in (1..segments.len()).rev() {
        let dir = segments[..split].join("/");
        for file in [format!("{dir}.rs"), format!("{dir}/mod.rs")] {
            if root.join(&file).is_file() {
                let item = segments[split..].join("::");
                let item = match segments[split..] {
                    // A task-local or a static of the module.
                    [name] if is_static(&name) => format!("static {name}"),
                    [.., last] if is_static(&last) => {
                        segments[split..segments.len() - 1].join("::")
                    }
                    _ => item,
                };
                return Some((format!("src/{file}"), item));
            }
        }
    }
    None
}
