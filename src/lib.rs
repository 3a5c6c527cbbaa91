//! handwire
pub mod auth;
pub mod jwt;
