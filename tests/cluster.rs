//! Several instances on one PostgreSQL + Redis (feature `cluster`): two
//! real token-auth processes (and, in [`greeter`], two greeter processes)
//! share users, the blacklist, login limits, locks and OAuth states, and a
//! shared server that goes away gives 503 and comes back without a restart.
//!
//! Run with `cargo test --features cluster --test cluster`. Each test starts
//! its own PostgreSQL and Redis on loopback (tests/support/servers.rs); where
//! they are not installed the tests print why and pass, unless
//! `HANDWIRE_CLUSTER_REQUIRED=1` (set by `.ci/run`).

mod support;

#[path = "cluster/greeter.rs"]
mod greeter;
#[path = "cluster/oauth.rs"]
mod oauth;
#[path = "cluster/parity.rs"]
mod parity;
#[path = "cluster/restart.rs"]
mod restart;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use support::fake_captcha::FakeCaptcha;
use support::http::{Client, Proto, Reply};
use support::servers::{available, free_port, Postgres, RedisServer};
use support::token_auth::{TEST_ENC_KEY, TEST_SECRET};

const TOKEN_AUTH: &str = env!("CARGO_BIN_EXE_token-auth");
/// The shared-server time-out the instances run with.
const SHARED_TIMEOUT: &str = "500ms";

/// A token-auth process; killed when dropped.
struct Instance {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Instance {
    fn start(pg: &Postgres, redis: &RedisServer, extra: &[&str]) -> Instance {
        let db = pg.url();
        let redis = redis.url();
        let mut args = vec![
            "--addr",
            "127.0.0.1:0",
            "--db",
            &db,
            "--redis",
            &redis,
            "--shared-timeout",
            SHARED_TIMEOUT,
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let (child, addrs) = support::bin::spawn_draining(
            TOKEN_AUTH,
            &args,
            &[
                ("TOKEN_AUTH_SECRET", TEST_SECRET),
                ("TOKEN_AUTH_ENC_KEY", TEST_ENC_KEY),
            ],
            1,
        );
        Instance {
            child,
            addr: addrs[0],
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn post(&self, path: &str, body: Value, token: Option<&str>) -> Reply {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("content-type", "application/json")];
        if let Some(auth) = &auth {
            headers.push(("authorization", auth));
        }
        Client::new(Proto::H1)
            .request(Method::POST, &self.url(path), &headers, body.to_string())
            .await
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        Client::new(Proto::H1)
            .request(Method::GET, &self.url(path), &headers, Bytes::new())
            .await
    }

    async fn register(&self, username: &str, password: &str) -> Reply {
        self.post(
            "/auth/register",
            json!({ "username": username, "password": password }),
            None,
        )
        .await
    }

    async fn login(&self, username: &str, password: &str) -> Reply {
        self.post(
            "/login",
            json!({ "username": username, "password": password }),
            None,
        )
        .await
    }
}

/// PostgreSQL, Redis and two instances A and B on them.
struct Cluster {
    a: Instance,
    b: Instance,
    redis: RedisServer,
    pg: Postgres,
}

fn cluster(extra: &[&str]) -> Cluster {
    let pg = Postgres::start();
    let redis = RedisServer::start();
    let a = Instance::start(&pg, &redis, extra);
    let b = Instance::start(&pg, &redis, extra);
    Cluster { a, b, redis, pg }
}

/// `redis-cli` against the test server.
fn redis_cli(redis: &RedisServer, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(redis.port.to_string())
        .args(args)
        .output()
        .expect("redis-cli");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const PASSWORD: &str = "Secret123!";

#[tokio::test]
async fn a_token_logged_out_on_a_is_refused_on_b() {
    if !available("a_token_logged_out_on_a_is_refused_on_b") {
        return;
    }
    let c = cluster(&[]);
    let reply = c.a.register("ann", PASSWORD).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let access = reply.str("access_token");
    let refresh = reply.str("refresh_token");
    // Registered on A, known to B: users are shared.
    assert_eq!(
        c.b.get("/api/user/profile", Some(&access)).await.status,
        StatusCode::OK
    );
    let out =
        c.a.post(
            "/auth/logout",
            json!({ "refresh_token": refresh }),
            Some(&access),
        )
        .await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text());
    let on_b = c.b.get("/api/user/profile", Some(&access)).await;
    assert_eq!(on_b.status, StatusCode::UNAUTHORIZED, "{}", on_b.text());
    assert_eq!(on_b.error(), "token revoked");
    let refreshed =
        c.b.post("/auth/refresh", json!({ "refresh_token": refresh }), None)
            .await;
    assert_eq!(
        refreshed.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        refreshed.text()
    );
    // The access token, the refresh token, and their family (logout ends
    // the sign-in).
    assert_eq!(
        c.pg.psql("SELECT count(*) FROM token_auth.token_blacklist"),
        "3"
    );
}

#[tokio::test]
async fn the_sixth_login_in_a_minute_is_refused_whichever_instance_it_hits() {
    if !available("the_sixth_login_in_a_minute_is_refused_whichever_instance_it_hits") {
        return;
    }
    let c = cluster(&[]);
    assert_eq!(
        c.a.register("bob", PASSWORD).await.status,
        StatusCode::CREATED
    );
    for n in 0..5 {
        let instance = if n % 2 == 0 { &c.a } else { &c.b };
        let reply = instance.login("bob", PASSWORD).await;
        assert_eq!(reply.status, StatusCode::OK, "login {n}: {}", reply.text());
    }
    for instance in [&c.b, &c.a] {
        let sixth = instance.login("bob", PASSWORD).await;
        assert_eq!(
            sixth.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{}",
            sixth.text()
        );
        let retry: u64 = sixth.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry), "Retry-After {retry}");
    }
}

#[tokio::test]
async fn twelve_logins_at_once_across_both_instances_admit_exactly_five() {
    if !available("twelve_logins_at_once_across_both_instances_admit_exactly_five") {
        return;
    }
    let c = cluster(&[]);
    assert_eq!(
        c.a.register("fay", PASSWORD).await.status,
        StatusCode::CREATED
    );
    let mut attempts = tokio::task::JoinSet::new();
    for n in 0..12 {
        let url = if n % 2 == 0 { &c.a } else { &c.b }.url("/login");
        attempts.spawn(async move {
            let body = json!({ "username": "fay", "password": PASSWORD }).to_string();
            let headers = [("content-type", "application/json")];
            let reply = Client::new(Proto::H1)
                .request(Method::POST, &url, &headers, body)
                .await;
            reply.status
        });
    }
    let statuses = attempts.join_all().await;
    let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((ok, refused), (5, 7), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_on_a_make_b_ask_for_a_captcha_that_b_verifies() {
    if !available("failures_on_a_make_b_ask_for_a_captcha_that_b_verifies") {
        return;
    }
    let provider = FakeCaptcha::start("127.0.0.1:0", "cluster-captcha-secret").await;
    let config = support::temp_path("cluster-captcha", ".yaml");
    std::fs::write(
        &config,
        format!(
            "captcha:\n  verify_url: {}\n  secret: cluster-captcha-secret\n",
            provider.verify_url()
        ),
    )
    .unwrap();
    let c = cluster(&["--config", config.to_str().unwrap()]);
    assert_eq!(
        c.a.register("dot", PASSWORD).await.status,
        StatusCode::CREATED
    );
    for _ in 0..3 {
        let r = c.a.login("dot", "wrong-password-1").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    // B reads the count A wrote: the right password alone is refused there.
    let on_b = c.b.login("dot", PASSWORD).await;
    assert_eq!(on_b.status, StatusCode::UNAUTHORIZED, "{}", on_b.text());
    assert_eq!(on_b.error(), "captcha required");
    let token = provider.solve("localhost", "login");
    let body = json!({ "username": "dot", "password": PASSWORD, "captcha_token": token });
    let on_b = c.b.post("/login", body, None).await;
    assert_eq!(on_b.status, StatusCode::OK, "{}", on_b.text());
    // The success reset the shared count (A asks for no captcha now).
    assert_eq!(
        redis_cli(&c.redis, &["EXISTS", "token-auth:fails:dot"]),
        "0"
    );
    assert_eq!(provider.calls().len(), 1);
    let _ = std::fs::remove_file(config);
}

#[tokio::test]
async fn a_lock_made_on_a_holds_on_b_and_failures_count_across_instances() {
    if !available("a_lock_made_on_a_holds_on_b_and_failures_count_across_instances") {
        return;
    }
    let c = cluster(&[]);
    assert_eq!(
        c.a.register("cat", PASSWORD).await.status,
        StatusCode::CREATED
    );
    // Ten failures need more than the five attempts a minute allows, so the
    // first seven are written as the limiter would have counted them.
    redis_cli(&c.redis, &["SET", "token-auth:fails:cat", "7", "EX", "600"]);
    let eighth = c.a.login("cat", "wrong-password-1").await;
    assert_eq!(eighth.status, StatusCode::UNAUTHORIZED);
    let ninth = c.b.login("cat", "wrong-password-1").await;
    assert_eq!(ninth.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        ninth.json()["captcha_required"],
        true,
        "count shared: 9 failures"
    );
    let tenth = c.a.login("cat", "wrong-password-1").await;
    assert_eq!(tenth.status, StatusCode::UNAUTHORIZED);
    let right_password_on_b = c.b.login("cat", PASSWORD).await;
    assert_eq!(
        right_password_on_b.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        right_password_on_b.text()
    );
    assert!(
        right_password_on_b.error().starts_with("account locked"),
        "{}",
        right_password_on_b.text()
    );
    let retry: u64 = right_password_on_b
        .header("retry-after")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1790..=1800).contains(&retry),
        "locked for 30 minutes, not {retry}"
    );
}

/// Poll `check` until it is true or `within` passes.
async fn eventually(within: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn redis_killed_gives_503_with_the_documented_body_and_recovery_after_restart() {
    if !available("redis_killed_gives_503_with_the_documented_body_and_recovery_after_restart") {
        return;
    }
    let mut c = cluster(&[]);
    let reply = c.a.register("dan", PASSWORD).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let access = reply.str("access_token");

    c.redis.kill();
    for instance in [&c.a, &c.b] {
        let started = Instant::now();
        let login = instance.login("dan", PASSWORD).await;
        assert_eq!(
            login.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            login.text()
        );
        assert_eq!(login.json(), json!({ "error": "store unavailable" }));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
    // What does not need Redis goes on: the blacklist is in PostgreSQL.
    assert_eq!(
        c.b.get("/api/user/profile", Some(&access)).await.status,
        StatusCode::OK
    );

    c.redis.restart();
    for instance in [&c.a, &c.b] {
        let recovered = eventually(Duration::from_secs(10), async || {
            instance.login("dan", PASSWORD).await.status == StatusCode::OK
        })
        .await;
        assert!(recovered, "login works again after Redis restarted");
    }
}

#[tokio::test]
async fn postgres_stopped_gives_503_within_the_time_out_and_recovery_after_restart() {
    if !available("postgres_stopped_gives_503_within_the_time_out_and_recovery_after_restart") {
        return;
    }
    let c = cluster(&[]);
    let reply = c.a.register("eve", PASSWORD).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let access = reply.str("access_token");

    c.pg.stop();
    for instance in [&c.a, &c.b] {
        let started = Instant::now();
        // The blacklist cannot be read: the token is refused, not let through.
        let profile = instance.get("/api/user/profile", Some(&access)).await;
        assert_eq!(
            profile.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            profile.text()
        );
        assert_eq!(profile.json(), json!({ "error": "store unavailable" }));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
    c.pg.start_again();
    for instance in [&c.a, &c.b] {
        let recovered = eventually(Duration::from_secs(10), async || {
            instance
                .get("/api/user/profile", Some(&access))
                .await
                .status
                == StatusCode::OK
        })
        .await;
        assert!(recovered, "requests work again after PostgreSQL restarted");
    }
}

#[tokio::test]
async fn create_admin_writes_to_postgres_and_both_instances_know_the_admin() {
    if !available("create_admin_writes_to_postgres_and_both_instances_know_the_admin") {
        return;
    }
    let c = cluster(&[]);
    let mut admin = Command::new(TOKEN_AUTH)
        .args(["create-admin", "--username", "root", "--db", &c.pg.url()])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("create-admin");
    use std::io::Write;
    writeln!(admin.stdin.take().unwrap(), "{PASSWORD}").unwrap();
    let out = admin.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for instance in [&c.a, &c.b] {
        let login = instance.login("root", PASSWORD).await;
        assert_eq!(login.status, StatusCode::OK, "{}", login.text());
        let users = instance
            .get("/api/admin/users", Some(&login.str("access_token")))
            .await;
        assert_eq!(users.status, StatusCode::OK, "{}", users.text());
        assert_eq!(users.json()["users"][0]["role"], "admin");
    }
}

/// Run the binary, which must exit within 10 s; (success, stderr).
fn start_up(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(TOKEN_AUTH)
        .args(["--addr", "127.0.0.1:0", "--quiet"])
        .args(args)
        .env("TOKEN_AUTH_SECRET", TEST_SECRET)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run token-auth");
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("token-auth {args:?} started instead of failing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn start_up_errors_name_the_flag_and_say_unreachable_or_refused_credentials() {
    if !available("start_up_errors_name_the_flag_and_say_unreachable_or_refused_credentials") {
        return;
    }
    let pg = Postgres::start();
    let redis = RedisServer::start();
    let wrong = pg.url_with_password("not-the-password");
    let (ok, err) = start_up(&["--db", &wrong]);
    assert!(!ok);
    assert!(
        err.contains("--db: PostgreSQL refused the credentials"),
        "{err}"
    );
    assert!(!err.contains("not-the-password"), "no password in {err}");

    let nobody = format!("postgres://u:p@127.0.0.1:{}/db", free_port());
    let (ok, err) = start_up(&["--db", &nobody]);
    assert!(!ok);
    assert!(err.contains("--db: PostgreSQL is unreachable"), "{err}");

    let no_redis = format!("redis://127.0.0.1:{}", free_port());
    let (ok, err) = start_up(&["--db", &pg.url(), "--redis", &no_redis]);
    assert!(!ok);
    assert!(err.contains("--redis: Redis is unreachable"), "{err}");
    drop(redis);
}
