//! The path parameters a [`Context`](crate::web::chain::Context) hands to its
//! handlers, kept without copying them out of the request.
//!
//! The matcher returns each value as a slice of the request path (decoded
//! only when it holds a `%`). The context owns that path anyway (it keeps the
//! request URI), so a value is stored as a byte range of the path, and the
//! names as one shared list per route, computed at registration; only a value
//! that percent-decoding changed is stored as its own text.

use std::borrow::Cow;
use std::sync::Arc;

use crate::web::router::Params;

/// The route's parameter names and this request's values, in route
/// order.
#[derive(Debug, Default)]
pub struct PathParams {
    /// The route's parameter names (shared by every request of the route).
    names: Option<Arc<[Box<str>]>>,
    values: Vec<Value>,
}

/// One value: a byte range of the path, or the text percent-decoding made.
#[derive(Debug)]
enum Value {
    Range(u32, u32),
    Decoded(Box<str>),
}

impl PathParams {
    /// No parameters.
    pub fn none() -> PathParams {
        PathParams::default()
    }

    /// The parameters of a lookup of `path` on a route whose names are
    /// `names` (as [`names_of`] found them in the route's pattern). `path`
    /// must be the path that was looked up: a value the lookup borrowed is
    /// kept as its range of it.
    pub fn from_lookup(names: &Arc<[Box<str>]>, path: &str, params: &Params<'_, '_>) -> PathParams {
        // A static route (most of them) has nothing to walk.
        if names.is_empty() {
            return PathParams::none();
        }
        let base = path.as_ptr() as usize;
        let mut values = Vec::with_capacity(names.len());
        params.for_each_value(|value| {
            values.push(match value {
                // A slice of `path` itself; `get` checks the range again.
                Cow::Borrowed(value) => {
                    let start = (value.as_ptr() as usize).wrapping_sub(base);
                    Value::Range(start as u32, start.wrapping_add(value.len()) as u32)
                }
                Cow::Owned(text) => Value::Decoded(text.as_str().into()),
            })
        });
        PathParams {
            names: Some(Arc::clone(names)),
            values,
        }
    }

    /// The value of parameter `name`; `path` must be the path given to
    /// [`from_lookup`](Self::from_lookup).
    pub fn get<'a>(&'a self, path: &'a str, name: &str) -> Option<&'a str> {
        let index = self.names.as_ref()?.iter().position(|n| **n == *name)?;
        match self.values.get(index)? {
            Value::Range(start, end) => path.get(*start as usize..*end as usize),
            Value::Decoded(text) => Some(text),
        }
    }
}

/// The parameter names of a route pattern, in order, as the router reads
/// them: `/book/:id/*rest` → `["id", "rest"]`. A wildcard may follow
/// literal text in its segment (`/user_:name` → `["name"]`) and runs to the
/// segment's end; `\:` is a literal colon.
pub fn names_of(pattern: &str) -> Arc<[Box<str>]> {
    let mut names = Vec::new();
    let mut rest = pattern;
    while let Some(at) = rest.find(['\\', ':', '*']) {
        if rest[at..].starts_with('\\') {
            // The escaped character is literal text.
            let skip = rest[at + 1..].chars().next().map_or(0, char::len_utf8);
            rest = &rest[at + 1 + skip..];
            continue;
        }
        let wildcard = &rest[at + 1..];
        let end = wildcard.find('/').unwrap_or(wildcard.len());
        names.push(Box::from(&wildcard[..end]));
        rest = &wildcard[end..];
    }
    names.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::router::{Lookup, Router};
    use http::Method;

    fn lookup(pattern: &str, path: &str, names: &[&str]) -> Vec<Option<String>> {
        let mut router = Router::new();
        router.insert(Method::GET, pattern, ()).unwrap();
        let Lookup::Found { params, .. } = router.lookup(&Method::GET, path) else {
            panic!("{path} did not match {pattern}");
        };
        let p = PathParams::from_lookup(&names_of(pattern), path, &params);
        names
            .iter()
            .map(|n| p.get(path, n).map(str::to_string))
            .collect()
    }

    #[test]
    fn path_params_are_ranges_of_the_path_or_decoded_text() {
        assert_eq!(
            lookup("/book/:id", "/book/42", &["id", "x"]),
            [Some("42".into()), None]
        );
        assert_eq!(
            lookup("/book/:id", "/book/caf%C3%A9", &["id"]),
            [Some("café".into())]
        );
        assert_eq!(
            lookup(
                "/a/:p1/:p2/:p3/:p4/*rest",
                "/a/1/2/3/4/x/y",
                &["p4", "rest", "p1"]
            ),
            [Some("4".into()), Some("/x/y".into()), Some("1".into())]
        );
    }

    #[test]
    fn decoded_values_past_the_inline_ones_keep_their_places() {
        assert_eq!(
            lookup(
                "/a/:p1/:p2/:p3/:p4",
                "/a/1/x%20y/3/caf%C3%A9",
                &["p4", "p2", "p3", "p1"]
            ),
            [
                Some("café".into()),
                Some("x y".into()),
                Some("3".into()),
                Some("1".into())
            ]
        );
        assert_eq!(std::mem::size_of::<PathParams>(), 40);
    }

    #[test]
    fn route_patterns_give_their_parameter_names_in_order() {
        assert_eq!(
            &*names_of("/book/:id/*rest"),
            &[Box::from("id"), Box::from("rest")]
        );
        assert!(names_of("/hello").is_empty());
    }

    #[test]
    fn a_parameter_after_literal_text_in_its_segment_is_found_by_name() {
        assert_eq!(
            lookup("/user_:name/about", "/user_gopher/about", &["name"]),
            [Some("gopher".into())]
        );
        // An escaped colon is text, not a parameter.
        assert_eq!(
            lookup("/a\\:b/:c", "/a:b/x", &["c", "b"]),
            [Some("x".into()), None]
        );
        assert_eq!(&*names_of("/v\\:1/:id"), &[Box::from("id")]);
    }
}
