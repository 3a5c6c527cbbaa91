//! The crate's one per-client limit: at most `max` events per sliding
//! `window` for each key, the key of a client being its address (IPv6 by
//! /64, since one host holds a whole /64).
//!
//! Two layers, so that a caller with its own lock can use the bare one:
//!
//! - [`Windows`]: the recent event times of each key, nothing else. The
//!   token-auth login limiter keeps two of them (per address, per username)
//!   under its one mutex, so that checking both and counting both is one step.
//! - [`PerClient`]: windows keyed by client address behind a mutex, reading
//!   "now" from an injectable [`Clock`]; [`PerClient::middleware`] puts it in
//!   front of a route as chain middleware.
//! - [`LogLines`]: one window for the log lines of an event that can repeat
//!   without end (a failed TLS handshake per garbage connection): past the
//!   limit lines are counted, and the next line written says how many were
//!   left out, as the log sink reports the lines it dropped.
//!
//! Memory: a key is forgotten once its newest event leaves the window. That
//! happens in [`Windows::prune`] (run it periodically) and inline when a
//! window holds [`PRUNE_AT`] keys (or the bound given to
//! [`Windows::prune_at`]), so a flood of addresses cannot grow the map
//! without end; while every key is fresh the map may exceed the bound, since
//! forgetting a fresh key would reset its limit.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Keys a window holds before a count prunes it inline (the default bound).
pub const PRUNE_AT: usize = 10_000;

/// A source of "now" for a limit, injectable so tests move time instead of
/// sleeping.
pub trait Clock: Send + Sync + 'static {
    /// Time since a fixed origin of the clock's choosing; never goes back.
    fn now(&self) -> Duration;
}

/// The process's monotonic clock (the default), counted from its creation.
#[derive(Debug, Clone, Copy)]
pub struct Monotonic(Instant);

impl Default for Monotonic {
    fn default() -> Monotonic {
        Monotonic(Instant::now())
    }
}

impl Clock for Monotonic {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Sliding windows of event times, one per key; no lock, no clock: the
/// caller passes "now".
#[derive(Debug)]
pub struct Windows<K> {
    max: usize,
    window: Duration,
    prune_at: usize,
    seen: HashMap<K, VecDeque<Duration>>,
}

impl<K: Hash + Eq> Windows<K> {
    /// At most `max` events per `window` for each key; pruned inline at
    /// [`PRUNE_AT`] keys.
    pub fn new(max: usize, window: Duration) -> Windows<K> {
        Windows {
            max,
            window,
            prune_at: PRUNE_AT,
            seen: HashMap::new(),
        }
    }

    /// Prune inline once `keys` keys are held, instead of at [`PRUNE_AT`].
    pub fn prune_at(mut self, keys: usize) -> Windows<K> {
        self.prune_at = keys;
        self
    }

    /// How long until `key` may have one more event at `now`; `None` if it
    /// may now. Nothing is counted (see [`count`](Self::count)).
    pub fn wait(&mut self, key: &K, now: Duration) -> Option<Duration> {
        if self.seen.len() >= self.prune_at {
            self.prune(now);
        }
        let window = self.window;
        let times = self.seen.get_mut(key)?;
        while times
            .front()
            .is_some_and(|t| now.saturating_sub(*t) >= window)
        {
            times.pop_front();
        }
        if times.len() < self.max {
            return None;
        }
        let oldest = times.front().copied().unwrap_or(now);
        Some(window.saturating_sub(now.saturating_sub(oldest)))
    }

    /// Count an event of `key` at `now`, whatever the limit says: for a
    /// caller that asked [`wait`](Self::wait) first.
    pub fn count(&mut self, key: K, now: Duration) {
        self.seen.entry(key).or_default().push_back(now);
    }

    /// Count an event of `key` at `now` if the limit allows it: `Ok`, or
    /// how long until it would (the event is then not counted, so a client
    /// that waits gets in again).
    pub fn admit(&mut self, key: K, now: Duration) -> Result<(), Duration> {
        match self.wait(&key, now) {
            Some(wait) => Err(wait),
            None => {
                self.count(key, now);
                Ok(())
            }
        }
    }

    /// Forget the keys with no event left in the window at `now`.
    pub fn prune(&mut self, now: Duration) {
        let window = self.window;
        self.seen.retain(|_, times| {
            times.retain(|t| now.saturating_sub(*t) < window);
            !times.is_empty()
        });
    }

    /// How many keys are held (what a prune could forget).
    pub fn keys(&self) -> usize {
        self.seen.len()
    }
}

/// The limit of one kind of event per client address, shared by the tasks
/// serving it.
pub struct PerClient {
    clock: Arc<dyn Clock>,
    windows: Mutex<Windows<IpAddr>>,
}

impl std::fmt::Debug for PerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let windows = self.lock();
        f.debug_struct("PerClient")
            .field("max", &windows.max)
            .field("window", &windows.window)
            .finish_non_exhaustive()
    }
}

impl PerClient {
    /// At most `max` events per `window` for each client, on the
    /// [`Monotonic`] clock.
    pub fn new(max: usize, window: Duration) -> PerClient {
        PerClient::with_clock(max, window, Arc::new(Monotonic::default()))
    }

    /// The same limit reading "now" from `clock`.
    pub fn with_clock(max: usize, window: Duration, clock: Arc<dyn Clock>) -> PerClient {
        PerClient {
            clock,
            windows: Mutex::new(Windows::new(max, window)),
        }
    }

    /// Prune inline once `keys` clients are held, instead of at [`PRUNE_AT`].
    pub fn prune_at(self, keys: usize) -> PerClient {
        let windows = self.windows.into_inner().unwrap_or_else(|p| p.into_inner());
        PerClient {
            clock: self.clock,
            windows: Mutex::new(windows.prune_at(keys)),
        }
    }

    /// Count an event of `ip` now: `Ok` if within the limit, else how long
    /// until one is allowed again (the event is then not counted).
    pub fn admit(&self, ip: IpAddr) -> Result<(), Duration> {
        let now = self.clock.now();
        self.lock().admit(client_key(ip), now)
    }

    /// Forget clients with no event in the window.
    pub fn prune(&self) {
        let now = self.clock.now();
        self.lock().prune(now);
    }

    /// How many clients are held (for tests and metrics).
    pub fn tracked(&self) -> usize {
        self.lock().keys()
    }

    fn lock(&self) -> MutexGuard<'_, Windows<IpAddr>> {
        // The map stays consistent between statements; reuse it after a panic.
        self.windows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The log lines of one kind of event: at most `max` per `window` for the
/// whole process (a flood from many addresses is still one flood), the
/// others left out and counted.
pub struct LogLines {
    clock: Arc<dyn Clock>,
    /// The window, and the lines left out since the last one written.
    state: Mutex<(Windows<()>, u64)>,
}

impl LogLines {
    /// At most `max` lines per `window`, on the [`Monotonic`] clock.
    pub fn new(max: usize, window: Duration) -> LogLines {
        LogLines::with_clock(max, window, Arc::new(Monotonic::default()))
    }

    /// The same limit reading "now" from `clock`.
    pub fn with_clock(max: usize, window: Duration, clock: Arc<dyn Clock>) -> LogLines {
        LogLines {
            clock,
            state: Mutex::new((Windows::new(max, window), 0)),
        }
    }

    /// Whether a line may be written now: `Some`, carrying the count of
    /// lines left out before it (written at its end), or `None` (this one
    /// is left out, and counted).
    pub fn admit(&self) -> Option<Suppressed> {
        let now = self.clock.now();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (window, left_out) = &mut *state;
        match window.admit((), now) {
            Ok(()) => Some(Suppressed(std::mem::take(left_out))),
            Err(_) => {
                *left_out += 1;
                None
            }
        }
    }
}

/// The lines [`LogLines`] left out before the one being written; as text,
/// `; N similar line(s) suppressed`, or nothing when none were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suppressed(pub u64);

impl std::fmt::Display for Suppressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => Ok(()),
            n => write!(f, "; {n} similar line(s) suppressed"),
        }
    }
}

/// A wait as the whole seconds a client is told (`Retry-After`, messages):
/// rounded up, at least 1, so a client that waits that long gets in.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// The address a limit counts under: IPv4 as is, IPv6 by its /64 (and an
/// IPv4-mapped IPv6 address as the IPv4 address).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::from([s[0], s[1], s[2], s[3], 0, 0, 0, 0])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::RETRY_AFTER;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A clock the test moves, in milliseconds.
    #[derive(Default)]
    struct Manual(AtomicU64);

    impl Manual {
        fn advance(&self, d: Duration) {
            self.0.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
        }
    }

    impl Clock for Manual {
        fn now(&self) -> Duration {
            Duration::from_millis(self.0.load(Ordering::SeqCst))
        }
    }

    const MINUTE: Duration = Duration::from_secs(60);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn each_client_gets_max_events_per_window_then_waits_for_the_oldest() {
        let clock = Arc::new(Manual::default());
        let limit = PerClient::with_clock(3, MINUTE, clock.clone());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..3 {
            assert!(limit.admit(a).is_ok());
            clock.advance(secs(1));
        }
        clock.advance(secs(7));
        assert_eq!(limit.admit(a), Err(secs(50)));
        assert!(limit.admit(b).is_ok());
        // The oldest event leaves the window: one more is allowed.
        clock.advance(secs(50));
        assert!(limit.admit(a).is_ok());
    }

    #[test]
    fn ipv6_clients_count_by_their_64_prefix() {
        let limit = PerClient::new(1, MINUTE);
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(limit.admit(one).is_ok());
        assert!(limit.admit(same_64).is_err());
        assert!(limit.admit(other_64).is_ok());
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(client_key(mapped), IpAddr::from([10, 0, 0, 1]));
    }

    #[test]
    fn a_wait_counts_nothing_and_a_refused_event_is_not_counted() {
        let mut w = Windows::new(2, MINUTE);
        assert_eq!(w.wait(&"ann", secs(0)), None);
        assert_eq!(w.keys(), 0, "asking counts nothing");
        w.count("ann", secs(0));
        w.count("ann", secs(10));
        assert_eq!(w.admit("ann", secs(30)), Err(secs(30)));
        assert_eq!(w.admit("ann", secs(59)), Err(secs(1)));
        // Had the refusals counted, the window would still be full here.
        assert_eq!(w.admit("ann", secs(60)), Ok(()));
    }

    #[test]
    fn prune_forgets_keys_whose_events_left_the_window() {
        let mut w = Windows::new(1, MINUTE);
        w.count(1, secs(0));
        w.count(2, secs(30));
        w.prune(secs(60));
        assert_eq!(w.keys(), 1);
        w.prune(secs(90));
        assert_eq!(w.keys(), 0);
    }

    #[test]
    fn a_window_at_its_prune_bound_forgets_stale_keys_before_counting() {
        let mut w = Windows::new(1, MINUTE).prune_at(3);
        for key in 0..3 {
            w.count(key, secs(0));
        }
        w.count(3, secs(59));
        assert_eq!(w.keys(), 4, "below the bound nothing is pruned inline");
        assert_eq!(w.admit(4, secs(60)), Ok(()));
        assert_eq!(
            w.keys(),
            2,
            "the three stale keys went, the fresh one stays"
        );
    }

    #[test]
    fn log_lines_past_the_limit_are_counted_and_the_next_line_says_how_many() {
        let clock = Arc::new(Manual::default());
        let lines = LogLines::with_clock(2, secs(1), clock.clone());
        assert_eq!(lines.admit(), Some(Suppressed(0)));
        assert_eq!(lines.admit(), Some(Suppressed(0)));
        for _ in 0..5 {
            assert_eq!(lines.admit(), None, "past the limit");
        }
        clock.advance(secs(1));
        let next = lines.admit().expect("a new window");
        assert_eq!(next, Suppressed(5));
        assert_eq!(next.to_string(), "; 5 similar line(s) suppressed");
        assert_eq!(lines.admit(), Some(Suppressed(0)), "the count was reported");
        assert_eq!(Suppressed(0).to_string(), "");
    }

    #[test]
    fn retry_after_rounds_a_wait_up_to_whole_seconds_and_at_least_one() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(secs(2)), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(2_001)), 3);
    }

    #[tokio::test]
    async fn as_middleware_the_limit_answers_past_it_with_retry_after_and_skips_the_route() {
        use crate::web::chain::handler;
        use crate::web::engine::Engine;
        use http::{Request, StatusCode};
        use http_body_util::{BodyExt, Empty};

        let clock = Arc::new(Manual::default());
        let limit = Arc::new(PerClient::with_clock(2, MINUTE, clock.clone()));
        let served = Arc::new(AtomicU64::new(0));
        let count = served.clone();
        let mut e = Engine::new();
        e.use_middleware(limit.middleware(|c, wait| {
            c.string(StatusCode::TOO_MANY_REQUESTS, format!("wait {wait:?}"));
        }));
        e.get(
            "/",
            handler(move |c| {
                count.fetch_add(1, Ordering::SeqCst);
                Box::pin(async move { c.string(StatusCode::OK, "hi") })
            }),
        )
        .unwrap();
        let app = e.build();
        let call = |from: &str| {
            let req = Request::get("/")
                .body(Empty::<bytes::Bytes>::new())
                .unwrap();
            app.handle(
                req,
                format!("{from}:4000")
                    .parse::<std::net::SocketAddr>()
                    .unwrap(),
            )
        };
        for _ in 0..2 {
            assert_eq!(call("192.0.2.1").await.status(), StatusCode::OK);
        }
        clock.advance(Duration::from_millis(1_500));
        let refused = call("192.0.2.1").await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[RETRY_AFTER], "59");
        let body = refused.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "wait 58.5s");
        assert_eq!(served.load(Ordering::SeqCst), 2, "the route did not run");
        assert_eq!(call("192.0.2.2").await.status(), StatusCode::OK);
    }
}
