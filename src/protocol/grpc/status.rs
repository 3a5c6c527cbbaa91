//! gRPC status: the code and message that end every call, carried in the
//! `grpc-status` and `grpc-message` trailers.
//!
//! `grpc-message` is percent-encoded on the wire: bytes outside printable
//! ASCII (0x20..=0x7E) and `%` itself become `%XX`, so any UTF-8 text
//! survives HTTP/2 header rules. A call that fails before producing a message
//! is answered "Trailers-Only": a single HEADERS frame holding `:status 200`,
//! the content-type and the status, with END_STREAM.
//!
//! A message can quote client input, so the header is capped: at most
//! [`MAX_GRPC_MESSAGE`] bytes once encoded, cut at a character boundary and
//! ended with `…`. A header that size passes every client's header-list
//! limit (8–16 KiB typically), and 1 KiB is plenty for a message a person reads.
//!
//! Every error also carries `grpc-status-details-bin` ([`super::details`]):
//! a `google.rpc.Status` whose `ErrorInfo` holds the reason a program
//! matches on (the code's name when the status was made without one, with
//! the framework's domain) and, for invalid fields, a `BadRequest`.

use std::fmt;

use http::{HeaderMap, HeaderValue};

use super::details::{ErrorDetails, FRAMEWORK_DOMAIN};
use super::headers::{GRPC_MESSAGE, GRPC_STATUS};

/// The canonical gRPC status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

const CODES: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

impl Code {
    /// The code for a `grpc-status` number; unknown numbers map to `Unknown`.
    pub(crate) fn from_i32(n: i32) -> Code {
        usize::try_from(n)
            .ok()
            .and_then(|i| CODES.get(i).copied())
            .unwrap_or(Code::Unknown)
    }

    /// The upper-case name used in gRPC documentation (`DEADLINE_EXCEEDED`).
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

/// A call's outcome: code plus human-readable message, and the details a
/// program reads (reason, domain, metadata, invalid fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The status code.
    pub code: Code,
    /// The message (plain text; encoded only on the wire).
    pub message: String,
    /// Reason, domain, metadata and field violations (`None`: the code's
    /// name under [`FRAMEWORK_DOMAIN`]).
    pub details: Option<Box<ErrorDetails>>,
}

impl Status {
    /// A status with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// This status with its error details.
    pub fn with_details(mut self, details: ErrorDetails) -> Status {
        self.details = Some(Box::new(details));
        self
    }

    /// Success.
    pub fn ok() -> Status {
        Status::new(Code::Ok, "")
    }

    /// `INVALID_ARGUMENT` with a message.
    pub fn invalid_argument(message: impl Into<String>) -> Status {
        Status::new(Code::InvalidArgument, message)
    }

    /// `ALREADY_EXISTS` with a message.
    pub fn already_exists(message: impl Into<String>) -> Status {
        Status::new(Code::AlreadyExists, message)
    }

    /// `UNIMPLEMENTED` with a message.
    pub fn unimplemented(message: impl Into<String>) -> Status {
        Status::new(Code::Unimplemented, message)
    }

    /// `INTERNAL` with a message.
    pub fn internal(message: impl Into<String>) -> Status {
        Status::new(Code::Internal, message)
    }

    /// Writes `grpc-status`, (when non-empty) `grpc-message` and, for an
    /// error, `grpc-status-details-bin` into `headers`; the message is
    /// capped at [`MAX_GRPC_MESSAGE`] encoded bytes, in both.
    pub(crate) fn write_to(&self, headers: &mut HeaderMap) {
        // The codes' texts are made once: every call ends with one.
        const CODES: [&str; 17] = [
            "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15",
            "16",
        ];
        let code = match CODES.get(self.code as usize) {
            Some(text) => HeaderValue::from_static(text),
            None => HeaderValue::from(self.code as u16),
        };
        headers.insert(&GRPC_STATUS, code);
        if self.code == Code::Ok && self.message.is_empty() {
            return;
        }
        let capped = capped_percent_encode(&self.message);
        if !self.message.is_empty() {
            if let Ok(value) = HeaderValue::from_str(&capped) {
                headers.insert(&GRPC_MESSAGE, value);
            }
        }
        if self.code != Code::Ok {
            let framework;
            let details = match &self.details {
                Some(d) => d.as_ref(),
                None => {
                    framework = ErrorDetails {
                        reason: self.code.name().to_owned(),
                        domain: FRAMEWORK_DOMAIN.to_owned(),
                        ..ErrorDetails::default()
                    };
                    &framework
                }
            };
            let message = percent_decode(capped.as_bytes());
            details.write_to(self.code as i32, &message, headers);
        }
    }

    /// Reads a status back from trailers (or Trailers-Only headers); `None`
    /// when `grpc-status` is absent. Used by clients and tests.
    pub fn from_headers(headers: &HeaderMap) -> Option<Status> {
        let code = headers.get(&GRPC_STATUS)?.to_str().ok()?.parse().ok()?;
        let message = headers
            .get(&GRPC_MESSAGE)
            .map(|v| percent_decode(v.as_bytes()))
            .unwrap_or_default();
        Some(Status::new(Code::from_i32(code), message))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for Status {}

/// Percent-encodes a `grpc-message` value as the gRPC HTTP/2 spec requires.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if (0x20..=0x7E).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Longest `grpc-message` header value written, in bytes (after encoding).
pub const MAX_GRPC_MESSAGE: usize = 1024;

/// `text` percent-encoded, cut so the result is at most [`MAX_GRPC_MESSAGE`]
/// bytes: whole characters are kept while they and a final `…` fit.
pub(crate) fn capped_percent_encode(text: &str) -> String {
    let encoded = percent_encode(text);
    if encoded.len() <= MAX_GRPC_MESSAGE {
        return encoded;
    }
    let ellipsis = percent_encode("…");
    let mut out = String::with_capacity(MAX_GRPC_MESSAGE);
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let piece = percent_encode(c.encode_utf8(&mut buf));
        if out.len() + piece.len() + ellipsis.len() > MAX_GRPC_MESSAGE {
            break;
        }
        out.push_str(&piece);
    }
    out.push_str(&ellipsis);
    out
}

/// Decodes a `grpc-message` value; malformed escapes are kept as they are,
/// and invalid UTF-8 is replaced, as the gRPC HTTP/2 protocol asks
/// receivers to be lenient.
pub fn percent_decode(raw: &[u8]) -> String {
    String::from_utf8_lossy(&crate::web::urlenc::unescape(raw, false)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_message_is_percent_encoded_outside_printable_ascii() {
        assert_eq!(percent_encode("plain text"), "plain text");
        assert_eq!(percent_encode("100%"), "100%25");
        assert_eq!(percent_encode("a\nb"), "a%0Ab");
        assert_eq!(percent_encode("héllo"), "h%C3%A9llo");
        assert_eq!(percent_encode("日本"), "%E6%97%A5%E6%9C%AC");
    }

    #[test]
    fn percent_decode_reverses_encode_and_tolerates_bad_escapes() {
        for text in ["plain", "100%", "a\nb", "héllo 日本", "%", "%%41"] {
            assert_eq!(percent_decode(percent_encode(text).as_bytes()), text);
        }
        assert_eq!(percent_decode(b"%zz%4"), "%zz%4");
        assert_eq!(percent_decode(b"%41%42c"), "ABc");
    }

    #[test]
    fn status_round_trips_through_headers() {
        let mut headers = HeaderMap::new();
        let status = Status::new(Code::ResourceExhausted, "too big: 5 MiB ≥ 4 MiB");
        status.write_to(&mut headers);
        assert_eq!(headers["grpc-status"], "8");
        assert_eq!(Status::from_headers(&headers), Some(status));
    }

    #[test]
    fn grpc_message_is_capped_at_1_kib_with_an_ellipsis() {
        let cases = [
            ("x".repeat(1024), "x".repeat(1024)),
            ("x".repeat(1025), format!("{}…", "x".repeat(1015))),
            ("x".repeat(1 << 20), format!("{}…", "x".repeat(1015))),
            // 3 encoded bytes per é-byte: the cut keeps whole characters.
            ("é".repeat(200), format!("{}…", "é".repeat(169))),
        ];
        for (message, want) in cases {
            let mut headers = HeaderMap::new();
            Status::new(Code::AlreadyExists, message.clone()).write_to(&mut headers);
            let wire = headers["grpc-message"].as_bytes();
            assert!(wire.len() <= MAX_GRPC_MESSAGE, "{} bytes", wire.len());
            assert_eq!(percent_decode(wire), want, "{} bytes in", message.len());
        }
    }

    #[test]
    fn ok_status_writes_no_message() {
        let mut headers = HeaderMap::new();
        Status::ok().write_to(&mut headers);
        assert_eq!(headers["grpc-status"], "0");
        assert!(headers.get("grpc-message").is_none());
        assert!(headers
            .get(&super::super::headers::GRPC_STATUS_DETAILS_BIN)
            .is_none());
    }

    #[test]
    fn every_error_carries_details_with_the_code_name_as_reason_when_none_was_given() {
        let mut headers = HeaderMap::new();
        Status::unimplemented("unknown method").write_to(&mut headers);
        let (status, details) = ErrorDetails::from_headers(&headers).unwrap();
        assert_eq!(
            (status.code, status.message.as_str()),
            (12, "unknown method")
        );
        assert_eq!(details.reason, "UNIMPLEMENTED");
        assert_eq!(details.domain, FRAMEWORK_DOMAIN);

        let given = ErrorDetails {
            reason: "USER_ALREADY_EXISTS".into(),
            domain: "helloworld.v1.Greeter".into(),
            ..ErrorDetails::default()
        };
        let mut headers = HeaderMap::new();
        Status::already_exists("taken")
            .with_details(given.clone())
            .write_to(&mut headers);
        assert_eq!(ErrorDetails::from_headers(&headers).unwrap().1, given);
    }

    #[test]
    fn code_numbers_match_the_grpc_table() {
        for (n, code) in CODES.iter().enumerate() {
            assert_eq!(*code as usize, n);
            assert_eq!(Code::from_i32(n as i32), *code);
        }
        assert_eq!(Code::from_i32(17), Code::Unknown);
        assert_eq!(Code::from_i32(-1), Code::Unknown);
        assert_eq!(Code::DeadlineExceeded.name(), "DEADLINE_EXCEEDED");
    }
}
