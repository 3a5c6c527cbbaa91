//! The greeter's data layer (Kratos' `data`): a SQLite store implementing the
//! repositories declared in [`super::biz`], and, with the cargo feature
//! `cluster`, a PostgreSQL store (`postgres`) with the user list cached in
//! Redis (`cache`) for several instances sharing one database. The rest of
//! this page is about SQLite.
//!
//! SQLite calls block, so the connection lives on a dedicated thread
//! ([`writer`]) and the async side sends it requests over a channel, getting
//! each result back on a oneshot: the runtime's worker threads never wait on
//! the disk or on a lock. That thread commits writes in groups: every write
//! queued while it was busy goes into the next transaction, and each caller
//! is answered after the commit that holds its row.
//!
//! # Durability
//!
//! The file is opened in WAL mode (other processes can read while the
//! service writes) with `synchronous = FULL`: every commit fsyncs the WAL,
//! so **a reply means the row survives a process crash and a power loss**
//! (given a disk that honours fsync). `NORMAL` would skip that fsync and
//! only survive a process crash; with group commit one fsync is shared by
//! the whole batch, so FULL costs little under load and is the honest choice
//! for "answered = stored".
//!
//! A database that cannot be written is refused: read-only at start-up is a
//! start-up error naming the path; read-only while running, or a file
//! removed or replaced under the running service (checked by device and
//! inode after every commit), is [`biz::Error::Unavailable`]. All SQL is
//! parameterized.

#[cfg(feature = "cluster")]
pub mod cache;
mod handoff;
#[cfg(feature = "cluster")]
pub mod postgres;
pub(crate) mod writer;

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode};
use tokio::sync::oneshot;

use super::biz::{self, GreeterRepo, User, UserRepo};
use crate::ops::deadline;
use crate::server::admission::{self, Admission};
use crate::types::BoxFuture;
use writer::{Claim, Counters, Done, Op, Queued, Request, Writer};

pub use writer::Stats;

/// How long a statement waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
-- No AUTOINCREMENT: a new id is the largest plus one, and retention never
-- deletes the newest row, so ids still only grow, without the update of
-- sqlite_sequence that AUTOINCREMENT adds to every insert.
CREATE TABLE IF NOT EXISTS greetings (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS users (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT    NOT NULL UNIQUE,
    password TEXT    NOT NULL,
    age      INTEGER NOT NULL
);
-- Usernames are ASCII (greeter.proto's pattern) and unique without regard to
-- ASCII case: `Admin` and `admin` are one name, also when both race.
CREATE UNIQUE INDEX IF NOT EXISTS users_username_lower ON users (lower(username));
";

/// Why the store could not be opened or used.
#[derive(Debug)]
pub enum DataError {
    /// Opening or preparing the database failed.
    Open {
        source_name: String,
        error: rusqlite::Error,
    },
    /// The database opened, but only for reading: the service could not
    /// store anything, so it does not start.
    ReadOnly { source_name: String },
    /// The opened database file could not be `stat`ed (needed to notice
    /// later that it was removed or replaced).
    Stat {
        source_name: String,
        error: std::io::Error,
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
            DataError::ReadOnly { source_name } => write!(
                f,
                "data.database.source: SQLite database {source_name:?} is read-only \
                 (the file or its directory is not writable by this process)"
            ),
            DataError::Stat { source_name, error } => write!(
                f,
                "data.database.source: cannot stat SQLite database {source_name:?}: {error}"
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
            DataError::Stat { error, .. } => Some(error),
            DataError::Thread(e) => Some(e),
            DataError::ReadOnly { .. } | DataError::Closed => None,
        }
    }
}

/// Handle to the store thread; cheap to clone. The thread ends when the last
/// handle is dropped.
#[derive(Clone)]
pub struct Data {
    requests: handoff::Sender<Request>,
    counters: Arc<Counters>,
    /// Requests that read and whose handler has not ended (the read queued
    /// or running on the store thread, or its result being made a page):
    /// at most [`READS_IN_FLIGHT`], those of requests whose connection
    /// holds nothing else first ([`crate::server::admission`]).
    reads: Arc<Admission>,
}

/// Reads in flight at once (see [`Data`]'s `reads`): enough to keep the
/// store thread busy, few enough that a thousand connections asking for a
/// page each hold eight result sets, not a thousand, and a new client's
/// read waits behind at most eight.
pub const READS_IN_FLIGHT: usize = 8;

impl Data {
    /// Opens (creating if absent) the database at `source`, a file path or
    /// `:memory:`, switches it to WAL with `synchronous = FULL` and creates
    /// the tables. A database that opens read-only is an error. Blocking:
    /// call it from [`Data::open_async`] inside the runtime.
    pub fn open(source: &str) -> Result<Data, DataError> {
        let fail = |error: rusqlite::Error| match &error {
            rusqlite::Error::SqliteFailure(e, _) if e.code == ErrorCode::ReadOnly => {
                DataError::ReadOnly {
                    source_name: source.to_owned(),
                }
            }
            _ => DataError::Open {
                source_name: source.to_owned(),
                error,
            },
        };
        let conn = Connection::open(source).map_err(fail)?;
        // SQLite falls back to read-only when the file is not writable.
        if conn.is_readonly("main").map_err(fail)? {
            return Err(DataError::ReadOnly {
                source_name: source.to_owned(),
            });
        }
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // Returns the resulting mode (`memory` for :memory:), not an error.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
        // The path SQLite resolved (absolute); empty or absent for :memory:.
        let file = match conn.path().filter(|p| !p.is_empty()) {
            None => None,
            Some(path) => {
                let path = PathBuf::from(path);
                let meta = std::fs::metadata(&path).map_err(|error| DataError::Stat {
                    source_name: source.to_owned(),
                    error,
                })?;
                Some((path, meta.dev(), meta.ino()))
            }
        };
        let counters = Arc::new(Counters::default());
        let writer = Writer::new(conn, file, counters.clone());
        let (requests, rx) = handoff::channel();
        let bind = rx.binder();
        let thread = std::thread::Builder::new()
            .name("greeter-sqlite".into())
            .spawn(move || writer.run(rx))
            .map_err(DataError::Thread)?;
        bind(thread.thread().clone());
        Ok(Data {
            requests,
            counters,
            reads: Admission::new(READS_IN_FLIGHT),
        })
    }

    /// [`Data::open`] on a blocking thread.
    pub async fn open_async(source: String) -> Result<Data, DataError> {
        tokio::task::spawn_blocking(move || Data::open(&source))
            .await
            .map_err(|_| DataError::Closed)?
    }

    /// What group commit has done so far.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// The histogram of group-commit batch sizes (writes per transaction).
    pub fn batch_sizes(&self) -> Arc<crate::ops::metrics::Histogram> {
        self.counters.batch_sizes.0.clone()
    }

    /// Queues `op` and waits, without blocking, for the commit of its batch.
    /// A full queue is refused at once ([`biz::Error::Busy`]); a caller that
    /// stops waiting (the future is dropped: closed connection) cancels the
    /// write unless the store thread has already taken it. Under a call
    /// deadline ([`deadline::run`]) the write lapses at the deadline unless
    /// already taken, and then the call waits for the commit's outcome.
    async fn write(&self, op: Op) -> Result<Done, biz::Error> {
        let what = op.what();
        let bytes = op.bytes();
        if !self.counters.reserve(bytes) {
            return Err(biz::Error::Busy {
                message: format!(
                    "store busy while {what}: the write queue is full, try again shortly"
                ),
            });
        }
        let (reply, rx) = oneshot::channel();
        let claim = Arc::new(Claim::until(deadline::current()));
        let queued = Queued {
            op,
            reply,
            claim: claim.clone(),
            bytes,
        };
        if self.requests.send(Request::Write(queued)).is_err() {
            self.counters.release(bytes);
            return Err(internal(what, DataError::Closed));
        }
        self.counters.submitted();
        let abandon: Arc<dyn deadline::Abandon> = claim.clone();
        deadline::enlist(&abandon);
        let _cancel_if_dropped = CancelOnDrop(claim.clone());
        match rx.await {
            Ok(outcome) => outcome,
            // Left out because the call's deadline passed: the deadline
            // (already due) answers the call, not this write.
            Err(_) if claim.is_cancelled() => std::future::pending().await,
            Err(_) => Err(internal(what, DataError::Closed)),
        }
    }

    /// Runs `f` on the store thread between batches and waits for its result.
    async fn read<R: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    ) -> Result<R, biz::Error> {
        let _place = admission::hold(&self.reads).await;
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request::Read(Box::new(move |conn| {
                let _ = tx.send(f(conn));
            })))
            .map_err(|_| internal(what, DataError::Closed))?;
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                crate::ops::log::message("greeter", format_args!("store error while {what}: {e}"));
                Err(writer::store_failure(what, &e))
            }
            Err(_) => Err(internal(what, DataError::Closed)),
        }
    }
}

/// Cancels a queued write's claim when its caller's future is dropped
/// before the answer came (a no-op once the store thread took it).
struct CancelOnDrop(Arc<Claim>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A store that is gone is `Internal` for the caller; the detail is logged.
fn internal(what: &str, detail: impl fmt::Display) -> biz::Error {
    crate::ops::log::message(
        "greeter",
        format_args!("store error while {what}: {detail}"),
    );
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
            .read("counting greetings", move |c| {
                c.prepare_cached("SELECT COUNT(*) FROM greetings WHERE name = ?1")?
                    .query_row([name], |r| r.get(0))
            })
            .await
    }
}

impl GreeterRepo for GreeterStore {
    fn save_greeting(&self, name: String) -> BoxFuture<'_, Result<(), biz::Error>> {
        Box::pin(async move {
            self.data.write(Op::SaveGreeting { name }).await?;
            Ok(())
        })
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), biz::Error>> {
        // On the store thread, between batches: a thread stuck in a batch
        // (a held write lock) is not ready either.
        Box::pin(self.data.read("checking the store", |c| {
            c.query_row("SELECT 1", [], |_| Ok(()))
        }))
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

/// A reply of the wrong kind: a defect of this module, not of the store.
fn mismatch(what: &str) -> biz::Error {
    internal(
        what,
        "the store thread answered with another kind of result",
    )
}

impl UserRepo for UserStore {
    fn create(
        &self,
        username: String,
        password: String,
    ) -> BoxFuture<'_, Result<User, biz::Error>> {
        Box::pin(async move {
            match self
                .data
                .write(Op::CreateUser { username, password })
                .await?
            {
                Done::Created(user) => Ok(user),
                _ => Err(mismatch("creating a user")),
            }
        })
    }

    fn page(&self, after_id: i64, limit: usize) -> BoxFuture<'_, Result<Vec<User>, biz::Error>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Box::pin(async move {
            self.data
                .read("listing users", move |c| {
                    let mut stmt = c.prepare_cached(
                        "SELECT id, username, password, age FROM users WHERE id > ?1 \
                         ORDER BY id LIMIT ?2",
                    )?;
                    let rows = stmt.query_map([after_id, limit], |r| {
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
        })
    }

    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, biz::Error>> {
        Box::pin(async move {
            match self.data.write(Op::DeleteUser { id }).await? {
                Done::Deleted(found) => Ok(found),
                _ => Err(mismatch("deleting a user")),
            }
        })
    }
}

#[cfg(test)]
mod tests;
