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
//! here, and at the cap, when a newcomer waits,
//! [`ConnectionBudget::reclaim_one`] closes the connection, *of any
//! listener*, doing least for its client: the one whose earned place
//! ([`Activity::reclaimable_at`]) ran out longest ago. A place is earned by
//! what gets done (responses completed, body bytes at a good rate, a
//! handler running, a response taken), so nothing stays "busy" by trickling
//! bytes; a newcomer keeps its place for
//! [`NEWCOMER_GRACE`](crate::server::clocks::NEWCOMER_GRACE) so that it is not
//! cut before its request is read. While nothing has fallen due, the accept
//! loop waits and newcomers wait in the listen backlog, at most until the
//! next place runs out. A port held full by one kind of client (idle HTTP/1
//! keep-alives, h2 connections parked on a health Watch) so never locks a
//! client of the other port out.
//!
//! Taking back starts with the peers holding more than their share of the
//! cap ([`ConnectionBudget::with_peer_share`], half the cap by default; a
//! peer is an IPv4 address or an IPv6 /64, [`Peer`]), as nginx's
//! `limit_conn` counts per address, but nothing is refused below the cap.
//! A connection accepted while its peer is over its share has no newcomer
//! grace, and for a newcomer of a peer within its share, the over-share
//! peer's connection doing least is closed even before it falls due
//! (busy or not): one address cannot hold the cap against the others by
//! doing just enough. Behind a proxy or a NAT every client shares one
//! address: set the share to the cap there. A connection's queue entry is
//! in two queues, the budget's and its peer's, so that either choice costs
//! the entries that fell due, not a look at every connection.
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
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::ops::log;
use crate::ops::ratelimit::LogLines;
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

/// Most lines a second of the cap's events (a connection closed to make
/// room, bytes waiting for peers over their bound), all listeners together:
/// a client looping silent connections at the cap must not write a line per
/// eviction.
pub const CAP_LINES_PER_SECOND: usize = 10;

/// The limit of [`CAP_LINES_PER_SECOND`].
static CAP_LINES: LazyLock<LogLines> =
    LazyLock::new(|| LogLines::new(CAP_LINES_PER_SECOND, Duration::from_secs(1)));

/// Log a cap event, unless past [`CAP_LINES_PER_SECOND`].
fn cap_line(line: fmt::Arguments<'_>) {
    if let Some(suppressed) = CAP_LINES.admit() {
        log::message("server", format_args!("{line}{suppressed}"));
    }
}

/// Who a connection comes from, for the share of the cap: an IPv4 address,
/// or an IPv6 /64 (what one host is usually given); an IPv4-mapped IPv6
/// address is its IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// The first 64 bits of an IPv6 address.
    V6(u64),
}

impl Peer {
    /// The peer of a client at `ip`.
    pub fn of(ip: IpAddr) -> Peer {
        match ip {
            IpAddr::V4(v4) => Peer::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Peer::V4(v4),
                None => Peer::V6((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::V4(v4) => write!(f, "{v4}"),
            Peer::V6(prefix) => {
                let net = std::net::Ipv6Addr::from(u128::from(*prefix) << 64);
                write!(f, "{net}/64")
            }
        }
    }
}

/// The connections of every peer, and which peers are over their share.
#[derive(Default)]
struct Peers {
    open: HashMap<Peer, PeerConnections>,
    /// The peers holding more than the share, in no order.
    over: Vec<Peer>,
}

/// One peer's connections: how many are open, and its own queue of those
/// the cap may take back (the same entries as the budget's queue).
#[derive(Default)]
struct PeerConnections {
    open: usize,
    queue: BinaryHeap<Candidate>,
}

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
    /// Each peer's connections, and the peers over their share.
    peers: Arc<Mutex<Peers>>,
    /// Connections one peer may hold before the cap takes back from it first.
    share: usize,
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
            peers: Arc::default(),
            share: (max / 2).max(1),
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

    /// The same budget with another share of the cap per peer (default
    /// half the cap; at least 1, at most the cap): a peer holding more is
    /// where the cap takes back first. Call it before handing out clones.
    pub fn with_peer_share(mut self, share: usize) -> ConnectionBudget {
        self.share = share.clamp(1, self.max);
        self
    }

    /// Connections one peer may hold before the cap takes back from it first.
    pub fn peer_share(&self) -> usize {
        self.share
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

    fn peers(&self) -> std::sync::MutexGuard<'_, Peers> {
        // Counts and queues checked when taken out: a panic cannot leave
        // them wrong in a way that matters.
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count `activity`, a connection of `peer`, among the connections
    /// [`reclaim_one`](Self::reclaim_one) may close. Connections that ended
    /// are forgotten here too, so the list stays within twice the budget.
    pub fn register(&self, activity: &Arc<Activity>, peer: Peer) {
        let graceless = {
            let mut peers = self.peers();
            let mine = peers.open.entry(peer).or_default();
            mine.open += 1;
            let count = mine.open;
            if count == self.share + 1 {
                peers.over.push(peer);
            }
            count > self.share
        };
        let counted = Counted {
            budget: self.clone(),
            peer,
        };
        activity.govern(Box::new(counted), graceless);
        let mut open = self.open();
        if open.len() >= self.max.saturating_mul(2) {
            forget_ended(&mut open);
        }
        open.push(Arc::downgrade(activity));
    }

    /// A connection of `peer` ended. Once as many have ended as half the
    /// list holds, the list is swept of them: a weak pointer keeps its
    /// connection's state allocated, and a thousand of those left behind
    /// by a flood kept the heap's pages from going back to the kernel.
    pub fn ended(&self, peer: Peer) {
        {
            let mut peers = self.peers();
            if let Some(mine) = peers.open.get_mut(&peer) {
                mine.open -= 1;
                let count = mine.open;
                if count == 0 {
                    peers.open.remove(&peer);
                }
                if count == self.share {
                    peers.over.retain(|p| *p != peer);
                }
            }
        }
        let ended = self.ended.fetch_add(1, Ordering::Relaxed) + 1;
        let mut open = self.open();
        if ended.saturating_mul(2) >= open.len() {
            forget_ended(&mut open);
            if open.capacity() > 2 * open.len() + 64 {
                open.shrink_to_fit();
            }
            self.ended.store(0, Ordering::Relaxed);
            drop(open);
            shrink(&mut self.queue());
            for mine in self.peers().open.values_mut() {
                shrink(&mut mine.queue);
            }
        }
    }

    /// A newcomer of `newcomer` waits for a place: close the connection,
    /// of any listener sharing this budget, doing least for its client, and
    /// log it (at most [`CAP_LINES_PER_SECOND`]). If none can be taken back
    /// now, `Err` with the instant the next one may (`None`: none is
    /// queued).
    ///
    /// The peers over their share come first, the one holding most first:
    /// their connection that fell due longest ago, or, for a newcomer of a
    /// peer within its share, their current least-doing one past its grace
    /// even if not due. Then any connection that fell due, longest ago
    /// first.
    ///
    /// Connections are queued by the instant they become reclaimable, when
    /// a change of theirs makes it earlier than their entry; an entry is
    /// checked when it comes out (lazy deletion): gone or superseded
    /// connections are dropped, ones not due yet go back with their new
    /// instant. So one call costs the entries that fell due since the last,
    /// not a look at every connection.
    pub fn reclaim_one(&self, newcomer: Peer) -> Result<(), Option<Instant>> {
        let now = Instant::now();
        let (mut over, newcomer_within) = {
            let peers = self.peers();
            let over: Vec<(usize, Peer)> = (peers.over.iter())
                .filter_map(|p| Some((peers.open.get(p)?.open, *p)))
                .collect();
            let within = peers
                .open
                .get(&newcomer)
                .is_none_or(|m| m.open < self.share);
            (over, within)
        };
        over.sort_unstable_by_key(|(held, _)| std::cmp::Reverse(*held));
        for (held, peer) in over {
            let force = newcomer_within && peer != newcomer;
            if let Ok((conn, due)) = self.take(Some(peer), now, force) {
                cap_line(format_args!(
                    "connection cap reached: closing a connection of {peer}, which holds \
                     {held} (its share is {}), {}",
                    self.share,
                    since(now, due)
                ));
                conn.evict();
                return Ok(());
            }
        }
        let (conn, due) = self.take(None, now, false)?;
        cap_line(format_args!(
            "connection cap reached: closing the connection doing least for its client, {}",
            since(now, due)
        ));
        conn.evict();
        Ok(())
    }

    /// The next connection to close from the budget's queue (`None`) or
    /// `peer`'s, with the instant it fell due; `force`: a current entry
    /// not yet due is taken too, once past its newcomer grace. `Err` as
    /// [`reclaim_one`](Self::reclaim_one)'s.
    fn take(
        &self,
        peer: Option<Peer>,
        now: Instant,
        force: bool,
    ) -> Result<(Arc<Activity>, Instant), Option<Instant>> {
        // Each entry looked at is dropped, or queued again current (a
        // current one looked at again is forced, or in its grace and put
        // aside until the look ends), so none is looked at more than twice.
        let mut aside = Vec::new();
        let taken = loop {
            let Candidate { at, conn: weak } = match self.pop(peer, |top| force || top <= now) {
                Ok(next) => next,
                Err(next) => break Err(next),
            };
            let Some(conn) = weak.upgrade() else { continue };
            match conn.reclaim_check(at, now, force) {
                Reclaim::Stale => {}
                Reclaim::Now => break Ok((conn, at)),
                Reclaim::Later(later) if later == at => aside.push((conn, later)),
                Reclaim::Later(later) => conn.requeued(later),
            }
        };
        let first_aside = aside.iter().map(|(_, at)| *at).min();
        for (conn, at) in aside {
            conn.requeued(at);
        }
        taken.map_err(|next| next.or(first_aside))
    }

    /// The first entry of the budget's queue (`None`) or `peer`'s, taken
    /// out if `wanted` says so of its instant; else `Err` with that
    /// instant (`None`: the queue is empty).
    fn pop(
        &self,
        peer: Option<Peer>,
        wanted: impl Fn(Instant) -> bool,
    ) -> Result<Candidate, Option<Instant>> {
        let take = |queue: &mut BinaryHeap<Candidate>| match queue.peek() {
            Some(top) if wanted(top.at) => Ok(queue.pop().expect("peeked")),
            top => Err(top.map(|c| c.at)),
        };
        match peer {
            None => take(&mut self.queue()),
            Some(peer) => match self.peers().open.get_mut(&peer) {
                Some(mine) => take(&mut mine.queue),
                None => Err(None),
            },
        }
    }
}

/// How long ago a closed connection fell due, for the log line; written
/// only if the line is (no text made for a line left out).
fn since(now: Instant, due: Instant) -> impl fmt::Display {
    fmt::from_fn(move |f| match now.checked_duration_since(due) {
        Some(ago) => write!(f, "its place ran out {ago:?} ago"),
        None => f.write_str("its peer over its share"),
    })
}

/// Drop the entries of connections that ended, and the queue's spare room.
fn shrink(queue: &mut BinaryHeap<Candidate>) {
    queue.retain(|c| c.conn.strong_count() > 0);
    if queue.capacity() > 2 * queue.len() + 64 {
        queue.shrink_to_fit();
    }
}

/// What a connection reports to: its budget, and its peer there.
struct Counted {
    budget: ConnectionBudget,
    peer: Peer,
}

/// A connection in the queue of those the cap may take back, from `at`.
struct Candidate {
    at: Instant,
    conn: Weak<Activity>,
}

impl Candidate {
    /// Whether the entry is its connection's current one.
    fn is_current(&self) -> bool {
        self.conn
            .upgrade()
            .is_some_and(|conn| conn.is_queued_at(self.at))
    }
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

impl WaitingAccount for Counted {
    /// Enforces both bounds on bytes waiting for peers.
    fn waiting_changed(&self, conn: &Activity, before: usize, after: usize, conn_total: usize) {
        let w = &self.budget.waiting;
        if after <= before {
            w.total.fetch_sub(before - after, Ordering::Relaxed);
            crate::server::governor::released(before - after);
            return;
        }
        let total = w.total.fetch_add(after - before, Ordering::Relaxed) + (after - before);
        if conn_total > w.per_connection && !conn.is_evicted() {
            cap_line(format_args!(
                "closing a connection holding {conn_total} bytes of responses its peer \
                 does not take (more than {} per connection)",
                w.per_connection
            ));
            conn.evict();
        } else if total > w.limit {
            self.budget.reclaim_largest();
        }
    }

    /// A connection whose peer has left a response untaken for
    /// [`PEER_STALL`] gets no more work. Over the process' bound, neither
    /// does one whose peer leaves any response untaken; one that holds
    /// nothing (its client reads) is still served, up to twice the bound
    /// for large answers, and past it answers up to [`CHUNK`] bytes only.
    fn admits(&self, conn: &Activity, bytes: usize) -> bool {
        let w = &self.budget.waiting;
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

    /// Queues `conn` to be taken back at the cap from `at` on, in the
    /// budget's queue and its peer's; entries of connections that ended
    /// are swept by [`ConnectionBudget::ended`].
    ///
    /// An entry taken out of one queue leaves its copy in the other, found
    /// stale when it comes out; a queue past twice what it holds for is
    /// swept of the entries that are not current.
    fn reclaimable(&self, conn: Weak<Activity>, at: Instant) {
        if let Some(mine) = self.budget.peers().open.get_mut(&self.peer) {
            mine.queue.push(Candidate {
                at,
                conn: conn.clone(),
            });
            if mine.queue.len() > 2 * mine.open + 64 {
                mine.queue.retain(Candidate::is_current);
            }
        }
        let mut queue = self.budget.queue();
        queue.push(Candidate { at, conn });
        if queue.len() > 2 * self.budget.max + 64 {
            queue.retain(Candidate::is_current);
        }
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
            cap_line(format_args!(
                "responses waiting for peers passed {} bytes: closing the connection \
                 holding the most ({held} bytes)",
                self.waiting.limit
            ));
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
    use crate::server::clocks::NEWCOMER_GRACE;

    #[test]
    fn connections_that_ended_leave_the_list_without_a_new_connection_registering() {
        let budget = ConnectionBudget::new(1000);
        let secs = std::time::Duration::from_secs;
        let conns: Vec<_> = (0..100)
            .map(|_| {
                let a = Activity::new(secs(10), secs(60), secs(10));
                budget.register(&a, HOME);
                a
            })
            .collect();
        drop(conns);
        // Fewer ends than half the list: not swept yet.
        for _ in 0..49 {
            budget.ended(HOME);
        }
        assert_eq!(budget.open().len(), 100);
        // The 50th: the dead are gone, and the list's memory with them.
        budget.ended(HOME);
        assert_eq!(budget.open().len(), 0);
        assert!(budget.open().capacity() <= 64);
    }

    const HOME: Peer = Peer::V4(Ipv4Addr::LOCALHOST);

    fn new_conn(budget: &ConnectionBudget, peer: Peer) -> Arc<Activity> {
        let secs = std::time::Duration::from_secs;
        let a = Activity::new(secs(10), secs(60), secs(10));
        budget.register(&a, peer);
        a
    }

    #[tokio::test]
    async fn reclaim_one_looks_at_the_connections_that_fell_due_not_at_every_busy_one() {
        let budget = ConnectionBudget::new(10_000).with_peer_share(10_000);
        let busy: Vec<_> = (0..1000).map(|_| new_conn(&budget, HOME)).collect();
        assert_eq!(budget.queue().len(), 1000, "queued once each, at accept");
        let requests: Vec<_> = busy
            .iter()
            .map(|a| a.request_started(http::Version::HTTP_11))
            .collect();
        // In their newcomer grace: nothing is looked at.
        let grace_end = busy[0].lock_floor();
        assert_eq!(budget.reclaim_one(HOME), Err(Some(grace_end)));
        tokio::time::sleep(NEWCOMER_GRACE).await;
        // Every handler runs: one look queues each again for the end of
        // its handler grace, and the next call looks at none of them.
        let later = budget
            .reclaim_one(HOME)
            .expect_err("handlers keep their places");
        assert_eq!(later, busy[0].reclaimable_at());
        assert_eq!(budget.queue().len(), 1000);
        assert_eq!(budget.reclaim_one(HOME), Err(later));
        // A request ends: queued again earlier, for what it earned (it
        // answered nothing: its newcomer grace, over), and the only one
        // closed.
        let mut requests = requests.into_iter();
        drop(requests.next());
        let due = busy[0].reclaimable_at().unwrap();
        assert!(due <= Instant::now());
        assert_eq!(budget.reclaim_one(HOME), Ok(()));
        assert!(busy[0].is_evicted());
        assert!(busy[1..].iter().all(|a| !a.is_evicted()));
    }

    #[tokio::test]
    async fn a_peer_over_its_share_is_where_taking_back_starts_busy_or_not() {
        let budget = ConnectionBudget::new(8).with_peer_share(4);
        let other = Peer::V4(Ipv4Addr::new(127, 0, 0, 2));
        let newcomer = Peer::V4(Ipv4Addr::new(127, 0, 0, 3));
        // Another peer's idle connection falls due first...
        let idle = new_conn(&budget, other);
        tokio::time::sleep(NEWCOMER_GRACE * 2).await;
        // ...but six busy ones of one peer hold more than its share of 4.
        let held: Vec<_> = (0..6).map(|_| new_conn(&budget, HOME)).collect();
        let _running: Vec<_> = held
            .iter()
            .map(|a| a.request_started(http::Version::HTTP_11))
            .collect();
        // The fifth and sixth came over the share: no newcomer grace.
        assert_eq!(budget.reclaim_one(newcomer), Ok(()));
        assert!(held[4].is_evicted() || held[5].is_evicted());
        assert!(
            !idle.is_evicted(),
            "taking back starts at the peer over its share"
        );
        // A newcomer of the over-share peer itself only takes what fell
        // due: the idle connection of the other peer, not a busy sibling.
        assert_eq!(budget.reclaim_one(HOME), Ok(()));
        assert!(idle.is_evicted());
        let cut = held.iter().filter(|a| a.is_evicted()).count();
        assert_eq!(cut, 1, "one busy connection of the over-share peer");
    }

    #[tokio::test]
    async fn a_newcomer_is_not_taken_back_in_its_grace_unless_its_peer_is_over_its_share() {
        let budget = ConnectionBudget::new(4).with_peer_share(2);
        let other = Peer::V4(Ipv4Addr::new(127, 0, 0, 2));
        let first = new_conn(&budget, HOME);
        let second = new_conn(&budget, HOME);
        // Two newcomers within the share: neither can go.
        let wait = budget.reclaim_one(other).expect_err("both in their grace");
        assert_eq!(wait, Some(first.lock_floor()));
        // A third of the same peer is over the share: it has no grace, and
        // for a client of another peer it is taken at once.
        let third = new_conn(&budget, HOME);
        assert_eq!(budget.reclaim_one(other), Ok(()));
        assert!(third.is_evicted());
        assert!(!first.is_evicted() && !second.is_evicted());
    }

    #[test]
    fn a_peer_is_an_ipv4_address_or_an_ipv6_64_and_a_mapped_address_is_its_ipv4() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(Peer::of(ip("::ffff:10.0.0.1")), Peer::of(ip("10.0.0.1")));
        assert_eq!(
            Peer::of(ip("2001:db8:1:2:aaaa::1")),
            Peer::of(ip("2001:db8:1:2:bbbb::2"))
        );
        assert_ne!(
            Peer::of(ip("2001:db8:1:2::1")),
            Peer::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            Peer::of(ip("2001:db8:1:2::1")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(Peer::of(ip("127.0.0.2")).to_string(), "127.0.0.2");
    }

    #[test]
    fn the_share_of_a_peer_is_half_the_cap_by_default_and_at_most_the_cap() {
        assert_eq!(ConnectionBudget::new(64).peer_share(), 32);
        assert_eq!(ConnectionBudget::new(1).peer_share(), 1);
        assert_eq!(
            ConnectionBudget::new(64).with_peer_share(100).peer_share(),
            64
        );
        assert_eq!(ConnectionBudget::new(64).with_peer_share(0).peer_share(), 1);
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
