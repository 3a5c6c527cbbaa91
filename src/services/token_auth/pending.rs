//! A pending OAuth sign-in as the storage seam sees it: what is kept under a
//! `state` between the redirect to the provider and the callback, and why
//! keeping it can fail.
//!
//! These types, and the [`PendingSignIns`] trait over them, sit below both
//! [`super::backend`] (the storage seam, whose memory and Redis sides
//! implement the trait) and [`super::oauth`] (which starts and completes
//! sign-ins), so neither imports the other for them.

use crate::services::token_auth::user::Provider;
use crate::types::BoxFuture;
use std::net::IpAddr;

/// How long a sign-in may take, seconds.
pub const STATE_TTL: u64 = 10 * 60;
/// Most sign-ins pending at once.
pub const STATE_CAPACITY: usize = 10_000;
/// Most sign-ins pending at once for one client address (IPv6 by /64): one
/// address cannot take the whole [`STATE_CAPACITY`] and lock everyone else
/// out, while a NAT with many people behind it still has room.
pub const STATE_PER_CLIENT: usize = 100;

/// What is remembered about a sign-in between redirect and callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The provider the user was sent to.
    pub provider: Provider,
    /// PKCE verifier for the token exchange.
    pub code_verifier: String,
    issued_at: u64,
}

impl Pending {
    /// A sign-in with `provider` and PKCE `code_verifier`, begun at `issued_at`.
    pub fn new(provider: Provider, code_verifier: String, issued_at: u64) -> Pending {
        Pending {
            provider,
            code_verifier,
            issued_at,
        }
    }

    /// When the sign-in began, Unix seconds.
    pub fn issued_at(&self) -> u64 {
        self.issued_at
    }
}

/// Why a sign-in could not be started or looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Too many sign-ins are pending, from all clients together (HTTP 503).
    Full,
    /// This client already has [`STATE_PER_CLIENT`] sign-ins pending (HTTP
    /// 429); the oldest of them expires in `retry_after` seconds.
    ClientFull {
        /// Seconds until one of the client's pending sign-ins expires.
        retry_after: u64,
    },
    /// The OS random source failed.
    Random(String),
    /// The shared store of pending sign-ins did not answer (HTTP 503).
    Unavailable(String),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Full => write!(f, "too many sign-ins in progress, try again later"),
            StateError::ClientFull { .. } => write!(
                f,
                "too many sign-ins in progress from this address, try again later"
            ),
            StateError::Random(e) => write!(f, "cannot read OS randomness: {e}"),
            StateError::Unavailable(e) => write!(f, "pending sign-ins unavailable: {e}"),
        }
    }
}

impl std::error::Error for StateError {}

/// Sign-ins sent to a provider and not yet back: single use, 10 minutes,
/// at most [`STATE_CAPACITY`](crate::services::token_auth::pending::STATE_CAPACITY)
/// in all and [`STATE_PER_CLIENT`](crate::services::token_auth::pending::STATE_PER_CLIENT)
/// for one client address (IPv6 by /64).
pub trait PendingSignIns: Send + Sync {
    /// Remember `pending` under `state`, begun by `client`: `ClientFull`
    /// past the per-client cap (checked first), `Full` past the capacity.
    fn insert(
        &self,
        state: String,
        pending: Pending,
        client: IpAddr,
    ) -> BoxFuture<'_, Result<(), StateError>>;
    /// Remove and return what `state` names, if it exists and is fresh:
    /// whatever the caller does next, no second call finds it.
    fn take<'a>(&'a self, state: &'a str) -> BoxFuture<'a, Result<Option<Pending>, StateError>>;
    /// Drop expired entries (a no-op where the server expires keys).
    fn prune(&self);
}
