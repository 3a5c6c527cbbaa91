//! The store thread: group commit over one SQLite connection.
//!
//! ```text
//! callers ──Request──▶ [ std mpsc queue ] ──▶ store thread
//!                                               recv() one, try_recv() the rest
//!                                               BEGIN IMMEDIATE
//!                                                 one statement per queued write
//!                                               COMMIT            (one fsync)
//!                                               stat the path     (same file?)
//!  ◀── oneshot reply per caller ───────────────  answer every caller of the batch
//!                                               run the queued reads
//! ```
//!
//! Committing once per call costs one `fsync` per call; under load the disk,
//! not SQLite, sets the pace. So the thread blocks for the first request,
//! then takes every request already queued (up to [`MAX_BATCH`]) and writes
//! them all in one transaction: one `fsync` for the whole batch, the way
//! PostgreSQL flushes its WAL for many committers at once. Nobody is answered
//! before the commit that holds their row: a reply means "committed".
//!
//! * A row that breaks a constraint (a taken username) fails only its caller.
//!   SQLite rolls back just that statement (the default `ABORT` conflict
//!   resolution) and the transaction goes on with the other rows.
//! * Any other error fails the whole batch: it is rolled back and every
//!   caller in it gets the error. The next batch starts afresh.
//! * After each commit the path is `stat`ed: if it no longer names the file
//!   the connection holds (directory removed, file deleted or replaced), the
//!   rows went to a file nobody will open again. Those callers get
//!   `Unavailable`, the path is logged once, and from then on every write is
//!   refused without touching SQLite. `:memory:` has no path and no check.
//!
//! Reads (list, count) run on the same thread between batches, so they see
//! every write answered before them. One connection keeps `:memory:` working
//! (each connection to `:memory:` is a different database) and leaves the
//! single-writer rule of SQLite to this loop instead of to lock retries.
//! Every statement, `BEGIN` and `COMMIT` included, is a cached prepared
//! statement: parsed once per connection, not once per call.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use rusqlite::{params, Connection, ErrorCode};
use tokio::sync::oneshot;

use super::super::biz::{self, User};

/// Most writes in one transaction; the rest wait for the next one. Bounds how
/// long one commit holds the write lock and how many callers one fsync
/// failure can fail.
pub const MAX_BATCH: usize = 1024;

/// One write, applied inside a batch's transaction.
#[derive(Debug)]
pub enum Op {
    /// Insert a greetings row.
    SaveGreeting { name: String },
    /// Insert a users row with age 1.
    CreateUser { username: String, password: String },
    /// Delete a users row by id.
    DeleteUser { id: i64 },
}

/// What a committed write produced.
#[derive(Debug)]
pub enum Done {
    /// The greeting row is stored.
    Saved,
    /// The user is stored with this id.
    Created(User),
    /// Whether a row was deleted.
    Deleted(bool),
}

/// Runs on the store thread with the connection, between batches.
pub type Read = Box<dyn FnOnce(&Connection) + Send>;

/// What callers send to the store thread.
pub enum Request {
    /// A write and where to send its result once its batch is committed.
    Write(Op, oneshot::Sender<Result<Done, biz::Error>>),
    /// A read (or, in tests, any closure) run between batches.
    Read(Read),
}

/// Counters of the store thread, shared with every [`super::Data`] handle.
#[derive(Debug, Default)]
pub struct Counters {
    submitted: AtomicU64,
    commits: AtomicU64,
    committed_writes: AtomicU64,
    failed_batches: AtomicU64,
}

impl Counters {
    /// Counts one write handed to the queue.
    pub(crate) fn submitted(&self) {
        self.submitted.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot of the counters.
    pub fn snapshot(&self) -> Stats {
        Stats {
            submitted: self.submitted.load(Ordering::Relaxed),
            commits: self.commits.load(Ordering::Relaxed),
            committed_writes: self.committed_writes.load(Ordering::Relaxed),
            failed_batches: self.failed_batches.load(Ordering::Relaxed),
        }
    }
}

/// How much group commit has done so far (diagnostics and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Writes handed to the store thread.
    pub submitted: u64,
    /// Transactions committed (one per successful batch).
    pub commits: u64,
    /// Writes answered with success after their batch's commit.
    pub committed_writes: u64,
    /// Batches rolled back, refused, or committed to a file that was no
    /// longer at its path; all their callers got the error.
    pub failed_batches: u64,
}

/// The device and inode of the database file as opened, and whether the
/// path has been seen naming another file (or nothing) since.
struct FileCheck {
    path: PathBuf,
    dev: u64,
    ino: u64,
    gone: bool,
}

impl FileCheck {
    /// Whether `path` still names the opened file; logs the path the first
    /// time it does not.
    fn still_there(&mut self) -> bool {
        if self.gone {
            return false;
        }
        let why = match std::fs::metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == (self.dev, self.ino) => return true,
            Ok(_) => "now names another file".to_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no longer exists".to_owned(),
            Err(e) => format!("cannot be checked ({e})"),
        };
        self.gone = true;
        crate::web::log::message(
            "greeter",
            format_args!(
                "store unavailable: database file {:?} {why}; the file this service \
                 opened was removed or replaced, so writes are refused until restart",
                self.path
            ),
        );
        false
    }
}

/// The refusal every write gets once the file is gone.
fn file_gone() -> biz::Error {
    biz::Error::Unavailable {
        message: "store unavailable: the database file was removed or replaced while \
                  the service ran; writes are refused until it is restarted"
            .into(),
    }
}

/// The store thread's state.
pub struct Writer {
    conn: Connection,
    file: Option<FileCheck>,
    counters: Arc<Counters>,
}

impl Writer {
    /// A writer over `conn`; `file` is the path and (dev, ino) it was opened
    /// at, `None` for `:memory:`.
    pub fn new(
        conn: Connection,
        file: Option<(PathBuf, u64, u64)>,
        counters: Arc<Counters>,
    ) -> Writer {
        Writer {
            conn,
            file: file.map(|(path, dev, ino)| FileCheck {
                path,
                dev,
                ino,
                gone: false,
            }),
            counters,
        }
    }

    /// Serves `requests` until every sender is dropped.
    pub fn run(mut self, requests: mpsc::Receiver<Request>) {
        let mut batch = Vec::new();
        let mut reads = Vec::new();
        while let Ok(first) = requests.recv() {
            let mut next = Some(first);
            while let Some(request) = next.take() {
                match request {
                    Request::Write(op, reply) => batch.push((op, reply)),
                    Request::Read(read) => reads.push(read),
                }
                if batch.len() < MAX_BATCH {
                    next = requests.try_recv().ok();
                }
            }
            if !batch.is_empty() {
                self.commit_batch(&mut batch);
            }
            for read in reads.drain(..) {
                read(&self.conn);
            }
        }
    }

    /// Writes `batch` in one transaction and answers every caller in it.
    fn commit_batch(&mut self, batch: &mut Vec<(Op, oneshot::Sender<Result<Done, biz::Error>>)>) {
        if self.file.as_ref().is_some_and(|f| f.gone) {
            self.fail_batch(batch, |_| file_gone());
            return;
        }
        let ops: Vec<&Op> = batch.iter().map(|(op, _)| op).collect();
        let result = apply_in_transaction(&self.conn, &ops);
        let outcomes = match result {
            Ok(outcomes) => outcomes,
            Err(e) => {
                log_batch_failure(batch.len(), &e);
                self.fail_batch(batch, |op| store_failure(op.what(), &e));
                return;
            }
        };
        // Committed — but to the file at our path, or to an orphan?
        if let Some(file) = self.file.as_mut() {
            if !file.still_there() {
                self.fail_batch(batch, |_| file_gone());
                return;
            }
        }
        // Count before answering, so a caller that reads the stats after its
        // answer sees its own batch.
        let ok = outcomes.iter().filter(|o| o.is_ok()).count() as u64;
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        self.counters
            .committed_writes
            .fetch_add(ok, Ordering::Relaxed);
        for ((_, reply), outcome) in batch.drain(..).zip(outcomes) {
            // A caller that gave up (time-out) dropped its receiver: fine.
            let _ = reply.send(outcome);
        }
    }

    fn fail_batch(
        &self,
        batch: &mut Vec<(Op, oneshot::Sender<Result<Done, biz::Error>>)>,
        error: impl Fn(&Op) -> biz::Error,
    ) {
        self.counters.failed_batches.fetch_add(1, Ordering::Relaxed);
        for (op, reply) in batch.drain(..) {
            let _ = reply.send(Err(error(&op)));
        }
    }
}

/// `BEGIN IMMEDIATE`, every op, `COMMIT`. The outer error is a batch
/// failure (rolled back); the inner results are per-row outcomes.
fn apply_in_transaction(
    conn: &Connection,
    ops: &[&Op],
) -> rusqlite::Result<Vec<Result<Done, biz::Error>>> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let run = || {
        let mut outcomes = Vec::with_capacity(ops.len());
        for op in ops {
            match apply(conn, op) {
                Ok(done) => outcomes.push(Ok(done)),
                // Only that statement was undone; the transaction is alive.
                Err(e) if is_constraint(&e) && !conn.is_autocommit() => {
                    outcomes.push(Err(op.row_error(&e)))
                }
                Err(e) => return Err(e),
            }
        }
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok(outcomes)
    };
    run().inspect_err(|_| {
        // SQLite may already have rolled back (after some I/O errors).
        if !conn.is_autocommit() {
            let _ = conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut s| s.execute([]));
        }
    })
}

/// One statement for `op`.
fn apply(conn: &Connection, op: &Op) -> rusqlite::Result<Done> {
    match op {
        Op::SaveGreeting { name } => {
            conn.prepare_cached("INSERT INTO greetings (name) VALUES (?1)")?
                .execute([name])?;
            Ok(Done::Saved)
        }
        Op::CreateUser { username, password } => {
            conn.prepare_cached("INSERT INTO users (username, password, age) VALUES (?1, ?2, 1)")?
                .execute(params![username, password])?;
            Ok(Done::Created(User {
                id: conn.last_insert_rowid(),
                username: username.clone(),
                password: password.clone(),
                age: 1,
            }))
        }
        Op::DeleteUser { id } => {
            let n = conn
                .prepare_cached("DELETE FROM users WHERE id = ?1")?
                .execute([id])?;
            Ok(Done::Deleted(n > 0))
        }
    }
}

impl Op {
    /// What the op does, for messages ("store error while …").
    pub fn what(&self) -> &'static str {
        match self {
            Op::SaveGreeting { .. } => "saving a greeting",
            Op::CreateUser { .. } => "creating a user",
            Op::DeleteUser { .. } => "deleting a user",
        }
    }

    /// The caller's error for a constraint violation on this op's row.
    fn row_error(&self, e: &rusqlite::Error) -> biz::Error {
        match self {
            Op::CreateUser { username, .. } => biz::Error::username_taken(username),
            other => store_failure(other.what(), e),
        }
    }
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::ConstraintViolation)
}

fn log_batch_failure(size: usize, e: &rusqlite::Error) {
    crate::web::log::message(
        "greeter",
        format_args!("store error: a batch of {size} write(s) was rolled back: {e}"),
    );
}

/// The caller's error for a store failure while doing `what`: a database that
/// cannot be written (read-only, its file cannot be opened) is `Unavailable`,
/// anything else `Internal`. The SQLite detail stays in the log.
pub fn store_failure(what: &str, e: &rusqlite::Error) -> biz::Error {
    let code = match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(ErrorCode::ReadOnly) => biz::Error::Unavailable {
            message: format!("store unavailable while {what}: the database is read-only"),
        },
        Some(ErrorCode::CannotOpen) => biz::Error::Unavailable {
            message: format!("store unavailable while {what}: the database file cannot be opened"),
        },
        _ => biz::Error::Internal {
            message: format!("store error while {what}"),
        },
    }
}
