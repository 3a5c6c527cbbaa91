//! Pending sign-ins: the `state` parameter of the authorization-code flow.
//!
//! `state` ties a callback to a sign-in this server started, which stops an
//! attacker from feeding a victim's browser a code for the attacker's own
//! account (login CSRF). Each state is random (256 bits), kept server-side
//! with the provider it was issued for and the PKCE verifier, lives 10 minutes
//! and is removed on first use whatever the outcome — a replayed callback
//! finds nothing. The map is capped, so unauthenticated callers cannot grow it
//! without bound.

use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::config::Provider;
use crate::services::token_auth::oauth::pkce::Pkce;
use crate::services::token_auth::pending::{Pending, StateError, STATE_TTL};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use std::collections::HashMap;
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
    pending: Mutex<HashMap<String, Pending>>,
    capacity: usize,
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStore")
            .field("pending", &self.len())
            .finish()
    }
}

impl StateStore {
    /// An empty store holding at most `capacity` pending sign-ins.
    pub fn new(clock: Arc<dyn Clock>, capacity: usize) -> StateStore {
        StateStore {
            clock,
            pending: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Remember `pending` under `state`; `Full` when `capacity` fresh
    /// sign-ins are already pending.
    pub fn insert(&self, state: String, pending: Pending) -> Result<(), StateError> {
        let now = self.clock.now();
        let mut map = self.lock();
        if map.len() >= self.capacity {
            map.retain(|_, p| p.issued_at() + STATE_TTL > now);
            if map.len() >= self.capacity {
                return Err(StateError::Full);
            }
        }
        map.insert(state, pending);
        Ok(())
    }

    /// Remove `state`; what it named if that is still fresh. The state is
    /// gone afterwards in every case.
    pub fn take(&self, state: &str) -> Option<Pending> {
        let pending = self.lock().remove(state)?;
        (pending.issued_at() + STATE_TTL > self.clock.now()).then_some(pending)
    }

    /// Drop expired sign-ins.
    pub fn prune(&self) {
        let now = self.clock.now();
        self.lock().retain(|_, p| p.issued_at() + STATE_TTL > now);
    }

    /// How many sign-ins are pending.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no sign-in is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::token_auth::clock::ManualClock;
    use crate::services::token_auth::oauth::pkce::challenge_s256;

    fn store(capacity: usize) -> (Arc<ManualClock>, StateStore) {
        let clock = Arc::new(ManualClock::new(5_000));
        (clock.clone(), StateStore::new(clock, capacity))
    }

    fn start(states: &StateStore, provider: Provider) -> Result<Started, StateError> {
        let (pending, started) = begin(provider, states.clock.now())?;
        states.insert(started.state.clone(), pending)?;
        Ok(started)
    }

    #[test]
    fn state_is_single_use_and_carries_the_matching_verifier() {
        let (_clock, states) = store(10);
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
        let (clock, states) = store(10);
        let a = start(&states, Provider::Github).unwrap();
        let b = start(&states, Provider::Github).unwrap();
        clock.advance(STATE_TTL - 1);
        assert!(states.take(&a.state).is_some());
        clock.advance(1);
        assert_eq!(states.take(&b.state), None);
    }

    #[test]
    fn store_is_capped_but_expired_entries_make_room() {
        let (clock, states) = store(2);
        start(&states, Provider::Wechat).unwrap();
        start(&states, Provider::Wechat).unwrap();
        assert_eq!(start(&states, Provider::Wechat), Err(StateError::Full));
        clock.advance(STATE_TTL);
        assert!(start(&states, Provider::Wechat).is_ok());
        assert_eq!(states.len(), 1);
        clock.advance(STATE_TTL);
        states.prune();
        assert!(states.is_empty());
    }
}
