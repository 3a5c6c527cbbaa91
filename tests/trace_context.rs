//! W3C Trace Context on every service, through the real binaries: a valid
//! `traceparent` is continued (same trace-id in the response and in every
//! log line the request leaves: access log, gRPC access log, service and
//! error lines), an absent or malformed one starts a new trace and never
//! fails the request.

mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use handwire::services::greeter::api::{HelloReply, HelloRequest};
use http::{Method, StatusCode};

use support::greeter::{config_text, TempDir};
use support::http::{Client, Proto, Reply, BOTH};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{PARENT}-01")
}

/// A binary's stdout lines, read on a thread as they come.
struct Lines {
    rx: mpsc::Receiver<String>,
    child: Child,
}

impl Lines {
    fn start(
        bin: &str,
        args: &[&str],
        env: &[(&str, &str)],
        listening: usize,
    ) -> (Lines, Vec<SocketAddr>) {
        let mut cmd = Command::new(bin);
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start binary");
        let out: ChildStdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let lines = Lines { rx, child };
        let mut addrs = Vec::new();
        while addrs.len() < listening {
            let line = lines.next();
            if let Some((_, addr)) = line.split_once("listening on ") {
                addrs.push(addr.trim_start_matches("http://").parse().expect("address"));
            }
        }
        (lines, addrs)
    }

    fn next(&self) -> String {
        self.rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a log line within 10 s")
    }

    /// Lines up to and including the first that contains `needle`.
    fn until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self.next();
            let done = line.contains(needle);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The trace-id of a response's `traceparent`, checked for shape.
fn returned_trace(reply: &Reply) -> (String, String) {
    let value = reply
        .header("traceparent")
        .expect("traceparent in the response");
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!((parts[0], parts[3]), ("00", "01"), "{value}");
    assert_eq!((parts[1].len(), parts[2].len()), (32, 16), "{value}");
    (parts[1].to_string(), parts[2].to_string())
}

#[tokio::test]
async fn router_demo_continues_a_valid_traceparent_and_logs_its_trace_id() {
    let (lines, addrs) = Lines::start(
        env!("CARGO_BIN_EXE_router-demo"),
        &["--addr", "127.0.0.1:0", "--quiet"],
        &[],
        1,
    );
    for proto in BOTH {
        let url = format!("http://{}/book/7", addrs[0]);
        let tp = traceparent();
        let r = Client::new(proto)
            .request(Method::GET, &url, &[("traceparent", tp.as_str())], "")
            .await;
        assert_eq!(r.status, StatusCode::OK);
        let (trace, span) = returned_trace(&r);
        assert_eq!(trace, TRACE_ID, "{proto:?}: the trace is continued");
        assert_ne!(span, PARENT, "the server's own span, not the caller's");
        let line = lines.until("\"/book/7\"").pop().unwrap();
        assert!(
            line.ends_with(&format!("\"/book/7\" | trace_id={TRACE_ID}")),
            "{line}"
        );
    }
}

#[tokio::test]
async fn a_malformed_or_absent_traceparent_starts_a_new_trace_and_never_fails_the_request() {
    let (lines, addrs) = Lines::start(
        env!("CARGO_BIN_EXE_router-demo"),
        &["--addr", "127.0.0.1:0", "--quiet"],
        &[],
        1,
    );
    let bad = [
        None,
        Some("garbage"),
        Some("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
        Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        Some("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    ];
    let mut seen = Vec::new();
    for value in bad {
        let headers: Vec<(&str, &str)> = value.map(|v| ("traceparent", v)).into_iter().collect();
        let r = Client::new(Proto::H1)
            .request(
                Method::GET,
                &format!("http://{}/hello", addrs[0]),
                &headers,
                "",
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{value:?}");
        let (trace, _) = returned_trace(&r);
        assert_ne!(trace, TRACE_ID, "{value:?}");
        assert!(!seen.contains(&trace), "a new trace each time");
        let line = lines.until("\"/hello\"").pop().unwrap();
        assert!(line.ends_with(&format!(" | trace_id={trace}")), "{line}");
        seen.push(trace);
    }
}

#[tokio::test]
async fn greeter_grpc_and_http_carry_the_trace_into_every_log_line() {
    let dir = TempDir::new("trace-greeter");
    let db = dir.0.join("g.db");
    let config = dir.0.join("config.yaml");
    std::fs::write(&config, config_text(db.to_str().unwrap(), "1s", "1s")).unwrap();
    let (lines, addrs) = Lines::start(
        env!("CARGO_BIN_EXE_greeter"),
        &["--config", config.to_str().unwrap()],
        &[],
        2,
    );
    let (http, grpc_addr) = (addrs[0], addrs[1]);

    // gRPC: traceparent as metadata, with tonic.
    let mut grpc = support::grpc::client(grpc_addr).await;
    grpc.ready().await.unwrap();
    let mut req = tonic::Request::new(HelloRequest {
        name: "traced".into(),
    });
    req.metadata_mut()
        .insert("traceparent", traceparent().parse().unwrap());
    let codec = tonic_prost::ProstCodec::<HelloRequest, HelloReply>::default();
    let reply = grpc
        .unary(req, http::uri::PathAndQuery::from_static(SAY_HELLO), codec)
        .await
        .expect("SayHello");
    let returned = reply
        .metadata()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .expect("traceparent in the response metadata")
        .to_string();
    assert!(
        returned.starts_with(&format!("00-{TRACE_ID}-")),
        "{returned}"
    );
    assert_eq!(reply.into_inner().message, "Hello traced");
    let seen = lines.until("[grpc] ");
    let service_line = seen
        .iter()
        .find(|l| l.contains("SayHello name=\"traced\""))
        .expect("biz line");
    assert!(
        service_line.ends_with(&format!(" trace_id={TRACE_ID}")),
        "{service_line}"
    );
    let access = seen.last().unwrap();
    assert!(
        access.ends_with(&format!("{SAY_HELLO} | trace_id={TRACE_ID}")),
        "{access}"
    );

    // Malformed metadata: the call still succeeds, under a new trace.
    grpc.ready().await.unwrap();
    let mut req = tonic::Request::new(HelloRequest {
        name: "again".into(),
    });
    req.metadata_mut()
        .insert("traceparent", "00-xyz".parse().unwrap());
    let codec = tonic_prost::ProstCodec::<HelloRequest, HelloReply>::default();
    let reply = grpc
        .unary(req, http::uri::PathAndQuery::from_static(SAY_HELLO), codec)
        .await
        .expect("a bad traceparent never fails a call");
    assert_eq!(reply.into_inner().message, "Hello again");
    let access = lines.until("[grpc] ").pop().unwrap();
    assert!(
        !access.contains(TRACE_ID) && access.contains(" | trace_id="),
        "{access}"
    );

    // HTTP through the gateway: access line and service line, one trace.
    let tp = traceparent();
    let r = Client::new(Proto::H1)
        .request(
            Method::GET,
            &format!("http://{http}/helloworld/web"),
            &[("traceparent", tp.as_str())],
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(returned_trace(&r).0, TRACE_ID);
    let seen = lines.until("\"/helloworld/web\"");
    let tagged: Vec<_> = seen.iter().filter(|l| l.contains(TRACE_ID)).collect();
    assert_eq!(tagged.len(), 2, "service line and access line: {seen:?}");
}

#[tokio::test]
async fn token_auth_error_lines_carry_the_trace_id_of_their_request() {
    let dir = TempDir::new("trace-auth");
    let db = dir.0.join("auth.db");
    let (lines, addrs) = Lines::start(
        env!("CARGO_BIN_EXE_token-auth"),
        &[
            "--addr",
            "127.0.0.1:0",
            "--quiet",
            "--db",
            db.to_str().unwrap(),
        ],
        &[(
            "TOKEN_AUTH_SECRET",
            "test-secret-test-secret-test-secret-0123",
        )],
        1,
    );
    let tp = traceparent();
    let headers = [
        ("traceparent", tp.as_str()),
        ("authorization", "Bearer not.a.jwt"),
    ];
    let r = Client::new(Proto::H2)
        .request(
            Method::GET,
            &format!("http://{}/api/user/profile", addrs[0]),
            &headers,
            "",
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(returned_trace(&r).0, TRACE_ID, "error answers carry it too");
    let seen = lines.until("\"/api/user/profile\"");
    let error = seen
        .iter()
        .find(|l| l.contains("refused token"))
        .expect("the error line");
    assert!(error.ends_with(&format!(" trace_id={TRACE_ID}")), "{error}");
    assert!(seen
        .last()
        .unwrap()
        .ends_with(&format!(" | trace_id={TRACE_ID}")));
}
