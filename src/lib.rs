//! handwire
pub mod config;
