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
    /// The store cannot take writes (HTTP 503, gRPC UNAVAILABLE): its file
    /// was removed, replaced or became read-only. The message starts with
    /// "store unavailable".
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

    /// Registers a user; username and password must be non-empty.
    pub async fn register(&self, username: &str, password: &str) -> Result<User, Error> {
        if username.is_empty() {
            return Err(Error::InvalidArgument {
                reason: "USERNAME_EMPTY",
                message: "username must not be empty".into(),
            });
        }
        if password.is_empty() {
            return Err(Error::InvalidArgument {
                reason: "PASSWORD_EMPTY",
                message: "password must not be empty".into(),
            });
        }
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
