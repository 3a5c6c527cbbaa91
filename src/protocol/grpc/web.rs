//! gRPC-Web on an HTTP/1.1 (or h2c) port, as tonic-web and Envoy's filter
//! offer it: browsers cannot read HTTP/2 trailers, so the gRPC-Web protocol
//! (grpc/grpc's PROTOCOL-WEB.md) moves them into the body.
//!
//! A call is `POST /<package>.<Service>/<Method>` with content-type
//! `application/grpc-web` (or `+proto`), the body framed as in gRPC, or
//! `application/grpc-web-text` (or `+proto`), the same bytes in base64. The
//! call is handed to the in-process gRPC [`Server`] as a plain gRPC call
//! (same method table, time-outs, limits and error details), and its
//! answer translated back: each message frame as it comes, then the
//! trailers as one last frame whose flag byte is `0x80` and whose payload
//! is the trailers in HTTP/1 header form (`grpc-status:0\r\n`). A
//! Trailers-Only answer (an error before any message) becomes that frame
//! alone. Text mode base64-encodes each frame on its own (padded), which
//! clients decode segment by segment, as the protocol allows.
//!
//! Unary and server-streaming methods both work (the body is sent as it is
//! produced); client streaming cannot, since a browser sends the whole
//! request body at once. Compression is not offered (`grpc-accept-encoding`
//! is not passed on), so replies are identity-encoded.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Frame as HttpFrame;

use super::headers::{GRPC_STATUS, GRPC_TIMEOUT};
use super::server::Server;
use crate::ops::tracecontext::TRACEPARENT;
use crate::types::{Body, BoxError};
use crate::web::chain::Context;

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
        let base = content_type.split(';').next().unwrap_or("").trim();
        match base.to_ascii_lowercase().as_str() {
            "application/grpc-web" | "application/grpc-web+proto" => Some(Mode::Binary),
            "application/grpc-web-text" | "application/grpc-web-text+proto" => Some(Mode::Text),
            _ => None,
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

/// Answers the gRPC-Web call in `c` (its content-type said [`Mode`]) with
/// `server`'s method.
pub async fn serve(server: &Server, mode: Mode, c: &mut Context) {
    let body = match mode {
        Mode::Binary => c.body().clone(),
        Mode::Text => match decode_text(c.body()) {
            Some(bytes) => Bytes::from(bytes),
            None => {
                let mut trailers = HeaderMap::new();
                super::Status::internal("grpc-web-text body is not base64").write_to(&mut trailers);
                let frame = encode(mode, trailer_frame(&trailers));
                c.stream(
                    StatusCode::OK,
                    mode.content_type(),
                    crate::types::full(frame),
                );
                return;
            }
        },
    };
    let mut req = Request::new(
        Full::new(body)
            .map_err(|never| -> BoxError { match never {} })
            .boxed_unsync(),
    );
    *req.method_mut() = c.method().clone();
    *req.uri_mut() = c.uri().clone();
    let headers = req.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
    for name in [&GRPC_TIMEOUT, &TRACEPARENT] {
        if let Some(v) = c.headers().get(name) {
            headers.insert(name, v.clone());
        }
    }
    let response =
        crate::ops::peer::scope(c.client_ip(), server.handle(req, c.received_at())).await;
    let (parts, inner) = response.into_parts();
    if parts.status != StatusCode::OK {
        // Not a gRPC call at all (wrong method): the HTTP status says why.
        let mut trailers = HeaderMap::new();
        if let Some(status) = super::Status::from_headers(&parts.headers) {
            status.write_to(&mut trailers);
        }
        let frame = encode(mode, trailer_frame(&trailers));
        c.stream(parts.status, mode.content_type(), crate::types::full(frame));
        return;
    }
    // Trailers-Only: the status is in the headers, the body empty.
    let header_trailers = parts.headers.contains_key(&GRPC_STATUS).then(|| {
        let mut t = HeaderMap::new();
        for (k, v) in &parts.headers {
            if k.as_str().starts_with("grpc-") {
                t.append(k.clone(), v.clone());
            }
        }
        t
    });
    let body = WebBody {
        inner,
        mode,
        header_trailers,
        done: false,
    };
    c.stream(StatusCode::OK, mode.content_type(), body.boxed_unsync());
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

/// A grpc-web-text body: base64, possibly several padded segments one
/// after the other; white space is ignored.
fn decode_text(text: &[u8]) -> Option<Vec<u8>> {
    let clean: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let mut out = Vec::new();
    for segment in clean.chunks(4) {
        out.extend(STANDARD.decode(segment).ok()?);
    }
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

    #[test]
    fn text_bodies_decode_across_padded_segments() {
        let joined = format!("{}{}", STANDARD.encode(b"ab"), STANDARD.encode(b"cde"));
        assert_eq!(decode_text(joined.as_bytes()).unwrap(), b"abcde");
        assert_eq!(decode_text(b"YWJj\nZGVm").unwrap(), b"abcdef");
        assert!(decode_text(b"!!!!").is_none());
    }
}
