//! The wire messages of `proto/helloworld/v1/greeter.proto`, written by hand
//! as prost structs (no protoc at build time), plus the file's descriptor for
//! reflection. `tests/greeter_proto.rs` fails if the two drift apart.

use prost_types::FileDescriptorProto;

use crate::protocol::grpc::descriptor::{
    parse_files, parse_proto, ParsedFile, ProtoError, GOOGLE_API_FILES, VALIDATE_FILE,
};

/// Path of the `.proto` file inside the `proto/` root, as reflection names it.
pub const PROTO_FILE: &str = "helloworld/v1/greeter.proto";
/// Its source, embedded at build time.
pub const PROTO_SOURCE: &str = include_str!("../../../proto/helloworld/v1/greeter.proto");
/// Fully qualified service name.
pub const SERVICE: &str = "helloworld.v1.Greeter";

/// The descriptor of `greeter.proto`, parsed from [`PROTO_SOURCE`].
pub fn file_descriptor() -> Result<FileDescriptorProto, ProtoError> {
    parse_proto(PROTO_FILE, PROTO_SOURCE)
}

/// `greeter.proto` and the files it imports (google/api, buf/validate),
/// parsed together (what reflection serves, what the HTTP routes and the
/// input rules are derived from); `greeter.proto` comes first.
pub fn parsed_files() -> Result<Vec<ParsedFile>, ProtoError> {
    let [annotations, http] = GOOGLE_API_FILES;
    parse_files(&[(PROTO_FILE, PROTO_SOURCE), annotations, http, VALIDATE_FILE])
}

/// Title, version and description of the greeter's OpenAPI document.
pub fn openapi_info() -> crate::protocol::gateway::openapi::Info {
    crate::protocol::gateway::openapi::Info {
        title: "helloworld.v1.Greeter".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: "The greeter's HTTP API, derived at start-up from the google.api.http \
                      options of proto/helloworld/v1/greeter.proto."
            .into(),
    }
}

/// `HelloRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `HelloReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    #[prost(string, tag = "1")]
    pub message: String,
}

/// `UserRegisterRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserRegisterRequest {
    #[prost(string, tag = "1")]
    pub username: String,
    #[prost(string, tag = "2")]
    pub password: String,
}

/// `UserRegisterResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserRegisterResponse {
    #[prost(string, tag = "1")]
    pub result: String,
}

/// `Empty`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Empty {}

/// `User` (wire form: no id, no age).
#[derive(Clone, PartialEq, prost::Message)]
pub struct User {
    #[prost(string, tag = "1")]
    pub username: String,
    #[prost(string, tag = "2")]
    pub password: String,
}

/// `UserListRequest`: one page (AIP-158).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserListRequest {
    #[prost(int32, tag = "1")]
    pub page_size: i32,
    #[prost(string, tag = "2")]
    pub page_token: String,
}

/// `UserListResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserListResponse {
    #[prost(message, repeated, tag = "1")]
    pub users: Vec<User>,
    #[prost(string, tag = "2")]
    pub next_page_token: String,
}
