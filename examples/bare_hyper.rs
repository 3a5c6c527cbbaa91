//! The load-test peer: the same accept loop, but no router, no chain and no
//! middleware — every request gets "Hello World!" straight from a `Service`.
//! `load/load.sh` compares `router-demo`'s `/hello` against it (and against
//! axum); the ratio to this one is the cost of the hand-written routing,
//! chain, logger and recovery.
//!
//! Over HTTP/2 a POST is answered as a gRPC `grpc.health.v1.Health/Check`
//! that finds the server SERVING, with nothing but what the wire needs: the
//! request body read to its end, `content-type: application/grpc`, one framed
//! message and `grpc-status: 0` in the trailers. `make instructions` counts
//! it as the floor of a unary call on hyper and h2: what any gRPC server on
//! them pays before its own dispatch, framing, deadline and logs.
//!
//! With `--hyper-only` it serves the same answers from hyper-util's own
//! connection builder on a plain accept loop: no trace context, clocks or
//! governor, the floor of hyper and h2 themselves.
//!
//! `cargo run --release --example bare_hyper -- 127.0.0.1:8001 [--hyper-only]`

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use handwire::server::{self, Answer, Caller, Options, Service};
use handwire::types::{self, Body, BoxError};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, Request, Response, Version};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};

struct Hello;

impl Service for Hello {
    fn call(&self, req: Request<Incoming>, _caller: Caller) -> Answer {
        if req.version() == Version::HTTP_2 && req.method() == Method::POST {
            return Answer::Later(Box::pin(serving(req)));
        }
        // Done at the server's one poll, as the engine's chain that never
        // awaits is.
        let mut resp = Response::new(types::full("Hello World!"));
        resp.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        Answer::Now(Box::pin(std::future::ready(resp)))
    }
}

/// `HealthCheckResponse { status: SERVING }`, framed: no compression, length
/// 2, field 1 varint 1.
const SERVING: &[u8] = &[0, 0, 0, 0, 2, 0x08, 0x01];

async fn serving(req: Request<Incoming>) -> Response<Body> {
    // A server reads the call's message before it answers.
    let _ = req.into_body().collect().await;
    let mut resp = Response::new(Body::new(Unary {
        data: Some(Bytes::from_static(SERVING)),
        trailers: true,
    }));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    resp
}

/// One message, then the trailers of a successful call: the crate's own
/// unary body, which is not public, written again here so that the floor
/// uses nothing of the gRPC server's. No exact size hint, as a gRPC body
/// has none: an exact one would add a `content-length` header.
struct Unary {
    data: Option<Bytes>,
    trailers: bool,
}

impl hyper::body::Body for Unary {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if std::mem::take(&mut self.trailers) {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && !self.trailers
    }
}

/// hyper-util's builder on a plain accept loop, nothing around it.
async fn hyper_only(listener: tokio::net::TcpListener) -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    loop {
        let (tcp, remote) = listener.accept().await?;
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let caller = Caller {
                    remote,
                    received_at: std::time::Instant::now(),
                    tls: false,
                    trace: None,
                    intake: None,
                    refused: None,
                };
                let work = Hello.call(req, caller).into_future();
                async move { Ok::<_, std::convert::Infallible>(work.await) }
            });
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8001".into());
    let listener = server::bind(&addr).await?;
    println!("bare hyper listening on http://{}", listener.local_addr()?);
    if std::env::args().any(|a| a == "--hyper-only") {
        return hyper_only(listener).await;
    }
    server::serve(
        listener,
        Arc::new(Hello),
        Options::default(),
        server::shutdown_signal(),
    )
    .await?;
    Ok(())
}
