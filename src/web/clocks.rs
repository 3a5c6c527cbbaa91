//! The clocks of one connection: how long it may take to send a request
//! head, and how long it may sit idle between requests.
//!
//! hyper's own HTTP/1 header time-out cannot do this job: its clock starts
//! when hyper starts reading a head, and behind hyper-util's auto builder
//! that is only once the first bytes have arrived (the builder must read
//! them to tell HTTP/1 from the HTTP/2 preface). A client that connects and
//! says nothing is never timed out, and neither is an h2c connection that
//! sent its preface and no request. So the server keeps the clocks itself,
//! in the shape of Go's `net/http` (`ReadHeaderTimeout`, `IdleTimeout`),
//! each starting at a moment one can name:
//!
//! ```text
//! accept ─────────── first request head ── … response ends ─── first byte ── head
//!   └── header_read_timeout ──┘              └─ idle_timeout ─┘└─ header_read_timeout ─┘
//! ```
//!
//! While a request is in flight (from its head until its response body has
//! been sent or dropped) no clock runs: how long a handler or a body may take
//! is the business of the engine's body time-out and of the services' own
//! time-outs. On HTTP/2 only the idle clock runs after the first request:
//! an h2 client sends PINGs and WINDOW_UPDATEs while idle, so "first byte"
//! means nothing there.
//!
//! [`Activity`] is shared by three parties: the IO wrapper [`Watched`] notes
//! bytes read, the server's service wrapper notes requests starting (an
//! [`InFlight`] guard that travels with the response body as [`Tracked`]),
//! and the connection task waits on [`Activity::expired`].

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
// tokio's clock, so that the tests can run it paused.
use tokio::time::Instant;

use crate::types::{Body, BoxError};

/// What one connection has been doing, and when.
pub struct Activity {
    header_read_timeout: Duration,
    idle_timeout: Duration,
    state: Mutex<State>,
    /// Wakes [`Activity::expired`] when the deadline may have moved.
    changed: Notify,
}

struct State {
    /// Requests whose response is not finished yet.
    in_flight: usize,
    /// Requests started so far.
    requests: u64,
    /// Whether the requests come over HTTP/2 (known from the first one).
    h2: bool,
    /// When the connection last became idle (accept, or a response ended).
    idle_since: Instant,
    /// The first byte read since then (HTTP/1 only).
    first_byte: Option<Instant>,
}

impl Activity {
    /// A new connection, accepted now.
    pub fn new(header_read_timeout: Duration, idle_timeout: Duration) -> Arc<Activity> {
        Arc::new(Activity {
            header_read_timeout,
            idle_timeout,
            state: Mutex::new(State {
                in_flight: 0,
                requests: 0,
                h2: false,
                idle_since: Instant::now(),
                first_byte: None,
            }),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a few counters; a panic elsewhere cannot leave it
        // half-updated in a way that matters, so a poisoned lock is used.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request head has arrived; the returned guard ends the request when
    /// dropped (attach it to the response body with [`Tracked`]).
    pub(crate) fn request_started(self: &Arc<Self>, version: http::Version) -> InFlight {
        let mut st = self.lock();
        st.in_flight += 1;
        st.requests += 1;
        st.h2 = version == http::Version::HTTP_2;
        drop(st);
        self.changed.notify_one();
        InFlight(self.clone())
    }

    fn request_finished(&self) {
        let mut st = self.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        if st.in_flight == 0 {
            st.idle_since = Instant::now();
            st.first_byte = None;
        }
        drop(st);
        self.changed.notify_one();
    }

    /// Bytes arrived. On an idle HTTP/1 connection this is the start of the
    /// next request: its head now has `header_read_timeout`.
    fn bytes_read(&self) {
        let mut st = self.lock();
        if st.requests > 0 && !st.h2 && st.in_flight == 0 && st.first_byte.is_none() {
            st.first_byte = Some(Instant::now());
            drop(st);
            self.changed.notify_one();
        }
    }

    /// When the connection must be closed if nothing changes; `None` while
    /// a request is in flight.
    fn deadline(&self) -> Option<Instant> {
        let st = self.lock();
        if st.in_flight > 0 {
            None
        } else if st.requests == 0 {
            Some(st.idle_since + self.header_read_timeout)
        } else if let Some(first) = st.first_byte {
            Some(first + self.header_read_timeout)
        } else {
            Some(st.idle_since + self.idle_timeout)
        }
    }

    /// Completes once a clock has run out: no request head in time after
    /// accept or after a first byte, or idle for too long.
    pub async fn expired(&self) {
        loop {
            // `notify_one` keeps a permit when nobody waits, so a change
            // between reading the deadline and waiting is not lost.
            let changed = self.changed.notified();
            match self.deadline() {
                Some(at) if at <= Instant::now() => return,
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// One request in flight; ends it when dropped.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_finished();
    }
}

/// A response body that keeps its request in flight until hyper has sent
/// it (or given up on it) and dropped it: "the end of the response".
pub struct Tracked {
    inner: Body,
    _request: InFlight,
}

impl Tracked {
    /// `body`, keeping `request` in flight while it lives.
    pub fn new(body: Body, request: InFlight) -> Tracked {
        Tracked {
            inner: body,
            _request: request,
        }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A socket that reports the bytes it reads to its connection's [`Activity`].
pub struct Watched<S> {
    io: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    /// Wrap `io`, reporting to `activity`.
    pub fn new(io: S, activity: Arc<Activity>) -> Watched<S> {
        Watched { io, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real time, small clocks: the bounds leave room for a loaded machine.
    const HEADER: Duration = Duration::from_millis(100);
    const IDLE: Duration = Duration::from_millis(400);

    async fn time_to_expiry(a: &Activity) -> Duration {
        let t0 = Instant::now();
        a.expired().await;
        t0.elapsed()
    }

    fn about(got: Duration, want: Duration) -> bool {
        got >= want && got < want + Duration::from_millis(250)
    }

    #[tokio::test]
    async fn the_first_request_clock_starts_at_accept() {
        let a = Activity::new(HEADER, IDLE);
        let took = time_to_expiry(&a).await;
        assert!(about(took, HEADER), "{took:?}");
    }

    #[tokio::test]
    async fn no_clock_runs_while_a_request_is_in_flight() {
        let a = Activity::new(HEADER, IDLE);
        let request = a.request_started(http::Version::HTTP_11);
        let waited = tokio::time::timeout(IDLE * 2, a.expired()).await;
        assert!(waited.is_err(), "a clock ran during the request");
        drop(request);
        let took = time_to_expiry(&a).await;
        assert!(
            about(took, IDLE),
            "idle clock from the response's end: {took:?}"
        );
    }

    #[tokio::test]
    async fn a_first_byte_after_idle_starts_the_header_clock_on_http1_only() {
        for (version, want) in [
            (http::Version::HTTP_11, HEADER),
            (http::Version::HTTP_2, IDLE),
        ] {
            let a = Activity::new(HEADER, IDLE);
            drop(a.request_started(version));
            a.bytes_read();
            let took = time_to_expiry(&a).await;
            assert!(about(took, want), "{version:?}: {took:?}");
        }
    }
}
