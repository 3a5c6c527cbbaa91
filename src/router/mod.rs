//! HTTP path routing with Gin's semantics: a hand-written radix tree per
//! method that maps a request path to the value registered for it.
//!
//! - [`Router::insert`] registers `METHOD path` with static text, `:param`
//!   and a final `*catch-all`, and refuses bad or conflicting routes with an
//!   [`InsertError`] worded like Gin's start-up panics.
//! - [`Router::lookup`] answers with a [`Lookup`]: the value and its
//!   [`Params`], else a trailing-slash redirect, else the methods that would
//!   match (405), else not found.
//!
//! Static text wins over a parameter, a parameter over a catch-all, and a
//! static branch that dead-ends falls back to the parameter (Gin >= 1.8).
//! Matching runs on the raw request path; parameter values are decoded
//! afterwards.
//!
//! Files: `tree.rs` holds the [`Router`] (one tree per method) and the
//! [`Lookup`] outcome, `node.rs` the radix tree itself, `params.rs` the
//! captured values, `error.rs` the registration errors.

mod error;
mod node;
mod params;
mod tree;

pub use error::InsertError;
pub use params::Params;
pub use tree::*;

#[cfg(test)]
mod tests;
