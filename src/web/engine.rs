//! The Gin-style engine: route registration and groups; [`Engine::build`]
//! freezes them into an [`App`] (`web/app.rs`), which serves requests.
//!
//! Registration follows Gin: a route's chain is fixed when it is registered,
//! as *global middleware registered so far* + *its groups' middleware* + *its
//! handlers*. (So, as in Gin, `use_middleware` after a route does not change
//! that route; it does change the 404/405 chains, which are built last.)
//! A bad route is an [`InsertError`] value; the binaries print it and exit.
//!
//! The fallback chains (404, 405, the trailing-slash redirect and the early
//! answers to a body that could not be read) are prefixed by the global
//! middleware too, so the logger and recovery see every request, and an
//! engine without them ([`Engine::bare`]) logs nothing.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};

use crate::contract::{Bounds, DEFAULT_MIN_BODY_RATE, DEFAULT_MIN_BODY_RATE_GRACE};
use crate::ops::log;
use crate::ops::metrics::{Kind, Metrics, UNMATCHED};
use crate::web::app::{
    early_answer, edge_json, request_timeout, serve_error, trailing_slash_redirect, MissRules,
    PathRules, ReadLimits, Route,
};
use crate::web::chain::{handler_now, Handler};
use crate::web::debug::{DebugPages, Pages, RouteInfo, RouteMap};
use crate::web::middleware;
use crate::web::router::{clean_path, InsertError, Router};
use crate::web::study::Study;
use crate::web::trace::Label;

use crate::web::app::{App, BodyTimeoutAnswer, EdgeAnswer};

/// Default request body limit: 4 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 4 << 20;

/// Default time for a request body to arrive, counted from its head.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

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
    min_body_rate: (u32, Duration),
    on_edge_error: EdgeAnswer,
    trace: bool,
    debug_pages: Option<DebugPages>,
    metrics: Option<Arc<Metrics>>,
    switches: Switches,
}

/// The engine's switches, named as Gin's `Engine` fields; see the setters.
#[derive(Clone, Copy, Debug)]
struct Switches {
    redirect_trailing_slash: bool,
    redirect_fixed_path: bool,
    remove_extra_slash: bool,
    use_raw_path: bool,
    use_escaped_path: bool,
    unescape_path_values: bool,
    handle_method_not_allowed: bool,
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
        e.use_middleware(middleware::logger());
        e.use_middleware(middleware::recovery());
        e
    }

    /// [`Engine::new`] when `access_log`; else Gin's `gin.New()` with
    /// `Recovery()` alone: the same engine without the request logger (the
    /// binaries' `--no-access-log`).
    pub fn with_access_log(access_log: bool) -> Engine {
        if access_log {
            return Engine::new();
        }
        let mut e = Engine::bare();
        e.use_middleware(middleware::recovery());
        e
    }

    /// An engine with no middleware at all: it logs nothing, not even the
    /// answers given before a chain runs (413, 408, 400).
    pub fn bare() -> Engine {
        Engine {
            router: Router::new(),
            routes: Vec::new(),
            global: Vec::new(),
            no_route: Vec::new(),
            no_method: Vec::new(),
            body_limit: DEFAULT_BODY_LIMIT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            on_body_timeout: request_timeout,
            min_body_rate: (DEFAULT_MIN_BODY_RATE, DEFAULT_MIN_BODY_RATE_GRACE),
            on_edge_error: edge_json,
            trace: false,
            debug_pages: None,
            metrics: None,
            switches: Switches {
                redirect_trailing_slash: true,
                redirect_fixed_path: false,
                remove_extra_slash: false,
                use_raw_path: true,
                use_escaped_path: false,
                unescape_path_values: true,
                handle_method_not_allowed: true,
            },
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
        self.add_route(method, &join_paths("/", path), &[], handlers)
    }

    fn add_route(
        &mut self,
        method: Method,
        path: &str,
        group_mw: &[Handler],
        handlers: Vec<Handler>,
    ) -> Result<(), InsertError> {
        if !method.as_str().bytes().all(|b| b.is_ascii_uppercase()) {
            let (method, path) = (method.to_string(), path.to_string());
            return Err(InsertError::InvalidMethod { method, path });
        }
        let chain: Arc<[Handler]> = self
            .global
            .iter()
            .chain(group_mw)
            .cloned()
            .chain(handlers)
            .collect();
        if chain.is_empty() {
            let (method, path) = (method.to_string(), path.to_string());
            return Err(InsertError::NoHandlers { method, path });
        }
        let route = Route {
            chain: chain.clone(),
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

    /// What `/debug/routes` draws: the trees, the routes with their
    /// chains, and a router of the same routes for the path box.
    fn route_map(&self) -> RouteMap {
        let mut lookup = Router::new();
        let mut routes = Vec::new();
        for (id, (method, path, chain)) in self.routes.iter().enumerate() {
            let _ = lookup.insert(method.clone(), path, id);
            let chain = chain.iter().enumerate();
            routes.push(RouteInfo {
                method: method.clone(),
                path: path.clone(),
                chain: chain
                    .map(|(i, h)| Label(i as isize, h.name()).to_string())
                    .collect(),
            });
        }
        RouteMap {
            trees: self.router.shapes(&|route: &Route| route.id),
            routes,
            lookup,
        }
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

    /// Trace every request's walk of its chain (see [`crate::web::trace::Trace`])
    /// to the log sink. Off by default; when off it costs one branch per
    /// handler.
    pub fn trace(&mut self, on: bool) {
        self.trace = on;
    }

    /// Serve the debug pages (`GET /debug/walks`, `GET /debug/routes`, see
    /// [`crate::web::debug`]): every request's walk is then traced and the
    /// last ones kept. Off by default: the paths are then 404.
    pub fn debug_pages(&mut self, pages: DebugPages) {
        self.debug_pages = Some(pages);
    }

    verbs!();

    /// A route group: every route registered through it gets `prefix` and
    /// the group's middleware.
    pub fn group(&mut self, prefix: &str) -> Group<'_> {
        Group {
            engine: self,
            prefix: join_paths("/", prefix),
            middleware: Vec::new(),
        }
    }

    /// Gin's `RedirectTrailingSlash` (on): a miss whose path matches a
    /// route with the trailing slash added or removed is redirected there,
    /// 301 for GET and 307 otherwise. Off: that miss is a 405 or a 404.
    pub fn redirect_trailing_slash(&mut self, on: bool) {
        self.switches.redirect_trailing_slash = on;
    }

    /// Gin's `RedirectFixedPath` (off): a miss is retried with its path
    /// cleaned ([`clean_path`]) and matched ignoring case (and its trailing
    /// slash); a match is redirected there, 301 for GET and 307 otherwise.
    pub fn redirect_fixed_path(&mut self, on: bool) {
        self.switches.redirect_fixed_path = on;
    }

    /// Gin's `RemoveExtraSlash` (off): the path is cleaned ([`clean_path`]:
    /// `.` and `..` resolved, repeated slashes removed) before matching.
    pub fn remove_extra_slash(&mut self, on: bool) {
        self.switches.remove_extra_slash = on;
    }

    /// Gin's `UseRawPath`, on in handwire (Gin: off): match the path as the
    /// client sent it, so `%2F` stays inside a segment. Off (and
    /// [`use_escaped_path`](Self::use_escaped_path) off): match the
    /// percent-decoded path, as Gin's default does, and take parameter
    /// values from it as they are.
    pub fn use_raw_path(&mut self, on: bool) {
        self.switches.use_raw_path = on;
    }

    /// Gin's `UseEscapedPath` (off): match the path as sent, whatever
    /// [`use_raw_path`](Self::use_raw_path) says.
    pub fn use_escaped_path(&mut self, on: bool) {
        self.switches.use_escaped_path = on;
    }

    /// Gin's `UnescapePathValues` (on): when the path is matched as sent,
    /// parameter values are percent-decoded; off, they are as sent.
    pub fn unescape_path_values(&mut self, on: bool) {
        self.switches.unescape_path_values = on;
    }

    /// Gin's `HandleMethodNotAllowed`, on in handwire (Gin: off): a path
    /// that another method's route matches is answered 405 with `Allow`
    /// through the `no_method` chain. Off: 404 through `no_route`.
    pub fn handle_method_not_allowed(&mut self, on: bool) {
        self.switches.handle_method_not_allowed = on;
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

    /// The least average rate, in bytes a second, at which a request body
    /// must arrive once `grace` has passed (default 240 bytes/s after 5 s,
    /// Kestrel's; 0 turns it off). Slower, the client gets 408 and the
    /// connection is closed at once instead of at the body time-out.
    pub fn min_body_rate(&mut self, bytes_per_second: u32, grace: Duration) {
        self.min_body_rate = (bytes_per_second, grace);
    }

    /// Replace the answer given past the body time-out.
    pub fn on_body_timeout(&mut self, answer: BodyTimeoutAnswer) {
        self.on_body_timeout = answer;
    }

    /// Replace the shape of the answers the engine gives before any chain
    /// (431, 413, 400 for an unreadable body); default `{"error": message}`.
    pub fn on_edge_error(&mut self, answer: EdgeAnswer) {
        self.on_edge_error = answer;
    }

    /// Count every request in `metrics` and serve them on `GET /metrics`.
    ///
    /// This is the outermost middleware, wrapped around the whole chain by
    /// the app itself rather than being a handler in it: it sees every
    /// answer, the 413/408 given before any chain runs and a 500 from
    /// recovery included, and it works whether it is called before or after
    /// the routes are registered. Each route's series is made once, at
    /// [`build`](Self::build), labelled with the route template; requests no
    /// route matches share [`UNMATCHED`] (unless a self-routing handler names
    /// its own, [`crate::ops::metrics::OPERATION_KEY`]).
    pub fn metrics(&mut self, metrics: &Arc<Metrics>) -> Result<(), InsertError> {
        self.get("/metrics", metrics.handler())?;
        self.metrics = Some(metrics.clone());
        Ok(())
    }

    /// Freeze the routes into a servable [`App`].
    pub fn build(mut self) -> Arc<App> {
        let pages = self.debug_pages.map(Pages::new);
        for (path, h) in pages.iter().flat_map(Pages::routes) {
            // Registered last, so no route of the service is shadowed;
            // a service that has these paths keeps them.
            let _ = self.get(path, h);
        }
        if let Some(pages) = &pages {
            let _ = pages.map.set(self.route_map());
        }
        let trace = (self.trace || pages.is_some()).then(|| {
            Arc::new(Study {
                print: self.trace,
                walks: pages.map(|p| p.walks),
            })
        });
        let s = self.switches;
        let as_sent = s.use_raw_path || s.use_escaped_path;
        // A decoded path's values are not decoded a second time.
        self.router.raw_values(!as_sent || !s.unescape_path_values);
        let paths = (!as_sent || s.remove_extra_slash).then_some(PathRules {
            decoded: !as_sent,
            remove_extra_slash: s.remove_extra_slash,
        });
        let with_global = |tail: Vec<Handler>| -> Arc<[Handler]> {
            self.global.iter().cloned().chain(tail).collect()
        };
        // Gin's serveError: the status is set before the global middleware
        // and the handlers run; the default text only if nothing wrote.
        let serving_error = |status, tail: Vec<Handler>| -> Arc<[Handler]> {
            let head = serve_error(status);
            std::iter::once(head)
                .chain(self.global.iter().cloned())
                .chain(tail)
                .collect()
        };
        let route_ops = match &self.metrics {
            Some(m) => (self.routes.iter())
                .map(|(_, path, _)| m.operation(Kind::Http, path))
                .collect(),
            None => Box::default(),
        };
        let unmatched_op = self
            .metrics
            .as_ref()
            .map(|m| m.operation(Kind::Http, UNMATCHED));
        Arc::new(App {
            route_ops,
            unmatched_op,
            early: with_global(vec![handler_now("early_answer", early_answer)]),
            not_found: serving_error(StatusCode::NOT_FOUND, self.no_route.clone()),
            method_not_allowed: serving_error(
                StatusCode::METHOD_NOT_ALLOWED,
                self.no_method.clone(),
            ),
            redirect: with_global(vec![handler_now("redirect", trailing_slash_redirect)]),
            router: self.router,
            reading: ReadLimits {
                bounds: Bounds {
                    bytes: self.body_limit,
                    time: self.body_timeout,
                    min_rate: self.min_body_rate.0,
                    grace: self.min_body_rate.1,
                },
                on_timeout: self.on_body_timeout,
                on_error: self.on_edge_error,
            },
            trace,
            paths,
            misses: MissRules {
                redirect_trailing_slash: s.redirect_trailing_slash,
                redirect_fixed_path: s.redirect_fixed_path,
                handle_method_not_allowed: s.handle_method_not_allowed,
            },
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
/// Gin's `joinPaths`: `rel` joined onto `base` as Go's `path.Join` does
/// (`.` and `..` resolved, repeated slashes removed), with the trailing
/// slash `rel` ends with kept.
fn join_paths(base: &str, rel: &str) -> String {
    if rel.is_empty() {
        return base.to_string();
    }
    let mut joined = clean_path(&format!("{base}/{rel}"));
    if joined.len() > 1 && joined.ends_with('/') && !rel.ends_with('/') {
        joined.pop();
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::chain::named;
    use bytes::Bytes;
    use http::header::CONTENT_TYPE;
    use http::{Request, StatusCode};
    use http_body_util::{BodyExt, Full};
    use std::net::SocketAddr;

    /// Gin's `TestJoinPaths` (`utils_test.go`), case for case.
    #[test]
    fn join_paths_is_gins_join_paths() {
        let cases = [
            ("", "", ""),
            ("", "/", "/"),
            ("/a", "", "/a"),
            ("/a/", "", "/a/"),
            ("/a/", "/", "/a/"),
            ("/a", "/", "/a/"),
            ("/a", "/hola", "/a/hola"),
            ("/a/", "/hola", "/a/hola"),
            ("/a/", "/hola/", "/a/hola/"),
            ("/a/", "/hola//", "/a/hola/"),
        ];
        for (base, rel, want) in cases {
            assert_eq!(join_paths(base, rel), want, "{base:?} + {rel:?}");
        }
    }

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
