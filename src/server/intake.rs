//! Receiving a request: the limits on its head ([`refused`]), and the
//! bounds its body arrives under.
//!
//! A head past [`URI_MAX`] or [`HEADER_FIELDS_MAX`] / [`HEADER_BYTES_MAX`]
//! is refused (414, 431) before the service runs its chain; the service
//! shapes the answer ([`crate::contract::Caller::refused`]). Then three
//! clocks and budgets, each the answer to a client that holds the server
//! with a body:
//!
//! - **size**: past the engine's body limit, 413 (the declared length is
//!   checked before a byte is read);
//! - **time**: the whole body within the body time-out, else 408 (nginx's
//!   `client_body_timeout` is the same idea per read);
//! - **rate**: after a grace period, at least a minimum data rate on
//!   average (Kestrel's `MinRequestBodyDataRate`: 240 bytes/s after 5 s),
//!   else 408 at once. A client trickling a byte a second would otherwise
//!   hold its connection, its buffer and a task for the whole time-out;
//! - **process budget**: the bytes of every body being received, all
//!   connections together, come out of one account
//!   ([`crate::server::governor::ByteAccount`], default 256 MiB); a body that
//!   does not fit is refused with 503 instead of growing the heap. A body
//!   read whole stays on the account until the handler lets go of it (the
//!   returned bytes are dropped): a body waiting for its decoding is as
//!   much memory as one arriving, and giving it back on arrival let 128
//!   complete 4 MB bodies wait at once, past 500 MiB.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http_body_util::BodyExt;
use tokio::time::Instant;

use crate::contract::{Intake, Refused, HEADER_BYTES_MAX, HEADER_FIELDS_MAX, URI_MAX};
use crate::server::clocks::{paid_until, Activity};
use crate::server::governor::{ByteAccount, ConnectionShare};
use crate::types::{Body, BoxError, BoxFuture};

pub use crate::contract::{Bounds, Refusal, DEFAULT_MIN_BODY_RATE, DEFAULT_MIN_BODY_RATE_GRACE};

/// Most bytes of an HTTP/2 header list the server's h2 takes (names and
/// values, plus 32 a field: RFC 9113's size); a larger list resets the
/// stream before a request exists. CONTINUATION floods end there.
pub const H2_HEADER_LIST_MAX: u32 = 16 << 10;
const _: () = assert!(
    H2_HEADER_LIST_MAX as usize <= HEADER_BYTES_MAX,
    "an HTTP/2 head within h2's bound must be within the server's"
);

/// Why the server refuses a request's head, if it does: 414 for a target
/// over [`URI_MAX`], 431 past [`HEADER_FIELDS_MAX`] fields or
/// [`HEADER_BYTES_MAX`] bytes (on HTTP/2, h2's [`H2_HEADER_LIST_MAX`]
/// bounds the bytes first).
pub fn refused<B>(req: &http::Request<B>) -> Option<Box<Refused>> {
    let refuse = |status, reason, message| {
        Some(Box::new(Refused {
            status,
            reason,
            message,
        }))
    };
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > URI_MAX {
        let message = format!("request target too long: {target} bytes (at most {URI_MAX})");
        return refuse(StatusCode::URI_TOO_LONG, "URI_TOO_LONG", message);
    }
    let headers = req.headers();
    let message = if headers.len() > HEADER_FIELDS_MAX {
        format!(
            "too many header fields: {} (at most {HEADER_FIELDS_MAX})",
            headers.len()
        )
    } else if req.version() == http::Version::HTTP_2 {
        // h2 has refused a list over its own bound already, which is below
        // ours: nothing to add up.
        return None;
    } else {
        let bytes: usize = headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len())
            .sum();
        if bytes <= HEADER_BYTES_MAX {
            return None;
        }
        format!("header fields too large: {bytes} bytes (at most {HEADER_BYTES_MAX})")
    };
    let reason = "REQUEST_HEADER_FIELDS_TOO_LARGE";
    refuse(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, reason, message)
}

/// The minimum data rate's deadline for what began arriving at `start`
/// and has `received` bytes so far: `grace` after `start`, or later if
/// those bytes have earned it at `rate` bytes a second. Shared by request
/// bodies and gRPC messages ([`crate::protocol::grpc::Streaming`]).
pub fn rate_due(start: Instant, received: usize, rate: u32, grace: Duration) -> Instant {
    paid_until(start, received, rate).max(start + grace)
}

/// Read `body` whole under `bounds`, holding its bytes on `account` (if
/// any) while it arrives and until the bytes returned are dropped; while
/// it arrives, counted on its connection `conn` for the cap (a body below
/// the minimum rate does not make its client busy).
pub async fn collect<B>(
    body: B,
    bounds: Bounds,
    account: Option<&Arc<ByteAccount>>,
    conn: Option<&Arc<Activity>>,
) -> Result<Bytes, Refusal>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let mut held = Held { account, bytes: 0 };
    let start = Instant::now();
    let receiving = conn.map(|conn| conn.receiving(start));
    let deadline = start + bounds.time;
    // A declared length is allocated once: grown by doubling, a 4 MB body
    // went through a dozen copies whose freed chunks stayed resident in the
    // heap, and a flood of such bodies peaked far past what it held. Only
    // what arrives is touched, so a length declared and never sent costs
    // address space, not memory.
    let declared = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    let mut data = BytesMut::with_capacity(declared.min(bounds.bytes));
    let mut body = std::pin::pin!(body);
    loop {
        let wake = match bounds.min_rate {
            0 => deadline,
            rate => deadline.min(rate_due(start, data.len(), rate, bounds.grace)),
        };
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            _ = tokio::time::sleep_until(wake) => {
                return Err(if wake >= deadline {
                    Refusal::TimedOut
                } else {
                    Refusal::TooSlow { received: data.len(), after: start.elapsed() }
                });
            }
        };
        match frame {
            None => return Ok(held.keep(data.freeze())),
            Some(Err(e)) => return Err(Refusal::Failed(e.into())),
            Some(Ok(frame)) => {
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                use bytes::Buf;
                let n = chunk.remaining();
                if data.len() + n > bounds.bytes {
                    return Err(Refusal::TooLarge);
                }
                if !held.take(n) {
                    return Err(Refusal::Busy);
                }
                let mut chunk = chunk;
                while chunk.has_remaining() {
                    let piece = chunk.chunk();
                    let len = piece.len();
                    data.extend_from_slice(piece);
                    chunk.advance(len);
                }
                if let Some(receiving) = &receiving {
                    receiving.received(data.len());
                }
            }
        }
    }
}

/// Bytes held on the process account; given back when dropped.
struct Held<'a> {
    account: Option<&'a Arc<ByteAccount>>,
    bytes: usize,
}

impl Held<'_> {
    /// `body`, whole, still held on the account until its last clone is
    /// dropped.
    fn keep(mut self, body: Bytes) -> Bytes {
        let (Some(account), bytes) = (self.account, std::mem::take(&mut self.bytes)) else {
            return body;
        };
        if bytes == 0 {
            return body;
        }
        Bytes::from_owner(Kept {
            body,
            account: account.clone(),
            bytes,
        })
    }

    fn take(&mut self, n: usize) -> bool {
        match self.account {
            Some(account) if !account.take(n) => false,
            _ => {
                self.bytes += n;
                true
            }
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(account) = self.account {
            give_back(account, self.bytes);
        }
    }
}

/// `bytes` of a body leave `account` and count towards the next trim.
fn give_back(account: &ByteAccount, bytes: usize) {
    account.give_back(bytes);
    crate::server::governor::released(bytes);
}

/// A body read whole, its bytes on the account while it lives.
struct Kept {
    body: Bytes,
    account: Arc<ByteAccount>,
    bytes: usize,
}

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        give_back(&self.account, self.bytes);
    }
}

/// The server's side of the contract: a connection reads a body under the
/// service's bounds, counted on the process' budget of bytes being
/// received. Its [`Intake::connection`] is the [`ConnectionShare`].
impl Intake for ConnectionShare {
    fn read(&self, body: Body, bounds: Bounds) -> BoxFuture<'static, Result<Bytes, Refusal>> {
        let account = self.bodies().clone();
        let conn = self.conn().cloned();
        Box::pin(async move { collect(body, bounds, Some(&account), conn.as_ref()).await })
    }

    fn connection(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    fn bounds() -> Bounds {
        Bounds {
            bytes: 1 << 20,
            time: Duration::from_secs(5),
            min_rate: 240,
            grace: Duration::from_millis(200),
        }
    }

    #[tokio::test]
    async fn a_body_that_fits_the_account_is_held_until_the_handler_lets_go_of_it() {
        let account = ByteAccount::new(100);
        let body = Full::new(Bytes::from_static(b"0123456789"));
        let got = collect(body, bounds(), Some(&account), None).await.unwrap();
        assert_eq!(&got[..], b"0123456789");
        // Held while the handler has it, given back when it lets go.
        assert_eq!(account.held(), 10);
        let copy = got.clone();
        drop(got);
        assert_eq!(account.held(), 10);
        drop(copy);
        assert_eq!(account.held(), 0);
        let full = ByteAccount::new(5);
        let body = Full::new(Bytes::from_static(b"0123456789"));
        assert!(matches!(
            collect(body, bounds(), Some(&full), None).await,
            Err(Refusal::Busy)
        ));
        assert_eq!(full.held(), 0);
    }

    /// A body whose frames come from a channel.
    struct Channel(tokio::sync::mpsc::Receiver<Bytes>);

    impl hyper::body::Body for Channel {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, BoxError>>> {
            self.0
                .poll_recv(cx)
                .map(|b| b.map(|b| Ok(hyper::body::Frame::data(b))))
        }
    }

    #[tokio::test]
    async fn a_body_slower_than_the_minimum_rate_after_the_grace_is_refused() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            // 10 bytes a second, far under 240.
            for _ in 0..20 {
                if tx.send(Bytes::from_static(b"x")).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let t0 = Instant::now();
        let refused = collect(Channel(rx), bounds(), None, None).await;
        assert!(
            matches!(refused, Err(Refusal::TooSlow { .. })),
            "{refused:?}"
        );
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }
}
