//! gRPC-Web on an HTTP/1.1 (or h2c) port, as tonic-web and Envoy's filter
//! offer it: browsers cannot read HTTP/2 trailers, so the gRPC-Web protocol
//! (grpc/grpc's PROTOCOL-WEB.md) moves them into the body.
//!
//! A call is `POST /<package>.<Service>/<Method>` with content-type
//! `application/grpc-web` (or `+proto`), the body framed as in gRPC, or
//! `application/grpc-web-text` (or `+proto`), the same bytes in base64.
//!
//! [`Port`] is what the listener of such a port calls: it picks a request
//! by its content-type, before any HTTP middleware, and hands a gRPC-Web
//! call with the listener's [`Caller`] to [`Server::serve`], the one path
//! every gRPC call takes. So a gRPC-Web call reads its messages under the
//! connection's share and the 4 MiB message limit (a text body is decoded
//! as it arrives, so the limit is on the decoded bytes), runs under the
//! gRPC time-out and the client's `grpc-timeout` (a write taken into its
//! transaction is answered by its commit), counts a long-lived stream
//! against the process cap, takes `grpc-encoding: gzip` both ways, and has
//! its per-method metrics and its `[grpc]` access line with its status.
//! Everything else goes to the HTTP service.
//!
//! The answer is translated back around the logged body: each message
//! frame as it comes, then the trailers as one last frame whose flag byte
//! is `0x80` and whose payload is the trailers in HTTP/1 header form
//! (`grpc-status:0\r\n`). A Trailers-Only answer (an error before any
//! message, a deadline) becomes that frame alone. Text mode base64-encodes
//! each frame on its own (padded), which clients decode segment by
//! segment, as the protocol allows. With CORS configured the answer gets
//! its headers here ([`Cors::answer_headers`]); preflights are `OPTIONS`
//! requests and go to the HTTP service's CORS middleware.
//!
//! Unary and server-streaming methods both work (the body is sent as it is
//! produced); client streaming cannot, since a browser sends the whole
//! request body at once.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, ORIGIN, TE};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame as HttpFrame, Incoming};

use super::headers::{GRPC_MESSAGE, GRPC_STATUS, GRPC_STATUS_DETAILS_BIN};
use super::server::Server;
use super::Status;
use crate::ops::cors::Cors;
use crate::server::{Answer, Caller, Service};
use crate::types::{Body, BoxError, BoxFuture};

/// A port that answers gRPC-Web calls (by their content-type) with the
/// gRPC server and every other request with `http`.
pub struct Port {
    http: Arc<dyn Service>,
    grpc: Server,
    cors: Option<Arc<Cors>>,
}

impl Port {
    /// `http` behind gRPC-Web calls to `grpc`; `cors`, if any, marks their
    /// answers as the HTTP service's CORS middleware marks its own.
    pub fn new(http: Arc<dyn Service>, grpc: Server, cors: Option<Arc<Cors>>) -> Port {
        Port { http, grpc, cors }
    }
}

impl Service for Port {
    fn call(&self, req: Request<Incoming>, caller: Caller) -> Answer {
        let mode = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(Mode::of);
        match mode {
            // A head past the server's limits is answered by the HTTP
            // service, in its error shape.
            Some(mode) if caller.refused.is_none() => {
                Answer::Later(self.call_web(mode, req, caller))
            }
            _ => self.http.call(req, caller),
        }
    }

    fn may_answer_in_call(&self) -> bool {
        self.http.may_answer_in_call()
    }

    fn overloaded(&self, grpc: bool) -> Response<Body> {
        self.http.overloaded(grpc)
    }
}

impl Port {
    /// The gRPC-Web call in `req` as a gRPC call of the one server path,
    /// its answer translated back.
    fn call_web(
        &self,
        mode: Mode,
        req: Request<Incoming>,
        caller: Caller,
    ) -> BoxFuture<'static, Response<Body>> {
        let (mut parts, body) = req.into_parts();
        let origin = parts.headers.remove(ORIGIN);
        let headers = &mut parts.headers;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(TE, HeaderValue::from_static("trailers"));
        headers.remove(CONTENT_LENGTH);
        let body = match mode {
            Mode::Binary => body.map_err(BoxError::from).boxed_unsync(),
            Mode::Text => TextBody::new(body).boxed_unsync(),
        };
        let call = self.grpc.serve(Request::from_parts(parts, body), caller);
        let cors = self.cors.clone();
        Box::pin(async move {
            let mut resp = web_response(mode, call.await);
            if let Some(cors) = cors {
                mark_for_browsers(&cors, origin.as_ref(), resp.headers_mut());
            }
            resp
        })
    }
}

/// What the HTTP service's CORS middleware adds to an actual request's
/// answer ([`Cors::answer_headers`]).
fn mark_for_browsers(cors: &Cors, origin: Option<&HeaderValue>, headers: &mut HeaderMap) {
    let origin = origin.and_then(|o| o.to_str().ok());
    for (name, value) in cors.answer_headers(origin) {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
}

/// The two encodings of a gRPC-Web body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `application/grpc-web[+proto]`: frames as bytes.
    Binary,
    /// `application/grpc-web-text[+proto]`: frames in base64.
    Text,
}

impl Mode {
    /// The mode a content-type asks for, or `None` if it is not gRPC-Web.
    pub fn of(content_type: &str) -> Option<Mode> {
        // Asked of every request the port gets: compared without a
        // lower-cased copy.
        let base = content_type.split(';').next().unwrap_or("").trim();
        let is = |name: &str| base.eq_ignore_ascii_case(name);
        if is("application/grpc-web") || is("application/grpc-web+proto") {
            Some(Mode::Binary)
        } else if is("application/grpc-web-text") || is("application/grpc-web-text+proto") {
            Some(Mode::Text)
        } else {
            None
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Mode::Binary => "application/grpc-web+proto",
            Mode::Text => "application/grpc-web-text+proto",
        }
    }
}

/// The flag byte of the trailer frame.
const TRAILER_FLAG: u8 = 0x80;

/// The gRPC answer `resp` as gRPC-Web: the content-type of `mode`, the
/// body as frames ([`WebBody`]), a Trailers-Only status moved from the
/// headers into the trailer frame. An HTTP error (a method other than
/// POST) keeps its status, its body the trailer frame alone.
fn web_response(mode: Mode, resp: Response<Body>) -> Response<Body> {
    let (mut parts, inner) = resp.into_parts();
    let header_trailers = parts.headers.contains_key(&GRPC_STATUS).then(|| {
        let mut t = HeaderMap::new();
        for name in [&GRPC_STATUS, &GRPC_MESSAGE, &GRPC_STATUS_DETAILS_BIN] {
            if let Some(v) = parts.headers.remove(name) {
                t.insert(name, v);
            }
        }
        t
    });
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static(mode.content_type()));
    parts.headers.remove(CONTENT_LENGTH);
    let inner = if parts.status == StatusCode::OK {
        inner
    } else {
        crate::types::empty()
    };
    let body = WebBody {
        inner,
        mode,
        header_trailers,
        done: false,
    };
    Response::from_parts(parts, body.boxed_unsync())
}

/// The gRPC response body as gRPC-Web frames.
struct WebBody {
    inner: Body,
    mode: Mode,
    /// A Trailers-Only status, sent as the trailer frame at the end.
    header_trailers: Option<HeaderMap>,
    done: bool,
}

impl hyper::body::Body for WebBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<HttpFrame<Bytes>, BoxError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let mode = self.mode;
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Some(Ok(frame))) => {
                let out = match frame.into_data() {
                    Ok(data) => encode(mode, data),
                    Err(frame) => {
                        self.done = true;
                        let trailers = frame.into_trailers().unwrap_or_default();
                        encode(mode, trailer_frame(&trailers))
                    }
                };
                Poll::Ready(Some(Ok(HttpFrame::data(out))))
            }
            Poll::Ready(None) => {
                self.done = true;
                let trailers = self.header_trailers.take().unwrap_or_else(|| {
                    // A stream that ended without a status: say so.
                    let mut t = HeaderMap::new();
                    super::Status::internal("stream ended without a status").write_to(&mut t);
                    t
                });
                Poll::Ready(Some(Ok(HttpFrame::data(encode(
                    mode,
                    trailer_frame(&trailers),
                )))))
            }
        }
    }
}

/// The trailer frame: flag `0x80`, length, `name:value\r\n` lines.
fn trailer_frame(trailers: &HeaderMap) -> Bytes {
    let mut block = BytesMut::new();
    for (name, value) in trailers {
        block.put_slice(name.as_str().as_bytes());
        block.put_u8(b':');
        block.put_slice(value.as_bytes());
        block.put_slice(b"\r\n");
    }
    let mut frame = BytesMut::with_capacity(5 + block.len());
    frame.put_u8(TRAILER_FLAG);
    frame.put_u32(block.len() as u32);
    frame.put_slice(&block);
    frame.freeze()
}

fn encode(mode: Mode, bytes: Bytes) -> Bytes {
    match mode {
        Mode::Binary => bytes,
        Mode::Text => Bytes::from(STANDARD.encode(&bytes)),
    }
}

/// A grpc-web-text request body decoded as it arrives: base64 in groups
/// of four characters, white space ignored, possibly several padded
/// segments one after the other. Only an incomplete group is held, so the
/// gRPC reader sees (and limits) the decoded bytes. Text that is not
/// base64 ends the call with `INTERNAL`.
struct TextBody {
    inner: Incoming,
    /// Characters of a group not yet complete (at most three after each
    /// chunk).
    pending: Vec<u8>,
}

impl TextBody {
    fn new(inner: Incoming) -> TextBody {
        TextBody {
            inner,
            pending: Vec::new(),
        }
    }
}

impl hyper::body::Body for TextBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<HttpFrame<Bytes>, BoxError>>> {
        let not_base64 =
            || -> BoxError { Box::new(Status::internal("grpc-web-text body is not base64")) };
        loop {
            return match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    match decode_groups(&mut self.pending, &data) {
                        None => Poll::Ready(Some(Err(not_base64()))),
                        Some(out) if out.is_empty() => continue,
                        Some(out) => Poll::Ready(Some(Ok(HttpFrame::data(Bytes::from(out))))),
                    }
                }
                Poll::Ready(None) if self.pending.is_empty() => Poll::Ready(None),
                Poll::Ready(None) => Poll::Ready(Some(Err(not_base64()))),
            };
        }
    }
}

/// Appends `text` to the `pending` characters and decodes every complete
/// group, a segment at a time (a group ending in `=` ends one); `None` if
/// the text is not base64.
fn decode_groups(pending: &mut Vec<u8>, text: &[u8]) -> Option<Vec<u8>> {
    pending.extend(text.iter().copied().filter(|b| !b.is_ascii_whitespace()));
    let whole = pending.len() / 4 * 4;
    let mut out = Vec::with_capacity(whole / 4 * 3);
    let mut start = 0;
    for end in (4..=whole).step_by(4) {
        if pending[end - 1] == b'=' || end == whole {
            STANDARD.decode_vec(&pending[start..end], &mut out).ok()?;
            start = end;
        }
    }
    pending.drain(..whole);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_select_the_mode() {
        assert_eq!(Mode::of("application/grpc-web"), Some(Mode::Binary));
        assert_eq!(Mode::of("application/grpc-web+proto"), Some(Mode::Binary));
        assert_eq!(
            Mode::of("Application/gRPC-Web-Text; charset=x"),
            Some(Mode::Text)
        );
        assert_eq!(
            Mode::of("application/grpc-web-text+proto"),
            Some(Mode::Text)
        );
        assert_eq!(Mode::of("application/grpc"), None);
        assert_eq!(Mode::of("application/json"), None);
    }

    #[test]
    fn the_trailer_frame_holds_http1_style_lines_after_the_0x80_flag() {
        let mut t = HeaderMap::new();
        t.insert("grpc-status", HeaderValue::from_static("0"));
        t.insert("grpc-message", HeaderValue::from_static("ok"));
        let f = trailer_frame(&t);
        assert_eq!(f[0], 0x80);
        let len = u32::from_be_bytes([f[1], f[2], f[3], f[4]]) as usize;
        assert_eq!(&f[5..], b"grpc-status:0\r\ngrpc-message:ok\r\n");
        assert_eq!(len, f.len() - 5);
    }

    fn decode_text(chunks: &[&[u8]]) -> Option<Vec<u8>> {
        let mut pending = Vec::new();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(decode_groups(&mut pending, chunk)?);
        }
        pending.is_empty().then_some(out)
    }

    #[test]
    fn text_bodies_decode_across_padded_segments_and_chunk_boundaries() {
        let joined = format!("{}{}", STANDARD.encode(b"ab"), STANDARD.encode(b"cde"));
        assert_eq!(decode_text(&[joined.as_bytes()]).unwrap(), b"abcde");
        assert_eq!(decode_text(&[b"YWJj\nZGVm"]).unwrap(), b"abcdef");
        // A group split between chunks, and a padded segment inside one.
        assert_eq!(decode_text(&[b"YW", b"JjZ", b"GVm"]).unwrap(), b"abcdef");
        assert_eq!(decode_text(&[b"YQ==YW", b"Jj"]).unwrap(), b"aabc");
        assert!(decode_text(&[b"!!!!"]).is_none());
        // Text that ends inside a group is not a whole body.
        assert!(decode_text(&[b"YWJjZ"]).is_none());
    }
}
