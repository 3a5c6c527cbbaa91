//! Tests of the data layer: the repositories, opening, and group commit
//! (batching, per-row and per-batch failures, a file that goes away).

use std::path::{Path, PathBuf};

use super::*;

async fn users() -> UserStore {
    UserStore::new(Data::open_async(":memory:".into()).await.unwrap())
}

#[tokio::test]
async fn create_sets_age_one_and_increasing_ids() {
    let store = users().await;
    let a = store.create("ann".into(), "pw1".into()).await.unwrap();
    let b = store.create("bob".into(), "pw2".into()).await.unwrap();
    assert_eq!((a.age, b.age), (1, 1));
    assert!(b.id > a.id);
    assert_eq!(a.username, "ann");
    assert_eq!(a.password, "pw1");
}

#[tokio::test]
async fn duplicate_username_is_already_exists() {
    let store = users().await;
    store.create("ann".into(), "pw".into()).await.unwrap();
    let err = store
        .create("ann".into(), "other".into())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "USER_ALREADY_EXISTS");
    assert!(matches!(err, biz::Error::AlreadyExists { .. }));
}

#[tokio::test]
async fn the_store_itself_refuses_a_username_differing_only_in_ascii_case() {
    // Below biz, so without its checks: the unique index on lower(username)
    // decides, which also holds when two spellings race.
    let store = users().await;
    store.create("Admin".into(), "pw".into()).await.unwrap();
    for variant in ["admin", "ADMIN", "aDmIn"] {
        let err = store.create(variant.into(), "pw".into()).await.unwrap_err();
        assert_eq!(err, biz::Error::username_taken(variant));
    }
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn list_returns_users_in_id_order() {
    let store = users().await;
    for name in ["zed", "amy", "max"] {
        store
            .create(name.into(), format!("{name}-pw"))
            .await
            .unwrap();
    }
    let listed = store.list().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names, ["zed", "amy", "max"]);
    assert!(listed.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(listed[1].password, "amy-pw");
}

#[tokio::test]
async fn delete_by_id_removes_only_that_user() {
    let store = users().await;
    let a = store.create("ann".into(), "pw".into()).await.unwrap();
    let b = store.create("bob".into(), "pw".into()).await.unwrap();
    assert!(store.delete(a.id).await.unwrap());
    assert!(
        !store.delete(a.id).await.unwrap(),
        "second delete finds nothing"
    );
    let left = store.list().await.unwrap();
    assert_eq!(left, vec![b]);
    // The name is free again.
    store.create("ann".into(), "pw".into()).await.unwrap();
}

#[tokio::test]
async fn sql_metacharacters_are_stored_verbatim() {
    let store = users().await;
    let tricky = "x'); DROP TABLE users; --";
    store.create(tricky.into(), "p'w\"".into()).await.unwrap();
    let listed = store.list().await.unwrap();
    assert_eq!(listed[0].username, tricky);
    assert_eq!(listed[0].password, "p'w\"");
}

#[tokio::test]
async fn file_database_is_created_in_wal_mode_and_persists() {
    let dir = std::env::temp_dir().join(format!("handwire-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("greeter.db");
    let _ = std::fs::remove_file(&path);
    {
        let store = UserStore::new(Data::open_async(path.display().to_string()).await.unwrap());
        store.create("ann".into(), "pw".into()).await.unwrap();
    }
    let mode: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let store = UserStore::new(Data::open_async(path.display().to_string()).await.unwrap());
    assert_eq!(store.list().await.unwrap()[0].username, "ann");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn unopenable_source_names_the_key_and_path() {
    let err = Data::open_async("/nonexistent-dir/x/greeter.db".into())
        .await
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "data.database.source: cannot open SQLite database \"/nonexistent-dir/x/greeter.db\""
        ),
        "{text}"
    );
}

#[tokio::test]
async fn greetings_are_stored_per_call() {
    let store = GreeterStore::new(Data::open_async(":memory:".into()).await.unwrap());
    store.save_greeting("ann".into()).await.unwrap();
    store.save_greeting("ann".into()).await.unwrap();
    assert_eq!(store.count_greetings("ann").await.unwrap(), 2);
    assert_eq!(store.count_greetings("bob").await.unwrap(), 0);
}

#[tokio::test]
async fn data_error_exposes_the_sqlite_error_as_source() {
    let err = Data::open_async("/nonexistent-dir/x/greeter.db".into())
        .await
        .err()
        .unwrap();
    let source = std::error::Error::source(&err).expect("an open failure has a source");
    assert!(source.is::<rusqlite::Error>(), "{source:?}");
}

#[test]
fn data_error_exposes_the_wrapped_error_as_source() {
    let cases = [
        (
            DataError::Open {
                source_name: "x.db".into(),
                error: rusqlite::Error::InvalidQuery,
            },
            Some(rusqlite::Error::InvalidQuery.to_string()),
        ),
        (
            DataError::Thread(std::io::Error::other("no threads left")),
            Some("no threads left".to_string()),
        ),
        (DataError::Closed, None),
    ];
    for (err, want) in cases {
        let got = std::error::Error::source(&err).map(|s| s.to_string());
        assert_eq!(got, want, "{err}");
    }
}

// ---- group commit -------------------------------------------------------

/// A fresh directory for one test's database file, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("handwire-data-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn db(&self) -> String {
        self.0.join("greeter.db").display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Holds the store thread inside a read until the returned sender is used
/// or dropped, running `setup` on the connection first. Returns once the
/// thread is held, so every write sent afterwards queues up behind it.
async fn hold_store_thread(
    data: &Data,
    setup: impl FnOnce(&Connection) + Send + 'static,
) -> std::sync::mpsc::Sender<()> {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (held_tx, held) = oneshot::channel::<()>();
    data.requests
        .send(Request::Read(Box::new(move |conn| {
            setup(conn);
            let _ = held_tx.send(());
            let _ = released.recv();
        })))
        .unwrap();
    held.await.unwrap();
    release
}

/// Waits until `n` writes more than `before` have been handed to the queue
/// and released to the store thread (the queue's kicker has run after them).
async fn queued(data: &Data, before: Stats, n: u64) {
    while data.stats().submitted < before.submitted + n {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    released(data).await;
}

/// Waits until everything queued is released to the store thread: a held
/// thread then takes it all at once.
async fn released(data: &Data) {
    while !data.requests.all_released() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Spawns one `save_greeting(name)` per name.
fn spawn_greetings(
    store: &Arc<GreeterStore>,
    names: impl IntoIterator<Item = String>,
) -> Vec<tokio::task::JoinHandle<Result<(), biz::Error>>> {
    names
        .into_iter()
        .map(|name| {
            let store = store.clone();
            tokio::spawn(async move { store.save_greeting(name).await })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_greetings_are_all_stored_and_answered() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let tasks = spawn_greetings(&store, (0..200).map(|_| "ann".to_string()));
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(store.count_greetings("ann").await.unwrap(), 200);
    assert_eq!(data.stats().committed_writes, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_writers_share_fewer_commits_than_writes() {
    let dir = TempDir::new("batching");
    let data = Data::open_async(dir.db()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let tasks = spawn_greetings(&store, (0..300).map(|i| format!("n{}", i % 7)));
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let stats = data.stats();
    assert_eq!(stats.committed_writes, 300, "{stats:?}");
    assert!(stats.commits < 300, "one commit per write: {stats:?}");
    // And what was answered is in the file, for another connection to see.
    let other = Connection::open(dir.db()).unwrap();
    let rows: i64 = other
        .query_row("SELECT COUNT(*) FROM greetings", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 300);
}

#[tokio::test]
async fn writes_queued_behind_a_busy_store_thread_commit_as_one_transaction() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let release = hold_store_thread(&data, |_| ()).await;
    let before = data.stats();
    let tasks = spawn_greetings(&store, (0..50).map(|i| format!("g{i}")));
    queued(&data, before, 50).await;
    release.send(()).unwrap();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let after = data.stats();
    assert_eq!(after.commits - before.commits, 1, "{after:?}");
    assert_eq!(after.committed_writes - before.committed_writes, 50);
    assert_eq!(store.count_greetings("g49").await.unwrap(), 1);
}

#[tokio::test]
async fn duplicate_username_in_one_batch_is_already_exists_for_that_caller_only() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(UserStore::new(data.clone()));
    let release = hold_store_thread(&data, |_| ()).await;
    let before = data.stats();
    let requests = [
        ("ann", "pw1"),
        ("bob", "pw2"),
        ("ann", "pw3"),
        ("cid", "pw4"),
    ];
    let tasks: Vec<_> = requests
        .iter()
        .map(|&(u, p)| {
            let store = store.clone();
            tokio::spawn(async move { store.create(u.into(), p.into()).await })
        })
        .collect();
    queued(&data, before, 4).await;
    release.send(()).unwrap();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    assert_eq!(data.stats().commits - before.commits, 1, "one batch");
    let refused: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    assert_eq!(refused[0].reason(), "USER_ALREADY_EXISTS");
    // The first ann in the queue won; her password is the stored one.
    let winner = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .find(|u| u.username == "ann")
        .unwrap();
    let listed = store.list().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for name in ["ann", "bob", "cid"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let stored_ann = listed.iter().find(|u| u.username == "ann").unwrap();
    assert_eq!(stored_ann, winner);
}

#[tokio::test]
async fn failed_batch_fails_exactly_its_callers_and_the_next_batch_commits() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    // query_only makes SQLite refuse the batch's INSERTs with SQLITE_READONLY.
    let release = hold_store_thread(&data, |c| {
        c.pragma_update(None, "query_only", true).unwrap();
    })
    .await;
    let before = data.stats();
    let doomed = spawn_greetings(&store, ["a", "b", "c"].map(String::from));
    queued(&data, before, 3).await;
    // Runs after the doomed batch, before any later one: released to the
    // store thread with it, so the thread takes the three writes and this
    // read at once.
    data.requests
        .send(Request::Read(Box::new(|c| {
            c.pragma_update(None, "query_only", false).unwrap();
        })))
        .unwrap();
    released(&data).await;
    release.send(()).unwrap();
    for task in doomed {
        let err = task.await.unwrap().unwrap_err();
        assert!(matches!(err, biz::Error::Unavailable { .. }), "{err:?}");
        assert!(err.message().starts_with("store unavailable"), "{err}");
    }
    store.save_greeting("d".into()).await.unwrap();
    let after = data.stats();
    assert_eq!(after.failed_batches - before.failed_batches, 1);
    assert_eq!(after.commits - before.commits, 1);
    for (name, want) in [("a", 0), ("b", 0), ("c", 0), ("d", 1)] {
        assert_eq!(store.count_greetings(name).await.unwrap(), want, "{name}");
    }
}

#[test]
fn store_failures_map_read_only_and_disk_full_to_unavailable_and_the_rest_to_internal() {
    let sqlite = |code: i32| {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some("detail".into()))
    };
    let cases = [
        (sqlite(rusqlite::ffi::SQLITE_READONLY), "STORE_UNAVAILABLE"),
        (sqlite(rusqlite::ffi::SQLITE_CANTOPEN), "STORE_UNAVAILABLE"),
        (sqlite(rusqlite::ffi::SQLITE_BUSY), "INTERNAL"),
        (sqlite(rusqlite::ffi::SQLITE_IOERR), "STORE_UNAVAILABLE"),
        (sqlite(rusqlite::ffi::SQLITE_FULL), "STORE_UNAVAILABLE"),
        (sqlite(rusqlite::ffi::SQLITE_CORRUPT), "INTERNAL"),
        (rusqlite::Error::InvalidQuery, "INTERNAL"),
    ];
    for (error, reason) in cases {
        let got = writer::store_failure("saving a greeting", &error);
        assert_eq!(got.reason(), reason, "{error}");
        assert!(!got.message().contains("detail"), "detail stays in the log");
        if reason == "STORE_UNAVAILABLE" {
            assert!(got.message().starts_with("store unavailable"), "{got}");
        }
    }
}

/// Makes `db` name another file than the one the store opened.
fn replace_file(db: &Path) {
    let other = db.with_extension("new");
    Connection::open(&other)
        .unwrap()
        .execute_batch(SCHEMA)
        .unwrap();
    std::fs::rename(&other, db).unwrap();
}

#[tokio::test]
async fn a_removed_or_replaced_database_file_refuses_writes_as_unavailable() {
    type Change = fn(&Path);
    let cases: [(&str, Change); 3] = [
        ("directory removed", |db| {
            std::fs::remove_dir_all(db.parent().unwrap()).unwrap()
        }),
        ("file removed", |db| std::fs::remove_file(db).unwrap()),
        ("file replaced", replace_file),
    ];
    for (case, change) in cases {
        let dir = TempDir::new("gone");
        let data = Data::open_async(dir.db()).await.unwrap();
        let (greeter, users) = (
            GreeterStore::new(data.clone()),
            UserStore::new(data.clone()),
        );
        greeter.save_greeting("before".into()).await.unwrap();
        change(Path::new(&dir.db()));
        // The batch after the change, and every one after it, is refused.
        let first = greeter.save_greeting("after".into()).await.unwrap_err();
        let second = users.create("ann".into(), "pw".into()).await.unwrap_err();
        for err in [first, second] {
            assert!(
                matches!(err, biz::Error::Unavailable { .. }),
                "{case}: {err:?}"
            );
            assert!(
                err.message().starts_with("store unavailable"),
                "{case}: {err}"
            );
            assert_eq!(err.reason(), "STORE_UNAVAILABLE");
        }
        let stats = data.stats();
        assert_eq!((stats.commits, stats.failed_batches), (1, 2), "{case}");
    }
}

#[tokio::test]
async fn memory_database_has_no_file_to_check_and_keeps_writing() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = GreeterStore::new(data.clone());
    for _ in 0..3 {
        store.save_greeting("m".into()).await.unwrap();
    }
    assert_eq!(data.stats().failed_batches, 0);
    assert_eq!(store.count_greetings("m").await.unwrap(), 3);
}

#[tokio::test]
async fn file_database_is_opened_with_synchronous_full() {
    let dir = TempDir::new("sync");
    let data = Data::open_async(dir.db()).await.unwrap();
    // PRAGMA synchronous is per connection: ask the store's own.
    let level: i64 = data
        .read("reading synchronous", |c| {
            c.query_row("PRAGMA synchronous", [], |r| r.get(0))
        })
        .await
        .unwrap();
    assert_eq!(level, 2, "2 is FULL");
}

/// A caller that stops waiting before its batch begins (its deadline
/// passed) is never committed: failure answered means not stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_caller_gave_up_before_its_batch_is_never_committed() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let release = hold_store_thread(&data, |_| ()).await;
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        store.save_greeting("late".into()),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the write cannot finish while the thread is held"
    );
    // One that keeps waiting is stored in the same batch.
    let patient = spawn_greetings(&store, ["patient".to_string()]);
    queued(&data, data.stats(), 0).await;
    release.send(()).unwrap();
    for task in patient {
        task.await.unwrap().unwrap();
    }
    assert_eq!(store.count_greetings("late").await.unwrap(), 0);
    assert_eq!(store.count_greetings("patient").await.unwrap(), 1);
    assert_eq!(data.stats().cancelled, 1);
}

/// The queue is bounded by bytes and by operations; past either bound a
/// write is refused at once as busy (not stored), and the queue drains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_write_queue_refuses_at_once_by_bytes_and_by_count() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let release = hold_store_thread(&data, |_| ()).await;
    let before = data.stats();
    let mib = "m".repeat(1 << 20);
    let big = spawn_greetings(&store, (0..8).map(|i| format!("{i}{}", &mib[1..])));
    queued(&data, before, 8).await;
    let refused = store.save_greeting(mib.clone()).await.unwrap_err();
    assert!(matches!(refused, biz::Error::Busy { .. }), "{refused:?}");
    assert_eq!(refused.reason(), "STORE_BUSY");
    release.send(()).unwrap();
    for task in big {
        task.await.unwrap().unwrap();
    }
    assert_eq!(data.stats().queued_bytes, 0);

    let release = hold_store_thread(&data, |_| ()).await;
    let before = data.stats();
    let small = spawn_greetings(&store, (0..writer::MAX_QUEUED_OPS).map(|_| "s".to_string()));
    queued(&data, before, writer::MAX_QUEUED_OPS as u64).await;
    let refused = store.save_greeting("one more".into()).await.unwrap_err();
    assert!(matches!(refused, biz::Error::Busy { .. }), "{refused:?}");
    release.send(()).unwrap();
    for task in small {
        task.await.unwrap().unwrap();
    }
    let stats = data.stats();
    assert_eq!((stats.queued_ops, stats.refused_busy), (0, 2), "{stats:?}");
    assert_eq!(store.count_greetings("one more").await.unwrap(), 0);
    assert_eq!(store.count_greetings(&mib).await.unwrap(), 0);
}

#[tokio::test]
async fn a_database_holding_names_differing_only_in_case_is_refused_naming_the_index() {
    // Written before usernames were unique without regard to case.
    let dir = TempDir::new("case");
    let conn = Connection::open(dir.db()).unwrap();
    conn.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, \
         username TEXT NOT NULL UNIQUE, password TEXT NOT NULL, age INTEGER NOT NULL); \
         INSERT INTO users (username, password, age) VALUES ('Ann', 'a', 1), ('ann', 'b', 1);",
    )
    .unwrap();
    drop(conn);
    let err = Data::open_async(dir.db()).await.err().unwrap().to_string();
    assert!(
        err.starts_with("data.database.source: cannot open SQLite database"),
        "{err}"
    );
    assert!(err.contains("users_username_lower"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_newest_greetings_stay_and_a_batch_shares_one_created_at() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let before = data.stats();
    let release = hold_store_thread(&data, |_| {}).await;
    // More than one transaction's worth, queued while the thread is held.
    let n = writer::MAX_BATCH + 100;
    let tasks = spawn_greetings(&store, (0..n).map(|i| format!("g{i}")));
    queued(&data, before, n as u64).await;
    drop(release);
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(data.stats().commits - before.commits, 2);
    let (rows, oldest, newest, stamps): (i64, i64, i64, Vec<String>) = data
        .read("checking greetings", |c| {
            let (rows, oldest, newest) = c.query_row(
                "SELECT COUNT(*), MIN(id), MAX(id) FROM greetings",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let mut stmt = c.prepare("SELECT DISTINCT created_at FROM greetings ORDER BY 1")?;
            let stamps = stmt
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            Ok((rows, oldest, newest, stamps))
        })
        .await
        .unwrap();
    assert_eq!(rows, biz::GREETINGS_KEPT);
    assert_eq!(newest, n as i64);
    assert_eq!(oldest, n as i64 - biz::GREETINGS_KEPT + 1);
    // Two transactions: at most two commit times, each in the schema's
    // format (what strftime('%Y-%m-%dT%H:%M:%fZ') writes for a default).
    assert!((1..=2).contains(&stamps.len()), "{stamps:?}");
    for stamp in &stamps {
        let b = stamp.as_bytes();
        assert_eq!(b.len(), 24, "{stamp}");
        assert_eq!(
            (b[4], b[10], b[19], b[23]),
            (b'-', b'T', b'.', b'Z'),
            "{stamp}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greeting_refused_inside_a_many_row_insert_fails_alone_and_the_rest_are_stored() {
    let data = Data::open_async(":memory:".into()).await.unwrap();
    let store = Arc::new(GreeterStore::new(data.clone()));
    let before = data.stats();
    // A row the database refuses, as a constraint would.
    let release = hold_store_thread(&data, |c| {
        c.execute_batch(
            "CREATE TRIGGER refuse_bad BEFORE INSERT ON greetings WHEN NEW.name = 'bad' \
             BEGIN SELECT RAISE(ABORT, 'refused'); END;",
        )
        .unwrap()
    })
    .await;
    // 21 greetings in one batch: a 16-row, a 4-row and a one-row insert,
    // with two refused rows wherever they land.
    let names: Vec<String> = (0..21)
        .map(|i| match i {
            5 | 18 => "bad".to_string(),
            i => format!("g{i}"),
        })
        .collect();
    let tasks = spawn_greetings(&store, names.clone());
    queued(&data, before, 21).await;
    drop(release);
    let mut refused = 0;
    for (name, task) in names.iter().zip(tasks) {
        match task.await.unwrap() {
            Ok(()) => assert_ne!(name, "bad"),
            Err(e) => {
                assert_eq!(name, "bad", "{e:?}");
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 2);
    let stats = data.stats();
    assert_eq!(stats.commits - before.commits, 1, "{stats:?}");
    assert_eq!(stats.committed_writes - before.committed_writes, 19);
    let rows: i64 = data
        .read("counting greetings", |c| {
            c.query_row("SELECT COUNT(*) FROM greetings", [], |r| r.get(0))
        })
        .await
        .unwrap();
    assert_eq!(rows, 19);
}
