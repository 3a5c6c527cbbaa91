//! The standard gRPC health service, `grpc.health.v1.Health`, in the shape
//! of grpc-go's `health/server.go`: a map of service → status behind a lock,
//! and a watch channel per watched service.
//!
//! - `Check` answers the status of a service (`""` is the server as a
//!   whole); a service never set is `NOT_FOUND`.
//! - `Watch` (server streaming) sends the current status at once and then
//!   one message per change; a service never set is `SERVICE_UNKNOWN` and
//!   the stream stays open, so a status set later reaches it. Changes made
//!   faster than the client reads are coalesced to the latest (a
//!   `tokio::sync::watch` channel, grpc-go's one-slot channel).
//! - `List` answers every status, or `RESOURCE_EXHAUSTED` past
//!   [`MAX_LISTED`] services.
//! - [`Health::shutdown`] turns every status NOT_SERVING and ignores later
//!   changes: the server calls it when draining, before its listeners close,
//!   so load balancers stop sending work first. Each open `Watch` then sends
//!   NOT_SERVING and ends with OK, which lets the graceful shutdown finish
//!   instead of waiting its whole grace period for streams nobody will end.
//!
//! How long a `Watch` may stay open: a stream is a request in flight, so the
//! connection's idle clock does not run while it is open; the HTTP/2
//! keep-alive PINGs of the accept loop find a peer that vanished, and the
//! stream ends when its client resets it or the connection closes (the
//! handler waits on [`Sink::closed`] as well as on changes, so nothing is
//! held for a client that is gone). A live client is not held forever
//! either: a `Watch` ends with OK [`Health::watch_max_age`] (default
//! [`DEFAULT_WATCH_MAX_AGE`]) after the call began, request or no request,
//! and the protocol tells clients to start a new one after any status, OK
//! included.
//!
//! The shipped `proto/grpc/health/v1/health.proto` is the upstream text;
//! reflection serves it as the crate's `.proto` parser reads it, nested
//! `enum`, `map<>` and file options included. The prost structs below are
//! written by hand like the greeter's; `tests/grpc_proto_drift.rs` fails if
//! they drift from that text.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use prost::Message;
use prost_types::FileDescriptorProto;
use tokio::sync::watch;

use super::descriptor::{parse_proto, ProtoError};
use super::method::{unary, Failure};
use super::server::{Builder, Sink, Streaming};
use super::status::{Code, Status};

/// The service name.
pub const SERVICE: &str = "grpc.health.v1.Health";

/// `grpc/health/v1/health.proto` as shipped (upstream grpc-proto text).
pub const HEALTH_PROTO: &str = include_str!("../../../proto/grpc/health/v1/health.proto");

/// The file name reflection serves the descriptor under.
pub const FILE_NAME: &str = "grpc/health/v1/health.proto";

/// Most services `List` answers; past it the call is `RESOURCE_EXHAUSTED`
/// (grpc-go's `maxAllowedServices`).
pub const MAX_LISTED: usize = 100;

/// Longest life of one `Watch` stream before it ends with OK.
pub const DEFAULT_WATCH_MAX_AGE: Duration = Duration::from_secs(600);

/// `HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ServingStatus {
    Unknown = 0,
    Serving = 1,
    NotServing = 2,
    /// Used only by `Watch`.
    ServiceUnknown = 3,
}

/// `HealthCheckRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `HealthCheckResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct HealthCheckResponse {
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub status: i32,
}

/// `HealthListRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct HealthListRequest {}

/// `HealthListResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct HealthListResponse {
    #[prost(map = "string, message", tag = "1")]
    pub statuses: HashMap<String, HealthCheckResponse>,
}

fn response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

/// The statuses of one server.
#[derive(Debug)]
pub struct Health {
    state: Mutex<State>,
    watch_max_age: Duration,
}

#[derive(Debug, Default)]
struct State {
    /// Set by [`Health::shutdown`]: everything NOT_SERVING, for good.
    shutdown: bool,
    statuses: BTreeMap<String, ServingStatus>,
    /// One channel per service someone watches now (removed with its last
    /// watcher, so clients watching made-up names leave nothing behind).
    watchers: HashMap<String, watch::Sender<ServingStatus>>,
}

impl Health {
    /// A health service with `""` (the whole server) SERVING.
    pub fn new() -> Health {
        Health::with_watch_max_age(DEFAULT_WATCH_MAX_AGE)
    }

    /// The same, ending each `Watch` after `max_age`.
    pub fn with_watch_max_age(max_age: Duration) -> Health {
        let mut state = State::default();
        state.statuses.insert(String::new(), ServingStatus::Serving);
        Health {
            state: Mutex::new(state),
            watch_max_age: max_age,
        }
    }

    /// How long a `Watch` stream may stay open.
    pub fn watch_max_age(&self) -> Duration {
        self.watch_max_age
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Set the status of `service` and tell its watchers; ignored after
    /// [`shutdown`](Self::shutdown).
    pub fn set_serving_status(&self, service: &str, status: ServingStatus) {
        let mut st = self.lock();
        if !st.shutdown {
            st.set(service, status);
        }
    }

    /// Every status NOT_SERVING, later changes ignored; every open `Watch`
    /// sends NOT_SERVING and ends.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        let services: Vec<String> = st.statuses.keys().cloned().collect();
        for service in services {
            st.set(&service, ServingStatus::NotServing);
        }
        // Watchers of unknown services wake too, to see the shutdown.
        for tx in st.watchers.values() {
            tx.send_modify(|_| {});
        }
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shutdown(&self) -> bool {
        self.lock().shutdown
    }

    /// `Check`: the status of `service`, `NOT_FOUND` when never set.
    pub fn check(&self, service: &str) -> Result<ServingStatus, Status> {
        self.lock()
            .statuses
            .get(service)
            .copied()
            .ok_or_else(|| Status::new(Code::NotFound, "unknown service"))
    }

    /// `List`: every status, or `RESOURCE_EXHAUSTED` past [`MAX_LISTED`].
    pub fn list(&self) -> Result<HealthListResponse, Status> {
        let st = self.lock();
        if st.statuses.len() > MAX_LISTED {
            return Err(Status::new(
                Code::ResourceExhausted,
                format!("server health list exceeds maximum capacity: {MAX_LISTED}"),
            ));
        }
        Ok(HealthListResponse {
            statuses: st
                .statuses
                .iter()
                .map(|(name, status)| (name.clone(), response(*status)))
                .collect(),
        })
    }

    /// A receiver of the status of `service` (SERVICE_UNKNOWN until set).
    fn subscribe(&self, service: &str) -> Subscription<'_> {
        let mut st = self.lock();
        let current = st
            .statuses
            .get(service)
            .copied()
            .unwrap_or(ServingStatus::ServiceUnknown);
        let rx = st
            .watchers
            .entry(service.to_owned())
            .or_insert_with(|| watch::channel(current).0)
            .subscribe();
        Subscription {
            rx: Some(rx),
            health: self,
            service: service.to_owned(),
        }
    }

    /// `Watch`: the current status now, then each change, until the client
    /// goes, the server shuts down or the stream reaches its maximum age.
    async fn watch(self: Arc<Self>, requests: Streaming, sink: Sink) -> Result<(), Status> {
        // The age counts from the call's start, so a client that opens a
        // Watch and never sends its request is let go at the same moment.
        let max_age = self.watch_max_age;
        tokio::time::timeout(max_age, self.send_statuses(requests, &sink))
            .await
            .unwrap_or(Ok(()))
    }

    /// The body of `Watch`, without its maximum age.
    async fn send_statuses(&self, mut requests: Streaming, sink: &Sink) -> Result<(), Status> {
        let request: HealthCheckRequest = requests.decode().await?.ok_or_else(|| {
            Status::unimplemented("Watch carried no request message (expected exactly one)")
        })?;
        let mut sub = self.subscribe(&request.service);
        let mut last = None;
        loop {
            let status = *sub.rx().borrow_and_update();
            if last != Some(status) {
                sink.send(&response(status)).await?;
                last = Some(status);
            }
            if self.is_shutdown() {
                return Ok(());
            }
            tokio::select! {
                changed = sub.rx().changed() => {
                    if changed.is_err() {
                        return Ok(()); // cannot happen while subscribed
                    }
                }
                _ = sink.closed() => {
                    return Err(Status::new(Code::Cancelled, "client closed the stream"));
                }
            }
        }
    }

    /// Adds `Check`, `List` and `Watch` to `builder`.
    pub fn register(self: Arc<Self>, builder: &mut Builder) {
        let me = self.clone();
        builder.unary(
            SERVICE,
            "Check",
            unary(move |req: HealthCheckRequest| {
                let result = me.check(&req.service).map(response).map_err(Failure::from);
                async move { result }
            }),
        );
        let me = self.clone();
        builder.unary(
            SERVICE,
            "List",
            unary(move |_: HealthListRequest| {
                let result = me.list().map_err(Failure::from);
                async move { result }
            }),
        );
        builder.streaming(
            SERVICE,
            "Watch",
            Arc::new(move |requests: Streaming, sink: Sink| {
                let me = self.clone();
                Box::pin(me.watch(requests, sink))
            }),
        );
    }
}

impl Default for Health {
    fn default() -> Self {
        Health::new()
    }
}

impl State {
    fn set(&mut self, service: &str, status: ServingStatus) {
        self.statuses.insert(service.to_owned(), status);
        if let Some(tx) = self.watchers.get(service) {
            tx.send_replace(status);
        }
    }
}

/// One watcher's receiver; dropping it removes the service's channel when
/// it was the last.
struct Subscription<'h> {
    rx: Option<watch::Receiver<ServingStatus>>,
    health: &'h Health,
    service: String,
}

impl Subscription<'_> {
    fn rx(&mut self) -> &mut watch::Receiver<ServingStatus> {
        self.rx.as_mut().expect("present until drop")
    }
}

impl Drop for Subscription<'_> {
    fn drop(&mut self) {
        drop(self.rx.take());
        let mut st = self.health.lock();
        if st
            .watchers
            .get(&self.service)
            .is_some_and(|tx| tx.receiver_count() == 0)
        {
            st.watchers.remove(&self.service);
        }
    }
}

/// The descriptor of `grpc/health/v1/health.proto`, for reflection:
/// [`HEALTH_PROTO`] parsed like the greeter's proto.
pub fn file_descriptor() -> Result<FileDescriptorProto, ProtoError> {
    parse_proto(FILE_NAME, HEALTH_PROTO)
}

#[cfg(test)]
mod tests;
