//! The greeter's business layer (Kratos' `biz`): use cases and the repository
//! interfaces they need. Transports call use cases; the data layer implements
//! the repositories. Errors carry a Kratos-style `reason` so each transport
//! can map them to its own status (gRPC code, HTTP status).

use std::fmt;
use std::sync::Arc;

use crate::types::BoxFuture;

/// A stored user. `id` and `age` are assigned by the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Assigned by the store, increasing.
    pub id: i64,
    /// Unique.
    pub username: String,
    /// Stored and listed as given (the demo's contract; see README).
    pub password: String,
    /// Always 1 on creation.
    pub age: i64,
}

/// What can go wrong in a use case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input breaks a rule (HTTP 400, gRPC INVALID_ARGUMENT).
    InvalidArgument {
        reason: &'static str,
        message: String,
    },
    /// The thing to create exists (HTTP 409, gRPC ALREADY_EXISTS).
    AlreadyExists {
        reason: &'static str,
        message: String,
    },
    /// The store failed (HTTP 500, gRPC INTERNAL); the detail is logged.
    Internal { message: String },
    /// The store cannot answer (HTTP 503, gRPC UNAVAILABLE): its file was
    /// removed, replaced or became read-only, or a shared server
    /// (PostgreSQL, Redis) is down or did not answer within its time-out.
    /// The message starts with "store unavailable".
    Unavailable { message: String },
}

impl Error {
    /// The Kratos reason, an UPPER_SNAKE identifier clients can match on.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidArgument { reason, .. } | Error::AlreadyExists { reason, .. } => reason,
            Error::Internal { .. } => "INTERNAL",
            Error::Unavailable { .. } => "STORE_UNAVAILABLE",
        }
    }

    /// The answer to registering a username that is taken, the same from
    /// every store.
    pub fn username_taken(username: &str) -> Error {
        Error::AlreadyExists {
            reason: "USER_ALREADY_EXISTS",
            message: format!("username {username:?} is already registered"),
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument { message, .. }
            | Error::AlreadyExists { message, .. }
            | Error::Internal { message }
            | Error::Unavailable { message } => message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason(), self.message())
    }
}

impl std::error::Error for Error {}

/// Persists greetings.
pub trait GreeterRepo: Send + Sync {
    /// Stores one greeting row for `name`.
    fn save_greeting(&self, name: String) -> BoxFuture<'_, Result<(), Error>>;
}

/// Persists users.
pub trait UserRepo: Send + Sync {
    /// Stores a new user with age 1; a taken username is `AlreadyExists`.
    fn create(&self, username: String, password: String) -> BoxFuture<'_, Result<User, Error>>;
    /// All users in id order.
    fn list(&self) -> BoxFuture<'_, Result<Vec<User>, Error>>;
    /// Deletes by id; `false` when there was no such user.
    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, Error>>;
}

/// The greeting use case.
pub struct GreeterUsecase {
    repo: Arc<dyn GreeterRepo>,
}

impl GreeterUsecase {
    /// A use case storing greetings in `repo`.
    pub fn new(repo: Arc<dyn GreeterRepo>) -> GreeterUsecase {
        GreeterUsecase { repo }
    }

    /// Logs the name, stores a greeting row, returns `Hello <name>`.
    pub async fn say_hello(&self, name: &str) -> Result<String, Error> {
        log(&format!("SayHello name={}", preview(name)));
        self.repo.save_greeting(name.to_owned()).await?;
        Ok(format!("Hello {name}"))
    }
}

/// The user use cases.
pub struct UserUsecase {
    repo: Arc<dyn UserRepo>,
}

impl UserUsecase {
    /// Use cases over `repo`.
    pub fn new(repo: Arc<dyn UserRepo>) -> UserUsecase {
        UserUsecase { repo }
    }

    /// Registers a user whose username and password pass [`check_field`]
    /// with [`USERNAME_MAX_BYTES`] and [`PASSWORD_MAX_BYTES`].
    pub async fn register(&self, username: &str, password: &str) -> Result<User, Error> {
        check_field(Field::Username, username)?;
        check_field(Field::Password, password)?;
        let user = self
            .repo
            .create(username.to_owned(), password.to_owned())
            .await?;
        log(&format!(
            "UserRegister id={} username={:?}",
            user.id, user.username
        ));
        Ok(user)
    }

    /// All users, oldest first.
    pub async fn list(&self) -> Result<Vec<User>, Error> {
        self.repo.list().await
    }
}

/// Both use cases, as the transports share them: one `Arc<Usecases>` is
/// handed to the HTTP routes and the gRPC methods alike.
pub struct Usecases {
    /// SayHello.
    pub greeter: GreeterUsecase,
    /// UserRegister and UserList.
    pub users: UserUsecase,
}

/// Longest accepted username, in UTF-8 bytes. 64 covers any real handle or
/// e-mail-style login, and keeps a duplicate-name message (which quotes the
/// name) short.
pub const USERNAME_MAX_BYTES: usize = 64;
/// Longest accepted password, in UTF-8 bytes: room for a long passphrase,
/// while a user entry in `UserList` stays at most [`MAX_WIRE_USER_BYTES`].
pub const PASSWORD_MAX_BYTES: usize = 128;
/// The most one user can add to an encoded `UserListResponse` with the bounds
/// above: username field 1 + 1 + 64, password field 1 + 2 + 128 (a length of
/// 128 needs a two-byte varint), so the `User` message is 197 bytes, and its
/// entry in the repeated field 1 + 2 + 197 = 200 bytes.
pub const MAX_WIRE_USER_BYTES: usize = 200;

/// The two registration fields, for naming them in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `username`, 1..=[`USERNAME_MAX_BYTES`] bytes.
    Username,
    /// `password`, 1..=[`PASSWORD_MAX_BYTES`] bytes.
    Password,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Username => "username",
            Field::Password => "password",
        }
    }

    /// The Kratos reason `<FIELD>_<problem>`, e.g. `USERNAME_TOO_LONG`.
    fn reason(self, problem: Problem) -> &'static str {
        match (self, problem) {
            (Field::Username, Problem::Empty) => "USERNAME_EMPTY",
            (Field::Username, Problem::TooLong) => "USERNAME_TOO_LONG",
            (Field::Username, Problem::InvalidCharacters) => "USERNAME_INVALID_CHARACTERS",
            (Field::Password, Problem::Empty) => "PASSWORD_EMPTY",
            (Field::Password, Problem::TooLong) => "PASSWORD_TOO_LONG",
            (Field::Password, Problem::InvalidCharacters) => "PASSWORD_INVALID_CHARACTERS",
        }
    }

    /// The largest accepted value, in bytes.
    pub fn max_bytes(self) -> usize {
        match self {
            Field::Username => USERNAME_MAX_BYTES,
            Field::Password => PASSWORD_MAX_BYTES,
        }
    }
}

/// The ways a field can break its rule.
#[derive(Debug, Clone, Copy)]
enum Problem {
    Empty,
    TooLong,
    InvalidCharacters,
}

/// Checks one registration field: not empty, at most `field.max_bytes()`
/// UTF-8 bytes, and no control character (Unicode category Cc: NUL, C0,
/// DEL, C1 — they corrupt logs and terminals and no name needs them).
/// Everything else, including non-ASCII letters and spaces, is allowed.
///
/// The messages name the field and the bound but never quote the value, so
/// an error stays small whatever was sent.
pub fn check_field(field: Field, value: &str) -> Result<(), Error> {
    let (name, max) = (field.name(), field.max_bytes());
    let (reason, message) = if value.is_empty() {
        (
            field.reason(Problem::Empty),
            format!("{name} must not be empty"),
        )
    } else if value.len() > max {
        (
            field.reason(Problem::TooLong),
            format!(
                "{name} must be at most {max} bytes of UTF-8, got {} bytes",
                value.len()
            ),
        )
    } else if let Some((at, c)) = value.char_indices().find(|(_, c)| c.is_control()) {
        (
            field.reason(Problem::InvalidCharacters),
            format!(
                "{name} must not contain control characters (found U+{:04X} at byte {at})",
                u32::from(c)
            ),
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument { reason, message })
}

/// A value quoted for a log line, cut at 64 characters so a huge request
/// cannot flood the log.
fn preview(value: &str) -> String {
    const MAX: usize = 64;
    match value.char_indices().nth(MAX) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
    }
}

/// One `[greeter]` line through the framework's log sink.
pub fn log(message: &str) {
    crate::web::log::message("greeter", format_args!("{message}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_fields_are_bounded_in_bytes_and_refuse_control_characters() {
        let long_name = "n".repeat(USERNAME_MAX_BYTES + 1);
        let long_password = "p".repeat(PASSWORD_MAX_BYTES + 1);
        let cases: [(Field, &str, Option<&str>); 10] = [
            (Field::Username, "ann", None),
            (Field::Username, &"n".repeat(USERNAME_MAX_BYTES), None),
            (Field::Username, "zoë 山田", None),
            (Field::Username, "", Some("USERNAME_EMPTY")),
            (Field::Username, &long_name, Some("USERNAME_TOO_LONG")),
            (Field::Username, "a\0b", Some("USERNAME_INVALID_CHARACTERS")),
            (
                Field::Username,
                "a\u{85}b",
                Some("USERNAME_INVALID_CHARACTERS"),
            ),
            (Field::Password, &"p".repeat(PASSWORD_MAX_BYTES), None),
            (Field::Password, &long_password, Some("PASSWORD_TOO_LONG")),
            (
                Field::Password,
                "tab\there",
                Some("PASSWORD_INVALID_CHARACTERS"),
            ),
        ];
        for (field, value, want) in cases {
            let got = check_field(field, value).err().map(|e| e.reason());
            assert_eq!(got, want, "{field:?} {value:?}");
        }
    }

    #[test]
    fn too_long_is_counted_in_bytes_and_the_message_names_field_and_bound_not_value() {
        // 22 three-byte characters: 66 bytes, although only 22 characters.
        let name = "山".repeat(22);
        let err = check_field(Field::Username, &name).unwrap_err();
        assert_eq!(
            err.message(),
            "username must be at most 64 bytes of UTF-8, got 66 bytes"
        );
        let huge = "x".repeat(1 << 20);
        let err = check_field(Field::Password, &huge).unwrap_err();
        assert_eq!(
            err.message(),
            "password must be at most 128 bytes of UTF-8, got 1048576 bytes"
        );
        let err = check_field(Field::Username, "ann\u{7f}").unwrap_err();
        assert_eq!(
            err.message(),
            "username must not contain control characters (found U+007F at byte 3)"
        );
    }
}
