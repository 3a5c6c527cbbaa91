//! The router: one radix tree per HTTP method, and the answer to "what
//! handles this request?" in Gin's order: the route, else a trailing-slash
//! redirect, else the methods that would match (405), else not found.
//!
//! The tree itself (how routes are stored and matched) is in `node.rs`; the
//! answer when no route of the method matches, in `miss.rs`.

use std::fmt;

use http::Method;

use super::error::InsertError;
use super::miss::Miss;
use super::node::{Node, Shape};
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
    /// Parameter values as sent, not percent-decoded (see [`Self::raw_values`]).
    raw_values: bool,
}

/// The outcome of [`Router::lookup`], checked in this order (as Gin does).
#[derive(Debug)]
pub enum Lookup<'r, 'p, T> {
    /// A route for this method matches the path: the value registered
    /// with the route, and the route's parameters, percent-decoded.
    Found(&'r T, Params<'r, 'p>),
    /// No route of this method matches: redirect, 405 or 404, as
    /// [`Miss::decide`] says.
    Miss(Miss),
}

impl<T> Router<T> {
    /// An empty router.
    pub fn new() -> Self {
        Router {
            trees: Vec::new(),
            routes: Vec::new(),
            raw_values: false,
        }
    }

    /// Registers `value` for `method` and `path`.
    ///
    /// Route syntax (Gin's): literal text, `:name` (matches a non-empty run of
    /// the path up to the next `/`; it may follow literal text in its segment,
    /// as in `/user_:name`) and a final `*name` that starts a segment and
    /// matches the rest of the path; `\:` is a literal colon (a backslash
    /// escapes nothing else). The catch-all value includes the leading
    /// `/`: `/src/*filepath` on `/src/a/b` gives `filepath` = `/a/b`, and on
    /// `/src/` gives `/`.
    pub fn insert(&mut self, method: Method, path: &str, value: T) -> Result<(), InsertError> {
        match self.trees.iter_mut().find(|(m, _)| *m == method) {
            Some((_, root)) => root.insert(path, value)?,
            None => {
                let mut root = Node::root();
                root.insert(path, value)?;
                self.trees.push((method.clone(), root));
            }
        }
        self.routes.push((method, path.to_owned()));
        Ok(())
    }

    /// Finds what handles `method` and `path` (the raw request path).
    ///
    /// A static match allocates nothing; a match with parameters allocates
    /// their list, and a value's own text to decode one containing
    /// `%`. Otherwise only a redirect's `location`, a 405's `allowed` list
    /// and the parameters a miss's tries captured allocate.
    #[inline]
    pub fn lookup<'r, 'p>(&'r self, method: &Method, path: &'p str) -> Lookup<'r, 'p, T> {
        let root = self.tree(method);
        if let Some(root) = root {
            let mut params = Params::new(self.raw_values);
            if let Some(value) = root.find(path, 0, &mut params) {
                return Lookup::Found(value, params);
            }
        }
        Lookup::Miss(self.miss(method, path, root))
    }

    /// Why nothing matched `path`: a trailing-slash redirect, 405 with the
    /// methods that would match, or 404.
    fn miss(&self, method: &Method, path: &str, root: Option<&Node<T>>) -> Miss {
        Miss::decide(
            path,
            |other| root.is_some_and(|root| root.matches(other)),
            || self.allowed(method, path),
        )
    }

    /// The methods other than `method` with a route matching `path`: what a
    /// 405 lists in `Allow` (unsorted).
    pub fn allowed(&self, method: &Method, path: &str) -> Vec<Method> {
        self.trees
            .iter()
            .filter(|(m, root)| m != method && root.matches(path))
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// Take parameter values as the path has them, without percent-decoding
    /// (Gin's `UnescapePathValues` off); decoding is on by default.
    pub fn raw_values(&mut self, raw: bool) {
        self.raw_values = raw;
    }

    /// Gin's `RedirectFixedPath`: a path of `method`'s routes that `path`
    /// names case-insensitively, with or without its trailing slash, once
    /// cleaned; a route with fewer wildcards is preferred, as the tree
    /// prefers static text. `None` if there is none.
    pub fn fixed_path(&self, method: &Method, path: &str) -> Option<String> {
        let cleaned = super::fixed::clean_path(path);
        let toggled = match cleaned.strip_suffix('/') {
            Some(without) if !without.is_empty() => without.to_owned(),
            _ => format!("{cleaned}/"),
        };
        let mut routes: Vec<&str> = (self.routes.iter())
            .filter(|(m, _)| m == method)
            .map(|(_, route)| route.as_str())
            .collect();
        routes.sort_by_key(|route| route.matches([':', '*']).count());
        let found = [&cleaned, &toggled].into_iter().find_map(|candidate| {
            (routes.iter())
                .filter_map(|route| super::fixed::in_route_case(route, candidate))
                .find(|fixed| matches!(self.lookup(method, fixed), Lookup::Found(..)))
        });
        found
    }

    /// Each method's tree as a [`Shape`] (for `/debug/routes`), in
    /// registration order, each route's value mapped by `f`.
    pub fn shapes<U>(&self, f: &dyn Fn(&T) -> U) -> Vec<(Method, Shape<U>)> {
        let trees = self.trees.iter();
        trees.map(|(m, root)| (m.clone(), root.shape(f))).collect()
    }

    /// The registered (method, path) pairs, in registration order.
    pub fn routes(&self) -> impl Iterator<Item = (&Method, &str)> {
        self.routes
            .iter()
            .map(|(method, path)| (method, path.as_str()))
    }

    fn tree(&self, method: &Method) -> Option<&Node<T>> {
        let (_, root) = self.trees.iter().find(|(m, _)| m == method)?;
        Some(root)
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
