//! Login and registration throttling: attempt rate limits, captcha hint,
//! account lock-out, and registrations per client.
//!
//! Three rules for logins, each against a different attack:
//!
//! * **Rate**: at most 5 attempts per sliding minute per client IP and per
//!   username. Guessing many passwords for one account, or many accounts from
//!   one address, both hit a wall. Refused attempts are not counted, so a
//!   client that waits a minute gets in again.
//! * **Captcha**: after 3 consecutive failures for a username, failure
//!   responses say `captcha_required: true` so a front end can add a challenge.
//! * **Lock**: after 10 consecutive failures the username is locked for 30
//!   minutes; during the lock even the right password is refused.
//!
//! Usernames are tracked whether or not they exist, so the limiter's answers
//! never reveal which accounts are real, and without regard to ASCII case, as
//! the store matches them (`Ann` and `ann` are one account and one budget).
//! IPv6 clients are grouped by /64, the block a single customer normally gets.
//! State lives in memory: one process is one limiter. Time comes from a
//! [`Clock`] so tests move it instead of sleeping. The windows are the
//! crate's one sliding window ([`crate::ops::ratelimit`]).
//!
//! **Registrations** ([`RegisterPolicy`], default 10 a minute per client
//! address): registration is the one unauthenticated route that writes a
//! row and runs bcrypt (cost 12, a few hundred milliseconds of one core).
//! Without a limit one script can fill the user table or keep every core
//! hashing; 10 a minute is far above what a person signing up needs (one
//! attempt, a few retries after a taken name) and far below a flood. Every
//! well-formed registration request counts, whether it then succeeds, is
//! refused as invalid or finds the name taken (a 409 also tells a script
//! which usernames exist); refused requests are not counted, as for login;
//! the check runs before any bcrypt work ([`registrations`]).

use crate::ops::ratelimit::{client_key, PerClient, Windows};
use crate::services::token_auth::clock::{Clock, LimitClock};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The numbers behind the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitPolicy {
    /// Attempts allowed per window, per IP and per username.
    pub attempts: usize,
    /// Length of the sliding window, seconds.
    pub window: u64,
    /// Consecutive failures after which a captcha is asked for.
    pub captcha_after: u32,
    /// Consecutive failures that lock the account.
    pub lock_after: u32,
    /// How long a lock lasts, seconds.
    pub lock_for: u64,
}

impl Default for LimitPolicy {
    /// The service's values: 5 per minute, captcha after 3, lock after 10 for 30 minutes.
    fn default() -> LimitPolicy {
        LimitPolicy {
            attempts: 5,
            window: 60,
            captcha_after: 3,
            lock_after: 10,
            lock_for: 30 * 60,
        }
    }
}

/// The limiter's answer before a login is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead; the attempt has been counted.
    Allowed,
    /// Too many attempts in the window; retry after this many seconds.
    TooManyAttempts {
        /// Seconds until the oldest counted attempt leaves the window.
        retry_after: u64,
    },
    /// The account is locked; retry after this many seconds.
    Locked {
        /// Seconds until the lock ends.
        retry_after: u64,
    },
}

/// What a failed attempt changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureOutcome {
    /// Consecutive failures so far (0 right after a lock was set).
    pub consecutive: u32,
    /// Whether the client should now solve a captcha.
    pub captcha_required: bool,
    /// Whether this failure locked the account.
    pub locked: bool,
}

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

/// The registration limit of one server process: `policy` per client
/// address, on `clock`.
pub fn registrations(policy: RegisterPolicy, clock: Arc<dyn Clock>) -> PerClient {
    let window = Duration::from_secs(policy.window);
    PerClient::with_clock(policy.attempts, window, Arc::new(LimitClock(clock))).prune_at(PRUNE_AT)
}

/// Longest username kept as a key; longer names cannot exist anyway.
const KEY_MAX: usize = 64;
/// Keys a window holds before it is pruned inline rather than only by the
/// periodic task.
const PRUNE_AT: usize = 100_000;

#[derive(Default)]
struct Account {
    consecutive_failures: u32,
    locked_until: Option<u64>,
}

struct State {
    by_ip: Windows<IpAddr>,
    by_user: Windows<String>,
    accounts: HashMap<String, Account>,
}

/// The login limiter of one server process.
pub struct LoginLimiter {
    policy: LimitPolicy,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl std::fmt::Debug for LoginLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginLimiter")
            .field("policy", &self.policy)
            .finish()
    }
}

impl LoginLimiter {
    /// A limiter with `policy`, reading time from `clock`.
    pub fn new(policy: LimitPolicy, clock: Arc<dyn Clock>) -> LoginLimiter {
        LoginLimiter {
            policy,
            clock,
            state: Mutex::new(State {
                by_ip: Windows::new(policy.attempts, secs(policy.window)).prune_at(PRUNE_AT),
                by_user: Windows::new(policy.attempts, secs(policy.window)).prune_at(PRUNE_AT),
                accounts: HashMap::new(),
            }),
        }
    }

    /// Decide whether a login for `username` from `ip` may be tried now, and
    /// count it if so.
    pub fn admit(&self, ip: IpAddr, username: &str) -> Admission {
        let now = self.clock.now();
        let (ip, user) = (client_key(ip), user_key(username));
        let mut state = self.lock();

        if let Some(account) = state.accounts.get_mut(&user) {
            match account.locked_until {
                Some(until) if until > now => {
                    return Admission::Locked {
                        retry_after: until - now,
                    }
                }
                Some(_) => account.locked_until = None,
                None => {}
            }
        }

        // Both windows are asked before either counts, under one lock: an
        // attempt is counted in both or in neither.
        let at = secs(now);
        let ip_wait = state.by_ip.wait(&ip, at);
        let user_wait = state.by_user.wait(&user, at);
        if let Some(wait) = ip_wait.max(user_wait) {
            return Admission::TooManyAttempts {
                retry_after: wait.as_secs().max(1),
            };
        }
        state.by_ip.count(ip, at);
        state.by_user.count(user, at);
        Admission::Allowed
    }

    /// Record that a password check for `username` failed.
    pub fn record_failure(&self, username: &str) -> FailureOutcome {
        let now = self.clock.now();
        let mut state = self.lock();
        let account = state.accounts.entry(user_key(username)).or_default();
        account.consecutive_failures += 1;
        let mut locked = false;
        if account.consecutive_failures >= self.policy.lock_after {
            // The lock itself is the penalty; the count starts again after it.
            account.locked_until = Some(now + self.policy.lock_for);
            account.consecutive_failures = 0;
            locked = true;
        }
        FailureOutcome {
            consecutive: account.consecutive_failures,
            captcha_required: locked || account.consecutive_failures >= self.policy.captcha_after,
            locked,
        }
    }

    /// Whether the consecutive failures of `username` reached the captcha
    /// threshold: its next login must carry a solved captcha.
    pub fn captcha_required(&self, username: &str) -> bool {
        self.lock()
            .accounts
            .get(&user_key(username))
            .is_some_and(|a| a.consecutive_failures >= self.policy.captcha_after)
    }

    /// Record a successful login: the consecutive-failure count starts over.
    /// A lock stays: a login admitted just before another attempt locked the
    /// account does not lift the lock by succeeding.
    pub fn record_success(&self, username: &str) {
        let mut state = self.lock();
        let user = user_key(username);
        if let Some(account) = state.accounts.get_mut(&user) {
            account.consecutive_failures = 0;
            if account.locked_until.is_none() {
                state.accounts.remove(&user);
            }
        }
    }

    /// Forget windows with no recent attempts and accounts with nothing to
    /// remember. Run periodically so memory tracks recent traffic only.
    pub fn prune(&self) {
        let now = self.clock.now();
        prune_state(&mut self.lock(), now);
    }

    /// How many IPs and usernames are currently tracked (for tests and metrics).
    pub fn tracked(&self) -> (usize, usize) {
        let state = self.lock();
        (state.by_ip.keys(), state.by_user.keys())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent between statements; reuse it after a panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whole seconds (the service's clock) as a window's time.
fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn prune_state(state: &mut State, now: u64) {
    state.by_ip.prune(secs(now));
    state.by_user.prune(secs(now));
    state.accounts.retain(|_, account| {
        if account.locked_until.is_some_and(|until| until <= now) {
            account.locked_until = None;
        }
        account.locked_until.is_some() || account.consecutive_failures > 0
    });
}

/// Usernames are one account whatever their ASCII case (the store's rule),
/// so `ANN` and `ann` share a window, a failure count and a lock.
pub(crate) fn user_key(username: &str) -> String {
    username
        .chars()
        .take(KEY_MAX)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::token_auth::clock::ManualClock;

    fn limiter() -> (Arc<ManualClock>, LoginLimiter) {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let limiter = LoginLimiter::new(LimitPolicy::default(), clock.clone());
        (clock, limiter)
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn sixth_attempt_in_a_minute_from_one_ip_is_refused() {
        let (clock, limiter) = limiter();
        for n in 0..5 {
            assert_eq!(
                limiter.admit(ip(1), &format!("user{n}")),
                Admission::Allowed
            );
            clock.advance(1);
        }
        assert_eq!(
            limiter.admit(ip(1), "user9"),
            Admission::TooManyAttempts { retry_after: 55 }
        );
        assert_eq!(limiter.admit(ip(2), "user9"), Admission::Allowed);
    }

    #[test]
    fn sixth_attempt_in_a_minute_for_one_username_is_refused_from_any_ip() {
        let (_clock, limiter) = limiter();
        for n in 0..5 {
            assert_eq!(limiter.admit(ip(n), "ann"), Admission::Allowed);
        }
        assert_eq!(
            limiter.admit(ip(99), "ann"),
            Admission::TooManyAttempts { retry_after: 60 }
        );
        assert_eq!(limiter.admit(ip(99), "bob"), Admission::Allowed);
    }

    #[test]
    fn username_limits_and_locks_ignore_ascii_case() {
        let (_clock, limiter) = limiter();
        for (n, name) in ["ann", "Ann", "ANN", "aNn", "anN"].iter().enumerate() {
            assert_eq!(limiter.admit(ip(n as u8), name), Admission::Allowed);
        }
        assert!(matches!(
            limiter.admit(ip(99), "AnN"),
            Admission::TooManyAttempts { .. }
        ));
        for n in 0..10 {
            let name = if n % 2 == 0 { "BOB" } else { "bob" };
            limiter.record_failure(name);
        }
        assert!(matches!(
            limiter.admit(ip(98), "Bob"),
            Admission::Locked { .. }
        ));
    }

    #[test]
    fn window_slides_and_refusals_are_not_counted() {
        let (clock, limiter) = limiter();
        for _ in 0..5 {
            assert_eq!(limiter.admit(ip(1), "ann"), Admission::Allowed);
        }
        clock.advance(30);
        assert!(matches!(
            limiter.admit(ip(1), "ann"),
            Admission::TooManyAttempts { .. }
        ));
        clock.advance(30);
        assert_eq!(limiter.admit(ip(1), "ann"), Admission::Allowed);
    }

    #[test]
    fn captcha_is_required_from_the_third_consecutive_failure() {
        let (_clock, limiter) = limiter();
        let flags: Vec<bool> = (0..4)
            .map(|_| limiter.record_failure("ann").captcha_required)
            .collect();
        assert_eq!(flags, [false, false, true, true]);
        limiter.record_success("ann");
        assert!(!limiter.record_failure("ann").captcha_required);
    }

    #[test]
    fn tenth_failure_locks_the_account_for_30_minutes() {
        let (clock, limiter) = limiter();
        for n in 1..=9 {
            let outcome = limiter.record_failure("ann");
            assert_eq!((outcome.consecutive, outcome.locked), (n, false));
        }
        assert!(limiter.record_failure("ann").locked);
        assert_eq!(
            limiter.admit(ip(1), "ann"),
            Admission::Locked { retry_after: 1800 }
        );
        clock.advance(1799);
        assert_eq!(
            limiter.admit(ip(2), "ann"),
            Admission::Locked { retry_after: 1 }
        );
        assert_eq!(
            limiter.admit(ip(2), "bob"),
            Admission::Allowed,
            "only that account"
        );
        clock.advance(1);
        assert_eq!(limiter.admit(ip(2), "ann"), Admission::Allowed);
    }

    #[test]
    fn a_success_resets_the_failure_count_but_not_a_lock() {
        let (_clock, limiter) = limiter();
        for _ in 0..10 {
            limiter.record_failure("ann");
        }
        limiter.record_success("ann");
        assert!(matches!(
            limiter.admit(ip(1), "ann"),
            Admission::Locked { .. }
        ));
        limiter.record_success("bob");
        assert_eq!(limiter.record_failure("bob").consecutive, 1);
    }

    #[test]
    fn ipv6_clients_share_a_limit_per_64_block() {
        let (_clock, limiter) = limiter();
        for n in 0..5u16 {
            let addr: IpAddr = format!("2001:db8:1:2::{n:x}").parse().unwrap();
            assert_eq!(limiter.admit(addr, &format!("u{n}")), Admission::Allowed);
        }
        let same_block: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        let other_block: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(matches!(
            limiter.admit(same_block, "x"),
            Admission::TooManyAttempts { .. }
        ));
        assert_eq!(limiter.admit(other_block, "x"), Admission::Allowed);
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(client_key(mapped), ip(1));
    }

    #[test]
    fn prune_forgets_quiet_clients_but_keeps_locks() {
        let (clock, limiter) = limiter();
        limiter.admit(ip(1), "ann");
        for _ in 0..10 {
            limiter.record_failure("bob");
        }
        clock.advance(60);
        limiter.prune();
        assert_eq!(limiter.tracked(), (0, 0));
        assert!(matches!(
            limiter.admit(ip(1), "bob"),
            Admission::Locked { .. }
        ));
    }

    #[test]
    fn eleventh_registration_in_a_minute_from_one_ip_waits_for_the_window() {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let limiter = registrations(RegisterPolicy::default(), clock.clone());
        for _ in 0..10 {
            assert_eq!(limiter.admit(ip(1)), Ok(()));
            clock.advance(2);
        }
        // The oldest attempt was 20 s ago: it leaves the window in 40 s.
        assert_eq!(limiter.admit(ip(1)), Err(Duration::from_secs(40)));
        assert_eq!(limiter.admit(ip(2)), Ok(()), "other clients");
        clock.advance(40);
        assert_eq!(limiter.admit(ip(1)), Ok(()));
    }

    #[test]
    fn prune_forgets_clients_whose_registrations_left_the_window() {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let policy = RegisterPolicy {
            attempts: 1,
            window: 60,
        };
        let limiter = registrations(policy, clock.clone());
        let _ = limiter.admit(ip(1));
        clock.advance(30);
        let _ = limiter.admit(ip(2));
        clock.advance(30);
        limiter.prune();
        assert_eq!(limiter.tracked(), 1);
    }
}
