//! A tiny `--flag value` / `--switch` argument parser shared by the binaries,
//! with the `--help` text made from the same table, so the two cannot drift.
//!
//! The binaries take a handful of options each; a dependency for that would
//! outweigh the code. Each binary lists its own options once as [`Flag`]s,
//! beside the server options the binaries share ([`ADDR`],
//! [`SHUTDOWN_GRACE`], [`QUIET`], [`TRACE`], [`NO_ACCESS_LOG`], [`NO_METRICS`],
//! and the TLS pair of `server::tls`), which are defined here once; the
//! parser accepts exactly those, and [`help`] prints each with its value,
//! default and environment variable. Unknown flags, missing values and unexpected words
//! are errors that name the argument, so a typo never silently falls back to
//! a default.

use std::collections::HashMap;
use std::fmt;

/// One option a binary takes: how it is parsed and how `--help` shows it.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// The name without its leading `--`.
    pub name: &'static str,
    /// What the value looks like (`HOST:PORT`), or `None` for a switch
    /// that takes no value (`--quiet`).
    pub value: Option<&'static str>,
    /// The value used when the flag is absent, for `--help`.
    pub default: Option<&'static str>,
    /// One line on what it does.
    pub help: &'static str,
}

impl Flag {
    /// A `--name VALUE` option.
    pub const fn value(
        name: &'static str,
        value: &'static str,
        default: Option<&'static str>,
        help: &'static str,
    ) -> Flag {
        Flag {
            name,
            value: Some(value),
            default,
            help,
        }
    }

    /// A value-less `--name` switch.
    pub const fn switch(name: &'static str, help: &'static str) -> Flag {
        Flag {
            name,
            value: None,
            default: None,
            help,
        }
    }
}

/// Where router-demo and token-auth listen unless `--addr` says otherwise.
pub const DEFAULT_ADDR: &str = "0.0.0.0:8000";

/// `--addr HOST:PORT`: where to listen (read with [`listen_addr`]).
pub const ADDR: Flag = Flag::value(
    "addr",
    "HOST:PORT",
    Some(DEFAULT_ADDR),
    "where to listen; :PORT is every interface",
);

/// `--shutdown-grace DURATION`: how long in-flight requests may finish
/// after SIGTERM (Go notation, as every duration setting).
pub const SHUTDOWN_GRACE: Flag = Flag::value(
    "shutdown-grace",
    "DURATION",
    Some("10s"),
    "how long requests may finish after SIGTERM",
);

/// `--max-connections N`: connections the process holds open at once
/// (default three quarters of the open-file limit, raised to the hard one).
pub const MAX_CONNECTIONS: Flag = Flag::value(
    "max-connections",
    "N",
    None,
    "connections held open at once (default 3/4 of the open-file limit)",
);

/// `--max-connections-per-peer N`: connections one client address (IPv6:
/// one /64) holds before the cap takes back from it first (default half
/// the cap); nothing is refused below the cap.
pub const MAX_CONNECTIONS_PER_PEER: Flag = Flag::value(
    "max-connections-per-peer",
    "N",
    None,
    "connections one address holds before the cap takes back from it first (default half the cap)",
);

/// `--quiet`: no route table at start-up.
pub const QUIET: Flag = Flag::switch("quiet", "do not print the route table at start-up");

/// `--trace`: log each request's walk of its handler chain.
pub const TRACE: Flag = Flag::switch("trace", "log each request's walk of its handler chain");

/// `--debug-pages`: serve `GET /debug/walks` and `GET /debug/routes` to
/// loopback peers ([`crate::web::debug`]).
pub const DEBUG_PAGES: Flag = Flag::switch(
    "debug-pages",
    "serve GET /debug/walks and /debug/routes (chain walks and route tree drawn) to loopback peers",
);

/// `--no-access-log`: no access line per request (HTTP) or per call
/// (`[grpc]`); business lines, refusals, recovered panics and the start-up
/// lines stay. As throughput benchmarks run a server (TechEmpower's rules).
pub const NO_ACCESS_LOG: Flag = Flag::switch(
    "no-access-log",
    "do not write an access line per request (other log lines stay)",
);

/// `--no-metrics`: no request counting and no `GET /metrics`.
pub const NO_METRICS: Flag = Flag::switch("no-metrics", "do not count requests (no GET /metrics)");

/// An environment variable a binary reads, for `--help`.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar {
    /// The variable's name.
    pub name: &'static str,
    /// Its default (`None`: unset means off, or it is required).
    pub default: Option<&'static str>,
    /// One line on what it does.
    pub help: &'static str,
}

/// What a binary says about itself in `--help`.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// The binary's name.
    pub program: &'static str,
    /// One line: what it is.
    pub about: &'static str,
    /// The command lines it takes, without the program name
    /// (`[--addr HOST:PORT] [--quiet]`); a line starting with a space
    /// continues the one before.
    pub synopsis: &'static [&'static str],
    /// The options of this binary alone.
    pub flags: &'static [Flag],
    /// The server options it shares with the other binaries, listed in
    /// `--help` under their own heading, the same way in each.
    pub common: &'static [Flag],
    /// Every environment variable it reads.
    pub env: &'static [EnvVar],
}

impl Usage {
    /// Parse `args` (without the program name) against the binary's own
    /// and common flags, as [`Args::command`] does.
    pub fn command(
        &self,
        args: impl IntoIterator<Item = String>,
        max_positional: usize,
    ) -> Result<Command, ArgsError> {
        let flags: Vec<Flag> = self.flags.iter().chain(self.common).copied().collect();
        Args::command(args, &flags, max_positional)
    }
}

/// The `--help` text of `usage`: synopsis, then one line per option with
/// its default (the binary's own, then the shared server options), then the
/// environment variables.
pub fn help(usage: &Usage) -> String {
    let mut out = format!("{}: {}\n\nusage:\n", usage.program, usage.about);
    for line in usage.synopsis {
        // A line starting with a space continues the one before it.
        let program = match line.strip_prefix(' ') {
            Some(_) => " ".repeat(usage.program.len()),
            None => usage.program.to_string(),
        };
        out.push_str(&format!("  {program} {}\n", line.trim_start()));
    }
    let column = |left: &str, help: &str, default: Option<&str>| {
        let default = default
            .map(|d| format!(" (default {d})"))
            .unwrap_or_default();
        format!("  {left:<30} {help}{default}\n")
    };
    let flag_line = |flag: &Flag| {
        let left = match flag.value {
            Some(value) => format!("--{} {value}", flag.name),
            None => format!("--{}", flag.name),
        };
        column(&left, flag.help, flag.default)
    };
    out.push_str("\noptions:\n");
    for flag in usage.flags {
        out.push_str(&flag_line(flag));
    }
    out.push_str(&column("-h, --help", "print this help and exit", None));
    if !usage.common.is_empty() {
        out.push_str("\nserver options:\n");
        for flag in usage.common {
            out.push_str(&flag_line(flag));
        }
    }
    if !usage.env.is_empty() {
        out.push_str("\nenvironment:\n");
        for var in usage.env {
            out.push_str(&column(var.name, var.help, var.default));
        }
    }
    out
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// `-h` or `--help` anywhere: print [`help`] and exit 0.
    Help,
    /// Run with these arguments.
    Run(Args),
}

/// A command line the binary cannot run with; the message names the flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsError {
    /// `--flag` is the last argument, with no value after it.
    MissingValue {
        /// The flag without its leading `--`.
        flag: String,
    },
    /// A switch (`--quiet`) was given a value.
    SwitchWithValue {
        /// The switch without its leading `--`.
        name: String,
    },
    /// The flag is not one the binary takes.
    UnknownFlag {
        /// The flag without its leading `--`.
        name: String,
        /// The flags the binary takes, without `--`.
        known: Vec<String>,
    },
    /// A word the binary does not take (a typo, or a sub-command it lacks).
    Unexpected {
        /// The word as given.
        arg: String,
    },
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::MissingValue { flag } => write!(f, "--{flag} needs a value"),
            ArgsError::SwitchWithValue { name } => write!(f, "--{name} takes no value"),
            ArgsError::UnknownFlag { name, known } => write!(
                f,
                "unknown option --{name} (known: {})",
                known
                    .iter()
                    .map(|k| format!("--{k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ArgsError::Unexpected { arg } => {
                write!(f, "unexpected argument {arg:?} (see --help)")
            }
        }
    }
}

impl std::error::Error for ArgsError {}

/// Parsed arguments: `--name value` / `--name=value` pairs and positionals.
#[derive(Debug, Default)]
pub struct Args {
    flags: HashMap<String, String>,
    switches: Vec<String>,
    /// Arguments that are not flags, in order (sub-commands).
    pub positional: Vec<String>,
}

impl Args {
    /// Parse `args` (without the program name) against `flags`: `-h` or
    /// `--help` anywhere asks for help; positional words are kept only when
    /// `max_positional` allows them (sub-commands), else they are errors.
    pub fn command(
        args: impl IntoIterator<Item = String>,
        flags: &[Flag],
        max_positional: usize,
    ) -> Result<Command, ArgsError> {
        let args: Vec<String> = args.into_iter().collect();
        if args.iter().any(|a| a == "-h" || a == "--help") {
            return Ok(Command::Help);
        }
        let values: Vec<&str> = flags
            .iter()
            .filter(|f| f.value.is_some())
            .map(|f| f.name)
            .collect();
        let switches: Vec<&str> = flags
            .iter()
            .filter(|f| f.value.is_none())
            .map(|f| f.name)
            .collect();
        let parsed = Args::parse_with_switches(args, &values, &switches)?;
        if let Some(arg) = parsed.positional.get(max_positional) {
            return Err(ArgsError::Unexpected { arg: arg.clone() });
        }
        Ok(Command::Run(parsed))
    }

    /// Parse `args` (without the program name), accepting only `known` flags
    /// (names without the leading `--`).
    pub fn parse(
        args: impl IntoIterator<Item = String>,
        known: &[&str],
    ) -> Result<Args, ArgsError> {
        Args::parse_with_switches(args, known, &[])
    }

    /// Like [`parse`](Self::parse), also accepting the value-less
    /// `switches` (`--quiet`, `--trace`).
    pub(crate) fn parse_with_switches(
        args: impl IntoIterator<Item = String>,
        known: &[&str],
        switches: &[&str],
    ) -> Result<Args, ArgsError> {
        let mut out = Args::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let Some(flag) = arg.strip_prefix("--") else {
                if arg.starts_with('-') && arg.len() > 1 {
                    // `-x`: no short options exist but -h.
                    return Err(ArgsError::Unexpected { arg });
                }
                out.positional.push(arg);
                continue;
            };
            let bare = flag.split('=').next().unwrap_or(flag);
            if switches.contains(&bare) {
                if bare != flag {
                    return Err(ArgsError::SwitchWithValue { name: bare.into() });
                }
                out.switches.push(bare.to_string());
                continue;
            }
            if !known.contains(&bare) {
                return Err(ArgsError::UnknownFlag {
                    name: bare.to_string(),
                    known: known
                        .iter()
                        .chain(switches)
                        .map(|k| k.to_string())
                        .collect(),
                });
            }
            let (name, value) = match flag.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => {
                    let v = it.next().ok_or_else(|| ArgsError::MissingValue {
                        flag: flag.to_string(),
                    })?;
                    (flag.to_string(), v)
                }
            };
            out.flags.insert(name, value);
        }
        Ok(out)
    }

    /// Whether the switch `--name` was given.
    pub fn has(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.flags.get(name).map(String::as_str)
    }
}

/// A listen address as `--addr` takes it: `HOST:PORT`, where an empty host
/// means every IPv4 interface (`:8099` is `0.0.0.0:8099`, as the greeter's
/// `server.http.addr` and Go's `net.Listen` read it). The error names `flag`
/// and says what the value should look like.
pub fn listen_addr(flag: &str, text: &str) -> Result<String, String> {
    let bad = || {
        format!("{flag}: invalid address {text:?} (expected HOST:PORT, e.g. 0.0.0.0:8000, 127.0.0.1:8000 or :8000)")
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    port.parse::<u16>().map_err(|_| bad())?;
    if host.is_empty() {
        return Ok(format!("0.0.0.0:{port}"));
    }
    if host.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok(text.to_string())
}

/// What to add to a "cannot listen" error when the port is taken: which
/// setting moves this service elsewhere (all three default to port 8000).
pub fn addr_in_use_hint(error: &std::io::Error, setting: &str) -> String {
    if error.kind() != std::io::ErrorKind::AddrInUse {
        return String::new();
    }
    format!(
        " (another process listens there: greeter, router-demo and token-auth all \
         default to port 8000, so run one at a time or give this one another {setting})"
    )
}

#[cfg(test)]
mod tests {
    use super::{
        help, listen_addr, Args, ArgsError, Command, EnvVar, Flag, Usage, SHUTDOWN_GRACE, TRACE,
    };

    fn parse(v: &[&str]) -> Result<Args, ArgsError> {
        Args::parse(v.iter().map(|s| s.to_string()), &["addr", "db"])
    }

    #[test]
    fn flags_take_space_or_equals_values_and_keep_positionals() {
        let a = parse(&["create-admin", "--addr", "127.0.0.1:1", "--db=x.db"]).unwrap();
        assert_eq!(a.get("addr"), Some("127.0.0.1:1"));
        assert_eq!(a.get("db"), Some("x.db"));
        assert_eq!(a.positional, vec!["create-admin"]);
    }

    #[test]
    fn switches_take_no_value_and_are_reported_by_has() {
        let argv = ["--quiet", "--addr", "x", "--trace"].map(String::from);
        let a = Args::parse_with_switches(argv, &["addr"], &["quiet", "trace"]).unwrap();
        assert!(a.has("quiet") && a.has("trace") && !a.has("addr"));
        assert_eq!(a.get("addr"), Some("x"));
        let err = Args::parse_with_switches(["--quiet=1".to_string()], &[], &["quiet"]);
        assert_eq!(err.unwrap_err().to_string(), "--quiet takes no value");
        let err = Args::parse_with_switches(["--loud".to_string()], &["addr"], &["quiet"]);
        assert_eq!(
            err.unwrap_err().to_string(),
            "unknown option --loud (known: --addr, --quiet)"
        );
    }

    #[test]
    fn unknown_flags_and_missing_values_are_errors_naming_the_flag() {
        assert!(parse(&["--adr", "x"])
            .unwrap_err()
            .to_string()
            .contains("--adr"));
        assert!(parse(&["--addr"])
            .unwrap_err()
            .to_string()
            .contains("--addr needs a value"));
    }

    #[test]
    fn args_errors_are_typed_and_keep_their_messages() {
        let cases = [
            (
                &["--db"][..],
                ArgsError::MissingValue { flag: "db".into() },
                "--db needs a value",
            ),
            (
                &["--adr=x"][..],
                ArgsError::UnknownFlag {
                    name: "adr".into(),
                    known: vec!["addr".into(), "db".into()],
                },
                "unknown option --adr (known: --addr, --db)",
            ),
        ];
        for (argv, want, message) in cases {
            let err = parse(argv).unwrap_err();
            assert_eq!(err, want);
            assert_eq!(err.to_string(), message);
        }
    }

    const FLAGS: &[Flag] = &[
        Flag::value("addr", "HOST:PORT", Some("0.0.0.0:8000"), "where to listen"),
        Flag::switch("quiet", "no route table"),
    ];

    fn command(v: &[&str], max_positional: usize) -> Result<Command, ArgsError> {
        Args::command(v.iter().map(|s| s.to_string()), FLAGS, max_positional)
    }

    #[test]
    fn help_anywhere_on_the_line_asks_for_help_even_beside_bad_arguments() {
        for argv in [
            &["-h"][..],
            &["--help"],
            &["--addr", "x", "-h"],
            &["--nope", "--help"],
        ] {
            assert!(matches!(command(argv, 0), Ok(Command::Help)), "{argv:?}");
        }
    }

    #[test]
    fn unexpected_words_and_short_options_are_errors_naming_them() {
        let err = command(&["foo"], 0).unwrap_err();
        assert_eq!(err, ArgsError::Unexpected { arg: "foo".into() });
        assert_eq!(err.to_string(), "unexpected argument \"foo\" (see --help)");
        let err = command(&["-q"], 0).unwrap_err();
        assert_eq!(err, ArgsError::Unexpected { arg: "-q".into() });
        // A sub-command is kept when the binary takes one, the next word is not.
        let Ok(Command::Run(args)) = command(&["create-admin"], 1) else {
            panic!("one positional is allowed");
        };
        assert_eq!(args.positional, ["create-admin"]);
        assert!(command(&["create-admin", "x"], 1).is_err());
    }

    #[test]
    fn help_lists_every_flag_with_its_value_and_default_and_every_variable() {
        let usage = Usage {
            program: "demo",
            about: "a demo",
            synopsis: &["[--addr HOST:PORT] [--quiet]"],
            flags: FLAGS,
            common: &[SHUTDOWN_GRACE],
            env: &[EnvVar {
                name: "DEMO_SECRET",
                default: None,
                help: "the secret",
            }],
        };
        let text = help(&usage);
        assert!(
            text.contains("  demo [--addr HOST:PORT] [--quiet]\n"),
            "{text}"
        );
        for want in [
            "--addr HOST:PORT",
            "where to listen (default 0.0.0.0:8000)",
            "--quiet",
            "-h, --help",
            "DEMO_SECRET",
            "the secret",
        ] {
            assert!(text.contains(want), "{want} missing from\n{text}");
        }
        let (own, common) = text
            .split_once("\nserver options")
            .expect("a common section");
        assert!(!own.contains("--shutdown-grace"), "{text}");
        assert!(
            common.contains("--shutdown-grace DURATION"),
            "shared flags under their own heading:\n{text}"
        );
    }

    #[test]
    fn usage_parses_its_own_and_its_common_flags() {
        let usage = Usage {
            program: "demo",
            about: "a demo",
            synopsis: &[],
            flags: FLAGS,
            common: &[SHUTDOWN_GRACE, TRACE],
            env: &[],
        };
        let argv = ["--addr", "x", "--shutdown-grace", "1s", "--trace"].map(String::from);
        let Ok(Command::Run(args)) = usage.command(argv, 0) else {
            panic!("own and common flags are accepted");
        };
        assert_eq!(args.get("shutdown-grace"), Some("1s"));
        assert!(args.has("trace") && !args.has("quiet"));
        let err = usage.command(["--no-metrics".to_string()], 0).unwrap_err();
        assert!(matches!(err, ArgsError::UnknownFlag { .. }), "{err}");
    }

    #[test]
    fn listen_addr_takes_host_port_and_an_empty_host_means_every_interface() {
        let cases = [
            (":8099", Ok("0.0.0.0:8099")),
            ("127.0.0.1:0", Ok("127.0.0.1:0")),
            ("[::1]:8000", Ok("[::1]:8000")),
            ("localhost:8000", Ok("localhost:8000")),
            ("nonsense", Err(())),
            ("1.2.3.4:http", Err(())),
            (":70000", Err(())),
            ("a b:1", Err(())),
        ];
        for (text, want) in cases {
            let got = listen_addr("--addr", text);
            match want {
                Ok(addr) => assert_eq!(got.as_deref(), Ok(addr), "{text}"),
                Err(()) => {
                    let err = got.unwrap_err();
                    assert!(err.starts_with("--addr: invalid address"), "{err}");
                    assert!(err.contains("HOST:PORT"), "{err}");
                }
            }
        }
    }
}
