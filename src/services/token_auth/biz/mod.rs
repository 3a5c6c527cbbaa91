//! The token-auth use cases (Kratos' `biz`, as the greeter's): register,
//! log in, refresh, log out, authenticate a bearer token, and sign in
//! through an identity provider. The HTTP routes ([`super::routes`]) parse
//! a request, call one method of [`AuthService`] and turn its [`AuthError`]
//! into a status and a JSON body; nothing here knows HTTP.
//!
//! [`AuthService`] holds one of each part — accounts, token issuer,
//! password hasher, blacklist, login and registration limits, optional
//! OAuth and captcha — behind private fields; [`super::service`] assembles
//! it from settings.

mod error;

pub use error::AuthError;

use crate::ops::ratelimit::PerClient;
use crate::protocol::jwt::JwtError;
use crate::services::token_auth::backend::{Accounts, LoginLimits};
use crate::services::token_auth::blacklist::Blacklist;
use crate::services::token_auth::limiter::Admission;
use crate::services::token_auth::oauth::captcha::{Captcha, Verdict};
use crate::services::token_auth::oauth::{Callback, OAuth, OAuthError, Redirect};
use crate::services::token_auth::passwords::Passwords;
use crate::services::token_auth::store::{NewUser, StoreError};
use crate::services::token_auth::tokens::{self, Claims, TokenKind, TokenPair, Tokens};
use crate::services::token_auth::user::{check_email, check_username, Role, User, USERNAME_MAX};
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A password login.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// As typed; any ASCII case.
    pub username: String,
    /// As typed.
    pub password: String,
    /// The token the captcha widget gave the client, if any.
    pub captcha_token: Option<String>,
}

/// A new account.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The username asked for.
    pub username: String,
    /// The password, checked against the policy.
    pub password: String,
    /// Optional; empty is none.
    pub email: Option<String>,
}

/// The running service's shared state, and its use cases.
pub struct AuthService {
    accounts: Arc<dyn Accounts>,
    tokens: Tokens,
    passwords: Passwords,
    blacklist: Blacklist,
    limiter: Arc<dyn LoginLimits>,
    registrations: PerClient,
    oauth: Option<OAuth>,
    captcha: Option<Captcha>,
    maintenance_every: Duration,
    /// Set when shutdown begins: `/readyz` answers 503 from then on.
    draining: AtomicBool,
}

impl fmt::Debug for AuthService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthService")
            .field("passwords", &self.passwords)
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

/// Every part of an [`AuthService`], as [`super::service`] assembles them.
pub(crate) struct Parts {
    pub accounts: Arc<dyn Accounts>,
    pub tokens: Tokens,
    pub passwords: Passwords,
    pub blacklist: Blacklist,
    pub limiter: Arc<dyn LoginLimits>,
    pub registrations: PerClient,
    pub oauth: Option<OAuth>,
    pub captcha: Option<Captcha>,
    pub maintenance_every: Duration,
}

impl AuthService {
    /// The service over `parts`.
    pub(crate) fn new(parts: Parts) -> AuthService {
        AuthService {
            accounts: parts.accounts,
            tokens: parts.tokens,
            passwords: parts.passwords,
            blacklist: parts.blacklist,
            limiter: parts.limiter,
            registrations: parts.registrations,
            oauth: parts.oauth,
            captcha: parts.captcha,
            maintenance_every: parts.maintenance_every,
            draining: AtomicBool::new(false),
        }
    }

    /// The password hasher (its count of bcrypt computations, for tests).
    pub fn passwords(&self) -> &Passwords {
        &self.passwords
    }

    /// The users and their provider bindings (for tools that create an
    /// account directly, as the binary's `create-admin` does, and tests).
    pub fn accounts(&self) -> &dyn Accounts {
        self.accounts.as_ref()
    }

    /// The OAuth sign-in, when providers are configured.
    pub fn oauth(&self) -> Option<&OAuth> {
        self.oauth.as_ref()
    }

    /// The login limits, then the password check: the user whose
    /// credentials these are. A limiter that cannot be read or written
    /// refuses: the limits must hold, also when the shared store is down.
    pub async fn check_credentials(
        &self,
        client: IpAddr,
        creds: Credentials,
    ) -> Result<User, AuthError> {
        let admission = self
            .limiter
            .admit(client, &creds.username)
            .await
            .map_err(AuthError::store("login limiter"))?;
        match admission {
            Admission::Allowed => {}
            Admission::TooManyAttempts { retry_after } => {
                return Err(AuthError::TooManyAttempts { retry_after })
            }
            Admission::Locked { retry_after } => return Err(AuthError::Locked { retry_after }),
        }
        // Before bcrypt: a login without its captcha costs no hashing.
        self.check_captcha(client, &creds).await?;
        // Names that cannot exist skip the lookup, not the hashing.
        let found = if creds.username.chars().count() <= USERNAME_MAX {
            self.accounts
                .credentials(&creds.username)
                .await
                .map_err(AuthError::store("loading credentials"))?
        } else {
            None
        };
        let (user, hash) = found.unzip();
        let matches = self
            .passwords
            .verify(creds.password, hash)
            .await
            .map_err(AuthError::internal("verifying password"))?;
        if let Some(user) = user.filter(|_| matches) {
            // No tokens unless the failure count was reset where every
            // instance sees it.
            self.limiter
                .record_success(&creds.username)
                .await
                .map_err(AuthError::store("login limiter"))?;
            return Ok(user);
        }
        // A failure that cannot be counted is not answered as a plain
        // refusal: the lock must not be dodged by a limiter outage.
        let outcome = self
            .limiter
            .record_failure(&creds.username)
            .await
            .map_err(AuthError::store("login limiter"))?;
        Err(AuthError::BadCredentials {
            captcha_required: outcome.captcha_required,
        })
    }

    /// When the account's failures call for it and a provider is
    /// configured, the login's captcha must be confirmed by the provider;
    /// never a pass when it cannot be.
    async fn check_captcha(&self, client: IpAddr, creds: &Credentials) -> Result<(), AuthError> {
        let Some(captcha) = &self.captcha else {
            return Ok(()); // hint only, said at start-up
        };
        let required = self
            .limiter
            .captcha_required(&creds.username)
            .await
            .map_err(AuthError::store("login limiter"))?;
        if !required {
            return Ok(());
        }
        let Some(token) = creds.captcha_token.as_deref() else {
            return Err(AuthError::CaptchaRequired);
        };
        match captcha.verify(token, client).await {
            Ok(Verdict::Passed) => Ok(()),
            Ok(Verdict::Failed(reason)) => Err(AuthError::CaptchaFailed { reason }),
            Err(e) => Err(AuthError::CaptchaUnavailable(e)),
        }
    }

    /// Log in: a token pair for the user `creds` name.
    pub async fn login(&self, client: IpAddr, creds: Credentials) -> Result<TokenPair, AuthError> {
        let user = self.check_credentials(client, creds).await?;
        self.issue_pair(&user)
    }

    /// The simpler login: one token valid 24 hours.
    pub async fn simple_login(
        &self,
        client: IpAddr,
        creds: Credentials,
    ) -> Result<String, AuthError> {
        let user = self.check_credentials(client, creds).await?;
        self.tokens
            .issue_simple(&user)
            .map_err(AuthError::internal("issuing token"))
    }

    fn issue_pair(&self, user: &User) -> Result<TokenPair, AuthError> {
        self.tokens
            .issue_pair(user)
            .map_err(AuthError::internal("issuing tokens"))
    }

    /// Register a user with role `user` and sign them in. The client's
    /// registration limit is checked before validation and bcrypt, so a
    /// refused request costs nothing; a taken username is said first, so a
    /// second registration under one name is refused as taken whatever
    /// else is wrong with it.
    pub async fn register(
        &self,
        client: IpAddr,
        reg: Registration,
    ) -> Result<TokenPair, AuthError> {
        if let Err(wait) = self.registrations.admit(client) {
            let retry_after = wait.as_secs().max(1);
            return Err(AuthError::TooManyRegistrations { retry_after });
        }
        let invalid = |e: &dyn fmt::Display| AuthError::Invalid(e.to_string());
        check_username(&reg.username).map_err(|e| invalid(&e))?;
        let taken = self
            .accounts
            .credentials(&reg.username)
            .await
            .map_err(AuthError::store("looking up username"))?;
        if taken.is_some() {
            return Err(AuthError::UsernameTaken);
        }
        Passwords::check_policy(&reg.password).map_err(|e| invalid(&e))?;
        let email = reg.email.filter(|e| !e.is_empty());
        if let Some(email) = &email {
            check_email(email).map_err(|e| invalid(&e))?;
        }
        let password_hash = self
            .passwords
            .hash(reg.password)
            .await
            .map_err(AuthError::internal("hashing password"))?;
        let new = NewUser {
            username: reg.username,
            password_hash,
            email,
            role: Role::User,
        };
        // Two registrations racing for one name: the store's unique index decides.
        let user = self.accounts.create_user(new).await.map_err(|e| match e {
            StoreError::UsernameTaken => AuthError::UsernameTaken,
            StoreError::EmailTaken => AuthError::EmailTaken,
            error => AuthError::Store {
                what: "creating user",
                error,
            },
        })?;
        self.issue_pair(&user)
    }

    /// A new pair for a refresh token. The token works once (rotation): a
    /// second use means it leaked, and its whole family is revoked.
    pub async fn refresh(&self, refresh_token: &str) -> Result<TokenPair, AuthError> {
        let claims = self
            .tokens
            .verify(refresh_token, TokenKind::Refresh)
            .map_err(AuthError::refused_token)?;
        // The token itself is not looked up here: a listed (used or logged
        // out) refresh token is caught below as a second use.
        let family_revoked = self
            .blacklist
            .family_revoked(&claims)
            .await
            .map_err(AuthError::store("blacklist lookup"))?;
        if family_revoked {
            return Err(AuthError::TokenRevoked);
        }
        // Reload the user: the new access token carries the current role.
        // The token must name the account it was issued for (same key).
        let user = self.holder(&claims).await?;
        // Listing the token is atomic, so of two concurrent uses exactly
        // one is first.
        let first_use = self
            .blacklist
            .use_refresh_token(&claims)
            .await
            .map_err(AuthError::store("using refresh token"))?;
        if !first_use {
            crate::ops::log::message(
                "token-auth",
                format_args!(
                    "refresh token of user {} used twice: its family is revoked",
                    user.id
                ),
            );
            self.blacklist
                .revoke_family(&claims)
                .await
                .map_err(AuthError::store("revoking token family"))?;
            return Err(AuthError::TokenRevoked);
        }
        self.tokens
            .issue_pair_in(&user, &claims.fam)
            .map_err(AuthError::internal("issuing tokens"))
    }

    /// The account `claims` were issued for, if it still holds them (same
    /// id, same account key); else the token is invalid.
    async fn holder(&self, claims: &Claims) -> Result<User, AuthError> {
        self.accounts
            .user_by_id(claims.user_id)
            .await
            .map_err(AuthError::store("loading user"))?
            .filter(|user| tokens::issued_for(claims, user))
            .ok_or_else(|| AuthError::TokenInvalid {
                why: format!("user {} no longer holds it", claims.user_id),
            })
    }

    /// Log out the caller of `access`: the access token, the refresh token
    /// if given, and their families are revoked. The refresh token is
    /// checked fully before anything is revoked.
    pub async fn logout(
        &self,
        access: &Claims,
        refresh_token: Option<&str>,
    ) -> Result<(), AuthError> {
        let refresh = match refresh_token {
            None => None,
            Some(token) => match self.tokens.verify(token, TokenKind::Refresh) {
                Ok(claims) if claims.user_id == access.user_id => Some(claims),
                Ok(_) => {
                    let message = "refresh_token belongs to another user";
                    return Err(AuthError::Invalid(message.into()));
                }
                // An expired refresh token is already useless: nothing to revoke.
                Err(JwtError::Expired) => None,
                Err(_) => return Err(AuthError::Invalid("refresh_token invalid".into())),
            },
        };
        // The tokens named, and their families: the refresh token of this
        // sign-in ends with it even when the caller did not send it.
        for claims in std::iter::once(access).chain(refresh.as_ref()) {
            self.blacklist
                .revoke(claims)
                .await
                .map_err(AuthError::store("revoking token"))?;
            self.blacklist
                .revoke_family(claims)
                .await
                .map_err(AuthError::store("revoking token family"))?;
        }
        Ok(())
    }

    /// Who presents the access token `token`: its claims and the account
    /// it names, if it verifies, is not revoked and the account still
    /// holds it.
    pub async fn authenticate(&self, token: &str) -> Result<(Claims, User), AuthError> {
        let claims = self
            .tokens
            .verify(token, TokenKind::Access)
            .map_err(AuthError::refused_token)?;
        let revoked = self
            .blacklist
            .is_revoked(&claims)
            .await
            .map_err(AuthError::store("blacklist lookup"))?;
        if revoked {
            return Err(AuthError::TokenRevoked);
        }
        let user = self.holder(&claims).await?;
        Ok((claims, user))
    }

    /// Every user, oldest first.
    pub async fn list_users(&self) -> Result<Vec<User>, AuthError> {
        self.accounts
            .list_users()
            .await
            .map_err(AuthError::store("listing users"))
    }

    fn oauth_flow(&self) -> Result<&OAuth, AuthError> {
        self.oauth
            .as_ref()
            .ok_or(AuthError::OAuth(OAuthError::UnknownProvider))
    }

    /// Start a sign-in with `provider` for `client`: where to send the
    /// browser, and the cookie binding the sign-in to it.
    pub async fn oauth_login(&self, provider: &str, client: IpAddr) -> Result<Redirect, AuthError> {
        self.oauth_flow()?
            .authorize_url(provider, client)
            .await
            .map_err(AuthError::OAuth)
    }

    /// The `Set-Cookie` value that clears `provider`'s binding cookie.
    pub fn oauth_clear_cookie(&self, provider: &str) -> Option<String> {
        self.oauth.as_ref()?.clear_cookie(provider)
    }

    /// Complete a sign-in with `provider`: the local user bound to the
    /// provider's account (created or updated, only once every provider
    /// call succeeded) and a token pair for them.
    pub async fn oauth_callback(
        &self,
        provider: &str,
        callback: Callback,
    ) -> Result<TokenPair, AuthError> {
        let signed_in = self
            .oauth_flow()?
            .complete(provider, callback)
            .await
            .map_err(AuthError::OAuth)?;
        let user = self
            .accounts
            .sign_in_with_provider(signed_in.identity, signed_in.username_hint)
            .await
            .map_err(AuthError::store("storing provider sign-in"))?;
        self.issue_pair(&user)
    }

    /// One round of housekeeping: prune the blacklist, the limiters and the
    /// pending OAuth states. Returns how many blacklist rows were deleted.
    pub async fn maintain(&self) -> Result<usize, StoreError> {
        self.limiter.prune();
        self.registrations.prune();
        if let Some(oauth) = &self.oauth {
            oauth.prune();
        }
        self.blacklist.prune().await
    }

    /// Shutdown has begun: report not ready, so traffic goes elsewhere
    /// while in-flight requests finish.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Readiness: not draining, and the user store answers a lookup.
    pub async fn ready(&self) -> Result<(), String> {
        if self.draining.load(Ordering::Relaxed) {
            return Err("draining: the server is shutting down".to_string());
        }
        self.accounts
            .user_by_id(0)
            .await
            .map(|_| ())
            .map_err(|e| format!("user store: {e}"))
    }

    /// Run [`maintain`](Self::maintain) every `maintenance_every` until the
    /// returned task is aborted (or the runtime stops).
    pub fn spawn_maintenance(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let service = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(service.maintenance_every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(e) = service.maintain().await {
                    crate::ops::log::message("token-auth", format_args!("maintenance failed: {e}"));
                }
            }
        })
    }
}

#[cfg(test)]
mod tests;
