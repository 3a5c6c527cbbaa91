//! The one tonic client of the tests: a plaintext h2 channel to a server on
//! 127.0.0.1, and unary calls by method path with prost messages.

use std::net::SocketAddr;

use tonic::client::Grpc;
use tonic::transport::Channel;

/// A client of the gRPC server at `addr`, connected and ready.
pub async fn client(addr: SocketAddr) -> Grpc<Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut grpc = Grpc::new(channel);
    grpc.ready().await.expect("ready");
    grpc
}

/// One unary call of `method` (`/package.Service/Method`) on `grpc`.
pub async fn call_on<Req, Resp>(
    grpc: &mut Grpc<Channel>,
    method: &'static str,
    req: Req,
) -> Result<Resp, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    grpc.ready().await.expect("ready");
    let path = http::uri::PathAndQuery::from_static(method);
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    grpc.unary(tonic::Request::new(req), path, codec)
        .await
        .map(|r| r.into_inner())
}

/// One unary call of `method` on a new connection to `addr`.
pub async fn call<Req, Resp>(
    addr: SocketAddr,
    method: &'static str,
    req: Req,
) -> Result<Resp, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    call_on(&mut client(addr).await, method, req).await
}
