//! The token-auth service — login, registration, refresh, logout
//! and role checks with hand-made HS256 tokens, plus sign-in through an
//! OAuth identity provider.
//!
//! Map of the area, from the bottom up:
//!
//! - [`clock`]: injectable time, so expiry and limits are testable.
//! - [`user`]: the user record, roles, and username/email rules.
//! - [`store`]: SQLite schema and queries (blocking work off the runtime).
//! - [`passwords`]: bcrypt on the blocking pool, with timing-safe misses.
//! - [`tokens`]: claims, lifetimes, issuing and checking (on [`crate::protocol::jwt`]).
//! - [`blacklist`]: revoked token ids and their pruning.
//! - [`limiter`]: login rate limits, captcha hint, account lock-out, and
//!   registrations per client IP.
//! - [`trust`]: the root certificates an identity provider is checked against.
//! - [`config`]: the `--config` YAML (identity providers).
//! - [`pending`]: a pending OAuth sign-in (state, provider, PKCE verifier)
//!   and its caps (per client address, in all).
//! - [`oauth`]: the authorization-code flow with PKCE, a cookie binding the
//!   sign-in to its browser, and sealed tokens; and the captcha a login
//!   carries after 3 failures, verified at its provider with the same client.
//! - [`backend`]: the storage seam, one trait per kind of state (users and
//!   bindings, blacklist, login limits, pending sign-ins).
//! - [`local`]: the seam over the SQLite store and in-process state (default).
//! - `cluster` (feature `cluster`): the same state on PostgreSQL and Redis,
//!   shared by several instances.
//! - [`biz`]: the use cases — register, log in, refresh, log out,
//!   authenticate, OAuth sign-in — returning domain errors, as the greeter's.
//! - [`service`]: settings, and the use cases assembled from them.
//! - [`routes`]: the HTTP transport, thin adapters over [`biz`]: the route
//!   table, authenticate-then-authorize middleware, the OAuth sign-in's two
//!   routes, and each domain error's status and JSON body.
//!
//! Transport → use cases → data, as in the greeter: [`routes`] calls
//! [`biz`], which reaches state only through the [`backend`] traits.
//!
//! Typical use (what the `token-auth` binary does):
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use handwire::services::token_auth::{routes, service::{AuthService, Settings}};
//! use std::sync::Arc;
//! let settings = Settings::new(std::env::var("TOKEN_AUTH_SECRET")?, "token-auth.db");
//! let service = Arc::new(AuthService::connect(settings).await?);
//! let _maintenance = service.spawn_maintenance();
//! let app = routes::engine(service, true)?.build();
//! let listener = handwire::server::bind("127.0.0.1:8000").await?;
//! handwire::server::serve(listener, app, Default::default(), handwire::server::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

pub(crate) mod backend;
pub(crate) mod biz;
pub(crate) mod blacklist;
pub(crate) mod clock;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod config;
pub(crate) mod limiter;
pub(crate) mod local;
pub mod oauth;
pub(crate) mod passwords;
pub(crate) mod pending;
pub mod routes;
pub mod service;
pub mod store;
pub(crate) mod tokens;
pub(crate) mod trust;
pub mod user;

// The public surface. `config`, `routes`, `service`, `store`, `user` and
// `oauth` stay namespaces (their names read as such: `store::NewUser`,
// `user::Role`); the other modules are reached through these names, which
// are what the binary, the black-box tests and the benches use.
pub use backend::{Accounts, LoginLimits};
pub use blacklist::Revocations;
pub use clock::{Clock, ManualClock};
pub use limiter::{LimitPolicy, LoginLimiter};
pub use passwords::{Passwords, DEFAULT_COST};
pub use pending::{
    Pending, PendingSignIns, StateError, STATE_CAPACITY, STATE_PER_CLIENT, STATE_TTL,
};
pub use tokens::{Claims, TokenKind};
