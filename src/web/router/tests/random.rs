//! Randomized checks: every static route finds itself, the tree agrees with
//! a naive matcher that applies the rules literally, and odd input never
//! panics.

use http::Method;

use super::{lookup, Outcome};
use crate::web::router::{Lookup, Router};

/// Deterministic xorshift64* generator: reproducible "random" tables.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

#[test]
fn random_static_routes_look_up_to_themselves() {
    let words = [
        "a", "ab", "abc", "b", "ba", "é", "éa", "日本", "%41", "x.y", "-", "",
    ];
    let wildcards = [":p", "*rest"];
    let mut rng = Rng(0x5EED);
    let mut router = Router::new();
    let mut statics = Vec::new();
    for i in 0..3000 {
        let mut route = String::new();
        for depth in 0..1 + rng.below(5) {
            route.push('/');
            if rng.below(8) == 0 {
                // Some wildcard routes too: statics must still win over them.
                route.push_str(&format!("{}{depth}", rng.pick(&wildcards)));
            } else {
                route.push_str(rng.pick(&words));
            }
        }
        let is_static = !route.contains([':', '*']);
        if router.insert(Method::GET, &route, i).is_ok() && is_static {
            statics.push((route, i));
        }
    }
    assert!(statics.len() > 300, "only {} static routes", statics.len());
    for (route, i) in &statics {
        match router.lookup(&Method::GET, route) {
            Lookup::Found(value, params) => {
                assert_eq!((value, params.len()), (i, 0), "{route}")
            }
            _ => panic!("{route} not found"),
        }
    }
}

/// The matching rules, applied literally to every route: split into
/// segments, match each, and prefer static over param over catch-all at the
/// first segment where two matching routes differ.
fn reference_match(routes: &[String], path: &str) -> Option<(String, Vec<(String, String)>)> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    // (rank, route, params) of the best match so far; a lower rank wins.
    type Best = (Vec<u8>, String, Vec<(String, String)>);
    let mut best: Option<Best> = None;
    'routes: for route in routes {
        let mut rank = Vec::new();
        let mut params = Vec::new();
        let pieces: Vec<&str> = route[1..].split('/').collect();
        for (i, piece) in pieces.iter().enumerate() {
            if let Some(name) = piece.strip_prefix('*') {
                if segments.len() <= i {
                    continue 'routes;
                }
                params.push((name.into(), format!("/{}", segments[i..].join("/"))));
                rank.push(2);
                break;
            }
            let Some(segment) = segments.get(i) else {
                continue 'routes;
            };
            if let Some(name) = piece.strip_prefix(':') {
                if segment.is_empty() {
                    continue 'routes;
                }
                params.push((name.into(), segment.to_string()));
                rank.push(1);
            } else if piece == segment {
                rank.push(0);
            } else {
                continue 'routes;
            }
            if i + 1 == pieces.len() && segments.len() != pieces.len() {
                continue 'routes;
            }
        }
        if best
            .as_ref()
            .is_none_or(|(best_rank, ..)| rank < *best_rank)
        {
            best = Some((rank, route.clone(), params));
        }
    }
    best.map(|(_, route, params)| (route, params))
}

fn reference_lookup(routes: &[String], path: &str) -> Outcome {
    if let Some((route, params)) = reference_match(routes, path) {
        return Outcome::Found(route, params);
    }
    let other = match path.strip_suffix('/') {
        Some(without) => without.to_string(),
        None => format!("{path}/"),
    };
    if path.len() > 1 && !other.starts_with("//") && reference_match(routes, &other).is_some() {
        return Outcome::Redirect(other);
    }
    Outcome::NotFound
}

#[test]
fn random_routes_agree_with_a_naive_reference_matcher() {
    let route_words = ["a", "b", "ab", "", ":p", ":p", "*rest"];
    let path_words = ["a", "b", "ab", "ba", "", "x"];
    let mut rng = Rng(0xC0FFEE);
    for round in 0..200 {
        let mut router = Router::new();
        let mut accepted = Vec::new();
        for _ in 0..1 + rng.below(12) {
            let depth = 1 + rng.below(4);
            let mut route = String::new();
            for level in 0..depth {
                let mut word = rng.pick(&route_words).to_string();
                if word.starts_with('*') && level + 1 < depth {
                    word = "a".into();
                }
                if word == ":p" {
                    word = format!(":p{level}"); // same position, same name
                }
                route.push('/');
                route.push_str(&word);
            }
            if router.insert(Method::GET, &route, route.clone()).is_ok() {
                accepted.push(route);
            }
        }
        for _ in 0..50 {
            let mut path = String::new();
            for _ in 0..1 + rng.below(5) {
                path.push('/');
                path.push_str(rng.pick(&path_words));
            }
            assert_eq!(
                lookup(&router, &Method::GET, &path),
                reference_lookup(&accepted, &path),
                "round {round}, GET {path} with routes {accepted:?}"
            );
        }
    }
}

#[test]
fn odd_inputs_never_panic_and_accepted_routes_match_their_own_text() {
    let long_static = "/a".repeat(10_000);
    let long_params: String = (0..200).map(|i| format!("/:p{i}")).collect();
    let long_unicode = format!("/{}", "é".repeat(3_000));
    let odd = [
        "",
        "/",
        "//",
        "///",
        "%",
        "/%",
        "/%zz",
        "/%%",
        "/%2",
        "/%FF",
        ":",
        "*",
        "/:",
        "/*",
        "/:/",
        "/*/",
        "/::",
        "/**",
        "/:a:b",
        "/a*",
        "/ü",
        "/ü/:ü",
        "/日本/*語",
        "\0",
        "/\0",
        "/a b",
        "/?q=1",
        "/#",
        "/\\",
        "//:x",
        "/:x//",
        "/*x/",
        "/a/*",
        "/:x/*y",
        "/é:x",
        "/é/é",
        "/éa",
        "/éb",
        "/\u{10FFFF}",
        "/a/:b/",
        "/a/:b/c",
        "/a/:b",
        "/a:b/c",
        &long_static,
        &long_params,
        &long_unicode,
    ];
    let methods = [
        Method::GET,
        Method::POST,
        Method::from_bytes(b"X-ODD").expect("token"),
    ];
    let mut router = Router::new();
    let mut accepted = Vec::new();
    for (i, route) in odd.iter().enumerate() {
        for prefix in ["", "/p"] {
            let route = format!("{prefix}{route}");
            let method = &methods[i % methods.len()];
            if router.insert(method.clone(), &route, i).is_ok() {
                accepted.push((method.clone(), route));
            }
        }
    }
    for (method, route) in &accepted {
        let outcome = router.lookup(method, route);
        assert!(
            matches!(outcome, Lookup::Found(..)),
            "{method} {route}: {outcome:?}"
        );
    }
    for path in odd {
        for prefix in ["", "/p", "/p/"] {
            for method in &methods {
                let _ = router.lookup(method, &format!("{prefix}{path}"));
            }
        }
    }
}

#[test]
fn deep_trees_match_without_exhausting_the_stack() {
    // One route with 3000 params: a tree 6000 nodes deep.
    let depth = 3000;
    let params: String = (0..depth).map(|i| format!("/:p{i}")).collect();
    let mut router = Router::new();
    router
        .insert(Method::GET, &params, "params".to_string())
        .expect("valid route");
    match router.lookup(&Method::GET, &"/x".repeat(depth)) {
        Lookup::Found(value, params) => {
            assert_eq!((value.as_str(), params.len()), ("params", depth));
            assert_eq!(params.get("p2999"), Some("x"));
        }
        other => panic!("{other:?}"),
    }

    // `/y/.../y/:p` at every depth beside one long static route: a path that
    // fails at the bottom comes back through a wildcard at each level.
    let levels = 500;
    let mut router = Router::new();
    for k in 0..=levels {
        let route = format!("{}/:p", "/y".repeat(k));
        router
            .insert(Method::GET, &route, route.clone())
            .expect("valid route");
    }
    let bottom = format!("{}/end", "/y".repeat(levels));
    router
        .insert(Method::GET, &bottom, bottom.clone())
        .expect("valid route");
    let path = format!("{}/nope/more", "/y".repeat(levels));
    assert_eq!(lookup(&router, &Method::GET, &path), Outcome::NotFound);
    assert!(
        matches!(router.lookup(&Method::GET, &bottom), Lookup::Found(value, _) if *value == bottom)
    );
}
