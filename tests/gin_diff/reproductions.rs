//! The reproduction of each departure in `docs/middleware.md` §13, as a
//! table of its own: the differential test checks that each still shows
//! its departure against the real Gin, so the document's examples stay true.

use super::generate::{Switches, Table};

/// (departure, switches on top of Gin's defaults, routes, request); no
/// request for a departure in a refusal's wording.
type Row = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    Option<(&'static str, &'static str)>,
);

const ROWS: &[Row] = &[
    (
        "host-like-target-refused",
        "fixed",
        &[("GET", "/:name")],
        Some(("GET", "/\\evil.example/")),
    ),
    (
        "host-like-target-refused",
        "",
        &[("POST", "/:name/:id")],
        Some(("POST", "/%09/EVIL.example/")),
    ),
    (
        "host-like-target-refused",
        "raw",
        &[("HEAD", "/:y/user")],
        Some(("HEAD", "//user/")),
    ),
    (
        "gin-redirects-to-no-route",
        "",
        &[("GET", "/:name/a/a")],
        Some(("GET", "/ba/")),
    ),
    (
        "gin-empty-param",
        "",
        &[("GET", "/:y/*file")],
        Some(("GET", "//x")),
    ),
    (
        "gin-misses-a-route",
        "",
        &[("GET", "/a/:id"), ("GET", "/:x/:y/:z")],
        Some(("GET", "/a/1/2")),
    ),
    (
        "gin-misses-trailing-slash-redirect",
        "",
        &[("GET", "/x/*file"), ("GET", "/:id/user/:slug/")],
        Some(("GET", "/x")),
    ),
    (
        "gin-redirects-though-a-route-matches",
        "",
        &[("GET", "/:slug/"), ("GET", "/s")],
        Some(("GET", "/s/")),
    ),
    (
        "gin-location-cleaned",
        "",
        &[("GET", "/x/:id")],
        Some(("GET", "/x/../")),
    ),
    (
        "gin-redirect-from-decoded-path",
        "res",
        &[("POST", "/b")],
        Some(("POST", "//b/")),
    ),
    (
        "gin-redirect-from-decoded-path",
        "raw",
        &[("GET", "/:x/")],
        Some(("GET", "/a%2Fb")),
    ),
    (
        "gin-fixed-path-from-decoded-path",
        "raw fixed",
        &[("GET", "/v1")],
        Some(("GET", "/v%31")),
    ),
    (
        "gin-fixed-path-misses",
        "fixed",
        &[("GET", "/us/:y/*file")],
        Some(("GET", "/US/a/b")),
    ),
    (
        "gin-fixed-path-to-no-route",
        "fixed",
        &[("DELETE", "/:slug/a")],
        Some(("DELETE", "/./a//")),
    ),
    (
        "gin-panics-in-405-lookup",
        "405",
        &[
            ("GET", "/src"),
            ("HEAD", "/:id/"),
            ("PATCH", "/src/ab"),
            ("PATCH", "/:x"),
            ("HEAD", "/src"),
            ("GET", "/:id"),
        ],
        Some(("POST", "/src/")),
    ),
    (
        "gin-405-for-no-route",
        "405",
        &[
            ("DELETE", "/ab/:y"),
            ("PUT", "/ba/b"),
            ("DELETE", "/:name/:y/:name"),
        ],
        Some(("DELETE", "/ab//a")),
    ),
    (
        "default-405",
        "defaults",
        &[("GET", "/a")],
        Some(("POST", "/a")),
    ),
    (
        "default-path-as-sent",
        "defaults",
        &[("GET", "/files/:name")],
        Some(("GET", "/files/a%2Fb")),
    ),
    (
        "malformed-escape",
        "",
        &[("GET", "/:id")],
        Some(("GET", "/a%zz")),
    ),
    (
        "plus-in-raw-value",
        "raw",
        &[("GET", "/:id")],
        Some(("GET", "/a+b%2F")),
    ),
    (
        "not-utf8",
        "raw",
        &[("GET", "/:id")],
        Some(("GET", "/a%2F%FF")),
    ),
    (
        "gin-raw-path-only-when-unusual",
        "raw values-as-sent",
        &[("GET", "/:id")],
        Some(("GET", "/caf%C3%A9")),
    ),
    (
        "same-catch-all-twice",
        "",
        &[("GET", "/src/*path"), ("GET", "/src/*path")],
        None,
    ),
    (
        "conflict-prefix",
        "",
        &[("GET", "/:id/users"), ("GET", "/:id/*file")],
        None,
    ),
    (
        "syntax-error-first",
        "",
        &[("GET", "/:x"), ("GET", "/*rest/")],
        None,
    ),
    (
        "gin-1.8.1-no-allow",
        "405",
        &[("GET", "/a")],
        Some(("POST", "/a")),
    ),
    (
        "gin-1.8.1-fixed-path-panic",
        "fixed",
        &[("GET", "/us/:y/s"), ("GET", "/us/:y/:id")],
        Some(("GET", "/US/a/b")),
    ),
    (
        "gin-1.8.1-lookup-panic",
        "405 no-tsr",
        &[
            ("POST", "/"),
            ("GET", "/:name/x/ba/b"),
            ("GET", "/:name/:x/b/"),
        ],
        Some(("GET", "/1/x/ba/b/")),
    ),
    (
        "gin-1.8.1-runtime-error-refusal",
        "",
        &[("DELETE", "/"), ("DELETE", "/*rest")],
        None,
    ),
];

/// Each reproduction's departure and its table.
pub fn tables() -> Vec<(&'static str, Table)> {
    let table = |&(id, flags, routes, request): &Row| {
        let on = |flag: &str| flags.split(' ').any(|f| f == flag);
        let switches = Switches {
            redirect_trailing_slash: !on("no-tsr"),
            redirect_fixed_path: on("fixed"),
            remove_extra_slash: on("res"),
            use_raw_path: on("raw"),
            unescape_path_values: !on("values-as-sent"),
            handle_method_not_allowed: on("405"),
        };
        let owned = |(m, p): &(&str, &str)| (m.to_string(), p.to_string());
        let table = Table {
            switches,
            defaults: on("defaults"),
            routes: routes.iter().map(owned).collect(),
            requests: request.iter().map(owned).collect(),
        };
        (id, table)
    };
    ROWS.iter().map(table).collect()
}
