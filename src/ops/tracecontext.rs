//! W3C Trace Context: the `traceparent` header that ties together the log
//! lines one request leaves in every service it crosses.
//!
//! ```text
//! traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
//!              │  └── trace-id (16 bytes) ──────────┘ └ parent-id ───┘ └ flags
//!              version
//! ```
//!
//! The accept loop reads the header of every request (HTTP and gRPC alike:
//! gRPC metadata are HTTP/2 headers) and runs the call inside its trace
//! ([`enter`], [`serve`]):
//!
//! - a valid header continues its trace: same trace-id and flags, the
//!   sender's span becomes our parent, and this server gets a span-id of its
//!   own;
//! - an absent or malformed header (wrong length, uppercase or non-hex
//!   digits, an all-zero id, version `ff`, two `traceparent` headers)
//!   starts a new trace. A bad header never fails a request;
//! - the response carries `traceparent` with the trace-id and this server's
//!   span-id, so a client can find the server's log lines;
//! - [`current`] gives handlers, use cases and the log lines the trace
//!   (Kratos' `tracing.TraceID(ctx)`), and [`crate::ops::log::message`] and
//!   the access logs end their lines with `trace_id=…`.
//!
//! This is log correlation only: no spans are recorded or exported.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

/// The header's name, made at compile time: a `&str` name is parsed on
/// every lookup and insert, and every request of every service reads it and
/// every response carries it (a `const`, so an insert takes it by value,
/// with no clone).
pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

thread_local! {
    /// The trace of the future (or synchronous work) being run on this
    /// thread: set around each poll of a [`Scoped`] future and around
    /// [`enter`]'s work, and put back after, as a task-local is. Written by
    /// hand: tokio's `task_local` paid ~110 instructions a request for its
    /// `RefCell` and lazy slot; this took 77 off `GET /hello`.
    static CURRENT: Cell<Option<TraceContext>> = const { Cell::new(None) };
}

/// Puts the thread's trace back as it was, even if the work panics.
struct Restore(Option<TraceContext>);

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(self.0));
    }
}

/// `fut` polled, and dropped, as part of `trace` (see [`serve`] and
/// [`scope_opt`]).
struct Scoped<F> {
    trace: TraceContext,
    /// Dropped in place by `Drop`, inside the trace, as tokio's task-local
    /// future drops its own: a destructor that logs names the request.
    fut: ManuallyDrop<F>,
}

impl<F> Scoped<F> {
    fn new(trace: TraceContext, fut: F) -> Scoped<F> {
        Scoped {
            trace,
            fut: ManuallyDrop::new(fut),
        }
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is pinned along with `self`: it is never moved out
        // of it, and it is dropped in place, in `Drop`.
        let this = unsafe { self.get_unchecked_mut() };
        let fut = unsafe { Pin::new_unchecked(&mut *this.fut) };
        enter(Some(this.trace), || fut.poll(cx))
    }
}

impl<F> Drop for Scoped<F> {
    fn drop(&mut self) {
        // SAFETY: the one drop of `fut`, in place; it is not used after.
        enter(Some(self.trace), || unsafe {
            ManuallyDrop::drop(&mut self.fut)
        });
    }
}

/// The trace a request belongs to and this server's span in it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    /// The caller's span, when the request continued a trace.
    parent_id: Option<[u8; 8]>,
    span_id: [u8; 8],
    flags: u8,
}

impl TraceContext {
    /// The context of a request with `headers`: its trace continued, or a
    /// new one when the header is absent or malformed.
    pub fn from_headers(headers: &HeaderMap) -> TraceContext {
        // A walk over the fields, not a lookup: a request has a few, and
        // hashing the name (not one of http's standard ones) cost more.
        let mut values = headers.iter().filter(|(name, _)| *name == TRACEPARENT);
        let parsed = match (values.next(), values.next()) {
            (Some((_, value)), None) => value.to_str().ok().and_then(parse),
            // None, or several: W3C Trace Context says to start over.
            _ => None,
        };
        match parsed {
            Some((trace_id, parent_id, flags)) => TraceContext {
                trace_id,
                parent_id: Some(parent_id),
                span_id: random_id(),
                flags,
            },
            None => TraceContext::new_trace(),
        }
    }

    /// A new trace (sampled flag set: the logs record it).
    pub fn new_trace() -> TraceContext {
        let mut raw = [0u8; 24];
        loop {
            fill(&mut raw);
            let (trace, span) = raw.split_at(16);
            if trace != [0; 16] && span != [0; 8] {
                break;
            }
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        trace_id.copy_from_slice(&raw[..16]);
        span_id.copy_from_slice(&raw[16..]);
        TraceContext {
            trace_id,
            parent_id: None,
            span_id,
            flags: 0x01,
        }
    }

    /// The trace-id, 32 lowercase hex digits: what the log lines carry.
    pub fn trace_id(&self) -> String {
        format!("{:032x}", u128::from_be_bytes(self.trace_id))
    }

    /// This server's span-id, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        hex(&self.span_id)
    }

    /// The caller's span-id, when the request continued a trace.
    pub fn parent_id(&self) -> Option<String> {
        self.parent_id.as_ref().map(|p| hex(p))
    }

    /// `traceparent` naming this server's span: for the response, and for
    /// a call this request makes onwards.
    pub fn header_value(&self) -> HeaderValue {
        let mut text = *b"00-00000000000000000000000000000000-0000000000000000-00";
        write_hex(&mut text[3..35], &self.trace_id);
        write_hex(&mut text[36..52], &self.span_id);
        write_hex(&mut text[53..55], &[self.flags]);
        // SAFETY: `text` is the template's dashes and digits from `HEX`,
        // all valid in a header value (the test
        // `header_value_is_a_valid_w3c_traceparent` holds it to that);
        // checking its 55 bytes again cost 65 instructions a request.
        let mut value =
            unsafe { HeaderValue::from_maybe_shared_unchecked(Bytes::copy_from_slice(&text)) };
        // New on every request: HTTP/2 sends it as a literal never indexed,
        // instead of adding it to the HPACK table, where it would evict the
        // entries that repeat and cost a search of the table per response.
        value.set_sensitive(true);
        value
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceContext({:?})", self.header_value())
    }
}

/// `version-traceid-parentid-flags`, as the W3C grammar has it; `None` for
/// anything else. A version above `00` may add fields after a `-`.
fn parse(value: &str) -> Option<([u8; 16], [u8; 8], u8)> {
    let value = value.trim_matches([' ', '\t']);
    let b = value.as_bytes();
    if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let version = unhex::<1>(&b[0..2])?[0];
    if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
        return None;
    }
    let trace_id = unhex::<16>(&b[3..35])?;
    let parent_id = unhex::<8>(&b[36..52])?;
    let flags = unhex::<1>(&b[53..55])?[0];
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    Some((trace_id, parent_id, flags))
}

/// `N` bytes from `2N` lowercase hex digits (uppercase is invalid here).
fn unhex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// `bytes` as lowercase hex into `out`, two digits a byte (`traceparent`).
fn write_hex(out: &mut [u8], bytes: &[u8]) {
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(*b)]);
    }
}

/// The hex digits, lowercase.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// Each byte's two hex digits, looked up whole: a `traceparent` is 25
/// bytes of hex on every response.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut pairs = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        pairs[b] = [HEX[b >> 4], HEX[b & 0x0f]];
        b += 1;
    }
    pairs
};

/// `bytes` as lowercase hex, through [`write_hex`].
fn hex(bytes: &[u8]) -> String {
    let mut text = vec![0; bytes.len() * 2];
    write_hex(&mut text, bytes);
    String::from_utf8(text).unwrap_or_else(|_| unreachable!("hex digits"))
}

fn random_id() -> [u8; 8] {
    let mut id = [0u8; 8];
    while id == [0; 8] {
        fill(&mut id);
    }
    id
}

/// Random bytes for ids, from a generator per thread seeded once from the
/// OS (an id must be unique enough to find log lines, not secret; a read
/// of the OS generator per request was a system call on the hot path).
/// SplitMix64: each output is a bijection of a counter stepped by an odd
/// constant, so a thread repeats no 8 bytes for 2^64 outputs.
fn fill(out: &mut [u8]) {
    thread_local! {
        static STATE: std::cell::Cell<u64> = std::cell::Cell::new(seed());
    }
    STATE.with(|state| {
        for chunk in out.chunks_mut(8) {
            let mut z = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
            state.set(z);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    });
}

/// A thread's starting state: 8 bytes of the OS generator; should it ever
/// fail, the clock's nanoseconds.
fn seed() -> u64 {
    let mut raw = [0u8; 8];
    if getrandom::fill(&mut raw).is_ok() {
        return u64::from_le_bytes(raw);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// Serve one request's future as part of `trace`; the response carries
/// `traceparent`.
pub fn serve<F, B>(trace: TraceContext, call: F) -> impl Future<Output = http::Response<B>>
where
    F: Future<Output = http::Response<B>>,
{
    let fut = Scoped::new(trace, call);
    async move {
        let mut resp = fut.await;
        stamp(&mut resp, trace);
        resp
    }
}

/// Give `resp` the `traceparent` of `trace` (what [`serve`] does to the
/// response of the future it ran).
pub fn stamp<B>(resp: &mut http::Response<B>, trace: TraceContext) {
    resp.headers_mut().insert(TRACEPARENT, trace.header_value());
}

/// Run `work` (a call's synchronous part, or all of it) as part of `trace`
/// if there is one.
pub fn enter<R>(trace: Option<TraceContext>, work: impl FnOnce() -> R) -> R {
    let Some(trace) = trace else {
        return work();
    };
    let _restore = Restore(CURRENT.with(|current| current.replace(Some(trace))));
    work()
}

/// Run `call` as part of `trace` if there is one (a task spawned by a
/// request takes its trace along this way).
pub async fn scope_opt<F: Future>(trace: Option<TraceContext>, call: F) -> F::Output {
    match trace {
        Some(trace) => Scoped::new(trace, call).await,
        None => call.await,
    }
}

/// The trace of the request being served; `None` outside one.
pub fn current() -> Option<TraceContext> {
    CURRENT.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(&TRACEPARENT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn new_traces_on_one_thread_and_across_threads_never_repeat_an_id() {
        let ids = |n| {
            (0..n)
                .map(|_| TraceContext::new_trace())
                .collect::<Vec<_>>()
        };
        let mut traces: Vec<TraceContext> = ids(10_000);
        traces.extend(std::thread::spawn(move || ids(10_000)).join().unwrap());
        let trace_ids: std::collections::HashSet<_> = traces.iter().map(|t| t.trace_id).collect();
        let span_ids: std::collections::HashSet<_> = traces.iter().map(|t| t.span_id).collect();
        assert_eq!((trace_ids.len(), span_ids.len()), (20_000, 20_000));
        assert!(traces
            .iter()
            .all(|t| t.trace_id != [0; 16] && t.span_id != [0; 8]));
    }

    #[test]
    fn a_valid_header_is_continued_with_a_span_of_our_own() {
        let t = TraceContext::from_headers(&headers(&[GOOD]));
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id().as_deref(), Some("00f067aa0ba902b7"));
        assert_ne!(t.span_id(), "00f067aa0ba902b7");
        let back = t.header_value();
        let back = back.to_str().unwrap();
        assert!(
            back.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
            "{back}"
        );
        assert!(back.ends_with("-01"));
        assert_eq!(parse(back).map(|p| p.0), Some(t.trace_id));
        // A later version with more fields is read by its first four.
        let future = format!("cc{}-what-comes-next", &GOOD[2..]);
        assert_eq!(parse(&future).map(|p| p.2), Some(1));
    }

    #[test]
    fn header_value_is_a_valid_w3c_traceparent() {
        // `header_value` skips the header-value check: every value it makes
        // must pass that check and parse back to the same context.
        for _ in 0..1000 {
            let t = TraceContext::new_trace();
            let value = t.header_value();
            assert!(HeaderValue::from_bytes(value.as_bytes()).is_ok());
            let text = value.to_str().expect("visible ASCII");
            let (trace_id, span_id, flags) = parse(text).expect("the W3C grammar");
            assert_eq!((trace_id, span_id, flags), (t.trace_id, t.span_id, t.flags));
            assert!(text
                .bytes()
                .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    #[test]
    fn malformed_headers_start_a_new_trace() {
        let bad = [
            "",
            "garbage",
            &GOOD[..54],                                               // short
            &format!("{GOOD}-extra"),                                  // 00 has exactly 4 fields
            &GOOD.replace("4bf9", "4BF9"),                             // uppercase
            &GOOD.replace("4bf9", "4bg9"),                             // not hex
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent
            &GOOD.replacen("00", "ff", 1),                             // version ff
            &GOOD.replace('-', "_"),
        ];
        for value in bad {
            assert_eq!(parse(value), None, "{value:?}");
            let t = TraceContext::from_headers(&headers(&[value]));
            assert_ne!(
                t.trace_id(),
                "4bf92f3577b34da6a3ce929d0e0e4736",
                "{value:?}"
            );
            assert_eq!(t.parent_id(), None);
        }
        let two = TraceContext::from_headers(&headers(&[GOOD, GOOD]));
        assert_eq!(two.parent_id(), None, "two traceparent headers: start over");
        let a = TraceContext::from_headers(&HeaderMap::new());
        let b = TraceContext::from_headers(&HeaderMap::new());
        assert_ne!(a.trace_id(), b.trace_id(), "each new trace is its own");
        assert_eq!(a.trace_id().len(), 32);
    }

    #[tokio::test]
    async fn the_trace_is_seen_inside_its_scope_only() {
        let t = TraceContext::new_trace();
        assert_eq!(current(), None);
        let seen = scope_opt(Some(t), async {
            tokio::task::yield_now().await;
            current()
        })
        .await;
        assert_eq!(seen, Some(t));
        assert_eq!(scope_opt(None, async { current() }).await, None);
    }

    #[test]
    fn the_header_is_found_among_other_fields_and_counted_once_each() {
        let mut h = headers(&[GOOD]);
        h.insert(http::header::HOST, HeaderValue::from_static("x"));
        h.append("x-b3-traceid", HeaderValue::from_static(&GOOD[3..35]));
        h.append("x-b3-traceid", HeaderValue::from_static("1"));
        let t = TraceContext::from_headers(&h);
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        h.append(&TRACEPARENT, HeaderValue::from_static(GOOD));
        let two = TraceContext::from_headers(&h);
        assert_eq!(
            two.parent_id(),
            None,
            "a second one, among others: start over"
        );
    }

    #[tokio::test]
    async fn a_nested_scope_gives_the_outer_trace_back_across_awaits() {
        let (outer, inner) = (TraceContext::new_trace(), TraceContext::new_trace());
        let seen = scope_opt(Some(outer), async move {
            let before = current();
            let nested = scope_opt(Some(inner), async {
                tokio::task::yield_now().await;
                current()
            })
            .await;
            tokio::task::yield_now().await;
            (before, nested, current())
        })
        .await;
        assert_eq!(seen, (Some(outer), Some(inner), Some(outer)));
        assert_eq!(current(), None);
    }

    #[test]
    fn enter_gives_the_thread_its_trace_back_when_the_work_panics() {
        let (outer, inner) = (TraceContext::new_trace(), TraceContext::new_trace());
        enter(Some(outer), || {
            let caught = std::panic::catch_unwind(|| enter(Some(inner), || panic!("boom")));
            assert!(caught.is_err());
            assert_eq!(current(), Some(outer));
        });
        assert_eq!(current(), None);
    }

    #[test]
    fn a_scoped_future_is_dropped_inside_its_trace() {
        struct Seen(std::sync::Arc<std::sync::Mutex<Option<TraceContext>>>);
        impl Drop for Seen {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = current();
            }
        }
        let t = TraceContext::new_trace();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
        let guard = Seen(seen.clone());
        // Never polled: dropped as a cancelled request's future is.
        drop(Scoped::new(t, async move {
            let _guard = guard;
        }));
        assert_eq!(*seen.lock().unwrap(), Some(t));
        assert_eq!(current(), None);
    }
}
