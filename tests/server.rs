//! The accept loop's transport rules: slowloris header timeout, graceful
//! shutdown that lets in-flight requests finish, keep-alive reuse.

mod support;

use std::time::Duration;

use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use handwire::server::{self, Options};
use handwire::web::handler;
use handwire::web::Engine;
use support::http::{get, Proto};

fn slow_and_fast() -> Engine {
    let mut e = Engine::bare();
    e.get(
        "/slow",
        handler(|c| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                c.string(StatusCode::OK, "finished");
            })
        }),
    )
    .unwrap();
    e.get(
        "/fast",
        handler(|c| Box::pin(async move { c.string(StatusCode::OK, "fast") })),
    )
    .unwrap();
    e
}

#[tokio::test]
async fn slow_header_senders_are_disconnected_after_the_header_read_timeout() {
    let opts = Options {
        header_read_timeout: Duration::from_millis(200),
        ..Options::default()
    };
    let srv = support::app::start_with(slow_and_fast().build(), opts).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    conn.write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Never finish the head. The server must close (possibly after a 408).
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut buf)).await;
    assert!(
        read.is_ok(),
        "connection still open 5 s after a 200 ms header timeout"
    );
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    // Other clients are unaffected.
    assert_eq!(get(Proto::H1, srv.addr, "/fast").await.text(), "fast");
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests_and_stops_accepting() {
    let listener = server::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server::serve(
        listener,
        slow_and_fast().build(),
        Options::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let in_flight = tokio::spawn(async move { get(Proto::H1, addr, "/slow").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let reply = in_flight.await.unwrap();
    assert_eq!(
        (reply.status, reply.text().as_str()),
        (StatusCode::OK, "finished")
    );
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serve returns after the in-flight request")
        .unwrap()
        .unwrap();
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}

#[tokio::test]
async fn shutdown_waits_no_longer_than_the_grace_period() {
    let mut e = Engine::bare();
    e.get(
        "/hang",
        handler(|c| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                c.string(StatusCode::OK, "never");
            })
        }),
    )
    .unwrap();
    let listener = server::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let opts = Options {
        shutdown_grace: Duration::from_millis(200),
        ..Options::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server::serve(listener, e.build(), opts, async {
        let _ = stopped.await;
    }));
    let _hung = tokio::spawn(async move { get(Proto::H2, addr, "/hang").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), serving).await;
    assert!(done.is_ok(), "serve did not return after its grace period");
}

#[tokio::test]
async fn keep_alive_serves_several_requests_on_one_connection() {
    let srv = support::app::start(slow_and_fast().build()).await;
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    conn.write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 2, "{text}");
}

#[tokio::test]
async fn bind_errors_name_the_address() {
    let taken = server::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = server::bind(&addr).await.unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("cannot listen on {addr}: ")),
        "{err}"
    );
    let err = server::bind("not-an-address")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not-an-address"), "{err}");
}

#[tokio::test]
async fn one_listener_tells_http2_from_http1_by_the_preface_even_when_it_arrives_in_pieces() {
    let srv = support::app::start_with(slow_and_fast().build(), Options::default()).await;
    // HTTP/2 with prior knowledge, the preface cut in three writes and an
    // empty SETTINGS frame after it: the server answers with its SETTINGS
    // frame (type 4), not with HTTP/1.1's 400.
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    let preface: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    for piece in [&preface[..3], &preface[3..17], &preface[17..]] {
        conn.write_all(piece).await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    conn.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    let mut head = [0u8; 9];
    tokio::time::timeout(Duration::from_secs(5), conn.read_exact(&mut head))
        .await
        .expect("the server answered")
        .unwrap();
    assert_eq!(head[3], 4, "a SETTINGS frame, got {head:?}");
    // HTTP/1.1 on the same listener, its first byte alone first.
    let mut conn = TcpStream::connect(srv.addr).await.unwrap();
    conn.write_all(b"G").await.unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    conn.write_all(b"ET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut reply))
        .await
        .expect("the server answered")
        .unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("fast"), "{reply}");
    // And both protocols with real clients.
    assert_eq!(get(Proto::H1, srv.addr, "/fast").await.text(), "fast");
    assert_eq!(get(Proto::H2, srv.addr, "/fast").await.text(), "fast");
}
