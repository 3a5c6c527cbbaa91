//! Users, provider bindings and the blacklist in PostgreSQL, shared by every
//! instance: the same rules as the SQLite schema (`store/schema.sql`) as
//! constraints, in the schema `token_auth`, created by versioned migrations.
//!
//! Every statement is parameterized and prepared once per connection
//! (`prepare_cached`); every call is bounded by the configured time-out.
//!
//! A call that fails on its connection (PostgreSQL restarted under it) is
//! made once more on another connection within the same time-out when it is
//! safe to run twice ([`PgStore::run_repeatable`]; each use says why):
//! reads, the blacklist's insert-if-absent and prune, and the provider
//! sign-in's find-or-create. Creating a user is not: an `INSERT` whose
//! answer was lost may have committed, and a second one would then report
//! the caller's own new name as taken. It is repeated only when no
//! connection could be had at all ([`PgStore::run`]).

use crate::cluster::{self as shared, Migration, PgPool};
use crate::services::token_auth::backend::Accounts;
use crate::services::token_auth::blacklist::Revocations;
use crate::services::token_auth::store::{
    username_candidates, NewUser, ProviderIdentity, StoreError, NO_PASSWORD,
};
use crate::services::token_auth::user::{Role, User};
use crate::types::BoxFuture;
use std::future::Future;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;

/// The PostgreSQL schema (namespace) of the service's tables.
pub const SCHEMA: &str = "token_auth";

/// The schema's history; append, never edit.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "users, provider bindings, blacklist",
        sql: include_str!("schema_v1.sql"),
    },
    Migration {
        version: 2,
        name: "users.token_key, the key every token of the account carries",
        sql: include_str!("schema_v2.sql"),
    },
];

const USER_COLUMNS: &str = "id, username, email, role, created_at, updated_at, token_key";

/// [`Accounts`] and [`Revocations`] over a connection pool.
pub struct PgStore {
    pool: PgPool,
    timeout: Duration,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

fn user_from_row(row: &Row) -> Result<User, StoreError> {
    let role: String = row.get(3);
    let role = role
        .parse::<Role>()
        .map_err(|e| StoreError::Backend(format!("users.role: {e}")))?;
    Ok(User {
        id: row.get(0),
        username: row.get(1),
        email: row.get(2),
        role,
        created_at: row.get(4),
        updated_at: row.get(5),
        token_key: row.get(6),
    })
}

/// A driver error as the store's: unique violations named, the server's
/// absence as [`StoreError::Down`], the rest as [`StoreError::Backend`].
fn store_error(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        let constraint = e
            .as_db_error()
            .and_then(|d| d.constraint())
            .unwrap_or_default();
        if constraint.starts_with("users_username") {
            return StoreError::UsernameTaken;
        }
        if constraint.starts_with("users_email") {
            return StoreError::EmailTaken;
        }
    }
    if shared::pg_is_unavailable(&e) {
        return StoreError::Down(shared::pg_unavailable(&e).to_string());
    }
    StoreError::Backend(shared::pg_detail(&e))
}

impl PgStore {
    /// The store over `pool`; no call waits longer than `timeout`.
    pub fn new(pool: PgPool, timeout: Duration) -> PgStore {
        PgStore { pool, timeout }
    }

    /// Run `f` with a pooled connection, the whole of it within the time-out.
    async fn run<'a, T, F, Fut>(&'a self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(shared::PgClient) -> Fut + 'a,
        Fut: Future<Output = Result<T, StoreError>> + 'a,
    {
        shared::pg_call(&self.pool, self.timeout, f)
            .await
            .map_err(|e| StoreError::Down(e.to_string()))?
    }

    /// [`run`](Self::run) for a call that is safe to run twice: one that
    /// failed on its connection ([`StoreError::Down`]) is made once more on
    /// another connection, within the same time-out.
    async fn run_repeatable<'a, T, F, Fut>(&'a self, f: F) -> Result<T, StoreError>
    where
        F: Fn(shared::PgClient) -> Fut + 'a,
        Fut: Future<Output = Result<T, StoreError>> + 'a,
    {
        let lost_connection = |e: &StoreError| matches!(e, StoreError::Down(_));
        shared::pg_call_repeatable(&self.pool, self.timeout, f, lost_connection)
            .await
            .map_err(|e| StoreError::Down(e.to_string()))?
    }

    async fn query_opt(
        client: &shared::PgClient,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Row>, StoreError> {
        let stmt = client.prepare_cached(sql).await.map_err(store_error)?;
        client.query_opt(&stmt, params).await.map_err(store_error)
    }
}

impl Accounts for PgStore {
    fn create_user(&self, new: NewUser) -> BoxFuture<'_, Result<User, StoreError>> {
        Box::pin(self.run(move |client| async move {
            let sql = format!(
                "INSERT INTO users (username, password_hash, email, role) \
                 VALUES ($1, $2, $3, $4) RETURNING {USER_COLUMNS}"
            );
            let stmt = client.prepare_cached(&sql).await.map_err(store_error)?;
            let row = client
                .query_one(
                    &stmt,
                    &[
                        &new.username,
                        &new.password_hash,
                        &new.email,
                        &new.role.as_str(),
                    ],
                )
                .await
                .map_err(store_error)?;
            user_from_row(&row)
        }))
    }

    fn credentials<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Option<(User, String)>, StoreError>> {
        // A read: safe to repeat.
        Box::pin(self.run_repeatable(move |client| async move {
            let sql = format!(
                "SELECT {USER_COLUMNS}, password_hash FROM users WHERE lower(username) = lower($1)"
            );
            match Self::query_opt(&client, &sql, &[&username]).await? {
                Some(row) => Ok(Some((user_from_row(&row)?, row.get(7)))),
                None => Ok(None),
            }
        }))
    }

    fn user_by_id(&self, id: i64) -> BoxFuture<'_, Result<Option<User>, StoreError>> {
        // A read: safe to repeat.
        Box::pin(self.run_repeatable(move |client| async move {
            let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
            Self::query_opt(&client, &sql, &[&id])
                .await?
                .map(|row| user_from_row(&row))
                .transpose()
        }))
    }

    fn list_users(&self) -> BoxFuture<'_, Result<Vec<User>, StoreError>> {
        // A read: safe to repeat.
        Box::pin(self.run_repeatable(|client| async move {
            let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY id");
            let stmt = client.prepare_cached(&sql).await.map_err(store_error)?;
            let rows = client.query(&stmt, &[]).await.map_err(store_error)?;
            rows.iter().map(user_from_row).collect()
        }))
    }

    fn sign_in_with_provider(
        &self,
        identity: ProviderIdentity,
        username_hint: String,
    ) -> BoxFuture<'_, Result<User, StoreError>> {
        // Safe to repeat: one transaction that finds the user bound to the
        // identity or creates it, then stores the binding's latest values.
        // A first attempt that did not commit left nothing; one that
        // committed but lost its answer made the binding the second attempt
        // then finds, so both end with the same user and binding.
        Box::pin(async move {
            let (identity, username_hint) = (&identity, username_hint.as_str());
            self.run_repeatable(move |mut client| async move {
                let tx = client.transaction().await.map_err(store_error)?;
                // Two instances signing in the same new identity at once would
                // both create a user; the lock (per identity, released with the
                // transaction) makes the second find the first one's binding.
                let lock_key = format!("{}/{}", identity.provider, identity.provider_user_id);
                tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock_key])
                    .await
                    .map_err(store_error)?;
                let bound = tx
                    .query_opt(
                        "SELECT user_id FROM user_auth_providers \
                     WHERE provider = $1 AND provider_user_id = $2",
                        &[&identity.provider, &identity.provider_user_id],
                    )
                    .await
                    .map_err(store_error)?;
                let user_id: i64 = match bound {
                    Some(row) => row.get(0),
                    None => insert_with_free_username(&tx, username_hint).await?,
                };
                tx.execute(
                    "INSERT INTO user_auth_providers (user_id, provider, provider_user_id, \
                 nickname, avatar_url, access_token, refresh_token, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (provider, provider_user_id) DO UPDATE SET \
                 nickname = excluded.nickname, avatar_url = excluded.avatar_url, \
                 access_token = excluded.access_token, refresh_token = excluded.refresh_token, \
                 expires_at = excluded.expires_at, \
                 updated_at = extract(epoch from now())::bigint",
                    &[
                        &user_id,
                        &identity.provider,
                        &identity.provider_user_id,
                        &identity.nickname,
                        &identity.avatar_url,
                        &identity.access_token,
                        &identity.refresh_token,
                        &identity.expires_at,
                    ],
                )
                .await
                .map_err(store_error)?;
                let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
                let row = tx.query_one(&sql, &[&user_id]).await.map_err(store_error)?;
                let user = user_from_row(&row)?;
                tx.commit().await.map_err(store_error)?;
                Ok(user)
            })
            .await
        })
    }
}

/// Insert a password-less user named `hint`, or `hint_2`, `hint_3`, … when
/// taken in any case (cut so the suffix still fits in 50 characters).
async fn insert_with_free_username(
    tx: &deadpool_postgres::Transaction<'_>,
    hint: &str,
) -> Result<i64, StoreError> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO users (username, password_hash) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING RETURNING id",
        )
        .await
        .map_err(store_error)?;
    for candidate in username_candidates(hint) {
        if let Some(row) = tx
            .query_opt(&stmt, &[&candidate, &NO_PASSWORD])
            .await
            .map_err(store_error)?
        {
            return Ok(row.get(0));
        }
    }
    Err(StoreError::UsernameTaken)
}

impl Revocations for PgStore {
    fn revoke<'a>(
        &'a self,
        jti: &'a str,
        expired_at: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let expired_at = i64::try_from(expired_at).unwrap_or(i64::MAX);
        // Safe to repeat: listing a jti that is listed changes nothing.
        Box::pin(self.run_repeatable(move |client| async move {
            let stmt = client
                .prepare_cached(
                    "INSERT INTO token_blacklist (token_jti, expired_at) VALUES ($1, $2) \
                     ON CONFLICT (token_jti) DO NOTHING",
                )
                .await
                .map_err(store_error)?;
            let listed = client
                .execute(&stmt, &[&jti, &expired_at])
                .await
                .map_err(store_error)?;
            Ok(listed == 1)
        }))
    }

    fn any_revoked<'a>(&'a self, jtis: &'a [&'a str]) -> BoxFuture<'a, Result<bool, StoreError>> {
        // A read: safe to repeat.
        Box::pin(self.run_repeatable(move |client| async move {
            let found = Self::query_opt(
                &client,
                "SELECT 1 FROM token_blacklist WHERE token_jti = ANY($1) LIMIT 1",
                &[&jtis],
            )
            .await?;
            Ok(found.is_some())
        }))
    }

    fn prune(&self, now: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        // Safe to repeat: what expired by `now` is gone after either run.
        Box::pin(self.run_repeatable(move |client| async move {
            let stmt = client
                .prepare_cached("DELETE FROM token_blacklist WHERE expired_at <= $1")
                .await
                .map_err(store_error)?;
            let n = client.execute(&stmt, &[&now]).await.map_err(store_error)?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        }))
    }
}
