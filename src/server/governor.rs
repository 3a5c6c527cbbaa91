//! The governor's per-connection shares: work one connection may make the
//! process do, whatever it sends.
//!
//! The connection budget ([`crate::server::budget`]) bounds how many
//! connections there are; this bounds what each may cost. Go's
//! `http2.Server` bounds a connection's streams and upload buffer; the same
//! idea applies to CPU: a gzip message of a few KiB inflates to 4 MiB, so
//! four connections sending such messages back to back kept both cores
//! busy and every other client waited. Each connection gets a
//! [`ConnectionShare`], carried in every request's extensions, with a token
//! bucket of inflated bytes per second: a connection past its allowance is
//! slowed to it (its own calls wait, bounded by their deadlines), nobody
//! else is.
//!
//! After a flood the memory the process freed stays mapped: glibc's malloc
//! keeps freed chunks in its arenas (one per thread that allocated), so the
//! greeter idled at 1.12 GB with no connection open after the floods that
//! 8 MB had started with. What is given back is counted here
//! ([`released`]: closed connections, buffered bytes let go); once a flood's
//! worth has been ([`TRIM_AFTER`]), a thread of the governor calls glibc's
//! `malloc_trim(0)`, which returns the free pages of every arena to the
//! kernel. A trim walks the heap (a few milliseconds after a flood), so it
//! runs at most once per [`TRIM_INTERVAL`] and only when there is something
//! to give back. jemalloc or mimalloc would return memory by themselves,
//! but would be a dependency for what one libc call does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use tokio::time::Instant;

use crate::server::admission::{Busy, Class};
use crate::server::clocks::Activity;

/// Default bytes one connection may inflate per second (gzip messages).
pub const DEFAULT_INFLATE_PER_SECOND: usize = 16 << 20;

/// Bytes a connection may inflate at once before it is paced: two of the
/// largest messages (4 MiB), so a normal client never waits.
pub const INFLATE_BURST: usize = 8 << 20;

/// What one connection may still cost; shared by all its requests.
#[derive(Debug)]
pub struct ConnectionShare {
    inflate: Mutex<Bucket>,
    /// The process' account of request bytes being received.
    bodies: Arc<ByteAccount>,
    /// The process' count of long-lived streams open.
    streams: Arc<ByteAccount>,
    /// Handlers of this connection running now (see
    /// [`ConnectionShare::handler_turn`]).
    running: AtomicUsize,
    /// Requests of this connection waiting for a handler turn.
    waiting: AtomicUsize,
    /// The process' count of requests waiting for a handler turn.
    turn_waiters: Arc<ByteAccount>,
    /// The connection's clocks, where its bodies arriving are counted for
    /// the cap ([`Activity::receiving`]); `None` in tests.
    conn: Option<Arc<Activity>>,
}

/// A request's place among those waiting for a handler turn: counted in
/// the process (`turn_waiters`) and on its connection until dropped.
pub struct Waiting {
    _place: Hold,
    share: Arc<ConnectionShare>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.share.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection is busy, for the order of scarce work, while it has more
/// than the one handler asking running, or requests waiting for a turn:
/// a new zero-window connection's first request was quiet when it got its
/// turn, but by the time it asks for a database read its other 99 streams
/// have arrived.
impl Busy for ConnectionShare {
    fn busy(&self) -> bool {
        self.running.load(Ordering::Acquire) > 1 || self.waiting.load(Ordering::Acquire) > 0
    }
}

/// Handlers one connection runs at once, counting the responses they made
/// that its peer has not taken yet (HTTP/2 multiplexes up to 100 streams);
/// the other requests wait their turn. 16 is above what h2 clients use in
/// practice (h2load `-m10`, gRPC channels).
pub const HANDLERS_PER_CONNECTION: usize = 16;

/// Of [`HANDLERS_PER_CONNECTION`], what a new connection starts with; one
/// more for each response its peer takes to the end, as TCP's slow start
/// opens its window with each acknowledgement. A client that reads reaches
/// 16 after 14 answers; one that opens 100 zero-window streams gets two
/// pages built and nothing more, so 1,000 such connections queue 2,000
/// database reads ahead of a new client, not 16,000.
pub const HANDLERS_AT_START: usize = 2;

/// How long a request waits for a turn while its connection's answers sit
/// untaken and make no progress before it is refused (on HTTP/2 the stream
/// is reset with `REFUSED_STREAM`: not processed, safe to retry): the same
/// second after which the budget's `PEER_STALL` stops new work.
/// Not shorter: "no progress" is also what a reading client sees from a
/// server short of CPU (at 250 ms, 20 concurrent calls on one connection
/// were refused in a loaded test run); the memory of many waiting requests
/// is bounded by [`WAITING_FOR_TURNS_MAX`] instead.
pub const TURN_STALL: Duration = Duration::from_secs(1);

/// Requests the process keeps waiting for a handler turn, all connections
/// together (the budget's `turn_waiters` account); past it a request that would wait is refused at once (on
/// HTTP/2 a `REFUSED_STREAM` reset). Each waiting request holds its h2
/// stream and hyper's task for it (~1 KiB): a thousand zero-window
/// connections opening 100 streams each kept ~98,000 of them, 85 MiB, until
/// their turns timed out. Clients that read never come near it: a window
/// of 16 on each of a thousand connections is 16,000 running, and only
/// requests beyond a connection's window wait.
pub const WAITING_FOR_TURNS_MAX: usize = 4096;

/// What a request gets on arrival ([`ConnectionShare::arrive`]).
pub enum Arrival {
    /// A turn now.
    Turn(HandlerTurn),
    /// A place among the requests waiting for a turn.
    Wait(Waiting),
    /// Neither: refused at once.
    Refused,
}

/// A handler's turn on its connection ([`ConnectionShare::handler_turn`]);
/// it ends when dropped.
pub struct HandlerTurn {
    share: Arc<ConnectionShare>,
    conn: Arc<Activity>,
    class: Class,
}

impl HandlerTurn {
    /// The class its request's scarce work is admitted in
    /// ([`crate::server::admission`]).
    pub fn class(&self) -> Class {
        self.class
    }
}

impl Drop for HandlerTurn {
    fn drop(&mut self) {
        self.share.running.fetch_sub(1, Ordering::AcqRel);
        self.conn.turn_ended();
    }
}

/// Default bytes of request bodies the process buffers at once while they
/// arrive; past it new bytes are refused (503 / `RESOURCE_EXHAUSTED`).
pub const DEFAULT_BODY_BYTES: usize = 256 << 20;

/// What [`ByteAccount::hold`] took; given back when dropped.
#[derive(Debug)]
pub struct Hold {
    account: Arc<ByteAccount>,
    n: usize,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.account.give_back(self.n);
    }
}

/// Default share of the connection cap that may hold long-lived streams
/// (server-streaming and bidirectional gRPC calls: health `Watch`,
/// reflection) at once: one in [`LONG_LIVED_STREAMS_DIVISOR`], 256 of
/// 1,024 connections. A stream lasts as long as its client wants, so
/// streams equal to the connection cap would let stream holders take
/// every slot; at a quarter, three quarters of the slots always serve
/// requests that end, and at the cap a connection whose only activity is
/// a stream can be taken back for a new client.
pub const LONG_LIVED_STREAMS_DIVISOR: usize = 4;

/// Long-lived streams a budget of `connections` allows by default (at
/// least 1).
pub fn default_long_lived_streams(connections: usize) -> usize {
    (connections / LONG_LIVED_STREAMS_DIVISOR).max(1)
}

/// A process-wide count (bytes, or streams) against a limit.
#[derive(Debug)]
pub struct ByteAccount {
    held: AtomicUsize,
    limit: usize,
}

impl ByteAccount {
    /// An empty account of at most `limit` bytes.
    pub fn new(limit: usize) -> Arc<ByteAccount> {
        Arc::new(ByteAccount {
            held: AtomicUsize::new(0),
            limit,
        })
    }

    /// Take `bytes` if they fit; `false` (nothing taken) if they do not.
    pub fn take(&self, bytes: usize) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&after| after <= self.limit)
            })
            .is_ok()
    }

    /// Give back `bytes` taken earlier.
    pub fn give_back(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Take `n` if they fit, given back when the returned guard drops.
    pub fn hold(self: &Arc<Self>, n: usize) -> Option<Hold> {
        self.take(n).then(|| Hold {
            account: self.clone(),
            n,
        })
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// A token bucket of bytes: `rate` a second, at most `burst` saved up; it
/// may go into debt, which is paid back by waiting.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
    rate: f64,
    burst: f64,
}

impl ConnectionShare {
    /// A fresh share allowing `inflate_per_second` inflated bytes a second
    /// (at least 1), with [`INFLATE_BURST`] at once, receiving bodies on
    /// the process account `bodies`, counting long-lived streams on
    /// `streams` and requests waiting for a handler turn on `turn_waiters`.
    pub fn new(
        inflate_per_second: usize,
        bodies: Arc<ByteAccount>,
        streams: Arc<ByteAccount>,
        turn_waiters: Arc<ByteAccount>,
        conn: Option<Arc<Activity>>,
    ) -> Arc<ConnectionShare> {
        let burst = INFLATE_BURST as f64;
        Arc::new(ConnectionShare {
            inflate: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
                rate: inflate_per_second.max(1) as f64,
                burst,
            }),
            bodies,
            streams,
            running: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            turn_waiters,
            conn,
        })
    }

    /// What a request of `conn` gets the moment it arrives, before anything
    /// is built for it: a turn if its connection's window has room; else a
    /// place among the requests waiting for one; else (its connection holds
    /// answers untaken while the process is over the budget of bytes
    /// waiting for peers, or the process already keeps
    /// [`WAITING_FOR_TURNS_MAX`] requests waiting) a refusal. Decided at
    /// once, so that the server can refuse a stream without keeping its
    /// request and a task for it (a thousand connections opening 100
    /// streams each would otherwise queue 100,000 of them).
    pub fn arrive(self: &Arc<Self>, conn: &Arc<Activity>) -> Arrival {
        if let Some(turn) = self.try_turn(conn) {
            return Arrival::Turn(turn);
        }
        if !conn.admits(0) {
            return Arrival::Refused;
        }
        match self.turn_waiters.hold(1) {
            Some(place) => {
                self.waiting.fetch_add(1, Ordering::AcqRel);
                Arrival::Wait(Waiting {
                    _place: place,
                    share: Arc::clone(self),
                })
            }
            None => Arrival::Refused,
        }
    }

    /// A turn of `conn` (the connection this share is for) to run the
    /// handler of a request that [`arrive`](Self::arrive)d: at once, or
    /// after waiting in its place. While its handlers running plus its
    /// responses untaken reach its window ([`HANDLERS_AT_START`] plus the
    /// responses it has taken, at most [`HANDLERS_PER_CONNECTION`]),
    /// requests wait. `None`: refused on arrival, or its peer has left a
    /// response untaken for [`TURN_STALL`] while this one waited, so it is
    /// refused rather than kept until the write time-out closes the
    /// connection.
    pub async fn handler_turn(
        self: &Arc<Self>,
        conn: &Arc<Activity>,
        arrival: Arrival,
    ) -> Option<HandlerTurn> {
        let _place = match arrival {
            Arrival::Turn(turn) => return Some(turn),
            Arrival::Refused => return None,
            Arrival::Wait(place) => place,
        };
        let _watching = conn.watch_turns();
        loop {
            let changed = conn.turns_changed();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            // Looked at again once listening, so no change is missed.
            if let Some(turn) = self.try_turn(conn) {
                return Some(turn);
            }
            // The window is full. Over the budget of bytes waiting for
            // peers, a connection holding answers untaken gets no more work
            // (`WaitingAccount::admits`): refuse now rather than hold the
            // request, so a flood of waiting streams costs nothing.
            if !conn.admits(0) {
                return None;
            }
            if tokio::time::timeout(TURN_STALL, changed).await.is_err()
                && conn
                    .waiting_on_peer_since()
                    .is_some_and(|since| since.elapsed() >= TURN_STALL)
            {
                return None;
            }
        }
    }

    /// A turn of `conn` if its window has room now.
    fn try_turn(self: &Arc<Self>, conn: &Arc<Activity>) -> Option<HandlerTurn> {
        let (taken, untaken) = conn.taken_and_untaken();
        let window = HANDLERS_AT_START
            .saturating_add(taken)
            .min(HANDLERS_PER_CONNECTION);
        let mut running = self.running.load(Ordering::Acquire);
        while running + untaken < window {
            match self.running.compare_exchange(
                running,
                running + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // Nothing else of its connection in the way: its scarce
                    // work goes ahead of that of busier connections.
                    let class = if running + untaken == 0 {
                        Class::First
                    } else {
                        Class::Second
                    };
                    return Some(HandlerTurn {
                        share: Arc::clone(self),
                        conn: Arc::clone(conn),
                        class,
                    });
                }
                Err(now) => running = now,
            }
        }
        None
    }

    /// The process' count of long-lived streams open.
    pub fn streams(&self) -> &Arc<ByteAccount> {
        &self.streams
    }

    /// The process' account of request bytes being received.
    pub fn bodies(&self) -> &Arc<ByteAccount> {
        &self.bodies
    }

    /// The connection's clocks, where its bodies arriving are counted for
    /// the cap ([`Activity::receiving`]).
    pub fn conn(&self) -> Option<&Arc<Activity>> {
        self.conn.as_ref()
    }

    /// `bytes` more were inflated for this connection: how long it must
    /// wait before inflating more (zero within its allowance).
    pub fn inflated(&self, bytes: usize) -> Duration {
        self.inflated_at(bytes, Instant::now())
    }

    fn inflated_at(&self, bytes: usize, now: Instant) -> Duration {
        let mut b = self.inflate.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.last = now;
        b.tokens = (b.tokens + elapsed * b.rate).min(b.burst) - bytes as f64;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.tokens / b.rate)
        }
    }
}

/// Count one request refused for the budget of bytes waiting for peers;
/// logged at the 1st, 2nd, 4th, 8th… so that a flood does not flood the
/// log.
pub fn refusing() {
    static REFUSED: AtomicUsize = AtomicUsize::new(0);
    let n = REFUSED.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_power_of_two() {
        crate::ops::log::message(
            "server",
            format_args!(
                "{n} request(s) refused so far: responses waiting for peers over the process budget"
            ),
        );
    }
}

/// Whether `req` is a gRPC call (gRPC-Web included), answered in its status
/// codes rather than HTTP's.
pub fn is_grpc<B>(req: &http::Request<B>) -> bool {
    req.headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// Bytes given back since the last trim after which the next look trims.
/// 8 MiB: after 25 zero-window connections (a few MiB of pages let go)
/// the greeter stayed at 2.1x its starting RSS with 32 MiB; a trim every
/// 5 s at most costs a few milliseconds of one thread.
pub const TRIM_AFTER: usize = 8 << 20;

/// How often the trimming thread looks.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(5);

/// What a closed connection is counted as given back (hyper's read and
/// write buffers, the h2 state, the task).
pub const CONNECTION_BYTES: usize = 64 << 10;

/// Bytes given back since the last trim.
static RELEASED: AtomicUsize = AtomicUsize::new(0);

/// `bytes` of buffers were let go (a closed connection counts
/// [`CONNECTION_BYTES`]); starts the trimming thread on first use.
pub fn released(bytes: usize) {
    static TRIMMER: Once = Once::new();
    TRIMMER.call_once(|| {
        let started = std::thread::Builder::new()
            .name("governor-trim".into())
            .spawn(|| loop {
                std::thread::sleep(TRIM_INTERVAL);
                if RELEASED.load(Ordering::Relaxed) >= TRIM_AFTER {
                    RELEASED.store(0, Ordering::Relaxed);
                    trim();
                }
            });
        if let Err(e) = started {
            crate::ops::log::message(
                "server",
                format_args!("cannot start the memory-trimming thread: {e}"),
            );
        }
    });
    RELEASED.fetch_add(bytes, Ordering::Relaxed);
}

/// Most malloc arenas glibc keeps (`M_ARENA_MAX`) once
/// [`limit_arenas`] ran: one per core would be glibc's default times 8.
/// Every arena keeps its own free chunks, so after a flood served by many
/// threads (the runtime's workers, the blocking pool) freed memory is
/// scattered over up to 16 arenas on 2 cores, in pieces `malloc_trim`
/// cannot all return; two arenas keep the freed memory together.
pub const ARENAS: i32 = 2;

/// Allocations from this size up are mapped on their own and unmapped when
/// freed (`mallopt(M_MMAP_THRESHOLD)`), glibc's starting value held fixed.
/// glibc raises it to the size of each mapped block freed (up to 32 MiB),
/// so after the first request body of 4 MB every later one came from the
/// heap, where what is freed stays resident until a trim, and only if no
/// live chunk shares its pages.
pub const MMAP_THRESHOLD: i32 = 128 << 10;

/// Bound glibc's malloc to [`ARENAS`] arenas (`mallopt(M_ARENA_MAX)`, the
/// same as `MALLOC_ARENA_MAX=2` in the environment, which still wins when
/// set), and fix its mapping threshold at [`MMAP_THRESHOLD`] (unless
/// `MALLOC_MMAP_THRESHOLD_` is set). Called by the server before it
/// accepts; once per process.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            extern "C" {
                /// glibc: set a malloc parameter; returns 1 on success.
                fn mallopt(param: i32, value: i32) -> i32;
            }
            /// glibc's `M_ARENA_MAX` and `M_MMAP_THRESHOLD` (malloc.h).
            const M_ARENA_MAX: i32 = -8;
            const M_MMAP_THRESHOLD: i32 = -3;
            let settings = [
                ("MALLOC_ARENA_MAX", M_ARENA_MAX, ARENAS),
                ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            ];
            for (env, param, value) in settings {
                if std::env::var_os(env).is_some() {
                    continue;
                }
                // SAFETY: mallopt takes two integers and changes the
                // allocator's settings under its own lock; any thread may
                // call it at any time.
                unsafe {
                    mallopt(param, value);
                }
            }
        });
    }
}

/// Give the free pages of the allocator's arenas back to the kernel.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            /// glibc: release free memory from the heap of every arena
            /// down to `pad` bytes; returns 1 if memory was released.
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim takes a size, touches only the allocator's
        // own state under its own locks, and is safe to call at any time
        // from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_past_its_inflate_allowance_waits_for_it_to_refill() {
        let share = ConnectionShare::new(
            1 << 20,
            ByteAccount::new(0),
            ByteAccount::new(0),
            ByteAccount::new(0),
            None,
        );
        let t0 = share.inflate.lock().unwrap().last;
        // The burst is free.
        assert_eq!(share.inflated_at(INFLATE_BURST, t0), Duration::ZERO);
        // Past it, each MiB costs a second.
        assert_eq!(share.inflated_at(1 << 20, t0), Duration::from_secs(1));
        // Three seconds later the debt is repaid and two MiB saved.
        let t3 = t0 + Duration::from_secs(3);
        assert_eq!(share.inflated_at(2 << 20, t3), Duration::ZERO);
        assert_eq!(share.inflated_at(1 << 19, t3), Duration::from_millis(500));
    }

    #[test]
    fn on_arrival_a_request_gets_a_turn_then_a_place_then_a_refusal_once_the_places_are_taken() {
        let waiters = ByteAccount::new(3);
        let share = Arc::new(ConnectionShare::new(
            1 << 20,
            ByteAccount::new(0),
            ByteAccount::new(0),
            waiters.clone(),
            None,
        ));
        let conn = Activity::new(
            Duration::from_secs(10),
            Duration::from_secs(10),
            Duration::from_secs(10),
        );
        let arrive = || share.arrive(&conn);
        // A new connection's window: two turns.
        let turns: Vec<_> = (0..HANDLERS_AT_START).map(|_| arrive()).collect();
        assert!(turns.iter().all(|a| matches!(a, Arrival::Turn(_))));
        // Then places among the waiters, as many as the process keeps.
        let places: Vec<_> = (0..3).map(|_| arrive()).collect();
        assert!(places.iter().all(|a| matches!(a, Arrival::Wait(_))));
        // Then a refusal, decided at once: nothing is kept for it.
        assert!(matches!(arrive(), Arrival::Refused));
        // A place given back is a place again.
        drop(places);
        assert!(matches!(arrive(), Arrival::Wait(_)));
        // A turn ended is a turn again.
        drop(turns);
        assert!(matches!(arrive(), Arrival::Turn(_)));
    }

    #[test]
    fn a_connection_is_busy_for_admission_while_another_of_its_requests_runs_or_waits() {
        let share = Arc::new(ConnectionShare::new(
            1 << 20,
            ByteAccount::new(0),
            ByteAccount::new(0),
            ByteAccount::new(8),
            None,
        ));
        let conn = Activity::new(
            Duration::from_secs(10),
            Duration::from_secs(10),
            Duration::from_secs(10),
        );
        // One request: its own handler is not "another".
        let first = share.arrive(&conn);
        assert!(!share.busy());
        let second = share.arrive(&conn);
        assert!(share.busy(), "two handlers running");
        drop(second);
        assert!(!share.busy());
        // The window (two) full: a third waits, and the connection is busy
        // while it does, even with one handler running.
        let second = share.arrive(&conn);
        let third = share.arrive(&conn);
        assert!(matches!(third, Arrival::Wait(_)));
        drop(second);
        assert!(share.busy(), "a request waiting for a turn");
        drop(third);
        assert!(!share.busy());
        drop(first);
    }
}
