//! Revoked tokens: the blacklist a logout writes to, and its periodic pruning.
//!
//! A JWT is valid until its `exp` by construction, so logging out cannot
//! "delete" it; instead its `jti` is stored until that `exp`, and every
//! verification asks whether the `jti` is listed. After `exp` the token fails
//! as expired anyway, so the row is useless and a periodic task deletes it:
//! the table holds at most the tokens revoked within one refresh lifetime.

use crate::services::token_auth::backend::Revocations;
use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::store::StoreError;
use crate::services::token_auth::tokens::Claims;
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
        self.store.revoke(&claims.jti, claims.exp).await
    }

    /// Whether the token with `jti` was revoked.
    pub async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError> {
        self.store.is_revoked(jti).await
    }

    /// Delete rows of tokens that have expired by now; returns how many.
    pub async fn prune(&self) -> Result<usize, StoreError> {
        self.store.prune(self.clock.now()).await
    }
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
        assert!(blacklist.is_revoked("a").await.unwrap());
        clock.advance(60);
        assert_eq!(blacklist.prune().await.unwrap(), 1);
        assert!(!blacklist.is_revoked("a").await.unwrap());
        assert!(blacklist.is_revoked("b").await.unwrap());
    }
}
