//! The `--config` YAML file of the token-auth service: the identity providers
//! it may sign users in with.
//!
//! ```yaml
//! oauth:
//!   github:
//!     appid: my-client-id
//!     secret: my-client-secret
//!     auth_url: http://127.0.0.1:9100/authorize
//!     token_url: http://127.0.0.1:9100/token
//!     userinfo_url: http://127.0.0.1:9100/userinfo
//!     redirect_uri: http://127.0.0.1:8000/auth/oauth/github/callback
//!     scope: profile
//! ```
//!
//! Unknown keys are errors (a typo must not silently disable a setting), and
//! every message names the key it is about. Outbound calls use plain HTTP:
//! endpoint URLs must be `http://` (a TLS-terminating proxy in front of a
//! real provider, or a local provider); `https://` is refused at start-up
//! rather than failing at the first sign-in.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

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
}

impl fmt::Display for ProviderConfig {
    /// Everything but the secret, for start-up logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "appid={} auth_url={} token_url={} userinfo_url={} redirect_uri={}",
            self.appid, self.auth_url, self.token_url, self.userinfo_url, self.redirect_uri
        )
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
        }
        Ok(config)
    }
}

/// An absolute `http://host[:port]/path` URL without a fragment.
fn check_url(value: &str) -> Result<(), String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("{value:?} is not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(format!(
                "{value:?}: https is not supported by this build; use http:// \
                 (a local provider, or a TLS-terminating proxy)"
            ))
        }
        _ => return Err(format!("{value:?} must start with http://")),
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

    #[test]
    fn a_complete_provider_block_parses() {
        let config = FileConfig::parse(GOOD).unwrap();
        let github = &config.oauth[&Provider::Github];
        assert_eq!(github.appid, "app");
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
                GOOD.replace("http://127.0.0.1:9100/token", "https://example.com/token"),
                "oauth.github.token_url: \"https://example.com/token\": https is not supported",
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
