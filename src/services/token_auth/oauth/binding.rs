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
//! it alike. It is named per provider, so that sign-ins with two providers
//! do not overwrite each other: over TLS `__Host-oauth_state_github`, a
//! prefix the browser only accepts with `Secure`, `Path=/` and no `Domain`,
//! so a sibling subdomain cannot plant one (cookie tossing); over plain
//! HTTP (development) `oauth_state_github`, sent to the provider's callback
//! path only. Only the listener's name is read, and a callback carrying
//! two cookies of that name fails closed: one of them was planted. The other
//! attributes: `HttpOnly` (no script reads it), `SameSite=Lax` (sent on the
//! provider's top-level redirect back, not on cross-site sub-requests) and
//! `Max-Age` = the state's 10 minutes. Every callback answer clears it.

use crate::services::token_auth::config::Provider;
use crate::services::token_auth::pending::STATE_TTL;
use crate::services::token_auth::tokens::constant_time_eq;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

type HmacSha256 = Hmac<Sha256>;

/// The cookie's name before the provider's: `oauth_state_github`.
pub const COOKIE: &str = "oauth_state";

/// The name's prefix over TLS: the browser keeps such a cookie only when it
/// is `Secure`, for `Path=/` and without `Domain` (RFC 6265bis §4.1.3.2).
pub const HOST_PREFIX: &str = "__Host-";

/// What separates this key from every other use of the signing secret.
const KEY_LABEL: &[u8] = b"handwire token-auth: OAuth state binding v1";

/// Why a callback's binding does not hold; each names the cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingError {
    /// The request carries no binding cookie.
    Missing(String),
    /// The request carries more than one binding cookie for the provider:
    /// one was planted, so none is trusted.
    Several(String),
    /// The request carries a binding cookie, but of another sign-in.
    Mismatch(String),
}

impl fmt::Display for BindingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingError::Missing(name) => write!(
                f,
                "no {name} cookie: finish the sign-in in the browser that started it"
            ),
            BindingError::Several(name) => write!(
                f,
                "several {name} cookies: clear this site's cookies and sign in again"
            ),
            BindingError::Mismatch(name) => write!(
                f,
                "the {name} cookie is for another sign-in: finish the sign-in \
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

    /// The cookie's name for `provider`: `__Host-oauth_state_github` over
    /// TLS, `oauth_state_github` over plain HTTP.
    pub fn cookie_name(&self, provider: Provider) -> String {
        let prefix = if self.secure { HOST_PREFIX } else { "" };
        format!("{prefix}{COOKIE}_{provider}")
    }

    /// Whether the request's `Cookie` headers carry exactly one binding
    /// cookie for `provider`, and it binds `state` (compared in constant
    /// time). Two or more fail closed, whatever their values.
    pub fn verify<'a>(
        &self,
        provider: Provider,
        state: &str,
        cookie_headers: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), BindingError> {
        let name = self.cookie_name(provider);
        let values = presented(&name, cookie_headers);
        let value = match values.as_slice() {
            [] | [""] => return Err(BindingError::Missing(name)),
            [value] => value,
            _ => return Err(BindingError::Several(name)),
        };
        let expected = self.mac(provider, state);
        URL_SAFE_NO_PAD
            .decode(value)
            .is_ok_and(|bytes| constant_time_eq(&bytes, &expected))
            .then_some(())
            .ok_or(BindingError::Mismatch(name))
    }

    /// The `Set-Cookie` value that hands the browser `value` for
    /// `provider` for the state's lifetime, sent only to `callback_path`
    /// over plain HTTP (`Path=/`, as `__Host-` demands, over TLS).
    pub fn set_cookie(&self, provider: Provider, value: &str, callback_path: &str) -> String {
        self.cookie(provider, value, callback_path, STATE_TTL)
    }

    /// The `Set-Cookie` value that removes `provider`'s cookie.
    pub fn clear_cookie(&self, provider: Provider, callback_path: &str) -> String {
        self.cookie(provider, "", callback_path, 0)
    }

    /// `NAME=VALUE; Path=…; Max-Age=…; HttpOnly; SameSite=Lax`, and
    /// `; Secure` (with `Path=/`) over TLS.
    fn cookie(&self, provider: Provider, value: &str, callback_path: &str, max_age: u64) -> String {
        let name = self.cookie_name(provider);
        let (path, secure) = if self.secure {
            ("/", "; Secure")
        } else {
            (callback_path, "")
        };
        format!("{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
    }

    fn mac(&self, provider: Provider, state: &str) -> [u8; 32] {
        hmac_sha256(
            &self.key,
            &[provider.as_str().as_bytes(), b"\0", state.as_bytes()],
        )
    }
}

/// The values of every cookie called `name` in `Cookie` request headers,
/// empty ones included (a browser sends two of one name when they differ
/// in path or domain: one set by us, one planted).
fn presented<'a>(name: &str, cookie_headers: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    cookie_headers
        .into_iter()
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(n, _)| *n == name)
        .map(|(_, value)| value.trim().trim_matches('"'))
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

    const SECRET: &[u8] = b"a test secret of at least 32 bytes!";

    fn binding() -> Binding {
        Binding::new(SECRET, false)
    }

    #[test]
    fn the_cookie_of_a_sign_in_verifies_only_that_sign_in() {
        let b = binding();
        let value = b.value(Provider::Github, "state-1");
        assert_eq!(value.len(), 43, "256 bits in base64url");
        let own = format!("oauth_state_github={value}");
        let ok = |state, header: &str| b.verify(Provider::Github, state, [header]);
        let name = || "oauth_state_github".to_string();
        assert_eq!(ok("state-1", &own), Ok(()));
        assert_eq!(ok("state-1", ""), Err(BindingError::Missing(name())));
        assert_eq!(
            ok("state-1", "oauth_state_github="),
            Err(BindingError::Missing(name()))
        );
        assert_eq!(ok("state-2", &own), Err(BindingError::Mismatch(name())));
        assert_eq!(
            ok("state-1", "oauth_state_github=garbage!"),
            Err(BindingError::Mismatch(name()))
        );
        let google = format!("oauth_state_google={value}");
        assert_eq!(ok("state-1", &google), Err(BindingError::Missing(name())));
        let for_google = format!(
            "oauth_state_github={}",
            b.value(Provider::Google, "state-1")
        );
        assert_eq!(
            ok("state-1", &for_google),
            Err(BindingError::Mismatch(name()))
        );
        let other_secret = Binding::new(b"another secret of at least 32 bytes", false);
        assert_ne!(other_secret.value(Provider::Github, "state-1"), value);
    }

    #[test]
    fn two_binding_cookies_for_one_provider_fail_closed_even_if_one_matches() {
        let b = binding();
        let own = format!("oauth_state_github={}", b.value(Provider::Github, "s"));
        let several = Err(BindingError::Several("oauth_state_github".into()));
        for headers in [
            vec![format!("oauth_state_github=planted; {own}")],
            vec![format!("{own}; theme=dark"), "oauth_state_github=x".into()],
            vec![format!("{own};{own}")],
            vec![format!("{own}; oauth_state_github=")],
        ] {
            let headers = headers.iter().map(String::as_str);
            assert_eq!(b.verify(Provider::Github, "s", headers), several);
        }
        let beside_others = format!("oauth_state_google=x; oauth_state=y; {own}");
        assert_eq!(
            b.verify(Provider::Github, "s", [beside_others.as_str()]),
            Ok(())
        );
    }

    #[test]
    fn over_tls_only_the_host_prefixed_name_is_read() {
        let tls = Binding::new(SECRET, true);
        let value = tls.value(Provider::Github, "s");
        let name = "__Host-oauth_state_github";
        assert_eq!(tls.cookie_name(Provider::Github), name);
        let prefixed = format!("{name}={value}");
        assert_eq!(
            tls.verify(Provider::Github, "s", [prefixed.as_str()]),
            Ok(())
        );
        let bare = format!("oauth_state_github={value}");
        assert_eq!(
            tls.verify(Provider::Github, "s", [bare.as_str()]),
            Err(BindingError::Missing(name.into()))
        );
        let both = format!("{bare}; {prefixed}");
        assert_eq!(
            tls.verify(Provider::Github, "s", [both.as_str()]),
            Ok(()),
            "the unprefixed one is not read, so it is no duplicate"
        );
    }

    #[test]
    fn the_cookie_is_httponly_lax_scoped_to_the_callback_and_lives_ten_minutes() {
        let github = Provider::Github;
        assert_eq!(
            binding().set_cookie(github, "v", "/auth/oauth/github/callback"),
            "oauth_state_github=v; Path=/auth/oauth/github/callback; Max-Age=600; HttpOnly; SameSite=Lax"
        );
        assert_eq!(
            binding().clear_cookie(Provider::Google, "/cb"),
            "oauth_state_google=; Path=/cb; Max-Age=0; HttpOnly; SameSite=Lax"
        );
    }

    #[test]
    fn over_tls_the_cookie_is_host_prefixed_secure_for_path_root_with_no_domain() {
        let tls = Binding::new(SECRET, true);
        assert_eq!(
            tls.set_cookie(Provider::Github, "v", "/auth/oauth/github/callback"),
            "__Host-oauth_state_github=v; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure"
        );
        assert_eq!(
            tls.clear_cookie(Provider::Wechat, "/cb"),
            "__Host-oauth_state_wechat=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure"
        );
    }

    #[test]
    fn presented_values_are_read_from_every_cookie_header() {
        let headers = [
            "theme=dark; oauth_state_github=abc",
            "oauth_state_github=\"def\";other=1; oauth_state_github=",
            "oauth_state_githubx=no; oauth_state=no",
        ];
        assert_eq!(presented("oauth_state_github", headers), ["abc", "def", ""]);
        assert!(presented("oauth_state_github", []).is_empty());
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
