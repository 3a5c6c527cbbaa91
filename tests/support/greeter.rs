//! The greeter's black-box tests: start a real greeter on 127.0.0.1:0 with a
//! temporary SQLite file, and hold a lock on that file to make store calls
//! hang (the way to exercise time-outs without timing).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use handwire::protocol::grpc::health::Health;
use handwire::services::greeter::config::Config;
use handwire::services::greeter::Greeter;
use http::Method;
use tokio::sync::oneshot;

use super::http::{send, Proto, Reply};

/// A running greeter; stops when dropped.
pub struct Running {
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    pub db: PathBuf,
    /// The statuses of its gRPC health service.
    pub health: Arc<Health>,
    stop: Option<oneshot::Sender<()>>,
    _dir: TempDir,
}

impl Running {
    /// Start the shutdown now (as SIGTERM does) instead of at drop.
    pub fn begin_shutdown(&mut self) {
        self.stop.take();
    }
}

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = super::temp_path(tag, "");
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The config text used by the tests (registrations not limited: tests
/// register many users from 127.0.0.1).
pub fn config_text(source: &str, http_timeout: &str, grpc_timeout: &str) -> String {
    format!(
        "server:
  http: {{ network: tcp, addr: 127.0.0.1:0, timeout: {http_timeout} }}
  grpc: {{ network: tcp, addr: 127.0.0.1:0, timeout: {grpc_timeout} }}
data:
  database: {{ driver: sqlite3, source: {source:?} }}
  cache: {{ network: tcp, addr: 127.0.0.1:6379, read_timeout: 0.2s, write_timeout: 0.2s }}
limits: {{ registrations_per_minute: 0 }}
"
    )
}

/// Starts a greeter with the given time-outs.
pub async fn start_with(http_timeout: &str, grpc_timeout: &str) -> Running {
    let dir = TempDir::new("greeter");
    let db = dir.0.join("greeter.db");
    let text = config_text(&db.display().to_string(), http_timeout, grpc_timeout);
    start_from(&text, dir, db).await
}

/// Starts a greeter from config `text` whose database `db` is in `dir`.
pub async fn start_from(text: &str, dir: TempDir, db: PathBuf) -> Running {
    let config = Config::from_yaml(text).unwrap();
    let greeter = Greeter::bind(&config).await.unwrap();
    let (http, grpc) = (greeter.http_addr(), greeter.grpc_addr());
    let health = greeter.health().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(greeter.serve(async move {
        let _ = stopped.await;
    }));
    Running {
        http,
        grpc,
        db,
        health,
        stop: Some(stop),
        _dir: dir,
    }
}

/// Starts a greeter with the demo time-outs (1s each).
pub async fn start() -> Running {
    start_with("1s", "1s").await
}

/// One call to the greeter's HTTP side at `addr`, the way its clients make
/// it: HTTP/1.1, body (possibly empty) labelled `application/json`.
pub async fn call(addr: SocketAddr, method: Method, path: &str, body: &str) -> Reply {
    let headers = [("content-type", "application/json")];
    let body = Bytes::from(body.to_owned());
    send(Proto::H1, addr, method, path, &headers, body).await
}

/// Holds SQLite's write lock on the store until dropped: every write of the
/// service then waits (up to its busy time-out), so requests outlive their
/// deadlines deterministically.
pub struct WriteLock(rusqlite::Connection);

impl WriteLock {
    pub fn take(db: &Path) -> WriteLock {
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("ROLLBACK");
    }
}

/// Users with these names (password `pw`), straight into the greeter's
/// database in one transaction.
pub fn insert_users(db: &Path, names: impl IntoIterator<Item = String>) {
    let mut conn = rusqlite::Connection::open(db).unwrap();
    let tx = conn.transaction().unwrap();
    for name in names {
        tx.execute(
            "INSERT INTO users (username, password, age) VALUES (?1, 'pw', 1)",
            [name],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// Number of greeting rows stored for `name`, read with a separate connection.
pub fn greetings_for(db: &Path, name: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT COUNT(*) FROM greetings WHERE name = ?1",
        [name],
        |r| r.get(0),
    )
    .unwrap()
}

/// The (id, username, password, age) rows of the users table.
pub fn user_rows(db: &Path) -> Vec<(i64, String, String, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, username, password, age FROM users ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}
