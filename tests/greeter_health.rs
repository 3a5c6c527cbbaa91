//! Health of the greeter and token-auth: the standard `grpc.health.v1.Health`
//! service spoken by a real client (tonic, the way `grpc_health_probe`
//! speaks it: Check, Watch, List), reflection listing it, and the HTTP
//! `/healthz` and `/readyz` endpoints.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handwire::protocol::grpc::health::{
    Health, HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse,
    ServingStatus,
};
use handwire::protocol::grpc::reflection::{
    MessageRequest, MessageResponse, ServerReflectionRequest, ServerReflectionResponse,
};
use http::{Method, StatusCode};
use support::greeter::{call, start, WriteLock};
use support::http::{get, Proto};

const CHECK: &str = "/grpc.health.v1.Health/Check";
const LIST: &str = "/grpc.health.v1.Health/List";
const WATCH: &str = "/grpc.health.v1.Health/Watch";

async fn client(addr: SocketAddr) -> tonic::client::Grpc<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    grpc
}

async fn check(addr: SocketAddr, service: &str) -> Result<ServingStatus, tonic::Status> {
    let mut grpc = client(addr).await;
    let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
    let req = HealthCheckRequest {
        service: service.into(),
    };
    let path = http::uri::PathAndQuery::from_static(CHECK);
    let reply = grpc.unary(tonic::Request::new(req), path, codec).await?;
    Ok(ServingStatus::try_from(reply.into_inner().status).unwrap())
}

type Watch = tonic::Streaming<HealthCheckResponse>;

async fn watch(addr: SocketAddr, service: &str) -> Watch {
    let mut grpc = client(addr).await;
    let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
    let req = HealthCheckRequest {
        service: service.into(),
    };
    let path = http::uri::PathAndQuery::from_static(WATCH);
    grpc.server_streaming(tonic::Request::new(req), path, codec)
        .await
        .unwrap()
        .into_inner()
}

/// The next message of `stream` (at most 5 s away), `None` when it ended with OK.
async fn next(stream: &mut Watch) -> Option<ServingStatus> {
    let message = tokio::time::timeout(Duration::from_secs(5), stream.message())
        .await
        .expect("a message within 5 s")
        .expect("no error status");
    message.map(|m| ServingStatus::try_from(m.status).unwrap())
}

#[tokio::test]
async fn check_answers_serving_for_the_server_and_the_greeter_and_not_found_for_others() {
    let g = start().await;
    assert_eq!(check(g.grpc, "").await.unwrap(), ServingStatus::Serving);
    let greeter = check(g.grpc, "helloworld.v1.Greeter").await.unwrap();
    assert_eq!(greeter, ServingStatus::Serving);
    let err = check(g.grpc, "no.such.Service").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    assert_eq!(err.message(), "unknown service");
}

#[tokio::test]
async fn list_answers_every_status() {
    let g = start().await;
    let mut grpc = client(g.grpc).await;
    let codec = tonic_prost::ProstCodec::<HealthListRequest, HealthListResponse>::default();
    let path = http::uri::PathAndQuery::from_static(LIST);
    let list = grpc
        .unary(tonic::Request::new(HealthListRequest {}), path, codec)
        .await
        .unwrap()
        .into_inner();
    let mut names: Vec<&str> = list.statuses.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["", "helloworld.v1.Greeter"]);
    assert!(list
        .statuses
        .values()
        .all(|s| s.status == ServingStatus::Serving as i32));
}

#[tokio::test]
async fn watch_sends_the_status_at_once_then_each_change() {
    let g = start().await;
    let mut stream = watch(g.grpc, "helloworld.v1.Greeter").await;
    assert_eq!(next(&mut stream).await, Some(ServingStatus::Serving));
    g.health
        .set_serving_status("helloworld.v1.Greeter", ServingStatus::NotServing);
    assert_eq!(next(&mut stream).await, Some(ServingStatus::NotServing));
    g.health
        .set_serving_status("helloworld.v1.Greeter", ServingStatus::Serving);
    assert_eq!(next(&mut stream).await, Some(ServingStatus::Serving));
}

#[tokio::test]
async fn watch_of_an_unknown_service_says_service_unknown_and_stays_open() {
    let g = start().await;
    let mut stream = watch(g.grpc, "later.Service").await;
    assert_eq!(next(&mut stream).await, Some(ServingStatus::ServiceUnknown));
    // Still open: nothing more arrives by itself...
    let quiet = tokio::time::timeout(Duration::from_millis(300), stream.message()).await;
    assert!(quiet.is_err(), "the stream must stay open: {quiet:?}");
    // ...and the service's status reaches it once set.
    g.health
        .set_serving_status("later.Service", ServingStatus::Serving);
    assert_eq!(next(&mut stream).await, Some(ServingStatus::Serving));
}

#[tokio::test]
async fn draining_turns_every_status_not_serving_before_the_listeners_close() {
    let mut g = start().await;
    let mut server = watch(g.grpc, "").await;
    let mut greeter = watch(g.grpc, "helloworld.v1.Greeter").await;
    let mut unknown = watch(g.grpc, "other.Service").await;
    assert_eq!(next(&mut server).await, Some(ServingStatus::Serving));
    assert_eq!(next(&mut greeter).await, Some(ServingStatus::Serving));
    assert_eq!(
        next(&mut unknown).await,
        Some(ServingStatus::ServiceUnknown)
    );
    g.begin_shutdown();
    // Each watcher hears NOT_SERVING, then its stream ends with OK so the
    // graceful shutdown does not wait on it.
    assert_eq!(next(&mut server).await, Some(ServingStatus::NotServing));
    assert_eq!(next(&mut server).await, None);
    assert_eq!(next(&mut greeter).await, Some(ServingStatus::NotServing));
    assert_eq!(next(&mut greeter).await, None);
    assert_eq!(next(&mut unknown).await, None);
    assert_eq!(g.health.check("").unwrap(), ServingStatus::NotServing);
    // And then the listeners close.
    let mut closed = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(g.grpc).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(closed, "the gRPC listener closed after draining began");
}

#[tokio::test]
async fn a_watch_ends_with_ok_at_its_maximum_age_and_the_client_may_watch_again() {
    let mut b = handwire::protocol::grpc::Server::builder(Default::default());
    Arc::new(Health::with_watch_max_age(Duration::from_millis(300))).register(&mut b);
    let opts = handwire::server::Options {
        http1: false,
        ..Default::default()
    };
    let srv = support::app::start_with(Arc::new(b.build()), opts).await;
    for _ in 0..2 {
        let t0 = Instant::now();
        let mut stream = watch(srv.addr, "").await;
        assert_eq!(next(&mut stream).await, Some(ServingStatus::Serving));
        assert_eq!(next(&mut stream).await, None, "ended with OK");
        let lasted = t0.elapsed();
        assert!(
            lasted >= Duration::from_millis(250) && lasted < Duration::from_secs(3),
            "{lasted:?}"
        );
    }
}

#[tokio::test]
async fn reflection_lists_the_health_service_and_serves_its_file() {
    let g = start().await;
    let mut grpc = client(g.grpc).await;
    let codec =
        tonic_prost::ProstCodec::<ServerReflectionRequest, ServerReflectionResponse>::default();
    let path = http::uri::PathAndQuery::from_static(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    );
    let requests = tokio_stream_of(vec![
        MessageRequest::ListServices(String::new()),
        MessageRequest::FileContainingSymbol("grpc.health.v1.Health".into()),
    ]);
    let mut replies = grpc
        .streaming(tonic::Request::new(requests), path, codec)
        .await
        .unwrap()
        .into_inner();
    let list = replies.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = list.message_response else {
        panic!("not a list: {list:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"grpc.health.v1.Health".to_string()),
        "{names:?}"
    );
    let file = replies.message().await.unwrap().unwrap();
    let Some(MessageResponse::FileDescriptorResponse(files)) = file.message_response else {
        panic!("not a file: {file:?}");
    };
    let fd: prost_types::FileDescriptorProto =
        prost::Message::decode(&files.file_descriptor_proto[0][..]).unwrap();
    assert_eq!(fd.name(), "grpc/health/v1/health.proto");
    let methods: Vec<&str> = fd.service[0].method.iter().map(|m| m.name()).collect();
    assert_eq!(methods, ["Check", "List", "Watch"]);
}

/// A request stream of reflection requests, one per `requests` item.
fn tokio_stream_of(
    requests: Vec<MessageRequest>,
) -> impl tonic::codegen::tokio_stream::Stream<Item = ServerReflectionRequest> {
    tonic::codegen::tokio_stream::iter(requests.into_iter().map(|r| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(r),
    }))
}

#[tokio::test]
async fn greeter_healthz_is_ok_and_readyz_follows_the_store() {
    let g = start().await;
    let live = call(g.http, Method::GET, "/healthz", "").await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(live.json()["status"], "ok");
    let ready = call(g.http, Method::GET, "/readyz", "").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["status"], "ready");

    // A write stuck behind someone else's lock holds the store thread:
    // the readiness read cannot run, so the greeter is not ready.
    let lock = WriteLock::take(&g.db);
    let http = g.http;
    let stuck = tokio::spawn(async move { call(http, Method::GET, "/helloworld/stuck", "").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ready = call(g.http, Method::GET, "/readyz", "").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json()["status"], "not ready");
    drop(lock);
    let _ = stuck.await;
    let ready = call(g.http, Method::GET, "/readyz", "").await;
    assert_eq!(ready.status, StatusCode::OK);
}

#[tokio::test]
async fn token_auth_healthz_is_ok_and_readyz_turns_503_when_draining() {
    let auth = support::token_auth::start().await;
    let live = get(Proto::H1, auth.addr, "/healthz").await;
    assert_eq!(live.status, StatusCode::OK);
    let ready = get(Proto::H1, auth.addr, "/readyz").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    auth.service.start_draining();
    let ready = get(Proto::H1, auth.addr, "/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(ready.text().contains("draining"), "{}", ready.text());
    let live = get(Proto::H1, auth.addr, "/healthz").await;
    assert_eq!(
        live.status,
        StatusCode::OK,
        "liveness does not follow draining"
    );
}

#[tokio::test]
async fn sigterm_to_the_greeter_binary_sends_not_serving_to_watchers_then_it_exits() {
    let dir = support::greeter::TempDir::new("health-sigterm");
    let db = dir.0.join("greeter.db");
    let config = dir.0.join("config.yaml");
    let text = support::greeter::config_text(&db.display().to_string(), "1s", "1s");
    std::fs::write(&config, text).unwrap();
    let config = config.display().to_string();
    let (mut child, addrs) = support::bin::spawn_draining(
        env!("CARGO_BIN_EXE_greeter"),
        &["--config", &config],
        &[("GREETER_SHUTDOWN_GRACE", "5s")],
        2,
    );
    let grpc = addrs[1];
    let mut stream = watch(grpc, "helloworld.v1.Greeter").await;
    assert_eq!(next(&mut stream).await, Some(ServingStatus::Serving));
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert_eq!(next(&mut stream).await, Some(ServingStatus::NotServing));
    assert_eq!(next(&mut stream).await, None, "the Watch ends with OK");
    // With its last stream ended, the greeter exits well within its grace.
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(t0.elapsed() < Duration::from_secs(4), "still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success(), "{status:?}");
}
