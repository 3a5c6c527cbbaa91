//! The HTTP routes of the token-auth service (spec §4.3) on the core engine.
//!
//! | Method | Path                              | Guard                 |
//! |--------|-----------------------------------|-----------------------|
//! | POST   | `/login`                          | login limits          |
//! | POST   | `/auth/token` (24 h single token) | login limits          |
//! | POST   | `/auth/register`                  | registrations per IP  |
//! | POST   | `/auth/refresh`                   | refresh token in body |
//! | POST   | `/auth/logout`                    | authenticate          |
//! | GET    | `/auth/oauth/:provider/login`     |                       |
//! | GET    | `/auth/oauth/:provider/callback`  | state (single use)    |
//! | GET    | `/api/user/profile`               | authenticate, any role|
//! | GET    | `/api/admin/users`                | authenticate, admin   |
//!
//! Handlers are plain functions taking the shared [`AuthService`]; failures
//! are `{"error": "..."}` bodies. Responses carrying tokens are marked
//! `Cache-Control: no-store` (RFC 6749 §5.1).

use crate::protocol::jwt::JwtError;
use crate::services::token_auth::limiter::Admission;
use crate::services::token_auth::middleware::{
    self, authenticate, claims, fail, internal, require_role, store_failure, ANY_ROLE,
    STORE_UNAVAILABLE, TOKEN_EXPIRED, TOKEN_INVALID, TOKEN_REVOKED,
};
use crate::services::token_auth::oauth::state::StateError;
use crate::services::token_auth::oauth::{Callback, OAuthError};
use crate::services::token_auth::passwords::Passwords;
use crate::services::token_auth::service::AuthService;
use crate::services::token_auth::store::{NewUser, StoreError};
use crate::services::token_auth::tokens::{self, TokenKind};
use crate::services::token_auth::user::{check_email, check_username, Role, User, USERNAME_MAX};
use crate::types::BoxFuture;
use crate::web::bind;
use crate::web::chain::{named, Context, Handler};
use crate::web::engine::Engine;
use crate::web::health;
use crate::web::log;
use crate::web::router::InsertError;
use http::header::{CACHE_CONTROL, RETRY_AFTER};
use http::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Largest request body the service reads; its JSON bodies are tiny.
pub const BODY_LIMIT: usize = 64 * 1024;

/// 401 for a failed password login, the same for unknown user and wrong password.
pub const BAD_CREDENTIALS: &str = "invalid username or password";
/// 429 when the attempt rate is exceeded.
pub const TOO_MANY_ATTEMPTS: &str = "too many login attempts, try again in 1 minute";
/// 429 while an account is locked.
pub const ACCOUNT_LOCKED: &str =
    "account locked after too many failed logins, try again in 30 minutes";
/// 429 when one client registers too often.
pub const TOO_MANY_REGISTRATIONS: &str = "too many registrations, try again in 1 minute";
/// 409 on registration with a taken username.
pub const USERNAME_EXISTS: &str = "username exists";
/// 400 when the OAuth callback's state does not verify.
pub const INVALID_STATE: &str = "invalid state";

type Route = for<'a> fn(Arc<AuthService>, &'a mut Context) -> BoxFuture<'a, ()>;

fn route(service: &Arc<AuthService>, name: &'static str, f: Route) -> Handler {
    let service = Arc::clone(service);
    named(name, move |c| f(Arc::clone(&service), c))
}

/// The engine with every route of the service.
pub fn engine(service: Arc<AuthService>) -> Result<Engine, InsertError> {
    let mut e = Engine::new();
    e.body_limit(BODY_LIMIT);
    let probe = Arc::clone(&service);
    health::register(
        &mut e,
        Arc::new(move || {
            let service = Arc::clone(&probe);
            Box::pin(async move { service.ready().await })
        }),
    )?;
    e.post("/login", route(&service, "login", login))?;
    e.post("/auth/token", route(&service, "simple_login", simple_login))?;
    e.post("/auth/register", route(&service, "register", register))?;
    e.post("/auth/refresh", route(&service, "refresh", refresh))?;
    e.handle(
        Method::POST,
        "/auth/logout",
        vec![
            authenticate(Arc::clone(&service)),
            route(&service, "logout", logout),
        ],
    )?;
    e.get(
        "/auth/oauth/:provider/login",
        route(&service, "oauth_login", oauth_login),
    )?;
    e.get(
        "/auth/oauth/:provider/callback",
        route(&service, "oauth_callback", oauth_callback),
    )?;

    let mut api = e.group("/api");
    api.use_middleware(authenticate(Arc::clone(&service)));
    {
        let mut user = api.group("/user");
        user.use_middleware(require_role(ANY_ROLE));
        user.get("/profile", route(&service, "profile", profile))?;
    }
    let mut admin = api.group("/admin");
    admin.use_middleware(require_role(&[Role::Admin]));
    admin.get("/users", route(&service, "list_users", list_users))?;
    Ok(e)
}

/// Parse the body as a JSON object of type `T` (the crate's one JSON
/// policy, [`bind::json_object`]: objects only, no repeated keys); on
/// failure answer 400.
fn json_body<T: DeserializeOwned>(c: &mut Context) -> Option<T> {
    match bind::json_object(c.body()) {
        Ok(value) => Some(value),
        Err(e) => {
            let message = format!("request body must be a JSON object: {e}");
            fail(c, StatusCode::BAD_REQUEST, &message);
            None
        }
    }
}

/// Write a token-bearing JSON response.
fn tokens_json(c: &mut Context, status: StatusCode, value: &impl serde::Serialize) {
    c.set_header(CACHE_CONTROL, "no-store");
    c.json(status, value);
}

fn send_pair(c: &mut Context, service: &AuthService, user: &User, status: StatusCode) {
    match service.tokens.issue_pair(user) {
        Ok(pair) => tokens_json(c, status, &pair),
        Err(e) => internal(c, "issuing tokens", &e),
    }
}

#[derive(Deserialize)]
struct Credentials {
    username: String,
    password: String,
}

/// Run the limiter and the password check. On success the user; otherwise
/// the failure response has been written.
async fn check_credentials(service: &AuthService, c: &mut Context) -> Option<User> {
    let creds: Credentials = json_body(c)?;
    // A limiter that cannot be read refuses: the limit must hold (503).
    let admission = match service.limiter.admit(c.client_ip(), &creds.username).await {
        Ok(admission) => admission,
        Err(e) => {
            store_failure(c, "login limiter", &e);
            return None;
        }
    };
    match admission {
        Admission::Allowed => {}
        Admission::TooManyAttempts { retry_after } => {
            c.set_header(RETRY_AFTER, &retry_after.to_string());
            fail(c, StatusCode::TOO_MANY_REQUESTS, TOO_MANY_ATTEMPTS);
            return None;
        }
        Admission::Locked { retry_after } => {
            c.set_header(RETRY_AFTER, &retry_after.to_string());
            fail(c, StatusCode::TOO_MANY_REQUESTS, ACCOUNT_LOCKED);
            return None;
        }
    }
    // Names that cannot exist skip the lookup, not the hashing.
    let found = if creds.username.chars().count() <= USERNAME_MAX {
        match service.store.credentials(&creds.username).await {
            Ok(found) => found,
            Err(e) => {
                store_failure(c, "loading credentials", &e);
                return None;
            }
        }
    } else {
        None
    };
    let (user, hash) = match found {
        Some((user, hash)) => (Some(user), Some(hash)),
        None => (None, None),
    };
    let matches = match service.passwords.verify(creds.password, hash).await {
        Ok(matches) => matches,
        Err(e) => {
            internal(c, "verifying password", &e);
            return None;
        }
    };
    match user.filter(|_| matches) {
        Some(user) => {
            // No tokens unless the failure count was reset where every
            // instance sees it.
            if let Err(e) = service.limiter.record_success(&creds.username).await {
                store_failure(c, "login limiter", &e);
                return None;
            }
            Some(user)
        }
        None => {
            // A failure that cannot be counted is not answered as a plain
            // 401: the lock must not be dodged by a limiter outage.
            let outcome = match service.limiter.record_failure(&creds.username).await {
                Ok(outcome) => outcome,
                Err(e) => {
                    store_failure(c, "login limiter", &e);
                    return None;
                }
            };
            let body = if outcome.captcha_required {
                json!({ "error": BAD_CREDENTIALS, "captcha_required": true })
            } else {
                json!({ "error": BAD_CREDENTIALS })
            };
            c.abort_with_json(StatusCode::UNAUTHORIZED, body);
            None
        }
    }
}

/// `POST /login` `{username, password}` → token object.
fn login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        if let Some(user) = check_credentials(&service, c).await {
            send_pair(c, &service, &user, StatusCode::OK);
        }
    })
}

/// `POST /auth/token` `{username, password}` → `{token}` valid 24 hours.
fn simple_login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        if let Some(user) = check_credentials(&service, c).await {
            match service.tokens.issue_simple(&user) {
                Ok(token) => tokens_json(c, StatusCode::OK, &json!({ "token": token })),
                Err(e) => internal(c, "issuing token", &e),
            }
        }
    })
}

#[derive(Deserialize)]
struct Registration {
    username: String,
    password: String,
    #[serde(default)]
    email: Option<String>,
}

/// The first registration field that breaks its rule, as the 400 message.
fn registration_problem(username: &str, password: &str, email: Option<&str>) -> Option<String> {
    if let Err(e) = check_username(username) {
        return Some(e.to_string());
    }
    if let Err(e) = Passwords::check_policy(password) {
        return Some(e.to_string());
    }
    email
        .and_then(|e| check_email(e).err())
        .map(|e| e.to_string())
}

/// `POST /auth/register` `{username, password, email?}` → 201 token object;
/// 429 past the per-IP registration limit, checked before any bcrypt work.
fn register(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let Some(reg) = json_body::<Registration>(c) else {
            return;
        };
        // Before validation and bcrypt: a refused request costs nothing.
        if let Admission::TooManyAttempts { retry_after } | Admission::Locked { retry_after } =
            service.register_limiter.admit(c.client_ip())
        {
            c.set_header(RETRY_AFTER, &retry_after.to_string());
            return fail(c, StatusCode::TOO_MANY_REQUESTS, TOO_MANY_REGISTRATIONS);
        }
        let email = reg.email.filter(|e| !e.is_empty());
        if let Some(message) = registration_problem(&reg.username, &reg.password, email.as_deref())
        {
            return fail(c, StatusCode::BAD_REQUEST, &message);
        }
        let password_hash = match service.passwords.hash(reg.password).await {
            Ok(hash) => hash,
            Err(e) => return internal(c, "hashing password", &e),
        };
        let new = NewUser {
            username: reg.username,
            password_hash,
            email,
            role: Role::User,
        };
        match service.store.create_user(new).await {
            Ok(user) => send_pair(c, &service, &user, StatusCode::CREATED),
            Err(StoreError::UsernameTaken) => fail(c, StatusCode::CONFLICT, USERNAME_EXISTS),
            Err(StoreError::EmailTaken) => fail(c, StatusCode::CONFLICT, "email exists"),
            Err(e) => store_failure(c, "creating user", &e),
        }
    })
}

#[derive(Deserialize)]
struct RefreshRequest {
    refresh_token: String,
}

/// `POST /auth/refresh` `{refresh_token}` → a new token object.
fn refresh(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let Some(req) = json_body::<RefreshRequest>(c) else {
            return;
        };
        let claims = match service
            .tokens
            .verify(&req.refresh_token, TokenKind::Refresh)
        {
            Ok(claims) => claims,
            Err(JwtError::Expired) => return fail(c, StatusCode::UNAUTHORIZED, TOKEN_EXPIRED),
            Err(_) => return fail(c, StatusCode::UNAUTHORIZED, TOKEN_INVALID),
        };
        // The token itself is not looked up here: a listed (used or logged
        // out) refresh token is caught below as a second use.
        match service.blacklist.family_revoked(&claims).await {
            Ok(false) => {}
            Ok(true) => return fail(c, StatusCode::UNAUTHORIZED, TOKEN_REVOKED),
            Err(e) => return store_failure(c, "blacklist lookup", &e),
        }
        // Reload the user: the new access token carries the current role.
        // The token must name the account it was issued for (same key).
        let user = match service.store.user_by_id(claims.user_id).await {
            Ok(Some(user)) if tokens::issued_for(&claims, &user) => user,
            Ok(_) => return fail(c, StatusCode::UNAUTHORIZED, TOKEN_INVALID),
            Err(e) => return store_failure(c, "loading user", &e),
        };
        // Rotation: the refresh token works once. Listing it is atomic, so
        // of two concurrent uses exactly one is first; a later use means the
        // token leaked, and its whole family is revoked.
        match service.blacklist.use_refresh_token(&claims).await {
            Ok(true) => match service.tokens.issue_pair_in(&user, &claims.fam) {
                Ok(pair) => tokens_json(c, StatusCode::OK, &pair),
                Err(e) => internal(c, "issuing tokens", &e),
            },
            Ok(false) => {
                log::message(
                    "token-auth",
                    format_args!(
                        "refresh token of user {} used twice: its family is revoked",
                        user.id
                    ),
                );
                match service.blacklist.revoke_family(&claims).await {
                    Ok(()) => fail(c, StatusCode::UNAUTHORIZED, TOKEN_REVOKED),
                    Err(e) => store_failure(c, "revoking token family", &e),
                }
            }
            Err(e) => store_failure(c, "using refresh token", &e),
        }
    })
}

#[derive(Deserialize, Default)]
struct LogoutRequest {
    #[serde(default)]
    refresh_token: Option<String>,
}

/// `POST /auth/logout` (authenticated), optional `{refresh_token}` → 200.
/// The presented access token, and the refresh token if given, are revoked.
fn logout(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let Some(access) = claims(c).cloned() else {
            return fail(
                c,
                StatusCode::UNAUTHORIZED,
                crate::services::token_auth::middleware::NOT_LOGGED_IN,
            );
        };
        let request = if c.body().iter().all(u8::is_ascii_whitespace) {
            LogoutRequest::default()
        } else {
            let Some(req) = json_body::<LogoutRequest>(c) else {
                return;
            };
            req
        };
        // Check the refresh token fully before revoking anything.
        let refresh = match request.refresh_token.as_deref() {
            None => None,
            Some(token) => match service.tokens.verify(token, TokenKind::Refresh) {
                Ok(claims) if claims.user_id == access.user_id => Some(claims),
                Ok(_) => {
                    let message = "refresh_token belongs to another user";
                    return fail(c, StatusCode::BAD_REQUEST, message);
                }
                // An expired refresh token is already useless: nothing to revoke.
                Err(JwtError::Expired) => None,
                Err(_) => return fail(c, StatusCode::BAD_REQUEST, "refresh_token invalid"),
            },
        };
        // The tokens named, and their families: the refresh token of this
        // sign-in ends with it even when the caller did not send it.
        for claims in std::iter::once(&access).chain(refresh.as_ref()) {
            if let Err(e) = service.blacklist.revoke(claims).await {
                return store_failure(c, "revoking token", &e);
            }
            if let Err(e) = service.blacklist.revoke_family(claims).await {
                return store_failure(c, "revoking token family", &e);
            }
        }
        c.json(StatusCode::OK, &json!({ "message": "logged out" }));
    })
}

/// `GET /api/user/profile` → `{user}` of the caller.
fn profile(_service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        // authenticate loaded the account for this request.
        let Some(body) = middleware::user(c).map(|user| json!({ "user": user.public() })) else {
            return fail(c, StatusCode::UNAUTHORIZED, middleware::NOT_LOGGED_IN);
        };
        c.json(StatusCode::OK, &body);
    })
}

/// `GET /api/admin/users` → `{users: [...]}`, no password hashes.
fn list_users(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        match service.store.list_users().await {
            Ok(users) => {
                let users: Vec<_> = users.iter().map(User::public).collect();
                c.json(StatusCode::OK, &json!({ "users": users }));
            }
            Err(e) => store_failure(c, "listing users", &e),
        }
    })
}

/// Write the response for an OAuth failure.
fn oauth_failure(c: &mut Context, error: &OAuthError) {
    let status = match error {
        OAuthError::UnknownProvider => StatusCode::NOT_FOUND,
        OAuthError::InvalidState => return fail(c, StatusCode::BAD_REQUEST, INVALID_STATE),
        OAuthError::Denied(_) | OAuthError::MissingCode => StatusCode::BAD_REQUEST,
        OAuthError::Provider(_) => StatusCode::BAD_GATEWAY,
        OAuthError::States(StateError::Unavailable(_)) => {
            return fail(c, StatusCode::SERVICE_UNAVAILABLE, STORE_UNAVAILABLE)
        }
        OAuthError::States(_) => StatusCode::SERVICE_UNAVAILABLE,
        OAuthError::Cipher(_) => return internal(c, "oauth", error),
    };
    if status == StatusCode::BAD_GATEWAY {
        log::message(
            "token-auth",
            format_args!("{} {}: {error}", c.method(), c.path()),
        );
    }
    fail(c, status, &error.to_string());
}

/// `GET /auth/oauth/:provider/login` → 302 to the provider.
fn oauth_login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let Some(oauth) = &service.oauth else {
            return oauth_failure(c, &OAuthError::UnknownProvider);
        };
        let name = c.param("provider").unwrap_or_default().to_owned();
        match oauth.authorize_url(&name).await {
            Ok(url) => {
                c.set_header(CACHE_CONTROL, "no-store");
                c.redirect(StatusCode::FOUND, &url);
            }
            Err(e) => oauth_failure(c, &e),
        }
    })
}

/// `GET /auth/oauth/:provider/callback?code&state` → token object.
fn oauth_callback(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let Some(oauth) = &service.oauth else {
            return oauth_failure(c, &OAuthError::UnknownProvider);
        };
        let name = c.param("provider").unwrap_or_default().to_owned();
        let callback = Callback {
            code: c.query("code"),
            state: c.query("state"),
            error: c.query("error"),
        };
        let signed_in = match oauth.complete(&name, callback).await {
            Ok(signed_in) => signed_in,
            Err(e) => return oauth_failure(c, &e),
        };
        let stored = service
            .store
            .sign_in_with_provider(signed_in.identity, signed_in.username_hint)
            .await;
        match stored {
            Ok(user) => send_pair(c, &service, &user, StatusCode::OK),
            Err(e) => store_failure(c, "storing provider sign-in", &e),
        }
    })
}
