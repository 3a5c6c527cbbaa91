//! Revoked tokens: the blacklist a logout writes to, and its periodic pruning.
//!
//! A JWT is valid until its `exp` by construction, so logging out cannot
//! "delete" it; instead its `jti` is stored until that `exp`, and every
//! verification asks whether the `jti` is listed. After `exp` the token fails
//! as expired anyway, so the row is useless and a periodic task deletes it:
//! the table holds at most the tokens revoked within one refresh lifetime.
//!
//! Refresh tokens rotate (OWASP, RFC 6819 §5.2.2.3): using one lists it, so
//! it works once; the pair issued keeps the *family* id (`fam` claim) of the
//! sign-in it descends from. A refresh token presented a second time means
//! two parties hold it (one of them stole it): the whole family is revoked,
//! the thief's and the owner's tokens alike, and the owner signs in again.
//! A family is listed as one row, `fam:<id>`, until the longest-lived token
//! it could still hold expires. Logout revokes the caller's family too, so
//! a logout that names only the access token also ends its refresh token.
//!
//! Bound on the table: one row per refresh (the used token) and at most
//! three per logout (access, refresh, family); a refresh token whose family
//! is revoked can mint nothing, so a refresh + logout loop from one refresh
//! token stops after one round (3 rows), where without rotation it grew
//! without bound.

use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::store::StoreError;
use crate::services::token_auth::tokens::{Claims, REFRESH_TTL};
use crate::types::BoxFuture;
use std::sync::Arc;

/// The blacklist, backed by a `token_blacklist` table (SQLite or PostgreSQL).
#[derive(Clone)]
pub struct Blacklist {
    store: Arc<dyn Revocations>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Blacklist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Blacklist")
    }
}

impl Blacklist {
    /// A blacklist in `store`, pruned by `clock`.
    pub fn new(store: Arc<dyn Revocations>, clock: Arc<dyn Clock>) -> Blacklist {
        Blacklist { store, clock }
    }

    /// Revoke the token with `claims` until it would have expired.
    pub async fn revoke(&self, claims: &Claims) -> Result<(), StoreError> {
        self.store.revoke(&claims.jti, claims.exp).await.map(|_| ())
    }

    /// Revoke every token of the family of `claims`: any token of it is at
    /// most [`REFRESH_TTL`] younger than now, so that is how long it is kept.
    pub async fn revoke_family(&self, claims: &Claims) -> Result<(), StoreError> {
        let until = self.clock.now().saturating_add(REFRESH_TTL);
        self.store
            .revoke(&family_key(&claims.fam), until)
            .await
            .map(|_| ())
    }

    /// Use the refresh token with `claims`: `true` the first time (it is
    /// listed now, so it is refused afterwards), `false` when it was listed
    /// already: a second use, answered by revoking its family.
    pub async fn use_refresh_token(&self, claims: &Claims) -> Result<bool, StoreError> {
        self.store.revoke(&claims.jti, claims.exp).await
    }

    /// Whether the token with `claims` was revoked, itself or its family.
    pub async fn is_revoked(&self, claims: &Claims) -> Result<bool, StoreError> {
        let family = family_key(&claims.fam);
        self.store.any_revoked(&[&claims.jti, &family]).await
    }

    /// Whether the family of `claims` was revoked.
    pub async fn family_revoked(&self, claims: &Claims) -> Result<bool, StoreError> {
        self.store.is_revoked(&family_key(&claims.fam)).await
    }

    /// Delete rows of tokens that have expired by now; returns how many.
    pub async fn prune(&self) -> Result<usize, StoreError> {
        self.store.prune(self.clock.now()).await
    }
}

/// The blacklist entry of a whole family (`fam:` + 32 hex digits fits the
/// 100-character `token_jti` column; a `jti` never contains a colon).
fn family_key(fam: &str) -> String {
    format!("fam:{fam}")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::token_auth::clock::ManualClock;
    use crate::services::token_auth::store::tests::TempDb;
    use crate::services::token_auth::store::Store;
    use crate::services::token_auth::tokens::TokenKind;

    fn claims(jti: &str, exp: u64) -> Claims {
        Claims {
            user_id: 1,
            role: None,
            kind: TokenKind::Refresh,
            iat: 0,
            exp,
            jti: jti.into(),
            ukey: "k".into(),
            fam: "f".into(),
        }
    }

    #[tokio::test]
    async fn revoked_until_exp_then_pruned() {
        let db = TempDb::new("blacklist");
        let clock = Arc::new(ManualClock::new(1_000));
        let blacklist = Blacklist::new(Arc::new(Store::open(&db.path).unwrap()), clock.clone());
        blacklist.revoke(&claims("a", 1_060)).await.unwrap();
        blacklist.revoke(&claims("b", 5_000)).await.unwrap();
        assert_eq!(blacklist.prune().await.unwrap(), 0);
        assert!(blacklist.is_revoked(&claims("a", 1_060)).await.unwrap());
        clock.advance(60);
        assert_eq!(blacklist.prune().await.unwrap(), 1);
        assert!(!blacklist.is_revoked(&claims("a", 1_060)).await.unwrap());
        assert!(blacklist.is_revoked(&claims("b", 5_000)).await.unwrap());
    }
}
