//! One unary method as every transport calls it, and the failure it ends
//! with.
//!
//! A [`UnaryMethod`] takes the request message's bytes and answers the reply
//! *framed as gRPC sends it* (5-byte prefix, see [`Frame::encode_message`]):
//! the gRPC [`Server`](super::Server) writes that buffer as is, and the HTTP
//! gateway skips the prefix and decodes the message to JSON. So a service
//! writes each method once, as a typed async function wrapped by [`unary`],
//! and registers the same table with both.
//!
//! A [`Failure`] is what a method ends with when it does not answer: the
//! gRPC code (the HTTP status follows from it), an UPPER_SNAKE reason a
//! client can match on, a message, metadata and the request fields that
//! broke their rules. The gRPC server turns it into a [`Status`] whose
//! `ErrorInfo` names the service as domain ([`Failure::into_status`]); the
//! gateway turns it into a Kratos JSON body.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;

use super::details::{ErrorDetails, FieldViolation, FRAMEWORK_DOMAIN};
use super::frame::Frame;
use super::status::{Code, Status};
use crate::types::BoxFuture;

/// One unary method: the request message's bytes in, the reply framed as
/// gRPC sends it out, so it is encoded once into its final buffer.
pub type UnaryMethod =
    Arc<dyn Fn(Bytes) -> BoxFuture<'static, Result<Bytes, Failure>> + Send + Sync>;

/// Wraps a typed async function as a [`UnaryMethod`]: prost decodes the
/// request (a request that does not decode is `INTERNAL`, as grpc-go
/// answers) and encodes the reply.
pub fn unary<Req, Resp, F, Fut>(f: F) -> UnaryMethod
where
    Req: prost::Message + Default + 'static,
    Resp: prost::Message + 'static,
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Resp, Failure>> + Send + 'static,
{
    let f = Arc::new(f);
    Arc::new(move |bytes: Bytes| {
        let f = f.clone();
        Box::pin(async move {
            let req = Req::decode(bytes).map_err(|e| {
                Failure::from(Status::internal(format!(
                    "cannot decode request message: {e}"
                )))
            })?;
            let resp = f(req).await?;
            Ok(Frame::encode_message(&resp))
        })
    })
}

/// A method's failure as both transports report it: the gRPC code (the
/// HTTP status derives from it), a Kratos reason and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The gRPC status code.
    pub code: Code,
    /// UPPER_SNAKE reason (`USER_ALREADY_EXISTS`).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// Facts a program can use (the body's `metadata`, `ErrorInfo`'s).
    pub metadata: BTreeMap<String, String>,
    /// The request fields that broke their rules (a `BadRequest`).
    pub violations: Vec<FieldViolation>,
    /// Whether the framework defines the reason (a failure made from a
    /// framework [`Status`]: domain [`FRAMEWORK_DOMAIN`]) rather than the
    /// service that answered (the usual case).
    pub framework: bool,
}

impl Failure {
    /// A failure with `code`, `reason` and `message`.
    pub fn new(code: Code, reason: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure {
            code,
            reason: reason.into(),
            message: message.into(),
            metadata: BTreeMap::new(),
            violations: Vec::new(),
            framework: false,
        }
    }

    /// This failure naming the fields that broke their rules.
    pub fn with_violations(mut self, violations: Vec<FieldViolation>) -> Failure {
        self.violations = violations;
        self
    }

    /// The gRPC status of this failure; its reason is defined by `service`
    /// (the full name of the service that answered) unless it is the
    /// framework's.
    pub fn into_status(self, service: &str) -> Status {
        let domain = if self.framework {
            FRAMEWORK_DOMAIN
        } else {
            service
        };
        Status::new(self.code, self.message).with_details(ErrorDetails {
            reason: self.reason,
            domain: domain.to_owned(),
            metadata: self.metadata,
            violations: self.violations,
        })
    }
}

/// A status the framework made (a stream that broke, a request that does
/// not decode) as a method's failure: the same code, message and details on
/// the wire, the code's name as reason when the status has none.
impl From<Status> for Failure {
    fn from(status: Status) -> Failure {
        let details = status.details.map(|d| *d).unwrap_or_else(|| ErrorDetails {
            reason: status.code.name().to_owned(),
            domain: FRAMEWORK_DOMAIN.to_owned(),
            ..ErrorDetails::default()
        });
        Failure {
            code: status.code,
            reason: details.reason,
            message: status.message,
            metadata: details.metadata,
            violations: details.violations,
            framework: details.domain == FRAMEWORK_DOMAIN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_answering_service_as_its_domain() {
        let status = Failure::new(Code::AlreadyExists, "USER_ALREADY_EXISTS", "taken")
            .into_status("helloworld.v1.Greeter");
        assert_eq!(status.code, Code::AlreadyExists);
        assert_eq!(status.message, "taken");
        let details = status.details.unwrap();
        assert_eq!(details.reason, "USER_ALREADY_EXISTS");
        assert_eq!(details.domain, "helloworld.v1.Greeter");
    }

    #[test]
    fn a_framework_status_keeps_its_reason_and_domain_through_a_failure() {
        let status = Failure::from(Status::new(Code::NotFound, "unknown service"))
            .into_status("grpc.health.v1.Health");
        let details = status.details.unwrap();
        assert_eq!(details.reason, "NOT_FOUND");
        assert_eq!(details.domain, FRAMEWORK_DOMAIN);
        assert_eq!(status.message, "unknown service");
    }

    #[tokio::test]
    async fn unary_decodes_the_request_and_frames_the_reply() {
        #[derive(Clone, PartialEq, prost::Message)]
        struct Text {
            #[prost(string, tag = "1")]
            text: String,
        }
        let method = unary(|req: Text| async move {
            Ok(Text {
                text: req.text.to_uppercase(),
            })
        });
        let request = prost::Message::encode_to_vec(&Text { text: "hi".into() });
        let framed = method(Bytes::from(request)).await.unwrap();
        let reply: Text = prost::Message::decode(&framed[5..]).unwrap();
        assert_eq!(reply.text, "HI");
        let err = method(Bytes::from_static(&[0xff])).await.unwrap_err();
        assert_eq!(err.code, Code::Internal);
        assert!(err.message.starts_with("cannot decode request message"));
    }
}
