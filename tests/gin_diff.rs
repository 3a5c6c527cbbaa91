//! handwire against the real Gin: the same seeded route tables and
//! near-miss requests through both engines, every answer compared.
//!
//! `tests/gin_diff/main.go` is Gin's side, built against Debian's Gin
//! (`golang-github-gin-gonic-gin-dev`); this file generates the tables
//! (`gin_diff/generate.rs`), feeds them to it, registers each on a fresh
//! `Engine::bare()` with the same switches, asks both engines every
//! request in-process, and compares each registration (accepted or
//! refused, and the refusal's wording) and each answer (status,
//! `Location`, `Allow`, the route chosen, its parameters in order).
//!
//! A difference passes only as one of the departures listed in
//! `docs/middleware.md` §13, "Where handwire answers otherwise", which
//! `gin_diff/classify.rs` recognises; the list is read from the document,
//! so a departure the document does not teach fails here. So does a Gin
//! other than the version the list was written for.
//!
//! `make test-gin` runs it (`GIN_DIFF_SEED`, `GIN_DIFF_TABLES` choose the
//! run). Without Go or Gin it says why and passes, unless
//! `HANDWIRE_GIN_REQUIRED=1` (CI).

#[path = "gin_diff/classify.rs"]
mod classify;
#[path = "gin_diff/generate.rs"]
mod generate;
#[path = "gin_diff/reproductions.rs"]
mod reproductions;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use http::{Method, Request, StatusCode};
use http_body_util::Empty;
use serde_json::Value;

use classify::{classify, refusal_departure, Answer, Case};
use generate::{Rng, Table};
use handwire::web::{handler_now, Engine};

const SECTION: &str = "## 13. handwire and Gin side by side";
const REQUIRED_VAR: &str = "HANDWIRE_GIN_REQUIRED";
const GIN_SOURCE: &str = "/usr/share/gocode/src/github.com/gin-gonic/gin";

/// The departures §13 documents, and the Gin version they were written for.
fn documented() -> (Vec<String>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/middleware.md")).expect("middleware.md");
    let at = doc.find(SECTION).expect("§13 is in docs/middleware.md");
    let section = &doc[at + SECTION.len()..];
    let section = section.split("\n## ").next().unwrap_or(section);
    let version = (section.split_once("with Gin `"))
        .and_then(|(_, rest)| rest.split('`').next())
        .expect("§13 names the Gin version: with Gin `v…`");
    let is_id = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let ids = (section.lines())
        .filter_map(|line| line.strip_prefix("| `")?.split_once("` |"))
        .map(|(id, _)| id)
        .filter(|id| !id.is_empty() && id.chars().all(is_id))
        .map(str::to_owned)
        .collect();
    (ids, version.to_owned())
}

/// Gin's side built under `target/gin-diff`, or why it cannot be.
fn build_gin_side() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !Path::new(GIN_SOURCE).is_dir() {
        return Err(format!(
            "no Gin at {GIN_SOURCE} (apt-get install golang-go golang-github-gin-gonic-gin-dev)"
        ));
    }
    let out = root.join("target/gin-diff");
    let bin = out.join("gin_diff");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(root.join("tests/gin_diff"))
        .env("GOPATH", "/usr/share/gocode")
        .env("GO111MODULE", "off")
        .env("GOCACHE", out.join("go-cache"))
        .output()
        .map_err(|e| format!("cannot run go ({e}): apt-get install golang-go"))?;
    match built.status.success() {
        true => Ok(bin),
        false => Err(format!(
            "go build failed: {}",
            String::from_utf8_lossy(&built.stderr)
        )),
    }
}

/// The route whose handler ran, and the parameters it saw.
type Hit = (usize, Vec<(String, String)>);

/// Each route's refusal (empty: accepted) and each request's
/// answer, from a fresh `Engine::bare()`.
/// `own_defaults`: the engine's own switches, not the table's.
fn handwire(
    table: &Table,
    own_defaults: bool,
    rt: &tokio::runtime::Runtime,
) -> (Vec<String>, Vec<Answer>) {
    let sw = table.switches;
    let mut e = Engine::bare();
    if !own_defaults {
        e.redirect_trailing_slash(sw.redirect_trailing_slash);
        e.redirect_fixed_path(sw.redirect_fixed_path);
        e.remove_extra_slash(sw.remove_extra_slash);
        e.use_raw_path(sw.use_raw_path);
        e.unescape_path_values(sw.unescape_path_values);
        e.handle_method_not_allowed(sw.handle_method_not_allowed);
    }
    let hit: Arc<Mutex<Option<Hit>>> = Arc::default();
    let mut refused = Vec::new();
    for (i, (method, path)) in table.routes.iter().enumerate() {
        let seen = hit.clone();
        let h = handler_now("route", move |c| {
            let params = c.params().map(|(n, v)| (n.to_owned(), v.to_owned()));
            *seen.lock().unwrap() = Some((i, params.collect()));
            c.status(StatusCode::OK);
        });
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let result = e.handle(method, path, vec![h]);
        refused.push(result.err().map(|e| e.to_string()).unwrap_or_default());
    }
    let app = e.build();
    let remote = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
    let answers = (table.requests.iter())
        .map(|(method, target)| {
            let built = Request::builder()
                .method(method.as_str())
                .uri(target.as_str())
                .body(Empty::<bytes::Bytes>::new());
            let Ok(req) = built else {
                // hyper refuses such a request line: 400.
                return answer(400, None, None, None);
            };
            *hit.lock().unwrap() = None;
            let resp = rt.block_on(app.handle(req, remote));
            let header = |name| {
                (resp.headers().get(name))
                    .map(|v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned())
            };
            let (location, allow) = (header(http::header::LOCATION), header(http::header::ALLOW));
            answer(
                resp.status().as_u16(),
                location,
                allow,
                hit.lock().unwrap().take(),
            )
        })
        .collect();
    (refused, answers)
}

fn answer(
    status: u16,
    location: Option<String>,
    allow: Option<String>,
    hit: Option<Hit>,
) -> Answer {
    let (route, params) = hit.map_or((None, Vec::new()), |(r, p)| (Some(r), p));
    Answer {
        status,
        location,
        allow,
        route,
        params,
        panic: None,
    }
}

/// One of Gin's answers, from its JSON line.
fn gin_answer(v: &Value) -> Answer {
    let text = |key: &str| v[key].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let params = (v["params"].as_array().into_iter().flatten())
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    Answer {
        status: v["status"].as_u64().unwrap_or(0) as u16,
        location: text("location"),
        allow: text("allow"),
        route: v["route"].as_i64().and_then(|r| usize::try_from(r).ok()),
        params,
        panic: text("panic").map(|p| (p, text("panic_at").unwrap_or_default())),
    }
}

/// The figures of one run.
#[derive(Default)]
struct Tally {
    tables: usize,
    routes: usize,
    alike: usize,
    worded_alike: usize,
    requests: usize,
    agree: usize,
    /// Requests of the tables at each engine's own defaults, and how many
    /// of those Gin and handwire answer alike.
    default_requests: usize,
    default_agree: usize,
    departures: BTreeMap<&'static str, usize>,
    /// The smallest table that shows each departure, and its case.
    smallest: BTreeMap<&'static str, (usize, String)>,
    undocumented: Vec<String>,
}

impl Tally {
    fn count(&mut self, id: &'static str, size: usize, case: String) {
        *self.departures.entry(id).or_default() += 1;
        let smallest = self
            .smallest
            .entry(id)
            .or_insert((usize::MAX, String::new()));
        if size < smallest.0 {
            *smallest = (size, case);
        }
    }
}

/// Compares one table's registrations and answers, Gin's (`theirs`) and
/// handwire's, into `tally`.
fn compare(table: &Table, theirs: &Value, rt: &tokio::runtime::Runtime, tally: &mut Tally) {
    let (hw_refused, hw_answers) = handwire(table, false, rt);
    tally.tables += 1;
    let mut routes = Vec::new();
    for (i, (method, path)) in table.routes.iter().enumerate() {
        let gin = theirs["refused"][i].as_str().unwrap_or("");
        let hw = hw_refused[i].as_str();
        tally.routes += 1;
        routes.push(gin.is_empty().then_some((method.as_str(), path.as_str())));
        if gin.is_empty() != hw.is_empty() {
            let what = format!("{method} {path}: Gin {gin:?}, handwire {hw:?}");
            tally
                .undocumented
                .push(format!("registration {what}\n  {table:?}"));
            continue;
        }
        tally.alike += 1;
        if gin == hw {
            tally.worded_alike += 1;
            continue;
        }
        match refusal_departure(path, gin, hw) {
            Some(id) => {
                let case = format!("{:?}: {method} {path}", table.routes);
                tally.count(id, table.routes.len(), case);
            }
            None => tally.undocumented.push(format!(
                "wording of {method} {path}: Gin {gin:?}\n  handwire {hw:?}"
            )),
        }
    }
    let gin_answers = theirs["answers"].as_array().expect("Gin's answers");
    for (j, (method, target)) in table.requests.iter().enumerate() {
        tally.requests += 1;
        let (gin, hw) = (gin_answer(&gin_answers[j]), &hw_answers[j]);
        let case = Case {
            switches: table.switches,
            routes: routes.clone(),
            method,
            target,
        };
        match classify(&case, &gin, hw) {
            Ok(found) if found.is_empty() => tally.agree += 1,
            Ok(found) => {
                for id in found {
                    let case = format!(
                        "{:?} {:?}: {method} {target}\n      Gin {gin:?}\n      handwire {hw:?}",
                        table.switches, table.routes
                    );
                    tally.count(id, table.routes.len(), case);
                }
            }
            Err(why) => tally.undocumented.push(format!(
                "{method} {target}: {why}\n  Gin      {gin:?}\n  handwire {hw:?}\n  \
                 switches {:?}\n  routes {:?}",
                table.switches, table.routes
            )),
        }
    }
    if table.defaults {
        at_defaults(table, &gin_answers[..], &hw_answers, rt, tally);
    }
}

/// A table asked of each engine at its own defaults: Gin's answers
/// against handwire's. Gin's against handwire's with Gin's switches were
/// compared already; what changes with handwire's own switches must be
/// one of its two defaults of §11.
fn at_defaults(
    table: &Table,
    gin_answers: &[Value],
    aligned: &[Answer],
    rt: &tokio::runtime::Runtime,
    tally: &mut Tally,
) {
    let (_, own) = handwire(table, true, rt);
    for (j, (method, target)) in table.requests.iter().enumerate() {
        tally.default_requests += 1;
        if gin_answer(&gin_answers[j]) == own[j] {
            tally.default_agree += 1;
        }
        let (aligned, own) = (&aligned[j], &own[j]);
        let id = if aligned == own {
            continue;
        } else if aligned.status == 404 && own.status == 405 {
            "default-405"
        } else if target.contains('%') {
            "default-path-as-sent"
        } else {
            let why = format!("{method} {target}: {aligned:?} at Gin's switches, {own:?} at ours");
            tally
                .undocumented
                .push(format!("{why}\n  routes {:?}", table.routes));
            continue;
        };
        let case = format!(
            "{:?}: {method} {target} {aligned:?} / {own:?}",
            table.routes
        );
        tally.count(id, table.routes.len(), case);
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

#[test]
#[ignore = "make test-gin runs it: it needs Go and Debian's Gin"]
fn every_answer_agrees_with_gin_or_is_a_departure_section_13_documents() {
    let bin = match build_gin_side() {
        Ok(bin) => bin,
        Err(reason) if std::env::var(REQUIRED_VAR).as_deref() == Ok("1") => {
            panic!("Gin is required ({REQUIRED_VAR}=1): {reason}")
        }
        Err(reason) => {
            // Straight to stderr: libtest captures the output of passing tests.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED the differential test against Gin: {reason}"
            );
            return;
        }
    };
    let seed = env_number("GIN_DIFF_SEED", 56);
    let count = env_number("GIN_DIFF_TABLES", 2000) as usize;
    let (ids, version) = documented();
    assert!(ids.len() >= 10, "§13 lists only {} departures", ids.len());

    // §13's reproductions first, each a table of its own, then the random ones.
    let (reproduced, mut tables): (Vec<&str>, Vec<Table>) =
        reproductions::tables().into_iter().unzip();
    let mut rng = Rng::new(seed);
    tables.extend((0..count).map(|_| generate::table(&mut rng)));
    let mut gin = Command::new(&bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start Gin's side");
    let mut stdin = gin.stdin.take().unwrap();
    let lines: Vec<String> = (tables.iter())
        .map(|t| serde_json::to_string(t).unwrap())
        .collect();
    let feeder = std::thread::spawn(move || {
        for line in lines {
            writeln!(stdin, "{line}").expect("write a table to Gin's side");
        }
    });
    let mut out = BufReader::new(gin.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    let gin_version = first["gin"].as_str().unwrap_or("?").to_owned();
    println!("gin_diff: Gin {gin_version}, seed {seed}, {count} tables");
    assert_eq!(
        gin_version, version,
        "§13's departures were written for Gin {version}; this is Gin {gin_version}"
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut tally = Tally::default();
    let mut wrong = Vec::new();
    for (n, table) in tables.iter().enumerate() {
        let line = out.next().expect("Gin answered every table").unwrap();
        let theirs: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = reproduced.get(n) else {
            compare(table, &theirs, &rt, &mut tally);
            continue;
        };
        let mut alone = Tally::default();
        compare(table, &theirs, &rt, &mut alone);
        if !alone.departures.contains_key(id) || !alone.undocumented.is_empty() {
            wrong.push(format!(
                "{id}: {:?} {:?}",
                alone.departures, alone.undocumented
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "§13's reproductions that do not show their departure:\n{}",
        wrong.join("\n")
    );
    let unshown: Vec<&String> = ids
        .iter()
        .filter(|id| !reproduced.contains(&id.as_str()))
        .collect();
    assert!(
        unshown.is_empty(),
        "§13's departures without a reproduction in gin_diff/reproductions.rs: {unshown:?}"
    );
    println!(
        "gin_diff: §13's {} departures, each shown by its reproduction",
        ids.len()
    );
    feeder.join().unwrap();
    drop(out);
    let _ = gin.wait();

    let not_in_doc: Vec<&&str> = (tally.departures.keys())
        .filter(|id| !ids.iter().any(|d| d == *id))
        .collect();
    println!(
        "gin_diff: registrations accepted/refused alike {} / {}, worded alike {}",
        tally.alike, tally.routes, tally.worded_alike
    );
    println!(
        "gin_diff: requests agree {} / {} ({:.1} %) with the same switches; \
         at each engine's own defaults {} / {}; the rest by departure:",
        tally.agree,
        tally.requests,
        100.0 * tally.agree as f64 / tally.requests.max(1) as f64,
        tally.default_agree,
        tally.default_requests,
    );
    for (id, n) in &tally.departures {
        println!("  {n:>7}  {id}");
    }
    println!(
        "gin_diff: undocumented disagreements: {}",
        tally.undocumented.len()
    );
    if std::env::var("GIN_DIFF_EXAMPLES").as_deref() == Ok("1") {
        for (id, (_, case)) in &tally.smallest {
            println!("smallest {id}: {case}");
        }
    }
    let shown: Vec<&String> = tally.undocumented.iter().take(15).collect();
    assert!(
        tally.undocumented.is_empty(),
        "{} disagreements fit no documented departure (seed {seed}); the first:\n{}",
        tally.undocumented.len(),
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        not_in_doc.is_empty(),
        "departures that docs/middleware.md §13 does not list: {not_in_doc:?}"
    );
}
