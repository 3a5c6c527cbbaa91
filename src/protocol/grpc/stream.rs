//! The two ends a handler works with: [`Streaming`], the request messages
//! cut out of the body as they arrive (inflated when the call is
//! compressed), and [`Sink`], where a streaming handler writes its replies
//! (compressed when the client takes gzip and a reply is over 1 KiB).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::BodyExt;
use hyper::body::Frame as HttpFrame;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::compression::{self, Encoding};
use super::frame::{Decoder, Frame, FrameError};
use super::status::{Code, Status};
use crate::server::clocks::Receiving;
use crate::server::governor::ConnectionShare;
use crate::server::intake;
use crate::types::BoxError;

/// The request body as the dispatcher sees it (boxed so tests can feed any body).
pub type RequestBody = UnsyncBoxBody<Bytes, BoxError>;

/// The request messages of a call, cut out of the body as they arrive.
pub struct Streaming {
    body: RequestBody,
    decoder: Decoder,
    ended: bool,
    encoding: Option<Encoding>,
    max_message_size: usize,
    /// The connection's allowance of inflated bytes, and the process'
    /// account of request bytes being received (`None`: neither).
    share: Option<Arc<ConnectionShare>>,
    /// Bytes of the decoder's buffer held on that account.
    held: usize,
    /// Least average rate of a message being received, bytes a second, and
    /// the time it may take at any rate first (`None`: no minimum).
    min_rate: Option<(u32, Duration)>,
    /// When the first byte of the message being received came (`None`:
    /// no message is partly received).
    partial_since: Option<Instant>,
    /// Whether a message being waited for counts on the connection for the
    /// cap ([`Streaming::counted`]), and its count while it arrives.
    counted: bool,
    arriving: Option<Receiving>,
}

impl Streaming {
    /// Reads `body` with messages of at most `max_message_size` bytes.
    pub fn new(body: RequestBody, max_message_size: usize) -> Streaming {
        Streaming {
            body,
            decoder: Decoder::new(max_message_size),
            ended: false,
            encoding: None,
            max_message_size,
            share: None,
            held: 0,
            min_rate: None,
            partial_since: None,
            counted: false,
            arriving: None,
        }
    }

    /// The same stream, each message it waits for counted on the
    /// connection for the cap while it arrives (its `Receiving`): a unary
    /// call's, whose handler has not started, so that a client sending it
    /// below the minimum rate is not busy. A streaming call has its
    /// response open meanwhile, which the cap counts instead.
    pub fn counted(mut self) -> Streaming {
        self.counted = true;
        self
    }

    /// The same stream, a message refused with `DEADLINE_EXCEEDED` once,
    /// after `grace` from its first byte, it has arrived slower than
    /// `bytes_per_second` on average (Kestrel's minimum request body data
    /// rate, per message). Only a message partly received is timed: a
    /// stream idle between messages is the client's to keep (its call
    /// deadline and the long-lived stream rules bound it).
    pub fn with_min_rate(mut self, bytes_per_second: u32, grace: Duration) -> Streaming {
        self.min_rate = (bytes_per_second > 0).then_some((bytes_per_second, grace));
        self
    }

    /// When the message being received must have more bytes by to keep
    /// the minimum rate (`None`: no message is partly received, or no
    /// minimum).
    fn rate_due(&mut self) -> Option<RateDue> {
        let (rate, grace) = self.min_rate?;
        let partial = self.decoder.buffered();
        if partial == 0 {
            self.partial_since = None;
            return None;
        }
        let since = *self.partial_since.get_or_insert_with(Instant::now);
        Some(RateDue {
            at: intake::rate_due(since, partial, rate, grace),
            since,
            partial,
            rate,
            grace,
        })
    }

    /// Bring what the decoder buffers on the process account up to date;
    /// `false` if the account cannot take more.
    fn hold_buffered(&mut self) -> bool {
        let now = self.decoder.buffered();
        let Some(share) = self.share.as_ref() else {
            return true;
        };
        let account = share.bodies();
        if now > self.held {
            if !account.take(now - self.held) {
                return false;
            }
        } else {
            account.give_back(self.held - now);
        }
        self.held = now;
        true
    }

    /// The same stream, inflating its messages at the pace `share` allows.
    pub fn with_share(mut self, share: Option<Arc<ConnectionShare>>) -> Streaming {
        self.share = share;
        self
    }

    /// The same stream, its compressed messages in `encoding` (the call's
    /// `grpc-encoding`; `None` when absent).
    pub fn with_encoding(mut self, encoding: Option<Encoding>) -> Streaming {
        self.encoding = encoding;
        self
    }

    /// The next message, `None` once the client has half-closed the stream.
    pub async fn message(&mut self) -> Result<Option<Bytes>, Status> {
        let message = self.next_message().await;
        self.arriving = None;
        message
    }

    async fn next_message(&mut self) -> Result<Option<Bytes>, Status> {
        loop {
            let next = self.decoder.next_frame().map_err(frame_status)?;
            self.hold_buffered();
            if let Some(frame) = next {
                if frame.compressed {
                    let max = self.max_message_size;
                    let share = self.share.as_deref();
                    // Boxed: inline, inflating (rare) would make every
                    // call's future larger by its state.
                    let message = Box::pin(compression::decompress(
                        self.encoding,
                        &frame.message,
                        max,
                        share,
                    ))
                    .await;
                    return message.map(Some);
                }
                return Ok(Some(frame.message));
            }
            if self.ended {
                self.decoder.finish().map_err(frame_status)?;
                return Ok(None);
            }
            let next = match self.rate_due() {
                None => self.next_frame().await,
                // Only while a message is partly received; the timer is
                // boxed so that the usual call's future does not hold one.
                Some(due) => {
                    self.count_arriving();
                    tokio::select! {
                        biased;
                        next = self.body.frame() => next,
                        _ = Box::pin(tokio::time::sleep_until(due.at)) => return Err(due.refusal()),
                    }
                }
            };
            match next {
                None => self.ended = true,
                Some(Ok(frame)) => {
                    // Request trailers carry nothing gRPC needs.
                    if let Ok(data) = frame.into_data() {
                        self.decoder.push(&data);
                        if let Some(arriving) = &self.arriving {
                            arriving.received(self.decoder.buffered());
                        }
                        if !self.hold_buffered() {
                            return Err(Status::new(
                                Code::ResourceExhausted,
                                "server busy: too many request messages being received, \
                                 try again shortly",
                            ));
                        }
                    }
                }
                Some(Err(e)) => {
                    // A body that knows its failure's status says it (a
                    // grpc-web-text body that is not base64: `INTERNAL`).
                    return Err(match e.downcast::<Status>() {
                        Ok(status) => *status,
                        Err(e) => {
                            Status::new(Code::Cancelled, format!("request stream failed: {e}"))
                        }
                    });
                }
            }
        }
    }

    /// The body's next frame. A frame already there is taken without
    /// counting the message for the cap: a unary call's message that came
    /// with its head (the usual call) costs no look at the connection's
    /// state. Only a message the call has to wait for is counted.
    async fn next_frame(&mut self) -> Option<Result<HttpFrame<Bytes>, BoxError>> {
        if self.counted && self.arriving.is_none() {
            let body = &mut self.body;
            let ready = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(hyper::body::Body::poll_frame(
                    std::pin::Pin::new(&mut *body),
                    cx,
                ))
            })
            .await;
            if let std::task::Poll::Ready(frame) = ready {
                return frame;
            }
            self.count_arriving();
        }
        self.body.frame().await
    }

    /// Counts the message being waited for on the connection, if the
    /// stream is [`counted`](Self::counted) and it is not yet.
    fn count_arriving(&mut self) {
        if self.counted && self.arriving.is_none() {
            let conn = self.share.as_ref().and_then(|share| share.conn());
            self.arriving = conn.map(|conn| conn.receiving(Instant::now()));
        }
    }

    /// The next message decoded as `T` (a message that does not decode is `INTERNAL`).
    pub async fn decode<T: prost::Message + Default>(&mut self) -> Result<Option<T>, Status> {
        match self.message().await? {
            None => Ok(None),
            Some(bytes) => T::decode(bytes)
                .map(Some)
                .map_err(|e| Status::internal(format!("cannot decode request message: {e}"))),
        }
    }
}

/// The minimum rate's deadline for a message partly received.
struct RateDue {
    at: Instant,
    since: Instant,
    partial: usize,
    rate: u32,
    grace: Duration,
}

impl RateDue {
    /// The call's answer once `at` has passed with no more bytes.
    fn refusal(&self) -> Status {
        Status::new(
            Code::DeadlineExceeded,
            format!(
                "request message arriving too slowly: {} bytes in {:.1} s, under the \
                 minimum of {} bytes/s after {} s",
                self.partial,
                (self.at - self.since).as_secs_f64(),
                self.rate,
                self.grace.as_secs_f64()
            ),
        )
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if let Some(share) = self.share.as_ref() {
            share.bodies().give_back(self.held);
            crate::server::governor::released(self.held);
        }
    }
}

fn frame_status(e: FrameError) -> Status {
    match e {
        FrameError::TooLarge { .. } => Status::new(Code::ResourceExhausted, e.to_string()),
        FrameError::BadFlag(_) | FrameError::Truncated { .. } => Status::internal(e.to_string()),
    }
}

/// Where a streaming handler writes its replies.
pub struct Sink {
    tx: mpsc::Sender<HttpFrame<Bytes>>,
    /// Compress replies over 1 KiB (the client accepts gzip).
    gzip: bool,
}

impl Sink {
    /// A sink feeding `tx`, compressing large replies when `gzip`.
    pub(super) fn new(tx: mpsc::Sender<HttpFrame<Bytes>>, gzip: bool) -> Sink {
        Sink { tx, gzip }
    }

    /// Completes when the client is gone (stream reset, connection closed):
    /// a handler waiting for something else selects on it too, so it never
    /// holds a stream nobody reads.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Sends one reply now; fails with `CANCELLED` when the client is gone.
    pub async fn send(&self, message: &impl prost::Message) -> Result<(), Status> {
        let framed = compression::maybe_compress(Frame::encode_message(message), self.gzip);
        self.tx
            .send(HttpFrame::data(framed))
            .await
            .map_err(|_| Status::new(Code::Cancelled, "client closed the stream"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::clocks::{Activity, HANDLER_GRACE, NEWCOMER_GRACE};
    use crate::server::governor::ByteAccount;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body that sends its bytes once, then waits for ever.
    struct Stalls(Option<Bytes>);

    impl hyper::body::Body for Stalls {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<HttpFrame<Bytes>, BoxError>>> {
            match self.0.take() {
                Some(data) => Poll::Ready(Some(Ok(HttpFrame::data(data)))),
                None => Poll::Pending,
            }
        }
    }

    #[tokio::test]
    async fn a_unary_message_arriving_keeps_its_connection_only_what_its_bytes_pay() {
        let secs = Duration::from_secs;
        let conn = Activity::new(secs(10), secs(60), secs(10));
        let _call = conn.request_started(http::Version::HTTP_2);
        let share = ConnectionShare::new(
            1 << 20,
            ByteAccount::new(1 << 20),
            ByteAccount::new(0),
            ByteAccount::new(0),
            Some(conn.clone()),
        );
        let running = conn
            .reclaimable_at()
            .expect("the call runs: its handler grace");
        assert!(running >= Instant::now() + HANDLER_GRACE - Duration::from_secs(1));
        // A message of 100 bytes announced, 1 sent: waiting on the client,
        // the call keeps only what the connection earned (its newcomer
        // grace) and what 6 bytes pay for at the earn rate.
        let first = Bytes::from_static(&[0, 0, 0, 0, 100, 1]);
        let body = Stalls(Some(first)).boxed_unsync();
        let mut streaming = Streaming::new(body, 1 << 20)
            .with_share(Some(share))
            .with_min_rate(240, secs(5))
            .counted();
        let t0 = Instant::now();
        let mut message = Box::pin(streaming.message());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(message.as_mut().poll(&mut cx).is_pending());
        let from = conn.reclaimable_at().expect("a message arriving");
        assert!(from >= t0 && from <= t0 + NEWCOMER_GRACE, "{from:?}");
        drop(message);
        drop(streaming);
        let again = conn
            .reclaimable_at()
            .expect("no message arriving: the handler runs");
        assert!(again > running, "its handler grace starts again");
    }
}
