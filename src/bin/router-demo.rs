//! `router-demo [--redirect-target URL] [server options]`: the Gin-style demo
//! server. At start-up it prints the route table as Gin's debug mode does
//! (`--quiet` turns it off); `--trace` logs each request's walk of its
//! handler chain; `--no-access-log` drops the request logger (Gin's
//! `gin.New()` with `Recovery()`). `--shutdown-grace DURATION` (default
//! 10s) bounds how long in-flight requests may finish after SIGTERM. `GET /metrics` serves
//! Prometheus metrics; `--no-metrics` turns them off (the load script
//! compares both). `--tls-cert FILE --tls-key FILE` serve HTTPS (the files
//! are read again on SIGHUP). `--help` lists it all; the server options are
//! the ones token-auth takes ([`launch::SERVER_FLAGS`]).

use std::process::ExitCode;

use handwire::cli::{Args, Flag, Usage};
use handwire::launch::{self, Listen, SERVER_FLAGS};
use handwire::server;
use handwire::services::router_demo::{self, DemoOptions};

const USAGE: Usage = Usage {
    program: "router-demo",
    about: "the Gin-style routing and middleware demo",
    synopsis: &[
        "[--addr HOST:PORT] [--redirect-target URL] [--shutdown-grace DURATION] [--quiet] [--trace]",
        " [--no-access-log] [--no-metrics]",
        " [--max-connections N] [--max-connections-per-peer N] [--tls-cert FILE --tls-key FILE]",
        " [--debug-pages]",
    ],
    flags: &[Flag::value(
        "redirect-target",
        "URL",
        Some("https://www.example.com/"),
        "where GET /remove redirects (301)",
    )],
    common: SERVER_FLAGS,
    env: &[],
};

fn main() -> ExitCode {
    launch::main(&USAGE, 0, run)
}

async fn run(args: Args) -> Result<(), String> {
    // Every setting is checked before anything is printed or bound.
    let Listen { addr, mut options } = Listen::from_args(&args)?;
    let mut opts = DemoOptions {
        access_log: launch::access_log(&args),
        ..DemoOptions::default()
    };
    if let Some(t) = args.get("redirect-target") {
        opts.redirect_target = t.to_string();
    }
    let listener = launch::bind(&addr).await?;
    let mut engine = router_demo::engine(opts).map_err(|e| format!("bad route table: {e}"))?;
    launch::study_and_metrics(&mut engine, &args, &mut options)?;
    let app = engine.build();
    launch::serve(
        USAGE.program,
        listener,
        app,
        options,
        server::shutdown_signal(),
    )
    .await
}
