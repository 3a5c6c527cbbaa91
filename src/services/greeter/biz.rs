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
    /// The store's write queue is full (HTTP 503, gRPC RESOURCE_EXHAUSTED):
    /// the write was refused at once and not stored; try again shortly.
    Busy { message: String },
}

impl Error {
    /// The Kratos reason, an UPPER_SNAKE identifier clients can match on.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidArgument { reason, .. } | Error::AlreadyExists { reason, .. } => reason,
            Error::Internal { .. } => "INTERNAL",
            Error::Unavailable { .. } => "STORE_UNAVAILABLE",
            Error::Busy { .. } => "STORE_BUSY",
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
            | Error::Unavailable { message }
            | Error::Busy { message } => message,
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
    /// Answers when the store answers a trivial query (readiness).
    fn ping(&self) -> BoxFuture<'_, Result<(), Error>>;
}

/// Persists users.
pub trait UserRepo: Send + Sync {
    /// Stores a new user with age 1; a taken username is `AlreadyExists`.
    fn create(&self, username: String, password: String) -> BoxFuture<'_, Result<User, Error>>;
    /// At most `limit` users with an id above `after_id`, in id order
    /// (keyset pagination: a page does not shift when users are added).
    fn page(&self, after_id: i64, limit: usize) -> BoxFuture<'_, Result<Vec<User>, Error>>;
    /// All users in id order.
    fn list(&self) -> BoxFuture<'_, Result<Vec<User>, Error>> {
        self.page(0, usize::MAX)
    }
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

    /// Logs the name, stores a greeting row, returns `Hello <name>`. The
    /// name's rule (1..=[`NAME_MAX_BYTES`] bytes: every call stores it, so
    /// an unbounded name would let callers grow the database without limit)
    /// is declared in greeter.proto and checked before any method runs.
    pub async fn say_hello(&self, name: &str) -> Result<String, Error> {
        log_args(format_args!("SayHello name={}", Preview(name)));
        self.repo.save_greeting(name.to_owned()).await?;
        Ok(format!("Hello {name}"))
    }

    /// `Hello again <name>`; the name follows the SayHello rule.
    pub async fn say_hello_again(&self, name: &str) -> Result<String, Error> {
        log_args(format_args!("SayHelloAgain name={}", Preview(name)));
        Ok(format!("Hello again {name}"))
    }

    /// Whether the store answers (the greeter's readiness).
    pub async fn ready(&self) -> Result<(), Error> {
        self.repo.ping().await
    }
}

/// The user use cases.
pub struct UserUsecase {
    repo: Arc<dyn UserRepo>,
}

impl UserUsecase {
    /// Use cases over `repo`. How often one client may register is the
    /// transports' business (the greeter's `limits` interceptor).
    pub fn new(repo: Arc<dyn UserRepo>) -> UserUsecase {
        UserUsecase { repo }
    }

    /// Registers a user. The fields' rules (at most [`USERNAME_MAX_BYTES`]
    /// and [`PASSWORD_MAX_BYTES`], the characters allowed) are declared in
    /// greeter.proto and checked before any method runs.
    pub async fn register(&self, username: &str, password: &str) -> Result<User, Error> {
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

    /// One page of users, oldest first (AIP-158): `page_size` 0 means
    /// [`DEFAULT_PAGE_SIZE`], above [`MAX_PAGE_SIZE`] is read as the maximum
    /// (below 0 is refused by greeter.proto's rule); `page_token` is empty for the first page, else a
    /// `next_page_token` this server gave. Returns the users and the token
    /// of the next page (empty on the last one).
    pub async fn list_page(
        &self,
        page_size: i32,
        page_token: &str,
    ) -> Result<(Vec<User>, String), Error> {
        let size = match usize::try_from(page_size) {
            Ok(0) | Err(_) => DEFAULT_PAGE_SIZE,
            Ok(n) => n.min(MAX_PAGE_SIZE),
        };
        let after = page::decode(page_token)?;
        // One more than asked: whether there is a next page.
        let mut users = self.repo.page(after, size + 1).await?;
        let next = if users.len() > size {
            users.truncate(size);
            users.last().map(|u| page::encode(u.id)).unwrap_or_default()
        } else {
            String::new()
        };
        Ok((users, next))
    }
}

/// Greetings kept: each SayHello stores one row, and the oldest rows past
/// this many are deleted in the same transaction, so the table stays under
/// 1,000 × (64-byte name + ~40 bytes) whatever the call rate.
pub const GREETINGS_KEPT: i64 = 1000;

/// Users in a `UserList` page when the request names no size.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// Most users in one `UserList` page (AIP-158: larger sizes are read as
/// this); 1,000 users of the widest kind make 200 KB, far below 4 MiB.
pub const MAX_PAGE_SIZE: usize = 1000;

/// Page tokens: opaque to clients, the last id of the page written in
/// bijective base 36 (digits `0`-`9`, `a`-`z` standing for 1 to 36, no zero
/// digit). greeter.proto's rule (at most 12 such characters, `^[0-9a-z]*$`)
/// is then exactly the set of tokens: every string it allows names one id
/// (36 + 36^2 + ... + 36^12 is below 2^63) and every id has one spelling, so
/// a schema-valid token is never refused and no two spellings reach one
/// position (two would be two cache keys and a probe surface). A token
/// naming an id no page ended on is a page starting after it (keyset).
///
/// Not bound to the listing (AIP-158 asks that a token be refused when the
/// request's other fields change): `UserList` has no other field but
/// `page_size`, which AIP-158 lets change between pages, so every token is
/// a position in the one listing there is. Keyset by id, a token stays
/// valid as users register; it grants nothing, since every position is
/// reachable by paging from the start. A filter or an order, if ever added,
/// goes into the token and a mismatch becomes `PAGE_TOKEN_INVALID`.
mod page {
    use super::Error;

    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

    /// `last_id` in bijective base 36 (ids start at 1; 0 is the empty token).
    pub fn encode(last_id: i64) -> String {
        let mut n = last_id.max(0) as u64;
        let mut digits = Vec::new();
        while n > 0 {
            n -= 1;
            digits.push(DIGITS[(n % 36) as usize]);
            n /= 36;
        }
        digits.reverse();
        String::from_utf8(digits).unwrap_or_default()
    }

    /// The id a non-empty token names; `None` for a character outside the
    /// digits or a value past `i64`.
    fn decode_bijective(token: &str) -> Option<i64> {
        token.bytes().try_fold(0i64, |n, b| {
            let digit = DIGITS.iter().position(|d| *d == b)? as i64 + 1;
            n.checked_mul(36)?.checked_add(digit)
        })
    }

    /// The id the page starts after: 0 for the empty (first-page) token.
    pub fn decode(token: &str) -> Result<i64, Error> {
        if token.is_empty() {
            return Ok(0);
        }
        decode_bijective(token).ok_or_else(|| Error::InvalidArgument {
            reason: "PAGE_TOKEN_INVALID",
            message: "page_token is not one this server gave (send the \
                          next_page_token of the previous page, or none)"
                .into(),
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn page_tokens_have_one_spelling_and_every_schema_valid_token_decodes() {
            // One spelling: every token of up to two characters is the
            // encoding of the id it decodes to (bijective numeration).
            let digits = DIGITS.iter().map(|d| (*d as char).to_string());
            let tokens: Vec<String> = digits
                .clone()
                .chain(
                    digits
                        .clone()
                        .flat_map(|a| digits.clone().map(move |b| format!("{a}{b}"))),
                )
                .collect();
            let mut ids = std::collections::HashSet::new();
            for t in &tokens {
                let id = decode(t).unwrap();
                assert_eq!(encode(id), *t);
                assert!(ids.insert(id), "{t} names an id another token names");
            }
            for id in [1, 35, 36, 1_000_000, i64::MAX] {
                assert_eq!(decode(&encode(id)).unwrap(), id);
            }
            assert_eq!(
                (encode(1), encode(36), encode(37)),
                ("0".into(), "z".into(), "00".into())
            );
            assert_eq!(decode("").unwrap(), 0);
            assert!(
                decode("zzzzzzzzzzzz").is_ok(),
                "the widest schema-valid token"
            );
            assert!(decode("ABC").is_err());
            assert!(decode("zzzzzzzzzzzzzz").is_err(), "past i64");
        }
    }
}

/// Longest accepted SayHello name, in UTF-8 bytes (as a username: a name
/// is a person's handle, and each call stores one row holding it). The rule
/// itself is greeter.proto's `max_bytes`; a test checks the two agree.
pub const NAME_MAX_BYTES: usize = 64;

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
/// name) short. Enforced by greeter.proto's rule (`max_len` of an ASCII-only
/// pattern); a test checks the two agree.
pub const USERNAME_MAX_BYTES: usize = 64;
/// Longest accepted password, in UTF-8 bytes: room for a long passphrase,
/// while a user entry in `UserList` stays at most [`MAX_WIRE_USER_BYTES`].
/// Enforced by greeter.proto's `max_bytes`; a test checks the two agree.
pub const PASSWORD_MAX_BYTES: usize = 128;
/// The most one user can add to an encoded `UserListResponse` with the bounds
/// above: username field 1 + 1 + 64, password field 1 + 2 + 128 (a length of
/// 128 needs a two-byte varint), so the `User` message is 197 bytes, and its
/// entry in the repeated field 1 + 2 + 197 = 200 bytes.
pub const MAX_WIRE_USER_BYTES: usize = 200;

/// A value quoted for a log line, escaped by the one rule of every log line
/// ([`crate::ops::log::escape_for_log`]) and cut at 64 characters so a huge
/// request cannot flood the log.
struct Preview<'a>(&'a str);

impl fmt::Display for Preview<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 64;
        let value = self.0;
        let (shown, cut) = match value.char_indices().nth(MAX) {
            None => (value, false),
            Some((at, _)) => (&value[..at], true),
        };
        write!(f, "\"{}\"", crate::ops::log::escape_for_log(shown))?;
        match cut {
            true => write!(f, "... ({} bytes)", value.len()),
            false => Ok(()),
        }
    }
}

/// One `[greeter]` line through the framework's log sink.
pub fn log(message: &str) {
    log_args(format_args!("{message}"));
}

/// One `[greeter]` line written straight into the sink (no message
/// string made first: SayHello writes one per call).
fn log_args(args: fmt::Arguments<'_>) {
    crate::ops::log::message("greeter", args);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_name_is_quoted_as_debug_quotes_it_and_cut_at_64_characters() {
        for name in [
            "kratos",
            "",
            "a b",
            "quote\"d",
            "back\\slash",
            "tab\t",
            "é",
            "\u{7f}",
            "rtl\u{202e}txt",
        ] {
            assert_eq!(Preview(name).to_string(), format!("{name:?}"), "{name:?}");
        }
        // `|`, a field separator of the access lines, too: the one rule.
        assert_eq!(Preview("a|b").to_string(), "\"a\\u{7c}b\"");
        let long = "x".repeat(70);
        assert_eq!(
            Preview(&long).to_string(),
            format!("{:?}... (70 bytes)", &long[..64])
        );
        assert_eq!(
            Preview(&long[..64]).to_string(),
            format!("{:?}", &long[..64])
        );
    }

    #[tokio::test]
    async fn say_hello_again_greets_again() {
        let data = crate::services::greeter::data::Data::open(":memory:").unwrap();
        let store = crate::services::greeter::data::GreeterStore::new(data);
        let greeter = GreeterUsecase::new(Arc::new(store));
        assert_eq!(
            greeter.say_hello_again("kratos").await.unwrap(),
            "Hello again kratos"
        );
    }
}
