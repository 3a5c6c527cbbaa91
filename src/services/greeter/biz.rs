//! The greeter's business layer (Kratos' `biz`): use cases and the repository
//! interfaces they need. Transports call use cases; the data layer implements
//! the repositories. Errors carry a Kratos-style `reason` so each transport
//! can map them to its own status (gRPC code, HTTP status).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::types::BoxFuture;
use crate::web::peer;
use crate::web::ratelimit::PerClient;

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
    /// Too many calls from this client (HTTP 429, gRPC RESOURCE_EXHAUSTED).
    TooMany {
        reason: &'static str,
        message: String,
    },
}

impl Error {
    /// The Kratos reason, an UPPER_SNAKE identifier clients can match on.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidArgument { reason, .. } | Error::AlreadyExists { reason, .. } => reason,
            Error::Internal { .. } => "INTERNAL",
            Error::Unavailable { .. } => "STORE_UNAVAILABLE",
            Error::Busy { .. } => "STORE_BUSY",
            Error::TooMany { reason, .. } => reason,
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
            | Error::Busy { message }
            | Error::TooMany { message, .. } => message,
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
    /// name is 1..=[`NAME_MAX_BYTES`] bytes: every call stores it, so an
    /// unbounded name would let callers grow the database without limit.
    pub async fn say_hello(&self, name: &str) -> Result<String, Error> {
        log(&format!("SayHello name={}", preview(name)));
        check_name(name)?;
        self.repo.save_greeting(name.to_owned()).await?;
        Ok(format!("Hello {name}"))
    }

    /// `Hello again <name>`; the name follows the SayHello rule.
    pub async fn say_hello_again(&self, name: &str) -> Result<String, Error> {
        check_name(name)?;
        log(&format!("SayHelloAgain name={}", preview(name)));
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
    /// Registrations per client address, when limited.
    registrations: Option<PerClient>,
}

impl UserUsecase {
    /// Use cases over `repo`, registrations not limited.
    pub fn new(repo: Arc<dyn UserRepo>) -> UserUsecase {
        UserUsecase {
            repo,
            registrations: None,
        }
    }

    /// At most `per_minute` registrations per client address (the one the
    /// transport serving the call gives, [`peer::current`]); `0`: no limit.
    /// Without a limit one client filled the table with 21,000 users in
    /// 3 s, and every `UserList` after that failed.
    pub fn limit_registrations(mut self, per_minute: u32) -> UserUsecase {
        self.registrations =
            (per_minute > 0).then(|| PerClient::new(per_minute as usize, Duration::from_secs(60)));
        self
    }

    /// Registers a user whose username and password pass [`check_field`]
    /// with [`USERNAME_MAX_BYTES`] and [`PASSWORD_MAX_BYTES`].
    pub async fn register(&self, username: &str, password: &str) -> Result<User, Error> {
        // Every call counts, taken names and bad fields too (a 409 tells a
        // script which names exist), and it is checked before anything else.
        if let (Some(limit), Some(ip)) = (&self.registrations, peer::current()) {
            if let Err(wait) = limit.admit(ip) {
                return Err(Error::TooMany {
                    reason: "TOO_MANY_REGISTRATIONS",
                    message: format!(
                        "too many registrations from this address, try again in {} s",
                        wait.as_secs().max(1)
                    ),
                });
            }
        }
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

    /// One page of users, oldest first (AIP-158): `page_size` 0 means
    /// [`DEFAULT_PAGE_SIZE`], above [`MAX_PAGE_SIZE`] is read as the maximum,
    /// below 0 is refused; `page_token` is empty for the first page, else a
    /// `next_page_token` this server gave. Returns the users and the token
    /// of the next page (empty on the last one).
    pub async fn list_page(
        &self,
        page_size: i32,
        page_token: &str,
    ) -> Result<(Vec<User>, String), Error> {
        let size = match page_size {
            0 => DEFAULT_PAGE_SIZE,
            n if n < 0 => {
                return Err(Error::InvalidArgument {
                    reason: "PAGE_SIZE_NEGATIVE",
                    message: format!("page_size must not be negative, got {n}"),
                })
            }
            n => (n as usize).min(MAX_PAGE_SIZE),
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

/// Page tokens: opaque to clients (base64url of `v1:<last id>`), checked
/// on the way back in. A token has one spelling: it must be exactly what
/// [`page::encode`] writes for its id, so `v1:+5`, `v1:05` or a padded or
/// otherwise re-encoded form of a real token is `PAGE_TOKEN_INVALID` (two
/// spellings of one position would be two cache keys and a probe surface).
///
/// Not bound to the listing (AIP-158 asks that a token be refused when the
/// request's other fields change): `UserList` has no other field but
/// `page_size`, which AIP-158 lets change between pages, so every token is
/// a position in the one listing there is. Keyset by id, a token stays
/// valid as users register; it grants nothing, since every position is
/// reachable by paging from the start. A filter or an order, if ever added,
/// goes into the token and a mismatch becomes `PAGE_TOKEN_INVALID` too.
mod page {
    use super::Error;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    pub fn encode(last_id: i64) -> String {
        URL_SAFE_NO_PAD.encode(format!("v1:{last_id}"))
    }

    /// The id the page starts after: 0 for the empty (first-page) token.
    pub fn decode(token: &str) -> Result<i64, Error> {
        if token.is_empty() {
            return Ok(0);
        }
        URL_SAFE_NO_PAD
            .decode(token)
            .ok()
            .and_then(|raw| String::from_utf8(raw).ok())
            .and_then(|text| text.strip_prefix("v1:")?.parse::<i64>().ok())
            .filter(|id| *id > 0 && encode(*id) == token)
            .ok_or_else(|| Error::InvalidArgument {
                reason: "PAGE_TOKEN_INVALID",
                message: "page_token is not one this server gave (send the \
                          next_page_token of the previous page, or none)"
                    .into(),
            })
    }
}

/// Longest accepted SayHello name, in UTF-8 bytes (as a username: a name
/// is a person's handle, and each call stores one row holding it).
pub const NAME_MAX_BYTES: usize = 64;

/// The SayHello name rule: 1..=[`NAME_MAX_BYTES`] bytes, no character
/// [`name_char_refused`] refuses.
pub fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::InvalidArgument {
            reason: "NAME_EMPTY",
            message: "name must not be empty".into(),
        });
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(Error::InvalidArgument {
            reason: "NAME_TOO_LONG",
            message: format!(
                "name must be at most {NAME_MAX_BYTES} bytes of UTF-8, got {} bytes",
                name.len()
            ),
        });
    }
    if let Some((at, c)) = name.char_indices().find(|(_, c)| name_char_refused(*c)) {
        return Err(Error::InvalidArgument {
            reason: "NAME_INVALID_CHARACTERS",
            message: format!(
                "name must not contain control characters or bidirectional overrides \
                 (found U+{:04X} at byte {at})",
                u32::from(c)
            ),
        });
    }
    Ok(())
}

/// Characters a SayHello name may not hold: control characters (Unicode
/// Cc: NUL, ESC, CR, LF, DEL, C1), which forge log lines and drive
/// terminals, and the bidirectional embeddings, overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069), which make a name display as other
/// text (Trojan Source, CVE-2021-42574). The name is echoed in every reply
/// and stored; usernames refuse the same and more (ASCII only).
pub fn name_char_refused(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
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
/// A password may hold anything else, spaces and any script included. A
/// username may hold only [`is_username_char`] characters: see there why.
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
    } else if let Some((at, c)) = value
        .char_indices()
        .find(|(_, c)| field == Field::Username && !is_username_char(*c))
    {
        (
            field.reason(Problem::InvalidCharacters),
            format!(
                "{name} may contain only ASCII letters, digits, '_', '-' and '.' \
                 (found {c:?}, U+{:04X}, at byte {at})",
                u32::from(c)
            ),
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument { reason, message })
}

/// Whether `c` may appear in a username: ASCII letters, digits, `_`, `-`
/// and `.` (the set token-auth uses too).
///
/// Why ASCII only: two names that look alike must not be two accounts.
/// Unicode offers many ways to spell one visible name — case (`ADMİN`
/// lower-cases to `admi̇n`, not `admin`), compatibility forms (fullwidth
/// `ａｄｍｉｎ`), composed and decomposed accents (NFC `é` and NFD `e` +
/// U+0301), other scripts' look-alike letters (Cyrillic `а`). Folding them
/// all needs NFKC, full case folding and a confusables table; refusing them
/// needs this one test. Within ASCII only case remains, and the store makes
/// the name unique without regard to ASCII case (a unique index on
/// `lower(username)`), so `Admin` after `admin` is `USER_ALREADY_EXISTS`
/// even when both race (see `docs/reliability-2.md`).
pub fn is_username_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
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

    #[tokio::test]
    async fn say_hello_again_greets_again_and_refuses_an_empty_name() {
        let data = crate::services::greeter::data::Data::open(":memory:").unwrap();
        let store = crate::services::greeter::data::GreeterStore::new(data);
        let greeter = GreeterUsecase::new(Arc::new(store));
        assert_eq!(
            greeter.say_hello_again("kratos").await.unwrap(),
            "Hello again kratos"
        );
        let err = greeter.say_hello_again("").await.unwrap_err();
        assert_eq!(
            (err.reason(), err.message()),
            ("NAME_EMPTY", "name must not be empty")
        );
    }

    #[test]
    fn registration_fields_are_bounded_in_bytes_and_refuse_control_characters() {
        let long_name = "n".repeat(USERNAME_MAX_BYTES + 1);
        let long_password = "p".repeat(PASSWORD_MAX_BYTES + 1);
        let cases: [(Field, &str, Option<&str>); 12] = [
            (Field::Username, "ann", None),
            (Field::Username, &"n".repeat(USERNAME_MAX_BYTES), None),
            (
                Field::Username,
                "zoë 山田",
                Some("USERNAME_INVALID_CHARACTERS"),
            ),
            (Field::Username, "Ann_O.Neil-2", None),
            (Field::Password, "zoë 山田", None),
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
        let err = check_field(Field::Username, "ADMİN").unwrap_err();
        assert_eq!(
            err.message(),
            "username may contain only ASCII letters, digits, '_', '-' and '.' \
             (found 'İ', U+0130, at byte 3)"
        );
        let err = check_field(Field::Username, "ann\u{7f}").unwrap_err();
        assert_eq!(
            err.message(),
            "username must not contain control characters (found U+007F at byte 3)"
        );
    }

    #[test]
    fn page_tokens_have_one_spelling() {
        use base64::Engine as _;
        let b64 = |t: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t);
        assert_eq!(page::decode(&page::encode(5)).unwrap(), 5);
        let padded = base64::engine::general_purpose::URL_SAFE.encode("v1:5");
        for bad in [
            b64("v1:+5"),
            b64("v1:05"),
            b64("v1:5 "),
            b64("v1:0"),
            padded,
        ] {
            let err = page::decode(&bad).unwrap_err();
            assert_eq!(err.reason(), "PAGE_TOKEN_INVALID", "{bad}");
        }
    }

    #[test]
    fn say_hello_names_refuse_control_characters_and_bidi_overrides() {
        for ok in ["kratos", "zoë 山田", "a\u{200F}b", "\u{2065}"] {
            assert!(check_name(ok).is_ok(), "{ok:?}");
        }
        for (bad, at) in [
            ("a\0b", "U+0000 at byte 1"),
            ("\u{1b}[31m", "U+001B at byte 0"),
            ("x\r\nforged", "U+000D at byte 1"),
            ("\u{7f}", "U+007F at byte 0"),
            ("\u{85}", "U+0085 at byte 0"),
            ("abc\u{202E}fdp.exe", "U+202E at byte 3"),
            ("\u{202A}", "U+202A"),
            ("\u{2066}x", "U+2066"),
            ("x\u{2069}", "U+2069 at byte 1"),
        ] {
            let err = check_name(bad).unwrap_err();
            assert_eq!(err.reason(), "NAME_INVALID_CHARACTERS", "{bad:?}");
            assert!(err.message().contains(at), "{bad:?}: {}", err.message());
        }
    }
}
