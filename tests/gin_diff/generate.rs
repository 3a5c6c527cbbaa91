//! Seeded route tables and near-miss requests for the differential test.
//!
//! A table is 1–12 routes over a few shared words (`/us`, `/user`,
//! `/users`), `:param` and `*catch-all` segments, trailing slashes, seven
//! methods, some paths registered under several methods; and the engine's
//! switches, set alike on both engines. Its requests start from a route,
//! fill its wildcards, then change it the way a client gets a path wrong:
//! a slash toggled, case changed, a segment changed or dropped, slashes
//! doubled, `.`/`..`, `%2F`, a letter escaped, malformed escapes, control
//! characters. The same seed gives the same tables.

use serde::Serialize;

/// xorshift64*: reproducible, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` in 100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The engine's switches, with Gin's field names in the JSON.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Switches {
    pub redirect_trailing_slash: bool,
    pub redirect_fixed_path: bool,
    pub remove_extra_slash: bool,
    pub use_raw_path: bool,
    pub unescape_path_values: bool,
    pub handle_method_not_allowed: bool,
}

/// One table: its switches, its routes (method, path) in registration
/// order and its requests (method, request target).
#[derive(Debug, Serialize)]
pub struct Table {
    /// Gin's switches; handwire's too, unless `defaults`.
    pub switches: Switches,
    /// Each engine at its own defaults: Gin's `gin.New()`, handwire's
    /// `Engine::bare()` (405 on, the path matched as sent).
    pub defaults: bool,
    pub routes: Vec<(String, String)>,
    pub requests: Vec<(String, String)>,
}

impl Switches {
    /// What `gin.New()` sets.
    pub const GIN_DEFAULTS: Switches = Switches {
        redirect_trailing_slash: true,
        redirect_fixed_path: false,
        remove_extra_slash: false,
        use_raw_path: false,
        unescape_path_values: true,
        handle_method_not_allowed: false,
    };
}

pub const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
const WORDS: [&str; 12] = [
    "a", "ab", "b", "ba", "s", "src", "us", "user", "users", "v1", "x", "cmd",
];
const PARAMS: [&str; 4] = ["id", "name", "x", "y"];
const CATCH_ALLS: [&str; 3] = ["path", "file", "rest"];
/// What a request puts where a route has a `:param`.
const VALUES: [&str; 16] = [
    "1",
    "a",
    "ab",
    "s",
    "x",
    "A",
    "users",
    "a%2Fb",
    "a+b",
    "caf%C3%A9",
    "a%3Fb",
    "a%20b",
    "v%31",
    "%FF",
    "a%2F%FF",
    "a+b%2F",
];
/// What a request puts where a route has a `*catch-all`.
const TAILS: [&str; 5] = ["", "a", "a/b", "x/", "A%2Fb"];

/// The table the `n`th draw of `rng` gives.
pub fn table(rng: &mut Rng) -> Table {
    let defaults = rng.chance(15);
    let switches = match defaults {
        true => Switches::GIN_DEFAULTS,
        false => Switches {
            redirect_trailing_slash: rng.chance(80),
            redirect_fixed_path: rng.chance(35),
            remove_extra_slash: rng.chance(25),
            use_raw_path: rng.chance(50),
            unescape_path_values: rng.chance(80),
            handle_method_not_allowed: rng.chance(50),
        },
    };
    let mut routes: Vec<(String, String)> = Vec::new();
    for _ in 0..1 + rng.below(12) {
        let method = method(rng).to_owned();
        let path = match routes.len() {
            0 => route(rng),
            n => {
                let earlier = routes[rng.below(n)].1.clone();
                match rng.below(6) {
                    // The same path, most likely under another method.
                    0 => earlier,
                    // Its other trailing-slash form.
                    1 if earlier != "/" => toggle_slash(&earlier),
                    // One segment longer: a shared prefix.
                    2 if !earlier.contains('*') => {
                        format!("{}{}", earlier.trim_end_matches('/'), route(rng))
                    }
                    _ => route(rng),
                }
            }
        };
        routes.push((method, path));
    }
    let mut requests = Vec::new();
    for _ in 0..16 + rng.below(9) {
        let (method, route) = &routes[rng.below(routes.len())];
        let mut target = fill(rng, route);
        for _ in 0..rng.below(3) {
            target = near_miss(rng, &target);
        }
        if rng.chance(8) {
            target.push_str("?q=1");
        }
        let method = match rng.chance(70) {
            true => method.clone(),
            false => self::method(rng).to_owned(),
        };
        requests.push((method, target));
    }
    Table {
        switches,
        defaults,
        routes,
        requests,
    }
}

/// GET half the time, else one of the other six.
fn method(rng: &mut Rng) -> &'static str {
    match rng.chance(50) {
        true => "GET",
        false => METHODS[1 + rng.below(METHODS.len() - 1)],
    }
}

/// A route: `/`, or 1–4 segments (words, `:param`s, a final
/// `*catch-all`), sometimes with a trailing slash.
fn route(rng: &mut Rng) -> String {
    if rng.chance(6) {
        return "/".into();
    }
    let mut path = String::new();
    let segments = 1 + rng.below(4);
    for i in 0..segments {
        let roll = rng.below(10);
        if i == segments - 1 && roll == 0 {
            path.push_str("/*");
            path.push_str(rng.pick(&CATCH_ALLS));
            return path;
        }
        match roll < 4 {
            true => path.push_str(&format!("/:{}", rng.pick(&PARAMS))),
            false => path.push_str(&format!("/{}", rng.pick(&WORDS))),
        }
    }
    if rng.chance(20) {
        path.push('/');
    }
    path
}

/// A request path the route matches: its wildcards filled in.
fn fill(rng: &mut Rng, route: &str) -> String {
    let mut out = String::new();
    for segment in route.split('/').skip(1) {
        out.push('/');
        if segment.starts_with(':') {
            out.push_str(rng.pick(&VALUES));
        } else if segment.starts_with('*') {
            out.push_str(rng.pick(&TAILS));
        } else {
            out.push_str(segment);
        }
    }
    out
}

fn toggle_slash(path: &str) -> String {
    match path.strip_suffix('/') {
        Some(without) if !without.is_empty() => without.to_owned(),
        _ => format!("{path}/"),
    }
}

/// `path` changed once, as a client gets a path wrong.
fn near_miss(rng: &mut Rng, path: &str) -> String {
    let mut segments: Vec<String> = path.split('/').skip(1).map(str::to_owned).collect();
    let at = rng.below(segments.len());
    match rng.below(13) {
        0 | 1 => return toggle_slash(path),
        2 => segments[at] = segments[at].to_uppercase(),
        3 => return path.to_uppercase(),
        4 => segments.insert(at, String::new()),
        5 => segments.insert(at, rng.pick(&[".", ".."]).into()),
        6 => segments[at] = rng.pick(&WORDS).into(),
        7 if segments.len() > 1 => {
            segments.pop();
        }
        8 => segments.push(rng.pick(&WORDS).into()),
        9 if at + 1 < segments.len() => {
            let next = segments.remove(at + 1);
            segments[at] = format!("{}%2F{next}", segments[at]);
        }
        10 => {
            // One letter written as its escape: `a` → `%61`.
            let segment = &segments[at];
            if let Some(i) = segment.find(|c: char| c.is_ascii_lowercase()) {
                let escaped = format!("%{:02X}", segment.as_bytes()[i]);
                segments[at] = format!("{}{escaped}{}", &segment[..i], &segment[i + 1..]);
            }
        }
        11 => {
            let odd = rng.pick(&["%zz", "%", "%09", "%0A", "%5C", "\\", "%2E%2E"]);
            segments[at] = format!("{odd}{}", segments[at]);
        }
        _ => segments[at] = String::new(),
    }
    format!("/{}", segments.join("/"))
}
