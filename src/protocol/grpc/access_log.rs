//! One log line per gRPC call, written when the call's status is known.
//!
//! A call's status travels in its trailers: in the response headers for a
//! Trailers-Only error, otherwise in the trailers frame after the last DATA
//! frame, which for a stream may come long after the handler returned. So
//! the line is written by a body wrapper when that frame passes through, and
//! it always carries the real `grpc-status`:
//!
//! `[grpc] 2026/11/21 - 23:59:01 | OK | 1.234ms | 127.0.0.1 | /helloworld.v1.Greeter/SayHello | trace_id=4bf9…4736`
//!
//! The same moment counts the call in the method's metrics series, when the
//! server has a registry ([`crate::ops::metrics`]): `code` is the number of
//! the final `grpc-status`, `reason` its name (empty for OK). With the access
//! log off (`--no-access-log`) the call is still counted, and a call with
//! neither is not wrapped at all.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

use super::headers::GRPC_STATUS;
use super::status::Code;
use crate::ops::metrics::Operation;
use crate::ops::tracecontext::{self, TraceContext};
use crate::ops::{log, timefmt};
use crate::types::{Body, BoxError};
use crate::web::middleware::LOG_TARGET_MAX;

/// What the log line needs to know about one call.
#[derive(Debug)]
struct Call {
    start: Instant,
    remote: SocketAddr,
    path: Arc<str>,
    operation: Option<Arc<Operation>>,
    /// The call's trace, taken when it starts: the line is written later,
    /// by the body, outside the call's task-local scope.
    trace: Option<TraceContext>,
    /// Whether the line is written (else the call is only counted).
    log: bool,
}

impl Call {
    /// Log the line and count the call as ending with `code`.
    fn write(&self, outcome: &str, code: Code) {
        // One clock read for both the metric and the line.
        let now = Instant::now();
        let took = now.saturating_duration_since(self.start);
        if let Some(op) = &self.operation {
            let reason = if code == Code::Ok { "" } else { code.name() };
            op.observe(code as u16, reason, took);
        }
        if !self.log {
            return;
        }
        let trace = self.trace.map(|t| format!(" | trace_id={}", t.trace_id()));
        let line = format!(
            "[grpc] {} | {outcome} | {took:?} | {} | {}{}\n",
            timefmt::log_timestamp(SystemTime::now()),
            self.remote.ip(),
            log::capped(&self.path, LOG_TARGET_MAX),
            trace.unwrap_or_default(),
        );
        log::stdout().line(|buf| buf.extend_from_slice(line.as_bytes()));
    }
}

/// The `grpc-status` in `headers`, read once: its name for the line (if
/// present) and its code (`Unknown` when absent or bad).
fn status(headers: &HeaderMap) -> (Option<Cow<'static, str>>, Code) {
    let Some(value) = headers.get(&GRPC_STATUS) else {
        return (None, Code::Unknown);
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    match text.parse::<i32>() {
        Ok(n) => {
            let code = Code::from_i32(n);
            (Some(Cow::Borrowed(code.name())), code)
        }
        Err(_) => (
            Some(Cow::Owned(format!("grpc-status {text:?}"))),
            Code::Unknown,
        ),
    }
}

/// Log `response` (the answer to `path` from `remote`, begun at `start`) once
/// its status is known if `log`, and count it in `operation` if given.
pub fn wrap(
    response: Response<Body>,
    path: Arc<str>,
    remote: SocketAddr,
    start: Instant,
    operation: Option<Arc<Operation>>,
    log: bool,
) -> Response<Body> {
    if !log && operation.is_none() {
        return response;
    }
    let call = Call {
        start,
        remote,
        path,
        operation,
        trace: if log { tracecontext::current() } else { None },
        log,
    };
    if let (Some(outcome), code) = status(response.headers()) {
        call.write(&outcome, code); // Trailers-Only
        return response;
    }
    if !response.status().is_success() {
        call.write(
            &format!("HTTP {}", response.status().as_u16()),
            Code::Unknown,
        );
        return response;
    }
    response.map(|body| {
        LoggedBody {
            inner: body,
            call: Some(call),
        }
        .boxed_unsync()
    })
}

/// A response body that writes the log line when the trailers pass, or
/// when it is dropped before they did (client gone, stream reset).
struct LoggedBody {
    inner: Body,
    call: Option<Call>,
}

impl HttpBody for LoggedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(trailers) = frame.trailers_ref() {
                if let Some(call) = self.call.take() {
                    let (outcome, code) = status(trailers);
                    call.write(&outcome.unwrap_or("no grpc-status".into()), code);
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            call.write("ended without status (client gone)", Code::Cancelled);
        }
    }
}
