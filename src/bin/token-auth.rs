//! `token-auth`: the token-authentication server.
//!
//! ```text
//! token-auth [--addr ADDR] [--db PATH|postgres://…] [--redis redis://…]
//!            [--shared-timeout DURATION] [--config PATH] [--shutdown-grace DURATION]
//!            [--tls-cert FILE --tls-key FILE] [--quiet] [--trace] [--no-access-log]
//!            [--no-metrics] [--debug-pages]
//! token-auth create-admin --username NAME [--db PATH|postgres://…]  (password on stdin)
//! ```
//!
//! `--db` is a SQLite file, or with a binary built with `--features cluster`
//! a PostgreSQL connection string (users, bindings and the blacklist shared
//! by every instance); `--redis` puts login limits and pending OAuth
//! sign-ins in Redis. `--shared-timeout` (default 1s) bounds every call to
//! either; past it a request is answered 503. The server options
//! (`--addr`, `--shutdown-grace`, TLS, `--quiet`, `--trace`,
//! `--no-access-log`, `--no-metrics`) are router-demo's too ([`launch::SERVER_FLAGS`]).
//!
//! Environment: `TOKEN_AUTH_SECRET` (≥ 32 bytes, signs tokens; required to
//! serve) and `TOKEN_AUTH_ENC_KEY` (64 hex digits, seals provider tokens;
//! required when the config file names OAuth providers).

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use handwire::cli::{Args, EnvVar, Flag, Usage};
use handwire::config::{self, parse_duration_setting};
use handwire::launch::{self, Listen, SERVER_FLAGS};
use handwire::ops::log;
use handwire::server;
use handwire::services::token_auth::config::{ConfigError, FileConfig};
use handwire::services::token_auth::oauth::ENC_KEY_VAR;
use handwire::services::token_auth::routes;
use handwire::services::token_auth::service::{AuthService, Backends, Settings, SECRET_VAR};
use handwire::services::token_auth::store::{NewUser, StoreError};
use handwire::services::token_auth::user::{check_username, Role};
use handwire::services::token_auth::{Passwords, DEFAULT_COST};

const DEFAULT_DB: &str = "token-auth.db";

const USAGE: Usage = Usage {
    program: "token-auth",
    about: "the token authentication service",
    synopsis: &[
        "[--addr HOST:PORT] [--db PATH|postgres://…] [--redis redis://…] [--shared-timeout DURATION]",
        " [--config PATH] [--shutdown-grace DURATION] [--tls-cert FILE --tls-key FILE] [--quiet] [--trace]",
        " [--max-connections N] [--max-connections-per-peer N] [--no-access-log] [--no-metrics]",
        " [--debug-pages]",
        "create-admin --username NAME [--db PATH|postgres://…]   (password read from stdin)",
    ],
    flags: &[
        Flag::value(
            "db",
            "PATH",
            Some("token-auth.db, in the working directory"),
            "SQLite file, or postgres://… (built with --features cluster)",
        ),
        Flag::value(
            "redis",
            "URL",
            None,
            "redis://… for login limits and OAuth states shared by instances",
        ),
        Flag::value(
            "shared-timeout",
            "DURATION",
            Some("1s"),
            "bound on every PostgreSQL / Redis call",
        ),
        Flag::value(
            "config",
            "PATH",
            None,
            "YAML file naming OAuth providers (oauth: …)",
        ),
        Flag::value(
            "username",
            "NAME",
            None,
            "create-admin: the admin's name",
        ),
    ],
    common: SERVER_FLAGS,
    env: &[
        EnvVar {
            name: SECRET_VAR,
            default: None,
            help: "signing secret, at least 32 bytes; required to serve",
        },
        EnvVar {
            name: ENC_KEY_VAR,
            default: None,
            help: "64 hex digits sealing provider tokens; required with OAuth providers",
        },
    ],
};

fn main() -> ExitCode {
    launch::main(&USAGE, 1, run)
}

async fn run(args: Args) -> Result<(), String> {
    match args.positional.as_slice() {
        [] => serve(&args).await,
        [command] if command == "create-admin" => {
            let username = args
                .get("username")
                .ok_or("create-admin needs --username NAME (the password is read from stdin)")?;
            create_admin(username, storage_settings(&args, Vec::new())?).await
        }
        other => Err(format!(
            "unknown command {:?} (expected no command, or create-admin; see --help)",
            other.join(" ")
        )),
    }
}

/// Settings with the storage flags applied: `--db` (a path, or a
/// `postgres://` connection string), `--redis`, `--shared-timeout`.
fn storage_settings(args: &Args, secret: Vec<u8>) -> Result<Settings, String> {
    let db = args.get("db").unwrap_or(DEFAULT_DB);
    let mut settings = Settings::new(secret, PathBuf::from(db));
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        settings.postgres = Some(db.to_string());
    }
    settings.redis = args.get("redis").map(str::to_string);
    if let Some(text) = args.get("shared-timeout") {
        settings.shared_timeout = parse_duration_setting("--shared-timeout", text)?;
        if settings.shared_timeout.is_zero() {
            return Err("--shared-timeout: must be above 0 (write e.g. 1s, 500ms)".into());
        }
    }
    Ok(settings)
}

/// One start-up line: where each kind of state lives.
fn announce_storage(settings: &Settings) {
    let users = match &settings.postgres {
        Some(_) => "PostgreSQL (shared)".to_string(),
        None => format!("SQLite {}", settings.db_path.display()),
    };
    let limits = match &settings.redis {
        Some(_) => "Redis (shared)",
        None => "this process",
    };
    log::announce(&format!(
        "token-auth: users, bindings, blacklist: {users}; login limits, OAuth states: {limits}; \
         registration limit: this process"
    ));
}

async fn serve(args: &Args) -> Result<(), String> {
    // What can be checked without touching the disk is checked first, and
    // AuthService::connect checks the secret's length before it opens or
    // creates a database.
    let secret = std::env::var(SECRET_VAR).map_err(|_| {
        format!(
            "{SECRET_VAR} is not set: export at least 32 random bytes, e.g. `openssl rand -hex 32`"
        )
    })?;
    let Listen { addr, mut options } = Listen::from_args(args)?;
    let config = match args.get("config") {
        // A read error names the path (and the directory) itself.
        Some(path) => FileConfig::load(path.as_ref()).map_err(|e| match e {
            ConfigError::File(config::Error::Read { .. }) => e.to_string(),
            _ => format!("{path}: {e}"),
        })?,
        None => FileConfig::default(),
    };
    let mut settings = storage_settings(args, secret.into_bytes())?;
    settings.providers = config.oauth;
    match &config.captcha {
        Some(captcha) => log::announce(&format!(
            "token-auth: captcha verified at {captcha} after 3 failed logins in a row"
        )),
        None => log::announce(
            "token-auth: captcha is hint-only (no captcha: in --config): after 3 failed logins \
             the answer says captcha_required, but no captcha is checked",
        ),
    }
    settings.captcha = config.captcha;
    settings.enc_key = std::env::var(ENC_KEY_VAR).ok();
    // Cookies (the OAuth sign-in binding) are marked `Secure` exactly when
    // the listener below serves TLS (--tls-cert / --tls-key).
    settings.listener_tls = options.tls.is_some();
    for (name, provider) in &settings.providers {
        log::announce(&format!("token-auth: OAuth provider {name}: {provider}"));
        for key in provider.cleartext_endpoints() {
            eprintln!(
                "token-auth: warning: oauth.{name}.{key} is plain http:// to a non-loopback \
                 host; the client secret and provider tokens travel unencrypted (use https://)"
            );
        }
    }
    let listener = launch::bind(&addr).await?;

    announce_storage(&settings);
    let service = AuthService::connect(settings)
        .await
        .map_err(|e| e.to_string())?;
    let service = Arc::new(service);
    let maintenance = service.spawn_maintenance();
    let mut engine = routes::engine(Arc::clone(&service), launch::access_log(args))
        .map_err(|e| format!("bad route table: {e}"))?;
    launch::study_and_metrics(&mut engine, args, &mut options)?;
    let app = engine.build();

    // Draining begins with `/readyz` turning 503, then the listener closes.
    let signal = server::shutdown_signal();
    let shutdown = async move {
        signal.await;
        service.start_draining();
    };
    let served = launch::serve(USAGE.program, listener, app, options, shutdown).await;
    maintenance.abort();
    served
}

async fn create_admin(username: &str, settings: Settings) -> Result<(), String> {
    check_username(username).map_err(|e| e.to_string())?;
    eprintln!("token-auth: reading the password for {username:?} from stdin (one line)");
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
    let password = line.trim_end_matches(['\r', '\n']).to_string();
    Passwords::check_policy(&password).map_err(|e| e.to_string())?;

    let store = Backends::connect(&settings)
        .await
        .map_err(|e| e.to_string())?
        .accounts;
    // Passwords::new computes a dummy hash: bcrypt stays off the runtime.
    let passwords = tokio::task::spawn_blocking(|| Passwords::new(DEFAULT_COST))
        .await
        .map_err(|e| format!("start-up task failed: {e}"))?
        .map_err(|e| e.to_string())?;
    let password_hash = passwords.hash(password).await.map_err(|e| e.to_string())?;
    let new = NewUser {
        username: username.to_string(),
        password_hash,
        email: None,
        role: Role::Admin,
    };
    match store.create_user(new).await {
        Ok(user) => {
            println!("created admin {:?} (id {})", user.username, user.id);
            Ok(())
        }
        Err(StoreError::UsernameTaken) => Err(format!(
            "username exists: {username:?} is already taken, choose another name"
        )),
        Err(e) => Err(e.to_string()),
    }
}
