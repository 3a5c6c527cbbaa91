//! `--debug-pages` on the three real binaries, each on 127.0.0.1:0: off by
//! default (the pages are 404 like any unknown path), on with the flag,
//! where `/debug/walks` draws a request just made with the handler names
//! `--trace` prints, and `/debug/routes` draws the engine's route tree.
//! The greeter's pages cover its HTTP engine (gRPC calls have no chain).

mod support;

use std::net::SocketAddr;
use std::process::Child;

use support::bin::spawn_draining;
use support::greeter::{config_text, TempDir};

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` on a new connection to `addr`: status and body.
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer[9..12].parse().expect("status");
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn router_demo(extra: &[&str]) -> (Running, SocketAddr) {
    let mut args = vec!["--addr", "127.0.0.1:0", "--quiet"];
    args.extend_from_slice(extra);
    let (child, addrs) = spawn_draining(env!("CARGO_BIN_EXE_router-demo"), &args, &[], 1);
    (Running(child), addrs[0])
}

/// The greeter with its HTTP listener on 127.0.0.1:0 and its database in
/// `dir`; its HTTP address.
fn greeter(dir: &TempDir, extra: &[&str]) -> (Running, SocketAddr) {
    let config = dir.0.join("config.yaml");
    let db = dir.0.join("greeter.db");
    let text = config_text(db.to_str().unwrap(), "1s", "1s");
    std::fs::write(&config, text).expect("config");
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (child, addrs) = spawn_draining(env!("CARGO_BIN_EXE_greeter"), &args, &[], 2);
    (Running(child), addrs[0])
}

/// token-auth on 127.0.0.1:0 with its database in `dir`.
fn token_auth(dir: &TempDir, extra: &[&str]) -> (Running, SocketAddr) {
    let db = dir.0.join("token-auth.db");
    let mut args = vec![
        "--addr",
        "127.0.0.1:0",
        "--quiet",
        "--db",
        db.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let secret = [(
        "TOKEN_AUTH_SECRET",
        "a test secret of at least 32 bytes....",
    )];
    let (child, addrs) = spawn_draining(env!("CARGO_BIN_EXE_token-auth"), &args, &secret, 1);
    (Running(child), addrs[0])
}

#[tokio::test]
async fn without_the_flag_the_pages_are_404_on_every_binary() {
    let (_demo, addr) = router_demo(&[]);
    for path in [
        "/debug/walks",
        "/debug/routes",
        "/debug/walks/since?after=0",
    ] {
        assert_eq!(get(addr, path).await.0, 404, "router-demo {path}");
    }
    let dir = TempDir::new("debug-pages-off");
    let (_auth, auth) = token_auth(&dir, &[]);
    assert_eq!(get(auth, "/debug/walks").await.0, 404, "token-auth");
    let (_greeter, http) = greeter(&dir, &[]);
    assert_eq!(get(http, "/debug/walks").await.0, 404, "greeter");
}

#[tokio::test]
async fn router_demo_draws_a_request_just_made_with_the_names_trace_prints() {
    let (_demo, addr) = router_demo(&["--debug-pages"]);
    assert_eq!(get(addr, "/index").await.0, 403);
    let (status, page) = get(addr, "/debug/walks").await;
    assert_eq!(status, 200);
    let drawn: Vec<&str> = page
        .split("data-name=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert_eq!(
        drawn,
        [
            "logger",
            "recovery",
            "global_middleware",
            "token_check",
            "index_handler"
        ]
    );
    assert!(page.contains("4 index_handler: skipped (abort() in 3 token_check)"));
    let (status, routes) = get(addr, "/debug/routes?path=/book/42").await;
    assert_eq!(status, 200);
    assert!(routes.contains("takes the route GET /book/:id"), "{routes}");
}

#[tokio::test]
async fn the_greeter_and_token_auth_take_the_flag_too() {
    let dir = TempDir::new("debug-pages");
    let (_greeter, http) = greeter(&dir, &["--debug-pages"]);
    assert_eq!(get(http, "/helloworld/ann").await.0, 200);
    let (status, page) = get(http, "/debug/walks").await;
    assert_eq!(status, 200);
    assert!(page.contains("GET /helloworld/ann"), "{page}");
    assert!(page.contains("data-name=\"logger\""), "{page}");

    let (_auth, auth) = token_auth(&dir, &["--debug-pages"]);
    let (status, routes) = get(auth, "/debug/routes").await;
    assert_eq!(status, 200);
    assert!(routes.contains("svg"), "{routes}");
}
