//! Gin-style binding: decode a request into a struct, then check required
//! fields.
//!
//! The decoder is chosen the way Gin's `ShouldBind` chooses it: GET (and any
//! request without a body type we know) binds the query string;
//! `application/json` decodes the body with serde; `application/x-www-form-urlencoded`
//! and `multipart/form-data` decode form fields. Form and query values are
//! gathered into a JSON object of strings first, so one serde `Deserialize`
//! impl serves every source.
//!
//! Required fields are checked after decoding, with [`Validate`], and a
//! failure reads like go-playground/validator's message, which Gin users know:
//! `Key: 'Login.Password' Error:Field validation for 'Password' failed on the 'required' tag`.

use std::fmt;

use http::header::CONTENT_TYPE;
use http::Method;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::web::chain::Context;
use crate::web::urlenc;

/// Required-field rules of a bindable struct.
pub trait Validate {
    /// The struct name used in messages (`Login`).
    const NAME: &'static str;
    /// Each required field: its Go-style name (`Password`) and its value.
    /// An empty value fails the `required` rule.
    fn required(&self) -> Vec<(&'static str, &str)>;
}

/// Why binding failed.
#[derive(Debug, Clone, PartialEq)]
pub enum BindError {
    /// The body could not be decoded (malformed JSON, bad multipart, ...).
    Decode(String),
    /// Required fields are missing or empty: `(struct, field)` pairs.
    Required(Vec<(&'static str, &'static str)>),
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindError::Decode(msg) => f.write_str(msg),
            BindError::Required(fields) => {
                for (i, (st, field)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(
                        f,
                        "Key: '{st}.{field}' Error:Field validation for '{field}' failed on the 'required' tag"
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BindError {}

/// Decode the request in `c` into `T` and check its required fields.
pub fn bind<T: DeserializeOwned + Validate>(c: &Context) -> Result<T, BindError> {
    let value: T = decode(c)?;
    let missing: Vec<_> = value
        .required()
        .into_iter()
        .filter(|(_, v)| v.is_empty())
        .map(|(field, _)| (T::NAME, field))
        .collect();
    if missing.is_empty() {
        Ok(value)
    } else {
        Err(BindError::Required(missing))
    }
}

fn decode<T: DeserializeOwned>(c: &Context) -> Result<T, BindError> {
    let query = c.uri().query().unwrap_or("");
    if c.method() == Method::GET {
        return from_fields(urlenc::pairs(query).map(|(k, v)| (k.into_owned(), v.into_owned())));
    }
    let content_type = c
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (mime, params) = split_media_type(content_type);
    match mime.as_str() {
        "application/json" => json_object(c.body()),
        "application/x-www-form-urlencoded" => {
            let body = std::str::from_utf8(c.body())
                .map_err(|_| BindError::Decode("form body is not valid UTF-8".into()))?;
            // Go's ParseForm: body values first, then the query's.
            let fields = urlenc::pairs(body)
                .chain(urlenc::pairs(query))
                .map(|(k, v)| (k.into_owned(), v.into_owned()));
            from_fields(fields)
        }
        "multipart/form-data" => {
            let boundary = params
                .iter()
                .find(|(k, _)| k == "boundary")
                .map(|(_, v)| v.clone())
                .ok_or_else(|| BindError::Decode("multipart body without boundary".into()))?;
            let fields = multipart::parse(c.body(), &boundary)
                .map_err(|e| BindError::Decode(format!("invalid multipart body: {e}")))?;
            from_fields(fields.into_iter())
        }
        // Like Gin's Form binding for unknown types: only the query is read.
        _ => from_fields(urlenc::pairs(query).map(|(k, v)| (k.into_owned(), v.into_owned()))),
    }
}

/// Whether `content_type` declares a JSON body: `application/json` or an
/// `application/…+json` type, parameters ignored. JSON routes refuse any
/// other: a cross-origin page may send a "simple" `text/plain` POST
/// without a preflight, and a JSON body under it must not be read.
pub fn declares_json(content_type: Option<&str>) -> bool {
    let (mime, _) = split_media_type(content_type.unwrap_or(""));
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// Decode a JSON request body into `T` under the crate's one policy for
/// JSON bodies, which every service uses:
///
/// - the body must be a JSON *object*: serde would otherwise fill a struct
///   from an array by position (`["ann","pw"]` logging in as ann), which Gin
///   refuses (`cannot unmarshal array into Go value of type main.Login`);
/// - a key may appear only once, at any depth: `{"password":"wrong",
///   "password":"right"}` is refused instead of taking either value.
///
/// The error reads `invalid JSON body: …` and says which rule failed.
pub fn json_object<T: DeserializeOwned>(body: &[u8]) -> Result<T, BindError> {
    let invalid = |why: String| BindError::Decode(format!("invalid JSON body: {why}"));
    let StrictValue(value) = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
    if !value.is_object() {
        let found = match value {
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(invalid(format!("expected a JSON object, found {found}")));
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

/// A JSON value whose objects have no repeated key (serde_json's own
/// `Value` keeps the last one).
pub(crate) struct StrictValue(pub(crate) Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key {key:?}"
                )));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Build `T` from form-like `(name, value)` pairs; the first value of a
/// repeated name wins.
fn from_fields<T: DeserializeOwned>(
    fields: impl Iterator<Item = (String, String)>,
) -> Result<T, BindError> {
    let mut map = Map::new();
    for (k, v) in fields {
        map.entry(k).or_insert(Value::String(v));
    }
    serde_json::from_value(Value::Object(map))
        .map_err(|e| BindError::Decode(format!("invalid form fields: {e}")))
}

/// Split `type/subtype; k=v; k2="v 2"` into the lower-cased media type and
/// its parameters (quotes removed).
pub(crate) fn split_media_type(value: &str) -> (String, Vec<(String, String)>) {
    let mut parts = value.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let params = parts
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            Some((k.trim().to_ascii_lowercase(), v.to_string()))
        })
        .collect();
    (mime, params)
}

pub mod multipart {
    //! A small `multipart/form-data` parser (RFC 7578) for text fields.
    //!
    //! Two phases as in any frame parser: find each part between boundary
    //! delimiters, then read its headers and value. File parts (those with a
    //! `filename`) are skipped: binding only reads text fields.

    use std::fmt;

    /// Why a multipart body could not be read.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum MultipartError {
        /// The boundary is empty or longer than 70 characters.
        BadBoundary,
        /// The body never contains `--boundary`.
        NoDelimiter,
        /// A delimiter line does not end with CRLF.
        DelimiterWithoutCrlf,
        /// A part is not followed by another delimiter.
        UnterminatedPart,
        /// A part's headers are not followed by an empty line.
        UnterminatedHeaders,
        /// A part's headers are not UTF-8.
        HeadersNotUtf8,
        /// A part header line has no `:`.
        MalformedHeader,
        /// The content-disposition is not `form-data`.
        UnsupportedDisposition(String),
        /// A part has no `name` in its content-disposition.
        NoName,
        /// The value of this text field is not UTF-8.
        FieldNotUtf8(String),
    }

    impl fmt::Display for MultipartError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                MultipartError::BadBoundary => write!(f, "boundary must be 1 to 70 characters"),
                MultipartError::NoDelimiter => write!(f, "no boundary delimiter in body"),
                MultipartError::DelimiterWithoutCrlf => write!(f, "delimiter line without CRLF"),
                MultipartError::UnterminatedPart => {
                    write!(f, "part is not terminated by a boundary")
                }
                MultipartError::UnterminatedHeaders => {
                    write!(f, "part headers are not terminated by an empty line")
                }
                MultipartError::HeadersNotUtf8 => write!(f, "part headers are not UTF-8"),
                MultipartError::MalformedHeader => write!(f, "malformed part header"),
                MultipartError::UnsupportedDisposition(kind) => {
                    write!(f, "unsupported content-disposition '{kind}'")
                }
                MultipartError::NoName => write!(f, "part without a content-disposition name"),
                MultipartError::FieldNotUtf8(name) => {
                    write!(f, "field '{name}' is not valid UTF-8")
                }
            }
        }
    }

    impl std::error::Error for MultipartError {}

    /// Parse the text fields of a multipart body.
    pub fn parse(body: &[u8], boundary: &str) -> Result<Vec<(String, String)>, MultipartError> {
        if boundary.is_empty() || boundary.len() > 70 {
            return Err(MultipartError::BadBoundary);
        }
        let delim = format!("--{boundary}");
        let delim = delim.as_bytes();
        let mut pos = find(body, delim, 0).ok_or(MultipartError::NoDelimiter)?;
        let mut fields = Vec::new();
        loop {
            pos += delim.len();
            let rest = &body[pos..];
            if rest.starts_with(b"--") {
                return Ok(fields); // close delimiter
            }
            // Transport padding, then CRLF, after each delimiter.
            let line_end = find(body, b"\r\n", pos).ok_or(MultipartError::DelimiterWithoutCrlf)?;
            let part_start = line_end + 2;
            let mut next_delim = Vec::with_capacity(delim.len() + 2);
            next_delim.extend_from_slice(b"\r\n");
            next_delim.extend_from_slice(delim);
            let part_end =
                find(body, &next_delim, part_start).ok_or(MultipartError::UnterminatedPart)?;
            let part = &body[part_start..part_end];
            if let Some(field) = parse_part(part)? {
                fields.push(field);
            }
            pos = part_end + 2;
        }
    }

    fn parse_part(part: &[u8]) -> Result<Option<(String, String)>, MultipartError> {
        let head_end = find(part, b"\r\n\r\n", 0)
            .map(|i| (i, i + 4))
            .or_else(|| part.starts_with(b"\r\n").then_some((0, 2)))
            .ok_or(MultipartError::UnterminatedHeaders)?;
        let head =
            std::str::from_utf8(&part[..head_end.0]).map_err(|_| MultipartError::HeadersNotUtf8)?;
        let value = &part[head_end.1..];
        let mut name = None;
        let mut is_file = false;
        for line in head.split("\r\n").filter(|l| !l.is_empty()) {
            let (k, v) = line
                .split_once(':')
                .ok_or(MultipartError::MalformedHeader)?;
            if k.trim().eq_ignore_ascii_case("content-disposition") {
                let (kind, params) = super::split_media_type(v);
                if kind != "form-data" {
                    return Err(MultipartError::UnsupportedDisposition(kind));
                }
                for (pk, pv) in params {
                    match pk.as_str() {
                        "name" => name = Some(pv),
                        "filename" => is_file = true,
                        _ => {}
                    }
                }
            }
        }
        let name = name.ok_or(MultipartError::NoName)?;
        if is_file {
            return Ok(None);
        }
        let value = String::from_utf8(value.to_vec())
            .map_err(|_| MultipartError::FieldNotUtf8(name.clone()))?;
        Ok(Some((name, value)))
    }

    fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
        if from > hay.len() || needle.is_empty() {
            return None;
        }
        hay[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|i| i + from)
    }

    #[cfg(test)]
    mod tests {
        use super::{parse, MultipartError};

        const BODY: &str = "--XyZ\r\nContent-Disposition: form-data; name=\"username\"\r\n\r\nalice\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nignored\r\n--XyZ\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\np@ss\r\nword\r\n--XyZ--\r\n";

        #[test]
        fn multipart_text_fields_are_read_and_file_parts_skipped() {
            let fields = parse(BODY.as_bytes(), "XyZ").unwrap();
            assert_eq!(
                fields,
                vec![
                    ("username".to_string(), "alice".to_string()),
                    ("password".to_string(), "p@ss\r\nword".to_string())
                ]
            );
        }

        #[test]
        fn malformed_multipart_bodies_give_typed_errors_with_their_messages() {
            use MultipartError::*;
            let bad: &[(&[u8], MultipartError, &str)] = &[
                (b"", NoDelimiter, "no boundary delimiter in body"),
                (
                    b"--XyZ",
                    DelimiterWithoutCrlf,
                    "delimiter line without CRLF",
                ),
                (
                    b"--XyZ\r\n",
                    UnterminatedPart,
                    "part is not terminated by a boundary",
                ),
                (
                    b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue-without-end",
                    UnterminatedPart,
                    "part is not terminated by a boundary",
                ),
                (
                    b"--XyZ\r\nContent-Disposition: form-data\r\n\r\nv\r\n--XyZ--",
                    NoName,
                    "part without a content-disposition name",
                ),
                (
                    b"--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--XyZ--",
                    UnsupportedDisposition("attachment".into()),
                    "unsupported content-disposition 'attachment'",
                ),
                (
                    b"--XyZ\r\nNo-Colon\r\n\r\nv\r\n--XyZ--",
                    MalformedHeader,
                    "malformed part header",
                ),
                (
                    b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\xff\r\n--XyZ--",
                    FieldNotUtf8("a".into()),
                    "field 'a' is not valid UTF-8",
                ),
                (
                    b"--XyZ\r\nX-\xff: y\r\n\r\nv\r\n--XyZ--",
                    HeadersNotUtf8,
                    "part headers are not UTF-8",
                ),
                (
                    b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nv\r\n--XyZ--",
                    UnterminatedHeaders,
                    "part headers are not terminated by an empty line",
                ),
            ];
            for (body, want, message) in bad {
                let err = parse(body, "XyZ").unwrap_err();
                assert_eq!(&err, want, "{:?}", String::from_utf8_lossy(body));
                assert_eq!(err.to_string(), *message);
            }
            let err = parse(BODY.as_bytes(), "").unwrap_err();
            assert_eq!(err, BadBoundary);
            assert_eq!(err.to_string(), "boundary must be 1 to 70 characters");
        }
    }
}

#[cfg(test)]
mod json_policy_tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Login {
        username: String,
        password: String,
    }

    #[test]
    fn json_bodies_must_be_objects_and_keys_may_not_repeat() {
        let ok: Login = json_object(br#"{"username":"ann","password":"pw"}"#).unwrap();
        assert_eq!(ok.username, "ann");
        let refused: [(&[u8], &str); 6] = [
            (br#"["ann","pw"]"#, "expected a JSON object, found an array"),
            (br#""ann""#, "expected a JSON object, found a string"),
            (b"null", "expected a JSON object, found null"),
            (
                br#"{"username":"u","password":"wrong","password":"right"}"#,
                "duplicate key \"password\"",
            ),
            (
                br#"{"username":"u","password":"p","x":{"a":1,"a":2}}"#,
                "duplicate key \"a\"",
            ),
            (br#"{"username":"u""#, "EOF while parsing"),
        ];
        for (body, want) in refused {
            let err = json_object::<Login>(body).unwrap_err().to_string();
            assert!(err.starts_with("invalid JSON body: "), "{err}");
            assert!(
                err.contains(want),
                "{}: {err}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_type_parameters_are_split_and_unquoted() {
        let (mime, params) =
            split_media_type("Multipart/Form-Data; boundary=\"a b\"; charset=utf-8");
        assert_eq!(mime, "multipart/form-data");
        assert_eq!(
            params,
            vec![
                ("boundary".to_string(), "a b".to_string()),
                ("charset".to_string(), "utf-8".to_string())
            ]
        );
    }

    #[test]
    fn required_errors_read_like_gin_validator_messages() {
        let e = BindError::Required(vec![("Login", "Username"), ("Login", "Password")]);
        assert_eq!(
            e.to_string(),
            "Key: 'Login.Username' Error:Field validation for 'Username' failed on the 'required' tag\n\
             Key: 'Login.Password' Error:Field validation for 'Password' failed on the 'required' tag"
        );
    }
}
