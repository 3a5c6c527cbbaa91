//! The clocks of one connection: how long it may take to send a request
//! head, and how long it may sit idle between requests.
//!
//! hyper's own HTTP/1 header time-out cannot do this job: its clock starts
//! when hyper starts reading a head, and behind hyper-util's auto builder
//! that is only once the first bytes have arrived (the builder must read
//! them to tell HTTP/1 from the HTTP/2 preface). A client that connects and
//! says nothing is never timed out, and neither is an h2c connection that
//! sent its preface and no request. So the server keeps the clocks itself,
//! in the shape of Go's `net/http` (`ReadHeaderTimeout`, `IdleTimeout`),
//! each starting at a moment one can name:
//!
//! ```text
//! accept ─────────── first request head ── … response ends ─── first byte ── head
//!   └── header_read_timeout ──┘              └─ idle_timeout ─┘└─ header_read_timeout ─┘
//! ```
//!
//! While a request is in flight (from its head until its response body has
//! been sent or dropped) the header and idle clocks do not run: how long a
//! handler or a body may take is the business of the engine's body time-out
//! and of the services' own time-outs. Two clocks watch the response instead:
//!
//! * **write** (`write_timeout`, 10 s): a response that has something to
//!   send and is not taken by the peer for that long (an HTTP/1 client that
//!   pipelines and never reads, an h2 stream whose window is never opened)
//!   closes the connection. "Has something to send" starts when the handler
//!   hands over the body and after each frame it produces; it stops while
//!   the body itself waits for data (a quiet stream is not the peer's fault).
//! * **stream idle** (`idle_timeout`): a response body that produces nothing
//!   for that long (an idle reflection stream, a health Watch with no change)
//!   ends with an error, which resets that h2 stream alone.
//!
//! On HTTP/2 only the idle clock runs after the first request:
//! an h2 client sends PINGs and WINDOW_UPDATEs while idle, so "first byte"
//! means nothing there.
//!
//! Held connections can also be taken back: at the connection cap, when a
//! new client waits, the server closes the connection doing least for its
//! client ([`Activity::reclaimable_at`], [`Activity::evict`]). A place is
//! *earned*, not claimed by having something in flight: each connection
//! keeps its place until an instant that what it gets done pushes later,
//! and the one whose instant lies furthest in the past goes first.
//!
//! - accept earns [`NEWCOMER_GRACE`]: a client that just connected is not
//!   cut before its request is read (unless its address holds more than
//!   its share of the cap, see [`crate::server::budget`]);
//! - a response sent to its end earns [`EARNED_AHEAD`] from then: a
//!   keep-alive client between two requests keeps its place, one that
//!   stays idle does not;
//! - a request body earns what its bytes pay for at [`EARN_RATE`] (at most
//!   [`EARNED_AHEAD`] ahead, and for [`BODY_EARNS_FOR`] from its start): an
//!   upload at a good rate keeps its place, a body trickled just above the
//!   minimum rate falls behind at once, one burst pays for a quarter of a
//!   second, not ten, and a body kept open long earns nothing more;
//! - a running handler (its request read, its answer not handed over yet)
//!   keeps its place for [`HANDLER_GRACE`] from when it started to run: a
//!   bcrypt login, a SayHello waiting on its commit, a slow handler are the
//!   server's work, not the client's idleness;
//! - a response the peer takes keeps its place [`PEER_STALL`] from its last
//!   piece; one the peer leaves untaken, or a socket that refuses our bytes
//!   for [`PEER_STALL`], does not, whatever else is in flight.
//!
//! A silent connection, a stalled head or TLS handshake, an idle keep-alive,
//! a trickled body and a parked stream so all fall due within a second at
//! most; nothing is busy for ever.
//!
//! [`Activity`] is shared by three parties: the IO wrapper [`Watched`] notes
//! bytes read, the server's service wrapper notes requests starting (an
//! [`InFlight`] guard that travels with the response body as [`Tracked`]),
//! and the connection task waits on [`Activity::expired`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
// tokio's clock, so that the tests can run it paused.
use tokio::time::Instant;

use crate::contract::DEFAULT_MIN_BODY_RATE;
use crate::types::{Body, BoxError};

/// How long a response may wait for its peer to take more of it before
/// the peer's connection gets no new work (503 / `RESOURCE_EXHAUSTED`)
/// until it reads ([`crate::server::budget`]), and the cap may take the
/// connection back: its client asked and does not take what it asked for,
/// so the server stops building for it long before the write time-out
/// closes it.
pub const PEER_STALL: Duration = Duration::from_secs(1);

/// How long after accept a connection keeps its place at the cap whatever
/// it does: time for a new client's first request to be read.
pub const NEWCOMER_GRACE: Duration = Duration::from_millis(300);

/// How far ahead of now progress keeps a connection's place at the cap: a
/// response sent to its end keeps it this long (a keep-alive client between
/// two requests), and a body's bytes at most this long.
pub const EARNED_AHEAD: Duration = Duration::from_millis(250);

/// The rate at which a request body's bytes keep its connection's place at
/// the cap: twice the minimum data rate ([`DEFAULT_MIN_BODY_RATE`]).
pub const EARN_RATE: u32 = 2 * DEFAULT_MIN_BODY_RATE;

/// How long after it started a request body earns its connection's place
/// at all: one kept open longer, at whatever rate, earns nothing more.
pub const BODY_EARNS_FOR: Duration = Duration::from_secs(10);

/// How long a running handler keeps its connection's place at the cap,
/// from when it started to run (its request's head, or its body's end).
pub const HANDLER_GRACE: Duration = Duration::from_secs(10);

/// What one connection has been doing, and when.
pub struct Activity {
    /// Itself, for the budget's queue of connections it may take back.
    me: Weak<Activity>,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    write_timeout: Duration,
    /// Fast path for [`Watched`]: whether `state.write_blocked` is set.
    blocked: std::sync::atomic::AtomicBool,
    state: Mutex<State>,
    /// Wakes [`Activity::expired`] when the deadline may have moved.
    changed: Notify,
    /// Bytes its responses hold for the peer: in the bodies ([`Tracked`])
    /// and in hyper's buffers (`in_hyper`).
    waiting: std::sync::atomic::AtomicUsize,
    /// Bytes of response data handed to hyper and not yet written to the
    /// socket (hyper's and h2's send buffers, as seen from outside).
    in_hyper: std::sync::atomic::AtomicUsize,
    /// The budget that counts it, once registered.
    governor: std::sync::OnceLock<Box<dyn WaitingAccount>>,
    /// Wakes requests waiting for a handler turn
    /// ([`crate::server::governor::ConnectionShare::handler_turn`]) when a
    /// response is taken or a turn ends.
    turns: Notify,
    /// Requests waiting for a turn ([`Activity::watch_turns`]): with none,
    /// a change wakes no one and takes no lock.
    turn_waiters: std::sync::atomic::AtomicUsize,
}

struct State {
    /// Requests whose response is not finished yet.
    in_flight: usize,
    /// Requests started so far.
    requests: u64,
    /// Whether the requests come over HTTP/2 (known from the first one).
    h2: bool,
    /// When the connection last became idle (accept, or a response ended).
    idle_since: Instant,
    /// The first byte read since then (HTTP/1 only).
    first_byte: Option<Instant>,
    /// Responses being sent: id, and since when each has been waiting for
    /// the peer to take its next bytes (`None`: waiting for its own data).
    responses: Vec<(u64, Option<Instant>)>,
    /// Id of the next response.
    next_response: u64,
    /// Set by [`Activity::evict`]: close now.
    evicted: bool,
    /// When a response was last sent to its end (accept until then).
    last_completed: Instant,
    /// Until when what the connection got done keeps its place at the cap
    /// (see the module's rule): accept's grace, then completed responses
    /// and body bytes.
    earned: Instant,
    /// When a handler last started to run: its request's head arrived, or
    /// a body ended.
    handler_since: Instant,
    /// Responses sent to their end so far and written to the socket: the
    /// peer's proof that it reads.
    completed: usize,
    /// Responses handed to hyper to their end whose bytes hyper (h2's send
    /// buffer, for a stream whose window is 0) has not all written yet;
    /// they count as taken once nothing handed is left unwritten.
    unflushed: usize,
    /// Since when the socket has refused our bytes (its send buffer full:
    /// the peer does not read), whatever is in flight.
    write_blocked: Option<Instant>,
    /// When [`Activity::expired`]'s timer fires (`None`: it waits for a
    /// change only). A change that moves the deadline later wakes no one:
    /// the timer fires early and looks again.
    armed: Option<Instant>,
    /// When the last response ended: the idle clock starts there, with no
    /// second clock read when its request is finished just after.
    ended_at: Option<Instant>,
    /// Request bodies arriving ([`Receiving`]).
    receiving: usize,
    /// The instant of its entry in the budget's queue of connections to
    /// take back, if it has one ([`Activity::reclaimable_at`]).
    queued: Option<Instant>,
    /// Its first entry in the queue (the end of its newcomer grace, or
    /// accept for a peer over its share): no instant [`reclaimable_at`]
    /// returns is earlier.
    floor: Instant,
}

/// Whether a deadline at `at` comes before the timer [`Activity::expired`]
/// waits on (or there is no timer yet): the one case a change must wake it.
fn before_timer(st: &State, at: Instant) -> bool {
    st.armed.is_none_or(|armed| at < armed)
}

/// From when a connection in state `st` may be taken back at the cap if
/// nothing changes (`None` once evicted): the latest of
///
/// - what it earned (accept's grace, completed responses, body bytes);
/// - [`HANDLER_GRACE`] after a handler started to run, while one runs;
/// - [`PEER_STALL`] after each response started to wait for the peer.
///
/// A socket that has refused our bytes for [`PEER_STALL`] makes the whole
/// connection reclaimable, whatever is in flight: its peer does not read.
fn reclaimable_at(st: &State) -> Option<Instant> {
    if st.evicted {
        return None;
    }
    let mut at = st.earned;
    if st.in_flight > st.responses.len() + st.receiving {
        at = at.max(st.handler_since + HANDLER_GRACE);
    }
    for since in st.responses.iter().filter_map(|(_, on_peer)| *on_peer) {
        at = at.max(since + PEER_STALL);
    }
    let blocked = st.write_blocked.map(|since| since + PEER_STALL);
    Some(blocked.map_or(at, |blocked| blocked.min(at)))
}

/// The queue entry the budget must hear of after a change of `st`: when
/// the connection becomes reclaimable, if that comes before the entry it
/// has (a later one is found when the earlier entry is looked at).
fn requeue(st: &mut State) -> Option<Instant> {
    // The entry made at registration is the earliest there can be: until
    // the budget takes it out (at the cap), no change needs a look.
    if st.queued.is_some_and(|queued| queued <= st.floor) {
        return None;
    }
    let at = reclaimable_at(st)?;
    if st.queued.is_some_and(|queued| queued <= at) {
        return None;
    }
    st.queued = Some(at);
    Some(at)
}

/// What [`Activity::reclaim_check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reclaim {
    /// The entry was not the connection's current one: ignore it.
    Stale,
    /// Not yet: queued again for this instant.
    Later(Instant),
    /// Reclaimable now.
    Now,
}

/// Where a connection reports the bytes its responses hold for the peer:
/// the budget it was registered with, which enforces the bounds.
pub trait WaitingAccount: Send + Sync {
    /// A response of `conn` now holds `after` bytes instead of `before`;
    /// `conn_total` is what all of `conn`'s responses hold now.
    fn waiting_changed(&self, conn: &Activity, before: usize, after: usize, conn_total: usize);

    /// Whether `conn` may take on a response of `bytes` more (0: a request
    /// about to run) with the bytes waiting for peers where they are.
    fn admits(&self, conn: &Activity, bytes: usize) -> bool;

    /// `conn` can be taken back from `at` on, if nothing changes: queue it.
    fn reclaimable(&self, conn: Weak<Activity>, at: Instant);
}

/// Why [`Activity::expired`] completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No request head in time, or idle too long: nothing is in flight.
    Quiet,
    /// A response made no progress for the write time-out.
    Stalled,
    /// Taken back at the connection cap.
    Evicted,
}

impl Activity {
    /// A new connection, accepted now.
    pub fn new(
        header_read_timeout: Duration,
        idle_timeout: Duration,
        write_timeout: Duration,
    ) -> Arc<Activity> {
        let now = Instant::now();
        Arc::new_cyclic(|me| Activity {
            me: me.clone(),
            header_read_timeout,
            idle_timeout,
            write_timeout,
            blocked: std::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(State {
                in_flight: 0,
                requests: 0,
                h2: false,
                idle_since: now,
                first_byte: None,
                responses: Vec::new(),
                next_response: 0,
                evicted: false,
                last_completed: now,
                earned: now + NEWCOMER_GRACE,
                handler_since: now,
                completed: 0,
                unflushed: 0,
                write_blocked: None,
                armed: None,
                ended_at: None,
                receiving: 0,
                queued: None,
                floor: now + NEWCOMER_GRACE,
            }),
            changed: Notify::new(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            in_hyper: std::sync::atomic::AtomicUsize::new(0),
            governor: std::sync::OnceLock::new(),
            turns: Notify::new(),
            turn_waiters: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Counted by `budget` from now on (set once, by
    /// [`crate::server::budget::ConnectionBudget::register`]); `graceless`:
    /// its peer holds more than its share of the cap, so it has no
    /// newcomer grace.
    pub(crate) fn govern(&self, budget: Box<dyn WaitingAccount>, graceless: bool) {
        let _ = self.governor.set(budget);
        let mut st = self.lock();
        if graceless {
            st.earned = st.idle_since;
            st.floor = st.idle_since;
        }
        let queue = requeue(&mut st);
        drop(st);
        self.enqueue(queue);
    }

    /// Whether the budget it is counted by lets it take on a response of
    /// `bytes` more (0: a request about to run); see
    /// [`crate::server::budget`].
    pub fn admits(&self, bytes: usize) -> bool {
        self.governor
            .get()
            .is_none_or(|budget| budget.admits(self, bytes))
    }

    /// Since when the oldest of its responses has waited for the peer to
    /// take its next bytes (`None`: none is waiting on the peer).
    pub fn waiting_on_peer_since(&self) -> Option<Instant> {
        let st = self.lock();
        st.responses.iter().filter_map(|(_, since)| *since).min()
    }

    /// Bytes this connection's responses hold for its peer.
    pub fn waiting_bytes(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A response now holds `after` bytes for the peer instead of `before`.
    fn holds(&self, before: usize, after: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        if before == after {
            return;
        }
        let total = if after >= before {
            self.waiting.fetch_add(after - before, Relaxed) + (after - before)
        } else {
            self.waiting.fetch_sub(before - after, Relaxed) - (before - after)
        };
        if let Some(budget) = self.governor.get() {
            budget.waiting_changed(self, before, after, total);
        }
    }

    /// A response handed `bytes` of data to hyper, its body holding
    /// `after` bytes instead of `before`: one change of the count, what the
    /// body let go and hyper took netted (the same bytes, moved, most often).
    ///
    /// Counted as held before it is published as in hyper: the socket's
    /// writer ([`sent`](Self::sent), on another thread with HTTP/2) takes
    /// back what it sees in hyper, and must never take back bytes not yet
    /// counted, or the connection's and the process' counts would dip
    /// below zero (wrapping: a connection that holds nothing evicted as
    /// one holding the most). The release here pairs with the acquire
    /// there.
    fn handed(&self, bytes: usize, before: usize, after: usize) {
        use std::sync::atomic::Ordering::Release;
        self.holds(before, after.saturating_add(bytes));
        self.in_hyper.fetch_add(bytes, Release);
    }

    /// The socket took `bytes`: what hyper held for the peer is that much
    /// less (headers and framing make this an estimate, never below 0).
    fn sent(&self, bytes: usize) {
        use std::sync::atomic::Ordering::{AcqRel, Acquire};
        let Ok(before) = self.in_hyper.fetch_update(AcqRel, Acquire, |held| {
            (held > 0).then(|| held.saturating_sub(bytes))
        }) else {
            return;
        };
        self.holds(before.min(bytes), 0);
        if before <= bytes {
            // Everything handed to hyper is written: the responses that
            // ended in its buffers were taken.
            let mut st = self.lock();
            let taken = std::mem::take(&mut st.unflushed);
            st.completed += taken;
            drop(st);
            if taken > 0 {
                self.turns_moved();
            }
        }
    }

    /// Whether [`evict`](Self::evict) was called.
    pub fn is_evicted(&self) -> bool {
        self.lock().evicted
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a few counters; a panic elsewhere cannot leave it
        // half-updated in a way that matters, so a poisoned lock is used.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request head has arrived; the returned guard ends the request when
    /// dropped (attach it to the response body with [`Tracked`]).
    ///
    /// The request's arrival ([`InFlight::received_at`]) is the first byte
    /// of its head when [`Watched`] saw it start an idle HTTP/1 connection
    /// (read then for the header clock), else now: one clock read per
    /// request serves both.
    pub(crate) fn request_started(self: &Arc<Self>, version: http::Version) -> InFlight {
        let mut st = self.lock();
        st.in_flight += 1;
        st.requests += 1;
        st.h2 = version == http::Version::HTTP_2;
        let received_at = st.first_byte.unwrap_or_else(Instant::now);
        st.handler_since = received_at;
        // No `moved`: a request starting can only take a deadline away or
        // leave it (with one in flight, only a response waiting for the
        // peer sets one, and this request has none yet), never bring one
        // earlier, and a later deadline wakes no one (see `moved`).
        drop(st);
        InFlight {
            conn: self.clone(),
            received_at,
        }
    }

    fn request_finished(&self) {
        let mut st = self.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        let ended = st.ended_at.take();
        let idle = st.in_flight == 0;
        if idle {
            st.idle_since = ended.unwrap_or_else(Instant::now);
            st.first_byte = None;
        }
        let queue = requeue(&mut st);
        // Others still in flight: the deadline is still the earliest of
        // the waiting responses' (or the blocked socket's), none of which
        // this changed, so there is nothing to move.
        if idle {
            if st.evicted || st.write_blocked.is_some() {
                self.moved(st);
            } else {
                // No first byte yet: the deadline is the idle one (`due`,
                // without its walk).
                let at = st.idle_since + self.idle_timeout;
                self.wake_if_before_timer(st, at);
            }
        }
        self.enqueue(queue);
    }

    /// Bytes arrived. On an idle HTTP/1 connection this is the start of the
    /// next request: its head now has `header_read_timeout`.
    fn bytes_read(&self) {
        let mut st = self.lock();
        if st.requests > 0 && !st.h2 && st.in_flight == 0 && st.first_byte.is_none() {
            let now = Instant::now();
            st.first_byte = Some(now);
            // The deadline is now the head's (`due`, without its walk),
            // unless a blocked socket's comes first, which this leaves.
            if st.write_blocked.is_none() {
                self.wake_if_before_timer(st, now + self.header_read_timeout);
            }
        }
    }

    /// The deadline has become `at` (or `at` is a new candidate and the
    /// deadline was no earlier than the timer): wake [`Activity::expired`]
    /// only if `at` comes before its timer, as [`Activity::moved`] decides,
    /// without computing the whole deadline again.
    fn wake_if_before_timer(&self, st: MutexGuard<'_, State>, at: Instant) {
        let wake = before_timer(&st, at);
        drop(st);
        if wake {
            self.changed.notify_one();
        }
    }

    /// A response body was handed over; it now waits for the peer. Returns
    /// its id, the clock reading that stamped it, and whether the
    /// connection is HTTP/1.
    fn response_started(&self) -> (u64, Instant, bool) {
        let mut st = self.lock();
        let id = st.next_response;
        st.next_response += 1;
        let now = Instant::now();
        st.responses.push((id, Some(now)));
        let h1 = !st.h2;
        let queue = requeue(&mut st);
        if st.in_flight > 0 && st.write_blocked.is_none() {
            // The deadline is the earliest waiting response's: this adds
            // one more, `now`, the latest of them; only it can be new.
            self.wake_if_before_timer(st, now + self.write_timeout);
        } else {
            self.moved(st);
        }
        self.enqueue(queue);
        (id, now, h1)
    }

    /// Response `id` now waits for the peer (`true`) or for its own data.
    fn response_waits(&self, id: u64, on_peer: bool) {
        let mut st = self.lock();
        if let Some(entry) = st.responses.iter_mut().find(|(r, _)| *r == id) {
            entry.1 = on_peer.then(Instant::now);
        }
        let queue = requeue(&mut st);
        if on_peer {
            self.moved(st);
        } else {
            drop(st);
            // No longer untaken: a waiting request may have its turn.
            self.turns_moved();
        }
        self.enqueue(queue);
    }

    /// The socket took bytes (`true`) or refused them for now (`false`).
    fn wrote(&self, progress: bool) {
        use std::sync::atomic::Ordering;
        if progress != self.blocked.load(Ordering::Relaxed) {
            return;
        }
        let mut st = self.lock();
        st.write_blocked = if progress { None } else { Some(Instant::now()) };
        self.blocked.store(!progress, Ordering::Relaxed);
        let queue = requeue(&mut st);
        self.moved(st);
        self.enqueue(queue);
    }

    /// Response `id` is over (sent, failed or dropped); `complete`: it was
    /// sent to its end, which counts as the connection's progress. `at`:
    /// a reading of the clock just taken, if the caller has one.
    fn response_done(&self, id: u64, complete: bool, at: Option<Instant>) {
        let mut st = self.lock();
        let before = st.responses.len();
        st.responses.retain(|(r, _)| *r != id);
        // Called again from `Drop` after the end was seen: count it once.
        let ended_now = st.responses.len() < before;
        let ended_at = ended_now.then(|| at.unwrap_or_else(Instant::now));
        st.ended_at = ended_at.or(st.ended_at);
        if let Some(now) = ended_at.filter(|_| complete) {
            st.last_completed = now;
            st.earned = st.earned.max(now + EARNED_AHEAD);
            if self.in_hyper.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                st.completed += 1;
            } else {
                st.unflushed += 1;
            }
        }
        let queue = requeue(&mut st);
        drop(st);
        self.enqueue(queue);
        if ended_now {
            self.turns_moved();
        }
    }

    /// Responses sent to their end so far, and responses made that wait
    /// for the peer to take them (not those waiting for their own data, as
    /// a health `Watch` between changes does).
    pub fn taken_and_untaken(&self) -> (usize, usize) {
        let st = self.lock();
        let untaken = st.responses.iter().filter(|(_, on_peer)| on_peer.is_some());
        (st.completed, untaken.count() + st.unflushed)
    }

    /// Resolves at the next change of [`Activity::taken_and_untaken`] or
    /// of the connection's handler turns; enable it before looking, and
    /// hold a [`Activity::watch_turns`] guard meanwhile.
    pub fn turns_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.turns.notified()
    }

    /// Counts a request as waiting for a turn while the guard lives, so
    /// that changes notify [`Activity::turns_changed`].
    pub fn watch_turns(&self) -> TurnWatch<'_> {
        use std::sync::atomic::{fence, Ordering::SeqCst};
        self.turn_waiters.fetch_add(1, SeqCst);
        // Paired with the fence in `turns_moved`: either the waiter, looking
        // after this, sees the change, or the changer sees the waiter.
        fence(SeqCst);
        TurnWatch(self)
    }

    /// Something a waiting request looks at changed: wake the waiters, if
    /// there are any.
    fn turns_moved(&self) {
        use std::sync::atomic::{fence, Ordering::SeqCst};
        fence(SeqCst);
        if self.turn_waiters.load(SeqCst) > 0 {
            self.turns.notify_waiters();
        }
    }

    /// A handler turn of this connection ended.
    pub fn turn_ended(&self) {
        self.turns_moved();
    }

    /// Close this connection now (the cap is reached and it is the one whose
    /// progress is oldest).
    pub fn evict(&self) {
        let mut st = self.lock();
        st.evicted = true;
        self.moved(st);
    }

    /// From when this connection may be taken back at the cap if nothing
    /// changes (see the module's rule; it may be now or past); `None`
    /// while it is busy, and once it has been evicted (not chosen twice).
    pub fn reclaimable_at(&self) -> Option<Instant> {
        reclaimable_at(&self.lock())
    }

    /// Whether the budget's entry for `at` is this connection's current one.
    pub(crate) fn is_queued_at(&self, at: Instant) -> bool {
        self.lock().queued == Some(at)
    }

    /// The instant of its first queue entry.
    #[cfg(test)]
    pub(crate) fn lock_floor(&self) -> Instant {
        self.lock().floor
    }

    /// The budget looked at this connection's entry and it is not due
    /// until `at` (now its entry, [`Activity::reclaim_check`]): queue it
    /// again.
    pub(crate) fn requeued(&self, at: Instant) {
        self.enqueue(Some(at));
    }

    /// Hand the budget the queue entry [`requeue`] decided on, if any.
    fn enqueue(&self, at: Option<Instant>) {
        if let (Some(at), Some(budget)) = (at, self.governor.get()) {
            budget.reclaimable(self.me.clone(), at);
        }
    }

    /// The budget took this connection's queue entry for `at` out of its
    /// queue at `now`: whether to close it, or when to look again.
    /// `force`: its peer is over its share and a client of another waits,
    /// so an entry that is current is closed before it falls due, once the
    /// connection's newcomer grace is over.
    pub(crate) fn reclaim_check(&self, at: Instant, now: Instant, force: bool) -> Reclaim {
        let mut st = self.lock();
        if st.queued != Some(at) {
            // Superseded by an earlier entry, or already looked at.
            return Reclaim::Stale;
        }
        let (queued, check) = match reclaimable_at(&st) {
            None => (None, Reclaim::Stale),
            Some(when) if when <= now => (None, Reclaim::Now),
            Some(when) if force && when == at && st.floor <= now => (None, Reclaim::Now),
            Some(later) => (Some(later), Reclaim::Later(later)),
        };
        st.queued = queued;
        check
    }

    /// The state behind `st` changed: wake [`Activity::expired`] if its
    /// deadline may now come before the timer (or there is no timer). A
    /// deadline moved later wakes no one; the timer fires early, looks,
    /// and is moved. So a busy connection's requests, which move the
    /// deadline later several times each, cost no wake-up of its task.
    fn moved(&self, st: MutexGuard<'_, State>) {
        let wake = st.evicted || self.due(&st).is_some_and(|(at, _)| before_timer(&st, at));
        drop(st);
        if wake {
            self.changed.notify_one();
        }
    }

    /// When the connection must be closed if nothing changes, and why
    /// (not for an evicted one: that is now).
    fn due(&self, st: &State) -> Option<(Instant, Expiry)> {
        if let Some(since) = st.write_blocked {
            return Some((since + self.write_timeout, Expiry::Stalled));
        }
        if st.in_flight > 0 {
            let stalled = st.responses.iter().filter_map(|(_, since)| *since).min()?;
            return Some((stalled + self.write_timeout, Expiry::Stalled));
        }
        let at = if st.requests == 0 {
            st.idle_since + self.header_read_timeout
        } else if let Some(first) = st.first_byte {
            first + self.header_read_timeout
        } else {
            st.idle_since + self.idle_timeout
        };
        Some((at, Expiry::Quiet))
    }

    /// What [`Activity::expired`] waits for next; sets the timer's time in
    /// the state, so that [`Activity::moved`] knows what is earlier.
    ///
    /// An idle HTTP/1 connection waits for its next request's first byte,
    /// which starts the shorter header clock. Were the timer set at the
    /// idle deadline, every such byte would move the deadline earlier and
    /// wake the task; so it is first set at the header time-out from the
    /// moment the connection became idle: a first byte before then moves
    /// nothing earlier, and once that moment has passed the timer goes to
    /// the idle deadline.
    fn plan(&self) -> Plan {
        let mut st = self.lock();
        if st.evicted {
            return Plan::Evicted;
        }
        let Some((at, _)) = self.due(&st) else {
            // Requests in flight and no response waiting: nothing can run
            // out before a response waits, the write time-out from then at
            // the earliest. Armed there, not left unarmed: the responses of
            // a busy connection start waiting one after another, and each
            // would find no timer and wake this task (twice a call on a
            // loaded HTTP/2 connection). A deadline earlier than this still
            // wakes it ([`Activity::moved`]); when it fires, it looks again.
            let arm = Instant::now() + self.write_timeout;
            st.armed = Some(arm);
            return Plan::Timer(arm);
        };
        let awaits_head = st.requests > 0 && !st.h2 && st.in_flight == 0 && st.first_byte.is_none();
        let early = st.idle_since + self.header_read_timeout;
        let arm = if awaits_head && early < at && early > Instant::now() {
            early
        } else {
            at
        };
        st.armed = Some(arm);
        Plan::Timer(arm)
    }

    /// Completes once a clock has run out: no request head in time after
    /// accept or after a first byte, idle for too long, a response stalled
    /// for the write time-out; or the connection was evicted.
    ///
    /// One timer serves the connection's life: it is moved to each new
    /// deadline, not made again per change (moving a tokio timer later
    /// touches no timer wheel), and the clock is read only when the timer
    /// fires, to confirm.
    pub async fn expired(&self) -> Expiry {
        let timer = tokio::time::sleep_until(Instant::now() + self.idle_timeout);
        let mut timer = std::pin::pin!(timer);
        loop {
            // `notify_one` keeps a permit when nobody waits, so a change
            // between planning and waiting is not lost.
            let changed = self.changed.notified();
            match self.plan() {
                Plan::Evicted => return Expiry::Evicted,
                Plan::Timer(arm) => {
                    if timer.deadline() != arm {
                        timer.as_mut().reset(arm);
                    }
                    tokio::select! {
                        biased;
                        _ = changed => {}
                        _ = timer.as_mut() => {
                            let st = self.lock();
                            if st.evicted {
                                return Expiry::Evicted;
                            }
                            match self.due(&st) {
                                Some((at, why)) if at <= Instant::now() => return why,
                                // Moved later since the timer was set, or
                                // an early look: planned again.
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activity")
            .field("waiting_bytes", &self.waiting_bytes())
            .finish_non_exhaustive()
    }
}

/// What [`Activity::expired`] waits for.
enum Plan {
    /// Nothing: the connection was evicted.
    Evicted,
    /// The timer, at this instant, or a change before it.
    Timer(Instant),
}

impl Drop for Activity {
    fn drop(&mut self) {
        // The connection is gone, and what hyper held for it with it.
        let held = *self.in_hyper.get_mut();
        if let Some(budget) = self.governor.get() {
            budget.waiting_changed(self, held, 0, 0);
        }
    }
}

/// A request waiting for a turn ([`Activity::watch_turns`]).
pub struct TurnWatch<'a>(&'a Activity);

impl Drop for TurnWatch<'_> {
    fn drop(&mut self) {
        self.0
            .turn_waiters
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A request body (or a gRPC message) arriving, counted for the connection
/// cap: while it arrives its handler waits on the client, and what keeps the
/// connection's place is what its bytes pay for at [`EARN_RATE`] from
/// `since`, at most [`EARNED_AHEAD`] ahead of now and no later than
/// [`BODY_EARNS_FOR`] after `since`. Ends when dropped, and the handler
/// runs again from then.
pub struct Receiving {
    conn: Arc<Activity>,
    since: Instant,
}

impl Activity {
    /// A body of this connection starts to arrive at `since`.
    pub fn receiving(self: &Arc<Self>, since: Instant) -> Receiving {
        let mut st = self.lock();
        st.receiving += 1;
        // One waiting on the client instead of a running handler: the
        // connection's instant can only come earlier.
        let queue = requeue(&mut st);
        drop(st);
        self.enqueue(queue);
        Receiving {
            conn: self.clone(),
            since,
        }
    }

    /// A body's bytes have paid for its place until `paid`.
    fn body_paid(&self, paid: Instant) {
        let now = Instant::now();
        let mut st = self.lock();
        st.earned = st.earned.max(paid.min(now + EARNED_AHEAD));
    }

    /// A body ended: its handler runs again.
    fn body_ended(&self) {
        let now = Instant::now();
        let mut st = self.lock();
        st.receiving = st.receiving.saturating_sub(1);
        st.handler_since = now;
    }
}

impl Receiving {
    /// `received` bytes of the body have arrived in all.
    pub fn received(&self, received: usize) {
        let paid = paid_until(self.since, received, EARN_RATE);
        self.conn.body_paid(paid.min(self.since + BODY_EARNS_FOR));
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        self.conn.body_ended();
    }
}

/// Until when `received` bytes, arriving from `since` on, keep a body at
/// `rate` bytes a second.
pub fn paid_until(since: Instant, received: usize, rate: u32) -> Instant {
    since + Duration::from_secs_f64(received as f64 / f64::from(rate))
}

/// One request in flight; ends it when dropped.
pub struct InFlight {
    conn: Arc<Activity>,
    received_at: Instant,
}

impl InFlight {
    /// When the request arrived (see [`Activity::request_started`]).
    pub fn received_at(&self) -> Instant {
        self.received_at
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.conn.request_finished();
    }
}

/// A response body that keeps its request in flight until hyper has sent
/// it (or given up on it) and dropped it: "the end of the response"; that
/// runs the response's write and stream-idle clocks; and that counts the
/// bytes it holds for the peer with the connection's budget. It hands its
/// data to hyper in pieces of at most [`CHUNK`] bytes, so a response
/// stays here, counted, until the peer's window lets it out, instead of
/// moving whole into h2's send buffer.
pub struct Tracked {
    inner: Body,
    request: InFlight,
    id: u64,
    /// Armed while the body waits for its own data; fires after the idle
    /// time-out.
    quiet: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The rest of a data frame larger than [`CHUNK`].
    rest: Bytes,
    /// Bytes counted as held for the peer.
    held: usize,
    /// Its waiting for the peer started at [`Activity::response_started`]
    /// and nothing has been handed since: the first frame needs no new
    /// stamp (nor a second clock read).
    fresh: bool,
    /// The reading of [`Activity::response_started`], kept while it is
    /// also the response's end: an HTTP/1 response not yet polled twice
    /// nor left waiting. hyper's HTTP/1 dispatcher polls a body as soon as
    /// it has buffered the head, in the same turn, and drops it at its last
    /// frame: a body that ends at its first poll ends when it started, give
    /// or take microseconds, and its end needs no clock read of its own.
    /// (HTTP/2 polls a body once the stream has window, which may be much
    /// later: `None` from the start.)
    ends_at_start: Option<Instant>,
}

/// Largest piece of a response handed to hyper at once.
pub const CHUNK: usize = 64 << 10;

impl Tracked {
    /// `body`, keeping `request` in flight while it lives.
    pub fn new(body: Body, request: InFlight) -> Tracked {
        let (id, started_at, h1) = request.conn.response_started();
        let mut tracked = Tracked {
            inner: body,
            request,
            id,
            quiet: None,
            rest: Bytes::new(),
            held: 0,
            fresh: true,
            ends_at_start: h1.then_some(started_at),
        };
        tracked.count_held();
        tracked
    }

    /// What the body holds now: what is left of a frame, plus what the
    /// body says it still has.
    fn holding(&self) -> usize {
        let lower = usize::try_from(self.inner.size_hint().lower()).unwrap_or(usize::MAX);
        self.rest.len().saturating_add(lower)
    }

    /// Bring the count of held bytes up to date.
    fn count_held(&mut self) {
        let now = self.holding();
        self.request.conn.holds(self.held, now);
        self.held = now;
    }

    /// `piece` goes to hyper: held there until written, and no longer by
    /// the body.
    fn hand(&mut self, piece: &Bytes) {
        let now = self.holding();
        self.request.conn.handed(piece.len(), self.held, now);
        self.held = now;
    }

    /// The next piece of `data`: at most [`CHUNK`] bytes, the rest kept.
    fn piece(&mut self, mut data: Bytes) -> Bytes {
        if data.len() > CHUNK {
            self.rest = data.split_off(CHUNK);
        }
        data
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // hyper stops polling a body that says it has ended (a full body
        // after its one frame), so "sent to its end" is also decided here.
        let complete = self.rest.is_empty() && self.inner.is_end_stream();
        let at = self.ends_at_start.filter(|_| complete);
        self.request.conn.response_done(self.id, complete, at);
        if self.held != 0 {
            self.request.conn.holds(self.held, 0);
        }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        // Polled again: the end is no longer the start.
        if !this.fresh {
            this.ends_at_start = None;
        }
        if !this.rest.is_empty() {
            let rest = std::mem::take(&mut this.rest);
            let piece = this.piece(rest);
            this.hand(&piece);
            this.request.conn.response_waits(this.id, true);
            return Poll::Ready(Some(Ok(Frame::data(piece))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                this.quiet = None;
                let frame = match frame.into_data() {
                    Ok(data) => {
                        let piece = this.piece(data);
                        this.hand(&piece);
                        Frame::data(piece)
                    }
                    Err(frame) => frame,
                };
                if !std::mem::take(&mut this.fresh) {
                    this.request.conn.response_waits(this.id, true);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(end) => {
                let complete = end.is_none();
                let at = this.ends_at_start.filter(|_| complete);
                this.request.conn.response_done(this.id, complete, at);
                this.count_held();
                Poll::Ready(end)
            }
            Poll::Pending => {
                this.fresh = false;
                this.ends_at_start = None;
                if this.quiet.is_none() {
                    this.request.conn.response_waits(this.id, false);
                    let idle = this.request.conn.idle_timeout;
                    this.quiet = Some(Box::pin(tokio::time::sleep(idle)));
                }
                match this.quiet.as_mut().map(|q| q.as_mut().poll(cx)) {
                    Some(Poll::Ready(())) => {
                        this.request.conn.response_done(this.id, false, None);
                        let idle = this.request.conn.idle_timeout;
                        Poll::Ready(Some(Err(format!(
                            "stream closed: no data for the idle time-out ({idle:?})"
                        )
                        .into())))
                    }
                    _ => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        match hint.exact() {
            Some(exact) => hint.set_exact(exact + rest),
            None => {
                // Upper first: a lower bound over the upper one panics.
                if let Some(upper) = hint.upper() {
                    hint.set_upper(upper + rest);
                }
                hint.set_lower(hint.lower() + rest);
            }
        }
        hint
    }
}

/// A socket that reports the bytes it reads to its connection's [`Activity`].
pub struct Watched<S> {
    io: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    /// Wrap `io`, reporting to `activity`.
    pub fn new(io: S, activity: Arc<Activity>) -> Watched<S> {
        Watched { io, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.activity.wrote(polled.is_ready());
        if let Poll::Ready(Ok(n)) = polled {
            self.activity.sent(n);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.activity.wrote(polled.is_ready());
        if let Poll::Ready(Ok(n)) = polled {
            self.activity.sent(n);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real time, small clocks: the bounds leave room for a loaded machine.
    const HEADER: Duration = Duration::from_millis(100);
    const IDLE: Duration = Duration::from_millis(400);
    const WRITE: Duration = Duration::from_millis(300);

    async fn time_to_expiry(a: &Activity) -> Duration {
        let t0 = Instant::now();
        a.expired().await;
        t0.elapsed()
    }

    fn about(got: Duration, want: Duration) -> bool {
        got >= want && got < want + Duration::from_millis(250)
    }

    #[tokio::test]
    async fn the_first_request_clock_starts_at_accept() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        let took = time_to_expiry(&a).await;
        assert!(about(took, HEADER), "{took:?}");
    }

    #[tokio::test]
    async fn no_clock_runs_while_a_request_is_in_flight() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        let request = a.request_started(http::Version::HTTP_11);
        let waited = tokio::time::timeout(IDLE * 2, a.expired()).await;
        assert!(waited.is_err(), "a clock ran during the request");
        drop(request);
        let took = time_to_expiry(&a).await;
        assert!(
            about(took, IDLE),
            "idle clock from the response's end: {took:?}"
        );
    }

    #[tokio::test]
    async fn a_first_byte_after_idle_starts_the_header_clock_on_http1_only() {
        for (version, want) in [
            (http::Version::HTTP_11, HEADER),
            (http::Version::HTTP_2, IDLE),
        ] {
            let a = Activity::new(HEADER, IDLE, WRITE);
            drop(a.request_started(version));
            a.bytes_read();
            let took = time_to_expiry(&a).await;
            assert!(about(took, want), "{version:?}: {took:?}");
        }
    }

    #[tokio::test]
    async fn a_first_byte_while_the_clocks_wait_starts_the_header_clock_before_or_after_the_early_look(
    ) {
        // The timer first looks at the header time-out from idle; a first
        // byte before that look and one after it must both be timed from
        // the byte, not from the idle deadline.
        // A long idle clock, so that missing the byte is seen.
        let idle = Duration::from_secs(2);
        for byte_after in [HEADER / 2, HEADER * 2] {
            let a = Activity::new(HEADER, idle, WRITE);
            drop(a.request_started(http::Version::HTTP_11));
            let t0 = Instant::now();
            let byte = async {
                tokio::time::sleep(byte_after).await;
                a.bytes_read();
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = a.expired() => {}
                _ = byte => unreachable!(),
            }
            let took = t0.elapsed();
            assert!(
                about(took, byte_after + HEADER),
                "byte after {byte_after:?}: closed after {took:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_response_waiting_for_the_peer_stalls_after_the_write_timeout() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        let request = a.request_started(http::Version::HTTP_2);
        let body = Tracked::new(crate::types::full("x"), request);
        let t0 = Instant::now();
        assert_eq!(a.expired().await, Expiry::Stalled);
        assert!(about(t0.elapsed(), WRITE), "{:?}", t0.elapsed());
        drop(body);
    }

    #[tokio::test]
    async fn a_response_waiting_for_its_own_data_does_not_stall_but_ends_after_the_idle_timeout() {
        use http_body_util::BodyExt;
        let a = Activity::new(HEADER, IDLE, WRITE);
        let request = a.request_started(http::Version::HTTP_2);
        let quiet = Never.boxed_unsync();
        let mut body = Tracked::new(quiet, request);
        let t0 = Instant::now();
        let end = body.frame().await;
        assert!(matches!(end, Some(Err(_))), "{:?}", end.map(|r| r.is_ok()));
        assert!(about(t0.elapsed(), IDLE), "{:?}", t0.elapsed());
        // While it waited for data, the write clock did not run.
        drop(body);
        assert!(a.reclaimable_at().is_some());
    }

    /// One clock read fewer per HTTP/1 request: a whole body that ends at
    /// its first poll ends at the reading that started it; one polled
    /// again later, or on HTTP/2 (polled when the window allows), reads
    /// the clock at its end.
    #[tokio::test]
    async fn an_http1_body_ending_at_its_first_poll_ends_at_its_start_reading() {
        use http_body_util::BodyExt;
        for (version, whole) in [
            (http::Version::HTTP_11, true),
            (http::Version::HTTP_11, false),
            (http::Version::HTTP_2, true),
        ] {
            let a = Activity::new(HEADER, IDLE, WRITE);
            let request = a.request_started(version);
            let inner = if whole {
                crate::types::full("x")
            } else {
                TwoFrames(0).boxed_unsync()
            };
            let mut body = Tracked::new(inner, request);
            let started = a.lock().responses[0].1.expect("waiting on the peer");
            std::thread::sleep(Duration::from_millis(2));
            // As hyper does: polled until it says it has ended, then dropped.
            while !body.is_end_stream() {
                assert!(body.frame().await.is_some());
            }
            drop(body);
            let ended = a.lock().last_completed;
            let reused = version == http::Version::HTTP_11 && whole;
            assert_eq!(ended == started, reused, "{version:?}, whole: {whole}");
            assert!(ended >= started);
        }
    }

    /// A body of two data frames, one a poll.
    struct TwoFrames(u8);

    impl HttpBody for TwoFrames {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            self.0 += 1;
            Poll::Ready((self.0 <= 2).then(|| Ok(Frame::data(Bytes::from_static(b"x")))))
        }

        fn is_end_stream(&self) -> bool {
            self.0 >= 2
        }
    }

    /// A body that waits for data that never comes.
    struct Never;

    impl HttpBody for Never {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn an_evicted_connection_expires_at_once() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        assert!(
            a.reclaimable_at().is_some(),
            "a silent connection can be taken back"
        );
        a.evict();
        assert_eq!(a.expired().await, Expiry::Evicted);
        assert_eq!(a.reclaimable_at(), None, "not chosen twice");
    }

    #[tokio::test]
    async fn a_connection_whose_only_activity_is_a_stream_keeps_only_what_it_earned() {
        use http_body_util::BodyExt;
        let parked = Activity::new(HEADER, IDLE, WRITE);
        let earned = parked.lock().earned;
        let request = parked.request_started(http::Version::HTTP_2);
        let mut stream = Tracked::new(Never.boxed_unsync(), request);
        // Handed over, it waits for the peer; polled, for its own data.
        let _ = futures_poll(&mut stream);
        assert_eq!(parked.reclaimable_at(), Some(earned));
        // A unary call beside it is served: its handler keeps the place.
        let unary = parked.request_started(http::Version::HTTP_2);
        let since = parked.lock().handler_since;
        assert_eq!(parked.reclaimable_at(), Some(since + HANDLER_GRACE));
        drop(unary);
        assert_eq!(parked.reclaimable_at(), Some(earned));
    }

    #[tokio::test]
    async fn a_newcomer_keeps_its_place_for_the_grace_and_a_response_for_earned_ahead() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        let accepted = a.lock().idle_since;
        assert_eq!(
            a.reclaimable_at(),
            Some(accepted + NEWCOMER_GRACE),
            "no head yet: the newcomer grace"
        );
        let request = a.request_started(http::Version::HTTP_11);
        sent_whole(Tracked::new(crate::types::full("x"), request)).await;
        let ended = a.lock().last_completed;
        let grace = accepted + NEWCOMER_GRACE;
        assert_eq!(a.reclaimable_at(), Some(grace.max(ended + EARNED_AHEAD)));
        // Past the grace, a response earns EARNED_AHEAD from its end, and
        // no more: the longer it idles after, the earlier it is in line.
        tokio::time::sleep(NEWCOMER_GRACE).await;
        let request = a.request_started(http::Version::HTTP_11);
        sent_whole(Tracked::new(crate::types::full("x"), request)).await;
        let ended = a.lock().last_completed;
        assert_eq!(a.reclaimable_at(), Some(ended + EARNED_AHEAD));
    }

    #[tokio::test]
    async fn a_running_handler_keeps_its_place_for_the_handler_grace_then_ranks_like_any_other() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        let request = a.request_started(http::Version::HTTP_11);
        let since = a.lock().handler_since;
        assert_eq!(a.reclaimable_at(), Some(since + HANDLER_GRACE));
        drop(request);
        assert_eq!(a.reclaimable_at(), Some(a.lock().earned));
    }

    #[tokio::test]
    async fn a_response_the_peer_does_not_take_is_reclaimable_after_peer_stall() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        let request = a.request_started(http::Version::HTTP_2);
        let body = Tracked::new(crate::types::full("x"), request);
        let since = a.lock().responses[0].1.expect("waiting on the peer");
        assert_eq!(a.reclaimable_at(), Some(since + PEER_STALL));
        drop(body);
    }

    #[tokio::test]
    async fn a_body_keeps_its_place_only_for_what_its_bytes_pay_at_the_earn_rate() {
        let a = Activity::new(HEADER, IDLE, WRITE);
        tokio::time::sleep(NEWCOMER_GRACE).await;
        let _request = a.request_started(http::Version::HTTP_11);
        let earned = a.lock().earned;
        let since = Instant::now();
        let body = a.receiving(since);
        assert_eq!(
            a.reclaimable_at(),
            Some(earned),
            "waiting on the client: no handler grace"
        );
        // A burst of 2,399 bytes pays for 5 s at the earn rate, but no
        // more than EARNED_AHEAD counts.
        body.received(2399);
        let at = a.reclaimable_at().unwrap();
        assert!(at <= Instant::now() + EARNED_AHEAD, "{at:?}");
        assert!(at > earned);
        // Trickled just above the minimum rate: 300 bytes a second pay
        // for less than a third of the time they take.
        let slow = Instant::now() - Duration::from_secs(10);
        let trickle = a.receiving(slow);
        trickle.received(3000);
        assert_eq!(a.reclaimable_at(), Some(at), "nothing more earned");
        drop(trickle);
        drop(body);
        // Read whole: the handler runs, and keeps the place.
        let since = a.lock().handler_since;
        assert_eq!(a.reclaimable_at(), Some(since + HANDLER_GRACE));
    }

    /// Polls `body` to its end and drops it, as hyper does.
    async fn sent_whole(mut body: Tracked) {
        use http_body_util::BodyExt;
        while !body.is_end_stream() {
            assert!(body.frame().await.is_some());
        }
    }

    /// Polls `body` once, as hyper does when the stream has window.
    fn futures_poll(body: &mut Tracked) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        Pin::new(body).poll_frame(&mut cx)
    }
}
