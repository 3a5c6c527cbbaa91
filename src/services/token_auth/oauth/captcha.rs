//! Captcha verification: after 3 failed logins in a row a login must carry
//! a `captcha_token` that the captcha provider confirms, before the password
//! is even checked.
//!
//! hCaptcha, Cloudflare Turnstile and reCAPTCHA verify the same way, and
//! this mirrors their field names: the server POSTs the form
//! `secret=…&response=<token>&remoteip=<client IP>` to the provider's
//! siteverify URL and reads back JSON:
//!
//! ```json
//! {"success": true, "challenge_ts": "…", "hostname": "login.example.com",
//!  "action": "login", "error-codes": []}
//! ```
//!
//! A login passes only on `success: true` and, when configured, the
//! expected `hostname` and `action`. Everything else is one of two answers,
//! never a pass:
//!
//! * [`Verdict::Failed`]: the token is missing, too long, spent, forged or
//!   for another site/action → 401;
//! * [`CaptchaError`]: the provider cannot give an answer (unreachable,
//!   slow, non-2xx, not JSON, a key given twice, `internal-error`) or
//!   refuses our own credentials (`invalid-input-secret`) → 503, logged.
//!
//! It lives beside the OAuth flow because both are calls to an outside
//! provider through the same client ([`super::client`], [`super::form`]).

use std::fmt;
use std::net::IpAddr;

use serde::Deserialize;

use crate::services::token_auth::config::{CaptchaConfig, ConfigError};
use crate::services::token_auth::oauth::client::{ProviderClient, ProviderError};
use crate::services::token_auth::oauth::form;

/// Longest `captcha_token` sent to the provider (Turnstile's documented
/// maximum is 2048 characters; hCaptcha's tokens are shorter).
pub const MAX_TOKEN: usize = 2048;

/// Error codes that say the provider, or our configuration of it, is at
/// fault rather than the client's token: never the client's 401.
const OUR_SIDE: [&str; 4] = [
    "missing-input-secret",
    "invalid-input-secret",
    "internal-error",
    "sitekey-secret-mismatch",
];

/// What the provider said about a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `success: true`, with the expected hostname and action.
    Passed,
    /// Anything else the client is responsible for; the reason is for the log.
    Failed(String),
}

/// The provider could not give a usable answer (503, never a pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptchaError(pub String);

impl fmt::Display for CaptchaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "captcha provider: {}", self.0)
    }
}

impl std::error::Error for CaptchaError {}

/// The siteverify answer, as the three providers spell it.
#[derive(Deserialize)]
struct Answer {
    success: bool,
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default, rename = "error-codes")]
    error_codes: Vec<String>,
}

/// A configured captcha provider.
#[derive(Debug)]
pub struct Captcha {
    config: CaptchaConfig,
    client: ProviderClient,
}

impl Captcha {
    /// The verifier of `config`, with its own connection pool trusting the
    /// built-in roots plus `captcha.ca_file`.
    pub fn new(config: CaptchaConfig) -> Result<Captcha, ConfigError> {
        let client = ProviderClient::new(config.trusted_roots()?);
        Ok(Captcha { config, client })
    }

    /// Ask the provider about `token`, solved by the client at `remoteip`.
    pub async fn verify(&self, token: &str, remoteip: IpAddr) -> Result<Verdict, CaptchaError> {
        if token.is_empty() {
            return Ok(Verdict::Failed("no captcha_token".into()));
        }
        if token.len() > MAX_TOKEN {
            return Ok(Verdict::Failed(format!(
                "captcha_token longer than {MAX_TOKEN} bytes"
            )));
        }
        let ip = remoteip.to_string();
        let body = form::encode_pairs([
            ("secret", self.config.secret.as_str()),
            ("response", token),
            ("remoteip", ip.as_str()),
        ]);
        let answer: Answer = self
            .client
            .post_form(&self.config.verify_url, body)
            .await
            .map_err(|e: ProviderError| CaptchaError(e.to_string()))?;
        judge(&self.config, answer)
    }
}

/// The verdict on a well-formed answer.
fn judge(config: &CaptchaConfig, answer: Answer) -> Result<Verdict, CaptchaError> {
    if let Some(code) = answer
        .error_codes
        .iter()
        .find(|c| OUR_SIDE.contains(&c.as_str()))
    {
        return Err(CaptchaError(format!("answered {code}")));
    }
    if !answer.success {
        let codes = if answer.error_codes.is_empty() {
            "no error-codes".to_string()
        } else {
            answer.error_codes.join(", ")
        };
        return Ok(Verdict::Failed(format!("success: false ({codes})")));
    }
    let expected = [
        ("hostname", &config.hostname, &answer.hostname),
        ("action", &config.action, &answer.action),
    ];
    for (field, want, got) in expected {
        if let Some(want) = want {
            if got.as_deref() != Some(want.as_str()) {
                return Ok(Verdict::Failed(format!(
                    "{field} {got:?}, expected {want:?}"
                )));
            }
        }
    }
    Ok(Verdict::Passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(hostname: Option<&str>, action: Option<&str>) -> CaptchaConfig {
        CaptchaConfig {
            verify_url: "http://127.0.0.1:1/siteverify".into(),
            secret: "s".into(),
            hostname: hostname.map(str::to_string),
            action: action.map(str::to_string),
            ca_file: None,
        }
    }

    fn answer(json: &str) -> Answer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn only_success_with_the_expected_hostname_and_action_passes() {
        let strict = config(Some("login.example.com"), Some("login"));
        let cases = [
            (
                r#"{"success":true,"hostname":"login.example.com","action":"login"}"#,
                true,
            ),
            (
                r#"{"success":true,"hostname":"evil.example.com","action":"login"}"#,
                false,
            ),
            (
                r#"{"success":true,"hostname":"login.example.com","action":"signup"}"#,
                false,
            ),
            (r#"{"success":true}"#, false),
            (
                r#"{"success":false,"hostname":"login.example.com","action":"login","error-codes":["timeout-or-duplicate"]}"#,
                false,
            ),
        ];
        for (json, passes) in cases {
            let verdict = judge(&strict, answer(json)).unwrap();
            assert_eq!(verdict == Verdict::Passed, passes, "{json}: {verdict:?}");
        }
        let lax = config(None, None);
        assert_eq!(
            judge(&lax, answer(r#"{"success":true}"#)).unwrap(),
            Verdict::Passed
        );
    }

    #[test]
    fn errors_on_the_providers_side_are_outages_not_failures() {
        for code in OUR_SIDE {
            let json = format!(r#"{{"success":false,"error-codes":["{code}"]}}"#);
            assert!(judge(&config(None, None), answer(&json)).is_err(), "{code}");
        }
    }

    #[tokio::test]
    async fn an_unreachable_provider_is_an_error_and_a_missing_token_a_failure() {
        let captcha = Captcha::new(config(None, None)).unwrap();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(captcha.verify("token", ip).await.is_err());
        assert!(matches!(
            captcha.verify("", ip).await,
            Ok(Verdict::Failed(_))
        ));
        let long = "x".repeat(MAX_TOKEN + 1);
        assert!(matches!(
            captcha.verify(&long, ip).await,
            Ok(Verdict::Failed(_))
        ));
    }
}
