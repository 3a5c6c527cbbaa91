//! gRPC server reflection (`grpc.reflection.v1` and `grpc.reflection.v1alpha`),
//! so that tools like grpcurl can list services and call methods without a
//! local copy of the `.proto` files.
//!
//! Reflection is one bidirectional-streaming method. The client sends a
//! request (list services, file containing a symbol, file by name, ...) and
//! waits for the reply *on the same open stream* before sending the next, so
//! the handler answers each request as soon as it is decoded instead of
//! waiting for the end of the request stream. Both protocol versions have the
//! same messages on the wire (only the package differs), so one set of
//! hand-derived prost structs serves both; the descriptors handed out are the
//! ones [`super::descriptor`] builds from the `.proto` sources.

use std::collections::HashMap;
use std::sync::Arc;

use prost::Message;
use prost_types::{DescriptorProto, FileDescriptorProto};

use super::descriptor::{parse_proto, ProtoError, WELL_KNOWN_IMPORTS};
use super::frame::{DEFAULT_MAX_MESSAGE_SIZE, HEADER_LEN};
use super::server::{Builder, Sink, Streaming};
use super::status::Code;

/// `grpc/reflection/v1/reflection.proto`, served by reflection itself.
pub const REFLECTION_V1_PROTO: &str =
    include_str!("../../../proto/grpc/reflection/v1/reflection.proto");
/// `grpc/reflection/v1alpha/reflection.proto`.
pub const REFLECTION_V1ALPHA_PROTO: &str =
    include_str!("../../../proto/grpc/reflection/v1alpha/reflection.proto");

/// What one reflection stream may answer besides [`ANSWER_RATIO`] times
/// the bytes it was asked: one largest message.
pub const ANSWER_ALLOWANCE: usize = DEFAULT_MAX_MESSAGE_SIZE;

/// How many bytes one reflection stream may answer per byte asked, beyond
/// [`ANSWER_ALLOWANCE`]. A 28-byte `file_containing_symbol` is answered with
/// about 2.9 KB (the file and its imports), so without a bound a stream of
/// small requests multiplies what a client sends a hundredfold.
pub const ANSWER_RATIO: usize = 4;

/// The two service names, one per protocol version.
pub const SERVICES: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// `ServerReflectionRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct ServerReflectionRequest {
    #[prost(string, tag = "1")]
    pub host: String,
    #[prost(oneof = "MessageRequest", tags = "3, 4, 5, 6, 7")]
    pub message_request: Option<MessageRequest>,
}

/// The `message_request` oneof.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum MessageRequest {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(message, tag = "5")]
    FileContainingExtension(ExtensionRequest),
    #[prost(string, tag = "6")]
    AllExtensionNumbersOfType(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// `ExtensionRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct ExtensionRequest {
    #[prost(string, tag = "1")]
    pub containing_type: String,
    #[prost(int32, tag = "2")]
    pub extension_number: i32,
}

/// `ServerReflectionResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ServerReflectionResponse {
    #[prost(string, tag = "1")]
    pub valid_host: String,
    #[prost(message, optional, tag = "2")]
    pub original_request: Option<ServerReflectionRequest>,
    #[prost(oneof = "MessageResponse", tags = "4, 5, 6, 7")]
    pub message_response: Option<MessageResponse>,
}

/// The `message_response` oneof.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum MessageResponse {
    #[prost(message, tag = "4")]
    FileDescriptorResponse(FileDescriptorResponse),
    #[prost(message, tag = "5")]
    AllExtensionNumbersResponse(ExtensionNumberResponse),
    #[prost(message, tag = "6")]
    ListServicesResponse(ListServiceResponse),
    #[prost(message, tag = "7")]
    ErrorResponse(ErrorResponse),
}

/// `FileDescriptorResponse`: serialized `FileDescriptorProto`s.
#[derive(Clone, PartialEq, Message)]
pub struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub file_descriptor_proto: Vec<Vec<u8>>,
}

/// `ExtensionNumberResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ExtensionNumberResponse {
    #[prost(string, tag = "1")]
    pub base_type_name: String,
    #[prost(int32, repeated, tag = "2")]
    pub extension_number: Vec<i32>,
}

/// `ListServiceResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    pub service: Vec<ServiceResponse>,
}

/// `ServiceResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceResponse {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `ErrorResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ErrorResponse {
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// The descriptor set being served, indexed for the reflection queries.
#[derive(Debug)]
pub struct Reflection {
    files: HashMap<String, FileDescriptorProto>,
    /// Fully qualified symbol → name of the file defining it.
    symbols: HashMap<String, String>,
    services: Vec<String>,
}

impl Reflection {
    /// Serves `files` plus the two reflection files themselves.
    pub fn new(files: Vec<FileDescriptorProto>) -> Result<Reflection, ProtoError> {
        let mut all = files;
        all.push(parse_proto(
            "grpc/reflection/v1/reflection.proto",
            REFLECTION_V1_PROTO,
        )?);
        all.push(parse_proto(
            "grpc/reflection/v1alpha/reflection.proto",
            REFLECTION_V1ALPHA_PROTO,
        )?);
        for fd in &mut all {
            without_well_known_imports(fd);
        }
        let mut symbols = HashMap::new();
        let mut services = Vec::new();
        for fd in &all {
            let prefix = match fd.package() {
                "" => String::new(),
                p => format!("{p}."),
            };
            for s in &fd.service {
                let service = format!("{prefix}{}", s.name());
                for m in &s.method {
                    symbols.insert(format!("{service}.{}", m.name()), fd.name().to_owned());
                }
                symbols.insert(service.clone(), fd.name().to_owned());
                services.push(service);
            }
            for e in &fd.enum_type {
                symbols.insert(format!("{prefix}{}", e.name()), fd.name().to_owned());
            }
            for f in &fd.extension {
                symbols.insert(format!("{prefix}{}", f.name()), fd.name().to_owned());
            }
            for m in &fd.message_type {
                message_symbols(&prefix, m, fd.name(), &mut symbols);
            }
        }
        services.sort();
        Ok(Reflection {
            files: all.into_iter().map(|f| (f.name().to_owned(), f)).collect(),
            symbols,
            services,
        })
    }

    /// Adds the reflection method of both protocol versions to `builder`.
    pub fn register(self: Arc<Self>, builder: &mut Builder) {
        for service in SERVICES {
            let me = self.clone();
            builder.streaming(
                service,
                "ServerReflectionInfo",
                Arc::new(move |requests: Streaming, sink: Sink| {
                    let me = me.clone();
                    Box::pin(async move { me.serve_stream(requests, sink).await })
                }),
            );
        }
    }

    async fn serve_stream(&self, mut requests: Streaming, sink: Sink) -> Result<(), super::Status> {
        // Bytes asked and answered on this stream, frame headers included.
        let (mut asked, mut answered) = (0usize, 0usize);
        while let Some(request) = requests.decode::<ServerReflectionRequest>().await? {
            asked = asked.saturating_add(HEADER_LEN + request.encoded_len());
            let answer = self.answer(request);
            // The answer echoes the request: a request near the 4 MiB limit
            // would make an answer twice that size. Like unary replies,
            // nothing over the limit is sent.
            let size = answer.encoded_len();
            if size > DEFAULT_MAX_MESSAGE_SIZE {
                return Err(super::Status::new(
                    Code::ResourceExhausted,
                    format!(
                        "trying to send message larger than max ({size} vs. \
                         {DEFAULT_MAX_MESSAGE_SIZE})"
                    ),
                ));
            }
            answered = answered.saturating_add(HEADER_LEN + size);
            let bound = ANSWER_ALLOWANCE.saturating_add(ANSWER_RATIO.saturating_mul(asked));
            if answered > bound {
                return Err(super::Status::new(
                    Code::ResourceExhausted,
                    format!(
                        "reflection answers one stream at most 4 MiB plus {ANSWER_RATIO} \
                         times the bytes asked ({asked} asked): open a new stream"
                    ),
                ));
            }
            sink.send(&answer).await?;
        }
        Ok(())
    }

    /// The names listed by `list_services`, sorted.
    pub fn services(&self) -> &[String] {
        &self.services
    }

    /// The descriptor of the file named `name`, if served.
    pub fn file(&self, name: &str) -> Option<&FileDescriptorProto> {
        self.files.get(name)
    }

    /// Answers one reflection request.
    pub fn answer(&self, request: ServerReflectionRequest) -> ServerReflectionResponse {
        let response = match &request.message_request {
            Some(MessageRequest::ListServices(_)) => {
                MessageResponse::ListServicesResponse(ListServiceResponse {
                    service: self
                        .services
                        .iter()
                        .map(|name| ServiceResponse { name: name.clone() })
                        .collect(),
                })
            }
            Some(MessageRequest::FileByFilename(name)) => match self.files.get(name) {
                Some(_) => self.file_response(name),
                None => error(Code::NotFound, format!("file not found: {}", capped(name))),
            },
            Some(MessageRequest::FileContainingSymbol(symbol)) => match self.symbols.get(symbol) {
                Some(file) => self.file_response(file),
                None => error(
                    Code::NotFound,
                    format!("symbol not found: {}", capped(symbol)),
                ),
            },
            Some(MessageRequest::FileContainingExtension(ext)) => error(
                Code::NotFound,
                format!(
                    "extension {} of {} not found (no extensions are served)",
                    ext.extension_number,
                    capped(&ext.containing_type)
                ),
            ),
            Some(MessageRequest::AllExtensionNumbersOfType(name)) => match self.symbols.get(name) {
                Some(_) => MessageResponse::AllExtensionNumbersResponse(ExtensionNumberResponse {
                    base_type_name: name.clone(),
                    extension_number: Vec::new(),
                }),
                None => error(Code::NotFound, format!("type not found: {}", capped(name))),
            },
            None => error(
                Code::InvalidArgument,
                "request sets none of the message_request fields",
            ),
        };
        ServerReflectionResponse {
            valid_host: request.host.clone(),
            original_request: Some(request),
            message_response: Some(response),
        }
    }

    /// `name` and, transitively, the files it imports.
    fn file_response(&self, name: &str) -> MessageResponse {
        let mut order: Vec<&str> = Vec::new();
        let mut pending = vec![name];
        while let Some(n) = pending.pop() {
            if order.contains(&n) {
                continue;
            }
            if let Some(fd) = self.files.get(n) {
                order.push(n);
                pending.extend(fd.dependency.iter().map(String::as_str));
            }
        }
        MessageResponse::FileDescriptorResponse(FileDescriptorResponse {
            file_descriptor_proto: order
                .iter()
                .filter_map(|n| self.files.get(*n))
                .map(|fd| fd.encode_to_vec())
                .collect(),
        })
    }
}

/// Drops the imports of [`WELL_KNOWN_IMPORTS`] and the extensions of their
/// types: `google/api/annotations.proto` extends
/// `google.protobuf.MethodOptions` from `google/protobuf/descriptor.proto`,
/// which this server does not carry (it is proto2, beyond the parser), and
/// a client that reads a served file fetches every import it names
/// (grpcurl stops with "File not found: google/protobuf/descriptor.proto").
/// The extension only matters to code generators, which read the files.
fn without_well_known_imports(fd: &mut FileDescriptorProto) {
    let before = fd.dependency.len();
    fd.dependency
        .retain(|d| !WELL_KNOWN_IMPORTS.contains(&d.as_str()));
    if fd.dependency.len() != before {
        fd.extension
            .retain(|e| !e.extendee().starts_with(".google.protobuf."));
    }
}

/// `m`, its fields, nested messages and enums, under `prefix`.
fn message_symbols(
    prefix: &str,
    m: &DescriptorProto,
    file: &str,
    symbols: &mut HashMap<String, String>,
) {
    let message = format!("{prefix}{}", m.name());
    for f in &m.field {
        symbols.insert(format!("{message}.{}", f.name()), file.to_owned());
    }
    for e in &m.enum_type {
        symbols.insert(format!("{message}.{}", e.name()), file.to_owned());
    }
    for n in &m.nested_type {
        message_symbols(&format!("{message}."), n, file, symbols);
    }
    symbols.insert(message, file.to_owned());
}

/// A client's name as quoted in an error message: at most 256 characters.
fn capped(name: &str) -> String {
    match name.char_indices().nth(256) {
        Some((at, _)) => format!("{}… ({} bytes)", &name[..at], name.len()),
        None => name.to_string(),
    }
}

fn error(code: Code, message: impl Into<String>) -> MessageResponse {
    MessageResponse::ErrorResponse(ErrorResponse {
        error_code: code as i32,
        error_message: message.into(),
    })
}

#[cfg(test)]
mod tests;
