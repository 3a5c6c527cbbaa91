//! Calendar formatting of Unix time, without a date crate.
//!
//! Two formats are needed: Gin's log timestamp and RFC 3339 for API fields.
//! Both rest on one conversion from days to a civil date.

use std::time::{SystemTime, UNIX_EPOCH};

/// `YYYY/MM/DD - HH:MM:SS` in UTC, as Gin's logger prints.
pub fn log_timestamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    let (h, min, sec) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{y:04}/{m:02}/{d:02} - {h:02}:{min:02}:{sec:02}")
}

/// Format Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub(crate) fn rfc3339(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds): the text SQLite's
/// `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')` gives, made without SQLite's
/// float arithmetic so a row can bind it as a value.
pub(crate) fn rfc3339_millis(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    let mut out = rfc3339(secs);
    out.pop(); // the 'Z'
    let ms = d.subsec_millis();
    out.push('.');
    out.push(char::from(b'0' + (ms / 100) as u8));
    out.push(char::from(b'0' + (ms / 10 % 10) as u8));
    out.push(char::from(b'0' + (ms % 10) as u8));
    out.push('Z');
    out
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day),
/// after Howard Hinnant's `civil_from_days`.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn log_timestamps_are_utc_calendar_dates() {
        let cases = [
            (0, "1970/01/01 - 00:00:00"),
            (951_782_400, "2000/02/29 - 00:00:00"),
            (1_795_301_999, "2026/11/21 - 22:59:59"),
            (4_107_542_400, "2100/03/01 - 00:00:00"),
        ];
        for (secs, want) in cases {
            assert_eq!(log_timestamp(UNIX_EPOCH + Duration::from_secs(secs)), want);
        }
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_300_819_380), "2011-03-22T18:43:00Z");
        assert_eq!(rfc3339(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn rfc3339_millis_is_the_text_sqlite_strftime_gives() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for ms in [
            0u64,
            7,
            951_782_400_120,
            1_795_301_999_999,
            1_764_172_800_050,
            4_102_444_799_001,
        ] {
            let ours = rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms));
            // SQLite takes Unix time as a real with 'unixepoch' ('subsec'
            // keeps the milliseconds).
            let theirs: String = conn
                .query_row(
                    "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?1, 'unixepoch', 'subsec')",
                    [ms as i64 / 1000],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(&ours[..19], &theirs[..19], "{ms} ms");
            assert_eq!(ours.len(), theirs.len(), "{ms} ms: {ours} vs {theirs}");
            assert_eq!(&ours[19..], format!(".{:03}Z", ms % 1000), "{ms} ms");
        }
    }
}
