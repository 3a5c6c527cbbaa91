//! The use cases' rules, called directly: no HTTP, a temporary SQLite file,
//! a manual clock and a cheap bcrypt cost.

use super::*;
use crate::services::token_auth::clock::ManualClock;
use crate::services::token_auth::service::Settings;
use crate::services::token_auth::store::tests::TempDb;

const SECRET: &str = "unit-test secret, at least 32 bytes long";

struct Fixture {
    service: AuthService,
    clock: Arc<ManualClock>,
    _db: TempDb,
}

fn service_with(customize: impl FnOnce(&mut Settings)) -> Fixture {
    let db = TempDb::new("biz");
    let clock = Arc::new(ManualClock::new(1_700_000_000));
    let mut settings = Settings::new(SECRET, db.path.clone());
    settings.bcrypt_cost = 4;
    settings.clock = clock.clone();
    customize(&mut settings);
    let service = AuthService::open(settings).expect("service opens");
    Fixture {
        service,
        clock,
        _db: db,
    }
}

fn service() -> Fixture {
    service_with(|_| {})
}

fn ip(last: u8) -> IpAddr {
    IpAddr::from([192, 0, 2, last])
}

fn creds(username: &str, password: &str) -> Credentials {
    Credentials {
        username: username.into(),
        password: password.into(),
        captcha_token: None,
    }
}

fn registration(username: &str, password: &str) -> Registration {
    Registration {
        username: username.into(),
        password: password.into(),
        email: None,
    }
}

const PASSWORD: &str = "correct horse 1";

async fn register_ann(s: &AuthService) -> TokenPair {
    s.register(ip(1), registration("ann", PASSWORD))
        .await
        .expect("ann registers")
}

#[tokio::test]
async fn login_with_wrong_password_is_invalid_credentials_and_counts_a_failure() {
    let f = service();
    register_ann(&f.service).await;
    let answers: Vec<bool> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            match f.service.login(ip(2), creds("ann", "wrong")).await {
                Err(AuthError::BadCredentials { captcha_required }) => v.push(captcha_required),
                other => panic!("expected bad credentials, got {other:?}"),
            }
        }
        v
    };
    // Each failure was counted: the third calls for a captcha.
    assert_eq!(answers, [false, false, true]);
    assert!(f.service.login(ip(2), creds("ann", PASSWORD)).await.is_ok());
}

#[tokio::test]
async fn login_of_an_unknown_user_is_the_same_refusal_and_costs_the_same_hashing() {
    let f = service();
    register_ann(&f.service).await;
    let before = f.service.passwords().computations();
    let unknown = f.service.login(ip(2), creds("nobody", "wrong")).await;
    let wrong = f.service.login(ip(3), creds("ann", "wrong")).await;
    assert!(matches!(
        unknown,
        Err(AuthError::BadCredentials {
            captcha_required: false
        })
    ));
    assert!(matches!(
        wrong,
        Err(AuthError::BadCredentials {
            captcha_required: false
        })
    ));
    assert_eq!(f.service.passwords().computations() - before, 2);
}

#[tokio::test]
async fn sixth_login_in_a_minute_is_too_many_attempts_before_any_password_check() {
    let f = service();
    register_ann(&f.service).await;
    for _ in 0..5 {
        let _ = f.service.login(ip(2), creds("ann", "wrong")).await;
    }
    let hashed = f.service.passwords().computations();
    let refused = f.service.login(ip(2), creds("ann", PASSWORD)).await;
    assert!(
        matches!(refused, Err(AuthError::TooManyAttempts { retry_after: 60 })),
        "{refused:?}"
    );
    assert_eq!(f.service.passwords().computations(), hashed, "no bcrypt");
}

#[tokio::test]
async fn tenth_failure_locks_the_account_even_for_the_right_password() {
    let f = service();
    register_ann(&f.service).await;
    for n in 0..10u8 {
        // A new address and a fresh window each time: only the lock counts.
        f.clock.advance(61);
        let _ = f.service.login(ip(10 + n), creds("ann", "wrong")).await;
    }
    let refused = f.service.login(ip(99), creds("ann", PASSWORD)).await;
    assert!(
        matches!(refused, Err(AuthError::Locked { retry_after: 1800 })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_taken_username_is_username_taken_whatever_else_is_wrong() {
    let f = service();
    register_ann(&f.service).await;
    let again = f.service.register(ip(2), registration("ANN", "x")).await;
    assert!(matches!(again, Err(AuthError::UsernameTaken)), "{again:?}");
    let weak = f.service.register(ip(2), registration("bob", "x")).await;
    assert!(matches!(weak, Err(AuthError::Invalid(_))), "{weak:?}");
}

#[tokio::test]
async fn registration_past_the_client_limit_is_refused_before_validation_and_bcrypt() {
    let f = service_with(|s| s.register_limits.attempts = 1);
    register_ann(&f.service).await;
    let hashed = f.service.passwords().computations();
    // An invalid name: the limit answers first.
    let refused = f.service.register(ip(1), registration("", "")).await;
    assert!(
        matches!(
            refused,
            Err(AuthError::TooManyRegistrations { retry_after: 60 })
        ),
        "{refused:?}"
    );
    assert_eq!(f.service.passwords().computations(), hashed);
    assert!(f
        .service
        .register(ip(2), registration("bob", PASSWORD))
        .await
        .is_ok());
}

#[tokio::test]
async fn a_refresh_token_works_once_and_a_second_use_revokes_its_family() {
    let f = service();
    let pair = register_ann(&f.service).await;
    let next = f
        .service
        .refresh(&pair.refresh_token)
        .await
        .expect("first use");
    let again = f.service.refresh(&pair.refresh_token).await;
    assert!(matches!(again, Err(AuthError::TokenRevoked)), "{again:?}");
    // The pair issued by the first use belongs to the revoked family.
    let family = f.service.refresh(&next.refresh_token).await;
    assert!(matches!(family, Err(AuthError::TokenRevoked)), "{family:?}");
    let access = f.service.authenticate(&next.access_token).await;
    assert!(matches!(access, Err(AuthError::TokenRevoked)), "{access:?}");
}

#[tokio::test]
async fn an_access_token_does_not_refresh() {
    let f = service();
    let pair = register_ann(&f.service).await;
    let refused = f.service.refresh(&pair.access_token).await;
    assert!(
        matches!(refused, Err(AuthError::TokenInvalid { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn logout_revokes_the_access_token_and_the_refresh_token_of_its_sign_in() {
    let f = service();
    let pair = register_ann(&f.service).await;
    let (claims, user) = f.service.authenticate(&pair.access_token).await.unwrap();
    assert_eq!(user.username, "ann");
    f.service.logout(&claims, None).await.unwrap();
    let access = f.service.authenticate(&pair.access_token).await;
    assert!(matches!(access, Err(AuthError::TokenRevoked)), "{access:?}");
    let refresh = f.service.refresh(&pair.refresh_token).await;
    assert!(
        matches!(refresh, Err(AuthError::TokenRevoked)),
        "{refresh:?}"
    );
}

#[tokio::test]
async fn logout_with_another_users_refresh_token_is_invalid_and_revokes_nothing() {
    let f = service();
    let ann = register_ann(&f.service).await;
    let bob = f
        .service
        .register(ip(2), registration("bob", PASSWORD))
        .await
        .unwrap();
    let (claims, _) = f.service.authenticate(&ann.access_token).await.unwrap();
    let refused = f.service.logout(&claims, Some(&bob.refresh_token)).await;
    assert!(matches!(refused, Err(AuthError::Invalid(_))), "{refused:?}");
    assert!(f.service.authenticate(&ann.access_token).await.is_ok());
    assert!(f.service.refresh(&bob.refresh_token).await.is_ok());
}

#[tokio::test]
async fn an_access_token_past_its_hour_is_expired_not_invalid() {
    let f = service();
    let pair = register_ann(&f.service).await;
    f.clock.advance(3600);
    let refused = f.service.authenticate(&pair.access_token).await;
    assert!(
        matches!(refused, Err(AuthError::TokenExpired)),
        "{refused:?}"
    );
}

#[tokio::test]
async fn oauth_without_providers_is_an_unknown_provider() {
    let f = service();
    let refused = f.service.oauth_login("github", ip(1)).await;
    assert!(
        matches!(refused, Err(AuthError::OAuth(OAuthError::UnknownProvider))),
        "{refused:?}"
    );
    assert_eq!(f.service.oauth_clear_cookie("github"), None);
}

#[tokio::test]
async fn a_draining_service_is_not_ready() {
    let f = service();
    assert_eq!(f.service.ready().await, Ok(()));
    f.service.start_draining();
    assert!(f.service.ready().await.is_err());
}
