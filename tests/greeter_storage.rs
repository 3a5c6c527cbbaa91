//! What the greeter stores stays bounded: `UserList` / `GET /v1/users` are
//! paginated (AIP-158: `page_size` up to 1,000, `page_token`), SayHello
//! names are 1–64 bytes and only the newest 1,000 greetings are kept, so
//! 10,000 maximal calls leave a small database. And what is answered is
//! what is stored: a write told DEADLINE_EXCEEDED was never stored.

mod support;

use bytes::Bytes;
use handwire::protocol::grpc::Frame;
use handwire::services::greeter::api::{HelloRequest, UserListRequest, UserListResponse};
use http::{Method, StatusCode};
use serde_json::Value;
use support::greeter::{call, insert_users, start};

fn names(page: &Value) -> Vec<String> {
    page["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap().to_owned())
        .collect()
}

fn token(page: &Value) -> String {
    let t = page
        .get("next_page_token")
        .or_else(|| page.get("nextPageToken"));
    t.and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// A token has one spelling: with no zero digit, `04` is another position
/// than `4` (id 5), and every other form is outside the token's alphabet.
#[tokio::test]
async fn page_tokens_have_one_spelling_and_other_spellings_are_refused() {
    let g = start().await;
    insert_users(&g.db, (0..8).map(|i| format!("user{i:04}")));
    // "4" is id 5 in bijective base 36: the page after user0004.
    let real = call(g.http, Method::GET, "/v1/users?page_token=4", "").await;
    assert_eq!(real.status, StatusCode::OK, "{}", real.text());
    assert_eq!(names(&real.json()), ["user0005", "user0006", "user0007"]);
    // With no zero digit, "04" is not another spelling of "4" but another
    // position (id 41): past every user here, an empty last page.
    let other = call(g.http, Method::GET, "/v1/users?page_token=04", "").await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.text());
    assert!(names(&other.json()).is_empty());
    // Signs, spaces, padding, upper case and the old base64 form are
    // outside the token's alphabet (greeter.proto's pattern).
    for token in ["%2B4", "%204", "4%3D", "E", "djE6NQ"] {
        let path = format!("/v1/users?page_token={token}");
        let reply = call(g.http, Method::GET, &path, "").await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{token}: {}",
            reply.text()
        );
        assert_eq!(
            reply.json()["reason"],
            "PAGE_TOKEN_INVALID_CHARACTERS",
            "{token}"
        );
    }
}

#[tokio::test]
async fn user_list_is_paged_by_page_size_and_page_token_over_http() {
    let g = start().await;
    insert_users(&g.db, (0..250).map(|i| format!("user{i:04}")));
    let first = call(g.http, Method::GET, "/v1/users", "").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text());
    let first = first.json();
    assert_eq!(names(&first).len(), 100, "the default page size");
    assert_eq!(names(&first)[0], "user0000");

    // Following the tokens visits every user once, in order.
    let mut seen = Vec::new();
    let mut next = String::new();
    loop {
        let path = format!("/v1/users?page_size=100&page_token={next}");
        let page = call(g.http, Method::GET, &path, "").await.json();
        seen.extend(names(&page));
        next = token(&page);
        if next.is_empty() {
            break;
        }
    }
    let all: Vec<String> = (0..250).map(|i| format!("user{i:04}")).collect();
    assert_eq!(seen, all);

    // Past the maximum is read as 1,000; all 250 fit in one page.
    let big = call(g.http, Method::GET, "/v1/users?page_size=5000", "")
        .await
        .json();
    assert_eq!(names(&big).len(), 250);
    assert_eq!(token(&big), "");

    for (path, reason) in [
        ("/v1/users?page_size=-1", "PAGE_SIZE_NEGATIVE"),
        (
            "/v1/users?page_token=bm90LWE",
            "PAGE_TOKEN_INVALID_CHARACTERS",
        ),
        ("/v1/users?page_token=0123456789abc", "PAGE_TOKEN_TOO_LONG"),
    ] {
        let reply = call(g.http, Method::GET, path, "").await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            reply.text()
        );
        assert_eq!(reply.json()["reason"], reason, "{path}");
    }
}

#[tokio::test]
async fn an_empty_user_list_request_is_the_first_page_over_grpc() {
    let g = start().await;
    insert_users(&g.db, (0..1500).map(|i| format!("user{i:04}")));
    let mut grpc = support::grpc::client(g.grpc).await;
    let mut page_token = String::new();
    let mut sizes = Vec::new();
    loop {
        let req = UserListRequest {
            page_size: if sizes.is_empty() { 0 } else { 1000 },
            page_token: page_token.clone(),
        };
        let reply: UserListResponse =
            support::grpc::call_on(&mut grpc, "/helloworld.v1.Greeter/UserList", req)
                .await
                .unwrap();
        sizes.push(reply.users.len());
        page_token = reply.next_page_token;
        if page_token.is_empty() {
            break;
        }
    }
    assert_eq!(sizes, [100, 1000, 400]);
}

/// 10,000 SayHello calls with 64-byte names (the most a name may hold)
/// leave the newest 1,000 greetings and a database file under 1 MiB (the
/// WAL beside it is SQLite's, recycled at its checkpoint size).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_stays_under_1_mib_after_10000_maximal_say_hello_calls() {
    let g = start().await;
    let tcp = tokio::net::TcpStream::connect(g.grpc).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let mut tasks = Vec::new();
    for worker in 0..20 {
        let client = client.clone();
        let addr = g.grpc;
        tasks.push(tokio::spawn(async move {
            for i in 0..500 {
                let name = format!("{worker:02}-{i:04}-{}", "n".repeat(64 - 8));
                assert_eq!(name.len(), 64);
                let body = Frame::encode_message(&HelloRequest { name });
                let req =
                    http::Request::post(format!("http://{addr}/helloworld.v1.Greeter/SayHello"))
                        .header("content-type", "application/grpc")
                        .header("te", "trailers")
                        .body(())
                        .unwrap();
                let mut client = client.clone().ready().await.unwrap();
                let (response, mut send) = client.send_request(req, false).unwrap();
                send.send_data(Bytes::from(body.to_vec()), true).unwrap();
                let mut response = response.await.unwrap();
                let body = response.body_mut();
                while let Some(chunk) = body.data().await {
                    let chunk = chunk.unwrap();
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                let trailers = body.trailers().await.unwrap().unwrap();
                assert_eq!(trailers["grpc-status"], "0", "{trailers:?}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let conn = rusqlite::Connection::open(&g.db).unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM greetings", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1000, "only the newest 1,000 greetings are kept");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let size = std::fs::metadata(&g.db).unwrap().len();
    println!("database after 10,000 calls: {size} bytes");
    assert!(size < 1 << 20, "{size} bytes");
}

/// One UserRegister on `client` with `grpc-timeout: 1m` (raw h2: a tonic
/// client would give up on its own at 1 ms and never see the answer); the
/// `grpc-status` it ended with.
async fn register_within_1ms(
    mut client: h2::client::SendRequest<Bytes>,
    addr: std::net::SocketAddr,
    username: &str,
) -> String {
    use handwire::services::greeter::api::UserRegisterRequest;
    let req = http::Request::post(format!("http://{addr}/helloworld.v1.Greeter/UserRegister"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", "1m")
        .body(())
        .unwrap();
    client = client.ready().await.unwrap();
    let (response, mut send) = client.send_request(req, false).unwrap();
    let message = UserRegisterRequest {
        username: username.into(),
        password: "pw".into(),
    };
    send.send_data(Frame::encode_message(&message), true)
        .unwrap();
    let response = response.await.unwrap();
    let trailers_only = response.headers().get("grpc-status").cloned();
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.unwrap().len());
    }
    let status = match trailers_only {
        Some(status) => status,
        None => body.trailers().await.unwrap().unwrap()["grpc-status"].clone(),
    };
    status.to_str().unwrap().to_owned()
}

/// UserRegister under a 1 ms `grpc-timeout`, 400 calls at once on 8
/// connections: every DEADLINE_EXCEEDED answer names a user that is not
/// stored, and every OK one a user that is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_answered_deadline_exceeded_is_never_stored_even_at_1_ms_under_load() {
    const OK: &str = "0";
    const DEADLINE_EXCEEDED: &str = "4";
    let g = start().await;
    let mut clients = Vec::new();
    for _ in 0..8 {
        let tcp = tokio::net::TcpStream::connect(g.grpc).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        clients.push(client);
    }
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..400 {
        let client = clients[i % clients.len()].clone();
        let addr = g.grpc;
        calls.spawn(async move {
            let username = format!("late{i:03}");
            let status = register_within_1ms(client, addr, &username).await;
            (username, status)
        });
    }
    let answers = calls.join_all().await;
    let stored: std::collections::HashSet<String> = support::greeter::user_rows(&g.db)
        .into_iter()
        .map(|(_, username, _, _)| username)
        .collect();
    let count = |code| answers.iter().filter(|(_, c)| c == code).count();
    let other: Vec<_> = answers
        .iter()
        .filter(|(_, c)| c != OK && c != DEADLINE_EXCEEDED)
        .take(3)
        .collect();
    assert!(other.is_empty(), "only OK or DEADLINE_EXCEEDED: {other:?}");
    let stored_failures: Vec<&String> = answers
        .iter()
        .filter(|(name, code)| code == DEADLINE_EXCEEDED && stored.contains(name))
        .map(|(name, _)| name)
        .collect();
    let lost: Vec<&String> = answers
        .iter()
        .filter(|(name, code)| code == OK && !stored.contains(name))
        .map(|(name, _)| name)
        .collect();
    let (ok, late) = (count(OK), count(DEADLINE_EXCEEDED));
    assert!(late > 0, "1 ms deadlines under load: some must pass");
    assert!(
        stored_failures.is_empty(),
        "{} of {late} DEADLINE_EXCEEDED answers were stored: {stored_failures:?}",
        stored_failures.len()
    );
    assert!(lost.is_empty(), "answered OK, not stored: {lost:?}");
    assert_eq!(stored.len(), ok, "exactly the OK answers are stored");
    eprintln!("{ok} OK (stored), {late} DEADLINE_EXCEEDED (none stored)");
}
