//! The access line of the real router-demo binary (the same writer serves
//! the greeter and token-auth) against what a hostile client sends: every
//! column a client controls escaped and capped, and secret query values
//! redacted whatever the case or trailing bytes of their key.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};

/// A running binary, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// router-demo on a free port; its stdout and address.
fn start() -> (Running, BufReader<ChildStdout>, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_router-demo"))
        .args(["--addr", "127.0.0.1:0", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .expect("start router-demo");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let child = Running(child);
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "no address line");
        if let Some(addr) = line.trim().strip_prefix("router-demo listening on http://") {
            return (child, out, addr.parse().unwrap());
        }
    }
}

/// Send `head` (request line and headers) and read the answer to its end.
fn send(addr: SocketAddr, head: &str) {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    assert!(answer.starts_with(b"HTTP/1.1 "), "no answer");
}

/// Issue 57, point 5: a method such as `X|-200-|-6.6.6.6-|-GET-admin`, or
/// one 120,000 bytes long, was copied raw into the access line.
#[test]
fn the_method_column_is_escaped_and_capped_like_the_path() {
    let (_child, mut out, addr) = start();
    let forged = "X|-200-|-6.6.6.6-|-GET-admin";
    send(
        addr,
        &format!("{forged} /hello HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"),
    );
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(
        line.contains(r"X\u{7c}-200-\u{7c}-6.6.6.6-\u{7c}-GET-admin"),
        "{line}"
    );
    assert_eq!(line.matches('|').count(), 5, "{line}");

    let long = "M".repeat(120_000);
    send(
        addr,
        &format!("{long} /hello HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"),
    );
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.len() < 4_096, "an access line of {} bytes", line.len());
    assert!(line.contains("MMMM…"), "{line:.300}");
}

/// Issue 57, point 6: `Token=` and `password%00=` were logged, `token=` was
/// not: the redaction compared keys case-sensitively and byte for byte.
#[test]
fn query_redaction_ignores_the_case_and_trailing_control_bytes_of_every_secret_key() {
    let (_child, mut out, addr) = start();
    let query = "name=ann&Token=SECRET2&password%00=SECRET3&CODE=SECRET5&State%1f=SECRET6\
                 &Access_Token%09=SECRET7&REFRESH_TOKEN%7F=SECRET8&pass%77ord%00%00=SECRET9&PassWord=SECRET4";
    send(
        addr,
        &format!("GET /user?{query} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"),
    );
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("name=ann&Token=REDACTED&"), "{line}");
    for n in 2..=9 {
        let secret = format!("SECRET{n}");
        assert!(!line.contains(&secret), "{secret} leaked: {line}");
    }
}
