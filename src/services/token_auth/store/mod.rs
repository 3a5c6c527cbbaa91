//! SQLite storage for users, identity-provider bindings and the token blacklist.
//!
//! The schema (`schema.sql`) carries the rules of the records (lengths,
//! uniqueness, roles, providers) as constraints, so the database is the last line of defence. The connection runs in WAL mode
//! with `foreign_keys=ON` (SQLite leaves it off unless asked, per connection).
//!
//! Usernames and emails are unique and looked up without regard to ASCII
//! case (unique indexes on `lower(...)`), and stored as typed.
//!
//! rusqlite is synchronous; every async method here moves its work onto
//! tokio's blocking pool with `spawn_blocking`, so a slow disk never stalls the
//! reactor. One connection behind a mutex is enough for this service: SQLite
//! serialises writers anyway, and the queries are all single-row lookups.

use crate::services::token_auth::user::{Role, User};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Row};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[cfg(test)]
pub(crate) mod tests;

const SCHEMA: &str = include_str!("schema.sql");

/// How the store can fail.
#[derive(Debug)]
pub enum StoreError {
    /// The database file could not be opened or prepared.
    Open {
        /// The path given.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A user with this username already exists.
    UsernameTaken,
    /// A user with this email already exists.
    EmailTaken,
    /// A database from before the case rule holds values of `column` that
    /// differ only in case, so the case-insensitive unique index cannot be built.
    CaseConflict {
        /// The path given.
        path: PathBuf,
        /// `username` or `email`.
        column: &'static str,
        /// Some of the clashing groups, each like `Ann, ann`.
        groups: Vec<String>,
    },
    /// The database cannot take writes: its file was removed or replaced
    /// while the service ran, or it turned read-only. Nothing is
    /// acknowledged from then on (HTTP 503).
    Unavailable {
        /// The path given.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// A shared server (PostgreSQL, Redis) is down or did not answer within
    /// its time-out: nothing was read or written (HTTP 503).
    Down(String),
    /// Any other error from a shared server's database (HTTP 500).
    Backend(String),
    /// Any other database error.
    Sqlite(rusqlite::Error),
    /// The blocking task running the query did not finish (panic or shutdown).
    Task(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Open { path, source } => {
                write!(f, "cannot open database {}: {source}", path.display())
            }
            StoreError::UsernameTaken => write!(f, "username exists"),
            StoreError::EmailTaken => write!(f, "email exists"),
            StoreError::CaseConflict {
                path,
                column,
                groups,
            } => write!(
                f,
                "cannot open database {}: users.{column} must be unique without regard to \
                 case, but these values differ only in case: {}; rename or remove all but \
                 one of each, then start again",
                path.display(),
                groups.join("; ")
            ),
            StoreError::Unavailable { path, reason } => {
                write!(f, "store unavailable: {} {reason}", path.display())
            }
            StoreError::Down(e) => write!(f, "{e}"),
            StoreError::Backend(e) => write!(f, "database error: {e}"),
            StoreError::Sqlite(e) => write!(f, "database error: {e}"),
            StoreError::Task(e) => write!(f, "database task failed: {e}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Open { source, .. } => Some(source),
            StoreError::Sqlite(e) => Some(e),
            StoreError::UsernameTaken
            | StoreError::EmailTaken
            | StoreError::Unavailable { .. }
            | StoreError::CaseConflict { .. }
            | StoreError::Down(_)
            | StoreError::Backend(_)
            | StoreError::Task(_) => None,
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        // Name the unique violations callers can act on; keep the rest raw.
        if let rusqlite::Error::SqliteFailure(code, Some(msg)) = &e {
            if code.code == ErrorCode::ConstraintViolation && msg.starts_with("UNIQUE") {
                // Column constraints name `users.x`, the case-insensitive
                // indexes name themselves.
                if msg.contains("users.username") || msg.contains("users_username_lower") {
                    return StoreError::UsernameTaken;
                }
                if msg.contains("users.email") || msg.contains("users_email_lower") {
                    return StoreError::EmailTaken;
                }
            }
        }
        StoreError::Sqlite(e)
    }
}

/// A user to be created.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// Unique login name (≤ 50 characters).
    pub username: String,
    /// bcrypt hash, or a marker that no password can match.
    pub password_hash: String,
    /// Unique email (≤ 100 characters).
    pub email: Option<String>,
    /// Role of the account.
    pub role: Role,
}

/// What an identity provider told us about a user at sign-in.
#[derive(Debug, Clone)]
pub struct ProviderIdentity {
    /// `wechat`, `google` or `github`.
    pub provider: String,
    /// The provider's id for the user (`openid`), ≤ 100 characters.
    pub provider_user_id: String,
    /// Display name reported by the provider.
    pub nickname: Option<String>,
    /// Avatar address reported by the provider.
    pub avatar_url: Option<String>,
    /// Provider access token, already encrypted.
    pub access_token: Option<String>,
    /// Provider refresh token, already encrypted.
    pub refresh_token: Option<String>,
    /// When the provider access token expires, Unix seconds.
    pub expires_at: Option<i64>,
}

/// Password hash stored for accounts created through an identity provider.
/// It is not a bcrypt hash, so no password can ever match it.
pub const NO_PASSWORD: &str = "!external-sign-in-only";

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    /// The file the connection holds, to notice when the path no longer
    /// names it (`None` for `:memory:`).
    file: Option<Arc<FileWatch>>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Store")
    }
}

const USER_COLUMNS: &str = "id, username, email, role, created_at, updated_at, token_key";

/// SQL for a new account's [`User::token_key`]: 128 random bits, hex.
const NEW_TOKEN_KEY: &str = "lower(hex(randomblob(16)))";

fn user_from_row(row: &Row<'_>) -> rusqlite::Result<User> {
    let role: String = row.get(3)?;
    let role = role.parse::<Role>().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, e.into())
    })?;
    Ok(User {
        id: row.get(0)?,
        username: row.get(1)?,
        email: row.get(2)?,
        role,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
        token_key: row.get(6)?,
    })
}

impl Store {
    /// Open (creating if needed) the database at `path` and apply the schema.
    ///
    /// This blocks; call it at start-up or from a blocking task.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_err)?;
        // journal_mode answers with the mode actually in effect.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_err(rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {mode}, WAL could not be enabled"
            ))));
        }
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(open_err)?;
        if let Err(e) = conn.execute_batch(SCHEMA) {
            return Err(case_conflict(&conn, path).unwrap_or_else(|| open_err(e)));
        }
        add_token_keys(&conn).map_err(open_err)?;
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(open_err)? {
            return Err(StoreError::Unavailable {
                path: path.to_path_buf(),
                reason: "is read-only: the service needs to write to it".into(),
            });
        }
        let file = FileWatch::new(path).map(Arc::new);
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
            file,
        })
    }

    /// Run `f` with the connection on the blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.run_checked(None, f).await
    }

    /// [`run`](Self::run) for a write: first make sure the path still names
    /// the file the connection holds (one `stat`), so that no write is
    /// acknowledged into a file nobody will open again; a read-only failure
    /// is reported as unavailable too.
    async fn run_write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.run_checked(self.file.clone(), f).await
    }

    async fn run_checked<T, F>(&self, file: Option<Arc<FileWatch>>, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic while holding the lock cannot leave SQLite half-written
            // (statements are atomic), so a poisoned lock is safe to reuse.
            let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(file) = &file {
                file.check()?;
            }
            let result = f(&mut guard);
            match (&file, result) {
                (Some(file), Err(StoreError::Sqlite(e))) if is_read_only(&e) => {
                    Err(file.unavailable("turned read-only"))
                }
                (Some(file), Err(StoreError::Sqlite(e))) if is_full(&e) => Err(file.full(&e)),
                (Some(file), result) => {
                    if result.is_ok() {
                        file.writable_again();
                    }
                    result
                }
                (None, result) => result,
            }
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// Insert a user and return it as stored: `Ok` only once the row is
    /// committed.
    ///
    /// `INSERT … RETURNING` hands its row back on the first step, before
    /// the statement (and, in autocommit, the transaction) is finished; a
    /// caller that stops there never sees a failed commit (a full disk), and
    /// would answer 201 for a row that does not exist. So the insert runs in
    /// an explicit transaction, its rows are read to the end, and the
    /// `COMMIT`'s own result decides.
    pub async fn create_user(&self, new: NewUser) -> Result<User, StoreError> {
        self.run_write(move |conn| {
            let sql = format!(
                "INSERT INTO users (username, password_hash, email, role, token_key) \
                 VALUES (?1, ?2, ?3, ?4, {NEW_TOKEN_KEY}) RETURNING {USER_COLUMNS}"
            );
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let user = {
                let mut stmt = tx.prepare_cached(&sql)?;
                let mut rows = stmt.query(params![
                    new.username,
                    new.password_hash,
                    new.email,
                    new.role.as_str()
                ])?;
                let user = match rows.next()? {
                    Some(row) => user_from_row(row)?,
                    None => return Err(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows)),
                };
                while rows.next()?.is_some() {}
                user
            };
            tx.commit()?;
            Ok(user)
        })
        .await
    }

    /// The user and password hash for `username` in any ASCII case, if such
    /// a user exists.
    pub async fn credentials(&self, username: &str) -> Result<Option<(User, String)>, StoreError> {
        let username = username.to_owned();
        self.run(move |conn| {
            let sql = format!(
                "SELECT {USER_COLUMNS}, password_hash FROM users WHERE lower(username) = lower(?1)"
            );
            let found = conn
                .query_row(&sql, [username], |row| {
                    Ok((user_from_row(row)?, row.get(7)?))
                })
                .optional()?;
            Ok(found)
        })
        .await
    }

    /// The user with primary key `id`.
    pub async fn user_by_id(&self, id: i64) -> Result<Option<User>, StoreError> {
        self.run(move |conn| {
            let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?1");
            Ok(conn.query_row(&sql, [id], user_from_row).optional()?)
        })
        .await
    }

    /// All users, oldest first.
    pub async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        self.run(|conn| {
            let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY id");
            let mut stmt = conn.prepare(&sql)?;
            let users = stmt
                .query_map([], user_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(users)
        })
        .await
    }

    /// Put `jti` on the blacklist until `expired_at` (the token's own `exp`):
    /// `true` when this call listed it, `false` when it was listed already
    /// (not an error).
    pub async fn revoke(&self, jti: &str, expired_at: u64) -> Result<bool, StoreError> {
        let jti = jti.to_owned();
        let expired_at = i64::try_from(expired_at).unwrap_or(i64::MAX);
        self.run_write(move |conn| {
            let listed = conn.execute(
                "INSERT INTO token_blacklist (token_jti, expired_at) VALUES (?1, ?2) \
                 ON CONFLICT (token_jti) DO NOTHING",
                params![jti, expired_at],
            )?;
            Ok(listed == 1)
        })
        .await
    }

    /// Whether `jti` is on the blacklist.
    pub async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError> {
        self.any_revoked(&[jti]).await
    }

    /// Whether any of `jtis` is on the blacklist, in one query.
    pub async fn any_revoked(&self, jtis: &[&str]) -> Result<bool, StoreError> {
        let jtis: Vec<String> = jtis.iter().map(|j| (*j).to_owned()).collect();
        self.run(move |conn| {
            let placeholders = vec!["?"; jtis.len()].join(", ");
            let sql = format!("SELECT 1 FROM token_blacklist WHERE token_jti IN ({placeholders})");
            let found = conn
                .prepare_cached(&sql)?
                .query_row(rusqlite::params_from_iter(&jtis), |_| Ok(()))
                .optional()?;
            Ok(found.is_some())
        })
        .await
    }

    /// Delete blacklist rows whose token has expired by `now`; such tokens are
    /// refused as expired anyway. Returns how many rows went.
    pub async fn prune_blacklist(&self, now: u64) -> Result<usize, StoreError> {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.run_write(move |conn| {
            Ok(conn.execute("DELETE FROM token_blacklist WHERE expired_at <= ?1", [now])?)
        })
        .await
    }

    /// Find the local user bound to `identity`, refreshing the binding's
    /// details; or create a user (named after `username_hint`, with a numeric
    /// suffix if taken) and the binding. All in one transaction: either both
    /// rows exist afterwards or neither does.
    pub async fn sign_in_with_provider(
        &self,
        identity: ProviderIdentity,
        username_hint: String,
    ) -> Result<User, StoreError> {
        self.run_write(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let bound: Option<i64> = tx
                .query_row(
                    "SELECT user_id FROM user_auth_providers \
                     WHERE provider = ?1 AND provider_user_id = ?2",
                    params![identity.provider, identity.provider_user_id],
                    |r| r.get(0),
                )
                .optional()?;
            let user_id = match bound {
                Some(user_id) => user_id,
                None => insert_with_free_username(&tx, &username_hint)?,
            };
            // One statement for both cases: a new binding is inserted, an
            // existing one gets the provider's latest details.
            tx.execute(
                "INSERT INTO user_auth_providers (user_id, provider, provider_user_id, \
                 nickname, avatar_url, access_token, refresh_token, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                 ON CONFLICT (provider, provider_user_id) DO UPDATE SET \
                 nickname = excluded.nickname, avatar_url = excluded.avatar_url, \
                 access_token = excluded.access_token, refresh_token = excluded.refresh_token, \
                 expires_at = excluded.expires_at, updated_at = unixepoch()",
                params![
                    user_id,
                    identity.provider,
                    identity.provider_user_id,
                    identity.nickname,
                    identity.avatar_url,
                    identity.access_token,
                    identity.refresh_token,
                    identity.expires_at
                ],
            )?;
            let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?1");
            let user = tx.query_row(&sql, [user_id], user_from_row)?;
            tx.commit()?;
            Ok(user)
        })
        .await
    }
}

/// Insert a password-less user named `hint`, or `hint_2`, `hint_3`, … when
/// taken in any case (the name is cut so the suffix still fits in 50 characters).
fn insert_with_free_username(conn: &Connection, hint: &str) -> Result<i64, StoreError> {
    for candidate in username_candidates(hint) {
        let inserted = conn.execute(
            &format!(
                "INSERT INTO users (username, password_hash, token_key) \
                 VALUES (?1, ?2, {NEW_TOKEN_KEY}) ON CONFLICT DO NOTHING"
            ),
            params![candidate, NO_PASSWORD],
        )?;
        if inserted == 1 {
            return Ok(conn.last_insert_rowid());
        }
    }
    Err(StoreError::UsernameTaken)
}

/// The names tried, in order, for a user created at a provider sign-in:
/// `hint`, `hint_2`, … `hint_100`, each cut so it fits in 50 characters.
pub fn username_candidates(hint: &str) -> impl Iterator<Item = String> + '_ {
    (1..=100u32).map(move |n| {
        if n == 1 {
            hint.chars().take(50).collect()
        } else {
            let suffix = format!("_{n}");
            let base: String = hint.chars().take(50 - suffix.len()).collect();
            base + &suffix
        }
    })
}

/// Databases created before [`User::token_key`] get the column, and every
/// existing account a key of its own (their earlier tokens stop working:
/// they carry no key).
fn add_token_keys(conn: &Connection) -> rusqlite::Result<()> {
    let has: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('users') WHERE name = 'token_key'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has {
        // ALTER TABLE cannot default to an expression: add, then fill.
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; \
             ALTER TABLE users ADD COLUMN token_key TEXT NOT NULL DEFAULT ''; \
             UPDATE users SET token_key = {NEW_TOKEN_KEY}; \
             COMMIT;"
        ))?;
    }
    Ok(())
}

/// When the schema did not apply because existing rows differ only in case,
/// the error naming them (at most five groups per column).
fn case_conflict(conn: &Connection, path: &Path) -> Option<StoreError> {
    for column in ["username", "email"] {
        let sql = format!(
            "SELECT group_concat({column}, ', ') FROM users WHERE {column} IS NOT NULL \
             GROUP BY lower({column}) HAVING count(*) > 1 LIMIT 5"
        );
        let groups = conn
            .prepare(&sql)
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .ok()?;
        if !groups.is_empty() {
            return Some(StoreError::CaseConflict {
                path: path.to_path_buf(),
                column,
                groups,
            });
        }
    }
    None
}

/// Device and inode of the database file as opened, to notice when its path
/// no longer names it (directory removed, file deleted or replaced).
#[derive(Debug)]
struct FileWatch {
    path: PathBuf,
    id: (u64, u64),
    /// Set once the file is found gone; the path is logged that once.
    gone: std::sync::OnceLock<String>,
    /// Whether the last write failed for lack of space: logged on the way
    /// in and on the way out, not once per refused write.
    full: std::sync::atomic::AtomicBool,
}

impl FileWatch {
    fn new(path: &Path) -> Option<FileWatch> {
        use std::os::unix::fs::MetadataExt;
        if path.as_os_str() == ":memory:" {
            return None;
        }
        let meta = std::fs::metadata(path).ok()?;
        Some(FileWatch {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
            gone: std::sync::OnceLock::new(),
            full: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// `Ok` while the path still names the opened file.
    fn check(&self) -> Result<(), StoreError> {
        use std::os::unix::fs::MetadataExt;
        if let Some(reason) = self.gone.get() {
            return Err(self.error(reason));
        }
        match std::fs::metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == self.id => Ok(()),
            Ok(_) => Err(self.unavailable("was replaced by another file")),
            Err(_) => Err(self.unavailable("was removed")),
        }
    }

    /// Remember (and log, the first time) why writes are refused.
    fn unavailable(&self, reason: &str) -> StoreError {
        let mut first = false;
        let reason = self.gone.get_or_init(|| {
            first = true;
            reason.to_string()
        });
        if first {
            crate::ops::log::message(
                "token-auth",
                format_args!(
                    "store unavailable: database {} {reason}; refusing writes from now on",
                    self.path.display()
                ),
            );
        }
        self.error(reason)
    }

    /// A write refused because the disk (or the database's quota) is full:
    /// nothing was committed. Unlike a removed file this passes: the next
    /// write tries again, so the service recovers when space returns.
    fn full(&self, e: &rusqlite::Error) -> StoreError {
        use std::sync::atomic::Ordering;
        if !self.full.swap(true, Ordering::Relaxed) {
            crate::ops::log::message(
                "token-auth",
                format_args!(
                    "store unavailable: database {} cannot grow ({e}); writes are refused \
                     with 503 until space returns",
                    self.path.display()
                ),
            );
        }
        self.error("is full: no space left for the write")
    }

    /// A write went through: if the disk was full before, say it is over.
    fn writable_again(&self) {
        use std::sync::atomic::Ordering;
        if self.full.load(Ordering::Relaxed) && self.full.swap(false, Ordering::Relaxed) {
            crate::ops::log::message(
                "token-auth",
                format_args!("store: database {} takes writes again", self.path.display()),
            );
        }
    }

    fn error(&self, reason: &str) -> StoreError {
        StoreError::Unavailable {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }
}

/// SQLite's ways of saying a write found no room: `SQLITE_FULL`, and the
/// I/O errors a full file system gives on write or fsync.
fn is_full(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DiskFull | ErrorCode::SystemIoFailure)
    )
}

/// SQLite's way of saying the file cannot be written any more.
fn is_read_only(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen)
    )
}
