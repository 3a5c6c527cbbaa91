//! PLACEHOLDER matcher (linear scan) until the tree lands; same public API.
use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum InsertError {
    Conflict(String),
}
impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertError::Conflict(p) => write!(f, "handlers are already registered for path '{p}'"),
        }
    }
}
impl std::error::Error for InsertError {}

pub struct Router<T> {
    routes: Vec<(http::Method, String, T)>,
}
impl<T> Default for Router<T> {
    fn default() -> Self {
        Router { routes: Vec::new() }
    }
}
pub struct Params<'r, 'p> {
    list: Vec<(&'r str, Cow<'p, str>)>,
}
impl Params<'_, '_> {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.list
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_ref())
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.list.iter().map(|(n, v)| (*n, v.as_ref()))
    }
}
pub enum Lookup<'r, 'p, T> {
    Found {
        value: &'r T,
        params: Params<'r, 'p>,
    },
    RedirectTrailingSlash {
        location: String,
    },
    MethodNotAllowed {
        allowed: Vec<http::Method>,
    },
    NotFound,
}
fn matches<'r, 'p>(pat: &'r str, path: &'p str) -> Option<Params<'r, 'p>> {
    let a: Vec<&str> = pat.split('/').collect();
    let b: Vec<&str> = path.split('/').collect();
    if a.len() != b.len() {
        return None;
    }
    let mut list = Vec::new();
    for (x, y) in a.iter().zip(b.iter()) {
        if let Some(n) = x.strip_prefix(':') {
            if y.is_empty() {
                return None;
            }
            list.push((n, Cow::Borrowed(*y)));
        } else if x != y {
            return None;
        }
    }
    Some(Params { list })
}
impl<T> Router<T> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn insert(
        &mut self,
        method: http::Method,
        path: &str,
        value: T,
    ) -> Result<(), InsertError> {
        if self
            .routes
            .iter()
            .any(|(m, p, _)| *m == method && p == path)
        {
            return Err(InsertError::Conflict(path.into()));
        }
        self.routes.push((method, path.to_string(), value));
        Ok(())
    }
    pub fn lookup<'r, 'p>(&'r self, method: &http::Method, path: &'p str) -> Lookup<'r, 'p, T> {
        let mut allowed = Vec::new();
        for (m, p, v) in &self.routes {
            // SAFETY of lifetimes: params borrow pattern names from 'r and path from 'p
            if let Some(params) = matches(p.as_str(), path) {
                if m == method {
                    return Lookup::Found { value: v, params };
                }
                allowed.push(m.clone());
            }
        }
        if !allowed.is_empty() {
            return Lookup::MethodNotAllowed { allowed };
        }
        Lookup::NotFound
    }
}
