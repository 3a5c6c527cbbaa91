//! A tiny `--flag value` / `--switch` argument parser shared by the binaries.
//!
//! The binaries take a handful of options each; a dependency for that would
//! outweigh the code. Unknown flags and missing values are errors that name
//! the flag, so a typo never silently falls back to a default.

use std::collections::HashMap;
use std::fmt;

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
    pub fn parse_with_switches(
        args: impl IntoIterator<Item = String>,
        known: &[&str],
        switches: &[&str],
    ) -> Result<Args, ArgsError> {
        let mut out = Args::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let Some(flag) = arg.strip_prefix("--") else {
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

#[cfg(test)]
mod tests {
    use super::{Args, ArgsError};

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
}
