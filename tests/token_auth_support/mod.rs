//! Test support for the token-auth black-box tests: start the real service
//! on 127.0.0.1:0 with a manual clock and a temporary database, and talk to
//! it with a real hyper client (optionally from another loopback address,
//! to play a different client IP).
#![allow(dead_code)]

pub mod fake_provider;
pub mod tls;

use bytes::Bytes;
use handwire::services::token_auth::clock::ManualClock;
use handwire::services::token_auth::routes;
use handwire::services::token_auth::service::{AuthService, Settings};
use handwire::services::token_auth::store::NewUser;
use handwire::services::token_auth::user::{Role, User};
use handwire::web::server::{self, Options};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Secret used by the tests (never by the binary).
pub const TEST_SECRET: &str = "test-only secret, at least 32 bytes long";
/// bcrypt cost for tests that are not about the cost.
pub const TEST_COST: u32 = 4;
/// Key for sealing provider tokens in tests.
pub const TEST_ENC_KEY: &str = "8f1c2d3e4a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5";

/// A database path in the temp directory, removed with its WAL files on drop.
pub struct TempDb {
    pub path: PathBuf,
}

impl TempDb {
    pub fn new(tag: &str) -> TempDb {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "handwire-{tag}-{}-{}.db",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        TempDb { path }
    }

    /// A direct connection, to look at what the service stored.
    pub fn connect(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(&self.path).expect("open test database")
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.connect()
            .query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A running token-auth service.
pub struct AuthServer {
    pub addr: SocketAddr,
    pub clock: Arc<ManualClock>,
    pub service: Arc<AuthService>,
    pub db: TempDb,
    _stop: tokio::sync::oneshot::Sender<()>,
    maintenance: tokio::task::JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.maintenance.abort();
    }
}

/// Start the service with test defaults; `customize` may change any setting
/// (it also learns the server's own base URL, for OAuth callbacks).
pub async fn start_with(customize: impl FnOnce(&mut Settings, &str)) -> AuthServer {
    let db = TempDb::new("token-auth");
    let clock = Arc::new(ManualClock::starting_now());
    let listener = server::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let mut settings = Settings::new(TEST_SECRET, db.path.clone());
    settings.bcrypt_cost = TEST_COST;
    settings.clock = clock.clone();
    customize(&mut settings, &format!("http://{addr}"));
    let service = tokio::task::spawn_blocking(move || AuthService::open(settings))
        .await
        .expect("setup task")
        .expect("service starts");
    let service = Arc::new(service);
    let maintenance = service.spawn_maintenance();
    let app = routes::engine(Arc::clone(&service))
        .expect("routes")
        .build();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = server::serve(listener, app, Options::default(), async {
            let _ = stopped.await;
        })
        .await;
    });
    AuthServer {
        addr,
        clock,
        service,
        db,
        _stop: stop,
        maintenance,
    }
}

pub async fn start() -> AuthServer {
    start_with(|_, _| {}).await
}

/// A reply, fully read.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// The `error` member of a JSON body.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
    pub fn str(&self, key: &str) -> String {
        self.json()[key]
            .as_str()
            .unwrap_or_else(|| panic!("no string {key:?} in {}", self.text()))
            .to_string()
    }
}

/// Send one request to `url`, from the loopback address `from` if given.
pub async fn request(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
    from: Option<IpAddr>,
) -> Reply {
    let mut connector = HttpConnector::new();
    connector.set_local_address(from);
    send(connector, method, url, headers, body.into()).await
}

/// GET `url`, `https://` allowed, trusting only `roots` (a test CA).
pub async fn get_trusting(url: &str, roots: rustls::RootCertStore) -> Reply {
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    send(connector, Method::GET, url, &[], Bytes::new()).await
}

async fn send<C: Connect + Clone + Send + Sync + 'static>(
    connector: C,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Reply {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let mut req = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(body)).expect("request");
    let resp = client
        .request(req)
        .await
        .unwrap_or_else(|e| panic!("request to {url} failed: {e}"));
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("read body").to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

impl AuthServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// POST a JSON value.
    pub async fn post(&self, path: &str, body: serde_json::Value) -> Reply {
        self.post_from(path, body, None).await
    }

    pub async fn post_from(
        &self,
        path: &str,
        body: serde_json::Value,
        from: Option<IpAddr>,
    ) -> Reply {
        let headers = [("content-type", "application/json")];
        request(
            Method::POST,
            &self.url(path),
            &headers,
            body.to_string(),
            from,
        )
        .await
    }

    /// GET with an `Authorization` header value (or none).
    pub async fn get_auth(&self, path: &str, authorization: Option<&str>) -> Reply {
        let headers: Vec<(&str, &str)> = authorization
            .map(|a| ("authorization", a))
            .into_iter()
            .collect();
        request(Method::GET, &self.url(path), &headers, Bytes::new(), None).await
    }

    /// GET with `Authorization: Bearer <token>`.
    pub async fn get_bearer(&self, path: &str, token: &str) -> Reply {
        self.get_auth(path, Some(&format!("Bearer {token}"))).await
    }

    /// POST `/auth/logout` with a bearer token and a body.
    pub async fn logout(&self, token: &str, body: &str) -> Reply {
        let auth = format!("Bearer {token}");
        let headers = [
            ("authorization", auth.as_str()),
            ("content-type", "application/json"),
        ];
        request(
            Method::POST,
            &self.url("/auth/logout"),
            &headers,
            body.to_string(),
            None,
        )
        .await
    }

    /// Register `username` with `password`; panics unless 201.
    pub async fn register(&self, username: &str, password: &str) -> serde_json::Value {
        let reply = self
            .post(
                "/auth/register",
                serde_json::json!({ "username": username, "password": password }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
        reply.json()
    }

    /// Log in; the raw reply.
    pub async fn login(&self, username: &str, password: &str) -> Reply {
        self.post(
            "/login",
            serde_json::json!({ "username": username, "password": password }),
        )
        .await
    }

    /// Create a user with `role` straight in the store (as `create-admin` does).
    pub async fn create_user(&self, username: &str, password: &str, role: Role) -> User {
        let hash = self
            .service
            .passwords
            .hash(password.to_string())
            .await
            .expect("hash");
        self.service
            .store
            .create_user(NewUser {
                username: username.into(),
                password_hash: hash,
                email: None,
                role,
            })
            .await
            .expect("create user")
    }
}

/// Decode a token's payload without verifying it (to build attacks).
pub fn payload(token: &str) -> serde_json::Value {
    use base64::Engine as _;
    let part = token.split('.').nth(1).expect("three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON payload")
}
