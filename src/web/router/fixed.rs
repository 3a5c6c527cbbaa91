//! Paths as the engine's switches rewrite them before matching or for a
//! redirect: Gin's `cleanPath` (`RemoveExtraSlash`, `RedirectFixedPath`, and
//! joining a route onto its group) and a path written in a route's case
//! (`RedirectFixedPath`).

/// Gin's `cleanPath`: a rooted path with `.` and `..` resolved and
/// repeated slashes removed; a trailing slash (or a final `.`) is kept.
pub fn clean_path(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            segment => kept.push(segment),
        }
    }
    let last = path.rsplit('/').next().unwrap_or("");
    let mut out = String::with_capacity(path.len() + 1);
    for segment in &kept {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() || path.ends_with('/') || last == "." {
        out.push('/');
    }
    out
}

/// `path` written in the case of `route` if the two match ignoring case:
/// the route's literal text, the path's own text where the route has a
/// `:param` or a `*catch-all`. `None` if they do not match.
pub(super) fn in_route_case(route: &str, path: &str) -> Option<String> {
    let mut segments = path.strip_prefix('/')?.split('/');
    let mut out = String::with_capacity(path.len());
    for pattern in route.strip_prefix('/')?.split('/') {
        if pattern.starts_with('*') {
            let rest: Vec<&str> = segments.by_ref().collect();
            out.push('/');
            out.push_str(&rest.join("/"));
            return Some(out);
        }
        let segment = segments.next()?;
        let wildcard = unescaped_colon(pattern);
        let literal = pattern[..wildcard.unwrap_or(pattern.len())].replace("\\:", ":");
        let (head, tail) = (segment.get(..literal.len())?, &segment[literal.len()..]);
        let param_ok = if wildcard.is_some() {
            !tail.is_empty()
        } else {
            tail.is_empty()
        };
        if head.to_lowercase() != literal.to_lowercase() || !param_ok {
            return None;
        }
        out.push('/');
        out.push_str(&literal);
        out.push_str(tail);
    }
    segments.next().is_none().then_some(out)
}

/// Where a `:param` starts in a route segment (`\:` is a literal colon).
fn unescaped_colon(segment: &str) -> Option<usize> {
    let bytes = segment.as_bytes();
    (0..bytes.len()).find(|&i| bytes[i] == b':' && (i == 0 || bytes[i - 1] != b'\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gin's `path_test.go` cases.
    #[test]
    fn clean_path_resolves_dots_and_repeated_slashes_as_gin_does() {
        let cases = [
            ("/", "/"),
            ("/abc", "/abc"),
            ("/a/b/c", "/a/b/c"),
            ("/abc/", "/abc/"),
            ("/a/b/c/", "/a/b/c/"),
            ("", "/"),
            ("a/", "/a/"),
            ("abc", "/abc"),
            ("abc/def", "/abc/def"),
            ("a/b/c", "/a/b/c"),
            ("//", "/"),
            ("/abc//", "/abc/"),
            ("/abc/def//", "/abc/def/"),
            ("/a/b/c//", "/a/b/c/"),
            ("/abc//def//ghi", "/abc/def/ghi"),
            ("//abc", "/abc"),
            ("///abc", "/abc"),
            ("//abc//", "/abc/"),
            (".", "/"),
            ("./", "/"),
            ("/abc/./def", "/abc/def"),
            ("/./abc/def", "/abc/def"),
            ("/abc/.", "/abc/"),
            ("..", "/"),
            ("../", "/"),
            ("../../", "/"),
            ("../..", "/"),
            ("../../abc", "/abc"),
            ("/abc/def/ghi/../jkl", "/abc/def/jkl"),
            ("/abc/def/../ghi/../jkl", "/abc/jkl"),
            ("/abc/def/..", "/abc"),
            ("/abc/def/../..", "/"),
            ("/abc/def/../../..", "/"),
            ("/abc/def/../../../ghi/jkl/../../../mno", "/mno"),
            ("abc/./../def", "/def"),
            ("abc//./../def", "/def"),
            ("abc/../../././../def", "/def"),
        ];
        for (path, want) in cases {
            assert_eq!(clean_path(path), want, "{path:?}");
            assert_eq!(clean_path(want), want, "{want:?} again");
        }
    }

    #[test]
    fn a_path_takes_the_routes_case_for_literals_and_keeps_its_own_for_wildcards() {
        let cases = [
            ("/users/new", "/USERS/New", Some("/users/new")),
            ("/users/:id", "/USERS/AbC", Some("/users/AbC")),
            ("/user_:name", "/USER_Bob", Some("/user_Bob")),
            ("/src/*file", "/SRC/A/b", Some("/src/A/b")),
            ("/a\\:b", "/A:B", Some("/a:b")),
            ("/users/:id", "/users/", None),
            ("/users/:id", "/users/1/2", None),
            ("/users", "/userz", None),
        ];
        for (route, path, want) in cases {
            assert_eq!(
                in_route_case(route, path).as_deref(),
                want,
                "{route} {path}"
            );
        }
    }
}
