//! The greeter's repositories over PostgreSQL (cargo feature `cluster`): the
//! store several greeter instances share.
//!
//! The tables are those of the SQLite store, in the schema [`SCHEMA`],
//! created by migration 1 ([`MIGRATIONS`], applied once under an advisory
//! lock when [`crate::cluster::postgres`] opens the pool, so instances may
//! start together).
//! Every statement is parameterized and prepared once per connection
//! (`prepare_cached`).
//!
//! Each call (waiting for a pooled connection, preparing, running) is
//! bounded by one time-out, so a server that is down, restarting or stalled
//! gives [`biz::Error::Unavailable`] (503 / UNAVAILABLE), never a hang. The
//! errors are those of the SQLite store: a taken username is
//! [`biz::Error::username_taken`]; a server that is gone or out of
//! resources is `Unavailable`; anything else is `Internal`, with the detail
//! in the log only. A write that times out may still have been committed:
//! the answer then says "unavailable", not "not stored".

use std::future::Future;
use std::time::Duration;

use tokio_postgres::error::SqlState;

use super::super::biz::{self, GreeterRepo, User, UserRepo};
use crate::cluster::{self, Migration, PgClient, PgPool, StartError, Unavailable};
use crate::types::BoxFuture;

/// The PostgreSQL schema holding the greeter's tables.
pub const SCHEMA: &str = "greeter";

/// The configuration key named by start-up errors.
pub const SOURCE_KEY: &str = "data.database.source";

/// Connections per instance: every call is one short statement, so a few
/// connections serve many concurrent requests.
pub const POOL_SIZE: usize = 16;

/// The greeter's schema, step by step; never edit a released step.
pub const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "greetings and users, as in the SQLite store",
    sql: "
CREATE TABLE greeter.greetings (
    id         BIGSERIAL   PRIMARY KEY,
    name       TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE greeter.users (
    id       BIGSERIAL PRIMARY KEY,
    username TEXT      NOT NULL UNIQUE,
    password TEXT      NOT NULL,
    age      INTEGER   NOT NULL
);
",
}];

/// [`GreeterRepo`] and [`UserRepo`] over a PostgreSQL pool.
pub struct PgStore {
    pool: PgPool,
    timeout: Duration,
}

/// Why a call did not give rows.
enum Failure {
    /// No connection, or no answer within the time-out.
    Unavailable(Unavailable),
    /// The server answered with an error.
    Db(tokio_postgres::Error),
}

impl PgStore {
    /// Connects to `url` (a pool of [`POOL_SIZE`]), checks one connection
    /// and applies the migrations. `timeout` bounds connecting and, later,
    /// every call. Errors name [`SOURCE_KEY`].
    pub async fn connect(url: &str, timeout: Duration) -> Result<PgStore, StartError> {
        let pool =
            cluster::postgres(SOURCE_KEY, url, SCHEMA, MIGRATIONS, POOL_SIZE, timeout).await?;
        Ok(PgStore { pool, timeout })
    }

    /// Runs `call` on a pooled connection; the whole of it, waiting for the
    /// connection included, within the time-out.
    async fn call<T, Fut>(&self, call: impl FnOnce(PgClient) -> Fut) -> Result<T, Failure>
    where
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        cluster::pg_call(&self.pool, self.timeout, call)
            .await
            .map_err(Failure::Unavailable)?
            .map_err(Failure::Db)
    }

    /// Number of stored greetings for `name` (for tests and diagnostics).
    pub async fn count_greetings(&self, name: &str) -> Result<i64, biz::Error> {
        let what = "counting greetings";
        let row = self
            .call(|c| async move {
                let s = c
                    .prepare_cached("SELECT COUNT(*) FROM greeter.greetings WHERE name = $1")
                    .await?;
                c.query_one(&s, &[&name]).await
            })
            .await
            .map_err(|f| failure(what, f))?;
        Ok(row.get(0))
    }
}

/// The caller's error for `f` while doing `what`; the detail is logged.
fn failure(what: &str, f: Failure) -> biz::Error {
    let unavailable = match f {
        Failure::Unavailable(u) => u,
        Failure::Db(e) if cluster::pg_is_unavailable(&e) => cluster::pg_unavailable(&e),
        Failure::Db(e) => {
            let detail = cluster::pg_detail(&e);
            biz::log(&format!("store error while {what}: {detail}"));
            return biz::Error::Internal {
                message: format!("store error while {what}"),
            };
        }
    };
    let message = format!("store unavailable while {what}: {unavailable}");
    biz::log(&message);
    biz::Error::Unavailable { message }
}

impl GreeterRepo for PgStore {
    fn save_greeting(&self, name: String) -> BoxFuture<'_, Result<(), biz::Error>> {
        Box::pin(async move {
            let name = &name;
            self.call(|c| async move {
                let s = c
                    .prepare_cached("INSERT INTO greeter.greetings (name) VALUES ($1)")
                    .await?;
                c.execute(&s, &[name]).await
            })
            .await
            .map_err(|f| failure("saving a greeting", f))?;
            Ok(())
        })
    }
}

impl UserRepo for PgStore {
    fn create(
        &self,
        username: String,
        password: String,
    ) -> BoxFuture<'_, Result<User, biz::Error>> {
        Box::pin(async move {
            let (name, pass) = (&username, &password);
            let row = self
                .call(|c| async move {
                    let s = c
                        .prepare_cached(
                            "INSERT INTO greeter.users (username, password, age) \
                             VALUES ($1, $2, 1) RETURNING id",
                        )
                        .await?;
                    c.query_one(&s, &[name, pass]).await
                })
                .await;
            match row {
                Ok(row) => Ok(User {
                    id: row.get(0),
                    username,
                    password,
                    age: 1,
                }),
                // `username` is the only unique column besides the id.
                Err(Failure::Db(e)) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    Err(biz::Error::username_taken(&username))
                }
                Err(f) => Err(failure("creating a user", f)),
            }
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<User>, biz::Error>> {
        Box::pin(async move {
            let rows = self
                .call(|c| async move {
                    let s = c
                        .prepare_cached(
                            "SELECT id, username, password, age FROM greeter.users ORDER BY id",
                        )
                        .await?;
                    c.query(&s, &[]).await
                })
                .await
                .map_err(|f| failure("listing users", f))?;
            Ok(rows
                .iter()
                .map(|r| User {
                    id: r.get(0),
                    username: r.get(1),
                    password: r.get(2),
                    age: i64::from(r.get::<_, i32>(3)),
                })
                .collect())
        })
    }

    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, biz::Error>> {
        Box::pin(async move {
            let n = self
                .call(|c| async move {
                    let s = c
                        .prepare_cached("DELETE FROM greeter.users WHERE id = $1")
                        .await?;
                    c.execute(&s, &[&id]).await
                })
                .await
                .map_err(|f| failure("deleting a user", f))?;
            Ok(n > 0)
        })
    }
}

/// `url` without its password, for the start-up line:
/// `user@host:port/database`.
pub(crate) fn describe(url: &str) -> String {
    let Ok(config) = url.parse::<tokio_postgres::Config>() else {
        return "(unparsable connection string)".into();
    };
    let user = config.get_user().unwrap_or("");
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or(user);
    format!("{user}@{host}:{port}/{db}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_leaves_the_password_out() {
        let cases = [
            (
                "postgres://ann:secret@db.internal:6432/app",
                "ann@db.internal:6432/app",
            ),
            ("postgresql://ann:secret@db/app", "ann@db:5432/app"),
            ("host=db user=ann password=secret", "ann@db:5432/ann"),
        ];
        for (url, want) in cases {
            assert_eq!(describe(url), want, "{url}");
            assert!(!describe(url).contains("secret"));
        }
    }
}
