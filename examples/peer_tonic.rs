//! Load-test peer for the gRPC side: a tonic 0.14 server for
//! `helloworld.v1.Greeter/SayHello`, written the way tonic's codegen would
//! write it (a `Service` that matches the path and hands the body to
//! `tonic::server::Grpc` with a `ProstCodec`), reusing the crate's hand-made
//! prost messages, so no protoc is needed.
//!
//! Two modes, chosen on the command line:
//!
//! * stateless (no `--db`): answers `Hello <name>` and nothing else;
//! * with `--db PATH`: also inserts one row per call into a `greetings` table
//!   like the greeter's, through one `rusqlite::Connection` behind a
//!   `std::sync::Mutex`, opened with the greeter's PRAGMAs (busy timeout 5 s,
//!   WAL) and the `synchronous` level given by `--synchronous` (FULL or
//!   NORMAL; `load/load.sh` passes the level the greeter uses). The insert
//!   runs inline in the handler, as a straightforward tonic + rusqlite
//!   service does: the commit's fsync holds that worker thread;
//! * with `--db PATH --commit group`: the same rows through group commit as
//!   a careful tonic + rusqlite service would write it, the peer of the
//!   greeter's own store thread: one thread owns the connection, handlers
//!   send it the name over a `std::sync::mpsc` channel and wait on a tokio
//!   `oneshot`, and the thread stores everything queued as one transaction
//!   (one `fsync` a batch) before answering each caller. `PATH` may be
//!   `:memory:`.
//!
//! It also serves tonic-health's `grpc.health.v1.Health` (the server, `""`,
//! SERVING), the peer of the greeter's own health service in `make load`'s
//! framing row. Unknown methods get `UNIMPLEMENTED`. No logging.
//!
//! `cargo run --release --example peer_tonic -- 127.0.0.1:9001 [--db /tmp/x.db --synchronous FULL]`

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use handwire::services::greeter::api::{HelloReply, HelloRequest};
use rusqlite::Connection;
use tokio::sync::oneshot;
use tonic::body::Body;
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic_prost::ProstCodec;

/// The same table the greeter's data layer creates.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS greetings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
";

/// The greeter's busy timeout (`src/services/greeter/data/`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const INSERT: &str = "INSERT INTO greetings (name) VALUES (?1)";

/// A greeting to store, and where its outcome goes.
type Job = (String, oneshot::Sender<Result<(), String>>);

#[derive(Clone)]
enum Store {
    None,
    /// One transaction a call, under the lock.
    PerCall(Arc<Mutex<Connection>>),
    /// Group commit on the store thread ([`group_commit`]).
    Group(mpsc::Sender<Job>),
}

#[derive(Clone)]
struct Greeter {
    store: Store,
}

impl Greeter {
    async fn say_hello(&self, name: String) -> Result<HelloReply, tonic::Status> {
        let failed = |e: String| tonic::Status::internal(format!("saving a greeting: {e}"));
        match &self.store {
            Store::None => {}
            Store::PerCall(db) => {
                let conn = db
                    .lock()
                    .map_err(|_| tonic::Status::internal("database lock poisoned"))?;
                conn.execute(INSERT, [&name])
                    .map_err(|e| failed(e.to_string()))?;
            }
            Store::Group(queue) => {
                let (tx, rx) = oneshot::channel();
                queue
                    .send((name.clone(), tx))
                    .map_err(|_| failed("the store thread stopped".into()))?;
                rx.await
                    .map_err(|_| failed("the store thread stopped".into()))?
                    .map_err(failed)?;
            }
        }
        Ok(HelloReply {
            message: format!("Hello {name}"),
        })
    }
}

/// The store thread: waits for a greeting, takes every other one queued by
/// then, stores them in one transaction and answers each caller.
fn group_commit(conn: Connection, queue: mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        batch.extend(queue.try_iter());
        let stored = (|| {
            let tx = conn.unchecked_transaction()?;
            {
                let mut insert = tx.prepare_cached(INSERT)?;
                for (name, _) in &batch {
                    insert.execute([name])?;
                }
            }
            tx.commit()
        })()
        .map_err(|e| e.to_string());
        for (_, reply) in batch {
            let _ = reply.send(stored.clone());
        }
    }
}

struct SayHello(Greeter);

impl UnaryService<HelloRequest> for SayHello {
    type Response = HelloReply;
    type Future = BoxFuture<tonic::Response<HelloReply>, tonic::Status>;

    fn call(&mut self, request: tonic::Request<HelloRequest>) -> Self::Future {
        let greeter = self.0.clone();
        Box::pin(async move {
            let reply = greeter.say_hello(request.into_inner().name).await?;
            Ok(tonic::Response::new(reply))
        })
    }
}

impl Service<http::Request<Body>> for Greeter {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        match req.uri().path() {
            "/helloworld.v1.Greeter/SayHello" => {
                let svc = SayHello(self.clone());
                Box::pin(async move {
                    let mut grpc = Grpc::new(ProstCodec::<HelloReply, HelloRequest>::default());
                    Ok(grpc.unary(svc, req).await)
                })
            }
            _ => Box::pin(async {
                Ok(tonic::Status::unimplemented("only SayHello is served").into_http())
            }),
        }
    }
}

impl NamedService for Greeter {
    const NAME: &'static str = "helloworld.v1.Greeter";
}

/// Opens `path` the way the greeter does, with `synchronous` set explicitly.
fn open(path: &str, synchronous: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    conn.execute_batch(&format!("PRAGMA synchronous={synchronous};"))?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

const USAGE: &str =
    "usage: peer_tonic ADDR [--db PATH [--synchronous FULL|NORMAL] [--commit call|group]]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args.next().ok_or(USAGE)?.parse()?;
    let (mut db, mut synchronous, mut group) = (None, "FULL".to_string(), false);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(USAGE)?;
        match flag.as_str() {
            "--db" => db = Some(value),
            "--synchronous" => synchronous = value.to_ascii_uppercase(),
            "--commit" => {
                group = match value.as_str() {
                    "call" => false,
                    "group" => true,
                    _ => {
                        return Err(format!("--commit must be call or group, not {value:?}").into())
                    }
                }
            }
            _ => return Err(USAGE.into()),
        }
    }
    if !matches!(synchronous.as_str(), "FULL" | "NORMAL") {
        return Err(format!("--synchronous must be FULL or NORMAL, not {synchronous:?}").into());
    }
    let store = match db {
        Some(path) => {
            let conn = open(&path, &synchronous)?;
            let level: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
            let commit = if group { "group" } else { "per call" };
            println!(
                "peer_tonic: SQLite {path} (WAL, synchronous={synchronous} = {level}, commit {commit})"
            );
            if group {
                let (tx, rx) = mpsc::channel();
                std::thread::Builder::new()
                    .name("peer-sqlite".into())
                    .spawn(move || group_commit(conn, rx))?;
                Store::Group(tx)
            } else {
                Store::PerCall(Arc::new(Mutex::new(conn)))
            }
        }
        None => Store::None,
    };
    println!("peer_tonic listening on {addr}");
    // tonic-health's service, "" SERVING: the peer of the greeter's
    // grpc.health.v1.Health/Check, framing with no application work.
    let (_reporter, health) = tonic_health::server::health_reporter();
    tonic::transport::Server::builder()
        .add_service(health)
        .add_service(Greeter { store })
        .serve(addr)
        .await?;
    Ok(())
}
