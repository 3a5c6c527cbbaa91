//! A frozen engine serving requests: [`App`], made by
//! [`Engine::build`](crate::web::engine::Engine::build).
//!
//! Dispatch asks the matcher, reads the body (bounded by the body limit, 413
//! past it, and by the body time-out, 408 past it, with `Connection: close`)
//! and runs one of five chains through [`Context::next`]: the route's, a
//! trailing-slash redirect, 405 (with `Allow`), 404, or the early answer
//! (414 for a request target over 8 KiB, 431 for a head with too many or
//! too large header fields, 413, 408, 400
//! for a body that could not be read). All but the route's are the global
//! middleware plus one handler of this file. The early answers are shaped
//! by the engine's [`EdgeAnswer`], so a service whose errors are Kratos
//! JSON answers these in Kratos JSON too.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::contract::{self, Answer, Bounds, Caller, Intake, Refusal, Service};
use crate::ops::metrics::{Operation, OPERATION_KEY};
use crate::types::{self, Body, BoxError, BoxFuture};
use crate::web::chain::{named, Context, Handler, PathParams, ResponseDraft, APPLICATION_JSON};
use crate::web::router::{self, Lookup, Miss, Router};
use crate::web::study::Study;

/// Builds the answer to a body that did not arrive within the body
/// time-out (given as the argument). The engine adds `Connection: close`.
pub type BodyTimeoutAnswer = fn(Duration) -> Response<Body>;

/// Builds the answer the engine gives itself, before any chain (431, 413,
/// 400 for a body that could not be read): status, a reason in the style
/// of `PAYLOAD_TOO_LARGE`, and the message. The default, `edge_json`,
/// writes `{"error": message}`.
pub type EdgeAnswer = fn(StatusCode, &str, &str) -> Response<Body>;

/// Context key under which the trailing-slash redirect target is stored.
const TSR_LOCATION: &str = "handwire.tsr_location";

/// What the router finds for a path: the chain and the route's parameter
/// names (so a request's parameters need not copy them).
pub(crate) struct Route {
    pub(crate) chain: Arc<[Handler]>,
    /// Position in the route table (the index of its metrics series).
    pub(crate) id: usize,
}

/// A frozen engine, ready to serve.
pub struct App {
    pub(crate) router: Router<Route>,
    /// Each route's metrics series, by route id (empty: no metrics).
    pub(crate) route_ops: Box<[Arc<Operation>]>,
    /// The series of the requests no route matched (`None`: no metrics).
    pub(crate) unmatched_op: Option<Arc<Operation>>,
    /// The chain of the answers given before the route's (413, 408, 400).
    pub(crate) early: Arc<[Handler]>,
    pub(crate) not_found: Arc<[Handler]>,
    pub(crate) method_not_allowed: Arc<[Handler]>,
    pub(crate) redirect: Arc<[Handler]>,
    /// How a request body is read, and the answers past its bounds.
    pub(crate) reading: ReadLimits,
    /// Where each request's walk goes; `None`: no walk is traced.
    pub(crate) trace: Option<Arc<Study>>,
    /// How the path is rewritten before matching; `None`: matched as sent.
    pub(crate) paths: Option<PathRules>,
    pub(crate) misses: MissRules,
}

/// The engine's switches on the path it matches (Gin's `UseRawPath`,
/// `UseEscapedPath`, `RemoveExtraSlash`), when it is not the path as sent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathRules {
    /// Match the percent-decoded path: `%2F` then separates segments.
    pub(crate) decoded: bool,
    pub(crate) remove_extra_slash: bool,
}

impl PathRules {
    fn matching(self, path: &str) -> Cow<'_, str> {
        let path = match self.decoded {
            true => decoded(path),
            false => Cow::Borrowed(path),
        };
        match self.remove_extra_slash {
            true => Cow::Owned(router::clean_path(&path)),
            false => path,
        }
    }
}

/// `path` percent-decoded, or as sent if its escapes do not decode to
/// UTF-8 text (`%FF`): a path the router cannot hold decoded, which keeps
/// the bytes as the client sent them rather than replace them.
fn decoded(path: &str) -> Cow<'_, str> {
    match crate::web::urlenc::unescape(path.as_bytes(), false) {
        Cow::Owned(bytes) => String::from_utf8(bytes).map_or(Cow::Borrowed(path), Cow::Owned),
        Cow::Borrowed(_) => Cow::Borrowed(path),
    }
}

/// The engine's switches on a request no route matched (Gin's
/// `RedirectTrailingSlash`, `RedirectFixedPath`, `HandleMethodNotAllowed`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MissRules {
    pub(crate) redirect_trailing_slash: bool,
    pub(crate) redirect_fixed_path: bool,
    pub(crate) handle_method_not_allowed: bool,
}

impl Service for App {
    fn call(&self, req: Request<Incoming>, caller: Caller) -> Answer {
        self.answer(req, caller)
    }

    /// 503 in the service's error shape; gRPC-Web calls get the gRPC answer.
    fn overloaded(&self, grpc: bool) -> Response<Body> {
        if grpc {
            return contract::overloaded(true);
        }
        let mut resp = (self.reading.on_error)(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            contract::OVERLOADED,
        );
        resp.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        resp
    }
}

impl App {
    /// Answer one request whose body is any [`hyper::body::Body`] (`http_body::Body`): what the
    /// server calls with hyper's `Incoming`, and what tests call with a
    /// `Full` or `Empty` body, no socket needed.
    ///
    /// Three steps: [`choose`](Self::choose) the chain (now, while `&self`
    /// is at hand), then in the returned future [`read_body`] and run the
    /// chain ([`run`]). A body that is too large, too slow or broken gets
    /// its answer through the global middleware ([`answer_early`]), so the
    /// logger and recovery see it as they see every other answer.
    ///
    /// `from` is the [`Caller`] the server passes (the arrival its clocks
    /// read, the connection's share), or only the remote address, as tests
    /// give it: the request then arrives now and its body is not counted.
    pub fn handle<B>(
        &self,
        req: Request<B>,
        from: impl Into<Caller>,
    ) -> BoxFuture<'static, Response<Body>>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        self.answer(req, from).into_future()
    }

    /// [`handle`](Self::handle), saying when the work may be polled: a
    /// request with no body to read is [`Answer::Now`] (its chain can run
    /// at once), one with a body to read first [`Answer::Later`].
    pub fn answer<B>(&self, req: Request<B>, from: impl Into<Caller>) -> Answer
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let caller = from.into();
        let (parts, body) = req.into_parts();
        let mut chosen = self.choose(&parts);
        let operation = chosen.operation.take();
        if caller.refused.is_some() || !body.is_end_stream() {
            return self.answer_after_body(parts, boxed(body), caller, chosen, operation);
        }
        // Most requests have no body to read (a GET): the server may poll
        // the chain once in its call, and a chain that never waits is done.
        let c = chosen.context(parts, Bytes::new(), caller);
        Answer::Now(Box::pin(run(c, self.trace.clone(), operation)))
    }

    /// [`answer`](Self::answer) for a request with a body to read first,
    /// or a head the server refused (414, 431): the body is read through the
    /// server's [`Intake`] under this app's bounds, and a body that is too
    /// large, too slow or broken gets its answer through the global
    /// middleware ([`answer_early`]).
    fn answer_after_body(
        &self,
        parts: http::request::Parts,
        body: Body,
        mut caller: Caller,
        chosen: Chosen,
        operation: Option<Arc<Operation>>,
    ) -> Answer {
        let read = self.reading;
        let (early, trace) = (self.early.clone(), self.trace.clone());
        Answer::Later(Box::pin(async move {
            let read = match caller.refused.take() {
                Some(no) => Err((read.on_error)(no.status, no.reason, &no.message)),
                None => read_body(&parts, body, read, caller.intake.as_deref()).await,
            };
            match read {
                Ok(body) => {
                    let c = chosen.context(parts, body, caller);
                    run(c, trace, operation).await
                }
                Err(answer) => {
                    let c = Context::arriving(parts, Bytes::new(), caller, Vec::new(), early);
                    answer_early(c, answer, trace, operation).await
                }
            }
        }))
    }

    /// The chain for this request, as the router decides: the route's, the
    /// trailing-slash redirect, 405 (with the methods to `Allow`) or 404.
    fn choose(&self, parts: &http::request::Parts) -> Chosen {
        let path = parts.uri.path();
        let path = self.paths.map_or(Cow::from(path), |r| r.matching(path));
        match self.router.lookup(&parts.method, &path) {
            Lookup::Found(value, params) => Chosen {
                chain: value.chain.clone(),
                params: params.into_owned(),
                miss: None,
                operation: self.route_ops.get(value.id).cloned(),
            },
            Lookup::Miss(miss) => self.unmatched(self.unrouted(parts, &path, miss)),
        }
    }

    /// Gin's order for a request no route matched: the trailing-slash
    /// redirect, the fixed path's redirect, 405, 404, as the switches allow.
    /// `path` is the one the router matched. Neither redirect goes where a
    /// browser would read another host ([`router::is_local`]); the
    /// redirect's location is [`location`](Self::location).
    fn unrouted(&self, parts: &http::request::Parts, path: &str, miss: Miss) -> Miss {
        let (method, rules) = (&parts.method, self.misses);
        let mut miss = match miss {
            Miss::Redirect { .. } if !rules.redirect_trailing_slash => {
                Miss::decide(path, |_| false, || self.router.allowed(method, path))
            }
            miss => miss,
        };
        let fixable = *method != Method::CONNECT && path != "/";
        if rules.redirect_fixed_path && fixable && !matches!(miss, Miss::Redirect { .. }) {
            let fixed = self.router.fixed_path(method, path);
            if let Some(location) = fixed.filter(|fixed| router::is_local(fixed)) {
                miss = Miss::Redirect { location };
            }
        }
        match miss {
            Miss::MethodNotAllowed { .. } if !rules.handle_method_not_allowed => Miss::NotFound,
            Miss::Redirect { location } => Miss::Redirect {
                location: self.location(parts.uri.path(), location),
            },
            miss => miss,
        }
    }

    /// A redirect's `Location` for `target`, a path in the form the router
    /// matched (the request's `raw` path as sent, or decoded, cleaned
    /// under `remove_extra_slash`). A decoded path is percent-encoded again
    /// as Go's `URL.EscapedPath` does, so that `/a%3Fb/` goes to `/a%3Fb`,
    /// not to `/a?b`; a path as sent already is a URL path.
    fn location(&self, raw: &str, target: String) -> String {
        let decoded_text = matches!(decoded(raw), Cow::Owned(_));
        match self.paths {
            Some(rules) if rules.decoded && (decoded_text || !raw.contains('%')) => {
                crate::web::urlenc::escape_path(&target)
            }
            _ => target,
        }
    }

    /// The chain for a request no route matched: the trailing-slash
    /// redirect, 405 (with the methods to `Allow`) or 404.
    fn unmatched(&self, miss: Miss) -> Chosen {
        let chain = match &miss {
            Miss::Redirect { .. } => &self.redirect,
            Miss::MethodNotAllowed { .. } => &self.method_not_allowed,
            Miss::NotFound => &self.not_found,
        };
        Chosen {
            chain: chain.clone(),
            params: Vec::new(),
            miss: Some(miss),
            operation: self.unmatched_op.clone(),
        }
    }
}

/// What [`App::choose`] picked for one request.
struct Chosen {
    chain: Arc<[Handler]>,
    params: PathParams,
    /// Why no route matched, for the redirect's target or 405's `Allow`.
    miss: Option<Miss>,
    /// The metrics series that counts the answer: the route's, or the one
    /// of unmatched requests (`None`: no metrics).
    operation: Option<Arc<Operation>>,
}

impl Chosen {
    /// The context that runs the chosen chain on this request.
    fn context(self, parts: http::request::Parts, body: Bytes, caller: Caller) -> Context {
        // Most requests: the context is built where it is returned (a
        // `c` set up and then returned was copied, 600 bytes, each time).
        let Some(miss) = self.miss else {
            return Context::arriving(parts, body, caller, self.params, self.chain);
        };
        let mut c = Context::arriving(parts, body, caller, self.params, self.chain);
        unmatched_context(&mut c, miss);
        c
    }
}

/// What a redirect's or 405's chain needs in its context.
fn unmatched_context(c: &mut Context, miss: Miss) {
    match miss {
        Miss::Redirect { location } => c.set(TSR_LOCATION, location),
        Miss::MethodNotAllowed { allowed } => c.set_header(ALLOW, router::allow_header(&allowed)),
        Miss::NotFound => {}
    }
}

/// The bounds on reading a request body, and the answers past them.
#[derive(Clone, Copy)]
pub(crate) struct ReadLimits {
    pub(crate) bounds: Bounds,
    pub(crate) on_timeout: BodyTimeoutAnswer,
    pub(crate) on_error: EdgeAnswer,
}

/// The whole body, or the answer to give instead (413, 408, 503, 400).
async fn read_body(
    parts: &http::request::Parts,
    body: Body,
    limits: ReadLimits,
    intake: Option<&dyn Intake>,
) -> Result<Bytes, Response<Body>> {
    let max = limits.bounds.bytes;
    let declared_too_large = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > max as u64);
    if declared_too_large {
        return Err(too_large(limits));
    }
    // A body that is already complete needs no clock.
    if hyper::body::Body::is_end_stream(&body) {
        return Ok(Bytes::new());
    }
    let closing = |mut resp: Response<Body>| {
        resp.headers_mut()
            .insert(CONNECTION, http::HeaderValue::from_static("close"));
        resp
    };
    let read = match intake {
        Some(intake) => intake.read(body, limits.bounds).await,
        None => read_unserved(body, limits.bounds).await,
    };
    match read {
        Ok(body) => Ok(body),
        Err(Refusal::TooLarge) => Err(too_large(limits)),
        Err(Refusal::TimedOut) => Err(closing((limits.on_timeout)(limits.bounds.time))),
        Err(Refusal::TooSlow { received, after }) => Err(closing((limits.on_error)(
            StatusCode::REQUEST_TIMEOUT,
            "REQUEST_TIMEOUT",
            &format!(
                "request body too slow: {received} bytes in {after:.1?}, under the minimum of \
                 {} bytes/s",
                limits.bounds.min_rate
            ),
        ))),
        Err(Refusal::Busy) => Err(closing((limits.on_error)(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            "server busy: too many request bodies being received, try again shortly",
        ))),
        Err(Refusal::Failed(e)) => Err((limits.on_error)(
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
            &format!("cannot read request body: {e}"),
        )),
    }
}

/// `body` as the crate's one body type, which the server's [`Intake`]
/// reads.
fn boxed<B>(body: B) -> Body
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    body.map_frame(|frame| {
        frame.map_data(|mut d| {
            let n = bytes::Buf::remaining(&d);
            bytes::Buf::copy_to_bytes(&mut d, n)
        })
    })
    .map_err(|e| -> BoxError { e.into() })
    .boxed_unsync()
}

/// A body read with no server behind the call (tests): its size and time
/// are bounded here; the data rates and the process' budget are the
/// server's ([`Intake`]).
fn read_unserved(mut body: Body, bounds: Bounds) -> BoxFuture<'static, Result<Bytes, Refusal>> {
    Box::pin(async move {
        let read = async {
            let mut data = bytes::BytesMut::new();
            while let Some(frame) = body.frame().await {
                let Ok(chunk) = frame.map_err(Refusal::Failed)?.into_data() else {
                    continue;
                };
                if data.len() + chunk.len() > bounds.bytes {
                    return Err(Refusal::TooLarge);
                }
                data.extend_from_slice(&chunk);
            }
            Ok(data.freeze())
        };
        tokio::time::timeout(bounds.time, read)
            .await
            .unwrap_or(Err(Refusal::TimedOut))
    })
}

/// Run `c`'s chain from the start; then the trace (and the log lines held
/// behind it) if tracing; then the response, counted in its metrics.
///
/// A plain function returning one `async move` block, not an `async fn`:
/// an `async fn` moves its arguments into locals of its future, which
/// then holds the 600-byte context twice, and awaiting that future from a
/// second block doubles it again (2.7 KB allocated and copied per request
/// before this shape). The block uses `c` where it was captured.
#[allow(clippy::manual_async_fn)] // on purpose: the size of its future
fn run(
    mut c: Context,
    trace: Option<Arc<Study>>,
    operation: Option<Arc<Operation>>,
) -> impl Future<Output = Response<Body>> + Send {
    async move {
        if trace.is_some() {
            c.start_trace();
        }
        c.next().await;
        finish(&mut c, trace.as_deref(), operation)
    }
}

/// After the chain: the trace printed or kept (if it was traced), the
/// response made and counted in its metrics series: `op`, or the one a
/// self-routing handler named.
fn finish(c: &mut Context, trace: Option<&Study>, op: Option<Arc<Operation>>) -> Response<Body> {
    if let (Some(t), Some(study)) = (c.take_trace(), trace) {
        study.keep(t, c.response_status());
    }
    // A self-routing handler may have named its own series.
    if let Some(op) = c.keys().get(OPERATION_KEY).cloned().or(op) {
        op.observe_http(c.response_status(), c.latency());
    }
    into_response(c)
}

/// The empty body of an answer to `HEAD`, with the `Content-Length` the
/// `GET` would have had.
fn head_body(draft: &mut ResponseDraft) -> Body {
    let len = std::mem::take(&mut draft.body).freeze().len();
    if len > 0 {
        draft.headers.insert(CONTENT_LENGTH, len.into());
    }
    types::full(Bytes::new())
}

/// Context key under which an answer given before the chain waits for
/// [`early_answer`], the last handler of the early chain.
const EARLY_ANSWER: &str = "handwire.early_answer";

/// An answer made before any chain ran, held for [`early_answer`].
struct EarlyAnswer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Bytes,
}

/// Give `answer` through `c`'s chain (the global middleware, then
/// [`early_answer`]): logged, traced and counted like any other answer.
async fn answer_early(
    mut c: Context,
    answer: Response<Body>,
    trace: Option<Arc<Study>>,
    operation: Option<Arc<Operation>>,
) -> Response<Body> {
    let (head, body) = answer.into_parts();
    // The engine's own answers are whole in memory: this does not wait.
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    c.set(
        EARLY_ANSWER,
        EarlyAnswer {
            status: head.status,
            headers: head.headers,
            body,
        },
    );
    run(c, trace, operation).await
}

/// The last handler of the early chain: writes the held [`EarlyAnswer`].
pub(crate) fn early_answer(c: &mut Context) {
    let held = c
        .get::<EarlyAnswer>(EARLY_ANSWER)
        .map(|a| (a.status, a.headers.clone(), a.body.clone()));
    if let Some((status, headers, body)) = held {
        c.set_response(status, headers, body);
    }
}

/// The response the chain built. To HEAD it is the headers the handler gave,
/// with `Content-Length` saying how long the body would be, and no body:
/// hyper leaves a HEAD body out over HTTP/1.1 but sends it over HTTP/2,
/// where the client must reject it (curl: `PROTOCOL_ERROR`).
///
/// It takes the response out of the context rather than the context: a
/// context is 600 bytes, which a move copies.
fn into_response(c: &mut Context) -> Response<Body> {
    let head = c.method() == Method::HEAD;
    let draft = &mut c.response;
    let body = match head {
        true => head_body(draft),
        false => std::mem::take(&mut draft.body).into_body(),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = draft.status;
    // Swapped, not taken: the empty map `Response::new` made is then dropped
    // with the context, and no second empty map is made and dropped here.
    std::mem::swap(resp.headers_mut(), &mut draft.headers);
    resp
}

/// A response with `body` serialized as JSON (`application/json`), for the
/// answers given before any chain runs.
pub(crate) fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    // Serializing a plain struct or `Value` cannot fail; an empty object
    // is the fallback all the same.
    let text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut resp = Response::new(types::full(Bytes::from(text)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, APPLICATION_JSON);
    resp
}

fn too_large(limits: ReadLimits) -> Response<Body> {
    (limits.on_error)(
        StatusCode::PAYLOAD_TOO_LARGE,
        "PAYLOAD_TOO_LARGE",
        &format!(
            "request body too large (limit {} bytes)",
            limits.bounds.bytes
        ),
    )
}

/// The default [`EdgeAnswer`]: `{"error": message}`.
pub(crate) fn edge_json(status: StatusCode, _reason: &str, message: &str) -> Response<Body> {
    json_response(status, &serde_json::json!({ "error": message }))
}

/// The default answer past the body time-out: 408 with a JSON error.
pub(crate) fn request_timeout(limit: Duration) -> Response<Body> {
    json_response(
        StatusCode::REQUEST_TIMEOUT,
        &serde_json::json!({ "error": format!("request body not received within {limit:?}") }),
    )
}

/// Gin's `serveError`, at the head of the 404 and 405 chains: `status` is
/// set before the global middleware and the `no_route` / `no_method`
/// handlers run. Then an answer something wrote stands; with nothing
/// written and the status still `status`, Gin's default text; a status a
/// middleware set without writing goes out with an empty body.
pub(crate) fn serve_error(status: StatusCode) -> Handler {
    named("serve_error", move |c| {
        Box::pin(async move {
            c.status(status);
            c.next().await;
            if !c.written() && c.response_status() == status {
                let text = match status {
                    StatusCode::NOT_FOUND => "404 page not found",
                    _ => "405 method not allowed",
                };
                c.string(status, text);
            }
        })
    })
}

/// Gin's RedirectTrailingSlash, as [`router::redirect_answer`] words it:
/// 301 for GET, 307 for other methods so that the client repeats the
/// method and body.
pub(crate) fn trailing_slash_redirect(c: &mut Context) {
    let location = c.get::<String>(TSR_LOCATION).map_or("", String::as_str);
    let (status, location) = router::redirect_answer(c.method(), location, c.uri().query());
    c.redirect(status, &location);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Poll;

    /// The future of a request with no body to read is the chain's run,
    /// holding its context once: not twice (an `async fn` copies its
    /// arguments into its state) nor four times (awaited from another
    /// block), which each request once allocated and copied.
    #[test]
    fn a_bodiless_request_future_holds_its_context_once() {
        let parts = Request::new(()).into_parts().0;
        let remote = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        let none: Arc<[Handler]> = Arc::from(Vec::new());
        let c = Context::new(
            parts,
            Bytes::new(),
            remote,
            std::time::Instant::now(),
            Vec::new(),
            none,
        );
        let context = std::mem::size_of_val(&c);
        let future = std::mem::size_of_val(&run(c, None, None));
        assert!(
            future < context + context / 2,
            "the run future is {future} bytes for a {context}-byte context"
        );
    }

    fn request(
        method: Method,
        path: &str,
        body: &'static str,
    ) -> Request<http_body_util::Full<Bytes>> {
        Request::builder()
            .method(method)
            .uri(path)
            .body(http_body_util::Full::new(Bytes::from_static(
                body.as_bytes(),
            )))
            .unwrap()
    }

    async fn text(resp: Response<Body>) -> String {
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    /// A request with no body is work the server may poll once in its
    /// call, and a chain that never awaits (the logger, recovery and a
    /// handler that answers at once) is done at that poll; an awaiting
    /// handler is still pending, and a body to read makes work for the
    /// request's own task. The client sees the same answers either way.
    #[tokio::test]
    async fn a_chain_that_never_awaits_is_done_at_its_first_poll() {
        use crate::web::chain::{handler, handler_now};
        let mut e = crate::web::Engine::new();
        e.get(
            "/now/:id",
            handler_now("now", |c| {
                let id = c.param("id").unwrap_or_default().to_owned();
                c.string(StatusCode::OK, id);
            }),
        )
        .unwrap();
        e.get(
            "/later/:id",
            handler(|c| {
                Box::pin(async move {
                    tokio::task::yield_now().await;
                    let id = c.param("id").unwrap_or_default().to_owned();
                    c.string(StatusCode::OK, id);
                })
            }),
        )
        .unwrap();
        e.post(
            "/now/:id",
            handler_now("posted", |c| c.string(StatusCode::OK, "posted")),
        )
        .unwrap();
        let app = e.build();
        let remote = std::net::SocketAddr::from(([127, 0, 0, 1], 1));

        // What the server does with `Answer::Now`: one poll, with a waker
        // that does nothing.
        let first_poll = |answer: Answer| {
            let Answer::Now(mut work) = answer else {
                panic!("a request without a body is Answer::Now");
            };
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match work.as_mut().poll(&mut cx) {
                Poll::Ready(resp) => Ok(resp),
                Poll::Pending => Err(work),
            }
        };
        let Ok(resp) = first_poll(app.answer(request(Method::GET, "/now/7", ""), remote)) else {
            panic!("a chain that never awaits was pending at its first poll");
        };
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(text(resp).await, "7");

        let Err(work) = first_poll(app.answer(request(Method::GET, "/later/8", ""), remote)) else {
            panic!("an awaiting handler was done at its first poll");
        };
        assert_eq!(text(work.await).await, "8");

        // A body is read before the chain runs: work for the request's task.
        let answer = app.answer(request(Method::POST, "/now/9", "x"), remote);
        assert!(matches!(answer, Answer::Later(_)));
        assert_eq!(text(answer.into_future().await).await, "posted");

        // A miss runs the 404 chain, which never awaits either.
        let Ok(resp) = first_poll(app.answer(request(Method::GET, "/nowhere", ""), remote)) else {
            panic!("the 404 chain was pending at its first poll");
        };
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    }
}
