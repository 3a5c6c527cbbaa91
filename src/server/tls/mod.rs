//! TLS for any listener: HTTPS on the HTTP ports, gRPC over TLS on the
//! greeter's gRPC port. rustls with the ring provider; no OpenSSL.
//!
//! The pieces, from the files to the socket:
//!
//! - [`CertStore`]: the certificate and key read from two PEM files
//!   ([`cert::load`] checks them), handed to rustls as a
//!   `ResolvesServerCert`. rustls asks it at every handshake, so
//!   [`CertStore::reload`] (on SIGHUP, [`reload_on_sighup`]) swaps what it
//!   holds: new handshakes get the new certificate, open connections keep
//!   theirs, nothing restarts. A reload that fails keeps the old pair.
//! - [`acceptor`]: the server config, ALPN offering `h2` and/or `http/1.1`
//!   as the listener speaks them.
//! - [`handshake`]: one connection's handshake, bounded in time by the
//!   caller. A client speaking plain HTTP to the TLS port gets a plain
//!   `400` saying so (as Go's `net/http` does) and is closed.
//! - [`Stream`]: a plain or TLS connection, one type for the accept loop,
//!   which tells each request whether it came over TLS
//!   ([`crate::contract::Caller::tls`]).

pub mod cert;

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

pub use cert::CertError;

use crate::cli::Flag;
use crate::ops::log;

/// What a plain-HTTP client on a TLS port reads before the connection closes.
const PLAIN_HTTP_REFUSAL: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Connection: close\r\n\
Content-Length: 48\r\n\r\n\
Client sent an HTTP request to an HTTPS server.\n";

/// The first byte of every TLS record carrying a handshake (ClientHello).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// A listener's certificate and key, swappable while it serves.
#[derive(Debug)]
pub struct CertStore {
    cert_file: PathBuf,
    key_file: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertStore {
    /// Read and check `cert_file` (PEM chain, leaf first) and `key_file`
    /// (PEM private key). The error names the file at fault: unreadable,
    /// empty, a key of another certificate, an expired certificate.
    pub fn load(
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> Result<Arc<CertStore>, CertError> {
        let (cert_file, key_file) = (cert_file.into(), key_file.into());
        let key = cert::load(&cert_file, &key_file, &provider())?;
        Ok(Arc::new(CertStore {
            cert_file,
            key_file,
            current: RwLock::new(key),
        }))
    }

    /// Read both files again; on success new handshakes use the new pair,
    /// on failure the old one stays and the error says why.
    pub fn reload(&self) -> Result<(), CertError> {
        let key = cert::load(&self.cert_file, &self.key_file, &provider())?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = key;
        Ok(())
    }

    /// The certificate file, for log lines.
    pub fn cert_file(&self) -> &Path {
        &self.cert_file
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// `--tls-cert FILE`, as the binaries that take it list it in `--help`.
pub const CERT_FLAG: Flag = Flag::value(
    "tls-cert",
    "FILE",
    None,
    "serve HTTPS with this PEM certificate chain (reloaded on SIGHUP)",
);

/// `--tls-key FILE`, the pair of [`CERT_FLAG`].
pub const KEY_FLAG: Flag =
    Flag::value("tls-key", "FILE", None, "the PEM private key of --tls-cert");

/// The certificate of `--tls-cert FILE --tls-key FILE` (router-demo,
/// token-auth): both or neither; `None` when neither is given.
pub fn from_flags(cert: Option<&str>, key: Option<&str>) -> Result<Option<Arc<CertStore>>, String> {
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => CertStore::load(cert, key)
            .map(Some)
            .map_err(|e| format!("--tls-cert/--tls-key: {e}")),
        (Some(_), None) => Err("--tls-cert needs --tls-key (the certificate's private key)".into()),
        (None, Some(_)) => Err("--tls-key needs --tls-cert (the certificate chain)".into()),
    }
}

/// ring, the provider the whole crate uses (no aws-lc-rs, no C toolchain).
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// The TLS side of a listener serving `certs`, offering by ALPN the
/// protocols it speaks (`h2` first).
pub fn acceptor(certs: Arc<CertStore>, http1: bool, http2: bool) -> TlsAcceptor {
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|_| unreachable!("ring supports TLS 1.2 and 1.3"))
        .with_no_client_auth()
        .with_cert_resolver(certs);
    if http2 {
        config.alpn_protocols.push(b"h2".to_vec());
    }
    if http1 {
        config.alpn_protocols.push(b"http/1.1".to_vec());
    }
    TlsAcceptor::from(Arc::new(config))
}

/// The TLS handshake of one accepted connection: `wrap` is applied to the
/// socket first (the connection's clocks watch the raw bytes). `None` when
/// the handshake failed (logged) or the client spoke plain HTTP (answered
/// 400). Not bounded in time here: the caller races it with its clocks.
pub async fn handshake<S, W>(
    acceptor: &TlsAcceptor,
    tcp: TcpStream,
    remote: std::net::SocketAddr,
    wrap: W,
) -> Option<TlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    W: FnOnce(TcpStream) -> S,
{
    let mut first = [0u8; 1];
    match tcp.peek(&mut first).await {
        // Closed before a byte (a port probe): nothing worth a log line.
        Ok(0) | Err(_) => return None,
        Ok(_) if first[0] == TLS_HANDSHAKE_RECORD => {}
        Ok(_) if first[0].is_ascii_uppercase() => {
            // A method name: plain HTTP (or an h2c preface) on a TLS port.
            let mut tcp = tcp;
            let _ = tcp.write_all(PLAIN_HTTP_REFUSAL).await;
            let _ = tcp.shutdown().await;
            log::message(
                "server",
                format_args!("TLS handshake error from {remote}: client sent plain HTTP"),
            );
            return None;
        }
        // Anything else: rustls says what is wrong with it.
        Ok(_) => {}
    }
    match acceptor.accept(wrap(tcp)).await {
        Ok(stream) => Some(stream),
        Err(e) => {
            log::message(
                "server",
                format_args!("TLS handshake error from {remote}: {e}"),
            );
            None
        }
    }
}

/// Reload every store on SIGHUP, logging the outcome per certificate file;
/// runs until the process ends. Does nothing where signals are not Unix's.
pub fn reload_on_sighup(stores: Vec<Arc<CertStore>>) {
    if stores.is_empty() {
        return;
    }
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangup = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                log::message("tls", format_args!("no certificate reload on SIGHUP: {e}"));
                return;
            }
        };
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                for store in &stores {
                    match store.reload() {
                        Ok(()) => log::message(
                            "tls",
                            format_args!("reloaded {}", store.cert_file().display()),
                        ),
                        Err(e) => log::message(
                            "tls",
                            format_args!("reload failed, keeping the previous certificate: {e}"),
                        ),
                    }
                }
            }
        });
    }
}

/// One connection, plain or TLS.
pub enum Stream<S> {
    /// Cleartext.
    Plain(S),
    /// After a completed TLS handshake.
    Tls(Box<TlsStream<S>>),
}

impl<S> Stream<S> {
    /// Whether the connection is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Whether TLS negotiated HTTP/2 (ALPN `h2`); without ALPN a TLS client
    /// speaks HTTP/1.1 (RFC 9113 §3.2).
    pub fn alpn_is_h2(&self) -> bool {
        match self {
            Stream::Plain(_) => false,
            Stream::Tls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
