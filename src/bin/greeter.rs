//! `greeter [--config PATH] [--shutdown-grace DURATION]`: the greeting
//! service (HTTP + gRPC over SQLite, or PostgreSQL + Redis when built with
//! the feature `cluster`).
//!
//! Reads the YAML config (default `./config.yaml`), opens the store, binds
//! both listeners, prints their addresses, the store it uses and the HTTP
//! routes in the order a request tries them, and serves until SIGINT/SIGTERM.
//! Any start-up problem is one line on stderr and exit status 1.
//!
//! The config file has no key for the shutdown grace period (how long
//! in-flight requests may finish after SIGTERM, default 10 s):
//! `--shutdown-grace` sets it, else the environment variable
//! `GREETER_SHUTDOWN_GRACE` (e.g. `1s`). The listeners, TLS and time-outs
//! come from the config file, so of the shared server options the greeter
//! takes the grace, the connection caps, `--debug-pages` (the HTTP
//! engine's walks and route tree drawn; gRPC calls have no chain) and
//! `--no-access-log` (the config's `log.access: false`: no access line per
//! HTTP request or gRPC call; the SayHello business line and the rest stay).

use std::path::PathBuf;
use std::process::ExitCode;

use handwire::cli::{self, Args, EnvVar, Flag, Usage};
use handwire::config;
use handwire::launch;
use handwire::ops::log;
use handwire::server::{shutdown_signal, Options};
use handwire::services::greeter::config::{Config, ConfigError};
use handwire::services::greeter::Greeter;

/// Environment variable holding the shutdown grace period (Go notation),
/// read when `--shutdown-grace` is not given.
const GRACE_VAR: &str = "GREETER_SHUTDOWN_GRACE";

const USAGE: Usage = Usage {
    program: "greeter",
    about: "the greeting service over HTTP and gRPC; addresses, time-outs and the \
            database come from the config file",
    synopsis: &[
        "[--config PATH] [--shutdown-grace DURATION] [--max-connections N]",
        " [--max-connections-per-peer N] [--debug-pages] [--no-access-log]",
    ],
    flags: &[Flag::value(
        "config",
        "PATH",
        Some("config.yaml, in the working directory"),
        "the YAML configuration (server.http, server.grpc, data)",
    )],
    common: &[
        cli::SHUTDOWN_GRACE,
        cli::MAX_CONNECTIONS,
        cli::MAX_CONNECTIONS_PER_PEER,
        cli::DEBUG_PAGES,
        cli::NO_ACCESS_LOG,
    ],
    env: &[EnvVar {
        name: GRACE_VAR,
        default: Some("10s"),
        help: "how long requests may finish after SIGTERM, when --shutdown-grace is not given",
    }],
};

fn main() -> ExitCode {
    launch::main(&USAGE, 0, run)
}

async fn run(args: Args) -> Result<(), String> {
    let path = PathBuf::from(args.get("config").unwrap_or("config.yaml"));
    let mut config = match Config::load(&path) {
        Ok(c) => c,
        // The read error names the path (and the directory) itself.
        Err(e @ ConfigError::File(config::Error::Read { .. })) => return Err(e.to_string()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if !launch::access_log(&args) {
        config.log.access = false;
    }
    let mut options = Options::default();
    if let Some(grace) = launch::shutdown_grace(&args, Some(GRACE_VAR))? {
        options.shutdown_grace = grace;
    }
    let cap = launch::max_connections(&args)?;
    let share = launch::max_connections_per_peer(&args)?;
    let limits = &config.limits;
    options.connections = launch::budget(
        cap.or(limits.max_connections.map(usize::from)),
        share.or(limits.max_connections_per_peer.map(usize::from)),
    );
    log::announce(&format!(
        "greeter: holds up to {} connections (limits.max_connections, --max-connections); \
         at the cap it takes back first from an address holding over {} \
         (limits.max_connections_per_peer, --max-connections-per-peer)",
        options.connections.max(),
        options.connections.peer_share()
    ));
    let greeter = Greeter::bind_with_pages(&config, launch::debug_pages(&args))
        .await
        .map_err(|e| e.to_string())?
        .with_server_options(options);
    log::announce(&format!(
        "greeter: HTTP listening on {}",
        greeter.http_addr()
    ));
    log::announce(&format!(
        "greeter: gRPC listening on {}",
        greeter.grpc_addr()
    ));
    for (listener, on) in [("HTTP", greeter.http_tls()), ("gRPC", greeter.grpc_tls())] {
        if on {
            log::announce(&format!(
                "greeter: {listener} serves TLS (certificate reloaded on SIGHUP)"
            ));
        }
    }
    log::announce(&format!("greeter: {}", greeter.store()));
    for route in greeter.routes() {
        log::announce(&format!("[routes] {route}"));
    }
    greeter
        .serve(shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    log::announce("greeter: stopped");
    Ok(())
}
