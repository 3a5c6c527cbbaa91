//! TLS from the listener's side: a plain-HTTP client on a TLS port gets a
//! clean refusal, a handshake that stalls is closed at its time-out and
//! gives its connection slot back, a certificate that expired or a key of
//! another certificate stops start-up naming the file, and SIGHUP swaps the
//! certificate for new handshakes while open connections keep serving.
//! Certificate paths that are FIFOs stall neither start-up, nor a reload,
//! nor shutdown; garbage handshakes are logged at a bounded rate.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};

use handwire::server::tls::CertStore;
use handwire::server::ConnectionBudget;
use handwire::server::Options;
use handwire::services::router_demo::{self, DemoOptions};
use support::app::start_with;
use support::greeter::{config_text, TempDir};
use support::http::{Client, Proto};
use support::tls::TestPki;

const ROUTER_DEMO: &str = env!("CARGO_BIN_EXE_router-demo");
const GREETER: &str = env!("CARGO_BIN_EXE_greeter");
const TOKEN_AUTH: &str = env!("CARGO_BIN_EXE_token-auth");

/// Run `cmd`, return its output; panics if it cannot start.
fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("start the binary")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[tokio::test]
async fn plain_http_on_a_tls_port_gets_a_400_saying_so_and_the_connection_closes() {
    let pki = TestPki::new("plain CA");
    let dir = TempDir::new("tls-plain");
    let addr = tls_demo(&pki, &dir, Options::default()).await;
    let answer = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut all = Vec::new();
        // read_to_end returns only when the server closes.
        s.read_to_end(&mut all)
            .expect("the server closes the connection");
        String::from_utf8_lossy(&all).into_owned()
    })
    .await
    .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    assert!(
        answer.ends_with("Client sent an HTTP request to an HTTPS server.\n"),
        "{answer}"
    );
    // The same port still serves TLS clients.
    let r = Client::new(Proto::H2)
        .trusting(pki.client_roots())
        .request(
            Method::GET,
            &format!("https://127.0.0.1:{}/hello", addr.port()),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

/// A TLS server of the demo routes with `opts` (its certificate added).
async fn tls_demo(pki: &TestPki, dir: &TempDir, opts: Options) -> SocketAddr {
    let (_, cert, key) = pki.write_files(&dir.0);
    let opts = Options {
        tls: Some(CertStore::load(&cert, &key).unwrap()),
        ..opts
    };
    let app = router_demo::engine(DemoOptions::default()).unwrap().build();
    let srv = start_with(app, opts).await;
    let addr = srv.addr;
    std::mem::forget(srv); // served until the test process ends
    addr
}

/// A client that opens a TLS record and stops: how long until the server
/// closes it (the read returns 0), and what it read.
fn stall(addr: SocketAddr) -> (usize, Duration) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&[0x16, 0x03, 0x01]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let n = s
        .read(&mut buf)
        .expect("closed by the server, not timed out here");
    (n, started.elapsed())
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_at_the_handshake_time_out() {
    let pki = TestPki::new("stall CA");
    let dir = TempDir::new("tls-stall");
    let opts = Options {
        tls_handshake_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    let addr = tls_demo(&pki, &dir, opts).await;
    let (n, after) = tokio::task::spawn_blocking(move || stall(addr))
        .await
        .unwrap();
    assert_eq!(n, 0, "closed without an answer");
    assert!(
        after >= Duration::from_millis(250) && after < Duration::from_secs(3),
        "closed after {after:?}, not at the 300 ms time-out (the header time-out is 10 s)"
    );
}

#[tokio::test]
async fn at_the_connection_cap_a_stalled_handshake_gives_its_slot_to_a_new_client() {
    let pki = TestPki::new("cap CA");
    let dir = TempDir::new("tls-cap");
    let opts = Options {
        connections: ConnectionBudget::new(1),
        ..Options::default()
    };
    let addr = tls_demo(&pki, &dir, opts).await;
    // The only slot goes to a client that starts a handshake and stops.
    let staller = tokio::task::spawn_blocking(move || stall(addr));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let r = Client::new(Proto::H1)
        .trusting(pki.client_roots())
        .request(
            Method::GET,
            &format!("https://127.0.0.1:{}/hello", addr.port()),
            &[],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "waited {:?}",
        started.elapsed()
    );
    let (n, _) = staller.await.unwrap();
    assert_eq!(n, 0, "the stalled handshake is closed without an answer");
}

/// A greeter configuration in `dir` serving HTTPS with `cert` and `key`.
fn greeter_tls_config(dir: &Path, cert: &Path, key: &Path) -> std::path::PathBuf {
    let db = dir.join("g.db");
    let config = config_text(path(&db), "1s", "1s").replacen(
        "timeout: 1s }",
        &format!(
            "timeout: 1s, tls: {{ cert_file: {:?}, key_file: {:?} }} }}",
            path(cert),
            path(key)
        ),
        1,
    );
    let file = dir.join("config.yaml");
    std::fs::write(&file, config).unwrap();
    file
}

#[test]
fn an_expired_certificate_is_a_start_up_error_naming_the_file() {
    let dir = TempDir::new("tls-expired");
    let pki = TestPki::expired("old CA");
    let (_, cert, key) = pki.write_files(&dir.0);
    let config = greeter_tls_config(&dir.0, &cert, &key);
    let out = run(Command::new(GREETER).args(["--config", path(&config)]));
    assert!(!out.status.success(), "the greeter started");
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "greeter: server.http.tls: {}: the certificate expired on 2020-01-01",
        cert.display()
    );
    assert!(err.starts_with(&want), "{err}");
    // The same for router-demo's flags.
    let out = run(Command::new(ROUTER_DEMO).args([
        "--addr",
        "127.0.0.1:0",
        "--tls-cert",
        path(&cert),
        "--tls-key",
        path(&key),
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("{}: the certificate expired", cert.display())),
        "{err}"
    );
}

#[test]
fn a_key_of_another_certificate_is_a_start_up_error_naming_the_key_file() {
    let dir = TempDir::new("tls-mismatch");
    let (_, cert, _) = TestPki::new("one").write_files(&dir.0);
    let other = dir.0.join("other-key.pem");
    std::fs::write(&other, TestPki::new("two").server_key_pem).unwrap();
    for bin in [ROUTER_DEMO, TOKEN_AUTH] {
        let out = run(Command::new(bin)
            .args([
                "--addr",
                "127.0.0.1:0",
                "--tls-cert",
                path(&cert),
                "--tls-key",
                path(&other),
            ])
            .env(
                "TOKEN_AUTH_SECRET",
                "test-secret-test-secret-test-secret-0123",
            ));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bin} started");
        let want = format!(
            "{}: the private key does not belong to the certificate in {}",
            other.display(),
            cert.display()
        );
        assert!(err.contains(&want), "{bin}: {err}");
    }
    // Half the pair, and a file that is not there.
    let out = run(Command::new(ROUTER_DEMO).args(["--tls-cert", path(&cert)]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-cert needs --tls-key"));
    let missing = dir.0.join("missing.pem");
    let out = run(Command::new(ROUTER_DEMO).args([
        "--tls-cert",
        path(&missing),
        "--tls-key",
        path(&other),
    ]));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(&format!("{}: cannot read", missing.display())));
}

/// One TLS connection to `addr` trusting `roots`, as a hyper HTTP/1.1
/// sender (kept open by the caller to see what a reload does to it).
async fn keep_alive_connection(
    addr: SocketAddr,
    roots: rustls::RootCertStore,
) -> Result<hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>, String> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn hello(
    sender: &mut hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>,
) -> StatusCode {
    let req = http::Request::get("/hello")
        .header("host", "localhost")
        .body(http_body_util::Empty::new())
        .unwrap();
    sender
        .send_request(req)
        .await
        .expect("the connection still serves")
        .status()
}

#[tokio::test]
async fn sighup_swaps_the_certificate_for_new_handshakes_and_open_connections_keep_serving() {
    let dir = TempDir::new("tls-reload");
    let (old, new) = (TestPki::new("old CA"), TestPki::new("new CA"));
    let (cert, key) = old.write_server_files(&dir.0);
    let (child, addrs, mut out) = support::bin::spawn(
        ROUTER_DEMO,
        &[
            "--addr",
            "127.0.0.1:0",
            "--quiet",
            "--tls-cert",
            path(&cert),
            "--tls-key",
            path(&key),
        ],
        &[],
        1,
    );
    let addr = addrs[0];
    let mut open = keep_alive_connection(addr, old.client_roots())
        .await
        .unwrap();
    assert_eq!(hello(&mut open).await, StatusCode::OK);

    new.write_server_files(&dir.0);
    let hup = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let reloaded = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut line = String::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains("[tls] reloaded") {
                return Some(line);
            }
            line.clear();
        }
        None
    });
    let line = tokio::time::timeout(Duration::from_secs(10), reloaded)
        .await
        .unwrap()
        .unwrap();
    assert!(line.is_some_and(|l| l.contains(path(&cert))));

    // The connection opened before the reload still serves.
    assert_eq!(hello(&mut open).await, StatusCode::OK);
    // New handshakes present the new certificate.
    let err = keep_alive_connection(addr, old.client_roots()).await.err();
    assert!(
        err.is_some_and(|e| e.contains("certificate")),
        "old CA still accepted"
    );
    let mut fresh = keep_alive_connection(addr, new.client_roots())
        .await
        .unwrap();
    assert_eq!(hello(&mut fresh).await, StatusCode::OK);

    // A reload that fails keeps the pair in use.
    std::fs::write(&key, "not a key").unwrap();
    Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut after = keep_alive_connection(addr, new.client_roots())
        .await
        .unwrap();
    assert_eq!(hello(&mut after).await, StatusCode::OK);
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn handlers_see_whether_their_request_came_over_tls_and_its_trace() {
    // What a handler setting a `Secure` cookie asks: Context::is_tls.
    let app = || {
        let mut e = handwire::web::Engine::bare();
        e.handle(
            Method::GET,
            "/whoami",
            vec![handwire::web::handler(|c| {
                Box::pin(async move {
                    let trace = c.trace_context().map(|t| t.trace_id()).unwrap_or_default();
                    let text = format!("tls={} trace={trace}", c.is_tls());
                    c.string(StatusCode::OK, text);
                })
            })],
        )
        .unwrap();
        e.build()
    };
    let pki = TestPki::new("whoami CA");
    let dir = TempDir::new("tls-whoami");
    let (_, cert, key) = pki.write_files(&dir.0);
    let secure = start_with(
        app(),
        Options {
            tls: Some(CertStore::load(&cert, &key).unwrap()),
            ..Options::default()
        },
    )
    .await;
    let plain = start_with(app(), Options::default()).await;
    let tp = [(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    )];
    let over_tls = Client::new(Proto::H2)
        .trusting(pki.client_roots())
        .request(
            Method::GET,
            &format!("https://127.0.0.1:{}/whoami", secure.addr.port()),
            &tp,
            "",
        )
        .await;
    assert_eq!(
        over_tls.text(),
        "tls=true trace=4bf92f3577b34da6a3ce929d0e0e4736"
    );
    let cleartext = Client::new(Proto::H1)
        .request(
            Method::GET,
            &format!("http://{}/whoami", plain.addr),
            &tp,
            "",
        )
        .await;
    assert_eq!(
        cleartext.text(),
        "tls=false trace=4bf92f3577b34da6a3ce929d0e0e4736"
    );
}

/// Make a FIFO at `at` (where a hung network mount would be: opening it
/// blocks until a writer comes, which never does here).
fn mkfifo(at: &Path) {
    let _ = std::fs::remove_file(at);
    let made = run(Command::new("mkfifo").arg(at));
    assert!(made.status.success(), "mkfifo {}", at.display());
}

/// Wait at most `limit` for `child` to exit; `false` (and the child
/// killed) if it did not.
fn exits_within(child: &mut std::process::Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// Start `cmd` expecting it to fail at start-up within 10 s; its stderr.
fn start_up_error_within_10s(cmd: &mut Command) -> String {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the binary");
    let name = format!("{:?}", cmd.get_program());
    assert!(
        exits_within(&mut child, Duration::from_secs(10)),
        "{name} still starting after 10 s (blocked on a certificate file?)"
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!child.wait().unwrap().success(), "{name} started: {err}");
    err
}

#[test]
fn a_certificate_path_that_is_a_fifo_is_refused_at_start_up_naming_it() {
    let dir = TempDir::new("tls-fifo-start");
    let (_, cert, key) = TestPki::new("fifo CA").write_files(&dir.0);
    let fifo = dir.0.join("fifo.pem");
    mkfifo(&fifo);
    let refused =
        |p: &Path, kind: &str| format!("{}: cannot read: not a regular file ({kind})", p.display());
    let flags = |cert: &Path, key: &Path| {
        let mut cmd = Command::new(ROUTER_DEMO);
        cmd.args([
            "--addr",
            "127.0.0.1:0",
            "--tls-cert",
            path(cert),
            "--tls-key",
            path(key),
        ]);
        cmd
    };
    let err = start_up_error_within_10s(&mut flags(&fifo, &key));
    assert!(err.contains(&refused(&fifo, "a FIFO")), "{err}");
    let err = start_up_error_within_10s(&mut flags(&cert, &fifo));
    assert!(err.contains(&refused(&fifo, "a FIFO")), "{err}");
    // A device is no certificate either (it reads as empty, or without end).
    let null = Path::new("/dev/null");
    let err = start_up_error_within_10s(&mut flags(&cert, null));
    assert!(err.contains(&refused(null, "a device")), "{err}");
    // The greeter's configuration names its key.
    let config = greeter_tls_config(&dir.0, &fifo, &key);
    let err = start_up_error_within_10s(Command::new(GREETER).args(["--config", path(&config)]));
    let want = format!("greeter: server.http.tls: {}", refused(&fifo, "a FIFO"));
    assert!(err.starts_with(&want), "{err}");
}

/// Send SIGHUP (or another signal) to `child`.
fn signal(child: &std::process::Child, sig: &str) {
    let sent = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The next line of `out` containing `needle`, read for at most 10 s.
async fn next_line_with(
    out: std::io::BufReader<std::process::ChildStdout>,
    needle: &'static str,
) -> (
    Option<String>,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let reading = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut out = out;
        let mut line = String::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains(needle) {
                return (Some(line), out);
            }
            line.clear();
        }
        (None, out)
    });
    match tokio::time::timeout(Duration::from_secs(10), reading).await {
        Ok(done) => done.unwrap(),
        Err(_) => panic!("no line with {needle:?} within 10 s"),
    }
}

/// router-demo serving HTTPS with `cert` and `key` (killed when dropped,
/// should an assertion fail first), and its log from the line after its
/// address.
fn tls_router_demo(
    cert: &Path,
    key: &Path,
) -> (
    support::bin::Server,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--quiet",
        "--tls-cert",
        path(cert),
        "--tls-key",
        path(key),
    ];
    let (child, addrs, out) = support::bin::spawn(ROUTER_DEMO, &args, &[], 1);
    let server = support::bin::Server {
        child,
        addrs,
        _dir: None,
    };
    (server, out)
}

#[tokio::test]
async fn a_reload_from_a_fifo_keeps_the_old_pair_and_the_server_answers() {
    let dir = TempDir::new("tls-fifo-reload");
    let pki = TestPki::new("fifo reload CA");
    let (cert, key) = pki.write_server_files(&dir.0);
    let (mut server, out) = tls_router_demo(&cert, &key);
    let addr = server.addrs[0];
    mkfifo(&cert);
    signal(&server.child, "-HUP");
    let (line, out) = next_line_with(out, "[tls] reload").await;
    let line = line.expect("a line about the reload");
    assert!(
        line.contains("reload failed, keeping the previous certificate")
            && line.contains(&format!(
                "{}: cannot read: not a regular file (a FIFO)",
                cert.display()
            )),
        "{line}"
    );
    // Every new handshake still gets the old pair, promptly.
    for _ in 0..5 {
        let mut conn = tokio::time::timeout(
            Duration::from_secs(5),
            keep_alive_connection(addr, pki.client_roots()),
        )
        .await
        .expect("a handshake within 5 s")
        .unwrap();
        assert_eq!(hello(&mut conn).await, StatusCode::OK);
    }
    // And SIGTERM stops the process.
    std::thread::spawn(move || std::io::copy(&mut { out }, &mut std::io::sink()));
    signal(&server.child, "-TERM");
    assert!(
        exits_within(&mut server.child, Duration::from_secs(10)),
        "still running 10 s after SIGTERM"
    );
}

#[tokio::test]
async fn handshake_failures_are_logged_at_a_bounded_rate_with_a_suppressed_count() {
    let dir = TempDir::new("tls-garbage");
    let pki = TestPki::new("garbage CA");
    let (cert, key) = pki.write_server_files(&dir.0);
    let (server, out) = tls_router_demo(&cert, &key);
    let addr = server.addrs[0];
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in out.lines().map_while(Result::ok) {
            if line.contains("TLS handshake error") {
                seen.lock().unwrap().push(line);
            }
        }
    });
    // One garbage byte, then the client's end closed; wait for the server's.
    let garbage = move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&[0x00]).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Write);
        let _ = s.read_to_end(&mut Vec::new());
    };
    const FLOOD: usize = 3_000;
    let started = Instant::now();
    let workers: Vec<_> = (0..10)
        .map(|_| std::thread::spawn(move || (0..FLOOD / 10).for_each(|_| garbage())))
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    let took = started.elapsed();
    // After a quiet second, the next failure is logged with the count of
    // those left out.
    std::thread::sleep(Duration::from_millis(1_100));
    garbage();
    let deadline = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let logged = lines.lock().unwrap().clone();
        if logged.len() > 1 && logged.last().is_some_and(|l| l.contains("suppressed")) {
            break logged;
        }
        assert!(
            Instant::now() < deadline,
            "no line with the count: {logged:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(server);
    // At most 10 lines a second, and every failure either logged or counted.
    let seconds = took.as_secs() as usize + 2;
    assert!(
        logged.len() <= 10 * seconds,
        "{} lines for {FLOOD} failures in {took:?}",
        logged.len()
    );
    let suppressed: usize = logged
        .iter()
        .filter_map(|l| {
            let (_, count) = l.rsplit_once("; ")?;
            count
                .strip_suffix(" similar line(s) suppressed")?
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert_eq!(
        logged.len() + suppressed,
        FLOOD + 1,
        "every failure logged or counted: {logged:#?}"
    );
}
