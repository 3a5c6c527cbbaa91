//! Load-test peer for the HTTP side: axum 0.8 answering the same three routes
//! as router-demo and the greeter, byte for byte the same bodies and content
//! types, with no logger and no state. `load/load.sh` checks the bodies match
//! before it measures, then puts handwire and this peer side by side.
//!
//! | route                | same answer as                 |
//! |----------------------|--------------------------------|
//! | `GET /hello`         | router-demo (`text/plain`)     |
//! | `GET /book/{id}`     | router-demo (`text/plain`)     |
//! | `GET /helloworld/{name}` | the greeter (JSON), but no database write |
//!
//! `cargo run --release --example peer_axum -- 127.0.0.1:8001 [CERT KEY]`
//!
//! With a PEM certificate and key it serves HTTPS through axum-server's
//! rustls acceptor (ring, ALPN h2 and http/1.1): the peer of the TLS rows.

use axum::extract::Path;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

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
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8001".into());
    let app = Router::new()
        .route("/hello", get(hello))
        .route("/book/{id}", get(book))
        .route("/helloworld/{name}", get(helloworld));
    if let (Some(cert), Some(key)) = (std::env::args().nth(2), std::env::args().nth(3)) {
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
