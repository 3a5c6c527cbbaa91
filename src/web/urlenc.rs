//! Percent-decoding and `application/x-www-form-urlencoded` parsing.
//!
//! Two decoders over one hex table:
//!
//! - lenient ([`unescape`], [`percent_decode`], [`pairs`]), for the query
//!   accessors of the chain and form binding, as Go's `url.QueryUnescape`
//!   users expect from a demo server: a malformed escape (`%zz`, a lone `%`)
//!   is kept literally rather than failing the whole request, and bytes that
//!   do not form UTF-8 are replaced;
//! - strict ([`decode_strict`]), where a value must mean exactly one thing
//!   (a gateway path variable, an OAuth parameter): a malformed escape or
//!   bytes that are not UTF-8 are an error, never a guess.

use std::borrow::Cow;
use std::fmt;

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decode `%XX` escapes (and `+` as a space when `plus_is_space`) into
/// bytes. A `%` not followed by two hex digits is kept literally. Borrows
/// `raw` when nothing was decoded, so callers allocate only for real escapes.
/// The one unescaping loop of the crate: paths, queries, forms and
/// `grpc-message` differ only in what they do with bytes that are not UTF-8.
pub(crate) fn unescape(raw: &[u8], plus_is_space: bool) -> Cow<'_, [u8]> {
    if !raw
        .iter()
        .any(|&b| b == b'%' || (plus_is_space && b == b'+'))
    {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut changed = false;
    let mut i = 0;
    while i < raw.len() {
        let escaped = match raw.get(i..i + 3) {
            Some([b'%', hi, lo]) => hex(*hi).zip(hex(*lo)),
            _ => None,
        };
        match (escaped, raw[i]) {
            (Some((hi, lo)), _) => {
                out.push(hi << 4 | lo);
                changed = true;
                i += 3;
                continue;
            }
            (None, b'+') if plus_is_space => {
                out.push(b' ');
                changed = true;
            }
            (None, b) => out.push(b),
        }
        i += 1;
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(raw)
    }
}

fn decode(s: &str, plus_is_space: bool) -> Cow<'_, str> {
    match unescape(s.as_bytes(), plus_is_space) {
        Cow::Borrowed(_) => Cow::Borrowed(s),
        Cow::Owned(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Cow::Owned(text),
            Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        },
    }
}

/// Decode `%XX` escapes (a path segment: `+` stays `+`).
pub fn percent_decode(s: &str) -> Cow<'_, str> {
    decode(s, false)
}

/// A redirect target as a `Location` header can carry it: every byte a
/// URL cannot hold as it is (controls, space, `` "<>\^`{|} ``, DEL, bytes
/// outside ASCII) percent-encoded, everything else, `%` escapes included,
/// as it was. Encoding twice changes nothing.
pub fn encode_location(location: &str) -> String {
    encode(location, |b| {
        b.is_ascii_graphic()
            && !matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
    })
}

/// Go's `url.URL.EscapedPath` for a decoded path (`escape(path,
/// encodePath)`): letters, digits, `-_.~` and `$&+,/:;=@` as they are,
/// every other byte (`%`, `?`, `#`, space, controls, bytes outside ASCII)
/// percent-encoded. The path a router matched after decoding, made a URL
/// path again, as Gin's redirects write it.
pub fn escape_path(path: &str) -> String {
    encode(path, |b| {
        b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b)
    })
}

/// `text` with every byte that `keep` refuses written `%XX`.
fn encode(text: &str, keep: impl Fn(u8) -> bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    out
}

/// Decode a form or query component: `%XX` escapes and `+` as space.
pub(crate) fn form_decode(s: &str) -> Cow<'_, str> {
    decode(s, true)
}

/// What a strict decode does with the two characters whose meaning depends
/// on where the text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// A path segment: `+` is a plus sign.
    Path,
    /// Several path segments joined by `/`: `+` is a plus sign, and `%2F`
    /// (`%2f`) stays encoded as it was, so the `/`s of the result are the
    /// real separators.
    PathKeepSlash,
    /// A form body or query component: `+` is a space.
    Form,
}

/// Why [`decode_strict`] refused a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// A `%` not followed by two hex digits; holds the `%` and up to two
    /// characters after it.
    MalformedEscape(String),
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::MalformedEscape(bad) => write!(f, "malformed percent escape {bad:?}"),
            DecodeError::NotUtf8 => f.write_str("percent-decoded value is not UTF-8"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decode `%XX` escapes strictly: every `%` must start two hex digits
/// (RFC 3986 `pct-encoded`; `%+1` is not one) and the result must be
/// UTF-8, else the error says which. `+` and `%2F` are treated as
/// `component` says.
pub fn decode_strict(raw: &str, component: Component) -> Result<String, DecodeError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let byte = match bytes.get(i + 1..i + 3) {
                    Some(&[hi, lo]) => hex(hi).zip(hex(lo)).map(|(hi, lo)| hi << 4 | lo),
                    _ => None,
                };
                match byte {
                    Some(b'/') if component == Component::PathKeepSlash => {
                        out.extend_from_slice(&bytes[i..i + 3]);
                    }
                    Some(b) => out.push(b),
                    None => {
                        let bad = raw[i..].chars().take(3).collect();
                        return Err(DecodeError::MalformedEscape(bad));
                    }
                }
                i += 3;
                continue;
            }
            b'+' if component == Component::Form => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| DecodeError::NotUtf8)
}

/// Iterate the decoded `(key, value)` pairs of a query string or form body.
/// Empty pieces (`a=1&&b=2`) are skipped; a key without `=` has value "".
pub fn pairs(input: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    input.split('&').filter(|p| !p.is_empty()).map(|p| {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        (form_decode(k), form_decode(v))
    })
}

/// The first decoded value of `key` in a query string or form body.
pub fn find(input: &str, key: &str) -> Option<String> {
    pairs(input)
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_and_malformed_ones_stay_literal() {
        let cases = [
            ("plain", "plain"),
            ("a%20b", "a b"),
            ("a+b", "a+b"),
            ("%E4%BD%A0%E5%A5%BD", "你好"),
            ("100%", "100%"),
            ("%zz", "%zz"),
            ("%4", "%4"),
            ("%", "%"),
            ("%+1", "%+1"),
            ("%-1", "%-1"),
            ("%ff", "\u{fffd}"),
        ];
        for (input, want) in cases {
            assert_eq!(percent_decode(input), want, "input {input:?}");
        }
    }

    #[test]
    fn a_location_is_percent_encoded_where_a_url_cannot_hold_a_byte_and_kept_elsewhere() {
        let cases = [
            ("/a/b?x=1", "/a/b?x=1"),
            ("/a%3Fb/y", "/a%3Fb/y"),
            ("/a\nb", "/a%0Ab"),
            ("/\tevil", "/%09evil"),
            ("/caf\u{e9}", "/caf%C3%A9"),
            ("/a b\"<>\\^`{|}", "/a%20b%22%3C%3E%5C%5E%60%7B%7C%7D"),
            ("https://example.com/x", "https://example.com/x"),
        ];
        for (location, want) in cases {
            assert_eq!(encode_location(location), want, "{location:?}");
            assert_eq!(encode_location(want), want, "{want:?} again");
        }
    }

    /// Go's `url.URL{Path: p}.EscapedPath()` for these paths.
    #[test]
    fn a_decoded_path_is_escaped_as_gos_escaped_path() {
        let cases = [
            ("/a?b/y", "/a%3Fb/y"),
            ("/a#b/y", "/a%23b/y"),
            ("/caf\u{e9}/y", "/caf%C3%A9/y"),
            ("/a\nb/y", "/a%0Ab/y"),
            ("/100%/x", "/100%25/x"),
            ("/a b!'()*", "/a%20b%21%27%28%29%2A"),
            ("/-_.~$&+,/:;=@", "/-_.~$&+,/:;=@"),
            ("/\\evil", "/%5Cevil"),
        ];
        for (path, want) in cases {
            assert_eq!(escape_path(path), want, "{path:?}");
        }
    }

    #[test]
    fn form_decoding_turns_plus_into_space() {
        assert_eq!(form_decode("a+b%2Bc"), "a b+c");
    }

    #[test]
    fn find_returns_first_value_and_handles_keys_without_values() {
        let q = "name=jack&name=lily&flag&weight=1%2E5kg&&=x";
        assert_eq!(find(q, "name").as_deref(), Some("jack"));
        assert_eq!(find(q, "flag").as_deref(), Some(""));
        assert_eq!(find(q, "weight").as_deref(), Some("1.5kg"));
        assert_eq!(find(q, "missing"), None);
        assert_eq!(find(q, "").as_deref(), Some("x"));
    }

    #[test]
    fn strict_decoding_refuses_every_malformed_escape_and_non_utf8() {
        for component in [Component::Path, Component::PathKeepSlash, Component::Form] {
            for (raw, bad) in [
                ("%", "%"),
                ("a%4", "%4"),
                ("%zz", "%zz"),
                ("%+1", "%+1"),
                ("%-1", "%-1"),
                ("%g0x", "%g0"),
                ("ok%20then%é", "%é"),
            ] {
                let err = decode_strict(raw, component).unwrap_err();
                assert_eq!(err, DecodeError::MalformedEscape(bad.into()), "{raw:?}");
                assert_eq!(err.to_string(), format!("malformed percent escape {bad:?}"));
            }
            for raw in ["%FF", "%C3", "a%E4%BD"] {
                assert_eq!(
                    decode_strict(raw, component),
                    Err(DecodeError::NotUtf8),
                    "{raw:?}"
                );
            }
            assert_eq!(
                decode_strict("caf%C3%A9%20%e4%bd%a0", component).as_deref(),
                Ok("café 你")
            );
        }
    }

    #[test]
    fn strict_decoding_reads_plus_and_encoded_slash_as_the_component_says() {
        let cases = [
            (Component::Path, "a+b%2Bc%2Fd%2f", "a+b+c/d/"),
            (Component::PathKeepSlash, "a+b%2Bc%2Fd%2f", "a+b+c%2Fd%2f"),
            (Component::Form, "a+b%2Bc%2Fd%2f", "a b+c/d/"),
        ];
        for (component, raw, want) in cases {
            assert_eq!(
                decode_strict(raw, component).as_deref(),
                Ok(want),
                "{component:?}"
            );
        }
    }
}
