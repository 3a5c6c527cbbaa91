//! An HTTP/JSON gateway to unary gRPC methods, derived at start-up from
//! their `google.api.http` options, as grpc-gateway and Kratos do, by hand.
//!
//! [`Gateway::new`] takes the parsed `.proto` files and one
//! [`UnaryMethod`] per method of a service (the table the gRPC server
//! registers too); every rule is compiled and checked once (a bad
//! template, an unknown or repeated path field, an unknown body field is a
//! [`GatewayError`] naming `file:line` and the method). A method without a
//! rule is not exposed over HTTP. [`Gateway::serve`] answers one request:
//! route match, request → input message ([`routes`]), the handler, reply →
//! JSON ([`codec`]); failures are Kratos JSON ([`error`]).
//!
//! Route choice: the request's last segment loses a `:verb` only if some
//! route declares that verb ([`template::split_path`]); then, among the
//! routes of the request's method whose template matches, the one Google's
//! transcoder would pick wins ([`template::Template::precedence_key`]: the
//! leftmost segment where two templates differ decides, a literal before
//! `*` before `**`); proto order decides only between templates of the
//! same shape. Else the engine router's own decision
//! ([`Miss::decide`]): a redirect when the path with one trailing slash more
//! or less has a route of the method; a 405 with `Allow` when other methods
//! match; a 404.
//!
//! - [`template`]: the path-template grammar of `google/api/http.proto`.
//! - [`routes`]: rules → routes, body/query/path → input JSON.
//! - [`codec`]: JSON ↔ protobuf bytes by descriptor.
//! - [`error`]: a [`Failure`] as a Kratos error body, `HTTPStatusFromCode`.
//! - [`openapi`]: the OpenAPI 3.0.3 document of the routes.
//! - [`validate`]: the `buf.validate` rules, checked before a method runs.

pub(crate) mod codec;
pub(crate) mod error;
pub mod openapi;
pub(crate) mod routes;
pub(crate) mod template;
pub(crate) mod validate;

use std::collections::HashSet;
use std::fmt;

use bytes::Bytes;
use http::header::ALLOW;
use http::StatusCode;

use crate::ops::metrics::{Kind, Metrics, OPERATION_KEY};
use crate::protocol::grpc::descriptor::ParsedFile;
use crate::protocol::grpc::{Code, Failure, UnaryMethod};
use crate::web::chain::Context;
use crate::web::reply::echo;
use crate::web::router::{self, Miss};
pub use codec::Pool;
pub use error::{error_body, http_status, ErrorBody};
pub use routes::{BodyRule, Route};
pub use template::{split_path, Template};

/// A rule that cannot become a route, or a method table that does not fit
/// the service: `file:line: method Service.Method: what`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayError {
    /// The `.proto` file.
    pub file: String,
    /// The line of the rule (0 when none applies).
    pub line: usize,
    /// `helloworld.v1.Greeter.SayHello`.
    pub method: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: method {}: {}",
            self.file, self.line, self.method, self.message
        )
    }
}

impl std::error::Error for GatewayError {}

/// The outcome of [`Gateway::find`].
pub enum Found<'g> {
    /// This route, with its variables' values (or why they do not decode).
    Route(&'g Route, Result<Vec<String>, template::MatchError>),
    /// No route of the request's method: redirect, 405 or 404, decided as
    /// the engine's router decides.
    Miss(Miss),
}

/// The compiled routes of one service.
pub struct Gateway {
    pool: Pool,
    routes: Vec<Route>,
    /// Indexes into `routes`, in the order `find` tries them.
    order: Vec<usize>,
    verbs: HashSet<String>,
}

impl Gateway {
    /// Compiles the HTTP rules of `service` (fully qualified) found in
    /// `files`. `methods` must hold exactly the service's methods.
    pub fn new(
        files: &[ParsedFile],
        service: &str,
        methods: &[(&str, UnaryMethod)],
    ) -> Result<Gateway, GatewayError> {
        let pool = Pool::new(files.iter().map(|f| &f.descriptor));
        let found = files.iter().find_map(|f| {
            let fd = &f.descriptor;
            let prefix = match fd.package() {
                "" => String::new(),
                p => format!("{p}."),
            };
            fd.service
                .iter()
                .find(|s| format!("{prefix}{}", s.name()) == service)
                .map(|s| (f, s))
        });
        let Some((file, svc)) = found else {
            return Err(GatewayError {
                file: String::new(),
                line: 0,
                method: service.to_owned(),
                message: "no such service in the files given".into(),
            });
        };
        let file_name = file.descriptor.name();
        let table_error = |method: &str, message: &str| GatewayError {
            file: file_name.to_owned(),
            line: 0,
            method: format!("{service}.{method}"),
            message: message.to_owned(),
        };
        for (name, _) in methods {
            if !svc.method.iter().any(|m| m.name() == *name) {
                return Err(table_error(name, "has a handler but is not in the service"));
            }
        }
        let mut routes: Vec<Route> = Vec::new();
        for m in &svc.method {
            let Some((_, handler)) = methods.iter().find(|(n, _)| *n == m.name()) else {
                return Err(table_error(
                    m.name(),
                    "is declared in the .proto but has no handler",
                ));
            };
            let rule = file
                .http_rules
                .iter()
                .find(|r| r.service == service && r.method == m.name());
            let Some(rule) = rule else { continue };
            if m.client_streaming() || m.server_streaming() {
                return Err(table_error(
                    m.name(),
                    "streaming methods cannot have HTTP rules",
                ));
            }
            for route in routes::compile(
                &pool,
                file_name,
                rule,
                m.input_type(),
                m.output_type(),
                handler,
            )? {
                if let Some(twin) = routes.iter().find(|r| {
                    r.http_method == route.http_method
                        && r.template.source() == route.template.source()
                }) {
                    return Err(GatewayError {
                        file: file_name.to_owned(),
                        line: route.line,
                        method: format!("{service}.{}", m.name()),
                        message: format!(
                            "{} {} is already bound to {} ({})",
                            route.http_method,
                            route.template.source(),
                            twin.method,
                            twin.origin
                        ),
                    });
                }
                routes.push(route);
            }
        }
        let verbs = routes
            .iter()
            .filter_map(|r| r.template.verb().map(str::to_owned))
            .collect();
        let mut order: Vec<usize> = (0..routes.len()).collect();
        // Stable: equal keys keep proto order.
        order.sort_by_cached_key(|&i| routes[i].template.precedence_key());
        Ok(Gateway {
            pool,
            routes,
            order,
            verbs,
        })
    }

    /// Count the requests of each route in `metrics`, labelled with the
    /// route's template (`/helloworld/{name}`): the gateway serves behind
    /// the engine's fallback, where the engine alone would count them all
    /// as unmatched.
    pub fn meter(&mut self, metrics: &Metrics) {
        for route in &mut self.routes {
            route.operation = Some(metrics.operation(Kind::Http, route.template.source()));
        }
    }

    /// The routes, in proto order.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The routes in the order a request tries them (see the module
    /// documentation): the route table printed at start-up.
    pub fn routes_by_precedence(&self) -> impl Iterator<Item = &Route> {
        self.order.iter().map(|&i| &self.routes[i])
    }

    /// One line per route, in the order a request tries them:
    /// `GET /v1/{name=shelves/*} -> library.v1.Library.GetBook (walks /v1/shelves/*)`.
    pub fn route_table(&self) -> Vec<String> {
        self.routes_by_precedence()
            .map(|r| {
                format!(
                    "{} {} -> {}.{} (walks {})",
                    r.http_method,
                    r.template.source(),
                    r.service,
                    r.method,
                    r.template.walk()
                )
            })
            .collect()
    }

    /// The messages and enums of the files.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Which route serves `method` on the raw `path`, in the order
    /// described in the module documentation.
    pub fn find(&self, method: &http::Method, raw: &str) -> Found<'_> {
        let path = template::split_path(raw, |v| self.verbs.contains(v));
        let mut allowed = Vec::new();
        for route in self.routes_by_precedence() {
            if let Some(values) = route.template.matches(&path) {
                if route.http_method == method {
                    return Found::Route(route, values);
                }
                allowed.push(route.http_method.clone());
            }
        }
        let matches_here = |other: &str| {
            let split = template::split_path(other, |v| self.verbs.contains(v));
            self.routes
                .iter()
                .any(|r| r.http_method == method && r.template.matches(&split).is_some())
        };
        Found::Miss(Miss::decide(raw, matches_here, || allowed))
    }

    /// The input message of `route` built from a request's body, query and
    /// path values (as [`find`](Self::find) gave them), encoded: what the
    /// method's handler receives. A failure is the 400 the client gets.
    pub fn input_message(
        &self,
        route: &Route,
        body: &[u8],
        query: Option<&str>,
        values: Vec<String>,
    ) -> Result<Bytes, Failure> {
        let input = route.input_json(&self.pool, body, query, values)?;
        let bytes = self
            .pool
            .encode(&route.input, &input)
            .map_err(|e| Failure::new(Code::InvalidArgument, "CODEC", e.0))?;
        Ok(Bytes::from(bytes))
    }

    /// Answers one request (the engine's fallback chain calls this).
    pub async fn serve(&self, c: &mut Context) {
        let (route, values) = match self.find(c.method(), c.path()) {
            Found::Route(route, values) => {
                if let Some(op) = &route.operation {
                    c.set(OPERATION_KEY, op.clone());
                }
                (route, values)
            }
            Found::Miss(Miss::NotFound) => {
                let message = format!("no route for {} {}", c.method(), echo(c.path()));
                return fail(c, StatusCode::NOT_FOUND, "NOT_FOUND", &message);
            }
            Found::Miss(Miss::Redirect { location }) => {
                let (status, location) =
                    router::redirect_answer(c.method(), &location, c.uri().query());
                return c.redirect(status, &location);
            }
            Found::Miss(Miss::MethodNotAllowed { allowed }) => {
                c.set_header(ALLOW, router::allow_header(&allowed));
                return method_not_allowed(c);
            }
        };
        let answer = async {
            let values = values
                .map_err(|e| Failure::new(Code::InvalidArgument, "INVALID_ARGUMENT", e.message))?;
            if !c.body().is_empty() {
                declared_json(c.header("content-type"))?;
            }
            let bytes = self.input_message(route, c.body(), c.uri().query(), values)?;
            let framed = (route.handler)(bytes).await?;
            let message = framed
                .get(crate::protocol::grpc::frame::HEADER_LEN..)
                .unwrap_or_default();
            let mut reply = self
                .pool
                .decode(&route.output, message)
                .map_err(|e| Failure::new(Code::Internal, "INTERNAL", e.0))?;
            if let Some(field) = &route.response_body {
                let out = self.pool.message(&route.output);
                let key = out
                    .and_then(|m| m.field.iter().find(|f| f.name() == field))
                    .map_or(field.as_str(), |f| f.json_name());
                reply = reply.get(key).cloned().unwrap_or(serde_json::Value::Null);
            }
            Ok::<_, Failure>(reply)
        };
        match crate::ops::peer::scope(c.client_ip(), answer).await {
            Ok(reply) => c.json(StatusCode::OK, &reply),
            Err(f) => {
                c.json(f.http_status(), &f.body());
                c.abort();
            }
        }
    }
}

/// Answers `status` with a Kratos JSON error body
/// (`{"code":…,"reason":…,"message":…,"metadata":{}}`) and aborts the
/// chain: how the greeter's HTTP side refuses a request.
pub fn fail(c: &mut Context, status: StatusCode, reason: &str, message: &str) {
    c.json(status, &error_body(status, reason, message));
    c.abort();
}

/// The Kratos 405 for the request's method and path; the caller has set
/// `Allow`.
pub fn method_not_allowed(c: &mut Context) {
    let message = format!("method {} not allowed on {}", c.method(), echo(c.path()));
    fail(
        c,
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        &message,
    );
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.routes
                    .iter()
                    .map(|r| (r.http_method.as_str(), r.template.source())),
            )
            .finish()
    }
}

/// A request body is read only when it is declared JSON (`application/json`
/// or a `+json` type), as Kratos picks its codec by `Content-Type` and
/// answers 400 `CODEC` for one it has not registered: a cross-origin page's
/// "simple" `text/plain` POST (no preflight) is refused, not read as JSON.
fn declared_json(content_type: Option<&str>) -> Result<(), Failure> {
    if crate::web::bind::declares_json(content_type) {
        return Ok(());
    }
    let shown = content_type.unwrap_or("(none)");
    let message = format!("unregistered Content-Type: {shown}; send the body as application/json");
    Err(Failure::new(Code::InvalidArgument, "CODEC", message))
}

#[cfg(test)]
mod tests;
