//! Response bodies of gRPC calls: DATA frames followed by trailers.
//!
//! HTTP/2 carries the gRPC status *after* the messages, in a trailing HEADERS
//! frame, so a response body is a sequence of `Frame::data` items ending with
//! one `Frame::trailers`. [`UnaryBody`] holds the single reply of a unary
//! call; [`ChannelBody`] is fed by a task through a channel, which is what
//! lets a streaming handler answer each request as soon as it arrives.
//! [`trailers_only`] builds the error response that has no body at all.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Frame;
use tokio::sync::mpsc;

use super::status::Status;
use crate::types::{Body, BoxError};

/// The content-type of every gRPC response.
pub const CONTENT_TYPE: &str = "application/grpc";

/// One framed message, then the trailers of a successful call.
#[derive(Debug)]
pub struct UnaryBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl UnaryBody {
    /// A body sending `framed` (prefix included) and then `grpc-status: 0`.
    pub fn new(framed: Bytes) -> UnaryBody {
        let mut trailers = HeaderMap::new();
        Status::ok().write_to(&mut trailers);
        UnaryBody {
            data: Some(framed),
            trailers: Some(trailers),
        }
    }
}

impl hyper::body::Body for UnaryBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    /// The message's length as a lower bound (not exact: an exact length
    /// would become a `content-length` header), so the server counts the
    /// bytes this body holds for its peer.
    fn size_hint(&self) -> hyper::body::SizeHint {
        let mut hint = hyper::body::SizeHint::new();
        hint.set_lower(self.data.as_ref().map_or(0, |d| d.len() as u64));
        hint
    }
}

/// A body whose frames are sent by another task.
#[derive(Debug)]
pub struct ChannelBody {
    rx: mpsc::Receiver<Frame<Bytes>>,
}

impl ChannelBody {
    /// A body and the sender feeding it; `capacity` frames may wait in between.
    pub fn channel(capacity: usize) -> (mpsc::Sender<Frame<Bytes>>, ChannelBody) {
        let (tx, rx) = mpsc::channel(capacity);
        (tx, ChannelBody { rx })
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx.poll_recv(cx).map(|frame| frame.map(Ok))
    }
}

/// Headers common to every gRPC response.
fn grpc_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(CONTENT_TYPE),
    );
    super::compression::advertise(response.headers_mut());
    response
}

/// A successful unary response carrying one framed message.
pub(crate) fn unary_response(framed: Bytes) -> Response<Body> {
    grpc_response(UnaryBody::new(framed).boxed_unsync())
}

/// A streaming response whose frames arrive through the returned sender.
pub(crate) fn streaming_response(capacity: usize) -> (mpsc::Sender<Frame<Bytes>>, Response<Body>) {
    let (tx, body) = ChannelBody::channel(capacity);
    (tx, grpc_response(body.boxed_unsync()))
}

/// A Trailers-Only response: `:status 200`, content-type and the status in
/// one HEADERS frame with END_STREAM (the body is empty).
pub fn trailers_only(status: &Status) -> Response<Body> {
    let mut response = grpc_response(crate::types::empty());
    status.write_to(response.headers_mut());
    response
}

/// A response rejected at the HTTP level (wrong method or content-type):
/// the HTTP status says why, and a gRPC status is added for gRPC clients.
pub(crate) fn http_error(http_status: StatusCode, status: &Status) -> Response<Body> {
    let mut response = Response::new(crate::types::empty());
    *response.status_mut() = http_status;
    status.write_to(response.headers_mut());
    response
}
