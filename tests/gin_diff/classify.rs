//! Why Gin and handwire answered one request differently, or worded one
//! refusal differently: which documented departure of `docs/middleware.md`
//! §13 the difference is, or none.
//!
//! Each departure is recognised from what a reference model says the
//! request means: the path each engine matched (Gin's `URL.Path` or
//! `RawPath`, handwire's path as sent or decoded), the routes that match it
//! when every route is read as the pattern it writes (a `:param` is one
//! non-empty segment, a `*catch-all` the rest), and the `Location` Gin
//! builds (`URL.String` of the decoded path, then `http.Redirect`'s
//! `path.Clean`). A difference the model cannot name is returned as an
//! error: an undocumented disagreement.

use super::generate::Switches;

/// One engine's answer to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub location: Option<String>,
    pub allow: Option<String>,
    /// The route whose handler ran, by its index in the table.
    pub route: Option<usize>,
    /// Its parameters in route order (Gin's non-UTF-8 values marked).
    pub params: Vec<(String, String)>,
    /// Gin only: the panic, and where in Gin it happened.
    pub panic: Option<(String, String)>,
}

/// The request and the table it was asked of.
pub struct Case<'a> {
    pub switches: Switches,
    /// The table's routes (method, path) by index; `None` for one refused.
    pub routes: Vec<Option<(&'a str, &'a str)>>,
    pub method: &'a str,
    pub target: &'a str,
}

/// The departures that explain every difference between `gin` and `hw`
/// (empty when they agree), or what is left unexplained.
pub fn classify(case: &Case, gin: &Answer, hw: &Answer) -> Result<Vec<&'static str>, String> {
    if gin == hw {
        return Ok(Vec::new());
    }
    let raw = case.target.split('?').next().unwrap_or("").as_bytes();
    let (decoded, malformed) = decode(raw);
    if let Some((message, at)) = &gin.panic {
        return match (message.as_str(), at.as_str()) {
            ("invalid node type", "fixed-path") => Ok(vec!["gin-1.8.1-fixed-path-panic"]),
            (m, _) if m.contains("index out of range") => Ok(vec!["gin-1.8.1-lookup-panic"]),
            (m, "405-lookup") if m.contains("slice bounds") => Ok(vec!["gin-panics-in-405-lookup"]),
            _ => Err(format!("Gin panicked: {:?}", gin.panic)),
        };
    }
    if malformed && gin.status == 400 {
        return Ok(vec!["malformed-escape"]);
    }
    if std::str::from_utf8(&decoded).is_err() {
        return Ok(vec!["not-utf8"]);
    }
    let sw = case.switches;
    // Gin's UseRawPath reads RawPath, which Go keeps only when it is not
    // the encoding Go would write itself (`%41`, `%2F`): else Gin matches
    // the decoded path and takes its values from it.
    if sw.use_raw_path && go_escape(&decoded).as_bytes() == raw && decoded != raw {
        return Ok(vec!["gin-raw-path-only-when-unusual"]);
    }

    let mut ids = Vec::new();
    let mut g = gin.clone();
    if g.status == 405 && g.allow.is_none() && hw.status == 405 {
        g.allow.clone_from(&hw.allow);
        ids.push("gin-1.8.1-no-allow");
    }
    if g.route.is_some() && g.route == hw.route && g.params.len() == hw.params.len() {
        for (gp, hp) in g.params.iter_mut().zip(&hw.params) {
            if gp.0 == hp.0 && gp.1 != hp.1 && gp.1 == hp.1.replace('+', " ") {
                gp.1.clone_from(&hp.1);
                ids.push("plus-in-raw-value");
            }
        }
    }
    if let (Some(gl), Some(hl)) = (&g.location, &hw.location) {
        if gl != hl && g.status == hw.status {
            let from_decoded = [toggle(&decoded), decode(path_of(hl).as_bytes()).0];
            if *gl == redirect_clean(hl) {
                ids.push("gin-location-cleaned");
            } else if from_decoded
                .iter()
                .any(|p| *gl == gin_location(p, query(hl)))
            {
                ids.push("gin-redirect-from-decoded-path");
            } else if sw.redirect_fixed_path && sw.use_raw_path && decoded != raw {
                ids.push("gin-fixed-path-from-decoded-path");
            } else {
                return Err(format!("Location {gl} (Gin) vs {hl}"));
            }
            g.location.clone_from(&hw.location);
        }
    }
    if g == *hw {
        return Ok(ids);
    }

    let hw_path = handwire_path(sw, raw, &decoded);
    let gin_path = gin_path(sw, raw, &decoded);
    let accepted = || case.routes.iter().flatten();
    let here = |path: &[u8], empty: bool| {
        accepted().find(|(m, r)| *m == case.method && matches(r, path, empty))
    };
    let elsewhere = |path: &[u8], empty: bool| {
        accepted().any(|(m, r)| *m != case.method && matches(r, path, empty))
    };
    let redirect = |a: &Answer| a.location.is_some() && matches!(a.status, 301 | 307);
    let id = match (g.route, hw.route) {
        (Some(r), _)
            if !matches(case.routes_of(r), &gin_path, false)
                && matches(case.routes_of(r), &gin_path, true) =>
        {
            "gin-empty-param"
        }
        (None, Some(r)) if matches(case.routes_of(r), &hw_path, false) => match redirect(&g) {
            true => "gin-redirects-though-a-route-matches",
            false => "gin-misses-a-route",
        },
        (None, None) if redirect(&g) && !redirect(hw) => {
            let gl = g.location.as_deref().unwrap_or("");
            let target = decode(path_of(gl).as_bytes()).0;
            if !is_local(&target) {
                "host-like-target-refused"
            } else if sw.redirect_trailing_slash
                && *gl == gin_location(&toggle(&decoded), query(gl))
            {
                match here(&toggle(&hw_path), false) {
                    None => "gin-redirects-to-no-route",
                    Some(_) => return Err("Gin's trailing-slash redirect, not ours".into()),
                }
            } else if sw.redirect_fixed_path && sw.use_raw_path && hw_path != decoded {
                "gin-fixed-path-from-decoded-path"
            } else if sw.redirect_fixed_path && here(&target, false).is_none() {
                "gin-fixed-path-to-no-route"
            } else {
                return Err("Gin redirects, handwire does not".into());
            }
        }
        (None, None) if redirect(hw) && !redirect(&g) => {
            let hl = hw.location.as_deref().unwrap_or("");
            let target = decode(path_of(hl).as_bytes()).0;
            let toggled = toggle(&hw_path);
            let trailing = target == decode(&toggled).0 && here(&toggled, false).is_some();
            if sw.redirect_trailing_slash && trailing {
                "gin-misses-trailing-slash-redirect"
            } else if sw.redirect_fixed_path && sw.use_raw_path && hw_path != decoded {
                "gin-fixed-path-from-decoded-path"
            } else if sw.redirect_fixed_path {
                "gin-fixed-path-misses"
            } else {
                return Err("handwire redirects, Gin does not".into());
            }
        }
        (None, None) if g.status == 404 && hw.status == 405 && elsewhere(&hw_path, false) => {
            "gin-misses-a-route"
        }
        (None, None) if g.status == 405 && hw.status == 404 && elsewhere(&gin_path, true) => {
            "gin-empty-param"
        }
        (None, None) if g.status == 405 && hw.status == 404 => "gin-405-for-no-route",
        _ => return Err("no departure fits".into()),
    };
    ids.push(id);
    Ok(ids)
}

/// How handwire's refusals of a route that is wrong by itself begin.
const SYNTAX: [&str; 6] = [
    "path must begin with '/'",
    "wildcards must be named",
    "only one wildcard per path segment",
    "catch-all routes are only allowed at the end",
    "no / before catch-all",
    "invalid escape string",
];

/// Why two refusals of the same route are worded differently.
pub fn refusal_departure(route: &str, gin: &str, hw: &str) -> Option<&'static str> {
    // What the two texts must share: a wildcard conflict up to the prefix,
    // a catch-all's conflict up to the segment it names.
    let named = |s: &str| {
        let cut = match s.contains("existing wildcard") {
            true => " in existing prefix ",
            false => " conflicts with existing path segment ",
        };
        s.split(cut).next().unwrap_or("").to_owned()
    };
    if hw.starts_with("handlers are already registered")
        && gin.contains("conflicts with existing wildcard")
        && route.contains("/*")
    {
        Some("same-catch-all-twice")
    } else if SYNTAX.iter().any(|e| hw.starts_with(e)) && gin.contains("conflicts with") {
        Some("syntax-error-first")
    } else if gin.contains(" in existing prefix ") && named(gin) == named(hw) {
        Some("conflict-prefix")
    } else if gin.contains("runtime error") {
        Some("gin-1.8.1-runtime-error-refusal")
    } else {
        None
    }
}

impl Case<'_> {
    /// The path of route number `i` of the table.
    fn routes_of(&self, i: usize) -> &str {
        self.routes.get(i).copied().flatten().map_or("", |(_, r)| r)
    }
}

/// Whether `route` (segments of words, `:param`, a final `*catch-all`)
/// matches `path`; `empty`: a `:param` may match an empty segment.
pub fn matches(route: &str, path: &[u8], empty: bool) -> bool {
    let Some(path) = path.strip_prefix(b"/") else {
        return false;
    };
    let segments: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let pattern: Vec<&str> = route[1..].split('/').collect();
    for (i, p) in pattern.iter().enumerate() {
        if p.starts_with('*') {
            return segments.len() > i;
        }
        let Some(s) = segments.get(i) else {
            return false;
        };
        let ok = match p.starts_with(':') {
            true => empty || !s.is_empty(),
            false => p.as_bytes() == *s,
        };
        if !ok {
            return false;
        }
    }
    segments.len() == pattern.len()
}

/// The path handwire matched: as sent, or decoded when that is UTF-8;
/// cleaned under `remove_extra_slash`.
fn handwire_path(sw: Switches, raw: &[u8], decoded: &[u8]) -> Vec<u8> {
    let path = match sw.use_raw_path {
        true => raw.to_vec(),
        false => decoded.to_vec(),
    };
    match sw.remove_extra_slash {
        true => clean(&path, true),
        false => path,
    }
}

/// The path Gin matched: `RawPath` under `UseRawPath` when Go kept one,
/// else `URL.Path`; cleaned under `RemoveExtraSlash`.
fn gin_path(sw: Switches, raw: &[u8], decoded: &[u8]) -> Vec<u8> {
    let raw_kept = go_escape(decoded).as_bytes() != raw;
    let path = match sw.use_raw_path && raw_kept {
        true => raw.to_vec(),
        false => decoded.to_vec(),
    };
    match sw.remove_extra_slash {
        true => clean(&path, true),
        false => path,
    }
}

/// `%XX` decoded; whether some `%` was not an escape (Go refuses those).
fn decode(raw: &[u8]) -> (Vec<u8>, bool) {
    let hex = |b: u8| (b as char).to_digit(16);
    let (mut out, mut malformed, mut i) = (Vec::new(), false, 0);
    while i < raw.len() {
        if raw[i] == b'%' {
            if let (Some(h), Some(l)) = (
                raw.get(i + 1).and_then(|&b| hex(b)),
                raw.get(i + 2).and_then(|&b| hex(b)),
            ) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
            malformed = true;
        }
        out.push(raw[i]);
        i += 1;
    }
    (out, malformed)
}

/// Go's `escape(path, encodePath)`.
fn go_escape(path: &[u8]) -> String {
    let mut out = String::new();
    for &b in path {
        if b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `Location` Gin sends for a redirect to the decoded path `target`:
/// `URL.String` encodes it, `http.Redirect` cleans it.
fn gin_location(target: &[u8], query: Option<&str>) -> String {
    let location = redirect_clean(&go_escape(target));
    match query {
        Some(q) => format!("{location}?{q}"),
        None => location,
    }
}

/// What `http.Redirect` does to a location without scheme and host:
/// `path.Clean`, a trailing slash kept. `//x` has a host: left alone.
fn redirect_clean(location: &str) -> String {
    let authority = location
        .strip_prefix("//")
        .map(|rest| rest.split(['/', '?']).next());
    if authority.flatten().is_some_and(|host| !host.is_empty()) {
        return location.to_owned();
    }
    let path = path_of(location);
    let mut out = String::from_utf8_lossy(&clean(path.as_bytes(), false)).into_owned();
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    match query(location) {
        Some(q) => format!("{out}?{q}"),
        None => out,
    }
}

/// A rooted path with `.`, `..` and repeated slashes resolved; Gin's
/// `cleanPath` keeps a trailing slash (`keep_slash`), Go's `path.Clean`
/// does not.
fn clean(path: &[u8], keep_slash: bool) -> Vec<u8> {
    let mut kept: Vec<&[u8]> = Vec::new();
    for segment in path.split(|&b| b == b'/') {
        match segment {
            b"" | b"." => {}
            b".." => {
                kept.pop();
            }
            s => kept.push(s),
        }
    }
    let mut out = Vec::new();
    for s in &kept {
        out.push(b'/');
        out.extend_from_slice(s);
    }
    let last = path.rsplit(|&b| b == b'/').next().unwrap_or(b"");
    if out.is_empty() || (keep_slash && (path.ends_with(b"/") || last == b".")) {
        out.push(b'/');
    }
    out
}

fn toggle(path: &[u8]) -> Vec<u8> {
    match path.strip_suffix(b"/") {
        Some(without) if !without.is_empty() => without.to_vec(),
        _ => [path, b"/"].concat(),
    }
}

fn path_of(location: &str) -> &str {
    location.split('?').next().unwrap_or("")
}

fn query(location: &str) -> Option<&str> {
    location.split_once('?').map(|(_, q)| q)
}

/// handwire's guard (`router::is_local`), on bytes: what is not UTF-8 is
/// none of the bytes it looks for.
fn is_local(path: &[u8]) -> bool {
    handwire::web::router::is_local(&String::from_utf8_lossy(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_matcher_reads_routes_as_patterns() {
        assert!(matches("/a/:id", b"/a/1", false));
        assert!(!matches("/a/:id", b"/a/", false));
        assert!(matches("/:y/*file", b"//x", true));
        assert!(!matches("/:y/*file", b"//x", false));
        assert!(matches("/src/*p", b"/src/", false));
        assert!(!matches("/src/*p", b"/src", false));
        assert!(matches("/", b"/", false));
        assert!(!matches("/", b"//", false));
    }

    #[test]
    fn gins_location_is_the_encoded_decoded_path_cleaned() {
        assert_eq!(gin_location(b"/x/..", None), "/");
        assert_eq!(gin_location(b"//b", None), "//b");
        assert_eq!(gin_location(b"//", None), "/");
        assert_eq!(gin_location(b"///v1/", None), "/v1/");
        assert_eq!(gin_location(b"/a?b/y", Some("q=1")), "/a%3Fb/y?q=1");
        assert_eq!(gin_location(b"/a/", None), "/a/");
    }
}
