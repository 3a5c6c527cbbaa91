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
