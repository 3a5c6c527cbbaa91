//! The use cases' one error type: what went wrong in domain terms, with no
//! HTTP in it; each transport chooses its own answer for each kind.

use crate::protocol::jwt::JwtError;
use crate::services::token_auth::oauth::captcha::CaptchaError;
use crate::services::token_auth::oauth::OAuthError;
use crate::services::token_auth::store::StoreError;
use std::fmt;

/// Why a use case refused or failed. Each transport gives each kind its
/// own answer (the HTTP one: [`super::routes`]).
#[derive(Debug)]
pub enum AuthError {
    /// A field breaks a rule (username, email, password policy; a refresh
    /// token given to logout that is invalid or another user's).
    Invalid(String),
    /// Unknown user or wrong password, the same for both; whether the next
    /// login must carry a captcha.
    BadCredentials {
        /// The account's failures now call for a captcha.
        captcha_required: bool,
    },
    /// The login needs a solved captcha and carries none.
    CaptchaRequired,
    /// The captcha provider did not confirm the token.
    CaptchaFailed {
        /// The provider's reason, for the log.
        reason: String,
    },
    /// The captcha provider gave no usable answer.
    CaptchaUnavailable(CaptchaError),
    /// Too many login attempts in the window.
    TooManyAttempts {
        /// Seconds until one is allowed again.
        retry_after: u64,
    },
    /// The account is locked after too many failures.
    Locked {
        /// Seconds until the lock ends.
        retry_after: u64,
    },
    /// Too many registrations from this client.
    TooManyRegistrations {
        /// Seconds until one is allowed again.
        retry_after: u64,
    },
    /// The username is taken.
    UsernameTaken,
    /// The email is taken.
    EmailTaken,
    /// The token's `exp` has passed.
    TokenExpired,
    /// Bad signature, bad format, wrong type, or an account that no longer
    /// holds it.
    TokenInvalid {
        /// What exactly, for the log only.
        why: String,
    },
    /// The token, or its family, is on the blacklist.
    TokenRevoked,
    /// The OAuth sign-in failed.
    OAuth(OAuthError),
    /// A store call failed while doing `what`.
    Store {
        /// What was being done, for the log.
        what: &'static str,
        /// The store's error.
        error: StoreError,
    },
    /// Something on our side failed while doing `what`.
    Internal {
        /// What was being done, for the log.
        what: &'static str,
        /// The cause, for the log only.
        cause: String,
    },
}

impl AuthError {
    /// For `map_err`: a failed store call while doing `what`.
    pub(super) fn store(what: &'static str) -> impl FnOnce(StoreError) -> AuthError {
        move |error| AuthError::Store { what, error }
    }

    /// For `map_err`: an internal failure while doing `what`.
    pub(super) fn internal<E: fmt::Display>(what: &'static str) -> impl FnOnce(E) -> AuthError {
        move |cause| AuthError::Internal {
            what,
            cause: cause.to_string(),
        }
    }

    /// A token that does not verify: expired, or anything else.
    pub(super) fn refused_token(e: JwtError) -> AuthError {
        match e {
            JwtError::Expired => AuthError::TokenExpired,
            why => AuthError::TokenInvalid {
                why: why.to_string(),
            },
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Invalid(message) => f.write_str(message),
            AuthError::BadCredentials { .. } => f.write_str("invalid username or password"),
            AuthError::CaptchaRequired => f.write_str("captcha required"),
            AuthError::CaptchaFailed { reason } => write!(f, "captcha refused: {reason}"),
            AuthError::CaptchaUnavailable(e) => write!(f, "{e}"),
            AuthError::TooManyAttempts { retry_after } => {
                write!(f, "too many login attempts, retry after {retry_after} s")
            }
            AuthError::Locked { retry_after } => {
                write!(f, "account locked, retry after {retry_after} s")
            }
            AuthError::TooManyRegistrations { retry_after } => {
                write!(f, "too many registrations, retry after {retry_after} s")
            }
            AuthError::UsernameTaken => f.write_str("username exists"),
            AuthError::EmailTaken => f.write_str("email exists"),
            AuthError::TokenExpired => f.write_str("token expired"),
            AuthError::TokenInvalid { why } => write!(f, "token invalid: {why}"),
            AuthError::TokenRevoked => f.write_str("token revoked"),
            AuthError::OAuth(e) => write!(f, "{e}"),
            AuthError::Store { what, error } => write!(f, "{what}: {error}"),
            AuthError::Internal { what, cause } => write!(f, "{what}: {cause}"),
        }
    }
}

impl std::error::Error for AuthError {}
