//! Support for the integration tests, one module per concept:
//!
//! * [`http`] — the one HTTP client: send a request over HTTP/1.1 or HTTP/2
//!   (optionally from another loopback address, or over TLS to a test CA)
//!   and read status, headers and body.
//! * [`app`] — start any framework app on 127.0.0.1:0; [`gateway`] — a
//!   proto-derived gateway served alone, with methods that echo their input.
//! * [`bin`] — start one of the binaries and read its addresses.
//! * [`browser`] — a headless Chromium driven over the DevTools protocol.
//! * [`disk`] — a small tmpfs to fill, for disk-full tests (root only).
//! * [`alloc`] — a counting global allocator for the allocation tests.
//! * [`greeter`] — start the greeter with a temporary SQLite file.
//! * [`grpc`] — the one tonic client: unary calls by method path.
//! * [`drift`] — hand-written prost structs checked against a parsed `.proto`.
//! * [`token_auth`] — start the token-auth service with a manual clock.
//! * [`py`] — the Python tools of `tests/py-tools.sh` (prometheus_client).
//! * [`servers`] — private PostgreSQL and Redis servers for the scale-out tests.
//! * [`tls`] and [`fake_provider`] — a test CA and a loopback OAuth provider.
//! * [`oauth`] — token-auth configured for that provider, and a sign-in's
//!   steps as a browser takes them (with the binding cookie).
//! * [`fake_captcha`] — a loopback captcha provider (siteverify).
//!
//! Every test file compiles this folder on its own (`mod support;`) and uses
//! only part of it; the rest would be "never used" warnings in that binary,
//! so dead-code warnings are off for the whole folder.
#![allow(dead_code)]

pub mod alloc;
pub mod app;
pub mod bin;
pub mod browser;
pub mod disk;
pub mod drift;
pub mod fake_captcha;
pub mod fake_provider;
pub mod gateway;
pub mod greeter;
pub mod grpc;
pub mod http;
pub mod oauth;
pub mod py;
pub mod servers;
pub mod tls;
pub mod token_auth;
pub mod web;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A path in the temp directory unique to this process and call:
/// `handwire-{tag}-{pid}-{n}{suffix}`. Nothing is created.
pub fn temp_path(tag: &str, suffix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "handwire-{tag}-{}-{}{suffix}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}
