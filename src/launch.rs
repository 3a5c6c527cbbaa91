//! What the three binaries share from `main` to their first request: one
//! `main` shape, the server flags read into [`Options`], the listener bound
//! with an error that names the flag, and the start-up and stop lines.
//!
//! Each binary then only says what is its own: greeter reads its config
//! file, router-demo builds the demo engine, token-auth opens its store.
//! Flags are declared in [`crate::cli`] (and the TLS pair in
//! [`crate::server::tls`]); [`SERVER_FLAGS`] is the set router-demo and
//! token-auth take, listed the same way in both `--help` texts.

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::cli::{self, Args, Command, Flag, Usage};
use crate::config::{parse_duration_setting, quote};
use crate::ops::log;
use crate::ops::metrics::{Kind, Metrics};
use crate::server::tls;
use crate::server::{self, ConnectionBudget, Options, ServerError, Service};
use crate::web::engine::Engine;
use crate::web::DebugPages;

/// The server options of a binary with one listener and one engine
/// (router-demo, token-auth): where to listen, the shutdown grace, TLS,
/// the route table, the chain trace, the debug pages, the access log and
/// metrics.
pub const SERVER_FLAGS: &[Flag] = &[
    cli::ADDR,
    cli::SHUTDOWN_GRACE,
    cli::MAX_CONNECTIONS,
    cli::MAX_CONNECTIONS_PER_PEER,
    tls::CERT_FLAG,
    tls::KEY_FLAG,
    cli::QUIET,
    cli::TRACE,
    cli::DEBUG_PAGES,
    cli::NO_ACCESS_LOG,
    cli::NO_METRICS,
];

/// The body of every binary's `main`: names the service in log lines,
/// parses the command line against `usage` (`--help` prints
/// [`cli::help`] and exits 0), runs `run` on a multi-threaded tokio
/// runtime, and turns an error anywhere into one line on stderr,
/// `program: what`, and exit status 1.
pub fn main<F, Fut>(usage: &Usage, max_positional: usize, run: F) -> ExitCode
where
    F: FnOnce(Args) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    log::set_service_name(usage.program);
    let fail = |message: &str| {
        eprintln!("{}: {message}", usage.program);
        ExitCode::FAILURE
    };
    let args = match usage.command(std::env::args().skip(1), max_positional) {
        Ok(Command::Help) => {
            print!("{}", cli::help(usage));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(args)) => args,
        Err(e) => return fail(&e.to_string()),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

/// `--shutdown-grace`, else the environment variable `fallback` (if
/// any and set), else `None` (the server's default). The error names the
/// flag or the variable.
pub fn shutdown_grace(args: &Args, fallback: Option<&str>) -> Result<Option<Duration>, String> {
    if let Some(text) = args.get(cli::SHUTDOWN_GRACE.name) {
        return parse_duration_setting("--shutdown-grace", text).map(Some);
    }
    match fallback.and_then(|var| Some((var, std::env::var(var).ok()?))) {
        Some((var, text)) => parse_duration_setting(var, &text).map(Some),
        None => Ok(None),
    }
}

/// `--max-connections`: a whole number from 1 up; more than the
/// descriptors allow is held to ¾ of the open-file limit
/// ([`ConnectionBudget::new`]). The error names the flag.
pub fn max_connections(args: &Args) -> Result<Option<usize>, String> {
    count_flag(args, &cli::MAX_CONNECTIONS)
}

/// `--max-connections-per-peer`: a whole number from 1 up (more than the
/// cap is the cap). The error names the flag.
pub fn max_connections_per_peer(args: &Args) -> Result<Option<usize>, String> {
    count_flag(args, &cli::MAX_CONNECTIONS_PER_PEER)
}

/// A count flag: a whole number from 1 up, if given. The error names the
/// flag and quotes a short prefix of the value.
fn count_flag(args: &Args, flag: &Flag) -> Result<Option<usize>, String> {
    let Some(text) = args.get(flag.name) else {
        return Ok(None);
    };
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "--{}: expected a whole number from 1 up, got {}",
            flag.name,
            quote(text)
        )),
    }
}

/// The connection budget of `cap` connections (`None`: the process
/// budget), with `share` connections per peer if given.
pub fn budget(cap: Option<usize>, share: Option<usize>) -> ConnectionBudget {
    let budget = cap.map_or_else(ConnectionBudget::process, ConnectionBudget::new);
    match share {
        Some(share) => budget.with_peer_share(share),
        None => budget,
    }
}

/// The listener settings of [`SERVER_FLAGS`], checked before anything is bound:
/// `--addr` (default [`cli::DEFAULT_ADDR`]), then `--shutdown-grace` and
/// the TLS pair into [`Options`].
pub struct Listen {
    /// Where to listen, as [`cli::listen_addr`] normalized it.
    pub addr: String,
    /// The server options the flags set.
    pub options: Options,
}

impl Listen {
    /// Reads the flags; an error names the flag (or the TLS file).
    pub fn from_args(args: &Args) -> Result<Listen, String> {
        let addr = cli::listen_addr("--addr", args.get("addr").unwrap_or(cli::DEFAULT_ADDR))?;
        let mut options = Options::default();
        if let Some(grace) = shutdown_grace(args, None)? {
            options.shutdown_grace = grace;
        }
        options.connections = budget(max_connections(args)?, max_connections_per_peer(args)?);
        options.tls = tls::from_flags(args.get("tls-cert"), args.get("tls-key"))?;
        Ok(Listen { addr, options })
    }
}

/// Binds `addr` (as [`Listen::from_args`] read it); a port in use says
/// which flag moves the service.
pub async fn bind(addr: &str) -> Result<TcpListener, String> {
    server::bind(addr).await.map_err(|e| match &e {
        ServerError::Bind { source, .. } => {
            format!("--addr: {e}{}", cli::addr_in_use_hint(source, "--addr"))
        }
        _ => e.to_string(),
    })
}

/// Whether the engine writes its access line (`--no-access-log` not given):
/// read before the engine is built, since its logger runs first in every
/// route's chain.
pub fn access_log(args: &Args) -> bool {
    !args.has(cli::NO_ACCESS_LOG.name)
}

/// Applies `--no-metrics`, `--trace`, `--debug-pages` and `--quiet` to
/// `engine`: unless metrics are off, requests are counted (`GET /metrics`)
/// and so are the connections of `options`.
pub fn study_and_metrics(
    engine: &mut Engine,
    args: &Args,
    options: &mut Options,
) -> Result<(), String> {
    if !args.has(cli::NO_METRICS.name) {
        let metrics = Metrics::new();
        engine
            .metrics(&metrics)
            .map_err(|e| format!("bad route table: {e}"))?;
        options.connection_gauge = Some(metrics.connections(Kind::Http));
    }
    if let Some(pages) = debug_pages(args) {
        engine.debug_pages(pages);
    }
    engine.study_mode(args.has(cli::TRACE.name), args.has(cli::QUIET.name));
    Ok(())
}

/// `--debug-pages`: the pages, for loopback peers.
pub fn debug_pages(args: &Args) -> Option<DebugPages> {
    args.has(cli::DEBUG_PAGES.name).then(DebugPages::default)
}

/// Serves `app` on `listener` until `shutdown`: prints
/// `program listening on http(s)://addr`, reloads the TLS certificate on
/// SIGHUP, and prints `program stopped` once the last connection closed.
pub async fn serve(
    program: &str,
    listener: TcpListener,
    app: Arc<dyn Service>,
    options: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), String> {
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    log::announce(&format!(
        "{program} holds up to {} connections (--max-connections); at the cap it takes \
         back first from an address holding over {} (--max-connections-per-peer)",
        options.connections.max(),
        options.connections.peer_share()
    ));
    log::announce(&format!("{program} listening on {scheme}://{local}"));
    tls::reload_on_sighup(options.tls.iter().cloned().collect());
    server::serve(listener, app, options, shutdown)
        .await
        .map_err(|e| e.to_string())?;
    log::announce(&format!("{program} stopped"));
    Ok(())
}
