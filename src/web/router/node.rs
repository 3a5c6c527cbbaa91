//! One radix tree: how routes are stored, checked and matched.
//!
//! A [`Node`] matches one piece of a route: literal bytes, a `:param` (a
//! non-empty run up to the next `/`) or a `*catch-all` (everything that is
//! left). Literal children are indexed by their first byte, so at each node
//! the search looks at one byte to pick the only literal child that can
//! match, and tries the node's single wildcard child only if that fails:
//! static text beats a parameter. Because the search is depth first, a
//! literal branch that dead-ends further down falls back to the wildcard,
//! however deep the dead end (with `/users/new` and `/users/:id`,
//! `/users/newx` matches `:id`; Gin backtracks one level down only, see
//! `docs/middleware.md` §13). Each node is entered at most once per
//! lookup, so a lookup is linear in the size of the tree.
//!
//! Only a static branch with a wildcard sibling needs a way back, and only
//! that descent recurses: no heap stack, and a recursion depth bounded by
//! the routes, never by the request. Insertion is a plain loop.

use std::sync::Arc;

use super::error::InsertError;
use super::params::Params;

/// What a node matches before its children are tried.
enum Kind {
    /// These exact bytes. Bytes, not `str`: splitting a prefix may cut a
    /// multi-byte character between a node and its child.
    Static(Box<[u8]>),
    /// A non-empty run up to the next `/`, captured under this name.
    Param(Arc<str>),
    /// The rest of the path, captured with the `/` before it. Its parent's
    /// path ends with that `/`.
    CatchAll(Arc<str>),
}

/// A node of the radix tree. Only static nodes have static children; the
/// tree root is the static node `/` that every route starts with.
pub(super) struct Node<T> {
    kind: Kind,
    /// First byte of each static child's prefix, in the order of `children`:
    /// picking a child scans these bytes, not the children.
    indices: Vec<u8>,
    /// Static children; no two start with the same byte.
    children: Vec<Node<T>>,
    /// The `:param` or `*catch-all` child, tried after the static child.
    wild: Option<Box<Node<T>>>,
    /// The value of the route that ends at this node.
    value: Option<T>,
    /// How many routes end in this subtree (Gin's "priority"): busier
    /// children are kept first, so the index scan meets them sooner.
    routes: usize,
}

impl<T> Node<T> {
    /// An empty tree.
    pub(super) fn root() -> Self {
        Node::new(Kind::Static(Box::from(&b"/"[..])))
    }

    fn new(kind: Kind) -> Self {
        Node {
            kind,
            indices: Vec::new(),
            children: Vec::new(),
            wild: None,
            value: None,
            routes: 0,
        }
    }

    /// Inserts a route into the tree rooted here, after checking its syntax.
    ///
    /// The walk follows existing nodes as far as the route goes along them,
    /// then adds new ones. Conflicts can only be found on existing nodes,
    /// before anything is added; until then the walk may only have split a
    /// static node in two, which matches exactly the same paths. So a refused
    /// route leaves the tree's behaviour as it was.
    pub(super) fn insert(&mut self, original: &str, value: T) -> Result<(), InsertError> {
        // `\:` is a literal colon (Gin >= 1.11): the walk below runs on the
        // route with the backslashes removed, where `literal` marks those colons.
        let (text, literal) = unescape_colons(original)?;
        check_syntax(original, &text, &literal)?;
        let route = text.as_str();
        let bytes = route.as_bytes();
        let wild_at = |i: usize| match bytes[i] {
            b'*' => true,
            b':' => !literal.contains(&i),
            _ => false,
        };
        let mut node = &mut *self;
        let mut pos = 1; // past the root's `/`
        loop {
            let rest = &bytes[pos..];
            if let Some(catch_all) = node.catch_all_name() {
                // A catch-all is its parent's only child: it matches everything.
                let duplicate = rest.strip_prefix(b"*") == Some(catch_all.as_bytes());
                return Err(if duplicate {
                    InsertError::AlreadyRegistered {
                        path: original.into(),
                    }
                } else {
                    shadowed_by_catch_all(original, route, pos, catch_all)
                });
            }
            match rest.first() {
                None => {
                    if node.value.is_some() {
                        return Err(InsertError::AlreadyRegistered {
                            path: original.into(),
                        });
                    }
                    node.value = Some(value);
                    break;
                }
                Some(b':') if wild_at(pos) => {
                    let end = segment_end(bytes, pos);
                    let name = &route[pos + 1..end];
                    if let Some(wild) = &node.wild {
                        if !matches!(&wild.kind, Kind::Param(existing) if **existing == *name) {
                            return Err(InsertError::WildcardConflict {
                                segment: route[pos..end].into(),
                                path: original.into(),
                                wildcard: wild.wildcard(),
                                prefix: format!("{}{}", &route[..pos], wild.wildcard()),
                            });
                        }
                    }
                    node = node
                        .wild
                        .get_or_insert_with(|| Box::new(Node::new(Kind::Param(name.into()))));
                    pos = end;
                }
                Some(b'*') => {
                    if let Some(wild) = &node.wild {
                        // Only a `:param` can be here: catch-alls were handled above.
                        return Err(InsertError::WildcardConflict {
                            segment: route[pos..].into(),
                            path: original.into(),
                            wildcard: wild.wildcard(),
                            prefix: format!("{}{}", &route[..pos], wild.wildcard()),
                        });
                    }
                    if node.value.is_some() || !node.children.is_empty() {
                        let segment = String::from_utf8_lossy(&node.first_segment()).into_owned();
                        return Err(InsertError::CatchAllConflict {
                            catch_all: route[pos..].into(),
                            path: original.into(),
                            prefix: format!("{}{segment}", &route[..pos]),
                            segment,
                        });
                    }
                    let mut catch_all = Node::new(Kind::CatchAll(route[pos + 1..].into()));
                    catch_all.value = Some(value);
                    node.wild = Some(Box::new(catch_all));
                    break;
                }
                Some(&first) => {
                    // The literal run up to the next wildcard (or the end).
                    let run_len = (0..rest.len())
                        .position(|k| wild_at(pos + k))
                        .unwrap_or(rest.len());
                    let run = &rest[..run_len];
                    let i = match node.indices.iter().position(|&b| b == first) {
                        Some(i) => {
                            let common = node.children[i].common_prefix_len(run);
                            node.children[i].split_at(common);
                            pos += common;
                            i
                        }
                        None => {
                            node.indices.push(first);
                            node.children.push(Node::new(Kind::Static(run.into())));
                            pos += run_len;
                            node.children.len() - 1
                        }
                    };
                    node = &mut node.children[i];
                }
            }
        }
        self.count_route(bytes, &literal);
        Ok(())
    }

    /// Counts a route just inserted in every node on its way, and keeps each
    /// node's busiest static children first.
    fn count_route(&mut self, route: &[u8], literal: &[usize]) {
        let mut node = self;
        let mut pos = 0;
        loop {
            node.routes += 1;
            pos += match &node.kind {
                Kind::Static(prefix) => prefix.len(),
                Kind::Param(name) => 1 + name.len(),
                Kind::CatchAll(_) => return,
            };
            let Some(&next) = route.get(pos) else { return };
            if (next == b':' && !literal.contains(&pos)) || next == b'*' {
                let Some(wild) = node.wild.as_deref_mut() else {
                    return;
                };
                node = wild;
                continue;
            }
            let Some(i) = node.indices.iter().position(|&b| b == next) else {
                return;
            };
            let i = node.promote(i);
            node = &mut node.children[i];
        }
    }

    /// Moves static child `i`, which is about to count one more route, ahead
    /// of the siblings it will then outnumber; returns its new index. Only
    /// the scan order changes: no two children start with the same byte.
    fn promote(&mut self, mut i: usize) -> usize {
        while i > 0 && self.children[i - 1].routes <= self.children[i].routes {
            self.children.swap(i - 1, i);
            self.indices.swap(i - 1, i);
            i -= 1;
        }
        i
    }

    /// Length of the common start of this (static) node's prefix and `run`.
    fn common_prefix_len(&self, run: &[u8]) -> usize {
        match &self.kind {
            Kind::Static(prefix) => prefix.iter().zip(run).take_while(|(a, b)| a == b).count(),
            Kind::Param(_) | Kind::CatchAll(_) => 0,
        }
    }

    /// Splits a static node so that it keeps the first `at` bytes and the rest
    /// becomes its only child. Nothing to do if `at` covers the whole prefix.
    fn split_at(&mut self, at: usize) {
        let Kind::Static(prefix) = &self.kind else {
            return;
        };
        if at >= prefix.len() {
            return;
        }
        let (head, tail) = prefix.split_at(at);
        let (head, tail): (Box<[u8]>, Box<[u8]>) = (head.into(), tail.into());
        let tail_first = tail[0];
        let lower = Node {
            kind: Kind::Static(tail),
            indices: std::mem::take(&mut self.indices),
            children: std::mem::take(&mut self.children),
            wild: self.wild.take(),
            value: self.value.take(),
            routes: self.routes,
        };
        self.kind = Kind::Static(head);
        self.indices = vec![tail_first];
        self.children = vec![lower];
    }

    fn catch_all_name(&self) -> Option<&str> {
        match self.wild.as_deref()?.kind {
            Kind::CatchAll(ref name) => Some(name),
            _ => None,
        }
    }

    /// A wildcard node as Gin prints it in conflicts: `:id`, `/*filepath`.
    fn wildcard(&self) -> String {
        match &self.kind {
            Kind::Param(name) => format!(":{name}"),
            Kind::CatchAll(name) => format!("/*{name}"),
            Kind::Static(prefix) => String::from_utf8_lossy(prefix).into_owned(),
        }
    }

    /// The registered text right below this node up to the end of its
    /// segment, following the first child: what a new catch-all would hide.
    fn first_segment(&self) -> Vec<u8> {
        let mut segment = Vec::new();
        let mut node = self;
        while let Some(child) = node.children.first() {
            if let Kind::Static(prefix) = &child.kind {
                if let Some(slash) = prefix.iter().position(|&b| b == b'/') {
                    segment.extend_from_slice(&prefix[..slash]);
                    return segment;
                }
                segment.extend_from_slice(prefix);
            }
            node = child;
        }
        if let Some(wild) = &node.wild {
            segment.extend_from_slice(wild.wildcard().as_bytes());
        }
        segment
    }

    /// True if some route of this tree matches `path`.
    pub(super) fn matches(&self, path: &str) -> bool {
        self.find(path, 0, &mut Params::new(true)).is_some()
    }

    /// Matches this node at `path[pos..]`, then its children, depth first.
    ///
    /// Only a static child with a wildcard sibling needs a way back, so only
    /// that descent recurses; every other step (a node without a wildcard
    /// child, or the wildcard itself, the last thing to try) just moves on.
    ///
    /// On success `params` holds the route's raw values. On failure it may
    /// hold leftovers past its length at the call; the caller truncates.
    pub(super) fn find<'r, 'p>(
        &'r self,
        path: &'p str,
        mut pos: usize,
        params: &mut Params<'r, 'p>,
    ) -> Option<&'r T> {
        let bytes = path.as_bytes();
        let mut node = self;
        loop {
            let rest = bytes.get(pos..)?;
            match &node.kind {
                Kind::Static(prefix) => {
                    if !rest.starts_with(prefix) {
                        return None;
                    }
                    pos += prefix.len();
                }
                Kind::Param(name) => {
                    let len = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
                    if len == 0 {
                        return None;
                    }
                    params.push(name, path.get(pos..pos + len)?);
                    pos += len;
                }
                Kind::CatchAll(name) => {
                    params.push(name, path.get(pos.checked_sub(1)?..)?);
                    return node.value.as_ref();
                }
            }
            match bytes.get(pos) {
                None if node.value.is_some() => return node.value.as_ref(),
                None => {}
                Some(next) => {
                    if let Some(i) = node.indices.iter().position(|b| b == next) {
                        let child = &node.children[i];
                        if node.wild.is_none() {
                            node = child;
                            continue;
                        }
                        let mark = params.len();
                        if let Some(value) = child.find(path, pos, params) {
                            return Some(value);
                        }
                        params.truncate(mark);
                    }
                }
            }
            node = node.wild.as_deref()?;
        }
    }
}

/// One node of the tree as a picture draws it (`/debug/routes`): what it
/// matches, the value of the route ending there (mapped by the caller) and
/// its children in the order a lookup tries them.
pub struct Shape<U> {
    /// The bytes a static node matches, or `:name` / `*name`.
    pub label: String,
    /// `static`, `param` or `catch-all`.
    pub kind: &'static str,
    /// What the caller made of the route ending here, if one does.
    pub value: Option<U>,
    /// Static children first, then the wildcard child.
    pub children: Vec<Shape<U>>,
}

impl<T> Node<T> {
    /// This subtree as a [`Shape`], each route's value mapped by `f`.
    pub(super) fn shape<U>(&self, f: &dyn Fn(&T) -> U) -> Shape<U> {
        let (label, kind) = match &self.kind {
            Kind::Static(bytes) => (String::from_utf8_lossy(bytes).into_owned(), "static"),
            Kind::Param(name) => (format!(":{name}"), "param"),
            Kind::CatchAll(name) => (format!("*{name}"), "catch-all"),
        };
        let children = self.children.iter().chain(self.wild.as_deref());
        Shape {
            label,
            kind,
            value: self.value.as_ref().map(f),
            children: children.map(|child| child.shape(f)).collect(),
        }
    }
}

/// The route with each `\:` made a plain `:`, and where those colons are
/// in it; a backslash before anything else is Gin's "invalid escape string".
fn unescape_colons(route: &str) -> Result<(String, Vec<usize>), InsertError> {
    let mut text = String::with_capacity(route.len());
    let mut literal = Vec::new();
    let mut chars = route.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
        } else if chars.next() == Some(':') {
            literal.push(text.len());
            text.push(':');
        } else {
            return Err(InsertError::InvalidEscape { path: route.into() });
        }
    }
    Ok((text, literal))
}

/// Checks the wildcards of a route (`text`, escapes removed, `literal`
/// colons not wildcards), left to right, with Gin's rules; errors name
/// the `original` route.
fn check_syntax(original: &str, text: &str, literal: &[usize]) -> Result<(), InsertError> {
    let path = original;
    if !text.starts_with('/') {
        return Err(InsertError::MissingLeadingSlash { path: path.into() });
    }
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = (from..bytes.len())
        .position(|i| bytes[i] == b'*' || (bytes[i] == b':' && !literal.contains(&i)))
    {
        let start = from + offset;
        let end = segment_end(bytes, start);
        let wildcard = &text[start..end];
        if wildcard[1..].contains([':', '*']) {
            return Err(InsertError::TooManyWildcards {
                wildcard: wildcard.into(),
                path: path.into(),
            });
        }
        if wildcard.len() < 2 {
            return Err(InsertError::UnnamedWildcard { path: path.into() });
        }
        if wildcard.starts_with('*') {
            if end != bytes.len() {
                return Err(InsertError::CatchAllNotAtEnd { path: path.into() });
            }
            if bytes[start - 1] != b'/' {
                return Err(InsertError::CatchAllWithoutSlash { path: path.into() });
            }
        }
        from = end;
    }
    Ok(())
}

/// Index of the first `/` after `start`, or the length: where a segment ends.
fn segment_end(bytes: &[u8], start: usize) -> usize {
    bytes[start + 1..]
        .iter()
        .position(|&b| b == b'/')
        .map_or(bytes.len(), |i| start + 1 + i)
}

/// The conflict Gin reports when a catch-all already covers the new route.
fn shadowed_by_catch_all(original: &str, route: &str, pos: usize, catch_all: &str) -> InsertError {
    // The catch-all's parent ends with `/`; Gin shows the wildcard with it.
    let parent = &route.as_bytes()[..pos.saturating_sub(1)];
    InsertError::WildcardConflict {
        segment: format!("/{}", String::from_utf8_lossy(&route.as_bytes()[pos..])),
        path: original.into(),
        wildcard: format!("/*{catch_all}"),
        prefix: format!("{}/*{catch_all}", String::from_utf8_lossy(parent)),
    }
}
