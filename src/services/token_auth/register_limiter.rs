//! Registration throttling: at most N new-account attempts per client IP per
//! sliding window (default 10 a minute).
//!
//! Registration is the one unauthenticated route that writes a row and runs
//! bcrypt (cost 12, a few hundred milliseconds of one core). Without a limit
//! one script can fill the user table or keep every core hashing. No rule
//! names a number; 10 a minute is far above what a person signing up needs
//! (one attempt, a few retries after a taken name) and far below a flood.
//!
//! Every well-formed registration request counts, whether it then succeeds,
//! is refused as invalid or finds the name taken: a 409 also tells a script
//! which usernames exist, so probing is throttled too. Refused requests are
//! not counted, as for login. The check runs before any bcrypt work.
//! Clients are keyed like the login limiter's (IPv6 by /64); time comes from
//! the injectable [`Clock`].

use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::limiter::{ip_key, window_wait, Admission};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The numbers behind the registration limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterPolicy {
    /// Registration attempts allowed per window, per client IP.
    pub attempts: usize,
    /// Length of the sliding window, seconds.
    pub window: u64,
}

impl Default for RegisterPolicy {
    /// 10 registrations per minute per IP.
    fn default() -> RegisterPolicy {
        RegisterPolicy {
            attempts: 10,
            window: 60,
        }
    }
}

/// Size at which the map is pruned inline rather than only by the periodic task.
const PRUNE_AT: usize = 100_000;

/// The registration limiter of one server process.
pub struct RegisterLimiter {
    policy: RegisterPolicy,
    clock: Arc<dyn Clock>,
    by_ip: Mutex<HashMap<IpAddr, VecDeque<u64>>>,
}

impl std::fmt::Debug for RegisterLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisterLimiter")
            .field("policy", &self.policy)
            .finish()
    }
}

impl RegisterLimiter {
    /// A limiter with `policy`, reading time from `clock`.
    pub fn new(policy: RegisterPolicy, clock: Arc<dyn Clock>) -> RegisterLimiter {
        RegisterLimiter {
            policy,
            clock,
            by_ip: Mutex::new(HashMap::new()),
        }
    }

    /// Decide whether a registration from `ip` may be tried now, and count it
    /// if so. The answer is [`Admission::Allowed`] or
    /// [`Admission::TooManyAttempts`].
    pub fn admit(&self, ip: IpAddr) -> Admission {
        let now = self.clock.now();
        let mut by_ip = self.lock();
        if by_ip.len() > PRUNE_AT {
            prune_map(&mut by_ip, self.policy.window, now);
        }
        let attempts = by_ip.entry(ip_key(ip)).or_default();
        if let Some(retry_after) =
            window_wait(attempts, self.policy.attempts, self.policy.window, now)
        {
            return Admission::TooManyAttempts { retry_after };
        }
        attempts.push_back(now);
        Admission::Allowed
    }

    /// Forget clients with no attempt in the window.
    pub fn prune(&self) {
        let now = self.clock.now();
        prune_map(&mut self.lock(), self.policy.window, now);
    }

    /// How many client IPs are currently tracked (for tests and metrics).
    pub fn tracked(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, VecDeque<u64>>> {
        // The map stays consistent between statements; reuse it after a panic.
        self.by_ip.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn prune_map(by_ip: &mut HashMap<IpAddr, VecDeque<u64>>, window: u64, now: u64) {
    by_ip.retain(|_, attempts| {
        attempts.retain(|&t| t + window > now);
        !attempts.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::token_auth::clock::ManualClock;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn eleventh_registration_in_a_minute_from_one_ip_waits_for_the_window() {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let limiter = RegisterLimiter::new(RegisterPolicy::default(), clock.clone());
        for _ in 0..10 {
            assert_eq!(limiter.admit(ip(1)), Admission::Allowed);
            clock.advance(2);
        }
        // The oldest attempt was 20 s ago: it leaves the window in 40 s.
        assert_eq!(
            limiter.admit(ip(1)),
            Admission::TooManyAttempts { retry_after: 40 }
        );
        assert_eq!(limiter.admit(ip(2)), Admission::Allowed, "other clients");
        clock.advance(40);
        assert_eq!(limiter.admit(ip(1)), Admission::Allowed);
    }

    #[test]
    fn prune_forgets_clients_whose_attempts_left_the_window() {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let policy = RegisterPolicy {
            attempts: 1,
            window: 60,
        };
        let limiter = RegisterLimiter::new(policy, clock.clone());
        limiter.admit(ip(1));
        clock.advance(30);
        limiter.admit(ip(2));
        clock.advance(30);
        limiter.prune();
        assert_eq!(limiter.tracked(), 1);
    }
}
