//! A [`Gateway`] on a test proto, served on 127.0.0.1:0 behind a bare
//! engine (every request goes to the gateway), and the method that echoes
//! its request message: what comes back is exactly the message the gateway
//! built from path, query and body.

use std::sync::Arc;

use bytes::Bytes;
use handwire::protocol::gateway::Gateway;
use handwire::protocol::grpc::UnaryMethod;
use handwire::web::{handler, Engine};

use super::app::{start, TestServer};

/// Returns the request message as the reply (framed as gRPC frames it).
pub fn echo() -> UnaryMethod {
    Arc::new(|bytes: Bytes| {
        Box::pin(async move {
            let mut framed = vec![0u8];
            framed.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            framed.extend_from_slice(&bytes);
            Ok(Bytes::from(framed))
        })
    })
}

/// Serves `gateway` alone: its routes, its own 404 and 405.
pub async fn serve(gateway: Gateway) -> TestServer {
    let gateway = Arc::new(gateway);
    let mut e = Engine::bare();
    e.no_route(vec![handler(move |c| {
        let gateway = gateway.clone();
        Box::pin(async move { gateway.serve(c).await })
    })]);
    start(e.build()).await
}
