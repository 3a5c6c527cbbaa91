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
//! Each handler is a thin adapter, as the greeter's `rpc.rs` is: bind the
//! request, call one use case of [`AuthService`] ([`super::biz`]), write
//! the answer. A failure is a `?`: the use case's [`AuthError`] becomes an
//! [`ApiError`] (its status and `{"error": "..."}` body are chosen here,
//! [`answer`]), which becomes the response ([`crate::web::reply`]).
//! Responses carrying tokens are marked `Cache-Control: no-store` (RFC 6749
//! §5.1). The two OAuth routes live in [`oauth`], the authenticate and
//! authorize middleware in [`middleware`].

pub(crate) mod middleware;
pub(crate) mod oauth;

pub use middleware::{require_role, ANY_ROLE, TOKEN_INVALID};

use crate::services::token_auth::biz::{AuthError, AuthService, Credentials, Registration};
use crate::services::token_auth::tokens::TokenPair;
use crate::services::token_auth::user::{Role, User};
use crate::types::BoxFuture;
use crate::web::bind;
use crate::web::chain::{named, Context, Handler};
use crate::web::engine::Engine;
use crate::web::reply::{echo, fallible};
use crate::web::router::InsertError;
use http::header::CACHE_CONTROL;
use http::{HeaderValue, Method, StatusCode};
use middleware::{
    authenticate, claims, fail, ApiError, NOT_LOGGED_IN, TOKEN_EXPIRED, TOKEN_REVOKED,
};
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
/// Without `access_log` no request logger runs ([`Engine::with_access_log`]).
pub fn engine(service: Arc<AuthService>, access_log: bool) -> Result<Engine, InsertError> {
    let mut e = Engine::with_access_log(access_log);
    e.body_limit(BODY_LIMIT);
    let probe = Arc::clone(&service);
    crate::web::operations::health::register(
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
/// A body not declared JSON ([`bind::declares_json`]) is 415 unread: a
/// cross-origin page's `text/plain` POST needs no preflight.
fn json_body<T: DeserializeOwned>(c: &Context) -> Result<T, ApiError> {
    let content_type = c.header("content-type");
    if !bind::declares_json(content_type) {
        let shown = content_type.unwrap_or("(none)");
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("request body must be sent as application/json, not {shown}"),
        ));
    }
    bind::json_object(c.body()).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("request body must be a JSON object: {e}"),
        )
    })
}

/// Write a token-bearing JSON response.
fn tokens_json(c: &mut Context, status: StatusCode, value: &impl serde::Serialize) {
    c.set_header(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    c.json(status, value);
}

/// The HTTP answer to a use case's refusal or failure.
pub fn answer(e: AuthError) -> ApiError {
    let refused = |status, message: &str| ApiError::new(status, message);
    let limited = |retry_after, message| ApiError::Limited {
        retry_after,
        message,
    };
    let captcha = |message: &str| ApiError::Json {
        status: StatusCode::UNAUTHORIZED,
        body: json!({ "error": message, "captcha_required": true }),
    };
    match e {
        AuthError::Invalid(message) => ApiError::new(StatusCode::BAD_REQUEST, message),
        AuthError::BadCredentials { captcha_required } => ApiError::Json {
            status: StatusCode::UNAUTHORIZED,
            body: match captcha_required {
                true => json!({ "error": BAD_CREDENTIALS, "captcha_required": true }),
                false => json!({ "error": BAD_CREDENTIALS }),
            },
        },
        AuthError::CaptchaRequired => captcha(CAPTCHA_REQUIRED),
        AuthError::CaptchaFailed { reason } => ApiError::logged(
            format!("captcha refused: {reason}"),
            captcha(CAPTCHA_FAILED),
        ),
        AuthError::CaptchaUnavailable(e) => ApiError::logged(
            e.to_string(),
            refused(StatusCode::SERVICE_UNAVAILABLE, CAPTCHA_UNAVAILABLE),
        ),
        AuthError::TooManyAttempts { retry_after } => limited(retry_after, TOO_MANY_ATTEMPTS),
        AuthError::Locked { retry_after } => limited(retry_after, ACCOUNT_LOCKED),
        AuthError::TooManyRegistrations { retry_after } => {
            limited(retry_after, TOO_MANY_REGISTRATIONS)
        }
        AuthError::UsernameTaken => refused(StatusCode::CONFLICT, USERNAME_EXISTS),
        AuthError::EmailTaken => refused(StatusCode::CONFLICT, EMAIL_EXISTS),
        AuthError::TokenExpired => refused(StatusCode::UNAUTHORIZED, TOKEN_EXPIRED),
        AuthError::TokenInvalid { .. } => refused(StatusCode::UNAUTHORIZED, TOKEN_INVALID),
        AuthError::TokenRevoked => refused(StatusCode::UNAUTHORIZED, TOKEN_REVOKED),
        AuthError::OAuth(e) => oauth::failure(e),
        AuthError::Store { what, error } => ApiError::Store { what, error },
        AuthError::Internal { what, cause } => ApiError::Internal { what, cause },
    }
}

#[derive(Deserialize)]
struct LoginRequest {
    username: String,
    password: String,
    /// The token the captcha widget gave the client (hCaptcha's
    /// `h-captcha-response`, Turnstile's `cf-turnstile-response`).
    #[serde(default)]
    captcha_token: Option<String>,
}

impl From<LoginRequest> for Credentials {
    fn from(r: LoginRequest) -> Credentials {
        Credentials {
            username: r.username,
            password: r.password,
            captcha_token: r.captcha_token,
        }
    }
}

/// `POST /login` `{username, password}` → token object.
fn login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let creds = json_body::<LoginRequest>(c)?.into();
        let pair = service.login(c.client_ip(), creds).await.map_err(answer)?;
        tokens_json(c, StatusCode::OK, &pair);
        Ok(())
    })
}

/// `POST /auth/token` `{username, password}` → `{token}` valid 24 hours.
fn simple_login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let creds = json_body::<LoginRequest>(c)?.into();
        let token = service
            .simple_login(c.client_ip(), creds)
            .await
            .map_err(answer)?;
        tokens_json(c, StatusCode::OK, &json!({ "token": token }));
        Ok(())
    })
}

#[derive(Deserialize)]
struct RegisterRequest {
    username: String,
    password: String,
    #[serde(default)]
    email: Option<String>,
}

/// `POST /auth/register` `{username, password, email?}` → 201 token object;
/// 429 past the per-IP registration limit, checked before any bcrypt work;
/// 409 for a taken username or email.
fn register(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let r: RegisterRequest = json_body(c)?;
        let reg = Registration {
            username: r.username,
            password: r.password,
            email: r.email,
        };
        let pair: TokenPair = service.register(c.client_ip(), reg).await.map_err(answer)?;
        tokens_json(c, StatusCode::CREATED, &pair);
        Ok(())
    })
}

#[derive(Deserialize)]
struct RefreshRequest {
    refresh_token: String,
}

/// `POST /auth/refresh` `{refresh_token}` → a new token object.
fn refresh(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let req: RefreshRequest = json_body(c)?;
        let pair = service.refresh(&req.refresh_token).await.map_err(answer)?;
        tokens_json(c, StatusCode::OK, &pair);
        Ok(())
    })
}

#[derive(Deserialize, Default)]
struct LogoutRequest {
    #[serde(default)]
    refresh_token: Option<String>,
}

/// `POST /auth/logout` (authenticated), optional `{refresh_token}` → 200.
/// The presented access token, and the refresh token if given, are revoked.
fn logout(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        // The caller [`authenticate`] let through, or 401.
        let access = claims(c)
            .cloned()
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, NOT_LOGGED_IN))?;
        let request = if c.body().iter().all(u8::is_ascii_whitespace) {
            LogoutRequest::default()
        } else {
            json_body::<LogoutRequest>(c)?
        };
        service
            .logout(&access, request.refresh_token.as_deref())
            .await
            .map_err(answer)?;
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
        let users = service.list_users().await.map_err(answer)?;
        let users: Vec<_> = users.iter().map(User::public).collect();
        c.json(StatusCode::OK, &json!({ "users": users }));
        Ok(())
    })
}

/// `GET /auth/oauth/:provider/login` → 302 to the provider, with the
/// cookie binding the sign-in ([`oauth::login`]).
fn oauth_login(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move { oauth::login(&service, c).await.map_err(answer) })
}

/// `GET /auth/oauth/:provider/callback?code&state` with the binding cookie
/// → token object ([`oauth::callback`]).
fn oauth_callback(service: Arc<AuthService>, c: &mut Context) -> BoxFuture<'_, Reply> {
    Box::pin(async move {
        let pair = oauth::callback(&service, c).await.map_err(answer)?;
        tokens_json(c, StatusCode::OK, &pair);
        Ok(())
    })
}
