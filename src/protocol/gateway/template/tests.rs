//! The path-template grammar as a table: what each template matches and
//! binds, what it does not match, and what it refuses at start-up. Read it
//! as the documentation of the rules in `docs/proto-http.md`.

use super::*;

/// What a lookup of one path gives.
#[derive(Debug, PartialEq)]
enum Want<'a> {
    /// Matches, binding these (field path, value) pairs.
    Binds(&'a [(&'a str, &'a str)]),
    /// Does not match.
    No,
    /// Matches but a value cannot be decoded (a 400), the message contains this.
    Bad(&'a str),
}
use Want::*;

/// (template, verbs other routes declare, path, expected).
const MATCHES: &[(&str, &[&str], &str, Want)] = &[
    // {f} is {f=*}: one non-empty segment.
    (
        "/helloworld/{name}",
        &[],
        "/helloworld/kratos",
        Binds(&[("name", "kratos")]),
    ),
    (
        "/helloworld/{name=*}",
        &[],
        "/helloworld/kratos",
        Binds(&[("name", "kratos")]),
    ),
    ("/helloworld/{name}", &[], "/helloworld/", No),
    ("/helloworld/{name}", &[], "/helloworld", No),
    ("/helloworld/{name}", &[], "/helloworld/a/b", No),
    // Literals are compared raw: an encoded letter is not the letter.
    ("/v1/users", &[], "/v1/users", Binds(&[])),
    ("/v1/users", &[], "/v1/us%65rs", No),
    ("/v1/users", &[], "/v1/users/", No),
    ("/", &[], "/", Binds(&[])),
    // One-segment variables are fully percent-decoded, %2F included.
    (
        "/helloworld/{name}",
        &[],
        "/helloworld/w%C3%B6rld%20two",
        Binds(&[("name", "wörld two")]),
    ),
    (
        "/helloworld/{name}",
        &[],
        "/helloworld/a%2Fb",
        Binds(&[("name", "a/b")]),
    ),
    (
        "/helloworld/{name}",
        &[],
        "/helloworld/a+b",
        Binds(&[("name", "a+b")]),
    ),
    (
        "/helloworld/{name}",
        &[],
        "/helloworld/%zz",
        Bad("malformed percent escape \"%zz\""),
    ),
    (
        "/helloworld/{name}",
        &[],
        "/helloworld/%FF",
        Bad("not UTF-8"),
    ),
    // Multi-segment variables keep %2F (and %2f), decode the rest.
    (
        "/v1/{name=shelves/*/books/*}",
        &[],
        "/v1/shelves/s1/books/b%2F2%20x",
        Binds(&[("name", "shelves/s1/books/b%2F2 x")]),
    ),
    (
        "/v1/{name=shelves/*}/books",
        &[],
        "/v1/shelves/a%2fb/books",
        Binds(&[("name", "shelves/a%2fb")]),
    ),
    ("/v1/{name=shelves/*}", &[], "/v1/books/1", No),
    // ** matches zero or more segments and must come last.
    (
        "/files/{path=**}",
        &[],
        "/files/a/b/c.txt",
        Binds(&[("path", "a/b/c.txt")]),
    ),
    ("/files/{path=**}", &[], "/files", Binds(&[("path", "")])),
    (
        "/files/{path=**}",
        &[],
        "/files/one",
        Binds(&[("path", "one")]),
    ),
    ("/files/**", &[], "/files/x/y", Binds(&[])),
    ("/v1/*/items", &[], "/v1/abc/items", Binds(&[])),
    // Nested field paths.
    (
        "/v1/books/{book.id}/{book.shelf.name}",
        &[],
        "/v1/books/7/fiction",
        Binds(&[("book.id", "7"), ("book.shelf.name", "fiction")]),
    ),
    // Verbs: a template with a verb needs it; one without refuses it once declared.
    (
        "/v1/users:batchGet",
        &["batchGet"],
        "/v1/users:batchGet",
        Binds(&[]),
    ),
    ("/v1/users:batchGet", &["batchGet"], "/v1/users", No),
    (
        "/v1/{name=users/*}:undelete",
        &["undelete"],
        "/v1/users/a:undelete",
        Binds(&[("name", "users/a")]),
    ),
    (
        "/v1/{name=users/*}:undelete",
        &["undelete"],
        "/v1/users/a:delete",
        No,
    ),
    ("/v1/users/{id}", &["undelete"], "/v1/users/a:undelete", No),
    // A colon that is no declared verb is ordinary text, %3A never splits.
    (
        "/v1/users/{id}",
        &[],
        "/v1/users/a:undelete",
        Binds(&[("id", "a:undelete")]),
    ),
    (
        "/v1/users/{id}",
        &["undelete"],
        "/v1/users/a%3Aundelete",
        Binds(&[("id", "a:undelete")]),
    ),
    (
        "/v1/greetings:sayAgain",
        &["sayAgain"],
        "/v1/greetings:sayagain",
        No,
    ),
];

#[test]
fn templates_match_bind_and_decode_as_the_table_says() {
    for (template, verbs, path, want) in MATCHES {
        let t = Template::parse(template).unwrap_or_else(|e| panic!("{e}"));
        let declared = |v: &str| verbs.contains(&v) || t.verb() == Some(v);
        let got = match t.matches(&split_path(path, declared)) {
            None => No,
            Some(Err(e)) => {
                assert!(
                    matches!(want, Bad(m) if e.message.contains(m)),
                    "{template} on {path}: {e:?}, want {want:?}"
                );
                continue;
            }
            Some(Ok(values)) => {
                let names: Vec<String> = t.variables().iter().map(Variable::dotted).collect();
                let pairs: Vec<(&str, &str)> = names
                    .iter()
                    .map(String::as_str)
                    .zip(values.iter().map(String::as_str))
                    .collect();
                assert_eq!(Binds(&pairs), *want, "{template} on {path}");
                continue;
            }
        };
        assert_eq!(got, *want, "{template} on {path}");
    }
}

#[test]
fn templates_outside_the_grammar_are_refused_with_the_reason() {
    let cases = [
        ("helloworld/{name}", "must start with `/`"),
        ("/v1/**/items", "`**` must be the last segment"),
        ("/v1/{path=**}/items", "`**` must be the last segment"),
        ("/v1/{name}/{name}", "field name is bound twice"),
        ("/v1/{a={b}}", "variables cannot nest"),
        ("/v1/{name", "`{` without its `}`"),
        ("/v1/{name=users/*", "`{` without its `}`"),
        ("/v1/{9name}", "\"9name\" is not a field path"),
        ("/v1/{a..b}", "\"a..b\" is not a field path"),
        ("/v1/{}", "\"\" is not a field path"),
        ("/v1//users", "empty segment"),
        ("/v1/users/", "empty segment"),
        ("/v1/us*rs", "'*' is not allowed in a literal"),
        ("/v1/*x", "`*` and `**` must be a whole segment"),
        ("/v1/users:", "verb \"\" must be a non-empty literal"),
        ("/v1/users:a:b", "verb \"a:b\" must be a non-empty literal"),
        ("/:verb", "a verb needs a segment before it"),
        ("/v1/a b", "' ' is not allowed in a literal"),
        ("/v1/users?x=1", "'?' is not allowed in a literal"),
    ];
    for (template, want) in cases {
        let err = Template::parse(template).unwrap_err();
        assert!(err.message.contains(want), "{template}: {err}");
        assert!(err
            .to_string()
            .starts_with(&format!("path template {template:?}: ")));
    }
}

/// RFC 3986 §3.3: `pchar = unreserved / pct-encoded / sub-delims / ":" / "@"`.
/// Every sub-delim is literal text (`=` like `&`), `%` only as `%` HEXDIG
/// HEXDIG (§2.1); `*` and `:` stay the grammar's (wildcard, verb).
#[test]
fn literals_take_every_pchar_but_only_whole_percent_escapes() {
    for ok in [
        "/v1/a=b",
        "/v1/k=v;x=y",
        "/v1/!$&'()+,;=@-._~",
        "/v1/{name=a=b/*}",
        "/v1/%2Fx%e9",
        "/v1/users:do=it",
        "/v1/users:a%3Ab",
    ] {
        let t = Template::parse(ok).unwrap_or_else(|e| panic!("{e}"));
        let own = split_path(ok, |v| t.verb() == Some(v));
        if !ok.contains('{') {
            assert!(
                matches!(t.matches(&own), Some(Ok(_))),
                "{ok} does not match itself"
            );
        }
    }
    let cases = [
        ("/%", "\"%\" in literal \"%\" is not a percent escape"),
        ("/%2", "\"%2\" in literal \"%2\" is not a percent escape"),
        (
            "/a%2z",
            "\"%2z\" in literal \"a%2z\" is not a percent escape",
        ),
        ("/v1/{name=a%zz}", "\"%zz\" in literal \"a%zz\""),
        ("/v1/x:do%", "\"%\" in literal \"do%\""),
        ("/v1/%+1", "\"%+1\""),
    ];
    for (template, want) in cases {
        let err = Template::parse(template).unwrap_err();
        assert!(err.message.contains(want), "{template}: {err}");
    }
}

/// Google's transcoder (`path_matcher_node.cc`): at each segment a literal,
/// then `*`, then `**`; the leftmost difference decides.
#[test]
fn precedence_keys_rank_literal_before_star_before_double_star_from_the_left() {
    let key = |t: &str| Template::parse(t).unwrap().precedence_key();
    let before = [
        ("/a/*/*", "/*/b/c"),
        ("/v1/foo", "/v1/*"),
        ("/v1/{x=b/**}", "/v1/{x=**}"),
        ("/v1/{name}", "/v1/{name=**}"),
        ("/v1/{name}", "/v1/**"),
        ("/files", "/files/**"),
        ("/v1/x:verb", "/v1/**:verb"),
        ("/v1/{a}/b", "/v1/{a}/{b}"),
    ];
    for (first, second) in before {
        assert!(key(first) < key(second), "{first} should beat {second}");
    }
    assert_eq!(
        key("/v1/{a}"),
        key("/v1/*"),
        "same shape: proto order decides"
    );
    assert_eq!(
        Template::parse("/v1/{n=shelves/*}:get").unwrap().walk(),
        "/v1/shelves/*:get"
    );
}

#[test]
fn openapi_paths_name_each_variable_once() {
    let cases = [
        ("/helloworld/{name}", "/helloworld/{name}"),
        ("/v1/{name=users/*}:undelete", "/v1/{name}:undelete"),
        ("/v1/books/{book.id}", "/v1/books/{book.id}"),
        ("/files/{path=**}", "/files/{path}"),
        ("/", "/"),
    ];
    for (template, want) in cases {
        assert_eq!(Template::parse(template).unwrap().openapi_path(), want);
    }
}

#[test]
fn split_path_takes_the_verb_only_when_declared() {
    let p = split_path("/v1/users/a:undelete", |v| v == "undelete");
    assert_eq!(
        (p.segments, p.verb),
        (vec!["v1", "users", "a"], Some("undelete"))
    );
    let p = split_path("/v1/users/a:undelete", |_| false);
    assert_eq!(
        (p.segments, p.verb),
        (vec!["v1", "users", "a:undelete"], None)
    );
    let p = split_path("/", |_| true);
    assert_eq!((p.segments, p.verb), (vec![], None));
}

#[test]
fn random_templates_and_paths_never_panic_and_accepted_literal_templates_match_themselves() {
    // A small LCG: deterministic, no dependency.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as usize % n
    };
    let alphabet: Vec<char> = "/{}=*.:%ab_1-~é \\".chars().collect();
    let mut accepted = 0;
    for _ in 0..20_000 {
        let len = 1 + next(12);
        let mut text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
        if next(2) == 0 {
            text.insert(0, '/');
        }
        let Ok(t) = Template::parse(&text) else {
            continue;
        };
        accepted += 1;
        let path: String = (0..next(12))
            .map(|_| alphabet[next(alphabet.len())])
            .collect();
        let _ = t.matches(&split_path(&format!("/{path}"), |v| t.verb() == Some(v)));
        let _ = t.openapi_path();
        let literal_only = !text.contains(['{', '*', '%']);
        if literal_only {
            let own = split_path(&text, |v| t.verb() == Some(v));
            assert!(
                matches!(t.matches(&own), Some(Ok(_))),
                "{text:?} does not match itself"
            );
        }
    }
    assert!(accepted > 100, "only {accepted} random templates parsed");
}
