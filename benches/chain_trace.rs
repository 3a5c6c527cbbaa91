//! What the chain trace costs: one request through the engine (matcher,
//! context, a five-handler chain with Next and a token check, response),
//! with tracing off and on, in the same run. Off should be the price of the
//! chain alone (one `Option` check per handler); on pays for building the
//! trace text and handing it to the log sink.
//!
//! Run `cargo bench --bench chain_trace | grep -v '^\[trace\]'`: the traced
//! variant really writes its lines to stdout through the sink.

use std::hint::black_box;
use std::net::SocketAddr;

use bytes::Bytes;
use criterion::{criterion_group, Criterion};
use http::{Request, StatusCode};
use http_body_util::Empty;

fn request() -> Request<Empty<Bytes>> {
    Request::get("/index")
        .header("token", "x")
        .body(Empty::new())
        .expect("request")
}

fn chain_trace(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let remote: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let mut group = c.benchmark_group("engine_dispatch_index");
    for (name, trace) in [("trace_off", false), ("trace_on", true)] {
        let app = chain::index_app(trace);
        let check = rt.block_on(app.handle(request(), remote));
        assert_eq!(check.status(), StatusCode::OK);
        group.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(app.handle(request(), remote))))
        });
    }
    group.finish();
}

criterion_group!(benches, chain_trace);

#[path = "support/chain.rs"]
mod chain;
#[path = "support/mod.rs"]
mod support;

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    support::print_ratios(&["engine_dispatch_index"], "trace_on", "trace_off");
}
