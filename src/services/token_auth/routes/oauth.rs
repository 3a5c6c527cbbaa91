//! The HTTP side of the OAuth sign-in's two routes (registered by
//! [`super::engine`]), over the use cases of [`super::biz`]: `/login`
//! redirects to the provider and gives the browser the cookie that binds
//! the sign-in to it; `/callback` needs that cookie with the state, clears
//! it whatever the outcome, and yields a token pair as every login does.
//!
//! Kept apart from the other routes because the sign-in has its own
//! answers: 429 per client address and 503 in all for pending sign-ins, a
//! 400 naming a missing, foreign or doubled cookie, and 502 when the provider fails.

use super::middleware::{ApiError, STORE_UNAVAILABLE};
use crate::services::token_auth::biz::{AuthError, AuthService};
use crate::services::token_auth::oauth::{Callback, OAuthError};
use crate::services::token_auth::pending::StateError;
use crate::services::token_auth::tokens::TokenPair;
use crate::web::chain::Context;
use http::header::{InvalidHeaderValue, CACHE_CONTROL, COOKIE, SET_COOKIE};
use http::{HeaderValue, StatusCode};

/// 400 when the OAuth callback's state does not verify.
pub const INVALID_STATE: &str = "invalid state";
/// 429 when one client address has too many OAuth sign-ins pending.
pub const TOO_MANY_SIGN_INS: &str =
    "too many sign-ins in progress from this address, try again later";

/// The answer to an OAuth failure; a failing provider is also logged.
pub fn failure(error: OAuthError) -> ApiError {
    let status = match &error {
        OAuthError::UnknownProvider => StatusCode::NOT_FOUND,
        OAuthError::InvalidState => return ApiError::new(StatusCode::BAD_REQUEST, INVALID_STATE),
        OAuthError::Unbound(_) | OAuthError::Denied(_) | OAuthError::MissingCode => {
            StatusCode::BAD_REQUEST
        }
        OAuthError::Provider(_) => {
            let answer = ApiError::new(StatusCode::BAD_GATEWAY, error.to_string());
            return ApiError::logged(error.to_string(), answer);
        }
        OAuthError::States(StateError::Unavailable(_)) => {
            return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, STORE_UNAVAILABLE)
        }
        OAuthError::States(StateError::ClientFull { retry_after }) => {
            return ApiError::Limited {
                retry_after: *retry_after,
                message: TOO_MANY_SIGN_INS,
            }
        }
        OAuthError::States(_) => StatusCode::SERVICE_UNAVAILABLE,
        OAuthError::Cipher(_) => return ApiError::internal("oauth")(error),
    };
    ApiError::new(status, error.to_string())
}

/// `GET /auth/oauth/:provider/login` → 302 to the provider, with the
/// cookie binding the sign-in to this browser; 429 past the client's
/// pending sign-ins.
pub async fn login(service: &AuthService, c: &mut Context) -> Result<(), AuthError> {
    let name = c.param("provider").unwrap_or_default().to_owned();
    let redirect = service.oauth_login(&name, c.client_ip()).await?;
    c.set_header(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    (c.try_set_header(SET_COOKIE, &redirect.set_cookie))
        .map_err(not_a_header("the binding cookie"))?;
    c.redirect(StatusCode::FOUND, &redirect.url);
    Ok(())
}

/// `GET /auth/oauth/:provider/callback?code&state` with the binding
/// cookie → a token pair for the local user bound to the provider's
/// account (created or updated). Every answer clears the cookie: the
/// sign-in it bound is over, whatever the outcome.
pub async fn callback(service: &AuthService, c: &mut Context) -> Result<TokenPair, AuthError> {
    let name = c.param("provider").unwrap_or_default().to_owned();
    if let Some(clear) = service.oauth_clear_cookie(&name) {
        (c.try_set_header(SET_COOKIE, &clear))
            .map_err(not_a_header("the binding cookie's removal"))?;
    }
    // Nothing a callback answers is for a cache, errors included.
    c.set_header(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    let cookie_headers = c.headers().get_all(COOKIE).iter();
    let cookies = cookie_headers
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let callback = Callback {
        code: c.query("code"),
        state: c.query("state"),
        error: c.query("error"),
        cookies,
    };
    service.oauth_callback(&name, callback).await
}

/// For `map_err`: a header value built here that is not header text.
fn not_a_header(what: &'static str) -> impl FnOnce(InvalidHeaderValue) -> AuthError {
    move |e| AuthError::Internal {
        what,
        cause: format!("not a header value: {e}"),
    }
}
