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
//!
//! [`Revocations`] and [`PendingSignIns`] are declared beside the code that
//! uses them ([`super::blacklist`], [`super::pending`]): the blacklist and
//! the OAuth flow then sit on the seam's level, not above it.
//!
//! [`Revocations`]: super::blacklist::Revocations
//! [`PendingSignIns`]: super::pending::PendingSignIns

use crate::services::token_auth::limiter::{Admission, FailureOutcome};
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
