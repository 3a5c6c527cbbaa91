//! The storage seam: each kind of state the service keeps is reached through
//! one small trait, so that one process can keep it itself (SQLite file,
//! process memory: the default) or several instances can share it
//! (PostgreSQL, Redis: feature `cluster`, see [`super::cluster`]).
//!
//! | state | trait | one instance | several instances |
//! |---|---|---|---|
//! | users and provider bindings | [`Accounts`] | SQLite ([`super::store::Store`]) | PostgreSQL |
//! | revoked tokens | [`Revocations`] | SQLite | PostgreSQL |
//! | login windows, failure counts, locks | [`LoginLimits`] | memory ([`super::limiter::LoginLimiter`]) | Redis |
//! | pending OAuth sign-ins | [`PendingSignIns`] | memory ([`super::oauth::state::StateStore`]) | Redis |
//!
//! Every method can fail with [`StoreError`]; a server that is down or slow
//! is [`StoreError::Down`], answered 503. A check that cannot be made is
//! never taken as passed: a limiter or a blacklist that cannot be read
//! refuses the request.

use crate::services::token_auth::limiter::{Admission, FailureOutcome};
use crate::services::token_auth::pending::{Pending, StateError};
use crate::services::token_auth::store::{NewUser, ProviderIdentity, StoreError};
use crate::services::token_auth::user::User;
use crate::types::BoxFuture;
use std::net::IpAddr;

/// Users and their identity-provider bindings.
pub trait Accounts: Send + Sync {
    /// Insert a user and return it as stored (`UsernameTaken`/`EmailTaken`
    /// when a unique rule, case-insensitive, is broken).
    fn create_user(&self, new: NewUser) -> BoxFuture<'_, Result<User, StoreError>>;
    /// The user and password hash for `username` in any ASCII case.
    fn credentials<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Option<(User, String)>, StoreError>>;
    /// The user with primary key `id`.
    fn user_by_id(&self, id: i64) -> BoxFuture<'_, Result<Option<User>, StoreError>>;
    /// All users, oldest first.
    fn list_users(&self) -> BoxFuture<'_, Result<Vec<User>, StoreError>>;
    /// Find or create the local user bound to `identity`, refreshing the
    /// binding; user and binding are created together or not at all.
    fn sign_in_with_provider(
        &self,
        identity: ProviderIdentity,
        username_hint: String,
    ) -> BoxFuture<'_, Result<User, StoreError>>;
}

/// Revoked token ids, each kept until its token would have expired.
pub trait Revocations: Send + Sync {
    /// List `jti` until `expired_at`; `true` when this call listed it,
    /// `false` when it was listed already (not an error).
    fn revoke<'a>(
        &'a self,
        jti: &'a str,
        expired_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Whether any of `jtis` is listed, in one look-up (a token and its
    /// family on every authenticated request).
    fn any_revoked<'a>(&'a self, jtis: &'a [&'a str]) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Whether `jti` is listed.
    fn is_revoked<'a>(&'a self, jti: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.any_revoked(&[jti]).await })
    }
    /// Delete entries whose token expired by `now`; how many went.
    fn prune(&self, now: u64) -> BoxFuture<'_, Result<usize, StoreError>>;
}

/// Login throttling: attempt windows, consecutive failures, locks.
pub trait LoginLimits: Send + Sync {
    /// Whether a login for `username` from `ip` may be tried now; counted if so.
    fn admit<'a>(
        &'a self,
        ip: IpAddr,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Admission, StoreError>>;
    /// A password check for `username` failed.
    fn record_failure<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<FailureOutcome, StoreError>>;
    /// Whether a login for `username` must now carry a solved captcha (its
    /// consecutive failures reached the policy's `captcha_after`).
    fn captcha_required<'a>(&'a self, username: &'a str)
        -> BoxFuture<'a, Result<bool, StoreError>>;
    /// A login for `username` succeeded: its failure count starts over.
    fn record_success<'a>(&'a self, username: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Forget what no longer matters (a no-op where the server expires keys).
    fn prune(&self);
}

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
