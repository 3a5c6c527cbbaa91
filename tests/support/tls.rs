//! Certificates made at test time with rcgen: a throw-away CA and a server
//! certificate it signs (by default for `127.0.0.1` and `localhost`). The fake provider
//! serves with the server certificate; the service under test trusts the CA
//! through a provider's `ca_file`, written here as a temporary PEM file; and
//! the test's "browser" trusts it through [`TestPki::client_roots`].

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{RootCertStore, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;

/// A CA and one server certificate signed by it.
pub struct TestPki {
    /// The CA certificate, PEM (what a `ca_file` holds).
    pub ca_pem: String,
    ca_der: CertificateDer<'static>,
    server_cert: CertificateDer<'static>,
    server_key: Vec<u8>,
    /// The server certificate, PEM (what a listener's `cert_file` holds).
    pub server_cert_pem: String,
    /// Its private key, PEM (PKCS#8; what a listener's `key_file` holds).
    pub server_key_pem: String,
}

impl TestPki {
    /// A new CA named `name`, and a certificate for 127.0.0.1/localhost.
    pub fn new(name: &str) -> TestPki {
        TestPki::for_names(name, &["127.0.0.1", "localhost"])
    }

    /// A new CA named `name`, and a server certificate for `server_names`.
    pub fn for_names(name: &str, server_names: &[&str]) -> TestPki {
        TestPki::valid_until(name, server_names, None)
    }

    /// A certificate for 127.0.0.1/localhost whose validity ended on
    /// 2020-01-01.
    pub fn expired(name: &str) -> TestPki {
        TestPki::valid_until(name, &["127.0.0.1", "localhost"], Some((2020, 1, 1)))
    }

    /// [`for_names`](Self::for_names), the server certificate valid until
    /// `not_after` (year, month, day) when given.
    pub fn valid_until(
        name: &str,
        server_names: &[&str],
        not_after: Option<(i32, u8, u8)>,
    ) -> TestPki {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let ca = ca_params.self_signed(&ca_key).expect("self-signed CA");

        let names: Vec<String> = server_names.iter().map(|n| n.to_string()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("server params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "fake provider");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        if let Some((y, m, d)) = not_after {
            params.not_before = rcgen::date_time_ymd(y - 1, m, d);
            params.not_after = rcgen::date_time_ymd(y, m, d);
        }
        let key = rcgen::KeyPair::generate().expect("server key");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let server = params.signed_by(&key, &issuer).expect("server certificate");
        TestPki {
            ca_pem: ca.pem(),
            ca_der: ca.der().clone(),
            server_cert: server.der().clone(),
            server_key: key.serialize_der(),
            server_cert_pem: server.pem(),
            server_key_pem: key.serialize_pem(),
        }
    }

    /// Server side: the certificate chain, offering HTTP/2 and HTTP/1.1 by ALPN.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.server_key.clone()));
        let mut config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("ring supports the default versions")
                .with_no_client_auth()
                .with_single_cert(vec![self.server_cert.clone()], key)
                .expect("certificate and key match");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(config)
    }

    /// Roots holding only this CA.
    pub fn client_roots(&self) -> RootCertStore {
        let mut roots = RootCertStore::empty();
        roots
            .add(self.ca_der.clone())
            .expect("CA is a valid anchor");
        roots
    }

    /// Write the CA certificate to a temporary PEM file.
    pub fn write_ca_file(&self, tag: &str) -> TempPem {
        let path = super::temp_path(tag, ".pem");
        std::fs::write(&path, &self.ca_pem).expect("write CA file");
        TempPem { path }
    }
}

impl TestPki {
    /// Write the server certificate and key as `cert.pem` and `key.pem`
    /// in `dir` (replacing them if present); their paths.
    pub fn write_server_files(&self, dir: &std::path::Path) -> (PathBuf, PathBuf) {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, &self.server_cert_pem).expect("write cert.pem");
        std::fs::write(&key, &self.server_key_pem).expect("write key.pem");
        (cert, key)
    }
}

impl TestPki {
    /// [`write_server_files`](Self::write_server_files) and the CA as
    /// `ca.pem` in `dir`: (ca, cert, key).
    pub fn write_files(&self, dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
        let (cert, key) = self.write_server_files(dir);
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, &self.ca_pem).expect("write ca.pem");
        (ca, cert, key)
    }
}

/// A PEM file in the temp directory, removed on drop.
pub struct TempPem {
    pub path: PathBuf,
}

impl Drop for TempPem {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
