//! A throw-away CA and a server certificate it signs, for trying the
//! services over TLS on this machine. DEVELOPMENT ONLY: the CA key is
//! discarded, the files are written unencrypted, anyone who reads them can
//! impersonate the server to a client that trusts `ca.pem`.
//!
//! ```text
//! cargo run --example dev_cert -- DIR [NAME…]
//! ```
//!
//! Writes `DIR/ca.pem` (what a client trusts: `curl --cacert`, `grpcurl
//! -cacert`), `DIR/cert.pem` and `DIR/key.pem` (what a listener serves:
//! `--tls-cert`/`--tls-key`, or the greeter's `tls.cert_file`/`key_file`).
//! The certificate names `localhost`, `127.0.0.1` and `::1`, or the NAMEs
//! given. rcgen makes the keys (ECDSA P-256).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: dev_cert DIR [NAME…]  (writes DIR/ca.pem, DIR/cert.pem, DIR/key.pem)");
        return ExitCode::FAILURE;
    };
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    }
    match write(&dir, names) {
        Ok(()) => {
            println!(
                "dev_cert: wrote {0}/ca.pem, {0}/cert.pem, {0}/key.pem (DEVELOPMENT ONLY)",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dev_cert: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write(dir: &std::path::Path, names: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "handwire development CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca_key = rcgen::KeyPair::generate()?;
    let ca = ca_params.self_signed(&ca_key)?;

    let mut params = rcgen::CertificateParams::new(names)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "handwire development server");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let key = rcgen::KeyPair::generate()?;
    let server = params.signed_by(&key, &rcgen::Issuer::new(ca_params, ca_key))?;

    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("ca.pem"), ca.pem())?;
    std::fs::write(dir.join("cert.pem"), server.pem())?;
    std::fs::write(dir.join("key.pem"), key.serialize_pem())?;
    Ok(())
}
