//! The schema's constraints are proved by writing bad rows straight to SQLite:
//! the database, not the Rust code, must refuse them.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A database file in the temp directory, removed (with its WAL files) on drop.
pub(crate) struct TempDb {
    pub path: PathBuf,
}

impl TempDb {
    pub fn new(tag: &str) -> TempDb {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "handwire-{tag}-{}-{}.db",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        TempDb { path }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

fn open() -> (TempDb, Store, Connection) {
    let db = TempDb::new("store");
    let store = Store::open(&db.path).unwrap();
    let raw = Connection::open(&db.path).unwrap();
    raw.execute_batch("PRAGMA foreign_keys = ON").unwrap();
    (db, store, raw)
}

fn new_user(name: &str, email: Option<&str>) -> NewUser {
    NewUser {
        username: name.into(),
        password_hash: "$2b$04$abcdefghijklmnopqrstuuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01".into(),
        email: email.map(Into::into),
        role: Role::User,
    }
}

fn identity(openid: &str) -> ProviderIdentity {
    ProviderIdentity {
        provider: "github".into(),
        provider_user_id: openid.into(),
        nickname: Some("Octo".into()),
        avatar_url: Some("http://127.0.0.1/a.png".into()),
        access_token: Some("ciphertext-1".into()),
        refresh_token: None,
        expires_at: Some(1_000),
    }
}

#[tokio::test]
async fn database_runs_in_wal_mode_with_foreign_keys_on() {
    let (_db, store, _raw) = open();
    let (mode, fk) = store
        .run(|c| {
            let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            let fk: i64 = c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
            Ok((mode, fk))
        })
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(fk, 1);
}

#[test]
fn user_rows_breaking_spec_limits_are_refused_by_the_database() {
    let (_db, _store, raw) = open();
    let ok_hash = "h";
    let cases: Vec<(&str, String, String, Option<String>, &str)> = vec![
        (
            "username > 50",
            "u".repeat(51),
            ok_hash.into(),
            None,
            "user",
        ),
        (
            "empty username",
            String::new(),
            ok_hash.into(),
            None,
            "user",
        ),
        ("hash > 255", "a1".into(), "h".repeat(256), None, "user"),
        (
            "email > 100",
            "a2".into(),
            ok_hash.into(),
            Some("e".repeat(101)),
            "user",
        ),
        ("unknown role", "a3".into(), ok_hash.into(), None, "root"),
    ];
    for (what, username, hash, email, role) in cases {
        let got = raw.execute(
            "INSERT INTO users (username, password_hash, email, role) VALUES (?1, ?2, ?3, ?4)",
            params![username, hash, email, role],
        );
        assert!(got.is_err(), "{what} was accepted");
    }
    // The limits themselves are allowed.
    raw.execute(
        "INSERT INTO users (username, password_hash, email) VALUES (?1, ?2, ?3)",
        params!["u".repeat(50), "h".repeat(255), "e".repeat(100)],
    )
    .unwrap();
    let role: String = raw
        .query_row("SELECT role FROM users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(role, "user", "default role");
    // STRICT: a timestamp column takes integers only.
    assert!(raw
        .execute(
            "INSERT INTO users (username, password_hash, created_at) VALUES ('t1', 'h', 'yesterday')",
            [],
        )
        .is_err());
}

#[tokio::test]
async fn duplicate_username_and_email_are_named_errors() {
    let (_db, store, _raw) = open();
    store
        .create_user(new_user("ann", Some("a@x")))
        .await
        .unwrap();
    let again = store.create_user(new_user("ann", None)).await;
    assert!(matches!(again, Err(StoreError::UsernameTaken)), "{again:?}");
    let email = store.create_user(new_user("bob", Some("a@x"))).await;
    assert!(matches!(email, Err(StoreError::EmailTaken)), "{email:?}");
    // Several users without email are fine: NULLs are distinct.
    store.create_user(new_user("cid", None)).await.unwrap();
    store.create_user(new_user("dan", None)).await.unwrap();
}

#[tokio::test]
async fn username_and_email_are_unique_without_regard_to_case_and_stored_as_typed() {
    let (_db, store, raw) = open();
    let victim = store
        .create_user(new_user("VICTIM01", Some("V@E.COM")))
        .await
        .unwrap();
    assert_eq!(victim.username, "VICTIM01");
    assert_eq!(victim.email.as_deref(), Some("V@E.COM"));
    let again = store.create_user(new_user("victim01", None)).await;
    assert!(matches!(again, Err(StoreError::UsernameTaken)), "{again:?}");
    let email = store.create_user(new_user("other", Some("v@e.com"))).await;
    assert!(matches!(email, Err(StoreError::EmailTaken)), "{email:?}");
    // The database itself refuses it, whatever code path writes.
    assert!(raw
        .execute(
            "INSERT INTO users (username, password_hash) VALUES ('Victim01', 'h')",
            []
        )
        .is_err());
}

#[tokio::test]
async fn credentials_are_found_by_username_in_any_case() {
    let (_db, store, _raw) = open();
    let ann = store.create_user(new_user("Ann", None)).await.unwrap();
    for typed in ["Ann", "ann", "ANN"] {
        let (user, _) = store.credentials(typed).await.unwrap().unwrap();
        assert_eq!(user, ann, "{typed}");
    }
}

/// The schema as it was before the case-insensitive indexes.
fn schema_before_case_rule() -> String {
    SCHEMA
        .lines()
        .filter(|line| !line.contains("_lower"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn opening_a_database_from_before_the_case_rule_adds_it() {
    let db = TempDb::new("store-upgrade");
    let raw = Connection::open(&db.path).unwrap();
    raw.execute_batch(&schema_before_case_rule()).unwrap();
    raw.execute(
        "INSERT INTO users (username, password_hash, email) VALUES ('Ann', 'h', 'A@X')",
        [],
    )
    .unwrap();
    drop(raw);
    let store = Store::open(&db.path).unwrap();
    let again = store.create_user(new_user("aNN", None)).await;
    assert!(matches!(again, Err(StoreError::UsernameTaken)), "{again:?}");
    let email = store.create_user(new_user("bob", Some("a@x"))).await;
    assert!(matches!(email, Err(StoreError::EmailTaken)), "{email:?}");
    // Opening again is a no-op.
    drop(store);
    Store::open(&db.path).unwrap();
}

#[test]
fn opening_a_database_with_names_differing_only_in_case_names_them() {
    let db = TempDb::new("store-clash");
    let raw = Connection::open(&db.path).unwrap();
    raw.execute_batch(&schema_before_case_rule()).unwrap();
    raw.execute_batch(
        "INSERT INTO users (username, password_hash) VALUES ('Ann', 'h'), ('ann', 'h'), ('bob', 'h');",
    )
    .unwrap();
    drop(raw);
    let err = Store::open(&db.path).err().unwrap();
    assert!(
        matches!(&err, StoreError::CaseConflict { column: "username", groups, .. } if groups == &["Ann, ann"]),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("users.username must be unique without regard to case"),
        "{err}"
    );
}

#[tokio::test]
async fn created_user_is_returned_and_found_again() {
    let (_db, store, _raw) = open();
    let ann = store
        .create_user(new_user("ann", Some("a@x")))
        .await
        .unwrap();
    assert_eq!(ann.username, "ann");
    assert_eq!(ann.role, Role::User);
    assert_eq!(store.user_by_id(ann.id).await.unwrap(), Some(ann.clone()));
    let (user, hash) = store.credentials("ann").await.unwrap().unwrap();
    assert_eq!(user, ann);
    assert!(hash.starts_with("$2b$"));
    assert_eq!(store.credentials("nobody").await.unwrap(), None);
    assert_eq!(store.list_users().await.unwrap(), vec![ann]);
}

#[test]
fn updated_at_is_refreshed_when_a_user_changes() {
    let (_db, _store, raw) = open();
    raw.execute(
        "INSERT INTO users (username, password_hash, created_at, updated_at) VALUES ('ann', 'h', 100, 100)",
        [],
    )
    .unwrap();
    raw.execute("UPDATE users SET role = 'vip' WHERE username = 'ann'", [])
        .unwrap();
    let (created, updated): (i64, i64) = raw
        .query_row("SELECT created_at, updated_at FROM users", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(created, 100);
    assert!(updated > 1_600_000_000, "updated_at = {updated}");
}

#[test]
fn provider_rows_obey_enum_uniqueness_and_foreign_key() {
    let (_db, _store, raw) = open();
    raw.execute(
        "INSERT INTO users (username, password_hash) VALUES ('ann', 'h')",
        [],
    )
    .unwrap();
    let insert = |user_id: i64, provider: &str, openid: &str| {
        raw.execute(
            "INSERT INTO user_auth_providers (user_id, provider, provider_user_id) VALUES (?1, ?2, ?3)",
            params![user_id, provider, openid],
        )
    };
    insert(1, "github", "o1").unwrap();
    insert(1, "google", "o1").unwrap();
    assert!(insert(1, "github", "o1").is_err(), "(provider, id) unique");
    assert!(insert(1, "facebook", "o2").is_err(), "provider enum");
    assert!(insert(1, "wechat", &"x".repeat(101)).is_err(), "id length");
    assert!(insert(999, "wechat", "o3").is_err(), "foreign key");
}

#[test]
fn deleting_a_user_deletes_its_provider_bindings() {
    let (_db, _store, raw) = open();
    raw.execute(
        "INSERT INTO users (username, password_hash) VALUES ('ann', 'h')",
        [],
    )
    .unwrap();
    raw.execute(
        "INSERT INTO user_auth_providers (user_id, provider, provider_user_id) VALUES (1, 'wechat', 'o1')",
        [],
    )
    .unwrap();
    raw.execute("DELETE FROM users WHERE id = 1", []).unwrap();
    let left: i64 = raw
        .query_row("SELECT count(*) FROM user_auth_providers", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test]
async fn blacklist_revokes_idempotently_and_prunes_expired_rows() {
    let (_db, store, raw) = open();
    assert!(store.revoke("jti-old", 100).await.unwrap(), "first listing");
    assert!(
        !store.revoke("jti-old", 100).await.unwrap(),
        "listed already"
    );
    store.revoke("jti-new", 200).await.unwrap();
    assert!(store.is_revoked("jti-old").await.unwrap());
    assert!(!store.is_revoked("jti-other").await.unwrap());
    assert_eq!(store.prune_blacklist(150).await.unwrap(), 1);
    assert!(!store.is_revoked("jti-old").await.unwrap());
    assert!(store.is_revoked("jti-new").await.unwrap());
    assert!(raw
        .execute(
            "INSERT INTO token_blacklist (token_jti, expired_at) VALUES (?1, 1)",
            [&"j".repeat(101)],
        )
        .is_err());
}

#[test]
fn pruning_uses_the_expired_at_index() {
    let (_db, _store, raw) = open();
    let plan: Vec<String> = raw
        .prepare("EXPLAIN QUERY PLAN DELETE FROM token_blacklist WHERE expired_at <= 5")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter()
            .any(|step| step.contains("token_blacklist_expired_at")),
        "{plan:?}"
    );
}

#[tokio::test]
async fn provider_sign_in_creates_once_then_updates_the_binding() {
    let (_db, store, raw) = open();
    let first = store
        .sign_in_with_provider(identity("o-1"), "github_octo".into())
        .await
        .unwrap();
    assert_eq!(first.username, "github_octo");
    let mut changed = identity("o-1");
    changed.nickname = Some("Renamed".into());
    let again = store
        .sign_in_with_provider(changed, "github_other".into())
        .await
        .unwrap();
    assert_eq!(again, first);
    let (count, nickname): (i64, String) = raw
        .query_row(
            "SELECT count(*), max(nickname) FROM user_auth_providers",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((count, nickname.as_str()), (1, "Renamed"));
    let (_, hash) = store.credentials("github_octo").await.unwrap().unwrap();
    assert_eq!(hash, NO_PASSWORD);
}

#[tokio::test]
async fn provider_sign_in_picks_a_free_username() {
    let (_db, store, _raw) = open();
    store
        .create_user(new_user("github_octo", None))
        .await
        .unwrap();
    let user = store
        .sign_in_with_provider(identity("o-2"), "github_octo".into())
        .await
        .unwrap();
    assert_eq!(user.username, "github_octo_2");
    // Taken in another case counts as taken.
    store
        .create_user(new_user("GitHub_Cat", None))
        .await
        .unwrap();
    let user = store
        .sign_in_with_provider(identity("o-4"), "github_cat".into())
        .await
        .unwrap();
    assert_eq!(user.username, "github_cat_2");
    let long = "g".repeat(60);
    let user = store
        .sign_in_with_provider(identity("o-3"), long)
        .await
        .unwrap();
    assert_eq!(user.username, "g".repeat(50));
}

#[test]
fn store_error_exposes_the_sqlite_error_as_source() {
    use std::error::Error as _;
    let sqlite = || rusqlite::Error::QueryReturnedNoRows;
    let cases = [
        (
            StoreError::Open {
                path: PathBuf::from("auth.db"),
                source: sqlite(),
            },
            Some(sqlite().to_string()),
        ),
        (StoreError::Sqlite(sqlite()), Some(sqlite().to_string())),
        (StoreError::UsernameTaken, None),
        (StoreError::EmailTaken, None),
        (
            StoreError::CaseConflict {
                path: PathBuf::from("auth.db"),
                column: "username",
                groups: vec!["Ann, ann".into()],
            },
            None,
        ),
        (StoreError::Task("panicked".into()), None),
    ];
    for (err, want) in cases {
        if want.is_some() {
            assert!(err.source().unwrap().is::<rusqlite::Error>(), "{err}");
        }
        assert_eq!(err.source().map(|s| s.to_string()), want, "{err}");
    }
}

#[test]
fn store_open_failure_keeps_what_sqlite_said_as_source() {
    use std::error::Error as _;
    let err = Store::open(Path::new("/nonexistent-dir/x/auth.db"))
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.source().unwrap().is::<rusqlite::Error>());
}

/// A registration is answered only once its row is committed. SQLite checks
/// a deferred foreign key at `COMMIT`, after `INSERT … RETURNING` has already
/// handed back the row: a trigger that breaks one makes every commit fail,
/// the way a full disk does.
#[tokio::test]
async fn a_create_whose_commit_fails_is_an_error_and_nothing_is_stored() {
    let (_db, store, raw) = open();
    raw.execute_batch(
        "CREATE TABLE guard_parent (id INTEGER PRIMARY KEY);
         CREATE TABLE guard_child (parent INTEGER REFERENCES guard_parent (id)
             DEFERRABLE INITIALLY DEFERRED);
         CREATE TRIGGER guard_every_user AFTER INSERT ON users
         BEGIN INSERT INTO guard_child VALUES (-1); END;",
    )
    .unwrap();
    let err = store
        .create_user(new_user("ann", None))
        .await
        .expect_err("a failed commit must not be a created user");
    assert!(err.to_string().contains("FOREIGN KEY"), "{err}");
    let rows: i64 = raw
        .query_row("SELECT count(*) FROM users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);

    // Once commits go through again, the next user is created and stored.
    raw.execute_batch("DROP TRIGGER guard_every_user").unwrap();
    let user = store.create_user(new_user("ann", None)).await.unwrap();
    assert_eq!(store.user_by_id(user.id).await.unwrap(), Some(user));
}

#[tokio::test]
async fn every_account_gets_its_own_random_token_key() {
    let (_db, store, _raw) = open();
    let a = store.create_user(new_user("ann", None)).await.unwrap();
    let b = store.create_user(new_user("bob", None)).await.unwrap();
    assert_eq!(a.token_key.len(), 32, "{a:?}");
    assert!(a.token_key.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(a.token_key, b.token_key);
    let (found, _hash) = store.credentials("ann").await.unwrap().unwrap();
    assert_eq!(found.token_key, a.token_key);
}

/// A database made before token keys gets the column on open, and each
/// existing account a distinct key.
#[tokio::test]
async fn a_database_without_token_keys_gets_one_per_account_on_open() {
    let db = TempDb::new("old-schema");
    {
        let old_schema = SCHEMA.replace(
            ",\n    -- Carried in every token of the account (claim `ukey`): a token whose key\n    -- is not its account's is refused. Written by every INSERT (store/mod.rs).\n    token_key     TEXT    NOT NULL DEFAULT (lower(hex(randomblob(16))))",
            "",
        );
        assert!(!old_schema.contains("token_key"));
        let raw = Connection::open(&db.path).unwrap();
        raw.execute_batch(&old_schema).unwrap();
        raw.execute_batch(
            "INSERT INTO users (username, password_hash) VALUES ('ann', 'h'), ('bob', 'h')",
        )
        .unwrap();
    }
    let store = Store::open(&db.path).unwrap();
    let users = store.list_users().await.unwrap();
    assert_eq!(users.len(), 2);
    assert!(users.iter().all(|u| u.token_key.len() == 32), "{users:?}");
    assert_ne!(users[0].token_key, users[1].token_key);
    drop(store);
    // Opening again changes nothing.
    let again = Store::open(&db.path).unwrap().list_users().await.unwrap();
    assert_eq!(again, users);
}
