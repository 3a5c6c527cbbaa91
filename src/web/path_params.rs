//! The path parameters a [`Context`](crate::web::chain::Context) hands to its
//! handlers, kept without copying them out of the request.
//!
//! The matcher returns each value as a slice of the request path (decoded
//! only when it holds a `%`). The context owns that path anyway (it keeps the
//! request URI), so a value is stored as a byte range of the path, and the
//! names as one shared list per route, computed at registration. Up to three
//! parameters need no heap at all, as in the matcher itself; only a value
//! that percent-decoding changed is stored as its own text.

use std::sync::Arc;

use crate::web::router::Params;

/// Up to this many parameters live inline.
const INLINE: usize = 3;

/// One value: a range of the request path, or decoded text.
#[derive(Debug, Default)]
enum Slot {
    #[default]
    Empty,
    Raw(u32, u32),
    Decoded(Box<str>),
}

/// The parameters of one matched route.
#[derive(Debug, Default)]
pub struct PathParams {
    /// The route's parameter names, in route order (shared by every request
    /// of the route).
    names: Option<Arc<[Box<str>]>>,
    len: usize,
    inline: [Slot; INLINE],
    spill: Vec<Slot>,
}

impl PathParams {
    /// No parameters.
    pub fn none() -> PathParams {
        PathParams::default()
    }

    /// The parameters of a lookup of `path` on a route whose names are
    /// `names` (as [`names_of`] found them in the route's pattern).
    pub fn from_lookup(names: &Arc<[Box<str>]>, path: &str, params: &Params<'_, '_>) -> PathParams {
        // A static route (most of them) has nothing to walk.
        if names.is_empty() {
            return PathParams::none();
        }
        let mut out = PathParams {
            names: Some(Arc::clone(names)),
            ..PathParams::default()
        };
        let base = path.as_ptr() as usize;
        for (_, value) in params.iter() {
            let start = (value.as_ptr() as usize).wrapping_sub(base);
            let slot = match path.get(start..start + value.len()) {
                // A borrowed value is a slice of `path` itself; decoded text
                // lives elsewhere, so its address falls outside the path.
                Some(same) if std::ptr::eq(same.as_ptr(), value.as_ptr()) => {
                    Slot::Raw(start as u32, (start + value.len()) as u32)
                }
                _ => Slot::Decoded(value.into()),
            };
            if out.len < INLINE {
                out.inline[out.len] = slot;
            } else {
                out.spill.push(slot);
            }
            out.len += 1;
        }
        out
    }

    /// The value of parameter `name`; `path` must be the path given to
    /// [`from_lookup`](Self::from_lookup).
    pub fn get<'a>(&'a self, path: &'a str, name: &str) -> Option<&'a str> {
        // Names are a few bytes: compared in place, not through `memcmp`.
        let same =
            |n: &str| n.len() == name.len() && n.bytes().zip(name.bytes()).all(|(a, b)| a == b);
        let index = self.names.as_ref()?.iter().position(|n| same(n))?;
        let slot = if index < INLINE {
            self.inline.get(index)?
        } else {
            self.spill.get(index - INLINE)?
        };
        match slot {
            Slot::Empty => None,
            Slot::Raw(start, end) => path.get(*start as usize..*end as usize),
            Slot::Decoded(text) => Some(text),
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
