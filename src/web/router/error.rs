//! Why a route could not be registered.
//!
//! Registration problems are programming mistakes in the route table, so the
//! messages repeat Gin's wording (which many people already know from its
//! start-up panics) and always name the offending path. Unlike Gin they are
//! returned as values: the caller decides whether to abort start-up.

use std::fmt;

/// A route that [`Router::insert`](super::Router::insert) refused.
///
/// Syntax problems are reported before conflicts with routes already in the
/// tree. A refused insert leaves the router as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The path does not start with `/` (this includes the empty path).
    MissingLeadingSlash {
        /// The refused path.
        path: String,
    },
    /// A `:` or `*` is not followed by a name, as in `/user/:` or `/src/*`.
    UnnamedWildcard {
        /// The refused path.
        path: String,
    },
    /// A segment holds a second `:` or `*` after its wildcard, as in `/:a:b`.
    TooManyWildcards {
        /// The segment text from the first wildcard to the next `/`.
        wildcard: String,
        /// The refused path.
        path: String,
    },
    /// A `*catch-all` is followed by more path, as in `/src/*x/y`.
    CatchAllNotAtEnd {
        /// The refused path.
        path: String,
    },
    /// A `*catch-all` does not start a segment, as in `/src*x`.
    CatchAllWithoutSlash {
        /// The refused path.
        path: String,
    },
    /// A backslash is not followed by `:` (only `\:`, a literal colon, is
    /// an escape), as in `/a\b`.
    InvalidEscape {
        /// The refused path.
        path: String,
    },
    /// The route's whole chain (global middleware, its groups' middleware
    /// and its own handlers) is empty.
    NoHandlers {
        /// The route's method.
        method: String,
        /// The refused path.
        path: String,
    },
    /// A method given to the generic `handle` is not upper-case letters.
    InvalidMethod {
        /// The refused method.
        method: String,
        /// The route's path.
        path: String,
    },
    /// The same method and path were registered before.
    AlreadyRegistered {
        /// The refused path.
        path: String,
    },
    /// At this position the tree already has a different wildcard
    /// (`:name` vs `:names`, `:id` vs `*file`, or a catch-all that would
    /// swallow the new path).
    WildcardConflict {
        /// The part of the new path that collides.
        segment: String,
        /// The refused path.
        path: String,
        /// The wildcard already registered at this position.
        wildcard: String,
        /// The registered path prefix ending with that wildcard.
        prefix: String,
    },
    /// A new `*catch-all` would hide routes already registered below its
    /// parent segment (Gin allows a catch-all only as the sole child).
    CatchAllConflict {
        /// The new catch-all, e.g. `*filepath`.
        catch_all: String,
        /// The refused path.
        path: String,
        /// The first existing segment it would hide (empty for the parent itself).
        segment: String,
        /// The registered path prefix that ends with that segment.
        prefix: String,
    },
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingLeadingSlash { path } => {
                write!(f, "path must begin with '/' in path '{path}'")
            }
            Self::UnnamedWildcard { path } => write!(
                f,
                "wildcards must be named with a non-empty name in path '{path}'"
            ),
            Self::TooManyWildcards { wildcard, path } => write!(
                f,
                "only one wildcard per path segment is allowed, has: '{wildcard}' in path '{path}'"
            ),
            Self::CatchAllNotAtEnd { path } => write!(
                f,
                "catch-all routes are only allowed at the end of the path in path '{path}'"
            ),
            Self::CatchAllWithoutSlash { path } => {
                write!(f, "no / before catch-all in path '{path}'")
            }
            Self::InvalidEscape { path } => write!(f, "invalid escape string in path '{path}'"),
            Self::NoHandlers { method, path } => write!(
                f,
                "there must be at least one handler for {method} '{path}'"
            ),
            Self::InvalidMethod { method, path } => {
                write!(f, "http method {method} is not valid for path '{path}'")
            }
            Self::AlreadyRegistered { path } => {
                write!(f, "handlers are already registered for path '{path}'")
            }
            Self::WildcardConflict {
                segment,
                path,
                wildcard,
                prefix,
            } => write!(
                f,
                "'{segment}' in new path '{path}' conflicts with existing wildcard \
                 '{wildcard}' in existing prefix '{prefix}'"
            ),
            Self::CatchAllConflict {
                catch_all,
                path,
                segment,
                prefix,
            } => write!(
                f,
                "catch-all wildcard '{catch_all}' in new path '{path}' conflicts with \
                 existing path segment '{segment}' in existing prefix '{prefix}'"
            ),
        }
    }
}

impl std::error::Error for InsertError {}
