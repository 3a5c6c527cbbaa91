//! Proto drift: the hand-written prost structs of `greeter::api` must carry
//! exactly the fields (names and numbers) of `proto/helloworld/v1/greeter.proto`,
//! and reflection must serve that same file.

mod support;

use std::collections::BTreeSet;

use handwire::services::greeter::api::{self, *};
use prost::Message;
use prost_types::field_descriptor_proto::Type;
use support::drift::{check_sample, field_numbers};

/// A sample in which every string field holds its own name; naming the fields
/// here also makes a field added to a struct fail to compile.
macro_rules! named {
    ($t:ident { $($f:ident),* }) => { $t { $($f: stringify!($f).to_owned()),* } };
}

#[test]
fn rust_messages_match_greeter_proto() {
    let fd = api::file_descriptor().unwrap();
    let samples: Vec<(&str, Vec<u8>)> = vec![
        (
            "HelloRequest",
            named!(HelloRequest { name }).encode_to_vec(),
        ),
        ("HelloReply", named!(HelloReply { message }).encode_to_vec()),
        (
            "UserRegisterRequest",
            named!(UserRegisterRequest { username, password }).encode_to_vec(),
        ),
        (
            "UserRegisterResponse",
            named!(UserRegisterResponse { result }).encode_to_vec(),
        ),
        ("Empty", Empty {}.encode_to_vec()),
        ("User", named!(User { username, password }).encode_to_vec()),
        (
            "UserListRequest",
            UserListRequest {
                // A number field holds its own field number.
                page_size: 1,
                page_token: "page_token".into(),
            }
            .encode_to_vec(),
        ),
        (
            "UserListResponse",
            UserListResponse {
                users: vec![named!(User { username, password })],
                next_page_token: "next_page_token".into(),
            }
            .encode_to_vec(),
        ),
    ];
    let mut seen = BTreeSet::new();
    for (message, bytes) in &samples {
        seen.extend(check_sample(&fd, message, bytes).unwrap_or_else(|e| panic!("{e}")));
    }
    let sampled: BTreeSet<&str> = samples.iter().map(|s| s.0).collect();
    for m in &fd.message_type {
        assert!(
            sampled.contains(m.name()),
            "message {} of the .proto has no Rust struct sample",
            m.name()
        );
        for number in field_numbers(&fd, m.name()) {
            assert!(
                seen.contains(&(m.name().to_owned(), number)),
                "{}.{number} not covered",
                m.name()
            );
        }
    }
}

#[test]
fn greeter_proto_declares_the_documented_fields() {
    let fd = api::file_descriptor().unwrap();
    assert_eq!(fd.package(), "helloworld.v1");
    let fields = |m: &str| -> Vec<(String, i32, Type)> {
        fd.message_type
            .iter()
            .find(|d| d.name() == m)
            .unwrap()
            .field
            .iter()
            .map(|f| (f.name().to_owned(), f.number(), f.r#type()))
            .collect()
    };
    let s = |n: &str, i| (n.to_owned(), i, Type::String);
    assert_eq!(fields("HelloRequest"), [s("name", 1)]);
    assert_eq!(fields("HelloReply"), [s("message", 1)]);
    assert_eq!(
        fields("UserRegisterRequest"),
        [s("username", 1), s("password", 2)]
    );
    assert_eq!(fields("UserRegisterResponse"), [s("result", 1)]);
    assert_eq!(fields("User"), [s("username", 1), s("password", 2)]);
    assert_eq!(fields("Empty"), []);
    assert_eq!(
        fields("UserListResponse"),
        [
            ("users".to_owned(), 1, Type::Message),
            s("next_page_token", 2)
        ]
    );
    // Paginated (AIP-158). On the wire an empty UserListRequest is the
    // `Empty` UserList took before it had pages (docs/greeter.md): a client
    // sending Empty gets the first page.
    assert_eq!(
        fields("UserListRequest"),
        [("page_size".to_owned(), 1, Type::Int32), s("page_token", 2)]
    );
    let service = &fd.service[0];
    assert_eq!(service.name(), "Greeter");
    // The greeter's three original methods, with the messages docs/greeter.md
    // gives them; further RPCs (the SayHelloAgain example) may follow
    // without touching this test.
    let original = ["SayHello", "UserRegister", "UserList"];
    let methods: Vec<(&str, &str, &str)> = service
        .method
        .iter()
        .filter(|m| original.contains(&m.name()))
        .map(|m| (m.name(), m.input_type(), m.output_type()))
        .collect();
    assert_eq!(
        methods,
        [
            (
                "SayHello",
                ".helloworld.v1.HelloRequest",
                ".helloworld.v1.HelloReply"
            ),
            (
                "UserRegister",
                ".helloworld.v1.UserRegisterRequest",
                ".helloworld.v1.UserRegisterResponse"
            ),
            (
                "UserList",
                ".helloworld.v1.UserListRequest",
                ".helloworld.v1.UserListResponse"
            ),
        ]
    );
}

#[test]
fn embedded_proto_is_the_file_on_disk() {
    let on_disk = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/proto/helloworld/v1/greeter.proto"
    ))
    .unwrap();
    assert_eq!(api::PROTO_SOURCE, on_disk);
}
