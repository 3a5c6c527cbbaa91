//! The two default middleware, request logger and panic recovery, and an
//! optional per-request timeout.
//!
//! Both are ordinary [`Handler`](crate::web::chain::Handler)s that wrap
//! `c.next().await`, which is the whole point of the Next mechanism: code
//! before `next()` runs on the way in, code after it on the way out.

use std::any::Any;
use std::future::Future;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant, SystemTime};

use http::StatusCode;

use crate::types::BoxFuture;
use crate::web::chain::{handler, Context, Handler};

/// Logs one line per request after the rest of the chain has run:
/// `[handwire] 2026/11/21 - 23:59:01 | 200 |    1.234ms |       127.0.0.1 | GET      "/hello"`
pub fn logger(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let start = Instant::now();
        c.next().await;
        let line = format!(
            "[handwire] {} | {:3} | {:>12?} | {:>15} | {:<7} \"{}\"\n",
            crate::web::timefmt::log_timestamp(SystemTime::now()),
            c.response_status().as_u16(),
            start.elapsed(),
            c.client_ip(),
            c.method().as_str(),
            c.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        );
        // One write call per line so concurrent requests do not interleave.
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    })
}

/// Turns a panic anywhere later in the chain into a 500 and a log line; the
/// connection and the server keep going.
pub fn recovery(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let outcome = CatchUnwind(c.next()).await;
        if let Err(payload) = outcome {
            eprintln!(
                "[recovery] {} {} panicked: {}",
                c.method(),
                c.path(),
                panic_message(payload.as_ref())
            );
            c.clear_response();
            c.abort_with_status(StatusCode::INTERNAL_SERVER_ERROR);
        }
    })
}

/// Gives the rest of the chain at most `d`. Past it, the rest is dropped
/// where it stands (its half-written response discarded), `on_timeout`
/// writes the answer and the chain is aborted, so middleware before this one,
/// such as the logger, still sees the request finish.
pub fn timeout(d: Duration, on_timeout: fn(&mut Context)) -> Handler {
    handler(move |c| {
        Box::pin(async move {
            if tokio::time::timeout(d, c.next()).await.is_err() {
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
/// future (the futures crate's `catch_unwind`, in ten lines).
struct CatchUnwind<F>(F);

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
