//! The `grpc-timeout` request header and the call deadline derived from it.
//!
//! The header is 1 to 8 ASCII digits followed by one unit letter:
//! `H` hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds,
//! `n` nanoseconds (e.g. `100m`, `5S`). A server may also impose its own
//! limit; the call then runs under the smaller of the two.

use std::fmt;
use std::time::Duration;

/// A `grpc-timeout` value that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeoutError {
    /// The header value as received (lossy for non-UTF-8 bytes).
    pub value: String,
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed grpc-timeout {:?} (expected 1-8 digits and a unit H, M, S, m, u or n)",
            self.value
        )
    }
}

impl std::error::Error for TimeoutError {}

/// Parses a `grpc-timeout` header value.
pub(crate) fn parse_grpc_timeout(raw: &[u8]) -> Result<Duration, TimeoutError> {
    let bad = || TimeoutError {
        value: String::from_utf8_lossy(raw).into_owned(),
    };
    let (&unit, digits) = raw.split_last().ok_or_else(bad)?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    // At most 8 digits: always fits in u64.
    let n: u64 = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .ok_or_else(bad)?;
    Ok(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return Err(bad()),
    })
}

/// The deadline of a call: the smaller of the server's limit and the client's.
pub(crate) fn effective_timeout(
    server: Option<Duration>,
    client: Option<Duration>,
) -> Option<Duration> {
    match (server, client) {
        (Some(s), Some(c)) => Some(s.min(c)),
        (s, c) => s.or(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grpc_timeout_unit_parses() {
        let cases: [(&[u8], Duration); 7] = [
            (b"2H", Duration::from_secs(7200)),
            (b"3M", Duration::from_secs(180)),
            (b"5S", Duration::from_secs(5)),
            (b"100m", Duration::from_millis(100)),
            (b"250u", Duration::from_micros(250)),
            (b"99999999n", Duration::from_nanos(99_999_999)),
            (b"0m", Duration::ZERO),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_grpc_timeout(raw), Ok(want), "{raw:?}");
        }
    }

    #[test]
    fn malformed_grpc_timeout_is_rejected() {
        for raw in [
            &b""[..],
            b"m",
            b"10",
            b"10s",
            b"123456789m",
            b"-1S",
            b"1.5S",
            b"\xff",
        ] {
            assert!(parse_grpc_timeout(raw).is_err(), "{raw:?}");
        }
        assert_eq!(
            parse_grpc_timeout(b"10x").unwrap_err().to_string(),
            "malformed grpc-timeout \"10x\" (expected 1-8 digits and a unit H, M, S, m, u or n)"
        );
    }

    #[test]
    fn deadline_is_the_smaller_of_server_and_client_limits() {
        let s = Some(Duration::from_secs(1));
        let c = Some(Duration::from_millis(50));
        assert_eq!(effective_timeout(s, c), c);
        assert_eq!(effective_timeout(c, s), c);
        assert_eq!(effective_timeout(s, None), s);
        assert_eq!(effective_timeout(None, c), c);
        assert_eq!(effective_timeout(None, None), None);
    }
}
