//! Pending sign-ins: the `state` parameter of the authorization-code flow.
//!
//! `state` names a sign-in this server started and keeps, server-side, what
//! its callback needs: the provider it was issued for and the PKCE verifier.
//! Each state is random (256 bits), lives 10 minutes and is removed on first
//! use whatever the outcome — a replayed callback finds nothing.
//!
//! On its own the state does *not* stop login CSRF (an attacker feeding a
//! victim's browser a callback for the attacker's own account): anyone can
//! start a sign-in, and the state in that callback URL is found in this
//! table whichever browser opens it. What ties a callback to the browser
//! that began the sign-in is the binding cookie ([`super::binding`]), which
//! the callback must present with the state (RFC 9700 §4.7.1).
//!
//! The table is capped twice, so unauthenticated callers cannot grow it
//! without bound nor fill it for everyone: [`STATE_CAPACITY`] in all and
//! [`STATE_PER_CLIENT`] for one client address (IPv6 by /64), checked first.
//!
//! [`STATE_CAPACITY`]: crate::services::token_auth::pending::STATE_CAPACITY
//! [`STATE_PER_CLIENT`]: crate::services::token_auth::pending::STATE_PER_CLIENT

use crate::ops::ratelimit::client_key;
use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::config::Provider;
use crate::services::token_auth::oauth::pkce::Pkce;
use crate::services::token_auth::pending::{Pending, StateError, STATE_TTL};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// A new sign-in with `provider` begun at `now`: the random `state` (256
/// bits), what to remember under it, and what goes into the authorization
/// request.
pub fn begin(provider: Provider, now: u64) -> Result<(Pending, Started), StateError> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| StateError::Random(e.to_string()))?;
    let state = URL_SAFE_NO_PAD.encode(raw);
    let pkce = Pkce::generate().map_err(|e| StateError::Random(e.to_string()))?;
    let pending = Pending::new(provider, pkce.verifier, now);
    Ok((
        pending,
        Started {
            state,
            code_challenge: pkce.challenge,
        },
    ))
}

/// A freshly started sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The `state` value for the authorization request.
    pub state: String,
    /// The PKCE challenge for the authorization request.
    pub code_challenge: String,
}

/// The pending sign-ins of one server process.
pub struct StateStore {
    clock: Arc<dyn Clock>,
    table: Mutex<Table>,
    capacity: usize,
    per_client: usize,
}

/// The pending sign-ins, and when each client's began (for its cap).
#[derive(Default)]
struct Table {
    pending: HashMap<String, (Pending, IpAddr)>,
    /// Per client key, the start times of its sign-ins, oldest first. A
    /// time that has expired stands for nothing and is dropped on sight.
    by_client: HashMap<IpAddr, Vec<u64>>,
}

impl Table {
    fn drop_expired(&mut self, now: u64) {
        self.pending.retain(|_, (p, _)| fresh(p.issued_at(), now));
        self.by_client.retain(|_, times| {
            times.retain(|t| fresh(*t, now));
            !times.is_empty()
        });
    }
}

fn fresh(issued_at: u64, now: u64) -> bool {
    issued_at + STATE_TTL > now
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStore")
            .field("pending", &self.len())
            .finish()
    }
}

impl StateStore {
    /// An empty store holding at most `capacity` pending sign-ins, and at
    /// most `per_client` for one client address.
    pub fn new(clock: Arc<dyn Clock>, capacity: usize, per_client: usize) -> StateStore {
        StateStore {
            clock,
            table: Mutex::new(Table::default()),
            capacity,
            per_client,
        }
    }

    /// Remember `pending` under `state`, begun by `client`: `ClientFull`
    /// when that client (IPv6 by /64) has `per_client` fresh sign-ins
    /// pending, `Full` when `capacity` fresh sign-ins are pending in all.
    pub fn insert(
        &self,
        state: String,
        pending: Pending,
        client: IpAddr,
    ) -> Result<(), StateError> {
        let now = self.clock.now();
        let client = client_key(client);
        let mut table = self.lock();
        let times = table.by_client.entry(client).or_default();
        times.retain(|t| fresh(*t, now));
        if times.len() >= self.per_client {
            let oldest = times.first().copied().unwrap_or(now);
            let retry_after = (oldest + STATE_TTL).saturating_sub(now).max(1);
            return Err(StateError::ClientFull { retry_after });
        }
        if table.pending.len() >= self.capacity {
            table.drop_expired(now);
            if table.pending.len() >= self.capacity {
                return Err(StateError::Full);
            }
        }
        let issued_at = pending.issued_at();
        let times = table.by_client.entry(client).or_default();
        times.insert(times.partition_point(|t| *t <= issued_at), issued_at);
        table.pending.insert(state, (pending, client));
        Ok(())
    }

    /// Remove `state`; what it named if that is still fresh. The state is
    /// gone afterwards in every case, and no longer counts for its client.
    pub fn take(&self, state: &str) -> Option<Pending> {
        let now = self.clock.now();
        let mut table = self.lock();
        let (pending, client) = table.pending.remove(state)?;
        if !fresh(pending.issued_at(), now) {
            return None;
        }
        if let Some(times) = table.by_client.get_mut(&client) {
            if let Some(i) = times.iter().position(|t| *t == pending.issued_at()) {
                times.remove(i);
            }
            if times.is_empty() {
                table.by_client.remove(&client);
            }
        }
        Some(pending)
    }

    /// Drop expired sign-ins.
    pub fn prune(&self) {
        let now = self.clock.now();
        self.lock().drop_expired(now);
    }

    /// How many sign-ins are pending.
    pub fn len(&self) -> usize {
        self.lock().pending.len()
    }

    /// Whether no sign-in is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::token_auth::clock::ManualClock;
    use crate::services::token_auth::oauth::pkce::challenge_s256;

    const HOME: &str = "192.0.2.1";

    fn store(capacity: usize, per_client: usize) -> (Arc<ManualClock>, StateStore) {
        let clock = Arc::new(ManualClock::new(5_000));
        (clock.clone(), StateStore::new(clock, capacity, per_client))
    }

    fn start_from(states: &StateStore, client: &str) -> Result<Started, StateError> {
        let (pending, started) = begin(Provider::Github, states.clock.now())?;
        let client = client.parse().expect("test address");
        states.insert(started.state.clone(), pending, client)?;
        Ok(started)
    }

    fn start(states: &StateStore, provider: Provider) -> Result<Started, StateError> {
        let (pending, started) = begin(provider, states.clock.now())?;
        let client = HOME.parse().expect("test address");
        states.insert(started.state.clone(), pending, client)?;
        Ok(started)
    }

    #[test]
    fn state_is_single_use_and_carries_the_matching_verifier() {
        let (_clock, states) = store(10, 10);
        let started = start(&states, Provider::Github).unwrap();
        let pending = states.take(&started.state).unwrap();
        assert_eq!(pending.provider, Provider::Github);
        assert_eq!(
            challenge_s256(&pending.code_verifier),
            started.code_challenge
        );
        assert_eq!(states.take(&started.state), None);
        assert_eq!(states.take("made-up"), None);
    }

    #[test]
    fn state_expires_after_10_minutes() {
        let (clock, states) = store(10, 10);
        let a = start(&states, Provider::Github).unwrap();
        let b = start(&states, Provider::Github).unwrap();
        clock.advance(STATE_TTL - 1);
        assert!(states.take(&a.state).is_some());
        clock.advance(1);
        assert_eq!(states.take(&b.state), None);
    }

    #[test]
    fn store_is_capped_but_expired_entries_make_room() {
        let (clock, states) = store(2, 10);
        start(&states, Provider::Wechat).unwrap();
        start(&states, Provider::Wechat).unwrap();
        assert_eq!(start(&states, Provider::Wechat), Err(StateError::Full));
        clock.advance(STATE_TTL);
        assert!(start(&states, Provider::Wechat).is_ok());
        assert_eq!(states.len(), 1);
        clock.advance(STATE_TTL);
        states.prune();
        assert!(states.is_empty());
        assert!(states.lock().by_client.is_empty(), "no client left behind");
    }

    #[test]
    fn one_client_is_capped_below_the_store_and_other_clients_still_start() {
        let (clock, states) = store(10, 3);
        for _ in 0..3 {
            start_from(&states, "198.51.100.7").unwrap();
        }
        clock.advance(60);
        assert_eq!(
            start_from(&states, "198.51.100.7"),
            Err(StateError::ClientFull {
                retry_after: STATE_TTL - 60
            }),
            "the retry time is when the client's oldest sign-in expires"
        );
        for client in ["198.51.100.8", "::ffff:198.51.100.9", "2001:db8::1"] {
            assert!(start_from(&states, client).is_ok(), "{client}");
        }
        assert_eq!(states.len(), 6, "a refused sign-in is not stored");
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_and_an_ipv4_mapped_one_as_ipv4() {
        let (_clock, states) = store(100, 2);
        start_from(&states, "2001:db8:1:2::1").unwrap();
        start_from(&states, "2001:db8:1:2:ffff::9").unwrap();
        assert!(matches!(
            start_from(&states, "2001:db8:1:2::abcd"),
            Err(StateError::ClientFull { .. })
        ));
        assert!(
            start_from(&states, "2001:db8:1:3::1").is_ok(),
            "another /64"
        );
        start_from(&states, "203.0.113.5").unwrap();
        start_from(&states, "::ffff:203.0.113.5").unwrap();
        assert!(matches!(
            start_from(&states, "203.0.113.5"),
            Err(StateError::ClientFull { .. })
        ));
    }

    #[test]
    fn a_finished_or_expired_sign_in_frees_its_clients_slot() {
        let (clock, states) = store(100, 2);
        let a = start_from(&states, HOME).unwrap();
        start_from(&states, HOME).unwrap();
        assert!(start_from(&states, HOME).is_err());
        assert!(states.take(&a.state).is_some());
        let c = start_from(&states, HOME).unwrap();
        assert!(start_from(&states, HOME).is_err());
        // A replayed state frees nothing a second time.
        assert!(states.take(&a.state).is_none());
        assert!(start_from(&states, HOME).is_err());
        clock.advance(STATE_TTL);
        assert!(
            start_from(&states, HOME).is_ok(),
            "expired ones free theirs"
        );
        // Taking an expired state does not free a fresh one's slot.
        assert!(states.take(&c.state).is_none());
        assert!(start_from(&states, HOME).is_ok());
        assert!(start_from(&states, HOME).is_err());
    }
}
