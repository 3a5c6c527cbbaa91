//! Login limits and pending OAuth sign-ins in Redis, shared by every
//! instance. Each operation is one Lua script, so it is atomic and one round
//! trip: two instances admitting logins at the same moment cannot both take
//! the fifth slot, and a sign-in state is taken once (`GETDEL`) whichever
//! instance the callback reaches.
//!
//! Keys (all under `token-auth:`), usernames lower-cased as the local
//! limiter does, IPv6 addresses reduced to their /64:
//!
//! | key | type | holds | expires |
//! |---|---|---|---|
//! | `login:ip:{ip}` | sorted set | attempt times in the window | after the window |
//! | `login:user:{name}` | sorted set | attempt times in the window | after the window |
//! | `fails:{name}` | counter | consecutive failures | after the lock time |
//! | `failed:{id}` | string | one failure's answer, for a repeated call | after 60 s |
//! | `lock:{name}` | string | when the lock ends (Unix s) | when the lock ends |
//! | `oauth:{state}` | string | provider, verifier, start time, client | after 10 minutes |
//! | `oauth:pending` | sorted set | states by start time (the cap) | after 10 minutes |
//! | `oauth:client:{ip}` | sorted set | one client's states by start time (its cap) | after 10 minutes |
//!
//! `TAKE_STATE` finds the client's set from the state's value, so it names
//! that key inside the script rather than in `KEYS`: fine on one Redis
//! server (what `--redis` names), not on a Redis Cluster.
//!
//! Times come from the service's clock (passed to the scripts), as in the
//! local limiter. Every call is bounded by the configured time-out; an error
//! or a time-out is [`StoreError::Down`] and the request is refused (503),
//! never let through.
//!
//! # Safe to repeat
//!
//! A call that fails on its connection (Redis restarted under it) is made
//! once more on a fresh connection ([`crate::cluster::redis_call`]). Such a
//! call may have run with its answer lost, so each one is written to give
//! the same answer and leave the same state when run twice with the same
//! arguments (the arguments, random ids included, are fixed once per call):
//!
//! - `ADMIT` carries the attempt's random id; an id already in the window
//!   was admitted by the first run and is answered "allowed" again without
//!   being counted twice.
//! - `FAIL` carries the failure's random id and keeps its answer under
//!   `failed:{id}` for a minute; a second run returns that answer instead
//!   of counting the failure again (which could lock an account early).
//! - `DEL fails:{name}` (a success) is idempotent.
//! - `PUT_STATE`: a state that exists was stored by the first run (states
//!   are 256 random bits) and is answered "stored", not counted against
//!   either cap a second time.
//! - `TAKE_STATE` (`GETDEL`) is single use by design: a second run finds
//!   nothing, so a state is still never taken twice; the worst a lost
//!   answer costs is a refused callback (fail closed), never a double use.

use crate::cluster::{self as shared, Redis};
use crate::ops::ratelimit::client_key;
use crate::services::token_auth::backend::LoginLimits;
use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::config::Provider;
use crate::services::token_auth::limiter::{user_key, Admission, FailureOutcome, LimitPolicy};
use crate::services::token_auth::pending::{
    Pending, PendingSignIns, StateError, STATE_CAPACITY, STATE_PER_CLIENT, STATE_TTL,
};
use crate::services::token_auth::store::StoreError;
use crate::types::BoxFuture;
use redis::Script;
use std::net::IpAddr;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

const PREFIX: &str = "token-auth:";

/// KEYS: lock, ip window, user window. ARGV: now, limit, window, member.
/// Returns {0, 0} allowed (counted in both windows), {1, wait} too many
/// attempts, {2, wait} locked. A member already in the user window (a
/// repeated call) is allowed again, not counted twice.
pub static ADMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('ZSCORE', KEYS[3], ARGV[4]) then
  return {0, 0}
end
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local locked_until = tonumber(redis.call('GET', KEYS[1]) or '0')
if locked_until > now then
  return {2, locked_until - now}
end
local wait = -1
for i = 2, 3 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  if redis.call('ZCARD', KEYS[i]) >= limit then
    local oldest = tonumber(redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')[2])
    local w = math.max(oldest + window - now, 1)
    if w > wait then wait = w end
  end
end
if wait >= 0 then
  return {1, wait}
end
for i = 2, 3 do
  redis.call('ZADD', KEYS[i], now, ARGV[4])
  redis.call('EXPIRE', KEYS[i], window)
end
return {0, 0}
",
    )
});

/// KEYS: failures, lock, this failure's answer. ARGV: now, lock_after,
/// lock_for. Returns {consecutive failures, 1 if this failure locked the
/// account}; a repeated call (its answer key exists) gets the same answer.
pub static FAIL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local seen = redis.call('GET', KEYS[3])
if seen then
  local n, locked = string.match(seen, '(%d+) (%d+)')
  return {tonumber(n), tonumber(locked)}
end
local now = tonumber(ARGV[1])
local lock_for = tonumber(ARGV[3])
local answer = {0, 1}
local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], lock_for)
if n >= tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], now + lock_for, 'EX', lock_for)
  redis.call('DEL', KEYS[1])
else
  answer = {n, 0}
end
redis.call('SET', KEYS[3], answer[1] .. ' ' .. answer[2], 'EX', 60)
return answer
",
    )
});

/// KEYS: state, index, the client's set. ARGV: value, ttl, now, capacity,
/// state, per-client cap. Returns {1, 0} stored, {0, 0} full, {2, wait}
/// the client's cap reached (checked first; wait: seconds until its oldest
/// state expires). A state that exists (a repeated call) is answered
/// stored without being counted again.
pub static PUT_STATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {1, 0}
end
local now = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - ttl)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then
  local oldest = tonumber(redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')[2])
  return {2, math.max(oldest + ttl - now, 1)}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  return {0, 0}
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ttl)
for i = 2, 3 do
  redis.call('ZADD', KEYS[i], now, ARGV[5])
  redis.call('EXPIRE', KEYS[i], ttl)
end
return {1, 0}
",
    )
});

/// KEYS: state, index. ARGV: state, prefix of the client sets. Returns the
/// value (now deleted) or nil; the state leaves the index and its client's
/// set (named by the value's last field).
pub static TAKE_STATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('GETDEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if v then
  local client = string.match(v, '^%S+ %S+ %S+ (%S+)$')
  if client then
    redis.call('ZREM', ARGV[2] .. client, ARGV[1])
  end
end
return v
",
    )
});

fn down(e: impl std::fmt::Display) -> StoreError {
    StoreError::Down(e.to_string())
}

/// Run one script invocation within `timeout`, a second time on a fresh
/// connection if the first lost its connection (each script is safe to
/// repeat: see the module documentation).
async fn invoke<T: redis::FromRedisValue>(
    conn: &Redis,
    timeout: Duration,
    invocation: redis::ScriptInvocation<'_>,
) -> Result<T, StoreError> {
    let invocation = &invocation;
    shared::redis_call(timeout, || {
        let mut conn = conn.clone();
        async move { invocation.invoke_async(&mut conn).await }
    })
    .await
    .map_err(down)
}

/// [`LoginLimits`] in Redis.
pub struct RedisLimits {
    conn: Redis,
    policy: LimitPolicy,
    clock: Arc<dyn Clock>,
    timeout: Duration,
}

impl RedisLimits {
    /// Limits with `policy` on `conn`, time from `clock`.
    pub fn new(
        conn: Redis,
        policy: LimitPolicy,
        clock: Arc<dyn Clock>,
        timeout: Duration,
    ) -> RedisLimits {
        RedisLimits {
            conn,
            policy,
            clock,
            timeout,
        }
    }
}

/// A member unique to this attempt (several may share a second).
fn attempt_id(now: u64) -> Result<String, StoreError> {
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(format!("{now}-{:016x}", u64::from_le_bytes(raw)))
}

impl LoginLimits for RedisLimits {
    fn admit<'a>(
        &'a self,
        ip: IpAddr,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        Box::pin(async move {
            let now = self.clock.now();
            let user = user_key(username);
            let mut invocation = ADMIT.prepare_invoke();
            invocation
                .key(format!("{PREFIX}lock:{user}"))
                .key(format!("{PREFIX}login:ip:{}", client_key(ip)))
                .key(format!("{PREFIX}login:user:{user}"))
                .arg(now)
                .arg(self.policy.attempts)
                .arg(self.policy.window)
                .arg(attempt_id(now)?);
            let (kind, wait): (u8, u64) = invoke(&self.conn, self.timeout, invocation).await?;
            Ok(match kind {
                0 => Admission::Allowed,
                1 => Admission::TooManyAttempts { retry_after: wait },
                _ => Admission::Locked { retry_after: wait },
            })
        })
    }

    fn record_failure<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<FailureOutcome, StoreError>> {
        Box::pin(async move {
            let user = user_key(username);
            let now = self.clock.now();
            let mut invocation = FAIL.prepare_invoke();
            invocation
                .key(format!("{PREFIX}fails:{user}"))
                .key(format!("{PREFIX}lock:{user}"))
                .key(format!("{PREFIX}failed:{}", attempt_id(now)?))
                .arg(now)
                .arg(self.policy.lock_after)
                .arg(self.policy.lock_for);
            let (consecutive, locked): (u32, u8) =
                invoke(&self.conn, self.timeout, invocation).await?;
            let locked = locked == 1;
            Ok(FailureOutcome {
                consecutive,
                captcha_required: locked || consecutive >= self.policy.captcha_after,
                locked,
            })
        })
    }

    fn captcha_required<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut get = redis::cmd("GET");
            get.arg(format!("{PREFIX}fails:{}", user_key(username)));
            let get = &get;
            let failures: Option<u32> = shared::redis_call(self.timeout, || {
                let mut conn = self.conn.clone();
                async move { get.query_async::<Option<u32>>(&mut conn).await }
            })
            .await
            .map_err(down)?;
            Ok(failures.unwrap_or(0) >= self.policy.captcha_after)
        })
    }

    fn record_success<'a>(&'a self, username: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = format!("{PREFIX}fails:{}", user_key(username));
            let mut del = redis::cmd("DEL");
            del.arg(key);
            let del = &del;
            // Safe to repeat: deleting twice leaves the key deleted.
            shared::redis_call(self.timeout, || {
                let mut conn = self.conn.clone();
                async move { del.query_async::<()>(&mut conn).await }
            })
            .await
            .map_err(down)
        })
    }

    fn prune(&self) {
        // Every key carries its own expiry.
    }
}

/// [`PendingSignIns`] in Redis.
pub struct RedisSignIns {
    conn: Redis,
    clock: Arc<dyn Clock>,
    timeout: Duration,
}

impl RedisSignIns {
    /// Pending sign-ins on `conn`, time from `clock`.
    pub fn new(conn: Redis, clock: Arc<dyn Clock>, timeout: Duration) -> RedisSignIns {
        RedisSignIns {
            conn,
            clock,
            timeout,
        }
    }
}

const INDEX: &str = "token-auth:oauth:pending";
/// Prefix of the per-client sets of pending states.
const CLIENT_SETS: &str = "token-auth:oauth:client:";

fn unavailable(e: StoreError) -> StateError {
    StateError::Unavailable(e.to_string())
}

/// `provider verifier issued_at client`: none of the four contains a space.
fn encode(p: &Pending, client: IpAddr) -> String {
    format!(
        "{} {} {} {}",
        p.provider.as_str(),
        p.code_verifier,
        p.issued_at(),
        client_key(client)
    )
}

fn decode(value: &str) -> Option<Pending> {
    let mut parts = value.split(' ');
    let provider = Provider::from_name(parts.next()?)?;
    let verifier = parts.next()?.to_string();
    let issued_at = parts.next()?.parse().ok()?;
    Some(Pending::new(provider, verifier, issued_at))
}

impl PendingSignIns for RedisSignIns {
    fn insert(
        &self,
        state: String,
        pending: Pending,
        client: IpAddr,
    ) -> BoxFuture<'_, Result<(), StateError>> {
        Box::pin(async move {
            let mut invocation = PUT_STATE.prepare_invoke();
            invocation
                .key(format!("{PREFIX}oauth:{state}"))
                .key(INDEX)
                .key(format!("{CLIENT_SETS}{}", client_key(client)))
                .arg(encode(&pending, client))
                .arg(STATE_TTL)
                .arg(self.clock.now())
                .arg(STATE_CAPACITY)
                .arg(&state)
                .arg(STATE_PER_CLIENT);
            let (kind, wait): (u8, u64) = invoke(&self.conn, self.timeout, invocation)
                .await
                .map_err(unavailable)?;
            match kind {
                1 => Ok(()),
                2 => Err(StateError::ClientFull { retry_after: wait }),
                _ => Err(StateError::Full),
            }
        })
    }

    fn take<'a>(&'a self, state: &'a str) -> BoxFuture<'a, Result<Option<Pending>, StateError>> {
        Box::pin(async move {
            let mut invocation = TAKE_STATE.prepare_invoke();
            invocation
                .key(format!("{PREFIX}oauth:{state}"))
                .key(INDEX)
                .arg(state)
                .arg(CLIENT_SETS);
            let value: Option<String> = invoke(&self.conn, self.timeout, invocation)
                .await
                .map_err(unavailable)?;
            let now = self.clock.now();
            Ok(value
                .as_deref()
                .and_then(decode)
                .filter(|p| p.issued_at() + STATE_TTL > now))
        })
    }

    fn prune(&self) {
        // Every key carries its own expiry.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_sign_in_survives_its_encoding() {
        let p = Pending::new(Provider::Github, "v-erifier_123".into(), 42);
        let client: IpAddr = "2001:db8:1:2::3".parse().unwrap();
        let value = encode(&p, client);
        assert_eq!(value, "github v-erifier_123 42 2001:db8:1:2::");
        assert_eq!(decode(&value), Some(p.clone()));
        assert_eq!(decode("github v-erifier_123 42"), Some(p));
        assert_eq!(decode("nope x 1"), None);
        assert_eq!(decode("github x"), None);
    }
}
