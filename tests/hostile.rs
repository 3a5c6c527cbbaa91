//! The hostile-input suite: each real binary (router-demo, token-auth, the
//! greeter's HTTP and gRPC ports) gets requests an attacker would send —
//! malformed request lines, header floods, request smuggling, bad chunking,
//! huge bodies, deep or ambiguous JSON, invalid UTF-8, NUL bytes, traversal,
//! huge paths, HTTP/2 floods at frame level, gRPC length-prefix lies, JWT
//! forgeries. Each case is named after its attack and asserts the answer;
//! after every case the server must still answer a normal request.
//!
//! Attacks that need more than a request and an answer have suites of their
//! own beside this one: `hostile_protocol.rs` (protobuf, grpc-timeout, JWT
//! claims, look-alike usernames, racing registrations), `disk_full.rs` (a
//! full disk under token-auth and the greeter), `token_binding.rs` and
//! `token_auth_rotation.rs` (tokens outliving or changing account, reused
//! refresh tokens), `slow_readers.rs` (clients that never read, zero h2
//! windows, 1,100 held connections), `greeter_storage.rs` and
//! `greeter_limits.rs` (stored sizes, registration floods), `crash.rs`
//! (kill -9 under load). docs/reliability.md lists each rule and its test.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};
use support::bin::Server;

use base64::Engine as _;

/// What a hostile request must get.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    /// This HTTP status.
    Status(u16),
    /// The server closes the connection (with or without an answer first).
    Closed,
    /// This status, then the server closes the connection.
    StatusThenClosed(u16),
}

/// One attack: its name, the raw bytes sent on a fresh connection, and the
/// expected outcome.
struct Case {
    attack: &'static str,
    bytes: Vec<u8>,
    want: Want,
}

fn case(attack: &'static str, bytes: impl Into<Vec<u8>>, want: Want) -> Case {
    Case {
        attack,
        bytes: bytes.into(),
        want,
    }
}

/// A running binary, killed on drop.
/// Start `bin` (see [`support::bin::spawn`]). Its stdout is then left
/// unread: the log must not block the server when nobody reads it.
fn spawn(bin: &str, args: &[&str], env: &[(&str, &str)], n: usize) -> (Child, Vec<SocketAddr>) {
    let (child, addrs, out) = support::bin::spawn(bin, args, env, n);
    // Keep the pipe open (but unread) for the life of the child.
    std::mem::forget(out);
    (child, addrs)
}

fn router_demo() -> Server {
    let (child, addrs) = spawn(
        env!("CARGO_BIN_EXE_router-demo"),
        &["--addr", "127.0.0.1:0", "--quiet"],
        &[],
        1,
    );
    Server {
        child,
        addrs,
        _dir: None,
    }
}

fn token_auth() -> Server {
    let dir = support::greeter::TempDir::new("hostile-auth");
    let db = dir.0.join("auth.db");
    let (child, addrs) = spawn(
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
            "hostile-suite-secret-0123456789-abcdefghij",
        )],
        1,
    );
    Server {
        child,
        addrs,
        _dir: Some(dir),
    }
}

fn greeter() -> Server {
    let dir = support::greeter::TempDir::new("hostile-greeter");
    let db = dir.0.join("greeter.db");
    let config = dir.0.join("config.yaml");
    std::fs::write(
        &config,
        support::greeter::config_text(db.to_str().unwrap(), "1s", "1s"),
    )
    .unwrap();
    let (child, addrs) = spawn(
        env!("CARGO_BIN_EXE_greeter"),
        &["--config", config.to_str().unwrap()],
        &[],
        2,
    );
    Server {
        child,
        addrs,
        _dir: Some(dir),
    }
}

/// Send `bytes` on a new connection and read what comes back: until a
/// status line arrived when `until_closed` is false, else until the server
/// closes (at most a few seconds either way). Returns the first status, if
/// any, and whether the server closed the connection.
fn exchange_until(addr: SocketAddr, bytes: &[u8], until_closed: bool) -> (Option<u16>, bool) {
    let (status, closed, _) = exchange_counting(addr, bytes, until_closed);
    (status, closed)
}

/// [`exchange_until`], also counting the responses that came back.
fn exchange_counting(
    addr: SocketAddr,
    bytes: &[u8],
    until_closed: bool,
) -> (Option<u16>, bool, usize) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    // The server may close before reading everything: that is an answer.
    let _ = s.write_all(bytes);
    let mut answer = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let deadline = Instant::now() + Duration::from_secs(5);
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => {}
        }
        if (!until_closed && answer.len() >= 12) || Instant::now() > deadline {
            break false;
        }
    };
    let status = answer
        .strip_prefix(b"HTTP/1.1 ")
        .and_then(|rest| std::str::from_utf8(&rest[..3.min(rest.len())]).ok())
        .and_then(|code| code.parse().ok());
    let responses = answer.windows(9).filter(|w| w == b"HTTP/1.1 ").count();
    (status, closed, responses)
}

fn exchange(addr: SocketAddr, bytes: &[u8]) -> (Option<u16>, bool) {
    exchange_until(addr, bytes, false)
}

/// A normal request to `path` gets 200.
fn serves(addr: SocketAddr, path: &str) -> bool {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    exchange(addr, req.as_bytes()).0 == Some(200)
}

/// Send every case on its own connection; after each, `probe` must show
/// the server still serving.
fn run(addr: SocketAddr, cases: &[Case], probe: impl Fn(SocketAddr) -> bool) {
    let mut failures = Vec::new();
    for c in cases {
        let until_closed = !matches!(c.want, Want::Status(_));
        let (status, closed, responses) = exchange_counting(addr, &c.bytes, until_closed);
        let ok = match c.want {
            Want::Status(code) => status == Some(code),
            Want::Closed => closed,
            // Exactly one answer: nothing after it on the connection was read.
            Want::StatusThenClosed(code) => status == Some(code) && closed && responses == 1,
        };
        if !ok {
            failures.push(format!(
                "{}: wanted {:?}, got status {status:?}, closed {closed}",
                c.attack, c.want
            ));
        }
        assert!(probe(addr), "server stopped serving after {}", c.attack);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes()
}

fn post(path: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn with_headers(path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n").into_bytes()
}

/// One HTTP/2 frame: 24-bit length, type, flags, stream id, payload.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    v.extend(stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn deep_json(depth: usize) -> Vec<u8> {
    let mut v = "[".repeat(depth).into_bytes();
    v.extend("]".repeat(depth).bytes());
    v
}

fn http1_cases_for_any_server(path: &str) -> Vec<Case> {
    use Want::*;
    let many_headers: String = (0..200)
        .map(|i| format!("X-Flood-{i}: {}\r\n", "v".repeat(50)))
        .collect();
    vec![
        case("request_line_garbage", "GARBAGE\r\n\r\n", Status(400)),
        case("request_line_without_target", "GET\r\n\r\n", Status(400)),
        case("request_line_unknown_http_version", format!("GET {path} HTTP/9.9\r\nHost: x\r\n\r\n"), Status(400)),
        case("request_line_nul_byte", format!("GET {path}\0 HTTP/1.1\r\nHost: x\r\n\r\n"), Status(400)),
        case("method_with_invalid_characters", format!("G@T {path} HTTP/1.1\r\nHost: x\r\n\r\n"), Status(400)),
        case("header_flood_200_headers", with_headers(path, &many_headers), Status(431)),
        case("header_value_of_500_kib", with_headers(path, &format!("X-Big: {}\r\n", "b".repeat(500 * 1024))), Status(431)),
        case("header_name_with_space", with_headers(path, "Bad Header: x\r\n"), Status(400)),
        case("header_obsolete_line_folding", with_headers(path, "X-Fold: a\r\n b\r\n"), Status(400)),
        case("header_without_colon", with_headers(path, "NoColonHere\r\n"), Status(400)),
        // RFC 9112 §6.3: Transfer-Encoding wins, and the connection closes after
        // the answer, so the smuggled request behind it is never read.
        case("smuggling_content_length_and_chunked", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", StatusThenClosed(404)),
        case("smuggling_two_different_content_lengths", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", Status(400)),
        case("content_length_negative", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", Status(400)),
        case("content_length_with_plus_sign", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", Status(400)),
        case("content_length_overflowing_u64", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", Status(400)),
        case("chunk_size_not_hex", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", Closed),
        case("chunk_size_overflowing", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\nx\r\n0\r\n\r\n", Closed),
        case("transfer_encoding_not_chunked_last", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", Status(400)),
        case("body_declared_over_4_mib", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4194305\r\n\r\nabc", Status(413)),
        // Past the engine's 8 KiB request-target limit: its own 414; past 64 KiB: hyper's.
        case("path_of_60_kib", get(&format!("/{}", "a".repeat(60 * 1024))), Status(414)),
        case("path_of_100_kib", get(&format!("/{}", "a".repeat(100 * 1024))), Status(414)),
        case("traversal_dot_dot_encoded", get("/%2e%2e/%2e%2e/etc/passwd"), Status(404)),
        case("traversal_encoded_slash", get("/..%2f..%2fetc%2fpasswd"), Status(404)),
        case("absolute_form_target_to_another_host", format!("GET http://evil.example{path} HTTP/1.1\r\nHost: evil.example\r\n\r\n"), Status(200)),
        case("pipelined_requests_then_garbage", format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\nGET {path} HTTP/1.1\r\nHost: x\r\n\r\n\x01\x02garbage\r\n\r\n"), Status(200)),
        case("http2_preface_then_malformed_settings_frame", {
            let mut v = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            v.extend(h2_frame(4, 0, 0, &[0; 7])); // SETTINGS of 7 bytes: FRAME_SIZE_ERROR
            v
        }, Closed),
    ]
}

#[test]
fn router_demo_survives_hostile_http1_requests() {
    use Want::*;
    let s = router_demo();
    let addr = s.addrs[0];
    let mut cases = http1_cases_for_any_server("/hello");
    let json = "application/json";
    cases.extend([
        case("chunked_body_over_4_mib", {
            let mut v = b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for _ in 0..5 {
                v.extend(format!("{:x}\r\n", 1 << 20).bytes());
                v.extend(std::iter::repeat_n(b'a', 1 << 20));
                v.extend(b"\r\n");
            }
            v.extend(b"0\r\n\r\n");
            v
        }, Status(413)),
        case("json_nested_100000_deep", post("/login", json, &deep_json(100_000)), Status(200)),
        case("json_duplicate_keys", post("/login", json, br#"{"username":"a","password":"x","password":"y"}"#), Status(200)),
        case("json_array_instead_of_object", post("/login", json, br#"["a","b"]"#), Status(200)),
        case("json_invalid_utf8", post("/login", json, b"{\"username\":\"\xff\xfe\",\"password\":\"p\"}"), Status(200)),
        case("json_nul_in_value", post("/login", json, br#"{"username":"a\u0000b","password":"p"}"#), Status(200)),
        case("form_invalid_percent_escapes", post("/login", "application/x-www-form-urlencoded", b"username=%zz%&password=%"), Status(200)),
        case("multipart_without_boundary", post("/login", "multipart/form-data", b"--x\r\n\r\n--x--"), Status(200)),
        case("multipart_boundary_of_10_kib", post("/login", &format!("multipart/form-data; boundary={}", "b".repeat(10 * 1024)), b"--b\r\n"), Status(200)),
        case("path_param_nul_escape", get("/book/%00"), Status(200)),
        case("path_param_invalid_utf8_escape", get("/book/%ff%fe"), Status(200)),
        case("query_crlf_injection", get("/user?name=a%0d%0aSet-Cookie:%20x=1"), Status(200)),
        case("token_header_empty_on_index", with_headers("/index", "token: \r\n"), Status(403)),
    ]);
    assert!(cases.len() >= 35, "{}", cases.len());
    run(addr, &cases, |a| serves(a, "/hello"));
}

/// An HS256 token over `payload` signed with `secret`.
fn forged(header: &str, payload: &str, secret: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let head = format!("{}.{}", b64.encode(header), b64.encode(payload));
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
    mac.update(head.as_bytes());
    format!("{head}.{}", b64.encode(mac.finalize().into_bytes()))
}

#[test]
fn token_auth_survives_hostile_requests_and_forged_tokens() {
    use Want::*;
    let s = token_auth();
    let addr = s.addrs[0];
    let json = "application/json";
    let payload =
        r#"{"user_id":1,"role":"admin","type":"access","iat":1,"exp":99999999999,"jti":"x"}"#;
    let bearer = |token: &str| {
        with_headers(
            "/api/admin/users",
            &format!("Authorization: Bearer {token}\r\n"),
        )
    };
    let mut cases = vec![
        case(
            "jwt_alg_none",
            bearer(&format!(
                "{}.",
                forged(r#"{"alg":"none","typ":"JWT"}"#, payload, b"")
                    .rsplit_once('.')
                    .unwrap()
                    .0
            )),
            Status(401),
        ),
        case(
            "jwt_alg_hs512_header",
            bearer(&forged(r#"{"alg":"HS512","typ":"JWT"}"#, payload, b"guess")),
            Status(401),
        ),
        case(
            "jwt_signed_with_a_guessed_secret",
            bearer(&forged(
                r#"{"alg":"HS256","typ":"JWT"}"#,
                payload,
                b"secret",
            )),
            Status(401),
        ),
        case(
            "jwt_empty_signature",
            bearer(&format!(
                "{}.",
                forged(r#"{"alg":"HS256"}"#, payload, b"")
                    .rsplit_once('.')
                    .unwrap()
                    .0
            )),
            Status(401),
        ),
        case("jwt_four_segments", bearer("a.b.c.d"), Status(401)),
        case("jwt_not_base64", bearer("!!!.???.***"), Status(401)),
        case("jwt_of_60_kib", bearer(&"A".repeat(60 * 1024)), Status(401)),
        case(
            "authorization_lowercase_bearer",
            with_headers("/api/user/profile", "Authorization: bearer abc\r\n"),
            Status(401),
        ),
        case(
            "authorization_twice",
            with_headers(
                "/api/user/profile",
                "Authorization: Bearer a\r\nAuthorization: Bearer b\r\n",
            ),
            Status(401),
        ),
        case(
            "login_body_over_the_64_kib_limit",
            post("/login", json, &vec![b' '; 70 * 1024]),
            Status(413),
        ),
        case(
            "login_json_nested_30000_deep",
            post("/login", json, &deep_json(30_000)),
            Status(400),
        ),
        case(
            "login_json_array",
            post("/login", json, br#"["u","p"]"#),
            Status(400),
        ),
        case(
            "login_json_duplicate_password",
            post(
                "/login",
                json,
                br#"{"username":"u","password":"a","password":"b"}"#,
            ),
            Status(400),
        ),
        case(
            "login_invalid_utf8",
            post(
                "/login",
                json,
                b"{\"username\":\"\xff\",\"password\":\"p\"}",
            ),
            Status(400),
        ),
        case(
            "register_nul_in_username",
            post(
                "/auth/register",
                json,
                br#"{"username":"a\u0000b","password":"password1"}"#,
            ),
            Status(400),
        ),
        case(
            "register_username_sql_metacharacters",
            post(
                "/auth/register",
                json,
                br#"{"username":"x'); DROP TABLE users;--","password":"password1"}"#,
            ),
            Status(400),
        ),
        case(
            "refresh_with_garbage_token",
            post("/auth/refresh", json, br#"{"refresh_token":"\u0000"}"#),
            Status(401),
        ),
        case(
            "oauth_callback_unknown_provider_traversal",
            get("/auth/oauth/..%2f..%2fetc/callback?code=x&state=y"),
            Status(404),
        ),
    ];
    cases.extend(
        http1_cases_for_any_server("/auth/oauth/none/login")
            .into_iter()
            .filter(|c| c.want != Status(200)),
    );
    // Still serving: a login for an unknown user is a well-formed 401 (or
    // 429 once the per-IP login limit is reached; no bcrypt work then).
    let login = post(
        "/login",
        json,
        br#"{"username":"nobody","password":"password1"}"#,
    );
    run(addr, &cases, |a| {
        matches!(exchange(a, &login).0, Some(401 | 429))
    });
}

/// One gRPC call over the h2 crate with `body` as the request DATA (the
/// 5-byte prefix included, lies and all): the grpc-status, from the headers
/// (Trailers-Only) or the trailers.
async fn grpc_status(addr: SocketAddr, path: &str, body: Vec<u8>) -> Option<String> {
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    let (client, conn) = h2::client::handshake(tcp).await.ok()?;
    tokio::spawn(conn);
    let mut client = client.ready().await.ok()?;
    let req = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .ok()?;
    let (response, mut send) = client.send_request(req, false).ok()?;
    // A call the server refuses from its headers (an unknown method) is
    // answered, and its stream reset, without waiting for the body: the
    // answer may come before this send, which then fails. The answer is
    // what is checked.
    let _ = send.send_data(bytes::Bytes::from(body), true);
    let response = tokio::time::timeout(Duration::from_secs(5), response)
        .await
        .ok()?
        .ok()?;
    let (parts, mut body) = response.into_parts();
    if let Some(s) = parts.headers.get("grpc-status") {
        return Some(s.to_str().ok()?.to_string());
    }
    while let Some(chunk) = body.data().await {
        let chunk = chunk.ok()?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = body.trailers().await.ok()??;
    Some(trailers.get("grpc-status")?.to_str().ok()?.to_string())
}

fn grpc_frame(declared: u32, message: &[u8]) -> Vec<u8> {
    let mut v = vec![0];
    v.extend(declared.to_be_bytes());
    v.extend_from_slice(message);
    v
}

#[test]
fn greeter_survives_hostile_http_and_grpc_requests() {
    use Want::*;
    let s = greeter();
    let (http, grpc) = (s.addrs[0], s.addrs[1]);
    let json = "application/json";
    let mut cases = vec![
        case(
            "register_json_array",
            post("/v1/users", json, br#"["ann","pw"]"#),
            Status(400),
        ),
        case(
            "register_json_duplicate_keys",
            post(
                "/v1/users",
                json,
                br#"{"username":"a","password":"b","password":"c"}"#,
            ),
            Status(400),
        ),
        case(
            "register_json_nested_100000_deep",
            post("/v1/users", json, &deep_json(100_000)),
            Status(400),
        ),
        case(
            "register_invalid_utf8",
            post(
                "/v1/users",
                json,
                b"{\"username\":\"\xff\",\"password\":\"p\"}",
            ),
            Status(400),
        ),
        case("hello_name_nul_escape", get("/helloworld/%00"), Status(400)),
        // A protobuf string must be UTF-8: the route derived from the proto
        // refuses the name with a 400 (the hand-written route greeted "%ff%fe").
        case(
            "hello_name_invalid_utf8_escape",
            get("/helloworld/%ff%fe"),
            Status(400),
        ),
        case(
            "hello_traversal_encoded_slash",
            get("/helloworld/..%2f..%2fetc%2fpasswd"),
            Status(200),
        ),
    ];
    cases.extend(http1_cases_for_any_server("/helloworld/probe"));
    run(http, &cases, |a| serves(a, "/helloworld/probe"));

    const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";
    let hello = [0x0a, 0x03, b'a', b'n', b'n']; // HelloRequest{name:"ann"}
    let grpc_cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        (
            "grpc_prefix_declares_more_than_sent",
            SAY_HELLO,
            grpc_frame(100, &hello),
            "13",
        ),
        (
            "grpc_prefix_0xffffffff",
            SAY_HELLO,
            grpc_frame(u32::MAX, &hello),
            "8",
        ),
        (
            "grpc_prefix_declares_less_than_sent",
            SAY_HELLO,
            grpc_frame(2, &hello),
            "13",
        ),
        ("grpc_truncated_prefix", SAY_HELLO, vec![0, 0, 0], "13"),
        (
            "grpc_compressed_flag_without_encoding",
            SAY_HELLO,
            {
                let mut f = grpc_frame(5, &hello);
                f[0] = 1;
                f
            },
            "13",
        ),
        (
            "grpc_garbage_protobuf",
            SAY_HELLO,
            grpc_frame(4, &[0xff, 0xff, 0xff, 0xff]),
            "13",
        ),
        (
            "grpc_unknown_method",
            "/helloworld.v1.Greeter/Nope",
            grpc_frame(5, &hello),
            "12",
        ),
        (
            "grpc_path_traversal",
            "/../../helloworld.v1.Greeter/SayHello",
            grpc_frame(5, &hello),
            "12",
        ),
        (
            "grpc_two_messages_in_a_unary_call",
            SAY_HELLO,
            [grpc_frame(5, &hello), grpc_frame(5, &hello)].concat(),
            "12",
        ),
        (
            "grpc_name_with_nul_and_invalid_utf8",
            SAY_HELLO,
            grpc_frame(5, &[0x0a, 0x03, 0, 0xff, 0xfe]),
            "13",
        ),
    ];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut failures = Vec::new();
    for (attack, path, body, want) in grpc_cases {
        let got = rt.block_on(grpc_status(grpc, path, body));
        if got.as_deref() != Some(want) {
            failures.push(format!("{attack}: wanted grpc-status {want}, got {got:?}"));
        }
        let ok = rt.block_on(grpc_status(grpc, SAY_HELLO, grpc_frame(5, &hello)));
        assert_eq!(
            ok.as_deref(),
            Some("0"),
            "gRPC stopped serving after {attack}"
        );
    }
    // HTTP/1.1 on the gRPC port (HTTP/2 only): refused, port still serves.
    let (status, _) = exchange(grpc, &get("/helloworld/x"));
    assert!(
        status.is_none_or(|s| s >= 400),
        "HTTP/1.1 on the gRPC port: {status:?}"
    );
    let ok = rt.block_on(grpc_status(grpc, SAY_HELLO, grpc_frame(5, &hello)));
    assert_eq!(
        ok.as_deref(),
        Some("0"),
        "gRPC stopped serving after http1_on_grpc_port"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An h2c connection after the preface and an empty SETTINGS frame.
fn h2c(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend(h2_frame(4, 0, 0, &[]));
    s.write_all(&hello).unwrap();
    s
}

/// A HEADERS block for `GET path` in HPACK literals (no indexing, no Huffman).
fn hpack_get(path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "x"),
    ] {
        block.push(0x00);
        block.push(name.len() as u8);
        block.extend(name.bytes());
        block.push(value.len() as u8);
        block.extend(value.bytes());
    }
    block
}

/// Read frames until the server closes the connection or sends GOAWAY;
/// true if it did within a few seconds.
fn closes_or_goes_away(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    while Instant::now() < deadline {
        match s.read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => {}
        }
        // Walk the frames read so far looking for a GOAWAY (type 7).
        let mut at = 0;
        while buf.len() >= at + 9 {
            let len = (buf[at] as usize) << 16 | (buf[at + 1] as usize) << 8 | buf[at + 2] as usize;
            if buf[at + 3] == 7 {
                return true;
            }
            at += 9 + len;
        }
    }
    false
}

/// An h2c GET on a new connection (through the h2 crate) answers 200.
fn h2_serves(addr: SocketAddr, path: &str) -> bool {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
            return false;
        };
        let Ok((client, conn)) = h2::client::handshake(tcp).await else {
            return false;
        };
        tokio::spawn(conn);
        let Ok(mut client) = client.ready().await else {
            return false;
        };
        let req = http::Request::get(format!("http://{addr}{path}"))
            .body(())
            .unwrap();
        let Ok((response, _)) = client.send_request(req, true) else {
            return false;
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(5), response).await,
            Ok(Ok(r)) if r.status() == 200
        )
    })
}

#[test]
fn router_demo_survives_http2_floods_at_frame_level() {
    let s = router_demo();
    let addr = s.addrs[0];
    type Flood = Box<dyn Fn(&mut TcpStream)>;
    let floods: Vec<(&str, Flood)> = vec![
        (
            "continuation_flood",
            Box::new(|s: &mut TcpStream| {
                // HEADERS without END_HEADERS, then CONTINUATION frames forever.
                let _ = s.write_all(&h2_frame(1, 0x1, 1, &hpack_get("/hello")[..10]));
                let filler = [0x00, 0x01, b'x', 0x7f, 0x00];
                let mut frames = Vec::new();
                for _ in 0..2_000 {
                    frames.extend(h2_frame(9, 0, 1, &filler.repeat(200)));
                }
                let _ = s.write_all(&frames);
            }),
        ),
        (
            "settings_flood",
            Box::new(|s: &mut TcpStream| {
                let frames: Vec<u8> = (0..20_000)
                    .flat_map(|_| h2_frame(4, 0, 0, &[0, 3, 0, 0, 0, 100]))
                    .collect();
                let _ = s.write_all(&frames);
            }),
        ),
        (
            "ping_flood",
            Box::new(|s: &mut TcpStream| {
                let frames: Vec<u8> = (0..20_000)
                    .flat_map(|_| h2_frame(6, 0, 0, &[7; 8]))
                    .collect();
                let _ = s.write_all(&frames);
            }),
        ),
        (
            "rapid_reset",
            Box::new(|s: &mut TcpStream| {
                // Open a stream and reset it at once, thousands of times.
                let mut frames = Vec::new();
                for i in 0..5_000u32 {
                    let stream = 1 + 2 * i;
                    frames.extend(h2_frame(1, 0x4, stream, &hpack_get("/hello")));
                    frames.extend(h2_frame(3, 0, stream, &8u32.to_be_bytes()));
                }
                let _ = s.write_all(&frames);
            }),
        ),
        (
            "window_update_overflow",
            Box::new(|s: &mut TcpStream| {
                let inc = 0x7fff_ffffu32.to_be_bytes();
                let _ = s.write_all(&[h2_frame(8, 0, 0, &inc), h2_frame(8, 0, 0, &inc)].concat());
            }),
        ),
        (
            "data_on_an_idle_stream",
            Box::new(|s: &mut TcpStream| {
                let _ = s.write_all(&h2_frame(0, 0x1, 3, b"hello"));
            }),
        ),
        (
            "headers_on_stream_zero",
            Box::new(|s: &mut TcpStream| {
                let _ = s.write_all(&h2_frame(1, 0x5, 0, &hpack_get("/hello")));
            }),
        ),
    ];
    for (attack, send) in &floods {
        let mut conn = h2c(addr);
        send(&mut conn);
        // Floods that break the protocol end in GOAWAY or a close; the
        // others (SETTINGS, PING) may be answered. Either way: bounded.
        let closed = closes_or_goes_away(conn);
        if matches!(
            *attack,
            "continuation_flood"
                | "window_update_overflow"
                | "data_on_an_idle_stream"
                | "headers_on_stream_zero"
        ) {
            assert!(
                closed,
                "{attack}: the server neither closed nor sent GOAWAY"
            );
        }
        assert!(
            h2_serves(addr, "/hello"),
            "h2c stopped serving after {attack}"
        );
        assert!(
            serves(addr, "/hello"),
            "HTTP/1.1 stopped serving after {attack}"
        );
    }
}
