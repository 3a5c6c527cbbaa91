//! The connection rules of the accept loop and the engine, black-box over
//! raw TCP against real servers on 127.0.0.1:0, with small clocks:
//!
//! - the first-request clock starts at accept (silent HTTP/1, idle h2c);
//! - idle keep-alive connections close after the idle time-out, and a head
//!   trickled in after idling gets the header time-out;
//! - at the connection cap the connection doing least for its client
//!   (silent past its newcomer grace, idle) makes room for a new client,
//!   and one that really sends and takes (an upload at a good rate, a
//!   running handler) is not cut: the newcomer waits for a free place
//!   instead (the fairness goals are `tests/fair_cap.rs`');
//! - a stalled request body is answered (408, or the greeter's 504) and the
//!   connection closed;
//! - SIGTERM stops each binary within its grace period whatever is open.

mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use handwire::server::{ConnectionBudget, Options};
use handwire::web::handler;
use handwire::web::Engine;
use support::greeter::{config_text, TempDir};
use support::http::{get, Proto};

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: length 0, type 4, flags 0, stream 0.
const H2_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `GET /hi` answers `hi`; `GET /slow` answers `slow` after 1.5 s;
/// `POST /echo` answers the body's length.
fn hi_and_echo() -> Engine {
    let mut e = Engine::bare();
    e.get(
        "/hi",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "hi") })),
    )
    .unwrap();
    e.get(
        "/slow",
        handler(|c| {
            Box::pin(async move {
                tokio::time::sleep(ms(1500)).await;
                c.string(StatusCode::OK, "slow")
            })
        }),
    )
    .unwrap();
    e.post(
        "/echo",
        handler(|c| {
            Box::pin(async move {
                let n = c.body().len();
                c.string(StatusCode::OK, n.to_string())
            })
        }),
    )
    .unwrap();
    e
}

async fn start(opts: Options) -> support::app::TestServer {
    support::app::start_with(hi_and_echo().build(), opts).await
}

/// Reads until the server closes; `None` if it is still open after `limit`.
async fn read_until_closed(conn: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut chunk = [0u8; 4096];
        loop {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| buf)
}

/// Sends `GET /hi` on a kept-alive HTTP/1.1 connection and reads the answer.
async fn get_hi(conn: &mut TcpStream) {
    conn.write_all(b"GET /hi HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.ends_with(b"\r\n\r\nhi") {
        let n = tokio::time::timeout(Duration::from_secs(3), conn.read(&mut chunk))
            .await
            .expect("an answer within 3 s")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    }
    assert!(buf.starts_with(b"HTTP/1.1 200"));
}

// ---- the clocks ---------------------------------------------------------

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_first_request_timeout() {
    let opts = Options {
        header_read_timeout: ms(300),
        ..Options::default()
    };
    let srv = start(opts).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    let t0 = Instant::now();
    let got = read_until_closed(&mut conn, Duration::from_secs(3)).await;
    assert!(got.is_some(), "a silent connection is still open after 3 s");
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn an_h2c_connection_idle_after_its_preface_is_closed() {
    let opts = Options {
        header_read_timeout: ms(300),
        ..Options::default()
    };
    let srv = start(opts).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    conn.write_all(H2_PREFACE).await.unwrap();
    conn.write_all(H2_SETTINGS).await.unwrap();
    // 300 ms, then a GOAWAY the silent peer never acknowledges: closed
    // within CLOSE_GRACE (1 s) after that.
    let got = read_until_closed(&mut conn, Duration::from_secs(4)).await;
    assert!(
        got.is_some(),
        "an h2c connection without requests is still open"
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let opts = Options {
        header_read_timeout: Duration::from_secs(5),
        idle_timeout: ms(300),
        ..Options::default()
    };
    let srv = start(opts).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    get_hi(&mut conn).await;
    let t0 = Instant::now();
    let got = read_until_closed(&mut conn, Duration::from_secs(3)).await;
    assert!(got.is_some(), "an idle keep-alive connection is still open");
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn a_keep_alive_connection_may_idle_longer_than_the_header_read_timeout() {
    let opts = Options {
        header_read_timeout: ms(200),
        idle_timeout: Duration::from_secs(5),
        ..Options::default()
    };
    let srv = start(opts).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    get_hi(&mut conn).await;
    tokio::time::sleep(ms(600)).await;
    get_hi(&mut conn).await;
}

#[tokio::test]
async fn a_head_trickled_in_after_idling_gets_the_header_read_timeout() {
    let opts = Options {
        header_read_timeout: ms(300),
        idle_timeout: Duration::from_secs(30),
        ..Options::default()
    };
    let srv = start(opts).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    get_hi(&mut conn).await;
    conn.write_all(b"GET /hi HTTP/1.1\r\n").await.unwrap();
    let t0 = Instant::now();
    let got = read_until_closed(&mut conn, Duration::from_secs(3)).await;
    assert!(got.is_some(), "a half-sent head after idling is still open");
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn an_idle_h2_connection_is_closed_after_the_idle_timeout() {
    let opts = Options {
        idle_timeout: ms(300),
        ..Options::default()
    };
    let srv = start(opts).await;
    let tcp = TcpStream::connect(srv.addr).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    let driving = tokio::spawn(conn);
    let req = http::Request::get(format!("http://{}/hi", srv.addr))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"hi");
    let t0 = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(3), driving).await;
    assert!(
        ended.is_ok(),
        "an idle h2 connection is still open after 3 s"
    );
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
}

// ---- the cap ------------------------------------------------------------

#[tokio::test]
async fn at_the_connection_cap_the_longest_silent_connection_makes_room_for_a_new_client() {
    let opts = Options {
        // One address holds the whole cap here: its share is the cap.
        connections: ConnectionBudget::new(4).with_peer_share(4),
        header_read_timeout: ms(3000),
        ..Options::default()
    };
    let srv = start(opts).await;
    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(TcpStream::connect(srv.addr).await.unwrap());
        tokio::time::sleep(ms(20)).await;
    }
    tokio::time::sleep(ms(50)).await;
    let t0 = Instant::now();
    let reply = tokio::time::timeout(Duration::from_secs(2), get(Proto::H1, srv.addr, "/hi"))
        .await
        .expect("a well-behaved client is served at the cap");
    assert_eq!(reply.text(), "hi");
    // Served at once, long before the silent ones' clocks run out: the
    // oldest of them was closed to make room, the others are still open.
    let waited = t0.elapsed();
    assert!(waited < Duration::from_secs(1), "served after {waited:?}");
    let oldest = read_until_closed(&mut silent[0], ms(500)).await;
    assert!(oldest.is_some(), "the oldest silent connection was closed");
    let newest = read_until_closed(&mut silent[3], ms(200)).await;
    assert!(newest.is_none(), "only one connection was taken back");
}

/// Sends `POST /echo` with a body of `len` bytes, `piece` bytes every
/// `every`, on a connection closed after the answer; the answer.
async fn upload(addr: SocketAddr, len: usize, piece: usize, every: Duration) -> String {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    for _ in 0..len / piece {
        conn.write_all(&vec![b'x'; piece]).await.unwrap();
        tokio::time::sleep(every).await;
    }
    let answer = read_until_closed(&mut conn, Duration::from_secs(5)).await;
    String::from_utf8(answer.expect("answered and closed")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_a_busy_client_is_not_cut_and_a_newcomer_waits_for_a_free_slot() {
    let srv = start(Options {
        connections: ConnectionBudget::new(2),
        ..Options::default()
    })
    .await;
    // Two busy clients hold the cap of 2: one sends a body at 1,000
    // bytes/s for 2 s (four times the minimum rate), one waits for a
    // handler that takes 1.5 s.
    let uploading = tokio::spawn(upload(srv.addr, 2000, 100, ms(100)));
    let addr = srv.addr;
    let waiting = tokio::spawn(async move {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        let head = b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        conn.write_all(head).await.unwrap();
        let answer = read_until_closed(&mut conn, Duration::from_secs(5)).await;
        String::from_utf8(answer.expect("answered and closed")).unwrap()
    });
    tokio::time::sleep(ms(300)).await;
    let t0 = Instant::now();
    let newcomer = tokio::time::timeout(Duration::from_secs(5), get(Proto::H1, srv.addr, "/hi"))
        .await
        .expect("the newcomer is served once a place is free");
    let waited = t0.elapsed();
    assert_eq!(newcomer.text(), "hi");
    // Neither busy client was cut: both have their whole answer.
    let slow = waiting.await.unwrap();
    assert!(
        slow.starts_with("HTTP/1.1 200") && slow.ends_with("slow"),
        "{slow}"
    );
    let uploaded = uploading.await.unwrap();
    assert!(
        uploaded.starts_with("HTTP/1.1 200") && uploaded.ends_with("2000"),
        "{uploaded}"
    );
    // The newcomer waited for the handler to finish (1.5 s from its start).
    assert!(
        waited >= ms(900),
        "served after {waited:?}: a busy client made room"
    );
}

/// Connects to `addr`, sends `first_bytes`, and waits for the server's first
/// byte back: how long that took (the server answers only once it accepted).
async fn time_to_first_byte(addr: SocketAddr, first_bytes: &[u8]) -> Duration {
    let t0 = Instant::now();
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(first_bytes).await.unwrap();
    let mut byte = [0u8; 1];
    let n = tokio::time::timeout(Duration::from_secs(4), conn.read(&mut byte))
        .await
        .expect("served within 4 s")
        .unwrap();
    assert_eq!(n, 1);
    t0.elapsed()
}

#[tokio::test]
async fn a_client_on_either_greeter_port_is_served_at_once_while_the_other_port_holds_the_budget() {
    let dir = TempDir::new("budget");
    let db = dir.0.join("greeter.db");
    let config = handwire::services::greeter::config::Config::from_yaml(&config_text(
        db.to_str().unwrap(),
        "1s",
        "1s",
    ))
    .unwrap();
    let options = Options {
        // One address holds the whole cap here: its share is the cap.
        connections: ConnectionBudget::new(4).with_peer_share(4),
        header_read_timeout: ms(3000),
        ..Options::default()
    };
    let greeter = handwire::services::greeter::Greeter::bind(&config)
        .await
        .unwrap()
        .with_server_options(options);
    let (http, grpc) = (greeter.http_addr(), greeter.grpc_addr());
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(greeter.serve(async move {
        let _ = stopped.await;
    }));
    let h2_hello = [H2_PREFACE, H2_SETTINGS].concat();
    let http_get = b"GET /helloworld/x HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    // Each port in turn is the one a newcomer knocks on, while four held
    // connections on the *other* port (idle keep-alives that were served
    // once on HTTP, silent h2c connections on gRPC) hold the whole budget
    // of 4: one evictor for the shared budget takes a reclaimable one back,
    // whatever port it is on.
    for (port, addr, first_bytes, other) in [
        ("HTTP", http, &http_get, grpc),
        ("gRPC", grpc, &h2_hello, http),
    ] {
        let mut held = Vec::new();
        for _ in 0..4 {
            let mut conn = TcpStream::connect(other).await.unwrap();
            if other == http {
                conn.write_all(&http_get).await.unwrap();
                let mut answer = [0u8; 512];
                let n = conn.read(&mut answer).await.unwrap();
                assert!(answer[..n].starts_with(b"HTTP/1.1 200"));
            } else {
                conn.write_all(&h2_hello).await.unwrap();
            }
            held.push(conn);
        }
        // Idle past the grace that spares a keep-alive client between two
        // requests (the silent h2c ones can be taken back at once).
        tokio::time::sleep(ms(1100)).await;
        let waited = time_to_first_byte(addr, first_bytes).await;
        // With an evictor per listener it would wait for the header clock
        // of the other port's connections (3 s).
        assert!(
            waited < ms(1000),
            "{port}: served after {waited:?}, while 4 connections on the other port held the budget of 4"
        );
        let oldest = read_until_closed(&mut held[0], ms(500)).await;
        assert!(
            oldest.is_some(),
            "{port}: the other port's oldest was closed"
        );
        drop(held);
        // Let the freed permits come back before the next round.
        tokio::time::sleep(ms(200)).await;
    }
    // With nothing held, both ports answer at once.
    assert!(time_to_first_byte(http, &http_get).await < ms(500));
    assert!(time_to_first_byte(grpc, &h2_hello).await < ms(500));
}

// ---- stalled bodies ------------------------------------------------------

/// Sends a head announcing 100 body bytes and 3 of them; reads the answer
/// until the server closes (`None`: still open after 3 s).
async fn stalled_body(addr: SocketAddr, path: &str) -> Option<String> {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"u"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let got = read_until_closed(&mut conn, Duration::from_secs(3)).await?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

fn json_of(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {response}"))
}

#[tokio::test]
async fn a_stalled_body_is_answered_408_as_json_and_the_connection_closed() {
    let mut e = hi_and_echo();
    e.body_timeout(ms(300));
    let srv = support::app::start(e.build()).await;
    let t0 = Instant::now();
    let text = stalled_body(srv.addr, "/echo")
        .await
        .expect("the connection is closed after the answer");
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n"),
        "{text}"
    );
    assert_eq!(
        json_of(&text)["error"],
        "request body not received within 300ms"
    );
}

#[tokio::test]
async fn a_stalled_body_on_the_greeter_is_504_in_kratos_shape_within_server_http_timeout() {
    let g = support::greeter::start_with("300ms", "1s").await;
    let text = stalled_body(g.http, "/v1/users")
        .await
        .expect("the connection is closed after the answer");
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n"),
        "{text}"
    );
    assert_eq!(
        json_of(&text),
        serde_json::json!({
            "code": 504,
            "reason": "DEADLINE_EXCEEDED",
            "message": "request body not received within server.http.timeout",
            "metadata": {}
        })
    );
}

// ---- the binaries: request log and bounded shutdown ----------------------

/// A started binary, its address, and its stdout from there on.
struct Running {
    child: Child,
    addr: SocketAddr,
    out: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and reads stdout up to the line starting with `prefix`,
/// which ends with the listening address.
fn spawn(mut cmd: Command, prefix: &str) -> Running {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the binary");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = out.next().expect("the binary printed its address").unwrap();
        if let Some(rest) = line.strip_prefix(prefix) {
            break rest.trim().parse().unwrap();
        }
    };
    Running { child, addr, out }
}

/// Opens one connection of each hostile kind: silent, half a head, a body
/// that stalls, an h2c preface with no request. Waits until the server has
/// read them all.
async fn hostile_connections(addr: SocketAddr, post_path: &str) -> Vec<TcpStream> {
    let stalled = format!(
        "POST {post_path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"u"
    );
    let h2c = [H2_PREFACE, H2_SETTINGS].concat();
    let mut conns = Vec::new();
    for bytes in [
        &b""[..],
        &b"GET /hello HTTP/1.1\r\nHost: x\r\n"[..],
        stalled.as_bytes(),
        &h2c[..],
    ] {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        conn.write_all(bytes).await.unwrap();
        conns.push(conn);
    }
    tokio::time::sleep(ms(200)).await;
    conns
}

/// SIGTERM, then the exit status and how long it took (`None`: still
/// running after 10 s).
fn terminate(child: &mut Child) -> Option<(ExitStatus, Duration)> {
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Some(status) = child.try_wait().unwrap() {
            return Some((status, t0.elapsed()));
        }
        std::thread::sleep(ms(20));
    }
    None
}

/// The grace period the binaries are started with in these tests, and the
/// most a clean exit may take beyond it.
const GRACE: Duration = Duration::from_secs(1);
const SLACK: Duration = Duration::from_millis(1500);

async fn assert_sigterm_exits_within_grace(mut running: Running, post_path: &str) {
    let _open = hostile_connections(running.addr, post_path).await;
    let (status, took) = terminate(&mut running.child).expect("still running 10 s after SIGTERM");
    assert!(status.success(), "exit status {status:?}");
    assert!(
        took < GRACE + SLACK,
        "exit took {took:?} with a {GRACE:?} grace period"
    );
}

#[tokio::test]
async fn sigterm_stops_router_demo_within_its_grace_period_whatever_is_open() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_router-demo"));
    cmd.args(["--addr", "127.0.0.1:0", "--quiet", "--shutdown-grace", "1s"]);
    let running = spawn(cmd, "router-demo listening on http://");
    assert_sigterm_exits_within_grace(running, "/login").await;
}

#[tokio::test]
async fn sigterm_stops_token_auth_within_its_grace_period_whatever_is_open() {
    let db = support::token_auth::TempDb::new("conn-auth");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_token-auth"));
    cmd.env(
        "TOKEN_AUTH_SECRET",
        "connections test secret, long enough: 0123456789",
    )
    .env_remove("TOKEN_AUTH_ENC_KEY")
    .args(["--addr", "127.0.0.1:0", "--quiet", "--shutdown-grace", "1s"])
    .arg("--db")
    .arg(&db.path);
    let running = spawn(cmd, "token-auth listening on http://");
    assert_sigterm_exits_within_grace(running, "/login").await;
}

fn greeter(dir: &TempDir, http_timeout: &str) -> Command {
    let db = dir.0.join("g.db");
    let path = dir.0.join("config.yaml");
    std::fs::write(
        &path,
        config_text(&db.display().to_string(), http_timeout, "1s"),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_greeter"));
    cmd.arg("--config").arg(path);
    cmd
}

#[tokio::test]
async fn sigterm_stops_the_greeter_within_greeter_shutdown_grace_whatever_is_open() {
    let dir = TempDir::new("conn-greeter");
    // A long request time-out, so the stalled body is still in flight.
    let mut cmd = greeter(&dir, "30s");
    cmd.env("GREETER_SHUTDOWN_GRACE", "1s");
    let running = spawn(cmd, "greeter: HTTP listening on ");
    assert_sigterm_exits_within_grace(running, "/v1/users").await;
}

#[tokio::test]
async fn the_greeters_shutdown_grace_flag_wins_over_its_variable() {
    let dir = TempDir::new("conn-greeter-flag");
    let mut cmd = greeter(&dir, "30s");
    cmd.args(["--shutdown-grace", "1s"])
        .env("GREETER_SHUTDOWN_GRACE", "30s");
    let running = spawn(cmd, "greeter: HTTP listening on ");
    assert_sigterm_exits_within_grace(running, "/v1/users").await;
}

#[tokio::test]
async fn the_answer_to_a_stalled_body_reaches_the_request_log() {
    let dir = TempDir::new("conn-greeter-log");
    let mut running = spawn(greeter(&dir, "300ms"), "greeter: HTTP listening on ");
    let text = stalled_body(running.addr, "/v1/users")
        .await
        .expect("closed");
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    terminate(&mut running.child).expect("exits");
    let logged: Vec<String> = running.out.by_ref().map_while(Result::ok).collect();
    assert!(
        logged
            .iter()
            .any(|l| l.contains(" | 504 | ") && l.contains("POST") && l.contains("\"/v1/users\"")),
        "{logged:#?}"
    );
}

/// Starts `cmd` and collects stdout up to the line starting with `prefix`.
fn start_up_lines(cmd: Command, prefix: &str) -> (Running, Vec<String>) {
    let mut running = spawn_with(cmd);
    let mut lines = Vec::new();
    loop {
        let line = running
            .out
            .next()
            .expect("the binary printed its address")
            .unwrap();
        if let Some(rest) = line.strip_prefix(prefix) {
            running.addr = rest.trim().parse().unwrap();
            return (running, lines);
        }
        lines.push(line);
    }
}

fn spawn_with(mut cmd: Command) -> Running {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the binary");
    let out = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = "0.0.0.0:0".parse().unwrap();
    Running { child, addr, out }
}

/// (soft, hard) of the `Max open files` row of `/proc/PID/limits`.
fn open_file_limits(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let mut numbers = row
        .trim_start_matches("Max open files")
        .split_whitespace()
        .map(|n| n.parse().expect("a finite limit"));
    (numbers.next().unwrap(), numbers.next().unwrap())
}

#[test]
fn a_server_raises_its_open_file_limit_to_the_hard_one_and_caps_connections_at_three_quarters_less_the_reserve(
) {
    // Started with a soft limit of 256, as a shell with `ulimit -Sn 256`.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -Sn 256 && exec \"$0\" --addr 127.0.0.1:0 --quiet")
        .arg(env!("CARGO_BIN_EXE_router-demo"));
    let (running, lines) = start_up_lines(cmd, "router-demo listening on http://");
    let (soft, hard) = open_file_limits(running.child.id());
    assert_eq!(soft, hard, "the soft limit was not raised");
    let reserve = handwire::server::DESCRIPTOR_RESERVE as u64;
    let cap = format!(
        "router-demo holds up to {} connections",
        (hard / 4 * 3).saturating_sub(reserve).max(1)
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&cap)),
        "{cap}: {lines:#?}"
    );
}

#[test]
fn the_max_connections_flag_sets_the_cap_printed_at_start() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_router-demo"));
    cmd.args([
        "--addr",
        "127.0.0.1:0",
        "--quiet",
        "--max-connections",
        "77",
    ]);
    let (_running, lines) = start_up_lines(cmd, "router-demo listening on http://");
    let cap = "router-demo holds up to 77 connections";
    assert!(lines.iter().any(|l| l.starts_with(cap)), "{lines:#?}");
}

#[test]
fn a_max_connections_of_zero_is_a_start_up_error_naming_the_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_router-demo"))
        .args(["--addr", "127.0.0.1:0", "--max-connections", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--max-connections"), "{err}");
}

#[test]
fn the_greeters_max_connections_key_sets_the_cap_of_both_listeners() {
    let dir = TempDir::new("conn-greeter-cap");
    let db = dir.0.join("g.db");
    let path = dir.0.join("config.yaml");
    let text = config_text(&db.display().to_string(), "1s", "1s").replace(
        "limits: { registrations_per_minute: 0 }",
        "limits: { registrations_per_minute: 0, max_connections: 33 }",
    );
    assert!(text.contains("max_connections: 33"), "{text}");
    std::fs::write(&path, text).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_greeter"));
    cmd.arg("--config").arg(path);
    let (_running, lines) = start_up_lines(cmd, "greeter: HTTP listening on ");
    let cap = "greeter: holds up to 33 connections";
    assert!(lines.iter().any(|l| l.starts_with(cap)), "{lines:#?}");
}

#[tokio::test]
async fn a_listener_queues_more_connections_than_tokios_backlog_of_128_before_it_accepts() {
    // Nothing accepts: every connection waits in the listen backlog. With
    // tokio's 128 the kernel drops the SYNs past it and connect hangs.
    let listener = handwire::server::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let wanted = 600.min(handwire::server::backlog() as usize);
    let mut queued = Vec::new();
    for _ in 0..wanted {
        let conn = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
            .await
            .expect("connect waited: the backlog is full")
            .unwrap();
        queued.push(conn);
    }
    assert!(wanted > 128, "somaxconn is {}", handwire::server::backlog());
}
