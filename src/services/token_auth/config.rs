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
//! ```
//!
//! Unknown keys are errors (a typo must not silently disable a setting), and
//! every message names the key it is about. Endpoint URLs may be `https://`
//! (always certificate-checked, against Mozilla's roots plus the provider's
//! optional `ca_file`, see [`crate::services::token_auth::oauth::trust`]) or plain `http://`,
//! which is meant for a provider on loopback or a private network during
//! development: over plain HTTP the client secret and the provider's tokens
//! travel unencrypted. A relative `ca_file` is resolved from the working
//! directory; it is read when the file is checked, so a missing or unusable
//! one stops start-up instead of failing the first sign-in.

use crate::services::token_auth::oauth::trust;
use rustls::RootCertStore;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Identity providers the service knows (spec §2.6 enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// WeChat (its field names, `appid` and `openid`, are the spec's).
    Wechat,
    /// Google.
    Google,
    /// GitHub.
    Github,
}

impl Provider {
    /// The lowercase name used in paths, config and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Wechat => "wechat",
            Provider::Google => "google",
            Provider::Github => "github",
        }
    }

    /// Parse a path segment.
    pub fn from_name(name: &str) -> Option<Provider> {
        match name {
            "wechat" => Some(Provider::Wechat),
            "google" => Some(Provider::Google),
            "github" => Some(Provider::Github),
            _ => None,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Registration of this service at one provider.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
    pub fn trusted_roots(&self, provider: Provider) -> Result<RootCertStore, ConfigError> {
        trust::roots(self.ca_file.as_deref())
            .map_err(|e| ConfigError(format!("oauth.{provider}.ca_file: {e}")))
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
}

/// A config file that cannot be used.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl FileConfig {
    /// Read and check the file at `path`.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read config {}: {e}", path.display())))?;
        FileConfig::parse(&text)
            .map_err(|ConfigError(e)| ConfigError(format!("config {}: {e}", path.display())))
    }

    /// Parse and check YAML text.
    pub fn parse(text: &str) -> Result<FileConfig, ConfigError> {
        // An empty file is a valid "no providers" config.
        if text.trim().is_empty() {
            return Ok(FileConfig::default());
        }
        let config: FileConfig =
            serde_yaml::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        for (provider, p) in &config.oauth {
            let key = |field: &str| format!("oauth.{provider}.{field}");
            for (field, value) in [
                ("appid", &p.appid),
                ("secret", &p.secret),
                ("scope", &p.scope),
            ] {
                if value.trim().is_empty() {
                    return Err(ConfigError(format!("{} must not be empty", key(field))));
                }
            }
            for (field, value) in [
                ("auth_url", &p.auth_url),
                ("token_url", &p.token_url),
                ("userinfo_url", &p.userinfo_url),
                ("redirect_uri", &p.redirect_uri),
            ] {
                check_url(value).map_err(|why| ConfigError(format!("{}: {why}", key(field))))?;
            }
            p.trusted_roots(*provider)?;
        }
        Ok(config)
    }
}

/// An absolute `https://` or `http://` `host[:port]/path` URL without a fragment.
fn check_url(value: &str) -> Result<(), String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("{value:?} is not a URL ({e})"))?;
    if !matches!(uri.scheme_str(), Some("https" | "http")) {
        return Err(format!("{value:?} must start with https:// or http://"));
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{value:?} has no host"));
    }
    if value.contains('#') {
        return Err(format!("{value:?} must not have a #fragment"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
oauth:
  github:
    appid: app
    secret: s3cret
    auth_url: http://127.0.0.1:9100/authorize?prompt=login
    token_url: http://127.0.0.1:9100/token
    userinfo_url: http://127.0.0.1:9100/userinfo
    redirect_uri: http://127.0.0.1:8000/auth/oauth/github/callback
    scope: profile
";

    /// A file in the temp directory, removed on drop.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(tag: &str, contents: impl AsRef<[u8]>) -> TempFile {
            let path = std::env::temp_dir()
                .join(format!("handwire-config-{tag}-{}.pem", std::process::id()));
            std::fs::write(&path, contents).unwrap();
            TempFile(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// A freshly made self-signed CA certificate, PEM.
    fn ca_pem(name: &str) -> String {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn with_ca_file(path: &Path) -> String {
        format!("{GOOD}    ca_file: {}\n", path.display())
    }

    #[test]
    fn a_complete_provider_block_parses() {
        let config = FileConfig::parse(GOOD).unwrap();
        let github = &config.oauth[&Provider::Github];
        assert_eq!(github.appid, "app");
        assert_eq!(github.ca_file, None);
        assert!(!github.to_string().contains("s3cret"));
        assert_eq!(FileConfig::parse("").unwrap(), FileConfig::default());
        assert_eq!(
            FileConfig::parse("oauth: {}").unwrap(),
            FileConfig::default()
        );
    }

    #[test]
    fn errors_name_the_offending_key() {
        let cases = [
            (
                GOOD.replace("github", "facebook"),
                "unknown variant `facebook`",
            ),
            (
                GOOD.replace("    scope: profile\n", ""),
                "missing field `scope`",
            ),
            (GOOD.replace("scope:", "scopes:"), "unknown field `scopes`"),
            (
                GOOD.replace("secret: s3cret", "secret: ''"),
                "oauth.github.secret must not be empty",
            ),
            (
                GOOD.replace("http://127.0.0.1:9100/token", "ftp://example.com/token"),
                "oauth.github.token_url: \"ftp://example.com/token\" must start with https:// or http://",
            ),
            (
                GOOD.replace("http://127.0.0.1:9100/userinfo", "/userinfo"),
                "oauth.github.userinfo_url",
            ),
        ];
        for (text, expected) in cases {
            let err = FileConfig::parse(&text).unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{err:?} should contain {expected:?}"
            );
        }
    }

    #[test]
    fn https_endpoints_are_accepted_and_plain_http_off_loopback_is_flagged() {
        let https = GOOD.replace("http://127.0.0.1:9100", "https://id.example.com");
        let config = FileConfig::parse(&https).unwrap();
        let github = &config.oauth[&Provider::Github];
        assert_eq!(github.token_url, "https://id.example.com/token");
        assert!(github.cleartext_endpoints().is_empty());

        let loopback = FileConfig::parse(GOOD).unwrap();
        assert!(loopback.oauth[&Provider::Github]
            .cleartext_endpoints()
            .is_empty());
        let remote = GOOD.replace(
            "http://127.0.0.1:9100/userinfo",
            "http://10.1.2.3:9100/userinfo",
        );
        let remote = FileConfig::parse(&remote).unwrap();
        assert_eq!(
            remote.oauth[&Provider::Github].cleartext_endpoints(),
            ["userinfo_url"]
        );
        assert!(is_loopback("localhost") && is_loopback("[::1]") && is_loopback("127.8.0.1"));
        assert!(!is_loopback("example.com") && !is_loopback("10.0.0.1"));
    }

    #[test]
    fn a_ca_file_adds_its_certificates_to_the_builtin_roots() {
        let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let file = TempFile::new(
            "two-cas",
            format!("{}{key}{}", ca_pem("first"), ca_pem("second")),
        );
        let config = FileConfig::parse(&with_ca_file(&file.0)).unwrap();
        let github = &config.oauth[&Provider::Github];
        assert_eq!(github.ca_file.as_deref(), Some(file.0.as_path()));
        assert!(github.to_string().contains("ca_file="));
        let builtin = trust::builtin_roots().len();
        assert!(builtin > 100, "Mozilla's roots are compiled in: {builtin}");
        assert_eq!(
            github.trusted_roots(Provider::Github).unwrap().len(),
            builtin + 2
        );
        let without = FileConfig::parse(GOOD).unwrap();
        assert_eq!(
            without.oauth[&Provider::Github]
                .trusted_roots(Provider::Github)
                .unwrap()
                .len(),
            builtin
        );
    }

    #[test]
    fn an_unusable_ca_file_stops_start_up_naming_the_key() {
        let missing = std::env::temp_dir().join("handwire-config-no-such-ca.pem");
        let text = TempFile::new("text", "not a certificate\n");
        let key_only = TempFile::new(
            "key-only",
            rcgen::KeyPair::generate().unwrap().serialize_pem(),
        );
        let unterminated = TempFile::new("unterminated", "-----BEGIN CERTIFICATE-----\nMIIB\n");
        let not_der = TempFile::new(
            "not-der",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let cases = [
            (missing.clone(), "cannot read"),
            (text.0.clone(), "no certificate in"),
            (key_only.0.clone(), "no certificate in"),
            (unterminated.0.clone(), "is not valid PEM"),
            (not_der.0.clone(), "is not a usable CA certificate"),
        ];
        for (path, why) in cases {
            let err = FileConfig::parse(&with_ca_file(&path))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("oauth.github.ca_file: ")
                    && err.contains(why)
                    && err.contains(&path.display().to_string()),
                "{err:?} should name the key, {why:?} and the path"
            );
        }
    }

    #[test]
    fn unknown_top_level_keys_are_refused() {
        let err = FileConfig::parse("oath: {}").unwrap_err().to_string();
        assert!(err.contains("unknown field `oath`"), "{err}");
    }

    #[test]
    fn load_names_a_missing_file() {
        let err = FileConfig::load(Path::new("/nonexistent/auth.yaml")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/auth.yaml"), "{err}");
    }
}
