//! JSON Web Tokens signed with HS256, written out by hand.
//!
//! A JWT in compact form is three base64url strings joined by dots:
//! `header.payload.signature`. The signature is HMAC-SHA256 over the ASCII
//! bytes `header.payload` (RFC 7515 §5.1, RFC 7519). This module does exactly
//! that and nothing more, so that the whole mechanism fits on one screen:
//!
//! * [`Hs256::sign`] serialises the claims, prepends the fixed header
//!   `{"alg":"HS256","typ":"JWT"}` and appends the MAC.
//! * [`Hs256::verify`] parses strictly and in two phases, like a frame parser:
//!   first the *shape* (exactly three non-empty parts, canonical base64url
//!   without padding, a header that is a JSON object naming `HS256`), then the
//!   *meaning* (signature checked in constant time, only then the payload is
//!   deserialised, then `exp` is compared with the caller's clock).
//!
//! The algorithm is fixed by the verifier, never chosen by the token: a header
//! saying `none`, `HS512` or `RS256` is rejected before any MAC is computed.
//! The module knows nothing about users or roles; claims are any serde type.
//! Time is passed in by the caller so that expiry can be tested without waiting.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::fmt;

type HmacSha256 = Hmac<Sha256>;

/// The only header this module ever writes, already base64url-encoded:
/// `{"alg":"HS256","typ":"JWT"}`.
const HEADER_B64: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtError {
    /// The token is well-formed and correctly signed, but its `exp` has passed.
    Expired,
    /// The token must not be trusted; the reason says which check failed.
    Invalid(Invalid),
    /// The claims could not be serialised to a JSON object (signing side only).
    Claims(String),
}

/// The check a token failed, for logs and tests. Clients only ever see
/// "invalid": telling an attacker *which* check failed helps nobody else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// Not exactly three dot-separated, non-empty parts.
    Shape,
    /// A part is not canonical base64url without padding.
    Base64(&'static str),
    /// The header or payload is not a JSON object.
    Json(&'static str),
    /// The header names an algorithm other than HS256 (or none at all).
    Algorithm(String),
    /// The header carries something this verifier does not understand
    /// (`crit`, or a `typ` other than JWT).
    Header(&'static str),
    /// The MAC does not match.
    Signature,
    /// The payload decoded but does not fit the expected claims type.
    Claims(String),
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwtError::Expired => write!(f, "token expired"),
            JwtError::Invalid(why) => write!(f, "token invalid: {why}"),
            JwtError::Claims(e) => write!(f, "claims cannot be encoded as a JSON object: {e}"),
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::Shape => write!(
                f,
                "expected three non-empty base64url parts separated by '.'"
            ),
            Invalid::Base64(part) => write!(f, "{part} is not base64url without padding"),
            Invalid::Json(part) => write!(f, "{part} is not a JSON object"),
            Invalid::Algorithm(alg) => write!(f, "algorithm {alg:?} is not accepted, only HS256"),
            Invalid::Header(why) => write!(f, "header {why}"),
            Invalid::Signature => write!(f, "signature does not match"),
            Invalid::Claims(e) => write!(f, "claims do not match the expected shape: {e}"),
        }
    }
}

impl std::error::Error for JwtError {}

impl From<Invalid> for JwtError {
    fn from(why: Invalid) -> JwtError {
        JwtError::Invalid(why)
    }
}

/// An HS256 signer/verifier holding one shared secret.
///
/// The HMAC state is keyed once here and cloned per token, which saves
/// re-hashing the key on every call.
#[derive(Clone)]
pub struct Hs256 {
    mac: HmacSha256,
}

impl fmt::Debug for Hs256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hs256 { key: <redacted> }")
    }
}

impl Hs256 {
    /// A signer for `secret`. Any length is accepted by HMAC; callers that take
    /// the secret from users should insist on at least 32 bytes (RFC 7518 §3.2).
    pub fn new(secret: &[u8]) -> Hs256 {
        // HMAC accepts keys of every length, so this cannot fail.
        let mac = <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
        Hs256 { mac }
    }

    /// The base64url HMAC-SHA256 of `signing_input` (`header.payload`).
    ///
    /// Exposed so that tokens with headers other than ours (for example the
    /// RFC 7515 examples) can be reproduced byte for byte.
    pub fn signature(&self, signing_input: &[u8]) -> String {
        let mut mac = self.mac.clone();
        mac.update(signing_input);
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Sign `claims` and return the compact token.
    ///
    /// The claims must serialise to a JSON object; anything else is an error
    /// rather than a token nobody could verify.
    pub fn sign<C: Serialize>(&self, claims: &C) -> Result<String, JwtError> {
        let payload = serde_json::to_vec(claims).map_err(|e| JwtError::Claims(e.to_string()))?;
        if payload.first() != Some(&b'{') {
            return Err(JwtError::Claims("not an object".into()));
        }
        let mut token = String::with_capacity(HEADER_B64.len() + payload.len() * 4 / 3 + 48);
        token.push_str(HEADER_B64);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(&payload, &mut token);
        let signature = self.signature(token.as_bytes());
        token.push('.');
        token.push_str(&signature);
        Ok(token)
    }

    /// Check `token` and return its claims.
    ///
    /// `now` is the current Unix time in seconds. A numeric `exp` claim at or
    /// before `now` gives [`JwtError::Expired`] — but only after the signature
    /// has been verified, so "expired" is never said about a forged token.
    /// A present but non-numeric `exp` is invalid. Whether `exp` must be present
    /// at all is up to the claims type (make the field non-optional).
    pub fn verify<C: DeserializeOwned>(&self, token: &str, now: u64) -> Result<C, JwtError> {
        // Phase 1: shape.
        let mut parts = token.split('.');
        let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Invalid::Shape.into());
        };
        if header_b64.is_empty() || payload_b64.is_empty() || signature_b64.is_empty() {
            return Err(Invalid::Shape.into());
        }
        let header = decode_part(header_b64, "header")?;
        check_header(&header)?;
        let signature = decode_part(signature_b64, "signature")?;

        // Phase 2: authenticity, in constant time (`verify_slice` compares
        // with `subtle`, and rejects a wrong length without a timing hint about content).
        let signing_input_len = header_b64.len() + 1 + payload_b64.len();
        let mut mac = self.mac.clone();
        mac.update(&token.as_bytes()[..signing_input_len]);
        mac.verify_slice(&signature)
            .map_err(|_| Invalid::Signature)?;

        // Phase 3: meaning. Only a token we signed gets its payload parsed.
        let payload = decode_part(payload_b64, "payload")?;
        if !is_json_object(&payload) {
            return Err(Invalid::Json("payload").into());
        }
        let probe: ExpiryProbe =
            serde_json::from_slice(&payload).map_err(|_| Invalid::Json("payload"))?;
        if let Some(exp) = probe.exp {
            let exp = exp
                .as_u64()
                .ok_or_else(|| Invalid::Claims("exp is not a non-negative integer".into()))?;
            if exp <= now {
                return Err(JwtError::Expired);
            }
        }
        serde_json::from_slice(&payload).map_err(|e| Invalid::Claims(e.to_string()).into())
    }
}

/// The registered header members the verifier looks at. Reading into a
/// struct rather than a map also refuses a member given twice (which two
/// parsers could otherwise read differently).
#[derive(Deserialize)]
struct HeaderProbe {
    alg: Option<serde_json::Value>,
    typ: Option<serde_json::Value>,
    crit: Option<IgnoredAny>,
}

/// The `exp` claim, read before the caller's claims type.
#[derive(Deserialize)]
struct ExpiryProbe {
    exp: Option<serde_json::Value>,
}

/// Whether `json` starts (after whitespace) with `{`. serde would otherwise
/// happily fill a struct from a JSON array, field by position.
fn is_json_object(json: &[u8]) -> bool {
    json.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_some_and(|&b| b == b'{')
}

/// Decode one part as canonical base64url without padding.
fn decode_part(part: &str, name: &'static str) -> Result<Vec<u8>, Invalid> {
    // The NO_PAD engine refuses '=' padding, '+' and '/', and non-zero trailing
    // bits, so each token has exactly one accepted spelling.
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| Invalid::Base64(name))
}

/// Accept only `{"alg":"HS256"}` headers, optionally with `typ: "JWT"` and
/// informational members; refuse `crit`, which would oblige us to understand
/// extensions we do not implement (RFC 7515 §4.1.11).
fn check_header(header: &[u8]) -> Result<(), Invalid> {
    if !is_json_object(header) {
        return Err(Invalid::Json("header"));
    }
    let header: HeaderProbe =
        serde_json::from_slice(header).map_err(|_| Invalid::Json("header"))?;
    match header.alg {
        Some(serde_json::Value::String(alg)) if alg == "HS256" => {}
        Some(serde_json::Value::String(alg)) => return Err(Invalid::Algorithm(alg)),
        Some(other) => return Err(Invalid::Algorithm(other.to_string())),
        None => return Err(Invalid::Algorithm("(missing)".into())),
    }
    match header.typ {
        None => {}
        Some(serde_json::Value::String(typ)) if typ.eq_ignore_ascii_case("JWT") => {}
        Some(_) => return Err(Invalid::Header("typ is not JWT")),
    }
    if header.crit.is_some() {
        return Err(Invalid::Header("has crit extensions, none are supported"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7515 Appendix A.1: the JWK `k` of the example HMAC key.
    const RFC_KEY_B64: &str =
        "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow";
    /// RFC 7515 Appendix A.1: the complete example JWS.
    const RFC_TOKEN: &str = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9\
        .eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ\
        .dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    /// RFC 7515 Appendix A.1: `exp` of the example payload.
    const RFC_EXP: u64 = 1_300_819_380;

    fn rfc_key() -> Hs256 {
        Hs256::new(&URL_SAFE_NO_PAD.decode(RFC_KEY_B64).unwrap())
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Sample {
        sub: String,
        exp: u64,
    }

    fn b64(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    /// Build a token with an arbitrary header and payload, signed with `key`.
    fn forge(key: &Hs256, header: &str, payload: &str) -> String {
        let input = format!("{}.{}", b64(header), b64(payload));
        let sig = key.signature(input.as_bytes());
        format!("{input}.{sig}")
    }

    #[test]
    fn rfc7515_a1_signature_is_reproduced() {
        let (input, expected_sig) = RFC_TOKEN.rsplit_once('.').unwrap();
        assert_eq!(rfc_key().signature(input.as_bytes()), expected_sig);
    }

    #[test]
    fn rfc7515_a1_token_verifies_before_its_exp() {
        let claims: serde_json::Value = rfc_key().verify(RFC_TOKEN, RFC_EXP - 1).unwrap();
        assert_eq!(claims["iss"], "joe");
        assert_eq!(claims["exp"], RFC_EXP);
        assert_eq!(claims["http://example.com/is_root"], true);
    }

    #[test]
    fn rfc7515_a1_token_is_expired_at_its_exp() {
        let got = rfc_key().verify::<serde_json::Value>(RFC_TOKEN, RFC_EXP);
        assert_eq!(got, Err(JwtError::Expired));
    }

    #[test]
    fn sign_then_verify_round_trips_with_the_fixed_header() {
        let key = Hs256::new(b"0123456789abcdef0123456789abcdef");
        let claims = Sample {
            sub: "ann".into(),
            exp: 2000,
        };
        let token = key.sign(&claims).unwrap();
        let header = token.split('.').next().unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.decode(header).unwrap(),
            br#"{"alg":"HS256","typ":"JWT"}"#
        );
        assert_eq!(key.verify::<Sample>(&token, 1999).unwrap(), claims);
    }

    #[test]
    fn sign_refuses_claims_that_are_not_an_object() {
        let key = Hs256::new(b"k");
        assert!(matches!(key.sign(&42), Err(JwtError::Claims(_))));
    }

    #[test]
    fn token_signed_with_another_key_is_invalid_signature() {
        let token = Hs256::new(b"one key, long enough to be fine!")
            .sign(&Sample {
                sub: "a".into(),
                exp: 9,
            })
            .unwrap();
        let got = Hs256::new(b"another key, also long enough!!!").verify::<Sample>(&token, 1);
        assert_eq!(got, Err(JwtError::Invalid(Invalid::Signature)));
    }

    #[test]
    fn tampered_payload_is_invalid_signature() {
        let key = rfc_key();
        let token = key
            .sign(&Sample {
                sub: "user".into(),
                exp: 9,
            })
            .unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        let evil = b64(r#"{"sub":"admin","exp":9}"#);
        let tampered = format!("{}.{}.{}", parts[0], evil, parts[2]);
        assert_eq!(
            key.verify::<Sample>(&tampered, 1),
            Err(JwtError::Invalid(Invalid::Signature))
        );
    }

    #[test]
    fn expiry_is_only_reported_for_authentic_tokens() {
        let key = rfc_key();
        let token = forge(&Hs256::new(b"wrong"), r#"{"alg":"HS256"}"#, r#"{"exp":1}"#);
        assert_eq!(
            key.verify::<serde_json::Value>(&token, 100),
            Err(JwtError::Invalid(Invalid::Signature))
        );
    }

    #[test]
    fn algorithms_other_than_hs256_are_rejected_even_when_the_mac_is_right() {
        let key = rfc_key();
        for header in [
            r#"{"alg":"none","typ":"JWT"}"#,
            r#"{"alg":"HS512","typ":"JWT"}"#,
            r#"{"alg":"RS256","typ":"JWT"}"#,
            r#"{"alg":"hs256","typ":"JWT"}"#,
            r#"{"alg":256}"#,
            r#"{"typ":"JWT"}"#,
        ] {
            let token = forge(&key, header, r#"{"exp":9}"#);
            let got = key.verify::<serde_json::Value>(&token, 1);
            assert!(
                matches!(got, Err(JwtError::Invalid(Invalid::Algorithm(_)))),
                "{header}: {got:?}"
            );
        }
    }

    #[test]
    fn alg_none_with_empty_signature_is_rejected() {
        let token = format!("{}.{}.", b64(r#"{"alg":"none"}"#), b64(r#"{"exp":9}"#));
        assert_eq!(
            rfc_key().verify::<serde_json::Value>(&token, 1),
            Err(JwtError::Invalid(Invalid::Shape))
        );
    }

    #[test]
    fn headers_with_crit_or_foreign_typ_are_rejected() {
        let key = rfc_key();
        for header in [
            r#"{"alg":"HS256","crit":["exp"],"exp":1}"#,
            r#"{"alg":"HS256","typ":"at+jwt"}"#,
        ] {
            let token = forge(&key, header, r#"{"exp":9}"#);
            let got = key.verify::<serde_json::Value>(&token, 1);
            assert!(
                matches!(got, Err(JwtError::Invalid(Invalid::Header(_)))),
                "{header}: {got:?}"
            );
        }
    }

    #[test]
    fn malformed_shapes_are_rejected() {
        let key = rfc_key();
        let good = key
            .sign(&Sample {
                sub: "a".into(),
                exp: 9,
            })
            .unwrap();
        let (h, rest) = good.split_once('.').unwrap();
        let (p, s) = rest.split_once('.').unwrap();
        let cases: Vec<(String, Invalid)> = vec![
            (String::new(), Invalid::Shape),
            (format!("{h}.{p}"), Invalid::Shape),
            (format!("{h}.{p}.{s}.{s}"), Invalid::Shape),
            (format!(".{p}.{s}"), Invalid::Shape),
            (format!("{h}..{s}"), Invalid::Shape),
            (format!("{h}=.{p}.{s}"), Invalid::Base64("header")),
            (format!("{h}.{p}.{s}="), Invalid::Base64("signature")),
            (
                format!("{h}.{p}.{}", s.replace('-', "+").replace('_', "/") + "+"),
                Invalid::Base64("signature"),
            ),
            (format!("{}.{p}.{s}", b64("[1,2]")), Invalid::Json("header")),
            (
                format!("{}.{p}.{s}", b64("not json")),
                Invalid::Json("header"),
            ),
            (format!("{h}.{p}.{}", &s[..s.len() - 3]), Invalid::Signature),
        ];
        for (token, expected) in cases {
            assert_eq!(
                key.verify::<Sample>(&token, 1),
                Err(JwtError::Invalid(expected.clone())),
                "{token:?}"
            );
        }
    }

    #[test]
    fn non_canonical_base64_trailing_bits_are_rejected() {
        // 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk' ends in 'k' (…0100 with
        // two trailing zero bits); 'l' has the same six bits but one trailing bit set.
        let (input, sig) = RFC_TOKEN.rsplit_once('.').unwrap();
        let twisted = format!("{input}.{}l", &sig[..sig.len() - 1]);
        assert_eq!(
            rfc_key().verify::<serde_json::Value>(&twisted, 1),
            Err(JwtError::Invalid(Invalid::Base64("signature")))
        );
    }

    #[test]
    fn duplicate_header_or_exp_members_are_invalid() {
        let key = rfc_key();
        let twice_alg = forge(&key, r#"{"alg":"none","alg":"HS256"}"#, r#"{"exp":9}"#);
        assert_eq!(
            key.verify::<serde_json::Value>(&twice_alg, 1),
            Err(JwtError::Invalid(Invalid::Json("header")))
        );
        let twice_exp = forge(&key, r#"{"alg":"HS256"}"#, r#"{"exp":1,"exp":99}"#);
        assert_eq!(
            key.verify::<serde_json::Value>(&twice_exp, 5),
            Err(JwtError::Invalid(Invalid::Json("payload")))
        );
    }

    #[test]
    fn signed_payload_that_is_not_an_object_is_invalid() {
        let key = rfc_key();
        let token = forge(&key, r#"{"alg":"HS256"}"#, "[1]");
        assert_eq!(
            key.verify::<serde_json::Value>(&token, 1),
            Err(JwtError::Invalid(Invalid::Json("payload")))
        );
    }

    #[test]
    fn non_numeric_exp_is_invalid_not_ignored() {
        let key = rfc_key();
        let token = forge(&key, r#"{"alg":"HS256"}"#, r#"{"exp":"tomorrow"}"#);
        assert!(matches!(
            key.verify::<serde_json::Value>(&token, 1),
            Err(JwtError::Invalid(Invalid::Claims(_)))
        ));
    }

    #[test]
    fn payload_of_the_wrong_claims_type_is_invalid() {
        let key = rfc_key();
        let token = forge(&key, r#"{"alg":"HS256"}"#, r#"{"exp":9}"#);
        assert!(matches!(
            key.verify::<Sample>(&token, 1),
            Err(JwtError::Invalid(Invalid::Claims(_)))
        ));
    }
}
