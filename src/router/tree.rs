//! The path matcher: one radix tree per HTTP method.
//!
//! A [`Node`] matches one piece of a route: literal bytes, a `:param` (a
//! non-empty run up to the next `/`) or a `*catch-all` (everything that is
//! left). Literal children are indexed by their first byte, so at each node
//! the search looks at one byte to pick the only literal child that can
//! match, and tries the node's single wildcard child only if that fails:
//! static text beats a parameter, and a parameter beats nothing. Because the
//! search is a depth-first walk, a literal branch that dead-ends further down
//! falls back to the wildcard (Gin >= 1.8 "backtracking": with `/users/new`
//! and `/users/:id`, `/users/newx` matches `:id`). Each node is entered at
//! most once per lookup, so a lookup is linear in the size of the tree.
//!
//! The walk recurses, so it needs no heap stack for backtracking; the
//! recursion is only as deep as the tree, which the routes bound, never the
//! request.

use std::fmt;

use http::Method;

use super::error::InsertError;
use super::params::Params;

/// Routes registered per HTTP method, and the answer to "what handles this
/// request?".
///
/// Paths are matched on their raw (still percent-encoded) form, as Gin does
/// with `UseRawPath`: pass `uri.path()` unchanged. An encoded `%2F` therefore
/// stays inside one segment, and a literal route segment only matches the
/// same bytes (`/us%65rs` is not `/users`). Parameter values are decoded
/// after the match (Gin's `UnescapePathValues`), see [`Params`].
pub struct Router<T> {
    /// One tree per method in registration order; a short list beats a map
    /// for the handful of methods a service uses.
    trees: Vec<(Method, Node<T>)>,
    /// Every registered (method, path), in registration order.
    routes: Vec<(Method, String)>,
}

/// The outcome of [`Router::lookup`], checked in this order (as Gin does).
#[derive(Debug)]
pub enum Lookup<'r, 'p, T> {
    /// A route for this method matches the path.
    Found {
        /// The value registered with the route.
        value: &'r T,
        /// The route's parameters, percent-decoded.
        params: Params<'r, 'p>,
    },
    /// No route for this path, but the same path with/without a trailing
    /// slash exists for this method. `location` is the path to redirect to
    /// (the caller sends 301 for GET, 307 otherwise, as Gin, and appends the
    /// query string). Never offered for `/` itself, nor when the location
    /// would start with `//` or `/\`, which browsers read as another host.
    RedirectTrailingSlash {
        /// The other form of the request path.
        location: String,
    },
    /// The path matches under other methods; `allowed` lists them (sorted,
    /// for the Allow header).
    MethodNotAllowed {
        /// The methods whose routes match the path, sorted by name.
        allowed: Vec<Method>,
    },
    /// Nothing matches.
    NotFound,
}

impl<T> Router<T> {
    /// An empty router.
    pub fn new() -> Self {
        Router {
            trees: Vec::new(),
            routes: Vec::new(),
        }
    }

    /// Registers `value` for `method` and `path`.
    ///
    /// Route syntax (Gin's): literal text, `:name` (matches a non-empty run of
    /// the path up to the next `/`; it may follow literal text in its segment,
    /// as in `/user_:name`) and a final `*name` that starts a segment and
    /// matches the rest of the path. The catch-all value includes the leading
    /// `/`: `/src/*filepath` on `/src/a/b` gives `filepath` = `/a/b`, and on
    /// `/src/` gives `/`.
    pub fn insert(&mut self, method: Method, path: &str, value: T) -> Result<(), InsertError> {
        check_syntax(path)?;
        match self.trees.iter_mut().find(|(m, _)| *m == method) {
            Some((_, root)) => root.insert(path, 0, value)?,
            None => {
                let mut root = Node::new(Kind::Static(Box::default()));
                root.insert(path, 0, value)?;
                self.trees.push((method.clone(), root));
            }
        }
        self.routes.push((method, path.to_owned()));
        Ok(())
    }

    /// Finds what handles `method` and `path` (the raw request path).
    ///
    /// A static match allocates nothing; a match with parameters allocates
    /// only for more than four parameters or to decode a value containing `%`.
    pub fn lookup<'r, 'p>(&'r self, method: &Method, path: &'p str) -> Lookup<'r, 'p, T> {
        if let Some(root) = self.tree(method) {
            let mut params = Params::new();
            if let Some(value) = root.find(path, 0, &mut params) {
                params.decode_values();
                return Lookup::Found { value, params };
            }
            if let Some(location) = trailing_slash_redirect(root, path) {
                return Lookup::RedirectTrailingSlash { location };
            }
        }
        let mut allowed: Vec<Method> = self
            .trees
            .iter()
            .filter(|(m, root)| m != method && root.matches(path))
            .map(|(m, _)| m.clone())
            .collect();
        if allowed.is_empty() {
            return Lookup::NotFound;
        }
        allowed.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Lookup::MethodNotAllowed { allowed }
    }

    /// The registered (method, path) pairs, in registration order.
    pub fn routes(&self) -> impl Iterator<Item = (&Method, &str)> {
        self.routes
            .iter()
            .map(|(method, path)| (method, path.as_str()))
    }

    fn tree(&self, method: &Method) -> Option<&Node<T>> {
        self.trees
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, root)| root)
    }
}

impl<T> Default for Router<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Router<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.routes()).finish()
    }
}

/// Checks the wildcards of a route, left to right, with Gin's rules.
fn check_syntax(path: &str) -> Result<(), InsertError> {
    if !path.starts_with('/') {
        return Err(InsertError::MissingLeadingSlash { path: path.into() });
    }
    let bytes = path.as_bytes();
    let mut from = 0;
    while let Some(offset) = bytes[from..].iter().position(|&b| b == b':' || b == b'*') {
        let start = from + offset;
        let end = segment_end(bytes, start);
        let wildcard = &path[start..end];
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

/// The other form of `path` (one trailing slash more or less), if that form
/// matches a route of this method.
fn trailing_slash_redirect<T>(root: &Node<T>, path: &str) -> Option<String> {
    if path.len() <= 1 {
        return None;
    }
    if let Some(without) = path.strip_suffix('/') {
        return (is_local(without) && root.matches(without)).then(|| without.to_owned());
    }
    if !is_local(path) {
        return None;
    }
    // Try `path + "/"` in a stack buffer: a 404 should not cost an allocation.
    let mut buf = [0u8; 256];
    let with = match buf.get_mut(..path.len() + 1) {
        Some(slot) => {
            slot[..path.len()].copy_from_slice(path.as_bytes());
            slot[path.len()] = b'/';
            root.matches(std::str::from_utf8(slot).ok()?)
        }
        None => root.matches(&format!("{path}/")),
    };
    with.then(|| format!("{path}/"))
}

/// False for paths that a browser would read as a host (`//evil`, `/\evil`).
fn is_local(path: &str) -> bool {
    !matches!(path.as_bytes().get(1), Some(b'/' | b'\\'))
}

/// What a node matches before its children are tried.
enum Kind {
    /// These exact bytes. Bytes, not `str`: splitting a prefix may cut a
    /// multi-byte character between a node and its child.
    Static(Box<[u8]>),
    /// A non-empty run up to the next `/`, captured under this name.
    Param(Box<str>),
    /// The rest of the path, captured with the `/` before it. Its parent's
    /// path ends with that `/`.
    CatchAll(Box<str>),
}

/// A node of the radix tree. Only static nodes have static children; the
/// tree root is a static node with an empty prefix.
struct Node<T> {
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
}

impl<T> Node<T> {
    fn new(kind: Kind) -> Self {
        Node {
            kind,
            indices: Vec::new(),
            children: Vec::new(),
            wild: None,
            value: None,
        }
    }

    /// Inserts `route[pos..]` below this node, whose own part of the route
    /// ends at `pos`. The route passed [`check_syntax`].
    ///
    /// Conflicts are found on existing nodes. Before one is found the walk
    /// may only have split a static node in two, which matches exactly the
    /// same paths; new nodes are attached only once everything below them is
    /// in place, so a refused route leaves the tree as it was.
    fn insert(&mut self, route: &str, pos: usize, value: T) -> Result<(), InsertError> {
        let bytes = route.as_bytes();
        let rest = &bytes[pos..];
        if let Some(catch_all) = self.catch_all_name() {
            // A catch-all is its parent's only child: it matches everything.
            let duplicate = rest.strip_prefix(b"*") == Some(catch_all.as_bytes());
            return Err(if duplicate {
                InsertError::AlreadyRegistered { path: route.into() }
            } else {
                shadowed_by_catch_all(route, pos, catch_all)
            });
        }
        match rest.first() {
            None => {
                if self.value.is_some() {
                    return Err(InsertError::AlreadyRegistered { path: route.into() });
                }
                self.value = Some(value);
                Ok(())
            }
            Some(b':') => {
                let end = segment_end(bytes, pos);
                let name = &route[pos + 1..end];
                if let Some(wild) = &mut self.wild {
                    return match &wild.kind {
                        Kind::Param(existing) if **existing == *name => {
                            wild.insert(route, end, value)
                        }
                        _ => Err(InsertError::WildcardConflict {
                            segment: route[pos..end].into(),
                            path: route.into(),
                            wildcard: wild.wildcard(),
                            prefix: format!("{}{}", &route[..pos], wild.wildcard()),
                        }),
                    };
                }
                let mut param = Node::new(Kind::Param(name.into()));
                param.insert(route, end, value)?;
                self.wild = Some(Box::new(param));
                Ok(())
            }
            Some(b'*') => {
                if let Some(wild) = &self.wild {
                    // Only a `:param` can be here: catch-alls were handled above.
                    return Err(InsertError::WildcardConflict {
                        segment: route[pos..].into(),
                        path: route.into(),
                        wildcard: wild.wildcard(),
                        prefix: format!("{}{}", &route[..pos], wild.wildcard()),
                    });
                }
                if self.value.is_some() || !self.children.is_empty() {
                    let segment = String::from_utf8_lossy(&self.first_segment()).into_owned();
                    return Err(InsertError::CatchAllConflict {
                        catch_all: route[pos..].into(),
                        path: route.into(),
                        prefix: format!("{}{segment}", &route[..pos]),
                        segment,
                    });
                }
                let mut catch_all = Node::new(Kind::CatchAll(route[pos + 1..].into()));
                catch_all.value = Some(value);
                self.wild = Some(Box::new(catch_all));
                Ok(())
            }
            Some(&first) => {
                // The literal run up to the next wildcard (or the end).
                let run_len = rest
                    .iter()
                    .position(|&b| b == b':' || b == b'*')
                    .unwrap_or(rest.len());
                let run = &rest[..run_len];
                let Some(i) = self.indices.iter().position(|&b| b == first) else {
                    let mut child = Node::new(Kind::Static(run.into()));
                    child.insert(route, pos + run_len, value)?;
                    self.indices.push(first);
                    self.children.push(child);
                    return Ok(());
                };
                let child = &mut self.children[i];
                let common = child.common_prefix_len(run);
                child.split_at(common);
                child.insert(route, pos + common, value)
            }
        }
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
    fn matches(&self, path: &str) -> bool {
        self.find(path, 0, &mut Params::new()).is_some()
    }

    /// Matches this node at `path[pos..]`, then its children, depth first.
    ///
    /// On success `params` holds the route's raw values. On failure it may
    /// hold leftovers past its length at the call; the caller truncates.
    fn find<'r, 'p>(
        &'r self,
        path: &'p str,
        mut pos: usize,
        params: &mut Params<'r, 'p>,
    ) -> Option<&'r T> {
        let bytes = path.as_bytes();
        let rest = bytes.get(pos..)?;
        match &self.kind {
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
                return self.value.as_ref();
            }
        }
        match bytes.get(pos) {
            None => {
                if let Some(value) = &self.value {
                    return Some(value);
                }
            }
            Some(next) => {
                if let Some(i) = self.indices.iter().position(|b| b == next) {
                    let mark = params.len();
                    if let Some(value) = self.children[i].find(path, pos, params) {
                        return Some(value);
                    }
                    params.truncate(mark);
                }
            }
        }
        self.wild.as_deref()?.find(path, pos, params)
    }
}

/// The conflict Gin reports when a catch-all already covers the new route.
fn shadowed_by_catch_all(route: &str, pos: usize, catch_all: &str) -> InsertError {
    // The catch-all's parent ends with `/`; Gin shows the wildcard with it.
    let parent = &route.as_bytes()[..pos.saturating_sub(1)];
    InsertError::WildcardConflict {
        segment: format!("/{}", String::from_utf8_lossy(&route.as_bytes()[pos..])),
        path: route.into(),
        wildcard: format!("/*{catch_all}"),
        prefix: format!("{}/*{catch_all}", String::from_utf8_lossy(parent)),
    }
}
