//! Dispatch of gRPC calls: the checks every call goes through, the unary and
//! streaming call shapes, and the [`Service`] the accept loop runs.
//!
//! A call is an HTTP/2 POST to `/<package>.<Service>/<Method>` with
//! `content-type: application/grpc`. Before any handler runs, the request is
//! checked in the order grpc-go uses, each failure with its own answer:
//!
//! | problem                                   | answer                              |
//! |-------------------------------------------|-------------------------------------|
//! | method is not POST                        | HTTP 405                            |
//! | content-type not `application/grpc[+proto]` | HTTP 415                          |
//! | unknown service or method                 | `UNIMPLEMENTED`                     |
//! | `grpc-encoding` other than `identity`/`gzip` | `UNIMPLEMENTED` + `grpc-accept-encoding` |
//! | malformed `grpc-timeout`                  | `INTERNAL`                          |
//!
//! Then the request stream is read frame by frame ([`Streaming`]): a message
//! over the size limit is `RESOURCE_EXHAUSTED` from its prefix alone, a
//! compressed message is inflated with the call's `grpc-encoding` (see
//! [`super::compression`]: `INTERNAL` without one, `RESOURCE_EXHAUSTED` when
//! it inflates past the limit), a stream ending mid-frame or a message that
//! does not decode is `INTERNAL`. Replies over 1 KiB are gzip-compressed
//! when the client's `grpc-accept-encoding` lists gzip.
//! A unary call must carry exactly one message: zero or two is a cardinality
//! violation, `UNIMPLEMENTED` per gRPC's status code table.
//!
//! A unary reply larger than `max_message_size` is not sent: the call ends
//! with `RESOURCE_EXHAUSTED` instead (grpc-go's wording, "trying to send
//! message larger than max"), because a client with the usual 4 MiB limit
//! would refuse it anyway, after the whole thing crossed the network.
//!
//! Unary calls run under the smaller of the server's time-out and the client's
//! `grpc-timeout`, and their errors are Trailers-Only responses. Streaming
//! calls answer at once with headers and then feed DATA frames through a
//! channel, so each request can be answered as it arrives; they run under the
//! client's `grpc-timeout` only (the server time-out is a per-request limit).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::header::CONTENT_TYPE;

use super::access_log;
use super::headers::{GRPC_ENCODING, GRPC_TIMEOUT};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame as HttpFrame, Incoming};

use super::body::{http_error, streaming_response, trailers_only, unary_response};
use super::compression::{self, Encoding};
use super::frame::{DEFAULT_MAX_MESSAGE_SIZE, HEADER_LEN};
use super::method::{Failure, UnaryMethod};
use super::status::{Code, Status};
pub use super::stream::{RequestBody, Sink, Streaming};
use super::timeout::{effective_timeout, parse_grpc_timeout};
use crate::ops::deadline;
use crate::ops::metrics::{Kind, Metrics, Operation, UNMATCHED};
use crate::server::governor::{ConnectionShare, Hold};
use crate::server::{Answer, Caller, Service};
use crate::types::{Body, BoxError, BoxFuture};
use crate::web::unwind::{panic_message, CatchUnwind};

/// A streaming method: reads requests from [`Streaming`], writes replies to [`Sink`].
pub type StreamingHandler =
    Arc<dyn Fn(Streaming, Sink) -> BoxFuture<'static, Result<(), Status>> + Send + Sync>;

/// Limits of a gRPC server.
#[derive(Debug, Clone)]
pub struct Options {
    /// Server-side limit for each unary call (`None`: only the client's).
    pub timeout: Option<Duration>,
    /// Largest message accepted, and largest unary reply sent.
    pub max_message_size: usize,
    /// Least average rate of a request message being received, bytes a
    /// second (0: none), after the grace period from its first byte; a
    /// message slower than that fails its call with `DEADLINE_EXCEEDED`.
    pub min_message_rate: (u32, Duration),
    /// Write the `[grpc]` access line of each call (default `true`); the
    /// call is counted in the metrics either way.
    pub access_log: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Some(Duration::from_secs(1)),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            min_message_rate: (
                crate::server::intake::DEFAULT_MIN_BODY_RATE,
                crate::server::intake::DEFAULT_MIN_BODY_RATE_GRACE,
            ),
            access_log: true,
        }
    }
}

#[derive(Clone)]
enum Handler {
    /// A unary method, and the service whose failures it reports (the
    /// domain of their reasons).
    Unary(UnaryMethod, Arc<str>),
    Streaming(StreamingHandler),
}

/// Collects the methods of a [`Server`].
pub struct Builder {
    options: Options,
    services: HashMap<String, HashMap<String, Handler>>,
    metrics: Option<Arc<Metrics>>,
}

impl Builder {
    /// Adds a unary method, `service` fully qualified (`helloworld.v1.Greeter`):
    /// its failures answer with `ErrorInfo` under that domain.
    pub fn unary(&mut self, service: &str, method: &str, handler: UnaryMethod) -> &mut Self {
        self.add(service, method, Handler::Unary(handler, service.into()))
    }

    /// Adds a bidirectional-streaming method.
    pub fn streaming(
        &mut self,
        service: &str,
        method: &str,
        handler: StreamingHandler,
    ) -> &mut Self {
        self.add(service, method, Handler::Streaming(handler))
    }

    fn add(&mut self, service: &str, method: &str, handler: Handler) -> &mut Self {
        self.services
            .entry(service.to_owned())
            .or_default()
            .insert(method.to_owned(), handler);
        self
    }

    /// Count every call in `metrics` (kind `grpc`, one series per method,
    /// made at [`build`](Self::build); unknown methods share [`UNMATCHED`]).
    pub fn metrics(&mut self, metrics: &Arc<Metrics>) -> &mut Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Freezes the method table.
    pub fn build(self) -> Server {
        let mut paths: Vec<(String, Handler)> = self
            .services
            .iter()
            .flat_map(|(service, methods)| {
                methods
                    .iter()
                    .map(move |(m, h)| (format!("/{service}/{m}"), h.clone()))
            })
            .collect();
        // Series made in path order, as the registry lists them.
        paths.sort_by(|a, b| a.0.cmp(&b.0));
        let calls = paths
            .into_iter()
            .map(|(path, handler)| {
                let operation = self
                    .metrics
                    .as_ref()
                    .map(|m| m.operation(Kind::Grpc, &path));
                let known = Known {
                    path: path.as_str().into(),
                    handler,
                    operation,
                };
                (path, known)
            })
            .collect();
        let unmatched = (self.metrics.as_ref()).map(|m| m.operation(Kind::Grpc, UNMATCHED));
        Server {
            inner: Arc::new(Inner {
                options: self.options,
                services: self.services.into_keys().collect(),
                calls,
                unmatched,
            }),
        }
    }
}

/// A gRPC server: a method table plus limits, servable by
/// [`crate::server::serve`] (HTTP/2 only).
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    options: Options,
    /// The services' names, for the words of an unknown call's status.
    services: HashSet<String>,
    /// Every method by its call path (`/package.Service/Method`): one
    /// lookup finds what a call needs.
    calls: HashMap<String, Known>,
    /// The metrics series of calls to unknown paths, when the server has a
    /// registry.
    unmatched: Option<Arc<Operation>>,
}

/// A method as a call finds it by its path.
struct Known {
    /// The path, shared by the access lines of its calls.
    path: Arc<str>,
    handler: Handler,
    /// Its metrics series, when the server has a registry.
    operation: Option<Arc<Operation>>,
}

impl Server {
    /// Starts a method table with these limits.
    pub fn builder(options: Options) -> Builder {
        Builder {
            options,
            services: HashMap::new(),
            metrics: None,
        }
    }

    /// The fully qualified names of the registered services, sorted.
    pub fn service_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inner.services.iter().cloned().collect();
        names.sort();
        names
    }

    /// Answers one call from `caller`, whatever carried it: the gRPC port's
    /// own requests ([`Service::call`]) and gRPC-Web's, translated
    /// ([`super::web`]). The call reads its messages under the connection's
    /// share, runs under the server's time-out and the client's
    /// `grpc-timeout`, and is counted and logged when its status is known.
    pub fn serve(
        &self,
        req: Request<RequestBody>,
        caller: Caller,
    ) -> BoxFuture<'static, Response<Body>> {
        let Caller {
            remote,
            received_at: start,
            intake,
            ..
        } = caller;
        let share = intake.and_then(|i| i.connection().downcast::<ConnectionShare>().ok());
        let found = self.inner.lookup(req.uri().path());
        let (path, operation): (Arc<str>, _) = match &found {
            Ok(known) => (known.path.clone(), known.operation.clone()),
            Err(_) => (req.uri().path().into(), self.inner.unmatched.clone()),
        };
        let found = found.map(|known| known.handler.clone());
        // The answer's own box, under a kilobyte for a unary call (glibc's
        // thread cache serves blocks up to 1,032 bytes; a larger one takes
        // the slow path of `malloc` and `free`, and a free of one consolidates
        // the fast bins): inline, its state would be copied into this future.
        let answer = answer(&self.inner, req, share, found, start);
        let response = crate::ops::peer::scope(remote.ip(), answer);
        let log = self.inner.options.access_log;
        Box::pin(
            async move { access_log::wrap(response.await, path, remote, start, operation, log) },
        )
    }
}

/// Answers one call to the method `found` for its path (looked up once, by
/// the caller), which arrived at `received_at`; what reads its messages
/// counts them in `share`. The header
/// checks run now, so a refused call's future is its answer alone, and a
/// unary call's is [`call_unary`]'s: the request's head is not part of it.
fn answer(
    inner: &Inner,
    req: Request<RequestBody>,
    share: Option<Arc<ConnectionShare>>,
    found: Result<Handler, Status>,
    received_at: Instant,
) -> BoxFuture<'static, Response<Body>> {
    let call = match inner.route(&req, found) {
        Err(response) => return Box::pin(std::future::ready(response)),
        Ok(call) => call,
    };
    let max = inner.options.max_message_size;
    let streams = share.as_ref().map(|s| s.streams().clone());
    let (rate, grace) = inner.options.min_message_rate;
    let streaming = Streaming::new(req.into_body(), max)
        .with_encoding(call.encoding)
        .with_share(share)
        .with_min_rate(rate, grace);
    match call.handler {
        Handler::Unary(h, service) => {
            let deadline = effective_timeout(inner.options.timeout, call.client_timeout);
            let unary = Unary {
                method: h,
                service,
                max_message_size: max,
                gzip_replies: call.gzip_replies,
            };
            let streaming = streaming.counted();
            Box::pin(call_unary(unary, streaming, deadline, received_at))
        }
        Handler::Streaming(h) => {
            // Long-lived streams are counted for the process: past the
            // cap, RESOURCE_EXHAUSTED.
            let slot = match streams.map(|s| s.hold(1)) {
                Some(None) => {
                    return Box::pin(std::future::ready(trailers_only(&too_many_streams())))
                }
                Some(slot) => slot,
                None => None,
            };
            let answer = call_streaming(h, streaming, call.client_timeout, call.gzip_replies, slot);
            Box::pin(std::future::ready(answer))
        }
    }
}

impl Service for Server {
    /// Always [`Answer::Later`]: a call reads its request's messages. The
    /// server runs the future in the call's trace.
    fn call(&self, req: Request<Incoming>, caller: Caller) -> Answer {
        let req = req.map(|body| body.map_err(BoxError::from).boxed_unsync());
        Answer::Later(self.serve(req, caller))
    }

    fn may_answer_in_call(&self) -> bool {
        false
    }
}

/// What the header checks found out about one call.
struct Call {
    handler: Handler,
    client_timeout: Option<Duration>,
    /// The request's `grpc-encoding` (`None`: absent).
    encoding: Option<Encoding>,
    /// The client takes gzip replies.
    gzip_replies: bool,
}

impl Inner {
    /// The header checks; on success what the call to the method `found`
    /// for its path needs.
    #[allow(clippy::result_large_err)]
    fn route(
        &self,
        req: &Request<RequestBody>,
        found: Result<Handler, Status>,
    ) -> Result<Call, Response<Body>> {
        if req.method() != Method::POST {
            let mut response = http_error(
                StatusCode::METHOD_NOT_ALLOWED,
                &Status::internal(format!("gRPC requires POST, got {}", req.method())),
            );
            response
                .headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
            return Err(response);
        }
        let content_type = req.headers().get(CONTENT_TYPE);
        if !content_type.is_some_and(|v| is_grpc_content_type(v.as_bytes())) {
            let shown = content_type.map(|v| String::from_utf8_lossy(v.as_bytes()));
            return Err(http_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &Status::internal(format!(
                    "invalid gRPC request content-type {:?} (expected application/grpc or application/grpc+proto)",
                    shown.unwrap_or_default()
                )),
            ));
        }
        let handler = found.map_err(|s| trailers_only(&s))?;
        // The answer carries grpc-accept-encoding, as every response does.
        let encoding =
            compression::request_encoding(req.headers()).map_err(|s| trailers_only(&s))?;
        let client_timeout = match req.headers().get(&GRPC_TIMEOUT) {
            None => None,
            Some(v) => Some(
                parse_grpc_timeout(v.as_bytes())
                    .map_err(|e| trailers_only(&Status::internal(e.to_string())))?,
            ),
        };
        Ok(Call {
            handler,
            client_timeout,
            encoding,
            gzip_replies: compression::accepts_gzip(req.headers()),
        })
    }

    /// The method a call path names, or why it names none.
    fn lookup(&self, path: &str) -> Result<&Known, Status> {
        self.calls.get(path).ok_or_else(|| self.unknown(path))
    }

    /// Why `path` names no method: malformed, an unknown service, or an
    /// unknown method of a known one.
    fn unknown(&self, path: &str) -> Status {
        let parts = path
            .strip_prefix('/')
            .and_then(|p| p.split_once('/'))
            .filter(|(s, m)| !s.is_empty() && !m.is_empty() && !m.contains('/'));
        let Some((service, method)) = parts else {
            return Status::unimplemented(format!(
                "malformed method name {path:?} (expected /package.Service/Method)"
            ));
        };
        if !self.services.contains(service) {
            return Status::unimplemented(format!("unknown service {service}"));
        }
        Status::unimplemented(format!("unknown method {method} for service {service}"))
    }
}

/// `application/grpc`, `application/grpc+proto`, optionally with
/// parameters; any case (compared in place: no copy per call).
fn is_grpc_content_type(value: &[u8]) -> bool {
    let media = value.split(|&b| b == b';').next().unwrap_or_default();
    let media = media.trim_ascii();
    media.eq_ignore_ascii_case(b"application/grpc")
        || media.eq_ignore_ascii_case(b"application/grpc+proto")
}

/// What a unary call runs and how it answers.
struct Unary {
    method: UnaryMethod,
    /// The domain of the method's failure reasons.
    service: Arc<str>,
    max_message_size: usize,
    gzip_replies: bool,
}

fn call_unary(
    unary: Unary,
    mut requests: Streaming,
    deadline: Option<Duration>,
    received_at: Instant,
) -> impl Future<Output = Response<Body>> + Send {
    // The deadline counts from the call's arrival (the clock reading the
    // connection took for it), so a grpc-timeout that has already run out
    // (`0n`, `1n`) fails before the handler runs: checked once, after the
    // request message and before the handler.
    let due = deadline.and_then(|d| Some((received_at.checked_add(d)?, d)));
    async move {
        let Unary {
            method,
            service,
            max_message_size,
            gzip_replies,
        } = &unary;
        // The call borrows what this future holds and is pinned here, then
        // lent to the deadline: its state is held once.
        let call = std::pin::pin!(async {
            let message = requests.message().await?.ok_or_else(|| {
                Status::unimplemented(
                    "unary call carried no request message (expected exactly one)",
                )
            })?;
            if requests.message().await?.is_some() {
                return Err(Status::unimplemented(
                    "unary call carried more than one request message (expected exactly one)",
                ));
            }
            if let Some((at, d)) = due {
                if Instant::now() >= at {
                    return Err(deadline_exceeded(d));
                }
            }
            // The handler runs in this task: a panic becomes INTERNAL instead of
            // taking the connection down, and the deadline drops it in place.
            let reply = isolated(method(message))
                .await
                .map_err(|f: Failure| f.into_status(service))?;
            // The handler's reply is already framed: the limit is on the message.
            let size = reply.len().saturating_sub(HEADER_LEN);
            let max_message_size = *max_message_size;
            if size > max_message_size {
                return Err(Status::new(
                    Code::ResourceExhausted,
                    format!(
                        "trying to send message larger than max ({size} vs. {max_message_size})"
                    ),
                ));
            }
            Ok(reply)
        });
        // No check before the call: it reads the message and checks the
        // deadline before the handler, which is the check that matters.
        let outcome = match due {
            None => call.await,
            Some((at, d)) => deadline::run(at, call)
                .await
                .unwrap_or_else(|_| Err(deadline_exceeded(d))),
        };
        match outcome {
            Ok(framed) => {
                let framed = compression::maybe_compress(framed, *gzip_replies);
                let compressed = framed.first() == Some(&1);
                let mut response = unary_response(framed);
                if compressed {
                    response
                        .headers_mut()
                        .insert(&GRPC_ENCODING, HeaderValue::from_static("gzip"));
                }
                response
            }
            Err(status) => trailers_only(&status),
        }
    }
}

fn deadline_exceeded(d: Duration) -> Status {
    Status::new(
        Code::DeadlineExceeded,
        format!("deadline exceeded after {d:?}"),
    )
}

/// Await a handler's future, turning a panic into INTERNAL. The crate's one
/// panic isolation ([`CatchUnwind`]), as the HTTP recovery middleware uses.
async fn isolated<T, E: From<Status>>(fut: BoxFuture<'static, Result<T, E>>) -> Result<T, E> {
    match CatchUnwind(fut).await {
        Ok(result) => result,
        Err(payload) => Err(E::from(Status::internal(format!(
            "handler panicked: {}",
            panic_message(payload.as_ref())
        )))),
    }
}

/// The call, or DEADLINE_EXCEEDED once `due` (instant, and the timeout it
/// came from) has passed; an already-passed deadline fails without polling
/// the call. A write of the call already inside its committing transaction
/// at the deadline is answered by its commit instead ([`deadline::run`]).
/// The call is pinned by the caller and lent, so its future is held once.
async fn within<T, F: Future<Output = Result<T, Status>>>(
    due: Option<(Instant, Duration)>,
    call: Pin<&mut F>,
) -> Result<T, Status> {
    match due {
        None => call.await,
        Some((at, d)) if Instant::now() >= at => Err(deadline_exceeded(d)),
        Some((at, d)) => deadline::run(at, call)
            .await
            .unwrap_or_else(|_| Err(deadline_exceeded(d))),
    }
}

/// The answer to a streaming call past the process' cap on long-lived
/// streams.
fn too_many_streams() -> Status {
    Status::new(
        Code::ResourceExhausted,
        "server busy: too many long-lived streams open, try again shortly",
    )
}

/// Starts a streaming call; `slot` (its place among the process'
/// long-lived streams) is held until the handler ends.
fn call_streaming(
    handler: StreamingHandler,
    requests: Streaming,
    deadline: Option<Duration>,
    gzip: bool,
    slot: Option<Hold>,
) -> Response<Body> {
    let (tx, mut response) = streaming_response(8);
    if gzip {
        // Said up front (the headers leave first); each reply over 1 KiB is
        // then compressed, smaller ones go with flag 0.
        response
            .headers_mut()
            .insert(&GRPC_ENCODING, HeaderValue::from_static("gzip"));
    }
    let sink = Sink::new(tx.clone(), gzip);
    let due = deadline.and_then(|d| Some((Instant::now().checked_add(d)?, d)));
    // The handler's task keeps the call's trace.
    let trace = crate::ops::tracecontext::current();
    tokio::spawn(crate::ops::tracecontext::scope_opt(trace, async move {
        let _slot = slot;
        // A stream is driven by its own task (the response body is read
        // while the handler still runs); a panic ends the call with
        // INTERNAL trailers instead of a stream without a status.
        // Started at its first poll, so a deadline already past never
        // starts it.
        let call = std::pin::pin!(async move { isolated(handler(requests, sink)).await });
        let result = within(due, call).await;
        let mut trailers = HeaderMap::new();
        result
            .err()
            .unwrap_or_else(Status::ok)
            .write_to(&mut trailers);
        // If the client is gone there is nobody to tell.
        let _ = tx.send(HttpFrame::trailers(trailers)).await;
    }));
    response
}

#[cfg(test)]
mod tests {
    use super::is_grpc_content_type;

    #[test]
    fn grpc_content_types_are_recognised_in_any_case_with_parameters() {
        for yes in [
            "application/grpc",
            "application/grpc+proto",
            "Application/GRPC",
            "application/grpc; charset=utf-8",
            " application/grpc+proto ;x=y",
        ] {
            assert!(is_grpc_content_type(yes.as_bytes()), "{yes}");
        }
        for no in [
            "",
            "application/grpc+json",
            "application/grpcx",
            "application/json",
            "application/grpc-web",
            "text/plain; application/grpc",
        ] {
            assert!(!is_grpc_content_type(no.as_bytes()), "{no}");
        }
    }
}
