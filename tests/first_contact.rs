//! What a newcomer meets first, on the three real binaries: `--help`, the
//! words and addresses they refuse, the start-up errors that say what to
//! change, and request log lines that say which service wrote them.

mod support;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use support::greeter::{config_text, TempDir};

const GREETER: &str = env!("CARGO_BIN_EXE_greeter");
const ROUTER: &str = env!("CARGO_BIN_EXE_router-demo");
const AUTH: &str = env!("CARGO_BIN_EXE_token-auth");
const SECRET: &str = "first-contact test secret, 32+ bytes long";

/// A command for `bin` with a test secret for token-auth, in `cwd`.
fn command(bin: &str, cwd: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(cwd)
        .env("TOKEN_AUTH_SECRET", SECRET)
        .env_remove("TOKEN_AUTH_ENC_KEY")
        .env_remove("GREETER_SHUTDOWN_GRACE")
        .stdin(Stdio::null());
    cmd
}

/// Run to completion, at most 20 s.
fn run(cmd: Command) -> Output {
    support::bin::run_to_end(cmd)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_and_h_print_every_flag_with_its_default_and_variable_and_exit_0() {
    let dir = TempDir::new("help");
    let cases: [(&str, &[&str]); 3] = [
        (
            GREETER,
            &[
                "usage:",
                "greeter [--config PATH]",
                "--config PATH",
                "(default config.yaml, in the working directory)",
                "GREETER_SHUTDOWN_GRACE",
                "(default 10s)",
            ],
        ),
        (
            ROUTER,
            &[
                "usage:",
                "--addr HOST:PORT",
                "(default 0.0.0.0:8000)",
                "--redirect-target URL",
                "(default https://www.example.com/)",
                "--shutdown-grace DURATION",
                "(default 10s)",
                "--quiet",
                "--trace",
            ],
        ),
        (
            AUTH,
            &[
                "usage:",
                "token-auth create-admin --username NAME",
                "--addr HOST:PORT",
                "(default 0.0.0.0:8000)",
                "--db PATH",
                "(default token-auth.db, in the working directory)",
                "--redis URL",
                "--shared-timeout DURATION",
                "(default 1s)",
                "--config PATH",
                "--shutdown-grace DURATION",
                "--username NAME",
                "--quiet",
                "--trace",
                "TOKEN_AUTH_SECRET",
                "TOKEN_AUTH_ENC_KEY",
            ],
        ),
    ];
    for (bin, wants) in cases {
        for flag in ["--help", "-h"] {
            let out = run({
                let mut cmd = command(bin, &dir.0);
                cmd.arg(flag);
                cmd
            });
            let help = text(&out.stdout);
            assert!(out.status.success(), "{bin} {flag}: {:?}", out.status);
            for want in wants {
                assert!(
                    help.contains(want),
                    "{bin} {flag}: {want:?} missing in\n{help}"
                );
            }
        }
    }
    assert!(
        std::fs::read_dir(&dir.0).unwrap().next().is_none(),
        "--help created files"
    );
}

#[test]
fn an_unknown_word_on_the_command_line_is_an_error_not_a_start() {
    let dir = TempDir::new("word");
    for bin in [GREETER, ROUTER, AUTH] {
        for word in ["foo", "-x"] {
            let out = run({
                let mut cmd = command(bin, &dir.0);
                cmd.arg(word);
                cmd
            });
            let err = text(&out.stderr);
            assert!(!out.status.success(), "{bin} {word} started");
            assert!(err.contains(&format!("{word:?}")), "{bin} {word}: {err}");
        }
    }
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A started binary, killed when dropped (also when an assertion fails).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `cmd`, read stdout up to the line holding `marker`; that line.
fn first_line_with(
    mut cmd: Command,
    marker: &str,
) -> (Running, String, BufReader<std::process::ChildStdout>) {
    let mut child = Running(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start binary"),
    );
    let mut out = BufReader::new(child.0.stdout.take().expect("stdout"));
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap_or(0);
        assert!(n > 0, "exited before printing {marker:?}");
        if line.contains(marker) {
            return (child, line.trim_end().to_string(), out);
        }
    }
}

#[test]
fn addr_with_an_empty_host_listens_on_every_interface() {
    let dir = TempDir::new("colon");
    for bin in [ROUTER, AUTH] {
        let port = free_port();
        let mut cmd = command(bin, &dir.0);
        cmd.args(["--quiet", "--addr", &format!(":{port}")]);
        let (child, line, _out) = first_line_with(cmd, "listening on");
        drop(child);
        assert!(
            line.ends_with(&format!("listening on http://0.0.0.0:{port}")),
            "{bin}: {line}"
        );
    }
}

#[test]
fn a_bad_addr_says_host_port_before_any_route_is_printed_or_database_made() {
    let dir = TempDir::new("badaddr");
    for bin in [ROUTER, AUTH] {
        let out = run({
            let mut cmd = command(bin, &dir.0);
            cmd.args(["--addr", "nonsense"]);
            cmd
        });
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(!out.status.success(), "{bin}");
        assert!(
            err.contains("--addr: invalid address \"nonsense\" (expected HOST:PORT"),
            "{bin}: {err}"
        );
        assert!(
            !stdout.contains("[routes]"),
            "{bin} printed routes first:\n{stdout}"
        );
    }
    assert!(
        !dir.0.join("token-auth.db").exists(),
        "a database was created"
    );
}

#[test]
fn a_taken_port_names_the_flag_or_key_that_moves_the_service() {
    let dir = TempDir::new("taken");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for bin in [ROUTER, AUTH] {
        let out = run({
            let mut cmd = command(bin, &dir.0);
            cmd.args(["--addr", &addr]);
            cmd
        });
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{bin}");
        assert!(
            err.contains(&format!("--addr: cannot listen on {addr}")),
            "{bin}: {err}"
        );
        assert!(err.contains("give this one another --addr"), "{bin}: {err}");
    }
    let config = dir.0.join("config.yaml");
    let yaml = config_text(":memory:", "1s", "1s").replacen("127.0.0.1:0", &addr, 1);
    std::fs::write(&config, yaml).unwrap();
    let out = run({
        let mut cmd = command(GREETER, &dir.0);
        cmd.args(["--config", "config.yaml"]);
        cmd
    });
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("server.http.addr: cannot listen on {addr}")),
        "{err}"
    );
    assert!(
        err.contains("give this one another server.http.addr"),
        "{err}"
    );
}

#[test]
fn a_missing_config_names_config_path_and_the_working_directory_once() {
    let dir = TempDir::new("noconfig");
    let cwd = dir.0.canonicalize().unwrap();
    let cases: [(&str, &[&str]); 2] = [(GREETER, &[]), (AUTH, &["--config", "auth.yaml"])];
    for (bin, args) in cases {
        let out = run({
            let mut cmd = command(bin, &cwd);
            cmd.args(args);
            cmd
        });
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{bin}");
        assert!(err.contains("--config PATH"), "{bin}: {err}");
        assert_eq!(
            err.matches(&*cwd.display().to_string()).count(),
            1,
            "{bin}: {err}"
        );
    }
}

#[test]
fn a_short_secret_is_refused_before_any_database_is_created() {
    let dir = TempDir::new("short");
    let out = run({
        let mut cmd = command(AUTH, &dir.0);
        cmd.env("TOKEN_AUTH_SECRET", "short")
            .args(["--addr", "127.0.0.1:0", "--db", "auth.db"]);
        cmd
    });
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("TOKEN_AUTH_SECRET: signing secret is 5 bytes"),
        "{err}"
    );
    assert!(!dir.0.join("auth.db").exists(), "the database was created");
}

#[test]
fn request_log_lines_start_with_the_services_name() {
    let dir = TempDir::new("names");
    std::fs::write(
        dir.0.join("config.yaml"),
        config_text(":memory:", "1s", "1s"),
    )
    .unwrap();
    let cases: [(&str, &[&str], &str, &str); 3] = [
        (
            ROUTER,
            &["--quiet", "--addr", "127.0.0.1:0"],
            "router-demo listening on http://",
            "[router-demo] ",
        ),
        (
            AUTH,
            &["--quiet", "--addr", "127.0.0.1:0", "--db", "auth.db"],
            "token-auth listening on http://",
            "[token-auth] ",
        ),
        (GREETER, &[], "greeter: HTTP listening on ", "[greeter] "),
    ];
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (bin, args, marker, prefix) in cases {
        let mut cmd = command(bin, &dir.0);
        cmd.args(args);
        let (child, line, mut out) = first_line_with(cmd, marker);
        let addr = line.split(marker).nth(1).unwrap().parse().unwrap();
        let reply = rt.block_on(support::http::get(support::http::Proto::H1, addr, "/nope"));
        assert_eq!(reply.status, http::StatusCode::NOT_FOUND, "{bin}");
        let log = loop {
            let mut l = String::new();
            assert!(out.read_line(&mut l).unwrap() > 0, "{bin}: no log line");
            if l.contains("\"/nope\"") {
                break l;
            }
        };
        drop(child);
        assert!(log.starts_with(prefix), "{bin}: {log}");
    }
}

/// The `server options:` section of a `--help` text.
fn server_options(help: &str) -> &str {
    let (_, section) = help
        .split_once("\nserver options:\n")
        .unwrap_or_else(|| panic!("no server options section in\n{help}"));
    section.split("\n\n").next().unwrap_or(section).trim_end()
}

#[test]
fn the_shared_server_options_are_listed_once_and_alike_in_every_help() {
    let dir = TempDir::new("common");
    let help = |bin: &str| {
        let out = run({
            let mut cmd = command(bin, &dir.0);
            cmd.arg("--help");
            cmd
        });
        assert!(out.status.success(), "{bin}");
        text(&out.stdout)
    };
    let (router, auth, greeter) = (help(ROUTER), help(AUTH), help(GREETER));
    assert_eq!(server_options(&router), server_options(&auth));
    for flag in [
        "--addr HOST:PORT",
        "--shutdown-grace DURATION",
        "--tls-cert FILE",
        "--tls-key FILE",
        "--quiet",
        "--trace",
        "--no-access-log",
        "--no-metrics",
    ] {
        assert!(server_options(&router).contains(flag), "{flag}\n{router}");
    }
    for help in [&router, &auth, &greeter] {
        assert_eq!(
            help.matches("--shutdown-grace DURATION ").count(),
            1,
            "{help}"
        );
    }
    // The greeter's listeners come from its config: of the shared options
    // it takes the grace, worded as the others word it.
    let grace = |help: &str| {
        let line = server_options(help)
            .lines()
            .find(|l| l.contains("--shutdown-grace"));
        line.map(str::to_owned)
    };
    assert_eq!(grace(&greeter), grace(&router));
}

#[test]
fn a_bad_shutdown_grace_names_the_flag_or_the_variable_in_every_binary() {
    let dir = TempDir::new("grace");
    std::fs::write(
        dir.0.join("config.yaml"),
        config_text(":memory:", "1s", "1s"),
    )
    .unwrap();
    let cases: [(&str, Option<&str>, &[&str], &str); 4] = [
        (
            ROUTER,
            None,
            &["--shutdown-grace", "soon"],
            "--shutdown-grace",
        ),
        (
            AUTH,
            None,
            &["--shutdown-grace", "soon"],
            "--shutdown-grace",
        ),
        (
            GREETER,
            None,
            &["--shutdown-grace", "soon"],
            "--shutdown-grace",
        ),
        (GREETER, Some("soon"), &[], "GREETER_SHUTDOWN_GRACE"),
    ];
    for (bin, var, args, named) in cases {
        let out = run({
            let mut cmd = command(bin, &dir.0);
            cmd.args(["--addr", "127.0.0.1:0"].iter().filter(|_| bin != GREETER));
            cmd.args(args);
            if let Some(value) = var {
                cmd.env("GREETER_SHUTDOWN_GRACE", value);
            }
            cmd
        });
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{bin} {args:?} started");
        // A flag's value is quoted; a variable's, from the environment, is not.
        let shown = if var.is_some() { "" } else { " \"soon\"" };
        assert!(
            err.contains(&format!("{named}: invalid duration{shown} (")),
            "{bin} {args:?}: {err}"
        );
    }
}

#[test]
fn no_metrics_turns_off_get_metrics_in_router_demo_and_token_auth() {
    let dir = TempDir::new("nometrics");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cases: [(&str, &[&str], &str); 2] = [
        (ROUTER, &[], "router-demo listening on http://"),
        (
            AUTH,
            &["--db", "auth.db"],
            "token-auth listening on http://",
        ),
    ];
    for (bin, args, marker) in cases {
        for (switch, want) in [
            (None, http::StatusCode::OK),
            (Some("--no-metrics"), http::StatusCode::NOT_FOUND),
        ] {
            let mut cmd = command(bin, &dir.0);
            cmd.args(["--quiet", "--addr", "127.0.0.1:0"]).args(args);
            cmd.args(switch);
            let (child, line, _out) = first_line_with(cmd, marker);
            let addr = line.split(marker).nth(1).unwrap().parse().unwrap();
            let reply = rt.block_on(support::http::get(
                support::http::Proto::H1,
                addr,
                "/metrics",
            ));
            drop(child);
            assert_eq!(reply.status, want, "{bin} {switch:?}");
        }
    }
}

/// Kratos' `${KEY}` / `${KEY:default}` placeholders, read from
/// `GREETER_`-prefixed environment variables: set, the greeter starts on
/// what they say; unset without a default, it refuses to start naming the
/// key and the variable (Kratos would substitute an empty string).
#[test]
fn config_placeholders_read_the_prefixed_environment_or_refuse_naming_key_and_variable() {
    let dir = TempDir::new("placeholders");
    let yaml = config_text(":memory:", "1s", "1s")
        .replacen("source: \":memory:\"", "source: \"${DB_SOURCE}\"", 1)
        .replacen("addr: 127.0.0.1:0", "addr: \"${HTTP_ADDR:127.0.0.1:0}\"", 1);
    assert!(
        yaml.contains("${DB_SOURCE}") && yaml.contains("${HTTP_ADDR"),
        "{yaml}"
    );
    let config = dir.0.join("config.yaml");
    std::fs::write(&config, yaml).unwrap();
    let out = run({
        let mut cmd = command(GREETER, &dir.0);
        cmd.args(["--config", "config.yaml"])
            .env_remove("GREETER_DB_SOURCE");
        cmd
    });
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "data.database.source: placeholder ${DB_SOURCE} has no value: set the \
             environment variable GREETER_DB_SOURCE"
        ),
        "{err}"
    );
    let path = config.display().to_string();
    let env = [("GREETER_DB_SOURCE", ":memory:")];
    let (mut child, addrs, _out) = support::bin::spawn(GREETER, &["--config", &path], &env, 2);
    let _ = child.kill();
    let _ = child.wait();
    assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    assert!(!dir.0.join("${DB_SOURCE}").exists());
}
