//! The accept loop every service in this crate runs on.
//!
//! One listener speaks HTTP/1.1 and cleartext HTTP/2 (prior knowledge) through
//! hyper-util's auto builder, which sniffs the HTTP/2 preface on each
//! connection. What a connection does with a request is decided by a
//! [`Service`]: the Gin-style [`crate::web::engine::App`] for the HTTP services, the
//! gRPC dispatcher for the greeter. The loop itself only owns the transport
//! concerns: keep-alive, a header read timeout against slowloris clients, and
//! graceful shutdown (stop accepting, let in-flight requests finish, but wait
//! no longer than a bound).

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::types::{Body, BoxFuture};
use crate::web::log;

/// Anything the server can call: one request in, one response out.
///
/// `remote` is the peer address of the connection, for logging and for
/// per-client limits.
pub trait Service: Send + Sync + 'static {
    /// Answer one request.
    fn call(
        &self,
        req: http::Request<Incoming>,
        remote: SocketAddr,
    ) -> BoxFuture<'static, http::Response<Body>>;
}

/// Transport settings of one listener.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long an HTTP/1 client may take to send its request head.
    pub header_read_timeout: Duration,
    /// How long shutdown waits for in-flight connections before giving up.
    pub shutdown_grace: Duration,
    /// Accept HTTP/1.1 connections.
    pub http1: bool,
    /// Accept cleartext HTTP/2 connections (prior knowledge).
    pub http2: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            header_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
            http1: true,
            http2: true,
        }
    }
}

/// Why a listener could not be opened or run.
#[derive(Debug)]
pub enum ServerError {
    /// The address could not be bound (in use, not local, bad syntax).
    Bind {
        /// The address as given.
        addr: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The options allow neither HTTP/1 nor HTTP/2.
    NoProtocol,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Bind { addr, source } => {
                write!(f, "cannot listen on {addr}: {source}")
            }
            ServerError::NoProtocol => {
                write!(f, "server options enable neither HTTP/1 nor HTTP/2")
            }
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Bind { source, .. } => Some(source),
            ServerError::NoProtocol => None,
        }
    }
}

/// Bind a TCP listener on `addr` (`HOST:PORT`); the error names the address.
pub async fn bind(addr: &str) -> Result<TcpListener, ServerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind {
            addr: addr.to_string(),
            source,
        })
}

/// Run the accept loop on `listener` until `shutdown` completes, then wait up
/// to `opts.shutdown_grace` for in-flight connections to finish.
pub async fn serve(
    listener: TcpListener,
    service: Arc<dyn Service>,
    opts: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    match (opts.http1, opts.http2) {
        (true, true) => {}
        (true, false) => builder = builder.http1_only(),
        (false, true) => builder = builder.http2_only(),
        (false, false) => return Err(ServerError::NoProtocol),
    }
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(opts.header_read_timeout);
    builder.http2().timer(TokioTimer::new());

    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, remote) = match accepted {
                    Ok(pair) => pair,
                    Err(err) => {
                        // Usually EMFILE: back off instead of spinning.
                        log::message("server", format_args!("accept error: {err}"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let svc = service.clone();
                let hyper_svc = hyper::service::service_fn(move |req| {
                    let fut = svc.call(req, remote);
                    async move { Ok::<_, Infallible>(fut.await) }
                });
                let conn = builder.serve_connection(TokioIo::new(stream), hyper_svc);
                let conn = graceful.watch(conn.into_owned());
                tokio::spawn(async move {
                    // Errors here are the peer's (reset, bad preface, timeout).
                    let _ = conn.await;
                });
            }
            _ = shutdown.as_mut() => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(opts.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        log::message(
            "server",
            format_args!(
                "shutdown: connections still open after {:?}, closing them",
                opts.shutdown_grace
            ),
        );
    }
    Ok(())
}

/// Completes when the process receives SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn server_error_exposes_the_os_error_as_source() {
        let err = ServerError::Bind {
            addr: "127.0.0.1:1".into(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        let source = err.source().expect("Bind has a source");
        let io = source.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);
        assert!(ServerError::NoProtocol.source().is_none());
    }

    #[tokio::test]
    async fn a_refused_address_keeps_what_the_os_said_as_source() {
        let err = bind("not an address").await.err().unwrap();
        assert!(err.source().unwrap().is::<std::io::Error>(), "{err}");
    }
}
