//! `${KEY}` placeholders, resolved while the file is read into its typed
//! structure, so that each one takes the type of the field it fills.
//!
//! The file is read twice by serde_yaml, through an adapter around its
//! deserializer ([`Resolving`]) that sees every scalar before the field's
//! own visitor does:
//!
//! 1. **Shape.** Each placeholder stands in as a neutral value of the type
//!    its field asks for (`0` as text, `1`, `false`), and nothing is looked
//!    up: unknown keys, missing keys and literal values of the wrong type
//!    are refused before anything is expanded, and so is a placeholder
//!    naming a denied variable.
//! 2. **Resolve.** Each placeholder is expanded and handed to its field: a
//!    string field receives the text exactly as it was read, a number,
//!    boolean or duration field parses it, and a value that does not parse
//!    is refused naming the key and the variable, never quoting a value
//!    that came from the environment. Expansion stops once the values would
//!    make the resolved document larger than [`MAX_RESOLVED_BYTES`].
//!
//! The keys whose values came from the environment are kept in [`Origins`],
//! so the checks a service makes afterwards can name the variable too.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use serde::de::DeserializeOwned;

use super::{quote, Error, MAX_FILE_BYTES};

mod adapter;
use adapter::Resolving;

/// Largest resolved document: twice [`MAX_FILE_BYTES`], the file's text
/// plus what its placeholders expand to. A file cannot ask for more memory
/// than that by naming a long value many times.
pub const MAX_RESOLVED_BYTES: usize = 2 * MAX_FILE_BYTES as usize;

/// Where placeholders read from: the environment variables named `prefix`
/// + KEY, except those in `denied`.
pub struct Env<'a> {
    /// Prepended to KEY to name the variable (`GREETER_`).
    pub prefix: &'a str,
    /// Variables no placeholder may read: the service's own secrets, which
    /// share the prefix.
    pub denied: &'a [&'a str],
    /// The value of a variable, by its full name (`std::env::var`).
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

/// For each key whose value came (in part) through a placeholder from the
/// environment or from another key of the file, the variables and keys it
/// came from: a start-up error about such a key names them instead of
/// quoting the value ([`Origins::show`]), which may be a secret.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Origins {
    sources: BTreeMap<String, Vec<String>>,
}

impl Origins {
    /// The variables (`GREETER_DB_SOURCE`) and keys (`data.database.source`)
    /// the value of `key` (`server.http.addr`) was read from.
    pub fn sources(&self, key: &str) -> Option<&[String]> {
        self.sources.get(key).map(Vec::as_slice)
    }

    /// `value`, the value of `key`, as a start-up error may show it: `from
    /// GREETER_HTTP_ADDR` when it came from the environment (or another
    /// key), else [`quote`]d (at most a short prefix).
    pub fn show(&self, key: &str, value: &str) -> String {
        match self.sources(key) {
            Some(sources) => from_sources(sources),
            None => quote(value),
        }
    }
}

/// `from A and B`.
fn from_sources(sources: &[String]) -> String {
    format!("from {}", sources.join(" and "))
}

/// Reads `text` into `T` with its placeholders resolved from `env`, then
/// from the file's own dotted keys, then from their defaults.
pub(super) fn resolve<T: DeserializeOwned>(
    text: &str,
    env: &Env<'_>,
) -> Result<(T, Origins), Error> {
    super::check_depth(text)?;
    let shape = Context::new(env, None, text.len());
    if let Err(e) = read::<T>(text, &shape) {
        if !shape.stand_in_failed.get() {
            return Err(e.into());
        }
        // A stand-in did not suit its field: the shape is judged below,
        // with the real values.
    }
    let file: serde_yaml::Value = serde_yaml::from_str(text)?;
    let resolving = Context::new(env, Some(&file), text.len());
    let value = read::<T>(text, &resolving)?;
    Ok((value, resolving.origins.into_inner()))
}

fn read<T: DeserializeOwned>(text: &str, cx: &Context<'_>) -> Result<T, serde_yaml::Error> {
    T::deserialize(Resolving {
        de: serde_yaml::Deserializer::from_str(text),
        cx,
        key: false,
    })
}

/// One step of a key path.
enum Step {
    Key(String),
    Index(usize),
}

/// What one read of the file shares.
struct Context<'a> {
    env: &'a Env<'a>,
    /// The file as written, for `${a.b}`; `None` in the shape pass, which
    /// looks nothing up.
    file: Option<&'a serde_yaml::Value>,
    /// Bytes the placeholders may still add.
    budget: Cell<usize>,
    path: RefCell<Vec<Step>>,
    /// The last mapping key read, until its value is.
    key: RefCell<Option<String>>,
    origins: RefCell<Origins>,
    stand_in_failed: Cell<bool>,
}

/// A placeholder's text once expanded.
struct Expanded {
    text: String,
    /// The environment variables and the keys of the file read.
    sources: Vec<String>,
}

impl<'a> Context<'a> {
    fn new(env: &'a Env<'a>, file: Option<&'a serde_yaml::Value>, len: usize) -> Context<'a> {
        Context {
            env,
            file,
            budget: Cell::new(MAX_RESOLVED_BYTES.saturating_sub(len)),
            path: RefCell::new(Vec::new()),
            key: RefCell::new(None),
            origins: RefCell::new(Origins::default()),
            stand_in_failed: Cell::new(false),
        }
    }

    /// The dotted key path of the value being read (`list[0]`, `a.b`).
    fn key_path(&self) -> String {
        let mut out = String::new();
        for step in self.path.borrow().iter() {
            match step {
                Step::Key(k) if out.is_empty() => out.push_str(k),
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// `text` with each `${NAME}` / `${NAME:default}` replaced (an unclosed
    /// `${` stays as it is, as Kratos' pattern does not match it); `None` in
    /// the shape pass, which only checks the names.
    fn expand(&self, text: &str) -> Result<Option<Expanded>, String> {
        let mut out = String::new();
        let mut sources = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start + 2..].find('}') else {
                break;
            };
            let inside = rest[start + 2..start + 2 + len].trim();
            let (name, default) = match inside.split_once(':') {
                Some((name, default)) => (name.trim(), Some(default)),
                None => (inside, None),
            };
            let prefix = self.env.prefix;
            let variable = format!("{prefix}{name}");
            if self.env.denied.contains(&variable.as_str()) {
                return Err(format!(
                    "placeholder ${{{name}}} would read {variable}, one of the service's own \
                     secrets, which placeholders cannot read"
                ));
            }
            out.push_str(&rest[..start]);
            rest = &rest[start + 2 + len + 1..];
            let Some(file) = self.file else {
                continue;
            };
            let value = match (self.env.var)(&variable) {
                Some(value) => {
                    sources.push(variable);
                    value
                }
                None => match (dotted(file, name), default) {
                    (Some(value), _) => {
                        sources.push(name.to_string());
                        value
                    }
                    (None, Some(default)) => default.to_string(),
                    (None, None) => {
                        return Err(format!(
                            "placeholder ${{{name}}} has no value: set the environment variable \
                             {prefix}{name} or give a default as ${{{name}:default}}"
                        ))
                    }
                },
            };
            let Some(left) = self.budget.get().checked_sub(value.len()) else {
                return Err(format!(
                    "placeholder ${{{name}}} makes the resolved configuration larger than \
                     {MAX_RESOLVED_BYTES} bytes (twice the largest file)"
                ));
            };
            self.budget.set(left);
            out.push_str(&value);
        }
        out.push_str(rest);
        Ok(self.file.map(|_| Expanded { text: out, sources }))
    }
}

/// The scalar at a dotted key path of the file, as text.
fn dotted(file: &serde_yaml::Value, path: &str) -> Option<String> {
    use serde_yaml::Value;
    match path
        .split('.')
        .try_fold(file, |value, key| value.get(key))?
    {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
