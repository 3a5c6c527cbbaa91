//! The governor's full-size figures: the attacks of `docs/reliability.md`
//! at 25 to 1,100 connections against the real binaries, with the
//! server's resident memory read from `/proc/PID/status` (VmRSS, VmHWM)
//! while a normal client probes it. Each attack lasts about 10 s; they are
//! `#[ignore]`d because they need minutes and thousands of sockets, and are
//! run by hand on a quiet machine:
//!
//! ```sh
//! cargo test --test overload_figures -- --ignored --nocapture --test-threads 1
//! ```
//!
//! (add `--release` for a release build's latencies). Each prints one line
//! of figures (`figure: …`), recorded in `docs/reliability.md`, and asserts
//! the goal it measures; the CI suites keep the same rules at a few dozen
//! connections (`tests/governor.rs`).

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::bin::Server;

use bytes::Bytes;
use support::greeter::{config_text, insert_users, TempDir};
use support::http::{get, Proto};
use tokio::net::TcpStream;

const GREETER: &str = env!("CARGO_BIN_EXE_greeter");
const ROUTER_DEMO: &str = env!("CARGO_BIN_EXE_router-demo");

/// The figures' servers and their resident memory.
impl Server {
    /// A greeter with 1,000 users of 60-byte names (a 1,000-user page is
    /// about 94 KiB of JSON).
    fn greeter() -> Server {
        let dir = TempDir::new("figures");
        let db = dir.0.join("greeter.db");
        let config = dir.0.join("config.yaml");
        std::fs::write(&config, config_text(db.to_str().unwrap(), "10s", "10s")).unwrap();
        // The binary creates the tables; then the users go in.
        let (first, _) =
            support::bin::spawn_draining(GREETER, &["--config", config.to_str().unwrap()], &[], 2);
        drop(Server {
            child: first,
            addrs: Vec::new(),
            _dir: None,
        });
        insert_users(&db, (0..1000).map(|i| format!("{i:0>60}")));
        let (child, addrs) =
            support::bin::spawn_draining(GREETER, &["--config", config.to_str().unwrap()], &[], 2);
        Server {
            child,
            addrs,
            _dir: Some(dir),
        }
    }

    fn router_demo() -> Server {
        let (child, addrs) = support::bin::spawn_draining(
            ROUTER_DEMO,
            // The cap these figures were taken at: the attacks fill it.
            &[
                "--addr",
                "127.0.0.1:0",
                "--quiet",
                "--max-connections",
                "1024",
            ],
            &[],
            1,
        );
        Server {
            child,
            addrs,
            _dir: None,
        }
    }

    /// (VmRSS, VmHWM) in MiB.
    fn rss(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
    }

    /// RSS now, then every second up to `limit` until within twice
    /// `before`: (seconds waited, RSS then).
    async fn settles(&self, before: f64, limit: Duration) -> (u64, f64) {
        let t0 = Instant::now();
        loop {
            let (now, _) = self.rss();
            if now <= 2.0 * before || t0.elapsed() >= limit {
                return (t0.elapsed().as_secs(), now);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// Probe `path` every 50 ms until `until`: the latencies, sorted, and the
/// failures (not answered 200 within 1 s). The probe is a client of its
/// own: it runs on a thread and runtime of its own, so its times are the
/// server's, not the wait of its tasks behind the attack's thousands in
/// this process's runtime.
async fn probe(proto: Proto, addr: SocketAddr, path: &str, until: Instant) -> (Vec<Duration>, u32) {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the probe's runtime")
            .block_on(probe_here(proto, addr, &path, until))
    })
    .await
    .expect("the probe's thread")
}

async fn probe_here(
    proto: Proto,
    addr: SocketAddr,
    path: &str,
    until: Instant,
) -> (Vec<Duration>, u32) {
    let mut took = Vec::new();
    let mut failed = 0;
    while Instant::now() < until {
        let t0 = Instant::now();
        match tokio::time::timeout(Duration::from_secs(1), get(proto, addr, path)).await {
            Ok(reply) if reply.status == http::StatusCode::OK => took.push(t0.elapsed()),
            _ => failed += 1,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    took.sort();
    (took, failed)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// A spawned task that is aborted when this is dropped: an attack that is
/// over closes its connections, including those driven by tasks of its
/// own (a dropped `JoinHandle` would leave them running, and the figure
/// "after the attack" would be taken with the attack's connections open).
struct Aborting<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Aborting<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One h2 connection with a window of 0 that keeps `streams` requests
/// made by `request` open until `until`, re-opening the connection if the
/// server closes it.
async fn zero_window_connection(
    addr: SocketAddr,
    streams: usize,
    request: fn(SocketAddr) -> (http::Request<()>, Option<Bytes>),
    until: Instant,
) {
    while Instant::now() < until {
        let Ok(tcp) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok((client, conn)) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, Bytes>(tcp)
            .await
        else {
            continue;
        };
        let mut driving = Aborting(tokio::spawn(conn));
        let mut held = Vec::new();
        for _ in 0..streams {
            let Ok(mut client) = client.clone().ready().await else {
                break;
            };
            let (req, body) = request(addr);
            let Ok((response, mut send)) = client.send_request(req, body.is_none()) else {
                break;
            };
            if let Some(body) = body {
                let _ = send.send_data(body, true);
            }
            held.push((response, send));
        }
        let left = until.saturating_duration_since(Instant::now());
        let _ = tokio::time::timeout(left, &mut driving.0).await;
    }
}

fn users_page(addr: SocketAddr) -> (http::Request<()>, Option<Bytes>) {
    let req = http::Request::get(format!("http://{addr}/v1/users?page_size=1000"))
        .body(())
        .unwrap();
    (req, None)
}

fn users_page_grpc(addr: SocketAddr) -> (http::Request<()>, Option<Bytes>) {
    let req = http::Request::post(format!("http://{addr}/helloworld.v1.Greeter/UserList"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    // UserListRequest { page_size: 1000 }, framed.
    let frame = Bytes::from_static(&[0, 0, 0, 0, 3, 0x08, 0xE8, 0x07]);
    (req, Some(frame))
}

/// `conns` zero-window connections of 100 streams each for 10 s on the
/// greeter's HTTP (`grpc`: gRPC) port, probed over HTTP; the figure line.
async fn zero_window_flood(conns: usize, grpc: bool) {
    let server = Server::greeter();
    let (http, grpc_addr) = (server.addrs[0], server.addrs[1]);
    // Warm: one page built and sent.
    assert_eq!(
        get(Proto::H1, http, "/v1/users?page_size=1000")
            .await
            .status,
        200
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (before, _) = server.rss();
    let until = Instant::now() + Duration::from_secs(10);
    let (target, request): (SocketAddr, fn(SocketAddr) -> _) = if grpc {
        (grpc_addr, users_page_grpc)
    } else {
        (http, users_page)
    };
    let attack: Vec<_> = (0..conns)
        .map(|_| tokio::spawn(zero_window_connection(target, 100, request, until)))
        .collect();
    let (took, failed) = probe(Proto::H1, http, "/v1/users?page_size=10", until).await;
    for a in attack {
        a.abort();
    }
    let (_, peak) = server.rss();
    let (waited, after) = server.settles(before, Duration::from_secs(60)).await;
    let port = if grpc { "gRPC" } else { "HTTP" };
    println!(
        "figure: zero-window flood, {conns} connections x 100 streams on the {port} port: \
         RSS before {before:.1} MiB, peak {peak:.1} MiB, {after:.1} MiB {waited} s after; \
         probes {} ok, {failed} failed, p50 {:?}, p99 {:?}",
        took.len(),
        quantile(&took, 0.5),
        quantile(&took, 0.99),
    );
    assert!(peak < 256.0, "peak {peak:.1} MiB");
    assert!(
        after <= 2.0 * before,
        "{after:.1} MiB {waited} s after, more than twice the {before:.1} MiB before"
    );
    assert_eq!(failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn zero_window_flood_of_25_connections_stays_under_256_mib() {
    zero_window_flood(25, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn zero_window_flood_of_100_connections_stays_under_256_mib() {
    zero_window_flood(100, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn zero_window_flood_of_1000_connections_stays_under_256_mib() {
    zero_window_flood(1000, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn zero_window_flood_on_the_grpc_port_stays_under_256_mib() {
    zero_window_flood(100, true).await;
}

/// `n` connections each sending `body` whole (`stall`: all but its last
/// byte, then nothing) as a JSON `POST /v1/users`; the statuses that came
/// back within `limit`.
async fn bodies_at_once(addr: SocketAddr, n: usize, body: Bytes, stall: bool, limit: Duration) {
    use tokio::io::AsyncWriteExt;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let body = body.clone();
            Aborting(tokio::spawn(async move {
                let Ok(mut tcp) = TcpStream::connect(addr).await else {
                    return;
                };
                let head = format!(
                    "POST /v1/users HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\n\r\n",
                    body.len()
                );
                let send = if stall {
                    &body[..body.len() - 1]
                } else {
                    &body[..]
                };
                let _ = tcp.write_all(head.as_bytes()).await;
                let _ = tcp.write_all(send).await;
                let mut answer = [0u8; 256];
                let _ = tokio::io::AsyncReadExt::read(&mut tcp, &mut answer).await;
            }))
        })
        .collect();
    let _ = tokio::time::timeout(limit, async {
        for mut t in tasks {
            let _ = (&mut t.0).await;
        }
    })
    .await;
}

/// A figure line for a flood of request bodies on the greeter.
async fn body_flood(what: &str, n: usize, body: Bytes, stall: bool) {
    let server = Server::greeter();
    let http = server.addrs[0];
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (before, _) = server.rss();
    let until = Instant::now() + Duration::from_secs(10);
    let attack = tokio::spawn(bodies_at_once(
        http,
        n,
        body,
        stall,
        Duration::from_secs(10),
    ));
    let (took, failed) = probe(Proto::H1, http, "/helloworld/probe", until).await;
    attack.abort();
    let (_, peak) = server.rss();
    let (waited, after) = server.settles(before, Duration::from_secs(60)).await;
    println!(
        "figure: {what} on the greeter: RSS before {before:.1} MiB, peak {peak:.1} MiB, \
         {after:.1} MiB {waited} s after; probes {} ok, {failed} failed, p50 {:?}, p99 {:?}",
        took.len(),
        quantile(&took, 0.5),
        quantile(&took, 0.99),
    );
    assert!(peak < 512.0, "peak {peak:.1} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn four_hundred_stalled_4_mib_bodies_stay_under_512_mib() {
    let body = Bytes::from(vec![b' '; (4 << 20) - 1]);
    body_flood(
        "400 connections x a 4 MiB - 1 body, stalled",
        400,
        body,
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn one_hundred_twenty_eight_4_mb_bodies_of_unknown_zeros_stay_under_512_mib() {
    let mut body = String::from(r#"{"username":"zeros","password":"pw","junk":["#);
    body.push_str(&"0,".repeat(2_000_000));
    body.push_str("0]}");
    body_flood(
        "128 connections x a 4 MB body whose unknown key holds 2 million zeros",
        128,
        Bytes::from(body),
        false,
    )
    .await;
}

/// One connection trickling a `POST /login` body a byte every 100 ms
/// until `until`, reconnecting whenever the server closes it.
async fn trickler(addr: SocketAddr, until: Instant) {
    use tokio::io::AsyncWriteExt;
    while Instant::now() < until {
        let Ok(mut tcp) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let head = "POST /login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                    content-length: 100000\r\n\r\n";
        if tcp.write_all(head.as_bytes()).await.is_err() {
            continue;
        }
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if tcp.write_all(b" ").await.is_err() {
                break;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "full-size figure: run by hand (see the module comment)"]
async fn eleven_hundred_trickled_bodies_leave_probes_under_100_ms() {
    let server = Server::router_demo();
    let addr = server.addrs[0];
    let until = Instant::now() + Duration::from_secs(12);
    let attack: Vec<_> = (0..1100)
        .map(|_| tokio::spawn(trickler(addr, until)))
        .collect();
    // The attack fills the cap first.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (took, failed) = probe(Proto::H1, addr, "/hello", until).await;
    for a in attack {
        a.abort();
    }
    let (now, peak) = server.rss();
    let p99 = quantile(&took, 0.99);
    println!(
        "figure: 1,100 connections trickling bodies on router-demo: probes {} ok, {failed} \
         failed, p50 {:?}, p99 {p99:?}; RSS {now:.1} MiB (peak {peak:.1})",
        took.len(),
        quantile(&took, 0.5),
    );
    assert_eq!(failed, 0);
    assert!(p99 < Duration::from_millis(100), "p99 {p99:?}");
}
