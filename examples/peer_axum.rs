//! Load-test peer for the HTTP side: axum 0.8 answering the same three routes
//! as router-demo and the greeter, byte for byte the same bodies and content
//! types, with no state. `load/load.sh` checks the bodies match before it
//! measures, then puts handwire and this peer side by side.
//!
//! | route                | same answer as                 |
//! |----------------------|--------------------------------|
//! | `GET /hello`         | router-demo (`text/plain`)     |
//! | `GET /book/{id}`     | router-demo (`text/plain`)     |
//! | `GET /helloworld/{name}` | the greeter (JSON), but no database write |
//!
//! `cargo run --release --example peer_axum -- 127.0.0.1:8001 [CERT KEY] [--log]`
//!
//! With a PEM certificate and key it serves HTTPS through axum-server's
//! rustls acceptor (ring, ALPN h2 and http/1.1): the peer of the TLS rows.
//!
//! Without `--log` it logs nothing: the peer of the headline rows, where
//! every server runs with its access log off. With `--log` it logs as an
//! axum service usually does: tower-http's `TraceLayer` opens a span at
//! INFO for each request and emits one event at INFO when the response is
//! sent (its request-start event is at DEBUG, below the filter), formatted
//! by tracing-subscriber's fmt layer and written to stdout through
//! tracing-appender's non-blocking writer (a bounded channel to a writer
//! thread): the peer of the rows with handwire's access log on.

use axum::extract::Path;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json; charset=utf-8";

async fn hello() -> impl IntoResponse {
    ([(CONTENT_TYPE, TEXT)], "Hello World!")
}

async fn book(Path(id): Path<String>) -> impl IntoResponse {
    ([(CONTENT_TYPE, TEXT)], format!("You are reading book {id}"))
}

async fn helloworld(Path(name): Path<String>) -> impl IntoResponse {
    // serde_json escapes the name exactly as the greeter's JSON writer does.
    let body = serde_json::json!({ "message": format!("Hello {name}") }).to_string();
    ([(CONTENT_TYPE, JSON)], body)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (flags, words): (Vec<String>, Vec<String>) =
        std::env::args().skip(1).partition(|a| a.starts_with("--"));
    let log = match flags.as_slice() {
        [] => false,
        [flag] if flag == "--log" => true,
        other => return Err(format!("unknown option(s) {other:?} (known: --log)").into()),
    };
    let addr = words
        .first()
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:8001".into());
    let mut app = Router::new()
        .route("/hello", get(hello))
        .route("/book/{id}", get(book))
        .route("/helloworld/{name}", get(helloworld));
    // Held to the end of `main`: dropping it flushes the lines still queued.
    let mut _log_writer = None;
    if log {
        let (writer, guard) = tracing_appender::non_blocking(std::io::stdout());
        _log_writer = Some(guard);
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(false),
            )
            .with(LevelFilter::INFO)
            .init();
        app = app.layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        );
    }
    if let [_, cert, key] = words.as_slice() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tls = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key).await?;
        let addr: std::net::SocketAddr = addr.parse()?;
        println!("peer_axum listening on https://{addr}");
        axum_server::bind_rustls(addr, tls)
            .serve(app.into_make_service())
            .await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("peer_axum listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
