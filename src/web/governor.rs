//! The governor's per-connection shares: work one connection may make the
//! process do, whatever it sends.
//!
//! The connection budget ([`crate::web::budget`]) bounds how many
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

/// Default long-lived streams (server-streaming and bidirectional gRPC
/// calls: health `Watch`, reflection) the process keeps open at once.
pub const DEFAULT_LONG_LIVED_STREAMS: usize = 1024;

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
    /// the process account `bodies` and counting long-lived streams on
    /// `streams`.
    pub fn new(
        inflate_per_second: usize,
        bodies: Arc<ByteAccount>,
        streams: Arc<ByteAccount>,
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
        })
    }

    /// The process' count of long-lived streams open.
    pub fn streams(&self) -> &Arc<ByteAccount> {
        &self.streams
    }

    /// The process' account of request bytes being received.
    pub fn bodies(&self) -> &ByteAccount {
        &self.bodies
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

/// Bytes given back since the last trim after which the next look trims.
pub const TRIM_AFTER: usize = 32 << 20;

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
            crate::web::log::message(
                "server",
                format_args!("cannot start the memory-trimming thread: {e}"),
            );
        }
    });
    RELEASED.fetch_add(bytes, Ordering::Relaxed);
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
        let share = ConnectionShare::new(1 << 20, ByteAccount::new(0), ByteAccount::new(0));
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
}
