//! The greeter on a shared PostgreSQL + Redis (feature `cluster`), against
//! real servers started per test (`crate::support::servers`):
//!
//! - the repositories in-process: the PostgreSQL store answers as the SQLite
//!   one does, and the Redis cache in front of it is invalidated by every
//!   write, never re-installs a stale list, and fails fast (503) without
//!   hanging;
//! - the `greeter` binary started twice on the same servers: what one
//!   instance stores, the other lists; Redis or PostgreSQL going away gives
//!   503 and Redis coming back is used again without a restart; start-up
//!   errors name the key to fix.
//!
//! Every test skips (printing why) where the servers are not installed.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handwire::services::greeter::biz::{self, GreeterRepo, UserRepo};
use handwire::services::greeter::data::cache::{list_key, CachedUsers, GEN_KEY};
use handwire::services::greeter::data::postgres::PgStore;
use http::Method;
use serde_json::{json, Value};

use crate::support::greeter::{call, TempDir};
use crate::support::servers::{available, free_port, Postgres, RedisServer};

/// The PostgreSQL time-out of the in-process stores.
const PG_TIMEOUT: Duration = Duration::from_millis(500);
/// `data.cache.read_timeout` of every test.
const READ_TIMEOUT: Duration = Duration::from_millis(200);

// ---- in-process: the repositories -----------------------------------------

async fn pg_store(pg: &Postgres) -> Arc<PgStore> {
    Arc::new(PgStore::connect(&pg.url(), PG_TIMEOUT).await.unwrap())
}

/// One instance's user repository: its own pool and Redis connection.
async fn cached_users(pg: &Postgres, redis: &RedisServer) -> CachedUsers {
    let conn =
        handwire::cluster::redis("data.cache.addr", &redis.url(), READ_TIMEOUT, READ_TIMEOUT)
            .await
            .unwrap();
    CachedUsers::new(pg_store(pg).await, conn, READ_TIMEOUT)
}

fn names(users: &[biz::User]) -> Vec<&str> {
    users.iter().map(|u| u.username.as_str()).collect()
}

#[tokio::test]
async fn postgres_store_lists_in_id_order_and_refuses_a_taken_username_as_sqlite_does() {
    if !available("postgres_store_lists_in_id_order_and_refuses_a_taken_username_as_sqlite_does") {
        return;
    }
    let pg = Postgres::start();
    let store = pg_store(&pg).await;
    let zed = store.create("zed".into(), "z1".into()).await.unwrap();
    let amy = store.create("amy".into(), "a1".into()).await.unwrap();
    assert!(zed.id < amy.id);
    assert_eq!(
        (amy.username.as_str(), amy.password.as_str(), amy.age),
        ("amy", "a1", 1)
    );
    let err = store
        .create("zed".into(), "other".into())
        .await
        .unwrap_err();
    assert_eq!(err, biz::Error::username_taken("zed"));
    assert_eq!(
        err.to_string(),
        "USER_ALREADY_EXISTS: username \"zed\" is already registered"
    );
    let users = store.list().await.unwrap();
    assert_eq!(users, vec![zed.clone(), amy.clone()]);
    assert!(store.delete(zed.id).await.unwrap());
    assert!(!store.delete(zed.id).await.unwrap());
    assert_eq!(store.list().await.unwrap(), vec![amy]);
    // Values travel as parameters: quotes and backslashes are data.
    let odd = "o'hara\\\"; DROP TABLE greeter.users; --";
    store.save_greeting(odd.into()).await.unwrap();
    assert_eq!(store.count_greetings(odd).await.unwrap(), 1);
    assert_eq!(
        pg.psql("SELECT count(*) FROM greeter.users"),
        "1",
        "the table is still there"
    );
}

#[tokio::test]
async fn instances_starting_together_apply_the_schema_once() {
    if !available("instances_starting_together_apply_the_schema_once") {
        return;
    }
    let pg = Postgres::start();
    let url = pg.url();
    let (a, b) = tokio::join!(
        PgStore::connect(&url, PG_TIMEOUT),
        PgStore::connect(&url, PG_TIMEOUT)
    );
    a.unwrap();
    b.unwrap();
    // Each migration once, though two instances raced to apply them.
    assert_eq!(
        pg.psql(
            "SELECT string_agg(version::text, ',' ORDER BY version) FROM greeter.schema_migrations"
        ),
        "1,2"
    );
    assert_eq!(
        pg.psql(
            "SELECT string_agg(table_name, ',' ORDER BY table_name) \
             FROM information_schema.tables WHERE table_schema = 'greeter'"
        ),
        "greetings,schema_migrations,users"
    );
}

#[tokio::test]
async fn a_postgres_call_stuck_behind_a_lock_is_unavailable_within_the_time_out() {
    if !available("a_postgres_call_stuck_behind_a_lock_is_unavailable_within_the_time_out") {
        return;
    }
    let pg = Postgres::start();
    let store = pg_store(&pg).await;
    let (locker, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    locker
        .batch_execute("BEGIN; LOCK TABLE greeter.users IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let started = Instant::now();
    let err = store.list().await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, biz::Error::Unavailable { .. }), "{err}");
    assert!(
        err.message().starts_with(
            "store unavailable while listing users: PostgreSQL unavailable: no answer within"
        ),
        "{err}"
    );
    assert!(
        took >= PG_TIMEOUT && took < PG_TIMEOUT + Duration::from_millis(500),
        "{took:?}"
    );
    locker.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(store.list().await.unwrap(), vec![]);
}

#[tokio::test]
async fn a_cached_list_is_served_until_a_write_on_any_instance_invalidates_it() {
    if !available("a_cached_list_is_served_until_a_write_on_any_instance_invalidates_it") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let (a, b) = (
        cached_users(&pg, &redis).await,
        cached_users(&pg, &redis).await,
    );
    assert_eq!(b.list().await.unwrap(), vec![]);
    // A row written behind the cache's back is not seen: B answers from Redis.
    pg.psql("INSERT INTO greeter.users (username, password, age) VALUES ('sneaky', 'x', 1)");
    assert_eq!(b.list().await.unwrap(), vec![]);
    a.create("ann".into(), "pw".into()).await.unwrap();
    assert_eq!(names(&b.list().await.unwrap()), ["sneaky", "ann"]);
    pg.psql("DELETE FROM greeter.users WHERE username = 'sneaky'");
    assert_eq!(names(&b.list().await.unwrap()), ["sneaky", "ann"], "cached");
    // A refused write changes nothing and leaves the cache alone...
    let taken = a.create("ann".into(), "x".into()).await.unwrap_err();
    assert_eq!(taken.reason(), "USER_ALREADY_EXISTS");
    assert_eq!(names(&b.list().await.unwrap()), ["sneaky", "ann"], "cached");
    // ...a delete invalidates.
    let ann = b.list().await.unwrap()[1].clone();
    assert!(a.delete(ann.id).await.unwrap());
    assert_eq!(b.list().await.unwrap(), vec![]);
}

#[tokio::test]
async fn a_list_stored_late_under_the_generation_read_before_a_write_is_never_served() {
    if !available("a_list_stored_late_under_the_generation_read_before_a_write_is_never_served") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let users = cached_users(&pg, &redis).await;
    let mut raw = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    // A slow reader: reads the generation and the (empty) database...
    let seen: Option<i64> = redis::cmd("GET")
        .arg(GEN_KEY)
        .query_async(&mut raw)
        .await
        .unwrap();
    let seen = seen.unwrap_or(0);
    // ...a write commits and moves the generation on...
    users.create("ann".into(), "pw".into()).await.unwrap();
    // ...and only then does the slow reader store what it read, under the
    // key of the page `list()` asks for.
    let () = redis::cmd("SET")
        .arg(list_key(seen, 0, usize::MAX))
        .arg("[]")
        .arg("EX")
        .arg(60)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(names(&users.list().await.unwrap()), ["ann"]);
    assert_eq!(
        names(&users.list().await.unwrap()),
        ["ann"],
        "and cached so"
    );
}

#[tokio::test]
async fn with_redis_down_list_is_unavailable_fast_writes_still_commit_and_redis_back_is_used_again()
{
    if !available(
        "with_redis_down_list_is_unavailable_fast_writes_still_commit_and_redis_back_is_used_again",
    ) {
        return;
    }
    let (pg, mut redis) = (Postgres::start(), RedisServer::start());
    let users = cached_users(&pg, &redis).await;
    assert_eq!(users.list().await.unwrap(), vec![]);
    redis.kill();
    for _ in 0..3 {
        let started = Instant::now();
        let err = users.list().await.unwrap_err();
        assert!(started.elapsed() < READ_TIMEOUT + Duration::from_millis(300));
        assert!(matches!(err, biz::Error::Unavailable { .. }), "{err}");
        assert!(
            err.message()
                .starts_with("store unavailable while listing users: Redis unavailable"),
            "{err}"
        );
    }
    let ann = users.create("ann".into(), "pw".into()).await.unwrap();
    assert_eq!(pg.psql("SELECT username FROM greeter.users"), "ann");
    redis.restart();
    let listed = eventually(Duration::from_secs(3), || users.list()).await;
    assert_eq!(listed, vec![ann]);
}

#[tokio::test]
async fn a_stalled_redis_makes_list_unavailable_within_the_read_time_out() {
    if !available("a_stalled_redis_makes_list_unavailable_within_the_read_time_out") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let users = cached_users(&pg, &redis).await;
    users.create("ann".into(), "pw".into()).await.unwrap();
    let mut raw = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    // Redis holds every client's commands for 1.5 s.
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1500)
        .arg("ALL")
        .query_async(&mut raw)
        .await
        .unwrap();
    let started = Instant::now();
    let err = users.list().await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, biz::Error::Unavailable { .. }), "{err}");
    assert!(
        took >= READ_TIMEOUT && took < READ_TIMEOUT + Duration::from_millis(300),
        "{took:?}"
    );
    let listed = eventually(Duration::from_secs(4), || users.list()).await;
    assert_eq!(names(&listed), ["ann"]);
}

/// Calls `f` every 50 ms until it succeeds; panics with the last error after `limit`.
async fn eventually<T, F, Fut>(limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, biz::Error>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => panic!("still failing after {limit:?}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

// ---- black box: the greeter binary, twice ---------------------------------

fn config_text(source: &str, cache_addr: &str) -> String {
    format!(
        "server:
  http: {{ network: tcp, addr: 127.0.0.1:0, timeout: 1s }}
  grpc: {{ network: tcp, addr: 127.0.0.1:0, timeout: 1s }}
data:
  database: {{ driver: postgres, source: {source:?} }}
  cache: {{ network: tcp, addr: {cache_addr:?}, read_timeout: 0.2s, write_timeout: 0.2s }}
limits: {{ registrations_per_minute: 0 }}
"
    )
}

fn write_config(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.0.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A running `greeter` process, killed when dropped; its stdout lines
/// arrive on `lines`.
pub(crate) struct Instance {
    child: Child,
    pub(crate) http: SocketAddr,
    grpc: SocketAddr,
    lines: mpsc::Receiver<String>,
}

impl Instance {
    /// Starts the binary on `source` and `cache_addr`, and reads its three
    /// start-up lines (HTTP, gRPC, store).
    pub(crate) fn start(dir: &TempDir, name: &str, source: &str, cache_addr: &str) -> Instance {
        let config = write_config(dir, name, &config_text(source, cache_addr));
        let mut child = Command::new(env!("CARGO_BIN_EXE_greeter"))
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut instance = Instance {
            child,
            http: "0.0.0.0:0".parse().unwrap(),
            grpc: "0.0.0.0:0".parse().unwrap(),
            lines,
        };
        instance.http = instance.address("greeter: HTTP listening on ");
        instance.grpc = instance.address("greeter: gRPC listening on ");
        instance
    }

    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a line from the greeter within 10 s")
    }

    /// The address on the first line starting with `prefix`; the lines before
    /// it (the start-up line with the connection cap) are skipped.
    fn address(&self, prefix: &str) -> SocketAddr {
        let mut skipped = Vec::new();
        loop {
            let line = self.next_line();
            if let Some(address) = line.strip_prefix(prefix) {
                return address.parse().unwrap();
            }
            skipped.push(line);
            assert!(
                skipped.len() < 10,
                "expected {prefix:?} within 10 lines, got {skipped:?}"
            );
        }
    }

    /// Waits (at most 2 s) for a line starting with `prefix`.
    fn logged(&self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("no line starting with {prefix:?}");
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP call, bounded: a hang fails the test instead of stalling it.
async fn http(addr: SocketAddr, method: Method, path: &str, body: &str) -> (u16, Value, Duration) {
    let started = Instant::now();
    let reply = tokio::time::timeout(Duration::from_secs(5), call(addr, method, path, body))
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within 5 s"));
    (reply.status.as_u16(), reply.json(), started.elapsed())
}

async fn register(addr: SocketAddr, username: &str, password: &str) -> (u16, Value) {
    let body = json!({ "username": username, "password": password }).to_string();
    let (status, body, _) = http(addr, Method::POST, "/v1/users", &body).await;
    (status, body)
}

async fn list(addr: SocketAddr) -> (u16, Value) {
    let (status, body, _) = http(addr, Method::GET, "/v1/users", "").await;
    (status, body)
}

#[tokio::test]
async fn a_user_registered_through_greeter_a_is_listed_by_greeter_b() {
    if !available("a_user_registered_through_greeter_a_is_listed_by_greeter_b") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let dir = TempDir::new("greeter-cluster");
    let a = Instance::start(&dir, "a.yaml", &pg.url(), &redis.addr());
    let b = Instance::start(&dir, "b.yaml", &pg.url(), &redis.addr());
    let store = b.next_line();
    assert_eq!(
        store,
        format!(
            "greeter: store: PostgreSQL handwire@127.0.0.1:{}/postgres (schema greeter), \
             user list cached in Redis {}",
            pg.port,
            redis.url()
        )
    );
    // B lists first, so its answer is cached and must be invalidated.
    // One page (AIP-158); the last page's next token is empty.
    assert_eq!(
        list(b.http).await,
        (200, json!({ "users": [], "nextPageToken": "" }))
    );
    assert_eq!(
        register(a.http, "ann", "pw").await,
        (200, json!({ "result": "success" }))
    );
    assert_eq!(
        list(b.http).await,
        (
            200,
            json!({ "users": [{ "username": "ann", "password": "pw" }], "nextPageToken": "" })
        )
    );
    assert_eq!(register(b.http, "bob", "pw2").await.0, 200);
    assert_eq!(
        list(a.http).await,
        (
            200,
            json!({ "users": [
                { "username": "ann", "password": "pw" },
                { "username": "bob", "password": "pw2" },
            ], "nextPageToken": "" })
        )
    );
}

#[tokio::test]
async fn the_same_username_registered_on_both_instances_is_stored_once() {
    if !available("the_same_username_registered_on_both_instances_is_stored_once") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let dir = TempDir::new("greeter-cluster");
    let a = Instance::start(&dir, "a.yaml", &pg.url(), &redis.addr());
    let b = Instance::start(&dir, "b.yaml", &pg.url(), &redis.addr());
    assert_eq!(register(a.http, "ann", "pw").await.0, 200);
    // HTTP on B: 409 with the SQLite store's body.
    assert_eq!(
        register(b.http, "ann", "other").await,
        (
            409,
            json!({
                "code": 409,
                "reason": "USER_ALREADY_EXISTS",
                "message": "username \"ann\" is already registered",
                "metadata": {},
            })
        )
    );
    // gRPC on B: ALREADY_EXISTS.
    let err = grpc_register(b.grpc, "ann", "again").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::AlreadyExists);
    assert_eq!(err.message(), "username \"ann\" is already registered");
    assert_eq!(
        pg.psql("SELECT string_agg(username || ':' || password, ',') FROM greeter.users"),
        "ann:pw"
    );
}

async fn grpc_register(
    addr: SocketAddr,
    username: &str,
    password: &str,
) -> Result<handwire::services::greeter::api::UserRegisterResponse, tonic::Status> {
    use handwire::services::greeter::api::{UserRegisterRequest, UserRegisterResponse};
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/helloworld.v1.Greeter/UserRegister");
    let codec = tonic_prost::ProstCodec::<UserRegisterRequest, UserRegisterResponse>::default();
    let req = UserRegisterRequest {
        username: username.into(),
        password: password.into(),
    };
    grpc.unary(tonic::Request::new(req), path, codec)
        .await
        .map(|r| r.into_inner())
}

#[tokio::test]
async fn redis_killed_gives_503_with_the_documented_body_and_recovers_after_restart() {
    if !available("redis_killed_gives_503_with_the_documented_body_and_recovers_after_restart") {
        return;
    }
    let (pg, mut redis) = (Postgres::start(), RedisServer::start());
    let dir = TempDir::new("greeter-cluster");
    let a = Instance::start(&dir, "a.yaml", &pg.url(), &redis.addr());
    assert_eq!(register(a.http, "ann", "pw").await.0, 200);
    assert_eq!(list(a.http).await.0, 200);
    redis.kill();
    let (status, body, took) = http(a.http, Method::GET, "/v1/users", "").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        took < Duration::from_millis(900),
        "{took:?}: before the 1 s request time-out"
    );
    assert_eq!(body["code"], 503);
    assert_eq!(body["reason"], "STORE_UNAVAILABLE");
    assert_eq!(body["metadata"], json!({}));
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("store unavailable while listing users: Redis unavailable: "),
        "{message}"
    );
    // A write is committed and answered; the failed invalidation is logged.
    assert_eq!(
        register(a.http, "bob", "pw2").await,
        (200, json!({ "result": "success" }))
    );
    let logged =
        a.logged("[greeter] cache: the user list was not invalidated after creating a user");
    assert!(logged.contains("the row is stored"), "{logged}");
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(3);
    let body = loop {
        let (status, body) = list(a.http).await;
        if status == 200 {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} after restart: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        body,
        json!({ "users": [
            { "username": "ann", "password": "pw" },
            { "username": "bob", "password": "pw2" },
        ], "nextPageToken": "" })
    );
}

#[tokio::test]
async fn postgres_stopped_gives_unavailable_not_a_hang() {
    if !available("postgres_stopped_gives_unavailable_not_a_hang") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let dir = TempDir::new("greeter-cluster");
    let a = Instance::start(&dir, "a.yaml", &pg.url(), &redis.addr());
    assert_eq!(register(a.http, "ann", "pw").await.0, 200);
    drop(pg); // pg_ctl stop -m immediate
    let register_body = json!({ "username": "bob", "password": "pw" }).to_string();
    for (method, path, body, what) in [
        (
            Method::POST,
            "/v1/users",
            register_body.as_str(),
            "creating a user",
        ),
        (Method::GET, "/helloworld/x", "", "saving a greeting"),
    ] {
        let (status, body, took) = http(a.http, method, path, body).await;
        assert_eq!(status, 503, "{path}: {body}");
        assert!(took < Duration::from_millis(900), "{path}: {took:?}");
        assert_eq!(body["reason"], "STORE_UNAVAILABLE", "{body}");
        let message = body["message"].as_str().unwrap();
        let want = format!("store unavailable while {what}: PostgreSQL unavailable: ");
        assert!(message.starts_with(&want), "{message}");
    }
}

// ---- start-up errors --------------------------------------------------------

/// Runs the binary with `config` until it exits (at most 10 s); its exit
/// code and stderr.
fn start_up_failure(config: &str) -> (Option<i32>, String) {
    let dir = TempDir::new("greeter-cluster");
    let path = write_config(&dir, "greeter.yaml", config);
    let mut child = Command::new(env!("CARGO_BIN_EXE_greeter"))
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the greeter did not exit within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

#[test]
fn a_wrong_postgres_password_is_a_start_up_error_naming_the_source_key() {
    if !available("a_wrong_postgres_password_is_a_start_up_error_naming_the_source_key") {
        return;
    }
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let url = pg.url_with_password("not-the-password");
    let (code, err) = start_up_failure(&config_text(&url, &redis.addr()));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("greeter: data.database.source: PostgreSQL refused the credentials: "),
        "{err}"
    );
    assert!(!err.contains("not-the-password"), "{err}");
}

#[test]
fn nothing_listening_at_the_source_is_a_start_up_error_saying_unreachable() {
    if !available("nothing_listening_at_the_source_is_a_start_up_error_saying_unreachable") {
        return;
    }
    let redis = RedisServer::start();
    let url = format!("postgres://handwire:pw@127.0.0.1:{}/postgres", free_port());
    let (code, err) = start_up_failure(&config_text(&url, &redis.addr()));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("greeter: data.database.source: PostgreSQL is unreachable: "),
        "{err}"
    );
}

#[test]
fn an_unreachable_redis_is_a_start_up_error_naming_the_cache_key() {
    if !available("an_unreachable_redis_is_a_start_up_error_naming_the_cache_key") {
        return;
    }
    let pg = Postgres::start();
    let addr = format!("127.0.0.1:{}", free_port());
    let (code, err) = start_up_failure(&config_text(&pg.url(), &addr));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("greeter: data.cache.addr: Redis is unreachable: "),
        "{err}"
    );
}
