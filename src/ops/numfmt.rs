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
/// The lengths come first, so the digits are stored straight into `buf`:
/// text built byte by byte on the stack and then copied costs a stalled
/// load per copy (a store forwarded to a wider load), which a profile of
/// `GET /hello` showed at about 60 ns for this field.
pub(crate) fn push_latency(buf: &mut Vec<u8>, d: Duration, width: usize) {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    let (int, mut frac, mut frac_digits, unit): (u64, u32, usize, &str) = if secs > 0 {
        (secs, nanos, 9, "s")
    } else if nanos >= 1_000_000 {
        (u64::from(nanos / 1_000_000), nanos % 1_000_000, 6, "ms")
    } else if nanos >= 1_000 {
        (u64::from(nanos / 1_000), nanos % 1_000, 3, "µs")
    } else {
        (u64::from(nanos), 0, 0, "ns")
    };
    if frac == 0 {
        frac_digits = 0;
    }
    while frac_digits > 0 && frac % 10 == 0 {
        frac /= 10;
        frac_digits -= 1;
    }
    let int_digits = int.checked_ilog10().map_or(1, |l| l as usize + 1);
    let point = usize::from(frac_digits > 0);
    let bytes = int_digits + point + frac_digits + unit.len();
    let chars = bytes - usize::from(unit == "µs"); // µ: two bytes, one character
    let out = grow_padded(buf, width.saturating_sub(chars), bytes);
    write_digits(&mut out[..int_digits], int);
    if point == 1 {
        out[int_digits] = b'.';
        let at = int_digits + 1;
        write_digits(&mut out[at..at + frac_digits], u64::from(frac));
    }
    out[bytes - unit.len()..].copy_from_slice(unit.as_bytes());
}

/// Grow `buf` by `pad` spaces and `len` more bytes, and give those bytes.
fn grow_padded(buf: &mut Vec<u8>, pad: usize, len: usize) -> &mut [u8] {
    let start = buf.len() + pad;
    buf.resize(start + len, b' ');
    &mut buf[start..]
}

/// `n`'s last `out.len()` decimal digits into `out`, zero-filled.
fn write_digits(out: &mut [u8], mut n: u64) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
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
/// line's 0), stored straight into `buf` as [`push_latency`] is: each
/// octet as one 4-byte entry of a table (its digits and a `.`), the
/// bytes past the text cut off at the end.
pub(crate) fn push_ip(buf: &mut Vec<u8>, ip: IpAddr, width: usize) {
    let IpAddr::V4(v4) = ip else {
        let _ = write!(buf, "{ip:>width$}");
        return;
    };
    let entries = v4.octets().map(|o| OCTETS[usize::from(o)]);
    let len = 3 + entries.iter().map(|e| usize::from(e.1)).sum::<usize>();
    let pad = width.saturating_sub(len);
    let end = buf.len() + pad + len;
    // An entry is 4 bytes wherever its digits end: 3 spare at most.
    let out = grow_padded(buf, pad, len + 3);
    let mut at = 0;
    for (text, digits) in entries {
        out[at..at + 4].copy_from_slice(&text);
        at += usize::from(digits) + 1;
    }
    buf.truncate(end);
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
