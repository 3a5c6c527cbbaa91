//! The binding of a sign-in to the browser that started it: a short-lived
//! cookie set with the redirect to the provider and required, with the
//! `state`, on the callback (RFC 9700 §4.7.1; oauth2-proxy's CSRF cookie
//! and Envoy's OAuth2 filter do the same).
//!
//! Without it, the state alone proves only that *someone* started the
//! sign-in: an attacker could start one, authorize with their own account,
//! and make a victim's browser open the callback URL, signing the victim in
//! as the attacker (login CSRF, RFC 6749 §10.12). With it, the callback also
//! needs a cookie only the starting browser holds.
//!
//! The cookie's value is a keyed hash of the provider and the state
//! (HMAC-SHA256 under a key derived from the signing secret), so nothing
//! more is stored per sign-in and every instance sharing the secret checks
//! it alike. The attributes: `HttpOnly` (no script reads it), `SameSite=Lax`
//! (sent on the provider's top-level redirect back, not on cross-site
//! sub-requests), `Path` = the provider's callback path (sent nowhere else),
//! `Max-Age` = the state's 10 minutes, and `Secure` when the service is
//! served over TLS. Every callback answer clears it.

use crate::services::token_auth::config::Provider;
use crate::services::token_auth::pending::STATE_TTL;
use crate::services::token_auth::tokens::constant_time_eq;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

type HmacSha256 = Hmac<Sha256>;

/// The cookie's name.
pub const COOKIE: &str = "oauth_state";

/// What separates this key from every other use of the signing secret.
const KEY_LABEL: &[u8] = b"handwire token-auth: OAuth state binding v1";

/// Why a callback's binding does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingError {
    /// The request carries no binding cookie.
    Missing,
    /// The request carries a binding cookie, but of another sign-in.
    Mismatch,
}

impl fmt::Display for BindingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingError::Missing => write!(
                f,
                "no {COOKIE} cookie: finish the sign-in in the browser that started it"
            ),
            BindingError::Mismatch => write!(
                f,
                "the {COOKIE} cookie is for another sign-in: finish the sign-in \
                 in the browser that started it"
            ),
        }
    }
}

impl std::error::Error for BindingError {}

/// Makes and checks binding cookies.
#[derive(Clone)]
pub struct Binding {
    key: [u8; 32],
    secure: bool,
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Binding")
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

impl Binding {
    /// Bindings keyed from the token signing `secret`; `secure` marks the
    /// cookies `Secure` (set it when the listener serves TLS).
    pub fn new(secret: &[u8], secure: bool) -> Binding {
        Binding {
            key: hmac_sha256(secret, &[KEY_LABEL]),
            secure,
        }
    }

    /// The cookie value binding the sign-in `state` with `provider`.
    pub fn value(&self, provider: Provider, state: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(provider, state))
    }

    /// Whether one of the `presented` cookie values binds `state` with
    /// `provider`; each is compared in constant time.
    pub fn verify(
        &self,
        provider: Provider,
        state: &str,
        presented: &[String],
    ) -> Result<(), BindingError> {
        if presented.is_empty() {
            return Err(BindingError::Missing);
        }
        let expected = self.mac(provider, state);
        let matches = presented.iter().any(|value| {
            URL_SAFE_NO_PAD
                .decode(value)
                .is_ok_and(|bytes| constant_time_eq(&bytes, &expected))
        });
        matches.then_some(()).ok_or(BindingError::Mismatch)
    }

    /// The `Set-Cookie` value that hands the browser `value`, sent only
    /// to `path` (the callback's) for the state's lifetime.
    pub fn set_cookie(&self, value: &str, path: &str) -> String {
        set_cookie(value, path, STATE_TTL, self.secure)
    }

    /// The `Set-Cookie` value that removes the cookie for `path`.
    pub fn clear_cookie(&self, path: &str) -> String {
        set_cookie("", path, 0, self.secure)
    }

    fn mac(&self, provider: Provider, state: &str) -> [u8; 32] {
        hmac_sha256(
            &self.key,
            &[provider.as_str().as_bytes(), b"\0", state.as_bytes()],
        )
    }
}

/// The cookie builder: `oauth_state=VALUE; Path=…; Max-Age=…; HttpOnly;
/// SameSite=Lax`, and `; Secure` when `secure`.
pub fn set_cookie(value: &str, path: &str, max_age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
}

/// The values of every binding cookie in `Cookie` request headers (a
/// browser may send several of one name, for different paths).
pub fn presented<'a>(cookie_headers: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    cookie_headers
        .into_iter()
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim_matches('"').to_string())
        .filter(|value| !value.is_empty())
        .collect()
}

/// The path a cookie for `redirect_uri` is sent to: its path, cut before
/// any `;` (which would end the attribute), `/` when it has none.
pub fn callback_path(redirect_uri: &str) -> String {
    let path = redirect_uri
        .parse::<http::Uri>()
        .map(|uri| uri.path().to_owned())
        .unwrap_or_default();
    let path = path.split(';').next().unwrap_or_default();
    if path.starts_with('/') {
        path.to_owned()
    } else {
        "/".to_owned()
    }
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> Binding {
        Binding::new(b"a test secret of at least 32 bytes!", false)
    }

    #[test]
    fn the_cookie_of_a_sign_in_verifies_only_that_sign_in() {
        let b = binding();
        let value = b.value(Provider::Github, "state-1");
        assert_eq!(value.len(), 43, "256 bits in base64url");
        let ok = |state, presented: &[&str]| {
            let presented: Vec<String> = presented.iter().map(|s| s.to_string()).collect();
            b.verify(Provider::Github, state, &presented)
        };
        assert_eq!(ok("state-1", &[&value]), Ok(()));
        assert_eq!(ok("state-1", &[]), Err(BindingError::Missing));
        assert_eq!(ok("state-2", &[&value]), Err(BindingError::Mismatch));
        assert_eq!(ok("state-1", &["garbage!"]), Err(BindingError::Mismatch));
        assert_eq!(
            ok("state-1", &["other", &value]),
            Ok(()),
            "any one may match"
        );
        let for_google = vec![b.value(Provider::Google, "state-1")];
        assert_eq!(
            b.verify(Provider::Github, "state-1", &for_google),
            Err(BindingError::Mismatch)
        );
        let other_secret = Binding::new(b"another secret of at least 32 bytes", false);
        assert_ne!(other_secret.value(Provider::Github, "state-1"), value);
    }

    #[test]
    fn the_cookie_is_httponly_lax_scoped_to_the_callback_and_lives_ten_minutes() {
        assert_eq!(
            binding().set_cookie("v", "/auth/oauth/github/callback"),
            "oauth_state=v; Path=/auth/oauth/github/callback; Max-Age=600; HttpOnly; SameSite=Lax"
        );
        assert_eq!(
            binding().clear_cookie("/cb"),
            "oauth_state=; Path=/cb; Max-Age=0; HttpOnly; SameSite=Lax"
        );
        let tls = Binding::new(b"a test secret of at least 32 bytes!", true);
        assert!(tls
            .set_cookie("v", "/cb")
            .ends_with("; SameSite=Lax; Secure"));
        assert!(tls.clear_cookie("/cb").ends_with("; Secure"));
    }

    #[test]
    fn presented_values_are_read_from_every_cookie_header() {
        let headers = [
            "theme=dark; oauth_state=abc",
            "oauth_state=\"def\";other=1; oauth_state=",
            "oauth_statex=no",
        ];
        assert_eq!(presented(headers), ["abc", "def"]);
        assert!(presented([]).is_empty());
    }

    #[test]
    fn the_cookie_path_is_the_redirect_uris_path() {
        for (uri, path) in [
            (
                "https://a.example/auth/oauth/github/callback",
                "/auth/oauth/github/callback",
            ),
            ("http://127.0.0.1:8000/p/cb?x=1", "/p/cb"),
            ("http://h/cb;v=1", "/cb"),
            ("http://h", "/"),
            ("not a uri", "/"),
        ] {
            assert_eq!(callback_path(uri), path, "{uri}");
        }
    }
}
