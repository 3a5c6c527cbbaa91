//! Memory after a flood, black-box against the router-demo binary: the
//! resident set the flood raised comes back down once the flood is over
//! (the governor trims the allocator's free pages, see
//! `src/server/governor.rs`).

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The resident set of process `pid`, in bytes.
fn rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Sends all but the last byte of a `length`-byte body to `/login` and
/// waits for the server to answer or close.
async fn stalled_body(addr: SocketAddr, length: usize) {
    let Ok(mut conn) = TcpStream::connect(addr).await else {
        return;
    };
    let head = format!(
        "POST /login HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    );
    if conn.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    if conn.write_all(&vec![b' '; length - 1]).await.is_err() {
        return;
    }
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_flood_of_stalled_bodies_memory_returns_within_twice_the_level_before() {
    let (mut child, addrs) = support::bin::spawn_draining(
        env!("CARGO_BIN_EXE_router-demo"),
        &["--addr", "127.0.0.1:0", "--quiet"],
        &[],
        1,
    );
    let (addr, pid) = (addrs[0], child.id());
    let _ = support::http::get(support::http::Proto::H1, addr, "/hello").await;
    let before = rss(pid);
    // 48 bodies of 2 MiB held at once.
    let flood: Vec<_> = (0..48)
        .map(|_| tokio::spawn(stalled_body(addr, 2 << 20)))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut peak = before;
    while Instant::now() < deadline && peak < before + (64 << 20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss(pid));
    }
    for f in flood {
        f.abort();
    }
    // Within 2x of the level before, well inside the 60 s the rule allows.
    let t0 = Instant::now();
    let mut after = rss(pid);
    while after > 2 * before && t0.elapsed() < Duration::from_secs(15) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        after = rss(pid);
    }
    let _ = child.kill();
    let _ = child.wait();
    eprintln!(
        "RSS before {} MiB, peak {} MiB, after {} MiB ({:?} after the flood)",
        before >> 20,
        peak >> 20,
        after >> 20,
        t0.elapsed()
    );
    assert!(
        peak > before + (48 << 20),
        "the flood raised RSS: peak {} MiB",
        peak >> 20
    );
    assert!(
        after <= 2 * before,
        "RSS {} MiB, before {} MiB",
        after >> 20,
        before >> 20
    );
}
