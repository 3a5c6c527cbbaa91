//! The server: the accept loop every service in this crate runs on, and
//! the machinery that keeps it safe and fast under load.
//!
//! - this file: the accept loop (HTTP/1.1 + h2c, connection cap, graceful shutdown).
//! - [`budget`]: the one connection budget all listeners of a process share.
//! - [`clocks`]: one connection's header and idle time-outs.
//! - [`beside`]: the clocks polled beside the connection only when they woke.
//! - [`intake`]: a request's head limits, and its body: size, time-out, minimum rate, process budget.
//! - [`admission`]: scarce work (database reads) admitted process-wide, connections holding nothing first.
//! - [`governor`]: what one connection may cost (its handler window, its inflate allowance).
//! - [`tls`]: optional TLS on a listener, certificates reloaded on SIGHUP.
//!
//! One listener speaks HTTP/1.1 and cleartext HTTP/2 (prior knowledge) through
//! hyper-util's auto builder, each connection restricted to the protocol it
//! speaks (its first bytes, `peek`ed, or its TLS ALPN name). What a
//! connection does with a request is decided by a [`Service`]: the
//! Gin-style [`crate::web::app::App`] for the HTTP services, the gRPC
//! dispatcher for the greeter. The loop itself only owns the transport
//! concerns, in the shape of mini-redis' `server.rs` and Go's `net/http`:
//!
//! - a cap on open connections, one [`ConnectionBudget`] per process shared
//!   by all its listeners: each accepted connection waits for a permit
//!   before it is served. At the cap the loop accepts no more (the
//!   kernel's backlog holds the newcomers) and the budget closes the
//!   connection of *any* listener doing least for its client, peers over
//!   their share of the cap first: a place is earned by what gets done,
//!   a newcomer keeps its place for a short grace, and the newcomer waits
//!   while every place is still earned. The permit is taken *after* `accept` because the
//!   budget is shared: a listener waiting in `accept` with a permit in hand
//!   would starve the other listeners of it;
//! - accept errors (`EMFILE`, `ENFILE`: out of descriptors) back off
//!   exponentially, 10 ms up to 1 s, logged once when a burst starts and
//!   once when it ends, never once per try;
//! - the clocks of each connection ([`crate::server::clocks`]): a request head
//!   within `header_read_timeout` of accept, `idle_timeout` between requests,
//!   and HTTP/2 keep-alive PINGs;
//! - graceful shutdown: stop accepting, let in-flight requests finish, but
//!   wait no longer than `shutdown_grace`, then close whatever is left.
//!
//! Reading one connection, in mini-redis' order: `serve` (the accept loop:
//! a place in the budget, then a task per connection), `serve_connection`
//! (open it with `Opening::open`, serve it, close it when a clock runs
//! out), and for each request `Requests::arrive` (its turn among the
//! connection's handlers, then `Pending::call`, the one call into the
//! framework).

pub(crate) mod admission;
pub(crate) mod beside;
pub(crate) mod budget;
pub(crate) mod clocks;
pub(crate) mod governor;
pub(crate) mod intake;
pub mod tls;

pub use governor::{HANDLERS_AT_START, HANDLERS_PER_CONNECTION};

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

pub use self::budget::{
    default_max_connections, raise_open_file_limit, ConnectionBudget, Peer, DESCRIPTOR_RESERVE,
    FALLBACK_MAX_CONNECTIONS,
};
use self::clocks::{Activity, Expiry, InFlight, Tracked, Watched};
pub use crate::contract::{Answer, Caller, Service};
use crate::ops::log;
use crate::ops::metrics::Gauge;
use crate::ops::tracecontext::{self, TraceContext};
use crate::types::{Body, BoxFuture};
use beside::First;
use governor::{Arrival, ConnectionShare, HandlerTurn, DEFAULT_INFLATE_PER_SECOND};
use tls::CertStore;

/// How long a connection whose clock ran out may take to close politely
/// (an HTTP/2 GOAWAY waits for the peer's PING acknowledgement, which a
/// silent peer never sends) before it is dropped.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// First pause after a failed `accept`; doubled per failure up to
/// [`ACCEPT_BACKOFF_MAX`].
pub const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);

/// Longest pause between two `accept` attempts while they fail.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Transport settings of one listener: the clocks, the cap, the protocols.
#[derive(Debug, Clone)]
pub struct Options {
    /// Time for a request head to arrive completely (Go's
    /// `ReadHeaderTimeout`). For the first request the clock starts at
    /// accept, so a client that connects and says nothing is closed too;
    /// for later HTTP/1 requests it starts at their first byte. Default 10 s.
    pub header_read_timeout: Duration,
    /// Time a connection may sit with no request in flight, counted from
    /// the end of the last response (Go's `IdleTimeout`); HTTP/1
    /// keep-alive and HTTP/2 connections alike are closed past it.
    /// Default 60 s.
    pub idle_timeout: Duration,
    /// Send an HTTP/2 PING when the peer has been silent this long (`None`:
    /// never). PINGs find peers that vanished without closing (a pulled
    /// cable, a NAT that forgot the flow) while a request is in flight, when
    /// the idle clock does not run. Default 30 s.
    pub h2_keep_alive_interval: Option<Duration>,
    /// Close an HTTP/2 connection whose PING is not acknowledged within
    /// this time. Default 10 s.
    pub h2_keep_alive_timeout: Duration,
    /// The connections this listener may hold open, shared with every
    /// listener given the same budget; when it is spent, the loop accepts
    /// no more until a reclaimable connection is taken back or one closes
    /// (see `room`). Default: [`ConnectionBudget::process`], one budget
    /// for the whole process.
    pub connections: ConnectionBudget,
    /// How long shutdown waits for in-flight connections before closing
    /// them. Default 10 s.
    pub shutdown_grace: Duration,
    /// Accept HTTP/1.1 connections.
    pub http1: bool,
    /// Accept cleartext HTTP/2 connections (prior knowledge).
    pub http2: bool,
    /// How long a response may wait for the peer to take its next bytes
    /// before the connection is closed (a client that never reads, an h2
    /// window never opened). Default 10 s.
    pub write_timeout: Duration,
    /// Counts the open connections (the `server_connections` gauge of
    /// [`crate::ops::metrics`]); `None`: not counted.
    pub connection_gauge: Option<Arc<Gauge>>,
    /// Bytes one connection may inflate per second (gzip gRPC messages),
    /// after a burst of [`crate::server::governor::INFLATE_BURST`]; past it
    /// its calls wait. Default
    /// [`crate::server::governor::DEFAULT_INFLATE_PER_SECOND`] (16 MiB).
    pub inflate_per_second: usize,
    /// Serve TLS with this certificate (ALPN offers the protocols above);
    /// `None`: cleartext.
    pub tls: Option<Arc<CertStore>>,
    /// How long a TLS handshake may take from accept; past it (or past
    /// `header_read_timeout`, whichever is first) the connection is closed
    /// and its place in the budget returned. Default 10 s.
    pub tls_handshake_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            h2_keep_alive_interval: Some(Duration::from_secs(30)),
            h2_keep_alive_timeout: Duration::from_secs(10),
            connections: ConnectionBudget::process(),
            shutdown_grace: Duration::from_secs(10),
            http1: true,
            http2: true,
            write_timeout: Duration::from_secs(10),
            connection_gauge: None,
            inflate_per_second: DEFAULT_INFLATE_PER_SECOND,
            tls: None,
            tls_handshake_timeout: Duration::from_secs(10),
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

/// Bind a TCP listener on `addr` (`HOST:PORT`) with a listen backlog of
/// [`backlog`]; the error names the address.
pub async fn bind(addr: &str) -> Result<TcpListener, ServerError> {
    listen(addr).await.map_err(|source| ServerError::Bind {
        addr: addr.to_string(),
        source,
    })
}

async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for at in tokio::net::lookup_host(addr).await? {
        let socket = match at {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        // As `TcpListener::bind`: a restarted server may reuse its port
        // while the old connections are in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        match socket.bind(at) {
            Ok(()) => return socket.listen(backlog()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("the address resolves to nothing")))
}

/// The listen backlog: connections the kernel completes and holds for the
/// server before it accepts them. At the connection cap the server stops
/// accepting, so newcomers wait here; tokio's `bind` asks for 128, which a
/// burst of a thousand clients overflows (their SYNs are dropped and
/// retried a second later). Sized for the process' cap (as many newcomers
/// as it holds connections, [`default_max_connections`]), at least 128,
/// and at most what the kernel grants, `net.core.somaxconn` (4,096 by
/// default since Linux 5.4).
pub fn backlog() -> u32 {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(4096u32);
    let cap = u32::try_from(default_max_connections()).unwrap_or(u32::MAX);
    cap.clamp(somaxconn.min(128), somaxconn)
}

/// Run the accept loop on `listener` until `shutdown` completes, then wait up
/// to `opts.shutdown_grace` for in-flight connections to finish and close
/// the rest.
///
/// The loop only accepts: each connection gets a permit of the budget, its
/// clocks and its share, and is handed to its own task
/// ([`serve_connection`]), the split of mini-redis' `Listener::run` and
/// `Handler::run`.
pub async fn serve(
    listener: TcpListener,
    service: Arc<dyn Service>,
    opts: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    governor::limit_arenas();
    let opening = Opening {
        builder: connection_builder(&opts)?,
        both: opts.http1 && opts.http2,
        acceptor: (opts.tls.clone()).map(|certs| tls::acceptor(certs, opts.http1, opts.http2)),
        handshake_timeout: opts.tls_handshake_timeout,
    };
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let Some((stream, remote)) =
            accept(&listener, &mut backoff, &mut shutdown, &mut connections).await
        else {
            break;
        };
        // At the cap this waits, with the new connection in hand and no
        // further accept, for a place ([`room`]).
        let peer = Peer::of(remote.ip());
        let Some(permit) = room(&opts.connections, peer, &mut shutdown).await else {
            break;
        };
        let _ = stream.set_nodelay(true);
        let conn = Connection {
            stream,
            requests: Requests::new(remote, &service, &opts),
            opening: opening.clone(),
            write_timeout: opts.write_timeout,
            stopping: stopping.clone(),
        };
        let open_gauge = opts.connection_gauge.as_ref().map(Gauge::enter);
        let budget = opts.connections.clone();
        // One task per connection; it holds its permit until it ends. Boxed:
        // the connection's future is some 5.6 KB (hyper's connection, the
        // TLS handshake, the clocks), and spawning it unboxed copied it
        // about ten times into the task, ~6,000 instructions a connection.
        let task = async move {
            let _permit: OwnedSemaphorePermit = permit;
            let _open = open_gauge;
            let _released = Released;
            serve_connection(conn).await;
            budget.ended(peer);
        };
        connections.spawn(Box::pin(task));
    }
    drop(listener);
    let _ = stop.send(true);
    drain(connections, opts.shutdown_grace).await;
    Ok(())
}

/// The next connection of `listener`, or `None` once `shutdown` completes.
/// Failures of one would-be connection are retried at once; others (out of
/// descriptors) back off, logged once per burst. Meanwhile connections that
/// ended leave `connections` as they end: a finished task's memory is held
/// until it is joined, and after a flood, with no new client to accept,
/// a thousand of them pinned the heap.
async fn accept<F: Future<Output = ()>>(
    listener: &TcpListener,
    backoff: &mut AcceptBackoff,
    shutdown: &mut std::pin::Pin<&mut F>,
    connections: &mut JoinSet<()>,
) -> Option<(TcpStream, SocketAddr)> {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            _ = shutdown.as_mut() => return None,
        };
        match accepted {
            Ok(pair) => {
                if let Some(line) = backoff.succeeded() {
                    log::message("server", format_args!("{line}"));
                }
                return Some(pair);
            }
            Err(err) if is_per_connection(&err) => continue,
            Err(err) => {
                let (pause, line) = backoff.failed(&err);
                if let Some(line) = line {
                    log::message("server", format_args!("{line}"));
                }
                tokio::select! {
                    _ = tokio::time::sleep(pause) => continue,
                    _ = shutdown.as_mut() => return None,
                }
            }
        }
    }
}

/// How often [`room`] looks again while the cap holds: a connection's place
/// may run out earlier than its queue entry says, and a permit freed by a
/// closed connection may go to another listener waiting on the same budget.
const ROOM_LOOK: Duration = Duration::from_millis(100);

/// A place in `budget` for the connection just accepted from `peer`, or
/// `None` once `shutdown` completes. At the cap the connection doing least
/// for its client, of any listener, is closed to make room
/// ([`ConnectionBudget::reclaim_one`]), and its permit is this one's once
/// it has closed. While every place is still earned (newcomers in their
/// grace, clients getting work done), the loop accepts no more, newcomers
/// wait in the listen backlog, and this looks again when the next place
/// runs out, or after [`ROOM_LOOK`], until a connection ends.
async fn room<F: Future<Output = ()>>(
    budget: &ConnectionBudget,
    peer: Peer,
    shutdown: &mut Pin<&mut F>,
) -> Option<OwnedSemaphorePermit> {
    loop {
        if let Some(permit) = budget.try_acquire() {
            return Some(permit);
        }
        let look = tokio::time::Instant::now() + ROOM_LOOK;
        let look = match budget.reclaim_one(peer) {
            Err(Some(next)) => next.min(look),
            Ok(()) | Err(None) => look,
        };
        tokio::select! {
            permit = budget.acquire() => return permit,
            _ = tokio::time::sleep_until(look) => {}
            _ = shutdown.as_mut() => return None,
        }
    }
}

/// One accepted connection and what its task needs to serve it.
struct Connection {
    stream: TcpStream,
    /// What each of its requests is served with.
    requests: Requests,
    /// How its protocol is chosen and its TLS handshake made.
    opening: Opening,
    write_timeout: Duration,
    /// Becomes `true` when the server shuts down.
    stopping: watch::Receiver<bool>,
}

/// What every request of one connection is served with: the state of the
/// connection the server keeps (its clocks, its share of the budget) and
/// the service the one per-request hook, [`Requests::arrive`], calls.
struct Requests {
    remote: SocketAddr,
    service: Arc<dyn Service>,
    /// Its clocks, registered with the budget.
    activity: Arc<Activity>,
    /// What it may cost the process, carried in every request.
    share: Arc<ConnectionShare>,
    /// Whether the connection is TLS (known once it is open).
    tls: bool,
}

/// How a connection becomes a stream hyper can serve.
#[derive(Clone)]
struct Opening {
    builder: auto::Builder<TokioExecutor>,
    /// Both protocols are served: the connection's is chosen before hyper
    /// sees it (see [`protocol_of`]).
    both: bool,
    /// `Some`: a TLS listener.
    acceptor: Option<TlsAcceptor>,
    handshake_timeout: Duration,
}

/// Serve one connection until it ends, a clock of it runs out, it is
/// evicted, or the server shuts down.
async fn serve_connection(conn: Connection) {
    let Connection {
        stream,
        mut requests,
        opening,
        write_timeout,
        mut stopping,
    } = conn;
    let (activity, remote) = (requests.activity.clone(), requests.remote);
    let Some((stream, builder)) = opening.open(stream, &requests, &mut stopping).await else {
        return;
    };
    requests.tls = stream.is_tls();
    let hyper_svc = hyper::service::service_fn(move |req| requests.arrive(req));
    let conn = builder.serve_connection(TokioIo::new(stream), hyper_svc);
    let mut conn = std::pin::pin!(conn);
    // The clocks and the shutdown are polled only when they woke, not on
    // every read and write of the connection (see `beside`).
    let watch = async {
        tokio::select! {
            why = activity.expired() => Some(why),
            // An error means the server is gone: stop as well.
            _ = stopping.wait_for(|stop| *stop) => None,
        }
    };
    let expired = match beside::first_of(conn.as_mut(), std::pin::pin!(watch)).await {
        // Errors here are the peer's (reset, bad preface, protocol error).
        First::Main(_) => return,
        First::Side(expired) => expired,
    };
    match expired {
        // The peer does not take what it asked for, or its place is
        // needed: close without a goodbye it would not read.
        Some(Expiry::Stalled) => {
            log::message(
                "server",
                format_args!(
                    "closing the connection of {remote}: a response made no progress \
                     for the write time-out ({write_timeout:?})"
                ),
            );
            return;
        }
        Some(Expiry::Evicted) => return,
        Some(Expiry::Quiet) | None => {}
    }
    conn.as_mut().graceful_shutdown();
    if expired.is_some() {
        // Nothing is in flight: a short bound for the goodbye.
        let _ = tokio::time::timeout(CLOSE_GRACE, conn).await;
    } else {
        // In-flight requests finish; the grace period bounds this.
        let _ = conn.await;
    }
}

impl Opening {
    /// The connection's stream, TLS handshake made, and the builder for
    /// the protocol it speaks; `None` if it closed first, a clock of
    /// `requests` ran out or the server is stopping.
    async fn open(
        self,
        stream: TcpStream,
        requests: &Requests,
        stopping: &mut watch::Receiver<bool>,
    ) -> Option<(
        tls::Stream<Watched<TcpStream>>,
        auto::Builder<TokioExecutor>,
    )> {
        let activity = &requests.activity;
        // Which protocol a cleartext connection speaks, decided here rather
        // than by hyper-util's sniffing: see `protocol_of`.
        let mut sniffed_h2 = false;
        if self.both && self.acceptor.is_none() {
            tokio::select! {
                sniffed = speaks_h2(&stream) => sniffed_h2 = sniffed.ok()?,
                _ = activity.expired() => return None,
                _ = stopping.wait_for(|stop| *stop) => return None,
            }
        }
        // The handshake runs here, off the accept loop, bounded by its own
        // time-out and by the connection's clocks (header time-out from
        // accept, reclaimed at the cap): a client that stalls it gives its
        // permit back like any quiet connection.
        let stream = match &self.acceptor {
            None => tls::Stream::Plain(Watched::new(stream, activity.clone())),
            Some(acceptor) => {
                let watched = |tcp| Watched::new(tcp, activity.clone());
                let shake = tls::handshake(acceptor, stream, requests.remote, watched);
                tokio::select! {
                    done = tokio::time::timeout(self.handshake_timeout, shake) => {
                        tls::Stream::Tls(Box::new(done.ok()??))
                    }
                    _ = activity.expired() => return None,
                    _ = stopping.wait_for(|stop| *stop) => return None,
                }
            }
        };
        let h2 = if stream.is_tls() {
            stream.alpn_is_h2()
        } else {
            sniffed_h2
        };
        let builder = if self.both {
            protocol_of(self.builder, h2)
        } else {
            self.builder
        };
        Some((stream, builder))
    }
}

impl Requests {
    /// A connection from `remote` to `service`: its clocks, registered
    /// with the budget of `opts`, and its share of that budget.
    fn new(remote: SocketAddr, service: &Arc<dyn Service>, opts: &Options) -> Requests {
        let activity = Activity::new(
            opts.header_read_timeout,
            opts.idle_timeout,
            opts.write_timeout,
        );
        opts.connections.register(&activity, Peer::of(remote.ip()));
        let share = ConnectionShare::new(
            opts.inflate_per_second,
            opts.connections.bodies().clone(),
            opts.connections.streams().clone(),
            opts.connections.turn_waiters().clone(),
            Some(activity.clone()),
        );
        Requests {
            remote,
            service: service.clone(),
            activity,
            share,
            tls: false,
        }
    }

    /// The per-request hook: what hyper is given for one request of the
    /// connection. The request takes its turn among the connection's
    /// handlers and is handed to the service ([`Pending::call`], the one
    /// call from the server into the framework), now or from its own task.
    fn arrive(&self, req: http::Request<Incoming>) -> Dispatch {
        let tracker = &self.activity;
        let request = tracker.request_started(req.version());
        let grpc = governor::is_grpc(&req);
        let h2 = req.version() == http::Version::HTTP_2;
        // A few handlers of one connection run at once, fewer while its
        // peer leaves their answers untaken; the others wait their turn
        // (see `governor`). A request that could neither run nor wait is
        // refused here, while hyper accepts its stream: its request is
        // dropped now and the task hyper spawns for it holds an answer,
        // not the request and a handler's future.
        let arrival = self.share.arrive(tracker);
        if matches!(arrival, Arrival::Refused) {
            drop(req);
            let answer = refuse(&*self.service, h2, grpc, tracker);
            return Dispatch::Now(Some(
                answer.map(|resp| resp.map(|body| Tracked::new(body, request))),
            ));
        }
        // Every request runs in its trace (W3C traceparent, or a new one).
        let trace = TraceContext::from_headers(req.headers());
        let pending = Pending {
            service: self.service.clone(),
            share: self.share.clone(),
            conn: tracker.clone(),
            remote: self.remote,
            request,
            tls: self.tls,
            trace,
            h2,
            grpc,
        };
        // Most requests have their turn on arrival, and over the budget of
        // bytes waiting for peers a connection whose peer leaves responses
        // untaken gets no more work (see `budget`): a flood of zero-window
        // streams cannot build pages faster than the bounds take them back.
        // With its turn, the service is called now, and a ready answer
        // needs no future at all.
        let turn = match arrival {
            Arrival::Turn(turn) if self.service.may_answer_in_call() && tracker.admits(0) => turn,
            // Its turn first (at once if it has one), then the call, from
            // the request's own task.
            arrival => return Dispatch::Later(Box::pin(called_in_turn(req, arrival, pending))),
        };
        // A panic here would unwind through hyper's connection task, all of
        // an HTTP/2 connection's streams: its stream is reset instead, as a
        // panic in the stream's own task would have it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| pending.call(req))) {
            Err(_) => Dispatch::Now(Some(Err(h2::Error::from(h2::Reason::INTERNAL_ERROR)))),
            Ok(Called::Ready(resp)) => Dispatch::Now(Some(pending.answered(resp, Some(turn)))),
            Ok(Called::Later(work)) => Dispatch::Later(Box::pin(called_later(work, turn, pending))),
        }
    }
}

/// How the governor refuses a request (counted, [`governor::refusing`]):
/// of a connection whose peer leaves answers untaken, on HTTP/2, unless it
/// is a gRPC call, the stream is reset with `REFUSED_STREAM` (RFC 9113
/// §8.7: not processed, safe to retry), since a 503 with a body would wait
/// for the same window that holds the other answers, and hold the stream
/// until the write time-out. Otherwise the service's answer
/// ([`Service::overloaded`]: HTTP/1.1; a gRPC call's trailers-only
/// `RESOURCE_EXHAUSTED`, which needs no window; a peer that reads).
fn refuse(
    service: &dyn Service,
    h2: bool,
    grpc: bool,
    conn: &Activity,
) -> Result<http::Response<Body>, h2::Error> {
    governor::refusing();
    if h2 && !grpc && conn.waiting_bytes() > 0 {
        return Err(h2::Error::from(h2::Reason::REFUSED_STREAM));
    }
    Ok(service.overloaded(grpc))
}

/// What the connection's service gives hyper for one request: an answer
/// decided on arrival, or the boxed work that makes it. The box keeps the
/// task hyper spawns per request small either way, so a request refused
/// on arrival costs a few dozen bytes until hyper polls it; and each kind
/// of work has its own, so that the common one (a call made on arrival)
/// stays in the allocator's small blocks.
// The ready answer is held inline on purpose: boxing it would cost the
// allocation this kind exists to save.
#[allow(clippy::large_enum_variant)]
enum Dispatch {
    /// Decided already (taken by the first poll).
    Now(Option<Answered>),
    /// The rest of a call, or its turn and the call.
    Later(Pin<Box<dyn Future<Output = Answered> + Send>>),
}

/// The response hyper sends, or the stream's reset.
type Answered = Result<http::Response<Tracked>, h2::Error>;

impl Future for Dispatch {
    type Output = Answered;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Answered> {
        match self.get_mut() {
            Dispatch::Now(answer) => Poll::Ready(answer.take().expect("polled after completion")),
            Dispatch::Later(work) => work.as_mut().poll(cx),
        }
    }
}

/// What the service's call gave: the response, or work still to run.
enum Called {
    Ready(http::Response<Body>),
    Later(BoxFuture<'static, http::Response<Body>>),
}

/// What a request carries from its arrival to its answer.
struct Pending {
    service: Arc<dyn Service>,
    share: Arc<ConnectionShare>,
    conn: Arc<Activity>,
    remote: SocketAddr,
    request: InFlight,
    /// Whether the connection is TLS.
    tls: bool,
    trace: TraceContext,
    h2: bool,
    grpc: bool,
}

impl Pending {
    /// The one call from the server into the framework: `req` and what the
    /// service is told of its origin. Work the service says may be polled
    /// now ([`Answer::Now`]) is polled once, here, in the request's trace,
    /// with a waker that does nothing: done, it is the response, with its
    /// `traceparent`, and no task is scheduled or woken; still pending, it
    /// has registered that waker with what it waits for, and
    /// [`run`](Self::run) polls it again with the task's own.
    fn call(&self, req: http::Request<Incoming>) -> Called {
        let caller = Caller {
            remote: self.remote,
            received_at: self.request.received_at().into_std(),
            tls: self.tls,
            trace: Some(self.trace),
            intake: Some(self.share.clone()),
            refused: intake::refused(&req),
        };
        let mut work = match self.service.call(req, caller) {
            Answer::Now(work) => work,
            Answer::Later(work) => return Called::Later(work),
        };
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match tracecontext::enter(Some(self.trace), || work.as_mut().poll(&mut cx)) {
            Poll::Ready(mut resp) => {
                tracecontext::stamp(&mut resp, self.trace);
                Called::Ready(resp)
            }
            Poll::Pending => Called::Later(work),
        }
    }

    /// `resp`, if the connection may hold it: over the budget of bytes
    /// waiting for peers, a response built anyway is refused before it is
    /// held (see `budget`).
    fn held(&self, resp: http::Response<Body>) -> Result<http::Response<Body>, h2::Error> {
        let size = usize::try_from(hyper::body::Body::size_hint(resp.body()).lower())
            .unwrap_or(usize::MAX);
        if self.conn.admits(size) {
            return Ok(resp);
        }
        // What it had built is let go: counted for the trim.
        drop(resp);
        governor::released(size);
        self.refuse()
    }

    fn refuse(&self) -> Result<http::Response<Body>, h2::Error> {
        refuse(&*self.service, self.h2, self.grpc, &self.conn)
    }

    /// `resp` as hyper gets it: [`held`](Self::held), then
    /// [`tracked`](Self::tracked).
    fn answered(self, resp: http::Response<Body>, turn: Option<HandlerTurn>) -> Answered {
        let resp = self.held(resp)?;
        Ok(self.tracked(resp, turn))
    }

    /// The response as hyper gets it, its clocks running. The turn ends
    /// once the response counts as untaken, so that a request waiting for
    /// it sees one or the other, never neither.
    fn tracked(
        self,
        resp: http::Response<Body>,
        turn: Option<HandlerTurn>,
    ) -> http::Response<Tracked> {
        let resp = resp.map(|body| Tracked::new(body, self.request));
        drop(turn);
        resp
    }

    /// `work` run in the request's trace, and in its admission class when
    /// the process has scarce work ([`admission::in_use`]). The trace is
    /// the scope of the call's future only: what a call does before
    /// returning it (route, build its state) logs nothing, and a scope
    /// around that too cost ~150 instructions a request.
    async fn run(
        &self,
        work: BoxFuture<'static, http::Response<Body>>,
        turn: &HandlerTurn,
    ) -> http::Response<Body> {
        let work = tracecontext::serve(self.trace, work);
        if admission::in_use() {
            let conn: Arc<dyn admission::Busy> = self.share.clone();
            admission::scope(turn.class(), Some(conn), work).await
        } else {
            work.await
        }
    }
}

/// A call that waits for its turn (at once if it has one), from the
/// request's own task. One block, as small as the allocator's thread cache
/// takes (under 1,032 bytes): a larger one took `malloc`'s slow path on
/// every gRPC call.
async fn called_in_turn(
    req: http::Request<Incoming>,
    arrival: Arrival,
    pending: Pending,
) -> Answered {
    let turn = match arrival {
        Arrival::Turn(turn) => Some(turn),
        arrival => pending.share.handler_turn(&pending.conn, arrival).await,
    };
    let resp = match turn.as_ref().filter(|_| pending.conn.admits(0)) {
        // Told only once it has its turn: not held across the wait, and
        // not checked if refused.
        Some(turn) => match pending.call(req) {
            Called::Ready(resp) => resp,
            Called::Later(work) => pending.run(work, turn).await,
        },
        None => pending.refuse()?,
    };
    pending.answered(resp, turn)
}

/// The rest of a call made on arrival whose work is still to run.
async fn called_later(
    work: BoxFuture<'static, http::Response<Body>>,
    turn: HandlerTurn,
    pending: Pending,
) -> Answered {
    let resp = pending.run(work, &turn).await;
    pending.answered(resp, Some(turn))
}

/// HTTP/2's connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether a cleartext client opens with HTTP/2's preface, seen with
/// `peek` (the bytes stay in the socket). A client that sends part of the
/// preface and pauses is looked at again every 10 ms, bounded by the
/// connection's clocks like any silent client.
async fn speaks_h2(tcp: &TcpStream) -> std::io::Result<bool> {
    let mut head = [0u8; 24];
    loop {
        let n = tcp.peek(&mut head).await?;
        if n == 0 || head[..n] != H2_PREFACE[..n] {
            // End of stream or anything else: HTTP/1.1 (hyper answers it).
            return Ok(false);
        }
        if n == H2_PREFACE.len() {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `builder` restricted to the protocol the connection speaks. hyper-util's
/// own detection reads the first bytes into a buffer of its own and replays
/// them, so hyper's first read of an HTTP/1.1 connection returned only those
/// 24 bytes and its next one doubled its 8 KiB read buffer to 16 KiB: with
/// 1,000 keep-alive connections, 8 MiB more than a server that speaks
/// HTTP/1.1 only. Choosing first (the preface seen with `peek`, or the
/// protocol TLS negotiated with ALPN) lets hyper read the socket itself.
fn protocol_of(builder: auto::Builder<TokioExecutor>, h2: bool) -> auto::Builder<TokioExecutor> {
    if h2 {
        builder.http2_only()
    } else {
        builder.http1_only()
    }
}

/// The HTTP/1.1 + HTTP/2 connection builder with the protocols `opts`
/// allows and every h2 setting chosen (not inherited).
fn connection_builder(opts: &Options) -> Result<auto::Builder<TokioExecutor>, ServerError> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    match (opts.http1, opts.http2) {
        (true, true) => {}
        (true, false) => builder = builder.http1_only(),
        (false, true) => builder = builder.http2_only(),
        (false, false) => return Err(ServerError::NoProtocol),
    }
    // hyper's own header clock starts at the first byte and restarts after
    // each response, which would cap the idle time at the header time-out;
    // the connection's clocks do both jobs instead, so it is off.
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(None)
        // Bytes read ahead of the request being served (pipelined requests
        // of a client that does not read its answers) stop at 128 KiB per
        // connection, not hyper's ~400 KiB; a head still has room for the
        // 64 KiB path the engine accepts.
        // hyper's own count of header fields is kept (100; past it, 431
        // with no body): any other count makes it build and fill its parse
        // buffers on the heap for every request, 4 % of a keep-alive
        // request's time at 128 fields and 13 % at 1,000. The engine's
        // shaped 431 for the count is HTTP/2's (see `HEADER_FIELDS_MAX`).
        .max_buf_size(PIPELINE_BUFFER);
    // Both PINGs and the idle clock, on purpose: the idle clock closes live
    // connections nobody uses; PINGs find dead peers while a request is in
    // flight, when the idle clock does not run.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(opts.h2_keep_alive_interval)
        .keep_alive_timeout(opts.h2_keep_alive_timeout)
        // The rest of the h2 settings, each chosen rather than inherited:
        // - 100 concurrent streams per connection (Kestrel's default, the
        //   RFC's recommended minimum; hyper's is 200): h2load -m10 and gRPC
        //   clients stay far below it, and it bounds the work one
        //   connection can queue (200 streams of 1,000-user pages on 25
        //   connections peaked at 585 MB, 100 at 346 MB).
        .max_concurrent_streams(100)
        // - At most 64 KiB of a response in h2's send buffer per stream
        //   (hyper's default is 400 KiB): the rest stays in the response
        //   body, where the governor counts it (see `clocks::Tracked`).
        .max_send_buf_size(crate::server::clocks::CHUNK)
        // - Windows of 1 MiB per stream and 2 MiB per connection instead of
        //   the protocol's 64 KiB: a 4 MiB gRPC message arrives without
        //   stalling on WINDOW_UPDATE round trips, while the memory a slow
        //   reader can pin stays bounded by the body limits.
        .initial_stream_window_size(1 << 20)
        .initial_connection_window_size(2 << 20)
        // - Header lists up to 16 KiB (CONTINUATION floods end there).
        .max_header_list_size(intake::H2_HEADER_LIST_MAX)
        // - Rapid reset (CVE-2023-44487): at most 20 streams opened and reset
        //   before the server accepted them, then GOAWAY.
        .max_pending_accept_reset_streams(20);
    Ok(builder)
}

/// After the accept loop: let the open connections finish for at most
/// `grace`, then close whatever is left.
async fn drain(mut connections: JoinSet<()>, grace: Duration) {
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        log::message(
            "server",
            format_args!(
                "shutdown: {} connection(s) still open after {:?}, closing them",
                connections.len(),
                grace
            ),
        );
        connections.shutdown().await;
    }
}

/// Counts a connection's buffers as given back when its task ends, so the
/// governor trims the heap after a flood ([`governor::released`]).
struct Released;

impl Drop for Released {
    fn drop(&mut self) {
        governor::released(governor::CONNECTION_BYTES);
    }
}

/// Most bytes hyper buffers per HTTP/1 connection (request heads and
/// pipelined requests read ahead).
const PIPELINE_BUFFER: usize = 128 * 1024;

/// Errors of one would-be connection (the peer gave up before accept
/// returned): retried at once, they say nothing about the listener.
fn is_per_connection(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionReset | Interrupted
    )
}

/// Exponential back-off for a failing `accept`, logged once per burst: one
/// line when the first failure arrives, one when an accept succeeds again.
#[derive(Debug, Default)]
struct AcceptBackoff {
    /// Failures in the current burst (0: no burst).
    failures: u64,
    /// When the burst started.
    since: Option<Instant>,
}

impl AcceptBackoff {
    /// Record a failure: how long to pause, and the line to log, if any.
    fn failed(&mut self, err: &std::io::Error) -> (Duration, Option<String>) {
        self.failures += 1;
        let shift = u32::try_from(self.failures - 1).unwrap_or(u32::MAX).min(16);
        let pause = ACCEPT_BACKOFF_MIN
            .saturating_mul(1 << shift)
            .min(ACCEPT_BACKOFF_MAX);
        let line = (self.failures == 1).then(|| {
            self.since = Some(Instant::now());
            format!(
                "accept failing: {err}; retrying with back-off from {ACCEPT_BACKOFF_MIN:?} \
                 up to {ACCEPT_BACKOFF_MAX:?} (open connections hold descriptors: \
                 lower the connection budget or raise the open-file limit)"
            )
        });
        (pause, line)
    }

    /// Record a success: the line ending a burst, if one was going on.
    fn succeeded(&mut self) -> Option<String> {
        if self.failures == 0 {
            return None;
        }
        let failures = std::mem::take(&mut self.failures);
        let lasted = self.since.take().map(|t| t.elapsed()).unwrap_or_default();
        Some(format!(
            "accept recovered after {failures} failed attempt(s) over {lasted:.1?}"
        ))
    }
}

/// Completes when the process receives SIGINT or SIGTERM.
///
/// The handlers are installed by this call, not at the first poll: a
/// binary prints its address before its serve loop polls the future, and
/// a SIGTERM sent on reading that line would otherwise find the default
/// action (the process killed, nothing drained). Call it in the runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
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

    #[test]
    fn accept_backoff_doubles_to_a_ceiling_and_logs_once_per_burst() {
        let err = std::io::Error::from_raw_os_error(24); // EMFILE
        let mut b = AcceptBackoff::default();
        assert_eq!(b.succeeded(), None, "no burst, nothing to say");
        let ms = |n| Duration::from_millis(n);
        let want = [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000];
        for (i, pause) in want.into_iter().enumerate() {
            let (got, line) = b.failed(&err);
            assert_eq!(got, ms(pause), "failure {}", i + 1);
            assert_eq!(line.is_some(), i == 0, "failure {}: {line:?}", i + 1);
        }
        let end = b.succeeded().expect("the burst's end is logged");
        assert!(end.starts_with("accept recovered after 10 failed"), "{end}");
        assert_eq!(b.succeeded(), None);
        let (again, line) = b.failed(&err);
        assert_eq!(again, ms(10), "a new burst starts from the bottom");
        assert!(line.is_some_and(|l| l.starts_with("accept failing: ")));
    }

    #[tokio::test]
    async fn a_refused_address_keeps_what_the_os_said_as_source() {
        let err = bind("not an address").await.err().unwrap();
        assert!(err.source().unwrap().is::<std::io::Error>(), "{err}");
    }
}
