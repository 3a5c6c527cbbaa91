//! A shared server restarting is invisible to clients: under a
//! steady trickle of requests to two instances, Redis or PostgreSQL is
//! stopped and started again; requests during the outage may be 503, but
//! not one request started after the server is back is.
//!
//! Then a quiet restart, with no request in flight: the first request on
//! each instance meets the connection that died with the old server, or a
//! reconnection that failed while it was away (before the fix: 503 for the
//! first login on each token-auth instance and the first greeter list). The
//! services repeat such a call once on a fresh connection within the same
//! time-out; the scripts they repeat are shown safe to run twice here too.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use serde_json::json;

use crate::greeter::Instance as Greeter;
use crate::support::greeter::TempDir;
use crate::support::http::{Client, Proto};
use crate::support::servers::{available, Postgres, RedisServer};

/// How often the trickle sends a request.
const EVERY: Duration = Duration::from_millis(25);
/// How long the server stays away.
const OUTAGE: Duration = Duration::from_millis(1000);
/// How long the trickle goes on after the server is back.
const AFTER: Duration = Duration::from_secs(3);

/// Requests sent every [`EVERY`], each on its own task, until stopped; each
/// answer recorded with the moment its request started.
struct Trickle {
    stop: Arc<AtomicBool>,
    answers: Arc<Mutex<Vec<(Instant, u16)>>>,
    sender: tokio::task::JoinHandle<Vec<tokio::task::JoinHandle<()>>>,
}

impl Trickle {
    /// `send(n)` makes request number `n` and gives its status.
    fn start<F, Fut>(send: F) -> Trickle
    where
        F: Fn(u64) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = u16> + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let (stopping, recorded) = (stop.clone(), answers.clone());
        let counter = AtomicU64::new(0);
        let sender = tokio::spawn(async move {
            let mut tasks = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                let request = send(n);
                let recorded = recorded.clone();
                tasks.push(tokio::spawn(async move {
                    let status = tokio::time::timeout(Duration::from_secs(5), request)
                        .await
                        .unwrap_or(0); // 0: no answer within 5 s
                    recorded.lock().unwrap().push((started, status));
                }));
                tokio::time::sleep(EVERY).await;
            }
            tasks
        });
        Trickle {
            stop,
            answers,
            sender,
        }
    }

    /// Stop sending, wait for every answer, and return them.
    async fn finish(self) -> Vec<(Instant, u16)> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.sender.await.unwrap() {
            task.await.unwrap();
        }
        let answers = self.answers.lock().unwrap().clone();
        answers
    }
}

/// No request in flight while the server restarts: the first request after
/// it meets only connections left from before (dead, or failed to reconnect
/// while the server was away). Each of `first` is one such request.
fn assert_first_requests_served(what: &str, first: &[u16]) {
    eprintln!("{what}: the first requests after a quiet restart: {first:?}");
    assert!(
        first.iter().all(|s| *s != 503 && *s != 0),
        "{what}: the first requests after a quiet restart: {first:?}"
    );
}

/// Checks the answers of a trickle around an outage that ended at `back`:
/// every request started after it was answered, and none with 503.
fn assert_invisible(what: &str, answers: &[(Instant, u16)], back: Instant) {
    let after: Vec<u16> = answers
        .iter()
        .filter(|(t, _)| *t >= back)
        .map(|(_, s)| *s)
        .collect();
    let during = answers
        .iter()
        .filter(|(t, s)| *t < back && *s == 503)
        .count();
    let unavailable = after.iter().filter(|s| **s == 503).count();
    let unanswered = after.iter().filter(|s| **s == 0).count();
    eprintln!(
        "{what}: {} requests, {during} answered 503 during the outage, {} after it \
         ({unavailable} of them 503, {unanswered} unanswered)",
        answers.len(),
        after.len()
    );
    assert!(
        after.len() >= 40,
        "{what}: only {} requests after the restart",
        after.len()
    );
    assert_eq!(
        (unavailable, unanswered),
        (0, 0),
        "{what}: after the server was back: {after:?}"
    );
}

async fn status(
    addr: SocketAddr,
    from: Option<IpAddr>,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: String,
) -> u16 {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    let body = Bytes::from(body);
    Client::new(Proto::H1)
        .from(from)
        .request(method, &format!("http://{addr}{path}"), &headers, body)
        .await
        .status
        .as_u16()
}

/// A login for a user that does not exist: the limiter script runs in
/// Redis first, then (for the first five a minute) PostgreSQL and bcrypt,
/// and the failure script. 401, or 429 past the limit; 503 without Redis.
async fn login_nobody(addr: SocketAddr) -> u16 {
    let body = json!({ "username": "nobody", "password": super::PASSWORD }).to_string();
    status(addr, None, Method::POST, "/login", None, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_auth_answers_no_503_once_a_restarted_redis_is_back() {
    if !available("token_auth_answers_no_503_once_a_restarted_redis_is_back") {
        return;
    }
    let mut c = super::cluster(&[]);
    let (a, b) = (c.a.addr, c.b.addr);
    let trickle = Trickle::start(move |n| login_nobody(if n % 2 == 0 { a } else { b }));
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.redis.kill();
    tokio::time::sleep(OUTAGE).await;
    c.redis.restart();
    let back = Instant::now();
    tokio::time::sleep(AFTER).await;
    let answers = trickle.finish().await;
    assert_invisible("token-auth, Redis restarted", &answers, back);
    assert!(
        answers.iter().any(|(_, s)| *s == 503),
        "the outage was seen (503) while Redis was down"
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    c.redis.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.redis.restart();
    let first = [login_nobody(a).await, login_nobody(b).await];
    assert_first_requests_served("token-auth, Redis", &first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_auth_answers_no_503_once_a_restarted_postgres_is_back() {
    if !available("token_auth_answers_no_503_once_a_restarted_postgres_is_back") {
        return;
    }
    let c = super::cluster(&[]);
    let reply = c.a.register("tricia", super::PASSWORD).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    let access = reply.str("access_token");
    let (a, b) = (c.a.addr, c.b.addr);
    // The profile: the blacklist and the user, both read from PostgreSQL.
    let token = access.clone();
    let trickle = Trickle::start(move |n| {
        let access = token.clone();
        let addr = if n % 2 == 0 { a } else { b };
        async move {
            status(
                addr,
                None,
                Method::GET,
                "/api/user/profile",
                Some(&access),
                String::new(),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.pg.stop();
    tokio::time::sleep(OUTAGE).await;
    c.pg.start_again();
    let back = Instant::now();
    // The first writes after the restart, one per instance (other client
    // addresses, so the registration limit is not what answers).
    for (i, addr) in [a, b].into_iter().enumerate() {
        let from: IpAddr = format!("127.0.0.{}", 10 + i).parse().unwrap();
        let body = json!({ "username": format!("after{i}"), "password": super::PASSWORD });
        let got = status(
            addr,
            Some(from),
            Method::POST,
            "/auth/register",
            None,
            body.to_string(),
        )
        .await;
        assert_eq!(
            got, 201,
            "the first registration on instance {i} after the restart"
        );
    }
    tokio::time::sleep(AFTER).await;
    let answers = trickle.finish().await;
    assert_invisible("token-auth, PostgreSQL restarted", &answers, back);

    c.pg.stop();
    c.pg.start_again();
    let profile = |addr| {
        status(
            addr,
            None,
            Method::GET,
            "/api/user/profile",
            Some(&access),
            String::new(),
        )
    };
    let first = [profile(a).await, profile(b).await];
    assert_first_requests_served("token-auth, PostgreSQL", &first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flushed_script_cache_is_reloaded_not_answered_503() {
    if !available("a_flushed_script_cache_is_reloaded_not_answered_503") {
        return;
    }
    let c = super::cluster(&[]);
    assert_eq!(login_nobody(c.a.addr).await, 401);
    // What a fresh or failed-over Redis looks like to a connection that
    // survived: every EVALSHA answers NOSCRIPT.
    assert_eq!(super::redis_cli(&c.redis, &["SCRIPT", "FLUSH"]), "OK");
    assert_eq!(login_nobody(c.a.addr).await, 401);
    assert_eq!(login_nobody(c.b.addr).await, 401);
}

/// The greeter's trickle: a greeting (PostgreSQL insert), the user list
/// (Redis script, PostgreSQL on a miss) and a registration (PostgreSQL
/// insert, then the Redis generation), in turn, on both instances.
fn greeter_trickle(a: SocketAddr, b: SocketAddr) -> Trickle {
    Trickle::start(move |n| {
        let addr = if n % 2 == 0 { a } else { b };
        async move {
            let (method, path, body) = match n % 3 {
                0 => (Method::GET, format!("/helloworld/g{n}"), String::new()),
                1 => (Method::GET, "/v1/users".to_string(), String::new()),
                _ => (
                    Method::POST,
                    "/v1/users".to_string(),
                    json!({ "username": format!("u{n}"), "password": "pw" }).to_string(),
                ),
            };
            status(addr, None, method, &path, None, body).await
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_greeter_answers_no_503_once_a_restarted_redis_or_postgres_is_back() {
    if !available("the_greeter_answers_no_503_once_a_restarted_redis_or_postgres_is_back") {
        return;
    }
    let (pg, mut redis) = (Postgres::start(), RedisServer::start());
    let dir = TempDir::new("greeter-restart");
    let a = Greeter::start(&dir, "a.yaml", &pg.url(), &redis.addr());
    let b = Greeter::start(&dir, "b.yaml", &pg.url(), &redis.addr());

    let trickle = greeter_trickle(a.http, b.http);
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.kill();
    tokio::time::sleep(OUTAGE).await;
    redis.restart();
    let back = Instant::now();
    tokio::time::sleep(AFTER).await;
    assert_invisible("greeter, Redis restarted", &trickle.finish().await, back);

    let trickle = greeter_trickle(a.http, b.http);
    tokio::time::sleep(Duration::from_millis(500)).await;
    pg.stop();
    tokio::time::sleep(OUTAGE).await;
    pg.start_again();
    let back = Instant::now();
    tokio::time::sleep(AFTER).await;
    assert_invisible(
        "greeter, PostgreSQL restarted",
        &trickle.finish().await,
        back,
    );

    // Quiet restarts, then the first request of each kind on each instance.
    let every_kind = async |tag: &str| {
        let mut got = Vec::new();
        for (i, addr) in [a.http, b.http].into_iter().enumerate() {
            got.push(
                status(
                    addr,
                    None,
                    Method::GET,
                    "/helloworld/quiet",
                    None,
                    String::new(),
                )
                .await,
            );
            got.push(status(addr, None, Method::GET, "/v1/users", None, String::new()).await);
            let body = json!({ "username": format!("{tag}{i}"), "password": "pw" });
            got.push(
                status(
                    addr,
                    None,
                    Method::POST,
                    "/v1/users",
                    None,
                    body.to_string(),
                )
                .await,
            );
        }
        got
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.restart();
    assert_first_requests_served("greeter, Redis", &every_kind("redis").await);
    pg.stop();
    pg.start_again();
    assert_first_requests_served("greeter, PostgreSQL", &every_kind("postgres").await);
}

/// Runs `script` with `keys` and `args` twice, as a call repeated after a
/// lost connection would: both answers.
async fn twice<T: redis::FromRedisValue + Clone>(
    conn: &handwire::cluster::Redis,
    script: &redis::Script,
    keys: &[&str],
    args: &[&str],
) -> (T, T) {
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(*key);
    }
    for arg in args {
        invocation.arg(*arg);
    }
    let mut conn = conn.clone();
    let first: T = invocation.invoke_async(&mut conn).await.unwrap();
    let second: T = invocation.invoke_async(&mut conn).await.unwrap();
    (first, second)
}

#[tokio::test]
async fn every_limiter_and_oauth_script_run_twice_answers_and_counts_as_once() {
    use handwire::services::token_auth::cluster::{ADMIT, FAIL, PUT_STATE, TAKE_STATE};
    if !available("every_limiter_and_oauth_script_run_twice_answers_and_counts_as_once") {
        return;
    }
    let server = RedisServer::start();
    let t = Duration::from_secs(2);
    let conn = handwire::cluster::redis("--redis", &server.url(), t, t)
        .await
        .unwrap();
    let count = |key: &str| super::redis_cli(&server, &["ZCARD", key]);

    // ADMIT with a limit of 2: m1 repeated is admitted twice but counted
    // once, so the window is full only at m2.
    let admit = ["lock:u", "win:ip", "win:u"];
    let admit_args = |member| ["1000", "2", "60", member];
    let once: (Vec<u64>, Vec<u64>) = twice(&conn, &ADMIT, &admit, &admit_args("m0")).await;
    assert_eq!(once, (vec![0, 0], vec![0, 0]));
    let repeated: (Vec<u64>, Vec<u64>) = twice(&conn, &ADMIT, &admit, &admit_args("m1")).await;
    assert_eq!(repeated, (vec![0, 0], vec![0, 0]));
    assert_eq!((count("win:ip"), count("win:u")), ("2".into(), "2".into()));
    let full: (Vec<u64>, Vec<u64>) = twice(&conn, &ADMIT, &admit, &admit_args("m2")).await;
    assert_eq!(full.0[0], 1, "the third attempt is one too many");

    // FAIL locking after 3: each failure id counts once, and keeps its answer.
    let fail_args = ["1000", "3", "1800"];
    for (id, want) in [("f1", vec![1, 0]), ("f2", vec![2, 0]), ("f3", vec![0, 1])] {
        let key = format!("failed:{id}");
        let got: (Vec<u64>, Vec<u64>) =
            twice(&conn, &FAIL, &["fails:u", "lock:u", &key], &fail_args).await;
        assert_eq!(got, (want.clone(), want), "failure {id}");
    }
    assert_eq!(super::redis_cli(&server, &["GET", "lock:u"]), "2800");
    let again: (Vec<u64>, Vec<u64>) = twice(
        &conn,
        &FAIL,
        &["fails:u", "lock:u", "failed:f2"],
        &fail_args,
    )
    .await;
    assert_eq!(
        again,
        (vec![2, 0], vec![2, 0]),
        "an old id is not a new failure"
    );

    // PUT_STATE with a capacity of 2 and 1 per client: s1 repeated is
    // stored once, not "full" nor "client full"; s2 from the same client
    // is refused for its client, s3 from another for the capacity.
    let put_args = |state| ["github v 1000 c1", "600", "1000", "2", state, "1"];
    let put_keys = |state, client| [state, "index", client];
    let stored: (Vec<u64>, Vec<u64>) = twice(
        &conn,
        &PUT_STATE,
        &put_keys("state:s1", "client:c1"),
        &put_args("s1"),
    )
    .await;
    assert_eq!(stored, (vec![1, 0], vec![1, 0]));
    assert_eq!(count("client:c1"), "1");
    let client_full: (Vec<u64>, Vec<u64>) = twice(
        &conn,
        &PUT_STATE,
        &put_keys("state:s2", "client:c1"),
        &put_args("s2"),
    )
    .await;
    assert_eq!(client_full, (vec![2, 600], vec![2, 600]));
    let other: (Vec<u64>, Vec<u64>) = twice(
        &conn,
        &PUT_STATE,
        &put_keys("state:s3", "client:c2"),
        &put_args("s3"),
    )
    .await;
    assert_eq!(other, (vec![1, 0], vec![1, 0]));
    let full: (Vec<u64>, Vec<u64>) = twice(
        &conn,
        &PUT_STATE,
        &put_keys("state:s4", "client:c3"),
        &put_args("s4"),
    )
    .await;
    assert_eq!(full, (vec![0, 0], vec![0, 0]));
    assert_eq!(count("index"), "2");

    // TAKE_STATE is single use: the repeat finds nothing (fails closed);
    // the state leaves its client's set, named by the value.
    let taken: (Option<String>, Option<String>) = twice(
        &conn,
        &TAKE_STATE,
        &["state:s1", "index"],
        &["s1", "client:"],
    )
    .await;
    assert_eq!(taken, (Some("github v 1000 c1".into()), None));
    assert_eq!(
        (count("index"), count("client:c1")),
        ("1".into(), "0".into())
    );
}
