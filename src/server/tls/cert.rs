//! A certificate and its key, read from two PEM files and checked the way an
//! operator wants them checked at start-up: the files exist, hold a
//! certificate chain and a private key, the key belongs to the certificate,
//! and the certificate is valid now. Each error names the file to fix.
//!
//! Only regular files are read, and the caller reads them on a thread of
//! its own with a time bound ([`super::CertStore`]): a path that is a FIFO
//! or sits on a hung network mount must not stall start-up, a reload or
//! the runtime's shutdown.
//!
//! The validity period is read from the certificate's DER by hand (a walk
//! of five TLV headers to `tbsCertificate.validity`): rustls checks
//! validity only on the client side, and an X.509 parser crate would be a
//! runtime dependency for two dates.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use crate::ops::timefmt::rfc3339;

/// Why a certificate or key could not be used. Every message starts with
/// the file it is about.
#[derive(Debug)]
pub enum CertError {
    /// The file cannot be read (or is not a regular file).
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The certificate file holds no PEM `CERTIFICATE` block.
    NoCertificate { path: PathBuf },
    /// The key file holds no PEM private key (PKCS#8, PKCS#1 or SEC1).
    NoKey { path: PathBuf },
    /// The key is not one the crypto provider can sign with.
    BadKey { path: PathBuf, reason: String },
    /// The key does not belong to the certificate.
    Mismatch { key: PathBuf, cert: PathBuf },
    /// The certificate's DER cannot be read up to its validity.
    Malformed { path: PathBuf },
    /// The certificate's validity ended (its `notAfter` is in the past).
    Expired { path: PathBuf, not_after: String },
    /// The certificate is not valid yet (its `notBefore` is in the future).
    NotYetValid { path: PathBuf, not_before: String },
    /// Reading the pair took longer than `limit` (a hung mount): the read
    /// is abandoned on its thread.
    Stalled {
        cert: PathBuf,
        key: PathBuf,
        limit: Duration,
    },
    /// The previous read of the pair has not finished yet (it stalled), so
    /// no other is started.
    StillReading { cert: PathBuf },
}

impl fmt::Display for CertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CertError::Read { path, source } => {
                write!(f, "{}: cannot read: {source}", path.display())
            }
            CertError::NoCertificate { path } => write!(
                f,
                "{}: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file",
                path.display()
            ),
            CertError::NoKey { path } => write!(
                f,
                "{}: no PEM private key (PKCS#8, RSA or EC) in the file",
                path.display()
            ),
            CertError::BadKey { path, reason } => {
                write!(f, "{}: unusable private key: {reason}", path.display())
            }
            CertError::Mismatch { key, cert } => write!(
                f,
                "{}: the private key does not belong to the certificate in {}",
                key.display(),
                cert.display()
            ),
            CertError::Malformed { path } => {
                write!(
                    f,
                    "{}: the certificate is not valid X.509 DER",
                    path.display()
                )
            }
            CertError::Expired { path, not_after } => {
                write!(
                    f,
                    "{}: the certificate expired on {not_after}",
                    path.display()
                )
            }
            CertError::NotYetValid { path, not_before } => write!(
                f,
                "{}: the certificate is not valid before {not_before}",
                path.display()
            ),
            CertError::Stalled { cert, key, limit } => write!(
                f,
                "{} and {}: not read within {limit:?} (a hung file system?)",
                cert.display(),
                key.display()
            ),
            CertError::StillReading { cert } => write!(
                f,
                "{}: the previous read has not finished (stalled), not reading again",
                cert.display()
            ),
        }
    }
}

impl std::error::Error for CertError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CertError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Read `cert` (the chain, leaf first) and `key`, and check them against
/// each other and against the clock.
pub fn load(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, CertError> {
    let read = |path: &Path| {
        crate::config::regular_file(path)
            .and_then(|()| std::fs::read(path))
            .map_err(|source| CertError::Read {
                path: path.to_path_buf(),
                source,
            })
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .filter_map(Result::ok)
        .collect();
    let Some(leaf) = chain.first() else {
        return Err(CertError::NoCertificate {
            path: cert.to_path_buf(),
        });
    };
    check_validity(leaf, cert, SystemTime::now())?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| CertError::NoKey {
        path: key.to_path_buf(),
    })?;
    let signing = provider
        .key_provider
        .load_private_key(private)
        .map_err(|e| CertError::BadKey {
            path: key.to_path_buf(),
            reason: e.to_string(),
        })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) => Ok(Arc::new(certified)),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(CertError::Mismatch {
                key: key.to_path_buf(),
                cert: cert.to_path_buf(),
            })
        }
        // Unknown consistency (a key type that cannot tell its public
        // half), or a leaf rustls cannot parse.
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(Arc::new(certified))
        }
        Err(_) => Err(CertError::Malformed {
            path: cert.to_path_buf(),
        }),
    }
}

/// `Err` when `now` is outside the leaf's validity period.
fn check_validity(leaf: &[u8], path: &Path, now: SystemTime) -> Result<(), CertError> {
    let malformed = || CertError::Malformed {
        path: path.to_path_buf(),
    };
    let (not_before, not_after) = validity(leaf).ok_or_else(malformed)?;
    let now = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    if now > not_after {
        return Err(CertError::Expired {
            path: path.to_path_buf(),
            not_after: rfc3339(not_after),
        });
    }
    if now < not_before {
        return Err(CertError::NotYetValid {
            path: path.to_path_buf(),
            not_before: rfc3339(not_before),
        });
    }
    Ok(())
}

/// One DER TLV at the start of `input`: (tag, contents, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// `(notBefore, notAfter)` of an X.509 certificate, as Unix seconds.
///
/// ```text
/// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE {
///     [0] version OPTIONAL, serialNumber INTEGER, signature SEQUENCE,
///     issuer SEQUENCE, validity SEQUENCE { notBefore Time, notAfter Time }, … } … }
/// ```
fn validity(der: &[u8]) -> Option<(i64, i64)> {
    const SEQUENCE: u8 = 0x30;
    let (SEQUENCE, cert, _) = tlv(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = tlv(cert)? else {
        return None;
    };
    let mut rest = tbs;
    let (tag, _, after) = tlv(rest)?;
    if tag == 0xa0 {
        rest = after; // the explicit version
    }
    for _ in 0..3 {
        rest = tlv(rest)?.2; // serial, signature algorithm, issuer
    }
    let (SEQUENCE, validity, _) = tlv(rest)? else {
        return None;
    };
    let (tag_before, before, rest) = tlv(validity)?;
    let (tag_after, after, _) = tlv(rest)?;
    Some((time(tag_before, before)?, time(tag_after, after)?))
}

/// An ASN.1 `UTCTime` (tag 0x17, `YYMMDDHHMMSSZ`) or `GeneralizedTime`
/// (tag 0x18, `YYYYMMDDHHMMSSZ`) as Unix seconds.
fn time(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        0x17 if text.len() == 12 => {
            let yy: i64 = text.get(..2)?.parse().ok()?;
            // RFC 5280 §4.1.2.5.1: 50–99 are 19xx, 00–49 are 20xx.
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        0x18 if text.len() == 14 => (text.get(..4)?.parse().ok()?, &text[4..]),
        _ => return None,
    };
    let field = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm, the inverse of `timefmt::civil_from_days`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_time_forms_read_as_unix_seconds() {
        assert_eq!(time(0x17, b"700101000000Z"), Some(0));
        assert_eq!(time(0x17, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(time(0x18, b"20380119031408Z"), Some(2_147_483_648));
        assert_eq!(time(0x18, b"2038011903140Z"), None, "one digit short");
        assert_eq!(time(0x17, b"701301000000Z"), None, "month 13");
        assert_eq!(time(0x17, b"700101000000"), None, "no Z");
    }

    #[test]
    fn civil_days_round_trip() {
        for days in [-1000, 0, 1, 59, 60, 365, 11_016, 20_000, 50_000] {
            let (y, m, d) = crate::ops::timefmt::civil_from_days(days);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }

    #[test]
    fn truncated_der_has_no_validity() {
        assert_eq!(validity(&[]), None);
        assert_eq!(validity(&[0x30, 0x82, 0xff]), None);
        assert_eq!(validity(&[0x30, 0x03, 0x30, 0x01, 0x02]), None);
    }

    #[test]
    fn files_without_a_certificate_or_a_key_are_named() {
        let dir = std::env::temp_dir().join(format!("handwire-cert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (cert_file, key_file, empty) =
            (dir.join("c.pem"), dir.join("k.pem"), dir.join("e.pem"));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        std::fs::write(&empty, "not PEM at all").unwrap();
        let provider = rustls::crypto::ring::default_provider();
        assert!(load(&cert_file, &key_file, &provider).is_ok());
        let err = load(&empty, &key_file, &provider).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: no PEM certificate", empty.display())),
            "{err}"
        );
        let err = load(&cert_file, &empty, &provider).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: no PEM private key", empty.display())),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
