//! PKCE (RFC 7636) with the S256 method.
//!
//! The client keeps a random `code_verifier` and sends only its SHA-256 hash,
//! the `code_challenge`, with the authorization request. At the token
//! exchange it reveals the verifier; the provider hashes it and compares.
//! Someone who intercepts the authorization code cannot redeem it without the
//! verifier, which never left this server.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// A verifier and its S256 challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkce {
    /// 43 characters of base64url (32 random bytes), kept server-side.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent to the provider.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair from the OS random source.
    pub fn generate() -> Result<Pkce, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        let challenge = challenge_s256(&verifier);
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

/// The S256 challenge of `verifier`.
pub fn challenge_s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_challenge() {
        assert_eq!(
            challenge_s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn generated_verifiers_are_43_chars_unique_and_match_their_challenge() {
        let a = Pkce::generate().unwrap();
        let b = Pkce::generate().unwrap();
        assert_eq!(a.verifier.len(), 43);
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(challenge_s256(&a.verifier), a.challenge);
    }
}
