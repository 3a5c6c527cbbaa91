//! The service's tokens: their claims and lifetimes, issuing and
//! checking on top of the generic [`crate::protocol::jwt`] module.
//!
//! An access token carries `role` so routes can authorize without a database
//! read; a refresh token does not, so it grants nothing by itself and the user
//! is reloaded when it is used. The `type` claim keeps the two apart: each is
//! refused where the other is expected. Every token gets a random `jti` so it
//! can be revoked individually.

use crate::protocol::jwt::{Hs256, Invalid, JwtError};
use crate::services::token_auth::clock::Clock;
use crate::services::token_auth::user::{Role, User};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Access token lifetime: one hour (`expires_in: 3600`).
pub const ACCESS_TTL: u64 = 60 * 60;
/// Refresh token lifetime: 30 days.
pub const REFRESH_TTL: u64 = 30 * 24 * 60 * 60;
/// Lifetime of the single token of the simple login variant: 24 hours.
pub const SIMPLE_TTL: u64 = 24 * 60 * 60;
/// Shortest accepted signing secret (RFC 7518 §3.2: at least the hash size).
pub const SECRET_MIN_BYTES: usize = 32;

/// Which of the two token kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// Presented on API calls; short-lived.
    Access,
    /// Exchanged for a new pair; long-lived.
    Refresh,
}

/// The claims of every token this service signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user the token was issued to.
    pub user_id: i64,
    /// Role at issue time; access tokens only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// `access` or `refresh`.
    #[serde(rename = "type")]
    pub kind: TokenKind,
    /// Issued at, Unix seconds.
    pub iat: u64,
    /// Expires at, Unix seconds.
    pub exp: u64,
    /// Unique token id: 128 random bits from the OS, hex.
    pub jti: String,
    /// The account's [`User::token_key`]: binds the token to the account it
    /// was issued for, not just to an id (checked against the store on every
    /// use, so a token cannot outlive its account or change account).
    #[serde(default)]
    pub ukey: String,
    /// The refresh family: 128 random bits drawn at sign-in and kept by
    /// every pair that refreshing issues from it. Revoking the family
    /// (logout, a refresh token used twice) ends every token in it.
    #[serde(default)]
    pub fam: String,
}

/// The token object that login, registration and refresh answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenPair {
    /// Access token (1 hour).
    pub access_token: String,
    /// Refresh token (30 days).
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// Access token lifetime in seconds: 3600.
    pub expires_in: u64,
}

/// Why tokens could not be set up or issued.
#[derive(Debug)]
pub enum TokenError {
    /// The signing secret is shorter than [`SECRET_MIN_BYTES`].
    SecretTooShort(usize),
    /// The OS random source failed.
    Random(String),
    /// Signing failed.
    Jwt(JwtError),
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::SecretTooShort(n) => write!(
                f,
                "signing secret is {n} bytes, at least {SECRET_MIN_BYTES} are required"
            ),
            TokenError::Random(e) => write!(f, "cannot read OS randomness: {e}"),
            TokenError::Jwt(e) => write!(f, "cannot sign token: {e}"),
        }
    }
}

impl std::error::Error for TokenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenError::Jwt(e) => Some(e),
            TokenError::SecretTooShort(_) | TokenError::Random(_) => None,
        }
    }
}

/// Issues and checks this service's tokens.
#[derive(Clone)]
pub struct Tokens {
    key: Hs256,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tokens { .. }")
    }
}

impl Tokens {
    /// Tokens signed with `secret` (at least 32 bytes), timed by `clock`.
    pub fn new(secret: &[u8], clock: Arc<dyn Clock>) -> Result<Tokens, TokenError> {
        if secret.len() < SECRET_MIN_BYTES {
            return Err(TokenError::SecretTooShort(secret.len()));
        }
        Ok(Tokens {
            key: Hs256::new(secret),
            clock,
        })
    }

    /// A fresh access + refresh pair for `user`, starting a new family.
    pub fn issue_pair(&self, user: &User) -> Result<TokenPair, TokenError> {
        self.issue_pair_in(user, &new_jti()?)
    }

    /// The pair a refresh issues: a new access + refresh pair for `user` in
    /// the family `fam` of the refresh token that was used.
    pub fn issue_pair_in(&self, user: &User, fam: &str) -> Result<TokenPair, TokenError> {
        let now = self.clock.now();
        let access = self.sign(
            user,
            fam,
            Some(user.role),
            TokenKind::Access,
            now,
            ACCESS_TTL,
        )?;
        let refresh = self.sign(user, fam, None, TokenKind::Refresh, now, REFRESH_TTL)?;
        Ok(TokenPair {
            access_token: access,
            refresh_token: refresh,
            token_type: "Bearer".into(),
            expires_in: ACCESS_TTL,
        })
    }

    /// The single 24-hour token of the simple login variant. It is an access
    /// token in every other respect (role, type, revocable by logout).
    pub fn issue_simple(&self, user: &User) -> Result<String, TokenError> {
        let now = self.clock.now();
        self.sign(
            user,
            &new_jti()?,
            Some(user.role),
            TokenKind::Access,
            now,
            SIMPLE_TTL,
        )
    }

    /// Verify `token` and check it is of `kind` and shaped like one. A token of
    /// the other kind is [`Invalid::Claims`], never accepted.
    pub fn verify(&self, token: &str, kind: TokenKind) -> Result<Claims, JwtError> {
        let claims: Claims = self.key.verify(token, self.clock.now())?;
        if claims.kind != kind {
            return Err(Invalid::Claims(format!("expected a {kind:?} token")).into());
        }
        let role_ok = match kind {
            TokenKind::Access => claims.role.is_some(),
            TokenKind::Refresh => claims.role.is_none(),
        };
        let sizes_ok = !claims.jti.is_empty()
            && claims.jti.len() <= 100
            && !claims.ukey.is_empty()
            && claims.ukey.len() <= 64
            && !claims.fam.is_empty()
            && claims.fam.len() <= 64;
        if !role_ok || !sizes_ok {
            return Err(Invalid::Claims("claims do not fit the token type".into()).into());
        }
        Ok(claims)
    }

    fn sign(
        &self,
        user: &User,
        fam: &str,
        role: Option<Role>,
        kind: TokenKind,
        now: u64,
        ttl: u64,
    ) -> Result<String, TokenError> {
        let claims = Claims {
            user_id: user.id,
            role,
            kind,
            iat: now,
            exp: now.saturating_add(ttl),
            jti: new_jti()?,
            ukey: user.token_key.clone(),
            fam: fam.to_owned(),
        };
        self.key.sign(&claims).map_err(TokenError::Jwt)
    }
}

/// Whether `claims` were issued for `user` as it is stored now: the same id
/// and the same account key (compared in constant time).
pub fn issued_for(claims: &Claims, user: &User) -> bool {
    claims.user_id == user.id && constant_time_eq(claims.ukey.as_bytes(), user.token_key.as_bytes())
}

/// `a == b` in time that depends on the lengths only: token-auth's one
/// comparison of secrets (account keys here, sign-in binding cookies in
/// `oauth::binding`).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 128 random bits from the OS, as 32 lowercase hex digits.
pub fn new_jti() -> Result<String, TokenError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
    Ok(hex(&bytes))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::token_auth::clock::ManualClock;

    const SECRET: &[u8] = b"test secret, 32 bytes or more..!";

    fn setup() -> (Arc<ManualClock>, Tokens, User) {
        let clock = Arc::new(ManualClock::new(1_700_000_000));
        let tokens = Tokens::new(SECRET, clock.clone()).unwrap();
        let user = User {
            id: 7,
            username: "ann".into(),
            email: None,
            role: Role::Vip,
            created_at: 0,
            updated_at: 0,
            token_key: "00112233445566778899aabbccddeeff".into(),
        };
        (clock, tokens, user)
    }

    #[test]
    fn secrets_shorter_than_32_bytes_are_refused() {
        let clock = Arc::new(ManualClock::new(0));
        assert!(matches!(
            Tokens::new(&SECRET[..31], clock.clone()),
            Err(TokenError::SecretTooShort(31))
        ));
        assert!(Tokens::new(&SECRET[..32], clock).is_ok());
    }

    #[test]
    fn pair_has_the_claims_and_lifetimes_of_the_spec() {
        let (_clock, tokens, user) = setup();
        let pair = tokens.issue_pair(&user).unwrap();
        assert_eq!(
            (pair.token_type.as_str(), pair.expires_in),
            ("Bearer", 3600)
        );
        let access = tokens
            .verify(&pair.access_token, TokenKind::Access)
            .unwrap();
        assert_eq!(access.user_id, 7);
        assert_eq!(access.role, Some(Role::Vip));
        assert_eq!(access.exp - access.iat, 3600);
        assert_eq!(access.iat, 1_700_000_000);
        let refresh = tokens
            .verify(&pair.refresh_token, TokenKind::Refresh)
            .unwrap();
        assert_eq!(refresh.role, None);
        assert_eq!(refresh.exp - refresh.iat, 30 * 86_400);
        assert_ne!(access.jti, refresh.jti);
        assert_eq!(access.jti.len(), 32);
        assert!(access.jti.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn refresh_token_has_no_role_claim_on_the_wire() {
        let (_clock, tokens, user) = setup();
        let pair = tokens.issue_pair(&user).unwrap();
        let payload = pair.refresh_token.split('.').nth(1).unwrap();
        use base64::Engine as _;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert!(value.get("role").is_none(), "{value}");
        assert_eq!(value["type"], "refresh");
    }

    #[test]
    fn each_kind_is_refused_where_the_other_is_expected() {
        let (_clock, tokens, user) = setup();
        let pair = tokens.issue_pair(&user).unwrap();
        assert!(matches!(
            tokens.verify(&pair.refresh_token, TokenKind::Access),
            Err(JwtError::Invalid(_))
        ));
        assert!(matches!(
            tokens.verify(&pair.access_token, TokenKind::Refresh),
            Err(JwtError::Invalid(_))
        ));
    }

    #[test]
    fn access_expires_after_an_hour_refresh_after_30_days() {
        let (clock, tokens, user) = setup();
        let pair = tokens.issue_pair(&user).unwrap();
        clock.advance(3599);
        assert!(tokens.verify(&pair.access_token, TokenKind::Access).is_ok());
        clock.advance(1);
        assert_eq!(
            tokens.verify(&pair.access_token, TokenKind::Access),
            Err(JwtError::Expired)
        );
        clock.advance(30 * 86_400 - 3601);
        assert!(tokens
            .verify(&pair.refresh_token, TokenKind::Refresh)
            .is_ok());
        clock.advance(1);
        assert_eq!(
            tokens.verify(&pair.refresh_token, TokenKind::Refresh),
            Err(JwtError::Expired)
        );
    }

    #[test]
    fn simple_token_lasts_24_hours() {
        let (clock, tokens, user) = setup();
        let token = tokens.issue_simple(&user).unwrap();
        let claims = tokens.verify(&token, TokenKind::Access).unwrap();
        assert_eq!(claims.exp - claims.iat, 86_400);
        clock.advance(86_400);
        assert_eq!(
            tokens.verify(&token, TokenKind::Access),
            Err(JwtError::Expired)
        );
    }

    #[test]
    fn token_error_exposes_the_jwt_error_as_source() {
        use std::error::Error as _;
        let cases = [
            (
                TokenError::Jwt(JwtError::Expired),
                Some(JwtError::Expired.to_string()),
            ),
            (TokenError::SecretTooShort(3), None),
            (TokenError::Random("no entropy".into()), None),
        ];
        for (err, want) in cases {
            assert_eq!(err.source().map(|s| s.to_string()), want, "{err}");
        }
    }

    #[test]
    fn a_token_names_its_account_by_id_and_key_not_by_id_alone() {
        let (_clock, tokens, user) = setup();
        let pair = tokens.issue_pair(&user).unwrap();
        let claims = tokens
            .verify(&pair.refresh_token, TokenKind::Refresh)
            .unwrap();
        assert!(issued_for(&claims, &user));
        // Same id, another account (a recreated database, a reused id).
        let other = User {
            token_key: "ffeeddccbbaa99887766554433221100".into(),
            ..user.clone()
        };
        assert!(!issued_for(&claims, &other));
        let moved = User { id: 8, ..user };
        assert!(!issued_for(&claims, &moved));
    }

    #[test]
    fn a_token_without_an_account_key_is_refused() {
        let (_clock, tokens, user) = setup();
        let keyless = User {
            token_key: String::new(),
            ..user
        };
        let pair = tokens.issue_pair(&keyless).unwrap();
        assert!(matches!(
            tokens.verify(&pair.access_token, TokenKind::Access),
            Err(JwtError::Invalid(_))
        ));
    }
}
