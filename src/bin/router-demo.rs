//! `router-demo [--addr HOST:PORT] [--redirect-target URL] [--quiet] [--trace]`:
//! the Area B server. At start-up it prints the route table as Gin's debug
//! mode does (`--quiet` turns it off); `--trace` logs each request's walk of
//! its handler chain. `--shutdown-grace DURATION` (default 10s) bounds how
//! long in-flight requests may finish after SIGTERM. `GET /metrics` serves
//! Prometheus metrics; `--no-metrics` turns them off (the load script
//! compares both).

use std::process::ExitCode;

use handwire::cli::Args;
use handwire::config::parse_duration_setting;
use handwire::services::router_demo::{self, DemoOptions};
use handwire::web::log;
use handwire::web::metrics::{Kind, Metrics};
use handwire::web::server::{self, Options};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("router-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let args = Args::parse_with_switches(
        std::env::args().skip(1),
        &["addr", "redirect-target", "shutdown-grace"],
        &["quiet", "trace", "no-metrics"],
    )
    .map_err(|e| e.to_string())?;
    let addr = args.get("addr").unwrap_or("0.0.0.0:8000");
    let mut opts = DemoOptions::default();
    if let Some(t) = args.get("redirect-target") {
        opts.redirect_target = t.to_string();
    }
    let mut engine = router_demo::engine(opts).map_err(|e| format!("bad route table: {e}"))?;
    let mut options = Options::default();
    if !args.has("no-metrics") {
        let metrics = Metrics::new();
        engine
            .metrics(&metrics)
            .map_err(|e| format!("bad route table: {e}"))?;
        options.connection_gauge = Some(metrics.connections(Kind::Http));
    }
    engine.study_mode(args.has("trace"), args.has("quiet"));
    let app = engine.build();
    if let Some(text) = args.get("shutdown-grace") {
        options.shutdown_grace = parse_duration_setting("--shutdown-grace", text)?;
    }
    let listener = server::bind(addr).await.map_err(|e| e.to_string())?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    log::announce(&format!("router-demo listening on http://{local}"));
    server::serve(listener, app, options, server::shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    log::announce("router-demo stopped");
    Ok(())
}
