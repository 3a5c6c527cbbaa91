//! The connection budget: how many connections the process holds open at
//! once, across every listener it runs.
//!
//! A cap per listener is not a cap per process: the greeter runs an HTTP
//! and a gRPC listener, so two caps of N let it hold 2N connections, and the
//! descriptors run out before either cap is reached. The budget is one
//! [`Semaphore`] that every listener holding a clone draws from: each
//! connection takes a permit right after `accept` (before it is served) and
//! gives it back when it closes, whatever port it came in on. After, not
//! before: a listener parked in `accept` with a permit in hand would hold a
//! place of the shared budget that another listener's client could use.
//!
//! [`ConnectionBudget::process`] is the budget every listener shares unless
//! given another: as many connections as the machine allows. At start-up
//! the soft open-file limit is raised to the hard one, as Go's runtime does
//! ([`raise_open_file_limit`]), and the cap is three quarters of it less
//! [`DESCRIPTOR_RESERVE`], so the process still has descriptors for its
//! database, its log and its outgoing connections when the budget is spent.
//! [`ConnectionBudget::new`] makes a separate one (`--max-connections`,
//! `limits.max_connections`, tests); it is held to the ¾ bound.
//!
//! The budget is also the one evictor of its connections, in the manner of
//! Envoy's overload manager (one process-wide threshold, one action for
//! every listener): every listener registers the connections it accepts
//! here, and at the cap [`ConnectionBudget::reclaim_one`] closes a
//! connection, *of any listener*, that does nothing for a client that
//! sends and reads ([`Activity::reclaimable_at`]: silent, idle past a
//! grace, below the minimum data rate, not reading, or only holding a
//! long-lived stream). A busy connection is never cut: while none can be
//! taken back, the accept loop waits and newcomers wait in the listen
//! backlog. A port held full by one kind of client (idle HTTP/1
//! keep-alives, h2 connections parked on a health Watch) so never locks a
//! client of the other port out.
//!
//! It also keeps the process' account of *bytes waiting for peers*: the
//! response bytes that handlers have produced and that the clients have not
//! taken yet (an h2 stream whose window stays at 0 holds its whole response).
//! Every response body counts what it holds ([`crate::server::clocks::Tracked`]).
//! Bytes are bounded by refusing the *work* that makes them, since pages are
//! built faster than closing connections takes them back: a connection
//! whose peer has left a response untaken for [`PEER_STALL`], or leaves any
//! untaken while the process total is past [`DEFAULT_WAITING_BYTES`], gets
//! no new request served and no new response held
//! ([`WaitingAccount::admits`]; the server answers 503 or
//! `RESOURCE_EXHAUSTED`). A connection holding more than its share
//! ([`DEFAULT_CONNECTION_WAITING_BYTES`]) is closed, and if a response
//! admitted earlier grows the total past the budget, the connection holding
//! the most is closed (Envoy's "reset the streams holding the most buffered
//! bytes", one connection at a time), which drops what its streams held.

use std::cmp::Ordering as Order;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::ops::log;
use crate::server::clocks::{Activity, Reclaim, WaitingAccount, CHUNK};
use crate::server::governor::{
    default_long_lived_streams, ByteAccount, DEFAULT_BODY_BYTES, WAITING_FOR_TURNS_MAX,
};

/// Default bytes of responses the process holds for peers that have not
/// taken them; past it the connection holding the most is closed. 32 MiB:
/// a connection that holds nothing may still be answered up to twice this
/// (its client may read), so a thousand fresh zero-window connections hold
/// at most 64 MiB of pages; at 64 MiB they held 128 MiB and the greeter
/// passed 256 MiB in all.
pub const DEFAULT_WAITING_BYTES: usize = 32 << 20;

/// Default bytes of responses one connection may hold for its peer; past
/// it the connection is closed.
pub const DEFAULT_CONNECTION_WAITING_BYTES: usize = 16 << 20;

pub use crate::server::clocks::PEER_STALL;

/// The account of bytes waiting for peers.
#[derive(Debug)]
struct Waiting {
    total: AtomicUsize,
    limit: usize,
    per_connection: usize,
}

/// A number of connections open at once, shared by every listener holding
/// a clone of it.
#[derive(Clone)]
pub struct ConnectionBudget {
    permits: Arc<Semaphore>,
    max: usize,
    /// Every open connection of every listener sharing the budget, to find
    /// the one holding the most bytes for its peer.
    open: Arc<Mutex<Vec<Weak<Activity>>>>,
    /// The connections that can be taken back at the cap, by the instant
    /// from which they can ([`Activity::reclaimable_at`]), earliest first.
    reclaimable: Arc<Mutex<BinaryHeap<Candidate>>>,
    /// Connections ended since `open` was last swept of them.
    ended: Arc<AtomicUsize>,
    waiting: Arc<Waiting>,
    /// Request bytes being received, all connections together.
    bodies: Arc<ByteAccount>,
    /// Long-lived streams open, all connections together.
    streams: Arc<ByteAccount>,
    /// Requests waiting for a handler turn, all connections together.
    turn_waiters: Arc<ByteAccount>,
}

impl ConnectionBudget {
    /// A budget of `max` connections (at least 1, at most
    /// [`default_max_connections`]), separate from the process budget.
    pub fn new(max: usize) -> ConnectionBudget {
        let max = max.clamp(1, fd_bound());
        ConnectionBudget {
            permits: Arc::new(Semaphore::new(max)),
            max,
            open: Arc::default(),
            reclaimable: Arc::default(),
            ended: Arc::default(),
            waiting: Arc::new(Waiting {
                total: AtomicUsize::new(0),
                limit: DEFAULT_WAITING_BYTES,
                per_connection: DEFAULT_CONNECTION_WAITING_BYTES,
            }),
            bodies: ByteAccount::new(DEFAULT_BODY_BYTES),
            streams: ByteAccount::new(default_long_lived_streams(max)),
            turn_waiters: ByteAccount::new(WAITING_FOR_TURNS_MAX),
        }
    }

    /// The same budget with another bound on long-lived streams open at
    /// once (default a quarter of the connections,
    /// [`default_long_lived_streams`]); call it before handing out clones.
    pub fn with_stream_limit(mut self, streams: usize) -> ConnectionBudget {
        self.streams = ByteAccount::new(streams);
        self
    }

    /// The count of long-lived streams open.
    pub fn streams(&self) -> &Arc<ByteAccount> {
        &self.streams
    }

    /// The same budget with another bound on request bytes being received
    /// at once (default [`DEFAULT_BODY_BYTES`]); call it before handing out
    /// clones.
    pub fn with_body_limit(mut self, bytes: usize) -> ConnectionBudget {
        self.bodies = ByteAccount::new(bytes);
        self
    }

    /// The account of request bytes being received.
    pub fn bodies(&self) -> &Arc<ByteAccount> {
        &self.bodies
    }

    /// The count of requests waiting for a handler turn
    /// ([`WAITING_FOR_TURNS_MAX`]).
    pub fn turn_waiters(&self) -> &Arc<ByteAccount> {
        &self.turn_waiters
    }

    /// The same budget with other bounds on bytes waiting for peers: `total`
    /// for the process, `per_connection` for each connection. Call it
    /// before handing out clones: the clones made earlier keep the old
    /// account.
    pub fn with_waiting_limits(mut self, total: usize, per_connection: usize) -> ConnectionBudget {
        self.waiting = Arc::new(Waiting {
            total: AtomicUsize::new(0),
            limit: total,
            per_connection,
        });
        self
    }

    /// Bytes of responses waiting for their peers, all connections together.
    pub fn waiting_bytes(&self) -> usize {
        self.waiting.total.load(Ordering::Relaxed)
    }

    /// The process budget: the same one on every call, of
    /// [`default_max_connections`] connections.
    pub fn process() -> ConnectionBudget {
        static PROCESS: OnceLock<ConnectionBudget> = OnceLock::new();
        PROCESS
            .get_or_init(|| ConnectionBudget::new(default_max_connections()))
            .clone()
    }

    /// Most connections open at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections that could be opened now.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }

    /// Whether `self` and `other` are one budget.
    pub fn is_shared_with(&self, other: &ConnectionBudget) -> bool {
        Arc::ptr_eq(&self.permits, &other.permits)
    }

    /// Wait for room for one more connection; the permit is given back when
    /// dropped. `None` only if the budget was closed (never, today).
    pub async fn acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().acquire_owned().await.ok()
    }

    /// Room for one more connection if there is some now.
    pub fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, BinaryHeap<Candidate>> {
        // Entries are checked when taken out: a panic cannot leave it wrong.
        self.reclaimable.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Activity>>> {
        // A list of weak pointers: a panic cannot leave it inconsistent.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count `activity` among the connections [`reclaim_one`](Self::reclaim_one)
    /// may close. Connections that ended are forgotten here too, so the
    /// list stays within twice the budget.
    pub fn register(&self, activity: &Arc<Activity>) {
        activity.govern(Box::new(self.clone()));
        let mut open = self.open();
        if open.len() >= self.max.saturating_mul(2) {
            forget_ended(&mut open);
        }
        open.push(Arc::downgrade(activity));
    }

    /// A connection of this budget ended. Once as many have ended as half
    /// the list holds, the list is swept of them: a weak pointer keeps its
    /// connection's state allocated, and a thousand of those left behind
    /// by a flood kept the heap's pages from going back to the kernel.
    pub fn ended(&self) {
        let ended = self.ended.fetch_add(1, Ordering::Relaxed) + 1;
        let mut open = self.open();
        if ended.saturating_mul(2) >= open.len() {
            forget_ended(&mut open);
            if open.capacity() > 2 * open.len() + 64 {
                open.shrink_to_fit();
            }
            self.ended.store(0, Ordering::Relaxed);
            drop(open);
            let mut queue = self.queue();
            queue.retain(|c| c.conn.strong_count() > 0);
            if queue.capacity() > 2 * queue.len() + 64 {
                queue.shrink_to_fit();
            }
        }
    }

    /// Close a connection, of any listener sharing this budget, that can
    /// be taken back now ([`Activity::reclaimable_at`]): the one that has
    /// been reclaimable the longest; logged. If none can, `Err` with the
    /// instant the next one may (`None`: none is queued; a busy connection
    /// is queued again when it stops being busy).
    ///
    /// Connections are queued by the instant they become reclaimable, when
    /// a change of theirs makes it earlier than their entry; an entry is
    /// checked when it comes out (lazy deletion): gone, superseded or busy
    /// connections are dropped, ones not due yet go back with their new
    /// instant. So one call costs the entries that fell due since the last,
    /// not a look at every connection.
    pub fn reclaim_one(&self) -> Result<(), Option<Instant>> {
        let now = Instant::now();
        loop {
            let next = {
                let mut queue = self.queue();
                match queue.peek() {
                    Some(next) if next.at <= now => queue.pop(),
                    next => return Err(next.map(|c| c.at)),
                }
            };
            let Some(Candidate { at, conn: weak }) = next else {
                return Err(None);
            };
            let Some(conn) = weak.upgrade() else { continue };
            match conn.reclaim_check(at, now) {
                Reclaim::Stale | Reclaim::Busy => {}
                Reclaim::Later(at) => self.queue().push(Candidate { at, conn: weak }),
                Reclaim::Now => {
                    log::message(
                        "server",
                        format_args!(
                            "connection cap reached: closing a connection reclaimable for {:?}",
                            now.saturating_duration_since(at)
                        ),
                    );
                    conn.evict();
                    return Ok(());
                }
            }
        }
    }
}

/// A connection in the queue of those the cap may take back, from `at`.
struct Candidate {
    at: Instant,
    conn: Weak<Activity>,
}

/// Earliest first: `BinaryHeap` is a max-heap, so the order is reversed.
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Order {
        other.at.cmp(&self.at)
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Order> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Candidate {}

impl WaitingAccount for ConnectionBudget {
    /// Enforces both bounds on bytes waiting for peers.
    fn waiting_changed(&self, conn: &Activity, before: usize, after: usize, conn_total: usize) {
        let w = &self.waiting;
        if after <= before {
            w.total.fetch_sub(before - after, Ordering::Relaxed);
            crate::server::governor::released(before - after);
            return;
        }
        let total = w.total.fetch_add(after - before, Ordering::Relaxed) + (after - before);
        if conn_total > w.per_connection && !conn.is_evicted() {
            log::message(
                "server",
                format_args!(
                    "closing a connection holding {conn_total} bytes of responses its peer \
                     does not take (more than {} per connection)",
                    w.per_connection
                ),
            );
            conn.evict();
        } else if total > w.limit {
            self.reclaim_largest();
        }
    }

    /// A connection whose peer has left a response untaken for
    /// [`PEER_STALL`] gets no more work. Over the process' bound, neither
    /// does one whose peer leaves any response untaken; one that holds
    /// nothing (its client reads) is still served, up to twice the bound
    /// for large answers, and past it answers up to [`CHUNK`] bytes only.
    fn admits(&self, conn: &Activity, bytes: usize) -> bool {
        let w = &self.waiting;
        if conn.waiting_bytes() > 0
            && conn
                .waiting_on_peer_since()
                .is_some_and(|since| since.elapsed() >= PEER_STALL)
        {
            return false;
        }
        let total = w.total.load(Ordering::Relaxed);
        if total.saturating_add(bytes) <= w.limit {
            return true;
        }
        if conn.waiting_bytes() > 0 {
            return false;
        }
        bytes <= CHUNK || total.saturating_add(bytes) <= w.limit.saturating_mul(2)
    }

    /// Queues `conn` to be taken back at the cap from `at` on; entries of
    /// connections that ended are swept by [`ConnectionBudget::ended`].
    fn reclaimable(&self, conn: Weak<Activity>, at: Instant) {
        self.queue().push(Candidate { at, conn });
    }
}

impl ConnectionBudget {
    /// Over the process' bound on bytes waiting for peers: close the
    /// connection holding the most, unless the ones already being closed
    /// bring the total back under it.
    fn reclaim_largest(&self) {
        let victim = {
            let open = self.open();
            let mut live = 0usize;
            let mut largest: Option<(usize, Arc<Activity>)> = None;
            for activity in open.iter().filter_map(Weak::upgrade) {
                if activity.is_evicted() {
                    continue;
                }
                let held = activity.waiting_bytes();
                live += held;
                if largest.as_ref().is_none_or(|(most, _)| held > *most) {
                    largest = Some((held, activity));
                }
            }
            largest.filter(|_| live > self.waiting.limit)
        };
        if let Some((held, activity)) = victim {
            log::message(
                "server",
                format_args!(
                    "responses waiting for peers passed {} bytes: closing the connection \
                     holding the most ({held} bytes)",
                    self.waiting.limit
                ),
            );
            activity.evict();
        }
    }
}

impl fmt::Debug for ConnectionBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionBudget")
            .field("max", &self.max)
            .field("available", &self.available())
            .finish_non_exhaustive()
    }
}

/// Three quarters of the process' soft open-file limit (`RLIMIT_NOFILE`),
/// after raising it to the hard limit ([`raise_open_file_limit`]), less
/// [`DESCRIPTOR_RESERVE`] (at least 1). The limit is read from
/// `/proc/self/limits`; where it cannot be read (not Linux) or is
/// unlimited, [`FALLBACK_MAX_CONNECTIONS`].
pub fn default_max_connections() -> usize {
    raise_open_file_limit();
    match fd_bound() {
        usize::MAX => FALLBACK_MAX_CONNECTIONS,
        bound => bound.saturating_sub(DESCRIPTOR_RESERVE).max(1),
    }
}

/// Descriptors the default cap leaves beside the last quarter of the
/// open-file limit: the database's files, the log, the listeners, the
/// outgoing connections (OAuth providers, Redis, PostgreSQL pools), so
/// that a process whose limit stays low (1,024: 704 connections) still
/// opens them at the cap.
pub const DESCRIPTOR_RESERVE: usize = 64;

/// The cap when the open-file limit cannot be read or is unlimited.
pub const FALLBACK_MAX_CONNECTIONS: usize = 1024;

/// Raise the soft open-file limit to the hard one (`setrlimit`), once per
/// process; the soft limit (1,024 on most distributions) is what the
/// process may open before it asks, the hard one what it may ask for. Go's
/// runtime does the same at start-up. On failure the limit stays as it was.
pub fn raise_open_file_limit() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            /// `struct rlimit` (sys/resource.h): soft, then hard.
            #[repr(C)]
            struct Rlimit {
                soft: std::ffi::c_ulong,
                hard: std::ffi::c_ulong,
            }
            extern "C" {
                fn getrlimit(resource: i32, limit: *mut Rlimit) -> i32;
                fn setrlimit(resource: i32, limit: *const Rlimit) -> i32;
            }
            /// `RLIMIT_NOFILE` on Linux.
            const RLIMIT_NOFILE: i32 = 7;
            let mut limit = Rlimit { soft: 0, hard: 0 };
            // SAFETY: both calls read or write one `struct rlimit` we own,
            // laid out as the C one (two `rlim_t`, unsigned longs on Linux).
            unsafe {
                if getrlimit(RLIMIT_NOFILE, &mut limit) == 0 && limit.soft < limit.hard {
                    limit.soft = limit.hard;
                    setrlimit(RLIMIT_NOFILE, &limit);
                }
            }
        });
    }
}

/// Drop from `open` the connections that have ended.
fn forget_ended(open: &mut Vec<Weak<Activity>>) {
    open.retain(|weak| weak.strong_count() > 0);
}

/// Three quarters of the soft open-file limit (at least 1), or no bound
/// when it cannot be read or is unlimited.
fn fd_bound() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| soft_open_files(&text))
        .map_or(usize::MAX, |soft| (soft / 4 * 3).max(1))
}

/// The soft limit of the `Max open files` row of `/proc/self/limits`.
fn soft_open_files(limits: &str) -> Option<usize> {
    let row = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = row
        .trim_start_matches("Max open files")
        .split_whitespace()
        .next()?;
    // "unlimited" does not parse: no bound from the limit.
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_that_ended_leave_the_list_without_a_new_connection_registering() {
        let budget = ConnectionBudget::new(1000);
        let secs = std::time::Duration::from_secs;
        let conns: Vec<_> = (0..100)
            .map(|_| {
                let a = Activity::new(secs(10), secs(60), secs(10));
                budget.register(&a);
                a
            })
            .collect();
        drop(conns);
        // Fewer ends than half the list: not swept yet.
        for _ in 0..49 {
            budget.ended();
        }
        assert_eq!(budget.open().len(), 100);
        // The 50th: the dead are gone, and the list's memory with them.
        budget.ended();
        assert_eq!(budget.open().len(), 0);
        assert!(budget.open().capacity() <= 64);
    }

    #[tokio::test]
    async fn reclaim_one_looks_at_the_connections_that_fell_due_not_at_every_busy_one() {
        let budget = ConnectionBudget::new(10_000);
        let secs = std::time::Duration::from_secs;
        let new_conn = || {
            let a = Activity::new(secs(10), secs(60), secs(10));
            budget.register(&a);
            a
        };
        let busy: Vec<_> = (0..1000).map(|_| new_conn()).collect();
        assert_eq!(budget.queue().len(), 1000, "queued once each, at accept");
        let requests: Vec<_> = busy
            .iter()
            .map(|a| a.request_started(http::Version::HTTP_11))
            .collect();
        // Every handler runs: one look drops them all, and the next call
        // has nothing left to look at.
        assert_eq!(budget.reclaim_one(), Err(None));
        assert_eq!(budget.queue().len(), 0);
        // A request ends: queued again, due after the idle grace.
        let mut requests = requests.into_iter();
        drop(requests.next());
        let due = budget
            .reclaim_one()
            .expect_err("idle for less than the grace");
        assert_eq!(due, busy[0].reclaimable_at());
        assert_eq!(budget.queue().len(), 1);
        // A silent newcomer is reclaimable at once, and the only one closed.
        let silent = new_conn();
        assert_eq!(budget.reclaim_one(), Ok(()));
        assert!(silent.is_evicted());
        assert!(busy.iter().all(|a| !a.is_evicted()));
    }

    #[test]
    fn the_budget_is_three_quarters_of_the_raised_open_file_limit() {
        let limits = |soft: &str| {
            format!(
                "Limit                     Soft Limit           Hard Limit           Units\n\
                 Max open files            {soft:<20} 4096                 files\n"
            )
        };
        assert_eq!(soft_open_files(&limits("1024")), Some(1024));
        assert_eq!(soft_open_files(&limits("unlimited")), None);
        assert_eq!(soft_open_files("no such row"), None);
        let cap = default_max_connections();
        assert!(cap >= 1, "{cap}");
        assert!(cap <= fd_bound(), "{cap} is over 3/4 of the soft limit");
    }

    #[test]
    fn every_caller_of_process_gets_the_same_budget_and_new_gets_its_own() {
        let (a, b) = (ConnectionBudget::process(), ConnectionBudget::process());
        assert!(a.is_shared_with(&b));
        assert_eq!(a.max(), default_max_connections());
        let own = ConnectionBudget::new(4);
        assert!(!own.is_shared_with(&a));
        assert!(own.is_shared_with(&own.clone()));
        assert_eq!((own.max(), ConnectionBudget::new(0).max()), (4, 1));
        // Never past 3/4 of the descriptors, whatever is asked.
        assert!(ConnectionBudget::new(usize::MAX).max() <= fd_bound());
    }

    #[test]
    fn long_lived_streams_may_hold_a_quarter_of_the_connection_cap() {
        assert_eq!(ConnectionBudget::new(1024).streams().limit(), 256);
        assert_eq!(ConnectionBudget::new(32).streams().limit(), 8);
        assert_eq!(ConnectionBudget::new(2).streams().limit(), 1);
        let own = ConnectionBudget::new(32).with_stream_limit(20);
        assert_eq!(own.streams().limit(), 20);
    }

    #[tokio::test]
    async fn permits_taken_through_one_clone_are_missing_from_every_clone() {
        let budget = ConnectionBudget::new(2);
        let other = budget.clone();
        let first = budget.acquire().await.unwrap();
        let _second = other.acquire().await.unwrap();
        assert_eq!((budget.available(), other.available()), (0, 0));
        drop(first);
        assert_eq!(other.available(), 1);
    }
}
