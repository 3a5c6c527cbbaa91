//! The two default middleware, request logger and panic recovery, and an
//! optional per-request timeout.
//!
//! Both are ordinary [`Handler`](crate::web::chain::Handler)s that wrap
//! `c.next().await`, which is the whole point of the Next mechanism: code
//! before `next()` runs on the way in, code after it on the way out.

use std::any::Any;
use std::future::Future;
use std::io::Write;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant, SystemTime};

use http::{Method, StatusCode, Uri};

use crate::types::BoxFuture;
use crate::web::chain::{handler, Context, Handler};
use crate::web::{log, timefmt, urlenc};

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

/// Logs one line per request after the rest of the chain has run:
/// `[handwire] 2026/11/21 - 23:59:01 | 200 |    1.234ms |       127.0.0.1 | GET      "/hello"`
///
/// The line goes to the process-wide [`log::stdout`] sink, so it costs no
/// syscall here and a slow reader never blocks the request.
pub fn logger(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let start = Instant::now();
        c.next().await;
        log_request(
            log::stdout(),
            c.response_status(),
            start.elapsed(),
            c.client_ip(),
            c.method(),
            c.uri(),
        );
    })
}

/// Write one request-log line to `sink` (also used for the answers the
/// engine gives before any chain runs: 400, 413, 408).
pub fn log_request(
    sink: &log::Sink,
    status: StatusCode,
    latency: Duration,
    ip: IpAddr,
    method: &Method,
    uri: &Uri,
) {
    sink.line(|buf| {
        buf.extend_from_slice(b"[handwire] ");
        timefmt::push_log_timestamp(buf, SystemTime::now());
        let _ = write!(
            buf,
            " | {:3} | {:>12?} | {:>15} | {:<7} \"",
            status.as_u16(),
            latency,
            ip,
            method.as_str(),
        );
        push_redacted_target(buf, uri, LOG_TARGET_MAX);
        buf.extend_from_slice(b"\"\n");
    });
}

/// Append the path and query of `uri` with the values of
/// [`REDACTED_PARAMS`] replaced by `REDACTED`, capped at `max` bytes.
pub fn push_redacted_target(buf: &mut Vec<u8>, uri: &Uri, max: usize) {
    let path = uri.path();
    let Some(query) = uri.query() else {
        log::push_capped(buf, path, max);
        return;
    };
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
    log::push_capped(buf, &target, max);
}

/// Turns a panic anywhere later in the chain into a 500 and a log line; the
/// connection and the server keep going.
pub fn recovery(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let outcome = CatchUnwind(c.next()).await;
        if let Err(payload) = outcome {
            let message = panic_message(payload.as_ref());
            log::stdout().line(|buf| {
                let _ = write!(buf, "[recovery] {} ", c.method());
                log::push_capped(buf, c.path(), LOG_TARGET_MAX);
                let _ = writeln!(buf, " panicked: {message}");
            });
            c.clear_response();
            c.abort_with_status(StatusCode::INTERNAL_SERVER_ERROR);
        }
    })
}

/// Gives the request at most `d`, counted from the arrival of its head (see
/// [`Context::received_at`]), so the time spent reading the body counts too.
/// Past it, the rest of the chain is dropped
/// where it stands (its half-written response discarded), `on_timeout`
/// writes the answer and the chain is aborted, so middleware before this one,
/// such as the logger, still sees the request finish.
pub fn timeout(d: Duration, on_timeout: fn(&mut Context)) -> Handler {
    handler(move |c| {
        Box::pin(async move {
            let deadline = tokio::time::Instant::from_std(c.received_at() + d);
            if tokio::time::timeout_at(deadline, c.next()).await.is_err() {
                c.clear_response();
                on_timeout(c);
                c.abort();
            }
        })
    })
}

/// The text of a panic payload (`panic!("...")` gives `&str` or `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}

/// A future adapter that catches a panic raised while polling the inner
/// future (the futures crate's `catch_unwind`, in ten lines). The one panic
/// isolation of the crate: recovery uses it for the HTTP chain, the gRPC
/// server for each call.
pub struct CatchUnwind<F>(pub F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_message_reads_str_and_string_payloads() {
        let a: Box<dyn Any + Send> = Box::new("boom");
        let b: Box<dyn Any + Send> = Box::new(String::from("bang"));
        let c: Box<dyn Any + Send> = Box::new(7u8);
        assert_eq!(panic_message(a.as_ref()), "boom");
        assert_eq!(panic_message(b.as_ref()), "bang");
        assert_eq!(panic_message(c.as_ref()), "non-string panic payload");
    }
}
