//! Shared configuration support: YAML files read with serde into plain
//! structs, with errors that name the dotted key they are about.
//!
//! A service declares its file as `#[derive(Deserialize)]` structs marked
//! `#[serde(deny_unknown_fields)]` (a misspelt key must not silently leave a
//! setting at its default) and reads it with [`load`] or [`from_yaml`]; rules
//! serde cannot express (allowed values, one key depending on another) are
//! checked by the service afterwards, naming the key themselves.
//!
//! serde_yaml knows where in the document an error happened, but only says so
//! in its message (`server.http: missing field `addr` at line 3 column 5`).
//! [`Error`] splits that text into the key path and the reason, and rewords
//! serde's phrases into the ones a user editing a config file expects:
//!
//! | serde_yaml says | the user reads |
//! |---|---|
//! | ``server.http: missing field `addr` `` | `server.http.addr: missing required key` |
//! | ``server.http: unknown field `x`, expected one of `network`, … `` | `server.http.x: unknown key (known keys here: network, …)` |
//! | ``server: invalid type: integer `5`, expected struct Server`` | ``server: expected a mapping of keys, found integer `5` `` |
//!
//! The serde_yaml error itself stays reachable through
//! [`std::error::Error::source`], with its line and column.
//!
//! `${KEY}` placeholders are resolved by [`resolve`] while the file is read
//! into those structs, each into the type of the field it fills
//! (`placeholders.rs`). An error shows a value at most [`quote`]d, and one
//! that came from the environment not at all ([`Origins::show`]).
//!
//! Durations are written in Go's notation (`1s`, `0.2s`, `500ms`, `1m`,
//! `1h30m`), as in go-kratos configs: [`parse_duration`], and [`duration`] /
//! [`timeout`] for `#[serde(deserialize_with = …)]`.
//!
//! This module imports nothing from the crate: services use it, never the
//! other way round.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

mod placeholders;
pub use placeholders::{Env, Origins, MAX_RESOLVED_BYTES};

/// Why a configuration file cannot be used.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not one well-formed YAML document.
    Syntax {
        /// The parser's error, with its line and column.
        source: serde_yaml::Error,
    },
    /// The document does not fit the expected keys: one is unknown, missing,
    /// repeated or holds a value of the wrong kind.
    Key {
        /// The dotted key path (`server.http.timeout`); empty for the
        /// document as a whole.
        key: String,
        /// What is wrong there, worded for the person editing the file.
        reason: String,
        /// serde_yaml's own error, with its line and column.
        source: serde_yaml::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Read { path, source } => {
                write!(f, "cannot read config file {}", path.display())?;
                // A relative path is read from the working directory: say
                // which, since `cargo run` elsewhere is the usual slip.
                if path.is_relative() {
                    if let Ok(cwd) = std::env::current_dir() {
                        write!(f, " in {}", cwd.display())?;
                    }
                }
                write!(f, ": {source}")?;
                if source.kind() == std::io::ErrorKind::NotFound {
                    f.write_str(" (give its path with --config PATH)")?;
                }
                Ok(())
            }
            Error::Syntax { source } => write!(f, "invalid YAML: {source}"),
            Error::Key { key, reason, .. } if key.is_empty() => f.write_str(reason),
            Error::Key { key, reason, .. } => write!(f, "{key}: {reason}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read { source, .. } => Some(source),
            Error::Syntax { source } | Error::Key { source, .. } => Some(source),
        }
    }
}

impl From<serde_yaml::Error> for Error {
    fn from(source: serde_yaml::Error) -> Error {
        match key_and_reason(&source) {
            Some((key, reason)) => Error::Key {
                key,
                reason,
                source,
            },
            None => Error::Syntax { source },
        }
    }
}

/// Largest configuration file read: far above any real one, so a file
/// that is not a configuration is refused at once (a FIFO or a device
/// such as `/dev/zero` is refused before it is opened).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Deepest nesting of YAML collections accepted; real configs use 3 or 4.
pub const MAX_DEPTH: usize = 32;

/// Reads the YAML file at `path` into `T`.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<T, Error> {
    from_yaml(&read(path)?)
}

/// The text of the configuration file at `path`: a regular file of at
/// most [`MAX_FILE_BYTES`] of UTF-8.
pub fn read(path: &Path) -> Result<String, Error> {
    use std::io::Read;
    let read_err = |source| Error::Read {
        path: path.to_owned(),
        source,
    };
    regular_file(path).map_err(read_err)?;
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(read_err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_FILE_BYTES} bytes"),
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        read_err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8 text",
        ))
    })
}

/// Reads YAML `text` into `T` with its `${KEY}` and `${KEY:default}`
/// placeholders resolved, as a Kratos app with a file source and
/// `env.NewSource(prefix)` reads its config: KEY is looked up first in the
/// environment (the variable `env.prefix` + KEY: Kratos strips the prefix
/// from its keys), then as a dotted key path in the file
/// (`data.database.driver`, as written there); otherwise the default is
/// used. Resolved text is not resolved again. Also returns which keys took
/// their value from the environment.
///
/// Where this departs from Kratos:
///
/// - A placeholder's value takes the type of the field it fills: a string
///   field keeps the text exactly (`0123456789` stays `0123456789`), a
///   number, boolean or duration field parses it, and a value that does not
///   parse is an error naming the key and the variable, not quoting the
///   value. (Kratos' `WithResolveActualTypes` retypes the text from its
///   look instead, so a numeric-looking password became another number.)
/// - A placeholder with nothing to resolve to and no default is an error
///   naming the key and the variable, where Kratos substitutes "".
/// - A placeholder naming one of `env.denied` (the service's own secrets,
///   which share the prefix) is an error.
/// - Unknown keys are refused before anything is expanded, and expansion
///   stops at [`MAX_RESOLVED_BYTES`].
///
/// A document without `${` is read as [`from_yaml`] reads it.
pub fn resolve<T: DeserializeOwned>(text: &str, env: &Env<'_>) -> Result<(T, Origins), Error> {
    if !text.contains("${") {
        return Ok((from_yaml(text)?, Origins::default()));
    }
    placeholders::resolve(text, env)
}

/// Longest part of a value a start-up error quotes, in characters: enough
/// to recognise it, while a long value (or a secret pasted into the wrong
/// key) is not repeated whole.
pub const QUOTE_MAX_CHARS: usize = 32;

/// `value` as a start-up error quotes it: in double quotes, escaped as
/// Rust's `Debug` escapes a string, cut after [`QUOTE_MAX_CHARS`]
/// characters (`"postgres://app:hunter2@db:54"… (61 bytes)`). A value that
/// came from the environment is not quoted at all ([`Origins::show`]).
pub fn quote(value: &str) -> String {
    match value.char_indices().nth(QUOTE_MAX_CHARS) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &value[..cut], value.len()),
    }
}

/// `Ok` if `path` is a regular file (after symbolic links), else why not
/// (`not a regular file (a FIFO)`), found without opening it: opening a
/// FIFO blocks until a writer comes (a service that never starts, a reload
/// that never ends), and a device streams without end. Every file the
/// services read at start-up (configuration, certificates) passes here.
pub fn regular_file(path: &Path) -> std::io::Result<()> {
    let kind = std::fs::metadata(path)?.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file ({})", file_kind(kind)),
    ))
}

/// What a path that is not a regular file is, for the start-up error.
fn file_kind(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Parses YAML text into `T`; documents nested deeper than [`MAX_DEPTH`]
/// are refused before the parser sees them.
pub fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    check_depth(text)?;
    serde_yaml::from_str(text).map_err(Error::from)
}

/// Refuses `text` nested deeper than [`MAX_DEPTH`].
fn check_depth(text: &str) -> Result<(), Error> {
    let Some(line) = too_deep(text) else {
        return Ok(());
    };
    let reason = format!("nested deeper than {MAX_DEPTH} levels (at line {line})");
    Err(Error::Key {
        key: String::new(),
        source: <serde_yaml::Error as de::Error>::custom(&reason),
        reason,
    })
}

/// The line where `text` first nests deeper than [`MAX_DEPTH`]: flow
/// collections (`[`, `{` outside quotes) and block indentation levels
/// (counted as distinct indents open on the current path) both count.
fn too_deep(text: &str) -> Option<usize> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    for (n, line) in text.lines().enumerate() {
        let body = line.trim_start_matches([' ', '-']);
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = line.len() - body.len();
        if flow == 0 {
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut quote = None;
        for c in body.chars() {
            match (quote, c) {
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '#') => break,
                (None, '[' | '{') => flow += 1,
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            if flow + indents.len() > MAX_DEPTH {
                return Some(n + 1);
            }
        }
        if flow + indents.len() > MAX_DEPTH {
            return Some(n + 1);
        }
    }
    None
}

/// Splits serde_yaml's `path: message at line L column C` into the dotted key
/// and a reworded reason; `None` when the error is about the YAML text itself
/// (a syntax error, an unknown anchor, several documents).
fn key_and_reason(error: &serde_yaml::Error) -> Option<(String, String)> {
    let full = error.to_string();
    let at = error
        .location()
        .map(|at| format!(" at line {} column {}", at.line(), at.column()));
    let text = at
        .as_deref()
        .and_then(|at| full.strip_suffix(at))
        .unwrap_or(&full);
    // The path is made of the struct fields serde was inside, so it never
    // holds a space; serde's own messages start with words ("invalid type").
    let (path, message) = match text.split_once(": ") {
        Some((path, message)) if !path.is_empty() && !path.contains(char::is_whitespace) => {
            (path, message)
        }
        _ => ("", text),
    };
    // serde quotes names in backticks: the offending one first, then the
    // expected ones.
    let mut names = message.split('`').skip(1).step_by(2);
    let join = |name: &str| match path {
        "" => name.to_owned(),
        _ => format!("{path}.{name}"),
    };
    if message.starts_with("missing field `") {
        Some((join(names.next()?), "missing required key".to_owned()))
    } else if message.starts_with("duplicate field `") {
        Some((join(names.next()?), "duplicate key".to_owned()))
    } else if message.starts_with("unknown field `") {
        let key = join(names.next()?);
        let known: Vec<&str> = names.collect();
        Some((
            key,
            format!("unknown key (known keys here: {})", known.join(", ")),
        ))
    } else if message.starts_with("unknown variant `") {
        let name = names.next()?;
        let known: Vec<&str> = names.collect();
        let reason = format!(
            "unknown name {name:?} (known names here: {})",
            known.join(", ")
        );
        Some((path.to_owned(), reason))
    } else if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    {
        let (found, expected) = rest.rsplit_once(", expected ")?;
        let found = match found {
            "sequence" => "a list".to_owned(),
            "map" => "a mapping".to_owned(),
            "unit value" => "nothing".to_owned(),
            // `string "…"`: a value, cut as [`quote`] cuts one.
            other => match other.char_indices().nth(QUOTE_MAX_CHARS + 8) {
                Some((cut, _)) => format!("{}…", &other[..cut]),
                None => other.to_owned(),
            },
        };
        let expected = if expected.starts_with("struct ") || expected == "a map" {
            "a mapping of keys"
        } else {
            expected
        };
        Some(match path {
            "" => (
                String::new(),
                format!("the config file must be {expected}, found {found}"),
            ),
            _ => (
                path.to_owned(),
                format!("expected {expected}, found {found}"),
            ),
        })
    } else if !path.is_empty() {
        // A message of our own, e.g. from [`duration`].
        Some((path.to_owned(), message.to_owned()))
    } else {
        None
    }
}

/// For `#[serde(deserialize_with = "crate::config::duration")]`: a duration
/// in Go's notation, see [`parse_duration`].
pub fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    // Through a visitor, so that serde_yaml pins an error to this key
    // rather than to the section holding it.
    deserializer.deserialize_str(GoDuration)
}

/// For `#[serde(deserialize_with = "crate::config::timeout")]`: a duration
/// in Go's notation where `0` switches the time-out off (`None`), as in
/// Kratos.
pub fn timeout<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let timeout = duration(deserializer)?;
    Ok((!timeout.is_zero()).then_some(timeout))
}

struct GoDuration;

impl Visitor<'_> for GoDuration {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as 1s, 0.2s, 500ms or 1m")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
        parse_duration(text).map_err(|reason| {
            E::custom(format!(
                "invalid duration {} ({reason}; write e.g. 1s, 0.2s, 500ms, 1m)",
                quote(text)
            ))
        })
    }
}

/// [`parse_duration`] for the value `text` of the setting `name` (a flag
/// or an environment variable), the error naming the setting:
/// `--shutdown-grace: invalid duration "1x" (unknown unit; write e.g. 1s, 500ms)`.
/// A flag's value is [`quote`]d; a variable's is not shown at all, as no
/// value from the environment is (`GREETER_SHUTDOWN_GRACE: invalid
/// duration (unknown unit; …)`).
pub fn parse_duration_setting(name: &str, text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|reason| {
        let shown = match name.starts_with('-') {
            true => format!(" {}", quote(text)),
            false => String::new(),
        };
        format!("{name}: invalid duration{shown} ({reason}; write e.g. 1s, 500ms)")
    })
}

/// The longest duration any setting accepts: a day. Every duration here is
/// a time-out or a grace period; a larger one is a typo, and one large
/// enough overflows the clock when a deadline is computed from it.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// Parses Go's duration notation: one or more `<decimal><unit>` pairs with
/// units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`; a bare `0` is zero.
/// Negative durations are rejected: they mean nothing for a time-out; so are
/// those over [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, &'static str> {
    let duration = parse_go_duration(text)?;
    if duration > MAX_DURATION {
        return Err("too large: at most 24h");
    }
    Ok(duration)
}

fn parse_go_duration(text: &str) -> Result<Duration, &'static str> {
    if text.is_empty() {
        return Err("empty");
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err("must not be negative");
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err("expected a number");
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err("missing unit"),
            _ => return Err("unknown unit"),
        };
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| "number too large")?
        };
        // Fractions beyond nanosecond precision are dropped, as Go does.
        let digits = &fraction[..fraction.len().min(18)];
        let mut fraction_nanos: u128 = 0;
        if !digits.is_empty() {
            let scale = 10u128.pow(digits.len() as u32);
            let digits: u128 = digits.parse().map_err(|_| "expected a number")?;
            fraction_nanos = digits * unit_nanos / scale;
        }
        total = whole
            .checked_mul(unit_nanos)
            .and_then(|n| n.checked_add(fraction_nanos))
            .and_then(|n| n.checked_add(total))
            .ok_or("too large")?;
        rest = after;
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| "too large")?;
    Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
}

#[cfg(test)]
mod tests;
