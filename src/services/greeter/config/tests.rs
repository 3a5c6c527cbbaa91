//! Unit tests of the greeter's configuration: the demo file parses, and every
//! kind of error names its key. (Go durations themselves are tested with
//! [`crate::config::parse_duration`].)

use super::*;

/// Every key of the configuration file, in the order of the file.
const KEYS: [&str; 12] = [
    "server.http.network",
    "server.http.addr",
    "server.http.timeout",
    "server.grpc.network",
    "server.grpc.addr",
    "server.grpc.timeout",
    "data.database.driver",
    "data.database.source",
    "data.cache.network",
    "data.cache.addr",
    "data.cache.read_timeout",
    "data.cache.write_timeout",
];

const DEMO: &str = "\
server:
  http:
    network: tcp
    addr: 0.0.0.0:8000
    timeout: 1s
  grpc:
    network: tcp
    addr: 0.0.0.0:9000
    timeout: 1s
data:
  database:
    driver: sqlite3
    source: greeter.db
  cache:
    network: tcp
    addr: 127.0.0.1:6379
    read_timeout: 0.2s
    write_timeout: 0.2s
";

/// The demo text with one line replaced (matched by its trimmed start).
fn with(line_start: &str, replacement: &str) -> String {
    let mut found = false;
    let text: Vec<String> = DEMO
        .lines()
        .map(|l| {
            if !found && l.trim_start().starts_with(line_start) {
                found = true;
                replacement.to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect();
    assert!(found, "no line starts with {line_start}");
    text.join("\n")
}

fn error_of(text: &str) -> String {
    match Config::from_yaml(text) {
        Ok(c) => panic!("accepted: {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn demo_config_parses_all_twelve_keys() {
    let c = Config::from_yaml(DEMO).unwrap();
    assert_eq!(c.server.http.network, "tcp");
    assert_eq!(c.server.http.addr, "0.0.0.0:8000");
    assert_eq!(c.server.http.timeout, Some(Duration::from_secs(1)));
    assert_eq!(c.server.grpc.network, "tcp");
    assert_eq!(c.server.grpc.addr, "0.0.0.0:9000");
    assert_eq!(c.server.grpc.timeout, Some(Duration::from_secs(1)));
    assert_eq!(c.data.database.driver, "sqlite3");
    assert_eq!(c.data.database.source, "greeter.db");
    assert_eq!(c.data.cache.network, "tcp");
    assert_eq!(c.data.cache.addr, "127.0.0.1:6379");
    assert_eq!(c.data.cache.read_timeout, Duration::from_millis(200));
    assert_eq!(c.data.cache.write_timeout, Duration::from_millis(200));
}

#[test]
fn repo_config_yaml_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.yaml");
    let c = Config::load(&path).unwrap();
    assert_eq!(c.server.http.addr, "0.0.0.0:8000");
    assert_eq!(c.server.grpc.addr, "0.0.0.0:9000");
}

#[test]
fn zero_timeout_switches_the_timeout_off() {
    let c = Config::from_yaml(&with("timeout: 1s", "    timeout: 0")).unwrap();
    assert_eq!(c.server.http.timeout, None);
    assert_eq!(c.server.grpc.timeout, Some(Duration::from_secs(1)));
}

#[test]
fn sqlite_is_an_alias_of_sqlite3() {
    let c = Config::from_yaml(&with("driver:", "    driver: sqlite")).unwrap();
    assert_eq!(c.data.database.driver, "sqlite3");
}

#[test]
fn bad_duration_names_the_key_and_value() {
    let e = error_of(&with("timeout: 1s", "    timeout: 1x"));
    assert_eq!(
        e,
        "server.http.timeout: invalid duration \"1x\" (unknown unit; write e.g. 1s, 0.2s, 500ms, 1m)"
    );
    let e = error_of(&with("write_timeout:", "    write_timeout: 5"));
    assert!(
        e.starts_with("data.cache.write_timeout: invalid duration \"5\" (missing unit"),
        "{e}"
    );
}

#[test]
fn every_missing_key_is_named() {
    for key in KEYS {
        let leaf = key.rsplit('.').next().unwrap();
        // Remove the line of this leaf inside its own section.
        let section = key.split('.').nth(1).unwrap();
        let mut in_section = false;
        let text: String = DEMO
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                if t.ends_with(':') && !t.contains(' ') {
                    in_section = t.trim_end_matches(':') == section;
                    return true;
                }
                !(in_section && t.starts_with(&format!("{leaf}:")))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(error_of(&text), format!("{key}: missing required key"));
    }
}

#[test]
fn key_without_value_is_an_error_naming_it() {
    let e = error_of(&with("addr: 0.0.0.0:9000", "    addr:"));
    assert_eq!(
        e,
        "server.grpc.addr: invalid address \"\" (expected host:port, e.g. 0.0.0.0:8000)"
    );
    let e = error_of(&with("timeout: 1s", "    timeout:"));
    assert!(
        e.starts_with("server.http.timeout: invalid duration \"\" (empty"),
        "{e}"
    );
    let e = error_of(&with("driver:", "    driver:"));
    assert!(
        e.starts_with("data.database.driver: unsupported driver \"\""),
        "{e}"
    );
}

#[test]
fn empty_file_reports_the_first_missing_section() {
    assert_eq!(error_of(""), "server: missing required key");
    let e = error_of(
        "server:
data:
",
    );
    assert_eq!(e, "server.http: missing required key");
}

#[test]
fn unknown_key_is_an_error_naming_its_path() {
    let e = error_of(&with("timeout: 1s", "    timout: 1s"));
    assert_eq!(
        e,
        "server.http.timout: unknown key (known keys here: network, addr, timeout, tls, cors)"
    );
    let e = error_of(&format!("{DEMO}logging: true\n"));
    assert_eq!(
        e,
        "logging: unknown key (known keys here: server, data, limits, log)"
    );
    let e = error_of(&with("cache:", "  redis:"));
    assert!(e.starts_with("data.redis: unknown key"), "{e}");
}

#[test]
fn section_of_wrong_shape_is_named() {
    let e = error_of("server: 5\n");
    assert_eq!(e, "server: expected a mapping of keys, found integer `5`");
    let e = error_of("- a\n- b\n");
    assert_eq!(e, "the config file must be a mapping of keys, found a list");
}

#[test]
fn leaf_of_wrong_shape_is_named() {
    let e = error_of(&with("addr: 0.0.0.0:8000", "    addr: [1, 2]"));
    assert_eq!(e, "server.http.addr: expected a string, found a list");
}

#[test]
fn unsupported_driver_lists_the_supported_ones() {
    let e = error_of(&with("driver:", "    driver: mysql"));
    let supported = if cfg!(feature = "cluster") {
        "sqlite3, sqlite, postgres, postgresql"
    } else {
        "sqlite3, sqlite"
    };
    assert_eq!(
        e,
        format!("data.database.driver: unsupported driver \"mysql\" (supported: {supported})")
    );
}

/// The demo text with the postgres driver and a connection string.
fn postgres(driver: &str) -> String {
    with("driver:", &format!("    driver: {driver}")).replace(
        "source: greeter.db",
        "source: postgres://u:p@127.0.0.1:5432/db",
    )
}

#[cfg(not(feature = "cluster"))]
#[test]
fn postgres_without_the_cluster_feature_is_refused_naming_the_key_and_the_rebuild() {
    for driver in ["postgres", "postgresql"] {
        assert_eq!(
            error_of(&postgres(driver)),
            format!(
                "data.database.driver: \"{driver}\" is not built into this binary; \
                 rebuild with `cargo build --release --features cluster`"
            )
        );
    }
}

#[cfg(feature = "cluster")]
#[test]
fn postgresql_is_an_alias_of_postgres_and_the_source_is_a_connection_string() {
    for driver in ["postgres", "postgresql"] {
        let c = Config::from_yaml(&postgres(driver)).unwrap();
        assert_eq!(c.data.database.driver, "postgres");
        assert_eq!(c.data.database.kind(), Driver::Postgres);
        assert_eq!(c.data.database.source, "postgres://u:p@127.0.0.1:5432/db");
    }
    let c = Config::from_yaml(DEMO).unwrap();
    assert_eq!(c.data.database.kind(), Driver::Sqlite);
}

#[cfg(feature = "cluster")]
#[test]
fn empty_postgres_source_asks_for_a_connection_string() {
    let text = postgres("postgres").replace("postgres://u:p@127.0.0.1:5432/db", "\"\"");
    assert_eq!(
        error_of(&text),
        "data.database.source: empty; give a connection string \
         postgres://user:password@host:port/database"
    );
}

#[cfg(feature = "cluster")]
#[test]
fn cache_time_outs_of_zero_are_refused_only_where_the_cache_is_used() {
    for key in ["read_timeout", "write_timeout"] {
        let zero = |text: &str| text.replace(&format!("{key}: 0.2s"), &format!("{key}: 0"));
        assert_eq!(
            error_of(&zero(&postgres("postgres"))),
            format!(
                "data.cache.{key}: must be above 0 with the postgres driver, which uses the cache"
            )
        );
        assert!(
            Config::from_yaml(&zero(DEMO)).is_ok(),
            "sqlite ignores the cache"
        );
    }
}

#[test]
fn cache_url_is_redis_tcp_or_redis_unix() {
    let cache = |network: &str, addr: &str| Cache {
        network: network.into(),
        addr: addr.into(),
        read_timeout: Duration::from_millis(200),
        write_timeout: Duration::from_millis(200),
    };
    let cases = [
        ("tcp", "127.0.0.1:6379", "redis://127.0.0.1:6379"),
        ("tcp", "cache.internal:6380", "redis://cache.internal:6380"),
        ("tcp", ":6379", "redis://127.0.0.1:6379"),
        ("tcp4", ":6379", "redis://127.0.0.1:6379"),
        ("tcp6", ":6379", "redis://[::1]:6379"),
        ("tcp6", "[::1]:6379", "redis://[::1]:6379"),
        ("unix", "/run/redis.sock", "redis+unix:///run/redis.sock"),
    ];
    for (network, addr, want) in cases {
        assert_eq!(cache(network, addr).url(), want, "{network} {addr}");
    }
}

#[test]
fn unix_cache_address_is_an_absolute_socket_path() {
    let unix = |addr: &str| {
        DEMO.replace(
            "network: tcp\n    addr: 127.0.0.1:6379",
            &format!("network: unix\n    addr: {addr}"),
        )
    };
    let c = Config::from_yaml(&unix("/run/redis/redis.sock")).unwrap();
    assert_eq!(c.data.cache.addr, "/run/redis/redis.sock");
    assert_eq!(c.data.cache.url(), "redis+unix:///run/redis/redis.sock");
    assert_eq!(
        error_of(&unix("redis.sock")),
        "data.cache.addr: invalid unix socket path \"redis.sock\" \
         (expected an absolute path, e.g. /run/redis/redis.sock)"
    );
}

#[test]
fn database_time_out_is_three_quarters_of_the_shorter_server_time_out_or_one_second() {
    let cases = [
        ("1s", "1s", Duration::from_millis(750)),
        ("0.5s", "2s", Duration::from_millis(375)),
        ("3s", "0", Duration::from_millis(2250)),
        ("0", "0.4s", Duration::from_millis(300)),
        ("0", "0", Duration::from_secs(1)),
    ];
    for (http, grpc, want) in cases {
        let text = DEMO
            .replacen("timeout: 1s", &format!("timeout: {http}"), 1)
            .replacen("    timeout: 1s", &format!("    timeout: {grpc}"), 1);
        let c = Config::from_yaml(&text).unwrap();
        assert_eq!(c.database_timeout(), want, "http {http}, grpc {grpc}");
    }
}

#[test]
fn empty_source_is_rejected() {
    let e = error_of(&with("source:", "    source: \"\""));
    assert_eq!(
        e,
        "data.database.source: empty; give a file path or :memory:"
    );
}

#[test]
fn unsupported_network_is_named() {
    let e = error_of(&with("network: tcp", "    network: udp"));
    assert_eq!(
        e,
        "server.http.network: unsupported network \"udp\" (supported: tcp, tcp4, tcp6)"
    );
}

#[test]
fn empty_host_listens_on_every_interface_of_the_network_family() {
    let c = Config::from_yaml(&with("addr: 0.0.0.0:8000", "    addr: :8000")).unwrap();
    assert_eq!(c.server.http.addr, "0.0.0.0:8000");
    let text = with("network: tcp", "    network: tcp6").replace("0.0.0.0:8000", ":8000");
    let c = Config::from_yaml(&text).unwrap();
    assert_eq!(c.server.http.addr, "[::]:8000");
}

#[test]
fn ip_literal_of_the_wrong_family_for_tcp4_or_tcp6_is_named() {
    let e = error_of(&with("network: tcp", "    network: tcp6"));
    assert_eq!(
        e,
        "server.http.addr: address \"0.0.0.0:8000\" is not an IPv6 address, but the network is tcp6"
    );
    let text = with("network: tcp", "    network: tcp4").replace("0.0.0.0:8000", "\"[::1]:8000\"");
    assert_eq!(
        error_of(&text),
        "server.http.addr: address \"[::1]:8000\" is not an IPv4 address, but the network is tcp4"
    );
    let text = with("network: tcp", "    network: tcp4").replace("0.0.0.0:8000", "localhost:8000");
    assert!(
        Config::from_yaml(&text).is_ok(),
        "host names are resolved at bind time"
    );
}

#[test]
fn address_without_port_is_named() {
    let e = error_of(&with("addr: 127.0.0.1:6379", "    addr: localhost"));
    assert_eq!(
        e,
        "data.cache.addr: invalid address \"localhost\" (expected host:port, e.g. 0.0.0.0:8000)"
    );
}

#[test]
fn yaml_syntax_error_is_reported() {
    let e = error_of("server: 'unclosed\n");
    assert!(e.starts_with("invalid YAML: "), "{e}");
}

#[test]
fn duplicate_key_is_an_error_naming_it() {
    let e = error_of(&format!("{DEMO}server: {{}}\n"));
    assert_eq!(e, "server: duplicate key");
    let e = error_of(&with("timeout: 1s", "    timeout: 1s\n    timeout: 2s"));
    assert_eq!(e, "server.http.timeout: duplicate key");
}

#[test]
fn unreadable_file_names_the_path() {
    let e = Config::load(Path::new("/nonexistent/greeter.yaml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot read config file /nonexistent/greeter.yaml: "),
        "{e}"
    );
}

#[test]
fn file_errors_keep_their_cause_as_source() {
    use std::error::Error as _;
    let e = Config::from_yaml(&with("timeout: 1s", "    timeout: 1x")).unwrap_err();
    let file = e.source().expect("the shared config error");
    assert!(file.source().unwrap().is::<serde_yaml::Error>());
    let e = Config::from_yaml(&with("driver:", "    driver: mysql")).unwrap_err();
    assert!(e.source().is_none(), "a rule of the greeter wraps nothing");
}

#[test]
fn a_listener_may_name_its_certificate_and_key() {
    let text = with(
        "timeout: 1s",
        "    timeout: 1s\n    tls: { cert_file: certs/cert.pem, key_file: certs/key.pem }",
    );
    let config = Config::from_yaml(&text).unwrap();
    let tls = config.server.http.tls.expect("server.http.tls");
    assert_eq!(tls.cert_file, std::path::PathBuf::from("certs/cert.pem"));
    assert_eq!(config.server.grpc.tls, None, "each listener on its own");
    let e = error_of(&with(
        "timeout: 1s",
        "    timeout: 1s\n    tls: { cert_file: c.pem }",
    ));
    assert_eq!(e, "server.http.tls.key_file: missing required key");
}

#[test]
fn cors_is_off_by_default_and_its_bad_settings_name_the_key() {
    assert!(Config::from_yaml(DEMO).unwrap().cors().is_none());
    let with = |cors: &str, section: &str| {
        DEMO.replacen(
            &format!("{section}:\n    network: tcp\n"),
            &format!("{section}:\n    cors: {cors}\n    network: tcp\n"),
            1,
        )
    };
    let ok = with(
        r#"{ allowed_origins: ["https://app.example.com"], max_age: 10m }"#,
        "http",
    );
    assert!(Config::from_yaml(&ok).unwrap().cors().is_some());
    let cases = [
        (
            with("{ allowed_origins: [] }", "http"),
            "server.http.cors.allowed_origins: empty",
        ),
        (
            with(
                r#"{ allowed_origins: ["*"], allow_credentials: true }"#,
                "http",
            ),
            "server.http.cors.allow_credentials: true needs explicit allowed_origins",
        ),
        (
            with(r#"{ allowed_origins: ["https://a.example"] }"#, "grpc"),
            "server.grpc.cors: CORS applies to server.http only",
        ),
        (
            with(
                r#"{ allowed_origins: ["https://a.example"], max_age: 1x }"#,
                "http",
            ),
            "server.http.cors.max_age",
        ),
        (
            with(r#"{ origins: ["https://a.example"] }"#, "http"),
            "server.http.cors.origins: unknown key",
        ),
    ];
    for (text, want) in cases {
        let err = Config::from_yaml(&text).unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}");
    }
}

/// Issue 57: a check after parsing quoted a value from the environment, or a
/// long one whole.
#[test]
fn a_checked_value_from_the_environment_is_named_by_its_variable_not_shown() {
    let cases = [
        (
            "network: tcp\n    addr: 0.0.0.0:8000",
            "network: ${V}\n    addr: 0.0.0.0:8000",
            "server.http.network: unsupported network from GREETER_V",
        ),
        (
            "addr: 0.0.0.0:8000",
            "addr: ${V}",
            "server.http.addr: invalid address from GREETER_V",
        ),
        (
            "driver: sqlite3",
            "driver: ${V}",
            "data.database.driver: unsupported driver from GREETER_V",
        ),
    ];
    let var = |name: &str| (name == "GREETER_V").then(|| "hunter2 secret".to_string());
    for (from, to, want) in cases {
        assert!(DEMO.contains(from), "{from}");
        let text = DEMO.replacen(from, to, 1);
        let err = Config::from_yaml_with_env(&text, &var)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
    let long = "x".repeat(120_000);
    let err = Config::from_yaml(&DEMO.replacen("network: tcp", &format!("network: {long}"), 1))
        .unwrap_err()
        .to_string();
    assert!(err.len() < 200, "{} bytes", err.len());
    assert!(
        err.starts_with("server.http.network: unsupported network \"xxx"),
        "{err}"
    );
}

#[test]
fn the_access_log_is_on_unless_log_access_is_false() {
    assert!(Config::from_yaml(DEMO).unwrap().log.access);
    let off = Config::from_yaml(&format!("{DEMO}log: {{ access: false }}\n")).unwrap();
    assert!(!off.log.access);
    let e = error_of(&format!("{DEMO}log: {{ acess: false }}\n"));
    assert_eq!(e, "log.acess: unknown key (known keys here: access)");
}
