//! The shared implementations answer as the local ones do: the same
//! operations, in the same order, against token-auth's SQLite store and its
//! PostgreSQL store, and against the in-memory limiter / sign-in store and
//! their Redis counterparts, give the same answers, step by step. The local
//! side has the unit tests of every rule (window, refusals not counted,
//! captcha, 30-minute lock, case, IPv6 /64, single use, expiry), so parity
//! carries those rules over.
//!
//! The time is a manual clock handed to both sides; the Redis scripts read
//! it from their arguments, so moving it minutes ahead is seen at once.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use handwire::services::token_auth::cluster::{postgres_store, redis_state};
use handwire::services::token_auth::config::Provider;
use handwire::services::token_auth::oauth::StateStore;
use handwire::services::token_auth::store::{
    NewUser, ProviderIdentity, Store, StoreError, NO_PASSWORD,
};
use handwire::services::token_auth::user::{Role, User};
use handwire::services::token_auth::Revocations;
use handwire::services::token_auth::{Accounts, LoginLimits};
use handwire::services::token_auth::{Clock, ManualClock};
use handwire::services::token_auth::{LimitPolicy, LoginLimiter};
use handwire::services::token_auth::{
    Pending, PendingSignIns, StateError, STATE_CAPACITY, STATE_PER_CLIENT, STATE_TTL,
};

use crate::support::servers::{available, Postgres, RedisServer};
use crate::support::token_auth::TempDb;

const TIMEOUT: Duration = Duration::from_secs(2);

/// A small deterministic generator (xorshift), so a failure replays.
struct Steps(u64);

impl Steps {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

#[tokio::test]
async fn the_redis_limiter_answers_as_the_memory_limiter_does_step_by_step() {
    if !available("the_redis_limiter_answers_as_the_memory_limiter_does_step_by_step") {
        return;
    }
    let redis = RedisServer::start();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let policy = LimitPolicy::default();
    let memory = LoginLimiter::new(policy, clock.clone());
    let (shared, _) = redis_state(&redis.url(), policy, clock.clone(), TIMEOUT)
        .await
        .expect("redis");
    let ips: Vec<IpAddr> = [
        "10.0.0.1",
        "10.0.0.2",
        "2001:db8::1",
        "2001:db8::2",
        "2001:db9::1",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let users = ["ann", "ANN", "bob", "cat"];
    let mut steps = Steps(0x9e37_79b9_7f4a_7c15);
    let mut seen = std::collections::BTreeSet::new();
    for step in 0..3_000 {
        let user = users[steps.next(users.len() as u64) as usize];
        match steps.next(10) {
            0..=4 => {
                let ip = ips[steps.next(ips.len() as u64) as usize];
                let a = LoginLimits::admit(&memory, ip, user).await.unwrap();
                let b = shared.admit(ip, user).await.unwrap();
                assert_eq!(a, b, "step {step}: admit {ip} {user}");
                seen.insert(
                    format!("{a:?}")
                        .split([' ', '{'])
                        .next()
                        .unwrap()
                        .to_string(),
                );
            }
            5..=7 => {
                let a = LoginLimits::record_failure(&memory, user).await.unwrap();
                let b = shared.record_failure(user).await.unwrap();
                assert_eq!(a, b, "step {step}: failure {user}");
                if a.locked {
                    seen.insert("lock".to_string());
                }
            }
            8 => {
                LoginLimits::record_success(&memory, user).await.unwrap();
                shared.record_success(user).await.unwrap();
            }
            // Mostly seconds, now and then the rest of a lock.
            _ => clock.advance(if steps.next(20) == 0 {
                1_800
            } else {
                steps.next(30)
            }),
        }
    }
    // The walk went through every kind of answer, so parity covers them all.
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["Allowed", "Locked", "TooManyAttempts", "lock"],
    );
}

#[tokio::test]
async fn redis_sign_ins_answer_as_the_memory_ones_do_single_use_ten_minutes_per_client_cap() {
    if !available(
        "redis_sign_ins_answer_as_the_memory_ones_do_single_use_ten_minutes_per_client_cap",
    ) {
        return;
    }
    let redis = RedisServer::start();
    let clock = Arc::new(ManualClock::new(2_000_000));
    let memory = StateStore::new(clock.clone(), STATE_CAPACITY, STATE_PER_CLIENT);
    let (_, shared) = redis_state(&redis.url(), LimitPolicy::default(), clock.clone(), TIMEOUT)
        .await
        .expect("redis");
    let clients: Vec<IpAddr> = ["10.0.0.1", "2001:db8::1", "2001:db8::2", "10.0.0.2"]
        .iter()
        .map(|ip| ip.parse().unwrap())
        .collect();
    let mut steps = Steps(42);
    let mut issued: Vec<String> = vec!["never-issued".into()];
    let (mut found, mut missing, mut capped) = (0, 0, 0);
    for step in 0..1_000 {
        // Now and then one client floods, so its cap is reached on the way
        // and the refusals (with their retry times) are compared too.
        let burst = if steps.next(100) == 0 {
            STATE_PER_CLIENT + 20
        } else {
            1
        };
        match steps.next(6) {
            0 | 1 => {
                let client = clients[steps.next(clients.len() as u64) as usize];
                for n in 0..burst {
                    let state = format!("state-{step}-{n}");
                    let pending =
                        Pending::new(Provider::Github, format!("verifier-{step}"), clock.now());
                    let a = PendingSignIns::insert(&memory, state.clone(), pending.clone(), client)
                        .await;
                    let b = shared.insert(state.clone(), pending, client).await;
                    assert_eq!(a, b, "step {step}: insert {state} from {client}");
                    match a {
                        Ok(()) => issued.push(state),
                        Err(StateError::ClientFull { .. }) => capped += 1,
                        Err(e) => panic!("step {step}: {e}"),
                    }
                }
            }
            2..=4 => {
                // Mostly recent states, so fresh ones are taken too.
                let recent = issued.len().min(200) as u64;
                let state = &issued[issued.len() - 1 - steps.next(recent) as usize];
                let a = PendingSignIns::take(&memory, state).await.unwrap();
                let b = shared.take(state).await.unwrap();
                assert_eq!(a, b, "step {step}: take {state}");
                if a.is_some() {
                    found += 1;
                } else {
                    missing += 1;
                }
            }
            _ => clock.advance(steps.next(STATE_TTL / 2)),
        }
    }
    assert!(
        found > 50 && missing > 50 && capped > 20,
        "{found} taken, {missing} missing, {capped} refused for their client"
    );
}

fn new_user(name: &str, email: Option<&str>, role: Role) -> NewUser {
    NewUser {
        username: name.into(),
        password_hash: format!("$2b$04$hash-of-{name}"),
        email: email.map(str::to_string),
        role,
    }
}

fn identity(openid: &str, nickname: &str) -> ProviderIdentity {
    ProviderIdentity {
        provider: "github".into(),
        provider_user_id: openid.into(),
        nickname: Some(nickname.into()),
        avatar_url: None,
        access_token: Some(format!("sealed-{openid}")),
        refresh_token: None,
        expires_at: Some(3_000),
    }
}

/// What matters of a user for parity (ids and times differ by store).
fn shape(user: &User) -> (String, Option<String>, Role) {
    (user.username.clone(), user.email.clone(), user.role)
}

fn outcome(r: &Result<User, StoreError>) -> Result<(String, Option<String>, Role), String> {
    r.as_ref().map(shape).map_err(|e| e.to_string())
}

#[tokio::test]
async fn the_postgres_store_answers_as_the_sqlite_store_does() {
    if !available("the_postgres_store_answers_as_the_sqlite_store_does") {
        return;
    }
    let pg = Postgres::start();
    let db = TempDb::new("parity");
    let sqlite = Store::open(&db.path).expect("sqlite");
    let shared = postgres_store(&pg.url(), TIMEOUT).await.expect("postgres");
    let sides: [&dyn Accounts; 2] = [&sqlite, &shared];

    // Users: uniqueness without regard to case, stored as typed, limits.
    let creations = [
        new_user("Ann", Some("Ann@Example.com"), Role::User),
        new_user("ann", None, Role::User),
        new_user("bob", Some("ann@example.COM"), Role::Vip),
        new_user("bob", Some("bob@example.com"), Role::Admin),
        new_user("cat", Some("cat@example.com"), Role::Admin),
        new_user(&"x".repeat(51), None, Role::User),
        new_user("dan", Some("d@"), Role::User),
    ];
    for new in creations {
        let [a, b] = [
            sides[0].create_user(new.clone()).await,
            sides[1].create_user(new.clone()).await,
        ];
        match (&a, &b) {
            // Constraint violations: both refuse (the messages are each database's own).
            (Err(StoreError::Sqlite(_)), Err(StoreError::Backend(_))) => {}
            _ => assert_eq!(outcome(&a), outcome(&b), "create {:?}", new.username),
        }
    }
    for name in ["ANN", "ann", "Bob", "nobody"] {
        let a = sqlite.credentials(name).await.unwrap();
        let b = Accounts::credentials(&shared, name).await.unwrap();
        let view = |f: Option<(User, String)>| f.map(|(u, h)| (shape(&u), h));
        assert_eq!(view(a), view(b), "credentials {name}");
    }
    let listed = |users: Vec<User>| users.iter().map(shape).collect::<Vec<_>>();
    assert_eq!(
        listed(sqlite.list_users().await.unwrap()),
        listed(Accounts::list_users(&shared).await.unwrap())
    );

    // Provider sign-in: created once, then found; a taken name gets a suffix.
    for (openid, nickname) in [
        ("o-1", "cat"),
        ("o-1", "cat"),
        ("o-2", "cat"),
        ("o-3", "Ann"),
    ] {
        let a = sqlite
            .sign_in_with_provider(identity(openid, nickname), format!("github_{nickname}"))
            .await;
        let b = shared
            .sign_in_with_provider(identity(openid, nickname), format!("github_{nickname}"))
            .await;
        assert_eq!(outcome(&a), outcome(&b), "sign-in {openid}");
    }
    let hash = |u: Option<(User, String)>| u.map(|(_, h)| h);
    assert_eq!(
        hash(Accounts::credentials(&shared, "github_cat").await.unwrap()).as_deref(),
        Some(NO_PASSWORD)
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM token_auth.user_auth_providers"),
        "3"
    );

    // Blacklist: idempotent, pruned by expiry.
    let revs: [&dyn Revocations; 2] = [&sqlite, &shared];
    for side in revs {
        side.revoke("j-1", 100).await.unwrap();
        side.revoke("j-1", 100).await.unwrap();
        side.revoke("j-2", 200).await.unwrap();
        assert!(side.is_revoked("j-1").await.unwrap());
        assert!(!side.is_revoked("j-3").await.unwrap());
        assert_eq!(side.prune(150).await.unwrap(), 1);
        assert!(!side.is_revoked("j-1").await.unwrap());
        assert!(side.is_revoked("j-2").await.unwrap());
    }
}

#[tokio::test]
async fn the_postgres_schema_refuses_what_the_sqlite_schema_refuses() {
    if !available("the_postgres_schema_refuses_what_the_sqlite_schema_refuses") {
        return;
    }
    let pg = Postgres::start();
    let _store = postgres_store(&pg.url(), TIMEOUT).await.expect("postgres");
    pg.psql("INSERT INTO token_auth.users (username, password_hash) VALUES ('ok', 'h')");
    for sql in [
        "INSERT INTO token_auth.users (username, password_hash) VALUES ('', 'h')",
        "INSERT INTO token_auth.users (username, password_hash, role) VALUES ('r', 'h', 'root')",
        "INSERT INTO token_auth.users (username, password_hash) VALUES ('OK', 'h')",
        "INSERT INTO token_auth.user_auth_providers (user_id, provider, provider_user_id) \
         VALUES (1, 'myspace', 'x')",
        "INSERT INTO token_auth.user_auth_providers (user_id, provider, provider_user_id) \
         VALUES (999, 'github', 'x')",
        "INSERT INTO token_auth.token_blacklist (token_jti, expired_at) VALUES ('', 1)",
    ] {
        assert!(pg.try_psql(sql).is_err(), "PostgreSQL accepted: {sql}");
    }
    // Deleting a user deletes its bindings.
    pg.psql(
        "INSERT INTO token_auth.user_auth_providers (user_id, provider, provider_user_id) \
         SELECT id, 'github', 'b-1' FROM token_auth.users WHERE username = 'ok'",
    );
    pg.psql("DELETE FROM token_auth.users WHERE username = 'ok'");
    assert_eq!(
        pg.psql("SELECT count(*) FROM token_auth.user_auth_providers"),
        "0"
    );
    // Applying the migrations again (a second instance) changes nothing.
    let _again = postgres_store(&pg.url(), TIMEOUT).await.expect("again");
    assert_eq!(
        pg.psql("SELECT string_agg(version::text, ',') FROM token_auth.schema_migrations"),
        "1,2"
    );
}
