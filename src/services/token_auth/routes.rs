//! The HTTP routes of the token-auth service on the core engine.
//!
//! | Method | Path                              | Guard                 |
//! |--------|-----------------------------------|-----------------------|
//! | POST   | `/login`                          | login limits          |
//! | POST   | `/auth/token` (24 h single token) | login limits          |
//! | POST   | `/auth/register`                  | registrations per IP  |
//! | POST   | `/auth/refresh`                   | refresh token in body |
//! | POST   | `/auth/logout`                    | authenticate          |
//! | GET    | `/auth/oauth/:provider/login`     | sign-ins per client   |
//! | GET    | `/auth/oauth/:provider/callback`  | state + its cookie    |
//! | GET    | `/api/user/profile`               | authenticate, any role|
//! | GET    | `/api/admin/users`                | authenticate, admin   |
//!
//! Handlers are plain functions taking the shared [`AuthService`] and
//! returning `Result<(), ApiError>`: each failure is a `?`, and the error
//! becomes the `{"error": "..."}` answer ([`crate::web::reply`]). Responses carrying tokens are marked
//! `Cache-Control: no-store` (RFC 6749 §5.1). The two OAuth routes live in
//! [`super::oauth_routes`].

use crate::protocol::jwt::JwtError;
use crate::services::token_auth::captcha::Verdict;
use crate::services::token_auth::limiter::Admission;
use crate::services::token_auth::middleware::{
    self, authenticate, claims, fail, require_role, ApiError, ANY_ROLE, NOT_LOGGED_IN,
    TOKEN_EXPIRED, TOKEN_INVALID, TOKEN_REVOKED,
};
use crate::services::token_auth::oauth_routes;
use crate::services::token_auth::passwords::Passwords;
use crate::services::token_auth::service::AuthService;
use crate::services::token_auth::store::{NewUser, StoreError};
use crate::services::token_auth::tokens::{self, Claims, TokenKind};
use crate::services::token_auth::user::{check_email, check_username, Role, User, USERNAME_MAX};
use crate::types::BoxFuture;
use crate::web::bind;
use crate::web::chain::{named, Context, Handler};
use crate::web::engine::Engine;
use crate::web::health;
use crate::web::log;
use crate::web::reply::{echo, fallible};
use crate::web::router::InsertError;
use http::header::CACHE_CONTROL;
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
/// 401 body text: the login needs a solved captcha and carries none.
pub const CAPTCHA_REQUIRED: &str = "captcha required";
/// 401 body text: the captcha provider did not confirm the token.
pub const CAPTCHA_FAILED: &str = "captcha verification failed";
/// 503 body text: the captcha provider gave no usable answer.
pub const CAPTCHA_UNAVAILABLE: &str = "captcha provider unavailable, try again later";
/// 429 when one client registers too often.
pub const TOO_MANY_REGISTRATIONS: &str = "too many registrations, try again in 1 minute";
/// 409 on registration with a taken username.
pub const USERNAME_EXISTS: &str = "username exists";
/// 409 on registration with a taken email.
pub const EMAIL_EXISTS: &str = "email exists";

type Route = for<'a> fn(Arc<AuthService>, &'a mut Context) -> BoxFuture<'a, Reply>;

/// What a route returns: `Ok` once it has answered, or the error that
/// becomes the answer ([`ApiError`], through [`fallible`]).
type Reply = Result<(), ApiError>;

fn route(service: &Arc<AuthService>, name: &'static str, f: Route) -> Handler {
    let service = Arc::clone(service);
    fallible(name, move |c| f(Arc::clone(&service), c))
}

/// The engine with every route of the service. Unknown paths and methods
/// answer in the service's JSON shape, `{"error": …}`, like every other error.
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
    e.no_route(vec![named("not_found", |c| {
        Box::pin(async move {
            let message = format!("no route for {} {}", c.method(), echo(c.path()));
            fail(c, StatusCode::NOT_FOUND, &message);
        })
    })]);
    e.no_method(vec![named("method_not_allowed", |c| {
        Box::pin(async move {
            let message = format!("method {} not allowed on {}", c.method(), echo(c.path()));
            fail(c, StatusCode::METHOD_NOT_ALLOWED, &message);
        })
    })]);
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
/// policy, [`bind::json_object`]: objects only, no repeated keys); 400 if not.
fn json_body<T: DeserializeOwned>(c: &Context) -> Result<T, ApiError> {
    bind::json_object(c.body()).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("request body must be a JSON object: {e}"),
        )
    })
}

/// Write a token-bearing JSON response.
fn tokens_json(c: &mut Context, status: StatusCode, value: &impl serde::Serialize) {
    c.set_header(CACHE_CONTROL, "no-store");
    c.json(status, value);
}

fn send_pair(c: &mut Context, service: &AuthService, user: &User, status: StatusCode) -> Reply {
    let pair = service
        .tokens
        .issue_pair(user)
        .map_err(ApiError::internal("issuing tokens"))?;
    tokens_json(c, status, &pair);
    Ok(())
}

#[derive(Deserialize)]
struct Credentials {
    username: String,
    password: String,
    /// The token the captcha widget gave the client (hCaptcha's
    /// `h-captcha-response`, Turnstile's `cf-turnstile-response`).
    #[serde(default)]
    captcha_token: Option<String>,
}

/// When the account's failures call for it and a provider is configured,
/// the login's captcha must be confirmed by the provider: 401 without one
/// or when refused, 503 when the provider gives no answer; never a pass.
async fn check_captcha(
    service: &AuthService,
    c: &Context,
    creds: &Credentials,
) -> Result<(), ApiError> {
    let Some(captcha) = &service.captcha else {
        return Ok(()); // hint only, said at start-up
    };
    let required = service
        .limiter
        .captcha_required(&creds.username)
        .await
        .map_err(ApiError::store("login limiter"))?;
    if !required {
        return Ok(());
    }
    let refuse = |message: &str| ApiError::Json {
        status: StatusCode::UNAUTHORIZED,
        body: json!({ "error": message, "captcha_required": true }),
    };
    let Some(token) = creds.captcha_token.as_deref() else {
        return Err(refuse(CAPTCHA_REQUIRED));
    };
    match captcha.verify(token, c.client_ip()).await {
        Ok(Verdict::Passed) => Ok(()),
        Ok(Verdict::Failed(reason)) => {
            log::message(
                "token-auth",
                format_args!("{} {}: captcha refused: {reason}", c.method(), c.path()),
            );
            Err(refuse(CAPTCHA_FAILED))
        }
        Err(e) => {
            log::message(
                "token-auth",
                format_args!("{} {}: {e}", c.method(), c.path()),
            );
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                CAPTCHA_UNAVAILABLE,
            ))
        }
    }
}

/// 429 for a refused admission, with its `Retry-After`.
fn admitted(admission: Admission, too_many: &'static str) -> Result<(), ApiError> {
    match admission {
        Admission::Allowed => Ok(()),
        Admission::TooManyAttempts { retry_after } => Err(ApiError::Limited {
            retry_after,
            message: too_many,
        }),
        Admission::Locked { retry_after } => Err(ApiError::Limited {
            retry_after,
            message: ACCOUNT_LOCKED,
        }),
    }
}

/// The login limits, then the password check: the user whose credentials
/// these are. A limiter that cannot be read or written refuses (503): the
/// limits must hold, also when the shared store is down.
async fn check_credentials(service: &AuthService, c: &Context) -> Result<User, ApiError> {
    let creds: Credentials = json_body(c)?;
    let admission = service
        .limiter
        .admit(c.client_ip(), &creds.username)
        .await
        .map_err(ApiError::store("login limiter"))?;
    admitted(admission, TOO_MANY_ATTEMPTS)?;
    // Before bcrypt: a login without its captcha costs no hashing.
    check_captcha(service, c, &creds).await?;
    // Names that cannot exist skip the lookup, not the hashing.
    let found = if creds.username.chars().count() <= USERNAME_MAX {
        service
            .store
            .credentials(&creds.username)
            .await
            .map_err(ApiError::store("loading credentials"))?
    } else {
        None
    };
    let (user, hash) = found.unzip();
    let matches = service
        .passwords
        .verify(creds.password, hash)
        .await
        .map_err(ApiError::internal("verifying password"))?;
    if let Some(user) = user.filter(|_| matches) {
        // No tokens unless the failure count was reset where every
        // instance sees it.
        service
            .limiter
            .record_success(&creds.username)
            .await
            .map_err(ApiError::store("login limiter"))?;
        return Ok(user);
    }
    // A failure that cannot be counted is not answered as a plain 401:
    // the lock must not be dodged by a limiter outage.
    let outcome = service
        .limiter
        .record_failure(&creds.username)
        .await
        .map_err(ApiError::store("login limiter"))?;
    let body = if outcome.captcha_required {
        json!({ "error": BAD_CREDENTIALS, "captcha_required": true })
    } else {
        json!({ "error": BAD_CREDENTIALS })
    };
    Err(ApiError::Json {
        status: StatusCode::UNAUTHORIZED,
        body,
    })
}

/// `POST /login` `{username, password}` → token object.
fn login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let user = check_credentials(&service, c).await?;
        send_pair(c, &service, &user, StatusCode::OK)
    })
}

/// `POST /auth/token` `{username, password}` → `{token}` valid 24 hours.
fn simple_login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let user = check_credentials(&service, c).await?;
        let token = service
            .tokens
            .issue_simple(&user)
            .map_err(ApiError::internal("issuing token"))?;
        tokens_json(c, StatusCode::OK, &json!({ "token": token }));
        Ok(())
    })
}

#[derive(Deserialize)]
struct Registration {
    username: String,
    password: String,
    #[serde(default)]
    email: Option<String>,
}

/// `POST /auth/register` `{username, password, email?}` → 201 token object;
/// 429 past the per-IP registration limit, checked before any bcrypt work.
/// A taken username is said first: a second registration under the same
/// name answers 409 whatever else is wrong with it.
fn register(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let reg: Registration = json_body(c)?;
        // Before validation and bcrypt: a refused request costs nothing.
        let admission = service.register_limiter.admit(c.client_ip());
        admitted(admission, TOO_MANY_REGISTRATIONS)?;
        let bad = |e: &dyn std::fmt::Display| ApiError::new(StatusCode::BAD_REQUEST, e.to_string());
        check_username(&reg.username).map_err(|e| bad(&e))?;
        let taken = service
            .store
            .credentials(&reg.username)
            .await
            .map_err(ApiError::store("looking up username"))?;
        if taken.is_some() {
            return Err(ApiError::new(StatusCode::CONFLICT, USERNAME_EXISTS));
        }
        Passwords::check_policy(&reg.password).map_err(|e| bad(&e))?;
        let email = reg.email.filter(|e| !e.is_empty());
        if let Some(email) = &email {
            check_email(email).map_err(|e| bad(&e))?;
        }
        let password_hash = service
            .passwords
            .hash(reg.password)
            .await
            .map_err(ApiError::internal("hashing password"))?;
        let new = NewUser {
            username: reg.username,
            password_hash,
            email,
            role: Role::User,
        };
        // Two registrations racing for one name: the store's unique index decides.
        let user = service.store.create_user(new).await.map_err(|e| match e {
            StoreError::UsernameTaken => ApiError::new(StatusCode::CONFLICT, USERNAME_EXISTS),
            StoreError::EmailTaken => ApiError::new(StatusCode::CONFLICT, EMAIL_EXISTS),
            error => ApiError::Store {
                what: "creating user",
                error,
            },
        })?;
        send_pair(c, &service, &user, StatusCode::CREATED)
    })
}

#[derive(Deserialize)]
struct RefreshRequest {
    refresh_token: String,
}

/// 401 for a token that does not verify: expired, or anything else.
fn refused_token(e: JwtError) -> ApiError {
    match e {
        JwtError::Expired => ApiError::new(StatusCode::UNAUTHORIZED, TOKEN_EXPIRED),
        _ => ApiError::new(StatusCode::UNAUTHORIZED, TOKEN_INVALID),
    }
}

/// `POST /auth/refresh` `{refresh_token}` → a new token object.
fn refresh(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let req: RefreshRequest = json_body(c)?;
        let claims = service
            .tokens
            .verify(&req.refresh_token, TokenKind::Refresh)
            .map_err(refused_token)?;
        // The token itself is not looked up here: a listed (used or logged
        // out) refresh token is caught below as a second use.
        let family_revoked = service
            .blacklist
            .family_revoked(&claims)
            .await
            .map_err(ApiError::store("blacklist lookup"))?;
        if family_revoked {
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, TOKEN_REVOKED));
        }
        // Reload the user: the new access token carries the current role.
        // The token must name the account it was issued for (same key).
        let user = service
            .store
            .user_by_id(claims.user_id)
            .await
            .map_err(ApiError::store("loading user"))?
            .filter(|user| tokens::issued_for(&claims, user))
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, TOKEN_INVALID))?;
        // Rotation: the refresh token works once. Listing it is atomic, so
        // of two concurrent uses exactly one is first; a later use means the
        // token leaked, and its whole family is revoked.
        let first_use = service
            .blacklist
            .use_refresh_token(&claims)
            .await
            .map_err(ApiError::store("using refresh token"))?;
        if !first_use {
            log::message(
                "token-auth",
                format_args!(
                    "refresh token of user {} used twice: its family is revoked",
                    user.id
                ),
            );
            service
                .blacklist
                .revoke_family(&claims)
                .await
                .map_err(ApiError::store("revoking token family"))?;
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, TOKEN_REVOKED));
        }
        let pair = service
            .tokens
            .issue_pair_in(&user, &claims.fam)
            .map_err(ApiError::internal("issuing tokens"))?;
        tokens_json(c, StatusCode::OK, &pair);
        Ok(())
    })
}

#[derive(Deserialize, Default)]
struct LogoutRequest {
    #[serde(default)]
    refresh_token: Option<String>,
}

/// The caller [`authenticate`] let through, or 401.
fn caller(c: &Context) -> Result<Claims, ApiError> {
    claims(c)
        .cloned()
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, NOT_LOGGED_IN))
}

/// `POST /auth/logout` (authenticated), optional `{refresh_token}` → 200.
/// The presented access token, and the refresh token if given, are revoked.
fn logout(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let access = caller(c)?;
        let request = if c.body().iter().all(u8::is_ascii_whitespace) {
            LogoutRequest::default()
        } else {
            json_body::<LogoutRequest>(c)?
        };
        // Check the refresh token fully before revoking anything.
        let refresh = match request.refresh_token.as_deref() {
            None => None,
            Some(token) => match service.tokens.verify(token, TokenKind::Refresh) {
                Ok(claims) if claims.user_id == access.user_id => Some(claims),
                Ok(_) => {
                    let message = "refresh_token belongs to another user";
                    return Err(ApiError::new(StatusCode::BAD_REQUEST, message));
                }
                // An expired refresh token is already useless: nothing to revoke.
                Err(JwtError::Expired) => None,
                Err(_) => {
                    return Err(ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "refresh_token invalid",
                    ))
                }
            },
        };
        // The tokens named, and their families: the refresh token of this
        // sign-in ends with it even when the caller did not send it.
        for claims in std::iter::once(&access).chain(refresh.as_ref()) {
            service
                .blacklist
                .revoke(claims)
                .await
                .map_err(ApiError::store("revoking token"))?;
            service
                .blacklist
                .revoke_family(claims)
                .await
                .map_err(ApiError::store("revoking token family"))?;
        }
        c.json(StatusCode::OK, &json!({ "message": "logged out" }));
        Ok(())
    })
}

/// `GET /api/user/profile` → `{user}` of the caller.
fn profile(_service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        // authenticate loaded the account for this request.
        let body = middleware::user(c)
            .map(|user| json!({ "user": user.public() }))
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, NOT_LOGGED_IN))?;
        c.json(StatusCode::OK, &body);
        Ok(())
    })
}

/// `GET /api/admin/users` → `{users: [...]}`, no password hashes.
fn list_users(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let users = service
            .store
            .list_users()
            .await
            .map_err(ApiError::store("listing users"))?;
        let users: Vec<_> = users.iter().map(User::public).collect();
        c.json(StatusCode::OK, &json!({ "users": users }));
        Ok(())
    })
}

/// `GET /auth/oauth/:provider/login` → 302 to the provider, with the
/// cookie binding the sign-in ([`oauth_routes::login`]).
fn oauth_login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move { oauth_routes::login(&service, c).await })
}

/// `GET /auth/oauth/:provider/callback?code&state` with the binding cookie
/// → token object ([`oauth_routes::callback`]).
fn oauth_callback(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let user = oauth_routes::callback(&service, c).await?;
        send_pair(c, &service, &user, StatusCode::OK)
    })
}
