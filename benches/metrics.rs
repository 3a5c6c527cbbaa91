//! What the Prometheus metrics cost per request: router-demo's `GET /hello`
//! and `GET /book/42` through the whole engine (default chain, logger into
//! the log sink), without and with `Engine::metrics`, in the same run. The
//! budget is 5 % of `/hello`; `make load` measures the same over sockets.
//!
//! Run `cargo bench --bench metrics | grep -v '^\[handwire\]'`: the request
//! log really goes to stdout through the sink.

use std::hint::black_box;
use std::net::SocketAddr;

use bytes::Bytes;
use criterion::{criterion_group, Criterion};
use handwire::ops::metrics::Metrics;
use handwire::services::router_demo::{self, DemoOptions};
use http::{Request, StatusCode};
use http_body_util::Empty;

fn metrics(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let remote: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    for (group, path) in [("metrics_hello", "/hello"), ("metrics_book", "/book/42")] {
        let request = || {
            Request::get(path)
                .body(Empty::<Bytes>::new())
                .expect("request")
        };
        let mut g = c.benchmark_group(group);
        for (name, on) in [("metrics_off", false), ("metrics_on", true)] {
            let mut engine = router_demo::engine(DemoOptions::default()).expect("routes");
            if on {
                engine.metrics(&Metrics::new()).expect("/metrics");
            }
            let app = engine.build();
            let check = rt.block_on(app.handle(request(), remote));
            assert_eq!(check.status(), StatusCode::OK);
            g.bench_function(name, |b| {
                b.iter(|| black_box(rt.block_on(app.handle(request(), remote))))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, metrics);

#[path = "support/mod.rs"]
mod support;

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    support::print_ratios(
        &["metrics_hello", "metrics_book"],
        "metrics_on",
        "metrics_off",
    );
}
