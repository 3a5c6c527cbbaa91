//! Start one of the crate's binaries and learn its addresses from the
//! "listening on" lines it prints at start-up.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::greeter::TempDir;

/// A binary running in its own process, killed when dropped, with the
/// addresses it printed and the directory it works in (removed after it).
pub struct Server {
    pub child: Child,
    pub addrs: Vec<SocketAddr>,
    pub _dir: Option<TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `bin` with `args` and `env`; read its stdout until `n` lines
/// containing "listening on" gave their addresses. The reader is returned
/// at the next line, for tests that read the log (or keep it unread).
pub fn spawn(
    bin: &str,
    args: &[&str],
    env: &[(&str, &str)],
    n: usize,
) -> (Child, Vec<SocketAddr>, BufReader<ChildStdout>) {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start binary");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut addrs = Vec::new();
    while addrs.len() < n {
        let mut line = String::new();
        assert!(out.read_line(&mut line).expect("read") > 0, "{bin} exited");
        if let Some((_, addr)) = line.trim().split_once("listening on ") {
            let addr = addr
                .trim_start_matches("https://")
                .trim_start_matches("http://");
            addrs.push(addr.parse().expect("address"));
        }
    }
    (child, addrs, out)
}

/// [`spawn`], with the rest of stdout drained in the background, so the
/// child never sees a full pipe (for tests that do not read the log).
pub fn spawn_draining(
    bin: &str,
    args: &[&str],
    env: &[(&str, &str)],
    n: usize,
) -> (Child, Vec<SocketAddr>) {
    let (child, addrs, out) = spawn(bin, args, env, n);
    std::thread::spawn(move || std::io::copy(&mut { out }, &mut std::io::sink()));
    (child, addrs)
}

/// Run `cmd` to completion, at most 20 s: a binary that starts serving
/// where it should have refused fails the test instead of hanging it.
pub fn run_to_end(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start binary");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "still running after 20 s; stdout:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}
