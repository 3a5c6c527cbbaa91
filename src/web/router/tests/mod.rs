//! Table-driven tests of the router, in the manner of matchit's: what
//! matches ([`matching`]), what is refused and why ([`insert`]), and
//! randomized checks against a naive matcher and odd inputs ([`random`]).

use http::Method;

use super::{Lookup, Miss, Router};

mod escaped_colon;
mod insert;
mod matching;
mod random;

/// A GET router whose values are the route strings themselves.
fn router(routes: &[&str]) -> Router<String> {
    let mut router = Router::new();
    for route in routes {
        if let Err(err) = router.insert(Method::GET, route, route.to_string()) {
            panic!("route {route:?} refused: {err}");
        }
    }
    router
}

/// What a GET lookup gave, in a comparable form.
#[derive(Debug, PartialEq)]
enum Outcome {
    Found(String, Vec<(String, String)>),
    Redirect(String),
    NotAllowed(Vec<Method>),
    NotFound,
}

fn lookup(router: &Router<String>, method: &Method, path: &str) -> Outcome {
    match router.lookup(method, path) {
        Lookup::Found(value, params) => Outcome::Found(
            value.clone(),
            params.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        ),
        Lookup::Miss(Miss::Redirect { location }) => Outcome::Redirect(location),
        Lookup::Miss(Miss::MethodNotAllowed { allowed }) => Outcome::NotAllowed(allowed),
        Lookup::Miss(Miss::NotFound) => Outcome::NotFound,
    }
}

fn found(route: &str, params: &[(&str, &str)]) -> Outcome {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    Outcome::Found(route.into(), params.collect())
}

/// Runs `(path, expected)` cases against `routes` registered under GET.
fn check(routes: &[&str], cases: &[(&str, Outcome)]) {
    let router = router(routes);
    for (path, want) in cases {
        assert_eq!(&lookup(&router, &Method::GET, path), want, "GET {path}");
    }
}
