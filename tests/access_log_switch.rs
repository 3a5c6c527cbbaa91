//! `--no-access-log` on the three real binaries (and the greeter's
//! `log.access: false`): the access lines go, HTTP and `[grpc]`, and every
//! other line stays: start-up, the greeter's SayHello business line,
//! token-auth's refusals, the stop line. Each case starts the binary, makes
//! its requests, stops it with SIGTERM (the log is flushed on exit) and
//! reads all it wrote; the same requests without the switch write the
//! access lines, so an absent line means the switch, not a lost log.

mod support;

use std::io::Read;
use std::net::SocketAddr;
use std::process::Command;

use handwire::services::greeter::api::{HelloReply, HelloRequest};
use http::Method;
use support::greeter::{config_text, TempDir};
use support::http::{self as client, Proto};

const GREETER: &str = env!("CARGO_BIN_EXE_greeter");
const ROUTER: &str = env!("CARGO_BIN_EXE_router-demo");
const AUTH: &str = env!("CARGO_BIN_EXE_token-auth");
const SECRET: &str = "access-log test secret, 32+ bytes long..";

/// Starts `bin` with `args` (in `dir`, for the databases), waits for its
/// `listening` lines, runs `requests` on their addresses, stops it with
/// SIGTERM and returns everything it wrote to stdout.
fn log_of(
    bin: &str,
    args: &[&str],
    listening: usize,
    requests: impl AsyncFnOnce(Vec<SocketAddr>),
) -> String {
    let env = [("TOKEN_AUTH_SECRET", SECRET)];
    let (mut child, addrs, mut out) = support::bin::spawn(bin, args, &env, listening);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(requests(addrs));
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{bin} {args:?}: {status:?}\n{rest}");
    rest
}

/// How many lines of `log` contain `text`.
fn lines_with(log: &str, text: &str) -> usize {
    log.lines().filter(|l| l.contains(text)).count()
}

#[test]
fn router_demo_with_no_access_log_writes_no_request_lines_and_still_starts_and_stops() {
    let hello = async |addrs: Vec<SocketAddr>| {
        for path in ["/hello", "/book/42", "/nope"] {
            client::get(Proto::H1, addrs[0], path).await;
        }
    };
    let base = ["--addr", "127.0.0.1:0"];
    let on = log_of(ROUTER, &base, 1, hello);
    let off = log_of(
        ROUTER,
        &[&base[..], &["--no-access-log"]].concat(),
        1,
        hello,
    );
    for path in ["\"/hello\"", "\"/book/42\"", "\"/nope\""] {
        assert_eq!(lines_with(&on, path), 1, "{path} with the log on:\n{on}");
        assert_eq!(lines_with(&off, path), 0, "{path} with the log off:\n{off}");
    }
    // The start-up lines were read before the requests; the stop line stays.
    for log in [&on, &off] {
        assert!(log.contains("router-demo stopped"), "{log}");
    }
}

#[test]
fn token_auth_with_no_access_log_keeps_its_refusals_and_drops_the_request_lines() {
    let dir = TempDir::new("access-log-auth");
    let db = dir.0.join("auth.db");
    let base = [
        "--quiet",
        "--addr",
        "127.0.0.1:0",
        "--db",
        db.to_str().unwrap(),
    ];
    let refused = async |addrs: Vec<SocketAddr>| {
        let reply = client::send(
            Proto::H1,
            addrs[0],
            Method::GET,
            "/api/user/profile",
            &[("authorization", "Bearer not.a.token")],
            "",
        )
        .await;
        assert_eq!(reply.status.as_u16(), 401);
    };
    let on = log_of(AUTH, &base, 1, refused);
    let off = log_of(
        AUTH,
        &[&base[..], &["--no-access-log"]].concat(),
        1,
        refused,
    );
    assert_eq!(lines_with(&on, "\"/api/user/profile\""), 1, "{on}");
    assert_eq!(lines_with(&off, "\"/api/user/profile\""), 0, "{off}");
    for log in [&on, &off] {
        assert_eq!(lines_with(log, "refused token"), 1, "{log}");
        assert!(log.contains("token-auth stopped"), "{log}");
    }
}

/// One SayHello over each port of the greeter: `GET /helloworld/http` and
/// the gRPC call for `grpc`.
async fn greet_both_ways(addrs: Vec<SocketAddr>) {
    let (http, grpc) = (addrs[0], addrs[1]);
    let reply = client::get(Proto::H1, http, "/helloworld/http").await;
    assert_eq!(reply.status.as_u16(), 200);
    let request = HelloRequest {
        name: "grpc".into(),
    };
    let reply: HelloReply = support::grpc::call(grpc, "/helloworld.v1.Greeter/SayHello", request)
        .await
        .unwrap();
    assert_eq!(reply.message, "Hello grpc");
}

#[test]
fn greeter_without_access_lines_keeps_the_sayhello_business_line_by_flag_or_by_key() {
    let dir = TempDir::new("access-log-greeter");
    let text = config_text(":memory:", "1s", "1s");
    let write = |name: &str, text: &str| {
        let path = dir.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let plain = write("plain.yaml", &text);
    let keyed = write("keyed.yaml", &format!("{text}log: {{ access: false }}\n"));
    let on = log_of(GREETER, &["--config", &plain], 2, greet_both_ways);
    let by_flag = log_of(
        GREETER,
        &["--config", &plain, "--no-access-log"],
        2,
        greet_both_ways,
    );
    let by_key = log_of(GREETER, &["--config", &keyed], 2, greet_both_ways);
    assert_eq!(lines_with(&on, "\"/helloworld/http\""), 1, "{on}");
    assert_eq!(lines_with(&on, "[grpc] "), 1, "{on}");
    for off in [&by_flag, &by_key] {
        assert_eq!(lines_with(off, "\"/helloworld/http\""), 0, "{off}");
        assert_eq!(lines_with(off, "[grpc] "), 0, "{off}");
    }
    for log in [&on, &by_flag, &by_key] {
        assert_eq!(lines_with(log, "SayHello name=\"http\""), 1, "{log}");
        assert_eq!(lines_with(log, "SayHello name=\"grpc\""), 1, "{log}");
        assert!(log.contains("greeter: stopped"), "{log}");
    }
}
