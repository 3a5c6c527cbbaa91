//! `application/x-www-form-urlencoded`, both ways, for OAuth query strings
//! and token-request bodies.
//!
//! Encoding escapes everything except the RFC 3986 unreserved characters, so
//! the output is valid in a query string and in a form body alike. Decoding
//! accepts `+` for space, as HTML forms send it, and refuses broken escapes
//! instead of guessing.

use crate::web::urlenc::{decode_strict, Component};

/// Percent-encode `value`, leaving only `A-Z a-z 0-9 - . _ ~` as they are.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `k1=v1&k2=v2`, each key and value encoded.
pub fn encode_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    pairs
        .into_iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Decode one component (`+` is a space); `None` if an escape is
/// malformed or the bytes are not UTF-8.
pub fn decode(component: &str) -> Option<String> {
    decode_strict(component, Component::Form).ok()
}

/// Parse `k1=v1&k2=v2` into decoded pairs, in order. Empty segments are
/// skipped; a key without `=` has an empty value. `None` on a broken escape.
pub fn parse(input: &str) -> Option<Vec<(String, String)>> {
    input
        .split('&')
        .filter(|seg| !seg.is_empty())
        .map(|seg| {
            let (k, v) = seg.split_once('=').unwrap_or((seg, ""));
            Some((decode(k)?, decode(v)?))
        })
        .collect()
}

/// The first value of `key` in parsed `pairs`.
pub fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_escapes_all_but_unreserved() {
        assert_eq!(encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }

    #[test]
    fn parse_reverses_encode_pairs() {
        let text = encode_pairs([("redirect_uri", "http://h/cb?x=1&y=2"), ("scope", "a b")]);
        let pairs = parse(&text).unwrap();
        assert_eq!(get(&pairs, "redirect_uri"), Some("http://h/cb?x=1&y=2"));
        assert_eq!(get(&pairs, "scope"), Some("a b"));
    }

    #[test]
    fn plus_is_space_and_broken_escapes_are_refused() {
        assert_eq!(decode("a+b%21"), Some("a b!".into()));
        assert_eq!(decode("%4"), None);
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%+1"), None);
        assert_eq!(decode("%FF"), None);
        assert_eq!(parse("a=1&&b&c=%"), None);
        assert_eq!(
            parse("a=1&&b").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), String::new())]
        );
    }
}
