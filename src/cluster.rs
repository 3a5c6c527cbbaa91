//! Connections to the shared servers of a scale-out deployment (cargo
//! feature `cluster`): a PostgreSQL pool and a Redis connection, each with a
//! time-out on every call, and the errors both services report.
//!
//! Two rules hold for every use:
//!
//! - **Start-up errors name the key** the operator set (`--db`,
//!   `data.database.source`, `data.cache.addr`, …) and say which of three
//!   things went wrong: the server is unreachable, it refused the
//!   credentials, or the value itself is malformed ([`StartError`]).
//! - **At run time nothing waits longer than the configured time-out**:
//!   [`within`] bounds each call; a server that is down, restarting or
//!   stalled gives [`Unavailable`], which the services answer with 503 /
//!   UNAVAILABLE. The pool and the Redis connection manager reconnect on
//!   their own, so a server that comes back is used again without a restart.
//!
//! Each service keeps its tables in its own PostgreSQL schema (the
//! connection's `search_path`), so token-auth and the greeter can share one
//! database, and applies its versioned migrations when it opens its pool
//! ([`postgres`]).

use std::fmt;
use std::future::Future;
use std::time::Duration;

pub use deadpool_postgres::{Object as PgClient, Pool as PgPool};
pub use redis::aio::ConnectionManager as Redis;

/// Which shared server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// PostgreSQL.
    Postgres,
    /// Redis.
    Redis,
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Server::Postgres => "PostgreSQL",
            Server::Redis => "Redis",
        })
    }
}

/// What went wrong when first connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The value is not a usable connection string / address.
    Invalid,
    /// Nothing answered at the address, or not in time.
    Unreachable,
    /// The server answered and refused the user or password.
    Credentials,
    /// The server answered with another error (e.g. unknown database).
    Refused,
}

/// A start-up failure: the key, the server, what went wrong and the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    /// The setting to fix (`--db`, `data.cache.addr`, …).
    pub key: String,
    /// Which server.
    pub server: Server,
    /// The kind of failure.
    pub problem: Problem,
    /// What the driver said (passwords are never part of it).
    pub detail: String,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, server, detail) = (&self.key, self.server, &self.detail);
        match self.problem {
            Problem::Invalid => write!(f, "{key}: not a valid {server} address: {detail}"),
            Problem::Unreachable => write!(f, "{key}: {server} is unreachable: {detail}"),
            Problem::Credentials => {
                write!(f, "{key}: {server} refused the credentials: {detail}")
            }
            Problem::Refused => write!(f, "{key}: {server} refused the connection: {detail}"),
        }
    }
}

impl std::error::Error for StartError {}

impl StartError {
    /// A function making the errors about `key` on `server`.
    fn maker(key: &str, server: Server) -> impl Fn(Problem, String) -> StartError + '_ {
        move |problem, detail| StartError {
            key: key.to_string(),
            server,
            problem,
            detail,
        }
    }
}

/// A shared server did not answer usefully at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// Which server.
    pub server: Server,
    /// What happened (time-out, connection refused, …).
    pub reason: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} unavailable: {}", self.server, self.reason)
    }
}

impl std::error::Error for Unavailable {}

/// Run `call` for at most `timeout`; past it the call is dropped and the
/// answer is [`Unavailable`] ("no answer within …").
pub async fn within<T>(
    server: Server,
    timeout: Duration,
    call: impl Future<Output = T>,
) -> Result<T, Unavailable> {
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| Unavailable {
            server,
            reason: format!("no answer within {timeout:?}"),
        })
}

// ---------------------------------------------------------------- PostgreSQL

/// Open a pool of at most `size` connections to `url` whose tables live in
/// `schema`, check that one connection works and apply the `migrations` the
/// schema has not seen ([`migrate`]). `timeout` bounds connecting, waiting
/// for a free connection and, through [`pg_call`], every call.
pub async fn postgres(
    key: &str,
    url: &str,
    schema: &str,
    migrations: &[Migration],
    size: usize,
    timeout: Duration,
) -> Result<PgPool, StartError> {
    let fail = StartError::maker(key, Server::Postgres);
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| fail(Problem::Invalid, e.to_string()))?;
    let options = match config.get_options() {
        Some(o) if !o.is_empty() => format!("{o} -c search_path={schema}"),
        _ => format!("-c search_path={schema}"),
    };
    config.options(options);
    config.connect_timeout(timeout);
    config.application_name(schema);
    let manager = deadpool_postgres::Manager::from_config(
        config,
        tokio_postgres::NoTls,
        deadpool_postgres::ManagerConfig {
            recycling_method: deadpool_postgres::RecyclingMethod::Fast,
        },
    );
    let pool = PgPool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(timeout))
        .create_timeout(Some(timeout))
        .recycle_timeout(Some(timeout))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| fail(Problem::Invalid, e.to_string()))?;
    match pool.get().await {
        Ok(_) => {}
        Err(deadpool_postgres::PoolError::Backend(e)) => {
            let problem = match e.code() {
                Some(c) if c.code().starts_with("28") => Problem::Credentials,
                Some(_) => Problem::Refused,
                None => Problem::Unreachable,
            };
            return Err(fail(problem, pg_detail(&e)));
        }
        Err(e) => return Err(fail(Problem::Unreachable, e.to_string())),
    }
    migrate(key, &pool, schema, migrations, timeout).await?;
    Ok(pool)
}

/// Run `call` on a connection from `pool`, the whole of it (waiting for the
/// connection included) within `timeout`: `call`'s own result, or
/// [`Unavailable`] when no connection or no answer came in time.
pub async fn pg_call<T, E, Fut>(
    pool: &PgPool,
    timeout: Duration,
    call: impl FnOnce(PgClient) -> Fut,
) -> Result<Result<T, E>, Unavailable>
where
    Fut: Future<Output = Result<T, E>>,
{
    let run = async {
        let client = pg(pool, timeout).await?;
        Ok(call(client).await)
    };
    within(Server::Postgres, timeout, run).await?
}

/// A connection from `pool` within `timeout`, or why not.
async fn pg(pool: &PgPool, timeout: Duration) -> Result<PgClient, Unavailable> {
    match within(Server::Postgres, timeout, pool.get()).await? {
        Ok(client) => Ok(client),
        Err(deadpool_postgres::PoolError::Backend(e)) => Err(pg_unavailable(&e)),
        Err(e) => Err(Unavailable {
            server: Server::Postgres,
            reason: e.to_string(),
        }),
    }
}

/// Whether `e` says the server (not the statement) is the problem: the
/// connection is gone, the server is shutting down or starting, or out of
/// resources. Such errors are answered 503, others 500.
pub(crate) fn pg_is_unavailable(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        // 08: connection exception; 53: insufficient resources;
        // 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
        Some(code) => {
            let c = code.code();
            c.starts_with("08") || c.starts_with("53") || matches!(c, "57P01" | "57P02" | "57P03")
        }
        // No SQLSTATE: an I/O error on the socket.
        None => true,
    }
}

/// `e` as [`Unavailable`].
pub(crate) fn pg_unavailable(e: &tokio_postgres::Error) -> Unavailable {
    Unavailable {
        server: Server::Postgres,
        reason: pg_detail(e),
    }
}

/// The driver's message with the server's own text when there is one
/// (tokio-postgres' `Display` says only "db error").
pub(crate) fn pg_detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

/// One step of a service's schema: applied once, in version order.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// 1, 2, 3, …: never reused, never edited once released.
    pub version: i32,
    /// What it does, kept in the migrations table.
    pub name: &'static str,
    /// The statements.
    pub sql: &'static str,
}

/// Create `schema` if needed and apply the `migrations` it has not seen, in
/// one transaction under an advisory lock, so instances starting together
/// apply each step exactly once. Versions applied are recorded in
/// `schema.schema_migrations`; a database newer than this binary (a version
/// it does not know) is refused.
async fn migrate(
    key: &str,
    pool: &PgPool,
    schema: &str,
    migrations: &[Migration],
    timeout: Duration,
) -> Result<(), StartError> {
    let fail = StartError::maker(key, Server::Postgres);
    let pg_fail = |e: tokio_postgres::Error| fail(Problem::Refused, pg_detail(&e));
    let mut client = pg(pool, timeout)
        .await
        .map_err(|e| fail(Problem::Unreachable, e.reason))?;
    let tx = client.transaction().await.map_err(pg_fail)?;
    // The lock is released with the transaction; the key is the schema's.
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&schema])
        .await
        .map_err(pg_fail)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
             version    INTEGER     PRIMARY KEY,
             name       TEXT        NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(pg_fail)?;
    let applied: Vec<i32> = tx
        .query(
            &format!("SELECT version FROM {schema}.schema_migrations ORDER BY version"),
            &[],
        )
        .await
        .map_err(pg_fail)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let newest = migrations.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some(unknown) = applied.iter().find(|v| **v > newest) {
        return Err(fail(
            Problem::Refused,
            format!(
                "schema {schema} is at migration {unknown}, newer than this binary knows \
                 ({newest}); run the newer binary"
            ),
        ));
    }
    for m in migrations.iter().filter(|m| !applied.contains(&m.version)) {
        tx.batch_execute(m.sql).await.map_err(|e| {
            fail(
                Problem::Refused,
                format!("migration {} ({}): {}", m.version, m.name, pg_detail(&e)),
            )
        })?;
        tx.execute(
            &format!("INSERT INTO {schema}.schema_migrations (version, name) VALUES ($1, $2)"),
            &[&m.version, &m.name],
        )
        .await
        .map_err(pg_fail)?;
    }
    tx.commit().await.map_err(pg_fail)
}

// --------------------------------------------------------------------- Redis

/// Connect to the Redis server at `url` (`redis://[user:password@]host:port[/db]`
/// or `redis+unix:///path`). `read_timeout` bounds each answer,
/// `write_timeout` each (re)connection; a dropped connection is re-made in
/// the background on the next call.
pub async fn redis(
    key: &str,
    url: &str,
    read_timeout: Duration,
    write_timeout: Duration,
) -> Result<Redis, StartError> {
    let fail = StartError::maker(key, Server::Redis);
    let client = redis::Client::open(url).map_err(|e| fail(Problem::Invalid, e.to_string()))?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_response_timeout(Some(read_timeout))
        .set_connection_timeout(Some(write_timeout))
        // Re-connect quickly and give up soon: the caller's time-out, not
        // the retry loop, decides how long a request waits.
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(500));
    let connect = async {
        let mut conn = Redis::new_with_config(client, config).await?;
        // A server that needs a password answers commands, not the connect.
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok::<_, redis::RedisError>(conn)
    };
    match tokio::time::timeout(read_timeout + write_timeout * 2, connect).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => {
            let problem = if e.kind() == redis::ErrorKind::AuthenticationFailed
                || matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
            {
                Problem::Credentials
            } else if e.is_io_error() || e.is_timeout() || e.is_connection_refusal() {
                Problem::Unreachable
            } else {
                Problem::Refused
            };
            Err(fail(problem, e.to_string()))
        }
        Err(_) => Err(fail(
            Problem::Unreachable,
            format!("no answer within {:?}", read_timeout + write_timeout * 2),
        )),
    }
}

/// `call` (a Redis command or script) within `timeout`; an error or no
/// answer in time is [`Unavailable`].
pub async fn redis_call<T>(
    timeout: Duration,
    call: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T, Unavailable> {
    within(Server::Redis, timeout, call)
        .await?
        .map_err(|e| redis_unavailable(&e))
}

/// A Redis error at run time as [`Unavailable`].
fn redis_unavailable(e: &redis::RedisError) -> Unavailable {
    Unavailable {
        server: Server::Redis,
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_errors_name_the_key_the_server_and_the_kind_of_failure() {
        let e = |problem| StartError {
            key: "--db".into(),
            server: Server::Postgres,
            problem,
            detail: "x".into(),
        };
        assert_eq!(
            e(Problem::Unreachable).to_string(),
            "--db: PostgreSQL is unreachable: x"
        );
        assert_eq!(
            e(Problem::Credentials).to_string(),
            "--db: PostgreSQL refused the credentials: x"
        );
        assert_eq!(
            e(Problem::Invalid).to_string(),
            "--db: not a valid PostgreSQL address: x"
        );
    }

    #[tokio::test]
    async fn a_malformed_url_is_a_start_up_error_naming_the_key() {
        let err = postgres(
            "--db",
            "postgres://x:y@host:notaport/db",
            "s",
            &[],
            1,
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
        assert_eq!((err.key.as_str(), err.problem), ("--db", Problem::Invalid));
        let err = redis(
            "--redis",
            "http://nope",
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
        assert_eq!(
            (err.key.as_str(), err.problem),
            ("--redis", Problem::Invalid)
        );
    }

    #[tokio::test]
    async fn nothing_listening_is_unreachable_within_the_time_out() {
        // A port that was free a moment ago: connection refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let t = Duration::from_millis(500);
        let started = std::time::Instant::now();
        let url = format!("postgres://u:p@127.0.0.1:{port}/db");
        let err = postgres("--db", &url, "s", &[], 1, t).await.unwrap_err();
        assert_eq!(err.problem, Problem::Unreachable, "{err}");
        assert!(!err.to_string().contains(":p@"), "no password in {err}");
        let url = format!("redis://127.0.0.1:{port}");
        let err = redis("data.cache.addr", &url, t, t).await.unwrap_err();
        assert_eq!(err.problem, Problem::Unreachable, "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn within_turns_a_stalled_call_into_unavailable() {
        let stalled = std::future::pending::<()>();
        let err = within(Server::Redis, Duration::from_millis(20), stalled)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Redis unavailable: no answer within 20ms");
    }
}
