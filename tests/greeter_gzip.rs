//! gzip on the greeter's gRPC port: a tonic client with gzip on both sides,
//! and a raw h2 client for what must be seen on the wire (flags, headers)
//! and for the requests no well-behaved client sends (a gzip bomb, a
//! compressed flag without an encoding, an unknown encoding).

mod support;

use std::io::{Read, Write};
use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use handwire::protocol::grpc::Decoder;
use handwire::protocol::grpc::{Code, Frame, Status};
use handwire::services::greeter::api::{
    Empty, HelloReply, HelloRequest, UserListResponse, UserRegisterRequest, UserRegisterResponse,
};
use http::HeaderMap;
use prost::Message;
use support::greeter::{greetings_for, start};
use tonic::codec::CompressionEncoding;

const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";
const REGISTER: &str = "/helloworld.v1.Greeter/UserRegister";
const LIST: &str = "/helloworld.v1.Greeter/UserList";

/// A tonic call sending gzip-compressed requests and accepting gzip replies.
async fn tonic_gzip<Req, Resp>(addr: SocketAddr, method: &'static str, req: Req) -> Resp
where
    Req: Message + Send + Sync + 'static,
    Resp: Message + Default + Send + Sync + 'static,
{
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel)
        .send_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Gzip);
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static(method);
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    grpc.unary(tonic::Request::new(req), path, codec)
        .await
        .unwrap()
        .into_inner()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A frame with flag 1 around `compressed`.
fn compressed_frame(compressed: &[u8]) -> Vec<u8> {
    let mut f = vec![1];
    f.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
    f.extend_from_slice(compressed);
    f
}

struct Reply {
    headers: HeaderMap,
    data: Bytes,
    status: Status,
}

/// One call over a raw h2 connection: `headers` and `body` in one DATA frame.
async fn raw_call(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = client.ready().await.unwrap();
    let mut req = http::Request::post(format!("http://{addr}{path}"))
        .header("te", "trailers")
        .header("content-type", "application/grpc");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let (response, mut send) = client.send_request(req.body(()).unwrap(), false).unwrap();
    send.send_data(Bytes::copy_from_slice(body), true).unwrap();
    let (parts, mut body) = response.await.unwrap().into_parts();
    let mut data = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap();
    let status =
        Status::from_headers(trailers.as_ref().unwrap_or(&parts.headers)).expect("a grpc-status");
    Reply {
        headers: parts.headers,
        data: data.freeze(),
        status,
    }
}

fn one_frame(data: &Bytes) -> Frame {
    let mut decoder = Decoder::new(usize::MAX);
    decoder.push(data);
    decoder.next_frame().unwrap().expect("one whole frame")
}

/// Register users until `UserList` answers well over 1 KiB.
async fn register_many(addr: SocketAddr) {
    for i in 0..40 {
        let req = UserRegisterRequest {
            username: format!("user-{i:02}-with-a-longish-name"),
            password: format!("password-{i:02}"),
        };
        let reply: UserRegisterResponse = tonic_gzip(addr, REGISTER, req).await;
        assert_eq!(reply.result, "success");
    }
}

#[tokio::test]
async fn tonic_with_gzip_both_ways_gets_the_same_answers() {
    let g = start().await;
    // Names are at most 64 bytes: the request is compressed all the same (the
    // client compresses every message), the short reply is not; UserList
    // below is the reply over 1 KiB.
    let name = "gzip ".repeat(12);
    let reply: HelloReply =
        tonic_gzip(g.grpc, SAY_HELLO, HelloRequest { name: name.clone() }).await;
    assert_eq!(reply.message, format!("Hello {name}"));
    assert_eq!(greetings_for(&g.db, &name), 1);
    register_many(g.grpc).await;
    let list: UserListResponse = tonic_gzip(g.grpc, LIST, Empty {}).await;
    assert_eq!(list.users.len(), 40);
    assert_eq!(list.users[39].password, "password-39");
}

#[tokio::test]
async fn replies_over_1_kib_are_gzip_only_when_the_client_accepts_gzip() {
    let g = start().await;
    register_many(g.grpc).await;
    let empty = Frame::encode_message(&Empty {});
    let accept = [("grpc-accept-encoding", "identity, gzip")];

    let plain = raw_call(g.grpc, LIST, &[], &empty).await;
    assert_eq!(plain.status.code, Code::Ok);
    assert!(plain.headers.get("grpc-encoding").is_none());
    let plain_frame = one_frame(&plain.data);
    assert!(!plain_frame.compressed);
    assert!(plain_frame.message.len() > 1024, "the list is over 1 KiB");

    let packed = raw_call(g.grpc, LIST, &accept, &empty).await;
    assert_eq!(packed.status.code, Code::Ok);
    assert_eq!(packed.headers["grpc-encoding"], "gzip");
    let frame = one_frame(&packed.data);
    assert!(frame.compressed, "flag 1");
    assert!(frame.message.len() < plain_frame.message.len());
    let mut inflated = Vec::new();
    GzDecoder::new(&frame.message[..])
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated, plain_frame.message);

    // A small reply stays plain even for a client that accepts gzip.
    let hello = Frame::encode_message(&HelloRequest { name: "x".into() });
    let small = raw_call(g.grpc, SAY_HELLO, &accept, &hello).await;
    assert!(small.headers.get("grpc-encoding").is_none());
    assert!(!one_frame(&small.data).compressed);
    // Every answer says what the server accepts.
    assert_eq!(small.headers["grpc-accept-encoding"], "identity, gzip");
}

#[tokio::test]
async fn a_gzip_request_is_decoded() {
    let g = start().await;
    let message = HelloRequest {
        name: "raw gzip".into(),
    }
    .encode_to_vec();
    let body = compressed_frame(&gzip(&message));
    let reply = raw_call(g.grpc, SAY_HELLO, &[("grpc-encoding", "gzip")], &body).await;
    assert_eq!(reply.status.code, Code::Ok, "{}", reply.status);
    let hello = HelloReply::decode(one_frame(&reply.data).message).unwrap();
    assert_eq!(hello.message, "Hello raw gzip");
}

#[tokio::test]
async fn a_gzip_bomb_is_resource_exhausted_at_the_message_limit() {
    let g = start().await;
    // 64 MiB of zeros in about 64 KiB: far past the 4 MiB message limit.
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        e.write_all(&zeros).unwrap();
    }
    let bomb = e.finish().unwrap();
    assert!(bomb.len() < 128 << 10);
    let reply = raw_call(
        g.grpc,
        SAY_HELLO,
        &[("grpc-encoding", "gzip")],
        &compressed_frame(&bomb),
    )
    .await;
    assert_eq!(
        reply.status.code,
        Code::ResourceExhausted,
        "{}",
        reply.status
    );
    assert!(
        reply
            .status
            .message
            .contains("decompressed message larger than max"),
        "{}",
        reply.status
    );
}

#[tokio::test]
async fn a_compressed_flag_without_grpc_encoding_is_internal() {
    let g = start().await;
    let message = HelloRequest { name: "x".into() }.encode_to_vec();
    let body = compressed_frame(&gzip(&message));
    let reply = raw_call(g.grpc, SAY_HELLO, &[], &body).await;
    assert_eq!(reply.status.code, Code::Internal, "{}", reply.status);
    assert!(reply.status.message.contains("no grpc-encoding"));
    let reply = raw_call(g.grpc, SAY_HELLO, &[("grpc-encoding", "identity")], &body).await;
    assert_eq!(reply.status.code, Code::Internal, "{}", reply.status);
}

#[tokio::test]
async fn an_unknown_encoding_is_unimplemented_and_names_the_accepted_ones() {
    let g = start().await;
    let hello = Frame::encode_message(&HelloRequest { name: "x".into() });
    let reply = raw_call(g.grpc, SAY_HELLO, &[("grpc-encoding", "br")], &hello).await;
    assert_eq!(reply.status.code, Code::Unimplemented);
    assert!(reply.status.message.contains("\"br\""), "{}", reply.status);
    assert_eq!(reply.headers["grpc-accept-encoding"], "identity, gzip");
    assert_eq!(greetings_for(&g.db, "x"), 0, "the handler must not run");
}

#[tokio::test]
async fn a_streaming_reply_over_1_kib_reaches_a_gzip_client_compressed() {
    use handwire::protocol::grpc::reflection::{
        MessageRequest, MessageResponse, ServerReflectionRequest, ServerReflectionResponse,
    };
    let g = start().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", g.grpc))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel).accept_compressed(CompressionEncoding::Gzip);
    grpc.ready().await.unwrap();
    let codec =
        tonic_prost::ProstCodec::<ServerReflectionRequest, ServerReflectionResponse>::default();
    let path = http::uri::PathAndQuery::from_static(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    );
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol(
            "grpc.reflection.v1.ServerReflection".into(),
        )),
    };
    let requests = tonic::codegen::tokio_stream::iter(vec![request]);
    let response = grpc
        .streaming(tonic::Request::new(requests), path, codec)
        .await
        .unwrap();
    assert_eq!(
        response
            .metadata()
            .get("grpc-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip"),
        "a streaming call to a gzip client says so in its headers"
    );
    let mut replies = response.into_inner();
    let reply = replies.message().await.unwrap().unwrap();
    assert!(reply.encoded_len() > 1024, "the reply is over 1 KiB");
    let Some(MessageResponse::FileDescriptorResponse(files)) = reply.message_response else {
        panic!("not a file: {reply:?}");
    };
    let fd = prost_types::FileDescriptorProto::decode(&files.file_descriptor_proto[0][..]).unwrap();
    assert_eq!(fd.name(), "grpc/reflection/v1/reflection.proto");
}
