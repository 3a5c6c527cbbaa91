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

use std::sync::{Arc, Mutex};
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
    /// (at least 1), with [`INFLATE_BURST`] at once.
    pub fn new(inflate_per_second: usize) -> Arc<ConnectionShare> {
        let burst = INFLATE_BURST as f64;
        Arc::new(ConnectionShare {
            inflate: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
                rate: inflate_per_second.max(1) as f64,
                burst,
            }),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_past_its_inflate_allowance_waits_for_it_to_refill() {
        let share = ConnectionShare::new(1 << 20);
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
