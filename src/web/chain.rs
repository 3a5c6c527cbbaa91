//! The Gin-style handler chain: [`Context`], [`Handler`], `next()` and `abort()`.
//!
//! A request is answered by an ordered list of handlers: global middleware,
//! then the middleware of the route's groups, then the route handler
//! (Gin's rule). The [`Context`] walks that list
//! with an index, exactly like Gin's `Context.Next`:
//!
//! ```text
//! next():  index += 1; while index < len { handlers[index](ctx); index += 1 }
//! abort(): index = ABORT_INDEX          // past the end: the loop stops
//! ```
//!
//! So a middleware that calls `next()` runs the rest of the chain at that
//! point and then continues its own code; one that never calls `next()`
//! returns to the loop, which runs the following handler (the implicit
//! next); one that calls `abort()` keeps running its own code but nothing
//! after it runs, and a `next()` after `abort()` runs nothing. Values stored
//! with [`Context::set`] are visible to every later handler. The engine that
//! builds the chains lives in [`crate::web::engine`]; `docs/middleware.md`
//! teaches each rule with an example and the test that proves it.

use std::any::Any;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, LOCATION};
use http::{HeaderMap, Method, StatusCode, Uri};

use crate::contract::Caller;
use crate::types::BoxFuture;
use crate::web::draft::DraftBody;
pub(crate) use crate::web::draft::ResponseDraft;
use crate::web::keys::Keys;
use crate::web::trace::{Trace, Unwound};
use crate::web::unwind::{panic_message, CatchUnwind};
use crate::web::urlenc;

/// What a [`Handler`] runs: a function of the request's [`Context`]
/// returning a boxed future, which may call `c.next().await` anywhere in
/// its own code.
pub type HandlerFn = dyn for<'a> Fn(&'a mut Context) -> BoxFuture<'a, ()> + Send + Sync;

/// One step of a chain: middleware and route handlers have the same type,
/// as Gin's `HandlerFunc` is one type. It borrows the context for as long
/// as its future runs, so it can call `c.next().await` in the middle of its
/// own code. A handler may carry a name (given at registration), which the
/// route table and the chain trace print; an unnamed one is shown by its
/// index.
#[derive(Clone)]
pub struct Handler {
    run: Arc<HandlerFn>,
    name: Option<&'static str>,
}

impl Handler {
    /// Run this handler on `c`.
    pub fn call<'a>(&self, c: &'a mut Context) -> BoxFuture<'a, ()> {
        (self.run)(c)
    }

    /// The name given at registration, if any.
    pub fn name(&self) -> Option<&'static str> {
        self.name
    }

    /// The same handler under `name`.
    pub(crate) fn with_name(mut self, name: &'static str) -> Handler {
        self.name = Some(name);
        self
    }

    /// The same handler between its enter and exit lines of the trace
    /// (`--trace`: [`Context::start_trace`] wraps every handler).
    fn traced(&self) -> Handler {
        let inner = self.clone();
        let traced = handler(move |c| {
            let inner = inner.clone();
            Box::pin(async move {
                c.trace_observe();
                c.trace_enter();
                inner.call(c).await;
                c.trace_observe();
                c.trace_exit();
            })
        });
        Handler {
            name: self.name,
            ..traced
        }
    }
}

/// Wrap a function or closure as an unnamed [`Handler`].
///
/// ```
/// use handwire::web::{handler, Handler};
/// use http::StatusCode;
/// let h: Handler = handler(|c| Box::pin(async move { c.string(StatusCode::OK, "hi"); }));
/// ```
pub fn handler<F>(f: F) -> Handler
where
    F: for<'a> Fn(&'a mut Context) -> BoxFuture<'a, ()> + Send + Sync + 'static,
{
    Handler {
        run: Arc::new(f),
        name: None,
    }
}

/// Wrap a function or closure as a [`Handler`] called `name`.
pub fn named<F>(name: &'static str, f: F) -> Handler
where
    F: for<'a> Fn(&'a mut Context) -> BoxFuture<'a, ()> + Send + Sync + 'static,
{
    handler(f).with_name(name)
}

/// A [`Handler`] called `name` whose code never awaits: Gin's plain
/// `func(c *gin.Context)` that does not call `c.Next()`. It runs when
/// called and its future is already done; the loop goes on to the next
/// handler (unless it aborted).
///
/// ```
/// use handwire::web::{handler_now, Handler};
/// use http::StatusCode;
/// let h: Handler = handler_now("hi", |c| c.string(StatusCode::OK, "hi"));
/// ```
pub fn handler_now<F>(name: &'static str, f: F) -> Handler
where
    F: Fn(&mut Context) + Send + Sync + 'static,
{
    named(name, move |c| {
        f(c);
        // A future that holds nothing, so boxing it allocates nothing
        // (`std::future::ready(())`, one byte, cost an allocation a call).
        Box::pin(std::future::poll_fn(|_| std::task::Poll::Ready(())))
    })
}

/// Middleware called `name` whose code all runs after the rest of the
/// chain: `c.next().await` and then `f(c)` (after an abort too, like any
/// code after `next()`).
pub fn after_rest<F>(name: &'static str, f: F) -> Handler
where
    F: Fn(&mut Context) + Send + Sync + 'static,
{
    let f = Arc::new(f);
    named(name, move |c| {
        let f = f.clone();
        Box::pin(async move {
            c.next().await;
            f(c);
        })
    })
}

/// Middleware called `name` that runs the rest of the chain and, if a
/// handler in it panics, calls `on_panic` with the panic's message: Gin's
/// `defer func() { if err := recover(); … }()` before `c.Next()`. The rest
/// is cut short where it panicked (its after-the-rest code does not run),
/// the index is this handler's again and the trace notes the catch; what
/// `on_panic` writes or aborts is its own. Recovery is one
/// ([`crate::web::middleware::recovery`]).
pub fn catching<F>(name: &'static str, on_panic: F) -> Handler
where
    F: Fn(&mut Context, &str) + Send + Sync + 'static,
{
    let on_panic = Arc::new(on_panic);
    named(name, move |c| {
        let on_panic = on_panic.clone();
        Box::pin(catch_rest(c, move |c, message| on_panic(c, message)))
    })
}

/// The body of a [`catching`] handler: the rest of the chain run inside a
/// catch and, if a handler in it panicked, the index put back at this
/// handler's, the catch traced, and `on_panic` called with the message.
pub(crate) async fn catch_rest(c: &mut Context, on_panic: impl FnOnce(&mut Context, &str)) {
    let mark = c.mark();
    // Pinned in place, not boxed: this runs inside the handler's own boxed
    // future.
    let outcome = CatchUnwind(std::pin::pin!(c.next())).await;
    if let Err(payload) = outcome {
        let message = panic_message(payload.as_ref());
        c.unwound_to(mark, Unwound::Panic(message));
        on_panic(c, message);
    }
}

const ABORT_INDEX: isize = isize::MAX / 2;

/// The content types of [`Context::string`] and [`Context::json`] (and of
/// the engine's own JSON answers), made once.
const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
pub(crate) const APPLICATION_JSON: HeaderValue =
    HeaderValue::from_static("application/json; charset=utf-8");

/// The path parameters of a request, in route order: each name from the
/// route and its value, decoded (Gin's `c.Params`).
pub type PathParams = Vec<(Arc<str>, Box<str>)>;

/// A handler's place in the chain, from [`Context::mark`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    index: isize,
    /// How many handlers the trace had open.
    open: usize,
}

/// Everything one request's handlers share: the request, path parameters, a
/// key/value store and the response being built.
pub struct Context {
    /// The request's method, target, version and header fields.
    head: http::request::Parts,
    body: Bytes,
    /// Where the request came from, as the server told: the peer, when the
    /// head arrived, whether over TLS.
    caller: Caller,
    params: PathParams,
    /// Gin's `c.Keys`: few entries, so a list beats a hash map ([`Keys`]).
    keys: Keys,
    handlers: Arc<[Handler]>,
    index: isize,
    /// The walk of the chain, when tracing is on (`None`: one branch per
    /// step, nothing else).
    trace: Option<Box<Trace>>,
    pub(crate) response: ResponseDraft,
}

impl Context {
    /// A context for one request that will run `handlers`; `received_at` is
    /// when its head arrived (see [`received_at`](Self::received_at)).
    pub fn new(
        parts: http::request::Parts,
        body: Bytes,
        remote: SocketAddr,
        received_at: Instant,
        params: PathParams,
        handlers: Arc<[Handler]>,
    ) -> Context {
        let caller = Caller {
            received_at,
            ..Caller::from(remote)
        };
        Context::arriving(parts, body, caller, params, handlers)
    }

    /// [`new`](Self::new), for a request from the server's `caller`.
    pub(crate) fn arriving(
        parts: http::request::Parts,
        body: Bytes,
        caller: Caller,
        params: PathParams,
        handlers: Arc<[Handler]>,
    ) -> Context {
        Context {
            head: parts,
            body,
            caller,
            params,
            keys: Keys::default(),
            handlers,
            index: -1,
            trace: None,
            response: ResponseDraft::default(),
        }
    }

    // ---- flow -------------------------------------------------------------

    /// Run the rest of the chain now; returns when it has finished (or was
    /// aborted), so the caller's remaining code runs afterwards. Gin's
    /// `Next`: move the index on, run handlers while it is inside the
    /// chain. A handler that calls `next()` runs the rest in its own loop,
    /// and `abort()` jumps past the end, so either way this loop stops
    /// after it.
    #[allow(clippy::should_implement_trait)] // Gin's name, on purpose
    pub async fn next(&mut self) {
        self.trace_next();
        self.index += 1;
        let handlers = self.handlers.clone();
        // The index is never negative here: -1 before the chain, moved on.
        while let Some(h) = handlers.get(self.index as usize) {
            h.call(self).await;
            self.index += 1;
        }
    }

    /// While tracing, the line `next()` writes about itself.
    fn trace_next(&mut self) {
        if let Some(t) = &mut self.trace {
            t.next_called(self.index >= ABORT_INDEX, &self.response);
        }
    }

    /// While tracing, the handler at the current index starts.
    fn trace_enter(&mut self) {
        let index = self.index;
        if let Some(t) = &mut self.trace {
            t.enter(index);
        }
    }

    /// While tracing, what the running handler did to the response and the
    /// keys since the last step (drawn by `/debug/walks`, not printed).
    fn trace_observe(&mut self) {
        if let Some(t) = &mut self.trace {
            t.observe(&self.response);
        }
    }

    /// While tracing, the innermost running handler ends.
    fn trace_exit(&mut self) {
        let aborted = self.is_aborted();
        if let Some(t) = &mut self.trace {
            t.exit(aborted);
        }
    }

    /// Stop the chain: no handler after the current one runs. The current
    /// handler's own code still runs to its end.
    pub fn abort(&mut self) {
        self.trace_abort();
        self.index = ABORT_INDEX;
    }

    /// While tracing, the line `abort()` writes about itself: what it
    /// skips (once: a second abort skips nothing more).
    fn trace_abort(&mut self) {
        let first = !self.index_is_aborted();
        self.trace_observe();
        if let (Some(t), true) = (&mut self.trace, first) {
            t.abort_called();
        }
    }

    fn index_is_aborted(&self) -> bool {
        self.index >= ABORT_INDEX
    }

    /// Where the running handler stands, taken before it calls `next()`, so
    /// that a middleware which stops the rest of the chain from returning
    /// normally (recovery, the time-out) can come back to it with
    /// [`unwound_to`](Self::unwound_to).
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            index: self.index,
            open: self.trace.as_ref().map_or(0, |t| t.open_len()),
        }
    }

    /// The rest of the chain after `mark` ended by `cause`, not by
    /// returning: the index is the marking handler's again (so its
    /// `abort()` is its own) and the trace closes the handlers it cut short.
    pub(crate) fn unwound_to(&mut self, mark: Mark, cause: Unwound<'_>) {
        self.index = mark.index;
        if let Some(t) = &mut self.trace {
            t.unwound(mark.open, cause);
        }
    }

    /// While tracing, note a step of the running handler (`1 recovery: …`).
    pub(crate) fn trace_note(&mut self, what: &str) {
        if let Some(t) = &mut self.trace {
            t.note(what);
        }
    }

    /// Record the walk of the chain from now on (see [`Trace`]).
    pub(crate) fn start_trace(&mut self) {
        let header = format!("{} {}", self.head.method, self.head.uri.path());
        let names = self.handlers.iter().map(Handler::name).collect();
        self.trace = Some(Box::new(Trace::new(header, names)));
        // `--trace` wraps each handler in its enter and exit lines; the
        // chain itself runs as it does untraced.
        self.handlers = self.handlers.iter().map(Handler::traced).collect();
    }

    /// The recorded walk, if tracing was started.
    pub(crate) fn take_trace(&mut self) -> Option<Box<Trace>> {
        self.trace.take()
    }

    /// Whether this request's walk is being traced.
    pub(crate) fn is_tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// While tracing, keep `line` (whole lines, `\n`-terminated) to be
    /// written after the trace: the request logger finishes last, so its
    /// line belongs below the walk it ends. Returns `line` back when not
    /// tracing, for the caller to write.
    pub fn hold_after_trace(&mut self, line: Vec<u8>) -> Option<Vec<u8>> {
        match &mut self.trace {
            Some(t) => {
                t.hold(&line);
                None
            }
            None => Some(line),
        }
    }

    /// Replace the response with an answer made before any chain ran (the
    /// engine's 413, 408 and 400), so the chain's middleware see it.
    pub(crate) fn set_response(&mut self, status: StatusCode, headers: HeaderMap, body: Bytes) {
        self.response.status = status;
        self.response.headers = headers;
        self.response.body = DraftBody::One(body);
        self.response.written = true;
    }

    /// Whether [`abort`](Self::abort) was called.
    pub fn is_aborted(&self) -> bool {
        self.index_is_aborted()
    }

    /// Set the status and abort, writing no body.
    pub fn abort_with_status(&mut self, status: StatusCode) {
        self.status(status);
        // Gin's `WriteHeaderNow`: the answer is this status, written.
        self.response.written = true;
        self.abort();
    }

    /// Write a JSON body with `status` and abort.
    pub fn abort_with_json(&mut self, status: StatusCode, body: serde_json::Value) {
        self.json(status, &body);
        self.abort();
    }

    // ---- request ----------------------------------------------------------

    /// The request method.
    pub fn method(&self) -> &Method {
        &self.head.method
    }

    /// The raw (not decoded) request path.
    pub fn path(&self) -> &str {
        self.head.uri.path()
    }

    /// The request URI.
    pub fn uri(&self) -> &Uri {
        &self.head.uri
    }

    /// The request headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.head.headers
    }

    /// A request header as text; `None` when absent or not visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The whole request body (already read and size-checked by the engine).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// When the request head arrived: the engine takes it before reading the
    /// body, so a time-out measured from here counts the body's time too.
    pub fn received_at(&self) -> Instant {
        self.caller.received_at
    }

    /// How long the request has taken since it arrived, read from the
    /// clock now.
    pub fn latency(&self) -> Duration {
        self.caller.received_at.elapsed()
    }

    /// The peer address of the connection.
    pub fn remote_addr(&self) -> SocketAddr {
        self.caller.remote
    }

    /// The request's trace (W3C `traceparent`, continued or new; see
    /// [`crate::ops::tracecontext`]), as the server handed it: `None` only
    /// for an app called without the server, as in a unit test. Use cases
    /// reach the same value with [`crate::ops::tracecontext::current`].
    pub fn trace_context(&self) -> Option<crate::ops::tracecontext::TraceContext> {
        self.caller.trace
    }

    /// Whether the request came over TLS (the listener serves HTTPS): what
    /// decides a cookie's `Secure` attribute or an `https://` link.
    pub fn is_tls(&self) -> bool {
        self.caller.tls
    }

    /// The client's IP: the peer address. Forwarding headers are not
    /// trusted, because nothing here says which proxy may set them.
    pub(crate) fn client_ip(&self) -> IpAddr {
        self.caller.remote.ip()
    }

    /// A path parameter (`:name` or `*name`), percent-decoded.
    pub fn param(&self, name: &str) -> Option<&str> {
        let (_, value) = self.params.iter().find(|(n, _)| **n == *name)?;
        Some(value)
    }

    /// Every path parameter as (name, value), in the order of the route:
    /// Gin's `c.Params`, where [`param`](Self::param) is `c.Param`.
    pub fn params(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.params.iter().map(|(name, value)| (&**name, &**value))
    }

    /// The first value of query parameter `name`, decoded (`+` is a space).
    pub fn query(&self, name: &str) -> Option<String> {
        urlenc::find(self.head.uri.query().unwrap_or(""), name)
    }

    /// Like [`query`](Self::query), with `default` when the key is absent.
    /// A present but empty value is returned as is (Gin's `DefaultQuery`).
    pub(crate) fn default_query(&self, name: &str, default: &str) -> String {
        self.query(name).unwrap_or_else(|| default.to_string())
    }

    // ---- key/value store --------------------------------------------------

    /// Store `value` under `key` for the handlers that follow.
    pub fn set<V: Any + Send + Sync>(&mut self, key: &'static str, value: V) {
        if let Some(t) = &self.trace {
            t.key_used(key, true);
        }
        self.keys.set(key, value);
    }

    /// Read a value stored under `key`, if it has type `V`.
    pub fn get<V: Any>(&self, key: &str) -> Option<&V> {
        if let Some(t) = &self.trace {
            t.key_used(key, false);
        }
        self.keys.get(key)
    }

    /// The keys, read by the engine itself (not a handler's read, so not
    /// drawn in the walk).
    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Gin's `c.Delete(key)`: remove what an earlier handler stored under
    /// `key`, so that later handlers [`get`](Self::get) `None` for it.
    pub fn delete(&mut self, key: &str) {
        self.keys.delete(key);
    }

    // ---- response ---------------------------------------------------------

    /// Set the response status without writing a body.
    pub fn status(&mut self, status: StatusCode) {
        self.response.status = status;
    }

    /// The response status as it stands.
    pub fn response_status(&self) -> StatusCode {
        self.response.status
    }

    /// Forget the response written so far (status back to 200, no headers,
    /// no body): recovery and timeout replace a half-written answer.
    pub(crate) fn clear_response(&mut self) {
        self.response.status = StatusCode::OK;
        self.response.headers.clear();
        self.response.body = DraftBody::Empty;
        self.response.written = false;
    }

    /// Whether a body has been written.
    pub fn written(&self) -> bool {
        self.response.written
    }

    /// Set a response header to a value that is one already: a constant
    /// (`HeaderValue::from_static("no-store")`), a number
    /// (`HeaderValue::from(30u64)`), a value read from a request header.
    /// It cannot fail; text built at run time goes through
    /// [`try_set_header`](Self::try_set_header).
    pub fn set_header(&mut self, name: HeaderName, value: HeaderValue) {
        self.response.headers.insert(name, value);
    }

    /// Set a response header to `value`, text built at run time. Text that
    /// cannot be a header value (a control character such as a newline, the
    /// start of a header injection) is refused: the response is left as it
    /// was and the error says so, for the handler to answer otherwise. Never
    /// dropped silently.
    #[must_use = "a value that is not a header value was not set; answer otherwise"]
    pub fn try_set_header(
        &mut self,
        name: HeaderName,
        value: &str,
    ) -> Result<(), http::header::InvalidHeaderValue> {
        self.set_header(name, HeaderValue::from_str(value)?);
        Ok(())
    }

    /// Write `body` with `status` and `content_type` (a constant, such as
    /// `"text/plain; charset=utf-8"`). As in Gin, the first write decides
    /// status and content type; later writes append.
    pub fn data(&mut self, status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) {
        self.data_typed(status, HeaderValue::from_static(content_type), body.into());
    }

    /// [`data`](Self::data) with a content type made once, as a constant:
    /// `from_static` checks every byte of a type it is given at run time.
    fn data_typed(&mut self, status: StatusCode, content_type: HeaderValue, body: Bytes) {
        if !self.response.written {
            self.response.status = status;
            self.response.headers.insert(CONTENT_TYPE, content_type);
            self.response.written = true;
        }
        self.response.body.push(body);
    }

    /// Answer with `body`, sent as it is produced (a stream of messages),
    /// with `status` and `content_type`; it replaces anything written.
    pub fn stream(
        &mut self,
        status: StatusCode,
        content_type: HeaderValue,
        body: crate::types::Body,
    ) {
        self.response.status = status;
        self.response.headers.insert(CONTENT_TYPE, content_type);
        self.response.body = DraftBody::Stream(std::sync::Mutex::new(body));
        self.response.written = true;
    }

    /// Write plain text: a `String` or a `&'static str`, taken without a copy.
    pub fn string(&mut self, status: StatusCode, text: impl Into<Bytes>) {
        self.data_typed(status, TEXT_PLAIN, text.into());
    }

    /// Write `value` as JSON. A value that cannot be serialized gives a 500
    /// with a JSON error instead.
    pub fn json(&mut self, status: StatusCode, value: &impl serde::Serialize) {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.data_typed(status, APPLICATION_JSON, bytes.into()),
            Err(e) => self.data_typed(
                StatusCode::INTERNAL_SERVER_ERROR,
                APPLICATION_JSON,
                serde_json::json!({ "error": format!("response serialization failed: {e}") })
                    .to_string()
                    .into(),
            ),
        }
    }

    /// Redirect to `location` with `status` (301, 302, 307, 308) and, for
    /// GET, a small HTML body with the link, as Go's `http.Redirect` writes.
    ///
    /// `location` is a URL or a path. What a URL cannot hold as it is (a
    /// space, a control character, a byte outside ASCII, `"<>\^`{|}`) is
    /// percent-encoded, as a browser would before following it; `%` escapes
    /// already there are kept. So a `Location` always goes out, and a value
    /// never ends the header early.
    pub fn redirect(&mut self, status: StatusCode, location: &str) {
        let location = urlenc::encode_location(location);
        let value = HeaderValue::from_str(&location);
        // Encoded, the location is visible ASCII: a header value.
        self.set_header(LOCATION, value.expect("a percent-encoded location"));
        let location = location.as_str();
        if self.head.method == Method::GET || self.head.method == Method::HEAD {
            let text = status.canonical_reason().unwrap_or("Redirect");
            let body = format!("<a href=\"{}\">{text}</a>.\n\n", html_escape(location));
            self.data(status, "text/html; charset=utf-8", body);
        } else {
            self.status(status);
            self.response.written = true;
        }
    }
}

/// Escape text for an HTML attribute or element.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
