//! Unit tests of `${KEY}` placeholders: each resolved into the type of its
//! field, from the environment, the file or its default; bounded; denied
//! variables refused; values from elsewhere never quoted.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::time::Duration;

use super::super::tests::{File, GOOD};
use super::super::{duration, from_yaml, resolve, Env, Error, MAX_FILE_BYTES};
use super::{Origins, MAX_RESOLVED_BYTES};

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
