//! `greeter [--config PATH]`: the greeting service (HTTP + gRPC over SQLite,
//! or PostgreSQL + Redis when built with the feature `cluster`).
//!
//! Reads the YAML config (default `./config.yaml`), opens the store, binds
//! both listeners, prints their addresses, the store it uses and the HTTP
//! routes in the order a request tries them, and serves until SIGINT/SIGTERM.
//! Any start-up problem is one line on stderr and exit status 1.
//!
//! The config file has no key for the shutdown grace period (how long
//! in-flight requests may finish after SIGTERM, default 10 s); the
//! environment variable `GREETER_SHUTDOWN_GRACE` (e.g. `1s`) sets it.

use std::path::PathBuf;
use std::process::ExitCode;

use handwire::cli::{self, Args, Command, EnvVar, Flag, Usage};
use handwire::config::{self, parse_duration_setting};
use handwire::services::greeter::config::{Config, ConfigError};
use handwire::services::greeter::Greeter;
use handwire::web::log;
use handwire::web::server::{shutdown_signal, Options};

/// Environment variable holding the shutdown grace period (Go notation).
const GRACE_VAR: &str = "GREETER_SHUTDOWN_GRACE";

const USAGE: Usage = Usage {
    program: "greeter",
    about: "the greeting service over HTTP and gRPC; addresses, time-outs and the \
            database come from the config file",
    synopsis: &["[--config PATH]"],
    flags: &[Flag::value(
        "config",
        "PATH",
        Some("config.yaml, in the working directory"),
        "the YAML configuration (server.http, server.grpc, data)",
    )],
    env: &[EnvVar {
        name: GRACE_VAR,
        default: Some("10s"),
        help: "how long requests may finish after SIGTERM",
    }],
};

fn main() -> ExitCode {
    log::set_service_name("greeter");
    let args = match Args::command(std::env::args().skip(1), USAGE.flags, 0) {
        Ok(Command::Help) => {
            print!("{}", cli::help(&USAGE));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(args)) => args,
        Err(e) => return fail(&e.to_string()),
    };
    let path = PathBuf::from(args.get("config").unwrap_or("config.yaml"));
    let config = match Config::load(&path) {
        Ok(c) => c,
        // The read error names the path (and the directory) itself.
        Err(e @ ConfigError::File(config::Error::Read { .. })) => return fail(&e.to_string()),
        Err(e) => return fail(&format!("{}: {e}", path.display())),
    };
    let mut options = Options::default();
    if let Ok(text) = std::env::var(GRACE_VAR) {
        match parse_duration_setting(GRACE_VAR, &text) {
            Ok(d) => options.shutdown_grace = d,
            Err(message) => return fail(&message),
        }
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    runtime.block_on(async {
        let greeter = match Greeter::bind(&config).await {
            Ok(g) => g.with_server_options(options),
            Err(e) => return fail(&e.to_string()),
        };
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
        match greeter.serve(shutdown_signal()).await {
            Ok(()) => {
                log::announce("greeter: stopped");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e.to_string()),
        }
    })
}

fn fail(message: &str) -> ExitCode {
    eprintln!("greeter: {message}");
    ExitCode::FAILURE
}
