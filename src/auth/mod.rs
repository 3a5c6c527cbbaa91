//! Area C: token authentication.
pub mod blacklist;
pub mod clock;
pub mod config;
pub mod limiter;
pub mod oauth;
pub mod passwords;
pub mod store;
pub mod tokens;
pub mod user;
