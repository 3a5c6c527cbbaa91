//! Which TLS servers the calls to an identity provider trust.
//!
//! Every `https://` call verifies the provider's certificate chain and host
//! name; there is deliberately no switch to turn that off. The trusted roots
//! are Mozilla's list compiled into the binary (`webpki-roots`), so a fresh
//! machine or a scratch container needs no system certificate store, plus,
//! per provider, the certificates of its optional `ca_file`: a PEM file for a
//! provider behind a private CA (and for the tests' local provider).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a `ca_file` cannot be used.
#[derive(Debug)]
pub enum TrustError {
    /// The file cannot be read.
    Read(PathBuf, std::io::Error),
    /// The file is not well-formed PEM.
    Pem(PathBuf, String),
    /// The file holds no `CERTIFICATE` block.
    NoCertificate(PathBuf),
    /// A certificate block cannot serve as a trust anchor (`.1` counts from 1).
    BadCertificate(PathBuf, usize, String),
}

impl fmt::Display for TrustError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustError::Read(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            TrustError::Pem(path, e) => write!(f, "{} is not valid PEM: {e}", path.display()),
            TrustError::NoCertificate(path) => write!(
                f,
                "no certificate in {} (expected one or more \
                 \"-----BEGIN CERTIFICATE-----\" blocks)",
                path.display()
            ),
            TrustError::BadCertificate(path, n, e) => write!(
                f,
                "certificate {n} in {} is not a usable CA certificate: {e}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for TrustError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrustError::Read(_, e) => Some(e),
            TrustError::Pem(..) | TrustError::NoCertificate(_) | TrustError::BadCertificate(..) => {
                None
            }
        }
    }
}

/// Mozilla's root certificates, as compiled into this binary.
pub(crate) fn builtin_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// The built-in roots plus every certificate in the PEM file `ca_file`.
///
/// Other PEM blocks in the file (a private key, say) are ignored; a file
/// without any certificate is an error, since it would trust nothing extra.
pub fn roots(ca_file: Option<&Path>) -> Result<RootCertStore, TrustError> {
    let mut roots = builtin_roots();
    let Some(path) = ca_file else {
        return Ok(roots);
    };
    let pem = std::fs::read(path).map_err(|e| TrustError::Read(path.to_owned(), e))?;
    let mut found = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| TrustError::Pem(path.to_owned(), e.to_string()))?;
        found += 1;
        roots
            .add(cert)
            .map_err(|e| TrustError::BadCertificate(path.to_owned(), found, e.to_string()))?;
    }
    if found == 0 {
        return Err(TrustError::NoCertificate(path.to_owned()));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn trust_error_exposes_the_io_error_as_source() {
        let path = PathBuf::from("ca.pem");
        let cases = [
            (
                TrustError::Read(path.clone(), std::io::Error::other("permission denied")),
                Some("permission denied".to_string()),
            ),
            (TrustError::Pem(path.clone(), "bad base64".into()), None),
            (TrustError::NoCertificate(path.clone()), None),
            (TrustError::BadCertificate(path, 1, "not a CA".into()), None),
        ];
        for (err, want) in cases {
            assert_eq!(err.source().map(|s| s.to_string()), want, "{err}");
        }
    }
}
