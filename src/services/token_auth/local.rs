//! The local implementations of the storage seam ([`super::backend`]):
//! one process keeps its own state — users, bindings and the blacklist in
//! the SQLite file ([`Store`]), login limits ([`LoginLimiter`]) and pending
//! OAuth sign-ins ([`StateStore`]) in memory. The default, and what every
//! instance falls back to for what is not shared.

use crate::services::token_auth::backend::{Accounts, LoginLimits};
use crate::services::token_auth::blacklist::Revocations;
use crate::services::token_auth::limiter::{Admission, FailureOutcome, LoginLimiter};
use crate::services::token_auth::oauth::state::StateStore;
use crate::services::token_auth::pending::{Pending, PendingSignIns, StateError};
use crate::services::token_auth::store::{NewUser, ProviderIdentity, Store, StoreError};
use crate::services::token_auth::user::User;
use crate::types::BoxFuture;
use std::net::IpAddr;

impl Accounts for Store {
    fn create_user(&self, new: NewUser) -> BoxFuture<'_, Result<User, StoreError>> {
        Box::pin(Store::create_user(self, new))
    }

    fn credentials<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Option<(User, String)>, StoreError>> {
        Box::pin(Store::credentials(self, username))
    }

    fn user_by_id(&self, id: i64) -> BoxFuture<'_, Result<Option<User>, StoreError>> {
        Box::pin(Store::user_by_id(self, id))
    }

    fn list_users(&self) -> BoxFuture<'_, Result<Vec<User>, StoreError>> {
        Box::pin(Store::list_users(self))
    }

    fn sign_in_with_provider(
        &self,
        identity: ProviderIdentity,
        username_hint: String,
    ) -> BoxFuture<'_, Result<User, StoreError>> {
        Box::pin(Store::sign_in_with_provider(self, identity, username_hint))
    }
}

impl Revocations for Store {
    fn revoke<'a>(
        &'a self,
        jti: &'a str,
        expired_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(Store::revoke(self, jti, expired_at))
    }

    fn any_revoked<'a>(&'a self, jtis: &'a [&'a str]) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(Store::any_revoked(self, jtis))
    }

    fn prune(&self, now: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(Store::prune_blacklist(self, now))
    }
}

impl LoginLimits for LoginLimiter {
    fn admit<'a>(
        &'a self,
        ip: IpAddr,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        Box::pin(std::future::ready(Ok(LoginLimiter::admit(
            self, ip, username,
        ))))
    }

    fn record_failure<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<FailureOutcome, StoreError>> {
        Box::pin(std::future::ready(Ok(LoginLimiter::record_failure(
            self, username,
        ))))
    }

    fn captcha_required<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(LoginLimiter::captcha_required(
            self, username,
        ))))
    }

    fn record_success<'a>(&'a self, username: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        LoginLimiter::record_success(self, username);
        Box::pin(std::future::ready(Ok(())))
    }

    fn prune(&self) {
        LoginLimiter::prune(self);
    }
}

impl PendingSignIns for StateStore {
    fn insert(
        &self,
        state: String,
        pending: Pending,
        client: IpAddr,
    ) -> BoxFuture<'_, Result<(), StateError>> {
        Box::pin(std::future::ready(StateStore::insert(
            self, state, pending, client,
        )))
    }

    fn take<'a>(&'a self, state: &'a str) -> BoxFuture<'a, Result<Option<Pending>, StateError>> {
        Box::pin(std::future::ready(Ok(StateStore::take(self, state))))
    }

    fn prune(&self) {
        StateStore::prune(self);
    }
}
