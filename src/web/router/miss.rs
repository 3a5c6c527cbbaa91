//! What to answer when no route of the request's method matches the path:
//! the one decision the engine's [`Router`](super::Router) and the proto
//! gateway (whose routes are templates, not a radix tree) both take.
//!
//! Gin's order, after the route itself: a redirect to the path with one
//! trailing slash more or less if a route of the method matches that
//! (`RedirectTrailingSlash`), else 405 naming the methods whose routes match
//! the path (`HandleMethodNotAllowed`), else 404. The caller says only what
//! its routes match; the order, the candidate path, the guard against
//! redirecting to another host, the `Allow` list and the redirect's status
//! are decided here, once.

use http::{HeaderValue, Method, StatusCode};

/// The answer to a request no route of its method matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// The same path with one trailing slash more or less has a route of
    /// this method: redirect there ([`redirect_answer`] gives the status and the
    /// `Location` with the query string). Never offered for `/` itself, nor
    /// when the location would start with `//` or `/\`, which browsers read
    /// as another host.
    Redirect {
        /// The other form of the request path.
        location: String,
    },
    /// Routes of other methods match the path: 405, with these methods
    /// (sorted by name, each once) in the `Allow` header ([`allow_header`]).
    MethodNotAllowed {
        /// The methods whose routes match the path.
        allowed: Vec<Method>,
    },
    /// Nothing matches.
    NotFound,
}

impl Miss {
    /// Decides for the raw request `path`: `matches_here(p)` says whether a
    /// route of the request's method matches `p` (it is asked only about the
    /// trailing-slash form of `path`), `others()` gives the other methods
    /// whose routes match `path` (asked only when there is no redirect).
    ///
    /// For paths under 256 bytes, deciding a 404 allocates nothing.
    pub fn decide(
        path: &str,
        matches_here: impl FnOnce(&str) -> bool,
        others: impl FnOnce() -> Vec<Method>,
    ) -> Miss {
        if let Some(location) = trailing_slash_form(path, matches_here) {
            return Miss::Redirect { location };
        }
        let mut allowed = others();
        if allowed.is_empty() {
            return Miss::NotFound;
        }
        allowed.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        allowed.dedup();
        Miss::MethodNotAllowed { allowed }
    }
}

/// The status and `Location` of a [`Miss::Redirect`] for a request of
/// `method` with `query`: 301 for GET, 307 for other methods so that the
/// client repeats the method and body (Gin's choice), the query kept.
pub fn redirect_answer(
    method: &Method,
    location: &str,
    query: Option<&str>,
) -> (StatusCode, String) {
    let status = if method == Method::GET {
        StatusCode::MOVED_PERMANENTLY
    } else {
        StatusCode::TEMPORARY_REDIRECT
    };
    let location = match query {
        Some(q) => format!("{location}?{q}"),
        None => location.to_owned(),
    };
    (status, location)
}

/// The `Allow` header value of a [`Miss::MethodNotAllowed`]: `GET, POST`.
pub fn allow_header(allowed: &[Method]) -> HeaderValue {
    let names: Vec<&str> = allowed.iter().map(Method::as_str).collect();
    let value = HeaderValue::from_str(&names.join(", "));
    // A method name is a token (`http::Method` holds no other): always a value.
    value.expect("method names are header text")
}

/// The other form of `path` (one trailing slash more or less), if
/// `matches_here` accepts it and it stays on this host.
fn trailing_slash_form(path: &str, matches_here: impl FnOnce(&str) -> bool) -> Option<String> {
    if path.len() <= 1 {
        return None;
    }
    if let Some(without) = path.strip_suffix('/') {
        return (is_local(without) && matches_here(without)).then(|| without.to_owned());
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
            matches_here(std::str::from_utf8(slot).ok()?)
        }
        None => matches_here(&format!("{path}/")),
    };
    with.then(|| format!("{path}/"))
}

/// False for a redirect target that a browser would read as another host:
/// one that starts with two slashes, either way round (`//evil`, `/\evil`),
/// once the browser has done what the URL standard tells it to first:
/// dropped leading control characters and spaces, and every tab and
/// newline (`/<TAB>/evil` is `//evil` to it). Both redirects, the trailing
/// slash's and the fixed path's, ask this of the path before it is
/// percent-encoded.
pub fn is_local(path: &str) -> bool {
    let mut seen = (path.bytes())
        .skip_while(|&b| b <= b' ')
        .filter(|&b| !matches!(b, b'\t' | b'\n' | b'\r'));
    let slash = |b: Option<u8>| matches!(b, Some(b'/' | b'\\'));
    !(slash(seen.next()) && slash(seen.next()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decide` with one route of the request's method, at `here`, and
    /// other methods matching the path.
    fn decide(path: &str, here: &str, others: &[Method]) -> Miss {
        Miss::decide(path, |p| p == here, || others.to_vec())
    }

    #[test]
    fn a_redirect_comes_before_405_and_405_before_404() {
        let both = [Method::POST];
        assert_eq!(
            decide("/a/", "/a", &both),
            Miss::Redirect {
                location: "/a".into()
            }
        );
        assert_eq!(
            decide("/a", "/a/", &both),
            Miss::Redirect {
                location: "/a/".into()
            }
        );
        assert_eq!(
            decide("/a", "/b", &both),
            Miss::MethodNotAllowed {
                allowed: vec![Method::POST]
            }
        );
        assert_eq!(decide("/a", "/b", &[]), Miss::NotFound);
    }

    #[test]
    fn no_redirect_for_the_root_nor_to_what_a_browser_reads_as_another_host() {
        let host_like = [
            ("/", ""),
            ("//evil/", "//evil"),
            ("/\\evil", "/\\evil/"),
            ("/\t/evil/", "/\t/evil"),
            ("/\n\\evil", "/\n\\evil/"),
            ("\x01//evil/", "\x01//evil"),
            (" /\r/evil", " /\r/evil/"),
        ];
        for (path, here) in host_like {
            assert_eq!(decide(path, here, &[]), Miss::NotFound, "{path:?}");
        }
        let long = format!("/{}", "x".repeat(300));
        assert_eq!(
            decide(&long, &format!("{long}/"), &[]),
            Miss::Redirect {
                location: format!("{long}/")
            },
            "past the stack buffer"
        );
    }

    #[test]
    fn allowed_methods_are_sorted_by_name_and_listed_once() {
        let others = [Method::PUT, Method::DELETE, Method::GET, Method::PUT];
        let Miss::MethodNotAllowed { allowed } = decide("/a", "", &others) else {
            panic!("expected 405");
        };
        assert_eq!(allow_header(&allowed), "DELETE, GET, PUT");
    }

    #[test]
    fn a_redirect_is_301_for_get_and_307_otherwise_and_keeps_the_query() {
        assert_eq!(
            redirect_answer(&Method::GET, "/a", Some("x=1")),
            (StatusCode::MOVED_PERMANENTLY, "/a?x=1".to_owned())
        );
        assert_eq!(
            redirect_answer(&Method::POST, "/a/", None),
            (StatusCode::TEMPORARY_REDIRECT, "/a/".to_owned())
        );
    }
}
