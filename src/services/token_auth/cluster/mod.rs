//! token-auth's state shared by several instances (feature `cluster`):
//! users, provider bindings and the blacklist in PostgreSQL ([`postgres`]),
//! login limits and pending OAuth sign-ins in Redis ([`redis`]).
//!
//! Either may be used without the other; what is not shared stays local
//! (the SQLite file, process memory): see
//! [`crate::services::token_auth::service::Backends::connect`]. The
//! registration limit is always per instance.

pub(crate) mod postgres;
pub(crate) mod redis;

/// The Redis scripts, named for the tests that load them twice.
pub use redis::{ADMIT, FAIL, PUT_STATE, TAKE_STATE};

use crate::cluster::{self as shared, StartError};
use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::limiter::LimitPolicy;
use std::sync::Arc;
use std::time::Duration;

/// Connections per instance: requests are single statements, so a few
/// connections serve many concurrent requests.
const POOL_SIZE: usize = 16;

/// Users, bindings and the blacklist in the PostgreSQL database at `url`
/// (flag `--db`), its schema migrated.
pub async fn postgres_store(url: &str, timeout: Duration) -> Result<postgres::PgStore, StartError> {
    let pool = shared::postgres(
        "--db",
        url,
        postgres::SCHEMA,
        postgres::MIGRATIONS,
        POOL_SIZE,
        timeout,
    )
    .await?;
    Ok(postgres::PgStore::new(pool, timeout))
}

/// Login limits with `policy` and pending sign-ins in the Redis at `url`
/// (flag `--redis`), over one connection.
pub async fn redis_state(
    url: &str,
    policy: LimitPolicy,
    clock: Arc<dyn Clock>,
    timeout: Duration,
) -> Result<(redis::RedisLimits, redis::RedisSignIns), StartError> {
    let conn = shared::redis("--redis", url, timeout, timeout).await?;
    Ok((
        redis::RedisLimits::new(conn.clone(), policy, Arc::clone(&clock), timeout),
        redis::RedisSignIns::new(conn, clock, timeout),
    ))
}
