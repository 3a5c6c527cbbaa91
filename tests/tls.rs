//! TLS on every listener, checked with clients from elsewhere: curl
//! `--cacert` (HTTPS, HTTP/1.1 and HTTP/2 by ALPN), grpcurl `-cacert` and
//! Python's grpcio with `ssl_channel_credentials` (gRPC over TLS), a raw
//! Certificates come from a test CA made with rcgen ([`support::tls`]).
//! What the listener itself does (plain HTTP on its port, stalled
//! handshakes, start-up errors, reload) is in tests/tls_listener.rs.
//!
//! Tools missing on this machine make their test print SKIPPED and pass,
//! unless `REQUIRE_GRPCURL=1` / `HANDWIRE_PY_TOOLS_REQUIRED=1` /
//! `REQUIRE_CURL=1` (set by `.ci/run`) say they must run.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use http::{Method, StatusCode};

use support::greeter::{config_text, TempDir};
use support::http::{Client, Proto, BOTH};
use support::tls::TestPki;

const ROUTER_DEMO: &str = env!("CARGO_BIN_EXE_router-demo");
const TOKEN_AUTH: &str = env!("CARGO_BIN_EXE_token-auth");

/// A tool's path, or `None` after printing why the test skips; panics when
/// `required_var` is `1`.
fn tool(test: &str, name: &str, required_var: &str, found: Option<String>) -> Option<String> {
    if let Some(path) = found {
        return Some(path);
    }
    if std::env::var(required_var).as_deref() == Ok("1") {
        panic!("{test}: {name} is required ({required_var}=1) and was not found");
    }
    eprintln!("SKIPPED {test}: {name} not found");
    None
}

fn on_path(name: &str) -> Option<String> {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()
        .map(|_| name.to_string())
}

fn curl(test: &str) -> Option<String> {
    tool(test, "curl", "REQUIRE_CURL", on_path("curl"))
}

/// `$GRPCURL`, grpcurl on PATH, or the one tests/install-grpcurl.sh installs.
fn grpcurl(test: &str) -> Option<String> {
    let found = std::env::var("GRPCURL")
        .ok()
        .or_else(|| on_path("grpcurl"))
        .or_else(|| {
            let out = Command::new("bash")
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/install-grpcurl.sh"
                ))
                .stderr(Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        });
    tool(test, "grpcurl", "REQUIRE_GRPCURL", found)
}

/// Run `cmd`, return its output; panics if it cannot start.
fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("start the tool")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[test]
fn router_demo_serves_https_to_curl_over_http1_and_http2_by_alpn() {
    let test = "router_demo_serves_https_to_curl_over_http1_and_http2_by_alpn";
    let Some(curl) = curl(test) else { return };
    let dir = TempDir::new("tls-router");
    let pki = TestPki::new("router CA");
    let (ca, cert, key) = pki.write_files(&dir.0);
    let (mut child, addrs) = support::bin::spawn_draining(
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
    let url = format!("https://localhost:{}/book/42", addrs[0].port());
    for (flag, want) in [("--http1.1", "1.1"), ("--http2", "2")] {
        let out = run(Command::new(&curl).args([
            "-sS",
            "--cacert",
            path(&ca),
            flag,
            "-w",
            "\n%{http_version} %{response_code}",
            "--resolve",
            &format!("localhost:{}:127.0.0.1", addrs[0].port()),
            &url,
        ]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "curl {flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("42"), "{text}");
        assert!(
            text.ends_with(&format!("{want} 200")),
            "curl {flag} negotiated: {text}"
        );
    }
    // A client that does not trust the CA refuses the server.
    let out = run(Command::new(&curl).args(["-sS", &url.replace("localhost", "127.0.0.1")]));
    assert!(!out.status.success(), "curl without --cacert must fail");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn token_auth_serves_https_to_curl() {
    let test = "token_auth_serves_https_to_curl";
    let Some(curl) = curl(test) else { return };
    let dir = TempDir::new("tls-auth");
    let pki = TestPki::new("auth CA");
    let (ca, cert, key) = pki.write_files(&dir.0);
    let db = dir.0.join("auth.db");
    let (mut child, addrs) = support::bin::spawn_draining(
        TOKEN_AUTH,
        &[
            "--addr",
            "127.0.0.1:0",
            "--quiet",
            "--db",
            path(&db),
            "--tls-cert",
            path(&cert),
            "--tls-key",
            path(&key),
        ],
        &[(
            "TOKEN_AUTH_SECRET",
            "test-secret-test-secret-test-secret-0123",
        )],
        1,
    );
    let out = run(Command::new(&curl).args([
        "-sS",
        "--cacert",
        path(&ca),
        "-w",
        " %{response_code}",
        &format!("https://127.0.0.1:{}/healthz", addrs[0].port()),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.ends_with(" 200"), "{text}");
    let _ = child.kill();
    let _ = child.wait();
}

/// A greeter whose two listeners serve TLS with `pki`'s certificate.
async fn tls_greeter(pki: &TestPki, tag: &str) -> (support::greeter::Running, PathBuf) {
    let dir = TempDir::new(tag);
    let (ca, cert, key) = pki.write_files(&dir.0);
    let db = dir.0.join("greeter.db");
    let tls = format!(
        "tls: {{ cert_file: {:?}, key_file: {:?} }}",
        path(&cert),
        path(&key)
    );
    let text = config_text(path(&db), "1s", "1s")
        .replace("timeout: 1s }", &format!("timeout: 1s, {tls} }}"));
    assert_eq!(text.matches("cert_file").count(), 2, "{text}");
    (support::greeter::start_from(&text, dir, db).await, ca)
}

#[tokio::test(flavor = "multi_thread")]
async fn greeter_serves_https_and_grpc_over_tls_to_curl_grpcurl_and_grpcio() {
    let test = "greeter_serves_https_and_grpc_over_tls_to_curl_grpcurl_and_grpcio";
    let pki = TestPki::new("greeter CA");
    let (greeter, ca) = tls_greeter(&pki, "tls-greeter").await;

    // HTTPS: the project's hyper client over both versions, then curl.
    for proto in BOTH {
        let r = Client::new(proto)
            .trusting(pki.client_roots())
            .request(
                Method::GET,
                &format!("https://127.0.0.1:{}/helloworld/tls", greeter.http.port()),
                &[],
                "",
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{proto:?}: {}", r.text());
        assert_eq!(r.json()["message"], "Hello tls");
    }
    // A plain-HTTP client on the HTTPS port is refused, not served.
    let plain = Client::new(Proto::H1)
        .try_request(
            Method::GET,
            &format!("http://{}/helloworld/x", greeter.http),
            &[],
            "",
        )
        .await;
    assert!(plain.is_ok_and(|r| r.status == StatusCode::BAD_REQUEST));
    if let Some(curl) = curl(test) {
        let out = run(Command::new(&curl).args([
            "-sS",
            "--cacert",
            path(&ca),
            &format!("https://127.0.0.1:{}/helloworld/curl", greeter.http.port()),
        ]));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            r#"{"message":"Hello curl"}"#
        );
    }

    // gRPC over TLS: grpcurl through server reflection.
    if let Some(grpcurl) = grpcurl(test) {
        let out = run(Command::new(&grpcurl).args([
            "-cacert",
            path(&ca),
            "-d",
            r#"{"name":"grpcurl"}"#,
            &greeter.grpc.to_string(),
            "helloworld.v1.Greeter/SayHello",
        ]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "grpcurl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(r#""message": "Hello grpcurl""#), "{text}");
        // Without the CA, grpcurl refuses the certificate.
        let out = run(Command::new(&grpcurl).args([&greeter.grpc.to_string(), "list"]));
        assert!(!out.status.success(), "grpcurl without -cacert must fail");
    }

    // gRPC over TLS: Python's grpcio (C core), message bytes by hand.
    if let Some(python) = support::py::python(test) {
        let script = r#"
import sys, grpc
ca = open(sys.argv[1], "rb").read()
creds = grpc.ssl_channel_credentials(root_certificates=ca)
with grpc.secure_channel(sys.argv[2], creds) as ch:
    say = ch.unary_unary("/helloworld.v1.Greeter/SayHello")
    name = b"grpcio"
    reply = say(b"\x0a" + bytes([len(name)]) + name, timeout=10)
    sys.stdout.write(reply[2:].decode())
"#;
        let out =
            run(Command::new(&python).args(["-c", script, path(&ca), &greeter.grpc.to_string()]));
        assert!(
            out.status.success(),
            "grpcio: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello grpcio");
    }
}
