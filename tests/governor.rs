//! The process-wide governor, black-box against a real greeter on
//! 127.0.0.1:0 under the attacks it is there for, scaled to a budget of a
//! few dozen connections so each runs in seconds:
//!
//! - connections parked on long-lived streams (health Watch) cannot keep a
//!   new client out at the cap;
//!
//! The full-size figures (1,030 connections, RSS) are in
//! `docs/reliability.md`.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use handwire::services::greeter::api::{HelloReply, HelloRequest};
use handwire::services::greeter::config::Config;
use handwire::services::greeter::Greeter;
use handwire::web::server::{ConnectionBudget, Options};
use support::greeter::{config_text, TempDir};
use support::http::{get, Proto};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";

/// A greeter with server `options`; its ports, and the directory of its
/// database (removed when dropped).
async fn greeter(options: Options) -> (SocketAddr, SocketAddr, TempDir) {
    let dir = TempDir::new("governor");
    let db = dir.0.join("greeter.db");
    let text = config_text(db.to_str().unwrap(), "1s", "1s");
    let config = Config::from_yaml(&text).unwrap();
    let greeter = Greeter::bind(&config)
        .await
        .unwrap()
        .with_server_options(options);
    let (http, grpc) = (greeter.http_addr(), greeter.grpc_addr());
    tokio::spawn(greeter.serve(std::future::pending()));
    (http, grpc, dir)
}

/// An h2 connection holding one `grpc.health.v1.Health/Watch` stream open,
/// answering PINGs, as long as the server keeps it.
async fn parked_on_a_watch(addr: SocketAddr) -> JoinHandle<()> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    let driving = tokio::spawn(conn);
    let req = http::Request::post(format!("http://{addr}/grpc.health.v1.Health/Watch"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut send) = client.send_request(req, false).unwrap();
    // An empty HealthCheckRequest (the whole server), framed.
    send.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    let mut body = response.await.unwrap().into_body();
    // The current status arrives at once; then the stream stays open.
    let first = body.data().await.unwrap().unwrap();
    let _ = body.flow_control().release_capacity(first.len());
    tokio::spawn(async move {
        let _keep = (client, send, body);
        let _ = driving.await;
    })
}

async fn say_hello(addr: SocketAddr) -> HelloReply {
    let req = HelloRequest {
        name: "probe".into(),
    };
    support::grpc::call(addr, SAY_HELLO, req).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_connections_holding_long_lived_streams_are_taken_back_for_a_new_client() {
    const CAP: usize = 32;
    let (http, grpc, _dir) = greeter(Options {
        connections: ConnectionBudget::new(CAP),
        ..Options::default()
    })
    .await;
    let mut parked = Vec::new();
    for _ in 0..CAP {
        parked.push(parked_on_a_watch(grpc).await);
    }
    // Every slot is held by a Watch that will not end for the idle time-out
    // (60 s); the probes on both ports are served within a second anyway.
    for round in 0..3 {
        let t0 = Instant::now();
        let reply = tokio::time::timeout(Duration::from_secs(1), say_hello(grpc))
            .await
            .unwrap_or_else(|_| panic!("round {round}: gRPC probe not served within 1 s"));
        assert_eq!(reply.message, "Hello probe");
        let page = tokio::time::timeout(Duration::from_secs(1), get(Proto::H1, http, "/healthz"))
            .await
            .unwrap_or_else(|_| panic!("round {round}: HTTP probe not served within 1 s"));
        assert_eq!(page.status, http::StatusCode::OK);
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        // The attacker re-opens what was taken back.
        parked.retain(|task| !task.is_finished());
        while parked.len() < CAP {
            parked.push(parked_on_a_watch(grpc).await);
        }
    }
    for task in parked {
        task.abort();
    }
}
