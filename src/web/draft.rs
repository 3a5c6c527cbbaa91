//! The response a chain builds: its status, headers and body as the
//! handlers write them, made into the response once the chain has ended.

use std::sync::PoisonError;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};

/// The response a chain is building: 200 and nothing written, at first.
#[derive(Debug, Default)]
pub(crate) struct ResponseDraft {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: DraftBody,
    pub(crate) written: bool,
}

/// The body written so far: most handlers write once, and that write is
/// kept as it came (a `&'static str` or a `String` becomes `Bytes` without
/// a copy); a later write is appended to a copy.
#[derive(Default)]
pub(crate) enum DraftBody {
    #[default]
    Empty,
    One(Bytes),
    /// Produced while it is sent ([`Context::stream`](crate::web::chain::Context::stream)); later writes are
    /// ignored. In a mutex only so that a context stays `Sync`.
    Stream(std::sync::Mutex<crate::types::Body>),
}

impl std::fmt::Debug for DraftBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DraftBody::Empty => f.write_str("Empty"),
            DraftBody::One(b) => write!(f, "One({} bytes)", b.len()),
            DraftBody::Stream(_) => f.write_str("Stream"),
        }
    }
}

impl DraftBody {
    pub(crate) fn push(&mut self, chunk: Bytes) {
        *self = match std::mem::take(self) {
            DraftBody::Empty => DraftBody::One(chunk),
            DraftBody::One(first) => DraftBody::One([first, chunk].concat().into()),
            stream @ DraftBody::Stream(_) => stream,
        }
    }

    /// The response body.
    pub(crate) fn into_body(self) -> crate::types::Body {
        match self {
            DraftBody::Stream(body) => body.into_inner().unwrap_or_else(PoisonError::into_inner),
            DraftBody::One(bytes) => crate::types::full(bytes),
            DraftBody::Empty => crate::types::full(Bytes::new()),
        }
    }

    /// The whole body.
    pub(crate) fn freeze(self) -> Bytes {
        match self {
            DraftBody::One(bytes) => bytes,
            DraftBody::Empty | DraftBody::Stream(_) => Bytes::new(),
        }
    }
}
