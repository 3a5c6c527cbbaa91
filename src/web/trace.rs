//! The chain trace: one request's walk of its handler chain, recorded as
//! [`Step`]s (see [`Trace`]). `--trace` prints them as text lines
//! ([`Trace::text`]); `/debug/walks` draws the same steps
//! (`crate::web::debug`), so the two cannot disagree. [`Context`](crate::web::chain::Context)
//! records into it when tracing is on; off, it costs one branch per handler.

use http::StatusCode;

use crate::web::draft::ResponseDraft;

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
///
/// A handler that panics exits `[panicked: …]`; the middleware it was
/// running inside exit `[cut short: …]`, since their code after `next()`
/// never runs; then recovery's own lines: it caught the panic, its
/// `abort()`, its 500.
pub struct Trace {
    steps: Vec<Step>,
    depth: usize,
    /// The handlers entered and not yet exited, innermost last: the last one
    /// is the handler that calls `next()` or `abort()` now, whatever the
    /// chain's index says (after `next()` returned, the index is past the end).
    open: Vec<isize>,
    /// The highest index entered so far: the handlers after it have not run.
    furthest: isize,
    /// The chain's handlers' names, in chain order.
    names: Vec<Option<&'static str>>,
    /// The response's status and whether a body was written, when last
    /// looked at ([`observe`](Self::observe)).
    seen: (StatusCode, bool),
    /// Log lines to write after the trace
    /// ([`Context::hold_after_trace`](crate::web::chain::Context::hold_after_trace)).
    held: Vec<u8>,
    /// The keys handlers set or read since the last look, in order (`true`:
    /// set): a read takes the context shared (`c.get`), so each use is noted
    /// here and becomes a step at the next look, the handler's still.
    keys: std::sync::Mutex<Vec<(bool, String)>>,
}

/// One step of a walk: a line of `--trace`, or (`Wrote`, `KeySet`, `KeyRead`) a fact
/// the pages draw beside them.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// How deep in the nesting of handlers the step happened.
    pub(crate) depth: usize,
    /// The handler whose code took the step (its index), `None`: the engine.
    pub(crate) who: Option<isize>,
    pub(crate) kind: StepKind,
    /// The step as words: the `--trace` line without its indentation.
    pub(crate) text: String,
}

/// What a [`Step`] is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StepKind {
    /// The request's head line: `GET /index (4 handlers)`.
    Head,
    Enter,
    /// The handler ended; how.
    Exit(Ended),
    Next,
    /// `abort()`, with the indices of the handlers it keeps from running.
    Abort(Vec<isize>),
    /// A panic caught or a time-out run out, by the handler `who`.
    Caught,
    /// Another step of `who` (recovery's 500, the time-out's answer).
    Note,
    /// `who` changed the response's status or wrote a body (drawn only).
    Wrote(u16),
    /// `who` stored a value under this key (drawn only).
    KeySet,
    /// `who` read the value under this key (drawn only).
    KeyRead,
    /// The status the chain answered.
    Finish(u16),
}

/// How a handler ended (see [`StepKind::Exit`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ended {
    Returned,
    Aborted,
    Panicked,
    TimedOut,
    CutShort,
}

impl Trace {
    /// A trace of a request whose head is `header`, running the handlers
    /// called `names`.
    pub(crate) fn new(header: String, names: Vec<Option<&'static str>>) -> Trace {
        let text = format!("{header} ({} handlers)", names.len());
        let head = Step {
            depth: 0,
            who: None,
            kind: StepKind::Head,
            text,
        };
        Trace {
            steps: vec![head],
            depth: 1,
            open: Vec::new(),
            furthest: -1,
            names,
            seen: (StatusCode::OK, false),
            held: Vec::new(),
            keys: std::sync::Mutex::default(),
        }
    }

    /// The handler running now, as the trace shows it.
    fn current(&self) -> Option<String> {
        let index = *self.open.last()?;
        Some(self.label(index).to_string())
    }

    fn label(&self, index: isize) -> Label<'static> {
        let name = usize::try_from(index)
            .ok()
            .and_then(|i| self.names.get(i).copied().flatten());
        Label(index, name)
    }

    fn step(&mut self, kind: StepKind, args: std::fmt::Arguments<'_>) {
        let who = self.open.last().copied();
        let (depth, text) = (self.depth, args.to_string());
        self.steps.push(Step {
            depth,
            who,
            kind,
            text,
        });
    }

    /// What the handler running now did since the last look: the keys it
    /// set or read, in order, then a change of the response's status or a
    /// body written. Drawn, not printed.
    pub(crate) fn observe(&mut self, response: &ResponseDraft) {
        let keys = std::mem::take(self.keys.get_mut().unwrap_or_else(|e| e.into_inner()));
        for (set, key) in keys {
            match set {
                true => self.step(StepKind::KeySet, format_args!("set key {key:?}")),
                false => self.step(StepKind::KeyRead, format_args!("read key {key:?}")),
            }
        }
        let (status, written) = (response.status, response.written);
        if (status, written) != self.seen {
            let body = if written { ", body written" } else { "" };
            let code = status.as_u16();
            self.step(StepKind::Wrote(code), format_args!("status {code}{body}"));
        }
        self.seen = (status, written);
    }

    /// A handler set (`set`) or read the value under `key`
    /// ([`Context::set`](crate::web::chain::Context::set),
    /// [`Context::get`](crate::web::chain::Context::get)): a step at the
    /// next look. Drawn, not printed.
    pub(crate) fn key_used(&self, key: &str, set: bool) {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.push((set, key.to_string()));
    }

    /// Handler `index` starts.
    pub(crate) fn enter(&mut self, index: isize) {
        let label = self.label(index);
        self.step(StepKind::Enter, format_args!("enter {label}"));
        if let Some(entered) = self.steps.last_mut() {
            entered.who = Some(index);
        }
        self.depth += 1;
        self.open.push(index);
        self.furthest = self.furthest.max(index);
    }

    /// The handler running now returned; `aborted` if the chain was stopped.
    pub(crate) fn exit(&mut self, aborted: bool) {
        let (label, mark, ended) = match self.open.last() {
            Some(&index) if aborted => (self.label(index), " [aborted]", Ended::Aborted),
            Some(&index) => (self.label(index), "", Ended::Returned),
            None => return,
        };
        self.depth = self.depth.saturating_sub(1);
        self.step(StepKind::Exit(ended), format_args!("exit  {label}{mark}"));
        self.open.pop();
    }

    /// The handler running now called `next()`; `aborted` if the chain was
    /// stopped before, so the call runs nothing. `seen`: the response's
    /// status, whether a body was written, and the keys, as they stand
    /// ([`observe`](Self::observe)).
    pub(crate) fn next_called(&mut self, aborted: bool, response: &ResponseDraft) {
        self.observe(response);
        // The engine's own first call, before any handler, is not a step.
        let Some(who) = self.current() else {
            return;
        };
        let rest = if aborted {
            " (after abort(): nothing runs)"
        } else if usize::try_from(self.furthest + 1).is_ok_and(|next| next >= self.names.len()) {
            " (nothing left to run)"
        } else {
            ""
        };
        self.step(StepKind::Next, format_args!("{who}: next(){rest}"));
    }

    /// The handler running now called `abort()`. What will not run is
    /// every handler after the furthest one that has run, whoever aborts.
    pub(crate) fn abort_called(&mut self) {
        let from = self.furthest + 1;
        let skipped: Vec<isize> = (from.max(0)..self.names.len() as isize).collect();
        let labels: Vec<String> = skipped.iter().map(|&i| self.label(i).to_string()).collect();
        let who = self.current().unwrap_or_else(|| "engine".into());
        let rest = if labels.is_empty() {
            String::from("nothing left to skip")
        } else {
            format!("{} will not run", labels.join(", "))
        };
        self.step(
            StepKind::Abort(skipped),
            format_args!("{who}: abort() ({rest})"),
        );
    }

    /// How many handlers are running, one inside the other (for [`unwound`](Self::unwound)).
    pub(crate) fn open_len(&self) -> usize {
        self.open.len()
    }

    /// The chain was unwound back to the handler that had `keep` handlers
    /// open when it called `next()`: close every handler inside it, which
    /// returned no normal way. The innermost is the one `cause` happened in;
    /// those around it were cut short in their `next()`, so their code after
    /// it never ran. Then the handler that stopped the unwinding says so.
    pub(crate) fn unwound(&mut self, keep: usize, cause: Unwound<'_>) {
        let mut innermost = true;
        while self.open.len() > keep {
            let Some(&index) = self.open.last() else {
                break;
            };
            self.depth = self.depth.saturating_sub(1);
            let label = self.label(index);
            match (innermost, cause) {
                (true, Unwound::Panic(message)) => self.step(
                    StepKind::Exit(Ended::Panicked),
                    format_args!("exit  {label} [panicked: {}]", OneLine(message)),
                ),
                (true, Unwound::TimedOut) => self.step(
                    StepKind::Exit(Ended::TimedOut),
                    format_args!("exit  {label} [stopped: the time-out ran out]"),
                ),
                (false, _) => self.step(
                    StepKind::Exit(Ended::CutShort),
                    format_args!("exit  {label} [cut short: its code after next() did not run]"),
                ),
            }
            self.open.pop();
            innermost = false;
        }
        if let Some(who) = self.current() {
            match cause {
                Unwound::Panic(_) => {
                    self.step(StepKind::Caught, format_args!("{who}: caught the panic"))
                }
                Unwound::TimedOut => self.step(
                    StepKind::Caught,
                    format_args!("{who}: the time-out ran out"),
                ),
            }
        }
    }

    /// A step of the handler running now that is not `next()` or `abort()`
    /// (recovery's 500, the time-out's answer).
    pub(crate) fn note(&mut self, what: &str) {
        let who = self.current().unwrap_or_else(|| "engine".into());
        self.step(StepKind::Note, format_args!("{who}: {what}"));
    }

    /// Close the trace with the status the chain answered.
    pub fn finish(&mut self, status: StatusCode) {
        self.depth = 0;
        let code = status.as_u16();
        self.step(StepKind::Finish(code), format_args!("=> {code}"));
    }

    /// The trace as `--trace` prints it: one step per line, indented by
    /// its depth (the drawn-only steps left out).
    pub fn text(&self) -> String {
        let mut text = String::new();
        for step in self.steps.iter().filter(|s| s.printed()) {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&"  ".repeat(step.depth));
            text.push_str(&step.text);
        }
        text
    }

    /// The steps, the drawn-only ones included.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The chain's handlers' names, in chain order.
    pub(crate) fn names(&self) -> &[Option<&'static str>] {
        &self.names
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

impl Step {
    /// Whether `--trace` prints this step (the pages draw every step).
    pub(crate) fn printed(&self) -> bool {
        !matches!(
            self.kind,
            StepKind::Wrote(_) | StepKind::KeySet | StepKind::KeyRead
        )
    }
}

/// Why a chain was unwound past its handlers' exits (see [`Trace::unwound`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unwound<'a> {
    /// A handler panicked with this message.
    Panic(&'a str),
    /// The time-out middleware dropped the rest of the chain.
    TimedOut,
}

/// A panic message on one line of at most 200 characters, escaped by the
/// one rule of every log line ([`crate::ops::log::escape_for_log`]): a
/// newline, which would start a forged log line, is written `\n`.
struct OneLine<'a>(&'a str);

impl std::fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (shown, cut) = match self.0.char_indices().nth(200) {
            Some((at, _)) => (&self.0[..at], "…"),
            None => (self.0, ""),
        };
        write!(f, "{}{cut}", crate::ops::log::escape_for_log(shown))
    }
}

/// A handler as the trace shows it: `2 token_check`, or `#2` unnamed.
pub(crate) struct Label<'n>(pub(crate) isize, pub(crate) Option<&'n str>);

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(name) => write!(f, "{} {name}", self.0),
            None => write!(f, "#{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use bytes::Bytes;
    use http::{Request, StatusCode};

    use crate::web::chain::{named, Context, Handler};
    use crate::web::middleware;

    /// Run `handlers` on `GET path` with tracing on, as the app does; the
    /// trace's lines and the log lines held behind it.
    async fn walk(path: &str, handlers: Vec<Handler>) -> (Vec<String>, String) {
        let (parts, ()) = Request::get(path).body(()).unwrap().into_parts();
        let remote = "127.0.0.1:1".parse().unwrap();
        let mut c = Context::new(
            parts,
            Bytes::new(),
            remote,
            Instant::now(),
            Vec::new(),
            handlers.into(),
        );
        c.start_trace();
        c.next().await;
        let mut t = c.take_trace().unwrap();
        t.finish(c.response_status());
        let held = String::from_utf8(t.held().to_vec()).unwrap();
        (t.text().lines().map(str::to_string).collect(), held)
    }

    fn pass(name: &'static str) -> Handler {
        named(name, |c| Box::pin(async move { c.next().await }))
    }

    #[tokio::test]
    async fn a_panic_is_the_handlers_exit_and_the_abort_and_500_are_recoverys_lines() {
        let handlers = vec![
            pass("outer"),
            middleware::recovery(),
            named("mw", |c| {
                Box::pin(async move {
                    c.next().await;
                    c.string(StatusCode::OK, "never written: the panic unwinds past it");
                })
            }),
            named("boom", |c| {
                Box::pin(async move {
                    c.string(StatusCode::OK, "partial");
                    panic!("boom went off\nsecond line");
                })
            }),
            pass("after"),
        ];
        let (lines, held) = walk("/boom", handlers).await;
        assert_eq!(
            lines,
            [
                "GET /boom (5 handlers)",
                "  enter 0 outer",
                "    0 outer: next()",
                "    enter 1 recovery",
                "      1 recovery: next()",
                "      enter 2 mw",
                "        2 mw: next()",
                "        enter 3 boom",
                r"        exit  3 boom [panicked: boom went off\nsecond line]",
                "      exit  2 mw [cut short: its code after next() did not run]",
                "      1 recovery: caught the panic",
                "      1 recovery: abort() (4 after will not run)",
                "      1 recovery: 500, empty body (what the chain wrote is discarded)",
                "    exit  1 recovery [aborted]",
                "  exit  0 outer [aborted]",
                "=> 500",
            ]
        );
        assert_eq!(
            held,
            "[recovery] GET /boom panicked: boom went off\\nsecond line\n"
        );
    }

    #[tokio::test]
    async fn abort_after_next_is_the_callers_and_next_after_abort_runs_nothing() {
        let handlers = vec![
            named("a", |c| {
                Box::pin(async move {
                    c.next().await;
                    c.abort();
                    c.next().await;
                })
            }),
            named("h", |c| {
                Box::pin(async move { c.string(StatusCode::OK, "h") })
            }),
        ];
        let (lines, _) = walk("/", handlers).await;
        assert_eq!(
            lines,
            [
                "GET / (2 handlers)",
                "  enter 0 a",
                "    0 a: next()",
                "    enter 1 h",
                "    exit  1 h",
                "    0 a: abort() (nothing left to skip)",
                "    0 a: next() (after abort(): nothing runs)",
                "  exit  0 a [aborted]",
                "=> 200",
            ]
        );
    }

    #[tokio::test]
    async fn a_time_out_closes_the_handler_it_stopped_and_aborts_as_the_time_out() {
        let handlers = vec![
            middleware::timeout(Duration::from_millis(20), |c| {
                c.string(StatusCode::GATEWAY_TIMEOUT, "too slow")
            }),
            named("slow", |c| {
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    c.next().await;
                })
            }),
            pass("last"),
        ];
        let (lines, _) = walk("/slow", handlers).await;
        assert_eq!(
            lines,
            [
                "GET /slow (3 handlers)",
                "  enter #0",
                "    #0: next()",
                "    enter 1 slow",
                "    exit  1 slow [stopped: the time-out ran out]",
                "    #0: the time-out ran out",
                "    #0: abort() (2 last will not run)",
                "  exit  #0 [aborted]",
                "=> 504",
            ]
        );
    }
}
