//! The `:param` and `*catch-all` values captured by a lookup.
//!
//! Most routes have a handful of parameters, so the first few live inline in
//! [`Params`] and a lookup that captures no more than that touches no heap.
//! The tree pushes raw slices of the request path while it searches (and
//! truncates them when it backtracks); only once a route has matched are the
//! values percent-decoded, each allocating only if it contains a `%`.

use std::borrow::Cow;
use std::fmt;

/// How many parameters fit before the list moves to the heap. Three, with
/// 32-byte entries, keep a whole `Params` (and a `Lookup`) under 128 bytes,
/// which the compiler copies with a few moves instead of a `memcpy` call.
const INLINE: usize = 3;

/// One captured parameter: the name from the route, the value from the path.
#[derive(Clone)]
struct Param<'r, 'p> {
    /// Points at the name stored in the tree: a thin pointer, 8 bytes
    /// instead of 16 for a `&str`.
    #[allow(clippy::borrowed_box)]
    name: &'r Box<str>,
    value: Cow<'p, str>,
}

/// The parameters of a matched route, in the order they appear in the route.
///
/// Names borrow from the router (`'r`), values from the request path (`'p`)
/// unless decoding had to produce new text.
#[derive(Clone)]
pub struct Params<'r, 'p> {
    storage: Storage<'r, 'p>,
    /// Some pushed value contains a `%`: decoding has work to do.
    escaped: bool,
}

#[derive(Clone)]
enum Storage<'r, 'p> {
    /// The first `len` slots are `Some`, the others `None`. `Option` makes an
    /// empty list cheap to create: a `None` slot is one word to write.
    Inline {
        len: usize,
        items: [Option<Param<'r, 'p>>; INLINE],
    },
    Heap(Vec<Param<'r, 'p>>),
}

impl<'r, 'p> Params<'r, 'p> {
    /// An empty list (no allocation).
    #[inline]
    pub fn new() -> Self {
        Params {
            storage: Storage::Inline {
                len: 0,
                items: [None, None, None],
            },
            escaped: false,
        }
    }

    /// The value of the first parameter called `name`, already decoded.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.all()
            .find(|param| **param.name == *name)
            .map(|param| &*param.value)
    }

    /// `(name, value)` pairs in route order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.all().map(|param| (&**param.name, &*param.value))
    }

    /// Each value in route order, as stored: borrowed from the path (decoded
    /// to the same text) or decoded text of its own. For the engine, which
    /// keeps a borrowed value as its range of the path.
    #[inline]
    pub(crate) fn for_each_value(&self, mut each: impl FnMut(&Cow<'p, str>)) {
        // Two plain loops: the chained iterator of `all()` folded at about
        // 50 instructions for a single parameter.
        let (inline, heap) = self.parts();
        inline.iter().flatten().for_each(|param| each(&param.value));
        heap.iter().for_each(|param| each(&param.value));
    }

    /// How many parameters were captured.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Inline { len, .. } => *len,
            Storage::Heap(params) => params.len(),
        }
    }

    /// True when the route has no parameters.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a raw value; `escaped` says whether it contains a `%`.
    #[inline]
    #[allow(clippy::borrowed_box)] // the thin pointer is the point, see `Param`
    pub(crate) fn push(&mut self, name: &'r Box<str>, value: &'p str, escaped: bool) {
        self.escaped |= escaped;
        let value = Cow::Borrowed(value);
        match &mut self.storage {
            Storage::Inline { len, items } if *len < INLINE => {
                items[*len] = Some(Param { name, value });
                *len += 1;
            }
            _ => self.push_to_heap(Param { name, value }),
        }
    }

    /// The rare case, kept out of line so `push` stays small.
    #[cold]
    fn push_to_heap(&mut self, param: Param<'r, 'p>) {
        match &mut self.storage {
            Storage::Inline { items, .. } => {
                let mut spilled = Vec::with_capacity(INLINE * 2);
                spilled.extend(items.iter_mut().filter_map(Option::take));
                spilled.push(param);
                self.storage = Storage::Heap(spilled);
            }
            Storage::Heap(params) => params.push(param),
        }
    }

    /// Forgets the parameters after the first `new_len` (used when backtracking).
    #[inline]
    pub(crate) fn truncate(&mut self, new_len: usize) {
        match &mut self.storage {
            Storage::Inline { len, items } => {
                while *len > new_len {
                    *len -= 1;
                    items[*len] = None;
                }
            }
            Storage::Heap(params) => params.truncate(new_len),
        }
    }

    /// Replaces every raw value by its percent-decoded form.
    #[inline]
    pub(crate) fn decode_values(&mut self) {
        if self.escaped {
            self.decode_escaped_values();
        }
    }

    fn decode_escaped_values(&mut self) {
        let (inline, heap) = match &mut self.storage {
            Storage::Inline { items, .. } => (&mut items[..], &mut [][..]),
            Storage::Heap(params) => (&mut [][..], &mut params[..]),
        };
        for param in inline.iter_mut().flatten().chain(heap) {
            if let Cow::Borrowed(raw) = param.value {
                param.value = percent_decode(raw);
            }
        }
    }

    /// Every parameter, in order.
    #[inline]
    fn all(&self) -> impl Iterator<Item = &Param<'r, 'p>> {
        let (inline, heap) = self.parts();
        inline.iter().flatten().chain(heap)
    }

    /// The parameters as the inline slots in use (up to `len`: the rest
    /// are `None`) and the heap list; one of the two is empty.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn parts(&self) -> (&[Option<Param<'r, 'p>>], &[Param<'r, 'p>]) {
        match &self.storage {
            Storage::Inline { len, items } => (items.get(..*len).unwrap_or(items), &[]),
            Storage::Heap(params) => (&[], params),
        }
    }
}

impl Default for Params<'_, '_> {
    fn default() -> Self {
        Self::new()
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
    fn params_spill_to_the_heap_past_the_inline_capacity_and_truncate() {
        let names: Vec<Box<str>> = ["a", "b", "c", "d", "e", "f"].map(Box::from).into();
        let mut params = Params::new();
        for name in &names {
            params.push(name, name, false);
        }
        assert_eq!(params.len(), 6);
        assert_eq!(params.get("e"), Some("e"));
        params.truncate(2);
        assert_eq!(params.iter().collect::<Vec<_>>(), [("a", "a"), ("b", "b")]);
        assert_eq!(params.get("e"), None);

        let [x, y, z] = ["x", "y", "z"].map(Box::<str>::from);
        let mut inline = Params::new();
        inline.push(&x, "1", false);
        inline.push(&y, "2", false);
        inline.truncate(1);
        inline.push(&z, "3", false);
        assert_eq!(inline.iter().collect::<Vec<_>>(), [("x", "1"), ("z", "3")]);
        assert!(!inline.is_empty());
        assert!(Params::default().is_empty());
    }

    #[test]
    fn params_get_returns_the_first_of_repeated_names() {
        let id = Box::<str>::from("id");
        let mut params = Params::new();
        params.push(&id, "first", false);
        params.push(&id, "second", false);
        assert_eq!(params.get("id"), Some("first"));
        assert_eq!(format!("{params:?}"), r#"{"id": "first", "id": "second"}"#);
    }
}
