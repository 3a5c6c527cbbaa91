//! The request log's numbers, written without `core::fmt`: the latency as
//! `Duration`'s `Debug` prints it and the client's IPv4 address, each padded
//! as the logger's `format!` spec would pad it (the status needs nothing:
//! `StatusCode::as_str` is its three digits).
//!
//! The same line through `write!` cost about 5,700 instructions a request,
//! more than a third of all the rest, so the logger
//! ([`crate::web::middleware::logger`]) appends these digits by hand; the
//! tests prove the text is the same. Each field is made on the stack from
//! its last character to its first and appended, padding and all, in one
//! copy: appending piece by piece cost a `memcpy` call a piece, about twice
//! as much.

use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

/// `{:>width$?}` of a `Duration`: `84.741µs`, `1.234567ms`, `2s`,
/// right-aligned in `width` characters (the request log's 12; the gRPC
/// access line's 0), as `Duration`'s `Debug` writes it: the largest unit
/// that leaves a whole number before the point, and no trailing zeros.
pub(crate) fn push_latency(buf: &mut Vec<u8>, d: Duration, width: usize) {
    let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let (unit, scale, mut places): (&[u8], u64, usize) = match nanos {
        1_000_000_000.. => (b"s", 1_000_000_000, 9),
        1_000_000.. => (b"ms", 1_000_000, 6),
        1_000.. => ("µs".as_bytes(), 1_000, 3),
        _ => (b"ns", 1, 0),
    };
    let (int, mut frac) = (nanos / scale, nanos % scale);
    // No trailing zeros; a whole number has no fraction at all.
    while places > 0 && frac % 10 == 0 {
        (frac, places) = (frac / 10, places - 1);
    }
    let mut text = Backwards::new();
    text.bytes(unit);
    if places > 0 {
        text.digits(frac, places);
        text.byte(b'.');
    }
    text.number(int);
    // `µ` is two bytes and one character.
    let chars = text.len() - usize::from(unit.len() == 3);
    text.push_padded(buf, chars, width);
}

/// `{:>width$}` of an address; an IPv4 address without `core::fmt`.
pub(crate) fn push_ip(buf: &mut Vec<u8>, ip: IpAddr, width: usize) {
    let IpAddr::V4(v4) = ip else {
        let _ = write!(buf, "{ip:>width$}");
        return;
    };
    let mut text = Backwards::new();
    for (i, octet) in v4.octets().into_iter().rev().enumerate() {
        if i > 0 {
            text.byte(b'.');
        }
        let (digits, len) = &OCTETS[usize::from(octet)];
        text.bytes(&digits[..usize::from(*len)]);
    }
    text.push_padded(buf, text.len(), width);
}

/// The decimal text of each octet, `0` to `255`, and its length: an
/// address is four lookups, not eight divisions.
static OCTETS: [([u8; 3], u8); 256] = {
    let mut table = [([0u8; 3], 0u8); 256];
    let mut n = 0;
    while n < 256 {
        let d = [
            b'0' + (n / 100) as u8,
            b'0' + (n / 10 % 10) as u8,
            b'0' + (n % 10) as u8,
        ];
        table[n] = match n {
            0..=9 => ([d[2], 0, 0], 1),
            10..=99 => ([d[1], d[2], 0], 2),
            _ => (d, 3),
        };
        n += 1;
    }
    table
};

/// A field of at most [`Backwards::CAP`] bytes made on the stack from its
/// end, in front of spaces for its padding.
struct Backwards {
    text: [u8; Backwards::CAP],
    /// Where the field starts: it is `text[start..]`.
    start: usize,
}

impl Backwards {
    /// Room for the longest field, a `Duration` of `u64::MAX` nanoseconds
    /// (`18446744073.709551615s`, 22 bytes), and a log line's padding.
    const CAP: usize = 48;

    fn new() -> Backwards {
        Backwards {
            text: [b' '; Backwards::CAP],
            start: Backwards::CAP,
        }
    }

    fn len(&self) -> usize {
        Backwards::CAP - self.start
    }

    fn byte(&mut self, b: u8) {
        self.start -= 1;
        self.text[self.start] = b;
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes.iter().rev() {
            self.byte(b);
        }
    }

    /// `n` in exactly `len` decimal digits (zeros in front).
    fn digits(&mut self, mut n: u64, len: usize) {
        for _ in 0..len {
            self.byte(b'0' + (n % 10) as u8);
            n /= 10;
        }
    }

    /// `n` in decimal, as many digits as it has.
    fn number(&mut self, mut n: u64) {
        loop {
            self.byte(b'0' + (n % 10) as u8);
            n /= 10;
            if n == 0 {
                break;
            }
        }
    }

    /// Append the field, `chars` characters wide, right-aligned in `width`.
    fn push_padded(&self, buf: &mut Vec<u8>, chars: usize, width: usize) {
        let pad = width.saturating_sub(chars);
        match self.start.checked_sub(pad) {
            Some(from) => buf.extend_from_slice(&self.text[from..]),
            None => {
                buf.resize(buf.len() + pad, b' ');
                buf.extend_from_slice(&self.text[self.start..]);
            }
        }
    }
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
            u64::MAX,
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
            // Wider than the stack field's room for padding.
            let mut buf = Vec::new();
            push_latency(&mut buf, d, 60);
            assert_eq!(String::from_utf8(buf).unwrap(), format!("{d:>60?}"));
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
            let mut buf = Vec::new();
            push_ip(&mut buf, ip, 60);
            assert_eq!(String::from_utf8(buf).unwrap(), format!("{ip:>60}"));
        }
        for code in [200u16, 404, 503, 101, 999] {
            let status = http::StatusCode::from_u16(code).unwrap();
            assert_eq!(status.as_str(), format!("{:3}", code));
        }
    }
}
