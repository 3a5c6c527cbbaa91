//! The `token-auth` binary itself: start-up errors name what to fix,
//! `create-admin` reads the password from stdin, and the binary hashes with
//! bcrypt cost 12 (read back from the database as the `$2b$12$` prefix).

mod support;

use http::StatusCode;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use support::http::{Client, Proto};
use support::token_auth::TempDb;

const BIN: &str = env!("CARGO_BIN_EXE_token-auth");
const SECRET: &str = "binary-test secret, long enough: 0123456789";

fn command() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("TOKEN_AUTH_SECRET")
        .env_remove("TOKEN_AUTH_ENC_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Run to completion; (success, stderr).
fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("run token-auth");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn create_admin(db: &TempDb, username: &str, password_line: &str) -> (bool, String) {
    let mut child = command()
        .args(["create-admin", "--username", username, "--db"])
        .arg(&db.path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn create-admin");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(password_line.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn hash_of(db: &TempDb, username: &str) -> String {
    db.connect()
        .query_row(
            "SELECT password_hash FROM users WHERE username = ?1",
            [username],
            |r| r.get(0),
        )
        .unwrap()
}

fn config_file(db: &TempDb, yaml: &str) -> std::path::PathBuf {
    let path = db.path.with_extension("yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

const PROVIDERS: &str = "\
oauth:
  github:
    appid: app
    secret: s
    auth_url: http://127.0.0.1:9/authorize
    token_url: http://127.0.0.1:9/token
    userinfo_url: http://127.0.0.1:9/userinfo
    redirect_uri: http://127.0.0.1:8000/auth/oauth/github/callback
    scope: profile
";

#[test]
fn missing_or_short_secret_is_a_startup_error_naming_the_variable() {
    let db = TempDb::new("bin-secret");
    let (ok, err) = run(command()
        .args(["--addr", "127.0.0.1:0", "--db"])
        .arg(&db.path));
    assert!(!ok);
    assert!(err.contains("TOKEN_AUTH_SECRET is not set"), "{err}");
    let (ok, err) = run(command()
        .env("TOKEN_AUTH_SECRET", "31 bytes ......................")
        .args(["--addr", "127.0.0.1:0", "--db"])
        .arg(&db.path));
    assert!(!ok);
    assert!(err.contains("TOKEN_AUTH_SECRET"), "{err}");
    assert!(err.contains("at least 32"), "{err}");
}

#[test]
fn providers_without_enc_key_and_bad_configs_are_startup_errors_naming_the_key() {
    let db = TempDb::new("bin-config");
    let good = config_file(&db, PROVIDERS);
    let (ok, err) = run(command()
        .env("TOKEN_AUTH_SECRET", SECRET)
        .args(["--addr", "127.0.0.1:0", "--config"])
        .arg(&good)
        .arg("--db")
        .arg(&db.path));
    assert!(!ok);
    assert!(err.contains("TOKEN_AUTH_ENC_KEY is required"), "{err}");

    let bad = config_file(
        &db,
        &PROVIDERS.replace("http://127.0.0.1:9/token", "ftp://x/token"),
    );
    let (ok, err) = run(command()
        .env("TOKEN_AUTH_SECRET", SECRET)
        .arg("--config")
        .arg(&bad)
        .arg("--db")
        .arg(&db.path));
    assert!(!ok);
    assert!(err.contains("oauth.github.token_url"), "{err}");

    let missing_ca = db.path.with_extension("no-such-ca.pem");
    let bad = config_file(
        &db,
        &format!("{PROVIDERS}    ca_file: {}\n", missing_ca.display()),
    );
    let (ok, err) = run(command()
        .env("TOKEN_AUTH_SECRET", SECRET)
        .arg("--config")
        .arg(&bad)
        .arg("--db")
        .arg(&db.path));
    assert!(!ok);
    assert!(
        err.contains("oauth.github.ca_file: cannot read") && err.contains("no-such-ca.pem"),
        "{err}"
    );
    let _ = std::fs::remove_file(good);

    let (ok, err) = run(command()
        .env("TOKEN_AUTH_SECRET", SECRET)
        .args(["--adr", "x"]));
    assert!(!ok);
    assert!(err.contains("--adr"), "{err}");
}

/// Without the `cluster` feature a shared server is a start-up error that
/// names the flag and says how to build with it.
#[cfg(not(feature = "cluster"))]
#[test]
fn postgres_or_redis_in_a_default_build_is_a_startup_error_naming_the_flag() {
    for (flag, value) in [
        ("--db", "postgres://u:p@127.0.0.1:5432/db"),
        ("--redis", "redis://127.0.0.1:6379"),
    ] {
        let (ok, err) = run(command().env("TOKEN_AUTH_SECRET", SECRET).args([
            "--addr",
            "127.0.0.1:0",
            flag,
            value,
        ]));
        assert!(!ok, "{flag} {value} started");
        assert!(
            err.contains(&format!(
                "{flag}: this binary was built without PostgreSQL/Redis"
            )) && err.contains("--features cluster"),
            "{err}"
        );
    }
}

#[test]
fn create_admin_reads_the_password_from_stdin_and_hashes_with_cost_12() {
    let db = TempDb::new("bin-admin");
    let (ok, err) = create_admin(&db, "root", "correct horse battery\n");
    assert!(ok, "{err}");
    let hash = hash_of(&db, "root");
    assert!(hash.starts_with("$2b$12$"), "{hash}");
    assert!(bcrypt::verify("correct horse battery", &hash).unwrap());
    let role: String = db
        .connect()
        .query_row("SELECT role FROM users WHERE username = 'root'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(role, "admin");

    let (ok, err) = create_admin(&db, "root", "another password\n");
    assert!(!ok);
    assert!(err.contains("username exists"), "{err}");
    let (ok, err) = create_admin(&db, "root2", "short\n");
    assert!(!ok);
    assert!(err.contains("at least 8"), "{err}");
    let (ok, err) = run(command().arg("create-admin"));
    assert!(!ok);
    assert!(err.contains("--username"), "{err}");
}

/// The served binary, killed on drop.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn served_binary_registers_with_cost_12_and_serves_the_admin_route() {
    let db = TempDb::new("bin-serve");
    let (ok, err) = create_admin(&db, "root", "rootpassword\n");
    assert!(ok, "{err}");
    let mut child = command()
        .env("TOKEN_AUTH_SECRET", SECRET)
        .args(["--addr", "127.0.0.1:0", "--db"])
        .arg(&db.path)
        .spawn()
        .expect("spawn token-auth");
    let stdout = child.stdout.take().unwrap();
    let served = Served(child);
    let addr = tokio::task::spawn_blocking(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("read stdout");
            if let Some(addr) = line.strip_prefix("token-auth listening on http://") {
                return addr.to_string();
            }
        }
        panic!("token-auth exited before listening");
    })
    .await
    .unwrap();
    let url = |path: &str| format!("http://{addr}{path}");
    let post = |path: &str, body: serde_json::Value| {
        let url = url(path);
        async move {
            Client::new(Proto::H1)
                .request(
                    http::Method::POST,
                    &url,
                    &[("content-type", "application/json")],
                    body.to_string(),
                )
                .await
        }
    };

    let reg = post(
        "/auth/register",
        json!({"username": "ann", "password": "password1"}),
    )
    .await;
    assert_eq!(reg.status, StatusCode::CREATED, "{}", reg.text());
    assert!(hash_of(&db, "ann").starts_with("$2b$12$"));

    let admin = post(
        "/login",
        json!({"username": "root", "password": "rootpassword"}),
    )
    .await;
    assert_eq!(admin.status, StatusCode::OK, "{}", admin.text());
    let auth = format!("Bearer {}", admin.str("access_token"));
    let users = Client::new(Proto::H1)
        .request(
            http::Method::GET,
            &url("/api/admin/users"),
            &[("authorization", &auth)],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(users.status, StatusCode::OK, "{}", users.text());
    assert_eq!(users.json()["users"].as_array().unwrap().len(), 2);
    drop(served);
}

#[tokio::test]
async fn removed_database_directory_makes_writes_503_store_unavailable_and_logs_the_path_once() {
    let dir = support::greeter::TempDir::new("auth-gone");
    let db = dir.0.join("auth.db");
    let mut child = command()
        .env("TOKEN_AUTH_SECRET", SECRET)
        .args(["--addr", "127.0.0.1:0", "--quiet", "--db"])
        .arg(&db)
        .spawn()
        .expect("spawn token-auth");
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let addr = loop {
        let line = lines_rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("token-auth exited before listening");
        if let Some(addr) = line.strip_prefix("token-auth listening on http://") {
            break addr.to_string();
        }
    };
    let served = Served(child);
    let post = |path: &str, auth: Option<String>, body: serde_json::Value| {
        let url = format!("http://{addr}{path}");
        async move {
            let mut headers = vec![("content-type", "application/json".to_string())];
            headers.extend(auth.map(|a| ("authorization", a)));
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            Client::new(Proto::H1)
                .request(http::Method::POST, &url, &headers, body.to_string())
                .await
        }
    };
    let ann = post(
        "/auth/register",
        None,
        json!({"username": "ann", "password": "password1"}),
    )
    .await;
    assert_eq!(ann.status, StatusCode::CREATED, "{}", ann.text());
    let token = format!("Bearer {}", ann.str("access_token"));

    std::fs::remove_dir_all(&dir.0).unwrap();
    for _ in 0..2 {
        let bob = post(
            "/auth/register",
            None,
            json!({"username": "bob", "password": "password1"}),
        )
        .await;
        assert_eq!(
            bob.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            bob.text()
        );
        assert_eq!(bob.error(), "store unavailable");
    }
    let logout = post("/auth/logout", Some(token), json!({})).await;
    assert_eq!(
        logout.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        logout.text()
    );
    // SIGTERM: the binary flushes its log before it exits.
    let pid = served.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let mut said = Vec::new();
    while let Ok(line) = lines_rx.recv_timeout(std::time::Duration::from_secs(10)) {
        said.push(line);
    }
    drop(served);
    let about_store: Vec<&String> = said
        .iter()
        .filter(|l| l.contains("store unavailable: database"))
        .collect();
    assert_eq!(about_store.len(), 1, "{said:#?}");
    assert!(
        about_store[0].contains(db.to_str().unwrap()),
        "{}",
        about_store[0]
    );
}
