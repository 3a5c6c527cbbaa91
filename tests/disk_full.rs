//! A full disk, as an attacker (or a busy neighbour) makes one: nothing is
//! acknowledged that is not stored, the answer is 503 with the documented
//! body, and the service takes writes again when space returns, without a
//! restart. Each test mounts a small tmpfs of its own (root only; skipped
//! with a printed reason otherwise, required in CI).

mod support;

use http::{Method, StatusCode};
use serde_json::json;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use support::bin;
use support::disk::SmallDisk;
use support::http::{Client, Proto, Reply};

const AUTH_BIN: &str = env!("CARGO_BIN_EXE_token-auth");
const SECRET: &str = "disk-full test secret, long enough: 0123456789";

/// A client from its own loopback address (registrations are limited per IP).
fn client(n: u8) -> Client {
    Client::new(Proto::H1).from(Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))))
}

async fn register(addr: SocketAddr, from: u8, username: &str) -> Reply {
    let body = json!({ "username": username, "password": "correct horse battery" });
    client(from)
        .request(
            Method::POST,
            &format!("http://{addr}/auth/register"),
            &[("content-type", "application/json")],
            body.to_string(),
        )
        .await
}

async fn with_token(addr: SocketAddr, path: &str, token: &str) -> Reply {
    client(1)
        .request(
            Method::GET,
            &format!("http://{addr}{path}"),
            &[("authorization", &format!("Bearer {token}"))],
            "",
        )
        .await
}

async fn refresh(addr: SocketAddr, refresh_token: &str) -> Reply {
    client(1)
        .request(
            Method::POST,
            &format!("http://{addr}/auth/refresh"),
            &[("content-type", "application/json")],
            json!({ "refresh_token": refresh_token }).to_string(),
        )
        .await
}

fn create_admin(db: &std::path::Path, username: &str) -> (bool, String) {
    let mut child = Command::new(AUTH_BIN)
        .env_remove("TOKEN_AUTH_SECRET")
        .args(["create-admin", "--username", username, "--db"])
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn create-admin");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"admin password 123\n").expect("password");
    drop(stdin);
    let out = child.wait_with_output().expect("create-admin");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The critical case: on a full disk a registration is 503 with no token;
/// every 201 is a stored account; once space returns, an admin created
/// next is reached by none of the earlier answers' tokens; and the service
/// registers again without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_on_a_full_disk_is_503_without_tokens_and_no_token_reaches_a_later_admin() {
    let Some(disk) = SmallDisk::mount_or_skip("auth-disk-full", "2m") else {
        return;
    };
    let db = disk.path("auth.db");
    let db_arg = db.to_str().expect("utf-8 path");
    let (mut child, addrs) = bin::spawn_draining(
        AUTH_BIN,
        &["--addr", "127.0.0.1:0", "--quiet", "--db", db_arg],
        &[("TOKEN_AUTH_SECRET", SECRET)],
        1,
    );
    let addr = addrs[0];
    let first = register(addr, 1, "alice").await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());

    disk.fill();
    // Registrations until the disk refuses (spread over client addresses so
    // the per-IP registration limit never answers first).
    let mut created = Vec::new();
    let mut refused = 0;
    for i in 0..40u8 {
        let name = format!("mallory{i}");
        let reply = register(addr, 10 + i / 5, &name).await;
        match reply.status {
            StatusCode::CREATED => created.push((name, reply.json())),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(reply.json(), json!({ "error": "store unavailable" }));
                assert!(reply.header("set-cookie").is_none());
                refused += 1;
                if refused == 3 {
                    break;
                }
            }
            other => panic!("{name}: unexpected {other}: {}", reply.text()),
        }
    }
    assert!(refused > 0, "the full disk never refused a registration");

    disk.free();
    let (ok, err) = create_admin(&db, "root");
    assert!(ok, "create-admin after space returned: {err}");

    // Every earlier 201 is a stored account, and its tokens name that
    // account and no other: never the admin.
    for (name, pair) in &created {
        let profile = with_token(
            addr,
            "/api/user/profile",
            pair["access_token"].as_str().unwrap(),
        )
        .await;
        assert_eq!(profile.status, StatusCode::OK, "{name}: {}", profile.text());
        assert_eq!(profile.json()["user"]["username"], name.as_str());
        let renewed = refresh(addr, pair["refresh_token"].as_str().unwrap()).await;
        assert_eq!(renewed.status, StatusCode::OK, "{name}: {}", renewed.text());
        let access = renewed.str("access_token");
        let profile = with_token(addr, "/api/user/profile", &access).await;
        assert_eq!(profile.json()["user"]["username"], name.as_str());
        assert_eq!(profile.json()["user"]["role"], "user");
        let admin = with_token(addr, "/api/admin/users", &access).await;
        assert_eq!(admin.status, StatusCode::FORBIDDEN, "{name}");
    }

    // Writes work again, without a restart.
    let again = register(addr, 60, "bob").await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    child.kill().ok();
    child.wait().ok();
}

const GREETER_BIN: &str = env!("CARGO_BIN_EXE_greeter");

/// The greeter on a full disk: writes are 503 STORE_UNAVAILABLE (never a
/// success that was not stored, never a crash), and once space returns it
/// writes again without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greeter_writes_on_a_full_disk_are_503_and_resume_when_space_returns() {
    let Some(disk) = SmallDisk::mount_or_skip("greeter-disk-full", "2m") else {
        return;
    };
    let db = disk.path("greeter.db");
    let config = disk.path("config.yaml");
    std::fs::write(
        &config,
        support::greeter::config_text(db.to_str().unwrap(), "5s", "5s"),
    )
    .unwrap();
    let (mut child, addrs) =
        bin::spawn_draining(GREETER_BIN, &["--config", config.to_str().unwrap()], &[], 2);
    let http = addrs[0];
    let register = |name: String| async move {
        client(1)
            .request(
                Method::POST,
                &format!("http://{http}/v1/users"),
                &[("content-type", "application/json")],
                json!({"username": name, "password": "pw"}).to_string(),
            )
            .await
    };
    assert_eq!(register("first".into()).await.status, StatusCode::OK);

    disk.fill();
    let mut stored = vec!["first".to_string()];
    let mut refused = 0;
    for i in 0..200 {
        let name = format!("user{i}");
        let reply = register(name.clone()).await;
        match reply.status {
            StatusCode::OK => stored.push(name),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(
                    reply.json()["reason"],
                    "STORE_UNAVAILABLE",
                    "{}",
                    reply.text()
                );
                refused += 1;
                if refused == 3 {
                    break;
                }
            }
            other => panic!("{name}: unexpected {other}: {}", reply.text()),
        }
    }
    assert!(refused > 0, "the full disk never refused a write");

    disk.free();
    let again = register("after".into()).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text());
    stored.push("after".into());
    // Every acknowledged registration is stored, and nothing else.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT username FROM users ORDER BY id")
        .unwrap();
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(names, stored);
    child.kill().ok();
    child.wait().ok();
}
