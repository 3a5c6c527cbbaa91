//! The token-auth black-box tests: start the real service on 127.0.0.1:0
//! with a manual clock and a temporary database, and talk to it through
//! [`super::http`] (optionally from another loopback address, to play a
//! different client IP).

use bytes::Bytes;
use handwire::server::{self, Options};
use handwire::services::token_auth::routes;
use handwire::services::token_auth::service::{AuthService, Settings};
use handwire::services::token_auth::store::NewUser;
use handwire::services::token_auth::user::{Role, User};
use handwire::services::token_auth::ManualClock;
use http::{Method, StatusCode};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use super::http::{Client, Proto, Reply};

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
        TempDb {
            path: super::temp_path(tag, ".db"),
        }
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
    let app = routes::engine(Arc::clone(&service), true)
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
        Client::new(Proto::H1)
            .from(from)
            .request(Method::POST, &self.url(path), &headers, body.to_string())
            .await
    }

    /// GET with an `Authorization` header value (or none).
    pub async fn get_auth(&self, path: &str, authorization: Option<&str>) -> Reply {
        let headers: Vec<(&str, &str)> = authorization
            .map(|a| ("authorization", a))
            .into_iter()
            .collect();
        Client::new(Proto::H1)
            .request(Method::GET, &self.url(path), &headers, Bytes::new())
            .await
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
        Client::new(Proto::H1)
            .request(
                Method::POST,
                &self.url("/auth/logout"),
                &headers,
                body.to_string(),
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
            .passwords()
            .hash(password.to_string())
            .await
            .expect("hash");
        self.service
            .accounts()
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
