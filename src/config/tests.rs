//! Unit tests of the shared configuration support: Go durations, and the
//! rewording of serde_yaml errors into `key.path: reason`.

use super::*;
use serde::Deserialize;
use std::error::Error as _;

/// A small two-level layout, shaped like the services' files.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    server: Server,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Server {
    addr: String,
    #[serde(deserialize_with = "timeout")]
    timeout: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    idle: Duration,
}

const GOOD: &str = "server:\n  addr: 0.0.0.0:8000\n  timeout: 1s\n  idle: 0.2s\n";

fn error_of(text: &str) -> Error {
    match from_yaml::<File>(text) {
        Ok(file) => panic!("accepted: {file:?}"),
        Err(e) => e,
    }
}

#[test]
fn durations_in_go_notation_parse() {
    let cases = [
        ("1s", Duration::from_secs(1)),
        ("0.2s", Duration::from_millis(200)),
        ("500ms", Duration::from_millis(500)),
        ("1m", Duration::from_secs(60)),
        ("1h30m", Duration::from_secs(5400)),
        ("1.5h", Duration::from_secs(5400)),
        ("250us", Duration::from_micros(250)),
        ("250µs", Duration::from_micros(250)),
        ("7ns", Duration::from_nanos(7)),
        (".5s", Duration::from_millis(500)),
        ("+2s", Duration::from_secs(2)),
        ("0", Duration::ZERO),
        ("0s", Duration::ZERO),
    ];
    for (text, want) in cases {
        assert_eq!(parse_duration(text), Ok(want), "{text}");
    }
}

#[test]
fn malformed_durations_are_rejected_with_a_reason() {
    let cases = [
        ("", "empty"),
        ("1", "missing unit"),
        ("1x", "unknown unit"),
        ("s", "expected a number"),
        ("1..2s", "expected a number"),
        ("-1s", "must not be negative"),
        ("1s2", "missing unit"),
        ("99999999999999999999999h", "too large"),
    ];
    for (text, reason) in cases {
        assert_eq!(parse_duration(text), Err(reason), "{text}");
    }
}

#[test]
fn duration_fields_parse_and_a_zero_timeout_is_off() {
    let file: File = from_yaml(GOOD).unwrap();
    assert_eq!(file.server.timeout, Some(Duration::from_secs(1)));
    assert_eq!(file.server.idle, Duration::from_millis(200));
    let file: File = from_yaml(&GOOD.replace("1s", "0").replace("0.2s", "0")).unwrap();
    assert_eq!(file.server.timeout, None);
    assert_eq!(file.server.idle, Duration::ZERO);
}

#[test]
fn bad_duration_is_an_error_naming_its_key_and_value() {
    let e = error_of(&GOOD.replace("0.2s", "5"));
    assert_eq!(
        e.to_string(),
        "server.idle: invalid duration \"5\" (missing unit; write e.g. 1s, 0.2s, 500ms, 1m)"
    );
    let e = error_of(&GOOD.replace("1s", "[1, 2]"));
    assert_eq!(
        e.to_string(),
        "server.timeout: expected a duration such as 1s, 0.2s, 500ms or 1m, found a list"
    );
}

#[test]
fn unknown_key_is_an_error_naming_its_path_and_the_known_keys() {
    let e = error_of(&GOOD.replace("idle:", "idel:"));
    assert_eq!(
        e.to_string(),
        "server.idel: unknown key (known keys here: addr, timeout, idle)"
    );
    let e = error_of(&format!("{GOOD}logging: true\n"));
    assert_eq!(
        e.to_string(),
        "logging: unknown key (known keys here: server)"
    );
}

#[test]
fn missing_key_is_an_error_naming_its_path() {
    let e = error_of(&GOOD.replace("  addr: 0.0.0.0:8000\n", ""));
    assert_eq!(e.to_string(), "server.addr: missing required key");
    let e = error_of(&GOOD.replace("  idle: 0.2s\n", ""));
    assert_eq!(e.to_string(), "server.idle: missing required key");
    assert_eq!(error_of("").to_string(), "server: missing required key");
}

#[test]
fn duplicate_key_is_an_error_naming_it() {
    let e = error_of(&format!("{GOOD}  addr: 0.0.0.0:9000\n"));
    assert_eq!(e.to_string(), "server.addr: duplicate key");
}

#[test]
fn value_of_the_wrong_shape_is_an_error_naming_its_path() {
    let e = error_of("server: 5\n");
    assert_eq!(
        e.to_string(),
        "server: expected a mapping of keys, found integer `5`"
    );
    let e = error_of(&GOOD.replace("0.0.0.0:8000", "{ host: x }"));
    assert_eq!(
        e.to_string(),
        "server.addr: expected a string, found a mapping"
    );
    let e = error_of("- a\n- b\n");
    assert_eq!(
        e.to_string(),
        "the config file must be a mapping of keys, found a list"
    );
}

#[test]
fn yaml_syntax_error_is_reported_with_its_position() {
    let e = error_of("server: 'unclosed\n");
    assert!(matches!(e, Error::Syntax { .. }), "{e:?}");
    assert!(e.to_string().starts_with("invalid YAML: "), "{e}");
    assert!(e.to_string().contains("line 2 column 1"), "{e}");
}

#[test]
fn the_serde_yaml_error_is_the_source() {
    let e = error_of(&GOOD.replace("idle:", "idel:"));
    let source = e.source().expect("a source");
    let yaml = source
        .downcast_ref::<serde_yaml::Error>()
        .expect("a serde_yaml error");
    let at = yaml.location().expect("a location");
    assert_eq!((at.line(), at.column()), (4, 3));
}

#[test]
fn unreadable_file_names_the_path_and_keeps_the_io_error() {
    let e = load::<File>(Path::new("/nonexistent/handwire.yaml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot read config file /nonexistent/handwire.yaml: "),
        "{e}"
    );
    assert!(e.source().unwrap().is::<std::io::Error>());
}

#[test]
fn a_missing_relative_config_names_the_working_directory_and_the_flag_once() {
    let e = load::<File>(Path::new("no-such-handwire.yaml")).unwrap_err();
    let cwd = std::env::current_dir().unwrap();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot read config file no-such-handwire.yaml in {}: ",
            cwd.display()
        )),
        "{text}"
    );
    assert!(
        text.ends_with(" (give its path with --config PATH)"),
        "{text}"
    );
    assert_eq!(
        text.matches(&*cwd.display().to_string()).count(),
        1,
        "{text}"
    );
}

#[test]
fn a_duration_setting_error_names_the_setting_the_value_and_the_reason() {
    assert_eq!(
        parse_duration_setting("--shutdown-grace", "250ms"),
        Ok(Duration::from_millis(250))
    );
    let err = parse_duration_setting("--shutdown-grace", "1x").unwrap_err();
    assert!(
        err.starts_with("--shutdown-grace: invalid duration \"1x\" (")
            && err.ends_with("; write e.g. 1s, 500ms)"),
        "{err}"
    );
    // A value from the environment is not shown; a long flag value is cut.
    let err = parse_duration_setting("APP_GRACE", "hunter2").unwrap_err();
    assert_eq!(
        err,
        "APP_GRACE: invalid duration (expected a number; write e.g. 1s, 500ms)"
    );
    let err = parse_duration_setting("--grace", &"9".repeat(10_000)).unwrap_err();
    assert!(err.len() < 200, "{err}");
}

#[test]
fn durations_past_a_day_are_refused_so_no_deadline_overflows() {
    assert_eq!(parse_duration("24h"), Ok(MAX_DURATION));
    for text in ["24h1ns", "25h", "5000000000000000h", "9999999999s"] {
        let err = parse_duration(text).expect_err(text);
        assert!(err.contains("too large"), "{text}: {err}");
    }
    let err = error_of("server:\n  addr: x\n  timeout: 5000000000000000h\n  idle: 1s\n");
    assert!(
        err.to_string()
            .starts_with("server.timeout: invalid duration"),
        "{err}"
    );
}

#[test]
fn a_config_file_over_1_mib_is_refused_without_reading_it_all() {
    let path = std::env::temp_dir().join(format!("handwire-big-{}.yaml", std::process::id()));
    std::fs::write(&path, vec![b'#'; (MAX_FILE_BYTES + 10) as usize]).unwrap();
    let err = load::<File>(&path).expect_err("over 1 MiB");
    let _ = std::fs::remove_file(&path);
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("larger than"),
        "{text}"
    );
}

#[test]
fn a_config_path_that_is_not_a_regular_file_is_refused_before_it_is_opened() {
    for (path, kind) in [("/dev/zero", "a device"), ("/", "a directory")] {
        let err = load::<File>(Path::new(path)).expect_err(path);
        let text = err.to_string();
        assert!(
            text.contains(path) && text.contains(&format!("not a regular file ({kind})")),
            "{text}"
        );
    }
}

#[test]
fn yaml_nested_deeper_than_32_levels_is_refused_at_once() {
    let flow = format!("server: {}{}", "[".repeat(100_000), "]".repeat(100_000));
    let started = std::time::Instant::now();
    assert!(error_of(&flow)
        .to_string()
        .contains("nested deeper than 32"));
    let mut block = String::new();
    for depth in 0..2_000 {
        block.push_str(&" ".repeat(depth));
        block.push_str("k:\n");
    }
    assert!(error_of(&block)
        .to_string()
        .contains("nested deeper than 32"));
    // The refusal does not depend on the parser's speed on such input.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // A normal file is not affected.
    assert!(from_yaml::<File>(GOOD).is_ok());
}

/// Placeholders read from a fake environment: `APP_` + KEY, by these
/// variables only.
fn fake_env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    }
}

/// `text` read into `T` with placeholders from `vars`, `denied` refused.
fn resolved<T: DeserializeOwned>(
    text: &str,
    vars: &[(&str, &str)],
    denied: &[&str],
) -> Result<(T, Origins), Error> {
    let var = fake_env(vars);
    let env = Env {
        prefix: "APP_",
        denied,
        var: &var,
    };
    resolve::<T>(text, &env)
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Placed {
    data: PlacedData,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlacedData {
    driver: String,
    source: String,
    copy: String,
    both: String,
    port: u16,
    fallback: u32,
    empty_default: String,
    unclosed: String,
    list: Vec<String>,
    ports: Vec<u16>,
    memory: String,
    on: bool,
    ratio: f64,
    #[serde(deserialize_with = "duration")]
    wait: Duration,
    hostname: Option<String>,
}

/// A table of Kratos' placeholder rules, resolved against one file and a
/// fake environment (`APP_` + KEY), each into the type of its field.
#[test]
fn placeholders_resolve_from_the_environment_then_the_file_then_their_default() {
    let vars = [
        ("APP_DB_PASSWORD", "s3cret"),
        ("APP_PORT", "8001"),
        ("APP_SOURCE", ":memory:"),
        ("APP_ON", "true"),
        ("APP_WAIT", "1.5s"),
    ];
    let file = r#"data:
  driver: postgres
  source: postgres://app:${DB_PASSWORD}@${DB_HOST:localhost}:5432/app
  copy: ${data.driver}
  both: ${data.driver}-${ DB_PASSWORD }
  port: ${PORT}
  fallback: ${MISSING:8000}
  empty_default: x${MISSING:}y
  unclosed: ${NOT_CLOSED
  list: ["${PORT}", plain]
  ports: ["${PORT}", 80]
  memory: ${SOURCE}
  on: ${ON}
  ratio: ${MISSING:0.5}
  wait: ${WAIT}
  hostname: ${MISSING:null}
"#;
    let (placed, origins) = resolved::<Placed>(file, &vars, &[]).unwrap();
    let d = placed.data;
    assert_eq!(d.source, "postgres://app:s3cret@localhost:5432/app");
    assert_eq!(d.copy, "postgres");
    assert_eq!(d.both, "postgres-s3cret");
    // Each value takes the type of the field it fills.
    assert_eq!((d.port, d.fallback), (8001, 8000));
    assert_eq!(d.empty_default, "xy");
    assert_eq!(d.unclosed, "${NOT_CLOSED");
    assert_eq!(d.list, ["8001", "plain"]);
    assert_eq!(d.ports, [8001, 80]);
    assert_eq!(d.memory, ":memory:");
    assert!(d.on);
    assert_eq!(d.ratio, 0.5);
    assert_eq!(d.wait, Duration::from_millis(1500));
    // A placeholder is text, never null.
    assert_eq!(d.hostname.as_deref(), Some("null"));
    // The keys that read the environment or another key, and what they read.
    let vars_of = |key: &str| origins.sources(key).map(<[String]>::to_vec);
    assert_eq!(vars_of("data.source"), Some(vec!["APP_DB_PASSWORD".into()]));
    assert_eq!(vars_of("data.ports[0]"), Some(vec!["APP_PORT".into()]));
    assert_eq!(vars_of("data.copy"), Some(vec!["data.driver".into()]));
    assert_eq!(vars_of("data.fallback"), None);
    // Without a placeholder the file is read as it is.
    let (file, origins) = resolved::<File>(GOOD, &vars, &[]).unwrap();
    assert_eq!(file, from_yaml::<File>(GOOD).unwrap());
    assert_eq!(origins, Origins::default());
}

/// Issue 57: Kratos' `WithResolveActualTypes` retyped a placeholder's text
/// from its look, so `0123456789` read into a string became `123456789`.
#[test]
fn a_placeholder_keeps_its_text_in_a_string_field_and_is_parsed_in_a_typed_one() {
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Text {
        secret: String,
    }
    for text in [
        "0123456789",
        "007.10",
        "+5",
        "1.0e5",
        "3.14159265358979323846",
        "true",
        "~",
        "",
        "0x1F",
        "[a, b]",
        "a: b",
        "# not a comment",
    ] {
        let vars = [("APP_SECRET", text)];
        let (t, _) = resolved::<Text>("secret: ${SECRET}\n", &vars, &[]).unwrap();
        assert_eq!(t.secret, text);
        let (t, _) = resolved::<Text>("secret: \"${SECRET}\"\n", &vars, &[]).unwrap();
        assert_eq!(t.secret, text);
    }
    // A number, boolean or duration field parses the text, and refuses it
    // naming the key and the variable, never the value.
    let cases: [(&str, &str, &str); 4] = [
        (
            "server:\n  addr: x\n  timeout: 1s\n  idle: ${V}\n",
            "server.idle",
            "hunter2-SECRET",
        ),
        (
            "server:\n  addr: x\n  timeout: ${V}\n  idle: 1s\n",
            "server.timeout",
            "25h-SECRET",
        ),
        (
            "server:\n  addr: x\n  timeout: ${V}\n  idle: 1s\n",
            "server.timeout",
            "25h",
        ),
        (
            "server:\n  addr: x\n  timeout: ${V}\n  idle: 1s\n",
            "server.timeout",
            "99999999999999999999h",
        ),
    ];
    for (text, key, value) in cases {
        let err = resolved::<File>(text, &[("APP_V", value)], &[]).unwrap_err();
        let message = err.to_string();
        assert!(message.starts_with(&format!("{key}: ")), "{message}");
        assert!(message.contains("APP_V"), "{message}");
        assert!(!message.contains(value), "{message}");
    }
    #[derive(Debug, Deserialize)]
    struct Typed {
        port: u16,
        on: bool,
    }
    for (text, key) in [
        ("port: ${V}\non: true\n", "port"),
        ("port: 1\non: ${V}\n", "on"),
    ] {
        for value in ["hunter2", "70000", "yes", "1.5"] {
            let err = resolved::<Typed>(text, &[("APP_V", value)], &[]).unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("{key}: invalid value from APP_V")),
                "{message}"
            );
            assert!(!message.contains(value), "{message}");
        }
    }
    let (typed, _) = resolved::<Typed>(
        "port: ${V}\non: ${W}\n",
        &[("APP_V", "+08"), ("APP_W", "true")],
        &[],
    )
    .unwrap();
    assert_eq!((typed.port, typed.on), (8, true));
    // A value read from another key may be a secret: named by that key.
    let text =
        "server:\n  addr: postgres://app:hunter2@db\n  timeout: 1s\n  idle: ${server.addr}\n";
    let message = resolved::<File>(text, &[], &[]).unwrap_err().to_string();
    assert!(
        message.starts_with("server.idle: invalid duration from server.addr ("),
        "{message}"
    );
    // A default, written at the key itself, is quoted, at most a short prefix.
    let long = "y".repeat(10_000);
    let text = format!("port: ${{MISSING:{long}}}\non: true\n");
    let message = resolved::<Typed>(&text, &[], &[]).unwrap_err().to_string();
    assert!(
        message.starts_with("port: invalid value \"yyy"),
        "{message}"
    );
    assert!(message.len() < 200, "{message}");
}

/// Issue 57: a 224 KB file whose one value named a 200 KB unknown key
/// 4,000 times expanded 800 MB before the unknown key was refused.
#[test]
fn unknown_keys_are_refused_before_any_placeholder_is_expanded() {
    let pad = "p".repeat(200_000);
    let text = format!(
        "server:\n  addr: \"{}\"\n  timeout: 1s\n  idle: 1s\npad: {pad}\n",
        "${pad}".repeat(4_000)
    );
    assert!(text.len() > 220_000);
    let started = std::time::Instant::now();
    let err = resolved::<File>(&text, &[], &[]).unwrap_err();
    assert!(err.to_string().starts_with("pad: unknown key"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

/// The resolved document is at most twice the file bound, whatever its
/// placeholders name.
#[test]
fn placeholders_expand_to_at_most_twice_the_largest_file() {
    let long = "v".repeat(200_000);
    let vars = [("APP_V", long.as_str())];
    let text = format!(
        "server:\n  addr: \"{}\"\n  timeout: 1s\n  idle: 1s\n",
        "${V}".repeat(4_000)
    );
    let started = std::time::Instant::now();
    let err = resolved::<File>(&text, &vars, &[]).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("server.addr: placeholder ${V} makes the resolved configuration larger than 2097152 bytes"),
        "{message}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // Up to the bound, it expands.
    let text = format!(
        "server:\n  addr: \"{}\"\n  timeout: 1s\n  idle: 1s\n",
        "${V}".repeat(10)
    );
    let (file, _) = resolved::<File>(&text, &vars, &[]).unwrap();
    assert_eq!(file.server.addr.len(), 2_000_000);
    assert!(MAX_RESOLVED_BYTES as u64 == 2 * MAX_FILE_BYTES);
}

/// Issue 57: `${SECRET}` in token-auth's file read its signing key.
#[test]
fn a_placeholder_naming_a_denied_variable_is_refused_before_it_is_read() {
    let vars = [
        ("APP_SECRET", "signing-key"),
        ("APP_GITHUB_SECRET", "client"),
    ];
    let text = "server:\n  addr: \"x?${SECRET:}\"\n  timeout: 1s\n  idle: 1s\n";
    let err = resolved::<File>(text, &vars, &["APP_SECRET"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "server.addr: placeholder ${SECRET} would read APP_SECRET, one of the service's own \
         secrets, which placeholders cannot read"
    );
    let text = "server:\n  addr: ${GITHUB_SECRET}\n  timeout: 1s\n  idle: 1s\n";
    let (file, _) = resolved::<File>(text, &vars, &["APP_SECRET"]).unwrap();
    assert_eq!(file.server.addr, "client");
}

/// The departure from Kratos (which substitutes an empty string): start-up
/// stops, naming the key and the variable to set.
#[test]
fn a_placeholder_with_no_value_and_no_default_is_an_error_naming_key_and_variable() {
    #[derive(Debug, Deserialize)]
    struct Db {
        #[allow(dead_code)]
        data: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    }
    let var = |_: &str| None;
    let env = Env {
        prefix: "GREETER_",
        denied: &[],
        var: &var,
    };
    let err = resolve::<Db>("data:\n  database:\n    source: ${DB_URL}\n", &env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "data.database.source: placeholder ${DB_URL} has no value: set the environment \
         variable GREETER_DB_URL or give a default as ${DB_URL:default}"
    );
    let err = resolved::<serde_yaml::Value>("a: ${b}\nb: {c: 1}\n", &[], &[]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("a: placeholder ${b} has no value"),
        "{err}"
    );
}

/// Issue 57: start-up errors quoted a value whole, 120 KB twice.
#[test]
fn a_start_up_error_quotes_at_most_a_short_prefix_of_a_value() {
    let long = "x".repeat(120_000);
    for text in [
        GOOD.replace("0.2s", &long),
        GOOD.replace("0.2s", &format!("[{long}]")),
        format!("server: \"{long}\"\n"),
    ] {
        let message = error_of(&text).to_string();
        assert!(
            message.len() < 300,
            "{} bytes: {message:.400}",
            message.len()
        );
    }
    assert_eq!(quote("short"), "\"short\"");
    assert_eq!(
        quote(&"é".repeat(40)),
        format!("\"{}\"… (80 bytes)", "é".repeat(QUOTE_MAX_CHARS))
    );
}
