//! Arbitrary tokens against the verifier: never a panic, and never an
//! accepted token that this key did not sign.
#![no_main]
use handwire::protocol::jwt::Hs256;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else { return };
    let key = Hs256::new(b"fuzzing-key-fuzzing-key-fuzzing-key!");
    if let Ok(claims) = key.verify::<serde_json::Value>(token, 0) {
        // Accepted: it must carry our signature over its own first two parts.
        let (input, sig) = token.rsplit_once('.').expect("three parts");
        assert_eq!(key.signature(input.as_bytes()), sig, "accepted a foreign signature");
        let _ = claims;
    }
});
