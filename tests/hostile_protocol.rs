//! The hostile suite, protocol half: what an attacker sends
//! *inside* a well-formed connection — protobuf that lies about its types,
//! gRPC calls with the wrong number of messages or absurd deadlines, JWTs
//! whose header or claims are ambiguous, usernames that only look alike, and
//! a crowd racing for one username. Each case names the rule it proves and
//! checks what was stored, not only what was answered.
//!
//! The servers run in-process on 127.0.0.1:0 (the greeter with a temporary
//! SQLite file, token-auth with a manual clock), so the tests can read the
//! database behind the answer.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use handwire::services::token_auth::routes::TOKEN_INVALID;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::greeter::{call, user_rows};
use support::token_auth::{payload, TEST_SECRET};

const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";
const REGISTER: &str = "/helloworld.v1.Greeter/UserRegister";

// ---- raw gRPC ------------------------------------------------------------

/// A gRPC status as received: code and (percent-decoded) message.
#[derive(Debug)]
struct Answer {
    code: String,
    message: String,
}

/// One gRPC call over the h2 crate: `messages` are the request DATA (each
/// already framed, lies and all; none at all for a call without messages),
/// `headers` extra request headers. The status comes from the response
/// headers (Trailers-Only) or the trailers.
async fn grpc(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(conn);
    let mut client = client.ready().await.expect("h2 ready");
    let mut req = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let empty = body.is_empty();
    let (response, mut send) = client
        .send_request(req.body(()).unwrap(), empty)
        .expect("send request");
    if !empty {
        send.send_data(Bytes::from(body), true).expect("send data");
    }
    let response = tokio::time::timeout(Duration::from_secs(10), response)
        .await
        .expect("an answer within 10 s")
        .expect("a response");
    let (parts, mut body) = response.into_parts();
    let status_of = |map: &http::HeaderMap| {
        map.get("grpc-status").map(|code| Answer {
            code: code.to_str().unwrap().to_string(),
            message: map
                .get("grpc-message")
                .map(|m| percent_decode(m.as_bytes()))
                .unwrap_or_default(),
        })
    };
    if let Some(answer) = status_of(&parts.headers) {
        return answer;
    }
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("response data");
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = body.trailers().await.expect("trailers").expect("trailers");
    status_of(&trailers).expect("grpc-status in the trailers")
}

fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let escaped = raw
            .get(i + 1..i + 3)
            .filter(|_| raw[i] == b'%')
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(raw[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The 5-byte gRPC prefix (uncompressed) and `message`.
fn framed(message: &[u8]) -> Vec<u8> {
    let mut v = vec![0];
    v.extend((message.len() as u32).to_be_bytes());
    v.extend_from_slice(message);
    v
}

/// A length-delimited protobuf field (wire type 2) holding `bytes`.
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![number << 3 | 2, bytes.len() as u8];
    v.extend_from_slice(bytes);
    v
}

fn register_message(username: &[u8], password: &[u8]) -> Vec<u8> {
    [field(1, username), field(2, password)].concat()
}

fn greeting_rows(db: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT COUNT(*) FROM greetings", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn invalid_utf8_in_a_proto3_string_field_is_refused_and_nothing_is_stored() {
    let g = support::greeter::start().await;
    let bad = [b'a', 0xff, 0xfe, b'z'];
    let hello = grpc(g.grpc, SAY_HELLO, &[], framed(&field(1, &bad))).await;
    let register = grpc(
        g.grpc,
        REGISTER,
        &[],
        framed(&register_message(&bad, b"pw")),
    )
    .await;
    let password = grpc(
        g.grpc,
        REGISTER,
        &[],
        framed(&register_message(b"ann", &bad)),
    )
    .await;
    for (what, answer) in [
        ("SayHello", hello),
        ("UserRegister username", register),
        ("UserRegister password", password),
    ] {
        // proto3 strings must be UTF-8: INVALID_ARGUMENT or INTERNAL (as
        // grpc-go answers a message it cannot decode), never OK.
        assert!(
            answer.code == "3" || answer.code == "13",
            "{what}: {answer:?}"
        );
    }
    assert_eq!(greeting_rows(&g.db), 0);
    assert!(user_rows(&g.db).is_empty());
}

#[tokio::test]
async fn a_field_with_the_wrong_wire_type_is_refused_and_nothing_is_stored() {
    let g = support::greeter::start().await;
    // Field 1 (a string) sent as a varint (wire type 0), then as a 32-bit
    // fixed (wire type 5): the decoder must refuse, not guess.
    for message in [vec![0x08, 0x01], vec![0x0d, 1, 2, 3, 4]] {
        for path in [SAY_HELLO, REGISTER] {
            let answer = grpc(g.grpc, path, &[], framed(&message)).await;
            assert_eq!(answer.code, "13", "{path} {message:?}: {answer:?}");
        }
    }
    assert_eq!(greeting_rows(&g.db), 0);
    assert!(user_rows(&g.db).is_empty());
}

#[tokio::test]
async fn a_unary_call_with_two_messages_or_none_is_unimplemented_and_runs_nothing() {
    let g = support::greeter::start().await;
    let one = framed(&register_message(b"ann", b"pw"));
    let two = [one.clone(), framed(&register_message(b"bob", b"pw"))].concat();
    let answer = grpc(g.grpc, REGISTER, &[], two).await;
    assert_eq!(answer.code, "12", "{answer:?}");
    assert!(answer.message.contains("more than one"), "{answer:?}");
    // Zero messages: END_STREAM on the HEADERS frame, no DATA at all.
    for path in [REGISTER, SAY_HELLO] {
        let answer = grpc(g.grpc, path, &[], Vec::new()).await;
        assert_eq!(answer.code, "12", "{path}: {answer:?}");
        assert!(answer.message.contains("no request message"), "{answer:?}");
    }
    assert!(user_rows(&g.db).is_empty());
    assert_eq!(greeting_rows(&g.db), 0);
    // The same connection rules still let one message through.
    assert_eq!(grpc(g.grpc, REGISTER, &[], one).await.code, "0");
}

#[tokio::test]
async fn grpc_timeout_0s_is_deadline_exceeded_huge_is_served_negative_is_malformed() {
    // No server-side limit (timeout 0), so the client's value alone decides.
    let g = support::greeter::start_with("1s", "0").await;
    let hello = |name: &str| framed(&field(1, name.as_bytes()));
    let zero = grpc(g.grpc, SAY_HELLO, &[("grpc-timeout", "0S")], hello("zero")).await;
    assert_eq!(zero.code, "4", "{zero:?}");
    assert_eq!(support::greeter::greetings_for(&g.db, "zero"), 0);
    // 8 digits of hours (~11,400 years) is within the grammar: the deadline
    // must not overflow, and the call is simply served.
    let huge = grpc(
        g.grpc,
        SAY_HELLO,
        &[("grpc-timeout", "99999999H")],
        hello("huge"),
    )
    .await;
    assert_eq!(huge.code, "0", "{huge:?}");
    assert_eq!(support::greeter::greetings_for(&g.db, "huge"), 1);
    for raw in ["-1S", "1.5S", "123456789S", "S", "1s "] {
        let bad = grpc(g.grpc, SAY_HELLO, &[("grpc-timeout", raw)], hello("bad")).await;
        assert_eq!(bad.code, "13", "{raw}: {bad:?}");
        assert!(bad.message.starts_with("malformed grpc-timeout"), "{bad:?}");
    }
    assert_eq!(support::greeter::greetings_for(&g.db, "bad"), 0);
}

// ---- JWT ----------------------------------------------------------------

/// `header` and `claims` signed with the service's own secret: only the
/// content decides, never the signature.
fn signed(header: &str, claims: &str) -> String {
    use hmac::{Hmac, Mac};
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let head = format!("{}.{}", b64.encode(header), b64.encode(claims));
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(TEST_SECRET.as_bytes()).unwrap();
    mac.update(head.as_bytes());
    format!("{head}.{}", b64.encode(mac.finalize().into_bytes()))
}

/// The claims of `token` with `exp` replaced by the raw JSON `exp`.
fn claims_with_exp(token: &str, exp: &str) -> String {
    let mut claims = payload(token);
    claims["exp"] = json!("EXP");
    claims.to_string().replace("\"EXP\"", exp)
}

#[tokio::test]
async fn jwt_header_with_alg_twice_is_invalid_whichever_comes_first() {
    let auth = support::token_auth::start().await;
    let pair = auth.register("ann01", "password1").await;
    let access = pair["access_token"].as_str().unwrap();
    let claims = payload(access).to_string();
    // The honest header, re-signed: accepted (the forgeries below differ
    // from it only in the header).
    let honest = signed(r#"{"alg":"HS256","typ":"JWT"}"#, &claims);
    let ok = auth.get_bearer("/api/user/profile", &honest).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    for header in [
        r#"{"alg":"HS256","alg":"none"}"#,
        r#"{"alg":"none","alg":"HS256"}"#,
        r#"{"alg":"HS256","alg":"HS256"}"#,
    ] {
        let reply = auth
            .get_bearer("/api/user/profile", &signed(header, &claims))
            .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{header}");
        assert_eq!(reply.error(), TOKEN_INVALID, "{header}");
    }
}

#[tokio::test]
async fn jwt_exp_that_is_not_a_non_negative_integer_is_invalid_not_expired_or_eternal() {
    let auth = support::token_auth::start().await;
    let pair = auth.register("ann01", "password1").await;
    let access = pair["access_token"].as_str().unwrap();
    let header = r#"{"alg":"HS256","typ":"JWT"}"#;
    let cases = [
        ("float", "9999999999.5"),
        ("float_integral", "9999999999.0"),
        ("string", "\"9999999999\""),
        ("huge_float", "1e308"),
        ("negative", "-1"),
        ("null", "null"),
        ("u64_overflow", "18446744073709551616"),
    ];
    for (what, exp) in cases {
        let token = signed(header, &claims_with_exp(access, exp));
        let reply = auth.get_bearer("/api/user/profile", &token).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "exp {what}");
        assert_eq!(reply.error(), TOKEN_INVALID, "exp {what}");
    }
    // exp twice in the payload: ambiguous, so invalid as well.
    let twice = claims_with_exp(access, "1, \"exp\": 9999999999");
    let reply = auth
        .get_bearer("/api/user/profile", &signed(header, &twice))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_refresh_token_presented_as_access_token_is_invalid_everywhere() {
    let auth = support::token_auth::start().await;
    auth.create_user(
        "boss01",
        "password1",
        handwire::services::token_auth::user::Role::Admin,
    )
    .await;
    let login = auth.login("boss01", "password1").await;
    assert_eq!(login.status, StatusCode::OK);
    let refresh = login.str("refresh_token");
    assert_eq!(payload(&refresh)["type"], "refresh");
    for path in ["/api/user/profile", "/api/admin/users"] {
        let reply = auth.get_bearer(path, &refresh).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(reply.error(), TOKEN_INVALID, "{path}");
    }
    // Nor is a refresh token made into one by adding a role claim.
    let mut claims = payload(&refresh);
    claims["role"] = json!("admin");
    let forged = signed(r#"{"alg":"HS256","typ":"JWT"}"#, &claims.to_string());
    let reply = auth.get_bearer("/api/admin/users", &forged).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    // And the other way round: an access token cannot refresh.
    let access = login.str("access_token");
    let reply = auth
        .post("/auth/refresh", json!({ "refresh_token": access }))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

// ---- usernames that look alike --------------------------------------------

/// Names an attacker would register to pass for `admin` (or for each other):
/// Unicode case (`İ` is U+0130, which lower-cases to `i̇`), fullwidth forms
/// (NFKC folds them to ASCII), and one word in NFC and in NFD.
const LOOKALIKES: [(&str, &str); 5] = [
    ("dotted_capital_i", "ADMİN"),
    ("fullwidth", "ａｄｍｉｎ"),
    ("nfc", "caf\u{e9}"),
    ("nfd", "cafe\u{301}"),
    ("cyrillic_a", "\u{430}dmin"),
];

#[tokio::test]
async fn token_auth_usernames_are_ascii_so_lookalikes_are_400_and_case_variants_409() {
    let auth = support::token_auth::start_with(|s, _| {
        s.register_limits.attempts = 1_000;
    })
    .await;
    auth.register("admin", "password1").await;
    for (what, name) in LOOKALIKES {
        let reply = auth
            .post(
                "/auth/register",
                json!({ "username": name, "password": "password1" }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{what}");
        assert!(
            reply.error().contains("username may contain only"),
            "{what}"
        );
    }
    for variant in ["ADMIN", "Admin", "aDmIn"] {
        let reply = auth
            .post(
                "/auth/register",
                json!({ "username": variant, "password": "password1" }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CONFLICT, "{variant}");
    }
    assert_eq!(auth.db.count("SELECT count(*) FROM users"), 1);
}

#[tokio::test]
async fn greeter_usernames_are_ascii_so_lookalikes_are_invalid_and_case_variants_taken() {
    let g = support::greeter::start().await;
    let register_http = |name: &str| {
        let body = json!({ "username": name, "password": "pw" }).to_string();
        async move { call(g.http, Method::POST, "/v1/users", &body).await }
    };
    assert_eq!(register_http("admin").await.status, StatusCode::OK);
    for (what, name) in LOOKALIKES {
        let reply = register_http(name).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{what}");
        assert_eq!(
            reply.json()["reason"],
            "USERNAME_INVALID_CHARACTERS",
            "{what}"
        );
        let answer = grpc(
            g.grpc,
            REGISTER,
            &[],
            framed(&register_message(name.as_bytes(), b"pw")),
        )
        .await;
        assert_eq!(answer.code, "3", "{what}: {answer:?}");
    }
    for variant in ["ADMIN", "Admin"] {
        let reply = register_http(variant).await;
        assert_eq!(reply.status, StatusCode::CONFLICT, "{variant}");
        let answer = grpc(
            g.grpc,
            REGISTER,
            &[],
            framed(&register_message(variant.as_bytes(), b"pw")),
        )
        .await;
        assert_eq!(answer.code, "6", "{variant}: {answer:?}");
    }
    let names: Vec<String> = user_rows(&g.db).into_iter().map(|u| u.1).collect();
    assert_eq!(names, ["admin"]);
}

// ---- a crowd racing for one username ----------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_greeter_registrations_of_one_name_store_exactly_one() {
    let g = support::greeter::start_with("10s", "10s").await;
    let (http, grpc_addr) = (g.http, g.grpc);
    let mut tasks = Vec::new();
    for i in 0..200 {
        let password = format!("pw{i}");
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let body = json!({ "username": "race", "password": password }).to_string();
                match call(http, Method::POST, "/v1/users", &body).await.status {
                    StatusCode::OK => "ok",
                    StatusCode::CONFLICT => "taken",
                    _ => "other",
                }
            } else {
                let message = framed(&register_message(b"race", password.as_bytes()));
                match grpc(grpc_addr, REGISTER, &[], message).await.code.as_str() {
                    "0" => "ok",
                    "6" => "taken",
                    _ => "other",
                }
            }
        }));
    }
    let mut counts = std::collections::BTreeMap::new();
    for t in tasks {
        *counts.entry(t.await.unwrap()).or_insert(0) += 1;
    }
    assert_eq!(counts.get("ok"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("taken"), Some(&199), "{counts:?}");
    let rows = user_rows(&g.db);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].1, "race");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_token_auth_registrations_of_one_name_create_exactly_one() {
    let auth = support::token_auth::start_with(|s, _| {
        s.register_limits.attempts = 1_000;
    })
    .await;
    let url = auth.url("/auth/register");
    let mut tasks = Vec::new();
    for i in 0..200 {
        let url = url.clone();
        // Mixed ASCII case: the race is also one between spellings.
        let name = if i % 2 == 0 { "racer" } else { "RACER" };
        let body = json!({ "username": name, "password": format!("password{i}") }).to_string();
        tasks.push(tokio::spawn(async move {
            support::http::Client::new(support::http::Proto::H1)
                .request(
                    Method::POST,
                    &url,
                    &[("content-type", "application/json")],
                    body,
                )
                .await
        }));
    }
    let mut created = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for t in tasks {
        let reply = t.await.unwrap();
        *counts.entry(reply.status.as_u16()).or_insert(0) += 1;
        if reply.status == StatusCode::CREATED {
            created.push(reply.json());
        }
    }
    assert_eq!(counts.get(&201), Some(&1), "{counts:?}");
    assert_eq!(counts.get(&409), Some(&199), "{counts:?}");
    assert_eq!(auth.db.count("SELECT count(*) FROM users"), 1);
    // The one token pair belongs to the one stored user.
    let token = created[0]["access_token"].as_str().unwrap();
    let profile = auth.get_bearer("/api/user/profile", token).await;
    assert_eq!(profile.status, StatusCode::OK);
    let user: Value = profile.json()["user"].clone();
    assert_eq!(user["username"].as_str().unwrap().to_lowercase(), "racer");
}
