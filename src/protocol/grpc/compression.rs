//! Message compression: `identity` and `gzip`, negotiated per call.
//!
//! gRPC compresses *messages*, not the HTTP/2 stream: each frame's flag
//! says whether its bytes are compressed with the call's encoding.
//!
//! - Requests: `grpc-encoding` names the encoding of the client's
//!   compressed frames. `gzip` and `identity` are understood; any other is
//!   `UNIMPLEMENTED`, answered with `grpc-accept-encoding` so the client can
//!   retry with one we take. A frame flagged compressed with no (or
//!   `identity`) encoding is `INTERNAL`, as grpc-go answers it.
//! - Inflating is bounded: output past the server's message limit stops the
//!   decoder and the call is `RESOURCE_EXHAUSTED`, so a few KiB of gzip
//!   bomb cannot become gigabytes in memory. And it is paced: each
//!   connection may inflate so many bytes a second
//!   ([`crate::server::governor::ConnectionShare`]); past that, its calls
//!   wait between chunks, so a few connections sending 4 KiB messages that
//!   inflate to 4 MiB cannot keep the cores from everyone else.
//! - Replies: gzip-compressed only when the client listed `gzip` in
//!   `grpc-accept-encoding` and the message is over [`COMPRESS_MIN`] bytes
//!   (below that gzip's 18-byte frame and the CPU cost outweigh the gain).
//!   Every response advertises [`ACCEPT_ENCODING`].
//!
//! gzip comes from `flate2` with its pure-Rust backend (`miniz_oxide`): a
//! hand-written inflate would be a few hundred lines of bit twiddling where
//! one mistake is a memory-safety-adjacent bug on untrusted input, and the
//! crate's hand-written parts are the ones that teach the protocol;
//! DEFLATE is not gRPC. The pure-Rust backend needs no zlib and no C
//! toolchain.

use std::io::{Read, Write};

use bytes::{BufMut, Bytes, BytesMut};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::{HeaderMap, HeaderValue};

use super::frame::HEADER_LEN;
use super::headers::{GRPC_ACCEPT_ENCODING, GRPC_ENCODING};
use super::status::{Code, Status};
use crate::server::governor::ConnectionShare;

/// What this server accepts, as advertised in `grpc-accept-encoding`.
pub const ACCEPT_ENCODING: &str = "identity, gzip";

/// Replies up to this many bytes are sent uncompressed.
pub const COMPRESS_MIN: usize = 1024;

/// A message encoding this server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// No compression.
    Identity,
    /// gzip (RFC 1952).
    Gzip,
}

/// The call's request encoding from `grpc-encoding` (`None`: header absent).
/// An encoding we do not support is `UNIMPLEMENTED`.
pub fn request_encoding(headers: &HeaderMap) -> Result<Option<Encoding>, Status> {
    let Some(value) = headers.get(&GRPC_ENCODING) else {
        return Ok(None);
    };
    match value.as_bytes() {
        b"identity" => Ok(Some(Encoding::Identity)),
        b"gzip" => Ok(Some(Encoding::Gzip)),
        other => Err(Status::unimplemented(format!(
            "grpc-encoding {:?} is not supported (supported: {ACCEPT_ENCODING})",
            String::from_utf8_lossy(other)
        ))),
    }
}

/// Whether the client lists `gzip` in `grpc-accept-encoding`.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(&GRPC_ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|e| e.trim().eq_ignore_ascii_case("gzip"))
}

/// Set `grpc-accept-encoding` on a response.
pub fn advertise(headers: &mut HeaderMap) {
    headers.insert(
        &GRPC_ACCEPT_ENCODING,
        HeaderValue::from_static(ACCEPT_ENCODING),
    );
}

/// The message of a frame flagged compressed, inflated with `encoding`
/// (`None`: the call named no encoding), at most `max` bytes, at the pace
/// `share` allows (`None`: unpaced).
pub async fn decompress(
    encoding: Option<Encoding>,
    data: &[u8],
    max: usize,
    share: Option<&ConnectionShare>,
) -> Result<Bytes, Status> {
    match encoding {
        Some(Encoding::Gzip) => gunzip(data, max, share).await,
        None | Some(Encoding::Identity) => Err(Status::internal(
            "compressed flag set on a message, but the call has no grpc-encoding to decompress it with",
        )),
    }
}

/// Bytes inflated between two looks at the connection's allowance.
const INFLATE_CHUNK: usize = 256 << 10;

/// Inflate `data`, refusing output past `max` bytes without producing it,
/// waiting after each [`INFLATE_CHUNK`] for as long as `share` says.
async fn gunzip(data: &[u8], max: usize, share: Option<&ConnectionShare>) -> Result<Bytes, Status> {
    let mut out = Vec::with_capacity((data.len() * 4).min(max));
    // One byte past the limit is enough to know the limit was passed.
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let mut decoder = GzDecoder::new(data).take(limit);
    loop {
        let before = out.len();
        let step = u64::try_from(INFLATE_CHUNK).unwrap_or(u64::MAX);
        let read = (&mut decoder)
            .take(step)
            .read_to_end(&mut out)
            .map_err(|e| Status::internal(format!("cannot decompress gzip message: {e}")))?;
        if let Some(wait) = share.map(|s| s.inflated(read)) {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        if out.len() - before < INFLATE_CHUNK {
            break;
        }
    }
    if out.len() > max {
        return Err(Status::new(
            Code::ResourceExhausted,
            format!("decompressed message larger than max (more than {max} bytes)"),
        ));
    }
    Ok(Bytes::from(out))
}

/// `framed` (an uncompressed frame, prefix included) gzip-compressed with
/// flag 1 when `gzip` is on and the message is over [`COMPRESS_MIN`];
/// otherwise `framed` unchanged. Also unchanged when gzip would not make it
/// smaller.
pub fn maybe_compress(framed: Bytes, gzip: bool) -> Bytes {
    let message = framed.get(HEADER_LEN..).unwrap_or_default();
    if !gzip || message.len() <= COMPRESS_MIN {
        return framed;
    }
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(message.len() / 2 + 32),
        Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    let Ok(compressed) = encoder.write_all(message).and_then(|()| encoder.finish()) else {
        return framed;
    };
    if compressed.len() >= message.len() {
        return framed;
    }
    let mut out = BytesMut::with_capacity(HEADER_LEN + compressed.len());
    out.put_u8(1);
    out.put_u32(compressed.len() as u32);
    out.put_slice(&compressed);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::grpc::frame::Frame;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn request_encoding_takes_identity_and_gzip_and_refuses_the_rest() {
        assert_eq!(request_encoding(&headers(&[])).unwrap(), None);
        let gz = headers(&[("grpc-encoding", "gzip")]);
        assert_eq!(request_encoding(&gz).unwrap(), Some(Encoding::Gzip));
        let id = headers(&[("grpc-encoding", "identity")]);
        assert_eq!(request_encoding(&id).unwrap(), Some(Encoding::Identity));
        let err = request_encoding(&headers(&[("grpc-encoding", "br")])).unwrap_err();
        assert_eq!(err.code, Code::Unimplemented);
        assert!(err.message.contains("\"br\""), "{}", err.message);
    }

    #[test]
    fn accepts_gzip_reads_every_listed_encoding() {
        assert!(accepts_gzip(&headers(&[(
            "grpc-accept-encoding",
            "identity, deflate,gzip"
        )])));
        assert!(accepts_gzip(&headers(&[
            ("grpc-accept-encoding", "identity"),
            ("grpc-accept-encoding", "GZIP"),
        ])));
        assert!(!accepts_gzip(&headers(&[(
            "grpc-accept-encoding",
            "identity"
        )])));
        assert!(!accepts_gzip(&headers(&[])));
    }

    #[tokio::test]
    async fn gunzip_round_trips_and_stops_one_byte_past_the_limit() {
        let data = vec![b'a'; 10_000];
        let packed = gzip(&data);
        assert_eq!(
            &decompress(Some(Encoding::Gzip), &packed, 10_000, None)
                .await
                .unwrap()[..],
            &data[..]
        );
        let err = decompress(Some(Encoding::Gzip), &packed, 9_999, None)
            .await
            .unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);
    }

    #[tokio::test]
    async fn a_gzip_bomb_is_refused_without_inflating_it() {
        // 64 MiB of zeros is about 64 KiB of gzip.
        let mut e = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            e.write_all(&zeros).unwrap();
        }
        let bomb = e.finish().unwrap();
        assert!(bomb.len() < 1 << 17, "{}", bomb.len());
        let err = decompress(Some(Encoding::Gzip), &bomb, 4 << 20, None)
            .await
            .unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);
    }

    #[tokio::test]
    async fn corrupt_gzip_is_internal_and_a_flag_without_encoding_too() {
        let err = decompress(Some(Encoding::Gzip), b"not gzip at all", 100, None)
            .await
            .unwrap_err();
        assert_eq!(err.code, Code::Internal);
        for encoding in [None, Some(Encoding::Identity)] {
            let err = decompress(encoding, &gzip(b"x"), 100, None)
                .await
                .unwrap_err();
            assert_eq!(err.code, Code::Internal, "{encoding:?}");
        }
    }

    #[tokio::test]
    async fn replies_are_compressed_only_when_accepted_and_over_one_kib() {
        let big = Frame::encode(&vec![b'x'; COMPRESS_MIN + 1]);
        let small = Frame::encode(&vec![b'x'; COMPRESS_MIN]);
        assert_eq!(maybe_compress(big.clone(), false), big);
        assert_eq!(maybe_compress(small.clone(), true), small);
        let packed = maybe_compress(big.clone(), true);
        assert_eq!(packed[0], 1, "compressed flag");
        let len = u32::from_be_bytes([packed[1], packed[2], packed[3], packed[4]]) as usize;
        assert_eq!(len, packed.len() - HEADER_LEN);
        let back = decompress(Some(Encoding::Gzip), &packed[HEADER_LEN..], 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(&back[..], &big[HEADER_LEN..]);
    }
}
