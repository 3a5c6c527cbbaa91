//! The store thread: group commit over one SQLite connection.
//!
//! ```text
//! callers ──Request──▶ [ handoff queue ] ──▶ store thread
//!                      (one wake per batch)     take everything released
//!                                               BEGIN IMMEDIATE, take claims
//!                                                 one statement per queued write
//!                                               COMMIT            (one fsync)
//!                                               stat the path     (same file?)
//!  ◀── oneshot reply per caller ───────────────  answer every caller of the batch
//!                                               run the queued reads
//! ```
//!
//! Committing once per call costs one `fsync` per call; under load the disk,
//! not SQLite, sets the pace. So the thread parks until something is queued,
//! then takes every request queued in the runtime's turns so far
//! ([`handoff`]: one wake for all of them, whole turns, never the first
//! writes of a turn still running) and writes them in one transaction (up
//! to [`MAX_BATCH`] each): one `fsync` for the whole batch, the way
//! PostgreSQL flushes its WAL for many committers at once. Nobody is answered before the commit that holds
//! their row: a reply means "committed".
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
//! * The queue is bounded by operations ([`MAX_QUEUED_OPS`]) and bytes
//!   ([`MAX_QUEUED_BYTES`]): a write that would pass either bound is refused
//!   at once ([`biz::Error::Busy`]: RESOURCE_EXHAUSTED / 503) instead of
//!   growing the heap while callers time out.
//! * Every queued write carries a [`Claim`], and the deadline of its call
//!   ([`crate::ops::deadline`]). The thread takes each claim after `BEGIN`
//!   and leaves out the writes whose caller gave up (its connection closed)
//!   or whose deadline has passed: those are never stored. A caller whose
//!   deadline passes while it waits *abandons* its claim; if the thread has
//!   already taken it, the caller waits for the commit and is answered by
//!   its outcome. So DEADLINE_EXCEEDED always means "not stored", and a
//!   stored row is always answered as stored, however slow the commit.
//!
//! Reads (list, count) run on the same thread between batches, so they see
//! every write answered before them. One connection keeps `:memory:` working
//! (each connection to `:memory:` is a different database) and leaves the
//! single-writer rule of SQLite to this loop instead of to lock retries.
//! Every statement, `BEGIN` and `COMMIT` included, is a cached prepared
//! statement: parsed once per connection, not once per call.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rusqlite::{params, CachedStatement, Connection, ErrorCode};
use tokio::sync::oneshot;

use super::super::biz::{self, User};
use super::handoff;
use crate::ops::metrics::Histogram;
use crate::ops::timefmt;

/// Most writes in one transaction; the rest wait for the next one. Bounds how
/// long one commit holds the write lock and how many callers one fsync
/// failure can fail.
pub const MAX_BATCH: usize = 1024;

/// Most writes waiting in the queue; one more is refused as busy.
pub const MAX_QUEUED_OPS: usize = 4096;

/// Most bytes of user data (names, usernames, passwords) waiting in the
/// queue; one more write that would pass it is refused as busy.
pub const MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// Whether a queued write may still go into a transaction: taken by the
/// store thread just after `BEGIN`, or cancelled by its caller giving up
/// (or its deadline passing) first; whichever comes first wins.
#[derive(Debug, Default)]
pub struct Claim {
    state: AtomicU8,
    /// Past this instant the write is never taken (`None`: no deadline).
    deadline: Option<Instant>,
}

const PENDING: u8 = 0;
const TAKEN: u8 = 1;
const CANCELLED: u8 = 2;

impl Claim {
    /// A claim that lapses at `deadline`, if any.
    pub fn until(deadline: Option<Instant>) -> Claim {
        Claim {
            state: AtomicU8::new(PENDING),
            deadline,
        }
    }

    /// The store thread's side: `true` if the write may be committed. A
    /// write whose deadline has passed is cancelled instead.
    fn take(&self) -> bool {
        if self.deadline.is_some_and(|at| Instant::now() >= at) {
            self.cancel();
            return false;
        }
        self.state
            .compare_exchange(PENDING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The caller's side: `true` if the write will now never be committed
    /// (cancelled now or before), `false` if it was taken.
    pub fn cancel(&self) -> bool {
        let _ =
            self.state
                .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire);
        self.is_cancelled()
    }

    /// Whether the write will never be committed.
    pub fn is_cancelled(&self) -> bool {
        self.state.load(Ordering::Acquire) == CANCELLED
    }
}

impl crate::ops::deadline::Abandon for Claim {
    fn abandon(&self) -> bool {
        self.cancel()
    }
}

/// A queued write: the op, its caller's reply channel, its claim and the
/// bytes it holds in the queue.
pub struct Queued {
    /// What to write.
    pub op: Op,
    /// Where the outcome goes once the batch is committed.
    pub reply: oneshot::Sender<Result<Done, biz::Error>>,
    /// Taken before `BEGIN`, or cancelled by the caller.
    pub claim: Arc<Claim>,
    /// What [`Counters::reserve`] counted for it.
    pub bytes: usize,
}

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
    Write(Queued),
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
    cancelled: AtomicU64,
    refused_busy: AtomicU64,
    queued_ops: AtomicUsize,
    queued_bytes: AtomicUsize,
    /// Writes per batch handed to SQLite (the `/metrics` histogram).
    pub batch_sizes: BatchSizes,
}

/// The histogram of batch sizes: powers of two up to [`MAX_BATCH`].
#[derive(Debug, Clone)]
pub struct BatchSizes(pub Arc<Histogram>);

impl Default for BatchSizes {
    fn default() -> Self {
        let bounds: Vec<f64> = (0..=MAX_BATCH.ilog2())
            .map(|i| f64::from(1u32 << i))
            .collect();
        BatchSizes(Arc::new(Histogram::new(&bounds, 1.0)))
    }
}

impl Counters {
    /// Room in the queue for one write of `bytes`, or `false` (counted) when
    /// either bound would be passed. Released by the store thread when it
    /// takes the write off the queue.
    pub fn reserve(&self, bytes: usize) -> bool {
        let ops = self.queued_ops.fetch_add(1, Ordering::AcqRel);
        let held = self.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
        if ops >= MAX_QUEUED_OPS || held.saturating_add(bytes) > MAX_QUEUED_BYTES {
            self.release(bytes);
            self.refused_busy.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Give back what [`reserve`](Self::reserve) took.
    pub fn release(&self, bytes: usize) {
        self.queued_ops.fetch_sub(1, Ordering::AcqRel);
        self.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
    }

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
            cancelled: self.cancelled.load(Ordering::Relaxed),
            refused_busy: self.refused_busy.load(Ordering::Relaxed),
            queued_ops: self.queued_ops.load(Ordering::Relaxed),
            queued_bytes: self.queued_bytes.load(Ordering::Relaxed),
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
    /// Writes left out of a transaction because their caller had given up.
    pub cancelled: u64,
    /// Writes refused at once because the queue was full.
    pub refused_busy: u64,
    /// Writes waiting in the queue now.
    pub queued_ops: usize,
    /// Bytes of user data waiting in the queue now.
    pub queued_bytes: usize,
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
        crate::ops::log::message(
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

    /// Serves `requests` until every sender is dropped: everything released
    /// is taken at once, its writes committed in transactions of at most
    /// [`MAX_BATCH`], then its reads run.
    pub fn run(mut self, requests: handoff::Receiver<Request>) {
        let mut taken = Vec::new();
        let mut batch = Vec::new();
        let mut reads = Vec::new();
        while requests.take_all(&mut taken) {
            for request in taken.drain(..) {
                match request {
                    Request::Write(queued) => {
                        self.counters.release(queued.bytes);
                        batch.push(queued);
                        if batch.len() == MAX_BATCH {
                            self.commit_batch(&mut batch);
                        }
                    }
                    Request::Read(read) => reads.push(read),
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
    fn commit_batch(&mut self, batch: &mut Vec<Queued>) {
        self.counters.batch_sizes.0.observe(batch.len() as u64);
        if self.file.as_ref().is_some_and(|f| f.gone) {
            self.fail_batch(batch, |_| file_gone());
            return;
        }
        // The write lock first (it may wait for another process), then the
        // claims: a caller who gave up while we waited is left out, and from
        // here on nobody can cancel, so the window in which a caller can be
        // told "failed" for a write that commits is only the statements and
        // the COMMIT below.
        if let Err(e) = execute(&self.conn, "BEGIN IMMEDIATE") {
            log_batch_failure(self.file.as_ref(), batch.len(), &e);
            self.fail_batch(batch, |op| store_failure(op.what(), &e));
            return;
        }
        let before = batch.len();
        batch.retain(|queued| queued.claim.take());
        let dropped = (before - batch.len()) as u64;
        self.counters
            .cancelled
            .fetch_add(dropped, Ordering::Relaxed);
        if batch.is_empty() {
            let _ = execute(&self.conn, "ROLLBACK");
            return;
        }
        let ops: Vec<&Op> = batch.iter().map(|queued| &queued.op).collect();
        let result = apply_in_transaction(&self.conn, &ops);
        let outcomes = match result {
            Ok(outcomes) => outcomes,
            Err(e) => {
                log_batch_failure(self.file.as_ref(), batch.len(), &e);
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
        for (queued, outcome) in batch.drain(..).zip(outcomes) {
            // A caller that gave up (time-out) dropped its receiver: fine.
            let _ = queued.reply.send(outcome);
        }
    }

    fn fail_batch(&self, batch: &mut Vec<Queued>, error: impl Fn(&Op) -> biz::Error) {
        self.counters.failed_batches.fetch_add(1, Ordering::Relaxed);
        for queued in batch.drain(..) {
            let _ = queued.reply.send(Err(error(&queued.op)));
        }
    }
}

/// One cached statement without parameters (`BEGIN IMMEDIATE`, `ROLLBACK`).
fn execute(conn: &Connection, sql: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute([])
}

/// Every op, then `COMMIT`, inside the transaction the caller began. The
/// outer error is a batch failure (rolled back); the inner results are
/// per-row outcomes.
///
/// Every greeting of the batch gets one `created_at`, formatted here once
/// (the batch's commit time, to the millisecond) and bound as a value; the
/// retention `DELETE` runs once, after the batch's last greeting.
fn apply_in_transaction(
    conn: &Connection,
    ops: &[&Op],
) -> rusqlite::Result<Vec<Result<Done, biz::Error>>> {
    let run = || {
        let created_at = timefmt::rfc3339_millis(SystemTime::now());
        let mut applied = Applied {
            outcomes: Vec::with_capacity(ops.len()),
            last_greeting: None,
            insert_greeting: None,
        };
        // Runs of consecutive greetings are stored many rows a statement
        // (the largest size that fits, again and again), the rest one by one.
        let greeting = |op: &&Op| matches!(op, Op::SaveGreeting { .. });
        for group in ops.chunk_by(|a, b| greeting(a) && greeting(b)) {
            let mut rest = group;
            if greeting(&group[0]) {
                for (rows, sql) in greeting_inserts() {
                    while let Some((run, tail)) = rest.split_at_checked(*rows) {
                        applied.many(conn, sql, run, &created_at)?;
                        rest = tail;
                    }
                }
            }
            for op in rest {
                applied.one(conn, op, &created_at)?;
            }
        }
        let Applied {
            outcomes,
            last_greeting,
            insert_greeting,
        } = applied;
        drop(insert_greeting);
        if let Some(last) = last_greeting {
            // Retention: only the newest GREETINGS_KEPT rows stay (ids only
            // grow: the newest row, whose id is the largest, is never
            // deleted, so the next id is larger still).
            conn.prepare_cached("DELETE FROM greetings WHERE id <= ?1")?
                .execute([last - biz::GREETINGS_KEPT])?;
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

/// What the ops of a batch have done so far.
struct Applied<'c> {
    /// One per op, in order.
    outcomes: Vec<Result<Done, biz::Error>>,
    /// The id of the last greeting stored (for retention).
    last_greeting: Option<i64>,
    /// The one-row greeting insert, taken from the statement cache once a
    /// batch, not once a row (a cache lookup, a hand-back and a reset per
    /// row were a sixth of the store thread's samples).
    insert_greeting: Option<CachedStatement<'c>>,
}

impl<'c> Applied<'c> {
    /// Apply `op` alone.
    fn one(&mut self, conn: &'c Connection, op: &Op, created_at: &str) -> rusqlite::Result<()> {
        match apply(conn, op, created_at, &mut self.insert_greeting) {
            Ok(Done::Saved) => {
                self.last_greeting = Some(conn.last_insert_rowid());
                self.outcomes.push(Ok(Done::Saved));
            }
            Ok(done) => self.outcomes.push(Ok(done)),
            // Only that statement was undone; the transaction is alive.
            Err(e) if is_constraint(&e) && !conn.is_autocommit() => {
                self.outcomes.push(Err(op.row_error(&e)))
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Apply the greetings `run` by `sql`, one statement (see
    /// [`insert_greetings`]). A refused row undoes that statement alone: the
    /// rows are then stored one by one, each with its own outcome.
    fn many(
        &mut self,
        conn: &'c Connection,
        sql: &str,
        run: &[&Op],
        created_at: &str,
    ) -> rusqlite::Result<()> {
        match insert_greetings(conn, sql, run, created_at) {
            Ok(()) => {
                self.last_greeting = Some(conn.last_insert_rowid());
                self.outcomes.extend(run.iter().map(|_| Ok(Done::Saved)));
            }
            Err(e) if is_constraint(&e) && !conn.is_autocommit() => {
                for op in run {
                    self.one(conn, op, created_at)?;
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// The statement that stores one greeting with its `created_at`.
const INSERT_GREETING: &str = "INSERT INTO greetings (name, created_at) VALUES (?1, ?2)";

/// A run of consecutive greetings in a batch is stored this many rows a
/// statement (the largest that fits), the rest one by one. A statement's
/// start, bindings and reset cost about as much as storing its row, and the
/// batch's one `created_at` is bound once a statement, not once a row.
const GREETINGS_PER_INSERT: [usize; 2] = [16, 4];

/// For each size `n` of [`GREETINGS_PER_INSERT`], the statement
/// `INSERT … VALUES (?1, ?{n+1}), (?2, ?{n+1}), …` storing `n` greetings
/// that share the last parameter as `created_at`; made once.
fn greeting_inserts() -> &'static [(usize, String)] {
    static SQL: std::sync::OnceLock<Vec<(usize, String)>> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        GREETINGS_PER_INSERT
            .iter()
            .map(|&n| {
                let rows: Vec<String> = (1..=n).map(|i| format!("(?{i}, ?{})", n + 1)).collect();
                let sql = format!(
                    "INSERT INTO greetings (name, created_at) VALUES {}",
                    rows.join(", ")
                );
                (n, sql)
            })
            .collect()
    })
}

/// Store the greetings `run` (all `SaveGreeting`) by `sql`, the statement
/// of [`greeting_inserts`] for its length.
fn insert_greetings(
    conn: &Connection,
    sql: &str,
    run: &[&Op],
    created_at: &str,
) -> rusqlite::Result<()> {
    let names = run.iter().map(|op| match op {
        Op::SaveGreeting { name } => Some(name.as_str()),
        // Not a greeting: bound as NULL, which the NOT NULL column refuses,
        // and the run is stored one by one.
        _ => None,
    });
    conn.prepare_cached(sql)?
        .execute(rusqlite::params_from_iter(
            names.chain(std::iter::once(Some(created_at))),
        ))?;
    Ok(())
}

/// One statement for `op`; a greeting is stored with `created_at`, by
/// `insert` (taken from the cache by the batch's first greeting).
fn apply<'c>(
    conn: &'c Connection,
    op: &Op,
    created_at: &str,
    insert: &mut Option<CachedStatement<'c>>,
) -> rusqlite::Result<Done> {
    match op {
        Op::SaveGreeting { name } => {
            let insert = match insert {
                Some(insert) => insert,
                None => insert.insert(conn.prepare_cached(INSERT_GREETING)?),
            };
            insert.execute([name.as_str(), created_at])?;
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
    /// The bytes of user data the op holds while queued.
    pub fn bytes(&self) -> usize {
        match self {
            Op::SaveGreeting { name } => name.len(),
            Op::CreateUser { username, password } => username.len() + password.len(),
            Op::DeleteUser { .. } => 8,
        }
    }

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

fn log_batch_failure(file: Option<&FileCheck>, size: usize, e: &rusqlite::Error) {
    let path = file.map_or_else(|| ":memory:".into(), |f| f.path.display().to_string());
    crate::ops::log::message(
        "greeter",
        format_args!(
            "store error: database {path}: a batch of {size} write(s) was rolled back: {e}"
        ),
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
        Some(ErrorCode::DiskFull | ErrorCode::SystemIoFailure) => biz::Error::Unavailable {
            message: format!("store unavailable while {what}: no space left for the write"),
        },
        _ => biz::Error::Internal {
            message: format!("store error while {what}"),
        },
    }
}
