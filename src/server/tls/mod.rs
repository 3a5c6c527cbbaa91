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
//!   theirs, nothing restarts. The files are read on a thread of their
//!   own within [`READ_LIMIT`] (a FIFO or a hung network mount blocks in
//!   the kernel, and on a runtime worker it would stall serving and
//!   shutdown); a reload that fails or runs out of time keeps the old pair.
//! - [`acceptor`]: the server config, ALPN offering `h2` and/or `http/1.1`
//!   as the listener speaks them.
//! - [`handshake`]: one connection's handshake, bounded in time by the
//!   caller. A client speaking plain HTTP to the TLS port gets a plain
//!   `400` saying so (as Go's `net/http` does) and is closed. Failures are
//!   logged at most [`HANDSHAKE_LINES_PER_SECOND`] a second, the next line
//!   counting those left out: each garbage connection is one failure.
//! - [`Stream`]: a plain or TLS connection, one type for the accept loop,
//!   which tells each request whether it came over TLS
//!   ([`crate::contract::Caller::tls`]).

pub mod cert;

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

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
use crate::ops::ratelimit::LogLines;

/// What a plain-HTTP client on a TLS port reads before the connection closes.
const PLAIN_HTTP_REFUSAL: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Connection: close\r\n\
Content-Length: 48\r\n\r\n\
Client sent an HTTP request to an HTTPS server.\n";

/// The first byte of every TLS record carrying a handshake (ClientHello).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Most handshake failures logged a second, all listeners together.
pub const HANDSHAKE_LINES_PER_SECOND: usize = 10;

/// The limit of [`HANDSHAKE_LINES_PER_SECOND`].
static HANDSHAKE_LINES: LazyLock<LogLines> =
    LazyLock::new(|| LogLines::new(HANDSHAKE_LINES_PER_SECOND, Duration::from_secs(1)));

/// Log the failed handshake of `remote`, unless past the limit.
fn handshake_failed(remote: std::net::SocketAddr, why: &dyn std::fmt::Display) {
    if let Some(suppressed) = HANDSHAKE_LINES.admit() {
        log::message(
            "server",
            format_args!("TLS handshake error from {remote}: {why}{suppressed}"),
        );
    }
}

/// Longest a read of the certificate and key may take; past it start-up
/// fails and a reload keeps the pair in use. Local files take
/// microseconds.
pub const READ_LIMIT: Duration = Duration::from_secs(5);

/// What reading a pair gives.
type Read = Result<Arc<CertifiedKey>, CertError>;

/// A listener's certificate and key, swappable while it serves.
#[derive(Debug)]
pub struct CertStore {
    cert_file: PathBuf,
    key_file: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    /// A read of the files is under way on its thread: one at most, so a
    /// read stuck for good holds one thread, however many SIGHUPs follow.
    reading: Arc<AtomicBool>,
}

impl CertStore {
    /// Read and check `cert_file` (PEM chain, leaf first) and `key_file`
    /// (PEM private key). The error names the file at fault: unreadable,
    /// not a regular file, empty, a key of another certificate, an expired
    /// certificate. The files are read on a thread of their own; the
    /// caller waits at most [`READ_LIMIT`] (a start-up error past it).
    pub fn load(
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> Result<Arc<CertStore>, CertError> {
        let (cert_file, key_file) = (cert_file.into(), key_file.into());
        let (tx, rx) = std::sync::mpsc::channel();
        let read = reader(&cert_file, &key_file);
        on_own_thread(&cert_file, move || drop(tx.send(read())))?;
        // No answer in time, or none at all (the thread panicked).
        let key = rx
            .recv_timeout(READ_LIMIT)
            .map_err(|_| stalled(&cert_file, &key_file, READ_LIMIT))??;
        Ok(Arc::new(CertStore {
            cert_file,
            key_file,
            current: RwLock::new(key),
            reading: Arc::default(),
        }))
    }

    /// Read both files again (on a thread of their own, within
    /// [`READ_LIMIT`]); on success new handshakes use the new pair, on
    /// failure or time-out the old one stays and the error says why.
    /// Dropping the future (the runtime shutting down) abandons the read.
    pub async fn reload(&self) -> Result<(), CertError> {
        let read = reader(&self.cert_file, &self.key_file);
        self.reload_with(read, READ_LIMIT).await
    }

    /// [`reload`](Self::reload) with `read` in place of the files.
    async fn reload_with(
        &self,
        read: impl FnOnce() -> Read + Send + 'static,
        limit: Duration,
    ) -> Result<(), CertError> {
        if self.reading.swap(true, Ordering::AcqRel) {
            return Err(CertError::StillReading {
                cert: self.cert_file.clone(),
            });
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reading = self.reading.clone();
        let started = on_own_thread(&self.cert_file, move || {
            let key = read();
            reading.store(false, Ordering::Release);
            let _ = tx.send(key);
        });
        if let Err(e) = started {
            self.reading.store(false, Ordering::Release);
            return Err(e);
        }
        let key = match tokio::time::timeout(limit, rx).await {
            Ok(Ok(read)) => read?,
            Ok(Err(_)) | Err(_) => return Err(stalled(&self.cert_file, &self.key_file, limit)),
        };
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

/// Reading the pair at `cert` and `key`, to run elsewhere.
fn reader(cert: &Path, key: &Path) -> impl FnOnce() -> Read + Send + 'static {
    let (cert, key) = (cert.to_path_buf(), key.to_path_buf());
    move || cert::load(&cert, &key, &provider())
}

/// Run `work` on a thread of its own: a read stuck in the kernel holds
/// that thread only, never a runtime worker (tokio's blocking pool would
/// do, but the runtime waits for its tasks when it shuts down).
fn on_own_thread(cert: &Path, work: impl FnOnce() + Send + 'static) -> Result<(), CertError> {
    std::thread::Builder::new()
        .name("handwire-cert".into())
        .spawn(work)
        .map(drop)
        .map_err(|source| CertError::Read {
            path: cert.to_path_buf(),
            source,
        })
}

/// The error of a read of `cert` and `key` that did not answer in `limit`.
fn stalled(cert: &Path, key: &Path, limit: Duration) -> CertError {
    CertError::Stalled {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        limit,
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
            handshake_failed(remote, &"client sent plain HTTP");
            return None;
        }
        // Anything else: rustls says what is wrong with it.
        Ok(_) => {}
    }
    match acceptor.accept(wrap(tcp)).await {
        Ok(stream) => Some(stream),
        Err(e) => {
            handshake_failed(remote, &e);
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
                    match store.reload().await {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A store serving a fresh self-signed pair written to a temp dir.
    fn store(dir: &Path) -> Arc<CertStore> {
        std::fs::create_dir_all(dir).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (cert_file, key_file) = (dir.join("c.pem"), dir.join("k.pem"));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        CertStore::load(cert_file, key_file).unwrap()
    }

    fn current(store: &CertStore) -> Arc<CertifiedKey> {
        store.current.read().unwrap().clone()
    }

    #[tokio::test]
    async fn a_reload_that_stalls_keeps_the_old_pair_and_starts_no_second_read() {
        let dir = std::env::temp_dir().join(format!("handwire-stall-{}", std::process::id()));
        let store = store(&dir);
        let before = current(&store);
        // A read that answers only when the test lets it (a hung mount).
        let (release, stuck) = std::sync::mpsc::channel::<()>();
        let read = move || {
            let _ = stuck.recv();
            Err(CertError::NoKey { path: "k".into() })
        };
        let err = store.reload_with(read, Duration::from_millis(20)).await;
        assert!(matches!(err, Err(CertError::Stalled { .. })), "{err:?}");
        assert!(Arc::ptr_eq(&current(&store), &before), "the old pair stays");
        // While it is stuck no other read starts (one thread at most).
        let err = store.reload().await;
        assert!(
            matches!(err, Err(CertError::StillReading { .. })),
            "{err:?}"
        );
        // Once it ends, the next reload reads the files again.
        drop(release);
        while store.reading.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
        store.reload().await.unwrap();
        assert!(!Arc::ptr_eq(&current(&store), &before), "a fresh read");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
