//! The request log's numbers, written without `core::fmt`: the latency as
//! `Duration`'s `Debug` prints it and the client's IPv4 address, each padded
//! as the logger's `format!` spec would pad it (the status needs nothing:
//! `StatusCode::as_str` is its three digits).
//!
//! The same line through `write!` cost about 5,700 instructions a request,
//! more than a third of all the rest, so the logger
//! ([`crate::web::middleware::logger`]) appends these digits through
//! `itoa`; the tests prove the text is the same.

use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

/// Append `d` as `Duration`'s `Debug` prints it (`84.741µs`), right-aligned
/// in `width` characters.
pub(crate) fn push_latency(buf: &mut Vec<u8>, d: Duration, width: usize) {
    let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let (unit, scale, mut places) = match nanos {
        1_000_000_000.. => ("s", 1_000_000_000, 9),
        1_000_000.. => ("ms", 1_000_000, 6),
        1_000.. => ("µs", 1_000, 3),
        _ => ("ns", 1, 0),
    };
    let (int, mut frac) = (nanos / scale, nanos % scale);
    // No trailing zeros; a whole number has no fraction at all.
    while places > 0 && frac % 10 == 0 {
        (frac, places) = (frac / 10, places - 1);
    }
    let start = buf.len();
    buf.extend_from_slice(itoa::Buffer::new().format(int).as_bytes());
    if places > 0 {
        // `10^places + frac` is a `1`, then the fraction's digits with
        // their leading zeros.
        let padded = 10u64.pow(places) + frac;
        buf.push(b'.');
        buf.extend_from_slice(&itoa::Buffer::new().format(padded).as_bytes()[1..]);
    }
    buf.extend_from_slice(unit.as_bytes());
    // `µ` is two bytes and one character.
    pad_left(buf, start, width + usize::from(unit == "µs"));
}

/// Append `ip` as `Display` writes it, right-aligned in `width` characters.
pub(crate) fn push_ip(buf: &mut Vec<u8>, ip: IpAddr, width: usize) {
    let IpAddr::V4(v4) = ip else {
        let _ = write!(buf, "{ip:>width$}");
        return;
    };
    let start = buf.len();
    for octet in v4.octets() {
        buf.extend_from_slice(itoa::Buffer::new().format(octet).as_bytes());
        buf.push(b'.');
    }
    buf.pop(); // the dot after the last octet
    pad_left(buf, start, width);
}

/// Spaces before what was appended to `buf` from `start` on, so that it
/// takes `width` bytes.
fn pad_left(buf: &mut Vec<u8>, start: usize, width: usize) {
    let pad = width.saturating_sub(buf.len() - start);
    buf.splice(start..start, std::iter::repeat_n(b' ', pad));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_fields_are_written_exactly_as_core_fmt_would() {
        let latencies = [
            0,
            1,
            999,
            1_000,
            1_500,
            84_741,
            999_999,
            1_000_000,
            1_000_001,
            1_234_567,
            999_999_999,
            1_000_000_000,
            1_500_000_000,
            123_456_789_012,
            86_400_000_000_001,
        ];
        for n in latencies {
            let d = Duration::from_nanos(n);
            let mut buf = Vec::new();
            push_latency(&mut buf, d, 12);
            assert_eq!(
                String::from_utf8(buf).unwrap(),
                format!("{d:>12?}"),
                "{n} ns"
            );
            let mut buf = Vec::new();
            push_latency(&mut buf, d, 0);
            assert_eq!(String::from_utf8(buf).unwrap(), format!("{d:?}"), "{n} ns");
        }
        let ips = [
            "127.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "10.20.3.4",
            "100.9.10.255",
            "1.2.3.4",
            "::1",
            "2001:db8::1",
        ];
        for ip in ips {
            let ip: IpAddr = ip.parse().unwrap();
            let mut buf = Vec::new();
            push_ip(&mut buf, ip, 15);
            assert_eq!(String::from_utf8(buf).unwrap(), format!("{ip:>15}"));
            let mut buf = Vec::new();
            push_ip(&mut buf, ip, 0);
            assert_eq!(String::from_utf8(buf).unwrap(), ip.to_string());
        }
        for code in [200u16, 404, 503, 101, 999] {
            let status = http::StatusCode::from_u16(code).unwrap();
            assert_eq!(status.as_str(), format!("{:3}", code));
        }
    }
}
