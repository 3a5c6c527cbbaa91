//! `router-demo [--addr HOST:PORT] [--redirect-target URL] [--quiet] [--trace]`:
//! the Gin-style demo server. At start-up it prints the route table as Gin's debug
//! mode does (`--quiet` turns it off); `--trace` logs each request's walk of
//! its handler chain. `--shutdown-grace DURATION` (default 10s) bounds how
//! long in-flight requests may finish after SIGTERM. `GET /metrics` serves
//! Prometheus metrics; `--no-metrics` turns them off (the load script
//! compares both). `--tls-cert FILE --tls-key FILE` serve HTTPS (the files
//! are read again on SIGHUP). `--help` lists it all.

use std::process::ExitCode;

use handwire::cli::{self, Args, Command, Flag, Usage};
use handwire::config::parse_duration_setting;
use handwire::services::router_demo::{self, DemoOptions};
use handwire::web::log;
use handwire::web::metrics::{Kind, Metrics};
use handwire::web::server::{self, Options, ServerError};
use handwire::web::tls;

const DEFAULT_ADDR: &str = "0.0.0.0:8000";

const USAGE: Usage = Usage {
    program: "router-demo",
    about: "the Gin-style routing and middleware demo",
    synopsis: &[
        "[--addr HOST:PORT] [--redirect-target URL] [--shutdown-grace DURATION] [--quiet] [--trace] [--no-metrics]",
        " [--tls-cert FILE --tls-key FILE]",
    ],
    flags: &[
        Flag::value(
            "addr",
            "HOST:PORT",
            Some(DEFAULT_ADDR),
            "where to listen; :PORT is every interface",
        ),
        Flag::value(
            "redirect-target",
            "URL",
            Some("https://www.example.com/"),
            "where GET /remove redirects (301)",
        ),
        Flag::value(
            "shutdown-grace",
            "DURATION",
            Some("10s"),
            "how long requests may finish after SIGTERM",
        ),
        tls::CERT_FLAG,
        tls::KEY_FLAG,
        Flag::switch("quiet", "do not print the route table at start-up"),
        Flag::switch("trace", "log each request's walk of its handler chain"),
        Flag::switch("no-metrics", "do not count requests (no GET /metrics)"),
    ],
    env: &[],
};

#[tokio::main]
async fn main() -> ExitCode {
    log::set_service_name("router-demo");
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("router-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let args =
        match Args::command(std::env::args().skip(1), USAGE.flags, 0).map_err(|e| e.to_string())? {
            Command::Help => {
                print!("{}", cli::help(&USAGE));
                return Ok(());
            }
            Command::Run(args) => args,
        };
    // Every setting is checked before anything is printed or bound.
    let addr = cli::listen_addr("--addr", args.get("addr").unwrap_or(DEFAULT_ADDR))?;
    let mut options = Options::default();
    if let Some(text) = args.get("shutdown-grace") {
        options.shutdown_grace = parse_duration_setting("--shutdown-grace", text)?;
    }
    options.tls = tls::from_flags(args.get("tls-cert"), args.get("tls-key"))?;
    let mut opts = DemoOptions::default();
    if let Some(t) = args.get("redirect-target") {
        opts.redirect_target = t.to_string();
    }
    let listener = server::bind(&addr).await.map_err(|e| match &e {
        ServerError::Bind { source, .. } => {
            format!("--addr: {e}{}", cli::addr_in_use_hint(source, "--addr"))
        }
        _ => e.to_string(),
    })?;
    let mut engine = router_demo::engine(opts).map_err(|e| format!("bad route table: {e}"))?;
    if !args.has("no-metrics") {
        let metrics = Metrics::new();
        engine
            .metrics(&metrics)
            .map_err(|e| format!("bad route table: {e}"))?;
        options.connection_gauge = Some(metrics.connections(Kind::Http));
    }
    engine.study_mode(args.has("trace"), args.has("quiet"));
    let app = engine.build();
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    log::announce(&format!("router-demo listening on {scheme}://{local}"));
    tls::reload_on_sighup(options.tls.iter().cloned().collect());
    server::serve(listener, app, options, server::shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    log::announce("router-demo stopped");
    Ok(())
}
