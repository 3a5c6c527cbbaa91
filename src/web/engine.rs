//! The Gin-style engine: route registration, groups, and request dispatch.
//!
//! Registration follows Gin: a route's chain is fixed when it is registered,
//! as *global middleware registered so far* + *its groups' middleware* + *its
//! handlers*. (So, as in Gin, `use_middleware` after a route does not change
//! that route; it does change the 404/405 chains, which are built last.)
//! A bad route is an [`InsertError`] value; the binaries print it and exit.
//!
//! Dispatch asks the matcher, reads the body (bounded by the body limit, 413
//! past it, and by the body time-out, 408 past it, with `Connection: close`)
//! and runs one of five chains through [`Context::next`]: the route's, a
//! trailing-slash redirect, 405 (with `Allow`), 404, or the early answer
//! (413, 408, 400 for a body that could not be read). The four fallbacks are
//! prefixed by the global middleware too, so the logger and recovery see
//! every request, and an engine without them ([`Engine::bare`]) logs nothing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ALLOW, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use crate::types::{self, Body, BoxError, BoxFuture};
use crate::web::chain::{named, Context, Handler};
use crate::web::log;
use crate::web::metrics::{Kind, Metrics, Operation, OPERATION_KEY, UNMATCHED};
use crate::web::middleware;
use crate::web::path_params::{self, PathParams};
use crate::web::router::{InsertError, Lookup, Router};
use crate::web::server::Service;

/// Default request body limit: 4 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 4 << 20;

/// Default time for a request body to arrive, counted from its head.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds the answer to a body that did not arrive within the body
/// time-out (given as the argument). The engine adds `Connection: close`.
pub type BodyTimeoutAnswer = fn(Duration) -> Response<Body>;

/// Context key under which the trailing-slash redirect target is stored.
const TSR_LOCATION: &str = "handwire.tsr_location";

/// The one-handler shortcuts (`get`, `post`, …), the same on [`Engine`] and
/// [`Group`]: each is `handle(METHOD, path, vec![h])`.
macro_rules! verbs {
    () => {
        verbs!(
            get GET, post POST, put PUT, delete DELETE, patch PATCH,
            head HEAD, options OPTIONS
        );
    };
    ($($name:ident $method:ident),*) => {
        $(
            #[doc = concat!("Register a ", stringify!($method), " route with a single handler.")]
            pub fn $name(&mut self, path: &str, h: Handler) -> Result<(), InsertError> {
                self.handle(Method::$method, path, vec![h])
            }
        )*
    };
}

/// Builds an [`App`]: routes, groups, middleware, fallbacks and limits.
pub struct Engine {
    router: Router<Route>,
    /// Every route as registered: method, path, its whole chain.
    routes: Vec<(Method, String, Arc<[Handler]>)>,
    global: Vec<Handler>,
    no_route: Vec<Handler>,
    no_method: Vec<Handler>,
    body_limit: usize,
    body_timeout: Duration,
    on_body_timeout: BodyTimeoutAnswer,
    trace: bool,
    metrics: Option<Arc<Metrics>>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    /// An engine with the default middleware: request logger, then recovery.
    pub fn new() -> Engine {
        let mut e = Engine::bare();
        e.use_middleware(named("logger", middleware::logger));
        e.use_middleware(named("recovery", middleware::recovery));
        e
    }

    /// An engine with no middleware at all: it logs nothing, not even the
    /// answers given before a chain runs (413, 408, 400).
    pub fn bare() -> Engine {
        Engine {
            router: Router::new(),
            routes: Vec::new(),
            global: Vec::new(),
            no_route: vec![named("not_found", default_not_found)],
            no_method: vec![named("method_not_allowed", default_method_not_allowed)],
            body_limit: DEFAULT_BODY_LIMIT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            on_body_timeout: request_timeout,
            trace: false,
            metrics: None,
        }
    }

    /// Add global middleware: it runs first on every route registered after
    /// this call and on every 404/405/redirect.
    pub fn use_middleware(&mut self, h: Handler) {
        self.global.push(h);
    }

    /// Register `handlers` (middleware then handler) for `method` and `path`.
    pub fn handle(
        &mut self,
        method: Method,
        path: &str,
        handlers: Vec<Handler>,
    ) -> Result<(), InsertError> {
        self.add_route(method, path, &[], handlers)
    }

    fn add_route(
        &mut self,
        method: Method,
        path: &str,
        group_mw: &[Handler],
        handlers: Vec<Handler>,
    ) -> Result<(), InsertError> {
        let chain: Arc<[Handler]> = self
            .global
            .iter()
            .chain(group_mw)
            .cloned()
            .chain(handlers)
            .collect();
        let route = Route {
            chain: chain.clone(),
            names: path_params::names_of(path),
            id: self.routes.len(),
        };
        self.router.insert(method.clone(), path, route)?;
        self.routes.push((method, path.to_string(), chain));
        Ok(())
    }

    /// The route table, one line per route in registration order, as Gin's
    /// debug mode prints it: `GET    /index --> 4 handlers (logger, …)`.
    pub(crate) fn route_table(&self) -> Vec<String> {
        self.routes
            .iter()
            .map(|(method, path, chain)| {
                let names: Vec<String> = chain
                    .iter()
                    .enumerate()
                    .map(|(i, h)| h.name().map_or_else(|| format!("#{i}"), str::to_string))
                    .collect();
                format!(
                    "{:<7}{path} --> {} handlers ({})",
                    method.as_str(),
                    chain.len(),
                    names.join(", ")
                )
            })
            .collect()
    }

    /// What the binaries' `--trace` and `--quiet` switches do: trace every
    /// request's chain when `trace`, and unless `quiet` print the route table
    /// (one `[routes] …` line per route) through the log sink.
    pub fn study_mode(&mut self, trace: bool, quiet: bool) {
        self.trace(trace);
        if !quiet {
            // One flush for the whole table, not one per line.
            let sink = log::stdout();
            for line in self.route_table() {
                sink.text(&format!("[routes] {line}"));
            }
            sink.flush(Duration::from_secs(1));
        }
    }

    /// Trace every request's walk of its chain (see [`crate::web::chain::Trace`])
    /// to the log sink. Off by default; when off it costs one branch per
    /// handler.
    pub fn trace(&mut self, on: bool) {
        self.trace = on;
    }

    verbs!();

    /// A route group: every route registered through it gets `prefix` and
    /// the group's middleware.
    pub fn group(&mut self, prefix: &str) -> Group<'_> {
        Group {
            engine: self,
            prefix: prefix.to_string(),
            middleware: Vec::new(),
        }
    }

    /// Count every request in `metrics` and serve them on `GET /metrics`.
    ///
    /// This is the outermost middleware, wrapped around the whole chain by
    /// the app itself rather than being a handler in it: it sees every
    /// answer, the 413/408 given before any chain runs and a 500 from
    /// recovery included, and it works whether it is called before or after
    /// the routes are registered. Each route's series is made once, at
    /// [`build`](Self::build), labelled with the route template; requests no
    /// route matches share [`UNMATCHED`].
    pub fn metrics(&mut self, metrics: &Arc<Metrics>) -> Result<(), InsertError> {
        self.get("/metrics", metrics.handler())?;
        self.metrics = Some(metrics.clone());
        Ok(())
    }

    /// Replace the 404 handlers (default: `404 page not found`, text/plain).
    pub fn no_route(&mut self, handlers: Vec<Handler>) {
        self.no_route = handlers;
    }

    /// Replace the 405 handlers (default: `405 method not allowed`,
    /// text/plain). The `Allow` header is set before they run.
    pub fn no_method(&mut self, handlers: Vec<Handler>) {
        self.no_method = handlers;
    }

    /// Largest request body accepted; larger ones get 413 with a JSON error.
    pub fn body_limit(&mut self, bytes: usize) {
        self.body_limit = bytes;
    }

    /// Longest wait for a request body, counted from the head's arrival
    /// (default [`DEFAULT_BODY_TIMEOUT`]). Past it the client gets the
    /// [`on_body_timeout`](Self::on_body_timeout) answer (default 408 with a
    /// JSON error) and the connection is closed: a client that announced
    /// 100 bytes and sent 3 holds nothing for longer.
    pub fn body_timeout(&mut self, d: Duration) {
        self.body_timeout = d;
    }

    /// Replace the answer given past the body time-out.
    pub fn on_body_timeout(&mut self, answer: BodyTimeoutAnswer) {
        self.on_body_timeout = answer;
    }

    /// Freeze the routes into a servable [`App`].
    pub fn build(self) -> Arc<App> {
        let with_global = |tail: Vec<Handler>| -> Arc<[Handler]> {
            self.global.iter().cloned().chain(tail).collect()
        };
        let metered = self.metrics.as_ref().map(|m| Metered {
            routes: self
                .routes
                .iter()
                .map(|(_, path, _)| m.operation(Kind::Http, path))
                .collect(),
            unmatched: m.operation(Kind::Http, UNMATCHED),
        });
        Arc::new(App {
            metered,
            early: with_global(vec![named("early_answer", early_answer)]),
            not_found: with_global(self.no_route.clone()),
            method_not_allowed: with_global(self.no_method.clone()),
            redirect: with_global(vec![named("redirect", trailing_slash_redirect)]),
            router: self.router,
            body_limit: self.body_limit,
            body_timeout: self.body_timeout,
            on_body_timeout: self.on_body_timeout,
            trace: self.trace,
        })
    }
}

/// A set of routes sharing a path prefix and middleware. Groups nest.
pub struct Group<'e> {
    engine: &'e mut Engine,
    prefix: String,
    middleware: Vec<Handler>,
}

impl Group<'_> {
    /// Add middleware for the routes registered through this group afterwards.
    pub fn use_middleware(&mut self, h: Handler) {
        self.middleware.push(h);
    }

    /// A nested group: prefixes and middleware add up.
    pub fn group(&mut self, prefix: &str) -> Group<'_> {
        Group {
            prefix: join_paths(&self.prefix, prefix),
            middleware: self.middleware.clone(),
            engine: self.engine,
        }
    }

    /// Register `handlers` under the group's prefix.
    pub fn handle(
        &mut self,
        method: Method,
        path: &str,
        handlers: Vec<Handler>,
    ) -> Result<(), InsertError> {
        let full = join_paths(&self.prefix, path);
        self.engine
            .add_route(method, &full, &self.middleware, handlers)
    }

    verbs!();
}

/// Join a group prefix and a relative path as Gin's `joinPaths` does: one
/// slash between them, and a trailing slash of `rel` kept.
fn join_paths(prefix: &str, rel: &str) -> String {
    if rel.is_empty() {
        return prefix.to_string();
    }
    let mut out = prefix.trim_end_matches('/').to_string();
    if !rel.starts_with('/') {
        out.push('/');
    }
    out.push_str(rel);
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// What the router finds for a path: the chain and the route's parameter
/// names (so a request's parameters need not copy them).
struct Route {
    chain: Arc<[Handler]>,
    names: Arc<[Box<str>]>,
    /// Position in the route table (the index of its metrics series).
    id: usize,
}

/// The metrics series of an app: one per route (by route id) and the one
/// shared by unmatched requests.
struct Metered {
    routes: Box<[Arc<Operation>]>,
    unmatched: Arc<Operation>,
}

/// A frozen engine, ready to serve.
pub struct App {
    router: Router<Route>,
    metered: Option<Metered>,
    /// The chain of the answers given before the route's (413, 408, 400).
    early: Arc<[Handler]>,
    not_found: Arc<[Handler]>,
    method_not_allowed: Arc<[Handler]>,
    redirect: Arc<[Handler]>,
    body_limit: usize,
    body_timeout: Duration,
    on_body_timeout: BodyTimeoutAnswer,
    trace: bool,
}

impl Service for App {
    fn call(
        &self,
        req: Request<Incoming>,
        remote: SocketAddr,
    ) -> BoxFuture<'static, Response<Body>> {
        self.handle(req, remote)
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
    pub fn handle<B>(
        &self,
        req: Request<B>,
        remote: SocketAddr,
    ) -> BoxFuture<'static, Response<Body>>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let (parts, body) = req.into_parts();
        let chosen = self.choose(&parts);
        let read = ReadLimits {
            bytes: self.body_limit,
            time: self.body_timeout,
            on_timeout: self.on_body_timeout,
        };
        let operation = self.metered.as_ref().map(|m| {
            chosen
                .route_id
                .and_then(|id| m.routes.get(id))
                .unwrap_or(&m.unmatched)
                .clone()
        });
        let (early, trace) = (self.early.clone(), self.trace);
        Box::pin(async move {
            let start = Instant::now();
            // Every answer is counted, those given before a chain included;
            // under the operation a self-routing handler named, if any.
            let count = |resp: Response<Body>| {
                let named = resp.extensions().get::<Served>().map(|s| &s.0);
                if let Some(op) = named.or(operation.as_ref()) {
                    op.observe_http(resp.status(), start.elapsed());
                }
                resp
            };
            let body = match read_body(&parts, body, read).await {
                Ok(body) => body,
                Err(answer) => {
                    let c = Context::new(
                        parts,
                        Bytes::new(),
                        remote,
                        start,
                        PathParams::none(),
                        early,
                    );
                    return count(answer_early(c, answer, trace).await);
                }
            };
            let mut c = Context::new(parts, body, remote, start, chosen.params, chosen.chain);
            if let Some(location) = chosen.redirect_to {
                c.set(TSR_LOCATION, location);
            }
            if let Some(allow) = chosen.allow {
                c.set_header(ALLOW, &allow);
            }
            count(run(c, trace).await)
        })
    }

    /// The chain for this request, as the router decides: the route's, the
    /// trailing-slash redirect, 405 (with the methods to `Allow`) or 404.
    fn choose(&self, parts: &http::request::Parts) -> Chosen {
        let path = parts.uri.path();
        let fallback = |chain: &Arc<[Handler]>| Chosen {
            chain: chain.clone(),
            params: PathParams::none(),
            allow: None,
            redirect_to: None,
            route_id: None,
        };
        match self.router.lookup(&parts.method, path) {
            Lookup::Found { value, params } => Chosen {
                chain: value.chain.clone(),
                params: PathParams::from_lookup(&value.names, path, &params),
                allow: None,
                redirect_to: None,
                route_id: Some(value.id),
            },
            Lookup::RedirectTrailingSlash { location } => Chosen {
                redirect_to: Some(location),
                ..fallback(&self.redirect)
            },
            Lookup::MethodNotAllowed { allowed } => {
                let allow = allowed.iter().map(Method::as_str).collect::<Vec<_>>();
                Chosen {
                    allow: Some(allow.join(", ")),
                    ..fallback(&self.method_not_allowed)
                }
            }
            Lookup::NotFound => fallback(&self.not_found),
        }
    }
}

/// What [`App::choose`] picked for one request.
struct Chosen {
    chain: Arc<[Handler]>,
    params: PathParams,
    /// For 405: the value of the `Allow` header.
    allow: Option<String>,
    /// For the trailing-slash redirect: where to.
    redirect_to: Option<String>,
    /// The route found, for its metrics series.
    route_id: Option<usize>,
}

/// The bounds on reading a request body.
#[derive(Clone, Copy)]
struct ReadLimits {
    bytes: usize,
    time: Duration,
    on_timeout: BodyTimeoutAnswer,
}

/// The whole body, or the answer to give instead (413, 408, 400).
async fn read_body<B>(
    parts: &http::request::Parts,
    body: B,
    limits: ReadLimits,
) -> Result<Bytes, Response<Body>>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let declared_too_large = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limits.bytes as u64);
    if declared_too_large {
        return Err(too_large(limits.bytes));
    }
    // A body that is already complete (GET, or a test's `Full`) needs no clock.
    if body.is_end_stream() {
        return Ok(Bytes::new());
    }
    let collect = Limited::new(body, limits.bytes).collect();
    let Ok(read) = tokio::time::timeout(limits.time, collect).await else {
        let mut resp = (limits.on_timeout)(limits.time);
        resp.headers_mut()
            .insert(CONNECTION, http::HeaderValue::from_static("close"));
        return Err(resp);
    };
    match read {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(too_large(limits.bytes))
        }
        Err(e) => Err(bad_body(&e.to_string())),
    }
}

/// Run `c`'s chain from the start; then the trace (and the log lines held
/// behind it) if tracing, and the response.
async fn run(mut c: Context, trace: bool) -> Response<Body> {
    if trace {
        c.start_trace();
    }
    c.next().await;
    if let Some(mut t) = c.take_trace() {
        t.finish(c.response_status());
        log::stdout().line(|buf| {
            for line in t.text().lines() {
                buf.extend_from_slice(b"[trace] ");
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
            }
            buf.extend_from_slice(t.held());
        });
    }
    into_response(c)
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
async fn answer_early(mut c: Context, answer: Response<Body>, trace: bool) -> Response<Body> {
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
    run(c, trace).await
}

/// The last handler of the early chain: writes the held [`EarlyAnswer`].
fn early_answer(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let held = c
            .get::<EarlyAnswer>(EARLY_ANSWER)
            .map(|a| (a.status, a.headers.clone(), a.body.clone()));
        if let Some((status, headers, body)) = held {
            c.set_response(status, headers, body);
        }
    })
}

/// The operation a handler named under [`OPERATION_KEY`], carried from its
/// context to the count.
#[derive(Clone)]
struct Served(Arc<Operation>);

fn into_response(c: Context) -> Response<Body> {
    let served = c.get::<Arc<Operation>>(OPERATION_KEY).cloned();
    let draft = c.response;
    let mut resp = Response::new(types::full(draft.body.freeze()));
    *resp.status_mut() = draft.status;
    *resp.headers_mut() = draft.headers;
    if let Some(op) = served {
        resp.extensions_mut().insert(Served(op));
    }
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
    resp.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

fn too_large(limit: usize) -> Response<Body> {
    json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &serde_json::json!({ "error": format!("request body too large (limit {limit} bytes)") }),
    )
}

fn bad_body(reason: &str) -> Response<Body> {
    json_response(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({ "error": format!("cannot read request body: {reason}") }),
    )
}

/// The default answer past the body time-out: 408 with a JSON error.
fn request_timeout(limit: Duration) -> Response<Body> {
    json_response(
        StatusCode::REQUEST_TIMEOUT,
        &serde_json::json!({ "error": format!("request body not received within {limit:?}") }),
    )
}

fn default_not_found(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move { c.string(StatusCode::NOT_FOUND, "404 page not found") })
}

fn default_method_not_allowed(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move { c.string(StatusCode::METHOD_NOT_ALLOWED, "405 method not allowed") })
}

/// Gin's RedirectTrailingSlash: 301 for GET, 307 for other methods so that
/// the client repeats the method and body.
fn trailing_slash_redirect(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let mut location = c.get::<String>(TSR_LOCATION).cloned().unwrap_or_default();
        if let Some(q) = c.uri().query() {
            location.push('?');
            location.push_str(q);
        }
        let status = if c.method() == Method::GET {
            StatusCode::MOVED_PERMANENTLY
        } else {
            StatusCode::TEMPORARY_REDIRECT
        };
        c.redirect(status, &location);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    fn remote() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[tokio::test]
    async fn app_answers_any_body_type_without_a_socket() {
        let mut e = Engine::bare();
        e.post(
            "/echo/:word",
            named("echo", |c| {
                Box::pin(async move {
                    let text = format!("{} {}", c.param("word").unwrap_or(""), c.body().len());
                    c.string(StatusCode::OK, text)
                })
            }),
        )
        .unwrap();
        let app = e.build();
        let req = Request::post("/echo/hi")
            .body(Full::new(Bytes::from("abc")))
            .unwrap();
        let resp = app.handle(req, remote()).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"hi 3");
    }

    #[tokio::test]
    async fn answers_before_the_chain_go_through_the_global_middleware_only() {
        use std::sync::Mutex;
        static SEEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
        // A bare engine: no logger, so nothing logs; its own middleware
        // sees the 413 as it sees any answer.
        let mut e = Engine::bare();
        e.use_middleware(named("watch", |c| {
            Box::pin(async move {
                c.next().await;
                SEEN.lock().unwrap().push(c.response_status().as_u16());
            })
        }));
        e.post(
            "/upload",
            named("never", |c| {
                Box::pin(async move { c.string(StatusCode::OK, "stored") })
            }),
        )
        .unwrap();
        e.body_limit(4);
        let app = e.build();
        let req = Request::post("/upload")
            .body(Full::new(Bytes::from("too long")))
            .unwrap();
        let resp = app.handle(req, remote()).await;
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            resp.headers()[CONTENT_TYPE],
            "application/json; charset=utf-8"
        );
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            &body[..],
            br#"{"error":"request body too large (limit 4 bytes)"}"#
        );
        assert_eq!(*SEEN.lock().unwrap(), [413]);
    }

    #[tokio::test]
    async fn group_offers_every_verb_of_the_engine() {
        let mut e = Engine::bare();
        let ok = || {
            named("ok", |c| {
                Box::pin(async move { c.string(StatusCode::OK, "ok") })
            })
        };
        {
            let mut g = e.group("/g");
            g.get("/x", ok()).unwrap();
            g.post("/x", ok()).unwrap();
            g.put("/x", ok()).unwrap();
            g.delete("/x", ok()).unwrap();
            g.patch("/x", ok()).unwrap();
            g.head("/x", ok()).unwrap();
            g.options("/x", ok()).unwrap();
        }
        let app = e.build();
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
            let req = Request::builder()
                .method(method)
                .uri("/g/x")
                .body(Full::new(Bytes::new()))
                .unwrap();
            assert_eq!(
                app.handle(req, remote()).await.status(),
                StatusCode::OK,
                "{method}"
            );
        }
    }

    #[test]
    fn route_table_lists_each_route_with_its_chain_length_and_names() {
        let mut e = Engine::new();
        e.handle(
            Method::GET,
            "/index",
            vec![
                named("token_check", |c| Box::pin(async move { c.next().await })),
                crate::web::chain::handler(|c| {
                    Box::pin(async move { c.string(StatusCode::OK, "") })
                }),
            ],
        )
        .unwrap();
        assert_eq!(
            e.route_table(),
            ["GET    /index --> 4 handlers (logger, recovery, token_check, #3)"]
        );
    }

    #[test]
    fn group_prefixes_join_with_one_slash() {
        let cases = [
            ("/v1", "/login", "/v1/login"),
            ("/v1/", "/login", "/v1/login"),
            ("/v1", "login", "/v1/login"),
            ("/v1", "", "/v1"),
            ("/v1", "/x/", "/v1/x/"),
            ("", "/x", "/x"),
            ("/", "/", "/"),
        ];
        for (p, r, want) in cases {
            assert_eq!(join_paths(p, r), want, "{p} + {r}");
        }
    }
}
