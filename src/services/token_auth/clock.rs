//! The time source of the auth service, injectable so tests never sleep.
//!
//! Everything in the service that depends on "now" — token `iat`/`exp`, the
//! blacklist pruning cut-off, login rate windows and account locks, the OAuth
//! state TTL — asks a [`Clock`] instead of reading the system time. Production
//! uses [`SystemClock`]; tests use [`ManualClock`] and move it forward.

use crate::ops::ratelimit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current Unix time in whole seconds.
pub trait Clock: Send + Sync + 'static {
    /// Seconds since 1970-01-01T00:00:00Z.
    fn now(&self) -> u64;
}

/// The operating system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        // A clock before 1970 is a broken machine; treat it as the epoch.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock showing `start` (Unix seconds).
    pub fn new(start: u64) -> ManualClock {
        ManualClock {
            now: AtomicU64::new(start),
        }
    }

    /// A clock showing the current system time, to start tests from a realistic point.
    pub fn starting_now() -> ManualClock {
        ManualClock::new(SystemClock.now())
    }

    /// Move the clock forward by `seconds`.
    pub fn advance(&self, seconds: u64) {
        self.now.fetch_add(seconds, Ordering::SeqCst);
    }

    /// Set the clock to `now`.
    pub fn set(&self, now: u64) {
        self.now.store(now, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// The service's clock as a per-client limit's clock
/// ([`ratelimit::Clock`]): whole Unix seconds, so the registration limit
/// moves with the same clock as the login limits.
pub struct LimitClock(pub Arc<dyn Clock>);

impl ratelimit::Clock for LimitClock {
    fn now(&self) -> Duration {
        Duration::from_secs(self.0.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new(100);
        assert_eq!(clock.now(), 100);
        clock.advance(61);
        assert_eq!(clock.now(), 161);
        clock.set(5);
        assert_eq!(clock.now(), 5);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now() > 1_577_836_800);
    }
}
