//! `${KEY}` placeholders in the config files, on the real greeter and
//! token-auth binaries: a placeholder keeps the text it reads in a string
//! field, cannot read the service's own secrets, and a start-up error names
//! the variable a bad value came from instead of quoting it.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::greeter::{config_text, TempDir};

const GREETER: &str = env!("CARGO_BIN_EXE_greeter");
const AUTH: &str = env!("CARGO_BIN_EXE_token-auth");
const SIGNING_KEY: &str = "placeholder-test signing key, 32+ bytes long";

/// `bin` in `cwd`, with no variable of either prefix from the test's own
/// environment.
fn command(bin: &str, cwd: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(cwd).stdin(Stdio::null());
    for (name, _) in std::env::vars() {
        if name.starts_with("GREETER_") || name.starts_with("TOKEN_AUTH_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Run to completion, at most 20 s.
fn run(cmd: Command) -> Output {
    support::bin::run_to_end(cmd)
}

/// A greeter config whose `data.database.source` and
/// `server.http.timeout` are `source` and `timeout`, in double quotes (the
/// file's sections are flow mappings, where `{` and `}` are syntax).
fn greeter_config(dir: &TempDir, source: &str, timeout: &str) -> String {
    let yaml = config_text(":memory:", "1s", "1s")
        .replacen("source: \":memory:\"", &format!("source: \"{source}\""), 1)
        .replacen("timeout: 1s", &format!("timeout: \"{timeout}\""), 1);
    std::fs::write(dir.0.join("config.yaml"), yaml).unwrap();
    "config.yaml".to_string()
}

/// Issue 57, point 1: `0123456789` read into `source` used to become the
/// number 123456789, and the store file `123456789`.
#[test]
fn a_placeholder_in_a_string_field_keeps_the_text_it_reads() {
    let dir = TempDir::new("placeholder-text");
    let config = greeter_config(&dir, "${DB_SOURCE}", "1s");
    let mut child = command(GREETER, &dir.0)
        .args(["--config", &config])
        .env("GREETER_DB_SOURCE", "0123456789")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start greeter");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut listening = 0;
    while listening < 2 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "greeter exited");
        listening += usize::from(line.contains("listening on"));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        dir.0.join("0123456789").exists(),
        "no store file 0123456789"
    );
    assert!(!dir.0.join("123456789").exists(), "the text was retyped");
}

/// Issue 57, points 1 and 4: a value from the environment that does not fit
/// its field is refused naming the key and the variable, never quoted.
#[test]
fn a_bad_value_from_the_environment_is_refused_naming_key_and_variable_not_the_value() {
    let dir = TempDir::new("placeholder-bad");
    let config = greeter_config(&dir, ":memory:", "${HTTP_TIMEOUT}");
    let out = run({
        let mut cmd = command(GREETER, &dir.0);
        cmd.args(["--config", &config])
            .env("GREETER_HTTP_TIMEOUT", "hunter2-SECRET");
        cmd
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("server.http.timeout"), "{err}");
    assert!(err.contains("GREETER_HTTP_TIMEOUT"), "{err}");
    assert!(!err.contains("hunter2"), "the value was quoted: {err}");

    // A long value from the environment, checked after parsing (an address).
    let long = "x".repeat(120_000);
    let yaml = std::fs::read_to_string(dir.0.join(&config))
        .unwrap()
        .replacen("\"${HTTP_TIMEOUT}\"", "1s", 1)
        .replacen("addr: 127.0.0.1:0", "addr: \"${HTTP_ADDR}\"", 1);
    std::fs::write(dir.0.join(&config), yaml).unwrap();
    let out = run({
        let mut cmd = command(GREETER, &dir.0);
        cmd.args(["--config", &config])
            .env("GREETER_HTTP_ADDR", &long);
        cmd
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("server.http.addr"), "{err}");
    assert!(err.contains("GREETER_HTTP_ADDR"), "{err}");
    assert!(!err.contains("xxx"), "the value was quoted: {err:.300}");
    assert!(err.len() < 1_000, "{} bytes on stderr", err.len());
}

/// Issue 57, point 2: a 224 KB file whose one value names a 200 KB unknown
/// key 4,000 times asked for 800 MB of expansion before the unknown key was
/// refused.
#[test]
fn an_unknown_key_is_refused_before_any_placeholder_is_expanded() {
    let dir = TempDir::new("placeholder-bomb");
    let mut yaml = config_text(":memory:", "1s", "1s").replacen(
        "source: \":memory:\"",
        &format!("source: \"{}\"", "${pad}".repeat(4_000)),
        1,
    );
    yaml.push_str(&format!("pad: {}\n", "p".repeat(200_000)));
    assert!(yaml.len() > 220_000 && yaml.len() < 230_000);
    std::fs::write(dir.0.join("config.yaml"), yaml).unwrap();
    let started = Instant::now();
    let out = run({
        let mut cmd = command(GREETER, &dir.0);
        cmd.args(["--config", "config.yaml"]);
        cmd
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("pad: unknown key"), "{err:.300}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused after {:?}",
        started.elapsed()
    );
}

/// Issue 57, point 3: `${SECRET}` read `TOKEN_AUTH_SECRET`, the signing key,
/// into a URL that is printed at start-up and sent to every browser.
#[test]
fn a_placeholder_cannot_read_token_auths_signing_or_encryption_key() {
    let dir = TempDir::new("placeholder-secret");
    for (placeholder, variable) in [
        ("${SECRET}", "TOKEN_AUTH_SECRET"),
        ("${ENC_KEY}", "TOKEN_AUTH_ENC_KEY"),
    ] {
        let yaml = format!(
            "oauth:
  github:
    appid: app
    secret: ${{GITHUB_SECRET}}
    auth_url: http://127.0.0.1:9/authorize?debug={placeholder}
    token_url: http://127.0.0.1:9/token
    userinfo_url: http://127.0.0.1:9/userinfo
    redirect_uri: http://127.0.0.1:8000/auth/oauth/github/callback
    scope: profile
"
        );
        std::fs::write(dir.0.join("auth.yaml"), yaml).unwrap();
        let enc_key = "ab".repeat(32);
        let out = run({
            let mut cmd = command(AUTH, &dir.0);
            cmd.args(["--addr", "127.0.0.1:0", "--db", "auth.db"])
                .args(["--config", "auth.yaml"])
                .env("TOKEN_AUTH_SECRET", SIGNING_KEY)
                .env("TOKEN_AUTH_ENC_KEY", &enc_key)
                .env("TOKEN_AUTH_GITHUB_SECRET", "client-secret");
            cmd
        });
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(!out.status.success(), "started with {placeholder}");
        assert!(stderr.contains("oauth.github.auth_url"), "{stderr}");
        assert!(stderr.contains(variable), "{stderr}");
        for shown in [&stdout, &stderr] {
            assert!(!shown.contains(SIGNING_KEY) && !shown.contains(&enc_key));
            assert!(!shown.contains("client-secret"), "{shown}");
        }
    }
}
