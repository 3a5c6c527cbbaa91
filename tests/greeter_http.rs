//! Black-box tests of the greeter's HTTP side with a hyper client, and of the
//! `greeter` binary's start-up and shutdown.

mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use http::Method;
use serde_json::{json, Value};
use support::greeter::{
    call, config_text, greetings_for, start, start_with, user_rows, TempDir, WriteLock,
};

fn kratos_error(code: u16, reason: &str, message: &str) -> Value {
    json!({ "code": code, "reason": reason, "message": message, "metadata": {} })
}

/// A 400 for one field breaking its greeter.proto rule: the Kratos body
/// plus the `google.rpc.BadRequest` naming the field.
fn bad_field(field: &str, reason: &str, message: &str) -> Value {
    let mut body = kratos_error(400, reason, message);
    body["details"] = json!([{
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [{"field": field, "description": message, "reason": reason}]
    }]);
    body
}

#[tokio::test]
async fn helloworld_returns_hello_name_as_json_and_stores_a_greeting() {
    let g = start().await;
    let reply = call(g.http, Method::GET, "/helloworld/kratos", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    let ct = reply.header("content-type").unwrap_or_default();
    assert_eq!(status, 200);
    assert!(ct.starts_with("application/json"), "{ct}");
    assert_eq!(body, json!({ "message": "Hello kratos" }));
    assert_eq!(greetings_for(&g.db, "kratos"), 1);
}

#[tokio::test]
async fn say_hello_names_with_control_characters_or_bidi_overrides_are_400_and_not_stored() {
    let g = start().await;
    let cases = [
        ("/helloworld/a%00b", "U+0000, at byte 1)"),
        ("/helloworld/%1B%5B2J", "U+001B, at byte 0)"),
        ("/helloworld/x%0D%0Aforged", "U+000D, at byte 1)"),
        ("/helloworld/abc%E2%80%AEexe.pdf", "U+202E, at byte 3)"),
        ("/helloworld/%E2%81%A6x", "U+2066, at byte 0)"),
    ];
    // The rule is greeter.proto's `pattern` on HelloRequest.name, enforced
    // before the use case runs; the message names the character found.
    for (path, found) in cases {
        let reply = call(g.http, Method::GET, path, "").await;
        assert_eq!(reply.status.as_u16(), 400, "{path}");
        let body = reply.json();
        assert_eq!(body["reason"], "NAME_INVALID_CHARACTERS", "{path}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("name must match "), "{path}: {message}");
        assert!(message.ends_with(found), "{path}: {message}");
    }
    let rows: i64 = rusqlite::Connection::open(&g.db)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM greetings", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0, "no refused name was stored");
}

#[tokio::test]
async fn helloworld_name_is_percent_decoded() {
    let g = start().await;
    let reply = call(g.http, Method::GET, "/helloworld/w%C3%B6rld%20two", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!(status, 200);
    assert_eq!(body, json!({ "message": "Hello wörld two" }));
}

#[tokio::test]
async fn register_then_list_in_id_order() {
    let g = start().await;
    let reply = call(g.http, Method::GET, "/v1/users", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    // One page (AIP-158): the last one has an empty next token.
    assert_eq!(
        (status, body),
        (200, json!({ "users": [], "nextPageToken": "" }))
    );
    for (u, p) in [("zed", "z1"), ("amy", "a1")] {
        let reply = call(
            g.http,
            Method::POST,
            "/v1/users",
            &json!({"username": u, "password": p}).to_string(),
        )
        .await;
        let (status, body) = (reply.status.as_u16(), reply.json());
        assert_eq!((status, body), (200, json!({ "result": "success" })));
    }
    let reply = call(g.http, Method::GET, "/v1/users", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "users": [{"username": "zed", "password": "z1"}, {"username": "amy", "password": "a1"}],
            "nextPageToken": ""
        })
    );
    let rows = user_rows(&g.db);
    assert!(rows.iter().all(|r| r.3 == 1), "age is 1: {rows:?}");
}

#[tokio::test]
async fn empty_or_missing_fields_are_400_kratos_errors() {
    let g = start().await;
    let cases = [
        (
            json!({"username": "", "password": "pw"}),
            "USERNAME_EMPTY",
            "username must not be empty",
        ),
        (
            json!({"password": "pw"}),
            "USERNAME_EMPTY",
            "username must not be empty",
        ),
        (
            json!({"username": "ann"}),
            "PASSWORD_EMPTY",
            "password must not be empty",
        ),
    ];
    for (input, reason, message) in cases {
        let reply = call(g.http, Method::POST, "/v1/users", &input.to_string()).await;
        let (status, body) = (reply.status.as_u16(), reply.json());
        assert_eq!(status, 400, "{input}");
        let field = reason.split('_').next().unwrap().to_ascii_lowercase();
        assert_eq!(body, bad_field(&field, reason, message));
    }
    assert!(user_rows(&g.db).is_empty());
}

#[tokio::test]
async fn fields_past_their_bounds_are_400_kratos_errors_naming_field_and_bound() {
    let g = start().await;
    let mib = "x".repeat(1 << 20);
    let cases = [
        (
            json!({"username": mib, "password": "pw"}),
            "USERNAME_TOO_LONG",
            "username must be at most 64 characters, got 1048576",
        ),
        (
            json!({"username": "ann", "password": mib}),
            "PASSWORD_TOO_LONG",
            "password must be at most 128 bytes of UTF-8, got 1048576 bytes",
        ),
        (
            json!({"username": "é".repeat(33), "password": "pw"}),
            "USERNAME_INVALID_CHARACTERS",
            "username must match ^[A-Za-z0-9_.-]+$ (found 'é', U+00E9, at byte 0)",
        ),
        (
            json!({"username": "nul\0", "password": "pw"}),
            "USERNAME_INVALID_CHARACTERS",
            r"username must match ^[A-Za-z0-9_.-]+$ (found '\0', U+0000, at byte 3)",
        ),
        (
            json!({"username": "ann", "password": "esc\u{1b}[2J"}),
            "PASSWORD_INVALID_CHARACTERS",
            r"password must match ^[^\x00-\x1F\x7F-\x9F]*$ (found '\u{1b}', U+001B, at byte 3)",
        ),
    ];
    for (input, reason, message) in cases {
        let reply = call(g.http, Method::POST, "/v1/users", &input.to_string()).await;
        let (status, body) = (reply.status.as_u16(), reply.json());
        assert_eq!(status, 400, "{reason}");
        let field = reason.split('_').next().unwrap().to_ascii_lowercase();
        assert_eq!(body, bad_field(&field, reason, message));
    }
    assert!(user_rows(&g.db).is_empty());
    // At the bounds, the password with non-ASCII letters and spaces (a
    // username is ASCII only): accepted.
    let (u, p) = ("u".repeat(64), format!("é {}", "p".repeat(125)));
    let input = json!({"username": u, "password": p}).to_string();
    let reply = call(g.http, Method::POST, "/v1/users", &input).await;
    assert_eq!(reply.status.as_u16(), 200, "{}", reply.text());
    assert_eq!(user_rows(&g.db), vec![(1, u, p, 1)]);
}

#[tokio::test]
async fn malformed_json_is_400_codec_error() {
    let g = start().await;
    for input in [
        "{not json",
        "[1,2]",
        "{\"username\": 5, \"password\": \"x\"}",
        // No body at all is the empty message (USERNAME_EMPTY); only
        // whitespace is still not JSON.
        " \n",
    ] {
        let reply = call(g.http, Method::POST, "/v1/users", input).await;
        let (status, body) = (reply.status.as_u16(), reply.json());
        assert_eq!(status, 400, "{input}");
        assert_eq!(body["code"], 400);
        assert_eq!(body["reason"], "CODEC");
        assert_eq!(body["metadata"], json!({}));
    }
}

#[tokio::test]
async fn duplicate_username_is_409() {
    let g = start().await;
    let input = json!({"username": "ann", "password": "pw"}).to_string();
    assert_eq!(
        call(g.http, Method::POST, "/v1/users", &input).await.status,
        200
    );
    let reply = call(g.http, Method::POST, "/v1/users", &input).await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!(status, 409);
    assert_eq!(
        body,
        kratos_error(
            409,
            "USER_ALREADY_EXISTS",
            "username \"ann\" is already registered"
        )
    );
}

#[tokio::test]
async fn unknown_route_is_404_kratos_error() {
    let g = start().await;
    let reply = call(g.http, Method::GET, "/nope", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!(status, 404);
    assert_eq!(
        body,
        kratos_error(404, "NOT_FOUND", "no route for GET /nope")
    );
}

#[tokio::test]
async fn wrong_method_is_405_kratos_error() {
    let g = start().await;
    let reply = call(g.http, Method::DELETE, "/v1/users", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!(status, 405);
    assert_eq!(body["reason"], "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn request_past_http_timeout_is_504_kratos_error() {
    let g = start_with("150ms", "1s").await;
    let lock = WriteLock::take(&g.db);
    let reply = call(g.http, Method::GET, "/helloworld/slow", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!(status, 504);
    assert_eq!(
        body,
        kratos_error(
            504,
            "DEADLINE_EXCEEDED",
            "request exceeded server.http.timeout"
        )
    );
    drop(lock);
    assert_eq!(
        call(g.http, Method::GET, "/helloworld/fast", "")
            .await
            .status,
        200
    );
}

// ---- the binary ---------------------------------------------------------

fn write_config(dir: &TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.0.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run_greeter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_greeter"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn bad_config_is_a_startup_error_naming_the_key() {
    let dir = TempDir::new("cli");
    let text = config_text(":memory:", "1x", "1s");
    let path = write_config(&dir, &text);
    let out = run_greeter(&["--config", path.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("server.http.timeout: invalid duration \"1x\""),
        "{err}"
    );
}

#[cfg(not(feature = "cluster"))]
#[test]
fn postgres_driver_in_a_binary_without_the_cluster_feature_is_a_startup_error_naming_the_key() {
    let dir = TempDir::new("cli");
    let text = config_text("postgres://u:p@127.0.0.1:1/db", "1s", "1s")
        .replace("driver: sqlite3", "driver: postgres");
    let path = write_config(&dir, &text);
    let out = run_greeter(&["--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "data.database.driver: \"postgres\" is not built into this binary; \
             rebuild with `cargo build --release --features cluster`"
        ),
        "{err}"
    );
}

#[test]
fn unreadable_config_is_a_startup_error_naming_the_path() {
    let out = run_greeter(&["--config", "/nonexistent/greeter.yaml"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read config file /nonexistent/greeter.yaml"),
        "{err}"
    );
}

/// A FIFO blocked start-up forever (opening it waits for a writer) and a
/// device is no file: both are refused before they are opened.
#[test]
fn config_that_is_not_a_regular_file_is_a_startup_error_naming_the_path() {
    let dir = TempDir::new("config-kind");
    let fifo = dir.0.join("config.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let cases = [
        (
            fifo.to_str().unwrap().to_owned(),
            "not a regular file (a FIFO)",
        ),
        ("/dev/zero".to_owned(), "not a regular file (a device)"),
        ("/dev/null".to_owned(), "not a regular file (a device)"),
        (
            dir.0.to_str().unwrap().to_owned(),
            "not a regular file (a directory)",
        ),
    ];
    for (path, why) in cases {
        let mut child = Command::new(env!("CARGO_BIN_EXE_greeter"))
            .args(["--config", &path])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("greeter --config {path} did not exit within 10 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{path}: {err}");
        assert!(
            err.contains(&format!("cannot read config file {path}")),
            "{err}"
        );
        assert!(err.contains(why), "{path}: {err}");
    }
}

#[test]
fn unknown_argument_is_a_usage_error() {
    let out = run_greeter(&["--conf", "x"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "unknown option --conf (known: --config, --shutdown-grace, --max-connections, \
             --max-connections-per-peer, --debug-pages, --no-access-log)"
        ),
        "{err}"
    );
}

#[test]
fn port_in_use_is_a_startup_error_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = TempDir::new("cli");
    let text = config_text(":memory:", "1s", "1s").replacen("127.0.0.1:0", &addr.to_string(), 1);
    let path = write_config(&dir, &text);
    let out = run_greeter(&["--config", path.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("server.http.addr: cannot listen on {addr}")),
        "{err}"
    );
}

#[tokio::test]
async fn binary_prints_both_addresses_serves_and_stops_on_sigterm() {
    let dir = TempDir::new("cli");
    let db = dir.0.join("g.db");
    let path = write_config(&dir, &config_text(&db.display().to_string(), "1s", "1s"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_greeter"))
        .args(["--config", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The connection cap first, then the addresses.
    let cap = lines.next().unwrap().unwrap();
    assert!(cap.starts_with("greeter: holds up to "), "{cap}");
    let mut addr_of = |label: &str| -> SocketAddr {
        let line = lines.next().unwrap().unwrap();
        let prefix = format!("greeter: {label} listening on ");
        line.strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{line}"))
            .parse()
            .unwrap()
    };
    let http = addr_of("HTTP");
    let _grpc = addr_of("gRPC");
    let store = lines.next().unwrap().unwrap();
    let want = format!(
        "greeter: store: SQLite database {:?}",
        db.display().to_string()
    );
    assert_eq!(store, want);
    let reply = call(http, Method::GET, "/helloworld/bin", "").await;
    let (status, body) = (reply.status.as_u16(), reply.json());
    assert_eq!((status, body), (200, json!({"message": "Hello bin"})));
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful exit: {status:?}");
    assert!(lines.any(|l| l.unwrap() == "greeter: stopped"));
}

#[tokio::test]
async fn json_bodies_must_be_objects_without_repeated_keys() {
    let g = start().await;
    let cases = [
        (
            r#"["ann","secret1"]"#,
            "expected a JSON object, found an array",
        ),
        (
            r#"{"username":"ann","password":"a","password":"b"}"#,
            "duplicate key \"password\"",
        ),
    ];
    for (input, want) in cases {
        let reply = call(g.http, Method::POST, "/v1/users", input).await;
        let body = reply.json();
        assert_eq!(reply.status.as_u16(), 400, "{input}");
        assert_eq!(body["reason"], "CODEC", "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(want), "{input}: {message}");
    }
    // Nothing was stored by either.
    let list = call(g.http, Method::GET, "/v1/users", "").await.json();
    assert_eq!(list["users"], json!([]), "{list}");
}

// ---- a store that cannot keep what it is given --------------------------

#[tokio::test]
async fn removed_database_directory_makes_writes_503_store_unavailable_and_logs_the_path_once() {
    let dir = TempDir::new("gone");
    let db = dir.0.join("g.db");
    let path = write_config(&dir, &config_text(&db.display().to_string(), "1s", "1s"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_greeter"))
        .args(["--config", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let _cap = lines.next();
    let http: SocketAddr = lines
        .next()
        .unwrap()
        .unwrap()
        .strip_prefix("greeter: HTTP listening on ")
        .expect("HTTP address line")
        .parse()
        .unwrap();
    let reply = call(http, Method::GET, "/helloworld/before", "").await;
    assert_eq!(reply.status.as_u16(), 200);

    std::fs::remove_dir_all(&dir.0).unwrap();
    let register = json!({"username": "ann", "password": "pw"}).to_string();
    for (method, path, body) in [
        (Method::GET, "/helloworld/after", ""),
        (Method::POST, "/v1/users", register.as_str()),
    ] {
        let reply = call(http, method, path, body).await;
        let (status, body) = (reply.status.as_u16(), reply.json());
        assert_eq!(status, 503, "{path}: {body}");
        assert_eq!(body["code"], 503);
        assert_eq!(body["reason"], "STORE_UNAVAILABLE", "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with("store unavailable"), "{message}");
    }

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert!(child.wait().unwrap().success());
    let logged: Vec<String> = lines
        .map_while(Result::ok)
        .filter(|l| l.starts_with("[greeter] store unavailable"))
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].contains(&format!("{:?}", db.display().to_string())),
        "{}",
        logged[0]
    );
}

#[test]
fn read_only_database_at_start_is_a_startup_error_naming_the_path() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;

    let dir = TempDir::new("ro");
    let db = dir.0.join("g.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let config = write_config(&dir, &config_text(&db.display().to_string(), "1s", "1s"));
    // Root ignores permission bits, so as root the greeter runs as nobody,
    // for whom the root-owned 0644 file and 0755 directory are read-only.
    let as_root = std::fs::metadata(&db).unwrap().uid() == 0;
    let mut command = Command::new(env!("CARGO_BIN_EXE_greeter"));
    command.args(["--config", config.to_str().unwrap()]);
    let read_only = std::fs::Permissions::from_mode;
    if as_root {
        command.uid(65534).gid(65534);
    } else {
        std::fs::set_permissions(&db, read_only(0o444)).unwrap();
        std::fs::set_permissions(&dir.0, read_only(0o555)).unwrap();
    }
    let out = command.output().unwrap();
    let _ = std::fs::set_permissions(&dir.0, read_only(0o755));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "data.database.source: SQLite database {:?} is read-only",
        db.display().to_string()
    );
    assert!(err.contains(&want), "{err}");
}
