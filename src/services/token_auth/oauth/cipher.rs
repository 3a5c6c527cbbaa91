//! Encryption of provider tokens at rest.
//!
//! Access and refresh tokens issued by an identity provider let their holder
//! act as the user at that provider, so a copy of the database must not leak
//! them. They are sealed with XChaCha20-Poly1305 under a 256-bit key from the
//! environment (`TOKEN_AUTH_ENC_KEY`, 64 hex digits), never stored with the data.
//!
//! XChaCha's 192-bit nonce is large enough to pick at random for every
//! message. The row a value belongs to (provider, user id, column) is bound
//! in as associated data, so a sealed token copied into another row or column
//! fails to open instead of impersonating someone else's.
//!
//! Stored form: `v1:` + base64(nonce ‖ ciphertext ‖ tag).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use std::fmt;

/// Name of the environment variable holding the key.
pub const ENC_KEY_VAR: &str = "TOKEN_AUTH_ENC_KEY";

const PREFIX: &str = "v1:";
const NONCE_LEN: usize = 24;

/// How sealing or opening can fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CipherError {
    /// The key is not 64 hex digits.
    BadKey,
    /// The OS random source failed.
    Random(String),
    /// The stored value is not in the `v1:` format.
    Format,
    /// Wrong key, wrong row, or tampered data.
    Open,
}

impl fmt::Display for CipherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CipherError::BadKey => write!(
                f,
                "{ENC_KEY_VAR} must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`"
            ),
            CipherError::Random(e) => write!(f, "cannot read OS randomness: {e}"),
            CipherError::Format => write!(f, "sealed value is not in the v1 format"),
            CipherError::Open => write!(f, "sealed value does not open with this key and context"),
        }
    }
}

impl std::error::Error for CipherError {}

/// Seals and opens short secrets.
#[derive(Clone)]
pub struct TokenCipher {
    aead: XChaCha20Poly1305,
}

impl fmt::Debug for TokenCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenCipher { key: <redacted> }")
    }
}

impl TokenCipher {
    /// A cipher with the key given as 64 hex digits.
    pub(crate) fn from_hex(hex: &str) -> Result<TokenCipher, CipherError> {
        let hex = hex.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CipherError::BadKey);
        }
        let mut key = [0u8; 32];
        for (i, byte) in key.iter_mut().enumerate() {
            let pair = hex.get(2 * i..2 * i + 2).ok_or(CipherError::BadKey)?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| CipherError::BadKey)?;
        }
        Ok(TokenCipher {
            aead: XChaCha20Poly1305::new(Key::from_slice(&key)),
        })
    }

    /// Seal `plaintext`, bound to `context` (e.g. `github/12345/access_token`).
    pub fn seal(&self, plaintext: &str, context: &str) -> Result<String, CipherError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| CipherError::Random(e.to_string()))?;
        let sealed = self
            .aead
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| CipherError::Open)?;
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok(format!("{PREFIX}{}", STANDARD.encode(blob)))
    }

    /// Open a value made by [`TokenCipher::seal`] with the same `context`.
    pub fn open(&self, sealed: &str, context: &str) -> Result<String, CipherError> {
        let blob = sealed.strip_prefix(PREFIX).ok_or(CipherError::Format)?;
        let blob = STANDARD.decode(blob).map_err(|_| CipherError::Format)?;
        if blob.len() < NONCE_LEN + 16 {
            return Err(CipherError::Format);
        }
        let (nonce, body) = blob.split_at(NONCE_LEN);
        let plain = self
            .aead
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| CipherError::Open)?;
        String::from_utf8(plain).map_err(|_| CipherError::Open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn sealed_value_opens_only_with_same_key_and_context() {
        let cipher = TokenCipher::from_hex(KEY).unwrap();
        let sealed = cipher.seal("gho_secret", "github/1/access_token").unwrap();
        assert!(sealed.starts_with("v1:"));
        assert!(!sealed.contains("gho_secret"));
        assert_eq!(
            cipher.open(&sealed, "github/1/access_token").unwrap(),
            "gho_secret"
        );
        assert_eq!(
            cipher.open(&sealed, "github/2/access_token"),
            Err(CipherError::Open)
        );
        let other = TokenCipher::from_hex(&KEY.replace("00", "ff")).unwrap();
        assert_eq!(
            other.open(&sealed, "github/1/access_token"),
            Err(CipherError::Open)
        );
    }

    #[test]
    fn same_plaintext_seals_differently_each_time() {
        let cipher = TokenCipher::from_hex(KEY).unwrap();
        assert_ne!(
            cipher.seal("t", "c").unwrap(),
            cipher.seal("t", "c").unwrap()
        );
    }

    #[test]
    fn tampering_and_bad_formats_are_detected() {
        let cipher = TokenCipher::from_hex(KEY).unwrap();
        let sealed = cipher.seal("token", "c").unwrap();
        let mut blob = STANDARD.decode(&sealed[3..]).unwrap();
        let last = blob.len() - 1;
        blob[last] ^= 1;
        let tampered = format!("v1:{}", STANDARD.encode(blob));
        assert_eq!(cipher.open(&tampered, "c"), Err(CipherError::Open));
        assert_eq!(cipher.open("token", "c"), Err(CipherError::Format));
        assert_eq!(cipher.open("v1:AAAA", "c"), Err(CipherError::Format));
    }

    #[test]
    fn keys_must_be_64_hex_digits() {
        assert_eq!(
            TokenCipher::from_hex("abcd").unwrap_err(),
            CipherError::BadKey
        );
        assert_eq!(
            TokenCipher::from_hex(&"g".repeat(64)).unwrap_err(),
            CipherError::BadKey
        );
        assert_eq!(
            TokenCipher::from_hex(&format!("+f{}", &KEY[2..])).unwrap_err(),
            CipherError::BadKey
        );
        assert!(TokenCipher::from_hex(&format!("  {KEY}\n")).is_ok());
    }
}
