//! The chain trace: one request's walk of its handler chain as text, for
//! `--trace` (see [`Trace`]). [`Context`](crate::web::chain::Context) records
//! into it when tracing is on; off, it costs one branch per handler.

use http::StatusCode;

/// The walk of one request's chain, for people studying the mechanics:
/// each handler's enter and exit with its index and name, where `next()` was
/// called and where `abort()` stopped the chain. Nesting is indentation, so
/// a Next chain (each handler inside the one before) and a chain stopped by
/// Abort look different at a glance:
///
/// ```text
/// GET /index (4 handlers)
///   enter 0 logger
///     0 logger: next()
///     enter 1 recovery
///       1 recovery: next()
///       enter 2 token_check
///         2 token_check: abort() (3 index_handler will not run)
///       exit  2 token_check [aborted]
///     exit  1 recovery [aborted]
///   exit  0 logger [aborted]
/// => 403
/// ```
pub struct Trace {
    text: String,
    depth: usize,
    /// Log lines to write after the trace
    /// ([`Context::hold_after_trace`](crate::web::chain::Context::hold_after_trace)).
    held: Vec<u8>,
}

impl Trace {
    /// A trace of a request whose head is `header`, with `len` handlers.
    pub(crate) fn new(header: String, len: usize) -> Trace {
        let mut text = header;
        text.push_str(&format!(" ({len} handlers)"));
        Trace {
            text,
            depth: 1,
            held: Vec::new(),
        }
    }

    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        use std::fmt::Write;
        self.text.push('\n');
        for _ in 0..self.depth {
            self.text.push_str("  ");
        }
        let _ = self.text.write_fmt(args);
    }

    /// Handler `index` (called `name`) starts.
    pub(crate) fn enter(&mut self, index: isize, name: Option<&str>) {
        self.line(format_args!("enter {}", Label(index, name)));
        self.depth += 1;
    }

    /// Handler `index` returned; `aborted` if the chain was stopped.
    pub(crate) fn exit(&mut self, index: isize, name: Option<&str>, aborted: bool) {
        self.depth = self.depth.saturating_sub(1);
        let mark = if aborted { " [aborted]" } else { "" };
        self.line(format_args!("exit  {}{mark}", Label(index, name)));
    }

    /// Handler `index` called `next()`.
    pub(crate) fn next_called(&mut self, index: isize, name: Option<&str>) {
        self.line(format_args!("{}: next()", Label(index, name)));
    }

    /// Handler `index` called `abort()`; `names` are the whole chain's.
    pub(crate) fn abort_called(&mut self, index: isize, names: &[Option<&'static str>]) {
        let skipped: Vec<String> = usize::try_from(index + 1)
            .map(|from| {
                names
                    .iter()
                    .enumerate()
                    .skip(from)
                    .map(|(i, name)| Label(i as isize, *name).to_string())
                    .collect()
            })
            .unwrap_or_default();
        let who = usize::try_from(index)
            .ok()
            .and_then(|i| names.get(i))
            .map(|name| Label(index, *name).to_string())
            .unwrap_or_else(|| "engine".into());
        let rest = if skipped.is_empty() {
            String::from("nothing left to skip")
        } else {
            format!("{} will not run", skipped.join(", "))
        };
        self.line(format_args!("{who}: abort() ({rest})"));
    }

    /// Close the trace with the status the chain answered.
    pub fn finish(&mut self, status: StatusCode) {
        self.depth = 0;
        self.line(format_args!("=> {}", status.as_u16()));
    }

    /// The trace as text, one step per line.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The log lines held to follow the trace (the request log line).
    pub fn held(&self) -> &[u8] {
        &self.held
    }

    /// Keep `line` to be written after the trace.
    pub(crate) fn hold(&mut self, line: &[u8]) {
        self.held.extend_from_slice(line);
    }
}

/// A handler as the trace shows it: `2 token_check`, or `#2` unnamed.
struct Label<'n>(isize, Option<&'n str>);

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(name) => write!(f, "{} {name}", self.0),
            None => write!(f, "#{}", self.0),
        }
    }
}
