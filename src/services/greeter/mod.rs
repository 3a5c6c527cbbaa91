//! The greeter, in go-kratos' shape: transports ([`http`], [`grpc`])
//! call the methods of [`rpc`], which call use cases ([`biz`]), which call repositories implemented over SQLite
//! or, with the cargo feature `cluster`, over PostgreSQL with the user list
//! cached in Redis ([`data`]). [`api`] holds the hand-written wire messages
//! of `proto/helloworld/v1/greeter.proto`, whose `google.api.http` options
//! become the HTTP routes at start-up.
//!
//! [`Greeter::bind`] opens the store `data.database.driver` names and binds
//! both listeners (port 0 picks a free port, which is how the tests run it);
//! [`Greeter::serve`] runs the two servers until the shutdown future
//! completes. Several instances configured with the same PostgreSQL and
//! Redis serve the same users.

pub mod api;
pub mod biz;
pub mod config;
pub mod data;
pub(crate) mod grpc;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod rpc;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::cli;
use crate::ops::health::Probe;
use crate::ops::metrics::{self, Metrics};
use crate::protocol::gateway::{openapi, validate, Gateway, GatewayError};
use crate::protocol::grpc::descriptor::ProtoError;
use crate::protocol::grpc::health::{Health, ServingStatus};
use crate::server::tls::{self, CertError, CertStore};
use crate::server::{self, ServerError};
use crate::web::router::InsertError;
use crate::web::DebugPages;
use biz::{GreeterRepo, GreeterUsecase, Usecases, UserRepo, UserUsecase};
use config::{Config, Driver};
use data::{Data, DataError, GreeterStore, UserStore};

/// Why the greeter could not start or stopped.
#[derive(Debug)]
pub enum GreeterError {
    /// The user store could not be opened.
    Data(DataError),
    /// A shared server could not be used at start-up (a
    /// `crate::cluster::StartError`, naming `data.database.source` or
    /// `data.cache.addr`), or the driver is not built into this binary.
    Shared(Box<dyn std::error::Error + Send + Sync>),
    /// A listener could not be bound (the message names key and address).
    Bind {
        key: &'static str,
        error: ServerError,
    },
    /// The embedded `.proto` did not parse (a build defect).
    Proto(ProtoError),
    /// An HTTP rule of greeter.proto cannot become a route, or the method
    /// table does not fit the service (names file, line and method).
    Gateway(GatewayError),
    /// An HTTP route could not be registered (a build defect).
    Route(InsertError),
    /// A listener's certificate or key is unusable (the message names the
    /// key and the file).
    Tls { key: &'static str, error: CertError },
    /// A server failed while running.
    Serve(ServerError),
}

impl fmt::Display for GreeterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GreeterError::Data(e) => write!(f, "{e}"),
            GreeterError::Shared(e) => write!(f, "{e}"),
            GreeterError::Bind { key, error } => {
                write!(f, "{key}: {error}")?;
                if let ServerError::Bind { source, .. } = error {
                    f.write_str(&cli::addr_in_use_hint(source, key))?;
                }
                Ok(())
            }
            GreeterError::Proto(e) => write!(f, "embedded proto file: {e}"),
            GreeterError::Gateway(e) => write!(f, "HTTP routes from the proto: {e}"),
            GreeterError::Route(e) => write!(f, "HTTP routes: {e}"),
            GreeterError::Tls { key, error } => write!(f, "{key}: {error}"),
            GreeterError::Serve(e) => write!(f, "server stopped: {e}"),
        }
    }
}

impl std::error::Error for GreeterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GreeterError::Data(e) => Some(e),
            GreeterError::Shared(e) => Some(e.as_ref()),
            GreeterError::Bind { error, .. } => Some(error),
            GreeterError::Proto(e) => Some(e),
            GreeterError::Gateway(e) => Some(e),
            GreeterError::Route(e) => Some(e),
            GreeterError::Tls { error, .. } => Some(error),
            GreeterError::Serve(e) => Some(e),
        }
    }
}

/// A greeter with its store open and both listeners bound.
pub struct Greeter {
    http_listener: TcpListener,
    grpc_listener: TcpListener,
    http_addr: SocketAddr,
    grpc_addr: SocketAddr,
    http_app: Arc<dyn server::Service>,
    grpc_server: crate::protocol::grpc::Server,
    http_tls: Option<Arc<CertStore>>,
    grpc_tls: Option<Arc<CertStore>>,
    options: server::Options,
    store: String,
    routes: Vec<String>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

/// The repositories `Greeter::bind` opened, and what they are.
struct Stores {
    greetings: Arc<dyn GreeterRepo>,
    users: Arc<dyn UserRepo>,
    description: String,
    /// Group-commit batch sizes (SQLite only; PostgreSQL commits per call).
    batch_sizes: Option<Arc<metrics::Histogram>>,
}

impl Stores {
    /// The SQLite file (or `:memory:`) at `source`.
    async fn sqlite(source: &str) -> Result<Stores, GreeterError> {
        let data = Data::open_async(source.to_owned())
            .await
            .map_err(GreeterError::Data)?;
        Ok(Stores {
            batch_sizes: Some(data.batch_sizes()),
            greetings: Arc::new(GreeterStore::new(data.clone())),
            users: Arc::new(UserStore::new(data)),
            description: format!("store: SQLite database {source:?}"),
        })
    }

    /// PostgreSQL at `data.database.source`, each call bounded by
    /// [`Config::database_timeout`], and the user list cached in Redis at
    /// `data.cache.*`.
    #[cfg(feature = "cluster")]
    async fn shared(config: &Config) -> Result<Stores, GreeterError> {
        use data::cache::CachedUsers;
        use data::postgres::{self, PgStore};
        let shared = |e: crate::cluster::StartError| GreeterError::Shared(Box::new(e));
        let source = &config.data.database.source;
        let store = PgStore::connect(source, config.database_timeout())
            .await
            .map_err(shared)?;
        let store = Arc::new(store);
        let cache = &config.data.cache;
        let url = cache.url();
        let redis = crate::cluster::redis(
            "data.cache.addr",
            &url,
            cache.read_timeout,
            cache.write_timeout,
        )
        .await
        .map_err(shared)?;
        Ok(Stores {
            greetings: store.clone(),
            users: Arc::new(CachedUsers::new(store, redis, cache.read_timeout)),
            description: format!(
                "store: PostgreSQL {} (schema {}), user list cached in Redis {url}",
                postgres::describe(source),
                postgres::SCHEMA
            ),
            batch_sizes: None,
        })
    }

    /// Refused: PostgreSQL is not built in (a checked [`Config`] never gets
    /// here; one built by hand can).
    #[cfg(not(feature = "cluster"))]
    async fn shared(config: &Config) -> Result<Stores, GreeterError> {
        Err(GreeterError::Shared(Box::new(
            config::ConfigError::DriverNotBuiltIn {
                value: crate::config::quote(&config.data.database.driver),
            },
        )))
    }
}

impl Greeter {
    /// Opens the store named by `config` and binds both addresses.
    pub async fn bind(config: &Config) -> Result<Greeter, GreeterError> {
        Greeter::bind_with_pages(config, None).await
    }

    /// [`bind`](Self::bind), the HTTP engine serving the debug pages
    /// (`--debug-pages`) when `pages` is given.
    pub async fn bind_with_pages(
        config: &Config,
        pages: Option<DebugPages>,
    ) -> Result<Greeter, GreeterError> {
        let stores = match config.data.database.kind() {
            Driver::Sqlite => Stores::sqlite(&config.data.database.source).await?,
            Driver::Postgres => Stores::shared(config).await?,
        };
        let metrics = Metrics::new();
        if let Some(sizes) = stores.batch_sizes {
            metrics.add_histogram(
                "greeter_store_batch_size",
                "Writes per group-commit transaction of the SQLite store.",
                sizes,
            );
        }
        let usecases = Arc::new(Usecases {
            greeter: GreeterUsecase::new(stores.greetings),
            users: UserUsecase::new(stores.users),
        });
        let health = Arc::new(Health::new());
        health.set_serving_status(api::SERVICE, ServingStatus::Serving);
        let files = api::parsed_files().map_err(GreeterError::Proto)?;
        // The buf.validate rules of greeter.proto run before every method,
        // whichever transport called it, and before the per-client limits
        // (a request they refuse is not counted).
        let methods = limits::limit_registrations(
            rpc::methods(&usecases),
            "UserRegister",
            config.limits.registrations_per_minute,
        );
        let methods = validate::validated(&files, api::SERVICE, methods);
        let mut gateway =
            Gateway::new(&files, api::SERVICE, &methods).map_err(GreeterError::Gateway)?;
        gateway.meter(&metrics);
        let routes = gateway.route_table();
        let document = openapi::document(&gateway, &files, &api::openapi_info());
        let grpc_server = grpc::server(
            &methods,
            &files,
            config.server.grpc.timeout,
            config.log.access,
            &metrics,
            health.clone(),
        )
        .map_err(GreeterError::Proto)?;
        // Certificates before ports: a bad file is a start-up error that
        // names it, and nothing is bound yet.
        let certs = |key: &'static str, files: &Option<config::TlsFiles>| {
            files
                .as_ref()
                .map(|f| CertStore::load(&f.cert_file, &f.key_file))
                .transpose()
                .map_err(|error| GreeterError::Tls { key, error })
        };
        let http_tls = certs("server.http.tls", &config.server.http.tls)?;
        let grpc_tls = certs("server.grpc.tls", &config.server.grpc.tls)?;
        let http_app = http::app(
            Arc::new(gateway),
            Arc::new(document),
            config,
            &metrics,
            readiness(&health, &usecases),
            pages,
            grpc_server.clone(),
        )
        .map_err(GreeterError::Route)?;
        let bind = |key: &'static str, addr: String| async move {
            let listener = server::bind(&addr)
                .await
                .map_err(|error| GreeterError::Bind { key, error })?;
            let local = listener.local_addr().map_err(|source| GreeterError::Bind {
                key,
                error: ServerError::Bind { addr, source },
            })?;
            Ok::<_, GreeterError>((listener, local))
        };
        let (http_listener, http_addr) =
            bind("server.http.addr", config.server.http.addr.clone()).await?;
        let (grpc_listener, grpc_addr) =
            bind("server.grpc.addr", config.server.grpc.addr.clone()).await?;
        Ok(Greeter {
            http_listener,
            grpc_listener,
            http_addr,
            grpc_addr,
            http_app,
            grpc_server,
            http_tls,
            grpc_tls,
            options: server::Options::default(),
            store: stores.description,
            routes,
            metrics,
            health,
        })
    }

    /// What the greeter stores in, for the start-up log: `store: SQLite
    /// database "greeter.db"`, or the PostgreSQL server (without its
    /// password) and the Redis one.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// The HTTP routes derived from greeter.proto, one line each, in the
    /// order a request tries them (see docs/proto-http.md), for the
    /// start-up log.
    pub fn routes(&self) -> &[String] {
        &self.routes
    }

    /// Serve both listeners with `options` (time-outs, connection cap,
    /// shutdown grace) instead of the defaults; the gRPC listener keeps
    /// speaking HTTP/2 only.
    pub fn with_server_options(mut self, options: server::Options) -> Greeter {
        self.options = options;
        self
    }

    /// Where the HTTP server listens.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Where the gRPC server listens.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc_addr
    }

    /// Whether the HTTP listener serves TLS (`server.http.tls`).
    pub fn http_tls(&self) -> bool {
        self.http_tls.is_some()
    }

    /// Whether the gRPC listener serves TLS (`server.grpc.tls`).
    pub fn grpc_tls(&self) -> bool {
        self.grpc_tls.is_some()
    }

    /// The gRPC health service's statuses (`""` and `helloworld.v1.Greeter`
    /// start SERVING).
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Serves HTTP (1.1 and h2c) and gRPC (h2 only) until `shutdown`
    /// completes, then lets in-flight requests finish. Both listeners draw
    /// on one connection budget (`options.connections`, by default the
    /// process budget): the greeter never holds more connections than that,
    /// however they split between the two ports. Draining starts by turning
    /// every health status NOT_SERVING (and `/readyz` 503), and only then do
    /// the listeners close.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GreeterError> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let health = self.health.clone();
        tokio::spawn(async move {
            shutdown.await;
            health.shutdown();
            let _ = stop_tx.send(true);
        });
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            // An error means the sender is gone: stop as well.
            let _ = rx.wait_for(|stop| *stop).await;
        };
        // SIGHUP re-reads both listeners' certificate files.
        tls::reload_on_sighup(
            self.http_tls
                .iter()
                .chain(&self.grpc_tls)
                .cloned()
                .collect(),
        );
        let http = server::serve(
            self.http_listener,
            self.http_app,
            server::Options {
                connection_gauge: Some(self.metrics.connections(metrics::Kind::Http)),
                tls: self.http_tls,
                ..self.options.clone()
            },
            stopped(stop_rx.clone()),
        );
        let grpc = server::serve(
            self.grpc_listener,
            Arc::new(self.grpc_server),
            server::Options {
                http1: false,
                connection_gauge: Some(self.metrics.connections(metrics::Kind::Grpc)),
                tls: self.grpc_tls,
                ..self.options
            },
            stopped(stop_rx),
        );
        tokio::try_join!(http, grpc).map_err(GreeterError::Serve)?;
        Ok(())
    }
}

/// `/readyz`: not draining, and the store answers.
fn readiness(health: &Arc<Health>, usecases: &Arc<Usecases>) -> Probe {
    let (health, usecases) = (health.clone(), usecases.clone());
    Arc::new(move || {
        let (health, usecases) = (health.clone(), usecases.clone());
        Box::pin(async move {
            if health.is_shutdown() {
                return Err("draining: the server is shutting down".to_string());
            }
            usecases
                .greeter
                .ready()
                .await
                .map_err(|e| e.message().to_string())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    fn bind_error() -> ServerError {
        ServerError::Bind {
            addr: "127.0.0.1:1".into(),
            source: std::io::Error::other("address in use"),
        }
    }

    #[test]
    fn greeter_error_exposes_the_wrapped_error_as_source() {
        let proto = ProtoError {
            file: "greeter.proto".into(),
            line: 3,
            message: "expected ';'".into(),
        };
        let route = InsertError::MissingLeadingSlash { path: "x".into() };
        let gateway = GatewayError {
            file: "helloworld/v1/greeter.proto".into(),
            line: 22,
            method: "helloworld.v1.Greeter.SayHello".into(),
            message: "unknown field `nam` in message HelloRequest".into(),
        };
        let cases = [
            (
                GreeterError::Data(DataError::Closed),
                DataError::Closed.to_string(),
            ),
            (
                GreeterError::Shared(Box::new(bind_error())),
                bind_error().to_string(),
            ),
            (
                GreeterError::Bind {
                    key: "server.http.addr",
                    error: bind_error(),
                },
                bind_error().to_string(),
            ),
            (GreeterError::Proto(proto.clone()), proto.to_string()),
            (GreeterError::Gateway(gateway.clone()), gateway.to_string()),
            (GreeterError::Route(route.clone()), route.to_string()),
            (GreeterError::Serve(bind_error()), bind_error().to_string()),
        ];
        for (err, want) in cases {
            let source = err.source().unwrap_or_else(|| panic!("no source: {err}"));
            assert_eq!(source.to_string(), want, "{err}");
        }
    }

    #[test]
    fn greeter_error_source_chain_reaches_the_os_error() {
        let err = GreeterError::Bind {
            key: "server.grpc.addr",
            error: bind_error(),
        };
        let server = err.source().unwrap();
        assert!(server.is::<ServerError>());
        let os = server.source().unwrap();
        assert!(os.is::<std::io::Error>());
        assert_eq!(os.to_string(), "address in use");
    }
}
