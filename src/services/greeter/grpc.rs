//! The greeter's gRPC transport: the `helloworld.v1.Greeter` methods of
//! [`super::rpc`] as unary handlers, plus server reflection serving
//! greeter.proto and the google/api files it imports.

use std::sync::Arc;
use std::time::Duration;

use super::api;
use crate::protocol::gateway::UnaryMethod;
use crate::protocol::grpc::descriptor::{ParsedFile, ProtoError};
use crate::protocol::grpc::reflection::Reflection;
use crate::protocol::grpc::{Options, Server, Status};

/// Builds the gRPC server: `methods` under [`api::SERVICE`] and reflection
/// over `files`, `timeout` per call.
pub fn server(
    methods: &[(&str, UnaryMethod)],
    files: &[ParsedFile],
    timeout: Option<Duration>,
) -> Result<Server, ProtoError> {
    let options = Options {
        timeout,
        ..Options::default()
    };
    let mut b = Server::builder(options);
    for (name, method) in methods {
        let method = method.clone();
        b.unary(
            api::SERVICE,
            name,
            Arc::new(move |bytes| {
                let call = method(bytes);
                Box::pin(async move { call.await.map_err(|f| Status::new(f.code, f.message)) })
            }),
        );
    }
    let descriptors = files.iter().map(|f| f.descriptor.clone()).collect();
    Arc::new(Reflection::new(descriptors)?).register(&mut b);
    Ok(b.build())
}
