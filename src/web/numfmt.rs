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
///
/// Written right to left into a line of spaces (the unit, the fraction
/// without its trailing zeros, the point, the integer), so the padding and
/// the text reach `buf` in one copy.
pub(crate) fn push_latency(buf: &mut Vec<u8>, d: Duration, width: usize) {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    let (int, mut frac, mut frac_digits, unit): (u64, u32, u32, &str) = if secs > 0 {
        (secs, nanos, 9, "s")
    } else if nanos >= 1_000_000 {
        (u64::from(nanos / 1_000_000), nanos % 1_000_000, 6, "ms")
    } else if nanos >= 1_000 {
        (u64::from(nanos / 1_000), nanos % 1_000, 3, "µs")
    } else {
        (u64::from(nanos), 0, 0, "ns")
    };
    // 20 integer digits, a point, 9 fraction digits and 3 unit bytes at
    // most, and room for a 12-character pad in front of the longest text.
    let mut text = [b' '; 48];
    let mut at = text.len();
    for &byte in unit.as_bytes().iter().rev() {
        at -= 1;
        text[at] = byte;
    }
    if frac > 0 {
        while frac % 10 == 0 {
            frac /= 10;
            frac_digits -= 1;
        }
        for _ in 0..frac_digits {
            at -= 1;
            text[at] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        at -= 1;
        text[at] = b'.';
    }
    let mut n = int;
    loop {
        at -= 1;
        text[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let chars = text.len() - at - usize::from(unit == "µs"); // µ: two bytes, one character
    push_padded(buf, &text, at, width.saturating_sub(chars));
}

/// Append `text[at..]` with `pad` spaces in front, taken from the spaces
/// before `at` when there are enough.
fn push_padded(buf: &mut Vec<u8>, text: &[u8], at: usize, pad: usize) {
    match at.checked_sub(pad) {
        Some(start) => buf.extend_from_slice(&text[start..]),
        None => {
            buf.resize(buf.len() + pad, b' ');
            buf.extend_from_slice(&text[at..]);
        }
    }
}

/// Each octet's decimal digits followed by a `.`, and how many digits.
static OCTETS: [([u8; 4], u8); 256] = {
    let mut table = [([0u8; 4], 0u8); 256];
    let mut i = 0;
    while i < 256 {
        let n = i as u8;
        table[i] = if n >= 100 {
            ([b'0' + n / 100, b'0' + n / 10 % 10, b'0' + n % 10, b'.'], 3)
        } else if n >= 10 {
            ([b'0' + n / 10, b'0' + n % 10, b'.', 0], 2)
        } else {
            ([b'0' + n, b'.', 0, 0], 1)
        };
        i += 1;
    }
    table
};

/// `{:>width$}` of the client IP (the request log's 15; the gRPC access
/// line's 0).
pub(crate) fn push_ip(buf: &mut Vec<u8>, ip: IpAddr, width: usize) {
    let IpAddr::V4(v4) = ip else {
        let _ = write!(buf, "{ip:>width$}");
        return;
    };
    // The text starts after 16 spaces, room for the request log's pad.
    const AT: usize = 16;
    let mut text = [b' '; AT + 16];
    let mut end = AT;
    for octet in v4.octets() {
        let (digits, len) = OCTETS[usize::from(octet)];
        text[end..end + 4].copy_from_slice(&digits);
        end += usize::from(len) + 1;
    }
    let end = end - 1; // the last octet's `.`
    let pad = width.saturating_sub(end - AT);
    push_padded(buf, &text[..end], AT, pad);
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
        for code in [200u16, 404, 503, 101] {
            let status = StatusCode::from_u16(code).unwrap();
            let mut buf = Vec::new();
            push_status(&mut buf, status);
            assert_eq!(String::from_utf8(buf).unwrap(), format!("{:3}", code));
        }
    }
}
