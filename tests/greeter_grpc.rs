//! Black-box tests of the greeter's gRPC server: a tonic client for the three
//! RPCs, a raw h2 client for every error path of the hand-written framing,
//! and reflection spoken as a real bidirectional stream.

mod support;

use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use handwire::protocol::grpc::reflection::{
    MessageRequest, MessageResponse, ServerReflectionRequest, ServerReflectionResponse,
};
use handwire::protocol::grpc::{Code, Frame, Status};
use handwire::services::greeter::api::{
    Empty, HelloReply, HelloRequest, User, UserListResponse, UserRegisterRequest,
    UserRegisterResponse,
};
use http::HeaderMap;
use prost::Message;
use support::greeter::{greetings_for, start, start_with, user_rows, WriteLock};

// ---- tonic client -------------------------------------------------------

async fn tonic_call<Req, Resp>(
    addr: SocketAddr,
    method: &'static str,
    req: Req,
) -> Result<Resp, tonic::Status>
where
    Req: Message + Send + Sync + 'static,
    Resp: Message + Default + Send + Sync + 'static,
{
    support::grpc::call(addr, method, req).await
}

const SAY_HELLO: &str = "/helloworld.v1.Greeter/SayHello";
const REGISTER: &str = "/helloworld.v1.Greeter/UserRegister";
const LIST: &str = "/helloworld.v1.Greeter/UserList";

fn register_req(username: &str, password: &str) -> UserRegisterRequest {
    UserRegisterRequest {
        username: username.into(),
        password: password.into(),
    }
}

#[tokio::test]
async fn say_hello_returns_hello_name_and_stores_a_greeting_row() {
    let g = start().await;
    let reply: HelloReply = tonic_call(
        g.grpc,
        SAY_HELLO,
        HelloRequest {
            name: "gRPC wörld".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(reply.message, "Hello gRPC wörld");
    assert_eq!(greetings_for(&g.db, "gRPC wörld"), 1);
}

#[tokio::test]
async fn user_register_stores_age_one_and_answers_success() {
    let g = start().await;
    let reply: UserRegisterResponse = tonic_call(g.grpc, REGISTER, register_req("ann", "pw"))
        .await
        .unwrap();
    assert_eq!(reply.result, "success");
    assert_eq!(
        user_rows(&g.db),
        vec![(1, "ann".to_owned(), "pw".to_owned(), 1)]
    );
}

#[tokio::test]
async fn user_register_with_empty_field_is_invalid_argument() {
    let g = start().await;
    for (u, p, field) in [("", "pw", "username"), ("ann", "", "password")] {
        let err = tonic_call::<_, UserRegisterResponse>(g.grpc, REGISTER, register_req(u, p))
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert_eq!(err.message(), format!("{field} must not be empty"));
    }
    assert!(user_rows(&g.db).is_empty());
}

#[tokio::test]
async fn duplicate_username_is_already_exists() {
    let g = start().await;
    let _: UserRegisterResponse = tonic_call(g.grpc, REGISTER, register_req("ann", "pw"))
        .await
        .unwrap();
    let err = tonic_call::<_, UserRegisterResponse>(g.grpc, REGISTER, register_req("ann", "other"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::AlreadyExists);
    assert_eq!(err.message(), "username \"ann\" is already registered");
}

#[tokio::test]
async fn writes_after_the_database_directory_is_removed_are_unavailable() {
    let g = start().await;
    let _: HelloReply = tonic_call(g.grpc, SAY_HELLO, HelloRequest { name: "a".into() })
        .await
        .unwrap();
    std::fs::remove_dir_all(g.db.parent().unwrap()).unwrap();
    let hello = tonic_call::<_, HelloReply>(g.grpc, SAY_HELLO, HelloRequest { name: "b".into() })
        .await
        .unwrap_err();
    let register = tonic_call::<_, UserRegisterResponse>(g.grpc, REGISTER, register_req("x", "y"))
        .await
        .unwrap_err();
    for err in [hello, register] {
        assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
        assert!(err.message().starts_with("store unavailable"), "{err:?}");
    }
}

#[tokio::test]
async fn user_list_returns_all_users_in_id_order() {
    let g = start().await;
    let empty: UserListResponse = tonic_call(g.grpc, LIST, Empty {}).await.unwrap();
    assert!(empty.users.is_empty());
    for (u, p) in [("zed", "z1"), ("amy", "a1"), ("max", "m1")] {
        let _: UserRegisterResponse = tonic_call(g.grpc, REGISTER, register_req(u, p))
            .await
            .unwrap();
    }
    let list: UserListResponse = tonic_call(g.grpc, LIST, Empty {}).await.unwrap();
    let user = |u: &str, p: &str| User {
        username: u.into(),
        password: p.into(),
    };
    assert_eq!(
        list.users,
        vec![user("zed", "z1"), user("amy", "a1"), user("max", "m1")]
    );
}

#[tokio::test]
async fn user_register_fields_past_their_bounds_are_invalid_argument_naming_field_and_bound() {
    let g = start().await;
    let mib = "x".repeat(1 << 20);
    let cases = [
        (
            mib.as_str(),
            "pw",
            "username must be at most 64 characters, got 1048576",
        ),
        (
            &*"n".repeat(65),
            "pw",
            "username must be at most 64 characters, got 65",
        ),
        (
            "ann",
            &*"p".repeat(129),
            "password must be at most 128 bytes of UTF-8, got 129 bytes",
        ),
        (
            "a\0b",
            "pw",
            "username must match ^[A-Za-z0-9_.-]+$ (found '\\0', U+0000, at byte 1)",
        ),
        (
            "ann",
            "line\nbreak",
            r"password must match ^[^\x00-\x1F\x7F-\x9F]*$ (found '\n', U+000A, at byte 4)",
        ),
    ];
    for (u, p, message) in cases {
        let err = tonic_call::<_, UserRegisterResponse>(g.grpc, REGISTER, register_req(u, p))
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{message}");
        assert_eq!(err.message(), message);
    }
    assert!(user_rows(&g.db).is_empty());
    // The bounds themselves are accepted.
    let (u, p) = ("n".repeat(64), "p".repeat(128));
    let _: UserRegisterResponse = tonic_call(g.grpc, REGISTER, register_req(&u, &p))
        .await
        .unwrap();
    assert_eq!(user_rows(&g.db), vec![(1, u, p, 1)]);
}

#[tokio::test]
async fn user_list_past_4_mib_is_resource_exhausted_from_the_server_not_an_oversized_message() {
    let g = start().await;
    // Rows written before the bounds existed: five 1 MiB usernames.
    let conn = rusqlite::Connection::open(&g.db).unwrap();
    for n in 0..5 {
        let name = format!("{n}{}", "x".repeat(1 << 20));
        conn.execute(
            "INSERT INTO users (username, password, age) VALUES (?1, 'pw', 1)",
            [name],
        )
        .unwrap();
    }
    let mut client = h2_client(g.grpc).await;
    let (response, mut send) = client
        .send_request(request(g.grpc, "POST", LIST, &[]), false)
        .unwrap();
    send.send_data(Frame::encode_message(&Empty {}), true)
        .unwrap();
    let reply = read_reply(response).await;
    assert!(reply.data.is_empty(), "no message may be sent");
    assert_trailers_only(
        &reply,
        Code::ResourceExhausted,
        "for 5 users, over the 4194304-byte message limit",
    );
    // tonic sees the server's status, not its own decode-limit error.
    let err = tonic_call::<_, UserListResponse>(g.grpc, LIST, Empty {})
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted);
    assert!(err.message().starts_with("UserList would be"), "{err}");
}

#[tokio::test]
async fn grpc_message_quoting_a_long_method_name_is_capped_at_1_kib() {
    let g = start().await;
    // "unknown method <name> for service …" quotes the 8 KiB name.
    let path = format!("/helloworld.v1.Greeter/{}", "M".repeat(8 * 1024));
    let reply = raw_call(g.grpc, "POST", &path, &[], &hello_frame("x")).await;
    let wire = reply.headers["grpc-message"].as_bytes();
    assert_eq!(wire.len(), 1024, "capped, filled up to the cap");
    assert!(wire.ends_with(b"%E2%80%A6"), "ends with an ellipsis");
    assert_trailers_only(&reply, Code::Unimplemented, "unknown method MMM");
}

// ---- raw h2 client ------------------------------------------------------

/// What came back on one stream.
struct Reply {
    http_status: u16,
    headers: HeaderMap,
    /// True when the response HEADERS frame ended the stream (Trailers-Only).
    trailers_only: bool,
    data: Bytes,
    trailers: Option<HeaderMap>,
}

impl Reply {
    fn status(&self) -> Status {
        let from = self.trailers.as_ref().unwrap_or(&self.headers);
        Status::from_headers(from).expect("no grpc-status")
    }
}

async fn h2_client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client.ready().await.unwrap()
}

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> http::Request<()> {
    let mut b = http::Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"))
        .header("te", "trailers");
    if !headers.iter().any(|(k, _)| *k == "content-type") {
        b = b.header("content-type", "application/grpc");
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap()
}

async fn read_reply(response: h2::client::ResponseFuture) -> Reply {
    let response = response.await.unwrap();
    let (parts, mut body) = response.into_parts();
    let trailers_only = body.is_end_stream();
    let mut data = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap();
    Reply {
        http_status: parts.status.as_u16(),
        headers: parts.headers,
        trailers_only,
        data: data.freeze(),
        trailers,
    }
}

/// One call: headers, then `body` as one DATA frame ending the stream.
async fn raw_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut client = h2_client(addr).await;
    let (response, mut send) = client
        .send_request(request(addr, method, path, headers), false)
        .unwrap();
    send.send_data(Bytes::copy_from_slice(body), true).unwrap();
    read_reply(response).await
}

fn hello_frame(name: &str) -> Bytes {
    Frame::encode_message(&HelloRequest { name: name.into() })
}

fn assert_trailers_only(reply: &Reply, code: Code, message_part: &str) {
    assert_eq!(reply.http_status, 200);
    assert!(reply.trailers_only, "expected a Trailers-Only response");
    assert_eq!(reply.headers["content-type"], "application/grpc");
    let status = reply.status();
    assert_eq!(status.code, code, "{status}");
    assert!(status.message.contains(message_part), "{status}");
}

#[tokio::test]
async fn unary_success_is_headers_then_one_message_then_ok_trailers() {
    let g = start().await;
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &hello_frame("raw")).await;
    assert_eq!(reply.http_status, 200);
    assert!(!reply.trailers_only);
    assert_eq!(reply.headers["content-type"], "application/grpc");
    assert!(
        reply.headers.get("grpc-status").is_none(),
        "status belongs in trailers"
    );
    let mut decoder = handwire::protocol::grpc::Decoder::new(1 << 20);
    decoder.push(&reply.data);
    let frame = decoder.next_frame().unwrap().unwrap();
    assert!(decoder.next_frame().unwrap().is_none());
    assert_eq!(
        HelloReply::decode(frame.message).unwrap().message,
        "Hello raw"
    );
    assert_eq!(reply.trailers.as_ref().unwrap()["grpc-status"], "0");
}

#[tokio::test]
async fn application_grpc_proto_content_type_is_accepted() {
    let g = start().await;
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[("content-type", "application/grpc+proto")],
        &hello_frame("x"),
    )
    .await;
    assert_eq!(reply.status().code, Code::Ok);
}

#[tokio::test]
async fn unknown_service_is_unimplemented() {
    let g = start().await;
    let reply = raw_call(
        g.grpc,
        "POST",
        "/helloworld.v1.Nope/SayHello",
        &[],
        &hello_frame("x"),
    )
    .await;
    assert_trailers_only(
        &reply,
        Code::Unimplemented,
        "unknown service helloworld.v1.Nope",
    );
}

#[tokio::test]
async fn unknown_method_is_unimplemented() {
    let g = start().await;
    let reply = raw_call(
        g.grpc,
        "POST",
        "/helloworld.v1.Greeter/SayGoodbye",
        &[],
        &hello_frame("x"),
    )
    .await;
    assert_trailers_only(
        &reply,
        Code::Unimplemented,
        "unknown method SayGoodbye for service helloworld.v1.Greeter",
    );
}

#[tokio::test]
async fn wrong_content_type_is_http_415() {
    let g = start().await;
    for ct in ["application/json", "application/grpc+json", "text/plain"] {
        let reply = raw_call(
            g.grpc,
            "POST",
            SAY_HELLO,
            &[("content-type", ct)],
            &hello_frame("x"),
        )
        .await;
        assert_eq!(reply.http_status, 415, "{ct}");
        assert!(reply.status().message.contains(ct), "{ct}");
    }
}

#[tokio::test]
async fn non_post_method_is_http_405() {
    let g = start().await;
    let reply = raw_call(g.grpc, "GET", SAY_HELLO, &[], b"").await;
    assert_eq!(reply.http_status, 405);
    assert_eq!(reply.headers["allow"], "POST");
}

#[tokio::test]
async fn compressed_flag_without_grpc_encoding_is_internal() {
    let g = start().await;
    let mut frame = hello_frame("x").to_vec();
    frame[0] = 1;
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &frame).await;
    assert_trailers_only(
        &reply,
        Code::Internal,
        "compressed flag set on a message, but the call has no grpc-encoding",
    );
}

#[tokio::test]
async fn unsupported_grpc_encoding_is_unimplemented_with_accept_encoding() {
    let g = start().await;
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[("grpc-encoding", "deflate")],
        &hello_frame("x"),
    )
    .await;
    assert_trailers_only(
        &reply,
        Code::Unimplemented,
        "grpc-encoding \"deflate\" is not supported",
    );
    assert_eq!(reply.headers["grpc-accept-encoding"], "identity, gzip");
}

#[tokio::test]
async fn truncated_frame_is_internal() {
    let g = start().await;
    let frame = hello_frame("truncated");
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &frame[..frame.len() - 3]).await;
    assert_trailers_only(
        &reply,
        Code::Internal,
        "request stream ended inside a message",
    );
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &[0, 0]).await;
    assert_trailers_only(&reply, Code::Internal, "got 2 of 5 bytes");
}

#[tokio::test]
async fn undecodable_message_is_internal() {
    let g = start().await;
    // Field 1 with wire type 7, which does not exist.
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[],
        &Frame::encode(&[0x0f, 0x00]),
    )
    .await;
    assert_trailers_only(&reply, Code::Internal, "cannot decode request message");
}

#[tokio::test]
async fn zero_request_messages_on_unary_is_unimplemented() {
    let g = start().await;
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], b"").await;
    assert_trailers_only(&reply, Code::Unimplemented, "no request message");
}

#[tokio::test]
async fn two_request_messages_on_unary_is_unimplemented() {
    let g = start().await;
    let mut two = hello_frame("one").to_vec();
    two.extend_from_slice(&hello_frame("two"));
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &two).await;
    assert_trailers_only(&reply, Code::Unimplemented, "more than one request message");
    assert_eq!(greetings_for(&g.db, "one"), 0, "the handler must not run");
}

#[tokio::test]
async fn message_over_4_mib_is_resource_exhausted_before_it_is_sent() {
    let g = start().await;
    let mut client = h2_client(g.grpc).await;
    let (response, mut send) = client
        .send_request(request(g.grpc, "POST", SAY_HELLO, &[]), false)
        .unwrap();
    // Announce 4 MiB + 1 and send only the prefix and a few bytes, keeping
    // the stream open: the answer can only come from the prefix.
    let mut head = BytesMut::new();
    head.put_u8(0);
    head.put_u32(4 * 1024 * 1024 + 1);
    head.put_slice(b"abc");
    send.send_data(head.freeze(), false).unwrap();
    let reply = read_reply(response).await;
    assert_trailers_only(
        &reply,
        Code::ResourceExhausted,
        "received message larger than max (4194305 vs. 4194304)",
    );
}

#[tokio::test]
async fn message_of_exactly_4_mib_is_accepted_by_the_framing_and_its_long_name_refused_unstored() {
    let g = start().await;
    let name = "n".repeat(4 * 1024 * 1024 - 5); // tag + 4-byte length + name = 4 MiB
    let frame = hello_frame(&name);
    assert_eq!(frame.len(), 5 + 4 * 1024 * 1024);
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &frame).await;
    // The message is read (it is within the limit); the business rule then
    // refuses the name, before anything is stored.
    assert_trailers_only(
        &reply,
        Code::InvalidArgument,
        "name must be at most 64 bytes of UTF-8, got 4194299 bytes",
    );
    assert_eq!(greetings_for(&g.db, &name), 0);
}

#[tokio::test]
async fn say_hello_names_are_1_to_64_bytes_and_only_those_are_stored() {
    let g = start().await;
    let longest = "é".repeat(32);
    let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &hello_frame(&longest)).await;
    assert_eq!(reply.status().code, Code::Ok, "{}", reply.status());
    assert_eq!(greetings_for(&g.db, &longest), 1);
    for (name, message) in [
        ("", "name must not be empty"),
        (
            &*format!("{longest}x"),
            "name must be at most 64 bytes of UTF-8, got 65 bytes",
        ),
    ] {
        let reply = raw_call(g.grpc, "POST", SAY_HELLO, &[], &hello_frame(name)).await;
        assert_trailers_only(&reply, Code::InvalidArgument, message);
        assert_eq!(greetings_for(&g.db, name), 0);
    }
}

#[tokio::test]
async fn client_grpc_timeout_below_server_timeout_sets_the_deadline() {
    let g = start_with("1s", "1s").await;
    let lock = WriteLock::take(&g.db);
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[("grpc-timeout", "100m")],
        &hello_frame("slow"),
    )
    .await;
    assert_trailers_only(
        &reply,
        Code::DeadlineExceeded,
        "deadline exceeded after 100ms",
    );
    drop(lock);
    // Failure answered means not stored: once the store is free, a later
    // call is stored and the one that failed is not.
    let later = raw_call(g.grpc, "POST", SAY_HELLO, &[], &hello_frame("later")).await;
    assert_eq!(later.status().code, Code::Ok, "{}", later.status());
    assert_eq!(greetings_for(&g.db, "later"), 1);
    assert_eq!(greetings_for(&g.db, "slow"), 0);
}

#[tokio::test]
async fn server_timeout_below_client_grpc_timeout_sets_the_deadline() {
    let g = start_with("1s", "150ms").await;
    let lock = WriteLock::take(&g.db);
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[("grpc-timeout", "10S")],
        &hello_frame("slow"),
    )
    .await;
    assert_trailers_only(
        &reply,
        Code::DeadlineExceeded,
        "deadline exceeded after 150ms",
    );
    drop(lock);
    // Without the lock the same call succeeds.
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[("grpc-timeout", "10S")],
        &hello_frame("fast"),
    )
    .await;
    assert_eq!(reply.status().code, Code::Ok);
}

#[tokio::test]
async fn every_grpc_timeout_unit_is_understood() {
    let g = start().await;
    for t in ["1H", "1M", "5S", "900m", "900000u", "99999999n"] {
        let reply = raw_call(
            g.grpc,
            "POST",
            SAY_HELLO,
            &[("grpc-timeout", t)],
            &hello_frame("x"),
        )
        .await;
        assert_eq!(reply.status().code, Code::Ok, "{t}");
    }
}

#[tokio::test]
async fn grpc_timeout_already_passed_on_arrival_is_deadline_exceeded_and_stores_nothing() {
    let g = start().await;
    for t in ["0n", "1n", "0S"] {
        let reply = raw_call(
            g.grpc,
            "POST",
            SAY_HELLO,
            &[("grpc-timeout", t)],
            &hello_frame("late"),
        )
        .await;
        assert_trailers_only(&reply, Code::DeadlineExceeded, "deadline exceeded");
    }
    // The handler never ran: no greeting was stored for "late".
    assert_eq!(support::greeter::greetings_for(&g.db, "late"), 0);
}

#[tokio::test]
async fn malformed_grpc_timeout_is_internal() {
    let g = start().await;
    let reply = raw_call(
        g.grpc,
        "POST",
        SAY_HELLO,
        &[("grpc-timeout", "5x")],
        &hello_frame("x"),
    )
    .await;
    assert_trailers_only(&reply, Code::Internal, "malformed grpc-timeout \"5x\"");
}

#[tokio::test]
async fn grpc_message_is_percent_encoded_on_the_wire() {
    let g = start().await;
    // A username outside the ASCII set: the message quotes the character.
    let body = Frame::encode_message(&register_req("jürgen", "pw"));
    let reply = raw_call(g.grpc, "POST", REGISTER, &[], &body).await;
    assert_eq!(
        reply.headers["grpc-message"],
        "username must match ^[A-Za-z0-9_.-]+$ (found '%C3%BC', U+00FC, at byte 1)"
    );
    assert_eq!(
        reply.status().message,
        "username must match ^[A-Za-z0-9_.-]+$ (found 'ü', U+00FC, at byte 1)"
    );
    assert_eq!(reply.status().code, Code::InvalidArgument);
}

#[tokio::test]
async fn server_keeps_serving_after_bad_calls() {
    let g = start().await;
    let _ = raw_call(g.grpc, "POST", SAY_HELLO, &[], &[9, 9, 9, 9, 9, 9]).await;
    let reply: HelloReply = tonic_call(
        g.grpc,
        SAY_HELLO,
        HelloRequest {
            name: "still".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(reply.message, "Hello still");
}

// ---- reflection as a live bidirectional stream ---------------------------

async fn reflection_roundtrips(addr: SocketAddr, version: &str) {
    let mut client = h2_client(addr).await;
    let path = format!("/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo");
    let (response, mut send) = client
        .send_request(request(addr, "POST", &path, &[]), false)
        .unwrap();
    let mut decoder = handwire::protocol::grpc::Decoder::new(1 << 20);
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();

    // Each request is answered while the request stream is still open.
    let mut next = |req: MessageRequest| {
        send.send_data(
            Frame::encode_message(&ServerReflectionRequest {
                host: String::new(),
                message_request: Some(req),
            }),
            false,
        )
        .unwrap();
    };
    let mut recv = async || -> ServerReflectionResponse {
        loop {
            if let Some(frame) = decoder.next_frame().unwrap() {
                return ServerReflectionResponse::decode(frame.message).unwrap();
            }
            let chunk = body.data().await.expect("stream ended early").unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            decoder.push(&chunk);
        }
    };

    next(MessageRequest::ListServices(String::new()));
    match recv().await.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
            assert_eq!(
                names,
                [
                    "grpc.health.v1.Health",
                    "grpc.reflection.v1.ServerReflection",
                    "grpc.reflection.v1alpha.ServerReflection",
                    "helloworld.v1.Greeter"
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    next(MessageRequest::FileContainingSymbol(
        "helloworld.v1.Greeter".into(),
    ));
    match recv().await.message_response {
        Some(MessageResponse::FileDescriptorResponse(files)) => {
            let fd = prost_types::FileDescriptorProto::decode(&files.file_descriptor_proto[0][..])
                .unwrap();
            assert_eq!(fd.name(), "helloworld/v1/greeter.proto");
            let methods: Vec<&str> = fd.service[0].method.iter().map(|m| m.name()).collect();
            assert_eq!(
                methods,
                ["SayHello", "SayHelloAgain", "UserRegister", "UserList"]
            );
        }
        other => panic!("{other:?}"),
    }
    next(MessageRequest::FileContainingSymbol(
        "helloworld.v1.Nope".into(),
    ));
    match recv().await.message_response {
        Some(MessageResponse::ErrorResponse(e)) => assert_eq!(e.error_code, Code::NotFound as i32),
        other => panic!("{other:?}"),
    }
    // Half-close: the server ends the stream with OK trailers.
    send.send_data(Bytes::new(), true).unwrap();
    assert!(body.data().await.is_none());
    let trailers = body.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
}

#[tokio::test]
async fn reflection_v1alpha_answers_each_request_on_the_open_stream() {
    let g = start().await;
    reflection_roundtrips(g.grpc, "v1alpha").await;
}

#[tokio::test]
async fn reflection_v1_answers_each_request_on_the_open_stream() {
    let g = start().await;
    reflection_roundtrips(g.grpc, "v1").await;
}

// ---- access log of the real binary --------------------------------------

#[tokio::test]
async fn binary_logs_one_line_per_call_with_its_final_status_on_grpc_and_grpc_web() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = support::greeter::TempDir::new("grpc-log");
    let config = dir.0.join("config.yaml");
    let db = dir.0.join("g.db");
    std::fs::write(
        &config,
        support::greeter::config_text(&db.display().to_string(), "1s", "1s"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_greeter"))
        .args(["--config", config.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_line = |what: &str| {
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("no {what} line: {e}"))
    };
    let _cap = next_line("connection cap");
    let http: SocketAddr = next_line("HTTP address")
        .strip_prefix("greeter: HTTP listening on ")
        .expect("HTTP address line")
        .parse()
        .unwrap();
    let grpc: SocketAddr = next_line("gRPC address")
        .strip_prefix("greeter: gRPC listening on ")
        .expect("gRPC address line")
        .parse()
        .unwrap();

    let _: HelloReply = tonic_call(grpc, SAY_HELLO, HelloRequest { name: "log".into() })
        .await
        .unwrap();
    let err = tonic_call::<_, UserRegisterResponse>(grpc, REGISTER, register_req("", "pw"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    // gRPC-Web on the HTTP port: the gRPC line with its status.
    let web = support::http::send(
        support::http::Proto::H1,
        http,
        http::Method::POST,
        REGISTER,
        &[("content-type", "application/grpc-web+proto")],
        Frame::encode_message(&register_req("", "pw")),
    )
    .await;
    assert_eq!(web.status, 200);

    let mut grpc_lines = Vec::new();
    while grpc_lines.len() < 3 {
        let line = next_line("[grpc] access log");
        if line.starts_with("[grpc] ") {
            grpc_lines.push(line);
        }
    }
    assert!(grpc_lines[0].contains(" | OK | "), "{}", grpc_lines[0]);
    assert!(
        grpc_lines[0].contains(" | 127.0.0.1 | /helloworld.v1.Greeter/SayHello | trace_id="),
        "{}",
        grpc_lines[0]
    );
    assert!(
        grpc_lines[1].contains(" | INVALID_ARGUMENT | "),
        "{}",
        grpc_lines[1]
    );
    assert!(
        grpc_lines[1].contains("/helloworld.v1.Greeter/UserRegister | trace_id="),
        "{}",
        grpc_lines[1]
    );
    assert!(
        grpc_lines[2].contains(" | INVALID_ARGUMENT | ")
            && grpc_lines[2].contains("/helloworld.v1.Greeter/UserRegister | trace_id="),
        "{}",
        grpc_lines[2]
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// A reflection request near the 4 MiB limit would be echoed in an answer
/// twice that size: the stream ends with RESOURCE_EXHAUSTED instead, and no
/// message over the limit is sent.
#[tokio::test]
async fn a_reflection_answer_over_4_mib_is_resource_exhausted_not_sent() {
    let g = start().await;
    // ServerReflectionRequest { file_by_filename (field 3): 4 MiB - 16 bytes }.
    let name = "f".repeat(4 * 1024 * 1024 - 16);
    let mut message = vec![0x1a];
    let mut len = name.len();
    while len >= 0x80 {
        message.push((len as u8) | 0x80);
        len >>= 7;
    }
    message.push(len as u8);
    message.extend_from_slice(name.as_bytes());
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(&message);
    let reply = raw_call(
        g.grpc,
        "POST",
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        &[],
        &frame,
    )
    .await;
    assert!(
        reply.data.len() <= 5 + 4 * 1024 * 1024,
        "{} bytes sent",
        reply.data.len()
    );
    let status = reply.status();
    assert_eq!(status.code, Code::ResourceExhausted, "{status}");
    assert!(status.message.contains("larger than max"), "{status}");
}

/// One reflection stream answers at most 4 MiB plus 4 times the bytes it
/// was asked: small requests whose answers are whole descriptor files
/// (28 bytes asked for 2,899 answered: 140 KB had 14.5 MB answered before
/// the bound) end with RESOURCE_EXHAUSTED naming the bound.
#[tokio::test]
async fn a_reflection_stream_answers_at_most_4_mib_plus_4_times_what_it_was_asked() {
    let g = start().await;
    let ask = Frame::encode_message(&ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol(
            "helloworld.v1.Greeter".into(),
        )),
    });
    let count = 5_000;
    let body: Vec<u8> = ask
        .iter()
        .copied()
        .cycle()
        .take(ask.len() * count)
        .collect();
    let reply = raw_call(
        g.grpc,
        "POST",
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        &[],
        &body,
    )
    .await;
    let bound = 4 * 1024 * 1024 + 4 * body.len();
    assert!(
        reply.data.len() <= bound,
        "{} bytes answered to {} asked",
        reply.data.len(),
        body.len()
    );
    let status = reply.status();
    assert_eq!(status.code, Code::ResourceExhausted, "{status}");
    assert!(
        status
            .message
            .contains("4 MiB plus 4 times the bytes asked"),
        "{status}"
    );
}
