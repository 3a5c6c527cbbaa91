//! Where the server and the framework meet: the one call the server makes
//! for each request, and what it hands over with it.
//!
//! The server ([`crate::server`]) accepts connections and reads request
//! heads; the framework ([`crate::web`]) routes a request and runs its
//! chain. Neither imports the other: both import this file. The server
//! calls [`Service::call`] with the request and a [`Caller`]: the peer's
//! address, when the head arrived, whether the connection is TLS, the
//! request's trace, and the connection's [`Intake`], which reads a body
//! under the limits and data rates the server enforces. The service gives
//! back an [`Answer`].
//!
//! The binaries and services put the two together: they build an
//! [`crate::web::App`] (a [`Service`]) and hand it to
//! [`crate::server::serve`].

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use hyper::body::Incoming;

use crate::ops::tracecontext::TraceContext;
use crate::types::{Body, BoxError, BoxFuture};

/// Anything the server can call: one request in, one response out.
pub trait Service: Send + Sync + 'static {
    /// Answer one request from `caller`: now, or through a future.
    fn call(&self, req: http::Request<Incoming>, caller: Caller) -> Answer;

    /// Whether [`call`](Self::call) may answer [`Answer::Now`]: the
    /// server then calls it on arrival, in hyper's connection task. A
    /// service that always answers later (gRPC: a call reads its
    /// messages) says `false` and is called from its request's own task:
    /// a unary call over HTTP/2 counted about 850 instructions more when
    /// called on arrival. Default `true`.
    fn may_answer_in_call(&self) -> bool {
        true
    }

    /// The answer to a request the server refuses because the process is
    /// over its budget of bytes waiting for peers (`grpc`: the request is
    /// a gRPC call). Default [`overloaded`].
    fn overloaded(&self, grpc: bool) -> http::Response<Body> {
        overloaded(grpc)
    }
}

/// What a [`Service`] gives for one request: the work that makes the
/// response, and whether the server may poll it once during the call.
pub enum Answer {
    /// Work the server polls once on arrival, in the request's trace, with
    /// a waker that does nothing: work that never waits (most `GET`s) is
    /// then answered with no task to schedule or wake. Work still pending
    /// has registered that waker with what it waits for, and the server
    /// polls it again, from its own task, with a waker that counts.
    Now(BoxFuture<'static, http::Response<Body>>),
    /// Work run from the request's own task from its first poll (a body to
    /// read first, a gRPC call).
    Later(BoxFuture<'static, http::Response<Body>>),
}

impl Answer {
    /// The work, whichever it is (for callers that await every answer
    /// alike, such as tests).
    pub fn into_future(self) -> BoxFuture<'static, http::Response<Body>> {
        match self {
            Answer::Now(work) | Answer::Later(work) => work,
        }
    }
}

/// Where a request comes from, as the server knows it.
#[derive(Clone)]
pub struct Caller {
    /// The peer address of the connection, for logging and for
    /// per-client limits.
    pub remote: SocketAddr,
    /// When the request's head arrived: the start of its latency, read
    /// once by the connection's clocks.
    pub received_at: Instant,
    /// Whether the connection is TLS (for `Secure` cookies and `https://`
    /// links).
    pub tls: bool,
    /// The request's trace (`None` in tests). The server polls the
    /// service's work in it ([`crate::ops::tracecontext`]).
    pub trace: Option<TraceContext>,
    /// How the connection reads a request body (`None`: no server, as in
    /// tests; the service then reads the body under its size limit only).
    pub intake: Option<Arc<dyn Intake>>,
    /// Why the server refuses the request's head, if it does: the service
    /// answers it in its own error shape.
    pub refused: Option<Box<Refused>>,
}

/// A request head past the server's limits: 414 for a target over
/// [`URI_MAX`], 431 past [`HEADER_FIELDS_MAX`] or [`HEADER_BYTES_MAX`].
#[derive(Debug, Clone)]
pub struct Refused {
    /// 414 or 431.
    pub status: StatusCode,
    /// The reason in the style of `URI_TOO_LONG`.
    pub reason: &'static str,
    /// What was too large, and the limit.
    pub message: String,
}

/// Longest request target (path and query) a request may carry; longer is
/// 414 in the service's error shape. 8 KiB, as Kestrel's request line and
/// nginx's header buffers; hyper itself answers 414 (empty) only past
/// 64 KiB, so the server refuses everything between.
pub const URI_MAX: usize = 8 << 10;

/// Most header fields a request may carry; more is 431 in the service's
/// error shape. On HTTP/1 hyper's parser stops at the same count and
/// answers 431 itself, with no body (parsing more costs every request:
/// see the server's builder); an HTTP/2 head has no such count in hyper,
/// so there it is this server that refuses a header flood.
pub const HEADER_FIELDS_MAX: usize = 100;

/// Most bytes of header names and values a request may carry; more is 431.
/// Below hyper's 128 KiB read buffer, so the server refuses a head between
/// the two; past the buffer, hyper answers (with no body).
pub const HEADER_BYTES_MAX: usize = 64 << 10;

impl From<SocketAddr> for Caller {
    /// A plain request from `remote` arriving now, with no server behind
    /// it.
    fn from(remote: SocketAddr) -> Caller {
        Caller {
            remote,
            received_at: Instant::now(),
            tls: false,
            trace: None,
            intake: None,
            refused: None,
        }
    }
}

/// What the server lends a request for reading its body: the data rates
/// and the process' budget of bytes being received are the server's to
/// enforce, the bounds are the service's to choose.
pub trait Intake: Send + Sync + 'static {
    /// Read `body` whole under `bounds`. The bytes returned stay counted
    /// against the process' budget until the last clone is dropped.
    fn read(&self, body: Body, bounds: Bounds) -> BoxFuture<'static, Result<Bytes, Refusal>>;

    /// The server's own view of the connection, for a service written on
    /// the server's side (the gRPC server paces and counts its streams with
    /// it): downcast it to the type the server documents.
    fn connection(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// Default minimum average data rate of a request body, bytes a second
/// (Kestrel's `MinRequestBodyDataRate`).
pub const DEFAULT_MIN_BODY_RATE: u32 = 240;

/// Default time a body may arrive at any rate before the minimum applies.
pub const DEFAULT_MIN_BODY_RATE_GRACE: Duration = Duration::from_secs(5);

/// The bounds a body is read under.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Most bytes.
    pub bytes: usize,
    /// Most time for the whole body.
    pub time: Duration,
    /// Least average rate after `grace`, bytes a second (0: none).
    pub min_rate: u32,
    /// Time before the rate is checked.
    pub grace: Duration,
}

/// Why a body was not read.
#[derive(Debug)]
pub enum Refusal {
    /// Over [`Bounds::bytes`].
    TooLarge,
    /// Not complete within [`Bounds::time`].
    TimedOut,
    /// Arriving slower than [`Bounds::min_rate`] after the grace period.
    TooSlow {
        /// Bytes received.
        received: usize,
        /// Since the body started.
        after: Duration,
    },
    /// The process' budget of request bytes being received is spent.
    Busy,
    /// The body failed (the client reset the stream, bad chunking).
    Failed(BoxError),
}

/// What a request refused by the budget of bytes waiting for peers is
/// told.
pub const OVERLOADED: &str =
    "server busy: responses wait for clients that do not read them, try again shortly";

/// The answer to a request the server refuses for the budget of bytes
/// waiting for peers: for a gRPC call (`content-type: application/grpc…`)
/// a trailers-only `RESOURCE_EXHAUSTED`, else 503 with `{"error": …}` and
/// `Retry-After: 1`.
pub fn overloaded(grpc: bool) -> http::Response<Body> {
    let mut resp = http::Response::new(crate::types::empty());
    let headers = resp.headers_mut();
    if grpc {
        headers.insert("content-type", HeaderValue::from_static("application/grpc"));
        headers.insert("grpc-status", HeaderValue::from_static("8"));
        headers.insert("grpc-message", HeaderValue::from_static(OVERLOADED));
        return resp;
    }
    let text = serde_json::json!({ "error": OVERLOADED }).to_string();
    *resp.body_mut() = crate::types::full(text);
    *resp.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    let headers = resp.headers_mut();
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    headers.insert("retry-after", HeaderValue::from_static("1"));
    resp
}
