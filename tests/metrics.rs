//! `GET /metrics`: the exposition text read by a real parser (Python's
//! `prometheus_client`), its counts checked against the requests made, and
//! its label set bounded whatever paths clients send.

mod support;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use handwire::ops::metrics::{Kind, Metrics};
use handwire::server::Options;
use handwire::services::greeter::api::{HelloReply, HelloRequest};
use handwire::services::router_demo::{self, DemoOptions};
use handwire::web::App;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use serde_json::Value;
use support::http::{get, send, Proto};

/// Every sample as `[family, type, sample name, labels, value]`.
const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out.append([fam.name, fam.type, s.name, s.labels, s.value])
print(json.dumps(out))
"#;

struct Samples(Vec<Value>);

impl Samples {
    fn parse(python: &std::path::PathBuf, text: &str) -> Samples {
        let json = support::py::run(python, PARSE, text.as_bytes());
        match serde_json::from_str(&json).unwrap() {
            Value::Array(v) => Samples(v),
            other => panic!("not a list: {other}"),
        }
    }

    /// The value of the sample `name` whose labels include `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.0
            .iter()
            .find(|s| {
                s[2] == name
                    && labels
                        .iter()
                        .all(|(k, v)| s[3].get(*k).and_then(Value::as_str) == Some(*v))
            })
            .map(|s| s[4].as_f64().unwrap())
    }

    fn family_type(&self, family: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|s| s[0] == family)
            .and_then(|s| s[1].as_str())
    }
}

fn demo_app(metrics: &Arc<Metrics>) -> Arc<App> {
    let mut e = router_demo::engine(DemoOptions::default()).unwrap();
    e.metrics(metrics).unwrap();
    e.build()
}

async fn metrics_text(addr: SocketAddr) -> String {
    let reply = get(Proto::H1, addr, "/metrics").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    reply.text()
}

#[tokio::test]
async fn metrics_parse_with_prometheus_client_and_count_every_request_by_route_template() {
    let Some(python) = support::py::python("metrics_parse_with_prometheus_client") else {
        return;
    };
    let metrics = Metrics::new();
    let opts = Options {
        connection_gauge: Some(metrics.connections(Kind::Http)),
        ..Options::default()
    };
    let srv = support::app::start_with(demo_app(&metrics), opts).await;
    for _ in 0..7 {
        assert_eq!(get(Proto::H1, srv.addr, "/hello").await.status, 200);
    }
    for id in 0..5 {
        let path = format!("/book/{id}");
        assert_eq!(get(Proto::H2, srv.addr, &path).await.status, 200);
    }
    for n in 0..3 {
        let path = format!("/no/such/path/{n}");
        assert_eq!(get(Proto::H1, srv.addr, &path).await.status, 404);
    }
    for _ in 0..2 {
        let reply = send(Proto::H1, srv.addr, Method::POST, "/hello", &[], "").await;
        assert_eq!(reply.status, 405);
    }
    assert_eq!(get(Proto::H1, srv.addr, "/index").await.status, 403);

    let text = metrics_text(srv.addr).await;
    let s = Samples::parse(&python, &text);
    let code = |op: &str, code: &str| {
        s.value(
            "server_requests_code_total",
            &[("kind", "http"), ("operation", op), ("code", code)],
        )
    };
    assert_eq!(code("/hello", "200"), Some(7.0), "{text}");
    assert_eq!(code("/book/:id", "200"), Some(5.0), "{text}");
    assert_eq!(code("unmatched", "404"), Some(3.0), "{text}");
    assert_eq!(code("unmatched", "405"), Some(2.0), "{text}");
    assert_eq!(code("/index", "403"), Some(1.0), "{text}");
    assert!(
        s.value(
            "server_requests_code_total",
            &[("operation", "/index"), ("reason", "FORBIDDEN")]
        )
        .is_some(),
        "{text}"
    );
    assert!(!text.contains("/book/3"), "raw paths never become labels");
    assert!(!text.contains("/no/such"), "raw paths never become labels");

    let hello = [("kind", "http"), ("operation", "/hello")];
    let count = s.value("server_requests_seconds_count", &hello);
    assert_eq!(count, Some(7.0), "{text}");
    let mut last = 0.0;
    for le in [
        "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf",
    ] {
        let mut labels = hello.to_vec();
        labels.push(("le", le));
        let v = s
            .value("server_requests_seconds_bucket", &labels)
            .unwrap_or_else(|| panic!("no bucket le={le}: {text}"));
        assert!(v >= last, "buckets are cumulative: {text}");
        last = v;
    }
    assert_eq!(last, 7.0, "+Inf equals _count");
    assert!(s.value("server_requests_seconds_sum", &hello).unwrap() > 0.0);

    assert_eq!(s.family_type("server_requests_seconds"), Some("histogram"));
    assert_eq!(s.family_type("server_requests_code"), Some("counter"));
    assert_eq!(s.family_type("server_connections"), Some("gauge"));
    let open = s.value("server_connections", &[("kind", "http")]).unwrap();
    assert!(open >= 1.0, "the /metrics request's own connection: {text}");
    assert!(s.value("log_lines_dropped_total", &[]).is_some(), "{text}");
}

/// The lines of a metrics body without their values: the series it holds.
fn series(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k).to_string())
        .collect()
}

#[tokio::test]
async fn ten_thousand_distinct_paths_add_no_series_to_the_metrics_body() {
    let metrics = Metrics::new();
    let app = demo_app(&metrics);
    let remote: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let hit = |path: String| {
        let req = Request::get(path).body(Empty::<Bytes>::new()).unwrap();
        app.handle(req, remote)
    };
    // One of each kind first, so that every series exists.
    assert_eq!(hit("/book/first".into()).await.status(), 200);
    assert_eq!(hit("/first-unknown".into()).await.status(), 404);
    let before = metrics.render();
    for i in 0..10_000 {
        let path = match i % 2 {
            0 => format!("/book/{i}"),
            _ => format!("/unknown/{i}/x%20y"),
        };
        let resp = hit(path).await;
        assert!(resp.status() == 200 || resp.status() == 404);
        let _ = resp.into_body().collect().await;
    }
    let after = metrics.render();
    assert_eq!(series(&before), series(&after), "{after}");
    // Only numbers grew: at most a few digits per line.
    let lines = after.lines().count();
    assert!(
        after.len() <= before.len() + 8 * lines,
        "{} -> {} bytes",
        before.len(),
        after.len()
    );
    assert!(after.contains(
        "server_requests_code_total{kind=\"http\",operation=\"/book/:id\",code=\"200\",reason=\"\"} 5001\n"
    ), "{after}");
    assert!(after.contains(
        "server_requests_code_total{kind=\"http\",operation=\"unmatched\",code=\"404\",reason=\"NOT_FOUND\"} 5001\n"
    ), "{after}");
}

async fn say_hello(addr: SocketAddr, name: &str) -> HelloReply {
    call(addr, "/helloworld.v1.Greeter/SayHello", name)
        .await
        .unwrap()
}

async fn call(addr: SocketAddr, path: &str, name: &str) -> Result<HelloReply, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::try_from(path).unwrap();
    let codec = tonic_prost::ProstCodec::<HelloRequest, HelloReply>::default();
    let req = HelloRequest { name: name.into() };
    grpc.unary(tonic::Request::new(req), path, codec)
        .await
        .map(|r| r.into_inner())
}

#[tokio::test]
async fn the_greeter_counts_grpc_calls_by_method_and_its_group_commit_batches() {
    let Some(python) = support::py::python("the_greeter_counts_grpc_calls") else {
        return;
    };
    let g = support::greeter::start().await;
    for name in ["a", "b", "c"] {
        assert_eq!(
            say_hello(g.grpc, name).await.message,
            format!("Hello {name}")
        );
    }
    // Over HTTP the proto-declared route counts under its template, not
    // under the unmatched label of the engine's fallback it is served from.
    for name in ["d", "e"] {
        let reply = support::greeter::call(
            g.http,
            http::Method::GET,
            &format!("/helloworld/{name}"),
            "",
        )
        .await;
        assert_eq!(reply.status, http::StatusCode::OK);
    }
    // Unknown methods share one series, whatever their names.
    for n in 0..4 {
        let path = format!("/helloworld.v1.Greeter/NoSuchMethod{n}");
        let err = call(g.grpc, &path, "x").await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unimplemented);
    }
    let text = metrics_text(g.http).await;
    let s = Samples::parse(&python, &text);
    let http_route = [("kind", "http"), ("operation", "/helloworld/{name}")];
    assert_eq!(
        s.value("server_requests_seconds_count", &http_route),
        Some(2.0),
        "{text}"
    );
    let say = [
        ("kind", "grpc"),
        ("operation", "/helloworld.v1.Greeter/SayHello"),
    ];
    let mut ok = say.to_vec();
    ok.extend([("code", "0"), ("reason", "")]);
    assert_eq!(
        s.value("server_requests_code_total", &ok),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        s.value("server_requests_seconds_count", &say),
        Some(3.0),
        "{text}"
    );
    // Each SayHello stores one greeting: the batches hold five writes in all.
    assert_eq!(s.family_type("greeter_store_batch_size"), Some("histogram"));
    assert_eq!(
        s.value("greeter_store_batch_size_sum", &[]),
        Some(5.0),
        "{text}"
    );
    let unmatched = [
        ("kind", "grpc"),
        ("operation", "unmatched"),
        ("code", "12"),
        ("reason", "UNIMPLEMENTED"),
    ];
    assert_eq!(
        s.value("server_requests_code_total", &unmatched),
        Some(4.0),
        "{text}"
    );
    assert!(
        !text.contains("NoSuchMethod"),
        "raw paths never become labels"
    );
    let grpc_open = s.value("server_connections", &[("kind", "grpc")]);
    assert!(grpc_open.is_some(), "{text}");
}
