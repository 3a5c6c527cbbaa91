//! Unit tests of the token-auth config: a good file parses, and every
//! rejected one names its key.

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
        let path =
            std::env::temp_dir().join(format!("handwire-config-{tag}-{}.pem", std::process::id()));
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
            "oauth: unknown name \"facebook\" (known names here: wechat, google, github)",
        ),
        (
            GOOD.replace("    scope: profile\n", ""),
            "oauth.github.scope: missing required key",
        ),
        (
            GOOD.replace("scope:", "scopes:"),
            "oauth.github.scopes: unknown key (known keys here: appid, secret, ",
        ),
        (
            GOOD.replace("secret: s3cret", "secret: ''"),
            "oauth.github.secret: must not be empty",
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
            err.starts_with(expected),
            "{err:?} should start with {expected:?}"
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
    assert_eq!(err, "oath: unknown key (known keys here: oauth, captcha)");
}

#[test]
fn wrapped_errors_are_reachable_through_source() {
    use std::error::Error as _;
    let bad_url = GOOD.replace("http://127.0.0.1:9100/token", "http://a b/token");
    let err = FileConfig::parse(&bad_url).unwrap_err();
    let url = err.source().expect("the URL error");
    assert!(url.source().unwrap().is::<http::uri::InvalidUri>());
    let err = FileConfig::parse("oath: {}").unwrap_err();
    let file = err.source().expect("the shared config error");
    assert!(file.source().unwrap().is::<serde_yaml::Error>());
    let missing = std::env::temp_dir().join("handwire-config-no-such-ca.pem");
    let err = FileConfig::parse(&with_ca_file(&missing)).unwrap_err();
    assert!(err.source().unwrap().is::<TrustError>());
}

#[test]
fn load_names_a_missing_file() {
    let err = FileConfig::load(Path::new("/nonexistent/auth.yaml")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/auth.yaml"), "{err}");
}

#[test]
fn a_captcha_block_parses_and_its_errors_name_the_key() {
    let good = "captcha:\n  verify_url: https://api.hcaptcha.com/siteverify\n  secret: s\n  hostname: login.example.com\n";
    let captcha = FileConfig::parse(good).unwrap().captcha.expect("captcha");
    assert_eq!(captcha.hostname.as_deref(), Some("login.example.com"));
    assert_eq!(captcha.action, None);
    assert!(!captcha.to_string().contains("secret"), "{captcha}");
    let cases = [
        (
            good.replace("secret: s", "secret: ' '"),
            "captcha.secret: must not be empty",
        ),
        (
            good.replace("https://api", "ftp://api"),
            "captcha.verify_url: ",
        ),
        (
            good.replace("hostname", "host"),
            "captcha.host: unknown key",
        ),
        (
            "captcha:\n  secret: s\n".to_string(),
            "captcha.verify_url: missing required key",
        ),
    ];
    for (text, want) in cases {
        let err = FileConfig::parse(&text).unwrap_err().to_string();
        assert!(err.starts_with(want), "{want:?} vs {err}");
    }
}

/// Issue 57: a client secret read into a URL reached the start-up line and
/// every browser's `Location`.
#[test]
fn a_client_secret_inside_a_shown_or_sent_value_is_refused_naming_both_keys() {
    let vars = |name: &str| (name == "TOKEN_AUTH_GITHUB_SECRET").then(|| "client-s3cret".into());
    let cases = [
        // The same variable read by the secret and by a URL.
        GOOD.replace("s3cret", "${GITHUB_SECRET}")
            .replace("prompt=login", "s=${GITHUB_SECRET}"),
        // The secret's text pasted into a URL.
        GOOD.replace("s3cret", "a-long-s3cret")
            .replace("prompt=login", "s=a-long-s3cret"),
        GOOD.replace("scope: profile", "scope: ${GITHUB_SECRET}")
            .replace("s3cret", "${GITHUB_SECRET:x}"),
        // The secret's key read by a URL.
        GOOD.replace("prompt=login", "s=${oauth.github.secret}"),
    ];
    for text in cases {
        let err = FileConfig::parse_with_env(&text, &vars)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("oauth.github.")
                && err.contains("holds the value of oauth.github.secret"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "{err}");
    }
    // A secret read from its own variable, and a short one, are fine.
    let text = GOOD.replace("s3cret", "${GITHUB_SECRET}");
    let file = FileConfig::parse_with_env(&text, &vars).unwrap();
    assert_eq!(file.oauth[&Provider::Github].secret, "client-s3cret");
    // Printed for a log, with `{}` or `{:?}`, a provider leaves it out.
    let provider = &file.oauth[&Provider::Github];
    for shown in [format!("{provider}"), format!("{file:?}")] {
        assert!(!shown.contains("client-s3cret"), "{shown}");
    }
    assert!(FileConfig::parse(&GOOD.replace("s3cret", "s")).is_ok());
}

/// Issue 57: `${SECRET}` read the signing key into a URL.
#[test]
fn placeholders_cannot_read_the_signing_or_the_encryption_key() {
    assert_eq!(
        DENIED_VARS,
        [SECRET_VAR, crate::services::token_auth::oauth::ENC_KEY_VAR]
    );
    let vars = |name: &str| Some(format!("value-of-{name}"));
    for name in ["SECRET", "ENC_KEY"] {
        let text = GOOD.replace("prompt=login", &format!("debug=${{{name}}}"));
        let err = FileConfig::parse_with_env(&text, &vars)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "oauth.github.auth_url: placeholder ${{{name}}} would read TOKEN_AUTH_{name}, \
                 one of the service's own secrets, which placeholders cannot read"
            )
        );
    }
}

/// Issue 57: a URL error quoted the value whole, from the environment too.
#[test]
fn a_bad_url_is_named_by_its_variable_or_quoted_at_most_a_short_prefix() {
    let vars = |name: &str| (name == "TOKEN_AUTH_URL").then(|| "ftp://hunter2@example.com".into());
    let text = GOOD.replace("http://127.0.0.1:9100/token", "${URL}");
    let err = FileConfig::parse_with_env(&text, &vars)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "oauth.github.token_url: from TOKEN_AUTH_URL must start with https:// or http://"
    );
    let long = format!("ftp://{}", "x".repeat(120_000));
    let text = GOOD.replace("http://127.0.0.1:9100/token", &long);
    let err = FileConfig::parse(&text).unwrap_err().to_string();
    assert!(err.len() < 200, "{} bytes", err.len());
    assert!(
        err.starts_with("oauth.github.token_url: \"ftp://xxx"),
        "{err}"
    );
}

/// Issue 57: a provider's real secret `0123456789`, read from the
/// environment, was sent as `123456789` and the sign-in failed.
#[test]
fn a_client_secret_from_the_environment_keeps_its_text() {
    for secret in ["0123456789", "007.10", "+5", "1.0e5", "true"] {
        let vars = |name: &str| (name == "TOKEN_AUTH_GITHUB_SECRET").then(|| secret.to_string());
        let text = GOOD.replace("s3cret", "${GITHUB_SECRET}");
        let file = FileConfig::parse_with_env(&text, &vars).unwrap();
        assert_eq!(file.oauth[&Provider::Github].secret, secret);
    }
}
