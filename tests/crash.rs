//! Crash consistency: concurrent writers against the real `greeter` and
//! `token-auth` binaries on a file database, `kill -9` in the middle of the
//! load, a restart on the same file, and then every write the server
//! acknowledged must be there: greeter registrations and greetings, token-auth
//! registrations and revocations (refresh tokens listed as they rotate). Bounded to a few seconds each.

mod support;

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::bin::spawn_draining as spawn;
use support::greeter::TempDir;
use support::http::{Client, Proto};

/// SIGKILL: no graceful shutdown, no flush, no destructor.
fn kill_9(mut child: Child) {
    child.kill().expect("kill -9");
    child.wait().expect("reap");
}

fn greeter(config: &std::path::Path) -> (Child, SocketAddr) {
    let (child, addrs) = spawn(
        env!("CARGO_BIN_EXE_greeter"),
        &["--config", config.to_str().unwrap()],
        &[],
        2,
    );
    (child, addrs[0])
}

/// A directory holding a greeter config whose database is a file in it:
/// the directory (removed when dropped), the database's path, the config's.
fn greeter_on_a_file(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = TempDir::new(tag);
    let db = dir.0.join("greeter.db");
    let config = dir.0.join("config.yaml");
    std::fs::write(
        &config,
        support::greeter::config_text(db.to_str().unwrap(), "5s", "5s"),
    )
    .unwrap();
    (dir, db, config)
}

/// Every acknowledged write (`acked`) is among those `stored`.
fn assert_none_lost(acked: &[String], stored: &HashSet<String>, what: &str) {
    let lost: Vec<&String> = acked.iter().filter(|n| !stored.contains(*n)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged {what} lost: {lost:?}",
        lost.len(),
        acked.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_greeter_registration_survives_kill_9() {
    let (_dir, _db, config) = greeter_on_a_file("crash-greeter");
    let (child, http) = greeter(&config);

    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for w in 0..8 {
        let acked = Arc::clone(&acked);
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                let name = format!("w{w}-u{i}");
                let body = json!({ "username": name, "password": "pw" }).to_string();
                let reply = tokio::time::timeout(
                    Duration::from_secs(2),
                    Client::new(Proto::H1).try_request(
                        Method::POST,
                        &format!("http://{http}/v1/users"),
                        &[("content-type", "application/json")],
                        body,
                    ),
                )
                .await;
                match reply {
                    Ok(Ok(r)) if r.status == StatusCode::OK => acked.lock().unwrap().push(name),
                    // The server is gone (or never answered): stop writing.
                    _ => break,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    kill_9(child);
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(5), w).await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 20,
        "only {} writes before the kill",
        acked.len()
    );
    println!(
        "greeter: {} registrations acknowledged before kill -9",
        acked.len()
    );

    // Restart on the same file and list through the service itself.
    let (child, http) = greeter(&config);
    // Every page (the list is paginated, at most 1,000 a page).
    let mut stored: HashSet<String> = HashSet::new();
    let mut token = String::new();
    loop {
        let url = format!("http://{http}/v1/users?page_size=1000&page_token={token}");
        let page = Client::new(Proto::H1)
            .request(Method::GET, &url, &[], "")
            .await
            .json();
        stored.extend(
            page["users"]
                .as_array()
                .expect("users")
                .iter()
                .map(|u| u["username"].as_str().unwrap_or_default().to_string()),
        );
        token = page
            .get("next_page_token")
            .or_else(|| page.get("nextPageToken"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        if token.is_empty() {
            break;
        }
    }
    assert_none_lost(&acked, &stored, "registrations");
    kill_9(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_greeting_survives_kill_9() {
    let (_dir, db, config) = greeter_on_a_file("crash-greetings");
    let (child, http) = greeter(&config);

    // 24 writers, enough for batches that store many rows a statement; in
    // all fewer greetings than the newest the greeter keeps
    // (`GREETINGS_KEPT`, 1,000), so retention deletes none of them.
    const WRITERS: usize = 24;
    const PER_WRITER: usize = 40;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let acked = Arc::clone(&acked);
        writers.push(tokio::spawn(async move {
            for i in 0..PER_WRITER {
                let name = format!("w{w}-g{i}");
                let reply = tokio::time::timeout(
                    Duration::from_secs(2),
                    Client::new(Proto::H1).try_request(
                        Method::GET,
                        &format!("http://{http}/helloworld/{name}"),
                        &[],
                        "",
                    ),
                )
                .await;
                match reply {
                    Ok(Ok(r)) if r.status == StatusCode::OK => acked.lock().unwrap().push(name),
                    _ => break,
                }
            }
        }));
    }
    // The kill lands while greetings are being stored, batched.
    let t0 = Instant::now();
    while acked.lock().unwrap().len() < 300 && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    kill_9(child);
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(5), w).await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 300,
        "only {} greetings before the kill",
        acked.len()
    );
    println!(
        "greeter: {} greetings acknowledged before kill -9",
        acked.len()
    );

    // The file as the next process finds it.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn.prepare("SELECT name FROM greetings").unwrap();
    let stored: HashSet<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_none_lost(&acked, &stored, "greetings");
}

const SECRET: &str = "crash-test secret, long enough: 0123456789abcdef";

fn token_auth(db: &std::path::Path) -> (Child, SocketAddr) {
    let (child, addrs) = spawn(
        env!("CARGO_BIN_EXE_token-auth"),
        &[
            "--addr",
            "127.0.0.1:0",
            "--quiet",
            "--db",
            db.to_str().unwrap(),
        ],
        &[("TOKEN_AUTH_SECRET", SECRET)],
        1,
    );
    (child, addrs[0])
}

async fn try_post(
    addr: SocketAddr,
    from: IpAddr,
    path: &str,
    auth: Option<&str>,
    body: Value,
) -> Result<support::http::Reply, String> {
    let bearer = auth.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    Client::new(Proto::H1)
        .from(Some(from))
        .try_request(
            Method::POST,
            &format!("http://{addr}{path}"),
            &headers,
            body.to_string(),
        )
        .await
}

async fn post(
    addr: SocketAddr,
    from: IpAddr,
    path: &str,
    auth: Option<&str>,
    body: Value,
) -> support::http::Reply {
    try_post(addr, from, path, auth, body)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_token_auth_registration_and_revocation_survives_kill_9() {
    let dir = TempDir::new("crash-auth");
    let db = dir.0.join("auth.db");
    let (child, addr) = token_auth(&db);
    let home: IpAddr = "127.0.0.1".parse().unwrap();

    // One user, signed in four times (four refresh families, each login
    // from its own address to stay under the login limit).
    let pair = post(
        addr,
        home,
        "/auth/register",
        None,
        json!({"username": "victim", "password": "password1"}),
    )
    .await;
    assert_eq!(pair.status, StatusCode::CREATED, "{}", pair.text());
    let mut chains = Vec::new();
    for n in 1..=4u8 {
        let from: IpAddr = format!("127.0.9.{n}").parse().unwrap();
        let login = post(
            addr,
            from,
            "/login",
            None,
            json!({"username": "victim", "password": "password1"}),
        )
        .await;
        assert_eq!(login.status, StatusCode::OK, "{}", login.text());
        chains.push(login.str("refresh_token"));
    }

    let revoked = Arc::new(Mutex::new(Vec::new()));
    let registered = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    // Revokers: refresh tokens rotate, so each refresh lists the token it
    // used (a blacklist write) before answering with the next one.
    const STEPS: usize = 150;
    for first in chains {
        let revoked = Arc::clone(&revoked);
        writers.push(tokio::spawn(async move {
            let mut current = first;
            for _ in 0..STEPS {
                let r = tokio::time::timeout(
                    Duration::from_secs(2),
                    try_post(
                        addr,
                        home,
                        "/auth/refresh",
                        None,
                        json!({ "refresh_token": current }),
                    ),
                )
                .await;
                match r {
                    Ok(Ok(r)) if r.status == StatusCode::OK => {
                        let next = r.str("refresh_token");
                        revoked
                            .lock()
                            .unwrap()
                            .push(std::mem::replace(&mut current, next));
                    }
                    _ => break,
                }
                // Paced, so that revocations are still going on when the
                // slow (bcrypt) registrations have been acknowledged.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    // Registrars: bcrypt cost 12 each, from their own loopback addresses
    // (the per-IP registration limit is per address).
    for w in 0..2u8 {
        let registered = Arc::clone(&registered);
        writers.push(tokio::spawn(async move {
            for i in 0..10u8 {
                let from: IpAddr = format!("127.0.{}.{}", 10 + w, 1 + i).parse().unwrap();
                let name = format!("r{w}x{i}");
                let r = tokio::time::timeout(
                    Duration::from_secs(5),
                    try_post(
                        addr,
                        from,
                        "/auth/register",
                        None,
                        json!({"username": name, "password": "password1"}),
                    ),
                )
                .await;
                match r {
                    Ok(Ok(r)) if r.status == StatusCode::CREATED => {
                        registered.lock().unwrap().push(name)
                    }
                    _ => break,
                }
            }
        }));
    }
    let start = Instant::now();
    // Kill once both kinds of write have been acknowledged, in mid-flow.
    while (revoked.lock().unwrap().len() < 60 || registered.lock().unwrap().len() < 2)
        && start.elapsed() < Duration::from_secs(8)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill_9(child);
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(10), w).await;
    }
    let revoked = revoked.lock().unwrap().clone();
    let registered = registered.lock().unwrap().clone();
    assert!(!revoked.is_empty(), "no revocation before the kill");
    assert!(!registered.is_empty(), "no registration before the kill");
    println!(
        "token-auth: {} revocations and {} registrations acknowledged before kill -9",
        revoked.len(),
        registered.len()
    );
    assert!(
        revoked.len() < 4 * STEPS,
        "the kill came after the load ended"
    );

    // Restart on the same file: every acknowledged revocation still refuses
    // its token, every acknowledged registration is a stored user.
    let (child, addr) = token_auth(&db);
    for token in &revoked {
        let r = Client::new(Proto::H1)
            .request(
                Method::POST,
                &format!("http://{addr}/auth/refresh"),
                &[("content-type", "application/json")],
                json!({ "refresh_token": token }).to_string(),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNAUTHORIZED,
            "an acknowledged refresh (its token listed) was lost"
        );
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    for name in &registered {
        let n: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM users WHERE username = ?1",
                [name],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1, "acknowledged registration of {name} lost");
    }
    kill_9(child);
}
