//! The assembled token-auth service: settings in, shared state out.
//!
//! [`AuthService`] (the use cases, [`super::biz`]) owns one of each part —
//! store, token issuer, password hasher, blacklist, login limiter, optional
//! OAuth — and is shared by the route handlers behind an `Arc`; this module
//! builds those parts from [`Settings`]. [`Settings`] is everything that varies
//! between the binary and tests: the binary reads the environment and uses
//! the service's values (bcrypt cost 12, system clock); tests inject a manual
//! clock and a cheap bcrypt cost where the cost is not what they test.
//!
//! Secrets come from the environment, never from files in the repository:
//! `TOKEN_AUTH_SECRET` signs tokens; `TOKEN_AUTH_ENC_KEY` seals provider
//! tokens and is required exactly when OAuth providers are configured.

use crate::services::token_auth::backend::{Accounts, LoginLimits};
pub use crate::services::token_auth::biz::AuthService;
use crate::services::token_auth::biz::Parts;
use crate::services::token_auth::blacklist::{Blacklist, Revocations};
use crate::services::token_auth::clock::{Clock, SystemClock};
use crate::services::token_auth::config::{CaptchaConfig, ConfigError, Provider, ProviderConfig};
use crate::services::token_auth::limiter::{self, LimitPolicy, LoginLimiter, RegisterPolicy};
use crate::services::token_auth::oauth::binding::Binding;
use crate::services::token_auth::oauth::captcha::Captcha;
use crate::services::token_auth::oauth::cipher::{CipherError, TokenCipher, ENC_KEY_VAR};
use crate::services::token_auth::oauth::state::StateStore;
use crate::services::token_auth::oauth::OAuth;
use crate::services::token_auth::passwords::{PasswordError, Passwords, DEFAULT_COST};
use crate::services::token_auth::pending::{PendingSignIns, STATE_CAPACITY, STATE_PER_CLIENT};
use crate::services::token_auth::store::{Store, StoreError};
use crate::services::token_auth::tokens::{TokenError, Tokens};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Environment variable holding the token signing secret (defined beside
/// the config file's placeholders, which may not read it).
pub use crate::services::token_auth::config::SECRET_VAR;

/// What the service needs to start.
#[derive(Clone)]
pub struct Settings {
    /// HS256 signing secret, at least 32 bytes.
    pub secret: Vec<u8>,
    /// SQLite database file (unused when `postgres` is set).
    pub db_path: PathBuf,
    /// PostgreSQL connection string (`--db postgres://…`): users, bindings
    /// and the blacklist shared by every instance (feature `cluster`).
    pub postgres: Option<String>,
    /// Redis address (`--redis redis://…`): login limits and pending OAuth
    /// sign-ins shared by every instance (feature `cluster`).
    pub redis: Option<String>,
    /// Longest wait for PostgreSQL or Redis on any one call; past it the
    /// request is answered 503.
    pub shared_timeout: Duration,
    /// bcrypt cost; the binary uses 12.
    pub bcrypt_cost: u32,
    /// Login throttling numbers.
    pub limits: LimitPolicy,
    /// Registrations allowed per client IP (default 10 a minute).
    pub register_limits: RegisterPolicy,
    /// Identity providers; empty disables OAuth sign-in.
    pub providers: BTreeMap<Provider, ProviderConfig>,
    /// Key sealing provider tokens, 64 hex digits; needed with providers.
    pub enc_key: Option<String>,
    /// Whether browsers reach this service over TLS: the cookies it sets
    /// (the OAuth sign-in binding) are then marked `Secure`. The binary
    /// sets it from its listener; `false` on a plain HTTP listener.
    pub listener_tls: bool,
    /// The captcha provider; `None`: `captcha_required` is a hint only.
    pub captcha: Option<CaptchaConfig>,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// How often expired blacklist rows, idle limiter entries and stale OAuth
    /// states are dropped.
    pub maintenance_every: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("db_path", &self.db_path)
            .field("postgres", &self.postgres.is_some())
            .field("redis", &self.redis.is_some())
            .field("bcrypt_cost", &self.bcrypt_cost)
            .field("listener_tls", &self.listener_tls)
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// The service's settings: cost 12, default limits (login 5 a minute per IP
    /// and username, registration 10 a minute per IP), system clock, no OAuth,
    /// maintenance every minute.
    pub fn new(secret: impl Into<Vec<u8>>, db_path: impl Into<PathBuf>) -> Settings {
        Settings {
            secret: secret.into(),
            db_path: db_path.into(),
            postgres: None,
            redis: None,
            shared_timeout: Duration::from_secs(1),
            bcrypt_cost: DEFAULT_COST,
            limits: LimitPolicy::default(),
            register_limits: RegisterPolicy::default(),
            providers: BTreeMap::new(),
            enc_key: None,
            listener_tls: false,
            captcha: None,
            clock: Arc::new(SystemClock),
            maintenance_every: Duration::from_secs(60),
        }
    }
}

/// Why the service could not start. Messages name the setting to fix.
#[derive(Debug)]
pub enum SetupError {
    /// The signing secret is unusable.
    Secret(TokenError),
    /// Providers are configured but there is no key for their tokens.
    EncKeyMissing,
    /// The provider-token key is malformed.
    EncKey(CipherError),
    /// The database could not be opened.
    Store(StoreError),
    /// The password hasher could not be set up (bad cost).
    Passwords(PasswordError),
    /// A provider setting is unusable (e.g. its `ca_file`).
    Provider(ConfigError),
    /// PostgreSQL or Redis could not be used (the message names the flag),
    /// or this binary was built without them.
    Shared(Box<dyn std::error::Error + Send + Sync>),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Secret(e) => write!(f, "{SECRET_VAR}: {e}"),
            SetupError::EncKeyMissing => write!(
                f,
                "{ENC_KEY_VAR} is required when OAuth providers are configured \
                 (64 hex digits, e.g. `openssl rand -hex 32`)"
            ),
            SetupError::EncKey(e) => write!(f, "{e}"),
            SetupError::Store(e) => write!(f, "{e}"),
            SetupError::Passwords(e) => write!(f, "bcrypt cost: {e}"),
            SetupError::Provider(e) => write!(f, "{e}"),
            SetupError::Shared(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetupError::Secret(e) => Some(e),
            SetupError::EncKeyMissing => None,
            SetupError::EncKey(e) => Some(e),
            SetupError::Store(e) => Some(e),
            SetupError::Passwords(e) => Some(e),
            SetupError::Provider(e) => Some(e),
            SetupError::Shared(e) => Some(e.as_ref()),
        }
    }
}

/// Where each kind of state lives (see [`crate::services::token_auth::backend`]).
pub struct Backends {
    /// Users and provider bindings.
    pub accounts: Arc<dyn Accounts>,
    /// Revoked tokens.
    pub revocations: Arc<dyn Revocations>,
    /// Login windows, failure counts and locks.
    pub limits: Arc<dyn LoginLimits>,
    /// Pending OAuth sign-ins.
    pub sign_ins: Arc<dyn PendingSignIns>,
}

impl Backends {
    /// One process's own state: the SQLite file of `settings` and memory.
    /// Blocking (opens SQLite).
    pub fn local(settings: &Settings) -> Result<Backends, SetupError> {
        let store = Arc::new(Store::open(&settings.db_path).map_err(SetupError::Store)?);
        let (limits, sign_ins) = local_memory(settings);
        Ok(Backends {
            accounts: store.clone(),
            revocations: store,
            limits,
            sign_ins,
        })
    }

    /// What `settings` asks for: PostgreSQL for users, bindings and the
    /// blacklist when `postgres` is set, Redis for login limits and OAuth
    /// states when `redis` is set (feature `cluster`), the local parts for
    /// the rest.
    pub async fn connect(settings: &Settings) -> Result<Backends, SetupError> {
        let (accounts, revocations): (Arc<dyn Accounts>, Arc<dyn Revocations>) =
            match &settings.postgres {
                Some(url) => shared_accounts(url, settings).await?,
                None => {
                    let path = settings.db_path.clone();
                    let store = tokio::task::spawn_blocking(move || Store::open(&path))
                        .await
                        .map_err(|e| SetupError::Store(StoreError::Task(e.to_string())))?
                        .map_err(SetupError::Store)?;
                    let store = Arc::new(store);
                    (store.clone(), store)
                }
            };
        let (limits, sign_ins) = match &settings.redis {
            Some(url) => shared_limits(url, settings).await?,
            None => local_memory(settings),
        };
        Ok(Backends {
            accounts,
            revocations,
            limits,
            sign_ins,
        })
    }
}

/// Login limits and pending sign-ins kept in this process's memory.
fn local_memory(settings: &Settings) -> (Arc<dyn LoginLimits>, Arc<dyn PendingSignIns>) {
    let clock = &settings.clock;
    (
        Arc::new(LoginLimiter::new(settings.limits, Arc::clone(clock))),
        Arc::new(StateStore::new(
            Arc::clone(clock),
            STATE_CAPACITY,
            STATE_PER_CLIENT,
        )),
    )
}

type SharedAccounts = (Arc<dyn Accounts>, Arc<dyn Revocations>);
type SharedLimits = (Arc<dyn LoginLimits>, Arc<dyn PendingSignIns>);

/// Users, bindings and the blacklist in the PostgreSQL at `url` (`--db`).
#[cfg(feature = "cluster")]
async fn shared_accounts(url: &str, settings: &Settings) -> Result<SharedAccounts, SetupError> {
    use crate::services::token_auth::cluster;
    let store = cluster::postgres_store(url, settings.shared_timeout)
        .await
        .map_err(|e| SetupError::Shared(Box::new(e)))?;
    let store = Arc::new(store);
    Ok((store.clone(), store))
}

/// Login limits and pending sign-ins in the Redis at `url` (`--redis`).
#[cfg(feature = "cluster")]
async fn shared_limits(url: &str, settings: &Settings) -> Result<SharedLimits, SetupError> {
    use crate::services::token_auth::cluster;
    let clock = Arc::clone(&settings.clock);
    let (limits, sign_ins) =
        cluster::redis_state(url, settings.limits, clock, settings.shared_timeout)
            .await
            .map_err(|e| SetupError::Shared(Box::new(e)))?;
    Ok((Arc::new(limits), Arc::new(sign_ins)))
}

/// Without the `cluster` feature, `--db postgres://…` is a start-up error.
#[cfg(not(feature = "cluster"))]
async fn shared_accounts(_url: &str, _: &Settings) -> Result<SharedAccounts, SetupError> {
    Err(not_built("--db"))
}

/// Without the `cluster` feature, `--redis` is a start-up error.
#[cfg(not(feature = "cluster"))]
async fn shared_limits(_url: &str, _: &Settings) -> Result<SharedLimits, SetupError> {
    Err(not_built("--redis"))
}

#[cfg(not(feature = "cluster"))]
fn not_built(flag: &str) -> SetupError {
    SetupError::Shared(
        format!(
            "{flag}: this binary was built without PostgreSQL/Redis support; \
             rebuild with `cargo build --release --features cluster`"
        )
        .into(),
    )
}

impl AuthService {
    /// Check `settings`, open the SQLite database and prepare every part,
    /// all state kept by this process.
    ///
    /// Blocking (opens SQLite, computes the dummy bcrypt hash): call it
    /// before serving, or from `spawn_blocking`. For PostgreSQL and Redis
    /// use [`connect`](Self::connect).
    pub fn open(settings: Settings) -> Result<AuthService, SetupError> {
        check_secret(&settings)?;
        let backends = Backends::local(&settings)?;
        AuthService::assemble(settings, backends)
    }

    /// [`open`](Self::open), with the state where `settings` puts it:
    /// PostgreSQL and Redis when named, else the SQLite file and memory.
    pub async fn connect(settings: Settings) -> Result<AuthService, SetupError> {
        check_secret(&settings)?;
        let backends = Backends::connect(&settings).await?;
        tokio::task::spawn_blocking(move || AuthService::assemble(settings, backends))
            .await
            .map_err(|e| SetupError::Store(StoreError::Task(e.to_string())))?
    }

    /// The service over `backends`.
    pub(crate) fn assemble(
        settings: Settings,
        backends: Backends,
    ) -> Result<AuthService, SetupError> {
        let clock = settings.clock;
        let tokens =
            Tokens::new(&settings.secret, Arc::clone(&clock)).map_err(SetupError::Secret)?;
        let oauth = if settings.providers.is_empty() {
            None
        } else {
            let key = settings
                .enc_key
                .as_deref()
                .ok_or(SetupError::EncKeyMissing)?;
            let cipher = TokenCipher::from_hex(key).map_err(SetupError::EncKey)?;
            Some(
                OAuth::new(
                    settings.providers,
                    cipher,
                    Binding::new(&settings.secret, settings.listener_tls),
                    Arc::clone(&clock),
                    backends.sign_ins,
                )
                .map_err(SetupError::Provider)?,
            )
        };
        let captcha = settings
            .captcha
            .map(Captcha::new)
            .transpose()
            .map_err(SetupError::Provider)?;
        let passwords = Passwords::new(settings.bcrypt_cost).map_err(SetupError::Passwords)?;
        Ok(AuthService::new(Parts {
            blacklist: Blacklist::new(backends.revocations, Arc::clone(&clock)),
            limiter: backends.limits,
            registrations: limiter::registrations(settings.register_limits, Arc::clone(&clock)),
            accounts: backends.accounts,
            tokens,
            passwords,
            oauth,
            captcha,
            maintenance_every: settings.maintenance_every,
        }))
    }
}

/// A secret too short to sign with is refused before any database is
/// opened or created: a start-up that fails leaves nothing behind.
fn check_secret(settings: &Settings) -> Result<(), SetupError> {
    Tokens::new(&settings.secret, Arc::clone(&settings.clock))
        .map(drop)
        .map_err(SetupError::Secret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn setup_error_exposes_the_wrapped_error_as_source() {
        let cases = [
            (
                SetupError::Secret(TokenError::SecretTooShort(3)),
                Some(TokenError::SecretTooShort(3).to_string()),
            ),
            (SetupError::EncKeyMissing, None),
            (
                SetupError::EncKey(CipherError::BadKey),
                Some(CipherError::BadKey.to_string()),
            ),
            (
                SetupError::Store(StoreError::UsernameTaken),
                Some(StoreError::UsernameTaken.to_string()),
            ),
            (
                SetupError::Passwords(PasswordError::TooLong),
                Some(PasswordError::TooLong.to_string()),
            ),
            (
                SetupError::Provider(ConfigError::Empty {
                    key: "oauth.github.secret".into(),
                }),
                Some("oauth.github.secret: must not be empty".to_string()),
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.source().map(|s| s.to_string()), want, "{err}");
        }
    }
}
