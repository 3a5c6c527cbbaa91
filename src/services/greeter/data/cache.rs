//! The user list cached in Redis (cargo feature `cluster`): a [`UserRepo`]
//! in front of the PostgreSQL one, shared by every greeter instance.
//!
//! # Generations, so a slow reader cannot re-install a stale list
//!
//! ```text
//! greeter:users:gen          = 7           INCR after every committed write
//! greeter:users:list:7       = [[1,"ann","pw",1],…]   EX 60 s
//! ```
//!
//! `list()` reads the generation and the list cached under it in one round
//! trip (a Lua script). On a hit that list is the answer; on a miss the list
//! is read from PostgreSQL and stored under the generation read *before*
//! it. `create()` / `delete()` write to PostgreSQL, then `INCR` the
//! generation, then answer. So a reader that read generation 7, then the
//! database, and is overtaken by a write, stores its (possibly stale) list
//! under 7, a key no reader asks for any more: deleting a single key
//! instead would let that late `SET` re-install the old list.
//!
//! Only the newest generation is read; older lists expire with their TTL.
//! The generation key has no TTL, so it survives `volatile-*` eviction
//! policies; a Redis that loses it (restart without persistence, `allkeys-*`
//! eviction) starts again at 0 — with its lists gone too, in the first case.
//!
//! # When Redis fails
//!
//! - `list()`: Redis down or slower than `data.cache.read_timeout` is
//!   [`biz::Error::Unavailable`] (503 / UNAVAILABLE) within that time-out.
//!   Every Redis call is bounded by it, so nothing hangs.
//! - `create()` / `delete()`: the row is committed before Redis is asked, so
//!   a failed `INCR` still answers success (the row *is* stored) and is
//!   logged. Until the list cached under the old generation expires (at
//!   most [`LIST_TTL`]) instances may serve it without the new row.
//! - A failed `SET` after a miss is logged; the list read from PostgreSQL
//!   is still the answer.
//!
//! The connection manager reconnects on its own: once Redis is back,
//! requests succeed again without a restart (and the script is re-loaded
//! on the `NOSCRIPT` answer of a fresh server). The first call after a
//! restart meets the connection that died with the old server; it is made
//! once more on a fresh one within the same time-out
//! ([`cluster::redis_call`]), so a restart costs no request. Each call is
//! safe to repeat: the read script only reads; `SET` of a list writes the
//! same value twice; `INCR` of the generation may step it twice, which
//! only invalidates once more (generations are compared for equality,
//! never counted).

use std::sync::Arc;
use std::time::Duration;

use super::super::biz::{self, User, UserRepo};
use crate::cluster::{self, Redis, Unavailable};
use crate::types::BoxFuture;

/// The generation, incremented after every write to the users table.
pub const GEN_KEY: &str = "greeter:users:gen";
/// The prefix of a cached list's key; the generation follows.
pub const LIST_KEY_PREFIX: &str = "greeter:users:list:";

/// What follows the generation in a cached page's key: the page asked for.
fn page_suffix(after_id: i64, limit: usize) -> String {
    format!(":{after_id}:{limit}")
}

/// The key of the page of `limit` users after `after_id` cached under
/// `generation` (`UserRepo::list` is the page after 0 of `usize::MAX`).
pub fn list_key(generation: i64, after_id: i64, limit: usize) -> String {
    format!(
        "{LIST_KEY_PREFIX}{generation}{}",
        page_suffix(after_id, limit)
    )
}
/// How long a cached list lives: the longest a list can be served stale when
/// a write could not invalidate it.
pub const LIST_TTL: Duration = Duration::from_secs(60);

/// `GET gen` and `GET list:{gen}{page}` in one round trip (`page` is
/// `:{after}:{limit}`, one key per page asked for). A missing generation
/// is 0; a missing list is nil (Lua `false`).
const READ_SCRIPT: &str = "
local gen = redis.call('GET', KEYS[1]) or '0'
return {gen, redis.call('GET', ARGV[1] .. gen .. ARGV[2])}
";

/// A [`UserRepo`] whose `list()` is cached in Redis.
pub struct CachedUsers {
    store: Arc<dyn UserRepo>,
    redis: Redis,
    timeout: Duration,
    read: redis::Script,
}

impl CachedUsers {
    /// Caches `store`'s list in `redis`; `timeout` (`data.cache.read_timeout`)
    /// bounds every Redis call.
    pub fn new(store: Arc<dyn UserRepo>, redis: Redis, timeout: Duration) -> CachedUsers {
        CachedUsers {
            store,
            redis,
            timeout,
            read: redis::Script::new(READ_SCRIPT),
        }
    }

    /// `cmd` within the time-out, made once more on a fresh connection if
    /// the first attempt lost its connection (every command here is safe to
    /// repeat: see the module documentation); any failure is [`Unavailable`].
    async fn bounded<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, Unavailable> {
        cluster::redis_call(self.timeout, || {
            let mut conn = self.redis.clone();
            async move { cmd.query_async::<T>(&mut conn).await }
        })
        .await
    }

    /// Moves to the next generation after a write (`what`); a failure is
    /// logged, not returned: the write itself is committed.
    async fn invalidate(&self, what: &str) {
        let mut incr = redis::cmd("INCR");
        incr.arg(GEN_KEY);
        if let Err(e) = self.bounded::<i64>(&incr).await {
            biz::log(&format!(
                "cache: the user list was not invalidated after {what} ({e}); the row is \
                 stored, but a list cached before it may be served for up to {LIST_TTL:?}"
            ));
        }
    }
}

/// Whether a write that ended with `result` may have changed the table:
/// success, or a failure seen after the statement may have been committed.
fn may_have_written<T>(result: &Result<T, biz::Error>) -> bool {
    !matches!(
        result,
        Err(biz::Error::InvalidArgument { .. } | biz::Error::AlreadyExists { .. })
    )
}

/// The cached form: `[[id, username, password, age], …]`.
fn encode(users: &[User]) -> Vec<u8> {
    let rows: Vec<(i64, &str, &str, i64)> = users
        .iter()
        .map(|u| (u.id, u.username.as_str(), u.password.as_str(), u.age))
        .collect();
    // Serializing tuples of numbers and strings cannot fail.
    serde_json::to_vec(&rows).unwrap_or_default()
}

fn decode(bytes: &[u8]) -> Option<Vec<User>> {
    let rows: Vec<(i64, String, String, i64)> = serde_json::from_slice(bytes).ok()?;
    Some(
        rows.into_iter()
            .map(|(id, username, password, age)| User {
                id,
                username,
                password,
                age,
            })
            .collect(),
    )
}

impl UserRepo for CachedUsers {
    fn create(
        &self,
        username: String,
        password: String,
    ) -> BoxFuture<'_, Result<User, biz::Error>> {
        Box::pin(async move {
            let result = self.store.create(username, password).await;
            if may_have_written(&result) {
                self.invalidate("creating a user").await;
            }
            result
        })
    }

    fn page(&self, after_id: i64, limit: usize) -> BoxFuture<'_, Result<Vec<User>, biz::Error>> {
        Box::pin(async move {
            let mut read = self.read.key(GEN_KEY);
            read.arg(LIST_KEY_PREFIX).arg(page_suffix(after_id, limit));
            let read = &read;
            let read = cluster::redis_call(self.timeout, || {
                let mut conn = self.redis.clone();
                async move { read.invoke_async::<(i64, Option<Vec<u8>>)>(&mut conn).await }
            });
            let (generation, cached) = read.await.map_err(|e| {
                let message = format!("store unavailable while listing users: {e}");
                biz::log(&message);
                biz::Error::Unavailable { message }
            })?;
            if let Some(bytes) = cached {
                match decode(&bytes) {
                    Some(users) => return Ok(users),
                    None => biz::log("cache: an unreadable cached user list was replaced"),
                }
            }
            let users = self.store.page(after_id, limit).await?;
            let mut set = redis::cmd("SET");
            set.arg(list_key(generation, after_id, limit))
                .arg(encode(&users))
                .arg("EX")
                .arg(LIST_TTL.as_secs());
            if let Err(e) = self.bounded::<()>(&set).await {
                biz::log(&format!("cache: the user list was not cached ({e})"));
            }
            Ok(users)
        })
    }

    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, biz::Error>> {
        Box::pin(async move {
            let result = self.store.delete(id).await;
            if !matches!(result, Ok(false)) && may_have_written(&result) {
                self.invalidate("deleting a user").await;
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_form_round_trips_and_anything_else_is_a_miss() {
        let users = vec![
            User {
                id: 1,
                username: "ann".into(),
                password: "p\"w".into(),
                age: 1,
            },
            User {
                id: 7,
                username: "zoë 山田".into(),
                password: "x".into(),
                age: 1,
            },
        ];
        let bytes = encode(&users);
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"[[1,"ann","p\"w",1],[7,"zoë 山田","x",1]]"#
        );
        assert_eq!(decode(&bytes), Some(users));
        assert_eq!(decode(b"[]"), Some(vec![]));
        assert_eq!(decode(b"{\"users\":[]}"), None);
    }

    #[test]
    fn only_a_definite_refusal_skips_the_invalidation() {
        let taken: Result<(), _> = Err(biz::Error::username_taken("ann"));
        let invalid: Result<(), _> = Err(biz::Error::InvalidArgument {
            reason: "USERNAME_EMPTY",
            message: String::new(),
        });
        let timed_out: Result<(), _> = Err(biz::Error::Unavailable {
            message: String::new(),
        });
        assert!(may_have_written(&Ok(())));
        assert!(may_have_written(&timed_out));
        assert!(!may_have_written(&taken));
        assert!(!may_have_written(&invalid));
    }
}
