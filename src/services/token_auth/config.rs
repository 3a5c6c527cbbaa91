//! The `--config` YAML file of the token-auth service: the identity providers
//! it may sign users in with.
//!
//! ```yaml
//! oauth:
//!   github:
//!     appid: my-client-id
//!     secret: my-client-secret
//!     auth_url: https://id.example.com/oauth/authorize
//!     token_url: https://id.example.com/oauth/token
//!     userinfo_url: https://id.example.com/oauth/userinfo
//!     redirect_uri: http://127.0.0.1:8000/auth/oauth/github/callback
//!     scope: profile
//!     # optional: extra trusted CA certificates (PEM) for this provider
//!     # ca_file: /etc/token-auth/private-ca.pem
//! # optional: verify the captcha a login must carry after 3 failures
//! captcha:
//!   verify_url: https://api.hcaptcha.com/siteverify
//!   secret: my-captcha-secret
//!   # optional: the answer must name this hostname / action
//!   # hostname: login.example.com
//!   # action: login
//!   # ca_file: /etc/token-auth/private-ca.pem
//! ```
//!
//! The file is read with serde through [`crate::config`], like the greeter's:
//! unknown keys are errors (a typo must not silently disable a setting), and
//! every message starts with the key it is about
//! (`oauth.github.scopes: unknown key (known keys here: …)`). Endpoint URLs
//! may be `https://` (always certificate-checked, against Mozilla's roots plus
//! the provider's optional `ca_file`, see
//! [`crate::services::token_auth::oauth::trust`]) or plain `http://`,
//! which is meant for a provider on loopback or a private network during
//! development: over plain HTTP the client secret and the provider's tokens
//! travel unencrypted. A relative `ca_file` is resolved from the working
//! directory; it is read when the file is checked, so a missing or unusable
//! one stops start-up instead of failing the first sign-in.

use crate::config::{self, Origins};
use crate::services::token_auth::oauth::cipher::ENC_KEY_VAR;
use crate::services::token_auth::trust::{self, TrustError};
pub use crate::services::token_auth::user::Provider;
use rustls::RootCertStore;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The prefix of the environment variables that `${KEY}` placeholders in
/// the token-auth config read (`${DB_PASSWORD}` reads `TOKEN_AUTH_DB_PASSWORD`), as
/// Kratos' `env.NewSource("TOKEN_AUTH_")`: see [`config::resolve`].
pub const ENV_PREFIX: &str = "TOKEN_AUTH_";

/// Environment variable holding the token signing secret.
pub const SECRET_VAR: &str = "TOKEN_AUTH_SECRET";

/// The variables no placeholder may read: the signing key and the key
/// sealing provider tokens share the prefix, and a value read into a URL
/// is printed at start-up and sent to browsers.
pub const DENIED_VARS: [&str; 2] = [SECRET_VAR, ENC_KEY_VAR];

/// Registration of this service at one provider. Its `Debug`, like its
/// `Display`, leaves the secret out.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Client id issued by the provider.
    pub appid: String,
    /// Client secret issued by the provider.
    pub secret: String,
    /// Where the browser is sent to sign in.
    pub auth_url: String,
    /// Where codes are exchanged for tokens.
    pub token_url: String,
    /// Where the user's profile is read.
    pub userinfo_url: String,
    /// This service's callback, exactly as registered at the provider.
    pub redirect_uri: String,
    /// Scope to request.
    pub scope: String,
    /// PEM file of CA certificates trusted for this provider, in addition to
    /// the built-in roots (a private CA, or a local test provider).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl ProviderConfig {
    /// The roots this provider's `https://` endpoints are checked against:
    /// the built-in ones plus those of `ca_file`. Errors name the key, e.g.
    /// `oauth.github.ca_file: cannot read …`.
    pub(crate) fn trusted_roots(&self, provider: Provider) -> Result<RootCertStore, ConfigError> {
        trust::roots(self.ca_file.as_deref()).map_err(|source| ConfigError::CaFile {
            key: format!("oauth.{provider}.ca_file"),
            source,
        })
    }

    /// Keys of the server-to-provider endpoints that are plain `http://` to a
    /// host other than loopback: the client secret and the provider's tokens
    /// would cross the network unencrypted (worth a start-up warning).
    pub fn cleartext_endpoints(&self) -> Vec<&'static str> {
        [
            ("token_url", &self.token_url),
            ("userinfo_url", &self.userinfo_url),
        ]
        .into_iter()
        .filter(|(_, url)| {
            let uri = url.parse::<http::Uri>().ok();
            let uri = uri.as_ref();
            uri.and_then(http::Uri::scheme_str) == Some("http")
                && !uri.and_then(http::Uri::host).is_some_and(is_loopback)
        })
        .map(|(key, _)| key)
        .collect()
    }
}

/// `localhost`, `127.x.y.z` or `[::1]`.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProviderConfig({self})")
    }
}

impl fmt::Display for ProviderConfig {
    /// Everything but the secret, for start-up logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "appid={} auth_url={} token_url={} userinfo_url={} redirect_uri={}",
            self.appid, self.auth_url, self.token_url, self.userinfo_url, self.redirect_uri
        )?;
        if let Some(ca_file) = &self.ca_file {
            write!(f, " ca_file={}", ca_file.display())?;
        }
        Ok(())
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Providers by name; absent or empty means OAuth sign-in is off.
    #[serde(default)]
    pub oauth: BTreeMap<Provider, ProviderConfig>,
    /// The captcha provider; absent means the captcha is a hint only.
    #[serde(default)]
    pub captcha: Option<CaptchaConfig>,
}

/// `captcha.*`: a siteverify endpoint in the shape hCaptcha, Cloudflare
/// Turnstile and reCAPTCHA share (form `secret`, `response`, `remoteip` in;
/// JSON `success`, `hostname`, `action`, `error-codes` out).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptchaConfig {
    /// The provider's verify URL (`https://api.hcaptcha.com/siteverify`,
    /// `https://challenges.cloudflare.com/turnstile/v0/siteverify`).
    pub verify_url: String,
    /// The secret key the provider issued for this site.
    pub secret: String,
    /// When set, the answer's `hostname` must be exactly this (the site the
    /// challenge was solved on).
    #[serde(default)]
    pub hostname: Option<String>,
    /// When set, the answer's `action` must be exactly this (the widget's
    /// action, Turnstile and reCAPTCHA v3).
    #[serde(default)]
    pub action: Option<String>,
    /// PEM file of extra CA certificates trusted for `verify_url`.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl CaptchaConfig {
    /// The roots `verify_url` is checked against (built-in plus `ca_file`).
    pub(crate) fn trusted_roots(&self) -> Result<RootCertStore, ConfigError> {
        trust::roots(self.ca_file.as_deref()).map_err(|source| ConfigError::CaFile {
            key: "captcha.ca_file".into(),
            source,
        })
    }
}

impl fmt::Debug for CaptchaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CaptchaConfig({self})")
    }
}

impl fmt::Display for CaptchaConfig {
    /// Everything but the secret, for start-up logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "verify_url={}", self.verify_url)?;
        if let Some(hostname) = &self.hostname {
            write!(f, " hostname={hostname}")?;
        }
        if let Some(action) = &self.action {
            write!(f, " action={action}")?;
        }
        if let Some(ca_file) = &self.ca_file {
            write!(f, " ca_file={}", ca_file.display())?;
        }
        Ok(())
    }
}

/// A config file that cannot be used. Every message but a read error starts
/// with the key it is about.
#[derive(Debug)]
pub enum ConfigError {
    /// The file cannot be read, is not YAML, or has a key that is unknown,
    /// missing, or of the wrong shape.
    File(config::Error),
    /// A value that must not be empty is (`key` as `oauth.github.secret`).
    Empty { key: String },
    /// An endpoint that is not a usable URL; `value` as the message shows
    /// it ([`Origins::show`]).
    Url {
        key: String,
        value: String,
        source: UrlError,
    },
    /// A value that is shown or sent (`key`) holds a client secret
    /// (`secret_key`), which must reach neither logs nor browsers.
    HoldsSecret { key: String, secret_key: String },
    /// A `ca_file` that cannot be used.
    CaFile { key: String, source: TrustError },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::File(e) => write!(f, "{e}"),
            ConfigError::Empty { key } => write!(f, "{key}: must not be empty"),
            ConfigError::Url { key, value, source } => write!(f, "{key}: {value} {source}"),
            ConfigError::HoldsSecret { key, secret_key } => write!(
                f,
                "{key}: holds the value of {secret_key}, which is never shown nor sent to \
                 browsers; remove it"
            ),
            ConfigError::CaFile { key, source } => write!(f, "{key}: {source}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::File(e) => Some(e),
            ConfigError::Empty { .. } | ConfigError::HoldsSecret { .. } => None,
            ConfigError::Url { source, .. } => Some(source),
            ConfigError::CaFile { source, .. } => Some(source),
        }
    }
}

impl From<config::Error> for ConfigError {
    fn from(e: config::Error) -> ConfigError {
        ConfigError::File(e)
    }
}

/// Why an endpoint URL cannot be used (the message follows the value).
#[derive(Debug)]
pub enum UrlError {
    /// The text does not parse as a URL.
    Syntax { source: http::uri::InvalidUri },
    /// The scheme is neither `https` nor `http`.
    Scheme,
    /// There is no host to call.
    NoHost,
    /// A `#fragment`, which is never sent to a server.
    Fragment,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::Syntax { source } => write!(f, "is not a URL ({source})"),
            UrlError::Scheme => f.write_str("must start with https:// or http://"),
            UrlError::NoHost => f.write_str("has no host"),
            UrlError::Fragment => f.write_str("must not have a #fragment"),
        }
    }
}

impl std::error::Error for UrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UrlError::Syntax { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl FileConfig {
    /// Read and check the file at `path`, its placeholders read from the
    /// process's environment.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let var = |name: &str| std::env::var(name).ok();
        FileConfig::parse_with_env(&config::read(path)?, &var)
    }

    /// Parse and check YAML text with its placeholders ([`config::resolve`]):
    /// `var` gives a variable's value by its full name; [`DENIED_VARS`]
    /// cannot be read.
    pub fn parse_with_env(
        text: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<FileConfig, ConfigError> {
        let env = config::Env {
            prefix: ENV_PREFIX,
            denied: &DENIED_VARS,
            var,
        };
        let (file, origins) = config::resolve::<FileConfig>(text, &env)?;
        file.checked(&origins)
    }

    /// Parse and check YAML text. An empty text is a valid "no providers"
    /// config.
    pub fn parse(text: &str) -> Result<FileConfig, ConfigError> {
        config::from_yaml::<FileConfig>(text)?.checked(&Origins::default())
    }

    /// The rules serde does not know: non-empty values, usable URLs, no
    /// client secret inside a value that is shown or sent, a readable
    /// `ca_file`. An error shows a value as `origins` says.
    fn checked(self, origins: &Origins) -> Result<FileConfig, ConfigError> {
        for (provider, p) in &self.oauth {
            let key = |field: &str| format!("oauth.{provider}.{field}");
            for (field, value) in [
                ("appid", &p.appid),
                ("secret", &p.secret),
                ("scope", &p.scope),
            ] {
                if value.trim().is_empty() {
                    return Err(ConfigError::Empty { key: key(field) });
                }
            }
            for (field, value) in [
                ("auth_url", &p.auth_url),
                ("token_url", &p.token_url),
                ("userinfo_url", &p.userinfo_url),
                ("redirect_uri", &p.redirect_uri),
            ] {
                let key = key(field);
                check_url(value).map_err(|source| ConfigError::Url {
                    value: origins.show(&key, value),
                    key,
                    source,
                })?;
            }
            p.trusted_roots(*provider)?;
        }
        if let Some(captcha) = &self.captcha {
            if captcha.secret.trim().is_empty() {
                return Err(ConfigError::Empty {
                    key: "captcha.secret".into(),
                });
            }
            let key = "captcha.verify_url";
            check_url(&captcha.verify_url).map_err(|source| ConfigError::Url {
                key: key.into(),
                value: origins.show(key, &captcha.verify_url),
                source,
            })?;
            captcha.trusted_roots()?;
        }
        self.check_secrets_stay_hidden(origins)?;
        Ok(self)
    }

    /// Refuses a client secret inside a value that is printed at start-up
    /// or sent to browsers: a value that reads the secret's key or a
    /// variable the secret reads (`auth_url: …?s=${GITHUB_SECRET}`), or
    /// that holds the text of a secret of [`SECRET_MIN_MATCH`] bytes or more.
    fn check_secrets_stay_hidden(&self, origins: &Origins) -> Result<(), ConfigError> {
        let mut secrets = Vec::new();
        let mut shown = Vec::new();
        for (provider, p) in &self.oauth {
            let key = |field: &str| format!("oauth.{provider}.{field}");
            secrets.push((key("secret"), p.secret.as_str()));
            for (field, value) in [
                ("appid", &p.appid),
                ("auth_url", &p.auth_url),
                ("token_url", &p.token_url),
                ("userinfo_url", &p.userinfo_url),
                ("redirect_uri", &p.redirect_uri),
                ("scope", &p.scope),
            ] {
                shown.push((key(field), value.as_str()));
            }
        }
        if let Some(c) = &self.captcha {
            secrets.push(("captcha.secret".into(), c.secret.as_str()));
            shown.push(("captcha.verify_url".into(), c.verify_url.as_str()));
            for (field, value) in [("hostname", &c.hostname), ("action", &c.action)] {
                if let Some(value) = value {
                    shown.push((format!("captcha.{field}"), value.as_str()));
                }
            }
        }
        let sources = |key: &str| origins.sources(key).unwrap_or_default();
        for (secret_key, secret) in &secrets {
            let leaks = |(key, value): &&(String, &str)| {
                (secret.len() >= SECRET_MIN_MATCH && value.contains(secret))
                    || sources(key)
                        .iter()
                        .any(|s| s == secret_key || sources(secret_key).contains(s))
            };
            if let Some((key, _)) = shown.iter().find(leaks) {
                return Err(ConfigError::HoldsSecret {
                    key: key.clone(),
                    secret_key: secret_key.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Shortest client secret looked for, as text, inside the values that are
/// shown: a shorter one would match by chance (real ones are far longer).
const SECRET_MIN_MATCH: usize = 8;

/// An absolute `https://` or `http://` `host[:port]/path` URL without a fragment.
fn check_url(value: &str) -> Result<(), UrlError> {
    let uri: http::Uri = value
        .parse()
        .map_err(|source| UrlError::Syntax { source })?;
    if !matches!(uri.scheme_str(), Some("https" | "http")) {
        return Err(UrlError::Scheme);
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(UrlError::NoHost);
    }
    if value.contains('#') {
        return Err(UrlError::Fragment);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
