//! The greeter's gRPC transport: the `helloworld.v1.Greeter` methods of
//! [`super::rpc`] (the same table the HTTP gateway serves), plus server reflection serving
//! greeter.proto and the google/api files it imports, and the google/rpc
//! files of the error details every failure carries (ErrorInfo with the
//! same reason the HTTP body gives, under the domain `helloworld.v1.Greeter`).

use std::sync::Arc;
use std::time::Duration;

use super::api;
use crate::ops::metrics::Metrics;
use crate::protocol::grpc::descriptor::{ParsedFile, ProtoError};
use crate::protocol::grpc::health::{self, Health};
use crate::protocol::grpc::reflection::Reflection;
use crate::protocol::grpc::{Options, Server, UnaryMethod};

/// Builds the gRPC server: `methods` under [`api::SERVICE`] and reflection
/// over `files`, `health`, `timeout` per call, every call counted in
/// `metrics`.
pub fn server(
    methods: &[(&str, UnaryMethod)],
    files: &[ParsedFile],
    timeout: Option<Duration>,
    access_log: bool,
    metrics: &Arc<Metrics>,
    health: Arc<Health>,
) -> Result<Server, ProtoError> {
    let options = Options {
        timeout,
        access_log,
        ..Options::default()
    };
    let mut b = Server::builder(options);
    b.metrics(metrics);
    for (name, method) in methods {
        b.unary(api::SERVICE, name, method.clone());
    }
    health.register(&mut b);
    let mut descriptors: Vec<_> = files.iter().map(|f| f.descriptor.clone()).collect();
    descriptors.push(health::file_descriptor()?);
    descriptors.push(crate::protocol::grpc::details::file_descriptor()?);
    Arc::new(Reflection::new(descriptors)?).register(&mut b);
    Ok(b.build())
}
