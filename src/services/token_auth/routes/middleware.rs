//! Authentication and authorization as chain middleware: who is calling, then whether they may.
//!
//! Routes that need a caller are registered behind two handlers, in this
//! order: [`authenticate`] proves *who* is calling (bearer access token,
//! signature, expiry, blacklist, and the account it names still holds it:
//! same id, same account key) and stores the claims and the account in the
//! context;
//! [`require_role`] decides whether that caller *may* use the route. Each
//! aborts the chain with a 401/403 JSON body on failure, so the route handler
//! never runs for a refused request.
//!
//! The bodies are fixed strings (the table in docs/token-auth.md); the precise reason a token was
//! refused goes to the log, not to the caller.

use crate::ops::log;
use crate::services::token_auth::biz::{AuthError, AuthService};
use crate::services::token_auth::store::StoreError;
use crate::services::token_auth::tokens::Claims;
use crate::services::token_auth::user::{Role, User};
use crate::web::chain::{named, Context, Handler};
use crate::web::reply::ErrorResponse;
use http::header::{RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderValue, StatusCode};
use serde_json::json;
use std::sync::Arc;

/// Context key under which [`authenticate`] stores the caller's [`Claims`].
pub const CLAIMS_KEY: &str = "auth.claims";
/// Context key under which [`authenticate`] stores the caller's [`User`],
/// as loaded from the store for this request.
pub const USER_KEY: &str = "auth.user";

/// 401: `Authorization` absent, or not `Bearer <token>`.
pub const TOKEN_NOT_PROVIDED: &str = "token not provided";
/// 401: the access token's `exp` has passed.
pub const TOKEN_EXPIRED: &str = "token expired";
/// 401: bad signature, bad format, or wrong token type.
pub const TOKEN_INVALID: &str = "token invalid";
/// 401: the token's `jti` is on the blacklist.
pub const TOKEN_REVOKED: &str = "token revoked";
/// 403: the caller's role is not allowed on the route.
pub const INSUFFICIENT_PERMISSION: &str = "insufficient permission";
/// 401: a role-protected route was reached without an authenticated caller.
pub const NOT_LOGGED_IN: &str = "not logged in";
/// 500: something on our side failed; details are logged.
pub const INTERNAL_ERROR: &str = "internal error";

/// Every role, for routes open to any signed-in user.
pub const ANY_ROLE: &[Role] = &[Role::User, Role::Vip, Role::Admin];

/// The claims [`authenticate`] stored, if it ran and passed.
pub fn claims(c: &Context) -> Option<&Claims> {
    c.get::<Claims>(CLAIMS_KEY)
}

/// The caller's account as [`authenticate`] loaded it, if it ran and passed.
pub fn user(c: &Context) -> Option<&User> {
    c.get::<User>(USER_KEY)
}

/// Abort with `status` and `{"error": message}`.
pub fn fail(c: &mut Context, status: StatusCode, message: &str) {
    c.abort_with_json(status, json!({ "error": message }));
}

/// Log `what` with its cause and abort with a 500.
pub fn internal(c: &mut Context, what: &str, cause: &dyn std::fmt::Display) {
    log::message(
        "token-auth",
        format_args!(
            "{} {}: {what}: {cause}",
            c.method(),
            log::escape_for_log(c.path())
        ),
    );
    fail(c, StatusCode::INTERNAL_SERVER_ERROR, INTERNAL_ERROR);
}

/// 503 body when state cannot be read or written: the SQLite file is gone
/// or read-only, or PostgreSQL or Redis is down or too slow.
pub const STORE_UNAVAILABLE: &str = "store unavailable";

/// Answer a failed store call: 503 `{"error":"store unavailable"}` when the
/// store is unavailable (nothing was stored or checked, and nothing is
/// acknowledged; the cause is logged), else log it and answer 500.
pub fn store_failure(c: &mut Context, what: &str, e: &StoreError) {
    match e {
        StoreError::Unavailable { .. } => {
            fail(c, StatusCode::SERVICE_UNAVAILABLE, STORE_UNAVAILABLE)
        }
        StoreError::Down(_) => {
            log::message(
                "token-auth",
                format_args!(
                    "{} {}: {what}: {e}",
                    c.method(),
                    log::escape_for_log(c.path())
                ),
            );
            fail(c, StatusCode::SERVICE_UNAVAILABLE, STORE_UNAVAILABLE)
        }
        _ => internal(c, what, e),
    }
}

/// Why a route refused or failed a request, as a value: what a route
/// handler returns with `?` ([`crate::web::reply::fallible`]), and the
/// response it becomes (every body is `{"error": …}`).
#[derive(Debug)]
pub enum ApiError {
    /// `status` with `{"error": message}`.
    Refused {
        /// The HTTP status.
        status: StatusCode,
        /// The `error` text.
        message: String,
    },
    /// 429 with `Retry-After: retry_after` (seconds) and `{"error": message}`.
    Limited {
        /// Seconds until a retry can pass.
        retry_after: u64,
        /// The `error` text.
        message: &'static str,
    },
    /// `status` with a JSON body of its own (the 401 with `captcha_required`).
    Json {
        /// The HTTP status.
        status: StatusCode,
        /// The whole body.
        body: serde_json::Value,
    },
    /// A store call failed: 503 when the store is unavailable, else 500;
    /// see [`store_failure`].
    Store {
        /// What was being done, for the log.
        what: &'static str,
        /// The store's error.
        error: StoreError,
    },
    /// Something on our side failed: logged, answered 500.
    Internal {
        /// What was being done, for the log.
        what: &'static str,
        /// The cause, for the log only.
        cause: String,
    },
    /// `answer`, after `note` is logged with the request's method and path
    /// (a captcha or identity provider that refused or failed).
    Logged {
        /// The log line's text.
        note: String,
        /// The answer.
        answer: Box<ApiError>,
    },
}

impl ApiError {
    /// `status` with `{"error": message}`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError::Refused {
            status,
            message: message.into(),
        }
    }

    /// `answer`, with `note` logged first.
    pub fn logged(note: String, answer: ApiError) -> ApiError {
        ApiError::Logged {
            note,
            answer: Box::new(answer),
        }
    }

    /// For `map_err`: an internal failure while doing `what`.
    pub fn internal<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> ApiError {
        move |cause| ApiError::Internal {
            what,
            cause: cause.to_string(),
        }
    }
}

impl ErrorResponse for ApiError {
    fn respond(self, c: &mut Context) {
        match self {
            ApiError::Refused { status, message } => fail(c, status, &message),
            ApiError::Limited {
                retry_after,
                message,
            } => {
                c.set_header(RETRY_AFTER, HeaderValue::from(retry_after));
                fail(c, StatusCode::TOO_MANY_REQUESTS, message);
            }
            ApiError::Json { status, body } => c.abort_with_json(status, body),
            ApiError::Store { what, error } => store_failure(c, what, &error),
            ApiError::Internal { what, cause } => internal(c, what, &cause),
            ApiError::Logged { note, answer } => {
                log::message(
                    "token-auth",
                    format_args!(
                        "{} {}: {note}",
                        log::escape_for_log(c.method().as_str()),
                        log::escape_for_log(c.path())
                    ),
                );
                answer.respond(c);
            }
        }
    }
}

/// Abort with 401, `message`, and a `WWW-Authenticate` challenge (RFC 6750 §3).
fn unauthorized(c: &mut Context, message: &str, token_was_sent: bool) {
    let challenge = HeaderValue::from_static(if token_was_sent {
        "Bearer realm=\"token-auth\", error=\"invalid_token\""
    } else {
        "Bearer realm=\"token-auth\""
    });
    c.set_header(WWW_AUTHENTICATE, challenge);
    fail(c, StatusCode::UNAUTHORIZED, message);
}

/// The token of an `Authorization: Bearer <token>` header. The scheme is
/// matched exactly: `Bearer`, one space, a token.
pub(crate) fn bearer_token(c: &Context) -> Option<&str> {
    let value = c.header("authorization")?;
    let token = value.strip_prefix("Bearer ")?;
    (!token.is_empty()).then_some(token)
}

/// Middleware: require a valid, unrevoked access token whose account
/// still holds it ([`AuthService::authenticate`]); store its claims under
/// [`CLAIMS_KEY`] and the account under [`USER_KEY`], and run the rest of
/// the chain.
pub fn authenticate(service: Arc<AuthService>) -> Handler {
    named("authenticate", move |c| {
        let service = Arc::clone(&service);
        Box::pin(async move {
            let Some(token) = bearer_token(c) else {
                return unauthorized(c, TOKEN_NOT_PROVIDED, false);
            };
            let (claims, user) = match service.authenticate(token).await {
                Ok(caller) => caller,
                Err(AuthError::TokenExpired) => return unauthorized(c, TOKEN_EXPIRED, true),
                Err(AuthError::TokenRevoked) => return unauthorized(c, TOKEN_REVOKED, true),
                Err(AuthError::Store { what, error }) => return store_failure(c, what, &error),
                Err(refused) => {
                    let why = match &refused {
                        AuthError::TokenInvalid { why } => why.clone(),
                        other => other.to_string(),
                    };
                    log::message(
                        "token-auth",
                        format_args!(
                            "{} {}: refused token: {}",
                            c.method(),
                            log::escape_for_log(c.path()),
                            log::escape_for_log(&why)
                        ),
                    );
                    return unauthorized(c, TOKEN_INVALID, true);
                }
            };
            c.set(CLAIMS_KEY, claims);
            c.set(USER_KEY, user);
            c.next().await;
        })
    })
}

/// Middleware: let the chain continue only for callers whose role is in
/// `allowed`. Place it after [`authenticate`]; without an authenticated
/// caller it answers 401 "not logged in".
pub fn require_role(allowed: &'static [Role]) -> Handler {
    named("require_role", move |c| {
        Box::pin(async move {
            let role = match claims(c) {
                None => return fail(c, StatusCode::UNAUTHORIZED, NOT_LOGGED_IN),
                Some(claims) => claims.role,
            };
            if !role.is_some_and(|r| allowed.contains(&r)) {
                return fail(c, StatusCode::FORBIDDEN, INSUFFICIENT_PERMISSION);
            }
            c.next().await;
        })
    })
}
