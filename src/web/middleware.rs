//! The two default middleware, request logger and panic recovery, and an
//! optional per-request timeout.
//!
//! Both are ordinary [`Handler`](crate::web::chain::Handler)s around the
//! rest of the chain, which is the whole point of the Next mechanism: code
//! before `next()` runs on the way in, code after it on the way out. The
//! logger is `c.next().await` followed by its line; recovery is a catch
//! around `c.next()` (`catch_rest`, the body of every [`catching`] handler).

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use http::{StatusCode, Uri};

use crate::ops::{log, timefmt};
#[cfg(doc)]
use crate::web::chain::catching;
use crate::web::chain::{catch_rest, handler, named, Context, Handler};
use crate::web::trace::Unwound;
use crate::web::urlenc;

/// Longest path-and-query written to a log line; past it the text is cut
/// (user input must not make log lines, or the log buffer, unbounded).
pub const LOG_TARGET_MAX: usize = 512;

/// Longest method written to a log line: a client may send any token as a
/// method (`X|-200-|…`, 120,000 bytes); past it the text is cut, and it is
/// escaped as the path is.
pub const LOG_METHOD_MAX: usize = 32;

/// Query parameters whose values never reach a log line. A key matches
/// once decoded, in any case, with control bytes or spaces appended
/// (`Token`, `to%6Ben`, `password%00`): a server may well read those as the
/// parameter, so the log must not tell them apart.
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

/// The logger's line, written when the rest of the chain has ended: the
/// same text as Gin's `LoggerWithFormatter` writes with `fmt.Sprintf`.
fn log_line(c: &mut Context) {
    let line = format!(
        "[{}] {} | {} | {:>12?} | {:>15} | {:<7} \"{}\"{}\n",
        log::service_name(),
        timefmt::log_timestamp(SystemTime::now()),
        c.response_status().as_str(),
        // From the request's arrival, not from the logger's start: the
        // engine reads the body before the chain runs, and Gin's latency
        // (its handlers read the body) includes it.
        c.latency(),
        c.client_ip(),
        log::capped(c.method().as_str(), LOG_METHOD_MAX),
        redacted_target(c.uri(), LOG_TARGET_MAX),
        c.trace_context()
            .map_or(String::new(), |t| format!(" | trace_id={}", t.trace_id())),
    );
    if c.is_tracing() {
        c.hold_after_trace(line.into_bytes());
    } else {
        log::stdout().line(|buf| buf.extend_from_slice(line.as_bytes()));
    }
}

/// The path and query of `uri` with the values of [`REDACTED_PARAMS`]
/// replaced by `REDACTED`, capped at `max` bytes ([`log::capped`]).
pub fn redacted_target(uri: &Uri, max: usize) -> Cow<'_, str> {
    match uri.query() {
        None => log::capped(uri.path(), max),
        Some(query) => Cow::Owned(log::capped(&redacted(uri.path(), query), max).into_owned()),
    }
}

/// `path?query` with the values of [`REDACTED_PARAMS`] replaced.
fn redacted(path: &str, query: &str) -> String {
    let mut target = String::with_capacity(path.len() + 1 + query.len());
    target.push_str(path);
    target.push('?');
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            target.push('&');
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if is_redacted(key) && !value.is_empty() {
            target.push_str(key);
            target.push_str("=REDACTED");
        } else {
            target.push_str(pair);
        }
    }
    target
}

/// Whether the raw query `key` names one of [`REDACTED_PARAMS`]: decoded,
/// trailing control bytes and spaces dropped, compared ignoring case.
fn is_redacted(key: &str) -> bool {
    let decoded = urlenc::unescape(key.as_bytes(), true);
    let end = decoded
        .iter()
        .rposition(|&b| !(b.is_ascii_control() || b == b' '))
        .map_or(0, |last| last + 1);
    let name = &decoded[..end];
    REDACTED_PARAMS
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p.as_bytes()))
}

/// Turns a panic anywhere later in the chain into a 500 with an empty body
/// (what the chain had written is discarded) and a `[recovery]` log line;
/// the connection and the server keep going. The abort and the 500 are
/// recovery's own: with `--trace` they are its lines, and the handler that
/// panicked exits `[panicked: …]`.
///
/// It is a catch around `c.next()`, written out as an async body as the
/// logger is: `catch_rest`, the body of every [`catching`] handler (Gin's
/// `defer`/`recover()` around `c.Next()`), with [`recovered`] as its code.
pub fn recovery() -> Handler {
    named("recovery", |c| Box::pin(catch_rest(c, recovered)))
}

/// Recovery's code once the rest of the chain panicked with `message`
/// (the chain has put the index back at recovery's and traced the catch).
fn recovered(c: &mut Context, message: &str) {
    // A message may carry request data: on one line, bounded.
    let mut line = format!(
        "[recovery] {} {} panicked: {}",
        log::capped(c.method().as_str(), LOG_METHOD_MAX),
        log::capped(c.path(), LOG_TARGET_MAX),
        log::capped(message, log::MESSAGE_MAX),
    )
    .into_bytes();
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use bytes::Bytes;
    use http::{Method, Request};

    use super::*;
    use crate::web::chain::named;

    /// Issue 57: a method such as `X|-200-|-6.6.6.6-|-GET-admin`, or one
    /// 120,000 bytes long, was copied raw into the access and `[recovery]`
    /// lines.
    #[tokio::test]
    async fn the_access_and_recovery_lines_escape_and_cap_the_method() {
        let forged = "X|-200-|-6.6.6.6-|-GET-admin";
        let long = "M".repeat(120_000);
        for method in [forged, long.as_str()] {
            let request = Request::builder()
                .method(Method::from_bytes(method.as_bytes()).unwrap())
                .uri("/boom")
                .body(())
                .unwrap();
            let handlers: Vec<Handler> = vec![
                logger(),
                recovery(),
                named("boom", |_| Box::pin(async move { panic!("boom") })),
            ];
            let mut c = Context::new(
                request.into_parts().0,
                Bytes::new(),
                "127.0.0.1:1".parse().unwrap(),
                Instant::now(),
                Vec::new(),
                handlers.into(),
            );
            // Traced, the lines are held behind the trace, where a test
            // can read them.
            c.start_trace();
            c.next().await;
            let trace = c.take_trace().unwrap();
            let held = String::from_utf8(trace.held().to_vec()).unwrap();
            let lines: Vec<&str> = held.lines().collect();
            assert_eq!(lines.len(), 2, "{held:.400}");
            let (recovered, access) = (lines[0], lines[1]);
            assert!(recovered.starts_with("[recovery] "), "{recovered:.200}");
            for line in [recovered, access] {
                assert!(line.len() < 4_096, "a line of {} bytes", line.len());
                assert!(!line.contains(forged), "{line}");
            }
            assert_eq!(access.matches(" | ").count(), 4, "{access}");
            if method == forged {
                let escaped = r"X\u{7c}-200-\u{7c}-6.6.6.6-\u{7c}-GET-admin";
                assert!(recovered.starts_with(&format!("[recovery] {escaped} /boom ")));
                assert!(
                    access.contains(&format!("| {escaped} \"/boom\"")),
                    "{access}"
                );
            } else {
                assert!(recovered.contains("MMM… /boom panicked"), "{recovered}");
            }
        }
    }

    /// Issue 57: `Token=` and `password%00=` were logged while `token=` was
    /// redacted; every key of [`REDACTED_PARAMS`] in every spelling a
    /// server might take for it is.
    #[test]
    fn query_redaction_ignores_case_escapes_and_trailing_control_bytes_for_every_key() {
        for param in REDACTED_PARAMS {
            let upper = param.to_ascii_uppercase();
            let first_escaped = format!("%{:02X}{}", param.as_bytes()[0], &param[1..]);
            let spellings = [
                param.to_string(),
                upper.clone(),
                format!("{}{}", &upper[..1], &param[1..]),
                first_escaped,
                format!("{param}%00"),
                format!("{upper}%00%00"),
                format!("{param}%09"),
                format!("{param}%1f"),
                format!("{param}%7F"),
                format!("{param}%0D%0A"),
            ];
            for key in spellings {
                let target = redacted("/p", &format!("a=1&{key}=SECRET&b=2"));
                assert_eq!(target, format!("/p?a=1&{key}=REDACTED&b=2"), "{key}");
            }
        }
        // Other keys, and a control byte inside a key, are left alone.
        for key in ["tokens", "my_token", "pass%00word", "%00token", "code2"] {
            let target = redacted("/p", &format!("{key}=v"));
            assert_eq!(target, format!("/p?{key}=v"), "{key}");
        }
    }
}
