//! HTTP path routing with Gin's semantics: a hand-written radix tree per
//! method that maps a request path to the value registered for it.
//!
//! - [`Router::insert`] registers `METHOD path` with static text, `:param`
//!   and a final `*catch-all`, and refuses bad or conflicting routes with an
//!   [`InsertError`] worded like Gin's start-up panics.
//! - [`Router::lookup`] answers with a [`Lookup`]: the value and its
//!   [`Params`], else a [`Miss`]: a trailing-slash redirect, else the methods
//!   that would match (405), else not found. [`Miss::decide`] is that
//!   decision for any set of routes (the proto gateway takes it too).
//!
//! ```
//! use handwire::web::router::{Lookup, Miss, Router};
//! use http::Method;
//!
//! let mut router = Router::new();
//! router.insert(Method::GET, "/users/new", "form")?;
//! router.insert(Method::GET, "/users/:id", "profile")?;
//! router.insert(Method::GET, "/static/*file", "files")?;
//!
//! let Lookup::Found(value, params) = router.lookup(&Method::GET, "/users/a%20b") else {
//!     panic!("no match");
//! };
//! assert_eq!((*value, params.get("id")), ("profile", Some("a b")));
//!
//! let Lookup::Found(_, params) = router.lookup(&Method::GET, "/static/css/x.css") else {
//!     panic!("no match");
//! };
//! assert_eq!(params.get("file"), Some("/css/x.css"));
//!
//! assert!(matches!(
//!     router.lookup(&Method::POST, "/users/7"),
//!     Lookup::Miss(Miss::MethodNotAllowed { allowed }) if allowed == [Method::GET]
//! ));
//! # Ok::<(), handwire::web::router::InsertError>(())
//! ```
//!
//! A literal colon is written `\:`, as in Gin >= 1.11:
//! `/v1/users\:batchGet` matches `/v1/users:batchGet` (AIP-136 custom
//! methods); a backslash before anything else is
//! [`InsertError::InvalidEscape`].
//!
//! Static text wins over a parameter at the same position, and a static
//! branch that dead-ends falls back to the parameter, at any depth: the
//! search is complete, a path any route matches is served by one. A
//! catch-all has its segment to itself. Matching runs on the raw request
//! path (Gin's `UseRawPath`); parameter values are percent-decoded
//! afterwards (`UnescapePathValues`).
//!
//! Where the same routes get another answer from Gin, and why, is the
//! table "Where handwire answers otherwise" in `docs/middleware.md` §13,
//! which `make test-gin` checks against the real Gin.
//!
//! Files: `tree.rs` holds the [`Router`] (one tree per method) and the
//! [`Lookup`] outcome, `node.rs` the radix tree itself, `miss.rs` the answer
//! when no route of the method matches, `params.rs` the captured values,
//! `error.rs` the registration errors.

mod error;
mod fixed;
mod miss;
mod node;
mod params;
mod tree;

pub use error::InsertError;
pub use fixed::clean_path;
pub use miss::{allow_header, is_local, redirect_answer, Miss};
pub use node::Shape;
pub use params::{Param, Params};
pub use tree::*;

#[cfg(test)]
mod tests;
