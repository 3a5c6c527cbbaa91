//! router-demo black-box tests: every demo route against a real server,
//! over HTTP/1.1 and HTTP/2, plus the `router-demo` binary
//! itself (start-up line, request log, port-in-use error).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use http::{Method, StatusCode};
use serde_json::json;

use handwire::services::router_demo::{self, DemoOptions, MIDDLE_VALUE};
use support::app::{start, TestServer};
use support::http::{get, send, Proto, Reply, BOTH};

const TARGET: &str = "https://target.example/landing?a=1&b=2";

async fn demo_server() -> TestServer {
    let opts = DemoOptions {
        redirect_target: TARGET.to_string(),
        ..DemoOptions::default()
    };
    start(
        router_demo::engine(opts)
            .expect("demo routes register")
            .build(),
    )
    .await
}

fn assert_text(r: &Reply, want: &str) {
    assert_eq!(r.status, StatusCode::OK, "body: {}", r.text());
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.text(), want);
}

#[tokio::test]
async fn plain_text_routes_answer_with_their_greeting_and_parameters() {
    let srv = demo_server().await;
    for proto in BOTH {
        assert_text(
            &get(proto, srv.addr, "/api/gin-test").await,
            "Hello, gin-test!",
        );
        assert_text(&get(proto, srv.addr, "/hello").await, "Hello World!");
        assert_text(
            &get(proto, srv.addr, "/book/42").await,
            "You are reading book 42",
        );
        assert_text(
            &get(proto, srv.addr, "/user?name=Ann%20Lee").await,
            "The user name is Ann Lee",
        );
        assert_text(
            &get(proto, srv.addr, "/food/apple?weight=2kg").await,
            "The food apple weighs 2kg",
        );
    }
}

#[tokio::test]
async fn v1_group_is_get_and_v2_group_is_post_with_default_names() {
    let srv = demo_server().await;
    for proto in BOTH {
        assert_text(&get(proto, srv.addr, "/v1/login").await, "hello jack\n");
        assert_text(&get(proto, srv.addr, "/v1/submit").await, "hello lily\n");
        assert_text(
            &get(proto, srv.addr, "/v1/login?name=bob").await,
            "hello bob\n",
        );
        for (path, want) in [
            ("/v2/login", "hello jack\n"),
            ("/v2/submit", "hello lily\n"),
            ("/v2/submit?name=eve", "hello eve\n"),
        ] {
            let r = send(proto, srv.addr, Method::POST, path, &[], "").await;
            assert_text(&r, want);
        }
        // The versions differ by method: /v1 answers GET, /v2 POST.
        let r = get(proto, srv.addr, "/v2/login").await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.header("allow"), Some("POST"));
        let r = send(proto, srv.addr, Method::POST, "/v1/login", &[], "").await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    }
}

#[tokio::test]
async fn json_envelope_routes_use_string_code_90200() {
    let srv = demo_server().await;
    for proto in BOTH {
        for path in ["/users", "/books"] {
            let r = get(proto, srv.addr, path).await;
            assert_eq!(r.status, StatusCode::OK);
            let v = r.json();
            assert_eq!(v["code"], json!("90200"));
            assert_eq!(v["data"], json!(null));
            assert!(v["msg"].is_string());
        }
        let v = get(proto, srv.addr, "/Global").await.json();
        assert_eq!(v["code"], json!("90200"));
        assert_eq!(v["data"], json!(MIDDLE_VALUE));
    }
}

#[tokio::test]
async fn remove_redirects_301_to_the_configured_target_with_html_link() {
    let srv = demo_server().await;
    for proto in BOTH {
        let r = get(proto, srv.addr, "/remove").await;
        assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(r.header("location"), Some(TARGET));
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert!(
            r.text()
                .contains("href=\"https://target.example/landing?a=1&amp;b=2\""),
            "{}",
            r.text()
        );
    }
}

#[tokio::test]
async fn index_without_token_is_403_and_handler_does_not_run() {
    let srv = demo_server().await;
    for proto in BOTH {
        for headers in [&[][..], &[("token", "")][..]] {
            let r = send(proto, srv.addr, Method::GET, "/index", headers, "").await;
            assert_eq!(r.status, StatusCode::FORBIDDEN);
            let v = r.json();
            assert!(v["msg"].is_string());
            assert!(v.get("data").is_none(), "handler ran: {v}");
        }
        let r = send(
            proto,
            srv.addr,
            Method::GET,
            "/index",
            &[("token", "anything")],
            "",
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        let v = r.json();
        assert_eq!(v["code"], json!("90200"));
        assert!(v["data"].as_str().unwrap().contains("welcome"));
    }
}

fn login_ok(v: &serde_json::Value, user: &str, pass: &str) {
    assert_eq!(v["code"], json!(90200), "{v}");
    assert_eq!(v["data"], json!({"username": user, "password": pass}));
    assert!(v["msg"].is_string());
}

fn login_missing(v: &serde_json::Value, field: &str) {
    assert_eq!(v["code"], json!(90400), "{v}");
    assert_eq!(v["data"], json!(null));
    let want = format!(
        "Key: 'Login.{field}' Error:Field validation for '{field}' failed on the 'required' tag"
    );
    assert!(v["msg"].as_str().unwrap().contains(&want), "{v}");
}

#[tokio::test]
async fn login_binds_json_form_multipart_and_query_and_reports_missing_fields() {
    let srv = demo_server().await;
    let json_ct = [("content-type", "application/json")];
    let form_ct = [("content-type", "application/x-www-form-urlencoded")];
    let mp_ct = [("content-type", "multipart/form-data; boundary=B0uNd")];
    let mp = |fields: &[(&str, &str)]| {
        let mut s = String::new();
        for (k, v) in fields {
            s.push_str(&format!(
                "--B0uNd\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
            ));
        }
        s.push_str("--B0uNd--\r\n");
        s
    };
    for proto in BOTH {
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/login",
            &json_ct,
            r#"{"username":"ann","password":"s3cret"}"#,
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        login_ok(&r.json(), "ann", "s3cret");
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/login",
            &form_ct,
            "username=ann&password=a+b%21",
        )
        .await;
        login_ok(&r.json(), "ann", "a b!");
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/login",
            &mp_ct,
            mp(&[("username", "ann"), ("password", "pw")]),
        )
        .await;
        login_ok(&r.json(), "ann", "pw");
        let r = get(proto, srv.addr, "/login?username=ann&password=pw").await;
        login_ok(&r.json(), "ann", "pw");

        // Missing or empty fields: still 200, code 90400, validator message.
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/login",
            &json_ct,
            r#"{"username":"ann"}"#,
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        login_missing(&r.json(), "Password");
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/login",
            &form_ct,
            "username=&password=pw",
        )
        .await;
        login_missing(&r.json(), "Username");
        let r = send(
            proto,
            srv.addr,
            Method::POST,
            "/login",
            &mp_ct,
            mp(&[("password", "pw")]),
        )
        .await;
        login_missing(&r.json(), "Username");
        let r = get(proto, srv.addr, "/login").await;
        let v = r.json();
        login_missing(&v, "Username");
        login_missing(&v, "Password");
    }
}

#[tokio::test]
async fn login_with_malformed_bodies_reports_an_error_and_keeps_serving() {
    let srv = demo_server().await;
    let cases: [(&str, &[u8]); 6] = [
        ("application/json", b"{\"username\":"),
        ("application/json", b"[1,2,3]"),
        (
            "application/json",
            b"{\"username\": 5, \"password\": \"x\"}",
        ),
        ("application/x-www-form-urlencoded", b"username=\xff\xfe"),
        ("multipart/form-data; boundary=B", b"--B\r\nno headers end"),
        ("multipart/form-data", b"--B\r\n\r\n--B--"),
    ];
    for proto in BOTH {
        for (ct, body) in cases {
            let r = send(
                proto,
                srv.addr,
                Method::POST,
                "/login",
                &[("content-type", ct)],
                body.to_vec(),
            )
            .await;
            assert_eq!(r.status, StatusCode::OK);
            let v = r.json();
            assert_eq!(v["code"], json!(90400), "{ct}: {v}");
            assert!(
                v["msg"].as_str().unwrap().starts_with("login failed: "),
                "{v}"
            );
        }
        assert_text(&get(proto, srv.addr, "/hello").await, "Hello World!");
    }
}

#[tokio::test]
async fn responses_are_served_over_the_protocol_the_client_chose() {
    let srv = demo_server().await;
    assert_eq!(
        get(Proto::H1, srv.addr, "/hello").await.version,
        http::Version::HTTP_11
    );
    assert_eq!(
        get(Proto::H2, srv.addr, "/hello").await.version,
        http::Version::HTTP_2
    );
}

fn router_demo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_router-demo"))
}

#[test]
fn binary_prints_its_address_serves_and_logs_each_request() {
    let mut child = router_demo()
        .args([
            "--addr",
            "127.0.0.1:0",
            "--redirect-target",
            TARGET,
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start router-demo");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The connection cap first, then the address.
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("router-demo holds up to "), "{line}");
    line.clear();
    out.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("router-demo listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let r = rt.block_on(get(Proto::H1, addr, "/book/7?x=1"));
    assert_eq!(r.text(), "You are reading book 7");
    let r = rt.block_on(get(Proto::H2, addr, "/nope"));
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    for want in [" | 200 | ", " | 404 | "] {
        line.clear();
        out.read_line(&mut line).unwrap();
        assert!(line.starts_with("[router-demo] "), "{line}");
        assert!(line.contains(want), "{line}");
        assert!(line.contains(" 127.0.0.1 | GET "), "{line}");
    }
    assert!(line.contains("GET     \"/nope\""), "{line}");
    // SIGTERM: graceful shutdown, exit 0.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
}

#[test]
fn binary_exits_nonzero_naming_the_address_when_the_port_is_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = router_demo().args(["--addr", &addr]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
}

#[test]
fn binary_rejects_unknown_options() {
    let out = router_demo().args(["--adr", "x"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option --adr"));
}

/// A running `router-demo`, killed when dropped (also when a test fails).
struct Running(std::process::Child);

impl Running {
    fn kill(&mut self) -> std::io::Result<()> {
        self.0.kill()
    }
    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.0.wait()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the binary with `args` and read its stdout up to the address line;
/// returns the process, the reader, the lines before the address, the address.
fn start_binary(
    args: &[&str],
) -> (
    Running,
    BufReader<std::process::ChildStdout>,
    Vec<String>,
    std::net::SocketAddr,
) {
    let mut child = router_demo()
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start router-demo");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let child = Running(child);
    let mut before = Vec::new();
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "no address line");
        if let Some(addr) = line.trim().strip_prefix("router-demo listening on http://") {
            let addr = addr.parse().unwrap();
            return (child, out, before, addr);
        }
        before.push(line.trim_end().to_string());
    }
}

/// Read lines until one equal to `last` (inclusive).
fn read_until(out: &mut BufReader<std::process::ChildStdout>, last: &str) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "eof before {last:?}: {lines:#?}"
        );
        let line = line.trim_end().to_string();
        let done = line == last;
        lines.push(line);
        if done {
            return lines;
        }
    }
}

/// The `[trace]` lines of the log up to `last` (inclusive).
fn trace_lines(out: &mut BufReader<std::process::ChildStdout>, last: &str) -> Vec<String> {
    read_until(out, last)
        .into_iter()
        .filter(|l| l.starts_with("[trace]"))
        .collect()
}

#[test]
fn route_table_is_printed_at_start_up_one_line_per_route_and_quiet_turns_it_off() {
    let (mut child, _out, before, _) = start_binary(&[]);
    // One line per route, then the connection cap.
    let cap = before.last().map(String::as_str).unwrap_or_default();
    assert!(cap.starts_with("router-demo holds up to "), "{before:#?}");
    assert_eq!(before.len(), 17 + 1, "{before:#?}");
    assert!(
        before.contains(
            &"[routes] GET    /metrics --> 4 handlers (logger, recovery, global_middleware, metrics)"
                .to_string()
        ),
        "{before:#?}"
    );
    assert!(before.contains(
        &"[routes] GET    /index --> 5 handlers (logger, recovery, global_middleware, token_check, index_handler)".to_string()
    ), "{before:#?}");
    assert!(before.contains(
        &"[routes] POST   /v2/submit --> 4 handlers (logger, recovery, global_middleware, hello_handler)".to_string()
    ), "{before:#?}");
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut child, _out, before, _) = start_binary(&["--quiet"]);
    assert_eq!(before.len(), 1, "only the connection cap: {before:#?}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn trace_shows_a_next_chain_with_the_token_and_an_abort_chain_without() {
    let (mut child, mut out, _, addr) = start_binary(&["--quiet", "--trace"]);
    let rt = tokio::runtime::Runtime::new().unwrap();

    let with_token = rt.block_on(send(
        Proto::H1,
        addr,
        Method::GET,
        "/index",
        &[("token", "x")],
        Vec::new(),
    ));
    assert_eq!(with_token.status, StatusCode::OK);
    assert_eq!(
        trace_lines(&mut out, "[trace] => 200"),
        [
            "[trace] GET /index (5 handlers)",
            "[trace]   enter 0 logger",
            "[trace]     0 logger: next()",
            "[trace]     enter 1 recovery",
            "[trace]       1 recovery: next()",
            "[trace]       enter 2 global_middleware",
            "[trace]       exit  2 global_middleware",
            "[trace]       enter 3 token_check",
            "[trace]         3 token_check: next()",
            "[trace]         enter 4 index_handler",
            "[trace]         exit  4 index_handler",
            "[trace]       exit  3 token_check",
            "[trace]     exit  1 recovery",
            "[trace]   exit  0 logger",
            "[trace] => 200",
        ]
    );

    let without = rt.block_on(get(Proto::H1, addr, "/index"));
    assert_eq!(without.status, StatusCode::FORBIDDEN);
    assert_eq!(
        trace_lines(&mut out, "[trace] => 403"),
        [
            "[trace] GET /index (5 handlers)",
            "[trace]   enter 0 logger",
            "[trace]     0 logger: next()",
            "[trace]     enter 1 recovery",
            "[trace]       1 recovery: next()",
            "[trace]       enter 2 global_middleware",
            "[trace]       exit  2 global_middleware",
            "[trace]       enter 3 token_check",
            "[trace]         3 token_check: abort() (4 index_handler will not run)",
            "[trace]       exit  3 token_check [aborted]",
            "[trace]     exit  1 recovery [aborted]",
            "[trace]   exit  0 logger [aborted]",
            "[trace] => 403",
        ]
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn with_trace_the_request_log_line_follows_its_trace_as_the_logger_finishes_last() {
    let (mut child, mut out, _, addr) = start_binary(&["--quiet", "--trace"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let without = rt.block_on(get(Proto::H1, addr, "/index"));
    assert_eq!(without.status, StatusCode::FORBIDDEN);
    let mut lines = Vec::new();
    // The abort walk is 13 trace lines; the request log line comes next.
    while lines.len() < 14 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "{lines:?}");
        lines.push(line.trim_end().to_string());
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(lines[0], "[trace] GET /index (5 handlers)");
    assert_eq!(lines[12], "[trace] => 403", "{lines:#?}");
    assert!(
        lines[..13].iter().all(|l| l.starts_with("[trace]")),
        "{lines:#?}"
    );
    assert!(lines[13].starts_with("[router-demo] "), "{lines:#?}");
    assert!(lines[13].contains(" | 403 | "), "{lines:#?}");
}

#[tokio::test]
async fn login_json_body_must_be_an_object_without_repeated_keys_else_90400() {
    let srv = demo_server().await;
    let cases: [(&[u8], &str); 2] = [
        (br#"["ann","pw"]"#, "expected a JSON object, found an array"),
        (
            br#"{"username":"ann","password":"a","password":"b"}"#,
            "duplicate key \"password\"",
        ),
    ];
    for proto in BOTH {
        for (body, want) in cases {
            let r = send(
                proto,
                srv.addr,
                Method::POST,
                "/login",
                &[("content-type", "application/json")],
                body.to_vec(),
            )
            .await;
            assert_eq!(r.status, StatusCode::OK);
            let v = r.json();
            assert_eq!(v["code"], json!(90400), "{v}");
            assert_eq!(v["data"], json!(null), "{v}");
            let msg = v["msg"].as_str().unwrap();
            assert!(
                msg.starts_with("login failed: invalid JSON body: "),
                "{msg}"
            );
            assert!(msg.contains(want), "{msg}");
        }
    }
}

#[test]
fn request_log_redacts_secret_query_values_and_caps_long_paths() {
    let (mut child, mut out, _, addr) = start_binary(&["--quiet"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let path = "/user?name=ann&code=c0de&state=st4te&token=t0k&access_token=a1&refresh_token=r1&password=pw&x=1";
    assert_eq!(
        rt.block_on(get(Proto::H1, addr, path)).status,
        StatusCode::OK
    );
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(
        line.contains("\"/user?name=ann&code=REDACTED&state=REDACTED&token=REDACTED&access_token=REDACTED&refresh_token=REDACTED&password=REDACTED&x=1\""),
        "{line}"
    );
    for secret in ["c0de", "st4te", "t0k", "a1&", "r1&", "=pw"] {
        assert!(!line.contains(secret), "{secret} leaked: {line}");
    }
    let long = format!("/book/{}", "a".repeat(8_000));
    assert_eq!(
        rt.block_on(get(Proto::H1, addr, &long)).status,
        StatusCode::OK
    );
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.len() < 1_000, "log line of {} bytes", line.len());
    assert!(line.contains("aaaa…\""), "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Issue: a client could put raw U+202E (right-to-left override), U+2028,
/// `"` and `|` into the access line through the request target. They are
/// escaped by the one rule of every log line.
#[test]
fn the_access_line_escapes_bidi_controls_separators_quotes_and_bars_a_client_sent() {
    use std::io::Write;
    let (mut child, mut out, _, addr) = start_binary(&["--quiet"]);
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    let target = "/x\"|200|\u{202e}gpj.exe\u{2028}y";
    write!(
        conn,
        "GET {target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut conn, &mut answer);
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(
        line.contains(r#""/x\"\u{7c}200\u{7c}\u{202e}gpj.exe\u{2028}y""#),
        "{line}"
    );
    assert!(
        !line.contains('\u{202e}') && !line.contains('\u{2028}'),
        "{line}"
    );
    assert_eq!(line.matches(" | ").count(), 5, "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_log_reader_that_never_reads_does_not_stop_the_server() {
    // stdout is a pipe nobody reads: it fills after a few hundred lines. The
    // server must keep answering; the log drops lines instead.
    let (mut child, _unread, _, addr) = start_binary(&["--quiet"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let started = std::time::Instant::now();
        for i in 0..2_000 {
            let r = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                get(Proto::H1, addr, &format!("/book/{i}")),
            )
            .await
            .unwrap_or_else(|_| panic!("request {i} hung: the log blocked the server"));
            assert_eq!(r.status, StatusCode::OK);
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    });
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_body_over_the_limit_is_413_and_reaches_the_request_log() {
    // The engine answers 413 before any chain runs (so the logger middleware
    // never sees it); the line must be written all the same.
    let (mut child, mut out, _, addr) = start_binary(&["--quiet"]);
    // Only the head: a body over the limit is refused on its declared length.
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.write_all(
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4194305\r\n\r\n",
    )
    .unwrap();
    let mut status = [0u8; 12];
    tcp.read_exact(&mut status).unwrap();
    assert_eq!(&status, b"HTTP/1.1 413");
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("[router-demo] "), "{line}");
    assert!(line.contains(" | 413 | "), "{line}");
    assert!(line.contains("POST    \"/login\""), "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
}
