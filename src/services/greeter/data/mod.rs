//! The greeter's data layer (Kratos' `data`): a SQLite store implementing the
//! repositories declared in [`super::biz`].
//!
//! SQLite calls block, so the connection lives on a dedicated thread and the
//! async side sends it closures over a channel, getting each result back on a
//! oneshot: the runtime's worker threads never wait on the disk or on a lock.
//! One connection also makes `:memory:` work (every connection to `:memory:`
//! would be a different database). The file is opened in WAL mode, so other
//! processes can read while the service writes. All SQL is parameterized.

use std::fmt;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode};
use tokio::sync::oneshot;

use super::biz::{self, GreeterRepo, User, UserRepo};
use crate::types::BoxFuture;

/// How long a statement waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS greetings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS users (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT    NOT NULL UNIQUE,
    password TEXT    NOT NULL,
    age      INTEGER NOT NULL
);
";

/// Why the store could not be opened or used.
#[derive(Debug)]
pub enum DataError {
    /// Opening or preparing the database failed.
    Open {
        source_name: String,
        error: rusqlite::Error,
    },
    /// The store thread could not be started.
    Thread(std::io::Error),
    /// The store thread has stopped (only after a panic in it).
    Closed,
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::Open { source_name, error } => write!(
                f,
                "data.database.source: cannot open SQLite database {source_name:?}: {error}"
            ),
            DataError::Thread(e) => write!(f, "cannot start the database thread: {e}"),
            DataError::Closed => write!(f, "the database thread has stopped"),
        }
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataError::Open { error, .. } => Some(error),
            DataError::Thread(e) => Some(e),
            DataError::Closed => None,
        }
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the store thread; cheap to clone. The thread ends when the last
/// handle is dropped.
#[derive(Clone)]
pub struct Data {
    jobs: mpsc::Sender<Job>,
}

impl Data {
    /// Opens (creating if absent) the database at `source`, a file path or
    /// `:memory:`, switches it to WAL and creates the tables. Blocking: call
    /// it from [`Data::open_async`] inside the runtime.
    pub fn open(source: &str) -> Result<Data, DataError> {
        let fail = |error| DataError::Open {
            source_name: source.to_owned(),
            error,
        };
        let conn = Connection::open(source).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // Returns the resulting mode (`memory` for :memory:), not an error.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("greeter-sqlite".into())
            .spawn(move || {
                let mut conn = conn;
                while let Ok(job) = rx.recv() {
                    job(&mut conn);
                }
            })
            .map_err(DataError::Thread)?;
        Ok(Data { jobs })
    }

    /// [`Data::open`] on a blocking thread.
    pub async fn open_async(source: String) -> Result<Data, DataError> {
        tokio::task::spawn_blocking(move || Data::open(&source))
            .await
            .map_err(|_| DataError::Closed)?
    }

    /// Runs `f` on the store thread and waits for its result without blocking.
    async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<R> + Send + 'static,
    ) -> Result<rusqlite::Result<R>, DataError> {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(Box::new(move |conn| {
                let _ = tx.send(f(conn));
            }))
            .map_err(|_| DataError::Closed)?;
        rx.await.map_err(|_| DataError::Closed)
    }
}

/// Store failures become `Internal` for the caller; the detail goes to the log.
fn internal(what: &str, detail: impl fmt::Display) -> biz::Error {
    biz::log(&format!("store error while {what}: {detail}"));
    biz::Error::Internal {
        message: format!("store error while {what}"),
    }
}

/// [`GreeterRepo`] over SQLite.
pub struct GreeterStore {
    data: Data,
}

impl GreeterStore {
    /// Greetings stored through `data`.
    pub fn new(data: Data) -> GreeterStore {
        GreeterStore { data }
    }

    /// Number of stored greetings for `name` (for tests and diagnostics).
    pub async fn count_greetings(&self, name: &str) -> Result<i64, biz::Error> {
        let name = name.to_owned();
        self.data
            .run(move |c| {
                c.query_row(
                    "SELECT COUNT(*) FROM greetings WHERE name = ?1",
                    [name],
                    |r| r.get(0),
                )
            })
            .await
            .map_err(|e| internal("counting greetings", e))?
            .map_err(|e| internal("counting greetings", e))
    }
}

impl GreeterRepo for GreeterStore {
    fn save_greeting(&self, name: String) -> BoxFuture<'_, Result<(), biz::Error>> {
        Box::pin(async move {
            self.data
                .run(move |c| c.execute("INSERT INTO greetings (name) VALUES (?1)", [name]))
                .await
                .map_err(|e| internal("saving a greeting", e))?
                .map_err(|e| internal("saving a greeting", e))?;
            Ok(())
        })
    }
}

/// [`UserRepo`] over SQLite.
pub struct UserStore {
    data: Data,
}

impl UserStore {
    /// Users stored through `data`.
    pub fn new(data: Data) -> UserStore {
        UserStore { data }
    }
}

impl UserRepo for UserStore {
    fn create(
        &self,
        username: String,
        password: String,
    ) -> BoxFuture<'_, Result<User, biz::Error>> {
        Box::pin(async move {
            let name = username.clone();
            let result = self
                .data
                .run(move |c| {
                    c.execute(
                        "INSERT INTO users (username, password, age) VALUES (?1, ?2, 1)",
                        params![username, password],
                    )?;
                    Ok(User {
                        id: c.last_insert_rowid(),
                        username,
                        password,
                        age: 1,
                    })
                })
                .await
                .map_err(|e| internal("creating a user", e))?;
            match result {
                Ok(user) => Ok(user),
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == ErrorCode::ConstraintViolation =>
                {
                    Err(biz::Error::AlreadyExists {
                        reason: "USER_ALREADY_EXISTS",
                        message: format!("username {name:?} is already registered"),
                    })
                }
                Err(e) => Err(internal("creating a user", e)),
            }
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<User>, biz::Error>> {
        Box::pin(async move {
            self.data
                .run(|c| {
                    let mut stmt =
                        c.prepare("SELECT id, username, password, age FROM users ORDER BY id")?;
                    let rows = stmt.query_map([], |r| {
                        Ok(User {
                            id: r.get(0)?,
                            username: r.get(1)?,
                            password: r.get(2)?,
                            age: r.get(3)?,
                        })
                    })?;
                    rows.collect()
                })
                .await
                .map_err(|e| internal("listing users", e))?
                .map_err(|e| internal("listing users", e))
        })
    }

    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, biz::Error>> {
        Box::pin(async move {
            let n = self
                .data
                .run(move |c| c.execute("DELETE FROM users WHERE id = ?1", [id]))
                .await
                .map_err(|e| internal("deleting a user", e))?
                .map_err(|e| internal("deleting a user", e))?;
            Ok(n > 0)
        })
    }
}

#[cfg(test)]
mod tests;
