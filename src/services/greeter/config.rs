//! The greeter's YAML configuration, in the layout go-kratos services use.
//!
//! ```yaml
//! server:
//!   http: { network: tcp, addr: 0.0.0.0:8000, timeout: 1s }
//!   grpc: { network: tcp, addr: 0.0.0.0:9000, timeout: 1s }
//! data:
//!   database: { driver: sqlite3, source: greeter.db }
//!   cache: { network: tcp, addr: 127.0.0.1:6379, read_timeout: 0.2s, write_timeout: 0.2s }
//! ```
//!
//! The file is read into a generic YAML tree and walked by hand against the
//! table of the twelve known keys ([`KEYS`]) instead of being deserialized into
//! structs: that way every error names the exact dotted key it is about
//! (`server.http.timeout: invalid duration "1x" ...`), including keys that are
//! misspelled, missing, or of the wrong shape. All twelve keys are required.
//!
//! Durations use Go's notation (`1s`, `0.2s`, `500ms`, `1m`, `1h30m`); a
//! timeout of `0` switches that time-out off, as it does in Kratos.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_yaml::Value;

/// Every key of the configuration file, in the order errors are reported.
pub const KEYS: [&str; 12] = [
    "server.http.network",
    "server.http.addr",
    "server.http.timeout",
    "server.grpc.network",
    "server.grpc.addr",
    "server.grpc.timeout",
    "data.database.driver",
    "data.database.source",
    "data.cache.network",
    "data.cache.addr",
    "data.cache.read_timeout",
    "data.cache.write_timeout",
];

/// Networks a server can listen on (Go's names; `tcp` picks from the address).
const SERVER_NETWORKS: [&str; 3] = ["tcp", "tcp4", "tcp6"];
/// Networks a cache can be reached over.
const CACHE_NETWORKS: [&str; 4] = ["tcp", "tcp4", "tcp6", "unix"];
/// Database drivers built into this binary.
const DRIVERS: [&str; 2] = ["sqlite3", "sqlite"];

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `server.*`: the two listeners.
    pub server: Server,
    /// `data.*`: the stores behind the service.
    pub data: Data,
}

/// `server.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// `server.http.*`.
    pub http: Listener,
    /// `server.grpc.*`.
    pub grpc: Listener,
}

/// One listening server (`server.http` or `server.grpc`).
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    /// `network`: `tcp`, `tcp4` or `tcp6`.
    pub network: String,
    /// `addr`: `host:port` to listen on; port 0 picks a free port.
    pub addr: String,
    /// `timeout`: per-request time-out; `None` when configured as `0`.
    pub timeout: Option<Duration>,
}

/// `data.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct Data {
    /// `data.database.*`.
    pub database: Database,
    /// `data.cache.*`.
    pub cache: Cache,
}

/// `data.database.*`: the user store.
#[derive(Debug, Clone, PartialEq)]
pub struct Database {
    /// `driver`: always `sqlite3` once validated (`sqlite` is accepted as an alias).
    pub driver: String,
    /// `source`: a file path (created if absent) or `:memory:`.
    pub source: String,
}

/// `data.cache.*`: validated only; nothing in the demo uses a cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Cache {
    /// `network`: `tcp`, `tcp4`, `tcp6` or `unix`.
    pub network: String,
    /// `addr`: where the cache would be.
    pub addr: String,
    /// `read_timeout`.
    pub read_timeout: Duration,
    /// `write_timeout`.
    pub write_timeout: Duration,
}

/// Why a configuration was rejected. Every variant after `Syntax` names its key.
#[derive(Debug)]
pub enum ConfigError {
    /// The file could not be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The text is not YAML.
    Syntax { message: String },
    /// A section (or the document) is not a mapping of keys.
    NotAMapping { key: String, found: &'static str },
    /// A key that is not one of [`KEYS`] or their sections.
    UnknownKey {
        key: String,
        known: Vec<&'static str>,
    },
    /// One of [`KEYS`] is absent (or has no value).
    MissingKey { key: &'static str },
    /// A value that should be a string is a mapping, list or boolean.
    NotAScalar {
        key: &'static str,
        found: &'static str,
    },
    /// A duration that does not parse.
    InvalidDuration {
        key: &'static str,
        value: String,
        reason: &'static str,
    },
    /// A network name outside the supported list.
    UnsupportedNetwork {
        key: &'static str,
        value: String,
        supported: &'static [&'static str],
    },
    /// An address that is not `host:port`.
    InvalidAddress { key: &'static str, value: String },
    /// An IP literal of the other family than `tcp4` / `tcp6` asks for.
    NetworkMismatch {
        key: &'static str,
        value: String,
        network: String,
    },
    /// A database driver that is not built in.
    UnsupportedDriver { key: &'static str, value: String },
    /// An empty database source.
    EmptySource { key: &'static str },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, source } => {
                write!(f, "cannot read config file {}: {source}", path.display())
            }
            ConfigError::Syntax { message } => write!(f, "invalid YAML: {message}"),
            ConfigError::NotAMapping { key, found } if key.is_empty() => {
                write!(
                    f,
                    "the config file must be a mapping of keys, found {found}"
                )
            }
            ConfigError::NotAMapping { key, found } => {
                write!(f, "{key}: expected a mapping of keys, found {found}")
            }
            ConfigError::UnknownKey { key, known } => {
                write!(
                    f,
                    "{key}: unknown key (known keys here: {})",
                    known.join(", ")
                )
            }
            ConfigError::MissingKey { key } => write!(f, "{key}: missing required key"),
            ConfigError::NotAScalar { key, found } => {
                write!(f, "{key}: expected a single value, found {found}")
            }
            ConfigError::InvalidDuration { key, value, reason } => write!(
                f,
                "{key}: invalid duration {value:?} ({reason}; write e.g. 1s, 0.2s, 500ms, 1m)"
            ),
            ConfigError::UnsupportedNetwork {
                key,
                value,
                supported,
            } => write!(
                f,
                "{key}: unsupported network {value:?} (supported: {})",
                supported.join(", ")
            ),
            ConfigError::InvalidAddress { key, value } => write!(
                f,
                "{key}: invalid address {value:?} (expected host:port, e.g. 0.0.0.0:8000)"
            ),
            ConfigError::NetworkMismatch {
                key,
                value,
                network,
            } => write!(
                f,
                "{key}: address {value:?} is not an {} address, but the network is {network}",
                if network == "tcp4" { "IPv4" } else { "IPv6" }
            ),
            ConfigError::UnsupportedDriver { key, value } => write!(
                f,
                "{key}: unsupported driver {value:?} (supported: {})",
                DRIVERS.join(", ")
            ),
            ConfigError::EmptySource { key } => {
                write!(f, "{key}: empty; give a file path or :memory:")
            }
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::from_yaml(&text)
    }

    /// Parses and validates a configuration held in memory.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        let doc: Value = serde_yaml::from_str(text).map_err(|e| ConfigError::Syntax {
            message: e.to_string(),
        })?;
        let mut leaves = HashMap::new();
        walk(&doc, "", &mut leaves)?;
        if let Some(key) = KEYS.into_iter().find(|key| !leaves.contains_key(key)) {
            return Err(ConfigError::MissingKey { key });
        }
        let v = Values(leaves);
        Ok(Config {
            server: Server {
                http: listener(&v, 0)?,
                grpc: listener(&v, 3)?,
            },
            data: Data {
                database: Database {
                    driver: driver(&v, KEYS[6])?,
                    source: {
                        let source = v.get(KEYS[7])?;
                        if source.is_empty() {
                            return Err(ConfigError::EmptySource { key: KEYS[7] });
                        }
                        source.to_owned()
                    },
                },
                cache: Cache {
                    network: network(&v, KEYS[8], &CACHE_NETWORKS)?,
                    addr: address(&v, KEYS[9])?,
                    read_timeout: duration(&v, KEYS[10])?,
                    write_timeout: duration(&v, KEYS[11])?,
                },
            },
        })
    }
}

/// The scalar values found in the file, by key.
struct Values(HashMap<&'static str, String>);

impl Values {
    fn get(&self, key: &'static str) -> Result<&str, ConfigError> {
        self.0
            .get(key)
            .map(String::as_str)
            .ok_or(ConfigError::MissingKey { key })
    }
}

/// Collects the scalar value of every known key under `node`, rejecting
/// anything that is not a known key or a section leading to one.
fn walk(
    node: &Value,
    path: &str,
    leaves: &mut HashMap<&'static str, String>,
) -> Result<(), ConfigError> {
    let map = match node {
        Value::Mapping(map) => map,
        // `server:` with nothing under it: every key below it is missing.
        Value::Null => return Ok(()),
        other => {
            return Err(ConfigError::NotAMapping {
                key: path.to_owned(),
                found: kind(other),
            })
        }
    };
    for (k, v) in map {
        let name = match k {
            Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_owned(),
        };
        let full = if path.is_empty() {
            name
        } else {
            format!("{path}.{name}")
        };
        if let Some(leaf) = KEYS.iter().find(|key| **key == full) {
            if let Some(text) = scalar(leaf, v)? {
                leaves.insert(leaf, text);
            }
        } else if KEYS.iter().any(|key| is_section_of(&full, key)) {
            walk(v, &full, leaves)?;
        } else {
            return Err(ConfigError::UnknownKey {
                known: children(path),
                key: full,
            });
        }
    }
    Ok(())
}

/// True when `section` is a proper dotted prefix of `key`.
fn is_section_of(section: &str, key: &str) -> bool {
    key.strip_prefix(section)
        .is_some_and(|rest| rest.starts_with('.'))
}

/// The names directly under `path` (for the "unknown key" hint).
fn children(path: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for key in KEYS {
        let rest = if path.is_empty() {
            Some(key)
        } else if is_section_of(path, key) {
            Some(&key[path.len() + 1..])
        } else {
            None
        };
        if let Some(name) = rest.and_then(|r| r.split('.').next()) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The text of a scalar value; `None` for an empty (`null`) value.
fn scalar(key: &'static str, value: &Value) -> Result<Option<String>, ConfigError> {
    match value {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Null => Ok(None),
        other => Err(ConfigError::NotAScalar {
            key,
            found: kind(other),
        }),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// `server.http.*` (first = 0) or `server.grpc.*` (first = 3).
fn listener(v: &Values, first: usize) -> Result<Listener, ConfigError> {
    let network = network(v, KEYS[first], &SERVER_NETWORKS)?;
    let addr = listen_address(&network, KEYS[first + 1], address(v, KEYS[first + 1])?)?;
    let timeout = duration(v, KEYS[first + 2])?;
    Ok(Listener {
        network,
        addr,
        timeout: (!timeout.is_zero()).then_some(timeout),
    })
}

fn network(
    v: &Values,
    key: &'static str,
    supported: &'static [&'static str],
) -> Result<String, ConfigError> {
    let value = v.get(key)?;
    if supported.contains(&value) {
        Ok(value.to_owned())
    } else {
        Err(ConfigError::UnsupportedNetwork {
            key,
            value: value.to_owned(),
            supported,
        })
    }
}

/// `host:port` with a numeric port; the host may be empty (all interfaces)
/// or a bracketed IPv6 literal. Whether it can be bound is checked at bind.
fn address(v: &Values, key: &'static str) -> Result<String, ConfigError> {
    let value = v.get(key)?;
    let valid = value
        .rsplit_once(':')
        .is_some_and(|(host, port)| port.parse::<u16>().is_ok() && !host.contains(' '));
    if valid {
        Ok(value.to_owned())
    } else {
        Err(ConfigError::InvalidAddress {
            key,
            value: value.to_owned(),
        })
    }
}

/// Apply the listener's network to its address, as Go's `net.Listen` does:
/// an empty host means every interface of the network's family
/// (`:8000` → `0.0.0.0:8000`, or `[::]:8000` for `tcp6`), and an IP literal
/// must belong to the family `tcp4` / `tcp6` names.
fn listen_address(network: &str, key: &'static str, addr: String) -> Result<String, ConfigError> {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Ok(addr);
    };
    if host.is_empty() {
        let any = if network == "tcp6" { "[::]" } else { "0.0.0.0" };
        return Ok(format!("{any}:{port}"));
    }
    let literal = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse::<std::net::IpAddr>();
    let mismatch = match (network, literal) {
        ("tcp4", Ok(ip)) => ip.is_ipv6(),
        ("tcp6", Ok(ip)) => ip.is_ipv4(),
        _ => false,
    };
    if mismatch {
        return Err(ConfigError::NetworkMismatch {
            key,
            value: addr,
            network: network.to_owned(),
        });
    }
    Ok(addr)
}

fn driver(v: &Values, key: &'static str) -> Result<String, ConfigError> {
    let value = v.get(key)?;
    if DRIVERS.contains(&value) {
        Ok("sqlite3".to_owned())
    } else {
        Err(ConfigError::UnsupportedDriver {
            key,
            value: value.to_owned(),
        })
    }
}

fn duration(v: &Values, key: &'static str) -> Result<Duration, ConfigError> {
    let value = v.get(key)?;
    parse_duration(value).map_err(|reason| ConfigError::InvalidDuration {
        key,
        value: value.to_owned(),
        reason,
    })
}

/// Parses Go's duration notation: one or more `<decimal><unit>` pairs with
/// units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`; a bare `0` is zero.
/// Negative durations are rejected: they mean nothing for a time-out.
pub fn parse_duration(text: &str) -> Result<Duration, &'static str> {
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
