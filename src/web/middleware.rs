//! The two default middleware, request logger and panic recovery, and an
//! optional per-request timeout.
//!
//! Both are ordinary [`Handler`](crate::web::chain::Handler)s around the
//! rest of the chain, which is the whole point of the Next mechanism: code
//! before `next()` runs on the way in, code after it on the way out. The
//! logger is `c.next().await` followed by its line; recovery is a catch
//! around `c.next()` ([`catching`]).

use std::io::Write;
use std::time::{Duration, SystemTime};

use http::{StatusCode, Uri};

use crate::ops::{log, timefmt, tracecontext};
use crate::web::chain::{catching, handler, named, Context, Handler};
use crate::web::trace::Unwound;
use crate::web::urlenc;

/// Longest path-and-query written to a log line; past it the text is cut
/// (user input must not make log lines, or the log buffer, unbounded).
pub const LOG_TARGET_MAX: usize = 512;

/// Query parameters whose values never reach a log line.
pub const REDACTED_PARAMS: [&str; 6] = [
    "code",
    "state",
    "token",
    "access_token",
    "refresh_token",
    "password",
];

/// Logs one line per request after the rest of the chain has run, starting
/// with the service's name ([`log::set_service_name`]):
/// `[router-demo] 2026/11/21 - 23:59:01 | 200 |    1.234ms |       127.0.0.1 | GET      "/hello" | trace_id=4bf9…4736`
/// (the trace-id when the request runs in a trace, as every request the
/// server accepts does: [`crate::ops::tracecontext`])
///
/// The line goes to the process-wide [`log::stdout`] sink, so it costs no
/// syscall here and a slow reader never blocks the request.
///
/// With `--trace` the line is held and written after the request's trace,
/// since this outer handler is the last to finish.
///
/// All its code runs after the rest of the chain: `c.next().await`, then
/// the line.
pub fn logger() -> Handler {
    named("logger", |c| {
        Box::pin(async move {
            c.next().await;
            log_line(c);
        })
    })
}

/// The logger's line, written when the rest of the chain has ended.
fn log_line(c: &mut Context) {
    // From the request's arrival, not from here: the engine reads the
    // body before the chain runs, and Gin's latency (its handlers read
    // the body) includes it. It also spares a clock read per request.
    let latency = c.latency();
    if c.is_tracing() {
        let mut line = Vec::new();
        push_request_line(&mut line, c, latency);
        c.hold_after_trace(line);
    } else {
        log::stdout().line(|buf| push_request_line(buf, c, latency));
    }
}

/// Append the request's log line to `buf`: the same text as Gin's
/// `LoggerWithFormatter` writes with `fmt.Sprintf`, written without
/// `core::fmt`, which cost about 5,700 instructions a request here, more
/// than a third of all the rest (`docs/load.md`).
fn push_request_line(buf: &mut Vec<u8>, c: &Context, latency: Duration) {
    use crate::ops::numfmt::{push_ip, push_latency};
    buf.push(b'[');
    buf.extend_from_slice(log::service_name().as_bytes());
    buf.extend_from_slice(b"] ");
    timefmt::push_log_timestamp(buf, SystemTime::now());
    buf.extend_from_slice(b" | ");
    buf.extend_from_slice(c.response_status().as_str().as_bytes());
    buf.extend_from_slice(b" | ");
    push_latency(buf, latency, 12);
    buf.extend_from_slice(b" | ");
    push_ip(buf, c.client_ip(), 15);
    buf.extend_from_slice(b" | ");
    let method = c.method().as_str();
    buf.extend_from_slice(method.as_bytes());
    buf.resize(buf.len() + 7usize.saturating_sub(method.len()), b' ');
    buf.extend_from_slice(b" \"");
    push_redacted_target(buf, c.uri(), LOG_TARGET_MAX);
    buf.push(b'"');
    if let Some(trace) = tracecontext::current() {
        buf.extend_from_slice(b" | trace_id=");
        trace.push_trace_id(buf);
    }
    buf.push(b'\n');
}

/// Append the path and query of `uri` with the values of
/// [`REDACTED_PARAMS`] replaced by `REDACTED`, capped at `max` bytes.
pub fn push_redacted_target(buf: &mut Vec<u8>, uri: &Uri, max: usize) {
    match uri.query() {
        None => log::push_capped(buf, uri.path(), max),
        Some(query) => log::push_capped(buf, &redacted_target(uri.path(), query), max),
    }
}

/// `path?query` with the values of [`REDACTED_PARAMS`] replaced.
fn redacted_target(path: &str, query: &str) -> String {
    let mut target = String::with_capacity(path.len() + 1 + query.len());
    target.push_str(path);
    target.push('?');
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            target.push('&');
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let secret = REDACTED_PARAMS
            .iter()
            .any(|p| urlenc::unescape(key.as_bytes(), true) == p.as_bytes());
        if secret && !value.is_empty() {
            target.push_str(key);
            target.push_str("=REDACTED");
        } else {
            target.push_str(pair);
        }
    }
    target
}

/// Turns a panic anywhere later in the chain into a 500 with an empty body
/// (what the chain had written is discarded) and a `[recovery]` log line;
/// the connection and the server keep going. The abort and the 500 are
/// recovery's own: with `--trace` they are its lines, and the handler that
/// panicked exits `[panicked: …]`.
///
/// It is a catch around `c.next()` ([`catching`]): Gin's
/// `defer`/`recover()` around `c.Next()`.
pub fn recovery() -> Handler {
    catching("recovery", recovered)
}

/// Recovery's code once the rest of the chain panicked with `message`
/// (the chain has put the index back at recovery's and traced the catch).
fn recovered(c: &mut Context, message: &str) {
    let mut line = Vec::new();
    let _ = write!(line, "[recovery] {} ", c.method());
    log::push_capped(&mut line, c.path(), LOG_TARGET_MAX);
    // A message may carry request data: on one line, bounded.
    line.extend_from_slice(b" panicked: ");
    log::push_capped(&mut line, message, log::MESSAGE_MAX);
    log::push_trace_id(&mut line);
    line.push(b'\n');
    // With --trace the line follows the trace, as the logger's does.
    if let Some(line) = c.hold_after_trace(line) {
        log::stdout().line(|buf| buf.extend_from_slice(&line));
    }
    c.clear_response();
    c.abort_with_status(StatusCode::INTERNAL_SERVER_ERROR);
    c.trace_note("500, empty body (what the chain wrote is discarded)");
}

pub use crate::web::unwind::{panic_message, CatchUnwind};

/// Gives the request at most `d`, counted from the arrival of its head (see
/// [`Context::received_at`]), so the time spent reading the body counts too.
/// Past it, the rest of the chain is dropped
/// where it stands (its half-written response discarded), `on_timeout`
/// writes the answer and the chain is aborted, so middleware before this one,
/// such as the logger, still sees the request finish. A write already in its
/// committing transaction is the exception: the chain runs on and answers
/// with the commit's outcome ([`crate::ops::deadline`]).
pub fn timeout(d: Duration, on_timeout: fn(&mut Context)) -> Handler {
    handler(move |c| {
        Box::pin(async move {
            let at = c.received_at() + d;
            let mark = c.mark();
            let expired = {
                let next = std::pin::pin!(c.next());
                crate::ops::deadline::run(at, next).await.is_err()
            };
            // The rest of the chain was dropped at the end of the block.
            if expired {
                c.unwound_to(mark, Unwound::TimedOut);
                c.clear_response();
                on_timeout(c);
                c.abort();
            }
        })
    })
}
