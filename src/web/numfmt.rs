//! The request log's numbers, written without `core::fmt`: the status,
//! the latency as `Duration`'s `Debug` prints it, and the client's IPv4
//! address, each padded as the logger's `format!` spec would pad it.
//!
//! `core::fmt` was a tenth of a request's user-space time in a profile of
//! `GET /hello`, so the logger ([`crate::web::middleware::logger`]) appends
//! these digits by hand; the tests prove the text is the same.

use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

use http::StatusCode;

/// The status as three digits (what `{:3}` prints for 100–999).
pub(crate) fn push_status(buf: &mut Vec<u8>, status: StatusCode) {
    let n = status.as_u16();
    if (100..1000).contains(&n) {
        buf.extend_from_slice(&[
            b'0' + (n / 100) as u8,
            b'0' + (n / 10 % 10) as u8,
            b'0' + (n % 10) as u8,
        ]);
    } else {
        let _ = write!(buf, "{n:3}");
    }
}

/// `{:>width$?}` of a `Duration`: `84.741µs`, `1.234567ms`, `2s`,
/// right-aligned in `width` characters (the request log's 12; the gRPC
/// access line's 0), as `Duration`'s `Debug` writes it.
pub(crate) fn push_latency(buf: &mut Vec<u8>, d: Duration, width: usize) {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    let (int, frac, frac_digits, unit): (u64, u32, u32, &str) = if secs > 0 {
        (secs, nanos, 9, "s")
    } else if nanos >= 1_000_000 {
        (u64::from(nanos / 1_000_000), nanos % 1_000_000, 6, "ms")
    } else if nanos >= 1_000 {
        (u64::from(nanos / 1_000), nanos % 1_000, 3, "µs")
    } else {
        (u64::from(nanos), 0, 0, "ns")
    };
    let mut text = [0u8; 40];
    let mut len = 0;
    let mut digits = [0u8; 20];
    let mut n = int;
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in (0..count).rev() {
        text[len] = digits[i];
        len += 1;
    }
    if frac > 0 {
        // The fraction's digits right to left (a division by the constant
        // 10 is a multiplication), then without its trailing zeros.
        let mut fraction = [b'0'; 9];
        let mut rest = frac;
        for digit in fraction[..frac_digits as usize].iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        let mut kept = frac_digits as usize;
        while fraction[kept - 1] == b'0' {
            kept -= 1;
        }
        text[len] = b'.';
        text[len + 1..len + 1 + kept].copy_from_slice(&fraction[..kept]);
        len += 1 + kept;
    }
    text[len..len + unit.len()].copy_from_slice(unit.as_bytes());
    len += unit.len();
    let chars = len - usize::from(unit == "µs"); // µ is two bytes, one character
    buf.resize(buf.len() + width.saturating_sub(chars), b' ');
    buf.extend_from_slice(&text[..len]);
}

/// `{:>width$}` of the client IP (the request log's 15; the gRPC access
/// line's 0).
pub(crate) fn push_ip(buf: &mut Vec<u8>, ip: IpAddr, width: usize) {
    let IpAddr::V4(v4) = ip else {
        let _ = write!(buf, "{ip:>width$}");
        return;
    };
    let mut text = [0u8; 15];
    let mut len = 0;
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            text[len] = b'.';
            len += 1;
        }
        if octet >= 100 {
            text[len] = b'0' + octet / 100;
            len += 1;
        }
        if octet >= 10 {
            text[len] = b'0' + octet / 10 % 10;
            len += 1;
        }
        text[len] = b'0' + octet % 10;
        len += 1;
    }
    buf.resize(buf.len() + width.saturating_sub(len), b' ');
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
        for code in [200u16, 404, 503, 101] {
            let status = StatusCode::from_u16(code).unwrap();
            let mut buf = Vec::new();
            push_status(&mut buf, status);
            assert_eq!(String::from_utf8(buf).unwrap(), format!("{:3}", code));
        }
    }
}
