//! Unit tests of the shared configuration support: Go durations, and the
//! rewording of serde_yaml errors into `key.path: reason`.

use super::*;
use serde::Deserialize;
use std::error::Error as _;

/// A small two-level layout, shaped like the services' files.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub(super) server: Server,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Server {
    pub(super) addr: String,
    #[serde(deserialize_with = "timeout")]
    timeout: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    idle: Duration,
}

pub(super) const GOOD: &str = "server:\n  addr: 0.0.0.0:8000\n  timeout: 1s\n  idle: 0.2s\n";

pub(super) fn error_of(text: &str) -> Error {
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
