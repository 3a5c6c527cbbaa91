//! Slow readers: clients that ask and never take the answer. A response
//! that makes no progress for the write time-out closes its connection; a
//! response stream that produces nothing for the idle time-out is reset;
//! pipelined requests are buffered up to a bound; and at the connection
//! cap a connection that does not take its answers is taken back so that
//! a new client is served within a second. Real servers on 127.0.0.1:0, real clients.

mod support;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use hyper::body::{Frame, Incoming};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use handwire::ops::metrics::{Gauge, Kind, Metrics};
use handwire::server::{ConnectionBudget, Options, Service};
use handwire::types::{BoxError, BoxFuture};
use handwire::web::handler;
use handwire::web::Engine;
use support::http::{get, Proto};

const BIG: usize = 1 << 20;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `GET /hi` answers `hi`, `GET /big` 1 MiB.
fn app() -> Arc<dyn Service> {
    let mut e = Engine::bare();
    e.get(
        "/hi",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "hi") })),
    )
    .unwrap();
    e.get(
        "/big",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "b".repeat(BIG)) })),
    )
    .unwrap();
    e.build()
}

/// [`app`] with a write time-out of 300 ms, and the gauge of its open
/// connections.
async fn start_with_write_timeout_300ms() -> (support::app::TestServer, Arc<Gauge>) {
    let open = Metrics::new().connections(Kind::Http);
    let srv = support::app::start_with(
        app(),
        Options {
            write_timeout: ms(300),
            connection_gauge: Some(open.clone()),
            ..Options::default()
        },
    )
    .await;
    (srv, open)
}

async fn wait_until(what: &str, limit: Duration, done: impl Fn() -> bool) -> Duration {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(ms(20)).await;
    }
    t0.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_pipelines_and_never_reads_is_closed_after_the_write_timeout() {
    let (srv, open) = start_with_write_timeout_300ms().await;
    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(TcpStream::connect(srv.addr).await.unwrap());
    }
    // All open before any stalls: on a busy machine the first ones could
    // otherwise reach their write time-out before the last one is open.
    wait_until("connections opened", Duration::from_secs(3), || {
        open.get() == 20
    })
    .await;
    // Answers far larger than the socket buffers hold; never read.
    let requests = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n".repeat(64);
    for conn in &mut clients {
        let _ = tokio::time::timeout(ms(500), conn.write_all(&requests)).await;
    }
    // A well-behaved client is served meanwhile.
    assert_eq!(get(Proto::H1, srv.addr, "/hi").await.text(), "hi");
    let took = wait_until("stalled connections closed", Duration::from_secs(5), || {
        open.get() == 0
    })
    .await;
    assert!(took < Duration::from_secs(3), "{took:?}");
    // Still serving, and the clients' sockets were closed by the server.
    assert_eq!(get(Proto::H1, srv.addr, "/hi").await.text(), "hi");
    drop(clients);
}

/// An h2 client whose stream window is 0: the response can never be sent.
async fn h2_zero_window(addr: std::net::SocketAddr, path: &str) -> tokio::task::JoinHandle<()> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut client, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    let req = http::Request::get(format!("http://{addr}{path}"))
        .body(())
        .unwrap();
    let (response, _) = client.send_request(req, true).unwrap();
    tokio::spawn(async move {
        // The connection task answers PINGs; it ends when the server closes.
        let _keep = (client, response);
        let _ = conn.await;
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_stream_whose_window_never_opens_is_closed_after_the_write_timeout() {
    let (srv, open) = start_with_write_timeout_300ms().await;
    let held = h2_zero_window(srv.addr, "/big").await;
    let t0 = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .expect("the server closes a connection whose response cannot progress")
        .unwrap();
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
    wait_until("gauge back to 0", Duration::from_secs(2), || {
        open.get() == 0
    })
    .await;
}

/// A service whose response body never produces anything.
struct Silent;

struct NeverBody;

impl hyper::body::Body for NeverBody {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Pending
    }
}

impl Service for Silent {
    fn call(
        &self,
        _: http::Request<Incoming>,
        _: handwire::server::Caller,
    ) -> handwire::server::Answer {
        use http_body_util::BodyExt;
        let work: BoxFuture<'static, http::Response<handwire::types::Body>> =
            Box::pin(async { http::Response::new(NeverBody.boxed_unsync()) });
        handwire::server::Answer::Later(work)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_response_stream_that_stays_idle_is_reset_after_the_idle_timeout() {
    let srv = support::app::start_with(
        Arc::new(Silent),
        Options {
            idle_timeout: ms(300),
            ..Options::default()
        },
    )
    .await;
    let tcp = TcpStream::connect(srv.addr).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("http://x/stream").body(()).unwrap();
    let (response, _) = client.send_request(req, true).unwrap();
    let mut body = response.await.unwrap().into_body();
    let t0 = Instant::now();
    let end = tokio::time::timeout(Duration::from_secs(5), body.data())
        .await
        .expect("an idle stream is ended by the server");
    assert!(
        matches!(end, Some(Err(_))),
        "reset, not a clean end: {end:?}"
    );
    assert!(t0.elapsed() >= ms(250), "{:?}", t0.elapsed());
}

/// 1,100 h2c connections with a zero window, one request each, answering
/// PINGs: past the cap of 1,024 they would hold every slot; the ones idle
/// past the grace (their answers handed over, not taken) are taken back
/// instead, and a normal client is served within a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_1100_stalled_h2_connections_do_not_keep_a_new_client_out() {
    let srv = support::app::start_with(
        app(),
        Options {
            connections: ConnectionBudget::new(1024),
            ..Options::default()
        },
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..1024 {
        held.push(h2_zero_window(srv.addr, "/hi").await);
    }
    // The next 76 each take the place of one that can be taken back.
    for _ in 0..76 {
        held.push(
            tokio::time::timeout(Duration::from_secs(2), h2_zero_window(srv.addr, "/hi"))
                .await
                .expect("a new connection is accepted at the cap"),
        );
    }
    let t0 = Instant::now();
    let reply = tokio::time::timeout(Duration::from_secs(1), get(Proto::H1, srv.addr, "/hi"))
        .await
        .expect("a normal client is served within 1 s");
    assert_eq!(reply.text(), "hi");
    assert!(t0.elapsed() < Duration::from_secs(1));
    for task in held {
        task.abort();
    }
}
