//! Sign-in through an identity provider: the OAuth 2.0 authorization-code
//! flow (WeChat-style field names: `appid`, `secret`, `openid`), with PKCE.
//!
//! 1. [`OAuth::authorize_url`]: remember a new state and PKCE verifier
//!    (capped per client address), and build the provider URL the browser
//!    is redirected to and the cookie that binds the sign-in to that
//!    browser ([`binding`]).
//! 2. [`OAuth::complete`], on the callback: consume the state (single use),
//!    check the binding cookie, exchange the code at the token endpoint,
//!    read the user info, and return the identity to store — with the
//!    provider's tokens already sealed.
//!
//! Nothing is written to the database here: the caller stores the identity
//! only when every provider call has succeeded, so a failing provider leaves
//! no trace.
//!
//! [`captcha`] verifies a login's captcha at its provider with the same
//! provider client.

pub(crate) mod binding;
pub(crate) mod captcha;
pub(crate) mod cipher;
pub(crate) mod client;
pub mod form;

pub use cipher::ENC_KEY_VAR;
pub use pkce::challenge_s256;
pub use state::StateStore;
pub(crate) mod pkce;
pub(crate) mod state;

use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::config::{ConfigError, Provider, ProviderConfig};
use crate::services::token_auth::pending::{PendingSignIns, StateError};
use crate::services::token_auth::store::ProviderIdentity;
use binding::{Binding, BindingError};
use cipher::{CipherError, TokenCipher};
use client::{ProviderClient, ProviderError};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

/// Longest provider user id accepted (longer ids are refused).
const OPENID_MAX: usize = 100;

/// Why a sign-in failed.
#[derive(Debug)]
pub enum OAuthError {
    /// The provider in the path is not configured.
    UnknownProvider,
    /// The state is missing, unknown, used, expired or for another provider.
    InvalidState,
    /// The state was valid (and is now spent), but the request does not
    /// come from the browser that started the sign-in.
    Unbound(BindingError),
    /// The provider sent the user back with an error instead of a code.
    Denied(String),
    /// The callback has a valid state but no code.
    MissingCode,
    /// A call to the provider failed.
    Provider(ProviderError),
    /// The pending sign-ins could not be written or read (full, no
    /// randomness, or the shared store is down).
    States(StateError),
    /// Sealing the provider tokens failed.
    Cipher(CipherError),
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthError::UnknownProvider => write!(f, "unknown provider"),
            OAuthError::InvalidState => write!(f, "invalid state"),
            OAuthError::Unbound(e) => write!(f, "invalid state: {e}"),
            OAuthError::Denied(e) => write!(f, "sign-in was not granted by the provider: {e}"),
            OAuthError::MissingCode => write!(f, "missing code"),
            OAuthError::Provider(e) => write!(f, "identity provider failed: {e}"),
            OAuthError::States(e) => write!(f, "{e}"),
            OAuthError::Cipher(e) => write!(f, "cannot seal provider tokens: {e}"),
        }
    }
}

impl std::error::Error for OAuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OAuthError::Provider(e) => Some(e),
            OAuthError::States(e) => Some(e),
            OAuthError::Cipher(e) => Some(e),
            OAuthError::Unbound(e) => Some(e),
            OAuthError::UnknownProvider
            | OAuthError::InvalidState
            | OAuthError::Denied(_)
            | OAuthError::MissingCode => None,
        }
    }
}

/// The query of a callback request.
#[derive(Debug, Clone, Default)]
pub struct Callback {
    /// `code`, on success.
    pub code: Option<String>,
    /// `state`, always expected.
    pub state: Option<String>,
    /// `error`, when the user or provider declined.
    pub error: Option<String>,
    /// The request's `Cookie` header values, where the binding cookie is
    /// looked for.
    pub cookies: Vec<String>,
}

/// A sign-in begun: where to send the browser, and the cookie to give it.
#[derive(Debug, Clone)]
pub struct Redirect {
    /// The provider's authorization URL.
    pub url: String,
    /// The `Set-Cookie` value binding the sign-in to this browser.
    pub set_cookie: String,
}

/// A verified external identity, ready to store.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// What to store about the binding (tokens sealed).
    pub identity: ProviderIdentity,
    /// Username to use if a new local user is created.
    pub username_hint: String,
}

/// One configured provider and the client that calls it (its own pool and
/// trusted roots).
struct Registered {
    config: ProviderConfig,
    client: ProviderClient,
    /// Where the binding cookie is sent: the path of `redirect_uri`.
    cookie_path: String,
}

/// The OAuth side of the service.
pub struct OAuth {
    providers: BTreeMap<Provider, Registered>,
    states: Arc<dyn PendingSignIns>,
    cipher: TokenCipher,
    binding: Binding,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl OAuth {
    /// Sign-in with `providers`, provider tokens sealed by `cipher`,
    /// sign-ins bound to their browser by `binding`.
    ///
    /// Fails, naming the key, when a provider's `ca_file` cannot be used.
    pub fn new(
        providers: BTreeMap<Provider, ProviderConfig>,
        cipher: TokenCipher,
        binding: Binding,
        clock: Arc<dyn Clock>,
        states: Arc<dyn PendingSignIns>,
    ) -> Result<OAuth, ConfigError> {
        let providers = providers
            .into_iter()
            .map(|(provider, config)| {
                let client = ProviderClient::new(config.trusted_roots(provider)?);
                let cookie_path = binding::callback_path(&config.redirect_uri);
                let registered = Registered {
                    config,
                    client,
                    cookie_path,
                };
                Ok((provider, registered))
            })
            .collect::<Result<_, ConfigError>>()?;
        Ok(OAuth {
            providers,
            states,
            cipher,
            binding,
            clock,
        })
    }

    /// The configured provider named `name`.
    pub fn provider(&self, name: &str) -> Result<(Provider, &ProviderConfig), OAuthError> {
        let (provider, registered) = self.registered(name)?;
        Ok((provider, &registered.config))
    }

    fn registered(&self, name: &str) -> Result<(Provider, &Registered), OAuthError> {
        let provider = Provider::from_name(name).ok_or(OAuthError::UnknownProvider)?;
        let registered = self
            .providers
            .get(&provider)
            .ok_or(OAuthError::UnknownProvider)?;
        Ok((provider, registered))
    }

    /// Start a sign-in for the browser at `client`: the provider URL to
    /// redirect it to, and the cookie that binds the sign-in to it.
    pub async fn authorize_url(&self, name: &str, client: IpAddr) -> Result<Redirect, OAuthError> {
        let (provider, registered) = self.registered(name)?;
        let config = &registered.config;
        let (pending, started) =
            state::begin(provider, self.clock.now()).map_err(OAuthError::States)?;
        self.states
            .insert(started.state.clone(), pending, client)
            .await
            .map_err(OAuthError::States)?;
        let cookie = self.binding.value(provider, &started.state);
        let set_cookie = self
            .binding
            .set_cookie(provider, &cookie, &registered.cookie_path);
        let query = form::encode_pairs([
            ("appid", config.appid.as_str()),
            ("redirect_uri", config.redirect_uri.as_str()),
            ("response_type", "code"),
            ("scope", config.scope.as_str()),
            ("state", started.state.as_str()),
            ("code_challenge", started.code_challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]);
        let joiner = if config.auth_url.contains('?') {
            '&'
        } else {
            '?'
        };
        Ok(Redirect {
            url: format!("{}{joiner}{query}", config.auth_url),
            set_cookie,
        })
    }

    /// The `Set-Cookie` value that removes the binding cookie of provider
    /// `name` (every callback answer carries it); `None` for a provider
    /// that is not configured.
    pub fn clear_cookie(&self, name: &str) -> Option<String> {
        let (provider, registered) = self.registered(name).ok()?;
        Some(self.binding.clear_cookie(provider, &registered.cookie_path))
    }

    /// Finish a sign-in from its callback query.
    pub async fn complete(&self, name: &str, callback: Callback) -> Result<SignedIn, OAuthError> {
        let (provider, registered) = self.registered(name)?;
        let (config, client) = (&registered.config, &registered.client);
        let state = callback.state.ok_or(OAuthError::InvalidState)?;
        // Taken whatever happens next: a replayed callback finds nothing,
        // on this instance or another.
        let pending = self
            .states
            .take(&state)
            .await
            .map_err(OAuthError::States)?
            .filter(|p| p.provider == provider)
            .ok_or(OAuthError::InvalidState)?;
        // The state is spent by now: a callback opened in another browser
        // costs the sign-in, so it cannot be retried there either.
        self.binding
            .verify(
                provider,
                &state,
                callback.cookies.iter().map(String::as_str),
            )
            .map_err(OAuthError::Unbound)?;
        if let Some(error) = callback.error {
            return Err(OAuthError::Denied(error));
        }
        let code = callback
            .code
            .filter(|c| !c.is_empty())
            .ok_or(OAuthError::MissingCode)?;

        let tokens = client
            .exchange_code(config, &code, &pending.code_verifier)
            .await
            .map_err(OAuthError::Provider)?;
        let info = client
            .user_info(config, &tokens)
            .await
            .map_err(OAuthError::Provider)?;

        let openid = match (&tokens.openid, &info.openid) {
            (Some(a), Some(b)) if a != b => {
                return Err(OAuthError::Provider(ProviderError::BadResponse(
                    "user info is for a different openid than the token".into(),
                )))
            }
            (Some(id), _) | (None, Some(id)) => id.clone(),
            (None, None) => {
                return Err(OAuthError::Provider(ProviderError::BadResponse(
                    "no openid in the token answer or the user info".into(),
                )))
            }
        };
        if openid.is_empty() || openid.chars().count() > OPENID_MAX {
            return Err(OAuthError::Provider(ProviderError::BadResponse(format!(
                "openid must be 1 to {OPENID_MAX} characters"
            ))));
        }

        let context = |column: &str| format!("{provider}/{openid}/{column}");
        let access_token = self
            .cipher
            .seal(&tokens.access_token, &context("access_token"))
            .map_err(OAuthError::Cipher)?;
        let refresh_token = match &tokens.refresh_token {
            Some(t) => Some(
                self.cipher
                    .seal(t, &context("refresh_token"))
                    .map_err(OAuthError::Cipher)?,
            ),
            None => None,
        };
        let expires_at = tokens
            .expires_in
            .map(|s| i64::try_from(self.clock.now().saturating_add(s)).unwrap_or(i64::MAX));
        let nickname = info
            .nickname
            .map(|n| n.chars().take(100).collect::<String>())
            .filter(|n| !n.is_empty());
        let avatar_url = info
            .avatar
            .filter(|a| !a.is_empty() && a.chars().count() <= 500);
        Ok(SignedIn {
            username_hint: username_hint(provider, nickname.as_deref(), &openid),
            identity: ProviderIdentity {
                provider: provider.as_str().to_owned(),
                provider_user_id: openid,
                nickname,
                avatar_url,
                access_token: Some(access_token),
                refresh_token,
                expires_at,
            },
        })
    }

    /// The token cipher (to open stored provider tokens).
    pub fn cipher(&self) -> &TokenCipher {
        &self.cipher
    }

    /// Drop expired pending sign-ins.
    pub fn prune(&self) {
        self.states.prune();
    }
}

/// `github_TheOctocat`: provider plus the nickname's username-safe characters;
/// a hash of the openid when the nickname has none.
fn username_hint(provider: Provider, nickname: Option<&str>, openid: &str) -> String {
    let cleaned: String = nickname
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(40)
        .collect();
    if cleaned.is_empty() {
        let digest = Sha256::digest(openid.as_bytes());
        format!(
            "{provider}_{}",
            crate::services::token_auth::tokens::hex(&digest[..6])
        )
    } else {
        format!("{provider}_{cleaned}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn username_hints_are_safe_and_bounded() {
        assert_eq!(
            username_hint(Provider::Github, Some("The Octocat!"), "1"),
            "github_TheOctocat"
        );
        let hashed = username_hint(Provider::Wechat, Some("微信用户"), "o-123");
        assert!(
            hashed.starts_with("wechat_") && hashed.len() == 7 + 12,
            "{hashed}"
        );
        assert_eq!(hashed, username_hint(Provider::Wechat, None, "o-123"));
        assert!(username_hint(Provider::Google, Some(&"x".repeat(99)), "1").len() <= 50);
        assert!(crate::services::token_auth::user::check_username(&hashed).is_ok());
    }

    #[test]
    fn oauth_error_exposes_the_wrapped_error_as_source() {
        use std::error::Error as _;
        let cases = [
            (
                OAuthError::Provider(ProviderError::Timeout),
                Some(ProviderError::Timeout.to_string()),
            ),
            (
                OAuthError::States(StateError::Full),
                Some(StateError::Full.to_string()),
            ),
            (
                OAuthError::Cipher(CipherError::Open),
                Some(CipherError::Open.to_string()),
            ),
            (OAuthError::UnknownProvider, None),
            (OAuthError::InvalidState, None),
            (
                OAuthError::Unbound(BindingError::Missing("c".into())),
                Some(BindingError::Missing("c".into()).to_string()),
            ),
            (OAuthError::Denied("access_denied".into()), None),
            (OAuthError::MissingCode, None),
        ];
        for (err, want) in cases {
            assert_eq!(err.source().map(|s| s.to_string()), want, "{err}");
        }
    }
}
