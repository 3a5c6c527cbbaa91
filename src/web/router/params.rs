//! The `:param` and `*catch-all` values captured by a lookup, as Gin's
//! `Params`: a list of (name, value) pairs in route order.
//!
//! The names borrow from the tree and the values from the request path; a
//! value is percent-decoded as it is captured, and only a value that holds
//! a `%` can need text of its own.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// One captured parameter: the name from the route, the value from the path.
#[derive(Clone)]
pub struct Param<'r, 'p> {
    pub name: &'r Arc<str>,
    pub value: Cow<'p, str>,
}

/// The parameters of a matched route, in the order they appear in the route.
#[derive(Clone, Default)]
pub struct Params<'r, 'p> {
    list: Vec<Param<'r, 'p>>,
    /// Values are taken as they are in the path, not decoded.
    raw: bool,
}

impl<'r, 'p> Params<'r, 'p> {
    /// An empty list (no allocation until the first value), whose values
    /// are percent-decoded unless `raw`.
    pub fn new(raw: bool) -> Self {
        Params {
            list: Vec::new(),
            raw,
        }
    }

    /// The value of the first parameter called `name`, decoded.
    pub fn get(&self, name: &str) -> Option<&str> {
        let param = self.list.iter().find(|param| **param.name == *name)?;
        Some(&param.value)
    }

    /// `(name, value)` pairs in route order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.list.iter().map(|param| (&**param.name, &*param.value))
    }

    /// The pairs as text of their own, for a context that outlives the
    /// router's borrow of the path.
    pub fn into_owned(self) -> Vec<(Arc<str>, Box<str>)> {
        let pairs = self.list.into_iter();
        pairs.map(|p| (p.name.clone(), p.value.into())).collect()
    }

    /// How many parameters were captured.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when the route has no parameters.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Appends the value `raw`, decoded if it holds a `%` (Gin's
    /// `UnescapePathValues`, on unless the list is `raw`).
    pub(crate) fn push(&mut self, name: &'r Arc<str>, raw: &'p str) {
        let value = match !self.raw && raw.contains('%') {
            true => percent_decode(raw),
            false => Cow::Borrowed(raw),
        };
        self.list.push(Param { name, value });
    }

    /// Forgets the parameters after the first `len` (used when backtracking).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.list.truncate(len);
    }
}

impl fmt::Debug for Params<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Decodes `%XX` escapes. A `%` not followed by two hex digits is kept as it
/// is, and so is the whole value if the decoded bytes are not UTF-8 (e.g.
/// `%FF`): the handler then sees exactly what the client sent. `+` is a
/// literal plus sign in a path and stays one (Gin's `QueryUnescape` would
/// turn it into a space).
pub(crate) fn percent_decode(raw: &str) -> Cow<'_, str> {
    match crate::web::urlenc::unescape(raw.as_bytes(), false) {
        Cow::Borrowed(_) => Cow::Borrowed(raw),
        Cow::Owned(bytes) => String::from_utf8(bytes)
            .map(Cow::Owned)
            .unwrap_or(Cow::Borrowed(raw)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_decodes_valid_escapes_and_keeps_the_rest_literally() {
        let cases = [
            ("plain", "plain"),
            ("a%20b", "a b"),
            ("caf%C3%A9", "café"),
            ("caf%c3%a9", "café"),
            ("a%2Fb", "a/b"),
            ("100%", "100%"),
            ("%", "%"),
            ("%zz", "%zz"),
            ("%2", "%2"),
            ("a%zz%20b", "a%zz b"),
            ("%%41", "%A"),
            ("a+b", "a+b"),
            ("%FF", "%FF"), // decodes to invalid UTF-8: raw value kept
            ("%C3", "%C3"), // truncated UTF-8 sequence: raw value kept
            ("ünì%20cödé", "ünì cödé"),
        ];
        for (raw, want) in cases {
            assert_eq!(percent_decode(raw), want, "decoding {raw:?}");
        }
    }

    #[test]
    fn percent_decoding_borrows_unless_something_was_decoded() {
        assert!(matches!(percent_decode("no-escapes"), Cow::Borrowed(_)));
        assert!(matches!(percent_decode("bad%zz"), Cow::Borrowed(_)));
        assert!(matches!(percent_decode("a%20b"), Cow::Owned(_)));
    }

    #[test]
    fn params_truncate_to_a_mark_and_decode_only_escaped_values() {
        let names: Vec<Arc<str>> = ["a", "b", "c", "d", "e", "f"].map(Arc::from).into();
        let mut params = Params::new(false);
        for name in &names {
            params.push(name, name);
        }
        assert_eq!(params.len(), 6);
        assert_eq!(params.get("e"), Some("e"));
        params.truncate(2);
        assert_eq!(params.iter().collect::<Vec<_>>(), [("a", "a"), ("b", "b")]);
        assert_eq!(params.get("e"), None);
        params.push(&names[2], "x%20y");
        assert_eq!(params.get("c"), Some("x y"));
        assert!(matches!(params.list[0].value, Cow::Borrowed(_)));
        assert!(!params.is_empty());
        assert!(Params::default().is_empty());
    }

    #[test]
    fn params_get_returns_the_first_of_repeated_names() {
        let id = Arc::<str>::from("id");
        let mut params = Params::new(false);
        params.push(&id, "first");
        params.push(&id, "second");
        assert_eq!(params.get("id"), Some("first"));
        assert_eq!(format!("{params:?}"), r#"{"id": "first", "id": "second"}"#);
    }
}
