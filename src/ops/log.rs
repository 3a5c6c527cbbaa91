//! The log sink: every line the library writes (request log, gRPC access
//! log, recovered panics, service messages) goes through one [`Sink`].
//!
//! Writing to stdout from a request would cost a `write` syscall per request
//! and, worse, block the runtime thread whenever the reader is slow (a full
//! pipe blocks the writer). So a line is only *appended to a buffer* under a
//! short lock; a dedicated OS thread swaps the buffer out and writes it:
//!
//! ```text
//! request ──append──▶ [ buffer (bounded) ] ──swap──▶ writer thread ──write──▶ stdout
//!                       full? drop + count           every interval, or when
//!                                                     half full, or on flush()
//! ```
//!
//! When the reader cannot keep up the buffer fills; new lines are then
//! dropped and counted, never waited for, and once the writer catches up it
//! writes one line saying how many were lost. This is the shape of
//! tracing-appender's non-blocking writer, with a byte budget instead of a
//! line count and no allocation per line: callers format straight into the
//! shared buffer.
//!
//! Nothing is lost on a clean exit: the binaries call [`Sink::flush`] (with a
//! bound, since a reader that never reads must not hold the exit forever).

use std::borrow::Cow;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How a sink buffers.
#[derive(Debug, Clone, Copy)]
pub struct SinkOptions {
    /// Most bytes held while the writer is busy; lines past it are dropped.
    pub capacity: usize,
    /// The writer wakes at least this often when lines are waiting.
    pub interval: Duration,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            capacity: 1 << 20,
            interval: Duration::from_millis(50),
        }
    }
}

/// A bounded, non-blocking line buffer drained by its own writer thread.
pub struct Sink {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer (buffer half full, flush asked).
    wake: Condvar,
    /// Wakes flushers when a write round completes.
    written: Condvar,
    opts: SinkOptions,
}

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    dropped: u64,
    /// Every line ever dropped (for `/metrics`; `dropped` resets when reported).
    dropped_total: u64,
    /// Flush requests asked for / write rounds completed, as counters, so a
    /// flusher knows when everything it saw has reached the writer.
    asked: u64,
    done: u64,
}

impl Sink {
    /// A sink writing to `out` from a new thread named `handwire-log`.
    pub fn new(out: Box<dyn Write + Send>, opts: SinkOptions) -> Sink {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            written: Condvar::new(),
            opts,
        });
        let writer = shared.clone();
        std::thread::Builder::new()
            .name("handwire-log".into())
            .spawn(move || writer.run(out))
            .expect("spawn the log writer thread");
        Sink { shared }
    }

    /// Append one line, formatted by `write` straight into the buffer (it
    /// should end with `\n`). Never blocks on the output: when the buffer is
    /// full the line is dropped and counted.
    pub fn line(&self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut st = self.shared.lock();
        if st.buf.len() >= self.shared.opts.capacity {
            st.dropped += 1;
            st.dropped_total += 1;
            return;
        }
        write(&mut st.buf);
        if st.buf.len() >= self.shared.opts.capacity / 2 {
            self.shared.wake.notify_one();
        }
    }

    /// Append `text` as one line.
    pub fn text(&self, text: &str) {
        self.line(|buf| {
            buf.extend_from_slice(text.as_bytes());
            buf.push(b'\n');
        });
    }

    /// Wait until every line appended before this call has been written,
    /// or `limit` has passed. Returns whether it completed.
    pub fn flush(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut st = self.shared.lock();
        st.asked += 1;
        let target = st.asked;
        self.shared.wake.notify_one();
        while st.done < target {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.shared.written.wait_timeout(st, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    /// Lines dropped so far that have not yet been reported.
    pub fn dropped(&self) -> u64 {
        self.shared.lock().dropped
    }

    /// Lines dropped since the sink was made, reported or not.
    pub fn dropped_total(&self) -> u64 {
        self.shared.lock().dropped_total
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while formatting a line must not silence logging for good.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The writer thread: sleep until there is work, swap the buffer out,
    /// write it without holding the lock.
    fn run(&self, mut out: Box<dyn Write + Send>) {
        let mut spare = Vec::with_capacity(self.opts.capacity / 4);
        loop {
            // Let lines gather for one interval (one write for many lines),
            // unless the buffer is half full or somebody waits in flush().
            let mut st = self.lock();
            loop {
                let urgent = st.buf.len() >= self.opts.capacity / 2 || st.done < st.asked;
                if urgent {
                    break;
                }
                let timed_out;
                (st, timed_out) = match self.wake.wait_timeout(st, self.opts.interval) {
                    Ok((guard, t)) => (guard, t.timed_out()),
                    Err(poisoned) => {
                        let (guard, t) = poisoned.into_inner();
                        (guard, t.timed_out())
                    }
                };
                if timed_out && (!st.buf.is_empty() || st.dropped > 0) {
                    break;
                }
            }
            std::mem::swap(&mut st.buf, &mut spare);
            let dropped = std::mem::take(&mut st.dropped);
            let round = st.asked;
            drop(st);

            let _ = out.write_all(&spare);
            if dropped > 0 {
                let _ = writeln!(
                    out,
                    "[handwire] log: {dropped} line(s) dropped, the output was not read fast enough"
                );
            }
            let _ = out.flush();
            spare.clear();
            if spare.capacity() > self.opts.capacity {
                spare.shrink_to(self.opts.capacity / 4);
            }

            let mut st = self.lock();
            st.done = st.done.max(round);
            drop(st);
            self.written.notify_all();
        }
    }
}

/// The name this process's request log lines start with, set once by a
/// binary ([`set_service_name`]); `handwire` until then (tests, examples).
static SERVICE_NAME: OnceLock<&'static str> = OnceLock::new();

/// Name the service for the request log (`[router-demo] 2026/… | 200 | …`),
/// so that lines of services side by side tell which one answered. The
/// first call wins; call it at start-up.
pub fn set_service_name(name: &'static str) {
    let _ = SERVICE_NAME.set(name);
}

/// The name set by [`set_service_name`], else `handwire`.
pub(crate) fn service_name() -> &'static str {
    SERVICE_NAME.get().copied().unwrap_or("handwire")
}

/// The process-wide sink on stdout that the request logger, the gRPC access
/// log and the services write to. Started on first use.
pub fn stdout() -> &'static Sink {
    static SINK: OnceLock<Sink> = OnceLock::new();
    SINK.get_or_init(|| Sink::new(Box::new(std::io::stdout()), SinkOptions::default()))
}

/// Write `text` as one line to the [`stdout`] sink and wait (at most a
/// second) until it is out: for the lines a binary prints at start-up and
/// at exit, which a reader waits for and which must follow the log lines
/// written before them.
pub fn announce(text: &str) {
    let sink = stdout();
    sink.text(text);
    sink.flush(Duration::from_secs(1));
}

/// Longest message written by [`message`], in bytes; past it the line is cut.
pub const MESSAGE_MAX: usize = 1024;

/// Write `[tag] message` to the [`stdout`] sink as one line: the way the
/// library reports events (recovered errors, refused tokens, maintenance).
/// The message is cut at [`MESSAGE_MAX`] bytes. Written while a request is
/// served, the line ends with ` trace_id=…`, its trace's id
/// ([`crate::ops::tracecontext`]), so it can be found with that request's
/// access-log line.
pub fn message(tag: &str, args: std::fmt::Arguments<'_>) {
    stdout().line(|buf| {
        let start = buf.len();
        buf.push(b'[');
        buf.extend_from_slice(tag.as_bytes());
        buf.extend_from_slice(b"] ");
        // A message without arguments is copied; others are formatted.
        match args.as_str() {
            Some(text) => buf.extend_from_slice(text.as_bytes()),
            None => {
                let _ = buf.write_fmt(args);
            }
        }
        if buf.len() - start > MESSAGE_MAX {
            let mut cut = start + MESSAGE_MAX;
            while cut > start && (buf[cut] & 0xC0) == 0x80 {
                cut -= 1; // back to a UTF-8 character boundary
            }
            buf.truncate(cut);
            buf.extend_from_slice("…".as_bytes());
        }
        push_trace_id(buf);
        buf.push(b'\n');
    });
}

/// Append ` trace_id=<32 hex digits>` when the code runs inside a
/// request's trace; nothing otherwise.
pub fn push_trace_id(buf: &mut Vec<u8>) {
    if let Some(trace) = crate::ops::tracecontext::current() {
        let _ = write!(buf, " trace_id={}", trace.trace_id());
    }
}

/// The one escaping rule for text a client controls, in every log line of
/// every service: as Rust's `Debug` quotes a string (control characters,
/// C1, bidi controls such as U+202E, the line and paragraph separators
/// U+2028 and U+2029, `"` and `\` are escaped), and `|`, the field
/// separator of the access lines, as `\u{7c}`. A client can then neither
/// end a line, nor fake a field, nor make a line display as other text.
pub fn escape_for_log(text: &str) -> Cow<'_, str> {
    if text.bytes().all(plain) {
        return Cow::Borrowed(text);
    }
    let quoted = format!("{text:?}");
    Cow::Owned(quoted[1..quoted.len() - 1].replace('|', "\\u{7c}"))
}

/// A byte [`escape_for_log`] keeps as it is.
fn plain(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'|')
}

/// `text` escaped by [`escape_for_log`], cut to at most `max` bytes of the
/// text (on a character boundary, marked with `…`).
pub(crate) fn capped(text: &str, max: usize) -> Cow<'_, str> {
    // Plain ASCII that fits, the usual path or method, is the text itself.
    if text.len() <= max && text.bytes().all(plain) {
        return Cow::Borrowed(text);
    }
    escaped_capped(text, max)
}

/// [`capped`] for text that needs escaping or is too long.
fn escaped_capped(text: &str, max: usize) -> Cow<'_, str> {
    let mut cut = text.len().min(max);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    match cut < text.len() {
        true => Cow::Owned(format!("{}…", escape_for_log(&text[..cut]))),
        false => escape_for_log(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A writer that hands each write to a channel, optionally held back
    /// until `gate` is opened.
    struct Probe {
        tx: mpsc::Sender<Vec<u8>>,
        gate: Gate,
    }

    impl Write for Probe {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            let (lock, cv) = &*self.gate;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            let _ = self.tx.send(data.to_vec());
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    type Gate = Arc<(Mutex<bool>, Condvar)>;

    fn probe(open: bool, opts: SinkOptions) -> (Sink, mpsc::Receiver<Vec<u8>>, Gate) {
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new((Mutex::new(open), Condvar::new()));
        let sink = Sink::new(
            Box::new(Probe {
                tx,
                gate: gate.clone(),
            }),
            opts,
        );
        (sink, rx, gate)
    }

    fn collect(rx: &mpsc::Receiver<Vec<u8>>) -> String {
        let mut all = Vec::new();
        while let Ok(chunk) = rx.try_recv() {
            all.extend(chunk);
        }
        String::from_utf8(all).unwrap()
    }

    #[test]
    fn flush_writes_every_line_appended_before_it_in_order() {
        let (sink, rx, _gate) = probe(true, SinkOptions::default());
        for i in 0..100 {
            sink.line(|b| writeln!(b, "line {i}").unwrap());
        }
        assert!(sink.flush(Duration::from_secs(5)));
        let text = collect(&rx);
        let want: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, want);
    }

    #[test]
    fn lines_are_written_within_the_interval_without_a_flush() {
        let opts = SinkOptions {
            interval: Duration::from_millis(10),
            ..SinkOptions::default()
        };
        let (sink, rx, _gate) = probe(true, opts);
        sink.text("soon");
        let chunk = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(chunk, b"soon\n");
    }

    #[test]
    fn a_blocked_reader_never_blocks_the_caller_lines_are_dropped_and_counted() {
        let opts = SinkOptions {
            capacity: 64,
            interval: Duration::from_millis(1),
        };
        let (sink, rx, gate) = probe(false, opts);
        // The writer takes the first batch and blocks on the closed gate;
        // everything after fills the buffer and must be dropped, not waited for.
        sink.text("first");
        std::thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        for i in 0..10_000 {
            sink.line(|b| writeln!(b, "line {i:05}").unwrap());
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "appending blocked"
        );
        let dropped = sink.dropped();
        assert!(dropped >= 9_990, "dropped {dropped}");
        // Open the reader: the kept lines, then one line counting the rest.
        let (lock, cv) = &*gate;
        *lock.lock().unwrap() = true;
        cv.notify_all();
        assert!(sink.flush(Duration::from_secs(5)));
        let text = collect(&rx);
        assert!(text.starts_with("first\n"), "{text}");
        assert!(
            text.contains(&format!("[handwire] log: {dropped} line(s) dropped")),
            "{text}"
        );
        assert_eq!(sink.dropped(), 0);
    }

    #[test]
    fn flush_gives_up_after_its_limit_when_the_reader_is_stuck() {
        let (sink, _rx, _gate) = probe(false, SinkOptions::default());
        sink.text("stuck");
        let start = Instant::now();
        assert!(!sink.flush(Duration::from_millis(100)));
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn user_text_in_log_lines_is_capped_and_escaped_by_one_rule() {
        let cases: [(&str, usize, &str); 14] = [
            ("/hello", 64, "/hello"),
            ("/aaaaaaaaaa", 4, "/aaa…"),
            ("/a\nb\0", 64, "/a\\nb\\0"),
            ("/\r\t\x1b[31m", 64, "/\\r\\t\\u{1b}[31m"),
            ("/\u{7f}\u{85}\u{9b}", 64, "/\\u{7f}\\u{85}\\u{9b}"),
            ("/x\u{202e}gpj.exe", 64, "/x\\u{202e}gpj.exe"),
            (
                "/\u{2066}\u{2069}\u{200f}\u{61c}",
                64,
                "/\\u{2066}\\u{2069}\\u{200f}\\u{61c}",
            ),
            ("/a\u{2028}b\u{2029}", 64, "/a\\u{2028}b\\u{2029}"),
            ("/\" | 200 | x", 64, "/\\\" \\u{7c} 200 \\u{7c} x"),
            ("/back\\slash", 64, "/back\\\\slash"),
            ("/é€", 3, "/é…"),
            ("/é€", 64, "/é€"),
            ("/\u{feff}", 64, "/\\u{feff}"),
            ("", 8, ""),
        ];
        for (input, max, want) in cases {
            assert_eq!(capped(input, max), want, "{input:?} max {max}");
        }
    }
}
