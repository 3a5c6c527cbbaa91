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
//! The file is deserialized with serde into the plain structs below through
//! [`crate::config`], which turns unknown, missing or malformed keys into
//! errors naming the dotted key (`server.http.timeout: invalid duration "1x"
//! ...`). All twelve keys are required. What serde cannot check (which
//! networks, addresses and drivers are allowed) is checked afterwards by
//! [`Config::from_yaml`], again naming the key.
//!
//! Each listener may add `tls: { cert_file: server.pem, key_file: server.key }`
//! (not a Kratos key): that port then serves TLS, HTTPS or gRPC over TLS.
//!
//! `log.access: false` (optional, not a Kratos key) drops the access lines
//! of both ports, as `--no-access-log` does.
//!
//! `server.http.cors` (optional, not a Kratos key) lets pages of other
//! origins call the HTTP API and gRPC-Web ([`crate::ops::cors`]):
//!
//! ```yaml
//! server:
//!   http:
//!     cors: { allowed_origins: ["https://app.example.com"], max_age: 10m }
//! ```
//!
//! Durations use Go's notation (`1s`, `0.2s`, `500ms`, `1m`, `1h30m`); a
//! timeout of `0` switches that time-out off, as it does in Kratos.
//!
//! # Drivers
//!
//! - `sqlite3` (alias `sqlite`): `source` is a file path or `:memory:`; one
//!   instance owns the file. `data.cache.*` is checked but **not used**.
//! - `postgres` (alias `postgresql`, cargo feature `cluster`): `source` is a
//!   connection string (`postgres://user:pass@host:port/db`) and several
//!   instances can share it. `data.cache.*` is then **used**: the user list
//!   is cached in Redis at `redis://{addr}` (`redis+unix://{addr}` for the
//!   `unix` network, whose `addr` is an absolute socket path);
//!   `read_timeout` bounds each Redis answer and `write_timeout` each
//!   (re)connection, so both must be above 0. Each PostgreSQL call is
//!   bounded by [`Config::database_timeout`]. A binary built without the
//!   feature refuses `postgres` at start-up, naming the key.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::config::{self, Origins};
use crate::ops::cors::{Cors, CorsConfig};

/// The prefix of the environment variables that `${KEY}` placeholders in
/// the greeter config read (`${DB_PASSWORD}` reads `GREETER_DB_PASSWORD`), as
/// Kratos' `env.NewSource("GREETER_")`: see [`config::resolve`].
pub const ENV_PREFIX: &str = "GREETER_";

/// Networks a server can listen on (Go's names; `tcp` picks from the address).
const SERVER_NETWORKS: [&str; 3] = ["tcp", "tcp4", "tcp6"];
/// Networks a cache can be reached over.
const CACHE_NETWORKS: [&str; 4] = ["tcp", "tcp4", "tcp6", "unix"];
/// Database drivers built into this binary (first the names, then aliases).
#[cfg(not(feature = "cluster"))]
const DRIVERS: &[&str] = &["sqlite3", "sqlite"];
/// Database drivers built into this binary (first the names, then aliases).
#[cfg(feature = "cluster")]
const DRIVERS: &[&str] = &["sqlite3", "sqlite", "postgres", "postgresql"];
/// PostgreSQL's driver names, known even where they are not built in so that
/// the refusal can say how to get them.
const POSTGRES_DRIVERS: [&str; 2] = ["postgres", "postgresql"];
/// Each PostgreSQL call's time-out when both server time-outs are off.
const DEFAULT_DATABASE_TIMEOUT: Duration = Duration::from_secs(1);

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `server.*`: the two listeners.
    pub server: Server,
    /// `data.*`: the stores behind the service.
    pub data: Data,
    /// `limits.*` (optional): abuse limits.
    #[serde(default)]
    pub limits: Limits,
    /// `log.*` (optional): what the service writes to stdout.
    #[serde(default)]
    pub log: Log,
}

/// `log.*`: not a Kratos key; optional.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Log {
    /// `access`: one access line per HTTP request and per gRPC call
    /// (`[grpc]`); `false` (or `--no-access-log`) drops those alone: the
    /// SayHello business line, refusals, recovered panics and the start-up
    /// lines stay. Default `true`.
    pub access: bool,
}

impl Default for Log {
    fn default() -> Log {
        Log { access: true }
    }
}

/// `limits.*`: not a Kratos key; optional, with safe defaults.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// `registrations_per_minute`: `UserRegister` calls allowed per client
    /// address (IPv6 by /64) per minute, over HTTP and gRPC together;
    /// `0` switches the limit off. Default 10, as token-auth.
    pub registrations_per_minute: u32,
    /// `max_connections`: connections the process holds open at once, both
    /// listeners together (`--max-connections` wins); default three
    /// quarters of the open-file limit, raised to the hard limit at start.
    pub max_connections: Option<std::num::NonZeroUsize>,
    /// `max_connections_per_peer`: connections one client address (IPv6:
    /// one /64) holds before the cap takes back from it first
    /// (`--max-connections-per-peer` wins); default half the cap. Nothing
    /// is refused below the cap; behind a proxy, set it to the cap.
    pub max_connections_per_peer: Option<std::num::NonZeroUsize>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            registrations_per_minute: 10,
            max_connections: None,
            max_connections_per_peer: None,
        }
    }
}

/// `server.*`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// `server.http.*`.
    pub http: Listener,
    /// `server.grpc.*`.
    pub grpc: Listener,
}

/// One listening server (`server.http` or `server.grpc`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listener {
    /// `network`: `tcp`, `tcp4` or `tcp6`.
    pub network: String,
    /// `addr`: `host:port` to listen on; port 0 picks a free port. An empty
    /// host is filled in with every interface of the network's family.
    pub addr: String,
    /// `timeout`: per-request time-out; `None` when configured as `0`.
    #[serde(deserialize_with = "config::timeout")]
    pub timeout: Option<Duration>,
    /// `tls` (optional, not a Kratos key): serve TLS with these files;
    /// absent, the listener is cleartext.
    #[serde(default)]
    pub tls: Option<TlsFiles>,
    /// `cors` (optional, `server.http` only): which other origins' pages
    /// may call the HTTP API and gRPC-Web; absent, no CORS headers at all.
    #[serde(default)]
    pub cors: Option<CorsConfig>,
}

/// `server.http.tls` / `server.grpc.tls`: a PEM certificate chain and its
/// PEM private key. Relative paths start at the working directory; both
/// are read again on SIGHUP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// `cert_file`: the certificate chain, leaf first.
    pub cert_file: std::path::PathBuf,
    /// `key_file`: the private key (PKCS#8, RSA or EC).
    pub key_file: std::path::PathBuf,
}

/// `data.*`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Data {
    /// `data.database.*`.
    pub database: Database,
    /// `data.cache.*`.
    pub cache: Cache,
}

/// `data.database.*`: the user store.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// `driver`: once checked, `sqlite3` (alias `sqlite`) or `postgres`
    /// (alias `postgresql`; feature `cluster` only).
    pub driver: String,
    /// `source`: for `sqlite3` a file path (created if absent) or
    /// `:memory:`; for `postgres` a connection string
    /// (`postgres://user:pass@host:port/db`).
    pub source: String,
}

/// Which store `data.database.driver` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// One SQLite file, one instance.
    Sqlite,
    /// A PostgreSQL database shared by every instance, with the user list
    /// cached in Redis (`data.cache.*`).
    Postgres,
}

impl Database {
    /// The driver of a checked configuration.
    pub fn kind(&self) -> Driver {
        if POSTGRES_DRIVERS.contains(&self.driver.as_str()) {
            Driver::Postgres
        } else {
            Driver::Sqlite
        }
    }
}

/// `data.cache.*`: the Redis server caching the user list. Used with the
/// `postgres` driver only; with `sqlite3` it is checked and ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// `network`: `tcp`, `tcp4`, `tcp6` or `unix`.
    pub network: String,
    /// `addr`: `host:port`, or an absolute socket path for `unix`.
    pub addr: String,
    /// `read_timeout`: the longest wait for one Redis answer.
    #[serde(deserialize_with = "config::duration")]
    pub read_timeout: Duration,
    /// `write_timeout`: the longest wait for a (re)connection to Redis.
    #[serde(deserialize_with = "config::duration")]
    pub write_timeout: Duration,
}

impl Cache {
    /// The Redis URL of `addr`: `redis://host:port` (an empty host is this
    /// machine, as when Go dials `:6379`), or `redis+unix:///path`.
    pub fn url(&self) -> String {
        if self.network == "unix" {
            return format!("redis+unix://{}", self.addr);
        }
        match self.addr.strip_prefix(':') {
            Some(port) if self.network == "tcp6" => format!("redis://[::1]:{port}"),
            Some(port) => format!("redis://127.0.0.1:{port}"),
            None => format!("redis://{}", self.addr),
        }
    }
}

/// Why a configuration was rejected. Every message starts with its key. A
/// `value` is the offending value as the message shows it: at most a short
/// quoted prefix, or the variable it came from ([`Origins::show`]).
#[derive(Debug)]
pub enum ConfigError {
    /// The file cannot be read, is not YAML, or has a key that is unknown,
    /// missing, or of the wrong shape (including a malformed duration).
    File(config::Error),
    /// A network name outside the supported list.
    UnsupportedNetwork {
        key: String,
        value: String,
        supported: &'static [&'static str],
    },
    /// An address that is not `host:port`.
    InvalidAddress { key: String, value: String },
    /// An IP literal of the other family than `tcp4` / `tcp6` asks for.
    NetworkMismatch {
        key: String,
        value: String,
        network: String,
    },
    /// A `data.database.driver` that is not built in.
    UnsupportedDriver { value: String },
    /// `postgres` in a binary built without the feature `cluster`.
    DriverNotBuiltIn { value: String },
    /// An empty `data.database.source`.
    EmptySource { driver: Driver },
    /// A `unix` cache address that is not an absolute path.
    InvalidSocketPath { value: String },
    /// A cache time-out of 0 where the cache is used.
    ZeroCacheTimeout { key: &'static str },
    /// A `server.http.cors` setting that cannot be served, or `cors` under
    /// `server.grpc` (browsers reach the gRPC side through the HTTP port).
    Cors { key: String, message: String },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::File(e) => write!(f, "{e}"),
            ConfigError::UnsupportedNetwork {
                key,
                value,
                supported,
            } => write!(
                f,
                "{key}: unsupported network {value} (supported: {})",
                supported.join(", ")
            ),
            ConfigError::InvalidAddress { key, value } => write!(
                f,
                "{key}: invalid address {value} (expected host:port, e.g. 0.0.0.0:8000)"
            ),
            ConfigError::NetworkMismatch {
                key,
                value,
                network,
            } => write!(
                f,
                "{key}: address {value} is not an {} address, but the network is {network}",
                if network == "tcp4" { "IPv4" } else { "IPv6" }
            ),
            ConfigError::UnsupportedDriver { value } => write!(
                f,
                "data.database.driver: unsupported driver {value} (supported: {})",
                DRIVERS.join(", ")
            ),
            ConfigError::DriverNotBuiltIn { value } => write!(
                f,
                "data.database.driver: {value} is not built into this binary; \
                 rebuild with `cargo build --release --features cluster`"
            ),
            ConfigError::EmptySource {
                driver: Driver::Sqlite,
            } => write!(
                f,
                "data.database.source: empty; give a file path or :memory:"
            ),
            ConfigError::EmptySource {
                driver: Driver::Postgres,
            } => write!(
                f,
                "data.database.source: empty; give a connection string \
                 postgres://user:password@host:port/database"
            ),
            ConfigError::InvalidSocketPath { value } => write!(
                f,
                "data.cache.addr: invalid unix socket path {value} \
                 (expected an absolute path, e.g. /run/redis/redis.sock)"
            ),
            ConfigError::ZeroCacheTimeout { key } => write!(
                f,
                "{key}: must be above 0 with the postgres driver, which uses the cache"
            ),
            ConfigError::Cors { key, message } => write!(f, "{key}: {message}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::File(e) => Some(e),
            _ => None,
        }
    }
}

impl From<config::Error> for ConfigError {
    fn from(e: config::Error) -> ConfigError {
        ConfigError::File(e)
    }
}

impl Config {
    /// The CORS middleware of `server.http.cors`, if configured (checked by
    /// [`Config::from_yaml`], so a loaded config never fails here).
    pub fn cors(&self) -> Option<Cors> {
        self.server
            .http
            .cors
            .as_ref()
            .and_then(|c| Cors::new(c).ok())
    }

    /// Reads and checks the file at `path`, its placeholders read from the
    /// process's environment.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let var = |name: &str| std::env::var(name).ok();
        Config::from_yaml_with_env(&config::read(path)?, &var)
    }

    /// Parses and checks a configuration held in memory, placeholders
    /// included ([`config::resolve`]): `var` gives a variable's value by
    /// its full name (`GREETER_DB_SOURCE`).
    pub fn from_yaml_with_env(
        text: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let env = config::Env {
            prefix: ENV_PREFIX,
            denied: &[],
            var,
        };
        let (config, origins) = config::resolve::<Config>(text, &env)?;
        config.checked(&origins)
    }

    /// Parses and checks a configuration held in memory.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        config::from_yaml::<Config>(text)?.checked(&Origins::default())
    }

    /// The time-out of each PostgreSQL call (connecting, waiting for a
    /// pooled connection, the statement): three quarters of the shorter
    /// configured `server.*.timeout`, so a stalled database is answered 503 /
    /// UNAVAILABLE before the request's own time-out would answer 504 /
    /// DEADLINE_EXCEEDED; [`DEFAULT_DATABASE_TIMEOUT`] (1 s) when both are off.
    pub fn database_timeout(&self) -> Duration {
        let configured = [self.server.http.timeout, self.server.grpc.timeout];
        configured
            .into_iter()
            .flatten()
            .min()
            .map_or(DEFAULT_DATABASE_TIMEOUT, |t| t * 3 / 4)
    }

    /// Applies the rules serde does not know, in the order of the keys. An
    /// error shows a value as `origins` says ([`Origins::show`]).
    fn checked(mut self, origins: &Origins) -> Result<Config, ConfigError> {
        self.server.http.check("server.http", origins)?;
        self.server.grpc.check("server.grpc", origins)?;
        if let Some(cors) = &self.server.http.cors {
            Cors::new(cors).map_err(|e| ConfigError::Cors {
                key: format!("server.http.cors.{}", e.key),
                message: e.message,
            })?;
        }
        if self.server.grpc.cors.is_some() {
            return Err(ConfigError::Cors {
                key: "server.grpc.cors".into(),
                message: "CORS applies to server.http only (browsers call the gRPC methods \
                          through gRPC-Web on the HTTP port)"
                    .into(),
            });
        }
        let database = &mut self.data.database;
        let value = database.driver.as_str();
        if !DRIVERS.contains(&value) {
            let value = origins.show("data.database.driver", value);
            if POSTGRES_DRIVERS.contains(&database.driver.as_str()) {
                return Err(ConfigError::DriverNotBuiltIn { value });
            }
            return Err(ConfigError::UnsupportedDriver { value });
        }
        let driver = database.kind();
        database.driver = match driver {
            Driver::Sqlite => "sqlite3",
            Driver::Postgres => "postgres",
        }
        .to_owned();
        if database.source.is_empty() {
            return Err(ConfigError::EmptySource { driver });
        }
        let cache = &self.data.cache;
        check_network(
            "data.cache.network",
            &cache.network,
            &CACHE_NETWORKS,
            origins,
        )?;
        if cache.network == "unix" {
            if !cache.addr.starts_with('/') {
                return Err(ConfigError::InvalidSocketPath {
                    value: origins.show("data.cache.addr", &cache.addr),
                });
            }
        } else {
            check_address("data.cache.addr", &cache.addr, origins)?;
        }
        if driver == Driver::Postgres {
            if cache.read_timeout.is_zero() {
                return Err(ConfigError::ZeroCacheTimeout {
                    key: "data.cache.read_timeout",
                });
            }
            if cache.write_timeout.is_zero() {
                return Err(ConfigError::ZeroCacheTimeout {
                    key: "data.cache.write_timeout",
                });
            }
        }
        Ok(self)
    }
}

impl Listener {
    /// Checks `section.network` and `section.addr`, and applies the network
    /// to the address.
    fn check(&mut self, section: &str, origins: &Origins) -> Result<(), ConfigError> {
        check_network(
            &format!("{section}.network"),
            &self.network,
            &SERVER_NETWORKS,
            origins,
        )?;
        let key = format!("{section}.addr");
        check_address(&key, &self.addr, origins)?;
        self.addr = listen_address(&key, &self.network, &self.addr, origins)?;
        Ok(())
    }
}

fn check_network(
    key: &str,
    value: &str,
    supported: &'static [&'static str],
    origins: &Origins,
) -> Result<(), ConfigError> {
    if supported.contains(&value) {
        return Ok(());
    }
    Err(ConfigError::UnsupportedNetwork {
        key: key.to_owned(),
        value: origins.show(key, value),
        supported,
    })
}

/// `host:port` with a numeric port; the host may be empty (all interfaces)
/// or a bracketed IPv6 literal. Whether it can be bound is checked at bind.
fn check_address(key: &str, value: &str, origins: &Origins) -> Result<(), ConfigError> {
    let valid = value
        .rsplit_once(':')
        .is_some_and(|(host, port)| port.parse::<u16>().is_ok() && !host.contains(' '));
    if valid {
        return Ok(());
    }
    Err(ConfigError::InvalidAddress {
        key: key.to_owned(),
        value: origins.show(key, value),
    })
}

/// Apply the listener's network to its address, as Go's `net.Listen` does:
/// an empty host means every interface of the network's family
/// (`:8000` → `0.0.0.0:8000`, or `[::]:8000` for `tcp6`), and an IP literal
/// must belong to the family `tcp4` / `tcp6` names.
fn listen_address(
    key: &str,
    network: &str,
    addr: &str,
    origins: &Origins,
) -> Result<String, ConfigError> {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Ok(addr.to_owned());
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
            key: key.to_owned(),
            value: origins.show(key, addr),
            network: network.to_owned(),
        });
    }
    Ok(addr.to_owned())
}

#[cfg(test)]
mod tests;
