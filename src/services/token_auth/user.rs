//! The user record as the rest of the service sees it: identity, role, and the
//! rules a new username or email must follow.
//!
//! The same limits are enforced twice on purpose: here, to give the client a
//! clear 400 message, and by `CHECK` constraints in the database schema
//! (`store.rs`), so that no code path can store a row that breaks them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Longest accepted username, in characters.
pub const USERNAME_MAX: usize = 50;
/// Shortest accepted username, in characters.
pub const USERNAME_MIN: usize = 3;
/// Longest accepted email address, in characters.
pub const EMAIL_MAX: usize = 100;

/// What a user may do. Carried in the access token's `role` claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Default role of every new account.
    User,
    /// A paying or otherwise privileged user.
    Vip,
    /// May list all users.
    Admin,
}

impl Role {
    /// The name stored in the database and in tokens.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Vip => "vip",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = UserError;
    fn from_str(s: &str) -> Result<Role, UserError> {
        match s {
            "user" => Ok(Role::User),
            "vip" => Ok(Role::Vip),
            "admin" => Ok(Role::Admin),
            other => Err(UserError::UnknownRole(other.to_string())),
        }
    }
}

/// A role name, username or email that breaks its rule. The messages are the
/// 400 answers of registration, so they say what a valid value looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserError {
    /// The role name is not `user`, `vip` or `admin`.
    UnknownRole(String),
    /// The username is outside [`USERNAME_MIN`]..=[`USERNAME_MAX`] characters.
    UsernameLength,
    /// The username holds a character other than ASCII letters, digits, `_`, `-`, `.`.
    UsernameCharacters,
    /// The email is longer than [`EMAIL_MAX`] characters.
    EmailTooLong,
    /// The email is not `local@domain` without whitespace.
    EmailShape,
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserError::UnknownRole(role) => {
                write!(f, "unknown role {role:?} (expected user, vip or admin)")
            }
            UserError::UsernameLength => write!(
                f,
                "username must be {USERNAME_MIN} to {USERNAME_MAX} characters"
            ),
            UserError::UsernameCharacters => write!(
                f,
                "username may contain only letters, digits, '_', '-' and '.'"
            ),
            UserError::EmailTooLong => write!(f, "email must be at most {EMAIL_MAX} characters"),
            UserError::EmailShape => write!(f, "email must look like name@example.com"),
        }
    }
}

impl std::error::Error for UserError {}

/// A stored user, without the password hash (that never leaves the store
/// except through `Store::credentials`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Primary key.
    pub id: i64,
    /// Unique login name.
    pub username: String,
    /// Unique email, when given.
    pub email: Option<String>,
    /// Role granted to the account.
    pub role: Role,
    /// Creation time, Unix seconds.
    pub created_at: i64,
    /// Last change, Unix seconds.
    pub updated_at: i64,
    /// 128 random bits (hex) drawn when the account was created and carried
    /// in its tokens (`ukey` claim): a token whose key differs from the
    /// account's names another account (a database recreated, an id reused)
    /// and is refused. Never shown in API responses.
    pub token_key: String,
}

/// The shape of a user in API responses: no hash, timestamps in RFC 3339.
#[derive(Debug, Serialize)]
pub struct PublicUser<'a> {
    /// Primary key.
    pub id: i64,
    /// Login name.
    pub username: &'a str,
    /// Email or null.
    pub email: Option<&'a str>,
    /// Role name.
    pub role: Role,
    /// Creation time, e.g. `2024-05-01T12:00:00Z`.
    pub created_at: String,
}

impl User {
    /// The API view of this user.
    pub fn public(&self) -> PublicUser<'_> {
        PublicUser {
            id: self.id,
            username: &self.username,
            email: self.email.as_deref(),
            role: self.role,
            created_at: crate::ops::timefmt::rfc3339(self.created_at),
        }
    }
}

/// Check a username for registration: 3 to 50 characters out of ASCII
/// letters, digits, `_`, `-` and `.`.
pub fn check_username(username: &str) -> Result<(), UserError> {
    let len = username.chars().count();
    if !(USERNAME_MIN..=USERNAME_MAX).contains(&len) {
        return Err(UserError::UsernameLength);
    }
    if !username
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(UserError::UsernameCharacters);
    }
    Ok(())
}

/// Check an email address: at most 100 characters, one `@` with text on
/// both sides, no whitespace. Deliverability is not this service's business.
pub(crate) fn check_email(email: &str) -> Result<(), UserError> {
    if email.chars().count() > EMAIL_MAX {
        return Err(UserError::EmailTooLong);
    }
    let mut halves = email.split('@');
    let valid = matches!(
        (halves.next(), halves.next(), halves.next()),
        (Some(local), Some(domain), None) if !local.is_empty() && !domain.is_empty()
    ) && !email.chars().any(char::is_whitespace);
    if !valid {
        return Err(UserError::EmailShape);
    }
    Ok(())
}

/// Identity providers the service knows (the `provider` column's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// WeChat (its field names, `appid` and `openid`, are the ones every provider here uses).
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
    pub(crate) fn from_name(name: &str) -> Option<Provider> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_outside_3_to_50_characters_are_refused() {
        assert!(check_username("ab").is_err());
        assert!(check_username("abc").is_ok());
        assert!(check_username(&"a".repeat(50)).is_ok());
        assert!(check_username(&"a".repeat(51)).is_err());
        assert!(check_username("has space").is_err());
        assert!(check_username("ünï").is_err());
    }

    #[test]
    fn emails_must_have_one_at_and_fit_100_characters() {
        assert!(check_email("a@b").is_ok());
        assert!(check_email("ab").is_err());
        assert!(check_email("@b").is_err());
        assert!(check_email("a@").is_err());
        assert!(check_email("a@b@c").is_err());
        assert!(check_email("a b@c").is_err());
        let long = format!("{}@example.com", "a".repeat(89));
        assert_eq!(long.len(), 101);
        assert!(check_email(&long).is_err());
        assert!(check_email(&long[1..]).is_ok());
    }

    #[test]
    fn roles_round_trip_through_their_names() {
        for role in [Role::User, Role::Vip, Role::Admin] {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn user_errors_are_typed_and_keep_their_messages() {
        let cases = [
            (
                "root".parse::<Role>().unwrap_err(),
                UserError::UnknownRole("root".into()),
                "unknown role \"root\" (expected user, vip or admin)",
            ),
            (
                check_username("ab").unwrap_err(),
                UserError::UsernameLength,
                "username must be 3 to 50 characters",
            ),
            (
                check_username("has space").unwrap_err(),
                UserError::UsernameCharacters,
                "username may contain only letters, digits, '_', '-' and '.'",
            ),
            (
                check_email(&format!("{}@example.com", "a".repeat(89))).unwrap_err(),
                UserError::EmailTooLong,
                "email must be at most 100 characters",
            ),
            (
                check_email("a@b@c").unwrap_err(),
                UserError::EmailShape,
                "email must look like name@example.com",
            ),
        ];
        for (got, want, message) in cases {
            assert_eq!(got, want);
            assert_eq!(got.to_string(), message);
        }
    }
}
