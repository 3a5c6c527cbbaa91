//! The request log's numbers, written without `core::fmt`: the latency as
//! `Duration`'s `Debug` prints it and the client's IPv4 address, each padded
//! as the logger's `format!` spec would pad it (the status needs nothing:
//! `StatusCode::as_str` is its three digits).
//!
//! The same line through `write!` cost about 5,700 instructions a request,
//! more than a third of all the rest, so the logger
//! ([`crate::web::middleware::logger`]) appends these digits by hand; the
//! tests prove the text is the same.

use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

/// `{:>width$?}` of a `Duration`: `84.741µs`, `1.234567ms`, `2s`,
/// right-aligned in `width` characters (the request log's 12; the gRPC
/// access line's 0), as `Duration`'s `Debug` writes it: the largest unit
/// that leaves a whole number before the point, and no trailing zeros.
pub(crate) fn push_latency(buf: &mut Vec<u8>, d: Duration, width: usize) {
    let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    // The unit, its width in characters (`µ` is two bytes, one character).
    let (unit, unit_chars, scale, mut places) = match nanos {
        1_000_000_000.. => ("s", 1, 1_000_000_000, 9),
        1_000_000.. => ("ms", 2, 1_000_000, 6),
        1_000.. => ("µs", 2, 1_000, 3),
        _ => ("ns", 2, 1, 0),
    };
    let (int, mut frac) = (nanos / scale, nanos % scale);
    // No trailing zeros; a whole number has no fraction at all.
    while places > 0 && frac % 10 == 0 {
        (frac, places) = (frac / 10, places - 1);
    }
    let int_digits = digits(int);
    let chars = int_digits + usize::from(places > 0) + places + unit_chars;
    buf.resize(buf.len() + width.saturating_sub(chars), b' ');
    push_digits(buf, int, int_digits);
    if places > 0 {
        buf.push(b'.');
        push_digits(buf, frac, places);
    }
    buf.extend_from_slice(unit.as_bytes());
}

/// `{:>width$}` of an address; an IPv4 address without `core::fmt`.
pub(crate) fn push_ip(buf: &mut Vec<u8>, ip: IpAddr, width: usize) {
    let IpAddr::V4(v4) = ip else {
        let _ = write!(buf, "{ip:>width$}");
        return;
    };
    let octets = v4.octets().map(|o| (u64::from(o), digits(u64::from(o))));
    let chars = octets.iter().map(|&(_, len)| len).sum::<usize>() + 3;
    buf.resize(buf.len() + width.saturating_sub(chars), b' ');
    for (i, (octet, len)) in octets.into_iter().enumerate() {
        if i > 0 {
            buf.push(b'.');
        }
        push_digits(buf, octet, len);
    }
}

/// How many decimal digits `n` has.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// `n` in `len` decimal digits (zeros in front), made on the stack and
/// appended in one copy (a `resize` and writes into the `Vec` cost twice
/// as much).
fn push_digits(buf: &mut Vec<u8>, mut n: u64, len: usize) {
    let mut text = [b'0'; 20]; // u64::MAX has 20 digits: `len` is at most that
    for digit in text[..len].iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    buf.extend_from_slice(&text[..len]);
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
