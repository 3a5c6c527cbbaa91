//! Prometheus metrics, written by hand: counters, gauges and histograms on
//! atomics, and the text exposition format (`text/plain; version=0.0.4`).
//!
//! The series are named as Kratos names them, so dashboards made for Kratos
//! services work unchanged:
//!
//! | family | type | labels |
//! |---|---|---|
//! | `server_requests_code_total` | counter | `kind`, `operation`, `code`, `reason` |
//! | `server_requests_seconds` | histogram | `kind`, `operation` |
//! | `server_connections` | gauge | `kind` |
//! | `log_lines_dropped_total` | counter | — |
//!
//! plus whatever histograms a service adds with [`Metrics::add_histogram`]
//! (the greeter's group-commit batch sizes).
//!
//! `kind` is `http` or `grpc`; `operation` is the route *template*
//! (`/book/:id`) or the gRPC method (`/helloworld.v1.Greeter/SayHello`),
//! never the raw path, and every request no route matched shares
//! [`UNMATCHED`]: the label set is bounded by the route table, so a client
//! sending ten thousand different paths cannot grow the registry. An
//! [`Operation`] is registered once per route when the engine is built (or
//! per method when the gRPC server is), so the request path only does
//! atomic adds: one bucket, the nanosecond sum and one status counter.
//!
//! A histogram keeps one count per bucket (not cumulative) and adds them up
//! when rendered, so `le="+Inf"` always equals `_count`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use http::StatusCode;

use crate::ops::log;

/// The `Content-Type` of the exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds (seconds) of the request-duration buckets: Kratos' (and
/// Prometheus' default) 0.005 … 10.
pub const LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The `operation` of every HTTP request no route matched (404, 405 and
/// trailing-slash redirects): one fixed label, whatever the path was.
pub const UNMATCHED: &str = "unmatched";

/// Which server a series belongs to: the `kind` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An HTTP route.
    Http,
    /// A gRPC method.
    Grpc,
}

impl Kind {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Grpc => "grpc",
        }
    }
}

/// A histogram over whole numbers (`observe(u64)`), rendered after dividing
/// by `scale`: nanoseconds with scale 1e9 render as seconds.
#[derive(Debug)]
pub struct Histogram {
    /// Upper bounds in observed units, ascending.
    bounds: Box<[u64]>,
    /// One count per bound, then the `+Inf` bucket; not cumulative.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
    scale: f64,
}

impl Histogram {
    /// A histogram with these upper bounds (in rendered units, ascending)
    /// over values observed in units `scale` times smaller.
    pub fn new(bounds: &[f64], scale: f64) -> Histogram {
        Histogram {
            bounds: bounds.iter().map(|b| (b * scale).round() as u64).collect(),
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            scale,
        }
    }

    /// The request-duration histogram: [`LATENCY_BUCKETS`] seconds, observed
    /// in nanoseconds.
    pub fn latency() -> Histogram {
        Histogram::new(&LATENCY_BUCKETS, 1e9)
    }

    /// Count one value (in observed units).
    pub fn observe(&self, value: u64) {
        let i = self.bounds.partition_point(|&b| b < value);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// Count one duration (for histograms observed in nanoseconds).
    pub fn observe_duration(&self, d: Duration) {
        self.observe(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// The number of values observed.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// `_bucket` lines (cumulative, `+Inf` last), `_sum` and `_count` for
    /// `name`, with `labels` (already formatted, `k="v",…`, or empty).
    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = match self.bounds.get(i) {
                Some(&b) => format_float(b as f64 / self.scale),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let sum = self.sum.load(Ordering::Relaxed) as f64 / self.scale;
        let braced = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braced} {}", format_float(sum));
        let _ = writeln!(out, "{name}_count{braced} {cumulative}");
    }
}

/// A float as the exposition format writes it (`0.005`, `10.0`, `1e-9`).
fn format_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// How many requests of one operation ended with one code.
#[derive(Debug)]
struct CodeCount {
    code: u16,
    reason: &'static str,
    count: AtomicU64,
}

/// How many inline code counters an operation has: more than the codes a
/// route or a method usually ends with (200, 400, 404, 500…).
const CODE_SLOTS: usize = 8;

/// One code's counter, claimed by the first request that ends with it.
#[derive(Debug, Default)]
struct CodeSlot {
    /// The code plus one (gRPC's OK is 0), 0 while the slot is free.
    code: AtomicU32,
    /// Its reason, set by the claimer right after the claim; a slot whose
    /// reason is not set yet is left out of a scrape.
    reason: OnceLock<&'static str>,
    count: AtomicU64,
}

/// The series of one operation (route template or gRPC method): its
/// duration histogram and one counter per code seen.
#[derive(Debug)]
pub struct Operation {
    kind: Kind,
    name: Box<str>,
    seconds: Histogram,
    /// The first codes seen, each counted with one atomic add and no lock:
    /// a read lock is two more atomic writes per request, which a profile
    /// of `GET /hello` showed.
    slots: [CodeSlot; CODE_SLOTS],
    /// Codes past the slots: a read lock and a short scan per
    /// request, the write lock only the first time a code is seen.
    codes: RwLock<Vec<CodeCount>>,
}

impl Operation {
    fn new(kind: Kind, name: &str) -> Operation {
        Operation {
            kind,
            name: name.into(),
            seconds: Histogram::latency(),
            slots: Default::default(),
            codes: RwLock::new(Vec::new()),
        }
    }

    /// The `operation` label.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Count one request that ended with `code` after `elapsed`; `reason`
    /// is recorded the first time the code is seen (it must be a function
    /// of the code).
    pub fn observe(&self, code: u16, reason: &'static str, elapsed: Duration) {
        self.seconds.observe_duration(elapsed);
        if self.count_in_slot(code, reason) {
            return;
        }
        {
            let codes = self.codes.read().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = codes.iter().find(|c| c.code == code) {
                c.count.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let mut codes = self.codes.write().unwrap_or_else(|p| p.into_inner());
        match codes.iter().find(|c| c.code == code) {
            Some(c) => {
                c.count.fetch_add(1, Ordering::Relaxed);
            }
            None => codes.push(CodeCount {
                code,
                reason,
                count: AtomicU64::new(1),
            }),
        }
    }

    /// Count `code` in its slot, claiming a free one the first time;
    /// false when every slot holds another code.
    fn count_in_slot(&self, code: u16, reason: &'static str) -> bool {
        let code = u32::from(code) + 1;
        for slot in &self.slots {
            let mut held = slot.code.load(Ordering::Acquire);
            if held == 0 {
                held =
                    match slot
                        .code
                        .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(_) => {
                            let _ = slot.reason.set(reason);
                            code
                        }
                        Err(other) => other,
                    };
            }
            if held == code {
                slot.count.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Count one HTTP response.
    pub fn observe_http(&self, status: StatusCode, elapsed: Duration) {
        self.observe(status.as_u16(), http_reason(status), elapsed);
    }

    fn labels(&self) -> String {
        format!(
            "kind=\"{}\",operation=\"{}\"",
            self.kind.label(),
            escape(&self.name)
        )
    }
}

/// The `reason` label of an HTTP status: empty below 400 (as Kratos leaves
/// it for successes), else the status in UPPER_SNAKE (`NOT_FOUND`).
pub fn http_reason(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "BAD_REQUEST",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        405 => "METHOD_NOT_ALLOWED",
        408 => "REQUEST_TIMEOUT",
        409 => "CONFLICT",
        413 => "PAYLOAD_TOO_LARGE",
        415 => "UNSUPPORTED_MEDIA_TYPE",
        429 => "TOO_MANY_REQUESTS",
        500 => "INTERNAL_SERVER_ERROR",
        501 => "NOT_IMPLEMENTED",
        502 => "BAD_GATEWAY",
        503 => "SERVICE_UNAVAILABLE",
        504 => "GATEWAY_TIMEOUT",
        n if n >= 400 => "ERROR",
        _ => "",
    }
}

/// A label value escaped as the format requires (`\\`, `\"`, `\n`).
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// An up-down count (open connections), shared with the accept loop.
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Add one until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>) -> GaugeGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        GaugeGuard(self.clone())
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Subtracts one from its [`Gauge`] when dropped.
#[derive(Debug)]
pub struct GaugeGuard(Arc<Gauge>);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A histogram family a service adds to the registry.
struct Extra {
    name: &'static str,
    help: &'static str,
    histogram: Arc<Histogram>,
}

/// Context key under which a handler that routes by itself (the greeter's
/// proto-declared routes, served behind the engine's fallback) puts the
/// `Arc<Operation>` of the route it served; the engine counts the request
/// under it instead of [`UNMATCHED`]. The handler makes its operations once
/// (one per route template), never from the raw path.
pub const OPERATION_KEY: &str = "metrics.operation";

/// The registry of one process (or one test's server): every operation,
/// the connection gauges, the added histograms; rendered on `GET /metrics`.
pub struct Metrics {
    operations: Mutex<Vec<Arc<Operation>>>,
    connections: [Arc<Gauge>; 2],
    extras: Mutex<Vec<Extra>>,
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Arc<Metrics> {
        Arc::new(Metrics {
            operations: Mutex::new(Vec::new()),
            connections: [Arc::default(), Arc::default()],
            extras: Mutex::new(Vec::new()),
        })
    }

    /// The series of `name` for `kind`, created on first use. Called when
    /// routes and methods are registered, not per request.
    pub fn operation(&self, kind: Kind, name: &str) -> Arc<Operation> {
        let mut ops = self.operations.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(op) = ops.iter().find(|o| o.kind == kind && &*o.name == name) {
            return op.clone();
        }
        let op = Arc::new(Operation::new(kind, name));
        ops.push(op.clone());
        op
    }

    /// The open-connections gauge of the `kind` listeners, for
    /// [`crate::server::Options::connections`].
    pub fn connections(&self, kind: Kind) -> Arc<Gauge> {
        self.connections[kind as usize].clone()
    }

    /// Add a histogram family, rendered after the built-in ones.
    pub fn add_histogram(&self, name: &'static str, help: &'static str, h: Arc<Histogram>) {
        let mut extras = self.extras.lock().unwrap_or_else(|p| p.into_inner());
        extras.push(Extra {
            name,
            help,
            histogram: h,
        });
    }

    /// The whole registry in the text exposition format.
    pub fn render(&self) -> String {
        let ops: Vec<Arc<Operation>> = self
            .operations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut out = String::with_capacity(4096);
        family(
            &mut out,
            "server_requests_code_total",
            "counter",
            "The total number of processed requests",
        );
        for op in &ops {
            let labels = op.labels();
            let slots = op.slots.iter().filter_map(|s| {
                let reason = *s.reason.get()?;
                let code = s.code.load(Ordering::Acquire) - 1;
                Some((code, reason, s.count.load(Ordering::Relaxed)))
            });
            let codes = op.codes.read().unwrap_or_else(|p| p.into_inner());
            let listed = codes
                .iter()
                .map(|c| (u32::from(c.code), c.reason, c.count.load(Ordering::Relaxed)));
            for (code, reason, count) in slots.chain(listed) {
                let _ = writeln!(
                    out,
                    "server_requests_code_total{{{labels},code=\"{code}\",reason=\"{reason}\"}} {count}"
                );
            }
        }
        family(
            &mut out,
            "server_requests_seconds",
            "histogram",
            "server requests duration(sec).",
        );
        for op in ops.iter().filter(|op| op.seconds.count() > 0) {
            op.seconds
                .render(&mut out, "server_requests_seconds", &op.labels());
        }
        family(
            &mut out,
            "server_connections",
            "gauge",
            "Connections open now, per listener kind.",
        );
        for kind in [Kind::Http, Kind::Grpc] {
            let value = self.connections[kind as usize].get();
            let _ = writeln!(
                out,
                "server_connections{{kind=\"{}\"}} {value}",
                kind.label()
            );
        }
        family(
            &mut out,
            "log_lines_dropped_total",
            "counter",
            "Log lines dropped because the output was not read fast enough.",
        );
        let _ = writeln!(
            out,
            "log_lines_dropped_total {}",
            log::stdout().dropped_total()
        );
        for extra in self.extras.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            family(&mut out, extra.name, "histogram", extra.help);
            extra.histogram.render(&mut out, extra.name, "");
        }
        out
    }
}

/// The `# HELP` and `# TYPE` lines of a family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_inf_equals_count() {
        let h = Histogram::latency();
        for ms in [1, 5, 7, 30, 30, 20_000] {
            h.observe_duration(Duration::from_millis(ms));
        }
        let mut out = String::new();
        h.render(&mut out, "x", "a=\"b\"");
        let line = |le: &str| {
            out.lines()
                .find(|l| l.starts_with(&format!("x_bucket{{a=\"b\",le=\"{le}\"}}")))
                .unwrap_or_else(|| panic!("no bucket {le} in {out}"))
                .rsplit(' ')
                .next()
                .unwrap()
                .to_string()
        };
        // 5 ms is inside le=0.005: bounds are inclusive.
        assert_eq!(line("0.005"), "2", "{out}");
        assert_eq!(line("0.01"), "3");
        assert_eq!(line("0.05"), "5");
        assert_eq!(line("10.0"), "5");
        assert_eq!(line("+Inf"), "6");
        assert!(out.contains("x_count{a=\"b\"} 6\n"), "{out}");
        assert!(out.contains("x_sum{a=\"b\"} 20.073\n"), "{out}");
    }

    #[test]
    fn each_code_gets_one_counter_with_its_reason() {
        let m = Metrics::new();
        let op = m.operation(Kind::Http, "/book/:id");
        assert!(Arc::ptr_eq(&op, &m.operation(Kind::Http, "/book/:id")));
        for status in [200, 200, 404, 200] {
            op.observe_http(StatusCode::from_u16(status).unwrap(), Duration::ZERO);
        }
        let text = m.render();
        assert!(text.contains(
            "server_requests_code_total{kind=\"http\",operation=\"/book/:id\",code=\"200\",reason=\"\"} 3\n"
        ), "{text}");
        assert!(text.contains(
            "server_requests_code_total{kind=\"http\",operation=\"/book/:id\",code=\"404\",reason=\"NOT_FOUND\"} 1\n"
        ), "{text}");
    }

    #[test]
    fn codes_past_the_inline_slots_and_grpc_ok_are_counted_once_in_first_seen_order() {
        let m = Metrics::new();
        let op = m.operation(Kind::Grpc, "/helloworld.v1.Greeter/SayHello");
        // gRPC's OK is code 0; 12 codes are more than the slots hold.
        let codes: Vec<u16> = (0..12).collect();
        for round in 1..=3 {
            for &code in &codes[..round * 4] {
                op.observe(code, "R", Duration::ZERO);
            }
        }
        let text = m.render();
        let seen: Vec<(u16, u64)> = text
            .lines()
            .filter(|l| l.starts_with("server_requests_code_total{kind=\"grpc\""))
            .map(|l| {
                let code = l
                    .split("code=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                let count = l.rsplit(' ').next().unwrap();
                (code.parse().unwrap(), count.parse().unwrap())
            })
            .collect();
        // Codes 0-3 were seen in all three rounds, 4-7 in two, 8-11 in one.
        let want: Vec<(u16, u64)> = codes.iter().map(|&c| (c, 3 - u64::from(c / 4))).collect();
        assert_eq!(seen, want, "{text}");
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let m = Metrics::new();
        m.operation(Kind::Grpc, "/a.B/C")
            .observe(0, "", Duration::from_micros(3));
        m.add_histogram("batch", "sizes", Arc::new(Histogram::new(&[1.0, 2.0], 1.0)));
        let text = m.render();
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap().to_string());
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(
                    declared.iter().any(|f| name.starts_with(f.as_str())),
                    "{name} before its TYPE"
                );
            }
        }
        assert_eq!(
            declared,
            [
                "server_requests_code_total",
                "server_requests_seconds",
                "server_connections",
                "log_lines_dropped_total",
                "batch"
            ]
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn the_connection_gauge_goes_down_when_the_guard_drops() {
        let m = Metrics::new();
        let g = m.connections(Kind::Http);
        let a = g.enter();
        let b = g.enter();
        assert_eq!(g.get(), 2);
        drop(a);
        drop(b);
        assert_eq!(m.connections(Kind::Http).get(), 0);
    }
}
